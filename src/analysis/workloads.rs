//! `mlport report --workloads`: what porting whole models and off-the-rut computations costs
//! (docs/workloads.md). Three tables, computed here and rendered by `crate::render::workloads`:
//!
//! - **workloads**: per workload case × framework × target — status and reason, the whole-model
//!   agreement (rule, RMSE against the float64 golden run, ratio to the eager floor's), first
//!   call, steady-state median, samples/s (`batch` / median) and peak memory;
//! - **rut pairs**: per pair × framework × target, the steady-state ratio composed/monolithic
//!   (median over median, with a bootstrap percentile interval, `crate::stats::ratio_of_medians`)
//!   — Barham & Isard's question: how much leaving the rut costs, and whether compiling closes
//!   the gap;
//! - **across frameworks**: a workload run by several frameworks on identical inputs and weights
//!   (the same `op`; Keras 3's model on keras-jax, keras-torch and keras-tensorflow), each
//!   framework's eager output judged by the whole-model rule against the first framework's
//!   float64 golden run and eager floor.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::agreement::model_check;
use crate::agreement::{case_reference_key, whole_model};
use crate::model::{
    Against, ComparisonRow, Dtype, Framework, Outcome, ReferenceRow, ResultRow, RunSummary, RutRole, Target,
};
use crate::stats::{Estimate, StatsConfig, median, ratio_of_medians};

/// The JSON document's format name.
pub const JSON_FORMAT: &str = "mlport.workloads";
/// Its version.
pub const JSON_VERSION: u32 = 1;

/// One workload case on one target.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadRow {
    /// The framework (`keras-jax` for Keras 3 on JAX).
    pub framework: Framework,
    /// The catalogue function the workload is filed under.
    pub function: String,
    /// The case id (`forward`, `train_step`, `conv2d_im2col`, ...).
    pub case_id: String,
    /// The swept dtype.
    pub dtype: Option<Dtype>,
    /// The target it ran on (`cpu`, `cpu/compiled`).
    pub target: Target,
    /// The stored result's id (for `mlport repro`).
    pub result_id: i64,
    /// How it ended.
    pub outcome: Outcome,
    /// Why it failed, when it did (`out_of_memory`, `compile_error`, ...).
    pub reason: Option<String>,
    /// The result's message (a failure's, or the comparison's).
    pub message: Option<String>,
    /// The whole-model rule that decided (`tolerance`, `rmse_ratio`, `cosine`, `spread`,
    /// `floor`); `None` when nothing was judged.
    pub rule: Option<String>,
    /// RMSE against the float64 golden run (output units).
    pub rmse: Option<f64>,
    /// The floor's RMSE against the same golden run.
    pub floor_rmse: Option<f64>,
    /// `rmse / floor_rmse`.
    pub ratio: Option<f64>,
    /// The model's two calls differed: judged by their spread.
    pub non_deterministic: bool,
    /// First call (build excluded; compilation and first run included), ns.
    pub first_call_ns: Option<u64>,
    /// Median steady-state time per call, ns.
    pub steady_ns: Option<f64>,
    /// Samples per second: the case's `batch` over the steady-state median.
    pub samples_per_s: Option<f64>,
    /// Peak resident set of the worker during the case, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Peak device memory, bytes (frameworks that report it).
    pub device_peak_bytes: Option<u64>,
}

/// One off-the-rut pair's composed side against its monolithic side on one framework and target.
#[derive(Clone, Debug, Serialize)]
pub struct RutRow {
    /// The pair (`conv2d`, `capsule`, `attention`).
    pub pair: String,
    /// The framework.
    pub framework: Framework,
    /// The target.
    pub target: Target,
    /// The monolithic case's id.
    pub monolithic: String,
    /// The composed case's id.
    pub composed: String,
    /// Monolithic steady-state median, ns per call.
    pub monolithic_ns: f64,
    /// Composed steady-state median, ns per call.
    pub composed_ns: f64,
    /// composed / monolithic, with its bootstrap interval.
    pub ratio: Estimate,
}

