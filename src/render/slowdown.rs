//! The slowdown between two devices ([`crate::analysis::slowdown`]) as a terminal table
//! (per function, the distribution per framework, a histogram of the median ratios, the
//! functions not compared), CSV or versioned JSON (`{"format": "mlport.slowdown", "version": 2}`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use serde::Serialize;

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::histogram::log2_rows;
use super::json::versioned;
use super::report::{Report, unsupported};
use super::units::{interval, latency, ratio};
use crate::analysis::slowdown::{
    Distribution, FrameworkSlowdown, FunctionSlowdown, Measure, NotCompared, Rule, Side, SlowdownReport, fmt_threshold,
};
use crate::stats::{Estimate, StatsConfig};

fn share(d: &Distribution, n: usize) -> String {
    match d.share(n) {
        Some(s) => format!("{n} ({:.1}%)", 100.0 * s),
        None => "—".into(),
    }
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
            let d = r.headline(fw);
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
    let ratios: Vec<f64> = r.functions.iter().map(|f| r.ratio_of(f)).collect();
    let limit = r.options.threshold;
    let rows = log2_rows(&ratios, Some((limit, &format!("beyond {}×", fmt_threshold(limit)))));
    if rows.is_empty() {
        return rows;
    }
    format!("Median ratios B/A (log scale, one row per factor of 2):\n{rows}")
}

/// The terminal rendering: per-function table, the distribution per framework, the
/// functions not compared, then the rule. Ends with a newline.
fn render_table(r: &SlowdownReport) -> String {
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
        let mut t = Grid::new([
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
        ])
        .right_aligned(&[2, 3, 4, 5, 6, 7, 8, 9]);
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
            t.push([
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
        let _ = writeln!(out, "{}\n", t.table());
        for line in summary_lines(r) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "\n{}", render_histogram(r));
        let limit = fmt_threshold(r.options.threshold);
        let mut t = Grid::new([
            "framework",
            "ratio of",
            "functions",
            "median",
            "geometric mean",
            &ci,
            "faster on B",
            &format!("> {limit}× slower"),
        ])
        .right_aligned(&[2, 3, 4, 5, 6, 7]);
        for fw in &r.frameworks {
            for (what, d) in [("means", &fw.by_mean), ("medians", &fw.by_median)] {
                t.push([
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
        let _ = writeln!(out, "{}", t.table());
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
fn render_csv(r: &SlowdownReport) -> String {
    let mut out = Csv::new();
    out.row([
        "framework",
        "function",
        "cases",
        "a_mean_ns",
        "b_mean_ns",
        "mean_ratio",
        "a_median_ns",
        "b_median_ns",
        "median_ratio",
        "note",
        "median_ratio_lower",
        "median_ratio_upper",
        "level",
        "unstable",
        "threshold",
        "intolerable",
        "b_function",
    ]);
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
        out.row(&cells);
    }
    for n in &r.not_compared {
        let mut cells = vec![n.framework.to_string(), n.name.clone()];
        cells.extend(std::iter::repeat_n(String::new(), 7));
        cells.push(n.why.clone());
        cells.extend(std::iter::repeat_n(String::new(), 7));
        out.row(&cells);
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
            out.row(&cells);
        }
    }
    out.finish()
}

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.slowdown";
/// Its version; bumped on any incompatible change.
pub const JSON_VERSION: u32 = 2;

/// Versioned JSON: sides, options (with the statistics' settings and seed), the summary
/// lines, functions, not compared, distributions, rule.
fn render_json(r: &SlowdownReport) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        a: &'a Side,
        b: &'a Side,
        measure: Measure,
        method: Rule,
        threshold: f64,
        stats: &'a StatsConfig,
        summary: Vec<String>,
        functions: &'a [FunctionSlowdown],
        not_compared: &'a [NotCompared],
        frameworks: &'a [FrameworkSlowdown],
        rule: &'a str,
    }
    let body = Body {
        a: &r.a,
        b: &r.b,
        measure: r.options.effective_measure(),
        method: r.options.rule,
        threshold: r.options.threshold,
        stats: &r.options.stats,
        summary: summary_lines(r),
        functions: &r.functions,
        not_compared: &r.not_compared,
        frameworks: &r.frameworks,
        rule: &r.rule,
    };
    versioned(JSON_FORMAT, JSON_VERSION, &body)
}

/// The formats of one slowdown: a table, CSV or JSON (no Markdown).
const FORMATS: &[Format] = &[Format::Table, Format::Json, Format::Csv];

/// One slowdown in a table, CSV or versioned JSON.
impl Report for SlowdownReport {
    fn formats(&self) -> &'static [Format] {
        FORMATS
    }

    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        let text = match format {
            Format::Table => render_table(self),
            Format::Csv => render_csv(self),
            Format::Json => render_json(self),
            Format::Markdown => return Err(unsupported(format)),
        };
        out.write_all(text.as_bytes())
    }
}

/// Several slowdowns (`report slowdown A..B C..D`), one table each separated by an empty
/// line; a single one in any of its formats.
pub struct Slowdowns<'a>(pub &'a [SlowdownReport]);

impl Report for Slowdowns<'_> {
    fn formats(&self) -> &'static [Format] {
        if self.0.len() > 1 { &[Format::Table] } else { FORMATS }
    }

    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        if !self.formats().contains(&format) {
            return Err(unsupported(format));
        }
        for (i, sd) in self.0.iter().enumerate() {
            if i > 0 {
                out.write_all(b"\n")?;
            }
            sd.render(format, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::portability::tests::{row, run_summary};
    use crate::analysis::slowdown::tests::{dev, example, rows};
    use crate::analysis::slowdown::{SlowdownOptions, slowdown};
    use crate::model::Framework;
    use crate::model::Outcome::Pass;
    use crate::model::ResultRow;

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
}
