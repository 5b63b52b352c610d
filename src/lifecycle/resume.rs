//! Continuing a stored run (`mlport run --resume`, a campaign shard run again): which run is
//! continued, which of its cases are still pending, and on which targets; a run that is already
//! complete is finished instead (its last comparisons made).

use std::collections::{BTreeMap, HashSet};

use anyhow::{Context, Result, bail};

use super::select;
use crate::agreement;
use crate::model::{CaseRow, DeviceInfo, Framework, FrameworkInfo, RunSource, RunState, RunSummary, Target};
use crate::runner;
use crate::store::Store;
use crate::workspace;

/// A run to continue: its summary, its planned cases and its lock (held until dropped).
pub struct Resumed {
    /// The stored run.
    pub summary: RunSummary,
    /// All its planned cases (the runner skips those already done).
    pub cases: Vec<CaseRow>,
    /// The targets to run on: as given, else [`stored_targets`].
    pub devices: Option<Vec<Target>>,
    /// The run's lock ([`workspace::RunFolders::lock_run`]).
    pub lock: std::fs::File,
}

/// The keys of the planned cases still to run: those without a result on an available
/// target of their framework, and those with no result anywhere — unless their framework
/// failed to import (`unusable`) or was asked only for modes it lacks (NumPy on `cpu/onnx`),
/// which no resume can change.
///
/// `done` holds, per recorded target, the keys with a result there.
pub fn pending_keys<'a>(
    cases: &'a [CaseRow],
    devices: &[DeviceInfo],
    done: &[HashSet<String>],
    unusable: &dyn Fn(Framework) -> bool,
) -> HashSet<&'a str> {
    let mut pending: HashSet<&str> = HashSet::new();
    let mut done_somewhere: HashSet<&str> = HashSet::new();
    for (d, done) in devices.iter().zip(done) {
        if d.available {
            pending.extend(
                cases
                    .iter()
                    .filter(|c| c.framework == d.framework && c.runs_in(d.device.mode()) && !done.contains(&c.key))
                    .map(|c| c.key.as_str()),
            );
        }
        done_somewhere.extend(done.iter().map(String::as_str));
    }
    // A framework whose every recorded target is a mode it lacks (NumPy asked only for
    // `cpu/onnx`): no resume can run its cases either.
    let never = |f: Framework| {
        let mine: Vec<&DeviceInfo> = devices.iter().filter(|d| d.framework == f).collect();
        !mine.is_empty() && mine.iter().all(|d| !d.available && f.lacks_mode(d.device.mode()).is_some())
    };
    for c in cases {
        if !unusable(c.framework) && !never(c.framework) && !done_somewhere.contains(c.key.as_str()) {
            pending.insert(&c.key);
        }
    }
    pending
}

/// What a stored run still lacks, counted two ways from one read of the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Planned cases with something left to run ([`pending_keys`]).
    pub cases: usize,
    /// Results still missing: one per case and available target it has not run on (a case
    /// pending on two targets counts twice, as [`crate::runner::recorded_of_planned`] counts
    /// what was recorded), and one per pending case no available target can run (a device that
    /// was unavailable).
    pub results: usize,
}

/// What run `run_id` still lacks ([`Pending`]).
///
/// Errors: the store's.
pub fn pending(store: &Store, run_id: i64) -> Result<Pending> {
    let cases = store.cases(run_id)?;
    let frameworks: BTreeMap<Framework, FrameworkInfo> = store.run(run_id)?.info.frameworks;
    let devices = store.devices(run_id)?;
    let done: Vec<HashSet<String>> =
        devices.iter().map(|d| store.done_keys(run_id, &d.device)).collect::<Result<_, _>>()?;
    let unusable = |f: Framework| frameworks.get(&f).is_some_and(|i| i.import_error.is_some());
    let keys = pending_keys(&cases, &devices, &done, &unusable);
    let mut results = 0;
    for (d, done) in devices.iter().zip(&done).filter(|(d, _)| d.available) {
        results += cases
            .iter()
            .filter(|c| c.framework == d.framework && c.runs_in(d.device.mode()) && !done.contains(&c.key))
            .count();
    }
    let on_a_target = |c: &CaseRow| devices.iter().any(|d| d.available && d.framework == c.framework);
    results += cases.iter().filter(|c| keys.contains(c.key.as_str()) && !on_a_target(c)).count();
    Ok(Pending { cases: keys.len(), results })
}

/// The targets a resumed run is for, when the command line names none: those that were
/// available, else (none was) the ones asked for, so that a resume never runs on a target
/// nobody asked for. `None` when the run recorded no target.
pub fn stored_targets(recorded: &[DeviceInfo]) -> Option<Vec<Target>> {
    let mut stored: Vec<Target> = recorded.iter().filter(|d| d.available).map(|d| d.device.clone()).collect();
    if stored.is_empty() {
        stored = recorded.iter().map(|d| d.device.clone()).collect();
    }
    stored.sort();
    stored.dedup();
    Some(stored).filter(|s| !s.is_empty())
}

/// What continuing a stored run found.
pub enum Continued {
    /// Cases are pending: run them.
    Pending(Box<Resumed>),
    /// The run (this id) was already complete: its last comparisons are made and it is marked
    /// finished; there is nothing to run.
    Complete(i64),
}

/// The stored run `--resume` names (`latest` or an id), locked before anything is written
/// ([`continue_run`]).
///
/// Errors: no such run; a run not made by `mlport run`; the run is executing elsewhere.
pub fn start(
    store: &mut Store,
    folders: &workspace::RunFolders,
    which: &str,
    devices: Option<Vec<Target>>,
) -> Result<Continued> {
    let summary = if which == "latest" {
        let runs = store.runs()?;
        select::latest_live(&runs)
            .cloned()
            .with_context(|| format!("{}: no `mlport run` run to resume", store.location()))?
    } else {
        let id: i64 = which.parse().map_err(|_| anyhow::anyhow!("--resume: `{which}` is not a run id"))?;
        store.run(id)?
    };
    continue_run(store, folders, summary, devices)
}

