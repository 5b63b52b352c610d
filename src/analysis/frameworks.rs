//! The cross-framework table (`mlport report --frameworks`): per canonical op, case and dtype,
//! how each framework's function did against the float64 reference (NumPy/SciPy on the same
//! inputs upcast), with the largest error and the steady-state latency side by side
//! (rendered by [`crate::render::frameworks`]).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::agreement::FLOAT64;
use crate::model::{ComparisonRow, ReferenceRow, ResultRow};
use crate::model::{ComparisonVerdict, Dtype, Framework, Outcome, Reason, Target};

/// One framework function's result in a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// The result's id, for `mlport repro`.
    pub result_id: i64,
    /// Fully qualified name.
    pub function: String,
    /// What happened.
    pub outcome: Outcome,
    /// Why it failed, when it did.
    pub reason: Option<Reason>,
    /// The first line of the error or of the disagreement.
    pub message: Option<String>,
    /// Median steady-state time per call, ns (passing and wrong results with samples).
    pub median_ns: Option<f64>,
    /// Its comparisons with the float64 reference, one per compared output.
    pub float64: Vec<ComparisonRow>,
}

/// One (op, case, dtype, device).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpRow {
    /// The catalogue's canonical op.
    pub op: String,
    /// The case's id.
    pub case_id: String,
    /// The case's dtype (`None`, written `""`, for an imported case).
    #[serde(with = "crate::model::dtype_or_empty")]
    pub dtype: Option<Dtype>,
    /// The target.
    pub device: Target,
    /// `numpy.cumsum in float64`, or why there is none.
    pub reference: String,
    /// By framework, only those with a function for the op.
    pub frameworks: BTreeMap<Framework, Vec<Entry>>,
}

/// Counts over the rows of one framework.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Ran and agreed with the float64 reference.
    pub agree: usize,
    /// Ran and disagreed in value (`wrong_result`, reason `wrong_result`).
    pub wrong: usize,
    /// Ran, but an output's dtype was not the expected one (`wrong_result`, reason
    /// `dtype_changed`; JSON version 2).
    pub dtype_changed: usize,
    /// Raised, timed out or crashed.
    pub failed: usize,
    /// Ran, but was not compared: no float64 reference, or an output that could not be compared
    /// (not saved, not an array, unreadable).
    pub unchecked: usize,
}

/// The table of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameworkTable {
    /// The run's id.
    pub run: i64,
    /// The framework columns, in report order.
    pub frameworks: Vec<Framework>,
    /// Ops with functions in two or more frameworks.
    pub shared_ops: usize,
    /// By op, case, dtype (in [`crate::model::Dtype::ALL`] order), then device.
    pub rows: Vec<OpRow>,
    /// Counts over the rows, per framework.
    pub tally: BTreeMap<Framework, Tally>,
}

