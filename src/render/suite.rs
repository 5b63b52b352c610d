//! `mlport report --suite A,B,...`: one suite's runs side by side, one row per test id, one
//! column per run ([`crate::analysis::suite::SuiteTable`]); table, Markdown, CSV, or JSON
//! `{"format": "mlport.suite", "version": 1}`.

use std::io::{self, Write};

use super::Format;
use super::grid::Grid;
use super::report::Report;
use crate::analysis::suite::SuiteTable;

/// The JSON document's version.
pub const JSON_VERSION: u32 = 1;

/// Renders `t` in `format`.
fn render(t: &SuiteTable, format: Format) -> String {
    if format == Format::Json {
        return super::json::versioned("mlport.suite", JSON_VERSION, t);
    }
    let mut head = vec!["test".to_string()];
    head.extend(t.columns.iter().map(|c| format!("{} ({})", c.name, c.targets.join(", "))));
    let mut grid = Grid::new(head);
    for r in &t.rows {
        let mut cells = vec![r.test.clone()];
        cells.extend(r.cells.iter().map(|c| c.clone().unwrap_or_else(|| "—".into())));
        grid.push(cells);
    }
    let counts = |c: &crate::analysis::suite::SuiteColumn| {
        c.outcomes.iter().map(|(o, n)| format!("{n} {o}")).collect::<Vec<_>>().join(", ")
    };
    match format {
        Format::Csv => grid.csv(),
        Format::Markdown => {
            let mut out = format!("# Suite side by side: {} tests, {} in every run\n\n", t.rows.len(), t.in_all);
            out.push_str(&grid.markdown());
            out.push('\n');
            for c in &t.columns {
                out.push_str(&format!("- {} (run {}): {}\n", c.name, c.run, counts(c)));
            }
            out
        }
        _ => {
            let mut out = format!("Suite side by side: {} tests, {} in every run\n", t.rows.len(), t.in_all);
            out.push_str(&grid.table());
            out.push('\n');
            for c in &t.columns {
                out.push_str(&format!("{} (run {}): {}\n", c.name, c.run, counts(c)));
            }
            out.push_str(
                "Tests are matched by id: the nodeid without device tokens (`{device}`) or framework names in \
                 its name or parametrization.\n",
            );
            out
        }
    }
}

/// A suite's runs side by side in every text format.
impl Report for SuiteTable {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}
