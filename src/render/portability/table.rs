//! The terminal rendering of a portability report: comfy-table with UTF-8 borders, fixed
//! width (no wrapping), numbers right-aligned.

use super::words::{
    FUNCTION_COLUMNS, FUNCTION_NUMERIC, SUMMARY_COLUMNS, SUMMARY_NUMERIC, function_cells, harness_heading, listed,
    notes, summary_cells, target_heading, title, versions,
};
use crate::analysis::PortabilityReport;
use crate::render::grid::Grid;

pub(super) fn report(report: &PortabilityReport) -> String {
    let mut lines = vec![title(report), versions(report), String::new()];
    if report.targets.is_empty() {
        lines.push("No results to report.".into());
    } else {
        let mut table = Grid::new(SUMMARY_COLUMNS).right_aligned_where(&SUMMARY_NUMERIC);
        for t in &report.targets {
            table.push(summary_cells(report, t));
        }
        lines.push(table.table());
    }
    let notes = notes(report);
    if !notes.is_empty() {
        lines.push(String::new());
        lines.extend(notes);
    }
    if !report.harness_errors.is_empty() {
        lines.push(String::new());
        lines.push(format!("{}:", harness_heading(report)));
        for e in &report.harness_errors {
            let first = e.message.lines().next().unwrap_or_default();
            lines.push(format!("  {} on {}: {first}", e.case_key, e.device));
        }
    }
    if !report.flaky.is_empty() {
        lines.push(String::new());
        lines.push(format!("{}:", super::words::FLAKY_HEADING));
        for e in &report.flaky {
            let first = e.message.lines().next().unwrap_or_default();
            lines.push(format!("  {} on {}: {first}", e.case_key, e.device));
        }
    }
    lines.push(String::new());
    lines.push(format!("Rule: {}", report.rule));
    lines.join("\n") + "\n"
}

/// The failing functions per target; `standalone` adds the report's title, versions and rule
/// (left out after the summary, which has them).
pub(super) fn functions(report: &PortabilityReport, standalone: bool) -> String {
    let mut lines = if standalone { vec![title(report), versions(report), String::new()] } else { Vec::new() };
    if report.targets.is_empty() && standalone {
        lines.push("No results to report.".into());
        lines.push(String::new());
    }
    for t in &report.targets {
        lines.push(target_heading(t));
        let mut table = Grid::new(FUNCTION_COLUMNS).right_aligned_where(&FUNCTION_NUMERIC);
        for f in listed(t) {
            table.push(function_cells(f));
        }
        if !table.rows.is_empty() {
            lines.push(table.table());
        }
        lines.push(String::new());
    }
    if standalone {
        lines.push(format!("Rule: {}", report.rule));
    }
    lines.join("\n") + "\n"
}
