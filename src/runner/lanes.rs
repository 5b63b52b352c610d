//! The parallel runner (`mlport run --jobs N`): N lanes, each a thread holding one worker at a
//! time, pinned to its own cores ([`schedule::Layout`]); this thread alone hands out work (what
//! a free lane does next is [`Dispatch::next`]'s to decide), writes the store and reports events.
//! Float64 references, framework probes and cases share the lanes; a lane's worker that computed
//! a framework's references goes on to report its hello and run its cases. A function's case is
//! compared with its references as it is committed, so the references are loaded again whenever
//! another framework's cases may start. Each case is committed as it finishes, as in the serial
//! run; crash retries, timeouts, Ctrl-C and mlport's own I/O failures end the same way.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use crossbeam_channel::{Receiver, Sender, unbounded};

use super::dispatch::{Dispatch, Next, Serves};
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

/// True when `fw`'s float64 references need a worker of their own on a lane pinned to `cores`,
/// one that cannot go on to run `fw`'s cases: when the reference worker's environment differs
/// from the case worker's on the reference device ([`WorkerSpec::same_process`]; a run through
/// export routes sets `MLPORT_ROUTES` for its case workers). Otherwise the lane that computed
/// `fw`'s references keeps that worker for `fw`'s probe and cases (one start saved: 3-10 s per
/// framework on one core); JAX's too, since it computes references inside
/// `jax.enable_x64(True)` (protocol 11).
fn own_reference_worker(cfg: &RunConfig, cores: &[usize], fw: Framework, reference_device: &Target) -> bool {
    let target = reference::reference_target(fw, reference_device);
    !reference::reference_spec(cfg, cores, fw, &target).same_process(&lane_spec(cfg, cores, fw, &target))
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
                let own = own_reference_worker(cfg, cores, r.framework, reference_device);
                hold(&mut held, Serves { framework: r.framework, target: target.clone(), reference: own });
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
    match worker::spawn(&lane_spec(cfg, cores, framework, target), cfg.start_timeout, interrupted) {
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

/// [`super::execute`] on the lanes of `layout`: the same cases, results and endings, up to
/// `layout.jobs()` workers at once, each pinned to its lane's cores. The float64 references
/// are computed on the same lanes ([`reference::Queue`]); a framework's function cases start
/// once its own and NumPy's references are recorded, the cases judged only in the closing pass
/// (workloads) at once ([`Dispatch`]).
///
/// Errors: the store's (the lanes finish their case in flight and stop), and a scheduler that
/// left every lane idle with work left (a bug; the run stays resumable).
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
    let reference_device = info.reference_device.clone();
    let (refs, reference_device) = (&refs, &reference_device);
    let jobs = layout.jobs();
    let mut dispatch = Dispatch::new(
        jobs,
        refs,
        reference_device,
        cases.iter().map(|c| c.framework).collect(),
        cases.iter().map(crate::agreement::judged_in_closing_pass).collect(),
        schedule::probe_order(cases, &history),
        &|l, fw| own_reference_worker(cfg, &layout.sets[l], fw, reference_device),
    );
    // The references cases are compared with as they are committed, loaded again whenever a
    // framework's cases may start (its references and NumPy's are in): `checked` lists those
    // it holds every reference of.
    let mut checker: Option<crate::agreement::Checker> = None;
    let mut checked: Vec<Framework> = Vec::new();
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
        let mut ending: Option<Ending> = None;
        loop {
            if ending.is_none() && !interrupted.load(Ordering::SeqCst) {
                for (l, lane) in queues.iter().enumerate() {
                    if dispatch.busy[l] {
                        continue;
                    }
                    let job = match dispatch.next(l, &mut queue) {
                        None | Some(Next::Wait) => continue,
                        Some(Next::Reference(i)) => Job::Reference(i),
                        Some(Next::Probe(fw)) => {
                            sink.event(&Event::FrameworkStarting { framework: fw });
                            Job::Probe(fw)
                        }
                        Some(Next::Run(p)) => {
                            let c = &cases[p.case];
                            if !dispatch.early(p.case) && !checked.contains(&c.framework) {
                                checker = Some(crate::agreement::Checker::load(store, run_id)?);
                                checked = dispatch.ready_frameworks(&queue);
                            }
                            sink.event(&Event::CaseStarted { case: c });
                            Job::Run(p.case, p.target)
                        }
                    };
                    dispatch.busy[l] = lane.send(job).is_ok();
                }
            }
            if !dispatch.busy.iter().any(|b| *b) {
                break;
            }
            let Ok(report) = reports.recv() else { break };
            match report {
                Report::Restarted { framework, target } => {
                    sink.event(&Event::WorkerRestarted { framework, device: target })
                }
                Report::Probed { lane, framework, hello } => {
                    dispatch.busy[lane] = false;
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
                                    dispatch.pending.extend(
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
                                    dispatch.serves[lane] = None;
                                }
                            }
                            None => dispatch.serves[lane] = None,
                        },
                        Err(None) => ending = Some(Ending::Interrupted),
                        Err(Some(why)) => {
                            let failed = FrameworkInfo { import_error: Some(why.clone()), ..Default::default() };
                            info.frameworks.insert(framework, failed);
                            store.update_run_info(run_id, info)?;
                            sink.event(&Event::FrameworkFailed { framework, error: why });
                            dispatch.serves[lane] = None;
                        }
                    }
                }
                Report::Referenced { lane, index, attempt } => {
                    dispatch.busy[lane] = false;
                    if let Some(e) = queue.record(store, run_id, refs, index, attempt, sink)? {
                        ending = Some(e);
                    }
                }
                Report::Ran { lane, case, target, attempted } => {
                    dispatch.busy[lane] = false;
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
                            dispatch.pending.retain(|p| !(p.framework == c.framework && p.target == target));
                            dispatch.serves[lane] = None;
                        }
                    }
                }
            }
        }
        let unfinished = !dispatch.pending.is_empty() || !dispatch.probes.is_empty() || !queue.is_done();
        if ending.is_none() && interrupted.load(Ordering::SeqCst) && unfinished {
            ending = Some(Ending::Interrupted);
        }
        // A lane waits only for work another lane has in flight ([`Dispatch::next`]): every lane
        // idle with work left is a scheduler bug. The run is left unfinished (resumable), never
        // closed with cases silently not run.
        if ending.is_none() && unfinished {
            anyhow::bail!(
                "internal error: every worker is idle with work left ({} cases and {} frameworks not started, \
                 references done: {}); `mlport run --resume` goes on with them",
                dispatch.pending.len(),
                dispatch.probes.len(),
                queue.is_done()
            );
        }
        Ok(ending)
    })?;
    match ending {
        Some(e) => Ok(e),
        None => finish(store, run_id, info, cfg),
    }
}
