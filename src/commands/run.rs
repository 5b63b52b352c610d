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

use super::output::{command_line, now, plural};
use super::report::print_portability;
use super::resume::{self, pending_cases};
use super::{ExitStatus, env};
use crate::catalogue::{self, Catalogue};
use crate::cli::{RunArgs, values};
use crate::model::{CaseRow, Framework, RunInfo, RunState, Target};
use crate::plan::{self, Plan, Selection};
use crate::process;
use crate::progress::Progress;
use crate::runner::{self, Ending, RunConfig};
use crate::store::Store;
use crate::worker::protocol::Timing;
use crate::workspace;

/// What `run` executes: a stored run's pending cases, or a fresh plan.
enum Start {
    Resume(Box<resume::Resumed>),
    /// With the catalogue version of each planned framework.
    New(Plan, BTreeMap<Framework, String>),
}

impl Start {
    fn frameworks(&self) -> Vec<Framework> {
        let mut v: Vec<Framework> = match self {
            Start::Resume(r) => r.cases.iter().map(|c| c.framework).collect(),
            Start::New(plan, _) => plan.frameworks(),
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
}

/// Loads `--catalogue`, or the built-in catalogue.
pub fn load_catalogue(path: Option<&Path>) -> Result<Catalogue> {
    Ok(match path {
        Some(p) => Catalogue::new(catalogue::load_path(p)?)?,
        None => catalogue::builtin()?,
    })
}

/// A fresh plan from the catalogue and the selection on the command line.
fn new_start(args: &RunArgs) -> Result<Start> {
    let catalogue = load_catalogue(args.catalogue.as_deref())?;
    let sel = Selection {
        frameworks: values::dedup(&args.frameworks),
        functions: args.functions.clone(),
        dtypes: args.dtypes.clone(),
    };
    let plan = plan::plan(&catalogue, &sel, args.seed)?;
    let planned = plan.frameworks();
    let versions = catalogue
        .files
        .iter()
        .filter(|f| planned.contains(&f.framework))
        .map(|f| (f.framework, f.version.clone()))
        .collect();
    Ok(Start::New(plan, versions))
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

/// `mlport run`.
pub fn run(args: RunArgs) -> Result<ExitStatus> {
    let db = args.db.db.clone();
    let modes = values::modes(&args.modes);
    let devices = if args.devices.is_empty() { None } else { Some(values::targets(&args.devices, &modes)) };

    let (mut store, start) = match &args.resume {
        Some(which) => {
            if changes_plan(&args) {
                bail!(
                    "--resume continues a stored run's own plan; it cannot be combined with --catalogue, --framework, --function, --dtype or --seed (start a new run instead)"
                );
            }
            let mut store = workspace::open_existing(&db, "to resume")?;
            match resume::start(&mut store, &db, which, devices.clone(), args.format)? {
                Some(r) => (store, Start::Resume(Box::new(r))),
                None => return Ok(ExitStatus::Ok),
            }
        }
        None => {
            let start = new_start(&args)?;
            (workspace::open_store(&db)?, start)
        }
    };

    // The Python side, before any run is recorded.
    let env = env::python_env(&args.python, &start.frameworks())?;
    for fw in env.install_failures.keys() {
        eprintln!("mlport: {fw} could not be installed in the managed environment; it is reported as not usable");
    }
    let script_dir = workspace::worker_dir()?;

    // The run's lock is held while its cases execute.
    let (run_id, cases, mut info, devices, lock): (i64, Vec<CaseRow>, RunInfo, Option<Vec<Target>>, std::fs::File) =
        match start {
            Start::Resume(r) => {
                let r = *r;
                (r.summary.id, r.cases, r.summary.info, r.devices, r.lock)
            }
            Start::New(plan, versions) => {
                let info = new_run_info(versions, args.seed, args.reference.clone());
                let id = store.create_run(&info, &plan.functions, &plan.cases)?;
                let lock = workspace::lock_run(&db, id)?;
                store.plan_references(id, &plan.references)?;
                (id, plan.cases, info, devices, lock)
            }
        };
    let cfg = RunConfig {
        python: env.python.clone(),
        script_dir,
        run_dir: workspace::run_dir(&db, run_id),
        devices,
        modes,
        case_timeout: Duration::from_secs_f64(args.timeout),
        timing: Timing { budget_ms: args.budget_ms, target_spread: args.target_spread, ..Timing::default() },
        threads: args.threads,
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
        db.display()
    );
    let started = Instant::now();
    let mut progress = Progress::new(pending, per_fw);
    let ending = runner::execute(&mut store, run_id, &cases, &mut info, &cfg, &mut progress, interrupted)?;
    progress.finish();
    drop(lock); // the run's cases are done with (reports below only read)
    let elapsed = started.elapsed();
    let resume_hint = format!("`mlport run --resume {run_id} --db {}`", db.display());
    match ending {
        Ending::Interrupted => {
            store.finish_run(run_id, RunState::Interrupted)?;
            let s = store.run(run_id)?;
            eprintln!(
                "mlport: interrupted after {elapsed:.0?}: {} of {} cases recorded in {}; continue with {resume_hint}",
                s.results,
                s.cases_planned,
                db.display(),
            );
            Ok(ExitStatus::Interrupted)
        }
        Ending::Finished => {
            let left = pending_cases(&store, run_id)?;
            store.finish_run(run_id, if left == 0 { RunState::Finished } else { RunState::Incomplete })?;
            let counts: Vec<String> = progress.counts.iter().map(|(o, n)| format!("{n} {o}")).collect();
            let counts = if counts.is_empty() { "no case ran".to_string() } else { counts.join(", ") };
            eprintln!("mlport: run {run_id} ended after {:.1} s ({counts})", elapsed.as_secs_f64());
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
