//! Which stored runs a command means: `--run` and `--resume` values (an id, a label, `latest`)
//! resolved against the store, a `--campaign`'s runs and one machine's among them, and the rule
//! for a new run's `--label`.

use anyhow::{Context, Result, bail};

use crate::analysis;
use crate::model::{RunSource, RunSummary};
use crate::store::Store;

/// Why `label` cannot name a run, or `None` when it can. A label must name a run wherever a
/// run id is accepted (`--run`, `--slowdown A@RUN..B@RUN`), so it cannot look like an id or a
/// keyword, or hold `..` or `@`.
pub fn label_problem(label: &str) -> Option<&'static str> {
    if label.trim().is_empty() {
        Some("is empty")
    } else if label.bytes().all(|b| b.is_ascii_digit()) {
        Some("looks like a run id")
    } else if matches!(label, "all" | "latest") {
        Some("is a keyword of --run")
    } else if label.contains("..") || label.contains('@') {
        Some("holds `..` or `@`, which --slowdown uses to separate runs")
    } else {
        None
    }
}

/// Checks a `--label` ([`label_problem`]) and that the store has no run of that label yet.
pub fn check_label(store: &Store, label: Option<&str>) -> Result<()> {
    let Some(label) = label else { return Ok(()) };
    if let Some(why) = label_problem(label) {
        bail!("--label `{label}` {why}; choose another");
    }
    if store.run_by_label(label)?.is_some() {
        bail!("{}: a run is already labelled `{label}`; choose another label", store.location());
    }
    Ok(())
}

/// The run `latest` means among `runs`: the newest, preferring one measured by mlport over
/// imported paper data, so a user who imports the paper's 18 runs after their own run still
/// gets their run.
pub fn latest(runs: &[RunSummary]) -> Option<&RunSummary> {
    let own = runs.iter().filter(|r| r.origin.source != RunSource::ImportPaper).max_by_key(|r| r.id);
    own.or_else(|| runs.iter().max_by_key(|r| r.id))
}

/// The newest run made by `mlport run` (what `--resume` with no id continues).
pub fn latest_live(runs: &[RunSummary]) -> Option<&RunSummary> {
    runs.iter().filter(|r| r.origin.source == RunSource::Live).max_by_key(|r| r.id)
}

/// A run named by id, by label, or `None`/`latest` for [`latest`].
///
/// Errors: the store holds no run; no run has that id or label; the id is too large.
pub fn resolve_run(store: &Store, spec: Option<&str>) -> Result<RunSummary> {
    let db = store.location();
    match spec {
        None | Some("latest") => {
            let runs = store.runs()?;
            latest(&runs).cloned().with_context(|| format!("{db}: the store holds no run"))
        }
        Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            let id: i64 = s.parse().map_err(|_| anyhow::anyhow!("run id `{s}` is too large"))?;
            Ok(store.run(id)?)
        }
        Some(label) => store
            .run_by_label(label)?
            .with_context(|| format!("{db}: no run with id or label `{label}` (see `mlport runs`)")),
    }
}

/// The runs of campaign `name`, oldest first.
///
/// Errors: no run of the store belongs to it (naming the campaigns it has).
pub fn campaign_runs(store: &Store, name: &str) -> Result<Vec<RunSummary>> {
    let runs = store.campaign_runs(name)?;
    if runs.is_empty() {
        let mut known: Vec<String> = store.runs()?.into_iter().filter_map(|r| r.origin.campaign).collect();
        known.sort();
        known.dedup();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        bail!("{}: no run belongs to campaign `{name}` (campaigns in this store: {known})", store.location());
    }
    Ok(runs)
}

/// The machines of a campaign's runs, sorted, each once ([`analysis::campaign::machine_of`]).
pub fn machines(runs: &[RunSummary]) -> Vec<&str> {
    let mut m: Vec<&str> = runs.iter().map(analysis::campaign::machine_of).collect();
    m.sort();
    m.dedup();
    m
}

