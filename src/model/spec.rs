//! The validated spec of a planned case, as the catalogue loader builds it, the store keeps it
//! (`cases.spec`, `reference_outputs.spec`, as JSON) and the worker receives it (`case`): what
//! to call, with which inputs, and how its outputs are compared. Imported results carry where
//! they came from instead ([`ImportedSpec`]).
//!
//! The JSON is the one earlier versions wrote from an untyped map: keys in alphabetical order
//! (the fields below are declared in that order), `code` and `outputs` written as `null` when
//! absent, `rtol`, `atol`, `tolerance`, `skip` and `timeout_s` left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{Dtype, DtypeName, Mode};
use crate::compare::Rule;

/// What a [`super::CaseRow`] was planned from: a catalogue case, or an imported test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "Value")]
pub enum Spec {
    /// A catalogue case (its JSON has a `function`), boxed: an import's is a few bytes.
    Catalogue(Box<CaseSpec>),
    /// A result imported from a test suite or the paper's data.
    Imported(ImportedSpec),
}

impl Spec {
    /// True for a workload's case ([`CaseSpec::is_workload`]); false for imports.
    pub fn is_workload(&self) -> bool {
        self.catalogue().is_some_and(CaseSpec::is_workload)
    }

    /// The catalogue case, if this row was planned from one.
    pub fn catalogue(&self) -> Option<&CaseSpec> {
        match self {
            Spec::Catalogue(c) => Some(c),
            Spec::Imported(_) => None,
        }
    }
}

impl From<CaseSpec> for Spec {
    fn from(c: CaseSpec) -> Spec {
        Spec::Catalogue(Box::new(c))
    }
}

impl TryFrom<Value> for Spec {
    type Error = serde_json::Error;
    /// A JSON object with a `function` key is a catalogue case; any other is an import's.
    fn try_from(v: Value) -> Result<Spec, serde_json::Error> {
        if v.get("function").is_some() {
            serde_json::from_value::<CaseSpec>(v).map(Spec::from)
        } else {
            serde_json::from_value(v).map(Spec::Imported)
        }
    }
}

/// One catalogue case as planned (docs/catalogue.md): the fields the worker reads (`function`,
/// `id`, `inputs`, `kwargs`, `code`) and those Rust reads (`compare`, `outputs`, tolerances,
/// `skip`, `timeout_s`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// Absolute tolerance for every dtype of the case, replacing the dtype's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atol: Option<f64>,
    /// Python defining `build(ctx, *inputs, **kwargs)` (docs/catalogue.md, "Python case code").
    #[serde(default)]
    pub code: Option<String>,
    /// The comparison rule(s).
    #[serde(default)]
    pub compare: Compare,
    /// The fully qualified function (`torch.linalg.svd`).
    pub function: String,
    /// The catalogue case id.
    pub id: String,
    /// Positional inputs, in call order, as the worker's `mlport_inputs.py` reads them (`shape`,
    /// `dtype` — `T` or a [`Dtype`] name —, `dist`, `value`, `as`, ...). Kept as JSON: the
    /// worker interprets them, Rust only hashes them ([`crate::plan::input_key`], whose hash
    /// names cached input files and must not move) and reads an input's `dtype` (repro).
    #[serde(default)]
    pub inputs: Vec<Value>,
    /// Literal keyword arguments of the call: any JSON the function takes (with the worker's
    /// `$dtype`/`$device` placeholders), so open by nature.
    #[serde(default)]
    pub kwargs: Map<String, Value>,
    /// The `ulp` rule's bound, in ULPs of the output's dtype (`max_ulp`, or `ulp = N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ulp: Option<f64>,
    /// The execution modes the case runs in (`modes`, docs/modes.md); `None`: every mode the run
    /// asks for. A target whose mode is not listed gets no result for the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<Mode>>,
    /// The dtype each compared output must have (`out_dtype`); `None`: the float64 reference's
    /// mapped to the case's precision ([`crate::outcome::expected_dtype`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_dtype: Option<OutDtype>,
    /// Indices of the output leaves to compare; `None` compares every leaf.
    #[serde(default)]
    pub outputs: Option<Vec<u32>>,
    /// Relative tolerance for every dtype of the case, replacing the dtype's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtol: Option<f64>,
    /// Recorded as `skip` with this why, never run (set by the plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
    /// A case taken from a framework's own test data (`mlport run --suite`, docs/suites.md):
    /// the worker builds the sample from the suite instead of `inputs`, `kwargs` and `code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<super::SuiteSample>,
    /// Per-case time limit in seconds (set by the plan from the catalogue's `timeout_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// Per-dtype overrides of `rtol`/`atol`, which they win over.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", serialize_with = "by_name")]
    pub tolerance: BTreeMap<Dtype, DtypeTolerance>,
    /// Set on the cases of a workload (catalogue `kind = "workload"`, docs/workloads.md): a whole
    /// model or composite computation, judged by the whole-model rule and measured for memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSpec>,
}

