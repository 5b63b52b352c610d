//! How a run's lanes (`mlport run --jobs N`) share the machine: which cores each worker
//! lane is pinned to (disjoint sets, `sched_setaffinity`), how many host threads its
//! frameworks use (the set's size), and which pending case a free lane takes next — the
//! longest expected one first (Graham's LPT list scheduling, "Bounds on multiprocessing timing
//! anomalies", SIAM J. Appl. Math. 1969: within 4/3 of the optimal makespan), preferring the
//! target its worker already serves, so a lane imports a framework once per target.

use std::collections::HashMap;

use crate::model::{CaseRow, Framework, Target};

/// Expected wall time of a case never run before on a target, ms: the steady-state budget's
/// default (100 ms) plus the first call, the comparison and the protocol's round trip, which the
/// built-in catalogue's eager cases take on median on a 2-core machine (~115 ms; 455 s over 3,944
/// cases, issue 21).
pub const DEFAULT_EXPECTED_MS: f64 = 115.0;

/// Expected wall time of a workload's case never run before on a target, ms: the built-in
/// catalogue's 37 workload cases took 37 s eager on one core of a 2-core machine (from 0.1 s
/// for a rut pair's kernel to 14 s for Keras' ResNet-50 on JAX, its model built and traced).
pub const DEFAULT_WORKLOAD_EXPECTED_MS: f64 = 1_000.0;

/// The cores this process may run on (`sched_getaffinity(0)`), ascending; all of
/// `available_parallelism` where the call fails.
pub fn available_cores() -> Vec<usize> {
    use nix::sched::{CpuSet, sched_getaffinity};
    use nix::unistd::Pid;
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// The lanes of a run: one core set per worker lane, disjoint, and the host threads each
/// lane's frameworks use. One lane without `--threads` runs one worker at a time: no pinning,
/// each framework's own thread count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Each lane's cores (ids as the kernel numbers them); empty sets mean "not pinned".
    pub sets: Vec<Vec<usize>>,
    /// Host compute threads per worker (`--threads`, else the set's size); `None`: unpinned,
    /// the frameworks' defaults.
    pub threads: Option<u32>,
}

impl Layout {
    /// One unpinned lane, each framework's own thread count: one worker at a time, as
    /// `--jobs 1` without `--threads` runs.
    pub fn serial() -> Layout {
        Layout { sets: vec![Vec::new()], threads: None }
    }

    /// The number of lanes (workers at once).
    pub fn jobs(&self) -> usize {
        self.sets.len()
    }
}

/// The lanes for `--jobs` and `--threads` on `cores` (from [`available_cores`]):
/// - neither: as many lanes as cores, one thread each;
/// - `--threads T` alone: `cores / T` lanes (at least one) of T cores;
/// - `--jobs N` alone: N lanes of `cores / N` cores each (the remainder unused);
/// - both: N lanes of T cores.
///
/// One lane without `--threads` is not pinned (the frameworks' defaults, as `mlport` did before
/// `--jobs`); one lane with `--threads T` is pinned to the first T cores.
///
/// Errors: `--jobs 0`, or more cores asked for (N × T) than the process may use.
pub fn layout(cores: &[usize], jobs: Option<usize>, threads: Option<u32>) -> Result<Layout, String> {
    let n_cores = cores.len().max(1);
    let jobs = match (jobs, threads) {
        (Some(0), _) => return Err("--jobs must be at least 1".into()),
        (Some(n), _) => n,
        (None, Some(t)) => (n_cores / t.max(1) as usize).max(1),
        (None, None) => n_cores,
    };
    if jobs == 1 && threads.is_none() {
        return Ok(Layout::serial());
    }
    let size = match threads {
        Some(t) => t as usize,
        None => n_cores / jobs,
    };
    if size == 0 || jobs * size > cores.len() {
        return Err(format!(
            "--jobs {jobs} with {} per worker needs {} cores; this process may use {} ({}): lower --jobs or --threads",
            if threads.is_some() { format!("--threads {size}") } else { "one thread".into() },
            jobs * size.max(1),
            cores.len(),
            describe(cores),
        ));
    }
    let sets = (0..jobs).map(|j| cores[j * size..(j + 1) * size].to_vec()).collect();
    Ok(Layout { sets, threads: Some(size as u32) })
}

