//! A run's float64 references: every planned reference that is not computed yet is computed on
//! the inputs upcast to float64 — by NumPy workers on the host (an op's NumPy/SciPy function, a
//! case's own `reference` callable), and by workers of each framework on the reference device,
//! eager, for float64 self-references (the case's own function; JAX's inside
//! `jax.enable_x64(True)`, whatever the run's setting). The runner's dispatcher schedules them
//! ([`Queue`]) on its lanes, several at once when there are several: NumPy's first (every
//! framework's function cases wait for them), a lane keeping its worker while references of
//! that framework wait, else taking the framework with the most expected work ([`pick`],
//! [`expected_ms`]); on a reference device other than `cpu` one framework's worker at a time
//! (they share the device's memory). A reference whose worker dies is computed again on a fresh
//! worker, as a case is ([`super::attempt`]); one that fails, times out or crashes again is
//! recorded with why, its cases then run unchecked (never an abort) and every report counts
//! them; a crashed one is computed again by `--resume`. When mlport's own files cannot be
//! written (a full disk) the run stops with the reference pending ([`Ending::OwnIoFailed`]).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::attempt::{Attempted, attempt};
use super::workers::{reference_dir_name, reference_worker};
use super::{Ending, Event, EventSink, RunConfig};
use crate::model::{CaseResult, CaseRow, Framework, Outcome, Reason, ReferenceRow, Spec, Target};
use crate::store::Store;
use crate::worker::Worker;
use crate::worker::protocol::OwnIoError;

/// Expected wall time of one reference of a function's case, ms: 1,795 NumPy and float64
/// self-references of the built-in catalogue took 22.7 s on one core of a 2-core machine
/// (issue 21), ~13 ms each with the protocol's round trip and the `.npy` files.
pub const FUNCTION_REFERENCE_MS: f64 = 13.0;

/// Expected wall time of one workload's float64 golden run, ms: the built-in catalogue's 37
/// took 65 s on one core (a ResNet-50 forward pass in float64 among them), ~1 s each once
/// their worker is up.
pub const WORKLOAD_REFERENCE_MS: f64 = 1_000.0;

/// The expected wall time of computing `r`, ms: what the reference lanes schedule
/// longest-first by. A float64 self-reference computed by its own framework takes about what
/// its case took eager on the reference device in earlier runs (`history`, from
/// [`Store::expected_wall_ms`]: one call instead of a steady state, but at float64); otherwise
/// [`WORKLOAD_REFERENCE_MS`] for a workload's golden run and [`FUNCTION_REFERENCE_MS`] for the
/// rest.
pub fn expected_ms(r: &ReferenceRow, history: &HashMap<(String, String), f64>, reference_device: &Target) -> f64 {
    let earlier = r
        .key
        .strip_prefix("reference/case/")
        .filter(|_| r.framework != Framework::Numpy)
        .and_then(|case| history.get(&(case.to_string(), reference_device.base().as_str().to_string())));
    match earlier {
        Some(ms) => *ms,
        None if r.spec.is_workload() => WORKLOAD_REFERENCE_MS,
        None => FUNCTION_REFERENCE_MS,
    }
}

/// How one reference's computation ended on a lane.
pub(super) enum Attempt {
    /// Computed, or failed, timed out or crashed twice: recorded with its message.
    Ended { outcome: Outcome, message: Option<String>, outputs: serde_json::Value },
    /// Its framework does not import in float64 mode: this one and every reference of the
    /// framework not yet computed fail with why.
    Unusable(String),
    /// Its worker did not start (recorded as `fail`; the next reference starts one again).
    StartFailed(String),
    /// Ctrl-C: the reference stays pending.
    Interrupted,
    /// mlport could not write one of its own files: the run stops, the reference pending.
    OwnIo(OwnIoError),
}

/// The device a reference of `fw` is computed on: NumPy's on the host, a self-reference on
/// the run's reference device.
pub(super) fn reference_target(fw: Framework, reference_device: &Target) -> Target {
    if fw == Framework::Numpy { Target::cpu() } else { reference_device.base() }
}

