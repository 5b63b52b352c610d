//! `mlport runs`: one row per stored run — id, start, state, counts, the campaign and shard it
//! belongs to, its machine, frameworks with their versions, where it came from and its label.

use super::grid::Grid;
use crate::analysis::campaign::machine_of;
use crate::model::RunSummary;

/// The machine cell: the run's machine ([`machine_of`]: `--machine` as given, else the host),
/// followed by the host in parentheses when `--machine` named another (`pool (node17)`).
fn machine_cell(r: &RunSummary) -> String {
    let machine = machine_of(r);
    if machine == r.info.host || r.info.host.is_empty() {
        machine.to_string()
    } else {
        format!("{machine} ({})", r.info.host)
    }
}

/// The runs as a terminal table, newline-terminated. `campaign` and `shard` (`I/N`) are empty
/// for a run outside a campaign; a campaign's run without `--shard` is shard `0/1`.
pub fn table(runs: &[RunSummary]) -> String {
    let mut t = Grid::new([
        "run",
        "started",
        "state",
        "cases",
        "results",
        "campaign",
        "shard",
        "machine",
        "frameworks",
        "source",
        "label",
    ]);
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
            r.origin.campaign.clone().unwrap_or_default(),
            r.origin.shard.map(|s| s.to_string()).unwrap_or_default(),
            machine_cell(r),
            fws.join(", "),
            r.origin.source.to_string(),
            r.origin.label.clone().unwrap_or_default(),
        ]);
    }
    format!("{}\n", t.table())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::portability::tests::run_summary;
    use crate::model::Shard;

    #[test]
    fn campaign_shard_and_machine_snapshot() {
        let plain = run_summary();
        let mut shard = run_summary();
        shard.id = 2;
        shard.origin.campaign = Some("nightly".into());
        shard.origin.shard = Some(Shard { index: 1, count: 4 });
        shard.origin.machine = Some("pool".into());
        shard.info.host = "node17".into();
        let mut named = run_summary();
        named.id = 3;
        named.origin.campaign = Some("nightly".into());
        named.origin.shard = Some(Shard { index: 0, count: 1 });
        named.origin.machine = Some(named.info.host.clone());
        named.origin.label = Some("tpu".into());
        let table = table(&[plain, shard, named]);
        assert!(table.contains("┆ nightly  ┆ 1/4   ┆ pool (node17) ┆"), "{table}");
        insta::assert_snapshot!(table);
    }
}
