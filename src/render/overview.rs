//! The portability summary of several runs at once (`mlport report --run all`, and what
//! `mlport import paper` prints): one row per run × framework × device with the paper's
//! counts, percentages to two decimals as the paper prints them (35 of 64 = 54.69%), as a
//! table, Markdown, versioned JSON (`{"format": "mlport.overview", "version": 2}`) or CSV.
//! Each row is the [`PortabilityReport`] of its run; the counting rules of the runs shown
//! close every rendering.

use std::fmt::Write as _;

use serde::Serialize;

use std::io::{self, Write};

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::json::versioned;
use super::report::Report;
use super::units::reasons;
use crate::analysis::{PortabilityReport, TargetSummary};
use crate::model::RunSource;
use crate::model::{Framework, Reason, Target};

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.overview";
/// Its version; bumped on any incompatible change.
/// Version 2 added each row's `unchecked` cases. Version 3 (issue 39) added the answers and
/// dtypes apart: `wrong_result` (functions, device-attributable), `wrong_everywhere` (functions,
/// on the reference target itself) and `dtype_changed` (cases, no longer in `reasons`).
pub const JSON_VERSION: u32 = 3;

const COLUMNS: [&str; 14] = [
    "run",
    "label",
    "machine",
    "framework",
    "device",
    "functions",
    "success",
    "partial",
    "complete failure",
    "wrong (device)",
    "wrong (everywhere)",
    "dtype changed",
    "unchecked cases",
    "failure reasons",
];

/// `n (54.69%)` of a target's functions run; `—` when none ran.
fn share(t: &TargetSummary, n: usize) -> String {
    match t.percent(n) {
        Some(p) => format!("{n} ({p:.2}%)"),
        None => "—".into(),
    }
}

fn machine(r: &PortabilityReport) -> &str {
    r.run.machine.as_deref().unwrap_or(&r.run.host)
}

fn cells(r: &PortabilityReport, t: &TargetSummary) -> [String; 14] {
    [
        r.run.id.to_string(),
        r.run.label.clone().unwrap_or_else(|| "—".into()),
        machine(r).to_string(),
        t.framework.to_string(),
        t.device.to_string(),
        t.functions_run.to_string(),
        share(t, t.success),
        share(t, t.partial),
        share(t, t.complete_failure),
        share(t, t.wrong_result_functions),
        share(t, t.wrong_everywhere_functions),
        crate::render::portability::words::dtype_changed(r, t),
        t.cases_unchecked.to_string(),
        if t.functions_run == 0 && t.cases_skipped > 0 {
            "(no outcomes: timings only)".into()
        } else {
            reasons(&t.reasons)
        },
    ]
}

/// The distinct rules of the runs shown, each once, named by the runs they apply to.
fn rules(reports: &[PortabilityReport]) -> Vec<String> {
    let mut out: Vec<(bool, String)> = Vec::new();
    for r in reports {
        let suite = r.run.source.is_test_suite();
        if !out.iter().any(|(s, text)| *s == suite && *text == r.rule) {
            out.push((suite, r.rule.clone()));
        }
    }
    let both = out.iter().any(|(s, _)| *s) && out.iter().any(|(s, _)| !*s);
    out.into_iter()
        .map(|(suite, text)| match (both, suite) {
            (false, _) => format!("Rule: {text}"),
            (true, true) => format!("Rule (test suites: imported and `mlport pytest` runs): {text}"),
            (true, false) => format!("Rule (live runs): {text}"),
        })
        .collect()
}

/// The overview of several runs (`mlport report overview`): the runs' portability reports,
/// one row per run × framework × target.
pub struct Overview<'a>(pub &'a [PortabilityReport]);

impl Report for Overview<'_> {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self.0, format).as_bytes())
    }
}

/// Renders the overview of `reports` (one per run, in the order given). Ends with a newline.
fn render(reports: &[PortabilityReport], format: Format) -> String {
    match format {
        Format::Table => table(reports),
        Format::Markdown => markdown(reports),
        Format::Json => json(reports),
        Format::Csv => csv(reports),
    }
}

fn table(reports: &[PortabilityReport]) -> String {
    let mut out =
        format!("mlport portability overview — {} run{}\n\n", reports.len(), if reports.len() == 1 { "" } else { "s" });
    let rows: Vec<[String; 14]> = reports.iter().flat_map(|r| r.targets.iter().map(move |t| cells(r, t))).collect();
    if rows.is_empty() {
        out.push_str("No results to report.\n");
    } else {
        let mut t = Grid::new(COLUMNS).right_aligned(&[0, 5, 6, 7, 8, 9, 10, 11, 12]);
        for row in rows {
            t.push(row);
        }
        let _ = writeln!(out, "{}", t.table());
    }
    out.push('\n');
    for rule in rules(reports) {
        let _ = writeln!(out, "{rule}");
    }
    out
}

