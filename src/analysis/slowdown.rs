//! Slowdown between two devices (docs/architecture.md: slowdown = latency on device B / on device
//! A; intolerable above a threshold, 10× by default, the paper's mark): per function, the
//! ratio of the mean and of the median steady-state latency on B to those on A, over the
//! cases (tests) timed on both; then the distribution of those ratios over functions —
//! median, geometric mean, share faster on B, share intolerably slower (rendered as a
//! table, CSV or versioned JSON, `{"format": "mlport.slowdown", "version": 2}`).
//!
//! A and B may come from different runs (a T4 run and a TPU run of the paper's data, two
//! framework versions), be two devices of one run, or two frameworks (matched by the
//! catalogue's canonical `op`; a test suite's functions, which have none, by their name — the
//! same suite run on two frameworks). Cases are matched by function (or op), case id and dtype, so
//! imported and live runs of the same suite line up.
//!
//! Statistics ([`crate::stats`], seeded with the stored run seed): each median ratio has a
//! bootstrap 95% interval (each side's samples resampled independently within each case);
//! over functions, the geometric mean of the median ratios with a bootstrap interval over
//! functions; a function is `unstable` when a case on either side has an unstable summary.
//!
//! Rendered by [`crate::render::slowdown`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::model::{Framework, Outcome, Target};
use crate::model::{ResultRow, RunSummary};
use crate::stats::{self, Estimate, SplitMix64, StatsConfig, Summary};

/// What latency is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Steady-state samples: every timed call after a case's first (which includes
    /// compilation and warm-up), ns per call.
    Steady,
    /// Each passing case's whole duration (a test's body; a live case's wall time).
    TestTime,
    /// Each case's first timed call (compilation, autotuning and caches included); for
    /// suites whose tests time a function once, the only timing there is.
    FirstCall,
    /// Every timed call, each session's first included (the authors' method of "The Grand
    /// Illusion"): an import's session first calls and samples; a live case's first call and
    /// its steady-state samples (ns per call of each timed block).
    AllCalls,
}

/// Which method computes the slowdown (`report --rule`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// mlport's: the chosen [`Measure`] (steady state by default) of every timed case, per
    /// function the median ratio with a bootstrap interval, unstable cases flagged.
    #[default]
    Mlport,
    /// The authors' of "The Grand Illusion" (their plotting code, as the data's README and
    /// issue 19 describe it): every timed call, first calls included ([`Measure::AllCalls`]),
    /// of the cases that passed on each side (a side with no recorded outcome at all, a
    /// timings-only import, takes the other side's: JAX's one report serves both devices);
    /// cases timed on both sides kept; per function the mean of all its timed calls on each
    /// side and their ratio (`mean_ratio`, summarised in `by_mean`). A rule for any two runs,
    /// matching each case with the same case at the same dtype; `report paper` follows the
    /// authors' plotting code itself on their data, quirks included
    /// ([`super::paper_plotting`]), so its figures may differ from this rule's on the same runs.
    Paper,
}

/// How to compare. Defaults: steady state, intolerable above 10×, every framework on
/// both sides, the default [`StatsConfig`].
#[derive(Clone, Debug, PartialEq)]
pub struct SlowdownOptions {
    /// What latency is compared.
    pub measure: Measure,
    /// A function whose median ratio exceeds this is intolerably slower on B (the paper's
    /// third failure criterion).
    pub threshold: f64,
    /// Per-function thresholds (by A's function name) that replace `threshold`.
    pub function_thresholds: BTreeMap<String, f64>,
    /// Only this framework's results on side A; `None` for all.
    pub a_framework: Option<Framework>,
    /// Only this framework's results on side B. When both are set and differ, functions are
    /// matched by their canonical `op`.
    pub b_framework: Option<Framework>,
    /// Bootstrap and stability settings; callers seed it with the stored run seed.
    pub stats: StatsConfig,
    /// The method; [`Rule::Paper`] compares [`Measure::AllCalls`] whatever `measure` says.
    pub rule: Rule,
}

