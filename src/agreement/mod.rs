//! Numeric agreement: which results give the same answer as their references, and the
//! `wrong_result` verdict. A passing result is compared, output leaf by output leaf, with
//! - the float64 reference of its canonical op (the NumPy catalogue's function on the same
//!   inputs upcast to float64, [`crate::model::ReferenceRow`]), with the tolerance of the
//!   output's own dtype (torch.testing.assert_close's defaults, `crate::compare::Tolerance`);
//!   dtypes may differ (the reference is wider), shapes may not;
//! - the same case on its reference target, where dtypes must match too: the run's reference
//!   device for an eager target, the same device eager for a compiled one (`cpu/compiled` is
//!   judged against `cpu`: a compiler that changes the answer gives a `wrong_result`).
//!
//! The case's `compare` rule (allclose, exact, sorted, up_to_sign, ...), `outputs` selection and
//! tolerance overrides (`rtol`, `atol`, `tolerance.<dtype>`) come from its catalogue spec. The
//! numeric work is [`crate::compare`]'s; this module decides what is compared with what and
//! stores the verdicts.

pub mod model_check;
mod pairs;
pub mod whole_model;

pub(crate) use pairs::leaves;
pub use pairs::{OutputPair, compare_outputs, tolerance};

use std::collections::{HashMap, HashSet};

use crate::model::{
    Against, CaseResult, CaseRow, ComparisonRow, ComparisonVerdict, Dtype, Framework, Outcome, ReferenceRow, ResultRow,
    Target,
};
use crate::outcome::Decision;
use crate::store::{Store, StoreError};

/// `against` of comparisons with the float64 reference.
pub const FLOAT64: Against = Against::Float64;

/// The key of the float64 reference of an aligned case at one dtype: `reference/<op>/<case>/<dtype>`.
pub fn reference_key(op: &str, case_id: &str, dtype: Dtype) -> String {
    format!("reference/{op}/{case_id}/{dtype}")
}

/// The key of a case's own float64 reference (its catalogue `reference`, or its float64
/// self-reference): `reference/case/<case key>`.
pub fn case_reference_key(case_key: &str) -> String {
    format!("reference/case/{case_key}")
}

/// The keys a case's float64 reference may be planned under, in the order they are tried: its
/// own ([`case_reference_key`]: a catalogue `reference`, or a float64 self-reference; the plan
/// gives a case one only when that is what judges it), then its canonical op's
/// ([`reference_key`]).
pub fn reference_keys(op: Option<&str>, case: &CaseRow) -> Vec<String> {
    let mut keys = vec![case_reference_key(&case.key)];
    if let (Some(op), Some(dtype)) = (op, case.dtype) {
        keys.push(reference_key(op, &case.case_id, dtype));
    }
    keys
}

/// The dtype a float64 reference computes in for a case swept at `dtype`: `float64` for
/// floating dtypes, `complex128` for complex ones, the dtype itself otherwise (integers and
/// bool are computed exactly at their own dtype).
pub fn reference_dtype(dtype: Dtype) -> Dtype {
    if dtype.is_float() {
        Dtype::Float64
    } else if dtype.is_complex() {
        Dtype::Complex128
    } else {
        dtype
    }
}

/// How a float64 reference is named in messages and reports: `numpy.cumsum in float64` for
/// floating cases, `numpy.sum on the same int8 inputs` for integer and bool cases (computed at
/// their own dtype, with NumPy's promotion, or from float64 when the result is floating).
pub fn reference_label(function: &str, case_dtype: Dtype) -> String {
    match reference_dtype(case_dtype) {
        d @ (Dtype::Float64 | Dtype::Complex128) => format!("{function} in {d}"),
        d => format!("{function} on the same {d} inputs"),
    }
}

/// What a run's comparisons need to know, loaded once: each function's canonical op and the
/// computed float64 references.
#[derive(Debug, Default)]
pub struct Checker {
    ops: HashMap<(Framework, String), String>,
    references: HashMap<String, ReferenceRow>,
}