/// One framework's eager output of a cross-framework workload, judged against the first
/// framework's.
#[derive(Clone, Debug, Serialize)]
pub struct CrossRow {
    /// The shared op (`keras_resnet50`).
    pub op: String,
    /// The case id.
    pub case_id: String,
    /// The dtype.
    pub dtype: Option<Dtype>,
    /// This framework (`keras-jax`).
    pub framework: Framework,
    /// The one whose float64 golden run and eager floor judge the others.
    pub against: Framework,
    /// The whole-model verdict (`agrees`, `wrong`, `non_deterministic`), `None` when it could
    /// not be judged (see `note`).
    pub verdict: Option<String>,
    /// The rule that decided.
    pub rule: Option<String>,
    /// RMSE against the first framework's float64 golden run.
    pub rmse: Option<f64>,
    /// Largest absolute difference from the first framework's eager output.
    pub max_abs_vs_first: Option<f64>,
    /// Why it was not judged.
    pub note: Option<String>,
}

/// The whole `--workloads` report.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadsReport {
    /// The run.
    pub run: i64,
    /// Workload rows, in catalogue order, then by target.
    pub rows: Vec<WorkloadRow>,
    /// Rut pairs.
    pub rut: Vec<RutRow>,
    /// Cross-framework comparisons.
    pub cross: Vec<CrossRow>,
    /// Whether any steady state was timed (a `--quick` run has none).
    pub timed: bool,
    /// The rules, in words.
    pub rule: String,
}

/// The whole-model judgement a result's comparisons carry (`detail.whole_model` of its float64
/// rows, or of its device rows under the cosine fallback).
fn judgement<'a>(rows: &'a [&ComparisonRow]) -> Option<&'a serde_json::Value> {
    let of = |float64: bool| {
        rows.iter()
            .filter(|c| (c.against == Against::Float64) == float64)
            .find_map(|c| c.detail.get("whole_model").filter(|w| w.get("rule").is_some()))
    };
    of(true).or_else(|| of(false))
}

/// Builds the report from a run's results, comparisons and references. Only workload cases
/// (catalogue `kind = "workload"`) are read.
pub fn build(
    run: &RunSummary,
    results: &[ResultRow],
    comparisons: &[ComparisonRow],
    references: &[ReferenceRow],
    stats: &StatsConfig,
) -> WorkloadsReport {
    let mut by_result: HashMap<(&str, &Target), Vec<&ComparisonRow>> = HashMap::new();
    for c in comparisons {
        by_result.entry((c.case_key.as_str(), &c.device)).or_default().push(c);
    }
    let workloads: Vec<&ResultRow> = results.iter().filter(|r| r.case.spec.is_workload()).collect();
    let mut rows = Vec::new();
    for r in &workloads {
        let spec = r.case.spec.catalogue().expect("filtered on catalogue cases");
        let cmp = by_result.get(&(r.case.key.as_str(), &r.result.device)).map(Vec::as_slice).unwrap_or_default();
        let j = judgement(cmp);
        let num = |k: &str| j.and_then(|w| w.get(k)).and_then(serde_json::Value::as_f64);
        let steady: Vec<f64> = r.result.samples_ns.iter().map(|&n| n as f64).collect();
        let steady_ns = (!steady.is_empty()).then(|| median(&steady));
        let batch = spec.workload.as_ref().and_then(|w| w.batch);
        rows.push(WorkloadRow {
            framework: r.case.framework,
            function: r.case.function.clone(),
            case_id: r.case.case_id.clone(),
            dtype: r.case.dtype,
            target: r.result.device.clone(),
            result_id: r.id,
            outcome: r.result.outcome,
            reason: r.result.reason.map(|x| x.as_str().to_string()),
            message: r.result.message.clone(),
            rule: j.and_then(|w| w["rule"].as_str()).map(str::to_string),
            rmse: num("rmse"),
            floor_rmse: num("floor_rmse"),
            ratio: num("ratio"),
            non_deterministic: j.and_then(|w| w["non_deterministic"].as_bool()).unwrap_or(false),
            first_call_ns: r.result.first_call_ns,
            steady_ns,
            samples_per_s: match (batch, steady_ns) {
                (Some(b), Some(ns)) if ns > 0.0 => Some(b as f64 / (ns * 1e-9)),
                _ => None,
            },
            peak_rss_bytes: r.result.measures.and_then(|m| m.peak_rss_bytes),
            device_peak_bytes: r.result.measures.and_then(|m| m.device_peak_bytes),
        });
    }
    let timed = rows.iter().any(|r| r.steady_ns.is_some());
    WorkloadsReport {
        run: run.id,
        rut: rut_rows(&workloads, stats),
        cross: cross_rows(&workloads, references, &run.info.reference_device),
        rows,
        timed,
        rule: rule_text(),
    }
}

