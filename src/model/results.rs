//! What reports read and comparisons write: float64 references ([`ReferenceRow`]), comparisons
//! of a result's outputs with a reference ([`ComparisonRow`]), and results joined with their
//! case and function ([`ResultRow`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{CaseResult, CaseRow, CaseSpec, Dtype, FunctionRow, Outcome, RunSource, Target};
use crate::compare::{Rule, Tolerance, Verdict};

/// A float64 reference a run plans: the NumPy catalogue's function for a canonical op, run
/// once on the inputs of the aligned cases at one swept dtype, upcast to float64 (complex128).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRow {
    /// `reference/<op>/<case_id>/<dtype>` for an op's reference, `reference/case/<case key>` for
    /// a case's own (its catalogue `reference`, or its float64 self-reference); unique within
    /// the run.
    pub key: String,
    /// The framework whose worker computes it: `numpy` for a NumPy/SciPy function, the case's
    /// own framework for a float64 self-reference (schema 8).
    pub framework: super::Framework,
    /// The canonical op (`cumsum`); empty for a case's own reference.
    pub op: String,
    /// The aligned cases' id.
    pub case_id: String,
    /// The swept dtype whose inputs are upcast.
    pub dtype: Dtype,
    /// The function computing it (`numpy.cumsum`, `scipy.special.expit`; `torch.exp` for a
    /// self-reference).
    pub function: String,
    /// Input seed, the aligned cases' (run seed mixed in).
    pub seed: u64,
    /// The NumPy case's spec as planned (what the worker receives).
    pub spec: CaseSpec,
    /// `None` until computed; then `pass`, `fail`, `timeout` or `crash`.
    pub outcome: Option<Outcome>,
    /// Why it could not be computed (an error's type and message).
    pub message: Option<String>,
    /// Output descriptions as the worker sent them (index, dtype, shape, .npy path).
    pub outputs: serde_json::Value,
}

/// One output leaf of one result compared with one reference (schema 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// The compared result's case.
    pub case_key: String,
    /// The compared result's device.
    pub device: Target,
    /// What it was compared with: the float64 reference or the same case on another target.
    pub against: Against,
    /// What the reference is, for people: `numpy.cumsum in float64`, `cpu`.
    pub reference: String,
    /// Index of the output leaf.
    pub output_index: u32,
    /// The comparison rule (`allclose`, `up_to_sign`, ...), stored in its catalogue spelling.
    pub rule: Rule,
    /// Relative tolerance used.
    pub rtol: f64,
    /// Absolute tolerance used.
    pub atol: f64,
    /// What the comparison concluded.
    pub verdict: ComparisonVerdict,
    /// Elements compared.
    pub elements: u64,
    /// Elements beyond tolerance.
    pub mismatched: u64,
    /// Largest absolute error over finite elements.
    pub max_abs: Option<f64>,
    /// Largest relative error (|actual − expected| / |expected|, expected ≠ 0).
    pub max_rel: Option<f64>,
    /// Largest error in ULPs of the output's dtype.
    pub max_ulp: Option<f64>,
    /// Elements NaN on one side only.
    pub nan_mismatch: u64,
    /// Elements ±Inf on one side only or of opposite sign.
    pub inf_mismatch: u64,
    /// The output's shape differs from the reference's.
    pub shape_changed: bool,
    /// The output's dtype differs from the reference's (checked against devices only).
    pub dtype_changed: bool,
    /// One line for people.
    pub summary: String,
    /// The whole comparison as JSON.
    pub detail: serde_json::Value,
}

impl ComparisonRow {
    /// Whether the output was the reference correctly rounded to its dtype (every element within
    /// 0.5 ULP: [`crate::compare::Comparison::correctly_rounded`], kept in `detail`); `None`
    /// when unknown (not against a wider reference, not elementwise, older stores).
    pub fn correctly_rounded(&self) -> Option<bool> {
        self.detail.get("correctly_rounded").and_then(serde_json::Value::as_bool)
    }

    /// A comparison of output `output_index` of the result of `case_key` on `device` with
    /// `against` (`reference` for people) under `rule` and `tol`, not yet made: verdict
    /// `incomparable`, no metrics, empty summary and detail. The comparison fills in the rest.
    pub fn incomparable(
        case_key: &str,
        device: &Target,
        against: &Against,
        reference: &str,
        output_index: u32,
        rule: Rule,
        tol: Tolerance,
    ) -> ComparisonRow {
        ComparisonRow {
            case_key: case_key.to_string(),
            device: device.clone(),
            against: against.clone(),
            reference: reference.to_string(),
            output_index,
            rule,
            rtol: tol.rtol,
            atol: tol.atol,
            verdict: ComparisonVerdict::Incomparable,
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
            detail: serde_json::Value::Null,
        }
    }
}

