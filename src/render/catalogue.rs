//! `mlport list`: the catalogue's files (framework, version, counts of functions, paper
//! functions, cases and case × dtype instances) and, with `--functions`, every function.

use super::grid::Grid;
use crate::catalogue::Catalogue;

/// One row per catalogue file, newline-terminated.
pub fn files_table(catalogue: &Catalogue) -> String {
    let mut t =
        Grid::new(["framework", "catalogue", "version", "functions", "from the paper", "cases", "case × dtype"]);
    for f in &catalogue.files {
        let cases: usize = f.functions.iter().map(|g| g.cases.len()).sum();
        let instances: usize = f.functions.iter().flat_map(|g| g.cases.iter()).map(|c| c.dtypes.len()).sum();
        t.push([
            f.framework.to_string(),
            f.path.clone(),
            f.version.clone(),
            f.functions.len().to_string(),
            f.functions.iter().filter(|g| g.paper.is_some()).count().to_string(),
            cases.to_string(),
            instances.to_string(),
        ]);
    }
    format!("{}\n", t.table())
}

/// Every function of every file: name, case count, dtypes swept, usage decile, top-20, moves.
pub fn functions(catalogue: &Catalogue) -> String {
    let mut out = String::new();
    for f in &catalogue.files {
        out.push_str(&format!("\n{} ({}):\n", f.framework, f.path));
        for g in &f.functions {
            let mut dtypes: Vec<&str> = g.cases.iter().flat_map(|c| c.dtypes.iter().map(|d| d.as_str())).collect();
            dtypes.sort();
            dtypes.dedup();
            let mut extra = Vec::new();
            if let Some(d) = g.decile {
                extra.push(format!("decile {d}"));
            }
            if g.top20 {
                extra.push("top-20".into());
            }
            if let Some(m) = &g.moved {
                extra.push(format!("moved: {m}"));
            }
            out.push_str(&format!(
                "  {:<50} {} case(s) [{}] {}\n",
                g.name,
                g.cases.len(),
                dtypes.join(" "),
                extra.join("; ")
            ));
        }
    }
    out
}