fn markdown(reports: &[PortabilityReport]) -> String {
    let mut out = format!("# mlport portability overview — {} runs\n\n", reports.len());
    out.push_str(&format!("| {} |\n", COLUMNS.join(" | ")));
    out.push_str("| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for r in reports {
        for t in &r.targets {
            let c: Vec<String> = cells(r, t).iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", c.join(" | "));
        }
    }
    out.push('\n');
    for rule in rules(reports) {
        let _ = writeln!(out, "{}\n", rule.replacen("Rule", "**Rule**", 1));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

fn csv(reports: &[PortabilityReport]) -> String {
    let mut out = Csv::new();
    out.row([
        "run",
        "label",
        "source",
        "machine",
        "framework",
        "device",
        "functions",
        "success",
        "partial",
        "complete_failure",
        "wrong_result",
        "wrong_everywhere",
        "success_percent",
        "partial_percent",
        "complete_failure_percent",
        "cases_passed",
        "cases_unchecked",
        "cases_failed",
        "cases_wrong_result",
        "cases_wrong_everywhere",
        "cases_dtype_changed",
        "cases_not_attributable",
        "cases_skipped",
        "median_latency_ns",
    ]);
    let pct = |t: &TargetSummary, n| t.percent(n).map(|p| format!("{p}")).unwrap_or_default();
    for r in reports {
        for t in &r.targets {
            out.row([
                r.run.id.to_string(),
                r.run.label.clone().unwrap_or_default(),
                r.run.source.to_string(),
                machine(r).to_string(),
                t.framework.to_string(),
                t.device.to_string(),
                t.functions_run.to_string(),
                t.success.to_string(),
                t.partial.to_string(),
                t.complete_failure.to_string(),
                t.wrong_result_functions.to_string(),
                t.wrong_everywhere_functions.to_string(),
                pct(t, t.success),
                pct(t, t.partial),
                pct(t, t.complete_failure),
                t.cases_passed.to_string(),
                t.cases_unchecked.to_string(),
                t.cases_failed.to_string(),
                t.cases_wrong.to_string(),
                t.cases_wrong_everywhere.to_string(),
                t.cases_dtype_changed.to_string(),
                t.cases_not_attributable.to_string(),
                t.cases_skipped.to_string(),
                t.median_latency_ns.map(|v| format!("{v}")).unwrap_or_default(),
            ]);
        }
    }
    out.finish()
}

fn json(reports: &[PortabilityReport]) -> String {
    #[derive(Serialize)]
    struct Row<'a> {
        run: i64,
        label: Option<&'a str>,
        source: RunSource,
        machine: &'a str,
        framework: Framework,
        device: &'a Target,
        functions_run: usize,
        success: usize,
        partial: usize,
        complete_failure: usize,
        success_percent: Option<f64>,
        partial_percent: Option<f64>,
        complete_failure_percent: Option<f64>,
        /// Functions with a case that disagreed with float64 where the reference target agreed.
        wrong_result: usize,
        /// Functions with a case that disagreed with float64 on the reference target itself.
        wrong_everywhere: usize,
        /// Cases whose output came back in another dtype.
        dtype_changed: usize,
        /// Passing cases nothing compared ("ran, unchecked").
        unchecked: usize,
        /// Errors by reason.
        reasons: &'a std::collections::BTreeMap<Reason, usize>,
        median_latency_ns: Option<f64>,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        rows: Vec<Row<'a>>,
        rules: Vec<String>,
    }
    let rows = reports
        .iter()
        .flat_map(|r| {
            r.targets.iter().map(move |t| Row {
                run: r.run.id,
                label: r.run.label.as_deref(),
                source: r.run.source,
                machine: machine(r),
                framework: t.framework,
                device: &t.device,
                functions_run: t.functions_run,
                success: t.success,
                partial: t.partial,
                complete_failure: t.complete_failure,
                success_percent: t.percent(t.success),
                partial_percent: t.percent(t.partial),
                complete_failure_percent: t.percent(t.complete_failure),
                wrong_result: t.wrong_result_functions,
                wrong_everywhere: t.wrong_everywhere_functions,
                dtype_changed: t.cases_dtype_changed,
                unchecked: t.cases_unchecked,
                reasons: &t.reasons,
                median_latency_ns: t.median_latency_ns,
            })
        })
        .collect();
    versioned(JSON_FORMAT, JSON_VERSION, &Body { rows, rules: rules(reports) })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::{devices, results, run_summary};
    use crate::analysis::{ReportOptions, build};

    /// A live run and an imported one.
    pub(crate) fn reports() -> Vec<PortabilityReport> {
        let live = build(&run_summary(), &devices(), &results(), &ReportOptions::default());
        let mut run = run_summary();
        run.id = 9;
        run.origin.source = RunSource::ImportPaper;
        run.origin.label = Some("paper/torch/tpu_vm/tpu".into());
        run.origin.machine = Some("tpu_vm".into());
        let imported = build(&run, &[], &results(), &ReportOptions::default());
        vec![live, imported]
    }

    #[test]
    fn snapshots() {
        let r = reports();
        insta::assert_snapshot!("overview_table", render(&r, Format::Table));
        insta::assert_snapshot!("overview_markdown", render(&r, Format::Markdown));
        insta::assert_snapshot!("overview_csv", render(&r, Format::Csv));
        let json = render(&r, Format::Json);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some(JSON_FORMAT), Some(3)));
        insta::assert_snapshot!("overview_json", json);
    }

    #[test]
    fn percentages_have_two_decimals_and_rules_are_named() {
        let text = render(&reports(), Format::Table);
        assert!(text.contains("1 (33.33%)"), "{text}");
        assert!(text.contains("Rule (live runs):") && text.contains("Rule (test suites"), "{text}");
        let one = render(&reports()[..1], Format::Table);
        assert!(one.contains("\nRule: A function succeeds"), "{one}");
    }
}
