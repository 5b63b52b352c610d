//! One case on one worker: the request, the time limit, and the mapping of every way
//! it can end (answer, timeout, crash, protocol error) to a [`CaseResult`]. On a compiled
//! target, a case compiled more than once is a failure with reason `recompiles`.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::RunConfig;
use crate::model::{CaseResult, CaseRow, Device, Mode, Outcome, Reason};
use crate::outcome::{ErrorReport, classify};
use crate::worker::protocol::{PROTOCOL_VERSION, Request};
use crate::worker::{Failure, Worker};

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| format!("{s} ({sig})"))
}

fn blank(case: &CaseRow, device: &Device, outcome: Outcome) -> CaseResult {
    CaseResult::new(&case.key, device.clone(), outcome)
}

/// The message of a case compiled more than once (`None` for at most once): it ran, but its
/// compiler compiled it again for the same inputs, a cost every call may pay.
fn recompiled(total: Option<u64>, first_call: Option<u64>) -> Option<String> {
    let n = total.filter(|&n| n > 1)?;
    Some(match first_call {
        Some(f) if f <= n => {
            format!("compiled {n} times for the same inputs: {f} at the first call, {} more in the steady state", n - f)
        }
        _ => format!("compiled {n} times for the same inputs"),
    })
}

/// A number no case can predict: the std hasher's random keys over a counter.
fn nonce() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Runs one case. Returns the result (`None` if the run was interrupted mid-case: the
/// case stays pending) and whether the worker is still usable (false after a kill).
/// With `reference`, the worker computes the case's float64 reference instead: inputs
/// upcast, one call, outputs saved, nothing timed.
pub fn execute_case(
    worker: &mut Worker,
    case: &CaseRow,
    device: &Device,
    out_dir: &Path,
    cfg: &RunConfig,
    reference: bool,
    interrupted: &AtomicBool,
) -> (Option<CaseResult>, bool) {
    let start = Instant::now();
    let finish = |mut r: CaseResult| {
        r.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        r.finished_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        r
    };
    if let Some(why) = case.spec.get("skip").and_then(|s| s.as_str()) {
        let mut r = blank(case, device, Outcome::Skip);
        r.message = Some(why.to_string());
        return (Some(finish(r)), true);
    }
    let timeout = case
        .spec
        .get("timeout_s")
        .and_then(|t| t.as_f64())
        .and_then(|t| Duration::try_from_secs_f64(t).ok())
        .unwrap_or(cfg.case_timeout);
    let out = out_dir.to_string_lossy();
    let inputs_dir = cfg.run_dir.join("inputs");
    let inputs_dir = inputs_dir.to_string_lossy();
    let input_key = crate::plan::input_key(&case.spec["inputs"], &case.dtype, case.seed);
    let req = Request::Run {
        v: PROTOCOL_VERSION,
        nonce: nonce(),
        case_key: &case.key,
        case: &case.spec,
        dtype: &case.dtype,
        seed: case.seed,
        out_dir: &out,
        inputs_dir: &inputs_dir,
        input_key: &input_key,
        reference,
        timing: &cfg.timing,
    };
    match worker.run(&req, timeout, interrupted) {
        Ok(reply) => {
            let passed = reply.outcome == "pass";
            let mut r = blank(case, device, if passed { Outcome::Pass } else { Outcome::Fail });
            r.first_call_ns = reply.first_call_ns;
            r.samples_ns = reply.samples_ns;
            r.block_sizes = reply.block_sizes;
            r.runqueue_wait_ns = reply.runqueue_wait_ns;
            r.steady_wall_ns = reply.steady_wall_ns;
            r.outputs = reply.outputs;
            r.compiles = reply.compiles.filter(|_| device.mode() == Mode::Compiled);
            if passed && let Some(message) = recompiled(r.compiles, reply.compiles_first_call) {
                r.outcome = Outcome::Fail;
                r.reason = Some(Reason::Recompiles);
                r.message = Some(message);
            }
            if let Some(e) = reply.error {
                if !passed {
                    r.reason = Some(classify(
                        case.framework,
                        &ErrorReport {
                            error_type: &e.error_type,
                            message: &e.message,
                            phase: &e.phase,
                            harness: e.harness,
                            compiled: device.mode() == Mode::Compiled,
                        },
                    ));
                }
                r.error_type = Some(e.error_type);
                r.message = Some(e.message);
                r.traceback = Some(e.traceback).filter(|t| !t.is_empty());
                r.phase = Some(e.phase).filter(|p| !p.is_empty());
            } else if !passed {
                r.reason = Some(Reason::HarnessError);
                r.message = Some(format!("worker answered outcome `{}` without an error", reply.outcome));
            }
            (Some(finish(r)), true)
        }
        Err(Failure::Interrupted) => (None, false),
        Err(Failure::Timeout { after, signal, stderr_tail }) => {
            let mut r = blank(case, device, Outcome::Timeout);
            r.reason = Some(Reason::Timeout);
            r.message = Some(format!(
                "no answer within {:.1} s; worker process group killed ({})",
                after.as_secs_f64(),
                signal.map_or("exited".into(), signal_name)
            ));
            r.signal = signal;
            r.stderr_tail = Some(stderr_tail).filter(|s| !s.is_empty());
            (Some(finish(r)), false)
        }
        Err(Failure::Died { signal, exit_code, stderr_tail }) => {
            let mut r = blank(case, device, Outcome::Crash);
            r.reason = Some(Reason::Crash);
            r.message = Some(match (signal, exit_code) {
                (Some(s), _) => format!("worker killed by {}", signal_name(s)),
                (None, Some(c)) => format!("worker exited with code {c}"),
                _ => "worker closed its pipe".into(),
            });
            r.signal = signal;
            r.stderr_tail = Some(stderr_tail).filter(|s| !s.is_empty());
            (Some(finish(r)), false)
        }
        Err(Failure::Protocol { message, stderr_tail }) => {
            let mut r = blank(case, device, Outcome::Fail);
            r.reason = Some(Reason::HarnessError);
            r.message = Some(format!("protocol error: {message}"));
            r.stderr_tail = Some(stderr_tail).filter(|s| !s.is_empty());
            (Some(finish(r)), false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::recompiled;

    #[test]
    fn more_than_one_compilation_is_a_recompile() {
        assert_eq!(recompiled(None, None), None);
        assert_eq!(recompiled(Some(1), Some(1)), None);
        assert_eq!(recompiled(Some(0), Some(0)), None);
        assert_eq!(
            recompiled(Some(5), Some(1)).as_deref(),
            Some("compiled 5 times for the same inputs: 1 at the first call, 4 more in the steady state")
        );
        assert_eq!(recompiled(Some(2), None).as_deref(), Some("compiled 2 times for the same inputs"));
    }
}
