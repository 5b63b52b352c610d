//! `mlport runs`: one row per stored run — id, start, state, counts, host, frameworks with
//! their versions, where it came from and its label.

use super::grid::Grid;
use crate::model::RunSummary;

/// The runs as a terminal table, newline-terminated.
pub fn table(runs: &[RunSummary]) -> String {
    let mut t = Grid::new(["run", "started", "state", "cases", "results", "host", "frameworks", "source", "label"]);
    for r in runs {
        let fws: Vec<String> = r
            .info
            .frameworks
            .iter()
            .map(|(f, i)| match (&i.version, &i.import_error) {
                (Some(v), _) => format!("{f} {v}"),
                (None, Some(_)) => format!("{f} (not usable)"),
                (None, None) => format!("{f} (version unknown)"),
            })
            .collect();
        t.push([
            r.id.to_string(),
            r.info.started_at.clone(),
            r.state.to_string(),
            r.cases_planned.to_string(),
            r.results.to_string(),
            r.origin.machine.clone().unwrap_or_else(|| r.info.host.clone()),
            fws.join(", "),
            r.origin.source.to_string(),
            r.origin.label.clone().unwrap_or_default(),
        ]);
    }
    format!("{}\n", t.table())
}