/// Builds the table: results of functions with a canonical op (planned order), their
/// float64 comparisons, and the run's references. `keep` selects results.
pub fn build(
    run: i64,
    results: &[ResultRow],
    comparisons: &[ComparisonRow],
    references: &[ReferenceRow],
    keep: &dyn Fn(&ResultRow) -> bool,
) -> FrameworkTable {
    let mut by_result: HashMap<(&str, &Target), Vec<ComparisonRow>> = HashMap::new();
    for c in comparisons.iter().filter(|c| c.against == FLOAT64) {
        by_result.entry((c.case_key.as_str(), &c.device)).or_default().push(c.clone());
    }
    let refs: HashMap<(&str, &str, Dtype), &ReferenceRow> =
        references.iter().map(|r| ((r.op.as_str(), r.case_id.as_str(), r.dtype), r)).collect();
    let mut rows: Vec<OpRow> = Vec::new();
    let mut index: HashMap<(String, String, Option<Dtype>, Target), usize> = HashMap::new();
    let mut op_frameworks: BTreeMap<&str, std::collections::BTreeSet<Framework>> = BTreeMap::new();
    for r in results.iter().filter(|r| keep(r)) {
        let Some(op) = r.function.op.as_deref() else { continue };
        op_frameworks.entry(op).or_default().insert(r.function.framework);
        let key = (op.to_string(), r.case.case_id.clone(), r.case.dtype, r.result.device.clone());
        let i = *index.entry(key).or_insert_with(|| {
            let reference = match r.case.dtype.and_then(|d| refs.get(&(op, r.case.case_id.as_str(), d))) {
                None => "— (no NumPy reference)".to_string(),
                Some(x) if x.outcome == Some(Outcome::Pass) => crate::agreement::reference_label(&x.function, x.dtype),
                Some(x) => format!(
                    "{} could not compute it: {}",
                    x.function,
                    x.message.as_deref().and_then(|m| m.lines().next()).unwrap_or("not computed")
                ),
            };
            rows.push(OpRow {
                op: op.to_string(),
                case_id: r.case.case_id.clone(),
                dtype: r.case.dtype,
                device: r.result.device.clone(),
                reference,
                frameworks: BTreeMap::new(),
            });
            rows.len() - 1
        });
        let samples: Vec<f64> = r.result.samples_ns.iter().map(|&s| s as f64).collect();
        rows[i].frameworks.entry(r.function.framework).or_default().push(Entry {
            result_id: r.id,
            function: r.function.name.clone(),
            outcome: r.result.outcome,
            reason: r.result.reason,
            message: r.result.message.as_deref().and_then(|m| m.lines().next()).map(str::to_string),
            median_ns: (!samples.is_empty()).then(|| crate::stats::median(&samples)),
            float64: by_result.remove(&(r.case.key.as_str(), &r.result.device)).unwrap_or_default(),
        });
    }
    let shared: std::collections::HashSet<&str> =
        op_frameworks.iter().filter(|(_, f)| f.len() >= 2).map(|(op, _)| *op).collect();
    // A row says something only where two frameworks ran the same case.
    rows.retain(|r| shared.contains(r.op.as_str()) && r.frameworks.len() >= 2);
    rows.sort_by(|a, b| {
        (&a.op, &a.case_id)
            .cmp(&(&b.op, &b.case_id))
            .then(dtype_order(a.dtype).cmp(&dtype_order(b.dtype)))
            .then(a.device.cmp(&b.device))
    });
    let mut frameworks: Vec<Framework> = rows.iter().flat_map(|r| r.frameworks.keys().copied()).collect();
    frameworks.sort();
    frameworks.dedup();
    let mut tally: BTreeMap<Framework, Tally> = BTreeMap::new();
    for r in &rows {
        for (fw, entries) in &r.frameworks {
            let t = tally.entry(*fw).or_default();
            for e in entries {
                match e.outcome {
                    Outcome::WrongResult if e.reason == Some(Reason::DtypeChanged) => t.dtype_changed += 1,
                    Outcome::WrongResult => t.wrong += 1,
                    Outcome::Pass if !compared(e) => t.unchecked += 1,
                    Outcome::Pass => t.agree += 1,
                    Outcome::Skip | Outcome::Flaky => {}
                    Outcome::Fail | Outcome::Timeout | Outcome::Crash => t.failed += 1,
                }
            }
        }
    }
    FrameworkTable { run, frameworks, shared_ops: shared.len(), rows, tally }
}

/// [`Dtype::ALL`] order, imported cases (no dtype) last.
fn dtype_order(d: Option<Dtype>) -> usize {
    d.map_or(usize::MAX, |d| d as usize)
}

