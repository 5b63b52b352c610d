//! The float64 reference phase of a run: before any framework runs, every planned reference
//! that is not computed yet is computed on the inputs upcast to float64 — by one NumPy worker on
//! the host (an op's NumPy/SciPy function, a case's own `reference` callable), and by one
//! worker per framework on the reference device, eager, for float64 self-references (the
//! case's own function; JAX's with `jax_enable_x64` on, whatever the run's setting). A
//! reference whose worker dies is computed again on a fresh worker, as a case is; one that
//! fails, times out or crashes again is recorded with why, its cases then run unchecked (never
//! an abort) and every report counts them; a crashed one is computed again by `--resume`.
//! When mlport's own files cannot be written (a full disk) the run stops with the reference
//! pending ([`Ending::OwnIoFailed`]).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{Ending, Event, EventSink, RunConfig, describe_start_failure, execute_case};
use crate::model::{CaseResult, CaseRow, Framework, Outcome, ReferenceRow, Spec, Target};
use crate::store::Store;
use crate::worker::{self, Failure, Worker, WorkerSpec};

/// Computes the run's pending references (self-references on `reference_device`, eager);
/// returns [`Ending::Interrupted`] or [`Ending::OwnIoFailed`] when stopped (the reference in
/// flight stays pending).
pub fn compute(
    store: &mut Store,
    run_id: i64,
    cfg: &RunConfig,
    reference_device: &Target,
    sink: &mut dyn EventSink,
    interrupted: &AtomicBool,
) -> Result<Ending> {
    let pending = pending(store, run_id)?;
    if pending.is_empty() {
        return Ok(Ending::Finished);
    }
    sink.event(&Event::ReferencesStarting { count: pending.len() });
    let (mut passed, mut failed) = (0, 0);
    let mut frameworks: Vec<Framework> = pending.iter().map(|r| r.framework).collect();
    frameworks.sort();
    frameworks.dedup();
    for fw in frameworks {
        let mine: Vec<&ReferenceRow> = pending.iter().filter(|r| r.framework == fw).collect();
        // NumPy's on the host; a self-reference on the run's reference device, eager.
        let device = if fw == Framework::Numpy { Target::cpu() } else { reference_device.base() };
        let mut env = cfg.threads.map(worker::thread_env).unwrap_or_default();
        if fw.backend() == Framework::Jax {
            env.push(("MLPORT_JAX_X64".into(), "1".into()));
        }
        let spec = WorkerSpec {
            python: cfg.python.clone(),
            script_dir: cfg.script_dir.clone(),
            framework: fw,
            device: device.clone(),
            env,
        };
        let out_dir =
            cfg.run_dir.join(if fw == Framework::Numpy { "reference".into() } else { format!("reference-{fw}") });
        if let Err(e) = std::fs::create_dir_all(&out_dir) {
            return Ok(Ending::folder_failed(&mine[0].key, &out_dir, &e));
        }
        let mut worker: Option<Worker> = None;
        'refs: for (i, r) in mine.iter().enumerate() {
            let case = CaseRow {
                key: r.key.clone(),
                framework: fw,
                function: r.function.clone(),
                case_id: r.case_id.clone(),
                dtype: Some(r.dtype),
                seed: r.seed,
                spec: Spec::from(r.spec.clone()),
            };
            // Retried like a case: a crash is confirmed on a fresh worker before it is recorded
            // (the worker may have died of what an earlier reference left behind).
            let mut first_crash: Option<String> = None;
            let result = loop {
                if worker.as_mut().is_some_and(|w| !w.is_ready()) {
                    worker = None;
                }
                if worker.is_none() {
                    match worker::spawn(&spec, cfg.start_timeout, interrupted) {
                        Ok(w) if w.hello.import_error.is_none() => worker = Some(w),
                        Ok(w) => {
                            let e = w.hello.import_error.clone().expect("checked above");
                            w.shutdown();
                            let why =
                                format!("{fw} is not usable for float64 references: {}: {}", e.error_type, e.message);
                            // This one and those after it; those before were computed.
                            let left = &mine[i..];
                            for p in left {
                                store.record_reference(
                                    run_id,
                                    &p.key,
                                    Outcome::Fail,
                                    Some(&why),
                                    &serde_json::json!([]),
                                )?;
                            }
                            failed += left.len();
                            break 'refs;
                        }
                        Err(Failure::Interrupted) => return Ok(Ending::Interrupted),
                        Err(f) => {
                            let why = describe_start_failure(&f);
                            store.record_reference(
                                run_id,
                                &r.key,
                                Outcome::Fail,
                                Some(&why),
                                &serde_json::json!([]),
                            )?;
                            failed += 1;
                            continue 'refs;
                        }
                    }
                }
                let w = worker.as_mut().expect("started above");
                let (result, keep) = match execute_case(w, &case, &device, &out_dir, cfg, true, interrupted) {
                    Ok(done) => done,
                    Err(error) => return Ok(Ending::OwnIoFailed { case_key: r.key.clone(), error }),
                };
                let Some(result) = result else { return Ok(Ending::Interrupted) };
                if !keep {
                    worker = None;
                }
                // Like a case: a crash is retried once on a fresh worker, an out-of-memory kill never
                // (a second one would take the machine into another OOM).
                if result.outcome == Outcome::Crash
                    && first_crash.is_none()
                    && crate::outcome::retry_crash(result.reason)
                {
                    first_crash = Some(why(&result));
                    sink.event(&Event::WorkerRestarted { framework: fw, device: device.clone() });
                    continue;
                }
                break result;
            };
            let message = (result.outcome != Outcome::Pass).then(|| why(&result));
            let message = match (first_crash, message) {
                (Some(first), Some(m)) => {
                    Some(format!("{m} (on a fresh worker; the first attempt's worker died too: {first})"))
                }
                (_, m) => m,
            };
            store.record_reference(run_id, &r.key, result.outcome, message.as_deref(), &result.outputs)?;
            if result.outcome == Outcome::Pass { passed += 1 } else { failed += 1 }
        }
        if let Some(w) = worker {
            w.shutdown();
        }
    }
    sink.event(&Event::ReferencesDone { passed, failed });
    Ok(Ending::Finished)
}

/// The references still to compute: never computed, recorded as a crash (its worker died twice:
/// `--resume` tries once more, a reference being no outcome of the run), or computed but with an
/// output file gone (a run folder removed before `--resume`).
pub fn pending(store: &Store, run_id: i64) -> Result<Vec<ReferenceRow>> {
    let gone = |r: &ReferenceRow| {
        r.outputs
            .as_array()
            .is_some_and(|o| o.iter().any(|d| d["path"].as_str().is_some_and(|p| !std::path::Path::new(p).exists())))
    };
    Ok(store
        .references(run_id)?
        .into_iter()
        .filter(|r| {
            r.outcome.is_none() || r.outcome == Some(Outcome::Crash) || (r.outcome == Some(Outcome::Pass) && gone(r))
        })
        .collect())
}

fn why(r: &CaseResult) -> String {
    match (&r.error_type, &r.message) {
        (Some(t), Some(m)) => format!("{t}: {m}"),
        (None, Some(m)) => m.clone(),
        (Some(t), None) => t.clone(),
        (None, None) => r.outcome.to_string(),
    }
}