/// `0-3,6` for a core list.
pub fn describe(cores: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cores[i].to_string() } else { format!("{}-{}", cores[i], cores[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// A case waiting for a lane: which worker it needs and how long it is expected to take.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    /// Index of the case in the run's case list.
    pub case: usize,
    /// The framework whose worker runs it.
    pub framework: Framework,
    /// The target it runs on.
    pub target: Target,
    /// Expected wall time, ms ([`expected_ms`]).
    pub expected_ms: f64,
}

/// The expected wall time of `case` on `target`, ms: its mean over earlier runs in the
/// store (`history`, from [`crate::store::Store::expected_wall_ms`]), else
/// [`DEFAULT_WORKLOAD_EXPECTED_MS`] for a workload's case and [`DEFAULT_EXPECTED_MS`] for a
/// function's.
pub fn expected_ms(history: &HashMap<(String, String), f64>, case: &CaseRow, target: &Target) -> f64 {
    history.get(&(case.key.clone(), target.as_str().to_string())).copied().unwrap_or(if case.spec.is_workload() {
        DEFAULT_WORKLOAD_EXPECTED_MS
    } else {
        DEFAULT_EXPECTED_MS
    })
}

/// The order in which a run starts its frameworks' first workers (the probe that
/// reports their devices; only then are their cases pending): the framework with the longest
/// expected case on the host first, so that list scheduling sees the long cases early (a Keras
/// ResNet-50 probed last would run alone at the end), then by expected total work, then by
/// name. Frameworks' cases on `cpu` ([`expected_ms`] with `history`).
pub fn probe_order(cases: &[CaseRow], history: &HashMap<(String, String), f64>) -> Vec<Framework> {
    let cpu = Target::cpu();
    let mut work: Vec<(Framework, f64, f64)> = Vec::new();
    for c in cases {
        let ms = expected_ms(history, c, &cpu);
        match work.iter_mut().find(|(f, _, _)| *f == c.framework) {
            Some((_, longest, total)) => {
                *longest = longest.max(ms);
                *total += ms;
            }
            None => work.push((c.framework, ms, ms)),
        }
    }
    work.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.0.cmp(&b.0)));
    work.into_iter().map(|(f, _, _)| f).collect()
}

/// The pending case a free lane takes next: the longest expected case of the target its worker
/// serves (`current`), else the longest of all. Ties go to the earlier case (plan order).
/// `None` when nothing is pending. ([`pick_where`] with no other lane and every case eligible.)
pub fn pick(pending: &[Pending], current: Option<(Framework, &Target)>) -> Option<usize> {
    pick_where(pending, current, &[], &|_| true)
}