/// What a workload case adds to a case (docs/workloads.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Samples each call processes (the batch), for throughput in samples/s; `None` when the
    /// catalogue states none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// The off-the-rut pair the case belongs to (`conv2d`): the same mathematics written as the
    /// framework's own kernel and composed from primitives (Barham & Isard, "Machine Learning
    /// Systems are Stuck in a Rut", HotOS 2019).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rut_pair: Option<String>,
    /// Its side of the pair; set exactly when `rut_pair` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rut_role: Option<RutRole>,
}

/// A case's side of an off-the-rut pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum RutRole {
    /// The framework's own (monolithic) kernel: the pair's baseline.
    Monolithic,
    /// The same mathematics composed from primitives (or a Python loop).
    Composed,
}

impl RutRole {
    /// `monolithic` or `composed`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl CaseSpec {
    /// True for the cases of a workload ([`CaseSpec::workload`]).
    pub fn is_workload(&self) -> bool {
        self.workload.is_some()
    }
}

impl CaseSpec {
    /// A case calling `function` with no inputs, no kwargs and the defaults: `allclose` on
    /// every output, the dtypes' tolerances.
    pub fn new(function: &str, id: &str) -> CaseSpec {
        CaseSpec {
            atol: None,
            code: None,
            compare: Compare::default(),
            function: function.to_string(),
            id: id.to_string(),
            inputs: Vec::new(),
            kwargs: Map::new(),
            max_ulp: None,
            modes: None,
            out_dtype: None,
            outputs: None,
            rtol: None,
            skip: None,
            suite: None,
            timeout_s: None,
            tolerance: BTreeMap::new(),
            workload: None,
        }
    }
}

/// A case's `compare`: one rule for every compared output, or one per compared output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "RuleNames")]
pub enum Compare {
    /// `"up_to_sign"`.
    One(Rule),
    /// `["up_to_sign", "allclose", "up_to_sign_rows"]`.
    PerOutput(Vec<Rule>),
}

/// `compare` as written, before its names are checked (so that an unknown one is named).
#[derive(Deserialize)]
#[serde(untagged)]
enum RuleNames {
    One(String),
    PerOutput(Vec<String>),
}

impl TryFrom<RuleNames> for Compare {
    type Error = crate::compare::UnknownRule;
    fn try_from(names: RuleNames) -> Result<Compare, Self::Error> {
        Ok(match names {
            RuleNames::One(r) => Compare::One(r.parse()?),
            RuleNames::PerOutput(list) => Compare::PerOutput(list.iter().map(|r| r.parse()).collect::<Result<_, _>>()?),
        })
    }
}

impl Default for Compare {
    /// `allclose`.
    fn default() -> Compare {
        Compare::One(Rule::AllClose)
    }
}

impl Compare {
    /// The rule of the `i`-th compared output: the one rule, or the list's `i`-th
    /// (`allclose` past its end).
    pub fn rule(&self, i: usize) -> Rule {
        match self {
            Compare::One(r) => *r,
            Compare::PerOutput(list) => list.get(i).copied().unwrap_or(Rule::AllClose),
        }
    }
}

/// A case's `out_dtype` (docs/catalogue.md): the dtype every compared output must have, or one
/// per compared output (in the order of `outputs`, like `compare`); each a [`Dtype`] name or
/// `T`, the swept dtype. Checked by the loader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OutDtype {
    /// `out_dtype = "int64"` (or `"T"`).
    One(String),
    /// `out_dtype = ["T", "int64"]`.
    PerOutput(Vec<String>),
}

impl OutDtype {
    /// The dtype the `i`-th compared output must have at the swept dtype `case`: `T` is
    /// `case`; `None` past the end of a list (that output's dtype is not declared).
    pub fn of(&self, i: usize, case: Dtype) -> Option<DtypeName> {
        let name = match self {
            OutDtype::One(d) => d,
            OutDtype::PerOutput(list) => list.get(i)?,
        };
        Some(if name == "T" { case.into() } else { DtypeName::parse(name) })
    }
}

/// One dtype's entry in a case's `tolerance`; an absent value falls back to the case's
/// `rtol`/`atol`, then to the dtype's default. Both are written, `null` when absent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtypeTolerance {
    /// Absolute tolerance.
    #[serde(default)]
    pub atol: Option<f64>,
    /// Relative tolerance.
    #[serde(default)]
    pub rtol: Option<f64>,
}

/// Writes the `tolerance` map ordered by dtype name, as the untyped map of earlier versions did.
fn by_name<S: Serializer>(map: &BTreeMap<Dtype, DtypeTolerance>, s: S) -> Result<S::Ok, S::Error> {
    let sorted: BTreeMap<&str, &DtypeTolerance> = map.iter().map(|(d, t)| (d.as_str(), t)).collect();
    sorted.serialize(s)
}

