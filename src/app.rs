//! The commands: each takes parsed arguments, does its job through the library
//! modules, and writes results to stdout (logs and progress go to stderr).

use std::collections::{BTreeMap, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::catalogue::{self, Catalogue};
use crate::cli::{
    self, FormatArg, ImportPaperArgs, ImportPytestJsonArgs, ListArgs, PytestArgs, PythonArg, ReportArgs, RunArgs,
};
use crate::import;
use crate::model::{CaseRow, Device, Framework, RunInfo, RunState, RunSummary};
use crate::plan::{self, Plan, Selection};
use crate::progress::Progress;
use crate::pyenv::{self, PythonEnv};
use crate::report::{self, Format, ReportOptions};
use crate::runner::{self, Ending, RunConfig};
use crate::store::{FrameworkInfo, RunSource, Store};
use crate::worker::{self, protocol::Timing};

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Opens (or creates) the store, saying plainly when its folder does not exist.
fn open_store(db: &Path) -> Result<Store> {
    if let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
        bail!("{}: the folder {} does not exist", db.display(), parent.display());
    }
    Ok(Store::open(db)?)
}

fn format_of(f: FormatArg) -> Format {
    match f {
        FormatArg::Table => Format::Table,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Json => Format::Json,
        FormatArg::Csv => Format::Csv,
    }
}

fn load_catalogue(path: Option<&Path>) -> Result<Catalogue> {
    Ok(match path {
        Some(p) => Catalogue::new(catalogue::load_path(p)?)?,
        None => catalogue::builtin()?,
    })
}

fn python_env(arg: &PythonArg, frameworks: &[Framework]) -> Result<PythonEnv> {
    match &arg.python {
        Some(p) => pyenv::user_python(p),
        None => pyenv::ensure_managed(frameworks),
    }
}

fn worker_dir() -> Result<PathBuf> {
    let dir = pyenv::cache_dir().join("worker").join(worker::sources_hash());
    worker::install_scripts(&dir).with_context(|| format!("cannot write the worker's sources to {}", dir.display()))
}

/// The folder for a run's files (.npy outputs): `.mlport/<store file name>-run-<id>`
/// beside the store, as an absolute path, so stores sharing a folder never share files.
fn run_dir(db: &Path, run_id: i64) -> PathBuf {
    // The store's real path when it exists (a symlink to a store shares its run folders, and so
    // its run locks).
    let real = db.canonicalize().ok();
    let db = real.as_deref().unwrap_or(db);
    let parent = db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let parent = parent.canonicalize().unwrap_or_else(|_| parent.to_path_buf());
    let name = db.file_name().map_or_else(|| "mlport.db".into(), |n| n.to_string_lossy().into_owned());
    parent.join(".mlport").join(format!("{name}-run-{run_id}"))
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

/// Takes the run's lock (`run.lock` in its folder, an exclusive advisory lock held until
/// the returned file is dropped or the process ends), so that two processes never execute
/// the same run: a second `--resume` of a run still executing is refused.
///
/// Errors: the run is being executed by another process; the folder or file cannot be made.
fn lock_run(db: &Path, run_id: i64) -> Result<std::fs::File> {
    let dir = run_dir(db, run_id);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join("run.lock");
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "run {run_id} in {} is being executed by another mlport process right now (it holds {}); \
             wait for it, or stop it (Ctrl-C) and resume then",
            db.display(),
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What `run` executes: a stored run's pending cases, or a fresh plan.
enum Start {
    Resume(Box<RunSummary>, Vec<CaseRow>),
    /// With the catalogue version of each planned framework.
    New(Plan, BTreeMap<Framework, String>),
}

impl Start {
    fn frameworks(&self) -> Vec<Framework> {
        let mut v: Vec<Framework> = match self {
            Start::Resume(_, cases) => cases.iter().map(|c| c.framework).collect(),
            Start::New(plan, _) => plan.frameworks(),
        };
        v.sort();
        v.dedup();
        v
    }
}

/// `mlport run`: plan, set up, execute, report. Returns the process exit code.
///
/// Order matters for "nothing is lost": the catalogue and plan are checked before the
/// store is touched, the store is checked before the (slow) environment set-up, and the
/// run is created only once the environment is ready, so a failed start leaves no
/// half-made run behind.
pub fn run(args: RunArgs) -> Result<i32> {
    let db = args.db.db.clone();
    let modes = cli::parse_modes(&args.modes)?;
    let mut devices =
        if args.devices.is_empty() { None } else { Some(cli::parse_targets(&args.devices, &args.modes)?) };
    let reference: Device = args.reference.parse().map_err(|e: String| anyhow::anyhow!("--reference: {e}"))?;
    let timeout = cli::positive("--timeout", args.timeout)?;
    if timeout > catalogue::MAX_TIMEOUT_S {
        bail!("--timeout {timeout:e} is longer than one day ({} s)", catalogue::MAX_TIMEOUT_S);
    }
    let budget = cli::positive("--budget-ms", args.budget_ms)?;

    let (mut store, start, mut lock) = match &args.resume {
        Some(which) => {
            let changes_plan = args.catalogue.is_some()
                || !args.frameworks.is_empty()
                || !args.functions.is_empty()
                || !args.dtypes.is_empty()
                || args.seed != 0;
            if changes_plan {
                bail!(
                    "--resume continues a stored run's own plan; it cannot be combined with --catalogue, --framework, --function, --dtype or --seed (start a new run instead)"
                );
            }
            let mut store = open_existing(&db, "to resume")?;
            match resume_start(&args, which, &mut store, &mut devices)? {
                Some((start, lock)) => (store, start, Some(lock)),
                None => return Ok(0),
            }
        }
        None => {
            let start = new_start(&args)?;
            (open_store(&db)?, start, None)
        }
    };

    // The Python side, before any run is recorded.
    let env = python_env(&args.python, &start.frameworks())?;
    for fw in env.install_failures.keys() {
        eprintln!("mlport: {fw} could not be installed in the managed environment; it is reported as not usable");
    }
    let script_dir = worker_dir()?;

    let (run_id, cases, mut info) = match start {
        Start::Resume(summary, cases) => (summary.id, cases, summary.info.clone()),
        Start::New(plan, versions) => {
            let info = new_run_info(versions, args.seed, reference);
            let id = store.create_run(&info, &plan.functions, &plan.cases)?;
            lock = Some(lock_run(&db, id)?);
            store.plan_references(id, &plan.references)?;
            (id, plan.cases, info)
        }
    };
    let cfg = RunConfig {
        python: env.python.clone(),
        script_dir,
        run_dir: run_dir(&db, run_id),
        devices,
        modes,
        case_timeout: Duration::from_secs_f64(timeout),
        timing: Timing {
            budget_ms: budget,
            target_spread: cli::positive("--target-spread", args.target_spread)?,
            ..Timing::default()
        },
        threads: match args.threads {
            Some(0) => bail!("--threads must be at least 1"),
            t => t,
        },
        ..RunConfig::default()
    };
    std::fs::create_dir_all(&cfg.run_dir).with_context(|| format!("cannot create {}", cfg.run_dir.display()))?;
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));

    let mut per_fw = BTreeMap::new();
    let cpu_done = store.done_keys(run_id, &Device::cpu())?;
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
    let ending = runner::execute(&mut store, run_id, &cases, &mut info, &cfg, &mut progress, &INTERRUPTED)?;
    progress.finish();
    drop(lock.take()); // the run's cases are done with (reports below only read)
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
            Ok(EXIT_INTERRUPTED)
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
            print_report(&store, run_id, format_of(args.format), &ReportOptions::default(), false)?;
            if store.run(run_id)?.results == 0 {
                eprintln!("error: no case could run: no framework was usable on the devices asked for (see above)");
                return Ok(1);
            }
            Ok(0)
        }
    }
}

