//! Outcomes of live runs: the worker's answer (pass, fail with a classified reason,
//! `recompiles`), and the endings the core observes itself — a timeout on its clock, a worker
//! that died, a protocol error — plus a case the catalogue skips.

use std::time::Duration;

use super::{Decision, ErrorReport, classify};
use crate::model::{Framework, Outcome, Reason};
use crate::worker::protocol::ReplyOutcome;

/// A worker's answer to one case, as outcome needs it.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    /// The worker's word for how the case went: `pass`, or anything else for a failure.
    pub outcome: ReplyOutcome,
    /// The error it reported, if any.
    pub error: Option<ErrorReport<'a>>,
    /// Compilations during the case; `None` on eager targets.
    pub compiles: Option<u64>,
    /// Of them, those of the first call.
    pub compiles_first_call: Option<u64>,
    /// Graph breaks torch's Dynamo took (`compiled` mode); each may start one more graph.
    pub graph_breaks: Option<u64>,
}

/// How an answered case ended:
/// - `pass`, unless a compiled target compiled it more often than once per graph ⇒ `fail`,
///   [`recompiled`];
/// - anything else with an error ⇒ `fail`, reason [`classify`]'s;
/// - anything else without an error ⇒ [`harness_error`] (the worker broke its protocol).
///
/// The message is the error's when there is one (even on a pass), else the one written here.
pub fn answered(framework: Framework, answer: &Answer<'_>) -> Decision {
    let passed = match answer.outcome {
        ReplyOutcome::Pass => true,
        ReplyOutcome::Fail | ReplyOutcome::IoError => false,
    };
    let mut d = Decision::of(if passed { Outcome::Pass } else { Outcome::Fail });
    if passed && let Some(rc) = recompiled(answer.compiles, answer.compiles_first_call, answer.graph_breaks) {
        d = rc;
    }
    match &answer.error {
        Some(e) => {
            if !passed {
                d.reason = Some(classify(framework, e));
            }
            d.message = Some(e.message.to_string());
        }
        None if !passed => {
            d = harness_error(format!("worker answered outcome `{}` without an error", answer.outcome));
        }
        None => {}
    }
    d
}

/// A case compiled more often than once per graph for the same inputs (`total` compilations,
/// `first_call` of them at its first call) ⇒ `fail`, reason `recompiles`: it ran, but its
/// compiler compiled it again, a cost every call may pay. A call has one graph, plus one per
/// graph break torch's Dynamo took (`graph_breaks`: the code after a break is a graph of its
/// own). `None` for at most that many compilations.
pub fn recompiled(total: Option<u64>, first_call: Option<u64>, graph_breaks: Option<u64>) -> Option<Decision> {
    let graphs = 1 + graph_breaks.unwrap_or(0);
    let n = total.filter(|&n| n > graphs)?;
    let message = match first_call {
        Some(f) if f <= n => {
            format!("compiled {n} times for the same inputs: {f} at the first call, {} more in the steady state", n - f)
        }
        _ => format!("compiled {n} times for the same inputs"),
    };
    let message = match graph_breaks {
        Some(b) if b > 0 => format!("{message} ({graphs} graphs expected: {b} graph breaks)"),
        _ => message,
    };
    Some(Decision::with(Outcome::Fail, Some(Reason::Recompiles), message))
}

/// No answer within the case's time limit: the worker's process group was killed after
/// `after`, by `signal` (`None`: it had exited) ⇒ `timeout`, reason `timeout`.
pub fn timeout(after: Duration, signal: Option<i32>) -> Decision {
    let how = signal.map_or("exited".into(), crate::process_group::signal_name);
    let message = format!("no answer within {:.1} s; worker process group killed ({how})", after.as_secs_f64());
    Decision::with(Outcome::Timeout, Some(Reason::Timeout), message)
}

/// SIGKILL, the signal of the kernel's out-of-memory killer.
const SIGKILL: i32 = 9;

