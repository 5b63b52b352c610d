//! One case on one worker: the request, the time limit, and the mapping of every way
//! it can end (answer, timeout, crash, protocol error) to a [`CaseResult`] whose outcome
//! [`crate::outcome`] decides (on a compiled target, a case compiled more than once is a
//! failure with reason `recompiles`; an answer whose outputs are not of the case's declared
//! `out_dtype` is `wrong_result` with reason `dtype_changed`).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::RunConfig;
use crate::model::{CaseResult, CaseRow, Outcome, Target};
use crate::outcome::{self, Answer, ErrorReport};
use crate::worker::protocol::{OwnIoError, PROTOCOL_VERSION, Request, RunReply};
use crate::worker::{Failure, Worker};

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
///
/// Errors: the worker could not write or read one of mlport's own files (an output `.npy`,
/// the input cache; protocol 8). That is no outcome of the function: nothing is to be recorded,
/// the case stays pending, and the caller stops the run.
pub fn execute_case(
    worker: &mut Worker,
    case: &CaseRow,
    device: &Target,
    out_dir: &Path,
    cfg: &RunConfig,
    reference: bool,
    interrupted: &AtomicBool,
) -> Result<(Option<CaseResult>, bool), OwnIoError> {
    let start = Instant::now();
    let finish = |mut r: CaseResult| {
        r.wall_ms = start.elapsed().as_secs_f64() * 1e3;
        r.finished_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        r
    };
    let spec = case.spec.catalogue();
    if let Some(why) = spec.and_then(|s| s.skip.as_deref()) {
        return Ok((Some(finish(outcome::skipped(why).into_result(&case.key, device.clone()))), true));
    }
    let timeout =
        spec.and_then(|s| s.timeout_s).and_then(|t| Duration::try_from_secs_f64(t).ok()).unwrap_or(cfg.case_timeout);
    let out = out_dir.to_string_lossy();
    let inputs_dir = cfg.run_dir.join("inputs");
    let inputs_dir = inputs_dir.to_string_lossy();
    // Only catalogue cases at a dtype are planned; an imported row (no spec to run) gets no key.
    let input_key = match (spec, case.dtype) {
        (Some(s), Some(d)) => crate::plan::input_key(&s.inputs, d, case.seed),
        _ => String::new(),
    };
    let req = Request::Run {
        v: PROTOCOL_VERSION,
        nonce: nonce(),
        case_key: &case.key,
        case: &case.spec,
        dtype: case.dtype,
        seed: case.seed,
        out_dir: &out,
        inputs_dir: &inputs_dir,
        input_key: &input_key,
        reference,
        timing: &cfg.timing,
    };
    Ok(match worker.run(&req, timeout, interrupted) {
        Ok(RunReply { io_error: Some(e), .. }) => return Err(e),
        Ok(reply) => {
            let compiled = device.mode().is_compiled();
            let compiles = reply.compiles.filter(|_| compiled);
            let error = reply.error.as_ref().map(|e| ErrorReport {
                error_type: &e.error_type,
                message: &e.message,
                phase: e.phase,
                harness: e.harness,
                compiled,
            });
            let graph_breaks = reply.graph_breaks.filter(|_| compiled);
            let answer = Answer {
                outcome: reply.outcome,
                error,
                compiles,
                compiles_first_call: reply.compiles_first_call,
                graph_breaks,
            };
            let mut r = outcome::answered(case.framework, &answer).into_result(&case.key, device.clone());
            r.first_call_ns = reply.first_call_ns;
            r.samples_ns = reply.samples_ns;
            r.block_sizes = reply.block_sizes;
            r.runqueue_wait_ns = reply.runqueue_wait_ns;
            r.steady_wall_ns = reply.steady_wall_ns;
            r.steady_stop = reply.steady_stop;
            r.measures = reply.measures;
            r.outputs = reply.outputs;
            r.compiles = compiles;
            r.graph_breaks = graph_breaks;
            // An answer whose outputs are not of the case's declared `out_dtype`: dtype_changed
            // (a float64 reference computes in float64 by design: not checked).
            if r.outcome == Outcome::Pass
                && !reference
                && let (Some(spec), Some(dtype)) = (spec, case.dtype)
                && let Some(changed) = outcome::declared_dtype(spec, dtype, &r.outputs)
            {
                changed.apply(&mut r);
            }
            // A suite's float64 reference says what computed it (its own NumPy reference, or
            // the operator in float64): kept as the reference's message.
            if reference && r.outcome == Outcome::Pass {
                r.message = reply.reference_by;
            }
            if let Some(e) = reply.error {
                r.error_type = Some(e.error_type);
                r.traceback = Some(e.traceback).filter(|t| !t.is_empty());
                r.phase = e.phase.map(|p| p.to_string());
            }
            (Some(finish(r)), true)
        }
        Err(Failure::Interrupted) => (None, false),
        Err(Failure::Timeout { after, signal, stderr_tail }) => {
            let mut r = outcome::timeout(after, signal).into_result(&case.key, device.clone());
            r.signal = signal;
            r.stderr_tail = Some(stderr_tail).filter(|s| !s.is_empty());
            (Some(finish(r)), false)
        }
        Err(Failure::Died { signal, exit_code, stderr_tail, oom_kills }) => {
            let mut r = outcome::crash(signal, exit_code, oom_kills).into_result(&case.key, device.clone());
            r.signal = signal;
            r.stderr_tail = Some(stderr_tail).filter(|s| !s.is_empty());
            (Some(finish(r)), false)
        }
        Err(Failure::Protocol { message, stderr_tail }) => {
            let decision = outcome::harness_error(format!("protocol error: {message}"));
            let mut r = decision.into_result(&case.key, device.clone());
            r.stderr_tail = Some(stderr_tail).filter(|s| !s.is_empty());
            (Some(finish(r)), false)
        }
    })
}
