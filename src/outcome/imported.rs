//! Outcomes of imported tests (a pytest-json-report, the paper's data): how a test of a suite
//! ended, in mlport's vocabulary. A failure's crash line goes through the same [`classify`] as a
//! live run's exception, after the rules only a test suite needs (pytest-timeout, assertions
//! that compared numbers, a suite's own harness bugs).

use super::{Decision, ErrorReport, classify};
use crate::model::{Framework, Outcome, Reason};
use crate::worker::protocol::Phase;

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
    /// The test file could not be collected (`message`: pytest's error line); its tests did
    /// not run.
    CollectionError(&'a str),
    /// The interpreter died while the test ran: killed by `signal`, or exited with `exit_code`.
    Crashed {
        /// The signal that killed pytest (SIGABRT for `os.abort()`, SIGSEGV).
        signal: Option<i32>,
        /// pytest's exit code when it exited instead.
        exit_code: Option<i32>,
    },
    /// The session's `--timeout` (s) passed while the test ran; pytest's process group was killed.
    TimedOut(f64),
    /// Failed, then passed when pytest-rerunfailures ran it again within the same session
    /// (`reruns` failed attempts; `first` the first attempt's crash line).
    Flaky {
        /// How many attempts failed before the one that passed.
        reruns: usize,
        /// The first failed attempt's crash line, when it had one.
        first: Option<&'a str>,
    },
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
    /// The other exceptions printed with the failure (`Type: message` lines of an
    /// `ExceptionGroup`'s members and of a chain's earlier links), in order; each is classified
    /// by the same rules and the most specific reason wins.
    pub causes: &'a [String],
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
        TestEnding::Failed(f) => failed(framework, f),
        TestEnding::CollectionError(message) => {
            Decision::with(Outcome::Fail, Some(Reason::HarnessError), format!("collection error: {message}"))
        }
        TestEnding::Crashed { signal, exit_code } => {
            let how = match (signal, exit_code) {
                (Some(s), _) => format!("killed by {}", crate::process_group::signal_name(*s)),
                (None, Some(c)) => format!("exited with code {c}"),
                (None, None) => "closed its pipe".into(),
            };
            Decision::with(Outcome::Crash, Some(Reason::Crash), format!("pytest {how} while this test ran"))
        }
        TestEnding::TimedOut(after) => Decision::with(
            Outcome::Timeout,
            Some(Reason::Timeout),
            format!("running when the session's --timeout {after:.0} s passed; pytest's process group was killed"),
        ),
        TestEnding::Flaky { reruns, first } => Decision::with(
            Outcome::Flaky,
            None,
            format!("flaky: passed after {reruns} failed attempt(s); first: {}", first.unwrap_or("no message")),
        ),
    }
}

/// A failed test: the test framework's own complaints first (Hypothesis' `Flaky`,
/// `FlakyFailure` and unreliable timings, in the crash line or a cause ⇒ outcome `flaky`, no
/// reason, a `flaky: ` message; its
/// `FailedHealthCheck`, `DeadlineExceeded`, `Unsatisfiable`, pytest's fixture-lookup and
/// collection errors ⇒ `harness_error`), then the crash line and each of `causes` by
/// [`one`], keeping the most specific reason: a framework's own reason (`dtype_unsupported`,
/// `not_implemented`, ...) over an assertion's (`wrong_result`, `dtype_changed`) over
/// `harness_error` over `other`; on a tie, the first found.
fn failed(framework: Framework, f: &TestFailure<'_>) -> Decision {
    let flaky = |t: Option<&str>, text: &str| {
        let last = t.map(|t| t.rsplit('.').next().unwrap_or(t));
        matches!(last, Some("Flaky" | "FlakyFailure" | "FlakyStrategyDefinition"))
            || text.contains("Unreliable test timings")
    };
    if flaky(f.error_type, f.text) || f.causes.iter().any(|c| flaky(split_type(c).0, c)) {
        return Decision::with(Outcome::Flaky, None, format!("flaky: {}", f.message));
    }
    let mut best = one(framework, f, f.error_type, f.message, f.text);
    for cause in f.causes {
        let (ty, msg) = split_type(cause);
        if flaky(ty, cause) {
            continue;
        }
        let candidate = one(framework, f, ty, msg, cause);
        if rank(candidate.1) > rank(best.1) {
            best = candidate;
        }
    }
    Decision::with(best.0, Some(best.1), f.message)
}

