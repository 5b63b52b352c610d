//! Eager against compiled (`mlport report --modes`): per framework and device, how its
//! functions fare under the framework's compiler (`X/compiled`, docs/modes.md) against its
//! ordinary dispatch (`X`) — how many compile, fail to compile (by reason), recompile or
//! change their answer, what compiling costs (first calls) and the distribution of
//! compiled/eager steady-state ratios (rendered by [`crate::render::modes`]).
//!
//! Counting follows the portability report ([`super::portability`]): a compiled target is
//! attributed against the same device eager, so a failure under the compiler counts only when
//! the same case passed eagerly. Ratios are [`super::slowdown`]'s, with A = eager and B =
//! compiled: per function the ratio of median times over the cases timed on both, a bootstrap
//! interval for each geometric mean (seeded with the run's seed).

use std::collections::BTreeMap;

use serde::Serialize;

use super::portability::{self, PortabilityReport, ReportOptions, TargetSummary};
use super::slowdown::{self, Distribution, Measure, SlowdownOptions, SlowdownReport};
use crate::model::{DeviceInfo, ResultRow, RunSummary};
use crate::model::{Framework, FunctionStatus, Mode, Reason, Target};
use crate::stats::StatsConfig;

/// A function that does not come through the compiler whole: why, with its first counted
/// failing case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompiledFailure {
    /// Fully qualified name.
    pub function: String,
    /// Its status under the compiler (`partial`, `complete_failure`).
    pub status: FunctionStatus,
    /// Counted failing cases by reason (`wrong_result` and `recompiles` included).
    pub reasons: BTreeMap<Reason, usize>,
    /// `dtype [case]: reason — message` of its first counted failing case.
    pub first: String,
    /// That result's id, for `mlport repro`.
    pub result_id: i64,
}

/// A function that fails eagerly but runs compiled: its first such case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompiledOnly {
    /// Fully qualified name.
    pub function: String,
    /// Its cases that failed eagerly (raised, timed out or crashed) and passed compiled.
    pub cases: usize,
    /// `dtype [case]: eager reason — eager message` of the first of them.
    pub first: String,
    /// The compiled result's id (`mlport repro` reproduces the compiled call).
    pub result_id: i64,
}

/// One framework on one device, eager against one compiled mode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModeRow {
    /// The framework.
    pub framework: Framework,
    /// The eager target (`cpu`).
    pub eager: Target,
    /// The compiled target (`cpu/compiled`, `cpu/compiled_fullgraph`).
    pub compiled: Target,
    /// torch: functions with at least one counted case that ran with graph breaks (under
    /// `compiled` the code around a break runs as Python); `None` where the target records no
    /// graph breaks (JAX, TensorFlow: their compilers take the whole call or fail).
    pub graph_break_functions: Option<usize>,
    /// torch: graph breaks summed over the target's cases.
    pub graph_breaks: Option<u64>,
    /// Functions with a case that fails eagerly but passes on this compiled target.
    pub compiled_only: Vec<CompiledOnly>,
    /// Functions with at least one counted case under the compiler.
    pub functions: usize,
    /// Functions whose every counted case compiled once, ran and agreed with eager.
    pub compile: usize,
    /// Functions with at least one counted case that failed under the compiler (an error,
    /// timeout or crash: `compile_error`, or a lowering or dtype the compiler lacks).
    pub fail_to_compile: usize,
    /// Counted failing cases by reason, `recompiles`, `wrong_result` and `dtype_changed` left
    /// out (they have their own columns).
    pub failure_reasons: BTreeMap<Reason, usize>,
    /// Functions with at least one case compiled more than once for the same inputs.
    pub recompile: usize,
    /// Functions with at least one case whose compiled answer disagrees with eager's (or
    /// with the float64 reference where eager agreed), in value or in dtype (`dtype_changed`).
    pub change_answer: usize,
    /// Failing cases not counted: they failed eagerly too.
    pub not_attributable: usize,
    /// Compiled/eager ratios of the median steady-state time per call, over functions timed
    /// in both modes (below 1: faster compiled).
    pub steady: Distribution,
    /// Compiled/eager ratios of the first call (the compile cost, with the call itself).
    pub first_call: Distribution,
    /// Median over functions of the compiled first call, ns.
    pub first_call_compiled_ns: Option<f64>,
    /// Median over functions of the eager first call, ns.
    pub first_call_eager_ns: Option<f64>,
    /// Each compared function's steady-state median ratio, in catalogue order.
    pub steady_ratios: Vec<(String, f64)>,
    /// Functions that failed, recompiled or changed their answer under the compiler.
    pub failures: Vec<CompiledFailure>,
    /// Export routes: the runtime the route ran on, as its worker described it (the target's
    /// stored detail: `OpenVINO 2026.4.1 CPU plugin, inference precision bf16 …`); `None` for
    /// compilers and for runs whose workers did not describe it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

