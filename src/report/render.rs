//! Picks a renderer for a [`PortabilityReport`] and holds the wording every
//! human-readable format shares (header, cells, notes), so table and Markdown agree.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::summary::{Attribution, FunctionSummary, PortabilityReport, TargetSummary};
use super::{json, markdown, overview, table};
use crate::model::{FunctionStatus, Reason};
use crate::store::RunSource;

/// An output format for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A terminal table (comfy-table, UTF-8 borders).
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Versioned JSON (`{"format": "mlport.portability", "version": 1, ...}`).
    Json,
    /// CSV (RFC 4180) for spreadsheets and DuckDB: the overview's rows, or per function.
    Csv,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Format::Table),
            "markdown" | "md" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            _ => Err(format!("unknown report format `{s}` (expected table, markdown, json or csv)")),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Table => "table",
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Csv => "csv",
        })
    }
}

/// The summary: one row per (framework, device), then unavailable devices, harness
/// errors and the counting rule. Ends with a newline.
pub fn render(report: &PortabilityReport, format: Format) -> String {
    match format {
        Format::Table => table::report(report),
        Format::Markdown => markdown::report(report),
        Format::Json => json::report(report),
        Format::Csv => overview::render(std::slice::from_ref(report), Format::Csv),
    }
}

/// Per-function detail: for each target, the functions that are partial or complete
/// failures, with their failure reasons. Ends with a newline.
pub fn render_functions(report: &PortabilityReport, format: Format) -> String {
    match format {
        Format::Table => table::functions(report),
        Format::Markdown => markdown::functions(report),
        Format::Json => json::functions(report),
        Format::Csv => overview::functions_csv(report),
    }
}

/// The summary followed by the per-function detail; in JSON one document holding both
/// (`mlport.portability.bundle`), so the output stays a single parseable value.
pub fn render_with_functions(report: &PortabilityReport, format: Format) -> String {
    match format {
        Format::Json => json::bundle(report),
        _ => render(report, format) + &render_functions(report, format),
    }
}

/// The report's title line.
pub(super) fn title(report: &PortabilityReport) -> String {
    let r = &report.run;
    if r.source == RunSource::Live && r.label.is_none() {
        return format!(
            "mlport portability report — run {} on {}, started {} ({}), mlport {}",
            r.id, r.host, r.started_at, r.state, r.mlport_version
        );
    }
    let label = r.label.as_ref().map(|l| format!(" {l}")).unwrap_or_default();
    let machine = r.machine.as_deref().unwrap_or(&r.host);
    let started = if r.started_at.is_empty() { "unknown" } else { &r.started_at };
    format!(
        "mlport portability report — run {}{label} ({}) on {machine}, started {started} ({}), mlport {}",
        r.id, r.source, r.state, r.mlport_version
    )
}

/// Python, framework and catalogue versions, seed and reference device on one line.
pub(super) fn versions(report: &PortabilityReport) -> String {
    let r = &report.run;
    let python = if r.python_version.is_empty() { "unknown" } else { &r.python_version };
    let mut parts = vec![format!("python {python}")];
    parts.extend(r.frameworks.iter().map(|(f, v)| match v {
        Some(v) => format!("{f} {v}"),
        None if report.not_usable.contains_key(f) || r.source == RunSource::Live => format!("{f} not importable"),
        None => format!("{f} version unknown"),
    }));
    if !r.catalogue_version.is_empty() {
        let cat: Vec<String> = r.catalogue_version.iter().map(|(f, v)| format!("{f} {v}")).collect();
        parts.push(format!("catalogue {}", cat.join(", ")));
    }
    parts.push(format!("seed {}", r.seed));
    let attribution = if report.attributable { "" } else { " (attribution off)" };
    parts.push(format!("reference {}{attribution}", report.reference));
    parts.join(" · ")
}

/// Column titles of the summary table.
pub(super) const SUMMARY_COLUMNS: [&str; 9] = [
    "framework",
    "device",
    "functions",
    "success",
    "partial",
    "complete failure",
    "wrong result",
    "failure reasons",
    "median latency",
];

/// Column titles of a per-function detail table.
pub(super) const FUNCTION_COLUMNS: [&str; 7] = [
    "function",
    "status",
    "passed",
    "failed",
    "wrong result",
    "failure reasons",
    "failing cases (dtype [case]: reason — message)",
];

/// The cells of a target's summary row, in [`SUMMARY_COLUMNS`] order. `wrong result` counts
/// the functions with a case that ran but disagreed with its reference; `failure reasons`
/// lists the errors only.
pub(super) fn summary_cells(t: &TargetSummary) -> [String; 9] {
    [
        t.framework.to_string(),
        t.device.to_string(),
        t.functions_run.to_string(),
        count_percent(t, t.success),
        count_percent(t, t.partial),
        count_percent(t, t.complete_failure),
        count_percent(t, t.wrong_result_functions),
        reasons(&t.reasons),
        t.median_latency_ns.map_or_else(|| "—".to_string(), latency),
    ]
}