/// Per (pair, framework, target): each composed case against the pair's monolithic case.
fn rut_rows(workloads: &[&ResultRow], stats: &StatsConfig) -> Vec<RutRow> {
    type Key<'a> = (&'a str, Framework, &'a Target);
    let mut sides: BTreeMap<Key<'_>, (Vec<&ResultRow>, Vec<&ResultRow>)> = BTreeMap::new();
    for r in workloads {
        let Some(w) = r.case.spec.catalogue().and_then(|s| s.workload.as_ref()) else { continue };
        let (Some(pair), Some(role)) = (w.rut_pair.as_deref(), w.rut_role) else { continue };
        if r.result.samples_ns.is_empty() || !matches!(r.result.outcome, Outcome::Pass | Outcome::WrongResult) {
            continue;
        }
        let e = sides.entry((pair, r.case.framework, &r.result.device)).or_default();
        match role {
            RutRole::Monolithic => e.0.push(r),
            RutRole::Composed => e.1.push(r),
        }
    }
    let mut out = Vec::new();
    for ((pair, framework, target), (mono, composed)) in sides {
        let Some(m) = mono.first() else { continue };
        let ms: Vec<f64> = m.result.samples_ns.iter().map(|&n| n as f64).collect();
        for c in composed {
            let cs: Vec<f64> = c.result.samples_ns.iter().map(|&n| n as f64).collect();
            let Some(ratio) = ratio_of_medians(&[&ms], &[&cs], stats) else { continue };
            out.push(RutRow {
                pair: pair.to_string(),
                framework,
                target: target.clone(),
                monolithic: m.case.case_id.clone(),
                composed: c.case.case_id.clone(),
                monolithic_ns: median(&ms),
                composed_ns: median(&cs),
                ratio,
            });
        }
    }
    out
}