/// Computes `r` on `worker` (started when `None` or no longer ready), on `target`
/// ([`reference_target`]), with the run's one retry rule ([`attempt`]).
pub(super) fn compute_one(
    worker: &mut Option<Worker>,
    r: &ReferenceRow,
    cores: &[usize],
    cfg: &RunConfig,
    target: &Target,
    restarted: &mut dyn FnMut(),
    interrupted: &AtomicBool,
) -> Attempt {
    let fw = r.framework;
    let spec = reference_worker(cfg, cores, fw, target);
    let out_dir = cfg.run_dir.join(reference_dir_name(fw));
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        return Attempt::OwnIo(OwnIoError::from_io(&out_dir, "create folder", &e));
    }
    let case = CaseRow {
        key: r.key.clone(),
        framework: fw,
        function: r.function.clone(),
        case_id: r.case_id.clone(),
        dtype: Some(r.dtype),
        seed: r.seed,
        spec: Spec::from(r.spec.clone()),
    };
    match attempt(worker, &spec, &case, &out_dir, cfg, true, interrupted, restarted) {
        Attempted::Done { result, .. } if fw != Framework::Numpy && result.reason == Some(Reason::ApiMissing) => {
            // A float64 self-reference of a function the installed framework lacks (a paper
            // function since removed, `jax.core.get_aval`): its cases fail the same way
            // (`api_missing`) before any answer exists, so no answer needs this reference; it
            // is no reference failure and is recorded `skip`, saying why.
            Attempt::Ended {
                outcome: Outcome::Skip,
                message: Some(format!(
                    "not needed: the installed {fw} lacks {} (api_missing), so its cases have no answer to compare: {}",
                    r.function,
                    why(&result)
                )),
                outputs: serde_json::json!([]),
            }
        }
        Attempted::Done { result, first_crash } => {
            // A computed reference keeps what computed it, when the worker said (a suite's).
            let message = if result.outcome == Outcome::Pass { result.message.clone() } else { Some(why(&result)) };
            let message = match (first_crash, message) {
                (Some(first), Some(m)) => {
                    Some(format!("{m} (on a fresh worker; the first attempt's worker died too: {})", why(&first)))
                }
                (_, m) => m,
            };
            Attempt::Ended { outcome: result.outcome, message, outputs: result.outputs }
        }
        Attempted::NotImported(e) => Attempt::Unusable(format!("{fw} is not usable for float64 references: {e}")),
        Attempted::Lost(why) => Attempt::StartFailed(why),
        Attempted::Interrupted => Attempt::Interrupted,
        Attempted::OwnIo(error) => Attempt::OwnIo(error),
    }
}

/// The reference a free lane computes next (an index into `waiting`): one of the framework its
/// worker serves (`current`), else NumPy's when no other lane computes them (`served`: every
/// framework's function cases wait for them), else one of the framework with the most expected
/// work that no other lane serves, else of the framework with the most expected work left; within
/// a framework the longest first (`expected`, ms by index into `refs`, [`expected_ms`]), then
/// plan order. `None` when nothing waits.
fn pick(
    waiting: &[usize],
    refs: &[ReferenceRow],
    expected: &[f64],
    current: Option<Framework>,
    served: &[Framework],
) -> Option<usize> {
    let longest_of = |fw: Framework| {
        waiting
            .iter()
            .enumerate()
            .filter(|(_, i)| refs[**i].framework == fw)
            .max_by(|(a, x), (b, y)| expected[**x].total_cmp(&expected[**y]).then(b.cmp(a)))
            .map(|(at, _)| at)
    };
    if let Some(at) = current.and_then(longest_of) {
        return Some(at);
    }
    // NumPy's first: every framework's function cases wait for them.
    if !served.contains(&Framework::Numpy)
        && let Some(at) = longest_of(Framework::Numpy)
    {
        return Some(at);
    }
    let mut work: Vec<(Framework, f64)> = Vec::new();
    for i in waiting {
        let fw = refs[*i].framework;
        match work.iter_mut().find(|(f, _)| *f == fw) {
            Some((_, ms)) => *ms += expected[*i],
            None => work.push((fw, expected[*i])),
        }
    }
    let most = |unserved: bool| {
        work.iter()
            .filter(|(f, _)| !unserved || !served.contains(f))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(f, _)| *f)
    };
    most(true).or_else(|| most(false)).and_then(longest_of)
}

/// The reference phase's bookkeeping on the thread that records: which references wait (by
/// index into the phase's list), how long each is expected to take, how many are in flight,
/// and the counts the [`Event::ReferencesDone`] event reports.
pub(super) struct Queue {
    expected: Vec<f64>,
    waiting: Vec<usize>,
    /// Taken by a lane, not yet recorded (indices into the phase's list).
    in_flight: Vec<usize>,
    /// Taken off the queue but not recorded (Ctrl-C, mlport's own I/O failure): still pending.
    abandoned: usize,
    passed: usize,
    failed: usize,
    /// Self-references of functions the installed framework lacks (recorded `skip`).
    not_needed: usize,
}