impl Default for SlowdownOptions {
    fn default() -> Self {
        SlowdownOptions {
            measure: Measure::Steady,
            threshold: 10.0,
            function_thresholds: BTreeMap::new(),
            a_framework: None,
            b_framework: None,
            stats: StatsConfig::default(),
            rule: Rule::Mlport,
        }
    }
}

impl SlowdownOptions {
    /// True when A and B are two different frameworks (functions matched by op).
    pub fn across_frameworks(&self) -> bool {
        matches!((self.a_framework, self.b_framework), (Some(a), Some(b)) if a != b)
    }

    /// The measure compared: `measure`, or every timed call under [`Rule::Paper`].
    pub fn effective_measure(&self) -> Measure {
        if self.rule == Rule::Paper { Measure::AllCalls } else { self.measure }
    }

    /// The threshold for a function (its own, else the run's).
    pub fn threshold_for(&self, name: &str) -> f64 {
        self.function_thresholds.get(name).copied().unwrap_or(self.threshold)
    }
}

/// One side of the comparison: a device in a run, optionally one framework's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    /// The framework compared, when the side names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<Framework>,
    /// The run's id.
    pub run: i64,
    /// The run's label.
    pub label: Option<String>,
    /// The machine (imports) or host (live runs).
    pub machine: String,
    /// The device compared.
    pub device: Target,
}

impl Side {
    /// `tpu:0 (run 3 paper/torch/tpu_vm/tpu, tpu_vm)`.
    pub fn describe(&self) -> String {
        let label = self.label.as_ref().map(|l| format!(" {l}")).unwrap_or_default();
        let fw = self.framework.map(|f| format!("{f} on ")).unwrap_or_default();
        format!("{fw}{} (run {}{label}, {})", self.device, self.run, self.machine)
    }

    /// The side as a run and device: the run's machine (or host) and label.
    pub fn of(run: &RunSummary, device: &Target) -> Side {
        Side {
            framework: None,
            run: run.id,
            label: run.origin.label.clone(),
            machine: run.origin.machine.clone().unwrap_or_else(|| run.info.host.clone()),
            device: device.clone(),
        }
    }
}

/// One function compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionSlowdown {
    /// The function's framework.
    pub framework: Framework,
    /// The function's name.
    pub name: String,
    /// Cases timed on both sides.
    pub cases: usize,
    /// Mean latency on A over those cases' values, ns.
    pub a_mean_ns: f64,
    /// Mean latency on B, ns.
    pub b_mean_ns: f64,
    /// `b_mean_ns / a_mean_ns`.
    pub mean_ratio: f64,
    /// Median latency on A, ns.
    pub a_median_ns: f64,
    /// Median latency on B, ns.
    pub b_median_ns: f64,
    /// `b_median_ns / a_median_ns`.
    pub median_ratio: f64,
    /// The median ratio with its bootstrap interval (steady state: each case's samples
    /// resampled within the case, each side independently; one value per case: the cases
    /// resampled).
    pub median_ratio_ci: Estimate,
    /// B's function when A and B are different frameworks (matched by op).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_name: Option<String>,
    /// Some case on either side has an unstable summary ([`Summary::unstable`]; steady state only).
    pub unstable: bool,
    /// The threshold that applies to this function.
    pub threshold: f64,
    /// `median_ratio` above `threshold`.
    pub intolerable: bool,
}

/// A function with results on a side that could not be compared, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotCompared {
    /// The function's framework.
    pub framework: Framework,
    /// The function's name.
    pub name: String,
    /// `no result on B`, `no timing on A`, `no case timed on both`, ...
    pub why: String,
}

/// The ratios of one framework's compared functions, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Distribution {
    /// Functions compared.
    pub functions: usize,
    /// Median of their ratios; `None` when none was compared.
    pub median: Option<f64>,
    /// Geometric mean of their ratios.
    pub geometric_mean: Option<f64>,
    /// The geometric mean with a bootstrap interval over the functions.
    pub geometric_mean_ci: Option<Estimate>,
    /// Functions with a ratio below 1 (faster on B).
    pub faster: usize,
    /// Functions with a ratio above the threshold.
    pub intolerable: usize,
}