impl Checker {
    /// Loads the run's functions' ops and its references (computed or not).
    pub fn load(store: &Store, run: i64) -> Result<Checker, StoreError> {
        let ops =
            store.functions(run)?.into_iter().filter_map(|f| f.op.map(|op| ((f.framework, f.name), op))).collect();
        let references = store.references(run)?.into_iter().map(|r| (r.key.clone(), r)).collect();
        Ok(Checker { ops, references })
    }

    /// The float64 reference a case is judged by, computed or not ([`reference_keys`]): its own
    /// (its catalogue `reference`, or its float64 self-reference), else its op's.
    pub fn planned_reference_of(&self, case: &CaseRow) -> Option<&ReferenceRow> {
        let op = self.ops.get(&(case.framework, case.function.clone())).map(String::as_str);
        reference_keys(op, case).iter().find_map(|k| self.references.get(k))
    }

    /// The computed float64 reference of a case ([`Checker::planned_reference_of`], `pass`).
    pub fn reference_of(&self, case: &CaseRow) -> Option<&ReferenceRow> {
        self.planned_reference_of(case).filter(|r| r.outcome == Some(Outcome::Pass))
    }

    /// Compares a just-recorded result that ran to an answer (a pass, or a `wrong_result` compared
    /// again: what ran is compared, whatever an earlier verdict said) with its float64 reference
    /// and stores the comparisons; returns [`crate::outcome::wrong_result`]'s decision when it
    /// disagrees (the stored result already has it). Nothing happens for other results or
    /// without a reference.
    pub fn check_float64(
        &self,
        store: &mut Store,
        run: i64,
        case: &CaseRow,
        result: &CaseResult,
    ) -> Result<Option<Decision>, StoreError> {
        if judged_in_closing_pass(case) {
            // Judged against its eager floor, which may not have run yet: in the closing pass.
            return Ok(None);
        }
        Ok(self.compare_float64(store, run, case, result, model_check::Floor::Missing)?.and_then(|(_, wrong)| wrong))
    }

    /// [`Checker::check_float64`], also returning the stored comparison rows (`None` when
    /// nothing was compared).
    ///
    /// A workload's rows become the whole-model verdict against `floor`
    /// ([`model_check::apply`]); other cases ignore it.
    fn compare_float64(
        &self,
        store: &mut Store,
        run: i64,
        case: &CaseRow,
        result: &CaseResult,
        floor: model_check::Floor<'_>,
    ) -> Result<Option<Compared>, StoreError> {
        if !matches!(result.outcome, Outcome::Pass | Outcome::WrongResult) {
            return Ok(None);
        }
        let Some(reference) = self.reference_of(case) else { return Ok(None) };
        let (Some(spec), Some(case_dtype)) = (case.spec.catalogue(), case.dtype) else { return Ok(None) };
        let label = match reference.function == case.function {
            false => reference_label(&reference.function, case_dtype),
            true => format!("{} (self-reference)", reference_label(&reference.function, case_dtype)),
        };
        let pair =
            OutputPair { spec, case_dtype, actual: &result.outputs, expected: &reference.outputs, check_dtype: false };
        let mut rows = compare_outputs(&pair, &case.key, &result.device, &FLOAT64, &label);
        if rows.is_empty() {
            return Ok(None);
        }
        if judged_in_closing_pass(case) {
            model_check::apply(&mut rows, case_dtype, result, floor, Some(&reference.outputs));
        }
        let wrong = crate::outcome::wrong_result(&rows);
        store.record_comparisons(run, &case.key, &result.device, &rows, wrong.as_ref())?;
        Ok(Some((rows, wrong)))
    }
}

/// Whether a case is judged only in the closing pass ([`check_run`]), never as it is committed:
/// a workload judged by the whole-model rule (its catalogue `compare` is `whole_model`, the
/// workloads' default). Such a case needs no reference recorded before it runs.
pub fn judged_in_closing_pass(case: &CaseRow) -> bool {
    case.spec
        .catalogue()
        .is_some_and(|s| s.is_workload() && s.compare == crate::model::Compare::One(crate::compare::Rule::WholeModel))
}

