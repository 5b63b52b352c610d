//! `mlport run`: plan (or resume), set up the Python side, execute, report.
//!
//! Order matters for "nothing is lost": the catalogue and plan are checked before the
//! store is touched, the store is checked before the (slow) environment set-up, and the
//! run is created only once the environment is ready, so a failed start leaves no
//! half-made run behind.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::output::{UsageError, command_line, now, plural};
use super::report::print_portability;
use super::resume::{self, pending_cases};
use super::select::check_label;
use super::{ExitStatus, env};
use crate::catalogue::{self, Catalogue};
use crate::cli::{RunArgs, values};
use crate::fleet::{self, Placement};
use crate::model::{CaseRow, Framework, Outcome, RunInfo, RunOrigin, RunSource, RunState, RunSwitches, Shard, Target};
use crate::plan::{self, Plan, Selection};
use crate::process;
use crate::progress::Progress;
use crate::pyenv;
use crate::runner::schedule::{self, Layout};
use crate::runner::{self, Ending, RunConfig};
use crate::store::{Location, Store, StoreError};
use crate::worker::protocol::Timing;
use crate::workspace;

/// What `run` executes: a stored run's pending cases, or a fresh plan.
enum Start {
    Resume(Box<resume::Resumed>),
    New(Box<NewRun>),
}

/// A run to create.
struct NewRun {
    plan: Plan,
    /// Its description: this machine, the catalogue versions, the switches it runs with.
    info: RunInfo,
    /// Its machine, campaign and shard.
    origin: RunOrigin,
}

impl Start {
    fn frameworks(&self) -> Vec<Framework> {
        let mut v: Vec<Framework> = match self {
            Start::Resume(r) => r.cases.iter().map(|c| c.framework).collect(),
            Start::New(new) => new.plan.frameworks(),
        };
        v.sort();
        v.dedup();
        v
    }
}

/// Whether the command line changes the plan, which `--resume` cannot do.
fn changes_plan(args: &RunArgs) -> bool {
    args.catalogue.is_some()
        || !args.frameworks.is_empty()
        || !args.functions.is_empty()
        || !args.dtypes.is_empty()
        || args.seed != 0
        || args.label.is_some()
}

/// Loads `--catalogue`, or the built-in catalogue.
pub fn load_catalogue(path: Option<&Path>) -> Result<Catalogue> {
    Ok(match path {
        Some(p) => Catalogue::new(catalogue::load_path(p)?)?,
        None => catalogue::builtin()?,
    })
}

/// A fresh plan from the catalogue and the selection on the command line, cut to the run's
/// shard when it has one (which may hold no function of the plan).
fn new_start(args: &RunArgs, placement: Option<&Placement>, layout: &Layout) -> Result<Start> {
    let catalogue = load_catalogue(args.catalogue.as_deref())?;
    let sel = Selection {
        frameworks: values::dedup(&args.frameworks),
        functions: args.functions.clone(),
        dtypes: args.dtypes.clone(),
        kind: args.kind,
    };
    let mut plan = plan::plan(&catalogue, &sel, args.seed)?;
    let mut origin = RunOrigin { machine: args.machine.clone(), label: args.label.clone(), ..RunOrigin::default() };
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
    let mut info = new_run_info(versions, args.seed, args.reference.clone());
    info.jax_x64 = args.jax_x64;
    info.switches = Some(switches(args, layout));
    Ok(Start::New(Box::new(NewRun { plan, info, origin })))
}

/// The switches on the command line that change results without changing the plan; the
/// threads are the lanes' (`--threads`, or each lane's core count under `--jobs`).
fn switches(args: &RunArgs, layout: &Layout) -> RunSwitches {
    let modes = values::modes(&args.modes);
    RunSwitches {
        devices: (!args.devices.is_empty()).then(|| values::targets(&args.devices, &modes)),
        modes,
        threads: layout.threads,
        budget_ms: args.budget_ms,
        target_spread: args.target_spread,
        timeout_s: args.timeout,
        quick: args.quick,
        jobs: args.jobs.map(|n| n as u32),
    }
}