impl Distribution {
    /// The distribution of `ratios`, `intolerable` of them beyond their threshold, with a
    /// bootstrap interval for the geometric mean.
    pub(crate) fn of(ratios: &[f64], intolerable: usize, stats: &StatsConfig) -> Distribution {
        let mut sorted = ratios.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = (!sorted.is_empty()).then(|| {
            let mid = sorted.len() / 2;
            if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 }
        });
        let geometric_mean =
            (!sorted.is_empty()).then(|| (sorted.iter().map(|r| r.ln()).sum::<f64>() / sorted.len() as f64).exp());
        Distribution {
            functions: sorted.len(),
            median,
            geometric_mean,
            geometric_mean_ci: stats::geometric_mean(ratios, stats),
            faster: sorted.iter().filter(|r| **r < 1.0).count(),
            intolerable,
        }
    }

    /// `n` as a share (0..=1) of the functions compared.
    pub fn share(&self, n: usize) -> Option<f64> {
        (self.functions > 0).then(|| n as f64 / self.functions as f64)
    }
}

/// One framework's part of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameworkSlowdown {
    /// The framework.
    pub framework: Framework,
    /// Distribution of the mean ratios.
    pub by_mean: Distribution,
    /// Distribution of the median ratios.
    pub by_median: Distribution,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowdownReport {
    /// The baseline.
    pub a: Side,
    /// The device compared with it.
    pub b: Side,
    /// How it was compared.
    pub options: SlowdownOptions,
    /// In A's planned order, then functions only B has.
    pub functions: Vec<FunctionSlowdown>,
    /// Functions with results that could not be compared, and why.
    pub not_compared: Vec<NotCompared>,
    /// The distribution of ratios per framework.
    pub frameworks: Vec<FrameworkSlowdown>,
    /// How the numbers were computed: the footer of every rendering.
    pub rule: String,
}

/// Values per matched case (case id, dtype) of one function on one side.
type Timed = BTreeMap<(String, String), Vec<f64>>;

/// A function's match key: `framework/name`, or its op across frameworks.
type FunctionKey = String;

/// Each key's framework, function name and timed cases.
/// Per function: its framework, name, timed cases, and the cases timed while other processes
/// held the CPUs (run-queue wait over [`StatsConfig::max_runqueue_wait`]).
type Collected = HashMap<FunctionKey, (Framework, String, Timed, BTreeSet<(String, String)>)>;

/// Collects each function's timed cases on `device` (of `framework`, when given), in
/// result order, with each key's framework and function name.
fn collect(
    results: &[ResultRow],
    device: &Target,
    framework: Option<Framework>,
    by_op: bool,
    measure: Measure,
    stats: &StatsConfig,
    passed_only: bool,
) -> (Vec<FunctionKey>, Collected) {
    let mut order = Vec::new();
    let mut timed = Collected::new();
    for row in results.iter().filter(|r| &r.result.device == device) {
        if framework.is_some_and(|f| f != row.function.framework) {
            continue;
        }
        if passed_only && row.result.outcome != Outcome::Pass {
            continue;
        }
        let key = if by_op {
            match (&row.function.op, &row.case.spec) {
                (Some(op), _) => op.clone(),
                // A test suite run against two frameworks: the same suite's function names
                // (its files, tests or metadata) match, whatever the framework.
                (None, crate::model::Spec::Imported(_)) => {
                    format!("suite/{}", super::suite::test_id(&row.function.name))
                }
                (None, _) => continue,
            }
        } else {
            format!("{}/{}", row.function.framework, row.function.name)
        };
        let values: Vec<f64> = match measure {
            Measure::Steady => row.result.samples_ns.iter().map(|&ns| ns as f64).collect(),
            Measure::TestTime => {
                if row.result.outcome == Outcome::Pass && row.result.wall_ms > 0.0 {
                    vec![row.result.wall_ms * 1e6]
                } else {
                    Vec::new()
                }
            }
            Measure::FirstCall => row.result.first_call_ns.map(|ns| vec![ns as f64]).unwrap_or_default(),
            Measure::AllCalls => all_calls(&row.result),
        };
        let entry = timed.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            (row.function.framework, row.function.name.clone(), Timed::new(), BTreeSet::new())
        });
        if !values.is_empty() {
            // Keyed by the dtype's name: the order of the map is the order samples are pooled in.
            // A suite's test ids across frameworks lose their framework tokens (`[float16-jax]`).
            let case_id = if by_op && row.function.op.is_none() {
                super::suite::test_id(&row.case.case_id)
            } else {
                row.case.case_id.clone()
            };
            let case = (case_id, crate::model::name_or_empty(row.case.dtype).to_string());
            if measure == Measure::Steady
                && row.result.runqueue_wait_share().is_some_and(|w| w > stats.max_runqueue_wait)
            {
                entry.3.insert(case.clone());
            }
            entry.2.entry(case).or_insert(values);
        }
    }
    (order, timed)
}

