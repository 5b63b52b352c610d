//! What a scan found (rendered by [`crate::render::scan`]). The JSON shape of each record
//! is its `Serialize`: keys in alphabetical order.

use serde::Serialize;

use crate::model::Framework;

/// Where a call is. Ordered by file, line, cell; JSON keys in alphabetical order (`cell` only
/// for a notebook), as every JSON object of the scan report.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The file, relative to the scanned folder (or as given).
    pub file: String,
    /// 1-based line (within the cell, for a notebook).
    pub line: u32,
    /// A notebook's cell (1-based, counting every cell).
    pub cell: Option<u32>,
}

impl Serialize for Site {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Site", 2 + usize::from(self.cell.is_some()))?;
        if let Some(cell) = self.cell {
            st.serialize_field("cell", &cell)?;
        }
        st.serialize_field("file", &self.file)?;
        st.serialize_field("line", &self.line)?;
        st.end()
    }
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cell {
            Some(c) => write!(f, "{}[{c}]:{}", self.file, self.line),
            None => write!(f, "{}:{}", self.file, self.line),
        }
    }
}

/// One function (or unresolved name) and its calls (fields in the JSON's alphabetical order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionUse {
    /// Calls found.
    pub calls: usize,
    /// Files they are in.
    pub files: usize,
    /// Its framework; `None` for unresolved names.
    pub framework: Option<Framework>,
    /// Fully qualified and canonical (`tensorflow.linalg.svd`), or `?.argsort` when unresolved.
    pub name: String,
    /// Every call, by file and line.
    pub sites: Vec<Site>,
}

/// A file, or a notebook's code cell, that could not be scanned (fields in the JSON's
/// alphabetical order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unparsable {
    /// The notebook cell left out (1-based, counting every cell); the rest of the notebook is
    /// scanned. `None` for a whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<u32>,
    /// What is wrong.
    pub error: String,
    /// The file.
    pub file: String,
    /// The line of the first syntax error (within the cell, for a notebook), when there is one.
    pub line: Option<u32>,
}

impl Unparsable {
    /// `file:line`, `notebook.ipynb[cell]:line`, or the file alone.
    pub fn location(&self) -> String {
        let cell = self.cell.map(|c| format!("[{c}]")).unwrap_or_default();
        let line = self.line.map(|l| format!(":{l}")).unwrap_or_default();
        format!("{}{cell}{line}", self.file)
    }
}

/// A scan's findings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// The paths scanned.
    pub paths: Vec<String>,
    /// Files found (Python files and notebooks).
    pub files: usize,
    /// Of them, notebooks.
    pub notebooks: usize,
    /// Their total size.
    pub bytes: u64,
    /// Bytes given to the parser (less than `bytes` when files that cannot refer to a framework are skipped).
    pub parsed_bytes: u64,
    /// Files not parsed because nothing in them can refer to a framework.
    pub skipped: usize,
    /// Files with syntax errors or unreadable, skipped.
    pub unparsable: Vec<Unparsable>,
    /// Framework functions called, most called first.
    pub functions: Vec<FunctionUse>,
    /// Method calls whose receiver is not clearly a framework object, and star-imported names.
    pub unresolved: Vec<FunctionUse>,
}

impl ScanReport {
    /// Total calls of framework functions.
    pub fn calls(&self) -> usize {
        self.functions.iter().map(|f| f.calls).sum()
    }
}