/// The lanes of the run: `--jobs` and `--threads` on the cores this process may use
/// ([`schedule::layout`]).
///
/// Errors: a usage error when they ask for more cores than there are.
fn lanes(args: &RunArgs) -> Result<Layout> {
    let cores = schedule::available_cores();
    schedule::layout(&cores, args.jobs, args.threads).map_err(|e| UsageError(e).into())
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
    let mut info = RunInfo::blank(&command_line(), reference);
    info.started_at = now();
    info.catalogue_version = catalogue_version;
    info.seed = seed;
    runner::machine_info(&mut info);
    info
}

/// Says how many of the run's timed cases were timed while other processes held the CPUs
/// (run-queue wait above [`crate::stats::StatsConfig::max_runqueue_wait`]): their latencies
/// are flagged unstable in slowdown reports, and the user should know before reading them.
fn warn_contention(store: &Store, run_id: i64) -> Result<()> {
    let limit = crate::stats::StatsConfig::default().max_runqueue_wait;
    let shares: Vec<f64> = store.results(run_id)?.iter().filter_map(|r| r.result.runqueue_wait_share()).collect();
    let busy: Vec<f64> = shares.iter().copied().filter(|w| *w > limit).collect();
    if !busy.is_empty() {
        eprintln!(
            "mlport: {} of the run's {} timed cases waited for a CPU more than {:.0}% of their steady state (median {:.0}%): \
             other processes were using the cores, so their latencies are the machine's load as much as the \
             framework's (flagged unstable in `report --slowdown`); time them again on a quieter machine",
            busy.len(),
            shares.len(),
            100.0 * limit,
            100.0 * crate::stats::median(&busy),
        );
    }
    Ok(())
}

/// `e`, and when it says the store `db` stayed unreachable ([`StoreError::is_unreachable`]: the
/// PostgreSQL server went away longer than the store reconnects), what that means for run
/// `run_id` and how to finish it (`resume_hint`; a campaign's shard can also be run again).
fn store_gone(
    e: anyhow::Error,
    db: &Location,
    run_id: i64,
    resume_hint: &str,
    campaign: Option<String>,
) -> anyhow::Error {
    let gone = e.chain().any(|c| c.downcast_ref::<StoreError>().is_some_and(StoreError::is_unreachable));
    if !gone {
        return e;
    }
    let shard = match campaign {
        Some(c) => format!(" (or run the same shard of campaign `{c}` again: it continues this run)"),
        None => String::new(),
    };
    e.context(format!(
        "{db}: run {run_id} stopped: the store is unreachable. Every case it finished before is stored; once the server \
         is back, finish the run with {resume_hint}{shard}"
    ))
}

