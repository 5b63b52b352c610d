//! Jupyter notebooks (`.ipynb`, nbformat 4): the code cells joined into one Python source
//! (a notebook's cells share one namespace, so an import in cell 1 binds in cell 5), with
//! IPython magics (`%matplotlib`, `!pip`) blanked and cell magics (`%%bash`) left out, and
//! the map from a line of that source back to its cell and line.

use serde_json::Value;

/// A notebook's code as one source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotebookSource {
    /// The code cells, each followed by a newline.
    pub source: String,
    /// For each cell, its 1-based number among all cells and the source line (1-based) it starts at.
    pub cells: Vec<(u32, u32)>,
}

impl NotebookSource {
    /// The cell (1-based, counting every cell) and the line within it of source line `line`.
    pub fn locate(&self, line: u32) -> (u32, u32) {
        let i = self.cells.partition_point(|(_, start)| *start <= line).saturating_sub(1);
        let (cell, start) = self.cells.get(i).copied().unwrap_or((1, 1));
        (cell, line - start + 1)
    }

    /// Leaves out the code cell holding source line `line`: its lines become empty (every other
    /// line keeps its number). Each cell runs on its own in Jupyter, so a syntax error in one
    /// leaves the others valid.
    pub fn blank_cell_at(&mut self, line: u32) {
        let i = self.cells.partition_point(|(_, start)| *start <= line).saturating_sub(1);
        let Some(&(_, start)) = self.cells.get(i) else { return };
        let end = self.cells.get(i + 1).map_or(u32::MAX, |(_, s)| *s);
        let mut out = String::with_capacity(self.source.len());
        for (n, l) in self.source.split_inclusive('\n').enumerate() {
            let n = n as u32 + 1;
            if (start..end).contains(&n) {
                out.push('\n');
            } else {
                out.push_str(l);
            }
        }
        self.source = out;
    }
}

/// Reads a notebook's code cells; an error names what is wrong with the JSON.
pub fn code_cells(bytes: &[u8]) -> Result<NotebookSource, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not a notebook: {e}"))?;
    let cells = v.get("cells").and_then(Value::as_array).ok_or("not a notebook: no `cells` list")?;
    let mut out = NotebookSource::default();
    let mut line = 1u32;
    for (i, cell) in cells.iter().enumerate() {
        if cell.get("cell_type").and_then(Value::as_str) != Some("code") {
            continue;
        }
        let text = match cell.get("source") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
            _ => String::new(),
        };
        if text.trim_start().starts_with("%%") {
            continue;
        }
        out.cells.push((i as u32 + 1, line));
        for l in text.lines() {
            let trimmed = l.trim_start();
            if trimmed.starts_with('%') || trimmed.starts_with('!') {
                // Keep the line (and the block it may be alone in) valid Python.
                out.source.push_str(&l[..l.len() - trimmed.len()]);
                out.source.push_str("pass");
            } else {
                out.source.push_str(l);
            }
            out.source.push('\n');
            line += 1;
        }
        out.source.push('\n');
        line += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_lines() {
        let nb = br##"{"cells": [
            {"cell_type": "markdown", "source": ["# Title"]},
            {"cell_type": "code", "source": ["%matplotlib inline\n", "import torch"]},
            {"cell_type": "code", "source": "%%bash\nls"},
            {"cell_type": "code", "source": ["x = torch.zeros(2)\n", "!pip list"]}
        ], "nbformat": 4}"##;
        let s = code_cells(nb).unwrap();
        assert_eq!(s.source, "pass\nimport torch\n\nx = torch.zeros(2)\npass\n\n");
        assert_eq!(s.cells, [(2, 1), (4, 4)]);
        assert_eq!(s.locate(2), (2, 2));
        assert_eq!(s.locate(4), (4, 1));
        assert!(code_cells(b"{}").unwrap_err().contains("cells"));
        let mut s = s;
        s.blank_cell_at(2);
        assert_eq!(s.source, "\n\n\nx = torch.zeros(2)\npass\n\n");
        assert!(code_cells(b"nope").unwrap_err().contains("not a notebook"));
    }
}
