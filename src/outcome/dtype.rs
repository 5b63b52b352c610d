//! Silent dtype changes (reason `dtype_changed`): which dtype an output is expected to have, and
//! the outcome of one that has another. An output's expected dtype is, in this order:
//! 1. the case's `out_dtype` (docs/catalogue.md), checked on every target as soon as the worker
//!    answers ([`declared_dtype`]) and in every comparison;
//! 2. its float64 reference's dtype mapped to the case's precision ([`expected_dtype`]): a
//!    float64 reference of a float32 case expects float32, an int64 one expects int64;
//! 3. the same case's on its reference target (the other device, or the same device eager for
//!    a compiled target), exactly.
//!
//! A change is a finding of its own: outcome `wrong_result` (it ran to an answer), reason
//! `dtype_changed`, never mixed with the values' disagreement (reason `wrong_result`).

use serde_json::Value;

use super::Decision;
use crate::model::{CaseSpec, Dtype, DtypeName, Outcome, Reason};

/// The dtype an output may have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Exactly this dtype (as the worker names it: `int64`, `float32`).
    Exactly(DtypeName),
    /// Any floating dtype: an integer or bool case whose reference is floating (NumPy computes
    /// `sin` of uint8 in float16, PyTorch in float32: no precision is the case's own).
    Floating,
    /// Any complex dtype, likewise.
    Complex,
    /// Any integer dtype: the reference returned a Python `int`, which has no width.
    Integer,
}

impl Expected {
    /// Whether an output of dtype `actual` (as the worker named it) is what was expected.
    pub fn admits(&self, actual: &DtypeName) -> bool {
        match self {
            Expected::Exactly(d) => d == actual,
            Expected::Floating => actual.is_float(),
            Expected::Complex => actual.is_complex(),
            Expected::Integer => actual.known().is_some_and(|d| d.is_integer()),
        }
    }

    /// Whether a Python number of type `python` (`int`, `float`, `complex`, `bool`: the
    /// worker's `python` field; a Python number has no width) is what was expected: a number
    /// of the expected kind is, whatever width was expected (a JAX `int` where int32 or int64
    /// is expected); another kind is a change (an `int` where a float was expected).
    pub fn admits_python(&self, python: &str) -> bool {
        let known = |d: &DtypeName| d.known();
        match (self, python) {
            (Expected::Floating, "float") | (Expected::Complex, "complex") | (Expected::Integer, "int") => true,
            (Expected::Exactly(d), "int") => known(d).is_some_and(|d| d.is_integer()),
            (Expected::Exactly(d), "float") => d.is_float(),
            (Expected::Exactly(d), "complex") => d.is_complex(),
            (Expected::Exactly(d), "bool") => known(d).is_some_and(|d| d.is_bool()),
            _ => false,
        }
    }
}

/// A worker's output description's dtype as the check reads it: `Ok(dtype)` for an array,
/// `Err(type)` for a Python number (`int`, `float`, …: the `python` field, docs/protocol.md).
fn leaf_kind(leaf: &Value) -> Option<Result<DtypeName, &str>> {
    if let Some(python) = leaf["python"].as_str() {
        return Some(Err(python));
    }
    (leaf["kind"] == "array").then(|| leaf["dtype"].as_str().map(DtypeName::parse)).flatten().map(Ok)
}

/// Whether the output described by `leaf` (a worker's description) is what `expected` asks
/// for; `None` when it is no array or number. A Python number is judged by its kind
/// ([`Expected::admits_python`]); what it is called in a message: `a Python int`.
pub fn leaf_admitted(expected: &Expected, leaf: &Value) -> Option<(bool, String)> {
    Some(match leaf_kind(leaf)? {
        Ok(d) => (expected.admits(&d), d.as_str().to_string()),
        Err(python) => (expected.admits_python(python), format!("a Python {python}")),
    })
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Exactly(d) => f.write_str(d.as_str()),
            Expected::Floating => f.write_str("a floating dtype"),
            Expected::Complex => f.write_str("a complex dtype"),
            Expected::Integer => f.write_str("an integer dtype"),
        }
    }
}

