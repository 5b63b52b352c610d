//! The runs one report reads: one run (`--run`), or one machine's runs of a campaign
//! (`--campaign`, `--machine`: disjoint shards of one plan) read together as if they were one
//! run.

use anyhow::Result;

use crate::analysis;
use crate::cli::report::RunPick;
use crate::lifecycle::select::{self, resolve_run};
use crate::model::{ComparisonRow, DeviceInfo, ReferenceRow, ResultRow, RunSummary};
use crate::store::Store;

/// The runs picked, and how they read as one.
pub struct Picked {
    /// The run, or the machine's first run with the group's machine and summed counts.
    pub summary: RunSummary,
    /// The runs read, in the campaign's order.
    pub ids: Vec<i64>,
    /// The campaign read, if any (it names the runs in messages).
    campaign: Option<String>,
}

impl Picked {
    /// The run `spec` (default: the latest), or with `pick.campaign` the runs of `machine`
    /// (else `pick.machine`, else the campaign's only machine).
    ///
    /// Errors: no such run, campaign or machine; a campaign of several machines and none named.
    pub fn of(store: &Store, pick: &RunPick, spec: Option<&str>, machine: Option<&str>) -> Result<Picked> {
        let Some(campaign) = &pick.campaign else {
            let summary = resolve_run(store, spec)?;
            return Ok(Picked { ids: vec![summary.id], summary, campaign: None });
        };
        let runs = select::campaign_runs(store, campaign)?;
        let mine = select::machine_runs(
            campaign,
            &runs,
            machine.or(pick.machine.as_deref()),
            "--machine NAME, or DEVICE@NAME in --slowdown",
        )?;
        let mut summary = mine[0].clone();
        summary.origin.machine = Some(analysis::campaign::machine_of(&mine[0]).to_string());
        summary.cases_planned = mine.iter().map(|r| r.cases_planned).sum();
        summary.results = mine.iter().map(|r| r.results).sum();
        Ok(Picked { summary, ids: mine.iter().map(|r| r.id).collect(), campaign: Some(campaign.clone()) })
    }

    /// Every result of the runs.
    pub fn results(&self, store: &Store) -> Result<Vec<ResultRow>> {
        self.gather(|id| store.results(id))
    }

    /// The devices the runs saw.
    pub fn devices(&self, store: &Store) -> Result<Vec<DeviceInfo>> {
        self.gather(|id| store.devices(id))
    }

    /// The runs' comparisons with the float64 reference.
    pub fn comparisons(&self, store: &Store) -> Result<Vec<ComparisonRow>> {
        self.gather(|id| store.comparisons(id))
    }

    /// The runs' float64 references.
    pub fn references(&self, store: &Store) -> Result<Vec<ReferenceRow>> {
        self.gather(|id| store.references(id))
    }

    fn gather<T, E: Into<anyhow::Error>>(&self, read: impl Fn(i64) -> Result<Vec<T>, E>) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for id in &self.ids {
            out.extend(read(*id).map_err(Into::into)?);
        }
        Ok(out)
    }

    /// How the runs read are named in messages: `run 3`, or `machine gpu-box of campaign c (runs 1, 2)`.
    pub fn describe(&self) -> String {
        match &self.campaign {
            None => format!("run {}", self.summary.id),
            Some(c) => {
                let ids: Vec<String> = self.ids.iter().map(i64::to_string).collect();
                format!(
                    "machine {} of campaign `{c}` (runs {})",
                    self.summary.origin.machine.as_deref().unwrap_or_default(),
                    ids.join(", ")
                )
            }
        }
    }
}
