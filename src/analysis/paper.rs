//! The figures of "The Grand Illusion" (Mince et al., arXiv 2309.07181) redrawn from its
//! published raw data once imported (`mlport import paper`), each computed twice, side by side:
//!
//! - **status** per framework × device (every run with a pytest report): functions (test
//!   files) that succeed, are partial or fail completely. The authors' method: every non-skipped
//!   device test counts, a failure excused only when its PyTorch CPU copy failed too — failures
//!   of the authors' own timer (`partial_timed()`) included. mlport's: the portability report's
//!   counts ([`super::portability`]), where such harness errors are never counted.
//! - **latency** GPU (T4, `t4_vm`) → TPU v3 (`tpu_vm`) per framework. The authors' method is
//!   their plotting code followed step by step, quirks included ([`super::paper_plotting`]):
//!   every timed call of the three sessions, first calls included, of the tests that passed in
//!   the report their code reads for each machine, per function the mean on TPU over the mean on
//!   GPU. mlport's ([`Rule::Mlport`], steady state): per function the median ratio of
//!   steady-state samples with a bootstrap interval, unstable functions flagged.
//!
//! `scripts/paper_figures.py` computes the authors' status counts, and
//! `scripts/paper_plotting_check.py` their plotting code's latency figures, from the raw JSON
//! files with no mlport code; `tests/paper_report.rs` checks that mlport's agree.

use std::collections::BTreeMap;

use serde::Serialize;

use super::paper_plotting::{PlottedFunction, plotted_latency};
use super::portability::PortabilityReport;
use super::slowdown::{self, Distribution, Measure, Rule, SlowdownOptions};
use crate::model::{Framework, Outcome, ResultRow, RunSource, RunSummary, Target};
use crate::stats::StatsConfig;

/// The machine of the paper's GPU runs (NVIDIA T4) and of its TPU v3 runs.
pub const GPU_MACHINE: &str = "t4_vm";
/// The machine of the paper's TPU v3 runs.
pub const TPU_MACHINE: &str = "tpu_vm";

/// Functions by status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounts {
    /// Functions with at least one counted test.
    pub functions: usize,
    /// Every counted test passed.
    pub success: usize,
    /// Some counted tests failed.
    pub partial: usize,
    /// Every counted test failed.
    pub complete_failure: usize,
}

impl StatusCounts {
    /// `n` as a percentage of the functions; `None` when there are none.
    pub fn percent(&self, n: usize) -> Option<f64> {
        (self.functions > 0).then(|| 100.0 * n as f64 / self.functions as f64)
    }
}

/// One framework × device of the status figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatusRow {
    /// The framework.
    pub framework: Framework,
    /// The device the run's tests ran on.
    pub device: Target,
    /// The machine (`t4_vm`, `tpu_vm`, `soft_placement`).
    pub machine: String,
    /// The run's id and label.
    pub run: i64,
    /// The run's label (`paper/torch/tpu_vm/tpu`).
    pub label: String,
    /// The authors' counting.
    pub authors: StatusCounts,
    /// mlport's counting (the portability report's).
    pub mlport: StatusCounts,
}

/// One framework's GPU → TPU latency comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyRow {
    /// The framework.
    pub framework: Framework,
    /// The GPU run's label.
    pub gpu: String,
    /// The TPU run's label.
    pub tpu: String,
    /// The authors' method: the mean ratios' distribution (TPU mean / GPU mean per function).
    pub authors: Distribution,
    /// The functions the authors' method compared, by the authors' key, with their ratios.
    pub authors_functions: Vec<PlottedFunction>,
    /// mlport's method: the steady-state median ratios' distribution, with its interval.
    pub mlport: Distribution,
    /// Functions mlport flags unstable (a case with a noisy or thin summary on either side).
    pub unstable: usize,
    /// Functions with results on either device that the authors' method could not compare.
    pub authors_not_compared: usize,
    /// Same for mlport's method.
    pub mlport_not_compared: usize,
}

/// The paper's figures, both ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PaperFigures {
    /// Status per framework × device, runs with a pytest report, in framework then run order.
    pub status: Vec<StatusRow>,
    /// GPU → TPU v3 latency per framework with both runs present.
    pub latency: Vec<LatencyRow>,
    /// The intolerable threshold (10×, the paper's).
    pub threshold: f64,
    /// Why the two methods differ, in words (one paragraph each).
    pub why: Vec<String>,
}

/// One imported paper run, as the report command reads it.
pub struct PaperRun<'a> {
    /// The run.
    pub summary: &'a RunSummary,
    /// Its portability report (mlport's counting).
    pub portability: &'a PortabilityReport,
    /// Its results.
    pub results: &'a [ResultRow],
}

/// The device a paper run's tests ran on: its one device other than cpu (the CPU copies'),
/// else cpu.
fn run_device(results: &[ResultRow]) -> Target {
    results.iter().map(|r| &r.result.device).find(|d| **d != Target::cpu()).cloned().unwrap_or_else(Target::cpu)
}

fn failed(o: Outcome) -> bool {
    !matches!(o, Outcome::Pass | Outcome::Skip)
}

