//! A campaign's portability (`report --campaign NAME`): its runs — shards of one plan, on one
//! or more machines — read as one, one group per machine. A machine's shards hold disjoint
//! functions, so their results are put together and counted by the paper's rules
//! ([`super::portability`]) as one run; each machine's failures are attributed to that machine's
//! own reference device (the one its runs were started with), never another machine's. What a
//! group lacks (a shard not run yet, cases pending) is said, not hidden.

use std::collections::BTreeMap;

use super::portability::{PortabilityReport, ReportOptions, build as build_portability};
use crate::model::{DeviceInfo, ResultRow, RunState, RunSummary, Shard, Target};

/// One of a campaign's runs, as the report lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignRun {
    /// The run's id in this store.
    pub id: i64,
    /// Its globally unique id.
    pub uid: String,
    /// The host it ran on.
    pub host: String,
    /// Its shard ([`Shard::WHOLE`] for a run stored without one).
    pub shard: Shard,
    pub state: RunState,
    /// Planned cases (one per case and dtype) and stored results (one per case and target).
    pub cases_planned: u64,
    pub results: u64,
}

/// One machine's part of a campaign.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineReport {
    /// `--machine` as given when its runs were started, else their host.
    pub machine: String,
    /// Its runs, by shard index.
    pub runs: Vec<CampaignRun>,
    /// How many shards the machine's plan is split in (the largest count among its runs).
    pub shard_count: u32,
    /// Shard indices with no run on this machine yet.
    pub missing_shards: Vec<u32>,
    /// The machine's results counted as one run, against its own reference device.
    pub report: PortabilityReport,
}

/// A campaign's portability, one [`MachineReport`] per machine.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignReport {
    pub campaign: String,
    /// Ordered by machine name.
    pub machines: Vec<MachineReport>,
    /// The counting rule, with each machine's reference device.
    pub rule: String,
}

/// The machine a run describes: [`crate::model::RunOrigin::machine_or`] its host.
pub fn machine_of(run: &RunSummary) -> &str {
    run.origin.machine_or(&run.info.host)
}

/// What `report --campaign C --slowdown A@M1..B@M2` adds to the slowdown's rule: which machine
/// each side is on, and that a ratio across machines includes their CPUs, drivers and load.
pub fn slowdown_rule(campaign: &str, a_machine: &str, b_machine: &str) -> String {
    if a_machine == b_machine {
        format!("Both sides are on machine {a_machine} of campaign `{campaign}` (its shards read together).")
    } else {
        format!(
            "Across machines: A is on {a_machine}, B on {b_machine} (campaign `{campaign}`, each machine's shards read \
             together); the ratio includes their host CPUs, drivers and load, not only the devices (docs/fleet.md)."
        )
    }
}

/// One run's rows as the store returns them.
pub type RunRows = (RunSummary, Vec<DeviceInfo>, Vec<ResultRow>);

/// Groups `runs` (a campaign's, with their devices and results) by machine and counts each
/// group as one run. `opts.reference`, when given, replaces every machine's reference device.
pub fn build(campaign: &str, runs: &[RunRows], opts: &ReportOptions) -> CampaignReport {
    let mut by_machine: BTreeMap<&str, Vec<&RunRows>> = BTreeMap::new();
    for r in runs {
        by_machine.entry(machine_of(&r.0)).or_default().push(r);
    }
    let machines: Vec<MachineReport> = by_machine
        .into_iter()
        .map(|(machine, mut group)| {
            group.sort_by_key(|(s, _, _)| (s.origin.shard.unwrap_or(Shard::WHOLE), s.id));
            machine_report(machine, &group, opts)
        })
        .collect();
    let references: Vec<String> = machines.iter().map(|m| format!("{} {}", m.machine, m.report.reference)).collect();
    let base = machines.first().map(|m| m.report.rule.clone()).unwrap_or_default();
    let rule = if opts.attributable && !machines.is_empty() {
        format!(
            "{base} Each machine's failures are attributed to its own reference device ({}), never to another \
             machine's.",
            references.join(", ")
        )
    } else {
        base
    };
    CampaignReport { campaign: campaign.to_string(), machines, rule }
}

