//! One result's outputs against one reference's: which leaves, which rule, which
//! tolerance, and the verdict per leaf as a [`ComparisonRow`].

use std::path::Path;

use serde_json::Value;

use crate::compare::{Comparison, Rule, Tolerance, compare, read_npy};
use crate::model::{Against, CaseSpec, Compare, ComparisonRow, ComparisonVerdict, Dtype, DtypeName, Target};

/// The two sides of a comparison and how to judge them.
#[derive(Clone, Copy, Debug)]
pub struct OutputPair<'a> {
    /// The case's catalogue spec: `compare` (a rule, or one per compared output), `outputs`
    /// (leaf indices, default all), `rtol`/`atol`, `tolerance.<dtype>`.
    pub spec: &'a CaseSpec,
    /// The case's swept dtype: the key of `tolerance.<dtype>` overrides.
    pub case_dtype: Dtype,
    /// The result's output descriptions (`index`, `kind`, `dtype`, `shape`, `path` or `not_saved`).
    pub actual: &'a Value,
    /// The reference's output descriptions.
    pub expected: &'a Value,
    /// A dtype change is a disagreement (same function on another device), or not (a wider
    /// float64 reference).
    pub check_dtype: bool,
}

/// The description of output `index` among a result's `outputs`.
pub(crate) fn leaf(outputs: &Value, index: u64) -> Option<&Value> {
    outputs.as_array()?.iter().find(|d| d["index"].as_u64() == Some(index))
}

/// The compared leaf indices and their rules: `outputs` (default every leaf of `actual`) with
/// `compare` (one rule for all, or one per selected output; default `allclose`).
fn selection(pair: &OutputPair<'_>) -> Vec<(u64, Rule)> {
    let indices: Vec<u64> = match &pair.spec.outputs {
        Some(list) => list.iter().map(|&i| u64::from(i)).collect(),
        None => {
            pair.actual.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|d| d["index"].as_u64()).collect())
        }
    };
    indices.iter().enumerate().map(|(i, &index)| (index, pair.spec.compare.rule(i))).collect()
}

/// The tolerance for a leaf of dtype `leaf_dtype`: `tolerance.<case dtype>` entries win over the
/// case's `rtol`/`atol`, which win over the default. The default is the case dtype's when both
/// are floating (a float16 case that returns float32 computed from float16 values and is not held
/// to float32's tolerance; a float64 case that returns float32 lost precision and is held to
/// float64's), else the leaf dtype's (an integer case with a float32 result: float32's; an integer
/// or bool result: exact).
/// An output's dtype mlport does not know (`float128`) still counts as floating or complex by
/// its name ([`DtypeName::is_inexact`]).
pub fn tolerance(spec: &CaseSpec, case_dtype: Dtype, leaf_dtype: &DtypeName) -> Tolerance {
    let base = if leaf_dtype.is_inexact() && case_dtype.is_inexact() {
        Tolerance::for_dtype(case_dtype)
    } else {
        Tolerance::for_name(leaf_dtype)
    };
    let per = spec.tolerance.get(&case_dtype);
    Tolerance::close(
        per.and_then(|t| t.rtol).or(spec.rtol).unwrap_or(base.rtol),
        per.and_then(|t| t.atol).or(spec.atol).unwrap_or(base.atol),
    )
}

