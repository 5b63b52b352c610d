//! The runner: starts one worker per (framework, target), feeds it the planned cases,
//! turns every answer, timeout and crash into a
//! [`CaseResult`](crate::model::CaseResult), commits each to the store as it
//! finishes, and reports progress as a typed [`Event`] stream. A target is a device in an
//! execution mode ([`crate::model::Mode`]): `cpu` (eager) and `cpu/compiled` get a worker each.

mod case;
mod dispatch;
mod events;
mod lanes;
pub mod reference;
pub mod schedule;

pub use case::execute_case;
pub use events::{Event, EventSink, NullSink};
pub use lanes::execute_parallel;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;

use crate::model::{CaseResult, CaseRow, DeviceInfo, Framework, FrameworkInfo, Mode, Outcome, RunInfo, Target};
use crate::store::Store;
use crate::worker::protocol::{OwnIoError, Timing};
use crate::worker::{self, Failure, Worker, WorkerSpec};

/// How the runner runs cases.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The interpreter that runs workers: the managed environment's or `--python`'s
    /// (default `python3`).
    pub python: PathBuf,
    /// The interpreter of torch's workers on `xla:N` targets: the `torch-xla` stack's
    /// environment (or `--python`'s interpreter); `None` when it could not be set up, and
    /// those targets are then unavailable.
    pub xla_python: Option<PathBuf>,
    /// Folder with the worker's Python sources.
    pub script_dir: PathBuf,
    /// The run folder: output .npy files go under it.
    pub run_dir: PathBuf,
    /// Targets to run on (devices with their mode, `cpu/compiled`); `None` means every device
    /// each framework reports, in each of `modes`.
    pub devices: Option<Vec<Target>>,
    /// The execution modes each reported device runs in when `devices` is `None` (default
    /// eager only).
    pub modes: Vec<Mode>,
    /// Per-case limit unless the case sets `timeout_s` (default 60 s).
    pub case_timeout: Duration,
    /// Limit for a worker to import its framework and say hello (default 300 s).
    pub start_timeout: Duration,
    /// Steady-state repetition settings sent with every case.
    pub timing: Timing,
    /// Host compute threads for every framework's worker (`--threads`); `None` leaves each
    /// framework's default (all cores, usually).
    pub threads: Option<u32>,
    /// JAX's `jax_enable_x64` (`mlport run --jax-x64`); off by default, as JAX ships. Sent to
    /// JAX workers as `MLPORT_JAX_X64=1`; a JAX float64 self-reference always runs with it on
    /// (inside `jax.enable_x64(True)`, in the worker that computes it).
    pub jax_x64: bool,
}

impl Default for RunConfig {
    /// 60 s per case, 300 s to import a framework (TensorFlow's first import on a cold
    /// disk can take a minute), the default [`Timing`].
    fn default() -> Self {
        RunConfig {
            python: PathBuf::from("python3"),
            xla_python: None,
            script_dir: PathBuf::new(),
            run_dir: PathBuf::new(),
            devices: None,
            modes: vec![Mode::Eager],
            case_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(300),
            timing: Timing::default(),
            threads: None,
            jax_x64: false,
        }
    }
}

/// How an execution ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every framework was visited. Cases of a framework that did not import, or of a device
    /// whose worker could not be restarted, stay pending.
    Finished,
    /// Stopped by Ctrl-C; the case in flight stays pending, and calling [`execute`] again resumes.
    Interrupted,
    /// Stopped because mlport could not write (or read) one of its own files — an output `.npy`,
    /// the input cache, a reference, a run folder (a full disk): no outcome of any function.
    /// The case (or reference) in flight, `case_key`, stays pending, and calling [`execute`]
    /// again once the cause is gone resumes.
    OwnIoFailed {
        /// The case or reference key that was running.
        case_key: String,
        /// What failed, naming the path.
        error: OwnIoError,
    },
}

impl Ending {
    /// The ending of a folder the core could not create for `case_key`.
    fn folder_failed(case_key: &str, path: &std::path::Path, e: &std::io::Error) -> Ending {
        Ending::OwnIoFailed { case_key: case_key.to_string(), error: OwnIoError::from_io(path, "create folder", e) }
    }
}