/// The cells of a function's detail row, in [`FUNCTION_COLUMNS`] order: `failed` counts the
/// cases that raised (or timed out, or crashed), `wrong result` those that disagreed.
pub(super) fn function_cells(f: &FunctionSummary) -> [String; 7] {
    [
        f.name.clone(),
        f.status.map_or("not run", FunctionStatus::as_str).replace('_', " "),
        f.passed.to_string(),
        f.failed.to_string(),
        f.wrong.to_string(),
        reasons(&f.reasons),
        failing_cases(f).join("\n"),
    ]
}

/// One line per counted failing case: `bfloat16 [square] #12: dtype_unsupported — message` (`#12`
/// is the result id `mlport repro` takes).
pub(super) fn failing_cases(f: &FunctionSummary) -> Vec<String> {
    f.failures
        .iter()
        .map(|c| {
            let id = if c.result_id > 0 { format!(" #{}", c.result_id) } else { String::new() };
            format!("{} [{}]{id}: {} — {}", c.dtype, c.case_id, c.reason, c.message)
        })
        .collect()
}

/// `n` and its share of the functions run, e.g. `12 (80.0%)`.
pub(super) fn count_percent(t: &TargetSummary, n: usize) -> String {
    count_of(n, t.functions_run)
}

/// `n` and its share of `of`, e.g. `12 (80.0%)`; `n` alone when `of` is 0.
pub(super) fn count_of(n: usize, of: usize) -> String {
    match super::summary::percent_of(n, of) {
        Some(p) => format!("{n} ({p:.1}%)"),
        None => n.to_string(),
    }
}

/// Failure reasons, most frequent first, e.g. `dtype_unsupported 12, api_missing 3`; `—` when none.
/// `wrong_result` is left out: it is not an error and has its own column.
pub(super) fn reasons(reasons: &BTreeMap<Reason, usize>) -> String {
    let mut sorted: Vec<(&Reason, &usize)> = reasons.iter().filter(|(r, _)| **r != Reason::WrongResult).collect();
    if sorted.is_empty() {
        return "—".into();
    }
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    sorted.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", ")
}

/// A duration in ns in human units with three significant digits: `850 ns`, `12.3 µs`, `4.56 ms`, `1.20 s`.
pub fn latency(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        return format!("{ns:.0} ns");
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value < 10.0 {
        2
    } else if value < 100.0 {
        1
    } else {
        0
    };
    format!("{value:.digits$} {unit}")
}

/// Lines about what was not counted: unavailable devices, frameworks that are not
/// usable, then per target the failing
/// cases not attributable to the device and the skipped cases.
pub(super) fn notes(report: &PortabilityReport) -> Vec<String> {
    let mut lines: Vec<String> = report.run.notes.clone();
    lines.extend(report.unavailable.iter().map(|d| {
        let detail = if d.detail.is_empty() { String::new() } else { format!(" ({})", d.detail) };
        format!("{}: unavailable to {}{detail} — not counted", d.device, d.framework)
    }));
    for fw in &report.without_reference {
        lines.push(format!(
            "{fw}: no result on the reference {}, so failures cannot be attributed — every failure is counted",
            report.reference
        ));
    }
    for (fw, error) in &report.not_usable {
        let first = error.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        lines.push(format!("{fw}: not usable ({first}) — its functions did not run"));
    }
    for t in &report.targets {
        let mut parts = Vec::new();
        if t.cases_not_attributable > 0 {
            let why = match report.attribution {
                Attribution::ReferencePassed => "did not pass on",
                Attribution::ReferenceNotFailed => "failed on",
            };
            parts.push(format!(
                "{} not attributable ({why} {})",
                plural(t.cases_not_attributable, "failing case"),
                report.reference
            ));
        }
        if t.cases_skipped > 0 {
            parts.push(format!("{} skipped", plural(t.cases_skipped, "case")));
        }
        if !parts.is_empty() {
            lines.push(format!("{} on {}: {} — not counted", t.framework, t.device, parts.join(", ")));
        }
    }
    lines
}

/// The heading of a target in the per-function detail.
pub(super) fn target_heading(t: &TargetSummary) -> String {
    let run = plural(t.functions_run, "function");
    let what = match (t.functions_run, not_portable(t).count()) {
        (0, _) => "no function ran".to_string(),
        (_, 0) => format!("{run} run, all succeed"),
        (_, bad) => format!("{bad} of {run} not fully portable"),
    };
    format!("{} on {}: {what}", t.framework, t.device)
}

/// A target's partial and complete failures, in planned order.
pub(super) fn not_portable(t: &TargetSummary) -> impl Iterator<Item = &FunctionSummary> {
    t.functions.iter().filter(|f| matches!(f.status, Some(FunctionStatus::Partial | FunctionStatus::CompleteFailure)))
}