/// A result joined with its case and function, as reports read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The result's id in the store (what `mlport repro` takes); 0 for rows not read from a store.
    #[serde(default)]
    pub id: i64,
    /// The function the case belongs to.
    pub function: FunctionRow,
    /// The case at one dtype.
    pub case: CaseRow,
    /// Its result on one device.
    pub result: CaseResult,
    /// Whether a reference judged it: at least one output compared (with its float64
    /// reference, or the same case on its reference target) to a verdict. A live run's `pass`
    /// without is "ran, unchecked"; an imported test checked itself.
    #[serde(default)]
    pub compared: bool,
}

impl ResultRow {
    /// A live catalogue case that passed with nothing to compare it with ("ran, unchecked").
    /// Imported tests (pytest, the paper's data) check their own answers, so never count.
    pub fn unchecked(&self, source: RunSource) -> bool {
        self.result.outcome == Outcome::Pass && !self.compared && source == RunSource::Live
    }
}

/// What an output was compared with (`comparisons.against`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Against {
    /// `float64`: the float64 reference of the case's canonical op ([`ReferenceRow`]).
    Float64,
    /// `device:<target>` (`device:cpu`): the same case on its reference target.
    Target(Target),
}

/// The prefix of [`Against::Target`]'s spelling.
const TARGET_PREFIX: &str = "device:";

impl Against {
    /// The target compared with, for [`Against::Target`].
    pub fn target(&self) -> Option<&Target> {
        match self {
            Against::Float64 => None,
            Against::Target(d) => Some(d),
        }
    }
}

impl fmt::Display for Against {
    /// The stored spelling: `float64` or `device:<target>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Against::Float64 => f.write_str("float64"),
            Against::Target(d) => write!(f, "{TARGET_PREFIX}{d}"),
        }
    }
}

impl FromStr for Against {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "float64" => Ok(Against::Float64),
            _ => match s.strip_prefix(TARGET_PREFIX) {
                Some(target) => {
                    target.parse().map(Against::Target).map_err(|e| format!("comparison reference `{s}`: {e}"))
                }
                None => Err(format!("unknown comparison reference `{s}` (expected float64 or device:<target>)")),
            },
        }
    }
}

impl Serialize for Against {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Against {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Against, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// What comparing one output with its reference concluded (`comparisons.verdict`): the
/// stored form of [`crate::compare::Verdict`], whose `incomparable` why goes to the row's summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumString, strum::VariantArray, strum::EnumCount)]
#[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_comparison_verdict)]
pub enum ComparisonVerdict {
    /// `agree`: the output matches the reference under the rule.
    Agree,
    /// `disagree`: values beyond tolerance, a changed shape, a changed dtype (when checked), a
    /// different distribution, or an output one side lacks.
    Disagree,
    /// `incomparable`: nothing to compare (an output not saved, not an array, unreadable), or
    /// the rule cannot judge it.
    Incomparable,
}

impl ComparisonVerdict {
    /// Every verdict, in the order above.
    pub const ALL: [ComparisonVerdict; <ComparisonVerdict as strum::EnumCount>::COUNT] =
        *<ComparisonVerdict as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// The stored spelling: `agree`, `disagree`, `incomparable`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`ComparisonVerdict`], listing the verdicts.
fn unknown_comparison_verdict(s: &str) -> String {
    format!("unknown comparison verdict `{s}` (expected agree, disagree or incomparable)")
}

impl From<&Verdict> for ComparisonVerdict {
    fn from(v: &Verdict) -> ComparisonVerdict {
        match v {
            Verdict::Agree => ComparisonVerdict::Agree,
            Verdict::Disagree => ComparisonVerdict::Disagree,
            Verdict::Incomparable { .. } => ComparisonVerdict::Incomparable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn against_round_trips_its_stored_spelling() {
        let on_cpu = Against::Target(Target::cpu());
        for (a, s) in [(Against::Float64, "float64"), (on_cpu.clone(), "device:cpu")] {
            assert_eq!(a.to_string(), s);
            assert_eq!(s.parse::<Against>().unwrap(), a);
            assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{s}\""));
        }
        let compiled: Against = "device:cpu/compiled".parse().unwrap();
        assert_eq!(compiled.target().map(Target::as_str), Some("cpu/compiled"));
        assert_eq!(Against::Float64.target(), None);
        assert!("device:gpu".parse::<Against>().unwrap_err().contains("unknown device `gpu`"));
        assert!("float32".parse::<Against>().unwrap_err().contains("unknown comparison reference `float32`"));
    }

    #[test]
    fn verdicts_round_trip_and_follow_compare() {
        for v in ComparisonVerdict::ALL {
            assert_eq!(v.as_str().parse::<ComparisonVerdict>().unwrap(), v);
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        assert_eq!(ComparisonVerdict::from(&Verdict::Disagree), ComparisonVerdict::Disagree);
        let why = Verdict::Incomparable { reason: "complex".into() };
        assert_eq!(ComparisonVerdict::from(&why), ComparisonVerdict::Incomparable);
        assert!("maybe".parse::<ComparisonVerdict>().is_err());
    }
}
