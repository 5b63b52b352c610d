//! `mlport run`: the command line turned into a run request, the run started or continued
//! ([`lifecycle::start`]), the Python side set up, the runner executed with the terminal view
//! listening, the run closed ([`lifecycle::close`]) and its report printed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::output::UsageError;
use super::report::print_portability;
use super::{ExitStatus, env};
use crate::cli::{RunArgs, values};
use crate::fleet::{self, Placement};
use crate::lifecycle::close::{self, Closed, close};
use crate::lifecycle::start::{self, Begun, CatalogueSource, Opened, Request, Start};
use crate::model::{Framework, Mode, RunSwitches, Target};
use crate::plan::Selection;
use crate::process_group;
use crate::progress::Progress;
use crate::pyenv;
use crate::runner::schedule::{self, Layout};
use crate::runner::{self, Event, EventSink, RunConfig};
use crate::testdata;
use crate::worker::protocol::Timing;
use crate::workspace;

/// Whether the command line changes the plan, which `--resume` cannot do.
fn changes_plan(args: &RunArgs) -> bool {
    args.catalogue.is_some()
        || !args.suites.is_empty()
        || !args.frameworks.is_empty()
        || !args.functions.is_empty()
        || !args.dtypes.is_empty()
        || args.seed != 0
        || args.label.is_some()
}