/// Which transformed targets the view puts against eager: the compilers (`report --modes`) or
/// the export routes (`report --routes`, docs/ir-routes.md). Both are counted and timed alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// `X/compiled`, `X/compiled_fullgraph`.
    Compiled,
    /// `X/onnx`, `X/onnx_openvino`, `X/stablehlo`.
    Routes,
}

impl View {
    /// Whether targets in `mode` belong to the view.
    pub fn includes(self, mode: Mode) -> bool {
        match self {
            View::Compiled => mode.is_compiled() && !mode.is_route(),
            View::Routes => mode.is_route(),
        }
    }

    /// The mode an eager-only framework is said to lack (`no result on cpu/compiled`).
    fn first_mode(self) -> Mode {
        match self {
            View::Compiled => Mode::Compiled,
            View::Routes => Mode::Onnx,
        }
    }
}

/// The whole eager-against-compiled (or eager-against-route) view of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct ModesReport {
    /// The run's id.
    pub run: i64,
    /// Compilers or export routes.
    pub view: View,
    /// The run's portability report the rows were counted from: its header gives the
    /// framework and Python versions, seed and reference.
    pub portability: PortabilityReport,
    /// One row per framework × device with results in both modes.
    pub rows: Vec<ModeRow>,
    /// Frameworks with an eager target but no compiled one (NumPy, always), with why.
    pub eager_only: Vec<(Framework, String)>,
    /// How the numbers were counted, in words.
    pub rule: String,
}

/// Builds the view from a run's results (as [`crate::store::Store::results`] returns them) and
/// devices; `stats_seed` seeds the bootstrap (the run's seed when `None`).
pub fn build(
    run: &RunSummary,
    devices: &[DeviceInfo],
    results: &[ResultRow],
    stats_seed: Option<u64>,
    view: View,
) -> ModesReport {
    let portability = portability::build(run, devices, results, &ReportOptions::default());
    let stats = StatsConfig { seed: stats_seed.unwrap_or(run.info.seed), ..Default::default() };
    let mut rows = Vec::new();
    for t in portability.targets.iter().filter(|t| view.includes(t.device.mode())) {
        // The eager target it is compared with: the same device, or the run's reference device
        // for one without an eager mode (vulkan:N).
        let eager = t.device.reference_target(&run.info.reference_device);
        let compare = |measure: Measure| {
            let opts = SlowdownOptions {
                measure,
                a_framework: Some(t.framework),
                b_framework: Some(t.framework),
                stats,
                ..Default::default()
            };
            slowdown::slowdown((run, &eager, results), (run, &t.device, results), &opts)
        };
        let mut r = row(t, eager.clone(), &compare(Measure::Steady), &compare(Measure::FirstCall));
        graph_breaks(&mut r, results);
        r.compiled_only = compiled_only(t.framework, &t.device, &eager, results);
        if view == View::Routes {
            r.runtime = devices
                .iter()
                .find(|d| d.framework == t.framework && d.device == t.device && d.available)
                .map(|d| d.detail.clone())
                .filter(|detail| !detail.is_empty() && detail != eager_detail(devices, t.framework, &eager));
        }
        rows.push(r);
    }
    let eager_only = portability
        .targets
        .iter()
        .filter(|t| t.device.mode() == Mode::Eager)
        .filter(|t| !rows.iter().any(|r| r.framework == t.framework && r.eager == t.device))
        .map(|t| {
            let compiled = t.device.with_mode(view.first_mode());
            let why = devices
                .iter()
                .find(|d| {
                    d.framework == t.framework
                        && d.device.base() == t.device
                        && view.includes(d.device.mode())
                        && !d.available
                })
                .map_or_else(|| format!("no result on {compiled}"), |d| d.detail.clone());
            (t.framework, why)
        })
        .collect();
    let rule = match view {
        View::Compiled => rule_text(),
        View::Routes => routes_rule_text(),
    };
    ModesReport { run: run.id, view, portability, rows, eager_only, rule }
}

