//! Which worker process serves a request: the interpreter, environment and output folder of a
//! framework's worker on a target, on a lane pinned to some cores ([`super::schedule::Layout`]),
//! for cases ([`case_worker`]) and for float64 references ([`reference_worker`]).

use std::path::PathBuf;

use super::RunConfig;
use crate::model::{Framework, Target};
use crate::worker::{self, Failure, WorkerSpec};

/// The interpreter of `fw`'s worker on `target`: the torch-xla stack's for torch on `xla:N`.
fn python(cfg: &RunConfig, fw: Framework, target: &Target) -> PathBuf {
    match (&cfg.xla_python, fw, target.is_xla()) {
        (Some(p), Framework::Torch, true) => p.clone(),
        _ => cfg.python.clone(),
    }
}

/// The run's host threads for an unpinned worker (`--threads`; none: the framework's default).
fn threads_env(cfg: &RunConfig) -> Vec<(String, String)> {
    cfg.layout.threads.map(worker::thread_env).unwrap_or_default()
}

/// `MLPORT_JAX_X64=1` for a JAX-backed worker under `--jax-x64`.
fn jax_env(cfg: &RunConfig, fw: Framework) -> Option<(String, String)> {
    (fw.backend() == Framework::Jax && cfg.jax_x64).then(|| ("MLPORT_JAX_X64".into(), "1".into()))
}

/// A case worker's environment: `--threads`, `--jax-x64` for JAX, the export routes the run uses
/// (`MLPORT_ROUTES`), and for compiled targets a torch Inductor cache in the
/// run folder (`compile-cache/torch`, removed when the run finishes), so every run compiles from
/// cold and first calls are comparable between runs; graphs met again within a run come from
/// that cache.
fn case_env(cfg: &RunConfig, fw: Framework, target: &Target) -> Vec<(String, String)> {
    let mut env = threads_env(cfg);
    env.extend(jax_env(cfg, fw));
    // The export routes the run uses: the hello describes their runtimes (`route_details`).
    // Route targets on a Vulkan device go whole (`vulkan:0/onnx`): no worker runs on that
    // device, so the hello says whether the framework reaches it (protocol 13).
    let asked =
        cfg.devices.iter().flatten().filter(|d| !d.is_vulkan()).map(|d| d.mode()).chain(cfg.modes.iter().copied());
    let mut routes: std::collections::BTreeSet<String> =
        asked.filter(|m| m.is_route()).map(|m| m.as_str().to_string()).collect();
    routes.extend(cfg.devices.iter().flatten().filter(|d| d.is_vulkan()).map(|d| d.to_string()));
    let routes: Vec<String> = routes.into_iter().collect();
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

/// The worker of `framework`'s cases on `target` for a lane pinned to `cores` (unpinned when
/// empty): the run's worker environment plus the lane's cores and thread count
/// ([`worker::pinned_env`]).
pub(super) fn case_worker(cfg: &RunConfig, cores: &[usize], framework: Framework, target: &Target) -> WorkerSpec {
    let mut env = case_env(cfg, framework, target);
    if !cores.is_empty() {
        env.extend(worker::pinned_env(cores));
    }
    WorkerSpec {
        python: python(cfg, framework, target),
        script_dir: cfg.script_dir.clone(),
        framework,
        device: target.clone(),
        env,
    }
}

/// The worker that computes `fw`'s float64 references on `device` for a lane pinned to `cores`
/// (unpinned when empty). JAX's is started as the run's other JAX workers are (`--jax-x64` or
/// not): the worker computes each float64 self-reference inside `jax.enable_x64(True)`, so the
/// same worker can go on to run the cases ([`own_reference_worker`]).
pub(super) fn reference_worker(cfg: &RunConfig, cores: &[usize], fw: Framework, device: &Target) -> WorkerSpec {
    let mut env = if cores.is_empty() { threads_env(cfg) } else { worker::pinned_env(cores) };
    env.extend(jax_env(cfg, fw));
    WorkerSpec {
        python: cfg.python.clone(),
        script_dir: cfg.script_dir.clone(),
        framework: fw,
        device: device.clone(),
        env,
    }
}

/// True when `fw`'s float64 references, computed on `target`, need a worker of their own on a
/// lane pinned to `cores`, one that cannot go on to run `fw`'s cases: when the reference
/// worker's environment differs from the case worker's ([`WorkerSpec::same_process`]; a run
/// through export routes sets `MLPORT_ROUTES` for its case workers). Otherwise the lane that
/// computed `fw`'s references keeps that worker for `fw`'s probe and cases (one start saved:
/// 3-10 s per framework on one core).
pub(super) fn own_reference_worker(cfg: &RunConfig, cores: &[usize], fw: Framework, target: &Target) -> bool {
    !reference_worker(cfg, cores, fw, target).same_process(&case_worker(cfg, cores, fw, target))
}

/// The folder of a target's output files in the run folder: `torch-cuda0`, `jax-cpu-compiled`.
pub(super) fn out_dir_name(framework: Framework, target: &Target) -> String {
    format!("{framework}-{}", target.as_str().replace(':', "").replace('/', "-"))
}

/// The folder of `fw`'s float64 reference outputs in the run folder: `reference` (NumPy's),
/// `reference-torch`.
pub(super) fn reference_dir_name(fw: Framework) -> String {
    if fw == Framework::Numpy { "reference".into() } else { format!("reference-{fw}") }
}

/// Why a worker did not start, as recorded and reported.
pub(super) fn describe_start_failure(f: &Failure) -> String {
    format!("the worker did not start: {f}")
}
