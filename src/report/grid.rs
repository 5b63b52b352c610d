//! A titled grid of text cells rendered as a terminal table (comfy-table), GitHub Markdown or
//! CSV (RFC 4180): the shared body of the dtype matrix and the cross-framework table.

use comfy_table::{CellAlignment, Table, presets};

use super::markdown::{escape, row, rule_row};
use super::slowdown::csv_row;

/// Rows of cells under column titles; `right` lists the right-aligned columns.
#[derive(Clone, Debug, Default)]
pub(super) struct Grid {
    pub columns: Vec<String>,
    pub right: Vec<usize>,
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    /// A terminal table; cells may span several lines.
    pub fn table(&self) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED).set_header(self.columns.clone());
        for &i in &self.right {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        for r in &self.rows {
            t.add_row(r.clone());
        }
        format!("{t}\n")
    }

    /// A GFM table: prose escaped, line breaks as `<br>`.
    pub fn markdown(&self) -> String {
        let mut lines = vec![row(&self.columns.iter().map(|c| escape(c)).collect::<Vec<_>>())];
        lines.push(rule_row(&(0..self.columns.len()).map(|i| self.right.contains(&i)).collect::<Vec<_>>()));
        for r in &self.rows {
            lines.push(row(&r.iter().map(|c| escape(c).replace('\n', "<br>")).collect::<Vec<_>>()));
        }
        lines.join("\n") + "\n"
    }

    /// CSV with a header row.
    pub fn csv(&self) -> String {
        let mut out = csv_row(&self.columns);
        for r in &self.rows {
            out.push_str(&csv_row(r));
        }
        out
    }
}