/// The real floating dtype of a case's precision: float16, bfloat16, float32 (float32 and
/// complex64 cases) or float64 (float64 and complex128); `None` for integer and bool cases.
fn real_of(case: Dtype) -> Option<Dtype> {
    match case {
        Dtype::Float16 | Dtype::Bfloat16 | Dtype::Float32 | Dtype::Float64 => Some(case),
        Dtype::Complex64 => Some(Dtype::Float32),
        Dtype::Complex128 => Some(Dtype::Float64),
        _ => None,
    }
}

/// The dtype an output of a case swept at `case` is expected to have when its float64
/// reference's output has dtype `reference` (the reference computes floating cases in float64
/// or complex128, integer and bool cases at their own dtype with NumPy's promotion):
/// - a floating reference: the case's precision (`float32` for float32 and complex64 cases —
///   `abs` of complex64 is float32 —, `float16`, `bfloat16`, `float64`); any floating dtype
///   for an integer or bool case;
/// - a complex reference: `complex64` for cases below double precision, `complex128` for
///   float64 and complex128 cases; any complex dtype for an integer or bool case;
/// - an integer or bool reference (argmax, comparisons, sizes): that dtype exactly, so a JAX
///   `argmax` returning int32 (64-bit mode off) where NumPy returns int64 is a change.
///
/// `None` for a reference dtype this does not know (an object, a string).
pub fn expected_dtype(case: Dtype, reference: &DtypeName) -> Option<Expected> {
    let complex_of = |case: Dtype| match case {
        Dtype::Float64 | Dtype::Complex128 => Dtype::Complex128,
        _ => Dtype::Complex64,
    };
    if reference.is_float() {
        return Some(real_of(case).map_or(Expected::Floating, |d| Expected::Exactly(d.into())));
    }
    if reference.is_complex() {
        return Some(match real_of(case) {
            Some(_) => Expected::Exactly(complex_of(case).into()),
            None => Expected::Complex,
        });
    }
    reference.known().map(|d| Expected::Exactly(d.into()))
}

/// What a comparison with a float64 reference expects of the `position`-th compared output:
/// the case's `out_dtype` when it declares one, else [`expected_dtype`] of the reference's
/// dtype `reference`. Nothing for a sample of a framework's own test data (`mlport run
/// --suite`): its output dtypes are the suite's own (a `dtype=` argument, `.item()`'s Python
/// number), so its dtype is judged against the same sample on the reference device instead.
pub fn expected_of(spec: &CaseSpec, case: Dtype, position: usize, reference: &DtypeName) -> Option<Expected> {
    if spec.suite.is_some() && spec.out_dtype.is_none() {
        return None;
    }
    match declared_at(spec, case, position) {
        Some(declared) => Some(Expected::Exactly(declared)),
        None => expected_dtype(case, reference),
    }
}

/// The case's `out_dtype` for its `position`-th compared output at the swept dtype `case`, if
/// it declares one: where [`expected_of`]'s expectation comes from, for the message.
pub fn declared_at(spec: &CaseSpec, case: Dtype, position: usize) -> Option<DtypeName> {
    spec.out_dtype.as_ref().and_then(|o| o.of(position, case))
}