/// Workloads with an `op` run by two or more frameworks, eager on the reference device: each
/// framework's output judged against the first framework's golden run and eager floor.
fn cross_rows(workloads: &[&ResultRow], references: &[ReferenceRow], reference_device: &Target) -> Vec<CrossRow> {
    let golden: HashMap<&str, &ReferenceRow> =
        references.iter().filter(|r| r.outcome == Some(Outcome::Pass)).map(|r| (r.key.as_str(), r)).collect();
    let mut groups: BTreeMap<(&str, &str, Option<Dtype>), Vec<&ResultRow>> = BTreeMap::new();
    for r in workloads {
        if r.result.device != *reference_device {
            continue;
        }
        if let Some(op) = r.function.op.as_deref() {
            groups.entry((op, r.case.case_id.as_str(), r.case.dtype)).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for ((op, case_id, dtype), mut members) in groups {
        members.sort_by_key(|r| r.case.framework);
        members.dedup_by_key(|r| r.case.framework);
        if members.len() < 2 {
            continue;
        }
        let first = members[0];
        let first_ok = first.result.outcome == Outcome::Pass;
        let gold = golden.get(case_reference_key(&first.case.key).as_str()).map(|g| &g.outputs);
        let indices: Vec<u32> = crate::agreement::leaves(&first.result.outputs).into_iter().map(|i| i as u32).collect();
        for m in &members {
            let mut row = CrossRow {
                op: op.to_string(),
                case_id: case_id.to_string(),
                dtype,
                framework: m.case.framework,
                against: first.case.framework,
                verdict: None,
                rule: None,
                rmse: None,
                max_abs_vs_first: None,
                note: None,
            };
            let ran = matches!(m.result.outcome, Outcome::Pass | Outcome::WrongResult);
            if !ran || !first_ok {
                row.note = Some(if ran {
                    format!("{} did not pass eagerly", first.case.framework)
                } else {
                    format!("{} on {}", m.result.outcome.as_str(), m.result.device)
                });
                out.push(row);
                continue;
            }
            let judged = (|| -> Result<(whole_model::ModelJudgement, f64), String> {
                let cand = model_check::flatten(&m.result.outputs, &indices)?;
                let floor = model_check::flatten(&first.result.outputs, &indices)?;
                let gold = gold.map(|g| model_check::flatten(g, &indices)).transpose()?;
                let max_abs = cand.iter().zip(&floor).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                let spec = m.case.spec.catalogue().expect("workloads are catalogue cases");
                let tol = crate::agreement::tolerance(spec, dtype.unwrap_or(Dtype::Float32), &Dtype::Float32.into());
                let j = whole_model::judge(
                    whole_model::ModelOutputs {
                        candidate: &cand,
                        floor: if m.case.framework == first.case.framework {
                            whole_model::FloorOutputs::Itself
                        } else {
                            whole_model::FloorOutputs::Values(&floor)
                        },
                        spread: None,
                        pattern_differs: false,
                        golden: gold.as_deref(),
                        within: None,
                    },
                    whole_model::ModelTolerance::new(tol.rtol, tol.atol, dtype.unwrap_or(Dtype::Float32)),
                )
                .map_err(|e| e.to_string())?;
                Ok((j, max_abs))
            })();
            match judged {
                Ok((j, max_abs)) => {
                    row.verdict = Some(model_check::verdict_name(j.verdict).to_string());
                    row.rule = Some(j.rule.name().to_string());
                    row.rmse = j.error.is_finite().then_some(j.error);
                    row.max_abs_vs_first = Some(max_abs);
                }
                Err(why) => row.note = Some(why),
            }
            out.push(row);
        }
    }
    out
}

/// The rules of the report, in words.
pub fn rule_text() -> String {
    format!(
        "Agreement (the whole-model rule, torch._dynamo.utils.same as PyTorch's dynamo benchmark runner uses it): every \
         workload is compared with its float64 golden run (the same model and inputs cast to float64 on the reference \
         device); it agrees when every output is within its dtype's tolerance, else when its RMSE against the golden run \
         is at most {}x (float32, >= {} elements; {}x for smaller outputs and float16/bfloat16) the RMSE of its floor — \
         the same case eager, on the same device for compiled targets and on the reference device for eager ones — plus \
         rtol/10. The floor itself is the baseline (wrong only where it is NaN or infinite). Without a golden run or a \
         usable floor: cosine similarity >= {}. A model whose two calls on the same inputs differ is flagged \
         non-deterministic; one that fails the rules still passes within {}x that spread (rule spread). Steady state: \
         the median time per call; samples/s is the case's batch over it. Peak memory: the worker's resident set during \
         the case (VmHWM, reset before the case; it includes the framework already loaded). Rut pairs: composed over \
         monolithic steady-state median, with a 95% bootstrap interval (Barham & Isard, \"Machine Learning Systems are \
         Stuck in a Rut\", HotOS 2019).",
        whole_model::RMSE_MULTIPLIER,
        whole_model::SMALL_OUTPUT,
        whole_model::RMSE_MULTIPLIER_NOISY,
        whole_model::COSINE_MIN,
        whole_model::RMSE_MULTIPLIER_NOISY,
    )
}
