//! `mlport list`: the catalogue's files (framework, version, counts of functions, workloads,
//! paper functions, cases and case × dtype instances), with `--functions` every function, with
//! `--references` what judges the planned cases ([`crate::analysis::coverage`]).

use super::grid::Grid;
use crate::analysis::coverage::Coverage;
use crate::catalogue::Catalogue;

/// One row per catalogue file, newline-terminated.
pub fn files_table(catalogue: &Catalogue) -> String {
    let mut t = Grid::new([
        "framework",
        "catalogue",
        "version",
        "functions",
        "workloads",
        "from the paper",
        "cases",
        "case × dtype",
    ]);
    for f in &catalogue.files {
        let cases: usize = f.functions.iter().map(|g| g.cases.len()).sum();
        let instances: usize = f.functions.iter().flat_map(|g| g.cases.iter()).map(|c| c.dtypes.len()).sum();
        let workloads = f.functions.iter().filter(|g| g.workload).count();
        t.push([
            f.framework.to_string(),
            f.path.clone(),
            f.version.clone(),
            (f.functions.len() - workloads).to_string(),
            workloads.to_string(),
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
            if g.workload {
                extra.push("workload".into());
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

/// Per framework, what judges the planned (not skipped) cases, and the share of floating cases
/// nothing judges; newline-terminated.
pub fn references(coverage: &Coverage) -> String {
    let mut t = Grid::new([
        "framework",
        "cases",
        "floating",
        "op reference",
        "own reference",
        "self-reference",
        "unchecked floating",
        "unchecked (all)",
    ])
    .right_aligned(&[1, 2, 3, 4, 5, 6, 7]);
    for (fw, n) in &coverage.frameworks {
        let share = if n.floating == 0 { 0.0 } else { 100.0 * n.unchecked_floating as f64 / n.floating as f64 };
        t.push([
            fw.to_string(),
            n.cases.to_string(),
            n.floating.to_string(),
            n.op.to_string(),
            n.own.to_string(),
            n.self_reference.to_string(),
            format!("{} ({share:.1}%)", n.unchecked_floating),
            n.unchecked.to_string(),
        ]);
    }
    format!(
        "{}\nPlanned from the catalogue: a reference that fails to compute leaves its cases unchecked too, \
         which only a run shows (docs/catalogue.md, \"References\").\n",
        t.table()
    )
}

/// The planned floating cases nothing judges, one case key a line.
pub fn unchecked(coverage: &Coverage) -> String {
    coverage.unchecked_floating.iter().map(|k| format!("{k}\n")).collect()
}
