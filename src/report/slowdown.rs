//! Slowdown between two devices (DESIGN.md: slowdown = latency on device B / on device
//! A; intolerable above a threshold, 10× by default, the paper's mark): per function, the
//! ratio of the mean and of the median steady-state latency on B to those on A, over the
//! cases (tests) timed on both; then the distribution of those ratios over functions —
//! median, geometric mean, share faster on B, share intolerably slower — rendered as a
//! table, CSV or versioned JSON (`{"format": "mlport.slowdown", "version": 2}`).
//!
//! A and B may come from different runs (a T4 run and a TPU run of the paper's data, two
//! framework versions), be two devices of one run, or two frameworks (matched by the
//! catalogue's canonical `op`). Cases are matched by function (or op), case id and dtype, so
//! imported and live runs of the same suite line up.
//!
//! Statistics ([`crate::stats`], seeded with the stored run seed): each median ratio has a
//! bootstrap 95% interval (each side's samples resampled independently within each case);
//! over functions, the geometric mean of the median ratios with a bootstrap interval over
//! functions; a function is `unstable` when a case on either side has an unstable summary.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use comfy_table::{CellAlignment, Table, presets};
use serde::Serialize;

use super::render::latency;
use crate::model::{Device, Framework, Outcome};
use crate::stats::{self, Estimate, SplitMix64, StatsConfig, Summary};
use crate::store::{ResultRow, RunSummary};

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
        }
    }
}

impl SlowdownOptions {
    /// True when A and B are two different frameworks (functions matched by op).
    pub fn across_frameworks(&self) -> bool {
        matches!((self.a_framework, self.b_framework), (Some(a), Some(b)) if a != b)
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
    pub device: Device,
}

impl Side {
    /// `tpu:0 (run 3 paper/torch/tpu_vm/tpu, tpu_vm)`.
    pub fn describe(&self) -> String {
        let label = self.label.as_ref().map(|l| format!(" {l}")).unwrap_or_default();
        let fw = self.framework.map(|f| format!("{f} on ")).unwrap_or_default();
        format!("{fw}{} (run {}{label}, {})", self.device, self.run, self.machine)
    }

