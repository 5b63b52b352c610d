//! Outcomes of imported tests (a pytest-json-report, the paper's data): how a test of a suite
//! ended, in mlport's vocabulary. A failure's crash line goes through the same [`classify`] as a
//! live run's exception, after the rules only a test suite needs (pytest-timeout, assertions
//! that compared numbers, a suite's own harness bugs).

use super::{Decision, ErrorReport, classify};
use crate::model::{Framework, Outcome, Reason};

/// How a test of an imported suite ended, as its report (or the lack of one) tells it.
#[derive(Clone, Copy, Debug)]
pub enum TestEnding<'a> {
    /// `passed` or `xpassed`.
    Passed,
    /// `skipped`, with pytest's reason when it gave one.
    Skipped(Option<&'a str>),
    /// `xfailed`: expected to fail, and it did.
    ExpectedFailure,
    /// Known only from timing files, so its outcome is unknown; `why` says so.
    Unknown(&'a str),
    /// `failed` or `error`.
    Failed(TestFailure<'a>),
}

/// A failed (or errored) test, as its report tells it.
#[derive(Clone, Copy, Debug)]
pub struct TestFailure<'a> {
    /// The crash line as pytest wrote it, `Type: message`.
    pub text: &'a str,
    /// The line's qualified exception type, when it has one.
    pub error_type: Option<&'a str>,
    /// The line's message (after the type).
    pub message: &'a str,
    /// The failed stage: `setup`, `call` or `teardown`.
    pub stage: &'a str,
    /// Phrases of `text` that mark a bug of the suite's own harness (the paper's
    /// `partial_timed()` timer bug).
    pub harness_bugs: &'a [&'a str],
}

/// The outcome of an imported test of `framework`:
/// - passed ⇒ `pass`; skipped ⇒ `skip` with pytest's reason (or `skipped`); xfailed ⇒ `skip`,
///   `expected to fail (xfail)`; unknown ⇒ `skip` with its why (never counted);
/// - failed, in order: a phrase of `harness_bugs` ⇒ `harness_error`; pytest-timeout's
///   `Failed: Timeout >1020.0s` ⇒ `timeout`; an assertion that compared numbers and found them
///   apart ⇒ `wrong_result` (outcome `fail`); else [`classify`] with the stage as phase (`call`
///   as `first_call`), where `harness_error` (a device this machine lacks) becomes
///   `not_implemented`: in a suite, a test that needs a device the machine lacks (a CUDA-only
///   test on a TPU) is a function that does not run here. The message is the crash line's.
pub fn imported(framework: Framework, ending: &TestEnding<'_>) -> Decision {
    match ending {
        TestEnding::Passed => Decision::of(Outcome::Pass),
        TestEnding::Skipped(why) => Decision::with(Outcome::Skip, None, why.unwrap_or("skipped")),
        TestEnding::ExpectedFailure => Decision::with(Outcome::Skip, None, "expected to fail (xfail)"),
        TestEnding::Unknown(why) => Decision::with(Outcome::Skip, None, *why),
        TestEnding::Failed(f) => {
            let (outcome, reason) = failure(framework, f);
            Decision::with(outcome, Some(reason), f.message)
        }
    }
}

fn failure(framework: Framework, f: &TestFailure<'_>) -> (Outcome, Reason) {
    if f.harness_bugs.iter().any(|p| f.text.contains(p)) {
        return (Outcome::Fail, Reason::HarnessError);
    }
    if f.error_type == Some("Failed") && f.message.starts_with("Timeout") {
        // pytest-timeout: `Failed: Timeout >1020.0s`.
        return (Outcome::Timeout, Reason::Timeout);
    }
    if is_mismatch(f.error_type, f.message) {
        return (Outcome::Fail, Reason::WrongResult);
    }
    let phase = if f.stage == "call" { "first_call" } else { f.stage };
    let report = ErrorReport {
        error_type: f.error_type.unwrap_or(""),
        message: f.message,
        phase,
        harness: false,
        compiled: false,
    };
    let reason = match classify(framework, &report) {
        Reason::HarnessError => Reason::NotImplemented,
        r => r,
    };
    (Outcome::Fail, reason)
}

