//! Starting a run: a fresh plan from the catalogue and a selection (cut to a campaign's shard),
//! or a stored run continued — by `--resume`, or because a campaign's shard is run again — and,
//! once the Python side is ready, the run created (or locked) for the runner.
//!
//! Order matters for "nothing is lost": the catalogue and plan are checked before the store is
//! touched, the store before the (slow) environment set-up, and the run is created only once
//! the environment is ready ([`begin`]), so a failed start leaves no half-made run behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::resume::{self, Continued, Resumed};
use super::select::check_label;
use crate::catalogue::{self, Catalogue};
use crate::fleet::{self, Placement};
use crate::model::{CaseRow, Framework, RunInfo, RunOrigin, RunState, RunSwitches, Shard, Target};
use crate::plan::{self, Plan, Selection};
use crate::render::units::plural;
use crate::store::{Location, Store};
use crate::workspace::{self, RunFolders};

/// What a new run is asked for: the command line's plan and switches, typed.
#[derive(Clone, Debug)]
pub struct Request {
    /// Where the cases come from: the built-in catalogue, `--catalogue`, or a suite's listing.
    pub catalogue: CatalogueSource,
    /// Frameworks, functions, dtypes and kind of case to plan.
    pub selection: Selection,
    /// `--seed`: the inputs' seed.
    pub seed: u64,
    /// `--machine`: the machine's name in a campaign.
    pub machine: Option<String>,
    /// `--label`: the run's name.
    pub label: Option<String>,
    /// `--reference`: the reference device.
    pub reference: Target,
    /// `--jax-x64`: JAX's 64-bit mode.
    pub jax_x64: bool,
    /// The switches that change results without changing the plan.
    pub switches: RunSwitches,
}

/// What a run executes: a stored run's pending cases, or a fresh plan.
pub enum Start {
    /// A stored run continued.
    Resume(Box<Resumed>),
    /// A run to create.
    New(Box<NewRun>),
}

/// A run to create.
pub struct NewRun {
    /// Its plan.
    pub plan: Plan,
    /// Its description: this machine, the catalogue versions, the switches it runs with.
    pub info: RunInfo,
    /// Its machine, campaign and shard.
    pub origin: RunOrigin,
}

impl Start {
    /// The run's planned cases: the stored run's, or the fresh plan's.
    fn cases(&self) -> &[CaseRow] {
        match self {
            Start::Resume(r) => &r.cases,
            Start::New(new) => &new.plan.cases,
        }
    }