/// Runs every planned case that has no result yet on its device (so the same call
/// resumes an interrupted run). Frameworks that fail to import are recorded in
/// `info.frameworks[fw].import_error` and skipped; absent devices are recorded as
/// unavailable. Only store errors are returned as `Err`.
pub fn execute(
    store: &mut Store,
    run_id: i64,
    cases: &[CaseRow],
    info: &mut RunInfo,
    cfg: &RunConfig,
    sink: &mut dyn EventSink,
    interrupted: &AtomicBool,
) -> Result<Ending> {
    let references = reference::compute(store, run_id, cfg, &info.reference_device, sink, interrupted)?;
    if references != Ending::Finished {
        return Ok(references);
    }
    let checker = crate::agreement::Checker::load(store, run_id)?;
    let mut frameworks: Vec<Framework> = cases.iter().map(|c| c.framework).collect();
    frameworks.sort();
    frameworks.dedup();
    for fw in frameworks {
        let fw_cases: Vec<&CaseRow> = cases.iter().filter(|c| c.framework == fw).collect();
        let spec = |device: &Target| WorkerSpec {
            python: worker_python(cfg, fw, device),
            script_dir: cfg.script_dir.clone(),
            framework: fw,
            device: device.clone(),
            env: worker_env(cfg, fw, device),
        };
        sink.event(&Event::FrameworkStarting { framework: fw });
        let probe = match worker::spawn(&spec(&Target::cpu()), cfg.start_timeout, interrupted) {
            Ok(w) => w,
            Err(Failure::Interrupted) => return Ok(Ending::Interrupted),
            Err(f) => {
                let why = describe_start_failure(&f);
                info.frameworks.insert(fw, FrameworkInfo { import_error: Some(why.clone()), ..Default::default() });
                store.update_run_info(run_id, info)?;
                sink.event(&Event::FrameworkFailed { framework: fw, error: why });
                continue;
            }
        };
        let xla = match xla_reported(cfg, fw, interrupted) {
            Ok(found) => found,
            Err(Failure::Interrupted) => {
                probe.shutdown();
                return Ok(Ending::Interrupted);
            }
            Err(_) => Vec::new(), // its targets are reported unavailable
        };
        let Some(targets) = framework_ready(store, run_id, info, cfg, fw, &probe.hello, &xla, sink)? else {
            probe.shutdown();
            continue;
        };
        let mut probe = Some(probe);
        if !targets.contains(&Target::cpu()) {
            // Only compiled (or other) targets: the eager probe would sit idle, holding memory.
            if let Some(p) = probe.take() {
                p.shutdown();
            }
        }
        for d in targets {
            let done = store.done_keys(run_id, &d)?;
            // A case whose catalogue `modes` leave this target's mode out is not planned on it.
            let pending: Vec<&CaseRow> =
                fw_cases.iter().copied().filter(|c| !done.contains(&c.key) && c.runs_in(d.mode())).collect();
            if pending.is_empty() {
                continue;
            }
            let w: Option<Worker> = if d == Target::cpu() { probe.take() } else { None };
            let ending = run_device(store, run_id, &pending, &spec(&d), w, cfg, &checker, sink, interrupted)?;
            if ending != Ending::Finished {
                return Ok(ending);
            }
        }
        if let Some(p) = probe {
            p.shutdown();
        }
    }
    finish(store, run_id, info, cfg)
}

/// The closing pass of a run whose frameworks were all visited: comparisons with the reference
/// device, and the run's compiler caches removed (214 MB of Inductor's for the built-in
/// catalogue; an interrupted run keeps them for its resumption).
fn finish(store: &mut Store, run_id: i64, info: &RunInfo, cfg: &RunConfig) -> Result<Ending> {
    crate::agreement::check_run(store, run_id, &info.reference_device)?;
    let _ = std::fs::remove_dir_all(cfg.run_dir.join("compile-cache"));
    Ok(Ending::Finished)
}