fn rank(r: Reason) -> u8 {
    match r {
        Reason::Other => 0,
        Reason::HarnessError => 1,
        Reason::WrongResult | Reason::DtypeChanged => 2,
        _ => 3,
    }
}

/// `pkg.Type: message` as type and message; a line without a dotted identifier before its
/// colon has no type.
fn split_type(text: &str) -> (Option<&str>, &str) {
    if let Some((ty, msg)) = text.split_once(':') {
        let ident = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !ty.is_empty() && ty.split('.').all(ident) {
            return (Some(ty), msg.trim_start());
        }
    }
    (None, text)
}

/// Errors of the test framework itself, not of the code under test.
fn is_framework_error(error_type: Option<&str>, message: &str) -> bool {
    let last = error_type.map(|t| t.rsplit('.').next().unwrap_or(t));
    matches!(
        last,
        Some("FailedHealthCheck" | "DeadlineExceeded" | "Unsatisfiable" | "FixtureLookupError" | "CollectError")
    ) || (message.contains("fixture '") && message.contains("not found"))
        || error_type.is_some_and(|t| t.starts_with("hypothesis.errors."))
}

/// One exception line's outcome and reason.
fn one(
    framework: Framework,
    f: &TestFailure<'_>,
    error_type: Option<&str>,
    message: &str,
    text: &str,
) -> (Outcome, Reason) {
    if f.harness_bugs.iter().any(|p| text.contains(p)) || is_framework_error(error_type, message) {
        return (Outcome::Fail, Reason::HarnessError);
    }
    if is_dtype_assertion(error_type, message) {
        return (Outcome::Fail, Reason::DtypeChanged);
    }
    if is_value_assertion(error_type, message) {
        return (Outcome::Fail, Reason::WrongResult);
    }
    if error_type == Some("Failed") && message.starts_with("Timeout") {
        // pytest-timeout: `Failed: Timeout >1020.0s`.
        return (Outcome::Timeout, Reason::Timeout);
    }
    if is_mismatch(error_type, message) {
        return (Outcome::Fail, Reason::WrongResult);
    }
    // pytest's stages: `call` is the call under test; `setup` is the fixtures'; `teardown` none.
    let phase = match f.stage {
        "call" => Some(Phase::FirstCall),
        "setup" => Some(Phase::Setup),
        _ => None,
    };
    let report = ErrorReport { error_type: error_type.unwrap_or(""), message, phase, harness: false, compiled: false };
    let reason = match classify(framework, &report) {
        Reason::HarnessError => Reason::NotImplemented,
        r => r,
    };
    (Outcome::Fail, reason)
}

/// Names of dtypes as frameworks print them (`float16`, `torch.bfloat16`, `dtype('int64')`,
/// `<dtype: 'float32'>`).
const DTYPE_NAMES: [&str; 17] = [
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "float8",
    "half",
];

