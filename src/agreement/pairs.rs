//! One result's outputs against one reference's: which leaves, which rule, which
//! tolerance, and the verdict per leaf as a [`ComparisonRow`].

use std::path::Path;

use serde_json::Value;

use crate::compare::{Comparison, Rule, Tolerance, Verdict, compare, read_npy};
use crate::model::Device;
use crate::store::records::ComparisonRow;

/// The two sides of a comparison and how to judge them.
#[derive(Clone, Copy, Debug)]
pub struct OutputPair<'a> {
    /// The case's catalogue spec: `compare` (a rule, or one per compared output), `outputs`
    /// (leaf indices, default all), `rtol`/`atol`, `tolerance.<dtype>`.
    pub spec: &'a Value,
    /// The case's swept dtype: the key of `tolerance.<dtype>` overrides.
    pub case_dtype: &'a str,
    /// The result's output descriptions (`index`, `kind`, `dtype`, `shape`, `path` or `not_saved`).
    pub actual: &'a Value,
    /// The reference's output descriptions.
    pub expected: &'a Value,
    /// A dtype change is a disagreement (same function on another device), or not (a wider
    /// float64 reference).
    pub check_dtype: bool,
}

fn leaf(outputs: &Value, index: u64) -> Option<&Value> {
    outputs.as_array()?.iter().find(|d| d["index"].as_u64() == Some(index))
}

/// The compared leaf indices and their rules: `outputs` (default every leaf of `actual`) with
/// `compare` (one rule for all, or one per selected output; default `allclose`).
fn selection(pair: &OutputPair<'_>) -> Vec<(u64, String)> {
    let indices: Vec<u64> = match pair.spec["outputs"].as_array() {
        Some(list) => list.iter().filter_map(Value::as_u64).collect(),
        None => {
            pair.actual.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(|d| d["index"].as_u64()).collect())
        }
    };
    indices
        .iter()
        .enumerate()
        .map(|(i, &index)| {
            let rule = match &pair.spec["compare"] {
                Value::String(r) => r.clone(),
                Value::Array(list) => list.get(i).and_then(Value::as_str).unwrap_or("allclose").to_string(),
                _ => "allclose".to_string(),
            };
            (index, rule)
        })
        .collect()
}

/// The tolerance for a leaf of dtype `leaf_dtype`: `tolerance.<case dtype>` entries win over the
/// case's `rtol`/`atol`, which win over the default: the leaf dtype's, or the case dtype's when
/// both are floating and the case dtype's is looser (a float16 case that returns float32 was
/// computed from float16 values, often in float16, and is judged at float16's tolerance).
pub fn tolerance(spec: &Value, case_dtype: &str, leaf_dtype: &str) -> Tolerance {
    let leaf = Tolerance::for_dtype(leaf_dtype);
    let case = Tolerance::for_dtype(case_dtype);
    let floating = |d: &str| d.starts_with("float") || d.starts_with("complex") || d == "bfloat16";
    let base = if floating(leaf_dtype) && floating(case_dtype) {
        Tolerance { rtol: leaf.rtol.max(case.rtol), atol: leaf.atol.max(case.atol) }
    } else {
        leaf
    };
    let per = &spec["tolerance"][case_dtype];
    Tolerance {
        rtol: per["rtol"].as_f64().or_else(|| spec["rtol"].as_f64()).unwrap_or(base.rtol),
        atol: per["atol"].as_f64().or_else(|| spec["atol"].as_f64()).unwrap_or(base.atol),
    }
}

/// Compares every selected output leaf; one row per leaf (none for rule `none`). A leaf that
/// cannot be compared (not saved, not an array, missing on one side, unreadable) gets the
/// verdict `incomparable` with the why as its summary.
pub fn compare_outputs(
    pair: &OutputPair<'_>,
    case_key: &str,
    device: &Device,
    against: &str,
    reference: &str,
) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    for (index, rule_name) in selection(pair) {
        let Ok(rule) = rule_name.parse::<Rule>() else { continue };
        if rule == Rule::None {
            continue;
        }
        let leaf_dtype = leaf(pair.actual, index).and_then(|d| d["dtype"].as_str()).unwrap_or(pair.case_dtype);
        let tol = tolerance(pair.spec, pair.case_dtype, leaf_dtype);
        let mut row = ComparisonRow {
            case_key: case_key.to_string(),
            device: device.clone(),
            against: against.to_string(),
            reference: reference.to_string(),
            output_index: index as u32,
            rule: rule_name.clone(),
            rtol: tol.rtol,
            atol: tol.atol,
            verdict: "incomparable".into(),
            elements: 0,
            mismatched: 0,
            max_abs: None,
            max_rel: None,
            max_ulp: None,
            nan_mismatch: 0,
            inf_mismatch: 0,
            shape_changed: false,
            dtype_changed: false,
            summary: String::new(),
            detail: Value::Null,
        };
        match compare_leaf(pair, index, rule, tol) {
            Ok(c) => {
                fill(&mut row, &c);
                if row.shape_changed && !pair.check_dtype {
                    row.summary.push_str(
                        " (a function that returns its outputs in another order or layout than the NumPy \
                         reference's must return the reference's in its case: docs/catalogue.md, Aligned cases)",
                    );
                }
            }
            Err(why) => row.summary = why,
        }
        rows.push(row);
    }
    rows
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
    let ad = a["dtype"].as_str().unwrap_or(actual.dtype_name()).to_string();
    let ed = e["dtype"].as_str().unwrap_or(expected.dtype_name()).to_string();
    Ok(compare(&actual, &ad, &expected, &ed, rule, tol, pair.check_dtype))
}

