//! What a scan found, and its renderings: a terminal table, versioned JSON
//! (`{"format": "mlport.scan", "version": 1}`) and CSV (one row per function).

use std::fmt::Write as _;

use comfy_table::{CellAlignment, Table, presets};
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

/// Versioned JSON format name of [`render_json`].
pub const FORMAT: &str = "mlport.scan";
/// Its version.
pub const VERSION: u32 = 1;

fn where_(sites: &[Site], max: usize) -> String {
    let mut s: Vec<String> = sites.iter().take(max).map(Site::to_string).collect();
    if sites.len() > max {
        s.push(format!("+{} more", sites.len() - max));
    }
    s.join(", ")
}

/// The terminal table: a summary line, the functions, the unresolved names, the unparsable files.
pub fn render_table(r: &ScanReport) -> String {
    let mut out = String::new();
    let fws = {
        let mut v: Vec<String> = Framework::ALL
            .iter()
            .filter_map(|fw| {
                let n = r.functions.iter().filter(|f| f.framework == Some(*fw)).count();
                (n > 0).then(|| format!("{fw} {n}"))
            })
            .collect();
        if v.is_empty() {
            v.push("none".into());
        }
        v.join(", ")
    };
    let _ = writeln!(
        out,
        "{} files scanned ({} notebooks, {} unparsable): {} calls of {} framework functions ({fws}); {} unresolved calls",
        r.files,
        r.notebooks,
        r.unparsable.len(),
        r.calls(),
        r.functions.len(),
        r.unresolved.iter().map(|u| u.calls).sum::<usize>()
    );
    if !r.functions.is_empty() {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        t.set_header(["function", "framework", "calls", "files", "where"]);
        for f in &r.functions {
            t.add_row([
                f.name.clone(),
                f.framework.map(|x| x.to_string()).unwrap_or_default(),
                f.calls.to_string(),
                f.files.to_string(),
                where_(&f.sites, 3),
            ]);
        }
        for i in [2, 3] {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(out, "{t}");
    }
    if !r.unresolved.is_empty() {
        let _ = writeln!(out, "Unresolved (receiver not clearly a framework object; not counted above):");
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        t.set_header(["call", "calls", "files", "where"]);
        for f in &r.unresolved {
            t.add_row([f.name.clone(), f.calls.to_string(), f.files.to_string(), where_(&f.sites, 3)]);
        }
        let _ = writeln!(out, "{t}");
    }
    for u in &r.unparsable {
        let _ = writeln!(out, "unparsable, skipped: {}: {}", u.location(), u.error);
    }
    out
}

/// Versioned JSON.
pub fn render_json(r: &ScanReport) -> String {
    // Serialised straight from the report (a `serde_json::Value` copy of 190,000 sites costs
    // more than the scan's serial part), keys in alphabetical order.
    #[derive(Serialize)]
    struct Json<'a> {
        bytes: u64,
        calls: usize,
        files: usize,
        format: &'static str,
        functions: &'a [FunctionUse],
        notebooks: usize,
        paths: &'a [String],
        unparsable: &'a [Unparsable],
        unresolved: &'a [FunctionUse],
        version: u32,
    }
    let v = Json {
        bytes: r.bytes,
        calls: r.calls(),
        files: r.files,
        format: FORMAT,
        functions: &r.functions,
        notebooks: r.notebooks,
        paths: &r.paths,
        unparsable: &r.unparsable,
        unresolved: &r.unresolved,
        version: VERSION,
    };
    let mut s = serde_json::to_string_pretty(&v).expect("serialisable");
    s.push('\n');
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// CSV, one row per function then per unresolved name; `sites` space-separated `file:line`.
pub fn render_csv(r: &ScanReport) -> String {
    let mut out = String::from("kind,framework,function,calls,files,sites\r\n");
    for (kind, list) in [("resolved", &r.functions), ("unresolved", &r.unresolved)] {
        for f in list {
            let sites: Vec<String> = f.sites.iter().map(Site::to_string).collect();
            let _ = write!(
                out,
                "{kind},{},{},{},{},{}\r\n",
                f.framework.map(|x| x.to_string()).unwrap_or_default(),
                csv_field(&f.name),
                f.calls,
                f.files,
                csv_field(&sites.join(" "))
            );
        }
    }
    out
}
