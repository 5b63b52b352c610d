//! A run's lanes: each a thread holding one worker at a time, pinned to its own cores
//! ([`super::schedule::Layout`]; one unpinned lane under `--jobs 1`). A lane carries out the
//! jobs the dispatcher on the run's thread hands it ([`super::execute`]) and reports how each
//! ended; it never touches the store. A lane's worker that computed a framework's references
//! goes on to report its hello and run its cases when the two are the same process
//! ([`workers::own_reference_worker`]).

use std::sync::atomic::AtomicBool;

use crossbeam_channel::{Receiver, Sender};

use super::attempt::{Attempted, attempt};
use super::dispatch::Serves;
use super::workers::{self, case_worker, describe_start_failure, out_dir_name};
use super::{RunConfig, reference};
use crate::model::{CaseRow, Framework, ReferenceRow, Target};
use crate::worker::protocol::{Hello, OwnIoError};
use crate::worker::{self, Failure, Worker};

/// Work for a lane.
pub(super) enum Job {
    /// Start the framework's CPU worker and report its hello; keep the worker.
    Probe(Framework),
    /// Run the case (an index into the run's cases) on the target.
    Run(usize, Target),
    /// Compute the float64 reference (an index into the run's pending references).
    Reference(usize),
    /// Shut the lane's worker down (its framework has no eager CPU target to run).
    Release,
}

/// What a lane reports.
pub(super) enum Report {
    /// A probe's hello, or why the worker did not start (`None`: interrupted).
    Probed { lane: usize, framework: Framework, hello: Result<Box<Hello>, Option<String>> },
    /// A worker was killed (timeout, crash) and will be restarted.
    Restarted { framework: Framework, target: Target },
    /// A case ended.
    Ran { lane: usize, case: usize, target: Target, attempted: Attempted },
    /// A reference ended.
    Referenced { lane: usize, index: usize, attempt: reference::Attempt },
}

/// One lane: runs jobs until its queue closes, then shuts its worker down.
#[allow(clippy::too_many_arguments)]
pub(super) fn lane(
    lane: usize,
    cores: &[usize],
    cases: &[CaseRow],
    refs: &[ReferenceRow],
    cfg: &RunConfig,
    reference_device: &Target,
    jobs: Receiver<Job>,
    reports: Sender<Report>,
    interrupted: &AtomicBool,
) {
    // The worker held and what it serves.
    let mut held: Option<(Serves, Option<Worker>)> = None;
    let release = |held: &mut Option<(Serves, Option<Worker>)>| {
        if let Some((_, Some(w))) = held.take() {
            w.shutdown();
        }
    };
    // The held worker for `serves`, after shutting down one that serves something else.
    let hold = |held: &mut Option<(Serves, Option<Worker>)>, serves: Serves| {
        if held.as_ref().is_none_or(|(s, _)| *s != serves) {
            release(held);
            *held = Some((serves, None));
        }
    };
    for job in jobs {
        match job {
            Job::Release => release(&mut held),
            Job::Probe(framework) => {
                let cpu = Target::cpu();
                let serves = Serves { framework, target: cpu.clone(), reference: false };
                // The worker that computed the framework's references, when it serves cases too.
                let kept = match &mut held {
                    Some((s, Some(w))) if *s == serves => w.is_ready().then(|| Box::new(w.hello.clone())),
                    _ => None,
                };
                let hello = match kept {
                    Some(hello) => Ok(hello),
                    None => {
                        release(&mut held);
                        probe(cfg, cores, framework, &cpu, interrupted, &mut held)
                    }
                };
                let _ = reports.send(Report::Probed { lane, framework, hello });
            }
            Job::Reference(index) => {
                let r = &refs[index];
                let target = reference::reference_target(r.framework, reference_device);
                let own = workers::own_reference_worker(cfg, cores, r.framework, &target);
                hold(&mut held, Serves { framework: r.framework, target: target.clone(), reference: own });
                let worker = &mut held.as_mut().expect("set above").1;
                let mut restarted = || {
                    let _ = reports.send(Report::Restarted { framework: r.framework, target: target.clone() });
                };
                let attempt = reference::compute_one(worker, r, cores, cfg, &target, &mut restarted, interrupted);
                let _ = reports.send(Report::Referenced { lane, index, attempt });
            }
            Job::Run(i, target) => {
                let case = &cases[i];
                hold(&mut held, Serves { framework: case.framework, target: target.clone(), reference: false });
                let spec = case_worker(cfg, cores, case.framework, &target);
                let out_dir = cfg.run_dir.join(out_dir_name(case.framework, &target));
                let attempted = match std::fs::create_dir_all(&out_dir) {
                    Err(e) => Attempted::OwnIo(OwnIoError::from_io(&out_dir, "create folder", &e)),
                    Ok(()) => {
                        let worker = &mut held.as_mut().expect("set above").1;
                        let mut restarted = || {
                            let _ =
                                reports.send(Report::Restarted { framework: case.framework, target: target.clone() });
                        };
                        attempt(worker, &spec, case, &out_dir, cfg, false, interrupted, &mut restarted)
                    }
                };
                let _ = reports.send(Report::Ran { lane, case: i, target, attempted });
            }
        }
    }
    release(&mut held);
}

/// Starts `framework`'s worker on `target` for a probe, holding it in `held` when it imported;
/// its hello, or why it did not start (`None`: interrupted).
fn probe(
    cfg: &RunConfig,
    cores: &[usize],
    framework: Framework,
    target: &Target,
    interrupted: &AtomicBool,
    held: &mut Option<(Serves, Option<Worker>)>,
) -> Result<Box<Hello>, Option<String>> {
    match worker::spawn(&case_worker(cfg, cores, framework, target), cfg.start_timeout, interrupted) {
        Ok(w) => {
            let hello = Box::new(w.hello.clone());
            if hello.import_error.is_none() {
                *held = Some((Serves { framework, target: target.clone(), reference: false }, Some(w)));
            } else {
                w.shutdown();
            }
            Ok(hello)
        }
        Err(Failure::Interrupted) => Err(None),
        Err(f) => Err(Some(describe_start_failure(&f))),
    }
}
