//! One attempt at a case or a float64 reference on a lane's worker, with the one crash-retry
//! rule of a run: a worker that died between requests is replaced before the request is sent,
//! a worker killed by a timeout or a crash is dropped (the next request starts a fresh one),
//! and a crash is confirmed on a fresh worker before it is recorded — a worker can die just
//! after answering (a thread the previous case left, closed descriptors), and that death
//! belongs to no case. An out-of-memory kill is never retried ([`crate::outcome::retry_crash`]:
//! a second one would take the machine into another OOM).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::workers::describe_start_failure;
use super::{RunConfig, execute_case};
use crate::model::{CaseResult, CaseRow, Outcome};
use crate::worker::protocol::OwnIoError;
use crate::worker::{self, Failure, Worker, WorkerSpec};

/// How one attempt at a request ended.
pub(crate) enum Attempted {
    /// The result to record: the second attempt's when the first one's worker crashed
    /// (`first_crash` holds the first attempt's result then).
    Done {
        /// The result (of the fresh worker's attempt after a crash).
        result: Box<CaseResult>,
        /// The first attempt's crash, when the request was sent again on a fresh worker.
        first_crash: Option<Box<CaseResult>>,
    },
    /// Ctrl-C: the request stays pending.
    Interrupted,
    /// mlport's own file I/O failed: the request stays pending and the run stops.
    OwnIo(OwnIoError),
    /// No worker could be started for it: why (the target's remaining cases stay pending; a
    /// reference is recorded as failed).
    Lost(String),
    /// A float64 reference's worker started but its framework did not import: `Type: message`.
    NotImported(String),
}

/// Sends `case` to `worker`, starting one from `spec` when there is none (or it died between
/// requests), and leaves in `worker` the one to use next (`None` after a kill). With
/// `reference`, the worker computes the case's float64 reference ([`execute_case`]), and a
/// worker whose framework does not import ends the attempt ([`Attempted::NotImported`]).
/// `restarted` is called for each worker killed (timeout or crash).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attempt(
    worker: &mut Option<Worker>,
    spec: &WorkerSpec,
    case: &CaseRow,
    out_dir: &Path,
    cfg: &RunConfig,
    reference: bool,
    interrupted: &AtomicBool,
    restarted: &mut dyn FnMut(),
) -> Attempted {
    let mut first_crash: Option<Box<CaseResult>> = None;
    loop {
        if worker.as_mut().is_some_and(|w| !w.is_ready()) {
            *worker = None; // died or spoke out of turn between requests: not this one's doing
        }
        if worker.is_none() {
            match worker::spawn(spec, cfg.start_timeout, interrupted) {
                Ok(w) if reference && w.hello.import_error.is_some() => {
                    let e = w.hello.import_error.clone().expect("checked above");
                    w.shutdown();
                    return Attempted::NotImported(format!("{}: {}", e.error_type, e.message));
                }
                Ok(w) => *worker = Some(w),
                Err(Failure::Interrupted) => return Attempted::Interrupted,
                Err(f) => return Attempted::Lost(describe_start_failure(&f)),
            }
        }
        let w = worker.as_mut().expect("worker started above");
        let (result, keep) = match execute_case(w, case, &spec.device, out_dir, cfg, reference, interrupted) {
            Ok(done) => done,
            Err(error) => return Attempted::OwnIo(error),
        };
        let Some(result) = result else { return Attempted::Interrupted };
        if !keep {
            *worker = None; // killed on timeout or crash: a fresh one for what comes next
            restarted();
        }
        if result.outcome == Outcome::Crash && first_crash.is_none() && crate::outcome::retry_crash(result.reason) {
            first_crash = Some(Box::new(result));
            continue;
        }
        return Attempted::Done { result: Box::new(result), first_crash };
    }
}

/// A case's result after [`attempt`]: when the first attempt's worker crashed and the second
/// did not, the result says so in its stderr tail (the crash is not the case's outcome).
pub(crate) fn case_result(mut result: CaseResult, first_crash: Option<&CaseResult>) -> CaseResult {
    if let Some(crash) = first_crash.and_then(|f| f.message.as_deref())
        && result.outcome != Outcome::Crash
    {
        let note = format!("the first attempt's worker died ({crash}); this is the result on a fresh worker");
        result.stderr_tail = Some(match result.stderr_tail.take() {
            Some(t) => format!("{note}\n{t}"),
            None => note,
        });
    }
    result
}
