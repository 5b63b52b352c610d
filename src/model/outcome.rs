//! The vocabulary of how a case ended: [`Outcome`], failure [`Reason`] (the taxonomy in docs/architecture.md)
//! and the paper's [`FunctionStatus`]. Which outcome and reason a case gets is decided in
//! [`crate::outcome`] only; this module names them.

use serde::{Deserialize, Serialize};
use strum::{EnumCount, VariantArray};

/// How one case ended on one device.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
    strum::EnumCount,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_outcome)]
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
    pub const ALL: [Outcome; Outcome::COUNT] = *Outcome::VARIANTS.first_chunk().expect("every variant");

    /// The snake_case name stored with each result and shown in reports (`pass`, `timeout`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`Outcome`].
fn unknown_outcome(s: &str) -> String {
    format!("unknown outcome `{s}`")
}

/// Why a case failed: the taxonomy of docs/architecture.md ("Words").
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
    strum::EnumCount,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_reason)]
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
    /// Every reason, in docs/architecture.md's order (the derived `Ord`).
    pub const ALL: [Reason; Reason::COUNT] = *Reason::VARIANTS.first_chunk().expect("every variant");

    /// The snake_case name stored with each result and shown in reports (`not_implemented`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`Reason`].
fn unknown_reason(s: &str) -> String {
    format!("unknown failure reason `{s}`")
}

/// A function's status on a device, the paper's definitions (section 3):
/// `success` when every counted case passes, `partial` when some fail,
/// `complete_failure` when all fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
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
        self.into()
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