/// Fails, saying `why`, when the store `db` does not exist.
fn require_store(db: &Path, why: &str) -> Result<()> {
    if !db.exists() {
        bail!("{}: no such store {why}", db.display());
    }
    Ok(())
}

/// Opens a store that must already exist.
fn open_existing(db: &Path, why: &str) -> Result<Store> {
    require_store(db, why)?;
    open_store(db)
}

/// Opens a store that must already exist, for a command that only reads it: read-only when
/// it (or its folder) cannot be written.
fn open_to_read(db: &Path, why: &str) -> Result<Store> {
    require_store(db, why)?;
    Ok(Store::open_for_reading(db)?)
}

/// The stored run `--resume` names, with its devices filled into `devices` when the
/// command line gives none, and its lock ([`lock_run`], taken before anything is written).
/// `None` when it is already complete (its report printed).
fn resume_start(
    args: &RunArgs,
    which: &str,
    store: &mut Store,
    devices: &mut Option<Vec<Device>>,
) -> Result<Option<(Start, std::fs::File)>> {
    let summary = if which == "latest" {
        let live = store.runs()?.into_iter().filter(|r| r.origin.source == RunSource::Live).max_by_key(|r| r.id);
        live.with_context(|| format!("{}: no `mlport run` run to resume", store.path().display()))?
    } else {
        let id: i64 = which.parse().map_err(|_| anyhow::anyhow!("--resume: `{which}` is not a run id"))?;
        store.run(id)?
    };
    if summary.origin.source != RunSource::Live {
        bail!(
            "run {} was not made by `mlport run` (it is {}): only live runs can be resumed",
            summary.id,
            summary.origin.source
        );
    }
    let lock = lock_run(&args.db.db, summary.id)?;
    let references_left = runner::reference::pending(store, summary.id)?.len();
    if pending_cases(store, summary.id)? == 0 && summary.results > 0 && references_left == 0 {
        // A run stopped between committing a result and comparing it: finish the comparisons.
        let done = crate::agreement::check_run(store, summary.id, &summary.info.reference_device)?;
        if done.compared > 0 {
            eprintln!(
                "mlport: run {}: compared {} results left uncompared ({} wrong)",
                summary.id, done.compared, done.wrong
            );
        }
        eprintln!("mlport: run {} is already complete ({} cases); nothing to resume", summary.id, summary.results);
        if summary.state != RunState::Finished {
            store.finish_run(summary.id, RunState::Finished)?;
        }
        print_report(store, summary.id, format_of(args.format), &ReportOptions::default(), false)?;
        return Ok(None);
    }
    if devices.is_none() {
        // The devices the run was for: those that were available, else (none was) the ones asked
        // for, so that a resume never runs on a device nobody asked for.
        let recorded = store.devices(summary.id)?;
        let mut stored: Vec<Device> = recorded.iter().filter(|d| d.available).map(|d| d.device.clone()).collect();
        if stored.is_empty() {
            stored = recorded.iter().map(|d| d.device.clone()).collect();
        }
        stored.sort();
        stored.dedup();
        *devices = Some(stored).filter(|s| !s.is_empty());
    }
    eprintln!("mlport: resuming run {} ({} of {} cases recorded)", summary.id, summary.results, summary.cases_planned);
    let cases = store.cases(summary.id)?;
    Ok(Some((Start::Resume(Box::new(summary), cases), lock)))
}