/// `mlport run`.
pub fn run(args: RunArgs) -> Result<ExitStatus> {
    // --format html is a report of `mlport report` only: refused before any work.
    super::output::format_of(args.format)?;
    let layout = lanes(&args)?;
    let db = args.db.db.clone();
    let folders = workspace::RunFolders::new(&db, args.outputs.outputs.as_deref());
    let modes = values::modes(&args.modes);
    let devices = if args.devices.is_empty() { None } else { Some(values::targets(&args.devices, &modes)) };

    let (mut store, start) = match &args.resume {
        Some(which) => {
            if args.shard.is_some() || args.shards.is_some() || args.campaign.is_some() {
                bail!(
                    "--resume continues a run named by id; a campaign's shard (--campaign, --shard, --shards, or \
                     MLPORT_CAMPAIGN/MLPORT_SHARDS in the environment) continues its own run when run again without --resume"
                );
            }
            if changes_plan(&args) {
                bail!(
                    "--resume continues a stored run's own plan; it cannot be combined with --catalogue, --framework, --function, --dtype, --seed or --label (start a new run instead)"
                );
            }
            let mut store = workspace::open_existing(&db, "to resume")?;
            match resume::start(&mut store, &folders, which, devices.clone(), args.format)? {
                Some(r) => (store, Start::Resume(Box::new(r))),
                None => return Ok(ExitStatus::Ok),
            }
        }
        None => {
            let placement =
                fleet::placement(args.shard, args.shards, args.campaign.as_deref(), &|k| std::env::var(k).ok())
                    .map_err(|e| match e.downcast::<fleet::ShardWithoutCampaign>() {
                        Ok(usage) => UsageError(usage.to_string()).into(),
                        Err(e) => e,
                    })?;
            let start = new_start(&args, placement.as_ref(), &layout)?;
            let mut store = workspace::open_store(&db)?;
            let runs = match &start {
                Start::New(new) if new.origin.campaign.is_some() => {
                    store.campaign_runs(new.origin.campaign.as_deref().unwrap_or_default())?
                }
                _ => Vec::new(),
            };
            let same = match &start {
                Start::New(new) => fleet::existing_shard(&runs, &new.origin, &new.info)?.cloned(),
                Start::Resume(_) => None,
            };
            match same {
                // The same shard again (a retried pod, a requeued task): continue its run.
                Some(summary) => {
                    eprintln!(
                        "mlport: campaign `{}` shard {} is run {}: continuing it",
                        summary.origin.campaign.as_deref().unwrap_or_default(),
                        summary.origin.shard.unwrap_or(Shard::WHOLE),
                        summary.id
                    );
                    match resume::continue_run(&mut store, &folders, summary, devices.clone(), args.format)? {
                        Some(r) => (store, Start::Resume(Box::new(r))),
                        None => return Ok(ExitStatus::Ok),
                    }
                }
                None => {
                    check_label(&store, args.label.as_deref())?;
                    (store, start)
                }
            }
        }
    };
    // A shard holding no function of the plan is a finished run all the same, so that the
    // campaign's report counts it (and a rerun of it says it is complete); no worker starts.
    if let Start::New(new) = &start
        && new.plan.cases.is_empty()
    {
        let id = create(&mut store, new)?;
        store.finish_run(id, RunState::Finished)?;
        eprintln!("mlport: run {id}: no case to run; recorded as a finished run of the campaign in {db}");
        return Ok(ExitStatus::Ok);
    }

    // The Python side, before any run is recorded.
    let env = env::python_env(&args.python, &start.frameworks())?;
    for fw in env.install_failures.keys() {
        eprintln!("mlport: {fw} could not be installed in the managed environment; it is reported as not usable");
    }
    // torch on xla:N runs in the torch-xla stack's own environment, created on first use.
    let asked: Option<&Vec<Target>> = match &start {
        Start::Resume(r) => r.devices.as_ref(),
        Start::New(_) => devices.as_ref(),
    };
    // An export route (`cpu/onnx`) needs its converters and runtimes: installed on first use; so
    // does the onnxruntime framework (its operator catalogue), from the same add-on.
    let ort = start.frameworks().contains(&Framework::Onnxruntime);
    let routes = asked.is_some_and(|d| d.iter().any(|t| t.mode().is_route())) || modes.iter().any(|m| m.is_route());
    if (ort || routes)
        && let Err(e) = pyenv::addon::ensure_ir_routes(&env)
    {
        eprintln!("mlport: {e:#}\nmlport: the export routes are reported unavailable; the rest of the run goes on");
    }
    // A workload that builds from torchvision or flax needs the models add-on: installed on first use.
    let codes: Vec<&str> = match &start {
        Start::Resume(r) => r.cases.iter().filter_map(|c| c.spec.catalogue()?.code.as_deref()).collect(),
        Start::New(new) => new.plan.cases.iter().filter_map(|c| c.spec.catalogue()?.code.as_deref()).collect(),
    };
    for addon in pyenv::addon::needed(codes) {
        if let Err(e) = pyenv::addon::ensure(&env, addon) {
            eprintln!(
                "mlport: {e:#}\nmlport: cases that import its modules fail as api_missing; the rest of the run goes on"
            );
        }
    }
    let xla_python =
        if asked.is_some_and(|d| d.iter().any(Target::is_xla)) && start.frameworks().contains(&Framework::Torch) {
            env::xla_python(&args.python)
        } else {
            None
        };
    let script_dir = workspace::worker_dir()?;

    // The run's lock is held while its cases execute.
    let (run_id, cases, mut info, devices, lock): (i64, Vec<CaseRow>, RunInfo, Option<Vec<Target>>, std::fs::File) =
        match start {
            Start::Resume(r) => {
                let r = *r;
                if args.jax_x64 && !r.summary.info.jax_x64 {
                    bail!(
                        "run {} ran JAX with jax_enable_x64 off; --resume continues it the same way (start a new \
                         run for --jax-x64)",
                        r.summary.id
                    );
                }
                (r.summary.id, r.cases, r.summary.info, r.devices, r.lock)
            }
            Start::New(new) => {
                let id = create(&mut store, &new)?;
                crate::fault::point("after-create-run");
                let NewRun { plan, info, .. } = *new;
                let lock = folders.lock_run(id)?;
                store.claim_run(id)?;
                (id, plan.cases, info, devices, lock)
            }
        };
    // `--quick` is the run's: a resumed quick run stays untimed, a resumed timed run timed.
    let quick = info.switches.as_ref().map_or(args.quick, |s| s.quick);
    let cfg = RunConfig {
        python: env.python.clone(),
        xla_python,
        script_dir,
        run_dir: folders.run_dir(run_id),
        devices,
        modes,
        case_timeout: Duration::from_secs_f64(args.timeout),
        timing: Timing {
            budget_ms: args.budget_ms,
            target_spread: args.target_spread,
            steady: !quick,
            ..Timing::default()
        },
        layout: layout.clone(),
        jax_x64: info.jax_x64,
        ..RunConfig::default()
    };
    workspace::create_dir(&cfg.run_dir)?;
    let interrupted = process::interrupted();

    let mut per_fw = BTreeMap::new();
    let cpu_done = store.done_keys(run_id, &Target::cpu())?;
    for c in &cases {
        *per_fw.entry(c.framework).or_insert(0u64) += 1;
    }
    let pending = cases.iter().filter(|c| !cpu_done.contains(&c.key)).count() as u64;
    eprintln!(
        "mlport: run {run_id}: {} of {}, store {}",
        plural(cases.len(), "case"),
        plural(store.functions(run_id)?.len(), "function"),
        db
    );
    let started = Instant::now();
    let mut progress = Progress::new(pending, per_fw);
    let resume_hint = format!("`mlport run --resume {run_id} --db {db}`");
    // Read now: once the store is unreachable it can no longer be asked.
    let campaign = store.run(run_id)?.origin.campaign;
    if layout.jobs() > 1 {
        let sets: Vec<String> = layout.sets.iter().map(|s| schedule::describe(s)).collect();
        eprintln!(
            "mlport: {} workers at once, pinned to cores {} ({} each)",
            layout.jobs(),
            sets.join(" | "),
            plural(layout.threads.unwrap_or(1) as usize, "thread")
        );
    }
    if quick {
        eprintln!("mlport: --quick: portability only, no steady-state timing (timings are absent from this run)");
    }
    let ending = runner::execute(&mut store, run_id, &cases, &mut info, &cfg, &mut progress, interrupted)
    .map_err(|e| store_gone(e, &db, run_id, &resume_hint, campaign))?;
    progress.finish();
    drop(lock); // the run's cases are done with (reports below only read)
    let elapsed = started.elapsed();
    match ending {
        Ending::Interrupted => {
            store.finish_run(run_id, RunState::Interrupted)?;
            let s = store.run(run_id)?;
            eprintln!(
                "mlport: interrupted after {elapsed:.0?}: {} of {} cases recorded in {}; continue with {resume_hint}",
                s.results, s.cases_planned, db,
            );
            Ok(ExitStatus::Interrupted)
        }
        Ending::OwnIoFailed { case_key, error } => {
            // mlport's own file, not the function: nothing was recorded for the case, which stays
            // pending; the run is `interrupted`, never `finished`, until `--resume` completes it.
            let recorded = store.finish_run(run_id, RunState::Interrupted).and_then(|()| store.run(run_id));
            let counts = match &recorded {
                Ok(s) => format!("{} of {} cases recorded in {db}", s.results, s.cases_planned),
                Err(e) => format!("the store could not be updated either ({e})"),
            };
            eprintln!(
                "error: mlport stopped run {run_id}: it {error} (its own file, while running {case_key}); that is no \
                 outcome of any function, so nothing was recorded for {case_key}, which stays pending. {counts}. \
                 Free space (or fix the folder) and continue with {resume_hint}"
            );
            Ok(ExitStatus::Error)
        }
        Ending::Finished => {
            let left = pending_cases(&store, run_id)?;
            store.finish_run(run_id, if left == 0 { RunState::Finished } else { RunState::Incomplete })?;
            // The run's results by outcome as the store holds them after the closing comparison
            // pass, which can make a pass a wrong_result (every workload is judged there). A
            // resumed run counts all its results.
            let results = store.results(run_id)?;
            let mut by_outcome: std::collections::BTreeMap<crate::model::Outcome, u64> = Default::default();
            for r in &results {
                *by_outcome.entry(r.result.outcome).or_default() += 1;
            }
            let counts: Vec<String> = by_outcome.iter().map(|(o, n)| format!("{n} {o}")).collect();
            let counts = if counts.is_empty() { "no case ran".to_string() } else { counts.join(", ") };
            // Passes nothing could compare (docs/catalogue.md, "References"), over the whole run.
            let unchecked = results.iter().filter(|r| r.unchecked(RunSource::Live)).count();
            let unchecked = match unchecked {
                0 => String::new(),
                n => format!("; {n} ran unchecked: passed, with nothing to compare the answer with"),
            };
            eprintln!("mlport: run {run_id} ended after {:.1} s ({counts}{unchecked})", elapsed.as_secs_f64());
            let references = store.references(run_id)?;
            if let Some(note) = crate::analysis::coverage::missing_references_note(&references) {
                // A crashed or timed-out reference may go through on a fresh worker; a failed one will not.
                let retry = references.iter().any(|r| matches!(r.outcome, Some(Outcome::Crash | Outcome::Timeout)));
                let hint = if retry { "; `--resume` computes a crashed or timed-out one again" } else { "" };
                eprintln!("mlport: {note}{hint}");
            }
            warn_contention(&store, run_id)?;
            if left > 0 {
                eprintln!(
                    "mlport: {} still pending (a device was unavailable or a worker could not be restarted: see \
                     above); continue with {resume_hint} once it is",
                    plural(left, "case")
                );
            }
            print_portability(&store, run_id, args.format, false)?;
            if store.run(run_id)?.results == 0 {
                eprintln!("error: no case could run: no framework was usable on the devices asked for (see above)");
                return Ok(ExitStatus::Error);
            }
            Ok(ExitStatus::Ok)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> RunArgs {
        let mut v = vec!["mlport", "run"];
        v.extend_from_slice(line);
        match crate::cli::Cli::try_parse_from(v).unwrap().command {
            crate::cli::Command::Run(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn resume_refuses_what_changes_the_plan() {
        assert!(!changes_plan(&args(&["--resume"])));
        assert!(!changes_plan(&args(&["--resume", "3", "--device", "cuda:0", "--timeout", "5"])));
        for extra in [["--function", "torch.sum"], ["--framework", "jax"], ["--dtype", "float16"], ["--seed", "4"]] {
            assert!(changes_plan(&args(&extra)), "{extra:?}");
        }
    }
}