/// Compares every selected output leaf; one row per leaf (none for rule `none`). A leaf that
/// cannot be compared (not saved, not an array, missing on one side, unreadable) gets the
/// verdict `incomparable` with the why as its summary.
pub fn compare_outputs(
    pair: &OutputPair<'_>,
    case_key: &str,
    device: &Target,
    against: &Against,
    reference: &str,
) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    let selected = selection(pair);
    // A `compare` list names one rule per compared output: a list of another length is the
    // catalogue's mistake, said on every output rather than guessed.
    let list_mismatch = match (&pair.spec.compare, pair.spec.outputs.is_some()) {
        (Compare::PerOutput(list), false) if list.len() != selected.len() => Some(format!(
            "the case's `compare` lists {} rules but the result has {} outputs: give one rule per output, or \
             select outputs with `outputs`",
            list.len(),
            selected.len()
        )),
        _ => None,
    };
    for (position, (index, rule)) in selected.into_iter().enumerate() {
        if rule == Rule::None {
            continue;
        }
        let leaf_dtype = leaf(pair.actual, index)
            .and_then(|d| d["dtype"].as_str())
            .map_or(DtypeName::Known(pair.case_dtype), DtypeName::parse);
        let tol = match rule {
            Rule::Exact => Tolerance::EXACT,
            // The loader requires `max_ulp` with the rule; 0.5 (correctly rounded) for a spec without.
            Rule::Ulp => Tolerance::ulps(pair.spec.max_ulp.unwrap_or(0.5)),
            _ => tolerance(pair.spec, pair.case_dtype, &leaf_dtype),
        };
        let mut row = ComparisonRow::incomparable(case_key, device, against, reference, index as u32, rule, tol);
        if let Some(why) = &list_mismatch {
            row.summary = why.clone();
            rows.push(row);
            continue;
        }
        if leaf(pair.actual, index).is_some() && leaf(pair.expected, index).is_none() && pair.expected.is_array() {
            row.verdict = ComparisonVerdict::Disagree;
            row.shape_changed = true;
            row.summary = format!(
                "the result has an output {index} that the reference has not (it has {} outputs)",
                leaves(pair.expected).len()
            );
            rows.push(row);
            continue;
        }
        match compare_leaf(pair, index, rule, tol) {
            Ok(c) => {
                fill(&mut row, &c, pair.check_dtype);
                if row.shape_changed && !pair.check_dtype {
                    row.summary.push_str(
                        " (a function that returns its outputs in another order or layout than the NumPy \
                         reference's must return the reference's in its case: docs/catalogue.md, Aligned cases)",
                    );
                }
            }
            Err(why) => row.summary = why,
        }
        if !pair.check_dtype {
            expect_dtype(&mut row, pair, position, index);
        }
        rows.push(row);
    }
    // Outputs the reference has and the result lacks (when every output is compared).
    if pair.spec.outputs.is_none() {
        let have: Vec<u64> = leaves(pair.actual);
        let missing: Vec<u64> = leaves(pair.expected).into_iter().filter(|i| !have.contains(i)).collect();
        if let Some(&first) = missing.first() {
            let mut row = ComparisonRow::incomparable(
                case_key,
                device,
                against,
                reference,
                first as u32,
                Rule::AllClose,
                Tolerance::EXACT,
            );
            row.verdict = ComparisonVerdict::Disagree;
            row.shape_changed = true;
            row.summary = format!(
                "the result has {} outputs, the reference {}: output(s) {missing:?} missing",
                have.len(),
                leaves(pair.expected).len()
            );
            rows.push(row);
        }
    }
    rows
}

/// Against a float64 reference, the output's dtype must be the one
/// [`crate::outcome::expected_of`] expects (the case's `out_dtype`, else the reference's mapped
/// to the case's precision): another makes the row `disagree` with `dtype_changed`, whatever
/// the rule (`shape_dtype` and `statistical` included) and whether or not the values could be
/// compared; the summary begins `dtype int32, expected int64 (…); `, saying where the expectation
/// came from (the case's `out_dtype`, the reference's dtype at the case's precision, or the
/// reference's Python int), and a Python number is judged by its kind
/// ([`crate::outcome::leaf_admitted`]).
fn expect_dtype(row: &mut ComparisonRow, pair: &OutputPair<'_>, position: usize, index: u64) {
    fn dtype(side: &Value, index: u64) -> Option<DtypeName> {
        leaf(side, index).filter(|d| d["kind"] == "array").and_then(|d| d["dtype"].as_str()).map(DtypeName::parse)
    }
    let (Some(actual), Some(reference)) = (leaf(pair.actual, index), dtype(pair.expected, index)) else { return };
    let declared = crate::outcome::declared_at(pair.spec, pair.case_dtype, position);
    // A reference that returned a Python int (no width) expects an integer of any width.
    let python_int = leaf(pair.expected, index).is_some_and(|d| d["python"] == "int");
    let expected = match crate::outcome::expected_of(pair.spec, pair.case_dtype, position, &reference) {
        Some(crate::outcome::Expected::Exactly(_)) if python_int && declared.is_none() => {
            crate::outcome::Expected::Integer
        }
        Some(e) => e,
        None => return,
    };
    let Some((admitted, got)) = crate::outcome::leaf_admitted(&expected, actual) else { return };
    if admitted {
        return;
    }
    // Where the expectation comes from: the case's declaration, or the reference's dtype.
    let from = match declared {
        Some(_) => "from the case's out_dtype".to_string(),
        None if python_int => "from the reference's Python int".to_string(),
        None => format!("from the reference's {reference} at the case's {}", pair.case_dtype),
    };
    row.dtype_changed = true;
    row.verdict = ComparisonVerdict::Disagree;
    row.summary = format!("dtype {got}, expected {expected} ({from}); {}", row.summary);
    if let Value::Object(detail) = &mut row.detail {
        detail.insert("dtype_changed".into(), Value::Bool(true));
        detail.insert("out_dtype_expected".into(), Value::String(expected.to_string()));
    }
}

