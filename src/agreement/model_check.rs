//! Workloads in the comparison pass: the per-output comparisons of a workload's result become
//! one whole-model verdict ([`super::whole_model::judge`]) over all its compared outputs, read
//! from their `.npy` files and flattened to float64 in output order.
//!
//! The candidate is judged against its **floor** — the same case at the same dtype eager on its
//! reference target (the same device for compiled and exported targets, as dynamo's benchmark
//! runner holds a compiled model to eager; the reference device for eager targets) — and the
//! float64 golden run (the case's self-reference). The
//! judgement is stored in every row's `detail.whole_model` (rule, RMSE, floor RMSE, ratio,
//! multiplier, non-determinism), which `mlport report --workloads` reads.

use std::path::Path;

use serde_json::{Value, json};

use super::whole_model::{self, FloorOutputs, ModelJudgement, ModelOutputs, ModelRule, ModelTolerance, ModelVerdict};
use crate::compare::{read_npy, real_f64};
use crate::model::{CaseResult, ComparisonRow, ComparisonVerdict, Dtype};

/// What a workload's result is judged against.
#[derive(Clone, Copy, Debug)]
pub enum Floor<'a> {
    /// The result is the floor (eager on the reference device).
    Itself,
    /// The floor's result.
    Other(&'a CaseResult),
    /// The floor did not run to an answer: the rows stay elementwise.
    Missing,
}

/// The array outputs `indices` of `outputs` (a result's output descriptions), flattened to
/// float64 and concatenated in that order. Errors name the output that cannot be read.
pub fn flatten(outputs: &Value, indices: &[u32]) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for &i in indices {
        let leaf = super::pairs::leaf(outputs, u64::from(i)).ok_or_else(|| format!("no output {i}"))?;
        let path = leaf["path"].as_str().ok_or_else(|| format!("output {i} has no saved array"))?;
        let array = read_npy(Path::new(path)).map_err(|e| format!("output {i}: {e}"))?;
        out.extend(real_f64(&array));
    }
    Ok(out)
}

/// The larger repeat RMSE of the candidate and its floor (the worker's two-call check, over the
/// elements finite in both calls), and whether either's NaN/infinity pattern changed between
/// its calls.
fn spread(candidate: &CaseResult, floor: Floor<'_>) -> (Option<f64>, bool) {
    let sides: Vec<&CaseResult> = match floor {
        Floor::Other(f) => vec![candidate, f],
        _ => vec![candidate],
    };
    let rmse = sides
        .iter()
        .filter_map(|r| r.measures.and_then(|m| m.repeat_rmse))
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let pattern = sides.iter().any(|r| r.measures.and_then(|m| m.repeat_nan_mismatch).is_some_and(|n| n > 0));
    (rmse, pattern)
}