fn fill(row: &mut ComparisonRow, c: &Comparison) {
    row.verdict = match c.verdict {
        Verdict::Agree => "agree",
        Verdict::Disagree => "disagree",
        _ => "incomparable",
    }
    .into();
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
    row.detail = serde_json::to_value(c).unwrap_or(Value::Null);
}

/// The `wrong_result` message of a result whose comparisons include a disagreement:
/// `disagrees with numpy.cumsum in float64 (output 0): <summary>`; `None` when all agree.
pub fn wrong_message(rows: &[ComparisonRow]) -> Option<String> {
    let bad: Vec<&ComparisonRow> = rows.iter().filter(|r| r.verdict == "disagree").collect();
    let first = bad.first()?;
    let more = if bad.len() > 1 { format!(" (and {} more outputs)", bad.len() - 1) } else { String::new() };
    Some(format!("disagrees with {} (output {}): {}{more}", first.reference, first.output_index, first.summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tolerance_overrides_go_dtype_table_then_case_then_default() {
        let spec = json!({"rtol": 0.5, "tolerance": {"float16": {"atol": 0.25}}});
        let t = tolerance(&spec, "float16", "float16");
        assert_eq!((t.rtol, t.atol), (0.5, 0.25));
        let t = tolerance(&spec, "float32", "float32");
        assert_eq!((t.rtol, t.atol), (0.5, 1e-5), "atol falls back to float32's default");
        let t = tolerance(&json!({}), "float16", "int64");
        assert_eq!((t.rtol, t.atol), (0.0, 0.0), "an integer output of a float16 case is exact");
        let t = tolerance(&json!({}), "float16", "float32");
        assert_eq!((t.rtol, t.atol), (1e-3, 1e-5), "a float16 case returning float32 is judged as float16");
        let t = tolerance(&json!({}), "uint8", "float32");
        assert_eq!((t.rtol, t.atol), (1.3e-6, 1e-5), "an integer case returning float32 is judged as float32");
    }

    #[test]
    fn selection_pairs_outputs_with_their_rules() {
        let actual = json!([{"index": 0}, {"index": 1}, {"index": 2}]);
        let pair = |spec: Value| {
            let p = OutputPair {
                spec: &spec,
                case_dtype: "float32",
                actual: &actual,
                expected: &actual,
                check_dtype: true,
            };
            selection(&p)
        };
        assert_eq!(pair(json!({})), [(0, "allclose".into()), (1, "allclose".into()), (2, "allclose".into())]);
        assert_eq!(
            pair(json!({"compare": ["up_to_sign", "allclose"], "outputs": [0, 2]})),
            [(0, "up_to_sign".into()), (2, "allclose".into())]
        );
        assert_eq!(pair(json!({"compare": "sorted", "outputs": [1]})), [(1, "sorted".into())]);
    }

    #[test]
    fn leaves_that_cannot_be_compared_say_why() {
        let spec = json!({});
        let actual = json!([{"index": 0, "kind": "array", "dtype": "float32", "not_saved": "too big"},
                            {"index": 1, "kind": "object", "type": "torch.Size"}]);
        let expected = json!([{"index": 0, "kind": "array", "dtype": "float64", "path": "/nonexistent.npy"}]);
        let p =
            OutputPair { spec: &spec, case_dtype: "float32", actual: &actual, expected: &expected, check_dtype: false };
        let rows = compare_outputs(&p, "k", &Device::cpu(), "float64", "numpy.x in float64");
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.verdict == "incomparable"));
        assert!(rows[0].summary.contains("was not saved (too big)"), "{}", rows[0].summary);
        assert!(
            rows[1].summary.contains("not an array (torch.Size)") || rows[1].summary.contains("no output 1"),
            "{}",
            rows[1].summary
        );
        assert_eq!(wrong_message(&rows), None, "incomparable is not wrong");
    }
}
