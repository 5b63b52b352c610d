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

use super::whole_model::{self, ModelJudgement, ModelOutputs, ModelRule, ModelTolerance, ModelVerdict};
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
        let leaf = outputs
            .as_array()
            .and_then(|a| a.iter().find(|d| d["index"].as_u64() == Some(u64::from(i))))
            .ok_or_else(|| format!("no output {i}"))?;
        let path = leaf["path"].as_str().ok_or_else(|| format!("output {i} has no saved array"))?;
        let array = read_npy(Path::new(path)).map_err(|e| format!("output {i}: {e}"))?;
        out.extend(real_f64(&array));
    }
    Ok(out)
}

/// The larger repeat RMSE of the candidate and its floor (the worker's two-call check);
/// `None` when neither measured one.
fn spread(candidate: &CaseResult, floor: Floor<'_>) -> Option<f64> {
    let of = |r: &CaseResult| r.measures.and_then(|m| m.repeat_rmse);
    let floor = match floor {
        Floor::Other(f) => of(f),
        _ => None,
    };
    match (of(candidate), floor) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
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
    let tol = ModelTolerance {
        rtol: rows[0].rtol,
        atol: rows[0].atol,
        half: matches!(case_dtype, Dtype::Float16 | Dtype::Bfloat16),
    };
    let judged = (|| -> Result<ModelJudgement, String> {
        let floor_values = match floor {
            Floor::Itself => None,
            Floor::Other(f) => Some(flatten(&f.outputs, &indices)?),
            Floor::Missing => return Err("the floor (eager on the reference device) has no answer".into()),
        };
        let cand = flatten(&candidate.outputs, &indices)?;
        let gold = golden.map(|g| flatten(g, &indices)).transpose()?;
        let outputs = ModelOutputs {
            candidate: &cand,
            floor: floor_values.as_deref(),
            spread: spread(candidate, floor),
            golden: gold.as_deref(),
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
        "non_deterministic": j.verdict == ModelVerdict::NonDeterministic,
    });
    let line = summary(&j, elements, tol);
    for r in rows.iter_mut() {
        if j.verdict != ModelVerdict::Wrong {
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

/// `agrees`, `wrong` or `non_deterministic`.
pub fn verdict_name(v: ModelVerdict) -> &'static str {
    match v {
        ModelVerdict::Agrees => "agrees",
        ModelVerdict::Wrong => "wrong",
        ModelVerdict::NonDeterministic => "non_deterministic",
    }
}

/// One line for people: `whole model (rmse_ratio): RMSE 1.2e-6 vs float64, 1.1x the eager
/// floor's 1.1e-6 (at most 2x): agrees`.
fn summary(j: &ModelJudgement, elements: usize, tol: ModelTolerance) -> String {
    let g = |v: f64| format!("{v:.2e}");
    let verdict = verdict_name(j.verdict).replace('_', "-");
    if matches!(j.rule, ModelRule::RmseRatio | ModelRule::Floor) && !j.error.is_finite() {
        return format!(
            "whole model ({}): NaN or infinite outputs where float64 has finite ones: {verdict}",
            j.rule.name()
        );
    }
    match j.rule {
        ModelRule::WithinTolerance => {
            format!(
                "whole model (tolerance): every output within rtol {}, atol {}; RMSE {} vs float64: {verdict}",
                tol.rtol,
                tol.atol,
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
        ModelRule::Cosine => {
            format!(
                "whole model (cosine, no float64 run): 1 - cosine similarity with the floor {}: {verdict}",
                g(j.error)
            )
        }
        ModelRule::Spread => format!(
            "whole model (spread): two calls differ (RMSE {}); RMSE to the floor {}, {:.2}x the spread: {verdict}",
            g(j.floor_error),
            g(j.error),
            j.ratio
        ),
        ModelRule::Floor => {
            format!("whole model (floor): the eager baseline, RMSE {} vs float64: {verdict}", g(j.error))
        }
    }
}