impl Queue {
    /// The queue of `refs` (from [`pending`]), each expected to take [`expected_ms`] with
    /// `history` (the store's earlier runs, [`Store::expected_wall_ms`]); announces the phase
    /// when it has work.
    pub(super) fn new(
        refs: &[ReferenceRow],
        history: &HashMap<(String, String), f64>,
        reference_device: &Target,
        sink: &mut dyn EventSink,
    ) -> Queue {
        if !refs.is_empty() {
            sink.event(&Event::ReferencesStarting { count: refs.len() });
        }
        Queue {
            expected: refs.iter().map(|r| expected_ms(r, history, reference_device)).collect(),
            waiting: (0..refs.len()).collect(),
            in_flight: Vec::new(),
            abandoned: 0,
            passed: 0,
            failed: 0,
            not_needed: 0,
        }
    }

    /// True while some reference waits for a lane.
    pub(super) fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// True once every reference is recorded (none waiting, in flight or abandoned).
    pub(super) fn is_done(&self) -> bool {
        self.waiting.is_empty() && self.in_flight.is_empty() && self.abandoned == 0
    }

    /// True once every reference a case of `fw` can be judged by is recorded: those its own
    /// framework computes (float64 self-references) and NumPy's (an op's reference, a case's
    /// own `reference` callable), none waiting or in flight; false once one was abandoned (the
    /// run is stopping). The dispatcher starts `fw`'s cases from then on, while other
    /// frameworks' references are still computed.
    pub(super) fn is_done_for(&self, refs: &[ReferenceRow], fw: Framework) -> bool {
        let theirs = |i: &usize| matches!(refs[*i].framework, f if f == fw || f == Framework::Numpy);
        self.abandoned == 0 && !self.waiting.iter().any(theirs) && !self.in_flight.iter().any(theirs)
    }

    /// Takes reference `i` off the in-flight list: its lane has finished it ([`Queue::record`]
    /// then stores how; the dispatcher's tests, which have no store, call it alone).
    pub(super) fn settle(&mut self, i: usize) {
        self.in_flight.retain(|f| *f != i);
    }

    /// True while a reference of `fw` waits for a lane.
    pub(super) fn has_waiting_of(&self, refs: &[ReferenceRow], fw: Framework) -> bool {
        self.waiting.iter().any(|i| refs[*i].framework == fw)
    }

    /// The reference a free lane computes next ([`pick`]), taken off the queue. `served`: the
    /// frameworks whose references other lanes are computing. On a reference device other than
    /// `cpu`, while another lane computes a framework's reference there, only NumPy's (on the
    /// host) are taken: two frameworks' workers on one accelerator would compete for its memory
    /// (JAX preallocates most of it).
    pub(super) fn next(
        &mut self,
        refs: &[ReferenceRow],
        current: Option<Framework>,
        served: &[Framework],
        reference_device: &Target,
    ) -> Option<usize> {
        let device_busy = reference_device.base() != Target::cpu() && served.iter().any(|f| *f != Framework::Numpy);
        let candidates: Vec<usize> = if device_busy {
            self.waiting.iter().copied().filter(|i| refs[*i].framework == Framework::Numpy).collect()
        } else {
            self.waiting.clone()
        };
        let at = pick(&candidates, refs, &self.expected, current, served)?;
        let i = candidates[at];
        self.in_flight.push(i);
        self.waiting.retain(|w| *w != i);
        Some(i)
    }

    /// Records how reference `i` ended; when that finishes the phase, reports
    /// [`Event::ReferencesDone`]. Returns how the run must end when it must (Ctrl-C, mlport's
    /// own I/O failure: the reference stays pending).
    ///
    /// Errors: the store's.
    pub(super) fn record(
        &mut self,
        store: &mut Store,
        run_id: i64,
        refs: &[ReferenceRow],
        i: usize,
        attempt: Attempt,
        sink: &mut dyn EventSink,
    ) -> Result<Option<Ending>> {
        self.settle(i);
        let r = &refs[i];
        let fail = |store: &mut Store, key: &str, why: &str| {
            store.record_reference(run_id, key, Outcome::Fail, Some(why), &serde_json::json!([]))
        };
        match attempt {
            Attempt::Ended { outcome, message, outputs } => {
                store.record_reference(run_id, &r.key, outcome, message.as_deref(), &outputs)?;
                match outcome {
                    Outcome::Pass => self.passed += 1,
                    Outcome::Skip => self.not_needed += 1,
                    _ => self.failed += 1,
                }
            }
            Attempt::Unusable(why) => {
                // This one and those of its framework still waiting; those before were computed.
                fail(store, &r.key, &why)?;
                self.failed += 1;
                let (left, rest): (Vec<usize>, Vec<usize>) =
                    self.waiting.iter().partition(|w| refs[**w].framework == r.framework);
                self.waiting = rest;
                for w in left {
                    fail(store, &refs[w].key, &why)?;
                    self.failed += 1;
                }
            }
            Attempt::StartFailed(why) => {
                fail(store, &r.key, &why)?;
                self.failed += 1;
            }
            Attempt::Interrupted => {
                self.abandoned += 1;
                return Ok(Some(Ending::Interrupted));
            }
            Attempt::OwnIo(error) => {
                self.abandoned += 1;
                return Ok(Some(Ending::OwnIoFailed { case_key: r.key.clone(), error }));
            }
        }
        if self.is_done() {
            sink.event(&Event::ReferencesDone {
                passed: self.passed,
                failed: self.failed,
                not_needed: self.not_needed,
            });
        }
        Ok(None)
    }
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::{CaseSpec, Dtype, WorkloadSpec};

