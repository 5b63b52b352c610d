//! What a free lane does next: the runner's policy, whatever `--jobs` (one lane or several),
//! apart from the threads, workers and store that carry it out (`super::lanes`,
//! `super::execute`). Three kinds of job share the lanes: the float64 references ([`reference::Queue`]), a framework's first worker (the
//! probe that reports its devices; only then are its cases pending) and cases. A case may start
//! once the references it can be judged by are recorded — its own framework's and NumPy's
//! ([`reference::Queue::is_done_for`]) — or at once when it is judged in the closing pass
//! (workloads). Worker starts cost 3-10 s each on one core (TensorFlow's import alone is 8 s), so
//! a lane keeps its worker as long as it has work for it: the references of its framework, then
//! that framework's probe and cases on the same worker when the two are the same process (all
//! but under export routes, whose case workers' environment differs). With one lane this
//! computes NumPy's references first, then each framework's references, probe and cases on one
//! worker: one start per framework, one worker at a time.

use std::collections::VecDeque;

use super::reference::{self, Queue};
use super::schedule::{self, Pending};
use crate::model::{Framework, ReferenceRow, Target};

/// The worker a lane holds, or will hold once its job starts: `framework`'s on `target`.
/// `reference`: started for float64 references with an environment of its own
/// (`jax_enable_x64`), so it runs no case; a reference worker that is the same process as the
/// case worker is not marked.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Serves {
    pub framework: Framework,
    pub target: Target,
    pub reference: bool,
}

/// A free lane's next job.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Next {
    /// Compute the float64 reference (an index into the run's pending references).
    Reference(usize),
    /// Start the framework's worker on `cpu` (or report the hello of the one the lane holds).
    Probe(Framework),
    /// Run the case.
    Run(Pending),
    /// Keep the worker idle: its cases wait for references other lanes are computing.
    Wait,
}

/// The dispatcher's view of the lanes and of the work not yet handed out.
pub(super) struct Dispatch<'a> {
    refs: &'a [ReferenceRow],
    reference_device: Target,
    /// By case index: judged in the closing pass, so it may run before its references are in.
    early: Vec<bool>,
    /// The run's cases' frameworks, each once.
    frameworks: Vec<Framework>,
    /// Those whose cases are all judged in the closing pass (Keras': workloads only).
    all_early: Vec<Framework>,
    /// By lane: the frameworks whose references need a worker of their own there (one that
    /// runs no case).
    own_reference_worker: Vec<Vec<Framework>>,
    /// By lane: what its worker serves (or will once its job starts).
    pub serves: Vec<Option<Serves>>,
    /// By lane: a job is in flight.
    pub busy: Vec<bool>,
    /// By lane: the job in flight is a reference.
    on_reference: Vec<bool>,
    /// Frameworks not probed yet, in the order to probe them ([`schedule::probe_order`]).
    pub probes: VecDeque<Framework>,
    /// Cases of probed frameworks not handed out yet.
    pub pending: Vec<Pending>,
}