/// The new run the command line asks for, with its `--modes` and `--device` targets (`None`:
/// every device the workers report) parsed once; the switches that change results without
/// changing the plan take their threads from the lanes (`--threads`, or each lane's core count
/// under `--jobs`).
fn request(
    args: &RunArgs,
    catalogue: CatalogueSource,
    layout: &Layout,
    modes: &[Mode],
    devices: Option<Vec<Target>>,
) -> Request {
    Request {
        catalogue,
        selection: Selection {
            frameworks: values::dedup(&args.frameworks),
            functions: args.functions.clone(),
            dtypes: args.dtypes.clone(),
            kind: args.kind,
        },
        seed: args.seed,
        machine: args.machine.clone(),
        label: args.label.clone(),
        reference: args.reference.clone(),
        jax_x64: args.jax_x64,
        switches: RunSwitches {
            devices,
            modes: modes.to_vec(),
            threads: layout.threads,
            budget_ms: args.budget_ms,
            target_spread: args.target_spread,
            timeout_s: args.timeout,
            quick: args.quick,
            jobs: args.jobs.map(|n| n as u32),
        },
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

/// The campaign shard this process runs (`--campaign`, `--shard`, `--shards`, or a job array's
/// environment), refused with `--resume`.
///
/// Errors: a usage error for a shard without a campaign; `--resume` with a shard.
fn placement(args: &RunArgs) -> Result<Option<Placement>> {
    if args.resume.is_some() {
        if args.shard.is_some() || args.shards.is_some() || args.campaign.is_some() {
            bail!(
                "--resume continues a run named by id; a campaign's shard (--campaign, --shard, --shards, or \
                 MLPORT_CAMPAIGN/MLPORT_SHARDS in the environment) continues its own run when run again without --resume"
            );
        }
        if changes_plan(args) {
            bail!(
                "--resume continues a stored run's own plan; it cannot be combined with --catalogue, --suite, --framework, --function, --dtype, --seed or --label (start a new run instead)"
            );
        }
        return Ok(None);
    }
    fleet::placement(args.shard, args.shards, args.campaign.as_deref(), &|k| std::env::var(k).ok()).map_err(|e| {
        match e.downcast::<fleet::ShardWithoutCampaign>() {
            Ok(usage) => UsageError(usage.to_string()).into(),
            Err(e) => e,
        }
    })
}

/// The Python side of the run: the environment, the add-ons its cases and targets need
/// (installed on first use; a failure is said and the rest of the run goes on), and the
/// torch-xla stack's interpreter when torch runs on `xla:N`.
fn python_side(
    args: &RunArgs,
    start: &Start,
    modes: &[Mode],
    asked: Option<&Vec<Target>>,
) -> Result<(pyenv::PythonEnv, Option<std::path::PathBuf>)> {
    let frameworks = start.frameworks();
    let env = env::python_env(&args.python, &frameworks)?;
    for fw in env.install_failures.keys() {
        eprintln!("mlport: {fw} could not be installed in the managed environment; it is reported as not usable");
    }
    // An export route (`cpu/onnx`) needs its converters and runtimes; so does the onnxruntime
    // framework (its operator catalogue), from the same add-on.
    let ort = frameworks.contains(&Framework::Onnxruntime);
    let routes = asked.is_some_and(|d| d.iter().any(|t| t.mode().is_route())) || modes.iter().any(|m| m.is_route());
    if (ort || routes)
        && let Err(e) = pyenv::addon::ensure_ir_routes(&env)
    {
        eprintln!("mlport: {e:#}\nmlport: the export routes are reported unavailable; the rest of the run goes on");
    }
    // A suite's cases import it again when the run is resumed (listing installed it first).
    if start.has_suite_cases()
        && let Err(e) = pyenv::addon::ensure(&env, &pyenv::addon::SUITES)
    {
        eprintln!("mlport: {e:#}");
    }
    // A workload that builds from torchvision or flax needs the models add-on.
    for addon in pyenv::addon::needed(start.codes()) {
        if let Err(e) = pyenv::addon::ensure(&env, addon) {
            eprintln!(
                "mlport: {e:#}\nmlport: cases that import its modules fail as api_missing; the rest of the run goes on"
            );
        }
    }
    let xla = asked.is_some_and(|d| d.iter().any(Target::is_xla)) && frameworks.contains(&Framework::Torch);
    Ok((env, if xla { env::xla_python(&args.python, start.has_suite_cases()) } else { None }))
}

/// `--suite`: the suites listed from the installed frameworks (cached), said on stderr, as the
/// run's catalogue.
///
/// Errors: [`testdata::prepare`]'s: a framework or a module the suite imports is missing, an
/// `--op` no entry has; nothing is written to the store.
fn suites(args: &RunArgs) -> Result<crate::catalogue::Catalogue> {
    let frameworks: Vec<Framework> = args.suites.iter().map(|s| s.framework()).collect();
    let env = env::python_env(&args.python, &values::dedup(&frameworks))?;
    let prepared =
        testdata::prepare(&args.suites, args.samples, &args.dtypes, &args.ops, &env, process_group::interrupted())?;
    for l in &prepared.listed {
        eprintln!("mlport: {}", l.describe(&testdata::EntryFilter(args.ops.clone())));
    }
    Ok(prepared.catalogue)
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
    let placement = placement(&args)?;
    let catalogue = match (&args.catalogue, args.suites.is_empty() || args.resume.is_some()) {
        (_, false) => CatalogueSource::Given(suites(&args)?),
        (Some(p), _) => CatalogueSource::Path(p.clone()),
        (None, _) => CatalogueSource::Builtin,
    };
    let req = request(&args, catalogue, &layout, &modes, devices.clone());
    let (mut store, start) =
        match start::open(&db, &folders, args.resume.as_deref(), &req, placement.as_ref(), devices.clone())? {
            Opened::Run(store, start) => (store, start),
            Opened::Complete(store, id) => {
                print_portability(&store, id, args.format, false)?;
                return Ok(ExitStatus::Ok);
            }
        };
    // A shard holding no function of the plan is a finished run all the same, so that the
    // campaign's report counts it (and a rerun of it says it is complete); no worker starts.
    if let Start::New(new) = &start
        && new.plan.cases.is_empty()
    {
        let id = start::record_empty(&mut store, new)?;
        eprintln!("mlport: run {id}: no case to run; recorded as a finished run of the campaign in {db}");
        return Ok(ExitStatus::Ok);
    }
    // The Python side, before any run is recorded.
    let asked = match &start {
        Start::Resume(r) => r.devices.clone(),
        Start::New(_) => devices.clone(),
    };
    let (env, xla_python) = python_side(&args, &start, &modes, asked.as_ref())?;
    let script_dir = workspace::worker_dir()?;
    let Begun { run_id, cases, mut info, devices, lock } =
        start::begin(&mut store, &folders, start, devices, args.jax_x64)?;
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
    let interrupted = process_group::interrupted();

    let mut per_fw = BTreeMap::new();
    for c in &cases {
        *per_fw.entry(c.framework).or_insert(0u64) += 1;
    }
    let cpu_done = store.done_keys(run_id, &Target::cpu())?;
    let pending = cases.iter().filter(|c| !cpu_done.contains(&c.key)).count() as u64;
    let mut progress = Progress::new(pending, per_fw, db.to_string());
    let functions = store.functions(run_id)?.len();
    progress.event(&Event::RunStarting { run_id, cases: cases.len(), functions, layout: &layout, quick });
    let started = Instant::now();
    // Read now: once the store is unreachable it can no longer be asked.
    let campaign = store.run(run_id)?.origin.campaign;
    let ending = runner::execute(&mut store, run_id, &cases, &mut info, &cfg, &mut progress, interrupted)
        .map_err(|e| close::store_gone(e, &db, run_id, campaign))?;
    drop(lock); // the run's cases are done with (reports below only read)
    match close(&mut store, run_id, ending, started.elapsed(), &mut progress)? {
        Closed::Interrupted => Ok(ExitStatus::Interrupted),
        Closed::Stopped => Ok(ExitStatus::Error),
        Closed::Finished { results } => {
            print_portability(&store, run_id, args.format, false)?;
            if results == 0 {
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