    /// The side as a run and device: the run's machine (or host) and label.
    pub fn of(run: &RunSummary, device: &Device) -> Side {
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
    device: &Device,
    framework: Option<Framework>,
    by_op: bool,
    measure: Measure,
    stats: &StatsConfig,
) -> (Vec<FunctionKey>, Collected) {
    let mut order = Vec::new();
    let mut timed = Collected::new();
    for row in results.iter().filter(|r| &r.result.device == device) {
        if framework.is_some_and(|f| f != row.function.framework) {
            continue;
        }
        let key = if by_op {
            match &row.function.op {
                Some(op) => op.clone(),
                None => continue,
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
        };
        let entry = timed.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            (row.function.framework, row.function.name.clone(), Timed::new(), BTreeSet::new())
        });
        if !values.is_empty() {
            let case = (row.case.case_id.clone(), row.case.dtype.clone());
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

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Compares device `b` of run `b_run` with device `a` of run `a_run` (the same run twice
/// for two devices of one run), from each run's rows as [`crate::store::Store::results`]
/// returns them.
pub fn slowdown(
    (a_run, a, a_rows): (&RunSummary, &Device, &[ResultRow]),
    (b_run, b, b_rows): (&RunSummary, &Device, &[ResultRow]),
    options: &SlowdownOptions,
) -> SlowdownReport {
    let by_op = options.across_frameworks();
    let (a_order, a_timed) = collect(a_rows, a, options.a_framework, by_op, options.measure, &options.stats);
    let (b_order, b_timed) = collect(b_rows, b, options.b_framework, by_op, options.measure, &options.stats);
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
                if options.measure == Measure::Steady {
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
        if a_mean_ns <= 0.0 || a_median_ns <= 0.0 || b_mean_ns <= 0.0 || b_median_ns <= 0.0 {
            not_compared.push(miss("a zero time: no ratio"));
            continue;
        }
        // One value per case (first calls, test times): the cases are the sample.
        let (pa, pb) = (va.as_slice(), vb.as_slice());
        if options.measure != Measure::Steady {
            ga = vec![pa];
            gb = vec![pb];
        }
        let seeded = StatsConfig { seed: SplitMix64::stream(options.stats.seed, &key).next_u64(), ..options.stats };
        let median_ratio = b_median_ns / a_median_ns;
        let median_ratio_ci = stats::ratio_of_medians(&ga, &gb, &seeded)
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
            intolerable: median_ratio > threshold,
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

/// How the comparison was computed, in words.
pub fn rule_text(a: &Side, b: &Side, options: &SlowdownOptions) -> String {
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

fn fmt_threshold(t: f64) -> String {
    if t.fract() == 0.0 { format!("{t:.0}") } else { format!("{t}") }
}

/// A ratio for people: `3.21×`, `0.052×`, `1234×`.
pub fn ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}×")
    } else if r >= 0.1 {
        format!("{r:.2}×")
    } else {
        format!("{r:.3}×")
    }
}

fn share(d: &Distribution, n: usize) -> String {
    match d.share(n) {
        Some(s) => format!("{n} ({:.1}%)", 100.0 * s),
        None => "—".into(),
    }
}

fn new_table(header: &[&str], right: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED).set_header(header.to_vec());
    for &i in right {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// `[1.62, 2.03]`: an interval with the precision of [`ratio`].
pub fn interval(e: &Estimate) -> String {
    let r = ratio(e.lower);
    let u = ratio(e.upper);
    format!("[{}, {}]", r.trim_end_matches('×'), u.trim_end_matches('×'))
}

/// One line per framework: "torch on cuda:0 is 1.8× [1.6, 2.0] slower than on cpu, geometric
/// mean over 57 functions; 4 beyond 10×" (by the median ratios).
pub fn summary_lines(r: &SlowdownReport) -> Vec<String> {
    let runs_differ = r.a.run != r.b.run;
    let run_of = |s: &Side| {
        if runs_differ {
            format!(" (run {}{})", s.run, s.label.as_ref().map(|l| format!(" {l}")).unwrap_or_default())
        } else {
            String::new()
        }
    };
    r.frameworks
        .iter()
        .filter_map(|fw| {
            let d = &fw.by_median;
            let g = d.geometric_mean_ci?;
            let fw_b = r.b.framework.unwrap_or(fw.framework);
            let fw_a = r.a.framework.unwrap_or(fw.framework);
            let subject = format!("{fw_b} on {}{}", r.b.device, run_of(&r.b));
            let other = if fw_a != fw_b {
                format!("{fw_a} on {}{}", r.a.device, run_of(&r.a))
            } else if r.a.device != r.b.device {
                format!("on {}{}", r.a.device, run_of(&r.a))
            } else {
                // The same device in two runs (two framework versions): "... slower than in run 1".
                format!("in run {}{}", r.a.run, r.a.label.as_ref().map(|l| format!(" {l}")).unwrap_or_default())
            };
            let (how, e) = if g.point >= 1.0 {
                ("slower", g)
            } else {
                (
                    "faster",
                    Estimate { point: 1.0 / g.point, lower: 1.0 / g.upper, upper: 1.0 / g.lower, level: g.level },
                )
            };
            let limit = fmt_threshold(r.options.threshold);
            let unstable = r.functions.iter().filter(|f| f.framework == fw.framework && f.unstable).count();
            let flag = if unstable > 0 { format!(" ({unstable} unstable)") } else { String::new() };
            Some(format!(
                "{subject} is {} {} {how} than {other}, geometric mean over {} functions; {} beyond {limit}×{flag}",
                ratio(e.point),
                interval(&e),
                d.functions,
                d.intolerable
            ))
        })
        .collect()
}

/// A text histogram of the median ratios on a log scale: one row per factor of 2, a bar of
/// `#` per function (scaled to at most 40), the threshold marked between rows.
pub fn render_histogram(r: &SlowdownReport) -> String {
    let ratios: Vec<f64> = r.functions.iter().map(|f| f.median_ratio).filter(|x| *x > 0.0).collect();
    if ratios.is_empty() {
        return String::new();
    }
    let bin = |x: f64| x.log2().floor() as i32;
    let (lo, hi) =
        (ratios.iter().map(|&x| bin(x)).min().unwrap_or(0), ratios.iter().map(|&x| bin(x)).max().unwrap_or(0));
    let counts: Vec<usize> = (lo..=hi).map(|k| ratios.iter().filter(|&&x| bin(x) == k).count()).collect();
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let edge = |k: i32| {
        let v = 2f64.powi(k);
        if v >= 1.0 { format!("{v:.0}×") } else { format!("1/{:.0}×", 1.0 / v) }
    };
    let limit = r.options.threshold;
    let mut out = String::from("Median ratios B/A (log scale, one row per factor of 2):\n");
    let mut marked = false;
    for (i, k) in (lo..=hi).enumerate() {
        if !marked && 2f64.powi(k) >= limit {
            let _ = writeln!(out, "  {:─<24} beyond {}×", "", fmt_threshold(limit));
            marked = true;
        }
        let n = counts[i];
        let bar = "#".repeat((n * 40).div_ceil(most));
        let _ = writeln!(out, "  {:>16} {bar} {n}", format!("[{}, {})", edge(k), edge(k + 1)));
    }
    out
}

/// The terminal rendering: per-function table, the distribution per framework, the
/// functions not compared, then the rule. Ends with a newline.
pub fn render_table(r: &SlowdownReport) -> String {
    let mut out = format!("mlport slowdown — B = {} vs A = {}\n\n", r.b.describe(), r.a.describe());
    if r.functions.is_empty() {
        out.push_str("No function was timed on both devices.\n");
        if r.options.measure == Measure::Steady {
            out.push_str(
                "(Suites without per-call timings compare by test durations, --measure test; tests that time one call \
                 each, by first calls, --measure first-call.)\n",
            );
        }
    } else {
        let ci = format!("{:.0}% CI", 100.0 * r.options.stats.level);
        let mut t = new_table(
            &[
                "framework",
                "function",
                "cases",
                "mean A",
                "mean B",
                "mean B/A",
                "median A",
                "median B",
                "median B/A",
                &ci,
                "flags",
            ],
            &[2, 3, 4, 5, 6, 7, 8, 9],
        );
        for f in &r.functions {
            let mut flags = Vec::new();
            if f.intolerable {
                flags.push(format!("> {}×", fmt_threshold(f.threshold)));
            }
            if f.unstable {
                flags.push("unstable".to_string());
            }
            let name = match &f.b_name {
                Some(b) => format!("{} vs {b}", f.name),
                None => f.name.clone(),
            };
            t.add_row([
                f.framework.to_string(),
                name,
                f.cases.to_string(),
                latency(f.a_mean_ns),
                latency(f.b_mean_ns),
                ratio(f.mean_ratio),
                latency(f.a_median_ns),
                latency(f.b_median_ns),
                ratio(f.median_ratio),
                interval(&f.median_ratio_ci),
                flags.join(", "),
            ]);
        }
        let _ = writeln!(out, "{t}\n");
        for line in summary_lines(r) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "\n{}", render_histogram(r));
        let limit = fmt_threshold(r.options.threshold);
        let mut t = new_table(
            &[
                "framework",
                "ratio of",
                "functions",
                "median",
                "geometric mean",
                &ci,
                "faster on B",
                &format!("> {limit}× slower"),
            ],
            &[2, 3, 4, 5, 6, 7],
        );
        for fw in &r.frameworks {
            for (what, d) in [("means", &fw.by_mean), ("medians", &fw.by_median)] {
                t.add_row([
                    fw.framework.to_string(),
                    what.to_string(),
                    d.functions.to_string(),
                    d.median.map_or("—".into(), ratio),
                    d.geometric_mean.map_or("—".into(), ratio),
                    d.geometric_mean_ci.as_ref().map_or("—".into(), interval),
                    share(d, d.faster),
                    share(d, d.intolerable),
                ]);
            }
        }
        let _ = writeln!(out, "{t}");
    }
    if !r.not_compared.is_empty() {
        let _ = writeln!(out, "\nNot compared ({}):", r.not_compared.len());
        let mut by_why: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for n in &r.not_compared {
            by_why.entry(&n.why).or_default().push(&n.name);
        }
        const SHOWN: usize = 20;
        for (why, names) in by_why {
            if names.len() <= SHOWN {
                let _ = writeln!(out, "  {why}: {}", names.join(", "));
            } else {
                let _ = writeln!(
                    out,
                    "  {why}: {} and {} more (--format csv or json lists them all)",
                    names[..SHOWN].join(", "),
                    names.len() - SHOWN
                );
            }
        }
    }
    let _ = write!(out, "\nRule: {}\n", r.rule);
    out
}

/// CSV (RFC 4180): one row per function (ratios empty and `note` saying why for those not
/// compared), then per framework the distribution rows with `function` = `(median)`,
/// `(geometric mean)`, `(share faster on B)`, `(share > N× slower)` and the value in the
/// ratio columns. Times in ns, shares as fractions. Columns after `note`: the median ratio's
/// interval and level (for `(geometric mean)`, the geometric mean's of the median ratios),
/// `unstable`, the function's `threshold`, `intolerable`, and B's function across frameworks.
pub fn render_csv(r: &SlowdownReport) -> String {
    let mut out = String::from(
        "framework,function,cases,a_mean_ns,b_mean_ns,mean_ratio,a_median_ns,b_median_ns,median_ratio,note,\
         median_ratio_lower,median_ratio_upper,level,unstable,threshold,intolerable,b_function\n",
    );
    let num = |x: f64| format!("{x}");
    for f in &r.functions {
        let cells = [
            f.framework.to_string(),
            f.name.clone(),
            f.cases.to_string(),
            num(f.a_mean_ns),
            num(f.b_mean_ns),
            num(f.mean_ratio),
            num(f.a_median_ns),
            num(f.b_median_ns),
            num(f.median_ratio),
            String::new(),
            num(f.median_ratio_ci.lower),
            num(f.median_ratio_ci.upper),
            num(f.median_ratio_ci.level),
            f.unstable.to_string(),
            num(f.threshold),
            f.intolerable.to_string(),
            f.b_name.clone().unwrap_or_default(),
        ];
        out.push_str(&csv_row(&cells));
    }
    for n in &r.not_compared {
        let mut cells = vec![n.framework.to_string(), n.name.clone()];
        cells.extend(std::iter::repeat_n(String::new(), 7));
        cells.push(n.why.clone());
        cells.extend(std::iter::repeat_n(String::new(), 7));
        out.push_str(&csv_row(&cells));
    }
    let limit = fmt_threshold(r.options.threshold);
    for fw in &r.frameworks {
        let opt = |x: Option<f64>| x.map(num).unwrap_or_default();
        let rows: [(String, Option<f64>, Option<f64>); 4] = [
            ("(median)".into(), fw.by_mean.median, fw.by_median.median),
            ("(geometric mean)".into(), fw.by_mean.geometric_mean, fw.by_median.geometric_mean),
            (
                "(share faster on B)".into(),
                fw.by_mean.share(fw.by_mean.faster),
                fw.by_median.share(fw.by_median.faster),
            ),
            (
                format!("(share > {limit}x slower)"),
                fw.by_mean.share(fw.by_mean.intolerable),
                fw.by_median.share(fw.by_median.intolerable),
            ),
        ];
        for (what, m, md) in rows {
            let cells = [
                fw.framework.to_string(),
                what,
                fw.by_mean.functions.to_string(),
                String::new(),
                String::new(),
                opt(m),
                String::new(),
                String::new(),
                opt(md),
                String::new(),
            ];
            let mut cells = cells.to_vec();
            let gci = fw.by_median.geometric_mean_ci.filter(|_| cells[1] == "(geometric mean)");
            cells.push(gci.map(|e| num(e.lower)).unwrap_or_default());
            cells.push(gci.map(|e| num(e.upper)).unwrap_or_default());
            cells.push(gci.map(|e| num(e.level)).unwrap_or_default());
            cells.extend(std::iter::repeat_n(String::new(), 4));
            out.push_str(&csv_row(&cells));
        }
    }
    out
}

/// One CSV line: fields with a comma, quote or line break are quoted, quotes doubled.
pub(crate) fn csv_row<S: AsRef<str>>(cells: &[S]) -> String {
    let cells: Vec<String> = cells
        .iter()
        .map(|c| {
            let c = c.as_ref();
            if c.contains([',', '"', '\n', '\r']) { format!("\"{}\"", c.replace('"', "\"\"")) } else { c.to_string() }
        })
        .collect();
    cells.join(",") + "\n"
}

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.slowdown";
/// Its version; bumped on any incompatible change.
pub const JSON_VERSION: u32 = 2;

/// Versioned JSON: sides, options (with the statistics' settings and seed), the summary
/// lines, functions, not compared, distributions, rule.
pub fn render_json(r: &SlowdownReport) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        format: &'static str,
        version: u32,
        a: &'a Side,
        b: &'a Side,
        measure: Measure,
        threshold: f64,
        stats: &'a StatsConfig,
        summary: Vec<String>,
        functions: &'a [FunctionSlowdown],
        not_compared: &'a [NotCompared],
        frameworks: &'a [FrameworkSlowdown],
        rule: &'a str,
    }
    let doc = Doc {
        format: JSON_FORMAT,
        version: JSON_VERSION,
        a: &r.a,
        b: &r.b,
        measure: r.options.measure,
        threshold: r.options.threshold,
        stats: &r.options.stats,
        summary: summary_lines(r),
        functions: &r.functions,
        not_compared: &r.not_compared,
        frameworks: &r.frameworks,
        rule: &r.rule,
    };
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::super::summary::tests::{row, run_summary};
    use super::*;
    use crate::model::Outcome::{Fail, Pass, Skip};

    fn dev(s: &str) -> Device {
        s.parse().unwrap()
    }

    /// torch functions on cpu (A) and cuda:0 (B): a is 10× slower on B, b 2× faster,
    /// c 40× slower, d has no timings on B, e exists only on A, f only on B.
    fn rows() -> Vec<ResultRow> {
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

    #[test]
    fn snapshots() {
        let r = example();
        insta::assert_snapshot!("slowdown_table", render_table(&r));
        insta::assert_snapshot!("slowdown_csv", render_csv(&r));
        let json = render_json(&r);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some(JSON_FORMAT), Some(2)));
        insta::assert_snapshot!("slowdown_json", json);
    }

    #[test]
    fn nothing_to_compare_says_so() {
        let rows = vec![row(Framework::Jax, "a", 1, "cpu", Pass, None, &[])];
        let r = slowdown(
            (&run_summary(), &dev("cpu"), &rows),
            (&run_summary(), &dev("tpu:0"), &rows),
            &SlowdownOptions::default(),
        );
        let text = render_table(&r);
        assert!(text.contains("No function was timed on both devices.") && text.contains("--measure test"), "{text}");
        assert!(text.trim_end().ends_with(&r.rule));
        assert_eq!(render_csv(&r).lines().count(), 2);
    }

    #[test]
    fn summary_line_intervals_and_histogram() {
        let r = example();
        let lines = summary_lines(&r);
        assert_eq!(lines.len(), 1);
        // Geometric mean of 10, 0.5 and 40 = 200^(1/3) = 5.85; only c is past 10× (a is at it).
        assert!(
            lines[0].starts_with("torch on cuda:0 (run 8 gpu-box/cuda) is 5.85× [")
                && lines[0].contains("slower than on cpu (run 7), geometric mean over 3 functions; 1 beyond 10×")
                && lines[0].ends_with("(3 unstable)"), // one to three samples per case: too few to trust
            "{}",
            lines[0]
        );
        for f in &r.functions {
            let e = f.median_ratio_ci;
            assert!(e.lower <= f.median_ratio && f.median_ratio <= e.upper && e.level == 0.95, "{f:?}");
        }
        // torch.b: A = {100, 100}, B = {50, 40, 60}: every resample's A median is 100, B's lies in
        // 40..=60, so the interval lies within [0.4, 0.6].
        let b = &r.functions[1].median_ratio_ci;
        assert!(b.lower >= 0.4 && b.upper <= 0.6, "{b:?}");
        let h = render_histogram(&r);
        // 0.5 → [1/2, 1); 10 → [8, 16); 40 → [32, 64); the 10× mark comes before [16, 32).
        assert!(h.contains("[1/2×, 1×) ") && h.contains("[8×, 16×) ") && h.contains("[32×, 64×) "), "{h}");
        let mark = h.find("beyond 10×").unwrap();
        assert!(h.find("[8×, 16×)").unwrap() < mark && mark < h.find("[16×, 32×)").unwrap(), "{h}");
        // Same seed, same report.
        assert_eq!(render_table(&example()), render_table(&r));
    }

    #[test]
    fn per_function_thresholds_and_unstable_cases() {
        let mut opts = SlowdownOptions::default();
        opts.function_thresholds.insert("torch.c".into(), 50.0);
        let mut rows = rows();
        // a's cpu samples: IQR/median far past 10%.
        rows[0].result.samples_ns = vec![10, 30, 10, 30, 10, 30];
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&run_summary(), &dev("cuda:0"), &rows), &opts);
        let c = r.functions.iter().find(|f| f.name == "torch.c").unwrap();
        assert_eq!((c.threshold, c.intolerable), (50.0, false));
        assert_eq!(r.frameworks[0].by_median.intolerable, 0);
        let a = r.functions.iter().find(|f| f.name == "torch.a").unwrap();
        assert!(a.unstable);
        assert!(render_table(&r).contains("unstable"));
    }