/// The runs of one machine among a campaign's: `machine`, or the only machine there is.
/// `how_to_name` is how the calling command names a machine (its flags), said in the error.
///
/// Errors: no run on that machine; no machine named while the campaign has several (listing them).
pub fn machine_runs(
    campaign: &str,
    runs: &[RunSummary],
    machine: Option<&str>,
    how_to_name: &str,
) -> Result<Vec<RunSummary>> {
    let all = machines(runs);
    let chosen = match (machine, all.as_slice()) {
        (Some(m), _) if all.contains(&m) => m,
        (Some(m), _) => bail!("campaign `{campaign}` has no run on machine `{m}` (its machines: {})", all.join(", ")),
        (None, [only]) => only,
        (None, _) => bail!("campaign `{campaign}` spans machines {}: name one ({how_to_name})", all.join(", ")),
    };
    Ok(runs.iter().filter(|r| analysis::campaign::machine_of(r) == chosen).cloned().collect())
}

/// The runs `name` means: one run by id or label ([`resolve_run`]), else every run of the
/// campaign `name`, oldest first.
///
/// Errors: no run has that id or label and no campaign that name.
pub fn runs_named(store: &Store, name: &str) -> Result<Vec<RunSummary>> {
    match resolve_run(store, Some(name)) {
        Ok(run) => Ok(vec![run]),
        Err(e) => {
            let campaign = store.campaign_runs(name)?;
            if campaign.is_empty() {
                return Err(e.context(format!("`{name}` names no run and no campaign")));
            }
            Ok(campaign)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Target;
    use crate::model::{RunData, RunInfo, RunOrigin};

    /// A store in a temporary folder with one empty run per `(source, label)`, ids 1, 2, ...
    pub(crate) fn store_with(runs: &[(RunSource, Option<&str>)]) -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let mut store = Store::open(&tmp.path().join("t.db")).unwrap();
        let data: Vec<RunData> = runs
            .iter()
            .map(|(source, label)| RunData {
                uid: None,
                info: RunInfo::blank("mlport test", Target::cpu()),
                origin: RunOrigin { source: *source, label: label.map(str::to_string), ..RunOrigin::default() },
                functions: Vec::new(),
                cases: Vec::new(),
                devices: Vec::new(),
                results: Vec::new(),
            })
            .collect();
        store.import_runs(&data).unwrap();
        (tmp, store)
    }

    #[test]
    fn labels_that_could_not_name_a_run_are_refused() {
        assert_eq!(label_problem(" "), Some("is empty"));
        assert_eq!(label_problem("12"), Some("looks like a run id"));
        assert_eq!(label_problem("all"), Some("is a keyword of --run"));
        assert!(label_problem("a..b").unwrap().contains("--slowdown"));
        assert!(label_problem("gpu@2").is_some());
        assert_eq!(label_problem("torch-2.5/gpu"), None);
    }

    #[test]
    fn latest_prefers_own_runs_over_the_papers() {
        let (_t, store) = store_with(&[
            (RunSource::Pytest, Some("mine")),
            (RunSource::ImportPaper, Some("paper/x")),
            (RunSource::Live, None),
        ]);
        assert_eq!(resolve_run(&store, None).unwrap().id, 3);
        let (_t, store) = store_with(&[(RunSource::Live, None), (RunSource::ImportPaper, Some("paper/x"))]);
        assert_eq!(resolve_run(&store, Some("latest")).unwrap().id, 1, "the live run, not the later import");
        let (_t, store) = store_with(&[(RunSource::ImportPaper, Some("p/1")), (RunSource::ImportPaper, Some("p/2"))]);
        assert_eq!(resolve_run(&store, None).unwrap().id, 2, "only paper runs: the newest");
        let runs = store.runs().unwrap();
        assert!(latest_live(&runs).is_none());
    }

    #[test]
    fn runs_are_named_by_id_or_label() {
        let (_t, store) = store_with(&[(RunSource::Live, None), (RunSource::Pytest, Some("gpu-box"))]);
        assert_eq!(resolve_run(&store, Some("2")).unwrap().origin.label.as_deref(), Some("gpu-box"));
        assert_eq!(resolve_run(&store, Some("gpu-box")).unwrap().id, 2);
        let e = resolve_run(&store, Some("tpu-box")).unwrap_err().to_string();
        assert!(e.contains("no run with id or label `tpu-box`"), "{e}");
        assert!(resolve_run(&store, Some("99999999999999999999")).unwrap_err().to_string().contains("too large"));
        assert!(check_label(&store, Some("gpu-box")).unwrap_err().to_string().contains("already labelled"));
        assert!(check_label(&store, Some("tpu-box")).is_ok());
        assert!(check_label(&store, None).is_ok());
        let (_t, empty) = store_with(&[]);
        assert!(resolve_run(&empty, None).unwrap_err().to_string().contains("the store holds no run"));
    }
}