/// The stored detail of `framework`'s eager `device` (empty when not recorded): a route's
/// target that kept it had no runtime described.
fn eager_detail<'a>(devices: &'a [DeviceInfo], framework: Framework, device: &Target) -> &'a str {
    devices.iter().find(|d| d.framework == framework && d.device == *device).map_or("", |d| d.detail.as_str())
}

fn row(t: &TargetSummary, eager: Target, steady: &SlowdownReport, first: &SlowdownReport) -> ModeRow {
    let own =
        |r: &SlowdownReport| r.frameworks.iter().find(|f| f.framework == t.framework).map(|f| f.by_median.clone());
    let empty = Distribution::of(&[], 0, &StatsConfig::default());
    let medians = |pick: fn(&slowdown::FunctionSlowdown) -> f64| {
        let v: Vec<f64> = first.functions.iter().map(pick).collect();
        (!v.is_empty()).then(|| crate::stats::median(&v))
    };
    let is_failure = |r: &Reason| !matches!(r, Reason::WrongResult | Reason::DtypeChanged | Reason::Recompiles);
    let mut failure_reasons = BTreeMap::new();
    for (r, n) in t.reasons.iter().filter(|(r, _)| is_failure(r)) {
        failure_reasons.insert(*r, *n);
    }
    let failures = t
        .functions
        .iter()
        .filter(|f| f.failed + f.wrong + f.dtype_changed > 0)
        .filter_map(|f| {
            let c = f.failures.first()?;
            Some(CompiledFailure {
                function: f.name.clone(),
                status: f.status?,
                reasons: f.reasons_with_wrong(),
                first: format!(
                    "{} [{}]: {} — {}",
                    crate::model::name_or_empty(c.dtype),
                    c.case_id,
                    c.reason,
                    c.message
                ),
                result_id: c.result_id,
            })
        })
        .collect();
    ModeRow {
        framework: t.framework,
        eager,
        compiled: t.device.clone(),
        functions: t.functions_run,
        compile: t.success,
        fail_to_compile: t.functions.iter().filter(|f| f.reasons.keys().any(is_failure)).count(),
        failure_reasons,
        recompile: t.functions.iter().filter(|f| f.reasons.contains_key(&Reason::Recompiles)).count(),
        change_answer: t.functions.iter().filter(|f| f.wrong > 0 || f.dtype_changed > 0).count(),
        graph_break_functions: None,
        graph_breaks: None,
        compiled_only: Vec::new(),
        not_attributable: t.cases_not_attributable,
        steady: own(steady).unwrap_or_else(|| empty.clone()),
        first_call: own(first).unwrap_or(empty),
        first_call_compiled_ns: medians(|f| f.b_median_ns),
        first_call_eager_ns: medians(|f| f.a_median_ns),
        steady_ratios: steady.functions.iter().map(|f| (f.name.clone(), f.median_ratio)).collect(),
        failures,
        runtime: None,
    }
}

/// Fills in a row's graph breaks from its compiled target's results: functions with a case that
/// took any (passing or not: a break is a fact of the compilation), and the total.
fn graph_breaks(row: &mut ModeRow, results: &[ResultRow]) {
    let mine = results.iter().filter(|r| r.function.framework == row.framework && r.result.device == row.compiled);
    let mut total: Option<u64> = None;
    let mut functions: Vec<&str> = Vec::new();
    for r in mine {
        if let Some(n) = r.result.graph_breaks {
            *total.get_or_insert(0) += n;
            if n > 0 && !functions.contains(&r.function.name.as_str()) {
                functions.push(&r.function.name);
            }
        }
    }
    row.graph_breaks = total;
    row.graph_break_functions = total.map(|_| functions.len());
}

