//! The runner: executes a run's plan on its lanes and reports progress as a typed [`Event`]
//! stream. There is one execution path ([`execute`]): a dispatcher on the calling thread
//! ([`dispatch`]'s policy) hands out float64 references, framework probes and cases to
//! `--jobs` lanes ([`lanes`]), each a thread holding one worker at a time (a process per
//! framework and target, [`workers`]); every answer, timeout and crash becomes a
//! [`CaseResult`](crate::model::CaseResult) ([`attempt`]'s one retry rule, [`case`]), committed to
//! the store as it finishes and compared with its float64 reference. `--jobs 1` is the same
//! dispatcher with one unpinned lane, one worker at a time. A target is a device in an execution
//! mode ([`crate::model::Mode`]): `cpu` (eager) and `cpu/compiled` get a worker each.

mod attempt;
mod case;
mod devices;
mod dispatch;
mod events;
mod execute;
mod lanes;
pub mod reference;
pub mod schedule;
mod workers;

pub use case::execute_case;
pub use events::{Contention, Event, EventSink, NullSink, RunEnd, Tally, recorded_of_planned};
pub use execute::execute;

use std::path::PathBuf;
use std::time::Duration;

use crate::model::{Mode, RunInfo, Target};
use crate::worker::protocol::{OwnIoError, Timing};
use schedule::Layout;

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
    /// The lanes: how many workers run at once, the cores each is pinned to and their host
    /// compute threads (`--jobs`, `--threads`; [`schedule::layout`]). The default, one unpinned
    /// lane with each framework's own thread count, runs one worker at a time.
    pub layout: Layout,
    /// JAX's `jax_enable_x64` (`mlport run --jax-x64`); off by default, as JAX ships. Sent to
    /// JAX workers as `MLPORT_JAX_X64=1`; a JAX float64 self-reference always runs with it on
    /// (inside `jax.enable_x64(True)`, in the worker that computes it).
    pub jax_x64: bool,
}

impl Default for RunConfig {
    /// 60 s per case, 300 s to import a framework (TensorFlow's first import on a cold
    /// disk can take a minute), the default [`Timing`], one unpinned lane.
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
            layout: Layout::serial(),
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

/// Fills the parts of [`RunInfo`] that describe this machine.
pub fn machine_info(info: &mut RunInfo) {
    info.host = crate::sysinfo::host();
    info.os = crate::sysinfo::os();
    info.cpu_model = crate::sysinfo::cpu_model();
    info.cpu_cores = crate::sysinfo::cpu_cores();
    info.accelerators = crate::sysinfo::accelerators();
}