/// An assertion about dtypes ⇒ `dtype_changed`: pytest's rewritten `assert out.dtype == ...`
/// (`assert dtype('float64') == dtype('float16')`, `assert torch.float32 == torch.bfloat16`),
/// unittest's `'float32' != 'float16'` when both sides name dtypes, and messages that say
/// `dtype` mismatch (`dtypes do not match`, `dtype mismatch`). Only the message's first line
/// is read (pytest's `+  where ...` lines follow it).
fn is_dtype_assertion(error_type: Option<&str>, message: &str) -> bool {
    let ty = error_type.map(|t| t.rsplit('.').next().unwrap_or(t));
    if !matches!(ty, None | Some("AssertionError")) {
        return false;
    }
    let first = message.lines().next().unwrap_or("").to_ascii_lowercase();
    if (first.contains("dtype") || first.contains("dtypes"))
        && (first.contains("mismatch")
            || first.contains("do not match")
            || first.contains("==")
            || first.contains("!="))
    {
        return true;
    }
    let body = first.strip_prefix("assert ").unwrap_or(&first);
    let sides: Vec<&str> = body.split(" == ").flat_map(|s| s.split(" != ")).collect();
    (sides.len() == 2 && sides.iter().all(|s| names_dtype(s))) || sets_dtypes_against(message)
}

/// Words that set what was got against what was expected, in the order they are tried (the
/// longer phrase first).
const CONTRASTS: [&str; 9] =
    ["but should be", "should be", "but got", "but found", "instead of", "expected", " != ", " vs. ", " vs "];

/// Labelled lines that set two values against each other: NumPy's `assert_equal`
/// (` ACTUAL: dtype('float32')` / ` DESIRED: dtype('float64')`), pandas' `assert_*_equal`
/// (`[left]:  float32` / `[right]: float64`), and the common `Expected:` / `Got:`.
const LABEL_PAIRS: [(&str, &str); 4] =
    [("actual:", "desired:"), ("[left]:", "[right]:"), ("expected:", "got:"), ("expected:", "actual:")];

/// A message that names two different dtypes set against each other, in whatever words a suite
/// uses — not one suite's phrasing: a dtype name just before a contrast (`but should be`, `!=`,
/// `expected`, `instead of`, … [`CONTRASTS`]) and another within a few words after it
/// (array-api-tests' `out.dtype=float32, but should be float64 [add(…)]`, its
/// `out.dtype=int32, should be default integer dtype int64`), or two labelled lines whose values
/// are dtypes ([`LABEL_PAIRS`]). Bracketed parts (`[add(float32, float64)]`, a call's signature)
/// are left out, so dtypes that only describe the inputs do not count. The first 12 lines are read.
fn sets_dtypes_against(message: &str) -> bool {
    let raw: Vec<String> = message.lines().take(12).map(str::to_ascii_lowercase).collect();
    let lines: Vec<String> = raw.iter().map(|l| without_brackets(l)).collect();
    let words_dtype = |text: &str, from_end: bool| -> Option<String> {
        let words: Vec<&str> =
            text.split(|c: char| c.is_whitespace() || c == '=' || c == ',').filter(|w| !w.is_empty()).collect();
        let pick: Vec<&str> = if from_end {
            words.iter().rev().take(2).copied().collect()
        } else {
            words.iter().take(5).copied().collect()
        };
        pick.into_iter().find(|w| names_dtype(w)).map(dtype_word)
    };
    for line in &lines {
        for contrast in CONTRASTS {
            let mut at = 0;
            while let Some(i) = line[at..].find(contrast) {
                let (before, after) = (&line[..at + i], &line[at + i + contrast.len()..]);
                if let (Some(a), Some(b)) = (words_dtype(before, true), words_dtype(after, false))
                    && a != b
                {
                    return true;
                }
                at += i + contrast.len();
            }
        }
    }
    let value = |label: &str| -> Option<String> {
        raw.iter().find_map(|l| l.trim().strip_prefix(label)).filter(|v| names_dtype(v)).map(dtype_word)
    };
    LABEL_PAIRS.iter().any(|(x, y)| matches!((value(x), value(y)), (Some(a), Some(b)) if a != b))
}