/// One machine's runs (sorted by shard) as one report: the first run's header, state the
/// least finished of theirs, counts summed, devices and results put together.
fn machine_report(machine: &str, group: &[&RunRows], opts: &ReportOptions) -> MachineReport {
    let first = &group[0].0;
    let mut summary = first.clone();
    summary.cases_planned = group.iter().map(|(s, _, _)| s.cases_planned).sum();
    summary.results = group.iter().map(|(s, _, _)| s.results).sum();
    summary.state =
        group.iter().map(|(s, _, _)| s.state).find(|s| *s != RunState::Finished).unwrap_or(RunState::Finished);
    summary.origin.machine = Some(machine.to_string());
    let devices: Vec<DeviceInfo> = group.iter().flat_map(|(_, d, _)| d.iter().cloned()).collect();
    let results: Vec<ResultRow> = group.iter().flat_map(|(_, _, r)| r.iter().cloned()).collect();
    let report = build_portability(&summary, &dedup_devices(devices), &results, opts);
    let runs: Vec<CampaignRun> = group
        .iter()
        .map(|(s, _, _)| CampaignRun {
            id: s.id,
            uid: s.uid.clone(),
            host: s.info.host.clone(),
            shard: s.origin.shard.unwrap_or(Shard::WHOLE),
            state: s.state,
            cases_planned: s.cases_planned,
            results: s.results,
        })
        .collect();
    let shard_count = runs.iter().map(|r| r.shard.count).max().unwrap_or(1);
    let missing_shards = (0..shard_count).filter(|i| !runs.iter().any(|r| r.shard.index == *i)).collect();
    MachineReport { machine: machine.to_string(), runs, shard_count, missing_shards, report }
}

/// Each (framework, target) once: available when any shard saw it.
fn dedup_devices(devices: Vec<DeviceInfo>) -> Vec<DeviceInfo> {
    let mut out: BTreeMap<(crate::model::Framework, Target), DeviceInfo> = BTreeMap::new();
    for d in devices {
        out.entry((d.framework, d.device.clone())).and_modify(|e| e.available |= d.available).or_insert(d);
    }
    out.into_values().collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::{results, run_summary};
    use crate::model::RunOrigin;

    /// The run of [`run_summary`] on `machine` as shard `shard`, keeping only the results
    /// whose function `keep` accepts (a shard holds some functions).
    fn shard_run(id: i64, machine: &str, shard: &str, keep: &dyn Fn(&str) -> bool) -> RunRows {
        let mut s = run_summary();
        s.id = id;
        s.uid = format!("{id:032x}");
        s.info.host = format!("node-{id}");
        s.origin = RunOrigin {
            machine: Some(machine.into()),
            campaign: Some("nightly".into()),
            shard: Some(shard.parse().unwrap()),
            plan_digest: Some("d".into()),
            ..RunOrigin::default()
        };
        let rows: Vec<ResultRow> = results().into_iter().filter(|r| keep(&r.function.name)).collect();
        s.results = rows.len() as u64;
        s.cases_planned = s.results;
        (s, Vec::new(), rows)
    }

    /// A campaign of two machines: gpu-box with both shards of 2, tpu-box with shard 0 only.
    pub(crate) fn campaign() -> CampaignReport {
        let names: std::collections::BTreeSet<String> = results().into_iter().map(|r| r.function.name).collect();
        let first: Vec<String> = names.iter().take(names.len() / 2).cloned().collect();
        let in_first = move |n: &str| first.iter().any(|f| f == n);
        let in_first2 = in_first.clone();
        let runs = vec![
            shard_run(1, "gpu-box", "0/2", &in_first),
            shard_run(2, "gpu-box", "1/2", &move |n| !in_first2(n)),
            shard_run(3, "tpu-box", "0/2", &in_first),
        ];
        build("nightly", &runs, &ReportOptions::default())
    }

    #[test]
    fn a_machines_shards_count_as_its_whole_run() {
        let c = campaign();
        assert_eq!(c.machines.iter().map(|m| m.machine.as_str()).collect::<Vec<_>>(), ["gpu-box", "tpu-box"]);
        let gpu = &c.machines[0];
        let whole = crate::analysis::build(&run_summary(), &[], &results(), &ReportOptions::default());
        assert_eq!(gpu.report.targets, whole.targets, "two shards of a machine count as its unsharded run");
        assert_eq!((gpu.shard_count, gpu.missing_shards.clone()), (2, vec![]));
        let tpu = &c.machines[1];
        assert_eq!((tpu.shard_count, tpu.missing_shards.clone()), (2, vec![1]));
        assert!(
            tpu.report.targets.iter().map(|t| t.functions_run).sum::<usize>()
                < gpu.report.targets.iter().map(|t| t.functions_run).sum::<usize>()
        );
        assert!(c.rule.contains("own reference device (gpu-box cpu, tpu-box cpu)"), "{}", c.rule);
    }
}
