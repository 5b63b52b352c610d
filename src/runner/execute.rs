//! The one execution path of a run: the dispatcher on the calling thread hands jobs to the
//! lanes ([`super::lanes`]) as [`Dispatch::next`] decides, records what they report — a
//! framework's devices, a float64 reference, a case's result, committed and compared with its
//! references as it comes — and reports it all as [`Event`]s. It alone writes the store.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use crossbeam_channel::{Sender, unbounded};

use super::attempt::{Attempted, case_result};
use super::devices::{framework_ready, xla_reported};
use super::dispatch::{Dispatch, Next};
use super::lanes::{Job, Report, lane};
use super::schedule::{self, Pending};
use super::workers::own_reference_worker;
use super::{Ending, Event, EventSink, RunConfig, reference};
use crate::agreement::Checker;
use crate::model::{CaseResult, CaseRow, Framework, FrameworkInfo, RunInfo, Target};
use crate::store::Store;
use crate::worker::protocol::Hello;

/// Runs every planned case that has no result yet on its target (so the same call resumes an
/// interrupted run), on `cfg.layout`'s lanes: up to `layout.jobs()` workers at once, each
/// pinned to its lane's cores (one unpinned lane by default). The float64 references are
/// computed on the same lanes ([`reference::Queue`]); a framework's function cases start once
/// its own and NumPy's references are recorded, the cases judged only in the closing pass
/// (workloads) at once ([`Dispatch`]). Frameworks that fail to import are recorded in
/// `info.frameworks[fw].import_error` and skipped; absent devices are recorded as unavailable.
/// Once every case ran, the closing pass compares results with the reference device.
///
/// Errors: the store's (the lanes finish their case in flight and stop), and a dispatcher that
/// left every lane idle with work left (a bug; the run stays resumable).
pub fn execute(
    store: &mut Store,
    run_id: i64,
    cases: &[CaseRow],
    info: &mut RunInfo,
    cfg: &RunConfig,
    sink: &mut dyn EventSink,
    interrupted: &AtomicBool,
) -> Result<Ending> {
    let refs = reference::pending(store, run_id)?;
    let history = store.expected_wall_ms(run_id)?;
    let mut queue = reference::Queue::new(&refs, &history, &info.reference_device, sink);
    let reference_device = info.reference_device.clone();
    let (refs, reference_device) = (&refs, &reference_device);
    let layout = &cfg.layout;
    let mut dispatch = Dispatch::new(
        layout.jobs(),
        refs,
        reference_device,
        cases.iter().map(|c| c.framework).collect(),
        cases.iter().map(crate::agreement::judged_in_closing_pass).collect(),
        schedule::probe_order(cases, &history),
        &|l, fw| own_reference_worker(cfg, &layout.sets[l], fw, &reference::reference_target(fw, reference_device)),
    );
    let ending = std::thread::scope(|scope| -> Result<Option<Ending>> {
        let (report_tx, reports) = unbounded();
        let mut lanes: Vec<Sender<Job>> = Vec::new();
        for (i, cores) in layout.sets.iter().enumerate() {
            let (tx, rx) = unbounded();
            lanes.push(tx);
            let report_tx = report_tx.clone();
            scope.spawn(move || lane(i, cores, cases, refs, cfg, reference_device, rx, report_tx, interrupted));
        }
        drop(report_tx);
        let mut run = Recorder {
            store: &mut *store,
            run_id,
            cases,
            info: &mut *info,
            cfg,
            history: &history,
            checker: None,
            checked: Vec::new(),
        };
        let mut ending: Option<Ending> = None;
        loop {
            if ending.is_none() && !interrupted.load(Ordering::SeqCst) {
                for (l, tx) in lanes.iter().enumerate() {
                    if dispatch.busy[l] {
                        continue;
                    }
                    if let Some(job) = run.hand_out(&mut dispatch, l, &mut queue, sink)? {
                        dispatch.busy[l] = tx.send(job).is_ok();
                    }
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
                        Ok(h) => {
                            let release = run.probed(&mut dispatch, lane, framework, &h, sink, interrupted)?;
                            if release {
                                // Only compiled (or other) targets: the eager probe would sit idle.
                                let _ = lanes[lane].send(Job::Release);
                            }
                        }
                        Err(None) => ending = Some(Ending::Interrupted),
                        Err(Some(why)) => {
                            run.not_started(framework, why, sink)?;
                            dispatch.serves[lane] = None;
                        }
                    }
                }
                Report::Referenced { lane, index, attempt } => {
                    dispatch.busy[lane] = false;
                    if let Some(e) = queue.record(&mut *run.store, run_id, refs, index, attempt, sink)? {
                        ending = Some(e);
                    }
                }
                Report::Ran { lane, case, target, attempted } => {
                    dispatch.busy[lane] = false;
                    let c = &cases[case];
                    match attempted {
                        Attempted::Done { result, first_crash } => {
                            let mut r = case_result(*result, first_crash.as_deref());
                            run.commit(c, &mut r, sink)?;
                        }
                        Attempted::Interrupted => ending = Some(Ending::Interrupted),
                        Attempted::OwnIo(error) => {
                            ending = Some(Ending::OwnIoFailed { case_key: c.key.clone(), error });
                        }
                        Attempted::Lost(why) | Attempted::NotImported(why) => {
                            // The target's remaining cases stay pending (`--resume` runs them).
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
        // idle with work left is a dispatcher bug. The run is left unfinished (resumable), never
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

/// The dispatcher's side of a run: what it records in the store as the lanes report.
struct Recorder<'a> {
    store: &'a mut Store,
    run_id: i64,
    cases: &'a [CaseRow],
    info: &'a mut RunInfo,
    cfg: &'a RunConfig,
    /// Earlier runs' wall times ([`Store::expected_wall_ms`]), for longest-first scheduling.
    history: &'a std::collections::HashMap<(String, String), f64>,
    /// The references cases are compared with as they are committed, loaded again whenever a
    /// framework's cases may start (its references and NumPy's are in).
    checker: Option<Checker>,
    /// The frameworks `checker` holds every reference of.
    checked: Vec<Framework>,
}

impl Recorder<'_> {
    /// The job [`Dispatch::next`] gives free lane `l`, with its event; `None` when it has none.
    fn hand_out(
        &mut self,
        dispatch: &mut Dispatch,
        l: usize,
        queue: &mut reference::Queue,
        sink: &mut dyn EventSink,
    ) -> Result<Option<Job>> {
        Ok(match dispatch.next(l, queue) {
            None | Some(Next::Wait) => None,
            Some(Next::Reference(i)) => Some(Job::Reference(i)),
            Some(Next::Probe(fw)) => {
                sink.event(&Event::FrameworkStarting { framework: fw });
                Some(Job::Probe(fw))
            }
            Some(Next::Run(p)) => {
                let c = &self.cases[p.case];
                if !dispatch.early(p.case) && !self.checked.contains(&c.framework) {
                    self.checker = Some(Checker::load(self.store, self.run_id)?);
                    self.checked = dispatch.ready_frameworks(queue);
                }
                sink.event(&Event::CaseStarted { case: c });
                Some(Job::Run(p.case, p.target))
            }
        })
    }

    /// Records what `framework`'s probe on lane `lane` said ([`framework_ready`]) and makes its
    /// cases on the available targets pending. Returns true when the lane's worker is to be
    /// released: the framework has no eager `cpu` target to run.
    fn probed(
        &mut self,
        dispatch: &mut Dispatch,
        lane: usize,
        framework: Framework,
        hello: &Hello,
        sink: &mut dyn EventSink,
        interrupted: &AtomicBool,
    ) -> Result<bool> {
        // On Ctrl-C or a failed start, no xla:N (the run ends or reports them unavailable).
        let xla = xla_reported(self.cfg, framework, interrupted).unwrap_or_default();
        let Some(targets) =
            framework_ready(self.store, self.run_id, self.info, self.cfg, framework, hello, &xla, sink)?
        else {
            dispatch.serves[lane] = None;
            return Ok(false);
        };
        for t in &targets {
            let done = self.store.done_keys(self.run_id, t)?;
            dispatch.pending.extend(
                self.cases
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.framework == framework && !done.contains(&c.key) && c.runs_in(t.mode()))
                    .map(|(i, c)| Pending {
                        case: i,
                        framework,
                        target: t.clone(),
                        expected_ms: schedule::expected_ms(self.history, c, t),
                    }),
            );
        }
        let release = !targets.contains(&Target::cpu());
        if release {
            dispatch.serves[lane] = None;
        }
        Ok(release)
    }

    /// Records that `framework`'s worker did not start (`why`): its cases do not run.
    fn not_started(&mut self, framework: Framework, why: String, sink: &mut dyn EventSink) -> Result<()> {
        let failed = FrameworkInfo { import_error: Some(why.clone()), ..Default::default() };
        self.info.frameworks.insert(framework, failed);
        self.store.update_run_info(self.run_id, self.info)?;
        sink.event(&Event::FrameworkFailed { framework, error: why });
        Ok(())
    }

    /// Commits a case's result to the store, compares it with its float64 reference at once (so
    /// that progress shows a wrong result as it happens; the comparison with the reference
    /// device comes in the closing pass) and reports it. A case judged in the closing pass
    /// ([`crate::agreement::judged_in_closing_pass`]) may have run before every reference was
    /// recorded, with no checker loaded yet.
    ///
    /// Errors: the store's.
    fn commit(&mut self, case: &CaseRow, result: &mut CaseResult, sink: &mut dyn EventSink) -> Result<()> {
        self.store.record_result(self.run_id, result)?;
        // No checker: a case judged in the closing pass, run before every reference was in.
        debug_assert!(self.checker.is_some() || crate::agreement::judged_in_closing_pass(case), "{}", case.key);
        if let Some(checker) = &self.checker
            && let Some(wrong) = checker.check_float64(self.store, self.run_id, case, result)?
        {
            wrong.apply(result);
        }
        sink.event(&Event::CaseFinished { case, result });
        Ok(())
    }
}

/// The closing pass of a run whose frameworks were all visited: comparisons with the reference
/// device, and the run's compiler caches removed (214 MB of Inductor's for the built-in
/// catalogue; an interrupted run keeps them for its resumption).
fn finish(store: &mut Store, run_id: i64, info: &RunInfo, cfg: &RunConfig) -> Result<Ending> {
    crate::agreement::check_run(store, run_id, &info.reference_device)?;
    let _ = std::fs::remove_dir_all(cfg.run_dir.join("compile-cache"));
    Ok(Ending::Finished)
}
