//! The vocabulary of how a case ended: [`Outcome`], failure [`Reason`] (DESIGN.md's taxonomy)
//! and the paper's [`FunctionStatus`]. Which outcome and reason a case gets is decided in
//! [`crate::outcome`] only; this module names them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How one case ended on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran and (where compared) agreed.
    Pass,
    /// Raised an error; see the [`Reason`].
    Fail,
    /// Not run, with a stated why (never a failure).
    Skip,
    /// Exceeded its time limit; the worker was killed.
    Timeout,
    /// The worker died (signal, abort, OOM kill).
    Crash,
    /// Ran, but disagreed with its reference beyond tolerance (reason `wrong_result`): the
    /// float64 reference of its canonical op, or the same case on the reference device.
    WrongResult,
    /// Both passed and failed within one session (a test pytest-rerunfailures ran again and
    /// that then passed, Hypothesis' `Flaky`): listed apart, never counted against the device.
    Flaky,
}

impl Outcome {
    /// Every outcome, in report order (the derived `Ord`).
    pub const ALL: [Outcome; 7] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Skip,
        Outcome::Timeout,
        Outcome::Crash,
        Outcome::WrongResult,
        Outcome::Flaky,
    ];

    /// The snake_case name stored with each result and shown in reports (`pass`, `timeout`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
            Outcome::Timeout => "timeout",
            Outcome::Crash => "crash",
            Outcome::WrongResult => "wrong_result",
            Outcome::Flaky => "flaky",
        }
    }
}

impl FromStr for Outcome {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s).ok_or_else(|| format!("unknown outcome `{s}`"))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a case failed: the taxonomy of DESIGN.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// No kernel or lowering for this op on this device.
    NotImplemented,
    /// The op exists on the device but not for this dtype.
    DtypeUnsupported,
    /// Ran, but the answer disagrees beyond tolerance.
    WrongResult,
    /// Ran, but an output's dtype is not the expected one (goes with
    /// [`Outcome::WrongResult`]): another than the case's `out_dtype`, than its float64
    /// reference's mapped to the case's precision, or than the same case's on its reference
    /// target. A finding of its own, counted apart from value disagreement (`wrong_result`).
    DtypeChanged,
    /// The device or host ran out of memory: `torch.OutOfMemoryError`, `MemoryError`,
    /// TensorFlow's `ResourceExhaustedError` or an out-of-memory message.
    OutOfMemory,
    /// No answer within the case's time limit (`timeout_s`, default 60 s); goes with
    /// [`Outcome::Timeout`].
    Timeout,
    /// The worker died from a signal or abort.
    Crash,
    /// Ran, but on the host instead of the target device.
    SilentFallback,
    /// A compiler (XLA, Inductor) rejected the function: a graph break it cannot handle, a
    /// data-dependent shape, a tracer error.
    CompileError,
    /// An export route's exporter refused the function (docs/ir-routes.md): `torch.onnx.export`,
    /// `jax2onnx`, `tf2onnx` or `jax.export` raised — an operator without a lowering to the
    /// interchange format, a data-dependent shape, a Python side effect. The exporter's message
    /// is kept.
    ExportError,
    /// Compiled more than once for the same inputs (first call and steady state of one case,
    /// compiled mode); the count is in the message and the result's `compiles`.
    Recompiles,
    /// The function does not exist in this framework version.
    ApiMissing,
    /// mlport's own bug; never counted against a framework.
    HarnessError,
    /// Anything no classification rule recognises, including argument mismatches (`TypeError`
    /// on the call's signature) and a framework that failed to import.
    Other,
}

impl Reason {
    /// Every reason, in DESIGN.md's order (the derived `Ord`).
    pub const ALL: [Reason; 14] = [
        Reason::NotImplemented,
        Reason::DtypeUnsupported,
        Reason::WrongResult,
        Reason::DtypeChanged,
        Reason::OutOfMemory,
        Reason::Timeout,
        Reason::Crash,
        Reason::SilentFallback,
        Reason::CompileError,
        Reason::ExportError,
        Reason::Recompiles,
        Reason::ApiMissing,
        Reason::HarnessError,
        Reason::Other,
    ];

    /// The snake_case name stored with each result and shown in reports (`not_implemented`).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotImplemented => "not_implemented",
            Reason::DtypeUnsupported => "dtype_unsupported",
            Reason::WrongResult => "wrong_result",
            Reason::DtypeChanged => "dtype_changed",
            Reason::OutOfMemory => "out_of_memory",
            Reason::Timeout => "timeout",
            Reason::Crash => "crash",
            Reason::SilentFallback => "silent_fallback",
            Reason::CompileError => "compile_error",
            Reason::ExportError => "export_error",
            Reason::Recompiles => "recompiles",
            Reason::ApiMissing => "api_missing",
            Reason::HarnessError => "harness_error",
            Reason::Other => "other",
        }
    }
}

impl FromStr for Reason {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Reason::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| format!("unknown failure reason `{s}`"))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A function's status on a device, the paper's definitions (section 3):
/// `success` when every counted case passes, `partial` when some fail,
/// `complete_failure` when all fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionStatus {
    /// Every counted case passed.
    Success,
    /// At least one counted case passed and at least one failed.
    Partial,
    /// Every counted case failed.
    CompleteFailure,
}

impl FunctionStatus {
    /// The snake_case name shown in reports (`complete_failure`).
    pub fn as_str(self) -> &'static str {
        match self {
            FunctionStatus::Success => "success",
            FunctionStatus::Partial => "partial",
            FunctionStatus::CompleteFailure => "complete_failure",
        }
    }

    /// Status from counts of counted passing and failing cases; `None` when nothing was counted.
    pub fn from_counts(passed: usize, failed: usize) -> Option<FunctionStatus> {
        match (passed, failed) {
            (0, 0) => None,
            (_, 0) => Some(FunctionStatus::Success),
            (0, _) => Some(FunctionStatus::CompleteFailure),
            _ => Some(FunctionStatus::Partial),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for r in Reason::ALL {
            assert_eq!(r.as_str().parse::<Reason>().unwrap(), r);
        }
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>().unwrap(), o);
        }
    }

    #[test]
    fn status_follows_the_paper() {
        assert_eq!(FunctionStatus::from_counts(3, 0), Some(FunctionStatus::Success));
        assert_eq!(FunctionStatus::from_counts(2, 1), Some(FunctionStatus::Partial));
        assert_eq!(FunctionStatus::from_counts(0, 4), Some(FunctionStatus::CompleteFailure));
        assert_eq!(FunctionStatus::from_counts(0, 0), None);
    }
}