impl<'a> Dispatch<'a> {
    /// The dispatcher of `lanes` lanes for a run of cases whose frameworks are `case_framework`
    /// and closing-pass flags `early` (by case index), references `refs`, computed on
    /// `reference_device`; `own_reference_worker(lane, framework)` says whether that
    /// framework's references need a worker of their own on that lane.
    pub fn new(
        lanes: usize,
        refs: &'a [ReferenceRow],
        reference_device: &Target,
        case_framework: Vec<Framework>,
        early: Vec<bool>,
        probes: Vec<Framework>,
        own_reference_worker: &dyn Fn(usize, Framework) -> bool,
    ) -> Dispatch<'a> {
        let distinct = |mut fws: Vec<Framework>| {
            fws.sort();
            fws.dedup();
            fws
        };
        let referenced = distinct(refs.iter().map(|r| r.framework).collect());
        let frameworks = distinct(case_framework.clone());
        let all_early = frameworks
            .iter()
            .copied()
            .filter(|fw| case_framework.iter().zip(&early).filter(|(f, _)| *f == fw).all(|(_, e)| *e))
            .collect();
        Dispatch {
            refs,
            reference_device: reference_device.clone(),
            early,
            frameworks,
            all_early,
            own_reference_worker: (0..lanes)
                .map(|l| referenced.iter().copied().filter(|f| own_reference_worker(l, *f)).collect())
                .collect(),
            serves: vec![None; lanes],
            busy: vec![false; lanes],
            on_reference: vec![false; lanes],
            probes: probes.into(),
            pending: Vec::new(),
        }
    }

    /// True when case `case` (an index into the run's cases) is judged in the closing pass, so
    /// it may start before its references are in and is committed unchecked.
    pub fn early(&self, case: usize) -> bool {
        self.early[case]
    }

    /// True when case `p` may start now: it is judged in the closing pass, or every reference
    /// it can be judged by is recorded.
    pub fn eligible(&self, queue: &Queue, p: &Pending) -> bool {
        self.early[p.case] || queue.is_done_for(self.refs, p.framework)
    }

    /// The frameworks of the run's cases whose cases may all start now (their references are in).
    pub fn ready_frameworks(&self, queue: &Queue) -> Vec<Framework> {
        self.frameworks.iter().copied().filter(|f| queue.is_done_for(self.refs, *f)).collect()
    }

    /// The next job of free lane `l`, taken off `queue`, the probes or the pending cases, with
    /// the lane marked busy and what it will serve; `None` when it has nothing to do. In order:
    /// 1. more references of the framework its worker computes them for;
    /// 2. the probe of its worker's framework, when that worker runs cases on `cpu` and the
    ///    framework is not probed yet (no start: the worker's hello is reported);
    /// 3. a case of its worker's target that may start ([`Dispatch::eligible`]);
    /// 4. [`Next::Wait`] when that target's cases wait only for references other lanes are
    ///    computing (the worker is kept rather than started again later);
    /// 5. another framework's references ([`Queue::next`]), the worker dropped;
    /// 6. when it has no case of its own pending, the next probe of a framework no other lane
    ///    holds a case worker of (that lane probes it with its worker, step 2): first a framework
    ///    whose cases may all start now, else in [`schedule::probe_order`];
    /// 7. another target's case ([`schedule::pick_where`]: one no other lane's worker serves
    ///    first).
    pub fn next(&mut self, l: usize, queue: &mut Queue) -> Option<Next> {
        let cpu = Target::cpu();
        let held = self.serves[l].clone();
        let computes_references = held
            .as_ref()
            .filter(|s| {
                s.target == reference::reference_target(s.framework, &self.reference_device)
                    && (s.reference || !self.own_reference_worker[l].contains(&s.framework))
            })
            .map(|s| s.framework);
        let runs_cases = held.as_ref().filter(|s| !s.reference).map(|s| (s.framework, &s.target));
        let served: Vec<Framework> = (0..self.busy.len())
            .filter(|o| *o != l && self.busy[*o] && self.on_reference[*o])
            .filter_map(|o| self.serves[o].as_ref().map(|s| s.framework))
            .collect();
        // 1. More references of its framework.
        if let Some(fw) = computes_references.filter(|f| queue.has_waiting_of(self.refs, *f))
            && let Some(i) = queue.next(self.refs, Some(fw), &served, &self.reference_device)
        {
            return Some(self.assign_reference(l, i));
        }
        // 2. Its worker's framework's probe, answered by that worker.
        if let Some((fw, _)) = runs_cases.filter(|(_, t)| **t == cpu)
            && let Some(at) = self.probes.iter().position(|f| *f == fw)
        {
            self.probes.remove(at);
            self.busy[l] = true;
            self.on_reference[l] = false;
            return Some(Next::Probe(fw));
        }
        let mine = |p: &Pending| runs_cases.is_some_and(|(f, t)| p.framework == f && &p.target == t);
        let own_pending = self.pending.iter().any(mine);
        // 3. Its own target's cases.
        if self.pending.iter().any(|p| mine(p) && self.eligible(queue, p)) {
            return self.assign_case(l, queue);
        }
        // 4. They wait for references other lanes are computing (in flight, or waiting for a
        //    lane that computes that framework's and takes them next): keep the worker.
        if let Some((fw, _)) = runs_cases.filter(|_| own_pending) {
            let unserved = |f: Framework| queue.has_waiting_of(self.refs, f) && !served.contains(&f);
            if !unserved(fw) && !unserved(Framework::Numpy) {
                return Some(Next::Wait);
            }
        }
        // 5. Another framework's references.
        if queue.has_waiting()
            && let Some(i) = queue.next(self.refs, computes_references, &served, &self.reference_device)
        {
            return Some(self.assign_reference(l, i));
        }
        // 6. The next framework's first worker, unless another lane holds one that will probe it.
        let held_elsewhere = |fw: Framework| {
            (0..self.serves.len()).any(|o| {
                o != l && self.serves[o].as_ref().is_some_and(|s| s.framework == fw && !s.reference && s.target == cpu)
            })
        };
        let startable = |fw: Framework| self.all_early.contains(&fw) || queue.is_done_for(self.refs, fw);
        let probe = self
            .probes
            .iter()
            .position(|f| !held_elsewhere(*f) && startable(*f))
            .or_else(|| self.probes.iter().position(|f| !held_elsewhere(*f)));
        if let Some(at) = probe.filter(|_| !own_pending) {
            let fw = self.probes.remove(at).expect("found above");
            self.serves[l] = Some(Serves { framework: fw, target: cpu, reference: false });
            self.busy[l] = true;
            self.on_reference[l] = false;
            return Some(Next::Probe(fw));
        }
        // 7. Another target's case.
        self.assign_case(l, queue)
    }

    fn assign_reference(&mut self, l: usize, i: usize) -> Next {
        let fw = self.refs[i].framework;
        let target = reference::reference_target(fw, &self.reference_device);
        let own = self.own_reference_worker[l].contains(&fw);
        self.serves[l] = Some(Serves { framework: fw, target, reference: own });
        self.busy[l] = true;
        self.on_reference[l] = true;
        Next::Reference(i)
    }

    /// The case [`schedule::pick_where`] gives lane `l` among those that may start.
    fn assign_case(&mut self, l: usize, queue: &Queue) -> Option<Next> {
        let current = self.serves[l].as_ref().filter(|s| !s.reference).map(|s| (s.framework, s.target.clone()));
        let others: Vec<(Framework, Target)> = (0..self.serves.len())
            .filter(|o| *o != l)
            .filter_map(|o| self.serves[o].as_ref().filter(|s| !s.reference))
            .map(|s| (s.framework, s.target.clone()))
            .collect();
        let eligible = |p: &Pending| self.eligible(queue, p);
        let i = schedule::pick_where(&self.pending, current.as_ref().map(|(f, t)| (*f, t)), &others, &eligible)?;
        let p = self.pending.swap_remove(i);
        self.serves[l] = Some(Serves { framework: p.framework, target: p.target.clone(), reference: false });
        self.busy[l] = true;
        self.on_reference[l] = false;
        Some(Next::Run(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::events::NullSink;
    use crate::runner::reference::tests::reference;
    use std::collections::HashMap;

    const TORCH: Framework = Framework::Torch;
    const JAX: Framework = Framework::Jax;
    const NUMPY: Framework = Framework::Numpy;

    /// Two lanes; torch's references share the case worker's process, JAX's here stand for
    /// references that need a worker of their own (an environment that differs from the case
    /// worker's, as with `--modes` export routes).
    fn dispatch(refs: &[ReferenceRow], case_framework: Vec<Framework>, early: Vec<bool>) -> Dispatch<'_> {
        let probes = vec![JAX, TORCH];
        Dispatch::new(2, refs, &Target::cpu(), case_framework, early, probes, &|_, fw| fw == JAX)
    }

    fn pending(case: usize, framework: Framework) -> Pending {
        Pending { case, framework, target: Target::cpu(), expected_ms: 10.0 }
    }

    #[test]
    fn the_lane_that_computed_a_frameworks_references_probes_and_runs_it_on_the_same_worker() {
        let refs = vec![
            reference(NUMPY, "numpy.add", false),
            reference(NUMPY, "numpy.sub", false),
            reference(TORCH, "torch.add", false),
            reference(TORCH, "torch.sub", false),
            reference(TORCH, "torch.mul", false),
            reference(JAX, "jax.numpy.add", false),
        ];
        let mut q = Queue::new(&refs, &HashMap::new(), &Target::cpu(), &mut NullSink);
        let mut d = dispatch(&refs, vec![TORCH, TORCH, JAX], vec![false, false, false]);
        // Lane 1 takes NumPy's (every framework's cases wait for them), lane 0 the most work no
        // lane serves (torch's).
        assert_eq!(d.next(1, &mut q), Some(Next::Reference(0)));
        assert_eq!(d.next(0, &mut q), Some(Next::Reference(2)));
        // Lane 0 keeps its worker for torch's other references.
        for i in [3, 4] {
            d.busy[0] = false;
            q.settle(i - 1);
            assert_eq!(d.next(0, &mut q), Some(Next::Reference(i)));
        }
        // Done with torch's references: its probe on the worker it holds (no new start).
        d.busy[0] = false;
        q.settle(4);
        assert_eq!(d.next(0, &mut q), Some(Next::Probe(TORCH)));
        assert_eq!(d.serves[0], Some(Serves { framework: TORCH, target: Target::cpu(), reference: false }));
        assert_eq!(d.probes, [JAX]);
        d.busy[0] = false;
        d.pending = vec![pending(0, TORCH), pending(1, TORCH), pending(2, JAX)];
        // Torch's cases need NumPy's references too, which lane 1 is computing (numpy.sub
        // waits for it): lane 0 keeps its worker rather than take JAX's reference.
        assert_eq!(d.next(0, &mut q), Some(Next::Wait));
        d.busy[1] = false;
        q.settle(0);
        assert_eq!(d.next(1, &mut q), Some(Next::Reference(1)));
        assert_eq!(d.next(0, &mut q), Some(Next::Wait));
        d.busy[1] = false;
        q.settle(1);
        assert_eq!(d.ready_frameworks(&q), [TORCH]);
        assert_eq!(d.next(0, &mut q), Some(Next::Run(pending(0, TORCH))));
        // Lane 1 drops its NumPy worker for JAX's reference; JAX's case waits for it.
        assert_eq!(d.next(1, &mut q), Some(Next::Reference(5)));
        d.busy[0] = false;
        assert_eq!(d.next(0, &mut q), Some(Next::Run(pending(1, TORCH))));
    }

    #[test]
    fn a_reference_worker_of_its_own_runs_no_case_and_closing_pass_cases_start_at_once() {
        let refs = vec![reference(JAX, "jax.numpy.add", false), reference(JAX, "flax_mlp", true)];
        let mut q = Queue::new(&refs, &HashMap::new(), &Target::cpu(), &mut NullSink);
        let mut d = dispatch(&refs, vec![JAX, JAX], vec![false, true]);
        d.probes = VecDeque::from([JAX]);
        assert_eq!(d.next(0, &mut q), Some(Next::Reference(1)));
        assert_eq!(d.serves[0], Some(Serves { framework: JAX, target: Target::cpu(), reference: true }));
        assert_eq!(d.next(1, &mut q), Some(Next::Reference(0)));
        d.busy[0] = false;
        q.settle(1);
        // Lane 0's reference worker cannot probe for the cases: a new worker is started.
        assert_eq!(d.next(0, &mut q), Some(Next::Probe(JAX)));
        assert_eq!(d.serves[0], Some(Serves { framework: JAX, target: Target::cpu(), reference: false }));
        d.busy[0] = false;
        d.pending = vec![pending(0, JAX), pending(1, JAX)];
        // jax.numpy.add's reference is still in flight on lane 1: only the workload (judged in
        // the closing pass) may start; then the lane waits with its worker.
        assert_eq!(d.next(0, &mut q), Some(Next::Run(pending(1, JAX))));
        d.busy[0] = false;
        assert_eq!(d.next(0, &mut q), Some(Next::Wait));
        assert!(!d.busy[0]);
        d.busy[1] = false;
        q.settle(0);
        assert_eq!(d.ready_frameworks(&q), [JAX]);
        assert_eq!(d.next(0, &mut q), Some(Next::Run(pending(0, JAX))));
        assert_eq!(d.next(1, &mut q), None);
    }

    #[test]
    fn a_free_lane_leaves_a_framework_to_the_lane_holding_its_worker() {
        let refs = vec![reference(TORCH, "torch.add", false)];
        let mut q = Queue::new(&refs, &HashMap::new(), &Target::cpu(), &mut NullSink);
        let mut d = dispatch(&refs, vec![TORCH, JAX], vec![false, false]);
        d.probes = VecDeque::from([TORCH, JAX]);
        assert_eq!(d.next(1, &mut q), Some(Next::Reference(0)));
        // Torch is first in probe order, but lane 1's worker will report torch's hello: lane 0
        // starts JAX's worker instead of a second torch worker.
        assert_eq!(d.next(0, &mut q), Some(Next::Probe(JAX)));
        d.busy[1] = false;
        q.settle(0);
        assert_eq!(d.next(1, &mut q), Some(Next::Probe(TORCH)));
        assert!(d.probes.is_empty());
    }
}
