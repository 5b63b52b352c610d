//! The wording every human-readable rendering of a portability report shares (title,
//! versions line, cells, notes, headings), so the table and Markdown agree.

use crate::analysis::{Attribution, FunctionSummary, PortabilityReport, TargetSummary};
use crate::model::RunSource;
use crate::model::{Framework, FunctionStatus};
use crate::render::units::{count_of, latency, plural, reasons};

/// The report's title line.
pub(crate) fn title(report: &PortabilityReport) -> String {
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
pub(crate) fn versions(report: &PortabilityReport) -> String {
    let r = &report.run;
    let python = if r.python_version.is_empty() { "unknown" } else { &r.python_version };
    let mut parts = vec![format!("python {python}")];
    parts.extend(r.frameworks.iter().map(|(f, v)| {
        let own = match v {
            // JAX's 64-bit mode changes what an int64 or float64 case means: always said.
            Some(v) if *f == Framework::Jax && r.source == RunSource::Live => {
                format!("{f} {v} (jax_enable_x64 {})", if r.jax_x64 { "on" } else { "off" })
            }
            Some(v) => format!("{f} {v}"),
            None if report.not_usable.contains_key(f) || r.source == RunSource::Live => format!("{f} not importable"),
            None => format!("{f} version unknown"),
        };
        // A device that ran another stack says its own versions (torch on xla:0).
        let others: Vec<String> = r
            .device_stacks
            .iter()
            .filter(|d| d.framework == *f)
            .map(|d| format!("{} ran {}", d.device, d.versions))
            .collect();
        if others.is_empty() { own } else { format!("{own} ({})", others.join("; ")) }
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

/// Column titles of the summary table: the paper's statuses, then what failed by reason, the
/// answers that disagree with float64 (the device's or everywhere), the silent dtype changes.
pub(crate) const SUMMARY_COLUMNS: [&str; 12] = [
    "framework",
    "device",
    "functions",
    "success",
    "partial",
    "complete failure",
    "failure reasons",
    "wrong (device)",
    "wrong (everywhere)",
    "dtype changed",
    "unchecked cases",
    "median latency",
];

/// Which [`SUMMARY_COLUMNS`] are numbers (right-aligned).
pub(crate) const SUMMARY_NUMERIC: [bool; 12] =
    [false, false, true, true, true, true, false, true, true, true, true, true];

/// Column titles of a per-function detail table.
pub(crate) const FUNCTION_COLUMNS: [&str; 10] = [
    "function",
    "status",
    "passed",
    "unchecked",
    "failed",
    "wrong (device)",
    "wrong (everywhere)",
    "dtype changed",
    "failure reasons",
    "failing cases (dtype [case]: reason — message)",
];

/// Which [`FUNCTION_COLUMNS`] are numbers (right-aligned).
pub(crate) const FUNCTION_NUMERIC: [bool; 10] = [false, false, true, true, true, true, true, true, false, false];

/// The cells of a target's summary row, in [`SUMMARY_COLUMNS`] order. `failure reasons` lists
/// the errors; `wrong (device)` counts the functions with a case that disagreed with float64
/// where the reference target agreed, `wrong (everywhere)` those that disagreed on the reference
/// target itself; `dtype changed` counts cases, and names JAX's x64 default where it explains
/// them; `unchecked cases` the passing cases nothing compared.
pub(crate) fn summary_cells(report: &PortabilityReport, t: &TargetSummary) -> [String; 12] {
    [
        t.framework.to_string(),
        t.device.to_string(),
        t.functions_run.to_string(),
        count_percent(t, t.success),
        count_percent(t, t.partial),
        count_percent(t, t.complete_failure),
        reasons(&t.reasons),
        count_percent(t, t.wrong_result_functions),
        count_percent(t, t.wrong_everywhere_functions),
        dtype_changed(report, t),
        t.cases_unchecked.to_string(),
        t.median_latency_ns.map_or_else(|| "—".to_string(), latency),
    ]
}

/// The `dtype changed` cell: cases, with `(x64 off)` on a live JAX run's reference-device row when
/// the run left JAX's 64-bit types off, which makes every float64 and int64 request 32-bit.
pub(crate) fn dtype_changed(report: &PortabilityReport, t: &TargetSummary) -> String {
    // On another device the x64 default's changes are excused (they happen on the reference too):
    // those counted there are the device's, so the label is the reference device's row only.
    let x64_off = t.framework == Framework::Jax
        && report.run.source == RunSource::Live
        && !report.run.jax_x64
        && t.device == report.reference;
    if x64_off && t.cases_dtype_changed > 0 {
        format!("{} (x64 off)", t.cases_dtype_changed)
    } else {
        t.cases_dtype_changed.to_string()
    }
}

/// The cells of a function's detail row, in [`FUNCTION_COLUMNS`] order: `unchecked` counts
/// the passing cases nothing compared, `failed` the cases that raised (or timed out, or
/// crashed), then the wrong results (device, everywhere) and the dtype changes.
pub(crate) fn function_cells(f: &FunctionSummary) -> [String; 10] {
    [
        f.name.clone(),
        f.status.map_or("not run", FunctionStatus::as_str).replace('_', " "),
        f.passed.to_string(),
        f.unchecked.to_string(),
        f.failed.to_string(),
        f.wrong.to_string(),
        f.wrong_everywhere.to_string(),
        f.dtype_changed.to_string(),
        reasons(&f.reasons),
        failing_cases(f).join("\n"),
    ]
}

/// One line per listed case: `bfloat16 [square] #12: dtype_unsupported — message` (`#12` is the
/// result id `mlport repro` takes); a case on the reference target itself says `(everywhere)`
/// after its reason, an excused one listed on request `(not attributable)`; the counted cases
/// come first, each group in planned order.
pub(crate) fn failing_cases(f: &FunctionSummary) -> Vec<String> {
    // The counted cases first (what makes the status), then those listed but not counted.
    let mut cases: Vec<&crate::analysis::CaseFailure> = f.failures.iter().collect();
    cases.sort_by_key(|c| c.everywhere || c.not_attributable);
    cases
        .into_iter()
        .map(|c| {
            let id = if c.result_id > 0 { format!(" #{}", c.result_id) } else { String::new() };
            let everywhere = match (c.everywhere, c.not_attributable) {
                (true, _) => " (everywhere)",
                (_, true) => " (not attributable)",
                _ => "",
            };
            format!(
                "{} [{}]{id}: {}{everywhere} — {}",
                crate::model::name_or_empty(c.dtype),
                c.case_id,
                c.reason,
                c.message
            )
        })
        .collect()
}

/// `n` and its share of the functions run, e.g. `12 (80.0%)`.
pub(crate) fn count_percent(t: &TargetSummary, n: usize) -> String {
    count_of(n, t.functions_run)
}

/// Lines about what was not counted: unavailable devices, frameworks that are not
/// usable, then per target the failing
/// cases not attributable to the device and the skipped cases.
pub(crate) fn notes(report: &PortabilityReport) -> Vec<String> {
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

/// `3 of 40 passing cases ran unchecked (...)`: passes nothing compared (docs/catalogue.md,
/// "References").
pub(crate) fn unchecked(t: &TargetSummary) -> String {
    format!(
        "{} of {} ran unchecked (nothing to compare the answer with) — counted as passes",
        t.cases_unchecked,
        plural(t.cases_passed, "passing case")
    )
}

/// The heading of a target in the per-function detail.
pub(crate) fn target_heading(t: &TargetSummary) -> String {
    let run = plural(t.functions_run, "function");
    let what = match (t.functions_run, not_portable(t).count()) {
        (0, _) => "no function ran".to_string(),
        (_, 0) => format!("{run} run, all succeed"),
        (_, bad) => format!("{bad} of {run} not fully portable"),
    };
    // Listed below too: functions that succeed with a case listed but not counted.
    let noted = listed(t).count() - not_portable(t).count();
    let noted = match noted {
        0 => String::new(),
        n => format!(
            "; {} listed with a case not counted (wrong or dtype changed on the reference device itself, or excused)",
            plural(n, "more function")
        ),
    };
    let unchecked = if t.cases_unchecked > 0 { format!("; {}", unchecked(t)) } else { String::new() };
    format!("{} on {}: {what}{noted}{unchecked}", t.framework, t.device)
}

/// A target's partial and complete failures, in planned order.
pub(crate) fn not_portable(t: &TargetSummary) -> impl Iterator<Item = &FunctionSummary> {
    t.functions.iter().filter(|f| is_not_portable(f))
}

/// Whether a function is partial or a complete failure.
fn is_not_portable(f: &FunctionSummary) -> bool {
    matches!(f.status, Some(FunctionStatus::Partial | FunctionStatus::CompleteFailure))
}

/// The functions the per-function detail lists, in planned order: the partial and complete
/// failures, and the functions that succeed with a case listed but not counted (a wrong answer
/// or dtype change on the reference target itself).
pub(crate) fn listed(t: &TargetSummary) -> impl Iterator<Item = &FunctionSummary> {
    t.functions.iter().filter(|f| is_not_portable(f) || !f.failures.is_empty())
}

/// The heading over the harness error list: mlport's own bugs for live runs, the test
/// harness's (e.g. the paper's timer) for test suites.
/// The heading of the flaky list.
pub(crate) const FLAKY_HEADING: &str =
    "Flaky tests (passed and failed within one session, never counted against the device)";

pub(crate) fn harness_heading(report: &PortabilityReport) -> &'static str {
    if report.run.source.is_test_suite() {
        "Harness errors (bugs of the test harness, never counted against a framework)"
    } else {
        "Harness errors (mlport's own bugs, never counted against a framework)"
    }
}
