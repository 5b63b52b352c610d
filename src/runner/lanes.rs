//! The parallel runner (`mlport run --jobs N`): N lanes, each a thread holding one worker at a
//! time, pinned to its own cores ([`schedule::Layout`]); this thread alone hands out work,
//! writes the store and reports events. The float64 references come first, on the same lanes
//! ([`reference::Queue`]). A lane with no reference left to take starts a framework's first
//! worker (the probe that reports its devices; [`schedule::probe_order`]) and runs the cases
//! that need no reference yet (workloads, judged in the closing pass); once every reference is
//! recorded, each free lane takes the longest pending case of its own worker's target, else of
//! a target no other lane's worker serves, else the longest of all ([`schedule::pick_where`]).
//! Each case is committed as it finishes, as in the serial run; crash retries, timeouts, Ctrl-C
//! and mlport's own I/O failures end the same way.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use crossbeam_channel::{Receiver, Sender, unbounded};

use super::schedule::{self, Layout, Pending};
use super::{
    Attempted, Ending, Event, EventSink, RunConfig, attempt_case, commit, describe_start_failure, finish,
    framework_ready, out_dir_name, reference, worker_env, worker_python, xla_reported,
};
use crate::model::{CaseRow, Framework, FrameworkInfo, ReferenceRow, RunInfo, Target};
use crate::store::Store;
use crate::worker::protocol::{Hello, OwnIoError};
use crate::worker::{self, Failure, Worker, WorkerSpec};

/// Work for a lane.
enum Job {
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
enum Report {
    /// A probe's hello, or why the worker did not start (`None`: interrupted).
    Probed { lane: usize, framework: Framework, hello: Result<Box<Hello>, Option<String>> },
    /// A worker was killed (timeout, crash) and will be restarted.
    Restarted { framework: Framework, target: Target },
    /// A case ended.
    Ran { lane: usize, case: usize, target: Target, attempted: Attempted },
    /// A reference ended.
    Referenced { lane: usize, index: usize, attempt: reference::Attempt },
}

/// The worker a lane holds: `framework`'s on `target`, started for cases or for float64
/// references (JAX's then runs with `jax_enable_x64`).
#[derive(Clone, Debug, PartialEq)]
struct Serves {
    framework: Framework,
    target: Target,
    reference: bool,
}

/// The worker of `framework` on `target` for a lane pinned to `cores`: the run's worker
/// environment plus the lane's cores and thread count ([`worker::pinned_env`]).
fn lane_spec(cfg: &RunConfig, cores: &[usize], framework: Framework, target: &Target) -> WorkerSpec {
    let mut env = worker_env(cfg, framework, target);
    if !cores.is_empty() {
        env.extend(worker::pinned_env(cores));
    }
    WorkerSpec {
        python: worker_python(cfg, framework, target),
        script_dir: cfg.script_dir.clone(),
        framework,
        device: target.clone(),
        env,
    }
}

/// One lane: runs jobs until its queue closes, then shuts its worker down.
#[allow(clippy::too_many_arguments)]
fn lane(
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
                release(&mut held);
                let cpu = Target::cpu();
                let hello = match worker::spawn(&lane_spec(cfg, cores, framework, &cpu), cfg.start_timeout, interrupted)
                {
                    Ok(w) => {
                        let hello = Box::new(w.hello.clone());
                        if hello.import_error.is_none() {
                            held = Some((Serves { framework, target: cpu, reference: false }, Some(w)));
                        } else {
                            w.shutdown();
                        }
                        Ok(hello)
                    }
                    Err(Failure::Interrupted) => Err(None),
                    Err(f) => Err(Some(describe_start_failure(&f))),
                };
                let _ = reports.send(Report::Probed { lane, framework, hello });
            }
            Job::Reference(index) => {
                let r = &refs[index];
                let target = reference::reference_target(r.framework, reference_device);
                hold(&mut held, Serves { framework: r.framework, target: target.clone(), reference: true });
                let worker = &mut held.as_mut().expect("set above").1;
                let mut restarted = || {
                    let _ = reports.send(Report::Restarted { framework: r.framework, target: target.clone() });
                };
                let attempt =
                    reference::compute_one(worker, r, cores, cfg, reference_device, &mut restarted, interrupted);
                let _ = reports.send(Report::Referenced { lane, index, attempt });
            }
            Job::Run(i, target) => {
                let case = &cases[i];
                hold(&mut held, Serves { framework: case.framework, target: target.clone(), reference: false });
                let spec = lane_spec(cfg, cores, case.framework, &target);
                let out_dir = cfg.run_dir.join(out_dir_name(case.framework, &target));
                let attempted = match std::fs::create_dir_all(&out_dir) {
                    Err(e) => Attempted::OwnIo(OwnIoError::from_io(&out_dir, "create folder", &e)),
                    Ok(()) => {
                        let worker = &mut held.as_mut().expect("set above").1;
                        let mut restarted = || {
                            let _ =
                                reports.send(Report::Restarted { framework: case.framework, target: target.clone() });
                        };
                        attempt_case(worker, &spec, case, &out_dir, cfg, interrupted, &mut restarted)
                    }
                };
                let _ = reports.send(Report::Ran { lane, case: i, target, attempted });
            }
        }
    }
    release(&mut held);
}