/// The functions of `framework` with a case that raised, timed out or crashed on `eager` and
/// passed on `compiled`, in planned order.
fn compiled_only(framework: Framework, compiled: &Target, eager: &Target, results: &[ResultRow]) -> Vec<CompiledOnly> {
    use crate::model::Outcome;
    let failed_eagerly: std::collections::HashMap<&str, &ResultRow> = results
        .iter()
        .filter(|r| r.function.framework == framework && r.result.device == *eager)
        .filter(|r| matches!(r.result.outcome, Outcome::Fail | Outcome::Timeout | Outcome::Crash))
        .filter(|r| r.result.reason != Some(Reason::HarnessError))
        .map(|r| (r.case.key.as_str(), r))
        .collect();
    let mut out: Vec<CompiledOnly> = Vec::new();
    for r in results.iter().filter(|r| r.function.framework == framework && r.result.device == *compiled) {
        let Some(e) = failed_eagerly.get(r.case.key.as_str()).filter(|_| r.result.outcome == Outcome::Pass) else {
            continue;
        };
        match out.iter_mut().find(|o| o.function == r.function.name) {
            Some(o) => o.cases += 1,
            None => out.push(CompiledOnly {
                function: r.function.name.clone(),
                cases: 1,
                first: format!(
                    "{} [{}]: {} — {}",
                    crate::model::name_or_empty(r.case.dtype),
                    r.case.case_id,
                    e.result.reason.map_or_else(|| e.result.outcome.to_string(), |x| x.to_string()),
                    super::portability::failure_message(&e.result)
                ),
                result_id: r.id,
            }),
        }
    }
    out
}

/// How the view counts, in words: its footer.
pub fn rule_text() -> String {
    format!(
        "Per framework, device and compiled mode, its functions under the compiler against eager X (X/compiled: \
         torch.compile with its defaults and the Inductor backend, graph breaks allowed and counted; jax.jit of the \
         whole call; tf.function with jit_compile=True. X/compiled_fullgraph: torch.compile(fullgraph=True), where a \
         graph break is a compile_error). graph breaks: torch's functions with a case that took graph breaks, and \
         the breaks summed over its cases. compiled only: functions with a case that failed eagerly and passed \
         compiled. \
         functions: functions with a counted case compiled. compile: every counted case compiled once, ran and \
         agreed. fail to compile: at least one counted case raised, timed out or crashed under the compiler (reasons \
         count cases). recompile: at least one case was compiled more than once for the same inputs. changed answer: \
         at least one case disagreed with eager beyond tolerance, or changed an output's dtype. A function can be in several of the last three. \
         A failure counts only if the same case passed eagerly on the same device; the others are not \
         attributable. \
         First call: the median over functions of each function's median first call (compilation included). \
         Compiled/eager: per function the median steady-state time compiled over eager (below 1 is faster \
         compiled), over the cases timed in both modes; then the median and geometric mean over functions \
         (bootstrap {:.0}% interval) and the share faster compiled.",
        100.0 * StatsConfig::default().level
    )
}

