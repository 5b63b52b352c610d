//! `mlport audit`'s report ([`crate::audit::AuditReport`]) as a terminal table, Markdown,
//! versioned JSON (`{"format": "mlport.audit", "version": 1}`) or CSV; the footer says what
//! the columns mean and which runs were consulted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::json::pretty;
use super::units;
use crate::audit::{AuditReport, AuditRow};
use crate::model::Reason;

fn reasons_text(r: &BTreeMap<Reason, usize>) -> String {
    r.iter().map(|(k, n)| format!("{} {n}", k.as_str())).collect::<Vec<_>>().join(", ")
}

fn status_text(r: &AuditRow) -> &'static str {
    r.status.map_or("unknown", |s| s.as_str())
}

fn ratio(r: Option<f64>) -> String {
    r.map(units::ratio).unwrap_or_default()
}

/// Renders as `table`, `markdown`, `json` (`mlport.audit` version 1) or `csv`.
pub fn render(r: &AuditReport, format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::Json => {
            let v = serde_json::json!({"format": "mlport.audit", "version": 1, "summary": r.summary(), "audit": r});
            out = pretty(&v);
        }
        Format::Csv => {
            // `reasons` and `run` are quoted on every row, as the audit CSV always wrote them.
            const QUOTED: [usize; 2] = [5, 7];
            let mut csv = Csv::crlf();
            csv.row(["function", "framework", "calls", "files", "status", "reasons", "slowdown", "run"]);
            for row in &r.rows {
                csv.row_quoting(
                    &[
                        row.function.clone(),
                        row.framework.to_string(),
                        row.calls.to_string(),
                        row.files.to_string(),
                        status_text(row).to_string(),
                        reasons_text(&row.reasons),
                        row.slowdown.map(|s| format!("{s:.3}")).unwrap_or_default(),
                        row.run.clone().unwrap_or_default(),
                    ],
                    &QUOTED,
                );
            }
            for u in &r.unresolved {
                let (calls, files) = (u.calls.to_string(), u.files.to_string());
                csv.row_quoting(&[u.name.as_str(), "", &calls, &files, "unresolved", "", "", ""], &QUOTED);
            }
            out = csv.finish();
        }
        Format::Markdown => {
            let _ = writeln!(out, "**{}**\n", r.summary());
            out.push_str("| function | calls | files | status | reasons | slowdown | run |\n| --- | ---: | ---: | --- | --- | ---: | --- |\n");
            for row in &r.rows {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} | {} | {} |",
                    row.function,
                    row.calls,
                    row.files,
                    status_text(row).replace('_', " "),
                    reasons_text(&row.reasons),
                    ratio(row.slowdown),
                    row.run.clone().unwrap_or_default()
                );
            }
            let _ = writeln!(out, "\n{}", footer(r));
        }
        Format::Table => {
            let _ = writeln!(out, "{}", r.summary());
            let mut t =
                Grid::new(["function", "calls", "files", &format!("on {}", r.device), "reasons", "slowdown", "run"]);
            for row in &r.rows {
                t.push([
                    row.function.clone(),
                    row.calls.to_string(),
                    row.files.to_string(),
                    status_text(row).to_string(),
                    reasons_text(&row.reasons),
                    ratio(row.slowdown),
                    row.run.clone().unwrap_or_default(),
                ]);
            }
            let _ = writeln!(out, "{}", t.table());
            let _ = writeln!(out, "{}", footer(r));
        }
    }
    out
}

/// What the columns mean, where the numbers come from, and the unresolved method calls.
fn footer(r: &AuditReport) -> String {
    let mut s = format!(
        "Status: device-attributable against {} (the runs' own rule). Slowdown: median steady-state latency on {} \
         over {}, both timed on one machine (timed calls after each case's first: per timed block in mlport's runs, \
         per timed call in imported data); blank where no run timed the function so on both. Runs consulted: {}.",
        r.reference,
        r.device,
        r.reference,
        if r.runs.is_empty() { "none".to_string() } else { r.runs.join(", ") }
    );
    if !r.unresolved.is_empty() {
        let _ = write!(
            s,
            "\nNot counted above: calls the scan could not resolve, each possibly of a framework function: methods \
             of receivers it could not type (`?.reshape`) and names a star import may bind (`torch.sqrt?`): {}; \
             `mlport scan` lists their lines.",
            r.unresolved_examples(10)
        );
    }
    s
}