/// The outcome of an answer whose outputs (the worker's descriptions: `index`, `kind`,
/// `dtype`) are checked against the case's `out_dtype` at the swept dtype `case`: the first
/// compared output (`outputs`, default all) of another dtype, or not an array at all, makes a
/// `wrong_result` with reason `dtype_changed` and the message `dtype changed (output 0): int32,
/// the case declares int64 (out_dtype)`. `None` without `out_dtype` or when every declared
/// output has its dtype. A Python number (`int`) has the declared dtype when it is of its kind.
pub fn declared_dtype(spec: &CaseSpec, case: Dtype, outputs: &Value) -> Option<Decision> {
    let declared = spec.out_dtype.as_ref()?;
    let leaves: &[Value] = outputs.as_array().map_or(&[], Vec::as_slice);
    let indices: Vec<u64> = match &spec.outputs {
        Some(list) => list.iter().map(|&i| u64::from(i)).collect(),
        None => leaves.iter().filter_map(|d| d["index"].as_u64()).collect(),
    };
    let mut changed = indices.iter().enumerate().filter_map(|(position, &index)| {
        let want = declared.of(position, case)?;
        let leaf = leaves.iter().find(|d| d["index"].as_u64() == Some(index))?;
        let got = match leaf_admitted(&Expected::Exactly(want.clone()), leaf) {
            Some((true, _)) => return None,
            Some((false, got)) => got,
            None => format!("a {}, not an array", leaf["type"].as_str().unwrap_or("Python object")),
        };
        Some(format!("dtype changed (output {index}): {got}, the case declares {want} (out_dtype)"))
    });
    let first = changed.next()?;
    let more = changed.count();
    let more = if more > 0 { format!(" (and {more} more outputs)") } else { String::new() };
    Some(Decision::with(Outcome::WrongResult, Some(Reason::DtypeChanged), format!("{first}{more}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OutDtype;
    use serde_json::json;

    fn exactly(d: &str) -> Option<Expected> {
        Some(Expected::Exactly(d.into()))
    }

    #[test]
    fn the_reference_dtype_is_mapped_to_the_case_precision() {
        use Dtype::*;
        // Floating references: the case's precision, whatever the reference's width.
        assert_eq!(expected_dtype(Float32, &"float64".into()), exactly("float32"));
        assert_eq!(expected_dtype(Bfloat16, &"float64".into()), exactly("bfloat16"));
        assert_eq!(expected_dtype(Float64, &"float64".into()), exactly("float64"));
        assert_eq!(expected_dtype(Complex64, &"float64".into()), exactly("float32"), "abs of complex64");
        assert_eq!(expected_dtype(Float16, &"complex128".into()), exactly("complex64"), "fft of float16");
        assert_eq!(expected_dtype(Complex128, &"complex128".into()), exactly("complex128"));
        // Integer and bool references: exactly.
        assert_eq!(expected_dtype(Float32, &"int64".into()), exactly("int64"), "argmax");
        assert_eq!(expected_dtype(Float16, &"bool".into()), exactly("bool"), "a comparison");
        assert_eq!(expected_dtype(Int32, &"int64".into()), exactly("int64"), "NumPy's sum of int32");
        // Integer cases with a floating reference: no precision is theirs.
        assert_eq!(expected_dtype(Uint8, &"float64".into()), Some(Expected::Floating));
        assert_eq!(expected_dtype(Int8, &"complex128".into()), Some(Expected::Complex));
        assert_eq!(expected_dtype(Float32, &"object".into()), None);
        let any = Expected::Floating;
        assert!(any.admits(&"float16".into()) && any.admits(&"bfloat16".into()) && !any.admits(&"int32".into()));
        assert!(Expected::Complex.admits(&"complex64".into()) && !Expected::Complex.admits(&"float32".into()));
        assert_eq!(Expected::Floating.to_string(), "a floating dtype");
    }

    #[test]
    fn a_declared_out_dtype_wins_over_the_reference() {
        let mut spec = CaseSpec::new("jax.numpy.argmax", "default");
        assert_eq!(expected_of(&spec, Dtype::Float32, 0, &"int64".into()), exactly("int64"));
        spec.out_dtype = Some(OutDtype::PerOutput(vec!["T".into(), "int32".into()]));
        assert_eq!(expected_of(&spec, Dtype::Float16, 0, &"float64".into()), exactly("float16"));
        assert_eq!(expected_of(&spec, Dtype::Float16, 1, &"int64".into()), exactly("int32"));
        assert_eq!(
            expected_of(&spec, Dtype::Float16, 2, &"int64".into()),
            exactly("int64"),
            "past the list: the reference"
        );
    }

    #[test]
    fn a_suite_sample_expects_no_dtype_of_its_float64_reference() {
        let mut spec = CaseSpec::new("torch.softmax", "with_dtype.s0");
        spec.suite = Some(crate::model::SuiteSample {
            suite: crate::model::Suite::Opinfo,
            name: "softmax".into(),
            variant: "with_dtype".into(),
            sample: 0,
            declared: Default::default(),
            registered: None,
            reference: None,
            random: false,
            empty_at: Vec::new(),
        });
        // softmax(x, dtype=torch.float64) of a float16 sample answers in float64, as it should.
        assert_eq!(expected_of(&spec, Dtype::Float16, 0, &"float64".into()), None);
        spec.out_dtype = Some(OutDtype::One("T".into()));
        assert_eq!(expected_of(&spec, Dtype::Float16, 0, &"float64".into()), exactly("float16"), "unless declared");
    }

    #[test]
    fn an_answer_is_checked_against_out_dtype() {
        let mut spec = CaseSpec::new("jax.numpy.argmax", "default");
        let outputs = json!([{"index": 0, "kind": "array", "dtype": "int32", "shape": []},
                             {"index": 1, "kind": "object", "type": "torch.Size"}]);
        assert_eq!(declared_dtype(&spec, Dtype::Float32, &outputs), None, "nothing declared");
        spec.out_dtype = Some(OutDtype::One("int32".into()));
        spec.outputs = Some(vec![0]);
        assert_eq!(declared_dtype(&spec, Dtype::Float32, &outputs), None, "as declared");
        spec.out_dtype = Some(OutDtype::One("int64".into()));
        assert_eq!(
            declared_dtype(&spec, Dtype::Float32, &outputs),
            Some(Decision::with(
                Outcome::WrongResult,
                Some(Reason::DtypeChanged),
                "dtype changed (output 0): int32, the case declares int64 (out_dtype)"
            ))
        );
        spec.outputs = None;
        spec.out_dtype = Some(OutDtype::PerOutput(vec!["int32".into(), "int64".into()]));
        let d = declared_dtype(&spec, Dtype::Float32, &outputs).unwrap();
        assert_eq!(
            d.message.as_deref(),
            Some("dtype changed (output 1): a torch.Size, not an array, the case declares int64 (out_dtype)")
        );
        spec.out_dtype = Some(OutDtype::One("T".into()));
        let d = declared_dtype(&spec, Dtype::Float16, &outputs).unwrap();
        assert_eq!(
            d.message.as_deref(),
            Some("dtype changed (output 0): int32, the case declares float16 (out_dtype) (and 1 more outputs)")
        );
    }

    #[test]
    fn a_python_number_is_judged_by_its_kind() {
        let int = json!({"index": 0, "kind": "array", "dtype": "int64", "shape": [], "python": "int"});
        let exactly = |d: &str| Expected::Exactly(DtypeName::parse(d));
        assert_eq!(leaf_admitted(&exactly("int32"), &int), Some((true, "a Python int".into())));
        assert_eq!(leaf_admitted(&exactly("float32"), &int), Some((false, "a Python int".into())));
        assert_eq!(leaf_admitted(&Expected::Floating, &int), Some((false, "a Python int".into())));
        let float = json!({"index": 0, "kind": "array", "dtype": "float64", "python": "float"});
        assert_eq!(leaf_admitted(&exactly("float16"), &float), Some((true, "a Python float".into())));
        assert_eq!(leaf_admitted(&exactly("bool"), &float).map(|x| x.0), Some(false));
        // An array is judged by its dtype, exactly.
        let arr = json!({"index": 0, "kind": "array", "dtype": "int64"});
        assert_eq!(leaf_admitted(&exactly("int32"), &arr), Some((false, "int64".into())));
        assert_eq!(leaf_admitted(&Expected::Integer, &arr), Some((true, "int64".into())));
        assert_eq!(leaf_admitted(&exactly("int32"), &json!({"index": 0, "kind": "object"})), None);
        // out_dtype int32 and a Python int: no change; out_dtype float32: a change, named so.
        let mut spec = CaseSpec::new("jax.numpy.ndim", "c");
        spec.out_dtype = Some(OutDtype::One("int32".into()));
        assert_eq!(declared_dtype(&spec, Dtype::Float32, &json!([int])), None);
        spec.out_dtype = Some(OutDtype::One("float32".into()));
        let d = declared_dtype(&spec, Dtype::Float32, &json!([int])).expect("a change");
        assert_eq!(
            d.message.as_deref(),
            Some("dtype changed (output 0): a Python int, the case declares float32 (out_dtype)")
        );
    }
}