    /// A planned reference of `fw` (a float64 self-reference unless `fw` is NumPy), not computed.
    pub(in crate::runner) fn reference(fw: Framework, function: &str, workload: bool) -> ReferenceRow {
        let mut spec = CaseSpec::new(function, "default");
        if workload {
            spec.workload = Some(WorkloadSpec::default());
        }
        ReferenceRow {
            key: format!("reference/case/{fw}/{function}"),
            framework: fw,
            op: String::new(),
            case_id: "default".into(),
            dtype: Dtype::Float32,
            function: function.into(),
            seed: 0,
            spec,
            outcome: None,
            message: None,
            outputs: serde_json::json!([]),
        }
    }

    #[test]
    fn lanes_keep_their_framework_and_share_out_the_rest_longest_first() {
        let refs = vec![
            reference(Framework::Numpy, "numpy.add", false),
            reference(Framework::Numpy, "numpy.sub", false),
            reference(Framework::Numpy, "numpy.mul", false),
            reference(Framework::Torch, "torch.add", false),
            reference(Framework::Torch, "resnet18", true),
            reference(Framework::Jax, "jax.numpy.add", false),
        ];
        let waiting: Vec<usize> = (0..refs.len()).collect();
        let cpu = Target::cpu();
        let none = HashMap::new();
        let expected: Vec<f64> = refs.iter().map(|r| expected_ms(r, &none, &cpu)).collect();
        assert_eq!(expected, [13.0, 13.0, 13.0, 13.0, 1_000.0, 13.0]);
        // A new lane: NumPy's, which every framework's function cases wait for.
        assert_eq!(pick(&waiting, &refs, &expected, None, &[]), Some(0));
        // A second lane while NumPy's are served: the framework with the most expected work
        // (torch: a golden run and a function), its golden run first.
        assert_eq!(pick(&waiting, &refs, &expected, None, &[Framework::Numpy]), Some(4));
        // Then the one with the most work no lane serves: JAX before joining torch.
        assert_eq!(pick(&waiting, &refs, &expected, None, &[Framework::Numpy, Framework::Torch]), Some(5));
        // A lane holding a JAX worker keeps it.
        assert_eq!(pick(&waiting, &refs, &expected, Some(Framework::Jax), &[Framework::Torch]), Some(5));
        // Every framework served: join the one with the most work left rather than idle.
        let numpy_left = [1, 2, 3];
        assert_eq!(pick(&numpy_left, &refs, &expected, None, &[Framework::Numpy, Framework::Torch]), Some(0));
        assert_eq!(pick(&[], &refs, &expected, Some(Framework::Numpy), &[]), None);
    }

    #[test]
    fn earlier_runs_time_self_references_but_not_numpys() {
        let keras: Framework = "keras-jax".parse().unwrap();
        let golden = reference(keras, "resnet50", true);
        let numpy = ReferenceRow {
            key: "reference/case/torch/torch.sigmoid".into(),
            ..reference(Framework::Numpy, "x", false)
        };
        let mut h = HashMap::new();
        h.insert(("keras-jax/resnet50".to_string(), "cpu".to_string()), 14_000.0);
        h.insert(("torch/torch.sigmoid".to_string(), "cpu".to_string()), 900.0);
        let cpu = Target::cpu();
        assert_eq!(expected_ms(&golden, &h, &cpu), 14_000.0);
        // A case's own NumPy reference callable: NumPy's time, not the framework's.
        assert_eq!(expected_ms(&numpy, &h, &cpu), FUNCTION_REFERENCE_MS);
        // Another reference device: no history there.
        assert_eq!(expected_ms(&golden, &h, &"cuda:0".parse().unwrap()), WORKLOAD_REFERENCE_MS);
    }
}