/// The floor a workload's result is judged against, its reference target
/// ([`Target::reference_target`]: eager on the same device for compiled and exported targets,
/// eager on the reference device for eager ones): itself when it is that target, else that
/// target's result (`Missing` when it did not run to an answer).
fn floor_of<'a>(
    result: &CaseResult,
    key: &str,
    reference_device: &Target,
    ran: &HashMap<(&str, &Target), &'a CaseResult>,
) -> model_check::Floor<'a> {
    let floor = result.device.reference_target(reference_device);
    if result.device == floor {
        return model_check::Floor::Itself;
    }
    match ran.get(&(key, &floor)) {
        Some(r) => model_check::Floor::Other(r),
        None => model_check::Floor::Missing,
    }
}

/// The comparison rows a result got against one reference, and the verdict they gave.
type Compared = (Vec<ComparisonRow>, Option<Decision>);

/// The output indices a float64 comparison judged (agree or disagree; not `incomparable`).
fn decided(rows: &[ComparisonRow]) -> Vec<u32> {
    rows.iter()
        .filter(|r| r.against == FLOAT64 && r.verdict != ComparisonVerdict::Incomparable)
        .map(|r| r.output_index)
        .collect()
}

/// What a comparison pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassSummary {
    /// Results compared (with one reference each).
    pub compared: usize,
    /// Of them, results that disagreed and became `wrong_result`.
    pub wrong: usize,
}

/// The comparison pass over a whole run: every passing (or already wrong) result is compared
/// with whatever reference it has and has not been compared with yet — its float64 reference
/// and, on targets other than their reference target ([`Target::reference_target`]:
/// `reference_device` for eager targets, the same device eager for compiled ones), the same
/// case on that target when it ran there. Idempotent: a resumed or repeated pass compares
/// only what is missing.
///
/// Attribution: the float64 reference is the judge. An output it judged (agree or disagree)
/// is not judged again against the other target, so a compiled (or other-device) result that
/// agrees with float64 is never `wrong_result` because the eager (reference-device) one is
/// wrong; only outputs the float64 reference could not judge go by the other target
/// ([`crate::outcome::against_target`]: on a compiled target "differs, side unknown", a pass;
/// on another device `wrong_result`, the reference device being the paper's baseline).
pub fn check_run(store: &mut Store, run: i64, reference_device: &Target) -> Result<PassSummary, StoreError> {
    let checker = Checker::load(store, run)?;
    let done: HashSet<(String, Target, Against)> = store.compared(run)?;
    let mut earlier = by_result(store.comparisons(run)?);
    let rows: Vec<ResultRow> = store.results(run)?;
    let ran: HashMap<(&str, &Target), &CaseResult> = rows
        .iter()
        .filter(|r| matches!(r.result.outcome, Outcome::Pass | Outcome::WrongResult))
        .map(|r| ((r.case.key.as_str(), &r.result.device), &r.result))
        .collect();
    let mut summary = PassSummary::default();
    for row in &rows {
        let (case, result) = (&row.case, &row.result);
        if !matches!(result.outcome, Outcome::Pass | Outcome::WrongResult) {
            continue;
        }
        let mut wrong = result.outcome == Outcome::WrongResult;
        let stored = earlier.remove(&(case.key.clone(), result.device.clone())).unwrap_or_default();
        let mut judged = decided(&stored);
        let seen = |against: &Against| done.contains(&(case.key.clone(), result.device.clone(), against.clone()));
        let floor = floor_of(result, &case.key, reference_device, &ran);
        if !seen(&FLOAT64) && checker.reference_of(case).is_some() {
            summary.compared += 1;
            if let Some((rows, verdict)) = checker.compare_float64(store, run, case, result, floor)? {
                judged = decided(&rows);
                if verdict.is_some() {
                    summary.wrong += 1;
                    wrong = true;
                }
            }
        }
        let target = result.device.reference_target(reference_device);
        let device_against = Against::Target(target.clone());
        if result.device != target
            && !seen(&device_against)
            && let Some(expected) = ran.get(&(case.key.as_str(), &target))
            && let (Some(spec), Some(case_dtype)) = (case.spec.catalogue(), case.dtype)
        {
            let pair = OutputPair {
                spec,
                case_dtype,
                actual: &result.outputs,
                expected: &expected.outputs,
                check_dtype: true,
            };
            let mut rows = compare_outputs(&pair, &case.key, &result.device, &device_against, target.as_str());
            if rows.is_empty() {
                continue;
            }
            summary.compared += 1;
            let compiled = result.device.mode().is_compiled();
            // A workload without a float64 golden run: the whole-model rule's cosine fallback
            // against the target, whose verdict holds on any target.
            let cosine = judged.is_empty()
                && judged_in_closing_pass(case)
                && model_check::apply(&mut rows, case_dtype, result, model_check::Floor::Other(expected), None)
                    .is_some();
            // A result already wrong against float64 keeps that verdict and its message.
            let verdict = if cosine {
                crate::outcome::wrong_result(&rows).filter(|_| !wrong)
            } else {
                crate::outcome::against_target(&rows, &judged, compiled).filter(|_| !wrong)
            };
            if verdict.as_ref().is_some_and(|d| d.outcome == Outcome::WrongResult) {
                summary.wrong += 1;
            }
            store.record_comparisons(run, &case.key, &result.device, &rows, verdict.as_ref())?;
        }
    }
    Ok(summary)
}

