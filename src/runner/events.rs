//! The runner's typed event stream; the terminal progress bar, logs and tests all
//! consume it through [`EventSink`].

use crate::model::{Device, Framework};
use crate::store::records::{CaseResult, CaseRow};

/// Something that happened during a run.
#[derive(Debug)]
pub enum Event<'a> {
    /// A framework's first worker is starting (importing the framework).
    FrameworkStarting {
        framework: Framework,
    },
    /// The framework imported; these devices will run.
    FrameworkReady {
        framework: Framework,
        version: String,
        devices: Vec<Device>,
    },
    /// The framework could not be imported or its worker not started; its cases do not run.
    FrameworkFailed {
        framework: Framework,
        error: String,
    },
    /// A device was asked for but this framework cannot see it (never a failure).
    DeviceUnavailable {
        framework: Framework,
        device: Device,
    },
    CaseStarted {
        case: &'a CaseRow,
    },
    /// A case ended (already committed to the store).
    CaseFinished {
        case: &'a CaseRow,
        result: &'a CaseResult,
    },
    /// The worker was killed (timeout) or died (crash) and will be restarted.
    WorkerRestarted {
        framework: Framework,
        device: Device,
    },
    /// A worker could not be restarted; the device's remaining cases stay pending.
    WorkerLost {
        framework: Framework,
        device: Device,
        why: String,
    },
}

/// Receives runner events.
pub trait EventSink {
    fn event(&mut self, e: &Event);
}

/// Ignores every event.
pub struct NullSink;

impl EventSink for NullSink {
    fn event(&mut self, _e: &Event) {}
}