/// The heading over the harness error list: mlport's own bugs for live runs, the test
/// harness's (e.g. the paper's timer) for test suites.
pub(super) fn harness_heading(report: &PortabilityReport) -> &'static str {
    if report.run.source.is_test_suite() {
        "Harness errors (bugs of the test harness, never counted against a framework)"
    } else {
        "Harness errors (mlport's own bugs, never counted against a framework)"
    }
}

/// `1 case`, `3 cases`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("{n} {noun}") } else { format!("{n} {noun}s") }
}

#[cfg(test)]
mod tests {
    use super::super::summary::tests::{devices, report, results, run_summary};
    use super::super::summary::{ReportOptions, build};
    use super::*;

    #[test]
    fn table_snapshot() {
        insta::assert_snapshot!("table", render(&report(), Format::Table));
        insta::assert_snapshot!("table_functions", render_functions(&report(), Format::Table));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!("markdown", render(&report(), Format::Markdown));
        insta::assert_snapshot!("markdown_functions", render_functions(&report(), Format::Markdown));
    }

    #[test]
    fn json_snapshot() {
        let text = render(&report(), Format::Json);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some("mlport.portability"), Some(1)));
        insta::assert_snapshot!("json", text);
        let text = render_functions(&report(), Format::Json);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["format"], "mlport.portability.functions");
        insta::assert_snapshot!("json_functions", text);
        // With --functions, JSON stays one document: the two above, bundled.
        let bundle: serde_json::Value = serde_json::from_str(&render_with_functions(&report(), Format::Json)).unwrap();
        assert_eq!(bundle["format"], "mlport.portability.bundle");
        assert_eq!(
            bundle["summary"],
            serde_json::from_str::<serde_json::Value>(&render(&report(), Format::Json)).unwrap()
        );
        assert_eq!(bundle["functions"]["format"], "mlport.portability.functions");
    }

    #[test]
    fn unattributed_table_snapshot() {
        let opts = ReportOptions { attributable: false, ..Default::default() };
        let report = build(&run_summary(), &devices(), &results(), &opts);
        insta::assert_snapshot!("table_unattributed", render(&report, Format::Table));
    }

    #[test]
    fn imported_run_table_snapshot() {
        let mut run = run_summary();
        run.origin = crate::store::RunOrigin {
            source: RunSource::ImportPaper,
            label: Some("paper/torch/tpu_vm/tpu".into()),
            machine: Some("tpu_vm".into()),
            notes: vec![
                "imported from the paper's data: 3 sessions merged (tpu_1.json, tpu_2.json, tpu_3.json)".into(),
            ],
        };
        run.info.python_version = String::new();
        run.info.frameworks.get_mut(&crate::model::Framework::Torch).unwrap().version = None;
        let report = build(&run, &devices(), &results(), &ReportOptions::default());
        let text = render(&report, Format::Table);
        assert!(text.contains("torch version unknown") && text.contains("python unknown"), "{text}");
        assert!(text.contains("not attributable (failed on cpu)"), "{text}");
        insta::assert_snapshot!("table_imported", text);
        let json = render(&report, Format::Json);
        assert!(json.contains("\"source\": \"import:paper\"") && json.contains("\"machine\": \"tpu_vm\""), "{json}");
    }

    #[test]
    fn every_format_ends_with_the_rule() {
        let report = report();
        for format in [Format::Table, Format::Markdown, Format::Json] {
            for text in [render(&report, format), render_functions(&report, format)] {
                let tail: String = text.lines().rev().take(3).collect();
                assert!(tail.contains(&report.rule), "{format}: {text}");
            }
        }
    }

    #[test]
    fn an_empty_run_renders() {
        let report = build(&run_summary(), &[], &[], &ReportOptions::default());
        for format in [Format::Table, Format::Markdown, Format::Json] {
            assert!(render(&report, format).contains(&report.rule));
            assert!(render_functions(&report, format).contains(&report.rule));
        }
        assert!(render(&report, Format::Table).contains("No results to report."));
    }

    #[test]
    fn latency_units() {
        assert_eq!(latency(850.0), "850 ns");
        assert_eq!(latency(12_345.0), "12.3 µs");
        assert_eq!(latency(4_561_000.0), "4.56 ms");
        assert_eq!(latency(123_400_000.0), "123 ms");
        assert_eq!(latency(1.2e9), "1.20 s");
    }

    #[test]
    fn reasons_most_frequent_first() {
        let r = BTreeMap::from([(Reason::NotImplemented, 1), (Reason::DtypeUnsupported, 12), (Reason::ApiMissing, 3)]);
        assert_eq!(reasons(&r), "dtype_unsupported 12, api_missing 3, not_implemented 1");
        assert_eq!(reasons(&BTreeMap::new()), "—");
    }

    #[test]
    fn formats_parse() {
        assert_eq!("md".parse::<Format>(), Ok(Format::Markdown));
        for f in [Format::Table, Format::Markdown, Format::Json, Format::Csv] {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert!("html".parse::<Format>().is_err());
    }
}