/// Records what a framework's first worker said (`h`, its hello): versions, threads and
/// settings in the run's info, and each target asked for (or reported) with its availability.
/// `xla` adds the `xla:N` devices the torch-xla stack's worker reported ([`xla_reported`]).
/// Returns the available targets, or `None` when the framework failed to import (recorded).
///
/// Errors: the store's.
#[allow(clippy::too_many_arguments)]
fn framework_ready(
    store: &mut Store,
    run_id: i64,
    info: &mut RunInfo,
    cfg: &RunConfig,
    fw: Framework,
    h: &crate::worker::protocol::Hello,
    xla: &[(Target, String)],
    sink: &mut dyn EventSink,
) -> Result<Option<Vec<Target>>> {
    info.python_version = h.python.clone();
    info.python_executable = h.python_executable.clone();
    let fwinfo = FrameworkInfo {
        version: h.framework_version.clone(),
        import_error: h.import_error.as_ref().map(|e| format!("{}: {}", e.error_type, e.message)),
        packages: h.packages.clone(),
        threads: h.threads,
        settings: h.settings.clone(),
    };
    info.frameworks.insert(fw, fwinfo.clone());
    store.update_run_info(run_id, info)?;
    if let Some(err) = fwinfo.import_error {
        sink.event(&Event::FrameworkFailed { framework: fw, error: err });
        return Ok(None);
    }
    // Devices: those asked for (absent ones are unavailable), or all it reports.
    let mut reported = reported_devices(h);
    reported.extend(xla.iter().cloned());
    let wanted: Vec<Target> = match &cfg.devices {
        Some(list) => list.clone(),
        None => reported.iter().flat_map(|(d, _)| cfg.modes.iter().map(|m| d.with_mode(*m))).collect(),
    };
    let mut infos = Vec::new();
    for d in &wanted {
        match reported.iter().find(|(r, _)| *r == d.base()) {
            Some(_) if fw.lacks_mode(d.mode()).is_some() => {
                infos.push(DeviceInfo {
                    framework: fw,
                    device: d.clone(),
                    available: false,
                    detail: fw.lacks_mode(d.mode()).unwrap_or_default(),
                });
                sink.event(&Event::DeviceUnavailable { framework: fw, device: d.clone() });
            }
            Some(_) if let Some(Some(why)) = h.routes.get(d.mode().as_str()).filter(|_| d.mode().is_route()) => {
                // An export route whose converter or runtime this environment lacks.
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: false, detail: why.clone() });
                sink.event(&Event::DeviceUnavailable { framework: fw, device: d.clone() });
            }
            Some((_, detail)) => {
                // A route's runtime, as the worker described it, stands in for the device's detail.
                let detail = h.route_details.get(d.mode().as_str()).filter(|_| d.mode().is_route()).unwrap_or(detail);
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: true, detail: detail.clone() })
            }
            None => {
                let detail = match (d.is_xla(), fw, &cfg.xla_python) {
                    (true, Framework::Torch, None) => "the torch-xla stack's environment could not be set up".into(),
                    (true, Framework::Torch, Some(_)) => format!("torch_xla reports no {d} on this machine"),
                    (true, _, _) => format!("{d} is PyTorch/XLA's device: torch only"),
                    _ => format!("{fw} reports no {d} on this machine"),
                };
                infos.push(DeviceInfo { framework: fw, device: d.clone(), available: false, detail });
                sink.event(&Event::DeviceUnavailable { framework: fw, device: d.clone() });
            }
        }
    }
    store.record_devices(run_id, &infos)?;
    sink.event(&Event::FrameworkReady {
        framework: fw,
        version: h.framework_version.clone().unwrap_or_default(),
        devices: infos.iter().filter(|i| i.available).map(|i| i.device.clone()).collect(),
    });
    Ok(Some(infos.iter().filter(|i| i.available).map(|i| i.device.clone()).collect()))
}

/// The devices a hello reports available, with `native detail` for the record.
fn reported_devices(h: &worker::protocol::Hello) -> Vec<(Target, String)> {
    h.devices
        .iter()
        .filter(|d| d.available)
        .filter_map(|d| {
            d.device.parse::<Target>().ok().map(|dev| (dev, format!("{} {}", d.native, d.detail).trim().to_string()))
        })
        .collect()
}

/// The `xla:N` devices a torch worker in the torch-xla environment reports (started on
/// `spec`'s interpreter, then shut down), each described with the stack's torch version and
/// interpreter, which the run records with the device.
fn xla_devices(spec: &WorkerSpec, cfg: &RunConfig, interrupted: &AtomicBool) -> Result<Vec<(Target, String)>, Failure> {
    let probe = WorkerSpec { device: Target::cpu(), ..spec.clone() };
    let w = worker::spawn(&probe, cfg.start_timeout, interrupted)?;
    let h = w.hello.clone();
    w.shutdown();
    let torch = h.framework_version.clone().unwrap_or_else(|| "not importable".into());
    Ok(reported_devices(&h)
        .into_iter()
        .filter(|(d, _)| d.is_xla())
        .map(|(d, detail)| (d, format!("{detail}; torch {torch}; python {}", h.python_executable)))
        .collect())
}

