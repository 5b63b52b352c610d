//! A scan's findings ([`crate::scan::ScanReport`]) as a terminal table, versioned JSON
//! (`{"format": "mlport.scan", "version": 1}`) and CSV (one row per function).

use std::fmt::Write as _;

use serde::Serialize;

use super::csv::Csv;
use super::grid::Grid;
use super::json::pretty;
use crate::model::Framework;
use crate::scan::{FunctionUse, ScanReport, Site, Unparsable};

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
        let mut t = Grid::new(["function", "framework", "calls", "files", "where"]).right_aligned(&[2, 3]);
        for f in &r.functions {
            t.push([
                f.name.clone(),
                f.framework.map(|x| x.to_string()).unwrap_or_default(),
                f.calls.to_string(),
                f.files.to_string(),
                where_(&f.sites, 3),
            ]);
        }
        let _ = writeln!(out, "{}", t.table());
    }
    if !r.unresolved.is_empty() {
        let _ = writeln!(out, "Unresolved (receiver not clearly a framework object; not counted above):");
        let mut t = Grid::new(["call", "calls", "files", "where"]);
        for f in &r.unresolved {
            t.push([f.name.clone(), f.calls.to_string(), f.files.to_string(), where_(&f.sites, 3)]);
        }
        let _ = writeln!(out, "{}", t.table());
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
    pretty(&v)
}

/// CSV, one row per function then per unresolved name; `sites` space-separated `file:line`.
pub fn render_csv(r: &ScanReport) -> String {
    let mut out = Csv::crlf();
    out.row(["kind", "framework", "function", "calls", "files", "sites"]);
    for (kind, list) in [("resolved", &r.functions), ("unresolved", &r.unresolved)] {
        for f in list {
            let sites: Vec<String> = f.sites.iter().map(Site::to_string).collect();
            out.row([
                kind.to_string(),
                f.framework.map(|x| x.to_string()).unwrap_or_default(),
                f.name.clone(),
                f.calls.to_string(),
                f.files.to_string(),
                sites.join(" "),
            ]);
        }
    }
    out.finish()
}