/// The worker died during the case: killed by `signal`, exited with `exit_code`, or closed its
/// pipe ⇒ `crash`, reason `crash` — except a SIGKILL that mlport did not send while the
/// kernel counted `oom_kills` (> 0) out-of-memory kills ([`crate::worker::oom`]): ⇒ `crash`,
/// reason `out_of_memory`, a case the runner does not retry on a fresh worker (the retry would
/// take the machine into a second OOM).
pub fn crash(signal: Option<i32>, exit_code: Option<i32>, oom_kills: u64) -> Decision {
    let message = match (signal, exit_code) {
        (Some(s), _) => format!("worker killed by {}", crate::process_group::signal_name(s)),
        (None, Some(c)) => format!("worker exited with code {c}"),
        _ => "worker closed its pipe".into(),
    };
    if signal == Some(SIGKILL) && oom_kills > 0 {
        let message = format!(
            "{message} while the kernel's out-of-memory killer killed {oom_kills} process{}: out of memory",
            if oom_kills == 1 { "" } else { "es" }
        );
        return Decision::with(Outcome::Crash, Some(Reason::OutOfMemory), message);
    }
    Decision::with(Outcome::Crash, Some(Reason::Crash), message)
}

/// Whether a crash is run once more on a fresh worker before it is recorded (a worker can die
/// from what an earlier case left behind): every crash but an out-of-memory kill, whose retry
/// would take the machine into a second OOM.
pub fn retry_crash(decision_reason: Option<Reason>) -> bool {
    decision_reason != Some(Reason::OutOfMemory)
}

/// mlport's own bug, said in `message` (a protocol error, an answer that makes no sense) ⇒
/// `fail`, reason `harness_error`: reported apart, never counted against a framework.
pub fn harness_error(message: impl Into<String>) -> Decision {
    Decision::with(Outcome::Fail, Some(Reason::HarnessError), message)
}