    /// The frameworks the run's cases need, each once, in order.
    pub fn frameworks(&self) -> Vec<Framework> {
        let mut v: Vec<Framework> = self.cases().iter().map(|c| c.framework).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Whether some case comes from a framework's own test data (`--suite`), whose worker
    /// imports need the `suites` add-on.
    pub fn has_suite_cases(&self) -> bool {
        self.cases().iter().any(|c| c.spec.catalogue().is_some_and(|s| s.suite.is_some()))
    }

    /// The source code of the run's catalogue cases (`code = ...`), for the add-ons they import.
    pub fn codes(&self) -> Vec<&str> {
        self.cases().iter().filter_map(|c| c.spec.catalogue()?.code.as_deref()).collect()
    }
}

/// What [`open`] found: a run to execute, or one that was already complete.
pub enum Opened {
    /// Execute it (after the Python side is ready, [`begin`]).
    Run(Store, Start),
    /// The stored run (this id) was already complete and is now finished: nothing to run.
    Complete(Store, i64),
}

/// Where a new run's cases come from.
#[derive(Clone, Debug, Default)]
pub enum CatalogueSource {
    /// The catalogue built into the binary.
    #[default]
    Builtin,
    /// `--catalogue`: a file or folder of TOML files.
    Path(PathBuf),
    /// `--suite`: a framework's own test data, already listed ([`crate::testdata`]).
    Given(Catalogue),
}

/// Loads `--catalogue`, or the built-in catalogue.
///
/// Errors: the catalogue's, naming file, line and column.
pub fn load_catalogue(path: Option<&Path>) -> Result<Catalogue> {
    Ok(match path {
        Some(p) => Catalogue::new(catalogue::load_path(p)?)?,
        None => catalogue::builtin()?,
    })
}

/// A fresh plan for `req`, cut to the run's shard when it has one (which may hold no function
/// of the plan).
///
/// Errors: the catalogue's and the plan's (an unknown function or dtype).
fn new_run(req: &Request, placement: Option<&Placement>) -> Result<NewRun> {
    let catalogue = match &req.catalogue {
        CatalogueSource::Builtin => load_catalogue(None)?,
        CatalogueSource::Path(p) => load_catalogue(Some(p))?,
        CatalogueSource::Given(c) => c.clone(),
    };
    let mut plan = plan::plan(&catalogue, &req.selection, req.seed)?;
    let mut origin = RunOrigin { machine: req.machine.clone(), label: req.label.clone(), ..RunOrigin::default() };
    if let Some(p) = placement {
        origin.campaign = Some(p.campaign.clone());
        origin.shard = Some(p.shard);
        origin.plan_digest = Some(plan.digest());
        let whole = (plan.functions.len(), plan.cases.len());
        plan = plan::shard(&catalogue, &plan, p.shard);
        eprintln!(
            "mlport: campaign `{}`, shard {} ({}): {} and {} of the plan's {} and {}",
            p.campaign,
            p.shard,
            p.source.describe(),
            plural(plan.functions.len(), "function"),
            plural(plan.cases.len(), "case"),
            plural(whole.0, "function"),
            plural(whole.1, "case"),
        );
        if plan.cases.is_empty() {
            eprintln!("mlport: shard {} holds no function of this plan: nothing to run", p.shard);
        }
    }
    let planned = plan.frameworks();
    let versions = catalogue
        .files
        .iter()
        .filter(|f| planned.contains(&f.framework))
        .map(|f| (f.framework, f.version.clone()))
        .collect();
    let mut info = new_run_info(versions, req.seed, req.reference.clone());
    info.jax_x64 = req.jax_x64;
    info.switches = Some(req.switches.clone());
    Ok(NewRun { plan, info, origin })
}

/// Opens the store `db` for a run: the stored run `resume` names (`latest` or an id), else a new
/// run of `req` — or, when a campaign's shard is run again, that shard's stored run continued.
/// `devices`: the targets the command line names for a continued run (`None`: those it
/// recorded).
///
/// Errors: the plan's, the store's, no run to resume, a run executing elsewhere, a `--label`
/// already taken.
pub fn open(
    db: &Location,
    folders: &RunFolders,
    resume: Option<&str>,
    req: &Request,
    placement: Option<&Placement>,
    devices: Option<Vec<Target>>,
) -> Result<Opened> {
    let opened = |store, c: Continued| match c {
        Continued::Pending(r) => Opened::Run(store, Start::Resume(r)),
        Continued::Complete(id) => Opened::Complete(store, id),
    };
    if let Some(which) = resume {
        let mut store = workspace::open_existing(db, "to resume")?;
        let continued = resume::start(&mut store, folders, which, devices)?;
        return Ok(opened(store, continued));
    }
    let new = new_run(req, placement)?;
    let mut store = workspace::open_store(db)?;
    let runs = match &new.origin.campaign {
        Some(campaign) => store.campaign_runs(campaign)?,
        None => Vec::new(),
    };
    match fleet::existing_shard(&runs, &new.origin, &new.info)?.cloned() {
        // The same shard again (a retried pod, a requeued task): continue its run.
        Some(summary) => {
            eprintln!(
                "mlport: campaign `{}` shard {} is run {}: continuing it",
                summary.origin.campaign.as_deref().unwrap_or_default(),
                summary.origin.shard.unwrap_or(Shard::WHOLE),
                summary.id
            );
            let continued = resume::continue_run(&mut store, folders, summary, devices)?;
            Ok(opened(store, continued))
        }
        None => {
            check_label(&store, req.label.as_deref())?;
            Ok(Opened::Run(store, Start::New(Box::new(new))))
        }
    }
}

/// A run ready for the runner: created or locked, with its cases.
pub struct Begun {
    /// The run's id.
    pub run_id: i64,
    /// All its planned cases (the runner skips those already done).
    pub cases: Vec<CaseRow>,
    /// Its description, which the runner completes as workers report.
    pub info: RunInfo,
    /// The targets to run on (`None`: every device the workers report).
    pub devices: Option<Vec<Target>>,
    /// The run's lock, held while its cases execute ([`RunFolders::lock_run`]).
    pub lock: std::fs::File,
}

/// Creates the new run (state `running`) and locks it, or takes the continued run's lock;
/// `devices` are the command line's targets for a new run. `jax_x64`: whether the command line
/// asks for JAX's 64-bit mode, which a continued run must have been started with.
///
/// Errors: the store's; another process started the same shard meanwhile; the run's folder cannot be
/// made or locked (a new run is then recorded as interrupted); `--jax-x64` on a run
/// that ran without it.
pub fn begin(
    store: &mut Store,
    folders: &RunFolders,
    start: Start,
    devices: Option<Vec<Target>>,
    jax_x64: bool,
) -> Result<Begun> {
    match start {
        Start::Resume(r) => {
            let r = *r;
            if jax_x64 && !r.summary.info.jax_x64 {
                bail!(
                    "run {} ran JAX with jax_enable_x64 off; --resume continues it the same way (start a new \
                     run for --jax-x64)",
                    r.summary.id
                );
            }
            Ok(Begun { run_id: r.summary.id, cases: r.cases, info: r.summary.info, devices: r.devices, lock: r.lock })
        }
        Start::New(new) => {
            let id = create(store, &new)?;
            crate::fault::point("after-create-run");
            let NewRun { plan, info, .. } = *new;
            let lock = match folders.lock_run(id) {
                Ok(lock) => lock,
                Err(e) => {
                    // Created but not runnable here: never left `running` with no process on it.
                    let _ = store.finish_run(id, RunState::Interrupted);
                    return Err(anyhow::Error::new(e).context(format!(
                        "run {id} was created but its folder cannot be used; it is recorded as interrupted: fix the \
                         folder (--outputs) and continue it with `mlport run --resume {id}`"
                    )));
                }
            };
            store.claim_run(id)?;
            Ok(Begun { run_id: id, cases: plan.cases, info, devices, lock })
        }
    }
}

/// Records a new run that plans no case (a campaign's shard holding no function of the plan)
/// as finished, so that the campaign's report counts it and a rerun says it is complete; no
/// worker starts. Returns its id.
///
/// Errors: the store's.
pub fn record_empty(store: &mut Store, new: &NewRun) -> Result<i64> {
    let id = create(store, new)?;
    store.finish_run(id, RunState::Finished)?;
    Ok(id)
}

/// Creates the new run (state `running`) with its plan: cases and float64 references in one
/// transaction. Errors: the store's, and, when another
/// process started the same shard since it was looked up, an error saying so.
fn create(store: &mut Store, new: &NewRun) -> Result<i64> {
    let NewRun { plan, info, origin } = new;
    // The plan's references in the same transaction: a kill cannot leave a run without its checks.
    match store.create_planned_run(info, origin, &plan.functions, &plan.cases, &plan.references) {
        Ok(id) => Ok(id),
        Err(e) => {
            // Another process may have started the same shard since it was looked up.
            let campaign = origin.campaign.as_deref().unwrap_or_default();
            if let Some(other) = fleet::existing_shard(&store.campaign_runs(campaign)?, origin, info)? {
                bail!(
                    "shard {} of campaign `{}` was started by another mlport process meanwhile (run {}); nothing \
                     was written: run again to continue it",
                    origin.shard.unwrap_or(Shard::WHOLE),
                    campaign,
                    other.id
                );
            }
            Err(e.into())
        }
    }
}

/// The description of a new run: this machine, now, and how it was asked for.
/// Python and framework versions are filled in as workers report them.
fn new_run_info(catalogue_version: BTreeMap<Framework, String>, seed: u64, reference: Target) -> RunInfo {
    let mut info = RunInfo::blank(&super::command_line(), reference);
    info.started_at = super::now();
    info.catalogue_version = catalogue_version;
    info.seed = seed;
    crate::runner::machine_info(&mut info);
    info
}