/// The `xla:N` devices of the torch-xla stack when `fw` is torch and the run asks for one
/// (empty otherwise): its worker started once ([`xla_devices`]) to report them.
///
/// Errors: the worker did not start ([`Failure`]; `Interrupted` on Ctrl-C).
fn xla_reported(cfg: &RunConfig, fw: Framework, interrupted: &AtomicBool) -> Result<Vec<(Target, String)>, Failure> {
    let asked = cfg.devices.as_ref().and_then(|l| l.iter().find(|d| d.is_xla()));
    match asked {
        Some(xla) if fw == Framework::Torch => {
            let base = xla.base();
            let spec = WorkerSpec {
                python: worker_python(cfg, fw, &base),
                script_dir: cfg.script_dir.clone(),
                framework: fw,
                device: base.clone(),
                env: worker_env(cfg, fw, &base),
            };
            xla_devices(&spec, cfg, interrupted)
        }
        _ => Ok(Vec::new()),
    }
}

/// The interpreter of `fw`'s worker on `target`: the torch-xla stack's for torch on `xla:N`.
fn worker_python(cfg: &RunConfig, fw: Framework, target: &Target) -> PathBuf {
    match (&cfg.xla_python, fw, target.is_xla()) {
        (Some(p), Framework::Torch, true) => p.clone(),
        _ => cfg.python.clone(),
    }
}

/// A worker's environment: `--threads`, `--jax-x64` for JAX, the export routes the run uses
/// (`MLPORT_ROUTES`), and for compiled targets a torch Inductor cache in the
/// run folder (`compile-cache/torch`, removed when the run finishes), so every run compiles from
/// cold and first calls are comparable between runs; graphs met again within a run come from
/// that cache.
fn worker_env(cfg: &RunConfig, fw: Framework, target: &Target) -> Vec<(String, String)> {
    let mut env = cfg.threads.map(worker::thread_env).unwrap_or_default();
    if fw.backend() == Framework::Jax && cfg.jax_x64 {
        env.push(("MLPORT_JAX_X64".into(), "1".into()));
    }
    // The export routes the run uses: the hello describes their runtimes (`route_details`).
    let asked = cfg.devices.iter().flatten().map(|d| d.mode()).chain(cfg.modes.iter().copied());
    let routes: std::collections::BTreeSet<&str> = asked.filter(|m| m.is_route()).map(|m| m.as_str()).collect();
    let routes: Vec<&str> = routes.into_iter().collect();
    if !routes.is_empty() {
        env.push(("MLPORT_ROUTES".into(), routes.join(",")));
    }
    if fw == Framework::Torch && matches!(target.kind(), "xla" | "tpu") && std::env::var_os("PJRT_DEVICE").is_none() {
        // PyTorch/XLA's runtime: its CPU client for xla:N, a TPU VM's chips for tpu:N.
        env.push(("PJRT_DEVICE".into(), if target.is_xla() { "CPU" } else { "TPU" }.into()));
    }
    if fw.backend() == Framework::Torch && target.mode().is_compiled() {
        let dir = cfg.run_dir.join("compile-cache").join("torch");
        env.push(("TORCHINDUCTOR_CACHE_DIR".into(), dir.to_string_lossy().into_owned()));
    }
    env
}

/// The folder of a target's output files in the run folder: `torch-cuda0`, `jax-cpu-compiled`.
fn out_dir_name(framework: Framework, target: &Target) -> String {
    format!("{framework}-{}", target.as_str().replace(':', "").replace('/', "-"))
}

fn describe_start_failure(f: &Failure) -> String {
    format!("the worker did not start: {f}")
}

#[allow(clippy::too_many_arguments)]
fn run_device(
    store: &mut Store,
    run_id: i64,
    pending: &[&CaseRow],
    spec: &WorkerSpec,
    worker: Option<Worker>,
    cfg: &RunConfig,
    checker: &crate::agreement::Checker,
    sink: &mut dyn EventSink,
    interrupted: &AtomicBool,
) -> Result<Ending> {
    let out_dir = cfg.run_dir.join(out_dir_name(spec.framework, &spec.device));
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        return Ok(Ending::folder_failed(&pending.first().map(|c| c.key.clone()).unwrap_or_default(), &out_dir, &e));
    }
    let mut worker = worker;
    for case in pending {
        sink.event(&Event::CaseStarted { case });
        let mut restarted =
            || sink.event(&Event::WorkerRestarted { framework: spec.framework, device: spec.device.clone() });
        let mut result = match attempt_case(&mut worker, spec, case, &out_dir, cfg, interrupted, &mut restarted) {
            Attempted::Done(r) => *r,
            Attempted::Interrupted => return Ok(Ending::Interrupted),
            Attempted::OwnIo(error) => return Ok(Ending::OwnIoFailed { case_key: case.key.clone(), error }),
            Attempted::Lost(why) => {
                sink.event(&Event::WorkerLost { framework: spec.framework, device: spec.device.clone(), why });
                return Ok(Ending::Finished);
            }
        };
        commit(store, run_id, case, &mut result, Some(checker), sink)?;
    }
    if let Some(w) = worker {
        w.shutdown();
    }
    Ok(Ending::Finished)
}