/// `line` without its `[...]` parts.
fn without_brackets(line: &str) -> String {
    let mut depth = 0usize;
    line.chars()
        .filter(|&c| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

/// The dtype a word names, normalised (`torch.float32`, `dtype('float32')` → `float32`).
fn dtype_word(word: &str) -> String {
    let t = word.trim().trim_matches(|c: char| "'\"<>() .:;".contains(c));
    t.rsplit(['.', ' ', '\'', '(']).next().unwrap_or(t).trim_matches(|c: char| "'\")".contains(c)).to_string()
}

fn names_dtype(side: &str) -> bool {
    let t = side.trim().trim_matches(|c: char| "'\"<>() ".contains(c));
    let t = t.rsplit(['.', ' ', '\'', '(']).next().unwrap_or(t).trim_matches(|c: char| "'\")".contains(c));
    DTYPE_NAMES.contains(&t)
}

/// An assertion that compared values and found them apart ⇒ `wrong_result`: pytest's rewritten
/// `assert 3.0 == 4.0` (with or without `AssertionError:`), `assert x < y`, unittest's
/// `3 != 4`, `allclose`/`array_equal` asserts.
fn is_value_assertion(error_type: Option<&str>, message: &str) -> bool {
    let ty = error_type.map(|t| t.rsplit('.').next().unwrap_or(t));
    if !matches!(ty, None | Some("AssertionError")) {
        return false;
    }
    let first = message.lines().next().unwrap_or("");
    let compares =
        [" == ", " != ", " < ", " > ", " <= ", " >= ", "allclose", "array_equal"].iter().any(|c| first.contains(c));
    compares && (first.starts_with("assert ") || ty.is_some())
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

    /// Dtype assertions as real suites word them (each from the suite's own source), and value
    /// assertions that merely mention dtypes.
    #[test]
    fn two_dtypes_set_against_each_other_are_a_dtype_change_in_any_suites_words() {
        let changed = [
            // array-api-tests, pytest_helpers.assert_dtype / assert_kw_dtype.
            "out.dtype=float32, but should be float64 [add(float32, float64)]\nassert float32 == float64",
            "out.dtype=int32, but should be int64 [sum(dtype=int64)]",
            // array-api-tests, pytest_helpers.assert_default_int.
            "out.dtype=int32, should be default integer dtype int64 [arange()]",
            // NumPy, numpy.testing.assert_equal (build_err_msg).
            "\nItems are not equal:\n ACTUAL: dtype('float32')\n DESIRED: dtype('float64')",
            // pandas, pandas._testing.assert_attr_equal.
            "Attributes of Series are different\n\nAttribute \"dtype\" are different\n[left]:  float32\n[right]: float64",
            // PyTorch, torch.testing.assert_close.
            "The values for attribute 'dtype' do not match: torch.float32 != torch.float64.",
            // unittest's assertEqual on two dtypes (JAX's and TensorFlow's test cases).
            "dtype('float32') != dtype('float64')",
            "tf.float32 != tf.float64",
        ];
        for m in changed {
            assert!(is_dtype_assertion(Some("AssertionError"), m), "not seen as a dtype change: {m:?}");
        }
        let not_dtype = [
            // array-api-tests, assert_scalar_equals: values, with the inputs' dtypes in brackets.
            "out=1.0, but should be 2.0 [add(x1=float32, x2=float64)]",
            // torch.testing.assert_close on values.
            "Tensor-likes are not close!\n\nMismatched elements: 3 / 10 (30.0%)",
            // The same dtype on both sides says nothing changed.
            "out.dtype=float32, but should be float32",
            // NumPy's assert_equal on values.
            "\nItems are not equal:\n ACTUAL: 3.0\n DESIRED: 4.0",
        ];
        for m in not_dtype {
            assert!(!is_dtype_assertion(Some("AssertionError"), m), "seen as a dtype change: {m:?}");
        }
    }

    fn failed<'a>(text: &'a str, error_type: Option<&'a str>, message: &'a str) -> TestEnding<'a> {
        TestEnding::Failed(TestFailure {
            text,
            error_type,
            message,
            stage: "call",
            harness_bugs: &["partial_timed()"],
            causes: &[],
        })
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
            causes: &[],
        });
        assert_eq!(reason(no_hook), (Outcome::Fail, Some(Reason::Other)), "without the phrase, no harness bug");
    }
}
