//! The Markdown rendering of a report (GitHub-flavoured tables), for pull requests,
//! issues and notebooks.

use super::render::{
    FUNCTION_COLUMNS, SUMMARY_COLUMNS, failing_cases, function_cells, harness_heading, not_portable, notes,
    summary_cells, target_heading, title, versions,
};
use super::summary::PortabilityReport;

pub(super) fn report(report: &PortabilityReport) -> String {
    let mut lines =
        vec![format!("# {}", escape(&title(report))), String::new(), escape(&versions(report)), String::new()];
    if report.targets.is_empty() {
        lines.push("No results to report.".into());
    } else {
        lines.push(row(&SUMMARY_COLUMNS));
        lines.push(rule_row(&[false, false, true, true, true, true, true, false, true]));
        lines.extend(report.targets.iter().map(|t| row(&summary_cells(t))));
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
    lines.push(String::new());
    lines.push(format!("**Rule.** {}", escape(&report.rule)));
    lines.join("\n") + "\n"
}

pub(super) fn functions(report: &PortabilityReport) -> String {
    let mut lines =
        vec![format!("# {}", escape(&title(report))), String::new(), escape(&versions(report)), String::new()];
    if report.targets.is_empty() {
        lines.push("No results to report.".into());
        lines.push(String::new());
    }
    for t in &report.targets {
        lines.push(format!("## {}", escape(&target_heading(t))));
        lines.push(String::new());
        let mut rows = not_portable(t).map(|f| {
            let mut cells = function_cells(f);
            cells[0] = code(&cells[0]);
            cells[6] = failing_cases(f).iter().map(|l| escape(l)).collect::<Vec<_>>().join("<br>");
            row(&cells)
        });
        if let Some(first) = rows.next() {
            lines.push(row(&FUNCTION_COLUMNS));
            lines.push(rule_row(&[false, false, true, true, true, false, false]));
            lines.push(first);
            lines.extend(rows);
            lines.push(String::new());
        }
    }
    lines.push(format!("**Rule.** {}", escape(&report.rule)));
    lines.join("\n") + "\n"
}

/// One table row: cells kept on one line, pipes escaped (GFM allows `\|` in code spans too).
/// Cells are either our own words or already wrapped by [`code`].
pub(super) fn row<S: AsRef<str>>(cells: &[S]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.as_ref().replace(['\n', '\r'], " ").replace('|', "\\|")).collect();
    format!("| {} |", cells.join(" | "))
}

/// The delimiter row; `true` right-aligns a column.
pub(super) fn rule_row(right: &[bool]) -> String {
    let cells: Vec<&str> = right.iter().map(|&r| if r { "---:" } else { "---" }).collect();
    format!("| {} |", cells.join(" | "))
}

/// A code span around verbatim text (names, keys, messages), fenced with more
/// backticks than any run inside it.
pub(super) fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Escapes what Markdown would read as markup in prose (emphasis, links, HTML, code).
/// Underscores stay: GFM does not read them as emphasis inside words like `not_implemented`.
/// Pipes are left to [`row`], which escapes them once inside table cells.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '<' | '[' | ']' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("torch.linalg.matrix_norm"), "`torch.linalg.matrix_norm`");
        assert_eq!(code("use `x` here"), "``use `x` here``");
        assert_eq!(row(&[code("a|b"), "x\ny".into()]), "| `a\\|b` | x y |");
        assert_eq!(escape("2*3 [x] <b>"), "2\\*3 \\[x\\] \\<b>");
        // A pipe in a message is escaped once, in the cell: GFM reads `\\|` as a literal pipe.
        assert_eq!(row(&[escape("unsupported operand type(s) for |")]), "| unsupported operand type(s) for \\| |");
    }
}