/// How the routes view counts, in words: its footer.
pub fn routes_rule_text() -> String {
    format!(
        "Per framework, device and export route, its functions exported and run elsewhere against eager X \
         (X/onnx: torch.onnx.export(dynamo=True), jax2onnx or tf2onnx, then ONNX Runtime on the device's execution \
         provider; X/onnx_openvino: the same ONNX model run by OpenVINO on the CPU; X/stablehlo: jax.export's serialized StableHLO compiled and run by IREE; on vulkan:N both \
         compiled by IREE for SPIR-V, the ONNX model through IREE's ONNX importer, and run by IREE's Vulkan driver, \
         against eager on the run's reference device since no framework runs eagerly there; docs/ir-routes.md, \
         docs/vulkan.md). \
         functions: functions with a counted case on the route. export and run: every counted case exported, ran \
         and agreed with eager. fail: at least one counted case failed on the route (reasons count cases: \
         export_error, the exporter refused; not_implemented or dtype_unsupported, the runtime has no kernel or the \
         format no type for it; compile_error, the runtime refused the model otherwise). changed answer: at least one \
         case disagreed with eager beyond tolerance, or changed an output's dtype. A failure counts only if the \
         same case passed eagerly on the same device (the reference device for vulkan:N); the others are not \
         attributable. First call: the median over \
         functions of each function's median first call (export, load or compile, and the first run). Route/eager: \
         per function the median steady-state time on the route over eager (below 1 is faster on the route), over \
         the cases timed in both; then the median and geometric mean over functions (bootstrap {:.0}% interval) and \
         the share faster on the route.",
        100.0 * StatsConfig::default().level
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::{row, run_summary};
    use crate::model::Outcome;
    use crate::model::Outcome::{Fail, Pass, WrongResult};

    /// torch on cpu and cpu/compiled: a compiles and is 2× faster; b fails to compile in one of
    /// two cases, and its other case passes with 2 graph breaks; c recompiles; d changes its
    /// answer; e fails in both modes (not attributable); f fails eagerly and passes compiled;
    /// b's second case on cpu/compiled_fullgraph is a compile_error; numpy on cpu only.
    pub(crate) fn results() -> Vec<ResultRow> {
        let t = Framework::Torch;
        let mut rows = vec![
            row(t, "a", 1, "cpu", Pass, None, &[100, 100, 100]),
            row(t, "a", 1, "cpu/compiled", Pass, None, &[50, 50, 50]),
            row(t, "b", 1, "cpu", Pass, None, &[10, 10, 10]),
            row(t, "b", 1, "cpu/compiled", Fail, Some(Reason::CompileError), &[]),
            row(t, "b", 2, "cpu", Pass, None, &[10, 10, 10]),
            row(t, "b", 2, "cpu/compiled", Pass, None, &[40, 40, 40]),
            row(t, "c", 1, "cpu", Pass, None, &[10, 10, 10]),
            row(t, "c", 1, "cpu/compiled", Fail, Some(Reason::Recompiles), &[1000, 1000, 1000]),
            row(t, "d", 1, "cpu", Pass, None, &[10, 10, 10]),
            row(t, "d", 1, "cpu/compiled", WrongResult, Some(Reason::WrongResult), &[5, 5, 5]),
            row(t, "e", 1, "cpu", Fail, Some(Reason::DtypeUnsupported), &[]),
            row(t, "e", 1, "cpu/compiled", Fail, Some(Reason::CompileError), &[]),
            row(t, "f", 1, "cpu", Fail, Some(Reason::DtypeUnsupported), &[]),
            row(t, "f", 1, "cpu/compiled", Pass, None, &[30, 30, 30]),
            row(t, "b", 2, "cpu/compiled_fullgraph", Fail, Some(Reason::CompileError), &[]),
            row(Framework::Numpy, "a", 1, "cpu", Pass, None, &[7]),
        ];
        for (i, r) in rows.iter_mut().enumerate() {
            r.id = i as i64 + 1;
            let ran = r.result.outcome != Outcome::Fail || r.result.reason == Some(Reason::Recompiles);
            let first = if r.result.device.mode().is_compiled() { 2_000_000_000 } else { 20_000 };
            r.result.first_call_ns = ran.then_some(first);
            if r.result.device.mode() == Mode::Compiled {
                r.result.graph_breaks =
                    Some(if r.function.name == "torch.b" && r.case.case_id == "c2" { 2 } else { 0 });
            }
            if r.result.outcome != Outcome::Pass {
                r.result.message = Some("the compiler said no\nmore".into());
            }
        }
        rows
    }

    pub(crate) fn devices() -> Vec<DeviceInfo> {
        vec![DeviceInfo {
            framework: Framework::Numpy,
            device: "cpu/compiled".parse().unwrap(),
            available: false,
            detail: "numpy has no compiled mode: NumPy runs eagerly only".into(),
        }]
    }

    pub(crate) fn example() -> ModesReport {
        build(&run_summary(), &devices(), &results(), None, View::Compiled)
    }

    /// The example's torch results with `cpu/compiled` renamed `route` (an export route), and
    /// the devices a run records: eager `cpu` and the route, each with its detail.
    pub(crate) fn route_example(route: &str, detail: &str) -> ModesReport {
        let mut rows: Vec<ResultRow> =
            results().into_iter().filter(|r| r.function.framework == Framework::Torch).collect();
        for r in &mut rows {
            if r.result.device.as_str() == "cpu/compiled" {
                r.result.device = route.parse().unwrap();
            }
        }
        let device = |d: &str, detail: &str| DeviceInfo {
            framework: Framework::Torch,
            device: d.parse().unwrap(),
            available: true,
            detail: detail.into(),
        };
        build(&run_summary(), &[device("cpu", "cpu 2 threads"), device(route, detail)], &rows, None, View::Routes)
    }

    #[test]
    fn a_route_row_names_the_runtime_its_worker_described() {
        let ov = "OpenVINO 2026.4.1 CPU plugin, inference precision bf16";
        let rep = route_example("cpu/onnx_openvino", ov);
        assert_eq!(rep.rows.len(), 1);
        assert_eq!(rep.rows[0].runtime.as_deref(), Some(ov));
        // A route target that kept the eager device's detail (an older worker): no runtime.
        let rep = route_example("cpu/onnx", "cpu 2 threads");
        assert_eq!(rep.rows[0].runtime, None);
        // Compilers never carry one.
        assert!(example().rows.iter().all(|r| r.runtime.is_none()));
    }

    #[test]
    fn counts_follow_the_compiled_attribution() {
        let rep = example();
        assert_eq!(rep.rows.len(), 2, "one row per compiled mode");
        let r = &rep.rows[0];
        assert_eq!((r.framework, r.eager.as_str(), r.compiled.as_str()), (Framework::Torch, "cpu", "cpu/compiled"));
        // e failed eagerly too: not counted, so five functions, of which a and f compile whole.
        assert_eq!((r.functions, r.compile, r.fail_to_compile, r.recompile, r.change_answer), (5, 2, 1, 1, 1));
        assert_eq!((r.graph_breaks, r.graph_break_functions), (Some(2), Some(1)), "b's second case");
        let only: Vec<(&str, usize, &str)> =
            r.compiled_only.iter().map(|o| (o.function.as_str(), o.cases, o.first.as_str())).collect();
        assert_eq!(only, [("torch.f", 1, "float32 [c1]: dtype_unsupported — the compiler said no … more")]);
        let strict = &rep.rows[1];
        assert_eq!(strict.compiled.as_str(), "cpu/compiled_fullgraph");
        assert_eq!((strict.functions, strict.fail_to_compile, strict.graph_breaks), (1, 1, None));
        assert!(strict.compiled_only.is_empty());
        assert_eq!(r.failure_reasons, BTreeMap::from([(Reason::CompileError, 1)]));
        assert_eq!(r.not_attributable, 1);
        // Steady ratios: a 0.5, b 4 (its compiled case 2), c 100, d 0.5.
        let ratios: Vec<(&str, f64)> = r.steady_ratios.iter().map(|(n, x)| (n.as_str(), *x)).collect();
        assert_eq!(ratios, [("torch.a", 0.5), ("torch.b", 4.0), ("torch.c", 100.0), ("torch.d", 0.5)]);
        assert_eq!((r.steady.functions, r.steady.faster, r.steady.median), (4, 2, Some(2.25)));
        assert_eq!((r.first_call_eager_ns, r.first_call_compiled_ns), (Some(20_000.0), Some(2e9)));
        assert_eq!(r.first_call.median, Some(1e5));
        let names: Vec<&str> = r.failures.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(names, ["torch.b", "torch.c", "torch.d"]);
        // The message's first and last lines: both ends of it stay visible (issue 15).
        assert_eq!(r.failures[0].first, "float32 [c1]: compile_error — the compiler said no … more");
        assert_eq!(
            rep.eager_only,
            vec![(Framework::Numpy, "numpy has no compiled mode: NumPy runs eagerly only".into())]
        );
    }
}