/// Comparisons of a run grouped by (case key, device), for reports.
pub fn by_result(rows: Vec<ComparisonRow>) -> HashMap<(String, Target), Vec<ComparisonRow>> {
    let mut out: HashMap<(String, Target), Vec<ComparisonRow>> = HashMap::new();
    for r in rows {
        out.entry((r.case_key.clone(), r.device.clone())).or_default().push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    //! The comparison pass on a real store, with outputs written by the test: a second device
    //! is a test double here (no GPU is needed to check which result is compared with which).
    use super::*;
    use crate::compare::{Data, NpyArray, write_npy};
    use crate::model::Framework;
    use crate::model::{CaseSpec, FunctionRow, RunInfo, Spec};
    use serde_json::json;

    fn write(dir: &std::path::Path, name: &str, data: Data) -> Value {
        let path = dir.join(name);
        write_npy(&path, &NpyArray::new(vec![4], data).unwrap()).unwrap();
        let dtype = if name.contains("f64") { "float64" } else { "float32" };
        json!([{"index": 0, "kind": "array", "dtype": dtype, "shape": [4], "path": path.to_str().unwrap()}])
    }

    use serde_json::Value;

    #[test]
    fn other_devices_are_compared_with_the_reference_device_and_dtype_changes_count() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let f = FunctionRow::new(Framework::Torch, "torch.exp");
        let case = |id: &str| CaseRow {
            key: format!("torch/torch.exp/{id}/float32"),
            framework: Framework::Torch,
            function: "torch.exp".into(),
            case_id: id.into(),
            dtype: Some(Dtype::Float32),
            seed: 0,
            spec: Spec::from(CaseSpec::new("torch.exp", "default")),
        };
        let cases = [case("same"), case("off"), case("widened")];
        let run = store.create_run(&RunInfo::blank("test", Target::cpu()), &Default::default(), &[f], &cases).unwrap();
        let cpu = write(dir.path(), "cpu.npy", Data::Float32(vec![1.0, 2.0, 3.0, 4.0]));
        // The test double device: one case agrees, one is 1e-3 off at one element, one returns float64.
        let same = write(dir.path(), "same.npy", Data::Float32(vec![1.0, 2.0, 3.0, 4.000001]));
        let off = write(dir.path(), "off.npy", Data::Float32(vec![1.0, 2.001, 3.0, 4.0]));
        let wide = write(dir.path(), "wide-f64.npy", Data::Float64(vec![1.0, 2.0, 3.0, 4.0]));
        let gpu: Target = "cuda:0".parse().unwrap();
        for (c, device, outputs) in [
            (&cases[0], Target::cpu(), &cpu),
            (&cases[1], Target::cpu(), &cpu),
            (&cases[2], Target::cpu(), &cpu),
            (&cases[0], gpu.clone(), &same),
            (&cases[1], gpu.clone(), &off),
            (&cases[2], gpu.clone(), &wide),
        ] {
            let mut r = CaseResult::new(&c.key, device, Outcome::Pass);
            r.outputs = outputs.clone();
            store.record_result(run, &r).unwrap();
        }
        let s = check_run(&mut store, run, &Target::cpu()).unwrap();
        assert_eq!(s, PassSummary { compared: 3, wrong: 2 });
        let outcomes: Vec<(String, String, Outcome)> = store
            .results(run)
            .unwrap()
            .into_iter()
            .map(|r| (r.case.case_id, r.result.device.to_string(), r.result.outcome))
            .collect();
        assert!(outcomes.contains(&("same".into(), "cuda:0".into(), Outcome::Pass)), "{outcomes:?}");
        assert!(outcomes.contains(&("off".into(), "cuda:0".into(), Outcome::WrongResult)), "{outcomes:?}");
        assert!(outcomes.contains(&("widened".into(), "cuda:0".into(), Outcome::WrongResult)), "{outcomes:?}");
        assert!(
            outcomes.iter().filter(|o| o.1 == "cpu").all(|o| o.2 == Outcome::Pass),
            "the reference is never judged"
        );
        let cmp = store.comparisons(run).unwrap();
        let off_cmp = cmp.iter().find(|c| c.case_key.contains("/off/")).unwrap();
        assert_eq!(
            (off_cmp.against.to_string().as_str(), off_cmp.mismatched, off_cmp.verdict.as_str()),
            ("device:cpu", 1, "disagree")
        );
        // 2.001f32 - 2.0 is 0.0009999275 (the float32 nearest to 2.001 is 2.00099992752...).
        assert!((off_cmp.max_abs.unwrap() - 0.000_999_927_5).abs() < 1e-9, "{off_cmp:?}");
        let wide_cmp = cmp.iter().find(|c| c.case_key.contains("/widened/")).unwrap();
        assert!(wide_cmp.dtype_changed && wide_cmp.mismatched == 0, "{wide_cmp:?}");
        let message =
            store.results(run).unwrap().into_iter().find(|r| r.case.case_id == "off" && r.result.device == gpu);
        assert!(message.unwrap().result.message.unwrap().starts_with("disagrees with cpu (output 0)"));
        // A second pass compares nothing again.
        assert_eq!(check_run(&mut store, run, &Target::cpu()).unwrap(), PassSummary::default());
    }

    #[test]
    fn compiled_targets_are_judged_by_float64_first_and_never_blamed_blind() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let mut f = FunctionRow::new(Framework::Jax, "jax.numpy.exp");
        f.op = Some("exp".into());
        let case = |id: &str| CaseRow {
            key: format!("jax/jax.numpy.exp/{id}/float32"),
            framework: Framework::Jax,
            function: "jax.numpy.exp".into(),
            case_id: id.into(),
            dtype: Some(Dtype::Float32),
            seed: 0,
            spec: Spec::from(CaseSpec::new("jax.numpy.exp", id)),
        };
        // `judged` has a float64 reference, `blind` has none.
        let cases = [case("judged"), case("blind")];
        // The run's reference is cuda:0; cpu/compiled is still judged against cpu eager.
        let gpu: Target = "cuda:0".parse().unwrap();
        let run = store.create_run(&RunInfo::blank("test", gpu.clone()), &Default::default(), &[f], &cases).unwrap();
        let reference = ReferenceRow {
            framework: Framework::Numpy,
            key: reference_key("exp", "judged", Dtype::Float32),
            op: "exp".into(),
            case_id: "judged".into(),
            dtype: Dtype::Float32,
            function: "numpy.exp".into(),
            seed: 0,
            spec: CaseSpec::new("numpy.exp", "judged"),
            outcome: None,
            message: None,
            outputs: json!([]),
        };
        store.plan_references(run, std::slice::from_ref(&reference)).unwrap();
        let f64_out = write(dir.path(), "ref-f64.npy", Data::Float64(vec![1.0, 2.0, 3.5, 4.0]));
        store.record_reference(run, &reference.key, Outcome::Pass, None, &f64_out).unwrap();
        // Eager is the wrong one (3.0 where float64 says 3.5); compiled and the GPU are right.
        let eager = write(dir.path(), "cpu.npy", Data::Float32(vec![1.0, 2.0, 3.0, 4.0]));
        let right = write(dir.path(), "right.npy", Data::Float32(vec![1.0, 2.0, 3.5, 4.0]));
        let cpu_compiled: Target = "cpu/compiled".parse().unwrap();
        for c in &cases {
            for (device, outputs) in [(Target::cpu(), &eager), (cpu_compiled.clone(), &right), (gpu.clone(), &right)] {
                let mut r = CaseResult::new(&c.key, device, Outcome::Pass);
                r.outputs = outputs.clone();
                store.record_result(run, &r).unwrap();
            }
        }
        let s = check_run(&mut store, run, &gpu).unwrap();
        let got = |id: &str, device: &Target| {
            let r =
                store.results(run).unwrap().into_iter().find(|r| r.case.case_id == id && r.result.device == *device);
            let r = r.unwrap().result;
            (r.outcome, r.message.unwrap_or_default())
        };
        // With float64: the wrong side is eager, on cpu; compiled and cuda:0 agree with float64.
        let (o, m) = got("judged", &Target::cpu());
        assert_eq!(o, Outcome::WrongResult);
        assert!(m.starts_with("disagrees with numpy.exp in float64 (output 0)"), "{m}");
        assert_eq!(got("judged", &cpu_compiled), (Outcome::Pass, String::new()), "compiled is right");
        assert_eq!(got("judged", &gpu), (Outcome::Pass, String::new()));
        // Without float64: compiled differing from eager names no side; cpu against the
        // reference device cuda:0 is a wrong result (the paper's baseline).
        let (o, m) = got("blind", &cpu_compiled);
        assert_eq!(o, Outcome::Pass);
        assert!(m.starts_with("differs from cpu (output 0), side unknown: no float64 reference"), "{m}");
        let (o, m) = got("blind", &Target::cpu());
        assert_eq!(o, Outcome::WrongResult);
        assert!(m.starts_with("disagrees with cuda:0 (output 0)"), "{m}");
        assert_eq!(s, PassSummary { compared: 7, wrong: 2 });
        // Every pair was compared all the same (for reports), against what it should be.
        let cmp = store.comparisons(run).unwrap();
        let against: Vec<(&str, String)> = cmp.iter().map(|c| (c.device.as_str(), c.against.to_string())).collect();
        assert!(against.contains(&("cpu/compiled", "device:cpu".into())), "{against:?}");
        assert!(against.contains(&("cpu", "device:cuda:0".into())), "{against:?}");
        assert!(against.contains(&("cpu/compiled", "float64".into())), "{against:?}");
        assert_eq!(check_run(&mut store, run, &gpu).unwrap(), PassSummary::default());
    }

    #[test]
    fn reference_dtypes_widen_floats_only() {
        assert_eq!(reference_dtype(Dtype::Bfloat16), Dtype::Float64);
        assert_eq!(reference_dtype(Dtype::Complex64), Dtype::Complex128);
        assert_eq!(reference_dtype(Dtype::Int8), Dtype::Int8);
        assert_eq!(reference_key("cumsum", "rows", Dtype::Float16), "reference/cumsum/rows/float16");
    }
}