/// A case not run, for the stated `why` (the catalogue's `skip`) ⇒ `skip`, no reason.
pub fn skipped(why: impl Into<String>) -> Decision {
    Decision::with(Outcome::Skip, None, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::protocol::Phase;

    fn error<'a>(error_type: &'a str, message: &'a str) -> ErrorReport<'a> {
        ErrorReport { error_type, message, phase: Some(Phase::FirstCall), harness: false, compiled: false }
    }

    fn answer<'a>(outcome: &str, error: Option<ErrorReport<'a>>) -> Answer<'a> {
        Answer {
            outcome: outcome.parse().unwrap(),
            error,
            compiles: None,
            compiles_first_call: None,
            graph_breaks: None,
        }
    }

    #[test]
    fn more_than_one_compilation_is_a_recompile() {
        assert_eq!(recompiled(None, None, None), None);
        assert_eq!(recompiled(Some(1), Some(1), None), None);
        assert_eq!(recompiled(Some(0), Some(0), None), None);
        assert_eq!(recompiled(Some(2), Some(2), Some(1)), None, "one graph break: two graphs");
        let again = recompiled(Some(3), Some(2), Some(1)).unwrap();
        assert_eq!(
            again.message.as_deref(),
            Some(
                "compiled 3 times for the same inputs: 2 at the first call, 1 more in the steady state (2 graphs \
                 expected: 1 graph breaks)"
            )
        );
        let five = recompiled(Some(5), Some(1), Some(0)).unwrap();
        assert_eq!((five.outcome, five.reason), (Outcome::Fail, Some(Reason::Recompiles)));
        assert_eq!(
            five.message.as_deref(),
            Some("compiled 5 times for the same inputs: 1 at the first call, 4 more in the steady state")
        );
        assert_eq!(
            recompiled(Some(2), None, None).unwrap().message.as_deref(),
            Some("compiled 2 times for the same inputs")
        );
    }

    #[test]
    fn a_pass_is_a_pass_unless_it_recompiled() {
        assert_eq!(answered(Framework::Torch, &answer("pass", None)), Decision::of(Outcome::Pass));
        let twice = Answer { compiles: Some(3), compiles_first_call: Some(1), ..answer("pass", None) };
        let d = answered(Framework::Jax, &twice);
        assert_eq!((d.outcome, d.reason), (Outcome::Fail, Some(Reason::Recompiles)));
        assert!(d.message.unwrap().starts_with("compiled 3 times"));
        let once = Answer { compiles: Some(1), compiles_first_call: Some(1), ..answer("pass", None) };
        assert_eq!(answered(Framework::Jax, &once).outcome, Outcome::Pass);
    }

    #[test]
    fn a_failure_is_classified_and_keeps_the_error_message() {
        let oom = error("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB");
        let d = answered(Framework::Torch, &answer("fail", Some(oom)));
        assert_eq!(
            d,
            Decision::with(Outcome::Fail, Some(Reason::OutOfMemory), "CUDA out of memory. Tried to allocate 2.00 GiB")
        );
        let harness = ErrorReport { harness: true, ..error("NameError", "name 'x' is not defined") };
        assert_eq!(answered(Framework::Numpy, &answer("fail", Some(harness))).reason, Some(Reason::HarnessError));
    }

    #[test]
    fn a_failure_without_an_error_is_our_bug() {
        // (A word outside the protocol's outcomes never gets here: `protocol::parse_line` refuses it.)
        for word in ["fail", "io_error"] {
            let d = answered(Framework::Torch, &answer(word, None));
            assert_eq!(
                d,
                Decision::with(
                    Outcome::Fail,
                    Some(Reason::HarnessError),
                    format!("worker answered outcome `{word}` without an error")
                )
            );
        }
    }

    #[test]
    fn a_pass_with_an_error_keeps_its_message_and_no_reason() {
        let d = answered(Framework::Torch, &answer("pass", Some(error("UserWarning", "slow path"))));
        assert_eq!(d, Decision::with(Outcome::Pass, None, "slow path"));
    }

    #[test]
    fn a_sigkill_while_the_kernel_counted_an_oom_kill_is_out_of_memory() {
        let oom = crash(Some(9), None, 1);
        assert_eq!(
            oom,
            Decision::with(
                Outcome::Crash,
                Some(Reason::OutOfMemory),
                "worker killed by SIGKILL (9) while the kernel's out-of-memory killer killed 1 process: out of memory"
            )
        );
        assert!(!retry_crash(oom.reason), "an OOM kill is not retried");
        // Without the kernel's word, a SIGKILL is a crash (someone's kill -9); another signal
        // during an OOM kill elsewhere is that signal's crash.
        assert_eq!(crash(Some(9), None, 0).reason, Some(Reason::Crash));
        assert_eq!(crash(Some(11), None, 2).reason, Some(Reason::Crash));
        assert_eq!(crash(None, Some(137), 1).reason, Some(Reason::Crash));
        assert!(retry_crash(crash(Some(11), None, 0).reason));
    }

    #[test]
    fn the_core_decides_timeouts_crashes_and_protocol_errors() {
        let t = timeout(Duration::from_millis(1500), Some(9));
        assert_eq!(
            t,
            Decision::with(
                Outcome::Timeout,
                Some(Reason::Timeout),
                "no answer within 1.5 s; worker process group killed (SIGKILL (9))"
            )
        );
        assert!(timeout(Duration::from_secs(60), None).message.unwrap().ends_with("killed (exited)"));
        assert_eq!(crash(Some(11), None, 0).message.as_deref(), Some("worker killed by SIGSEGV (11)"));
        assert_eq!(crash(None, Some(3), 0).message.as_deref(), Some("worker exited with code 3"));
        let closed = crash(None, None, 0);
        assert_eq!(
            (closed.outcome, closed.reason, closed.message.as_deref()),
            (Outcome::Crash, Some(Reason::Crash), Some("worker closed its pipe"))
        );
        assert_eq!(crash(Some(77), None, 0).message.as_deref(), Some("worker killed by signal 77"));
        let p = harness_error("protocol error: bad json");
        assert_eq!((p.outcome, p.reason), (Outcome::Fail, Some(Reason::HarnessError)));
        assert_eq!(skipped("needs a GPU"), Decision::with(Outcome::Skip, None, "needs a GPU"));
    }
}