/// Continues the stored run `summary` (what `--resume` and a campaign shard's rerun do), or
/// finishes it when it is already complete ([`Continued::Complete`]).
///
/// Errors: a run not made by `mlport run`; the run is executing elsewhere.
pub fn continue_run(
    store: &mut Store,
    folders: &workspace::RunFolders,
    summary: RunSummary,
    devices: Option<Vec<Target>>,
) -> Result<Continued> {
    if summary.origin.source != RunSource::Live {
        bail!(
            "run {} was not made by `mlport run` (it is {}): only live runs can be resumed",
            summary.id,
            summary.origin.source
        );
    }
    let lock = folders.lock_run(summary.id)?;
    // On PostgreSQL, also against processes on other machines.
    store.claim_run(summary.id)?;
    let references_left = runner::reference::pending(store, summary.id)?.len();
    // A run without results is complete only when it plans nothing (a shard holding no function).
    let has_all = summary.results > 0 || summary.cases_planned == 0;
    let left = pending(store, summary.id)?;
    if left.cases == 0 && has_all && references_left == 0 {
        // A run stopped between committing a result and comparing it: finish the comparisons.
        let done = agreement::check_run(store, summary.id, &summary.info.reference_device)?;
        if done.compared > 0 {
            eprintln!(
                "mlport: run {}: compared {} results left uncompared ({} wrong)",
                summary.id, done.compared, done.wrong
            );
        }
        eprintln!(
            "mlport: run {} is already complete ({} results: one per case and target); nothing to resume",
            summary.id, summary.results
        );
        if summary.state != RunState::Finished {
            store.finish_run(summary.id, RunState::Finished)?;
        }
        return Ok(Continued::Complete(summary.id));
    }
    let devices = match devices {
        Some(d) => Some(d),
        None => stored_targets(&store.devices(summary.id)?),
    };
    eprintln!(
        "mlport: resuming run {} ({})",
        summary.id,
        crate::runner::recorded_of_planned(summary.results, left.results as u64)
    );
    let cases = store.cases(summary.id)?;
    Ok(Continued::Pending(Box::new(Resumed { summary, cases, devices, lock })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(key: &str, framework: Framework) -> CaseRow {
        CaseRow {
            key: key.into(),
            framework,
            function: "f".into(),
            case_id: "default".into(),
            dtype: Some(crate::model::Dtype::Float32),
            seed: 0,
            spec: crate::model::Spec::from(crate::model::CaseSpec::new("f", "default")),
        }
    }

    fn dev(framework: Framework, device: &str, available: bool) -> DeviceInfo {
        DeviceInfo { framework, device: device.parse().unwrap(), available, detail: String::new() }
    }

    fn keys(v: &[&str]) -> HashSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_case_is_pending_on_each_available_target_without_its_result() {
        let cases = [case("t/a", Framework::Torch), case("t/b", Framework::Torch), case("j/a", Framework::Jax)];
        let devices = [
            dev(Framework::Torch, "cpu", true),
            dev(Framework::Torch, "cuda:0", true),
            dev(Framework::Jax, "cpu", true),
        ];
        let done = [keys(&["t/a", "t/b"]), keys(&["t/a"]), keys(&["j/a"])];
        let p = pending_keys(&cases, &devices, &done, &|_| false);
        assert_eq!(p, ["t/b"].into_iter().collect());
    }

    #[test]
    fn an_unavailable_target_leaves_nothing_pending_once_a_case_ran_somewhere() {
        let cases = [case("t/a", Framework::Torch), case("t/b", Framework::Torch)];
        let devices = [dev(Framework::Torch, "cpu", true), dev(Framework::Torch, "cuda:0", false)];
        let done = [keys(&["t/a"]), keys(&[])];
        assert_eq!(pending_keys(&cases, &devices, &done, &|_| false), ["t/b"].into_iter().collect());
        // No result anywhere and no target recorded: pending, unless the framework cannot import.
        let none = pending_keys(&cases, &[], &[], &|_| false);
        assert_eq!(none.len(), 2);
        assert!(pending_keys(&cases, &[], &[], &|f| f == Framework::Torch).is_empty());
    }

    #[test]
    fn a_framework_asked_only_for_modes_it_lacks_leaves_nothing_pending() {
        let cases = [case("n/a", Framework::Numpy), case("t/a", Framework::Torch)];
        let devices = [dev(Framework::Numpy, "cpu/onnx_openvino", false), dev(Framework::Torch, "cuda:0/onnx", false)];
        // NumPy lacks every route: never pending. torch's target was merely unavailable: pending.
        let p = pending_keys(&cases, &devices, &[keys(&[]), keys(&[])], &|_| false);
        assert_eq!(p, ["t/a"].into_iter().collect());
    }

    #[test]
    fn a_resume_keeps_to_the_targets_that_were_available() {
        let recorded = [
            dev(Framework::Torch, "cuda:0", false),
            dev(Framework::Torch, "cpu", true),
            dev(Framework::Jax, "cpu", true),
        ];
        assert_eq!(stored_targets(&recorded), Some(vec![Target::cpu()]));
        let none_available = [dev(Framework::Torch, "cuda:0", false), dev(Framework::Jax, "cuda:0", false)];
        assert_eq!(stored_targets(&none_available), Some(vec!["cuda:0".parse().unwrap()]));
        assert_eq!(stored_targets(&[]), None);
    }
}