    #[test]
    fn a_case_timed_while_other_processes_held_the_cpus_is_unstable() {
        let t = Framework::Torch;
        let steady = [100, 102, 98, 101, 99];
        let mut rows = vec![
            row(t, "quiet", 1, "cpu", Pass, None, &steady),
            row(t, "quiet", 1, "cuda:0", Pass, None, &steady),
            row(t, "busy", 1, "cpu", Pass, None, &steady),
            row(t, "busy", 1, "cuda:0", Pass, None, &steady),
        ];
        // quiet: waited 2% of its steady state (an idle machine); busy on cuda:0's host: 56%.
        for (r, wait) in rows.iter_mut().zip([2, 2, 2, 56]) {
            r.result.runqueue_wait_ns = Some(wait * 1_000_000);
            r.result.steady_wall_ns = Some(100_000_000);
        }
        let opts = SlowdownOptions::default();
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&run_summary(), &dev("cuda:0"), &rows), &opts);
        let flag = |name: &str| r.functions.iter().find(|f| f.name == name).unwrap().unstable;
        assert!(!flag("torch.quiet"));
        assert!(flag("torch.busy"), "56% run-queue wait is past the 10% default");
        // Just under the line: not flagged. First calls are never judged by it.
        rows[3].result.runqueue_wait_ns = Some(9_999_999);
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&run_summary(), &dev("cuda:0"), &rows), &opts);
        assert!(!r.functions.iter().any(|f| f.unstable));
        assert!(render_table(&r).contains("waited for a CPU more than 10%"));
    }

    #[test]
    fn two_runs_of_one_device_read_plainly_and_long_lists_are_cut() {
        let mut b_run = run_summary();
        b_run.id = 8;
        let rows = rows();
        let opts = SlowdownOptions::default();
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&b_run, &dev("cpu"), &rows), &opts);
        let line = &summary_lines(&r)[0];
        assert!(line.starts_with("torch on cpu (run 8) is 1.00× ") && line.contains(" than in run 7,"), "{line}");
        // 25 functions with no result on B: 20 named, the rest counted.
        let names: Vec<String> = (0..25).map(|i| format!("f{i:02}")).collect();
        let only_a: Vec<ResultRow> =
            names.iter().map(|n| row(Framework::Torch, n, 1, "cpu", Pass, None, &[5, 5, 5])).collect();
        let r = slowdown((&run_summary(), &dev("cpu"), &only_a), (&b_run, &dev("cuda:0"), &only_a), &opts);
        let table = render_table(&r);
        assert!(table.contains("torch.f19 and 5 more (--format csv or json lists them all)"), "{table}");
        assert!(!table.contains("torch.f20"), "{table}");
        assert!(render_csv(&r).contains("torch,torch.f24,"), "CSV lists every function not compared");
    }

    #[test]
    fn two_frameworks_are_matched_by_op() {
        let rows = vec![
            row(Framework::Torch, "argsort", 1, "cpu", Pass, None, &[100, 100, 100]),
            row(Framework::Jax, "argsort", 1, "cpu", Pass, None, &[300, 300, 300]),
            row(Framework::Jax, "only_jax", 1, "cpu", Pass, None, &[300]),
        ];
        let opts = SlowdownOptions {
            a_framework: Some(Framework::Torch),
            b_framework: Some(Framework::Jax),
            ..Default::default()
        };
        let r = slowdown((&run_summary(), &dev("cpu"), &rows), (&run_summary(), &dev("cpu"), &rows), &opts);
        assert_eq!(r.functions.len(), 1);
        let f = &r.functions[0];
        assert_eq!((f.name.as_str(), f.b_name.as_deref(), f.median_ratio), ("torch.argsort", Some("jax.argsort"), 3.0));
        assert_eq!(r.not_compared[0].why, "no result on A");
        let line = &summary_lines(&r)[0];
        assert!(line.starts_with("jax on cpu is 3.00× [3.00, 3.00] slower than torch on cpu"), "{line}");
        assert!(r.rule.contains("matched by the catalogue's canonical op"));
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_row(&["a", "b,c", "say \"x\""]), "a,\"b,c\",\"say \"\"x\"\"\"\n");
    }
}