/// [`super::execute`] on the lanes of `layout`: the same cases, results and endings, up to
/// `layout.jobs()` workers at once, each pinned to its lane's cores. The float64 references
/// are computed first, on the same lanes ([`reference::Queue`]); a lane with no reference left
/// to take starts the frameworks' workers meanwhile and runs the cases judged only in the
/// closing pass (workloads); the other cases start once every reference is recorded.
///
/// Errors: the store's (the lanes finish their case in flight and stop).
#[allow(clippy::too_many_arguments)]
pub fn execute_parallel(
    store: &mut Store,
    run_id: i64,
    cases: &[CaseRow],
    info: &mut RunInfo,
    cfg: &RunConfig,
    layout: &Layout,
    sink: &mut dyn EventSink,
    interrupted: &AtomicBool,
) -> Result<Ending> {
    let refs = reference::pending(store, run_id)?;
    let history = store.expected_wall_ms(run_id)?;
    let mut queue = reference::Queue::new(&refs, &history, &info.reference_device, sink);
    // Loaded once every reference is recorded: cases are compared as they are committed.
    let mut checker: Option<crate::agreement::Checker> = None;
    let reference_device = info.reference_device.clone();
    let (refs, reference_device) = (&refs, &reference_device);
    let mut probes: VecDeque<Framework> = schedule::probe_order(cases, &history).into();
    // The cases that may run before every reference is recorded, by index.
    let early: Vec<bool> = cases.iter().map(crate::agreement::judged_in_closing_pass).collect();
    let all_early = |fw: Framework| cases.iter().zip(&early).filter(|(c, _)| c.framework == fw).all(|(_, e)| *e);
    let mut pending: Vec<Pending> = Vec::new();
    let jobs = layout.jobs();
    let ending = std::thread::scope(|scope| -> Result<Option<Ending>> {
        let (report_tx, reports) = unbounded();
        let mut queues: Vec<Sender<Job>> = Vec::new();
        for (i, cores) in layout.sets.iter().enumerate() {
            let (tx, rx) = unbounded();
            queues.push(tx);
            let report_tx = report_tx.clone();
            scope.spawn(move || lane(i, cores, cases, refs, cfg, reference_device, rx, report_tx, interrupted));
        }
        drop(report_tx);
        // What each lane holds (or will hold once its job starts), and whether it is busy.
        let mut serves: Vec<Option<Serves>> = vec![None; jobs];
        let mut busy = vec![false; jobs];
        let mut ending: Option<Ending> = None;
        loop {
            if ending.is_none() && !interrupted.load(Ordering::SeqCst) {
                for l in 0..jobs {
                    if busy[l] {
                        continue;
                    }
                    // The float64 references first; a lane with none left to take starts the
                    // frameworks' workers (probes) meanwhile; cases once every reference is in.
                    if queue.has_waiting() {
                        let current = serves[l].as_ref().filter(|s| s.reference).map(|s| s.framework);
                        let served: Vec<Framework> = (0..jobs)
                            .filter(|o| *o != l && busy[*o])
                            .filter_map(|o| serves[o].as_ref().filter(|s| s.reference).map(|s| s.framework))
                            .collect();
                        if let Some(i) = queue.next(refs, current, &served, reference_device) {
                            let framework = refs[i].framework;
                            let target = reference::reference_target(framework, reference_device);
                            serves[l] = Some(Serves { framework, target, reference: true });
                            busy[l] = queues[l].send(Job::Reference(i)).is_ok();
                            continue;
                        }
                    }
                    // Before every reference is in, only cases judged in the closing pass
                    // (workloads) may run: the others are compared as they are committed.
                    let refs_in = queue.is_done();
                    let eligible = |p: &Pending| refs_in || early[p.case];
                    let current = serves[l].as_ref().filter(|s| !s.reference).map(|s| (s.framework, &s.target));
                    let own = |early_only: bool| {
                        current.is_some_and(|(f, t)| {
                            pending.iter().any(|p| p.framework == f && &p.target == t && (!early_only || eligible(p)))
                        })
                    };
                    let own_work = own(false);
                    if !own_work && !probes.is_empty() {
                        // While references are still computed, a framework all of whose cases
                        // may run meanwhile (Keras': workloads only) first.
                        let at = if refs_in { None } else { probes.iter().position(|f| all_early(*f)) };
                        let fw = probes.remove(at.unwrap_or(0)).expect("not empty");
                        sink.event(&Event::FrameworkStarting { framework: fw });
                        serves[l] = Some(Serves { framework: fw, target: Target::cpu(), reference: false });
                        busy[l] = queues[l].send(Job::Probe(fw)).is_ok();
                        continue;
                    }
                    if refs_in && checker.is_none() {
                        checker = Some(crate::agreement::Checker::load(store, run_id)?);
                    }
                    if own_work && !own(true) {
                        // Its cases wait for the references: keep the worker (it was started for
                        // them) rather than leave it for another target's case.
                        continue;
                    }
                    let others: Vec<(Framework, Target)> = (0..jobs)
                        .filter(|o| *o != l)
                        .filter_map(|o| serves[o].as_ref().filter(|s| !s.reference))
                        .map(|s| (s.framework, s.target.clone()))
                        .collect();
                    if let Some(i) = schedule::pick_where(&pending, current, &others, &eligible) {
                        let p = pending.swap_remove(i);
                        sink.event(&Event::CaseStarted { case: &cases[p.case] });
                        serves[l] = Some(Serves { framework: p.framework, target: p.target.clone(), reference: false });
                        busy[l] = queues[l].send(Job::Run(p.case, p.target)).is_ok();
                    }
                }
            }
            if !busy.iter().any(|b| *b) {
                break;
            }
            let Ok(report) = reports.recv() else { break };
            match report {
                Report::Restarted { framework, target } => {
                    sink.event(&Event::WorkerRestarted { framework, device: target })
                }
                Report::Probed { lane, framework, hello } => {
                    busy[lane] = false;
                    match hello {
                        Ok(h) => match framework_ready(
                            store,
                            run_id,
                            info,
                            cfg,
                            framework,
                            &h,
                            // On Ctrl-C or a failed start, no xla:N (the run ends or reports them unavailable).
                            &xla_reported(cfg, framework, interrupted).unwrap_or_default(),
                            sink,
                        )? {
                            Some(targets) => {
                                for t in &targets {
                                    let done = store.done_keys(run_id, t)?;
                                    pending.extend(
                                        cases
                                            .iter()
                                            .enumerate()
                                            .filter(|(_, c)| {
                                                c.framework == framework
                                                    && !done.contains(&c.key)
                                                    && c.runs_in(t.mode())
                                            })
                                            .map(|(i, c)| Pending {
                                                case: i,
                                                framework,
                                                target: t.clone(),
                                                expected_ms: schedule::expected_ms(&history, c, t),
                                            }),
                                    );
                                }
                                if !targets.contains(&Target::cpu()) {
                                    // Only compiled (or other) targets: the eager probe would sit idle.
                                    let _ = queues[lane].send(Job::Release);
                                    serves[lane] = None;
                                }
                            }
                            None => serves[lane] = None,
                        },
                        Err(None) => ending = Some(Ending::Interrupted),
                        Err(Some(why)) => {
                            let failed = FrameworkInfo { import_error: Some(why.clone()), ..Default::default() };
                            info.frameworks.insert(framework, failed);
                            store.update_run_info(run_id, info)?;
                            sink.event(&Event::FrameworkFailed { framework, error: why });
                            serves[lane] = None;
                        }
                    }
                }
                Report::Referenced { lane, index, attempt } => {
                    busy[lane] = false;
                    if let Some(e) = queue.record(store, run_id, refs, index, attempt, sink)? {
                        ending = Some(e);
                    }
                }
                Report::Ran { lane, case, target, attempted } => {
                    busy[lane] = false;
                    let c = &cases[case];
                    match attempted {
                        Attempted::Done(mut r) => commit(store, run_id, c, &mut r, checker.as_ref(), sink)?,
                        Attempted::Interrupted => ending = Some(Ending::Interrupted),
                        Attempted::OwnIo(error) => {
                            ending = Some(Ending::OwnIoFailed { case_key: c.key.clone(), error });
                        }
                        Attempted::Lost(why) => {
                            // As in the serial run: the target's remaining cases stay pending.
                            sink.event(&Event::WorkerLost { framework: c.framework, device: target.clone(), why });
                            pending.retain(|p| !(p.framework == c.framework && p.target == target));
                            serves[lane] = None;
                        }
                    }
                }
            }
        }
        if ending.is_none()
            && interrupted.load(Ordering::SeqCst)
            && (!pending.is_empty() || !probes.is_empty() || !queue.is_done())
        {
            ending = Some(Ending::Interrupted);
        }
        Ok(ending)
    })?;
    match ending {
        Some(e) => Ok(e),
        None => finish(store, run_id, info, cfg),
    }
}
