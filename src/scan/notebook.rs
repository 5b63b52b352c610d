//! Jupyter notebooks (`.ipynb`, nbformat 4): the code cells joined into one Python source
//! (a notebook's cells share one namespace, so an import in cell 1 binds in cell 5), parsed in
//! Ruff's IPython mode (line magics `%matplotlib`, shell escapes `!pip`, `x = !ls`, `obj?`), and
//! the map from a line of that source back to its cell and line. A cell magic that runs the
//! cell's Python (`%%time`, `%%timeit`, `%%capture`, `%%prun`) keeps the cell, its first line
//! emptied; a cell under any other (`%%bash`, `%%writefile`) is left out. Line breaks are
//! normalised to `\n` (a lone `\r` is a line break to Python and to the parser).

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
    /// The index in `cells` of the code cell holding source line `line`.
    fn index_of(&self, line: u32) -> usize {
        self.cells.partition_point(|(_, start)| *start <= line).saturating_sub(1)
    }

    /// The source lines (1-based, end excluded) of the `i`-th code cell, `None` past the last.
    fn lines_of(&self, i: usize) -> Option<std::ops::Range<u32>> {
        let &(_, start) = self.cells.get(i)?;
        Some(start..self.cells.get(i + 1).map_or(u32::MAX, |(_, s)| *s))
    }

    /// The cell (1-based, counting every cell) and the line within it of source line `line`.
    pub fn locate(&self, line: u32) -> (u32, u32) {
        let (cell, start) = self.cells.get(self.index_of(line)).copied().unwrap_or((1, 1));
        (cell, line - start + 1)
    }

    /// The source of the `i`-th code cell (0-based among the code cells kept), as joined.
    pub fn cell_source(&self, i: usize) -> String {
        let Some(lines) = self.lines_of(i) else { return String::new() };
        self.source.split_inclusive('\n').skip(lines.start as usize - 1).take(lines.len()).collect()
    }

    /// Leaves out the code cell holding source line `line`: its lines become empty (every other
    /// line keeps its number). Each cell runs on its own in Jupyter, so a syntax error in one
    /// leaves the others valid.
    pub fn blank_cell_at(&mut self, line: u32) {
        let Some(lines) = self.lines_of(self.index_of(line)) else { return };
        let mut out = String::with_capacity(self.source.len());
        for (n, l) in (1u32..).zip(self.source.split_inclusive('\n')) {
            out.push_str(if lines.contains(&n) { "\n" } else { l });
        }
        self.source = out;
    }
}

/// Cell magics whose cell body is Python that runs.
const PYTHON_CELL_MAGICS: [&str; 4] = ["time", "timeit", "capture", "prun"];

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
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines: Vec<&str> = text.lines().collect();
        let first = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(lines.len());
        let mut skip_magic = false;
        if let Some(magic) = lines.get(first).and_then(|l| l.trim_start().strip_prefix("%%")) {
            let name: String = magic.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !PYTHON_CELL_MAGICS.contains(&name.as_str()) {
                continue;
            }
            skip_magic = true;
        }
        out.cells.push((i as u32 + 1, line));
        // IPython runs a cell whose lines all share the first line's indentation dedented.
        let indent = lines.get(first).map_or("", |l| &l[..l.len() - l.trim_start().len()]);
        let dedent = !indent.is_empty() && lines.iter().all(|l| l.trim().is_empty() || l.starts_with(indent));
        for (k, l) in lines.iter().enumerate() {
            // The magic's line stays, empty, so the cell's lines keep their numbers.
            if !(skip_magic && k == first) {
                out.source.push_str(if dedent { l.strip_prefix(indent).unwrap_or(l) } else { l });
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
        assert_eq!(s.source, "%matplotlib inline\nimport torch\n\nx = torch.zeros(2)\n!pip list\n\n");
        assert_eq!(s.cells, [(2, 1), (4, 4)]);
        assert_eq!(s.locate(2), (2, 2));
        assert_eq!(s.locate(4), (4, 1));
        assert!(code_cells(b"{}").unwrap_err().contains("cells"));
        let mut s = s;
        s.blank_cell_at(2);
        assert_eq!(s.source, "\n\n\nx = torch.zeros(2)\n!pip list\n\n");
        // `%%time` runs its cell's Python; `%%bash` does not. A lone `\r` breaks a line.
        let nb = br##"{"cells": [
            {"cell_type": "code", "source": "%%time\nimport numpy as np\r"},
            {"cell_type": "code", "source": "%%bash\nls"},
            {"cell_type": "code", "source": "np.ones(1)\rnp.zeros(1)"}
        ]}"##;
        let s = code_cells(nb).unwrap();
        assert_eq!(s.source, "\nimport numpy as np\n\nnp.ones(1)\nnp.zeros(1)\n\n");
        assert_eq!(s.cells, [(1, 1), (3, 4)]);
        assert_eq!(s.cell_source(1), "np.ones(1)\nnp.zeros(1)\n\n");
        // A blank line before `%%time` keeps the numbering; an indented cell is dedented.
        let nb = br##"{"cells": [
            {"cell_type": "code", "source": "\n%%time\nnp.zeros(1)\n"},
            {"cell_type": "code", "source": "  np.ones(1)\n  if x:\n      y()"}
        ]}"##;
        let s = code_cells(nb).unwrap();
        assert_eq!(s.source, "\n\nnp.zeros(1)\n\nnp.ones(1)\nif x:\n    y()\n\n");
        assert_eq!(s.locate(3), (1, 3));
        assert!(code_cells(b"nope").unwrap_err().contains("not a notebook"));
    }
}