/// Commits a case's result to the store, compares it with its float64 reference at once (so
/// that progress shows a wrong result as it happens; the comparison with the reference device
/// comes in the closing pass) and reports it. `checker` is `None` only for a case judged in the
/// closing pass ([`crate::agreement::judged_in_closing_pass`]) that a parallel run ran before
/// every reference was recorded.
///
/// Errors: the store's.
fn commit(
    store: &mut Store,
    run_id: i64,
    case: &CaseRow,
    result: &mut CaseResult,
    checker: Option<&crate::agreement::Checker>,
    sink: &mut dyn EventSink,
) -> Result<()> {
    store.record_result(run_id, result)?;
    // No checker: a case judged in the closing pass, run before every reference was in.
    debug_assert!(checker.is_some() || crate::agreement::judged_in_closing_pass(case), "{}", case.key);
    if let Some(checker) = checker
        && let Some(wrong) = checker.check_float64(store, run_id, case, result)?
    {
        wrong.apply(result);
    }
    sink.event(&Event::CaseFinished { case, result });
    Ok(())
}

/// How one case's attempt on a (possibly new) worker ended.
pub(crate) enum Attempted {
    /// The case's result, to record.
    Done(Box<CaseResult>),
    /// Ctrl-C: the case stays pending.
    Interrupted,
    /// mlport's own file I/O failed: the case stays pending and the run stops.
    OwnIo(OwnIoError),
    /// No worker could be started for it: why (the target's remaining cases stay pending).
    Lost(String),
}

/// Runs `case` on `worker`, starting one from `spec` when there is none (or it died between
/// cases), and leaves in `worker` the one to use next (`None` after a kill). A crash is
/// confirmed on a fresh worker before it is recorded: a worker can die just after answering (a
/// thread the previous case left, closed descriptors), and that death belongs to no case. The
/// second attempt's result is the one returned. `restarted` is called for each worker killed.
pub(crate) fn attempt_case(
    worker: &mut Option<Worker>,
    spec: &WorkerSpec,
    case: &CaseRow,
    out_dir: &std::path::Path,
    cfg: &RunConfig,
    interrupted: &AtomicBool,
    restarted: &mut dyn FnMut(),
) -> Attempted {
    let mut attempt = 0;
    let mut first_crash: Option<String> = None;
    let mut result = loop {
        attempt += 1;
        if worker.as_mut().is_some_and(|w| !w.is_ready()) {
            *worker = None; // died or spoke out of turn between cases: not this case's doing
        }
        if worker.is_none() {
            match worker::spawn(spec, cfg.start_timeout, interrupted) {
                Ok(w) => *worker = Some(w),
                Err(Failure::Interrupted) => return Attempted::Interrupted,
                Err(f) => return Attempted::Lost(describe_start_failure(&f)),
            }
        }
        let w = worker.as_mut().expect("worker started above");
        let (result, keep) = match execute_case(w, case, &spec.device, out_dir, cfg, false, interrupted) {
            Ok(done) => done,
            Err(error) => return Attempted::OwnIo(error),
        };
        let Some(result) = result else { return Attempted::Interrupted };
        if !keep {
            *worker = None; // killed on timeout or crash: a fresh one for what comes next
            restarted();
        }
        if result.outcome == Outcome::Crash && attempt == 1 && crate::outcome::retry_crash(result.reason) {
            first_crash = result.message.clone();
            continue;
        }
        break result;
    };
    if let (Some(crash), true) = (first_crash, result.outcome != Outcome::Crash) {
        let note = format!("the first attempt's worker died ({crash}); this is the result on a fresh worker");
        result.stderr_tail = Some(match result.stderr_tail.take() {
            Some(t) => format!("{note}\n{t}"),
            None => note,
        });
    }
    Attempted::Done(Box::new(result))
}

/// Fills the parts of [`RunInfo`] that describe this machine.
pub fn machine_info(info: &mut RunInfo) {
    info.host = crate::sysinfo::host();
    info.os = crate::sysinfo::os();
    info.cpu_model = crate::sysinfo::cpu_model();
    info.cpu_cores = crate::sysinfo::cpu_cores();
    info.accelerators = crate::sysinfo::accelerators();
}