/// Judges a workload's result from its comparison `rows` against `golden` (the float64 golden
/// run's outputs; `None` when it could not run, and the rows compare with the floor) and sets
/// the rows' verdicts to the whole-model verdict: every row agrees when the model agrees (or is
/// only non-deterministic); when it is wrong, rows beyond tolerance keep `disagree` (row 0
/// becomes one if none is). Rows whose shape or dtype changed keep their verdict. Returns the
/// judgement, or `None` when it could not be made (the floor missing, an unreadable output):
/// the rows then stay elementwise, with the why in their detail.
pub fn apply(
    rows: &mut [ComparisonRow],
    case_dtype: Dtype,
    candidate: &CaseResult,
    floor: Floor<'_>,
    golden: Option<&Value>,
) -> Option<ModelJudgement> {
    if rows.is_empty() || rows.iter().any(|r| r.shape_changed || r.dtype_changed) {
        return None;
    }
    let indices: Vec<u32> = rows.iter().map(|r| r.output_index).collect();
    // Each output was compared at its own dtype's tolerance: that decides "within tolerance"
    // (against the golden run); the ratio rule's rtol/10 and the no-golden check use the widest.
    let within = rows.iter().all(|r| r.verdict == ComparisonVerdict::Agree);
    let tol = ModelTolerance::new(
        rows.iter().map(|r| r.rtol).fold(0.0, f64::max),
        rows.iter().map(|r| r.atol).fold(0.0, f64::max),
        case_dtype,
    );
    let judged = (|| -> Result<ModelJudgement, String> {
        let floor_values = match floor {
            Floor::Other(f) => Some(flatten(&f.outputs, &indices)?),
            _ => None,
        };
        let cand = flatten(&candidate.outputs, &indices)?;
        let gold = golden.map(|g| flatten(g, &indices)).transpose()?;
        let (spread, pattern_differs) = spread(candidate, floor);
        let outputs = ModelOutputs {
            candidate: &cand,
            floor: match (floor, floor_values.as_deref()) {
                (Floor::Itself, _) => FloorOutputs::Itself,
                (_, Some(v)) => FloorOutputs::Values(v),
                _ => FloorOutputs::Missing,
            },
            spread,
            pattern_differs,
            golden: gold.as_deref(),
            within: golden.is_some().then_some(within),
        };
        whole_model::judge(outputs, tol).map_err(|e| e.to_string())
    })();
    let j = match judged {
        Ok(j) => j,
        Err(why) => {
            for r in rows.iter_mut() {
                if let Value::Object(d) = &mut r.detail {
                    d.insert("whole_model".into(), json!({ "not_judged": why }));
                }
            }
            return None;
        }
    };
    let elements: usize = rows.iter().map(|r| r.elements as usize).sum();
    let detail = json!({
        "rule": j.rule.name(),
        "verdict": verdict_name(j.verdict),
        "rmse": finite(j.error),
        "floor_rmse": finite(j.floor_error),
        "ratio": finite(j.ratio),
        "multiplier": (j.rule == ModelRule::RmseRatio).then(|| whole_model::multiplier(elements, tol.half)),
        "non_deterministic": j.non_deterministic,
    });
    let line = summary(&j, elements, tol);
    for r in rows.iter_mut() {
        if j.verdict == ModelVerdict::Agrees {
            r.verdict = ComparisonVerdict::Agree;
        }
        r.summary = format!("{line}; elementwise: {}", r.summary);
        match &mut r.detail {
            Value::Object(d) => {
                d.insert("whole_model".into(), detail.clone());
            }
            other => *other = json!({ "whole_model": detail.clone() }),
        }
    }
    if j.verdict == ModelVerdict::Wrong && rows.iter().all(|r| r.verdict != ComparisonVerdict::Disagree) {
        rows[0].verdict = ComparisonVerdict::Disagree;
    }
    Some(j)
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// `agrees` or `wrong`.
pub fn verdict_name(v: ModelVerdict) -> &'static str {
    match v {
        ModelVerdict::Agrees => "agrees",
        ModelVerdict::Wrong => "wrong",
    }
}

/// One line for people: `whole model (rmse_ratio): RMSE 1.2e-6 vs float64, 1.1x the eager
/// floor's 1.1e-6 (at most 2x): agrees`.
fn summary(j: &ModelJudgement, elements: usize, tol: ModelTolerance) -> String {
    let g = |v: f64| format!("{v:.2e}");
    let mut verdict = verdict_name(j.verdict).to_string();
    if j.non_deterministic {
        verdict.push_str(" (non-deterministic: two calls on the same inputs differ)");
    }
    if matches!(j.rule, ModelRule::RmseRatio | ModelRule::Floor) && !j.error.is_finite() {
        return format!(
            "whole model ({}): NaN or infinite outputs where float64 has finite ones: {verdict}",
            j.rule.name()
        );
    }
    match j.rule {
        ModelRule::WithinTolerance => {
            format!(
                "whole model (tolerance): every output within its tolerance of float64; RMSE {}: {verdict}",
                g(j.error)
            )
        }
        ModelRule::RmseRatio => format!(
            "whole model (rmse_ratio): RMSE {} vs float64, {:.2}x the eager floor's {} (at most {}x): {verdict}",
            g(j.error),
            j.ratio,
            g(j.floor_error),
            whole_model::multiplier(elements, tol.half)
        ),
        ModelRule::Cosine if j.floor_error.is_nan() && j.error == 0.0 => {
            format!("whole model (cosine): equal to the floor within tolerance: {verdict}")
        }
        ModelRule::Cosine => format!(
            "whole model (cosine, without a float64 run or a usable floor: similarity at least {}); error {}: {verdict}",
            whole_model::COSINE_MIN,
            g(j.error)
        ),
        ModelRule::Spread => format!(
            "whole model (spread): beyond the rules, but RMSE {} to the floor is {:.2}x the spread of two calls ({}): {verdict}",
            g(j.error),
            j.ratio,
            g(j.floor_error)
        ),
        ModelRule::Floor => {
            format!("whole model (floor): the eager baseline, RMSE {} vs float64: {verdict}", g(j.error))
        }
    }
}