/// A fresh plan from the catalogue and the selection on the command line.
fn new_start(args: &RunArgs) -> Result<Start> {
    let catalogue = load_catalogue(args.catalogue.as_deref())?;
    let sel = Selection {
        frameworks: cli::parse_frameworks(&args.frameworks)?,
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
fn new_run_info(catalogue_version: BTreeMap<Framework, String>, seed: u64, reference: Device) -> RunInfo {
    let mut info = RunInfo::blank(&command_line(), reference);
    info.started_at = now();
    info.catalogue_version = catalogue_version;
    info.seed = seed;
    runner::machine_info(&mut info);
    info
}

/// Writes to stdout. A closed pipe (`mlport report | head`) ends mlport quietly (its
/// results are already committed); any other write error (a full disk) is an error.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// Planned cases still to run: those without a result on an available device of their
/// framework, and those with no result anywhere (unless their framework failed to import).
fn pending_cases(store: &Store, run_id: i64) -> Result<usize> {
    let cases = store.cases(run_id)?;
    let info = store.run(run_id)?.info;
    let mut pending: HashSet<&str> = HashSet::new();
    let mut done_somewhere: HashSet<String> = HashSet::new();
    for d in store.devices(run_id)? {
        let done = store.done_keys(run_id, &d.device)?;
        if d.available {
            pending.extend(
                cases.iter().filter(|c| c.framework == d.framework && !done.contains(&c.key)).map(|c| c.key.as_str()),
            );
        }
        done_somewhere.extend(done);
    }
    for c in &cases {
        let unusable = info.frameworks.get(&c.framework).is_some_and(|i| i.import_error.is_some());
        if !unusable && !done_somewhere.contains(&c.key) {
            pending.insert(&c.key);
        }
    }
    Ok(pending.len())
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

fn print_report(store: &Store, run_id: i64, format: Format, opts: &ReportOptions, functions: bool) -> Result<()> {
    let rep = build_report(store, run_id, opts)?;
    emit(&if functions { report::render_with_functions(&rep, format) } else { report::render(&rep, format) })
}

fn build_report(store: &Store, run_id: i64, opts: &ReportOptions) -> Result<report::PortabilityReport> {
    let summary = store.run(run_id)?;
    Ok(report::build(&summary, &store.devices(run_id)?, &store.results(run_id)?, opts))
}

/// Checks a `--label`: it must name a run wherever a run id is accepted (`--run`,
/// `--slowdown A@RUN..B@RUN`), so it cannot look like an id or a keyword, hold `..` or
/// `@`, or repeat a label the store already has.
fn check_label(store: &Store, label: Option<&str>) -> Result<()> {
    let Some(label) = label else { return Ok(()) };
    let bad = if label.trim().is_empty() {
        Some("is empty")
    } else if label.bytes().all(|b| b.is_ascii_digit()) {
        Some("looks like a run id")
    } else if matches!(label, "all" | "latest") {
        Some("is a keyword of --run")
    } else if label.contains("..") || label.contains('@') {
        Some("holds `..` or `@`, which --slowdown uses to separate runs")
    } else {
        None
    };
    if let Some(why) = bad {
        bail!("--label `{label}` {why}; choose another");
    }
    if store.run_by_label(label)?.is_some() {
        bail!("{}: a run is already labelled `{label}`; choose another label", store.path().display());
    }
    Ok(())
}

/// A run named by id, by label, or `None` for the latest.
fn resolve_run(store: &Store, spec: Option<&str>) -> Result<RunSummary> {
    let db = store.path().display();
    match spec {
        None | Some("latest") => {
            // The newest run, preferring one measured by mlport over imported paper data: a
            // user who imports the paper's 18 runs after their own run still gets their run.
            let runs = store.runs()?;
            let own = runs.iter().filter(|r| r.origin.source != RunSource::ImportPaper).max_by_key(|r| r.id);
            own.or_else(|| runs.iter().max_by_key(|r| r.id))
                .cloned()
                .with_context(|| format!("{db}: the store holds no run"))
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

/// `mlport report`: one run's portability, the overview of every run, or a slowdown.
pub fn report(args: ReportArgs) -> Result<i32> {
    let store = open_to_read(&args.db.db, "(run `mlport run` or `mlport import` first, or pass --db)")?;
    let reference = match &args.reference {
        Some(r) => Some(r.parse::<Device>().map_err(|e| anyhow::anyhow!("--reference: {e}"))?),
        None => None,
    };
    let opts = ReportOptions { attributable: !args.all_failures, reference };
    let format = format_of(args.format);
    if let Some(spec) = &args.slowdown {
        let threshold = cli::positive("--threshold", args.threshold)?;
        let (a, b) = cli::parse_slowdown(spec)?;
        // A side without @RUN is in --run's run, else in the other side's run, else the latest.
        let default = args.run.as_deref().filter(|r| *r != "all");
        let ra = resolve_run(&store, a.run.as_deref().or(default).or(b.run.as_deref()))?;
        let rb = resolve_run(&store, b.run.as_deref().or(default).or(a.run.as_deref()))?;
        let (rows_a, rows_b) = (store.results(ra.id)?, store.results(rb.id)?);
        for (run, side, rows) in [(&ra, &a, &rows_a), (&rb, &b, &rows_b)] {
            if !rows.iter().any(|r| r.result.device == side.device) {
                bail!("--slowdown: run {} has no result on {}", run.id, side.device);
            }
        }
        let measure = match args.measure {
            cli::MeasureArg::Steady => report::Measure::Steady,
            cli::MeasureArg::Test => report::Measure::TestTime,
            cli::MeasureArg::FirstCall => report::Measure::FirstCall,
        };
        let sd = report::slowdown::slowdown(
            (&ra, &a.device, &rows_a),
            (&rb, &b.device, &rows_b),
            &report::SlowdownOptions {
                measure,
                threshold,
                function_thresholds: args
                    .threshold_for
                    .iter()
                    .map(|t| {
                        let (name, x) =
                            t.split_once('=').with_context(|| format!("--threshold-for `{t}`: expected NAME=RATIO"))?;
                        let x: f64 = x.parse().map_err(|_| anyhow::anyhow!("--threshold-for `{t}`: not a number"))?;
                        Ok((name.to_string(), cli::positive("--threshold-for", x)?))
                    })
                    .collect::<Result<_>>()?,
                a_framework: a.framework,
                b_framework: b.framework,
                stats: crate::stats::StatsConfig {
                    seed: args.stats_seed.unwrap_or(ra.info.seed),
                    ..Default::default()
                },
            },
        );
        let out = match format {
            Format::Table => report::slowdown::render_table(&sd),
            Format::Csv => report::slowdown::render_csv(&sd),
            Format::Json => report::slowdown::render_json(&sd),
            Format::Markdown => bail!("--slowdown renders as table, csv or json"),
        };
        emit(&out)?;
        return Ok(0);
    }
    if args.modes {
        let run = resolve_run(&store, args.run.as_deref().filter(|r| *r != "all"))?;
        let rep = report::modes::build(&run, &store.devices(run.id)?, &store.results(run.id)?, args.stats_seed);
        emit(&report::modes::render(&rep, format))?;
        return Ok(0);
    }
    if args.run.as_deref() == Some("all") {
        let reports: Vec<report::PortabilityReport> =
            store.runs()?.iter().map(|r| build_report(&store, r.id, &opts)).collect::<Result<_>>()?;
        emit(&report::overview::render(&reports, format))?;
        return Ok(0);
    }
    if !(args.only.is_empty() || args.dtypes || args.frameworks) {
        bail!("--only applies to --dtypes and --frameworks");
    }
    if (args.dtypes || args.frameworks) && args.run.as_deref() == Some("all") {
        bail!("--dtypes and --frameworks report one run: give --run ID or LABEL (default: the latest), not `all`");
    }
    let run = resolve_run(&store, args.run.as_deref())?;
    if args.dtypes || args.frameworks {
        let results = store.results(run.id)?;
        let mut only = args.only.clone();
        if args.frameworks {
            // A function name stands for its op: the table compares frameworks, so a row needs them all.
            let ops: Vec<String> = results
                .iter()
                .filter(|r| only.contains(&r.function.name))
                .filter_map(|r| r.function.op.clone())
                .collect();
            only.extend(ops);
        }
        let only = &only;
        let keep = |r: &crate::store::ResultRow| {
            only.is_empty()
                || only.iter().any(|o| *o == r.function.name || r.function.op.as_deref() == Some(o.as_str()))
        };
        if !only.is_empty() && !results.iter().any(keep) {
            bail!("--only {}: run {} has no such function or op", only.join(","), run.id);
        }
        let out = if args.dtypes {
            report::dtypes::render(&report::dtypes::build(run.id, &results, &keep), format)
        } else {
            let t = report::frameworks::build(
                run.id,
                &results,
                &store.comparisons(run.id)?,
                &store.references(run.id)?,
                &keep,
            );
            if t.rows.is_empty() {
                eprintln!(
                    "mlport: run {} has no op run by two or more frameworks (the catalogue's `op` key maps them)",
                    run.id
                );
            }
            report::frameworks::render(&t, format)
        };
        emit(&out)?;
        return Ok(0);
    }
    print_report(&store, run.id, format, &opts, args.functions)?;
    Ok(0)
}

/// `mlport import pytest-json`: read and check everything, then store the run in one
/// transaction and print its report.
pub fn import_pytest_json(args: ImportPytestJsonArgs) -> Result<i32> {
    let framework: Framework = args.framework.parse().map_err(|e: String| anyhow::anyhow!("--framework: {e}"))?;
    let device: Device = args.device.parse().map_err(|e: String| anyhow::anyhow!("--device: {e}"))?;
    let spec = import::PytestJsonImport {
        report: args.report.clone(),
        timings: args.timings.clone(),
        framework,
        device,
        label: args.label.clone(),
        machine: args.machine.clone(),
        source: RunSource::ImportPytestJson,
        command_line: command_line(),
    };
    let data = import::pytest_json_run(&spec)?;
    let mut store = open_store(&args.db.db)?;
    check_label(&store, args.label.as_deref())?;
    let id = store.import_runs(std::slice::from_ref(&data))?[0];
    eprintln!(
        "mlport: imported {} as run {id}: {} tests of {} functions on {}",
        args.report.display(),
        data.cases.len(),
        data.functions.len(),
        data.devices.iter().map(|d| d.device.to_string()).collect::<Vec<_>>().join(" and ")
    );
    print_report(&store, id, format_of(args.format), &ReportOptions::default(), false)?;
    Ok(0)
}

/// `mlport import paper`: the whole data set, every run in one transaction, then the overview.
pub fn import_paper(args: ImportPaperArgs) -> Result<i32> {
    let started = Instant::now();
    let data = import::import_paper(&args.dir, &command_line())?;
    for (path, why) in &data.left_out {
        eprintln!("mlport: left out {}: {why}", path.display());
    }
    let mut store = open_store(&args.db.db)?;
    for run in &data.runs {
        if let Some(label) = &run.origin.label
            && let Some(existing) = store.run_by_label(label)?
        {
            bail!(
                "{}: the paper's data is already here (run {} is labelled `{label}`); nothing was imported again",
                args.db.db.display(),
                existing.id
            );
        }
    }
    let ids = store.import_runs(&data.runs)?;
    let reports: Vec<report::PortabilityReport> =
        ids.iter().map(|id| build_report(&store, *id, &ReportOptions::default())).collect::<Result<_>>()?;
    eprintln!(
        "mlport: imported {} runs (ids {}..={}) from {} in {:.2} s",
        ids.len(),
        ids.first().copied().unwrap_or_default(),
        ids.last().copied().unwrap_or_default(),
        args.dir.display(),
        started.elapsed().as_secs_f64()
    );
    emit(&report::overview::render(&reports, format_of(args.format)))?;
    Ok(0)
}

/// The exit codes of pytest that still leave a usable report: all passed, some failed.
const PYTEST_OK: [i32; 2] = [0, 1];

/// `mlport pytest`: run a user's suite with pytest-json-report in the managed environment
/// (or `--python`) on one device, then import and report it.
pub fn pytest(args: PytestArgs) -> Result<i32> {
    let framework: Framework = args.framework.parse().map_err(|e: String| anyhow::anyhow!("--framework: {e}"))?;
    let device: Device = args.device.parse().map_err(|e: String| anyhow::anyhow!("--device: {e}"))?;
    if !args.path.exists() {
        bail!("{}: no such test file or folder", args.path.display());
    }
    // The store is checked before the suite runs, so its results have somewhere to go.
    let mut store = open_store(&args.db.db)?;
    check_label(&store, args.label.as_deref())?;
    let env = python_env(&args.python, &[framework])?;
    let check = std::process::Command::new(&env.python)
        .args(["-c", "import pytest, pytest_jsonreport"])
        .output()
        .with_context(|| format!("cannot run {}", env.python.display()))?;
    if !check.status.success() {
        bail!(
            "{} lacks pytest or pytest-json-report; install them (`{} -m pip install pytest pytest-json-report`) or \
             use the managed environment (omit --python)",
            env.python.display(),
            env.python.display()
        );
    }
    let out_dir = pytest_dir(&args.db.db);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let report_path = out_dir.join("report.json");
    let timings_path = out_dir.join("timings.json");
    let mut cmd = std::process::Command::new(&env.python);
    cmd.args(["-m", "pytest"])
        .arg(&args.path)
        .arg("--json-report")
        .arg(format!("--json-report-file={}", report_path.display()))
        .args(["-p", "no:cacheprovider"])
        .args(&args.pytest_args)
        .env("MLPORT_DEVICE", device.as_str())
        .env("MLPORT_FRAMEWORK", framework.as_str())
        .env("MLPORT_TIMINGS", &timings_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(std::io::stderr());
    eprintln!(
        "mlport: running pytest on {} with MLPORT_DEVICE={device} ({})",
        args.path.display(),
        env.python.display()
    );
    let limit = match args.timeout {
        Some(t) => Some(Duration::from_secs_f64(cli::positive("--timeout", t)?.min(catalogue::MAX_TIMEOUT_S))),
        None => None,
    };
    let status = match run_in_group(&mut cmd, limit)? {
        GroupEnd::Exited(status) => status,
        GroupEnd::Interrupted => {
            eprintln!("mlport: interrupted; pytest's process group was stopped and nothing was imported");
            return Ok(EXIT_INTERRUPTED);
        }
        GroupEnd::TimedOut => bail!(
            "pytest did not finish within --timeout {:.0} s; its process group was killed and nothing was imported",
            limit.unwrap_or_default().as_secs_f64()
        ),
    };
    match status.code() {
        Some(c) if PYTEST_OK.contains(&c) => {}
        Some(5) => bail!("pytest collected no tests from {}", args.path.display()),
        Some(2) => bail!("pytest was interrupted (exit code 2); nothing was imported"),
        Some(c) => bail!("pytest exited with code {c} (internal or usage error); nothing was imported"),
        None => bail!(
            "pytest was killed by {} — a test most likely crashed the interpreter, and pytest-json-report \
             writes its report only at the end of a session, so nothing was imported; run the crashing \
             tests in subprocesses or deselect them (`-- -k 'not NAME'`)",
            status.signal().map_or("a signal".to_string(), signal_name)
        ),
    }
    let spec = import::PytestJsonImport {
        report: report_path.clone(),
        // Written by suites that time their calls (docs/pytest.md); absent otherwise.
        timings: if timings_path.is_file() { vec![timings_path.clone()] } else { Vec::new() },
        framework,
        device,
        label: args.label.clone(),
        machine: Some(crate::sysinfo::host()),
        source: RunSource::Pytest,
        command_line: command_line(),
    };
    let mut data = import::pytest_json_run(&spec)?;
    runner::machine_info(&mut data.info);
    data.info.python_executable = env.python.display().to_string();
    if let Some(v) = package_version(&env.python, framework) {
        data.info.frameworks.insert(framework, FrameworkInfo { version: Some(v), ..Default::default() });
    }
    if data.info.python_version.is_empty() {
        // pytest-json-report names the Python version only with pytest-metadata installed: ask
        // the interpreter that ran the suite.
        let out = std::process::Command::new(&env.python)
            .args(["-c", "import platform; print(platform.python_version())"])
            .output();
        if let Some(o) = out.ok().filter(|o| o.status.success()) {
            data.info.python_version = String::from_utf8_lossy(&o.stdout).trim().to_string();
        }
    }
    data.origin.notes.push(format!("pytest's report is kept in {}", out_dir.display()));
    let id = store.import_runs(std::slice::from_ref(&data))?[0];
    eprintln!("mlport: stored as run {id} ({} tests of {} functions)", data.cases.len(), data.functions.len());
    print_report(&store, id, format_of(args.format), &ReportOptions::default(), false)?;
    Ok(0)
}

/// How a command run by [`run_in_group`] ended.
enum GroupEnd {
    Exited(std::process::ExitStatus),
    /// Ctrl-C or SIGTERM reached mlport; the group was stopped.
    Interrupted,
    /// The time limit passed; the group was stopped.
    TimedOut,
}

/// Runs `cmd` in its own process group and waits, stopping the whole group (SIGTERM, 2 s,
/// SIGKILL) on Ctrl-C/SIGTERM or once `limit` has passed, so nothing it started outlives it.
fn run_in_group(cmd: &mut std::process::Command, limit: Option<Duration>) -> Result<GroupEnd> {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    use std::os::unix::process::CommandExt;
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    let mut child = cmd.process_group(0).spawn().with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    let group = Pid::from_raw(child.id() as i32);
    let started = Instant::now();
    let stop = |child: &mut std::process::Child| {
        let _ = killpg(group, Signal::SIGTERM);
        let grace = Instant::now();
        while grace.elapsed() < worker::process::KILL_GRACE {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = child.wait();
    };
    loop {
        if let Some(status) = child.try_wait()? {
            let _ = killpg(group, Signal::SIGKILL); // what the suite left running
            return Ok(GroupEnd::Exited(status));
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            stop(&mut child);
            return Ok(GroupEnd::Interrupted);
        }
        if limit.is_some_and(|l| started.elapsed() >= l) {
            stop(&mut child);
            return Ok(GroupEnd::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| format!("{s} ({sig})"))
}

/// Where `mlport pytest` keeps pytest's raw report: `.mlport/pytest-<time>-<pid>/` beside the store.
fn pytest_dir(db: &Path) -> PathBuf {
    let parent = db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S");
    parent.join(".mlport").join(format!("pytest-{stamp}-{}", std::process::id()))
}

/// The installed version of a framework's distribution in `python`, without importing it.
fn package_version(python: &Path, fw: Framework) -> Option<String> {
    let names = match fw {
        Framework::Tensorflow => "['tensorflow', 'tensorflow-cpu']",
        Framework::Jax => "['jax']",
        Framework::Torch => "['torch']",
        Framework::Numpy => "['numpy']",
    };
    let code = format!(
        "import importlib.metadata as m\nfor n in {names}:\n    try:\n        print(m.version(n)); break\n    except m.PackageNotFoundError: pass"
    );
    let out = std::process::Command::new(python).args(["-c", &code]).output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// `mlport runs`.
pub fn runs(args: cli::DbArg) -> Result<i32> {
    let store = open_to_read(&args.db, "(run `mlport run` first, or pass --db)")?;
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(["run", "started", "state", "cases", "results", "host", "frameworks", "source", "label"]);
    for r in store.runs()? {
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
        t.add_row([
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
    emit(&format!("{t}\n"))?;
    Ok(0)
}

/// `mlport env`: create or check the environment, print what it holds.
pub fn env(args: PythonArg) -> Result<i32> {
    let env = python_env(&args, &Framework::ALL)?;
    emit(&format!("python: {}{}\n", env.python.display(), if env.managed { " (managed)" } else { "" }))?;
    probe_frameworks(&env, &Framework::ALL, true)?;
    Ok(0)
}

/// Starts one cpu worker per framework and prints its version and devices.
fn probe_frameworks(env: &PythonEnv, frameworks: &[Framework], print_packages: bool) -> Result<()> {
    let dir = worker_dir()?;
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(["framework", "version", "devices", "python"]);
    let mut packages = std::collections::BTreeMap::new();
    for fw in frameworks {
        let spec = worker::WorkerSpec {
            python: env.python.clone(),
            script_dir: dir.clone(),
            framework: *fw,
            device: Device::cpu(),
            env: Vec::new(),
        };
        match worker::spawn(&spec, Duration::from_secs(300), &INTERRUPTED) {
            Ok(w) => {
                let h = w.hello.clone();
                w.shutdown();
                match &h.import_error {
                    Some(e) => t.add_row([
                        fw.to_string(),
                        format!("not usable: {}: {}", e.error_type, e.message),
                        String::new(),
                        h.python.clone(),
                    ]),
                    None => {
                        let devs: Vec<String> =
                            h.devices.iter().filter(|d| d.available).map(|d| d.device.clone()).collect();
                        packages.extend(h.packages.clone());
                        t.add_row([
                            fw.to_string(),
                            h.framework_version.clone().unwrap_or_default(),
                            devs.join(", "),
                            h.python.clone(),
                        ])
                    }
                };
            }
            Err(f) => {
                t.add_row([fw.to_string(), format!("not usable: {f}"), String::new(), String::new()]);
            }
        }
    }
    emit(&format!("{t}\n"))?;
    if print_packages && !packages.is_empty() {
        let list: Vec<String> = packages.iter().map(|(k, v)| format!("{k}=={v}")).collect();
        emit(&format!("packages: {}\n", list.join(" ")))?;
    }
    Ok(())
}

/// `mlport list`.
pub fn list(args: ListArgs) -> Result<i32> {
    let catalogue = load_catalogue(args.catalogue.as_deref())?;
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(["framework", "catalogue", "version", "functions", "from the paper", "cases", "case × dtype"]);
    for f in &catalogue.files {
        let cases: usize = f.functions.iter().map(|g| g.cases.len()).sum();
        let instances: usize = f.functions.iter().flat_map(|g| g.cases.iter()).map(|c| c.dtypes.len()).sum();
        t.add_row([
            f.framework.to_string(),
            f.path.clone(),
            f.version.clone(),
            f.functions.len().to_string(),
            f.functions.iter().filter(|g| g.paper.is_some()).count().to_string(),
            cases.to_string(),
            instances.to_string(),
        ]);
    }
    emit(&format!("{t}\n"))?;
    if args.functions {
        for f in &catalogue.files {
            emit(&format!("\n{} ({}):\n", f.framework, f.path))?;
            for g in &f.functions {
                let dtypes: Vec<&str> = {
                    let mut v: Vec<&str> = g.cases.iter().flat_map(|c| c.dtypes.iter().map(String::as_str)).collect();
                    v.sort();
                    v.dedup();
                    v
                };
                let mut extra = Vec::new();
                if let Some(d) = g.decile {
                    extra.push(format!("decile {d}"));
                }
                if g.top20 {
                    extra.push("top-20".into());
                }
                if let Some(m) = &g.moved {
                    extra.push(format!("moved: {m}"));
                }
                emit(&format!(
                    "  {:<50} {} case(s) [{}] {}\n",
                    g.name,
                    g.cases.len(),
                    dtypes.join(" "),
                    extra.join("; ")
                ))?;
            }
        }
    }
    if !args.no_probe {
        let frameworks: Vec<Framework> = catalogue.files.iter().map(|f| f.framework).collect();
        let env = python_env(&args.python, &frameworks)?;
        emit(&format!("python: {}{}\n", env.python.display(), if env.managed { " (managed)" } else { "" }))?;
        probe_frameworks(&env, &frameworks, false)?;
    }
    Ok(0)
}

/// `mlport scan`: the framework functions a code base calls; throughput on stderr.
pub fn scan(args: cli::ScanArgs) -> Result<i32> {
    let opts = crate::scan::ScanOptions {
        threads: args.threads,
        full_parse: args.full_parse,
        progress: true,
        ..Default::default()
    };
    let started = Instant::now();
    let rep = crate::scan::scan(&args.paths, &opts).map_err(|e| anyhow::anyhow!(e))?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "mlport: scanned {} files ({:.1} MB, {:.1} MB parsed) in {secs:.2} s: {:.0} files/s, {:.1} MB/s",
        rep.files,
        rep.bytes as f64 / 1e6,
        rep.parsed_bytes as f64 / 1e6,
        rep.files as f64 / secs,
        rep.bytes as f64 / 1e6 / secs
    );
    emit(&match args.format {
        cli::ScanFormatArg::Table => crate::scan::render_table(&rep),
        cli::ScanFormatArg::Json => crate::scan::render_json(&rep),
        cli::ScanFormatArg::Csv => {
            // CSV has no place for them; the table and JSON list them.
            warn_unparsable(&rep);
            crate::scan::render_csv(&rep)
        }
    })?;
    Ok(0)
}

/// Exit code of `mlport audit` when a `--fail-on` finding is present.
pub const EXIT_FINDINGS: i32 = 3;

fn scan_with(paths: &[PathBuf], threads: usize) -> Result<crate::scan::ScanReport> {
    let opts = crate::scan::ScanOptions { threads, progress: true, ..Default::default() };
    let rep = crate::scan::scan(paths, &opts).map_err(|e| anyhow::anyhow!(e))?;
    warn_unparsable(&rep);
    Ok(rep)
}

/// One stderr line per file the scan could not parse.
fn warn_unparsable(rep: &crate::scan::ScanReport) {
    for u in &rep.unparsable {
        eprintln!("mlport: unparsable, skipped: {}: {}", u.location(), u.error);
    }
}

/// `mlport audit`: scan, join with the store's results on the device, report; exit 3 on
/// a `--fail-on` finding.
pub fn audit(args: cli::AuditArgs) -> Result<i32> {
    use crate::audit::{self, Finding};
    let device: Device = args.device.parse().map_err(|e: String| anyhow::anyhow!("--device: {e}"))?;
    let reference: Device = args.reference.parse().map_err(|e: String| anyhow::anyhow!("--reference: {e}"))?;
    let threshold = cli::positive("--threshold", args.threshold)?;
    let fail_on: &[Finding] = &args.fail_on;
    let store = open_to_read(&args.db.db, "(run `mlport run` or `mlport import paper` first, or pass --db)")?;
    let runs = if args.runs.is_empty() {
        store.runs()?
    } else {
        args.runs.iter().map(|r| resolve_run(&store, Some(r))).collect::<Result<Vec<_>>>()?
    };
    let scan = scan_with(&args.paths, args.threads)?;
    let rep = audit::audit(&store, &runs, &scan, &audit::AuditOptions { device, reference, threshold })?;
    emit(&audit::render(&rep, format_of(args.format)))?;
    if let Some(path) = &args.add_to_catalogue {
        // Unknown functions mlport's catalogue already has need a run on the device, not a draft.
        let catalogue = crate::catalogue::builtin()?;
        let known: BTreeMap<String, String> = catalogue
            .files
            .iter()
            .flat_map(|f| f.functions.iter())
            .map(|f| (crate::scan::canonical(&f.name), f.name.to_string()))
            .collect();
        let runnable: Vec<&str> = rep
            .rows
            .iter()
            .filter(|r| r.status.is_none())
            .filter_map(|r| known.get(&r.function).map(String::as_str))
            .collect();
        if !runnable.is_empty() {
            eprintln!(
                "mlport: {} of the unknown functions are in mlport's catalogue, not yet measured on {}: \
                 `mlport run --device {} --function {}` measures them (no drafts written for them)",
                runnable.len(),
                rep.device,
                rep.device,
                runnable.join(",")
            );
        }
        let drafts = audit::catalogue_drafts(&rep, &known);
        if drafts.is_empty() {
            eprintln!("mlport: no catalogue drafts to write: every called function is measured or in the catalogue");
        }
        let several = drafts.len() > 1;
        for (fw, text) in drafts {
            let target = if several {
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                path.with_file_name(format!("{stem}.{fw}.toml"))
            } else {
                path.clone()
            };
            let replaced = target.exists();
            std::fs::write(&target, text).with_context(|| format!("cannot write {}", target.display()))?;
            eprintln!(
                "mlport: wrote catalogue drafts for {fw} to {}{}",
                target.display(),
                if replaced { " (replacing the file that was there)" } else { "" }
            );
        }
    }
    if fail_on.iter().any(|f| rep.count(*f) > 0) {
        return Ok(EXIT_FINDINGS);
    }
    Ok(0)
}

/// `mlport mine`: usage frequencies of one framework's functions over a corpus.
pub fn mine(args: cli::MineArgs) -> Result<i32> {
    let framework: Framework = args.framework.parse().map_err(|e: String| anyhow::anyhow!("--framework: {e}"))?;
    let scan = scan_with(&args.paths, args.threads)?;
    let freq = crate::mine::frequencies(&scan, framework);
    emit(&match args.format {
        FormatArg::Csv => crate::mine::to_csv(&freq),
        FormatArg::Json => {
            let v = serde_json::json!({"format": "mlport.frequencies", "version": 1, "framework": framework,
                "files": scan.files, "functions": freq});
            format!("{}\n", serde_json::to_string_pretty(&v)?)
        }
        FormatArg::Table | FormatArg::Markdown => {
            let mut t = comfy_table::Table::new();
            t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
            t.set_header(["function", "calls", "files", "decile"]);
            for u in &freq {
                t.add_row([u.function.clone(), u.calls.to_string(), u.files.to_string(), u.decile.to_string()]);
            }
            format!("{} {framework} functions called in {} files\n{t}\n", freq.len(), scan.files)
        }
    })?;
    Ok(0)
}

/// `mlport sample`: the paper's draw from mined frequencies, seeded.
pub fn sample(args: cli::SampleArgs) -> Result<i32> {
    let text = std::fs::read_to_string(&args.frequencies)
        .with_context(|| format!("cannot read {}", args.frequencies.display()))?;
    let freq = crate::mine::read_csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.frequencies.display()))?;
    let drawn = crate::mine::sample(&freq, args.top, args.per_decile, args.seed);
    emit(&match args.format {
        FormatArg::Csv => {
            let mut s = String::from("function,calls,decile,why\r\n");
            for d in &drawn {
                s.push_str(&format!("{},{},{},{}\r\n", d.function, d.calls, d.decile, d.why));
            }
            s
        }
        FormatArg::Json => {
            let v = serde_json::json!({"format": "mlport.sample", "version": 1, "seed": args.seed, "top": args.top,
                "per_decile": args.per_decile, "sample": drawn});
            format!("{}\n", serde_json::to_string_pretty(&v)?)
        }
        FormatArg::Table | FormatArg::Markdown => {
            let mut t = comfy_table::Table::new();
            t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
            t.set_header(["function", "calls", "decile", "why"]);
            for d in &drawn {
                t.add_row([d.function.clone(), d.calls.to_string(), d.decile.to_string(), d.why.to_string()]);
            }
            format!(
                "{} functions drawn (top {}, {} per decile, seed {})\n{t}\n",
                drawn.len(),
                args.top,
                args.per_decile,
                args.seed
            )
        }
    })?;
    Ok(0)
}

/// `mlport repro RESULT_ID`: the script and its arrays in `--out` (default `repro-<ID>`).
pub fn repro(args: crate::cli::ReproArgs) -> Result<i32> {
    let id: i64 =
        args.result.trim_start_matches('#').parse().map_err(|_| {
            anyhow::anyhow!("`{}` is not a result id (a number, as reports print it: #123)", args.result)
        })?;
    let store = open_to_read(&args.db.db, "(run `mlport run` first, or pass --db)")?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("repro-{id}")));
    let db = args.db.db.clone();
    let w = crate::repro::write(&store, id, &out, &|run| run_dir(&db, run))?;
    eprintln!("mlport: result #{id}: {}", w.what);
    eprintln!(
        "mlport: wrote {} and {} array files; run it with: python {}",
        w.script.display(),
        w.files.len(),
        w.script.display()
    );
    println!("{}", w.script.display());
    Ok(0)
}
