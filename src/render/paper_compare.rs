//! `mlport report --paper-compare`: the paper's PyTorch TPU v3 statuses beside today's `xla:0`
//! ([`crate::analysis::paper_compare`]) as a table, Markdown, CSV or versioned JSON
//! (`{"format": "mlport.paper_compare", "version": 1}`).

use std::io::{self, Write};

use std::fmt::Write as _;

use serde::Serialize;

use super::Format;
use super::grid::Grid;
use super::json::versioned;
use super::markdown::escape;
use super::report::Report;
use crate::analysis::paper_compare::{PaperCompare, Side};

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.paper_compare";
/// Its version.
pub const JSON_VERSION: u32 = 1;

fn status(side: &Option<Side>) -> String {
    match side.as_ref().and_then(|s| s.status) {
        Some(s) => s.as_str().to_string(),
        None => "—".into(),
    }
}

fn reasons(side: &Option<Side>) -> String {
    let Some(s) = side else { return String::new() };
    s.reasons.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", ")
}

fn grid(rep: &PaperCompare) -> Grid {
    let mut g = Grid::new([
        "function",
        "TPU v3 (2023)",
        "reasons then",
        &format!("{} today", rep.today_device),
        "reasons now",
        "change",
    ]);
    for r in &rep.rows {
        g.push([
            r.function.clone(),
            status(&r.then),
            reasons(&r.then),
            status(&r.now),
            reasons(&r.now),
            r.change.as_str().to_string(),
        ]);
    }
    g
}

/// The counts in one sentence.
fn summary(rep: &PaperCompare) -> String {
    format!(
        "Of the {} functions that failed (partly or completely) on TPU v3 in the paper's data, {} still fail on {}, \
         {} now run but fall back to the host for an operator (silent_fallback), {} are fixed and {} could not be \
         compared (not in today's run); {} that passed then fail now.",
        rep.failed_then,
        rep.still_fails,
        rep.today_device,
        rep.now_falls_back,
        rep.fixed,
        rep.not_compared,
        rep.newly_fails
    )
}

const RULE: &str = "Statuses by the paper's definitions, each run counted device-attributably by its own rule (the \
    paper's: a test counts unless its CPU copy failed too; today's: a case counts only if it passed on cpu). \
    now_falls_back: every counted failure today is silent_fallback. Functions are matched by catalogue name.";

/// Renders the comparison.
fn render(rep: &PaperCompare, format: Format) -> String {
    match format {
        Format::Json => {
            #[derive(Serialize)]
            struct Body<'a> {
                #[serde(flatten)]
                rep: &'a PaperCompare,
                rule: &'a str,
            }
            versioned(JSON_FORMAT, JSON_VERSION, &Body { rep, rule: RULE })
        }
        Format::Csv => grid(rep).csv(),
        Format::Table | Format::Markdown => {
            let md = format == Format::Markdown;
            let title = format!(
                "The paper then and now: PyTorch on TPU v3 (run {}) vs {} today (run {})",
                rep.paper_run, rep.today_device, rep.today_run
            );
            let mut out = String::new();
            if md {
                let _ = writeln!(out, "# {}\n\n{}\n", escape(&title), escape(&rep.today_detail));
                let _ = writeln!(out, "{}\n", escape(&summary(rep)));
                out.push_str(&grid(rep).markdown());
                let _ = writeln!(out, "\n{}", escape(RULE));
            } else {
                let _ = writeln!(out, "{title}\n{}\n{}\n", rep.today_detail, summary(rep));
                out.push_str(&grid(rep).table());
                let _ = writeln!(out, "\n\nRule: {RULE}");
            }
            out
        }
    }
}

/// The paper, then and now in every text format.
impl Report for PaperCompare {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_snapshot() {
        let rep = crate::analysis::paper_compare::tests_support::example();
        insta::assert_snapshot!("paper_compare_table", render(&rep, Format::Table));
        insta::assert_snapshot!("paper_compare_markdown", render(&rep, Format::Markdown));
        insta::assert_snapshot!("paper_compare_csv", render(&rep, Format::Csv));
        insta::assert_snapshot!("paper_compare_json", render(&rep, Format::Json));
    }
}