/// Whether every float64 comparison of a passing entry reached a verdict.
pub fn compared(e: &Entry) -> bool {
    !e.float64.is_empty() && e.float64.iter().all(|c| c.verdict != ComparisonVerdict::Incomparable)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::row;

    fn comparison(key: &str, verdict: &str, mismatched: u64, max_abs: f64, max_ulp: f64) -> ComparisonRow {
        ComparisonRow {
            case_key: key.into(),
            device: Target::cpu(),
            against: FLOAT64,
            reference: "numpy.a in float64".into(),
            output_index: 0,
            rule: crate::compare::Rule::AllClose,
            rtol: 1.3e-6,
            atol: 1e-5,
            verdict: verdict.parse().unwrap(),
            elements: 64,
            mismatched,
            max_abs: Some(max_abs),
            max_rel: Some(max_abs),
            max_ulp: Some(max_ulp),
            nan_mismatch: 0,
            inf_mismatch: 0,
            shape_changed: false,
            dtype_changed: false,
            summary: String::new(),
            detail: serde_json::Value::Null,
        }
    }

    fn reference(op: &str, outcome: Outcome) -> ReferenceRow {
        ReferenceRow {
            framework: Framework::Numpy,
            key: crate::agreement::reference_key(op, "c1", Dtype::Float32),
            op: op.into(),
            case_id: "c1".into(),
            dtype: Dtype::Float32,
            function: format!("numpy.{op}"),
            seed: 1,
            spec: crate::model::CaseSpec::new(&format!("numpy.{op}"), "c1"),
            outcome: Some(outcome),
            message: (outcome != Outcome::Pass).then(|| "TypeError: no loop\nmore".into()),
            outputs: serde_json::json!([]),
        }
    }

    /// Op `a` in numpy, torch, jax, tensorflow (torch wrong, jax failed, tensorflow changed the
    /// dtype); op `b` in torch and jax with a
    /// reference NumPy could not compute; op `c` in torch only (not shared, left out).
    pub(crate) fn table() -> FrameworkTable {
        let mut rows = vec![
            row(Framework::Numpy, "a", 1, "cpu", Outcome::Pass, None, &[100, 120, 110]),
            row(Framework::Torch, "a", 1, "cpu", Outcome::WrongResult, Some(Reason::WrongResult), &[50]),
            row(Framework::Jax, "a", 1, "cpu", Outcome::Fail, Some(Reason::DtypeUnsupported), &[]),
            row(Framework::Tensorflow, "a", 1, "cpu", Outcome::WrongResult, Some(Reason::DtypeChanged), &[70]),
            row(Framework::Torch, "b", 1, "cpu", Outcome::Pass, None, &[2000]),
            row(Framework::Jax, "b", 1, "cpu", Outcome::Pass, None, &[3000]),
            row(Framework::Torch, "c", 1, "cpu", Outcome::Pass, None, &[1]),
        ];
        for (i, r) in rows.iter_mut().enumerate() {
            r.id = i as i64 + 10;
        }
        let comparisons = vec![
            comparison("numpy/numpy.a/c1/float32", "agree", 0, 2.5e-7, 0.4),
            comparison("torch/torch.a/c1/float32", "disagree", 5, 0.031, 412.0),
            ComparisonRow {
                dtype_changed: true,
                detail: serde_json::json!({"dtype_actual": "float64", "out_dtype_expected": "float32"}),
                ..comparison("tensorflow/tensorflow.a/c1/float32", "disagree", 0, 0.0, 0.0)
            },
        ];
        build(4, &rows, &comparisons, &[reference("a", Outcome::Pass), reference("b", Outcome::Fail)], &|_| true)
    }

    #[test]
    fn rows_tally_and_shared_ops() {
        let t = table();
        assert_eq!(t.shared_ops, 2);
        assert_eq!(t.rows.iter().map(|r| r.op.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(t.frameworks, [Framework::Numpy, Framework::Torch, Framework::Jax, Framework::Tensorflow]);
        let tf = Tally { agree: 0, wrong: 0, dtype_changed: 1, failed: 0, unchecked: 0 };
        assert_eq!(t.tally[&Framework::Tensorflow], tf, "a dtype change is counted apart");
        assert_eq!(t.tally[&Framework::Torch], Tally { agree: 0, wrong: 1, dtype_changed: 0, failed: 0, unchecked: 1 });
        assert_eq!(t.tally[&Framework::Jax], Tally { agree: 0, wrong: 0, dtype_changed: 0, failed: 1, unchecked: 1 });
        assert_eq!(t.rows[0].frameworks[&Framework::Numpy][0].median_ns, Some(110.0));
        assert_eq!(t.rows[1].reference, "numpy.b could not compute it: TypeError: no loop");
    }
}
