//! The Markdown rendering of a portability report (GitHub-flavoured tables), for pull
//! requests, issues and notebooks.

use super::words::{
    FUNCTION_COLUMNS, FUNCTION_NUMERIC, SUMMARY_COLUMNS, SUMMARY_NUMERIC, failing_cases, function_cells,
    harness_heading, listed, notes, summary_cells, target_heading, title, versions,
};
use crate::analysis::PortabilityReport;
use crate::render::markdown::{code, escape, row, rule_row};

pub(super) fn report(report: &PortabilityReport) -> String {
    let mut lines =
        vec![format!("# {}", escape(&title(report))), String::new(), escape(&versions(report)), String::new()];
    if report.targets.is_empty() {
        lines.push("No results to report.".into());
    } else {
        lines.push(row(&SUMMARY_COLUMNS));
        lines.push(rule_row(&SUMMARY_NUMERIC));
        lines.extend(report.targets.iter().map(|t| row(&summary_cells(report, t))));
    }
    let notes = notes(report);
    if !notes.is_empty() {
        lines.push(String::new());
        lines.extend(notes.iter().map(|n| format!("- {}", escape(n))));
    }
    if !report.harness_errors.is_empty() {
        lines.push(String::new());
        lines.push(format!("## {}", harness_heading(report)));
        lines.push(String::new());
        lines.push(row(&["case", "device", "message"]));
        lines.push(rule_row(&[false, false, false]));
        for e in &report.harness_errors {
            lines.push(row(&[code(&e.case_key), e.device.to_string(), code(&e.message)]));
        }
    }
    if !report.flaky.is_empty() {
        lines.push(String::new());
        lines.push(format!("## {}", super::words::FLAKY_HEADING));
        lines.push(String::new());
        lines.push(row(&["case", "device", "message"]));
        lines.push(rule_row(&[false, false, false]));
        for e in &report.flaky {
            lines.push(row(&[code(&e.case_key), e.device.to_string(), code(&e.message)]));
        }
    }
    lines.push(String::new());
    lines.push(format!("**Rule.** {}", escape(&report.rule)));
    lines.join("\n") + "\n"
}

/// The failing functions per target; `standalone` adds the report's title, versions and rule
/// (left out after the summary, which has them).
pub(super) fn functions(report: &PortabilityReport, standalone: bool) -> String {
    let mut lines = if standalone {
        vec![format!("# {}", escape(&title(report))), String::new(), escape(&versions(report)), String::new()]
    } else {
        Vec::new()
    };
    if report.targets.is_empty() && standalone {
        lines.push("No results to report.".into());
        lines.push(String::new());
    }
    for t in &report.targets {
        lines.push(format!("## {}", escape(&target_heading(t))));
        lines.push(String::new());
        let mut rows = listed(t).map(|f| {
            let mut cells = function_cells(f);
            cells[0] = code(&cells[0]);
            cells[9] = failing_cases(f).iter().map(|l| escape(l)).collect::<Vec<_>>().join("<br>");
            row(&cells)
        });
        if let Some(first) = rows.next() {
            lines.push(row(&FUNCTION_COLUMNS));
            lines.push(rule_row(&FUNCTION_NUMERIC));
            lines.push(first);
            lines.extend(rows);
            lines.push(String::new());
        }
    }
    if standalone {
        lines.push(format!("**Rule.** {}", escape(&report.rule)));
    }
    lines.join("\n") + "\n"
}