/// The indices of a result's `outputs`, in their order.
pub(crate) fn leaves(outputs: &Value) -> Vec<u64> {
    outputs.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|d| d["index"].as_u64()).collect())
}

fn compare_leaf(pair: &OutputPair<'_>, index: u64, rule: Rule, tol: Tolerance) -> Result<Comparison, String> {
    let a = leaf(pair.actual, index).ok_or_else(|| format!("the result has no output {index}"))?;
    let e = leaf(pair.expected, index).ok_or_else(|| format!("the reference has no output {index}"))?;
    let path = |d: &Value, side: &str| -> Result<String, String> {
        if let Some(why) = d["not_saved"].as_str() {
            return Err(format!("the {side}'s output {index} was not saved ({why})"));
        }
        if d["kind"].as_str() == Some("object") {
            return Err(format!("the {side}'s output {index} is not an array ({})", d["type"].as_str().unwrap_or("?")));
        }
        d["path"].as_str().map(str::to_string).ok_or_else(|| format!("the {side}'s output {index} has no file"))
    };
    let (pa, pe) = (path(a, "result")?, path(e, "reference")?);
    let actual = read_npy(Path::new(&pa)).map_err(|e| e.to_string())?;
    let expected = read_npy(Path::new(&pe)).map_err(|e| e.to_string())?;
    let reported = |d: &Value, file: &crate::compare::NpyArray| {
        d["dtype"].as_str().map_or(DtypeName::Known(file.dtype()), DtypeName::parse)
    };
    let (ad, ed) = (reported(a, &actual), reported(e, &expected));
    Ok(compare(&actual, &ad, &expected, &ed, rule, tol, pair.check_dtype))
}