/// Where an imported result came from: the pytest node id, or the paper's timing key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedSpec {
    /// The outcome, as pytest words it (`passed`, `failed`, `skipped`, ...; `absent` when the
    /// test is not there), that the same device test has in the report the authors' plotting
    /// code read for the run's machine, where that is another file than the report imported:
    /// TensorFlow's 8 May reports at the top of `t4_vm/` and `tpu_vm/` ([`crate::import::paper`]).
    /// `None` where the authors read the imported report itself (or a byte-identical copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authors_outcome: Option<String>,
    /// The pytest node id as run (`...::TestOptimCPU::test_adamax_cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodeid: Option<String>,
    /// The position (0-based) in the pytest report of the case's test on the run's device:
    /// pytest's run order (a PyTorch case's device copy, not its CPU copy, whose case it shares).
    /// `None` for a test known only from timing files, a case with only a CPU copy, and imports
    /// made before mlport recorded it. The authors' method of `report paper` reads tests in
    /// this order ([`crate::analysis::paper_plotting`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_index: Option<u64>,
    /// The paper's timing-file key (`Adamax_test.py:test_adamax_cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_key: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Specs as the previous version stored them (`/work/parity/store.db`, `cases.spec`).
    const STORED: [&str; 4] = [
        r#"{"code":null,"compare":"shape_dtype","function":"numpy.argsort","id":"default","inputs":[{"shape":[4,32]}],"kwargs":{"axis":-1},"outputs":null}"#,
        r#"{"code":null,"compare":["up_to_sign","allclose","up_to_sign_rows"],"function":"numpy.linalg.svd","id":"thin","inputs":[{"shape":[32,16]}],"kwargs":{"full_matrices":false},"outputs":null,"tolerance":{"float32":{"atol":0.00005,"rtol":null}}}"#,
        r#"{"timing_key":"Adamax_test.py:test_adamax_cpu"}"#,
        r#"{"nodeid":"src/pytorch_tests_reduced/Adamax_test.py::TestOptimCPU::test_adamax_cpu"}"#,
    ];

    #[test]
    fn stored_specs_load_and_write_back_the_same() {
        for text in STORED {
            let spec: Spec = serde_json::from_str(text).unwrap();
            let back = serde_json::to_string(&spec).unwrap();
            // The old writer's numbers (0.00005) are serde_json's, so compare as values and as text.
            assert_eq!(serde_json::from_str::<Value>(&back).unwrap(), serde_json::from_str::<Value>(text).unwrap());
            assert_eq!(back, serde_json::to_string(&serde_json::from_str::<Value>(text).unwrap()).unwrap());
        }
        let svd: Spec = serde_json::from_str(STORED[1]).unwrap();
        let c = svd.catalogue().unwrap();
        assert_eq!(c.compare.rule(2), Rule::UpToSign { axis: -1 });
        assert_eq!(c.tolerance[&Dtype::Float32], DtypeTolerance { atol: Some(5e-5), rtol: None });
        assert!(serde_json::from_str::<Spec>(STORED[2]).unwrap().catalogue().is_none());
    }

    #[test]
    fn an_imported_specs_report_position_and_authors_outcome_round_trip_in_key_order() {
        let text =
            r#"{"authors_outcome":"failed","nodeid":"src/t/zeros_test.py::ZerosTest::test_zeros","report_index":7}"#;
        let spec: Spec = serde_json::from_str(text).unwrap();
        let Spec::Imported(i) = &spec else { unreachable!() };
        assert_eq!((i.report_index, i.authors_outcome.as_deref()), (Some(7), Some("failed")));
        assert_eq!(serde_json::to_string(&spec).unwrap(), text);
    }

    #[test]
    fn plan_fields_and_tolerances_are_written_in_key_order() {
        let mut c = match serde_json::from_str::<Spec>(STORED[0]).unwrap() {
            Spec::Catalogue(c) => *c,
            Spec::Imported(_) => unreachable!(),
        };
        c.skip = Some("needs a GPU".into());
        c.timeout_s = Some(30.0);
        c.rtol = Some(1e-3);
        c.tolerance.insert(Dtype::Float16, DtypeTolerance { atol: None, rtol: Some(1e-2) });
        c.tolerance.insert(Dtype::Bfloat16, DtypeTolerance { atol: None, rtol: Some(1e-1) });
        let text = serde_json::to_string(&c).unwrap();
        let sorted = serde_json::to_string(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
        assert_eq!(text, sorted, "keys in the untyped map's order");
    }

    #[test]
    fn invalid_specs_are_errors() {
        for bad in [
            r#"{"function":"f","id":"d","compare":"roughly"}"#,
            r#"{"function":"f","id":"d","tolerance":{"float8":{"rtol":1}}}"#,
            r#"{"function":"f","id":"d","colour":1}"#,
            r#"{"args":[]}"#,
        ] {
            assert!(serde_json::from_str::<Spec>(bad).is_err(), "{bad}");
        }
    }
}