/// Every timed call of a result, ns: each session's first call (an import's; a live case's one
/// first call) and then the samples.
pub(crate) fn all_calls(r: &crate::model::CaseResult) -> Vec<f64> {
    let firsts: Vec<u64> = if r.session_first_calls_ns.is_empty() {
        r.first_call_ns.into_iter().collect()
    } else {
        r.session_first_calls_ns.clone()
    };
    firsts.iter().chain(&r.samples_ns).map(|&ns| ns as f64).collect()
}

/// Whether a side recorded any outcome on `device` (of `framework`): a timings-only import
/// (every result skipped, outcome unknown) did not.
fn has_outcomes(results: &[ResultRow], device: &Target, framework: Option<Framework>) -> bool {
    results.iter().any(|r| {
        &r.result.device == device
            && framework.is_none_or(|f| f == r.function.framework)
            && r.result.outcome != Outcome::Skip
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Compares device `b` of run `b_run` with device `a` of run `a_run` (the same run twice
/// for two devices of one run), from each run's rows as [`crate::store::Store::results`]
/// returns them.
pub fn slowdown(
    (a_run, a, a_rows): (&RunSummary, &Target, &[ResultRow]),
    (b_run, b, b_rows): (&RunSummary, &Target, &[ResultRow]),
    options: &SlowdownOptions,
) -> SlowdownReport {
    let by_op = options.across_frameworks();
    let measure = options.effective_measure();
    let paper = options.rule == Rule::Paper;
    // Under the authors' rule only passing cases count; a side without outcomes keeps every
    // timed case and the other side's passing ones decide (the intersection below).
    let a_passed = paper && has_outcomes(a_rows, a, options.a_framework);
    let b_passed = paper && has_outcomes(b_rows, b, options.b_framework);
    let (a_order, a_timed) = collect(a_rows, a, options.a_framework, by_op, measure, &options.stats, a_passed);
    let (b_order, b_timed) = collect(b_rows, b, options.b_framework, by_op, measure, &options.stats, b_passed);
    let mut functions = Vec::new();
    let mut not_compared = Vec::new();
    let mut order = a_order.clone();
    order.extend(b_order.into_iter().filter(|f| !a_timed.contains_key(f)));
    for key in order {
        let (ea, eb) = (a_timed.get(&key), b_timed.get(&key));
        let (framework, name) = match (ea, eb) {
            (Some((f, n, _, _)), _) | (None, Some((f, n, _, _))) => (*f, n.clone()),
            (None, None) => continue,
        };
        let miss = |why: &str| NotCompared { framework, name: name.clone(), why: why.to_string() };
        let ((_, _, ta, ca), (_, b_name, tb, cb)) = match (ea, eb) {
            (Some(ea), Some(eb)) => (ea, eb),
            (Some(_), None) => {
                not_compared.push(miss("no result on B"));
                continue;
            }
            _ => {
                not_compared.push(miss("no result on A"));
                continue;
            }
        };
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        let (mut ga, mut gb): (Vec<&[f64]>, Vec<&[f64]>) = (Vec::new(), Vec::new());
        let mut unstable = false;
        for (case, xa) in ta {
            if let Some(xb) = tb.get(case) {
                va.extend_from_slice(xa);
                vb.extend_from_slice(xb);
                ga.push(xa);
                gb.push(xb);
                if measure == Measure::Steady {
                    unstable |= [xa, xb].iter().any(|x| Summary::of(x, &options.stats).is_some_and(|s| s.unstable));
                    unstable |= ca.contains(case) || cb.contains(case);
                }
            }
        }
        let cases = ga.len();
        if cases == 0 {
            let why = match (ta.is_empty(), tb.is_empty()) {
                (true, true) => "no timing on either side",
                (true, false) => "no timing on A",
                (false, true) => "no timing on B",
                (false, false) => "no case timed on both",
            };
            not_compared.push(miss(why));
            continue;
        }
        let (a_mean_ns, b_mean_ns) = (mean(&va), mean(&vb));
        let (a_median_ns, b_median_ns) = (stats::median(&va), stats::median(&vb));
        let zero_median = !paper && (a_median_ns <= 0.0 || b_median_ns <= 0.0);
        if a_mean_ns <= 0.0 || b_mean_ns <= 0.0 || zero_median {
            not_compared.push(miss("a zero time: no ratio"));
            continue;
        }
        // One value per case (first calls, test times): the cases are the sample.
        let (pa, pb) = (va.as_slice(), vb.as_slice());
        if !matches!(measure, Measure::Steady | Measure::AllCalls) {
            ga = vec![pa];
            gb = vec![pb];
        }
        let seeded = StatsConfig { seed: SplitMix64::stream(options.stats.seed, &key).next_u64(), ..options.stats };
        let median_ratio = if a_median_ns > 0.0 { b_median_ns / a_median_ns } else { f64::INFINITY };
        // The authors' method has no intervals: no bootstrap (the costliest part) under it.
        let median_ratio_ci = (!paper)
            .then(|| stats::ratio_of_medians(&ga, &gb, &seeded))
            .flatten()
            .unwrap_or_else(|| Estimate::exact(median_ratio, options.stats.level));
        let threshold = options.threshold_for(&name);
        functions.push(FunctionSlowdown {
            framework,
            b_name: by_op.then(|| b_name.clone()),
            name,
            cases,
            a_mean_ns,
            b_mean_ns,
            mean_ratio: b_mean_ns / a_mean_ns,
            a_median_ns,
            b_median_ns,
            median_ratio,
            median_ratio_ci,
            unstable,
            threshold,
            intolerable: if paper { b_mean_ns / a_mean_ns } else { median_ratio } > threshold,
        });
    }
    let mut frameworks: Vec<Framework> = functions.iter().map(|f| f.framework).collect();
    frameworks.sort();
    frameworks.dedup();
    let frameworks = frameworks
        .into_iter()
        .map(|fw| {
            let of = |pick: fn(&FunctionSlowdown) -> f64| {
                let mine: Vec<&FunctionSlowdown> = functions.iter().filter(|f| f.framework == fw).collect();
                let r: Vec<f64> = mine.iter().map(|f| pick(f)).collect();
                let beyond = mine.iter().filter(|f| pick(f) > f.threshold).count();
                Distribution::of(&r, beyond, &options.stats)
            };
            FrameworkSlowdown { framework: fw, by_mean: of(|f| f.mean_ratio), by_median: of(|f| f.median_ratio) }
        })
        .collect();
    let (mut sa, mut sb) = (Side::of(a_run, a), Side::of(b_run, b));
    sa.framework = options.a_framework;
    sb.framework = options.b_framework;
    SlowdownReport {
        rule: rule_text(&sa, &sb, options),
        a: sa,
        b: sb,
        options: options.clone(),
        functions,
        not_compared,
        frameworks,
    }
}

impl SlowdownReport {
    /// The distribution the rule reports first: the median ratios' (mlport), the mean
    /// ratios' under [`Rule::Paper`].
    pub fn headline<'a>(&self, fw: &'a FrameworkSlowdown) -> &'a Distribution {
        if self.options.rule == Rule::Paper { &fw.by_mean } else { &fw.by_median }
    }

    /// A function's ratio under the rule: its median ratio (mlport) or mean ratio (paper).
    pub fn ratio_of(&self, f: &FunctionSlowdown) -> f64 {
        if self.options.rule == Rule::Paper { f.mean_ratio } else { f.median_ratio }
    }
}

/// How the comparison was computed, in words.
pub fn rule_text(a: &Side, b: &Side, options: &SlowdownOptions) -> String {
    if options.rule == Rule::Paper {
        return format!(
            "The authors' method (\"The Grand Illusion\", --rule paper): slowdown of B = {} relative to A = {}. \
             Every timed call (each session's first call included) of every case that passed on its side (a side \
             with no recorded outcome, a timings-only import, takes the other side's); cases timed on both sides \
             kept; per function the mean of all its timed calls on B divided by the mean on A (the mean ratio; \
             above 1 is slower on B). Over functions: the median and geometric mean of the mean ratios, the share \
             faster on B (below 1) and the share more than {}× slower. No intervals or stability flags: the \
             authors' method has none (the median ratios and their bootstrap intervals are shown beside it).{}",
            b.describe(),
            a.describe(),
            fmt_threshold(options.threshold),
            if options.across_frameworks() { " Frameworks are matched by the catalogue's canonical op." } else { "" }
        );
    }
    let what = match options.measure {
        Measure::Steady => {
            "steady-state samples (ns per call: per timed block in mlport's own runs, per timed call in imports; \
             after the first call and the warm-up; the first \
             includes compilation and warm-up)"
        }
        Measure::TestTime => "durations of the cases that passed (a whole test's body per case)",
        Measure::FirstCall => {
            "first timed calls (one per case: compilation, autotuning and cache warm-up included, not steady state)"
        }
        Measure::AllCalls => "timed calls, each session's first call included",
    };
    format!(
        "Slowdown of B = {} relative to A = {}: per function, over the cases timed on both, the mean (and the \
         median) of their {what} on B divided by the same on A; above 1 is slower on B. Over functions: the median \
         and geometric mean of the ratios, the share faster on B (ratio below 1) and the share more than {}× \
         slower (intolerable; per-function thresholds where set). Intervals: bootstrap {:.0}% percentile intervals, \
         {} resamples, seed {} (for a median ratio each side's samples are resampled within each case; for a \
         geometric mean the functions are resampled); a function is unstable when a case on either side has \
         IQR/median above {:.0}%, more than 10% severe outliers (beyond 3×IQR; flagged, never dropped), fewer \
         than {} samples, or threads that waited for a CPU more than {:.0}% of its steady state (other processes \
         held the cores). Functions not timed on both sides are listed apart, never guessed.{}",
        b.describe(),
        a.describe(),
        fmt_threshold(options.threshold),
        100.0 * options.stats.level,
        options.stats.resamples,
        options.stats.seed,
        100.0 * options.stats.unstable_spread,
        options.stats.min_samples,
        100.0 * options.stats.max_runqueue_wait,
        if options.across_frameworks() { " Frameworks are matched by the catalogue's canonical op." } else { "" }
    )
}

/// A threshold as the rule words it: `10`, `1.5`.
pub fn fmt_threshold(t: f64) -> String {
    if t.fract() == 0.0 { format!("{t:.0}") } else { format!("{t}") }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::{row, run_summary};
    use crate::model::Outcome::{Fail, Pass, Skip};

    pub(crate) fn dev(s: &str) -> Target {
        s.parse().unwrap()
    }

    /// torch functions on cpu (A) and cuda:0 (B): a is 10× slower on B, b 2× faster,
    /// c 40× slower, d has no timings on B, e exists only on A, f only on B.
    pub(crate) fn rows() -> Vec<ResultRow> {
        let t = Framework::Torch;
        vec![
            row(t, "a", 1, "cpu", Pass, None, &[10, 20, 30]),
            row(t, "a", 1, "cuda:0", Pass, None, &[100, 200, 300]),
            row(t, "a", 2, "cpu", Pass, None, &[40]),
            row(t, "b", 1, "cpu", Pass, None, &[100, 100]),
            row(t, "b", 1, "cuda:0", Pass, None, &[50, 40, 60]),
            row(t, "b", 2, "cuda:0", Pass, None, &[1]),
            row(t, "c", 1, "cpu", Skip, None, &[5]),
            row(t, "c", 1, "cuda:0", Fail, None, &[200]),
            row(t, "d", 1, "cpu", Pass, None, &[7]),
            row(t, "d", 1, "cuda:0", Pass, None, &[]),
            row(t, "e", 1, "cpu", Pass, None, &[7]),
            row(t, "f", 1, "cuda:0", Pass, None, &[7]),
        ]
    }

    pub(crate) fn example() -> SlowdownReport {
        let mut b_run = run_summary();
        b_run.id = 8;
        b_run.origin.label = Some("gpu-box/cuda".into());
        b_run.origin.machine = Some("t4_vm".into());
        let rows = rows();
        slowdown((&run_summary(), &dev("cpu"), &rows), (&b_run, &dev("cuda:0"), &rows), &SlowdownOptions::default())
    }

    #[test]
    fn ratios_per_function_over_cases_timed_on_both() {
        let r = example();
        let got: Vec<(&str, usize, f64, f64)> =
            r.functions.iter().map(|f| (f.name.as_str(), f.cases, f.mean_ratio, f.median_ratio)).collect();
        assert_eq!(got, vec![("torch.a", 1, 10.0, 10.0), ("torch.b", 1, 0.5, 0.5), ("torch.c", 1, 40.0, 40.0)]);
        let nc: Vec<(&str, &str)> = r.not_compared.iter().map(|n| (n.name.as_str(), n.why.as_str())).collect();
        assert_eq!(
            nc,
            vec![("torch.d", "no timing on B"), ("torch.e", "no result on B"), ("torch.f", "no result on A")]
        );
        let d = &r.frameworks[0].by_mean;
        assert_eq!((d.functions, d.median, d.faster, d.intolerable), (3, Some(10.0), 1, 1));
        assert!((d.geometric_mean.unwrap() - 200f64.powf(1.0 / 3.0)).abs() < 1e-9);
        assert_eq!(d.share(d.intolerable), Some(1.0 / 3.0));
        assert_eq!(r.a.describe(), "cpu (run 7, gpu-box)");
        assert_eq!(r.b.describe(), "cuda:0 (run 8 gpu-box/cuda, t4_vm)");
    }

    #[test]
    fn test_time_compares_passing_cases_only() {
        let mut rows = rows();
        for (i, r) in rows.iter_mut().enumerate() {
            r.result.wall_ms = (i + 1) as f64;
        }
        let opts = SlowdownOptions { measure: Measure::TestTime, threshold: 1.5, ..Default::default() };
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&run_summary(), &dev("cuda:0"), &rows), &opts);
        let got: Vec<(&str, f64)> = r.functions.iter().map(|f| (f.name.as_str(), f.mean_ratio)).collect();
        // a: 2 ms / 1 ms; b: 5/4; c failed on B and was skipped on A: not compared; d: 10/9.
        assert_eq!(got, vec![("torch.a", 2.0), ("torch.b", 1.25), ("torch.d", 10.0 / 9.0)]);
        assert_eq!(r.frameworks[0].by_mean.intolerable, 1);
        assert!(r.rule.contains("more than 1.5× slower"));
    }

    #[test]
    fn first_calls_compare_one_value_per_case() {
        let mut rows = rows();
        rows[0].result.first_call_ns = Some(1_000);
        rows[1].result.first_call_ns = Some(9_000);
        rows[3].result.first_call_ns = Some(5);
        let opts = SlowdownOptions { measure: Measure::FirstCall, ..Default::default() };
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&run_summary(), &dev("cuda:0"), &rows), &opts);
        let got: Vec<(&str, f64)> = r.functions.iter().map(|f| (f.name.as_str(), f.median_ratio)).collect();
        assert_eq!(got, vec![("torch.a", 9.0)]);
        assert!(r.not_compared.iter().any(|n| n.name == "torch.b" && n.why == "no timing on B"));
        assert!(r.rule.contains("first timed calls"));
    }
}
