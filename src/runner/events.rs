//! The runner's typed event stream; the terminal progress bar, logs and tests all
//! consume it through [`EventSink`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::schedule::Layout;
use crate::model::{CaseResult, CaseRow, Framework, Outcome, Target};
use crate::worker::protocol::OwnIoError;

/// Something that happened during a run.
#[derive(Debug)]
pub enum Event<'a> {
    /// The run is about to execute its pending cases.
    RunStarting {
        /// The run's id.
        run_id: i64,
        /// Its planned cases.
        cases: usize,
        /// Its planned functions.
        functions: usize,
        /// The lanes it runs on (`--jobs`, `--threads`).
        layout: &'a Layout,
        /// `--quick`: no steady-state timing.
        quick: bool,
    },
    /// The run ended, with what the store holds then (the end-of-run summary).
    RunEnded {
        /// The run's id.
        run_id: i64,
        /// Wall time from the start of execution.
        elapsed: Duration,
        /// How it ended.
        end: &'a RunEnd,
    },
    /// A framework's first worker is starting (importing the framework).
    FrameworkStarting {
        /// The framework being imported.
        framework: Framework,
    },
    /// The framework imported; these devices will run.
    FrameworkReady {
        /// The framework that imported.
        framework: Framework,
        /// Its `__version__` (empty if it reported none).
        version: String,
        /// The available devices among those asked for (or all it reports); may be empty.
        devices: Vec<Target>,
        /// Those of `devices` that run another stack than the run's interpreter, with its
        /// versions (torch on `xla:N`: [`crate::model::device_stacks`]).
        stacks: Vec<crate::model::DeviceStack>,
    },
    /// The framework could not be imported or its worker not started; its cases do not run.
    FrameworkFailed {
        /// The framework that is not usable.
        framework: Framework,
        /// `Type: message` of the import error, or why the worker did not start.
        error: String,
    },
    /// A device was asked for but this framework cannot see it (never a failure).
    DeviceUnavailable {
        /// The framework that reported no such device.
        framework: Framework,
        /// The device asked for.
        device: Target,
        /// Why, as recorded with the device (how to get it where mlport knows).
        detail: String,
        /// The reason is the machine's, not the framework's (no Vulkan device): said once per
        /// device, not once per framework and target.
        machine_wide: bool,
    },
    /// The float64 references of the run's canonical ops are being computed (NumPy, host).
    ReferencesStarting {
        /// References to compute.
        count: usize,
    },
    /// The float64 references are computed.
    ReferencesDone {
        /// Computed.
        passed: usize,
        /// Could not be computed (their cases are not compared with float64).
        failed: usize,
        /// Self-references of functions the installed framework lacks: their cases are
        /// `api_missing`, so nothing needs them (recorded `skip`).
        not_needed: usize,
    },
    /// A case is about to be sent to its worker.
    CaseStarted {
        /// The case at one dtype.
        case: &'a CaseRow,
    },
    /// A case ended (already committed to the store).
    CaseFinished {
        /// The case at one dtype.
        case: &'a CaseRow,
        /// Its result on the device it ran on.
        result: &'a CaseResult,
    },
    /// The worker was killed (timeout) or died (crash) and will be restarted.
    WorkerRestarted {
        /// The worker's framework.
        framework: Framework,
        /// The worker's device.
        device: Target,
    },
    /// A worker could not be restarted; the device's remaining cases stay pending.
    WorkerLost {
        /// The worker's framework.
        framework: Framework,
        /// The worker's device.
        device: Target,
        /// Why the new worker did not start.
        why: String,
    },
}

/// Receives runner events.
pub trait EventSink {
    /// Called once per event, in order, on the runner's thread; the run waits while it runs.
    fn event(&mut self, e: &Event);
}

/// Ignores every event.
pub struct NullSink;

impl EventSink for NullSink {
    fn event(&mut self, _e: &Event) {}
}

/// How a run ended, with what its store holds then: what the end-of-run summary says
/// (`crate::lifecycle::close` computes it once the runner has returned).
#[derive(Debug)]
pub enum RunEnd {
    /// Stopped by Ctrl-C or SIGTERM (state `interrupted`): `recorded` results are stored and
    /// `pending` are not (results: one per case and target); `--resume` continues.
    Interrupted {
        /// Results stored (one per case and target).
        recorded: u64,
        /// Results planned and not stored.
        pending: u64,
    },
    /// Stopped because mlport could not write (or read) one of its own files while running
    /// `case_key` (state `interrupted`): no outcome of any function, the case stays pending.
    Stopped {
        /// The case or reference in flight.
        case_key: String,
        /// What failed, naming the path.
        error: OwnIoError,
        /// `(recorded, pending)` results (one per case and target), or why the store could not say.
        recorded: Result<(u64, u64), String>,
    },
    /// Every framework was visited and the closing comparison pass made.
    Finished(Tally),
}

/// How far a run got, in results (one per case and target, which is what a run records and
/// what is left: a case planned for two targets is two results): `7018 of 7990 results recorded
/// (one per case and target)`.
pub fn recorded_of_planned(recorded: u64, pending: u64) -> String {
    format!("{recorded} of {} results recorded (one per case and target)", recorded + pending)
}

/// A finished run's results as the store holds them after the closing comparison pass, which
/// can make a pass a `wrong_result` (every workload is judged there); a resumed run counts all
/// its results.
#[derive(Debug, Default)]
pub struct Tally {
    /// Results by outcome, `dtype_changed` results left out (they are in `dtype_changed`).
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Results that ran but returned another dtype than expected (outcome `wrong_result`, reason
    /// `dtype_changed`): said apart, as every report counts them with the failure reasons, not
    /// with the wrong results.
    pub dtype_changed: u64,
    /// Passes nothing could compare ("ran unchecked", docs/catalogue.md "References").
    pub unchecked: usize,
    /// Which float64 references could not be computed, said in one line
    /// ([`crate::analysis::coverage::missing_references_note`]), if any.
    pub missing_references: Option<String>,
    /// Whether one of them crashed or timed out, so `--resume` may compute it on a fresh worker.
    pub references_retryable: bool,
    /// Timed cases whose threads waited for a CPU, when more than none.
    pub contention: Option<Contention>,
    /// Cases still pending (a device unavailable, a worker that could not be restarted).
    pub pending: usize,
}

/// How many of a run's timed cases were timed while other processes held the CPUs: run-queue
/// wait above `limit` of their steady state (Linux schedstat; their latencies are flagged
/// unstable in slowdown reports).
#[derive(Debug)]
pub struct Contention {
    /// Timed cases that waited more than `limit`.
    pub busy: usize,
    /// Timed cases.
    pub timed: usize,
    /// The share of the steady state above which a case counts ([`crate::stats::StatsConfig`]).
    pub limit: f64,
    /// The median wait share of the busy cases.
    pub median: f64,
}

#[cfg(test)]
mod progress_words {
    use super::recorded_of_planned;

    #[test]
    fn results_are_counted_as_results_not_cases() {
        // A two-target run of 3,995 cases interrupted after 7,018 results, 972 pending: the
        // line once read "7018 of 3995 cases recorded".
        assert_eq!(recorded_of_planned(7018, 972), "7018 of 7990 results recorded (one per case and target)");
    }
}