/// A test assertion that compared numbers and found them apart ⇒ `wrong_result`:
/// `AssertionError: Tensor-likes are not close!`, `Scalars are not equal!`,
/// `0.99609375 not less than 0.005` (TensorFlow's assertLess on an error), NumPy's
/// `Arrays are not almost equal`, PyTorch's `GradcheckError: Jacobian mismatch`.
fn is_mismatch(error_type: Option<&str>, message: &str) -> bool {
    let ty = error_type.map(|t| t.rsplit('.').next().unwrap_or(t));
    let m = message.to_ascii_lowercase();
    match ty {
        Some("AssertionError") => [
            "not close",
            "are not equal",
            "not almost equal",
            "mismatched elements",
            "not less than",
            "not greater than",
            "not equal to tolerance",
            "not equivalent",
            "arrays are not",
        ]
        .iter()
        .any(|p| m.contains(p)),
        Some("GradcheckError") => m.contains("mismatch"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed<'a>(text: &'a str, error_type: Option<&'a str>, message: &'a str) -> TestEnding<'a> {
        TestEnding::Failed(TestFailure { text, error_type, message, stage: "call", harness_bugs: &["partial_timed()"] })
    }

    fn reason(ending: TestEnding<'_>) -> (Outcome, Option<Reason>) {
        let d = imported(Framework::Torch, &ending);
        (d.outcome, d.reason)
    }

    #[test]
    fn passes_and_skips() {
        assert_eq!(imported(Framework::Torch, &TestEnding::Passed), Decision::of(Outcome::Pass));
        assert_eq!(
            imported(Framework::Torch, &TestEnding::Skipped(Some("Only runs on cuda"))),
            Decision::with(Outcome::Skip, None, "Only runs on cuda")
        );
        assert_eq!(imported(Framework::Jax, &TestEnding::Skipped(None)).message.as_deref(), Some("skipped"));
        assert_eq!(
            imported(Framework::Jax, &TestEnding::ExpectedFailure),
            Decision::with(Outcome::Skip, None, "expected to fail (xfail)")
        );
        assert_eq!(
            imported(Framework::Jax, &TestEnding::Unknown("outcome unknown")),
            Decision::with(Outcome::Skip, None, "outcome unknown")
        );
    }

    #[test]
    fn failures_of_a_suite() {
        let timer = "TypeError: partial_timed() got an unexpected keyword argument 'x'";
        assert_eq!(
            reason(failed(timer, Some("TypeError"), "partial_timed() got an unexpected keyword argument 'x'")),
            (Outcome::Fail, Some(Reason::HarnessError))
        );
        assert_eq!(
            reason(failed("Failed: Timeout >1020.0s", Some("Failed"), "Timeout >1020.0s")),
            (Outcome::Timeout, Some(Reason::Timeout))
        );
        let close = "AssertionError: Tensor-likes are not close!";
        assert_eq!(
            reason(failed(close, Some("AssertionError"), "Tensor-likes are not close!")),
            (Outcome::Fail, Some(Reason::WrongResult))
        );
        let grad = "torch.autograd.gradcheck.GradcheckError: Jacobian mismatch";
        assert_eq!(
            reason(failed(grad, Some("torch.autograd.gradcheck.GradcheckError"), "Jacobian mismatch")),
            (Outcome::Fail, Some(Reason::WrongResult))
        );
        let lowering = "RuntimeError: Error while lowering: [] aten::isnan";
        let d =
            imported(Framework::Torch, &failed(lowering, Some("RuntimeError"), "Error while lowering: [] aten::isnan"));
        assert_eq!(d.outcome, Outcome::Fail);
        assert_eq!(d.message.as_deref(), Some("Error while lowering: [] aten::isnan"));
    }

    #[test]
    fn a_missing_device_in_a_suite_is_not_implemented_not_our_bug() {
        let text = "RuntimeError: Found no NVIDIA driver on your system.";
        assert_eq!(
            reason(failed(text, Some("RuntimeError"), "Found no NVIDIA driver on your system.")),
            (Outcome::Fail, Some(Reason::NotImplemented))
        );
        let no_hook = TestEnding::Failed(TestFailure {
            text: "TypeError: partial_timed() oops",
            error_type: Some("TypeError"),
            message: "partial_timed() oops",
            stage: "call",
            harness_bugs: &[],
        });
        assert_eq!(reason(no_hook), (Outcome::Fail, Some(Reason::Other)), "without the phrase, no harness bug");
    }
}
