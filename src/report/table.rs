//! The terminal rendering of a report: comfy-table with UTF-8 borders, fixed width
//! (no wrapping), numbers right-aligned.

use comfy_table::{CellAlignment, Table, presets};

use super::render::{
    FUNCTION_COLUMNS, SUMMARY_COLUMNS, function_cells, harness_heading, not_portable, notes, summary_cells,
    target_heading, title, versions,
};
use super::summary::PortabilityReport;

pub(super) fn report(report: &PortabilityReport) -> String {
    let mut lines = vec![title(report), versions(report), String::new()];
    if report.targets.is_empty() {
        lines.push("No results to report.".into());
    } else {
        let mut table = new_table(&SUMMARY_COLUMNS, &[2, 3, 4, 5, 6, 8]);
        for t in &report.targets {
            table.add_row(summary_cells(t));
        }
        lines.push(table.to_string());
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
    lines.push(String::new());
    lines.push(format!("Rule: {}", report.rule));
    lines.join("\n") + "\n"
}

pub(super) fn functions(report: &PortabilityReport) -> String {
    let mut lines = vec![title(report), versions(report), String::new()];
    if report.targets.is_empty() {
        lines.push("No results to report.".into());
        lines.push(String::new());
    }
    for t in &report.targets {
        lines.push(target_heading(t));
        let mut table = new_table(&FUNCTION_COLUMNS, &[2, 3, 4]);
        let mut any = false;
        for f in not_portable(t) {
            table.add_row(function_cells(f));
            any = true;
        }
        if any {
            lines.push(table.to_string());
        }
        lines.push(String::new());
    }
    lines.push(format!("Rule: {}", report.rule));
    lines.join("\n") + "\n"
}

fn new_table(columns: &[&str], right_aligned: &[usize]) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::UTF8_FULL_CONDENSED).set_header(columns.to_vec());
    for &i in right_aligned {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}
