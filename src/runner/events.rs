//! The runner's typed event stream; the terminal progress bar, logs and tests all
//! consume it through [`EventSink`].

use crate::model::{CaseResult, CaseRow, Framework, Target};

/// Something that happened during a run.
#[derive(Debug)]
pub enum Event<'a> {
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
