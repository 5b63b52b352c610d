//! The float64 reference phase of a run: before any framework runs, one NumPy worker on the
//! host computes every planned reference that is not computed yet (the NumPy catalogue's
//! function for a canonical op, on an aligned case's inputs upcast to float64). A reference
//! that fails, times out or crashes is recorded with why; its cases are then not compared
//! with float64 (never an abort).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{Ending, Event, EventSink, RunConfig, describe_start_failure, execute_case};
use crate::model::{CaseResult, CaseRow, Framework, Outcome, ReferenceRow, Spec, Target};
use crate::store::Store;
use crate::worker::{self, Failure, Worker, WorkerSpec};

/// Computes the run's pending references; returns [`Ending::Interrupted`] when stopped (the
/// reference in flight stays pending).
pub fn compute(
    store: &mut Store,
    run_id: i64,
    cfg: &RunConfig,
    sink: &mut dyn EventSink,
    interrupted: &AtomicBool,
) -> Result<Ending> {
    let pending = pending(store, run_id)?;
    if pending.is_empty() {
        return Ok(Ending::Finished);
    }
    sink.event(&Event::ReferencesStarting { count: pending.len() });
    let spec = WorkerSpec {
        python: cfg.python.clone(),
        script_dir: cfg.script_dir.clone(),
        framework: Framework::Numpy,
        device: Target::cpu(),
        env: cfg.threads.map(worker::thread_env).unwrap_or_default(),
    };
    let out_dir = cfg.run_dir.join("reference");
    std::fs::create_dir_all(&out_dir)?;
    let (mut passed, mut failed) = (0, 0);
    let mut worker: Option<Worker> = None;
    for r in &pending {
        if worker.as_mut().is_some_and(|w| !w.is_ready()) {
            worker = None;
        }
        if worker.is_none() {
            match worker::spawn(&spec, cfg.start_timeout, interrupted) {
                Ok(w) if w.hello.import_error.is_none() => worker = Some(w),
                Ok(w) => {
                    let e = w.hello.import_error.clone().expect("checked above");
                    w.shutdown();
                    let why = format!("NumPy is not usable for float64 references: {}: {}", e.error_type, e.message);
                    for p in &pending {
                        store.record_reference(run_id, &p.key, Outcome::Fail, Some(&why), &serde_json::json!([]))?;
                    }
                    failed += pending.len();
                    break;
                }
                Err(Failure::Interrupted) => return Ok(Ending::Interrupted),
                Err(f) => {
                    let why = describe_start_failure(&f);
                    store.record_reference(run_id, &r.key, Outcome::Fail, Some(&why), &serde_json::json!([]))?;
                    failed += 1;
                    continue;
                }
            }
        }
        let case = CaseRow {
            key: r.key.clone(),
            framework: Framework::Numpy,
            function: r.function.clone(),
            case_id: r.case_id.clone(),
            dtype: Some(r.dtype),
            seed: r.seed,
            spec: Spec::from(r.spec.clone()),
        };
        let w = worker.as_mut().expect("started above");
        let (result, keep) = execute_case(w, &case, &Target::cpu(), &out_dir, cfg, true, interrupted);
        let Some(result) = result else { return Ok(Ending::Interrupted) };
        if !keep {
            worker = None;
        }
        let message = (result.outcome != Outcome::Pass).then(|| why(&result));
        store.record_reference(run_id, &r.key, result.outcome, message.as_deref(), &result.outputs)?;
        if result.outcome == Outcome::Pass { passed += 1 } else { failed += 1 }
    }
    if let Some(w) = worker {
        w.shutdown();
    }
    sink.event(&Event::ReferencesDone { passed, failed });
    Ok(Ending::Finished)
}

/// The references still to compute: never computed, or computed but with an output file gone
/// (a run folder removed before `--resume`).
pub fn pending(store: &Store, run_id: i64) -> Result<Vec<ReferenceRow>> {
    let gone = |r: &ReferenceRow| {
        r.outputs
            .as_array()
            .is_some_and(|o| o.iter().any(|d| d["path"].as_str().is_some_and(|p| !std::path::Path::new(p).exists())))
    };
    Ok(store
        .references(run_id)?
        .into_iter()
        .filter(|r| r.outcome.is_none() || (r.outcome == Some(Outcome::Pass) && gone(r)))
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
