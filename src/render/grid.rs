//! A titled grid of text cells rendered as a terminal table (comfy-table, UTF-8 borders,
//! condensed, no wrapping), GitHub Markdown or CSV ([`super::csv`]): every table mlport
//! prints is one.

use comfy_table::{CellAlignment, Table, presets};

use super::csv::Csv;
use super::markdown::{escape, row, rule_row};

/// Rows of cells under column titles; `right` lists the right-aligned columns (0-based).
/// Serialised (`columns`, `right`, `rows`) for the HTML pages' `grid` macro.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Grid {
    /// The column titles.
    pub columns: Vec<String>,
    /// The right-aligned columns.
    pub right: Vec<usize>,
    /// The rows, each as many cells as there are columns; a cell may span several lines.
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    /// An empty grid under `columns`.
    pub fn new<I, S>(columns: I) -> Grid
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Grid { columns: columns.into_iter().map(Into::into).collect(), right: Vec::new(), rows: Vec::new() }
    }

    /// The grid with `columns` right-aligned.
    pub fn right_aligned(mut self, columns: &[usize]) -> Grid {
        self.right = columns.to_vec();
        self
    }

    /// Right-aligns the columns whose flag is set (one flag per column, as Markdown's
    /// [`crate::render::markdown::rule_row`] takes them).
    pub fn right_aligned_where(self, numeric: &[bool]) -> Grid {
        let columns: Vec<usize> = numeric.iter().enumerate().filter(|(_, n)| **n).map(|(i, _)| i).collect();
        self.right_aligned(&columns)
    }

    /// Appends a row.
    pub fn push<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// A terminal table, without a trailing newline; cells may span several lines.
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
        t.to_string()
    }

    /// A GFM table: prose escaped, line breaks as `<br>`. Ends with a newline.
    pub fn markdown(&self) -> String {
        let mut lines = vec![row(&self.columns.iter().map(|c| escape(c)).collect::<Vec<_>>())];
        lines.push(rule_row(&(0..self.columns.len()).map(|i| self.right.contains(&i)).collect::<Vec<_>>()));
        for r in &self.rows {
            lines.push(row(&r.iter().map(|c| escape(c).replace('\n', "<br>")).collect::<Vec<_>>()));
        }
        lines.join("\n") + "\n"
    }

    /// CSV with a header row, records ending in `\n`.
    pub fn csv(&self) -> String {
        let mut out = Csv::new();
        out.row(&self.columns);
        for r in &self.rows {
            out.row(r);
        }
        out.finish()
    }
}