/// The authors' status counts of one run's device tests (module docs).
pub fn authors_status(results: &[ResultRow], device: &Target) -> StatusCounts {
    let cpu_failed: std::collections::HashSet<&str> = results
        .iter()
        .filter(|r| r.result.device == Target::cpu() && failed(r.result.outcome))
        .map(|r| r.case.key.as_str())
        .collect();
    let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in results.iter().filter(|r| &r.result.device == device && r.result.outcome != Outcome::Skip) {
        let f = failed(r.result.outcome);
        if f && *device != Target::cpu() && cpu_failed.contains(r.case.key.as_str()) {
            continue; // excused: the CPU copy failed too
        }
        let e = per.entry(r.function.name.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(f);
    }
    let mut c = StatusCounts::default();
    for (n, fails) in per.values() {
        c.functions += 1;
        match *fails {
            0 => c.success += 1,
            x if x == *n => c.complete_failure += 1,
            _ => c.partial += 1,
        }
    }
    c
}

/// Builds the figures from the store's imported paper runs (others are ignored), comparing
/// latencies with `seed` for mlport's bootstrap (default: the GPU run's stored seed).
pub fn build(runs: &[PaperRun<'_>], seed: Option<u64>) -> PaperFigures {
    let runs: Vec<&PaperRun<'_>> = runs.iter().filter(|r| r.summary.origin.source == RunSource::ImportPaper).collect();
    let mut status = Vec::new();
    for fw in [Framework::Torch, Framework::Tensorflow, Framework::Jax] {
        for r in runs.iter().filter(|r| r.portability.targets.iter().any(|t| t.framework == fw)) {
            let device = run_device(r.results);
            let has_report = r.results.iter().any(|x| x.result.device == device && x.result.outcome != Outcome::Skip);
            if !has_report {
                continue;
            }
            let mine = r
                .portability
                .targets
                .iter()
                .find(|t| t.framework == fw && t.device == device)
                .map(|t| StatusCounts {
                    functions: t.functions_run,
                    success: t.success,
                    partial: t.partial,
                    complete_failure: t.complete_failure,
                })
                .unwrap_or_default();
            status.push(StatusRow {
                framework: fw,
                machine: r.summary.origin.machine.clone().unwrap_or_default(),
                run: r.summary.id,
                label: r.summary.origin.label.clone().unwrap_or_default(),
                authors: authors_status(r.results, &device),
                mlport: mine,
                device,
            });
        }
    }
    let mut latency = Vec::new();
    let threshold = SlowdownOptions::default().threshold;
    for fw in [Framework::Torch, Framework::Tensorflow, Framework::Jax] {
        let find = |machine: &str, kind: &str| {
            runs.iter().find(|r| {
                r.summary.origin.machine.as_deref() == Some(machine)
                    && r.portability.targets.iter().any(|t| t.framework == fw)
                    && run_device(r.results).as_str().starts_with(kind)
            })
        };
        let (Some(g), Some(t)) = (find(GPU_MACHINE, "cuda"), find(TPU_MACHINE, "tpu")) else { continue };
        let (gd, td) = (run_device(g.results), run_device(t.results));
        let stats = StatsConfig { seed: seed.unwrap_or(g.summary.info.seed), ..Default::default() };
        let compare = |rule: Rule| {
            let opts = SlowdownOptions { rule, measure: Measure::Steady, stats, ..Default::default() };
            slowdown::slowdown((g.summary, &gd, g.results), (t.summary, &td, t.results), &opts)
        };
        let mine = compare(Rule::Mlport);
        let authors = plotted_latency((&gd, g.results), (&td, t.results), fw, threshold, &stats);
        latency.push(LatencyRow {
            framework: fw,
            gpu: g.summary.origin.label.clone().unwrap_or_default(),
            tpu: t.summary.origin.label.clone().unwrap_or_default(),
            authors: authors.distribution,
            authors_functions: authors.functions,
            mlport: mine
                .frameworks
                .iter()
                .find(|x| x.framework == fw)
                .map(|x| x.by_median.clone())
                .unwrap_or_else(|| Distribution::of(&[], 0, &stats)),
            unstable: mine.functions.iter().filter(|f| f.unstable).count(),
            authors_not_compared: authors.not_compared,
            mlport_not_compared: mine.not_compared.len(),
        });
    }
    PaperFigures { status, latency, threshold, why: why() }
}

/// Why the two methods give different numbers.
fn why() -> Vec<String> {
    vec![
        "Status. Both count a function (a test file) as a success when all its counted tests pass, partial when \
         some fail and a complete failure when all fail, and both excuse a PyTorch device failure whose CPU copy \
         failed too. They differ in what a failure is: the authors counted every failed test, including those \
         broken by their own timer wrapper (`partial_timed()` in JAX's ones, zeros and vjp tests); mlport records \
         those as harness_error, the study's bug, and never counts them against a framework. So JAX on T4 is \
         60 of 64 for the authors and 60 of 61 for mlport; the other frameworks agree."
            .into(),
        "Latency. The authors pooled every timed call of a function, each session's first call included, and \
         took the mean; the first call of a test on a TPU includes XLA's compilation, often milliseconds against \
         microseconds for the calls after it, so one compile can dominate a mean of a few calls. mlport keeps \
         the first call apart (it is the compile cost, reported with --measure first-call) and compares medians \
         of the steady-state calls, which a single slow call does not move; each median ratio carries a bootstrap \
         interval and a function whose samples are too few or too spread out is flagged unstable rather than \
         trusted. Which tests count differs too: the authors kept only tests that passed (JAX's TPU run, which \
         has no report, through the T4 report), mlport compares every test timed on both devices, passed or not \
         (a failing test's timed calls are still calls of the function). Both compare only tests timed on both \
         devices and group them by test file. The authors' figures follow their plotting code exactly, quirks \
         included: it reads the report at the top of each machine's folder (TensorFlow's of 8 May, not the 13 May \
         one beside the timings), adds a test name's calls once per passing test that has it (two classes of a \
         file share some names), and cuts PyTorch test names at the device token, dtype and all, so the last \
         dtype variant of a test in the report stands for all of them, on each device on its own; mlport matches \
         each test with the same test at the same dtype."
            .into(),
    ]
}