/// The pending case a free lane takes next among those `eligible` accepts (a parallel run's
/// cases that may start before every float64 reference is recorded: those judged in the closing
/// pass): the longest expected case of the target its worker serves (`current`); else the
/// longest of a target no other lane's worker serves (`others`), whose worker has to be started
/// by some lane anyway; else the longest of all, a second worker for a target to share out its
/// cases. Ties go to the earlier case (plan order). `None` when no eligible case is pending.
pub fn pick_where(
    pending: &[Pending],
    current: Option<(Framework, &Target)>,
    others: &[(Framework, Target)],
    eligible: &dyn Fn(&Pending) -> bool,
) -> Option<usize> {
    let longest = |keep: &dyn Fn(&Pending) -> bool| {
        pending
            .iter()
            .enumerate()
            .filter(|(_, p)| eligible(p) && keep(p))
            .max_by(|(_, a), (_, b)| a.expected_ms.total_cmp(&b.expected_ms).then(b.case.cmp(&a.case)))
            .map(|(i, _)| i)
    };
    let mine = |p: &Pending| current.is_some_and(|(f, t)| p.framework == f && &p.target == t);
    let unserved = |p: &Pending| !others.iter().any(|(f, t)| p.framework == *f && &p.target == t);
    longest(&mine).or_else(|| longest(&unserved)).or_else(|| longest(&|_| true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_one_lane_per_core_at_one_thread() {
        let l = layout(&[0, 1, 2, 3], None, None).unwrap();
        assert_eq!(l.sets, vec![vec![0], vec![1], vec![2], vec![3]]);
        assert_eq!((l.jobs(), l.threads), (4, Some(1)));
        // --threads 2 on 16 cores: 8 lanes of two cores.
        let cores: Vec<usize> = (0..16).collect();
        let l = layout(&cores, None, Some(2)).unwrap();
        assert_eq!((l.jobs(), l.threads), (8, Some(2)));
        assert_eq!(l.sets[7], vec![14, 15]);
        // More threads than cores: one lane.
        assert!(layout(&[0, 1], None, Some(4)).unwrap_err().contains("needs 4 cores"));
    }

    #[test]
    fn core_sets_are_disjoint_and_follow_the_process_affinity() {
        // A process allowed cores 2,3,5,7 only (taskset): the lanes use those.
        let l = layout(&[2, 3, 5, 7], Some(2), None).unwrap();
        assert_eq!(l.sets, vec![vec![2, 3], vec![5, 7]]);
        assert_eq!(l.threads, Some(2));
        let cores: Vec<usize> = (0..16).collect();
        for jobs in 1..=16 {
            let l = layout(&cores, Some(jobs), None).unwrap();
            let mut all: Vec<usize> = l.sets.iter().flatten().copied().collect();
            let n = all.len();
            all.sort();
            all.dedup();
            assert_eq!(all.len(), n, "overlapping sets for --jobs {jobs}: {:?}", l.sets);
            if jobs > 1 {
                assert!(l.sets.iter().all(|s| s.len() == 16 / jobs), "{jobs}: {:?}", l.sets);
            }
        }
    }

    #[test]
    fn one_lane_without_threads_is_the_serial_run_unpinned() {
        let l = layout(&[0, 1], Some(1), None).unwrap();
        assert_eq!((l.jobs(), l.threads, l.sets), (1, None, vec![Vec::<usize>::new()]));
        let l = layout(&[0, 1], Some(1), Some(1)).unwrap();
        assert_eq!((l.threads, l.sets), (Some(1), vec![vec![0]]));
    }

    #[test]
    fn impossible_layouts_are_refused() {
        assert!(layout(&[0, 1], Some(0), None).unwrap_err().contains("at least 1"));
        let e = layout(&[0, 1], Some(3), None).unwrap_err();
        assert!(e.contains("--jobs 3") && e.contains("needs 3 cores") && e.contains("may use 2 (0-1)"), "{e}");
        assert!(layout(&[0, 1, 2, 3], Some(2), Some(3)).unwrap_err().contains("needs 6 cores"));
    }

    #[test]
    fn core_lists_read_as_ranges() {
        assert_eq!(describe(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(describe(&[]), "");
    }

    fn p(case: usize, fw: Framework, target: &str, ms: f64) -> Pending {
        Pending { case, framework: fw, target: target.parse().unwrap(), expected_ms: ms }
    }

    #[test]
    fn a_free_lane_takes_the_longest_case_of_its_own_worker_first() {
        let pending = vec![
            p(0, Framework::Torch, "cpu", 50.0),
            p(1, Framework::Jax, "cpu", 900.0),
            p(2, Framework::Torch, "cpu", 300.0),
            p(3, Framework::Torch, "cpu/compiled", 5000.0),
        ];
        // A new lane: the longest of all.
        assert_eq!(pick(&pending, None), Some(3));
        // A torch-cpu lane: its own target's longest, not JAX's longer case.
        let cpu = Target::cpu();
        assert_eq!(pick(&pending, Some((Framework::Torch, &cpu))), Some(2));
        // A numpy lane with no numpy case left: the longest of all.
        assert_eq!(pick(&pending, Some((Framework::Numpy, &cpu))), Some(3));
        assert_eq!(pick(&[], None), None);
        // Ties: plan order.
        let tied = vec![p(4, Framework::Jax, "cpu", 10.0), p(2, Framework::Jax, "cpu", 10.0)];
        assert_eq!(pick(&tied, None), Some(1));
        // Only some eligible: the torch lane's longest eligible case (not case 2), else the longest
        // eligible of all.
        assert_eq!(pick_where(&pending, Some((Framework::Torch, &cpu)), &[], &|p| p.case != 2), Some(0));
        assert_eq!(pick_where(&pending, Some((Framework::Jax, &cpu)), &[], &|p| p.case != 1), Some(3));
        assert_eq!(pick_where(&pending, None, &[], &|_| false), None);
        // A numpy lane with nothing of its own: JAX's case, whose worker no other lane holds, before
        // the longer cpu/compiled case of the torch worker another lane holds; all held: the longest.
        let compiled: Target = "cpu/compiled".parse().unwrap();
        let numpy = Some((Framework::Numpy, &cpu));
        assert_eq!(pick_where(&pending, numpy, &[(Framework::Torch, compiled.clone())], &|_| true), Some(1));
        let all = [(Framework::Torch, compiled), (Framework::Jax, cpu.clone()), (Framework::Torch, cpu.clone())];
        assert_eq!(pick_where(&pending, numpy, &all, &|_| true), Some(3));
    }

    #[test]
    fn longest_first_balances_two_lanes() {
        // LPT on two lanes: 7,5,4,3,3,2 → lanes {7,3,2}=12 and {5,4,3}=12 (plan order would give 15/9 with a
        // static split in halves).
        let mut pending: Vec<Pending> =
            [3.0, 7.0, 2.0, 5.0, 3.0, 4.0].iter().enumerate().map(|(i, ms)| p(i, Framework::Jax, "cpu", *ms)).collect();
        let mut load = [0.0f64; 2];
        while let Some(i) = pick(&pending, Some((Framework::Jax, &Target::cpu()))) {
            let lane = if load[0] <= load[1] { 0 } else { 1 };
            load[lane] += pending.remove(i).expected_ms;
        }
        assert_eq!(load, [12.0, 12.0]);
    }

    fn case(fw: Framework, function: &str, workload: bool) -> CaseRow {
        let mut spec = crate::model::CaseSpec::new(function, "default");
        if workload {
            spec.workload = Some(crate::model::WorkloadSpec::default());
        }
        CaseRow {
            key: format!("{fw}/{function}/default/float32"),
            framework: fw,
            function: function.into(),
            case_id: "default".into(),
            dtype: Some(crate::model::Dtype::Float32),
            seed: 0,
            spec: crate::model::Spec::from(spec),
        }
    }

    #[test]
    fn frameworks_with_the_longest_case_are_probed_first() {
        let keras: Framework = "keras-jax".parse().unwrap();
        let cases = vec![
            case(Framework::Numpy, "numpy.add", false),
            case(Framework::Numpy, "numpy.sub", false),
            case(Framework::Numpy, "numpy.mul", false),
            case(Framework::Torch, "torch.add", false),
            case(Framework::Torch, "torch.sub", false),
            case(keras, "resnet50", true),
            case(Framework::Jax, "jax.numpy.add", false),
        ];
        // No history: the workload's default (1 s) beats every function's (115 ms); then the
        // most cases (numpy's three), torch's two, JAX's one.
        let none = HashMap::new();
        assert_eq!(probe_order(&cases, &none), vec![keras, Framework::Numpy, Framework::Torch, Framework::Jax]);
        // History: a 5 s torch case leads; JAX's one case (200 ms) beats numpy's three (3 x 115 ms) on
        // its longest case.
        let mut h = HashMap::new();
        h.insert(("torch/torch.sub/default/float32".to_string(), "cpu".to_string()), 5_000.0);
        h.insert(("jax/jax.numpy.add/default/float32".to_string(), "cpu".to_string()), 200.0);
        assert_eq!(probe_order(&cases, &h), vec![Framework::Torch, keras, Framework::Jax, Framework::Numpy]);
    }

    #[test]
    fn history_gives_expected_times_and_the_default_fills_in() {
        let add = case(Framework::Torch, "torch.add", false);
        let mut h = HashMap::new();
        h.insert(("torch/torch.add/default/float32".to_string(), "cpu".to_string()), 42.0);
        assert_eq!(expected_ms(&h, &add, &Target::cpu()), 42.0);
        assert_eq!(expected_ms(&h, &add, &"cpu/compiled".parse().unwrap()), DEFAULT_EXPECTED_MS);
        let model = case(Framework::Torch, "resnet18", true);
        assert_eq!(expected_ms(&h, &model, &Target::cpu()), DEFAULT_WORKLOAD_EXPECTED_MS);
    }
}