fn fill(row: &mut ComparisonRow, c: &Comparison, check_dtype: bool) {
    row.verdict = ComparisonVerdict::from(&c.verdict);
    row.elements = c.elements;
    row.mismatched = c.mismatched;
    let finite = |v: f64| v.is_finite().then_some(v);
    row.max_abs = finite(c.max_abs);
    row.max_rel = finite(c.max_rel);
    row.max_ulp = finite(c.max_ulp);
    row.nan_mismatch = c.nan_mismatch;
    row.inf_mismatch = c.inf_mismatch;
    row.shape_changed = c.shape_actual != c.shape_expected;
    row.dtype_changed = c.dtype_changed;
    row.summary = c.summary();
    if !check_dtype && c.dtype_changed {
        // Against a wider reference a dtype change is expected, not news: leave it out of the line.
        let mut quiet = c.clone();
        quiet.dtype_changed = false;
        row.dtype_changed = false;
        row.summary = quiet.summary();
    }
    row.detail = serde_json::to_value(c).unwrap_or(Value::Null);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A case spec of function `f` with the given keys set (as the store keeps them).
    fn case_spec(keys: Value) -> CaseSpec {
        let mut v = json!({"function": "f", "id": "default"});
        v.as_object_mut().unwrap().extend(keys.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tolerance_overrides_go_dtype_table_then_case_then_default() {
        let spec = case_spec(json!({"rtol": 0.5, "tolerance": {"float16": {"atol": 0.25}}}));
        let t = tolerance(&spec, Dtype::Float16, &"float16".into());
        assert_eq!((t.rtol, t.atol), (0.5, 0.25));
        let t = tolerance(&spec, Dtype::Float32, &"float32".into());
        assert_eq!((t.rtol, t.atol), (0.5, 1e-5), "atol falls back to float32's default");
        let t = tolerance(&case_spec(json!({})), Dtype::Float16, &"int64".into());
        assert_eq!((t.rtol, t.atol), (0.0, 0.0), "an integer output of a float16 case is exact");
        let t = tolerance(&case_spec(json!({})), Dtype::Float16, &"float32".into());
        assert_eq!((t.rtol, t.atol), (1e-3, 1e-5), "a float16 case returning float32 is judged as float16");
        let t = tolerance(&case_spec(json!({})), Dtype::Float64, &"float32".into());
        assert_eq!((t.rtol, t.atol), (1e-7, 1e-7), "a float64 case returning float32 is held to float64");
        let t = tolerance(&case_spec(json!({})), Dtype::Uint8, &"float32".into());
        assert_eq!((t.rtol, t.atol), (1.3e-6, 1e-5), "an integer case returning float32 is judged as float32");
    }

    #[test]
    fn missing_or_extra_outputs_disagree_and_a_short_compare_list_is_said() {
        let one = json!([{"index": 0, "kind": "object", "type": "x"}]);
        let three = json!([{"index": 0, "kind": "object", "type": "x"}, {"index": 1, "kind": "object", "type": "x"},
                           {"index": 2, "kind": "object", "type": "x"}]);
        let spec = case_spec(json!({}));
        let cmp = |actual: &Value, expected: &Value, spec: &CaseSpec| {
            let p = OutputPair { spec, case_dtype: Dtype::Float32, actual, expected, check_dtype: false };
            compare_outputs(&p, "k", &Target::cpu(), &Against::Float64, "numpy.svd in float64")
        };
        let fewer = cmp(&one, &three, &spec);
        let bad = fewer.iter().find(|r| r.verdict == ComparisonVerdict::Disagree).expect("a missing output disagrees");
        assert!(
            bad.summary.contains("the result has 1 outputs, the reference 3: output(s) [1, 2] missing"),
            "{}",
            bad.summary
        );
        assert!(crate::outcome::wrong_result(&fewer).is_some());
        let more = cmp(&three, &one, &spec);
        assert_eq!(
            more.iter().filter(|r| r.verdict == ComparisonVerdict::Disagree).count(),
            2,
            "outputs 1 and 2 have no counterpart"
        );
        let short = cmp(&three, &three, &case_spec(json!({"compare": ["up_to_sign"]})));
        assert!(short.iter().all(|r| r.verdict == ComparisonVerdict::Incomparable
            && r.summary.contains("lists 1 rules but the result has 3")));
        let exact = cmp(&one, &one, &case_spec(json!({"compare": "exact"})));
        assert_eq!((exact[0].rtol, exact[0].atol), (0.0, 0.0), "an exact comparison stores a zero tolerance");
    }

    #[test]
    fn selection_pairs_outputs_with_their_rules() {
        let actual = json!([{"index": 0}, {"index": 1}, {"index": 2}]);
        let pair = |spec: Value| {
            let spec = case_spec(spec);
            let p = OutputPair {
                spec: &spec,
                case_dtype: Dtype::Float32,
                actual: &actual,
                expected: &actual,
                check_dtype: true,
            };
            selection(&p)
        };
        assert_eq!(pair(json!({})), [(0, Rule::AllClose), (1, Rule::AllClose), (2, Rule::AllClose)]);
        assert_eq!(
            pair(json!({"compare": ["up_to_sign", "allclose"], "outputs": [0, 2]})),
            [(0, Rule::UpToSign { axis: -2 }), (2, Rule::AllClose)]
        );
        assert_eq!(pair(json!({"compare": "sorted", "outputs": [1]})), [(1, Rule::Sorted)]);
    }

    #[test]
    fn leaves_that_cannot_be_compared_say_why() {
        let spec = case_spec(json!({}));
        let actual = json!([{"index": 0, "kind": "array", "dtype": "float32", "not_saved": "too big"},
                            {"index": 1, "kind": "object", "type": "torch.Size"}]);
        let expected = json!([{"index": 0, "kind": "array", "dtype": "float64", "path": "/nonexistent.npy"},
                              {"index": 1, "kind": "object", "type": "torch.Size"}]);
        let p = OutputPair {
            spec: &spec,
            case_dtype: Dtype::Float32,
            actual: &actual,
            expected: &expected,
            check_dtype: false,
        };
        let rows = compare_outputs(&p, "k", &Target::cpu(), &Against::Float64, "numpy.x in float64");
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.verdict == ComparisonVerdict::Incomparable));
        assert!(rows[0].summary.contains("was not saved (too big)"), "{}", rows[0].summary);
        assert!(
            rows[1].summary.contains("not an array (torch.Size)") || rows[1].summary.contains("no output 1"),
            "{}",
            rows[1].summary
        );
        assert_eq!(crate::outcome::wrong_result(&rows), None, "incomparable is not wrong");
    }
}
