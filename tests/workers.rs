//! The runner against real workers (real Python, real NumPy): timeouts, crashes,
//! protocol isolation, restart, and resume of an interrupted run.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mlport::catalogue::{Catalogue, load_path};
use mlport::model::RunInfo;
use mlport::model::{Framework, Outcome, Reason, Target};
use mlport::plan::{Selection, plan};
use mlport::runner::schedule::Layout;
use mlport::runner::{self, Ending, Event, EventSink, NullSink, RunConfig};
use mlport::store::Store;
use mlport::worker::{self, WorkerSpec};

fn info() -> RunInfo {
    let mut info = RunInfo::blank("test", Target::cpu());
    info.host = "test".into();
    info
}

fn config(tmp: &std::path::Path) -> RunConfig {
    common::run_config(tmp)
}

#[test]
fn a_real_worker_says_hello_with_its_versions_and_devices() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = WorkerSpec {
        python: common::python(),
        script_dir: common::worker_dir(tmp.path()),
        framework: Framework::Numpy,
        device: Target::cpu(),
        env: vec![],
    };
    let w = worker::spawn(&spec, Duration::from_secs(120), &AtomicBool::new(false)).unwrap();
    assert_eq!(w.hello.protocol, worker::protocol::PROTOCOL_VERSION);
    assert_eq!(w.hello.framework, Framework::Numpy);
    assert!(w.hello.import_error.is_none());
    let numpy = w.hello.packages.get("numpy").expect("numpy version").clone();
    assert_eq!(w.hello.framework_version.as_deref(), Some(numpy.as_str()));
    assert!(w.hello.devices.iter().any(|d| d.device == "cpu" && d.available));
    w.shutdown();
}

#[test]
fn timeouts_and_crashes_are_outcomes_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = Catalogue::new(load_path(&common::fixture("misbehave")).unwrap()).unwrap();
    let p = plan(&cat, &Selection::default(), 0).unwrap();
    let mut store = Store::open(&tmp.path().join("s.db")).unwrap();
    let mut inf = info();
    let run = store.create_run(&inf, &Default::default(), &p.functions, &p.cases).unwrap();
    let started = Instant::now();
    let ending = runner::execute(
        &mut store,
        run,
        &p.cases,
        &mut inf,
        &config(tmp.path()),
        &mut NullSink,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(ending, Ending::Finished);
    // The 30 s sleep was cut at its 1 s limit (plus kill grace and restarts).
    assert!(started.elapsed() < Duration::from_secs(25), "took {:?}", started.elapsed());
    let results = store.results(run).unwrap();
    let by_case = |id: &str| {
        results.iter().find(|r| r.case.case_id == id).unwrap_or_else(|| panic!("no result for {id}")).result.clone()
    };
    assert_eq!(by_case("before").outcome, Outcome::Pass);

    let t = by_case("sleeps");
    assert_eq!(t.outcome, Outcome::Timeout);
    assert_eq!(t.reason, Some(Reason::Timeout));
    assert_eq!(t.signal, Some(15), "SIGTERM ends a sleeping worker: {t:?}");
    assert!(t.message.unwrap().contains("1.0 s"));

    let c = by_case("segfault");
    assert_eq!(c.outcome, Outcome::Crash);
    assert_eq!(c.reason, Some(Reason::Crash));
    assert_eq!(c.signal, Some(11));
    assert!(c.message.unwrap().contains("SIGSEGV"));
    // SIGKILL, which no process can catch: the supervisor still ends by it (it cannot reset
    // its handler), so the core sees signal 9, never an exit code.
    let k = by_case("sigkill");
    assert_eq!(k.outcome, Outcome::Crash, "{k:?}");
    assert_eq!(k.signal, Some(9), "{k:?}");
    assert!(k.message.unwrap().contains("SIGKILL"));

    // Output written to stdout from Python and from the OS never reaches the protocol.
    let n = by_case("noisy");
    assert_eq!(n.outcome, Outcome::Pass, "{n:?}");
    assert!(n.samples_ns.len() >= 5);
    // The worker was restarted after the crash and the last case ran.
    assert_eq!(by_case("after").outcome, Outcome::Pass);
    assert_eq!(results.len(), 6);
}

#[test]
fn blocked_timing_blocks_fast_calls_and_flags_a_noisy_case_unstable() {
    use mlport::stats::{StatsConfig, Summary};
    let tmp = tempfile::tempdir().unwrap();
    let cat = Catalogue::new(load_path(&common::fixture("timing")).unwrap()).unwrap();
    let p = plan(&cat, &Selection::default(), 0).unwrap();
    let mut store = Store::open(&tmp.path().join("s.db")).unwrap();
    let mut inf = info();
    let run = store.create_run(&inf, &Default::default(), &p.functions, &p.cases).unwrap();
    let cfg = RunConfig { layout: Layout { sets: vec![Vec::new()], threads: Some(1) }, ..config(tmp.path()) };
    runner::execute(&mut store, run, &p.cases, &mut inf, &cfg, &mut NullSink, &AtomicBool::new(false)).unwrap();
    assert_eq!(inf.frameworks.get(&Framework::Torch).and_then(|f| f.threads), Some(1), "--threads reached torch");
    let results = store.results(run).unwrap();
    let by_case = |id: &str| results.iter().find(|r| r.case.case_id == id).unwrap().result.clone();
    let stats = StatsConfig::default();

    let fast = by_case("small");
    assert_eq!(fast.outcome, Outcome::Pass, "{fast:?}");
    assert!(fast.first_call_ns.is_some());
    assert_eq!(fast.block_sizes.len(), fast.samples_ns.len());
    assert!(fast.samples_ns.len() >= 5, "{fast:?}");
    let n = fast.block_sizes[0];
    assert!(n >= 16 && fast.block_sizes.iter().all(|&b| b == n), "an add of 1000 floats takes µs: {fast:?}");
    // Each block lasted at least the minimum block time (1 ms).
    assert!(fast.samples_ns.iter().all(|&ns| ns * n >= 900_000), "{fast:?}");
    // The steady state's wall time and its run-queue wait are kept (Linux).
    let wall = fast.steady_wall_ns.expect("steady wall time");
    let timed: u64 = fast.samples_ns.iter().zip(&fast.block_sizes).map(|(ns, n)| ns * n).sum();
    assert!(wall >= timed, "the steady state holds its blocks: {wall} < {timed}");
    assert!(fast.runqueue_wait_ns.is_some(), "{fast:?}");

    let noisy = by_case("noisy");
    assert_eq!(noisy.outcome, Outcome::Pass, "{noisy:?}");
    assert!(noisy.block_sizes.iter().all(|&b| b == 1), "ms calls need no blocking: {noisy:?}");
    let samples: Vec<f64> = noisy.samples_ns.iter().map(|&x| x as f64).collect();
    let s = Summary::of(&samples, &stats).unwrap();
    assert!(s.unstable, "1 ms / 4 ms calls must be flagged: {s:?}");
}

/// Sets the interrupt flag after `after` finished cases, like Ctrl-C would.
struct InterruptAfter<'a> {
    after: usize,
    seen: usize,
    flag: &'a AtomicBool,
}

impl EventSink for InterruptAfter<'_> {
    fn event(&mut self, e: &Event) {
        if let Event::CaseFinished { .. } = e {
            self.seen += 1;
            if self.seen == self.after {
                self.flag.store(true, Ordering::SeqCst);
            }
        }
    }
}

#[test]
fn an_interrupted_run_keeps_its_results_and_resumes_where_it_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = Catalogue::new(load_path(&common::fixture("small/numpy.toml")).unwrap()).unwrap();
    let p = plan(&cat, &Selection::default(), 0).unwrap();
    assert_eq!(p.cases.len(), 4);
    let db = tmp.path().join("s.db");
    let cfg = config(tmp.path());
    let run = {
        let mut store = Store::open(&db).unwrap();
        let mut inf = info();
        let run = store.create_run(&inf, &Default::default(), &p.functions, &p.cases).unwrap();
        let flag = AtomicBool::new(false);
        let mut sink = InterruptAfter { after: 2, seen: 0, flag: &flag };
        let ending = runner::execute(&mut store, run, &p.cases, &mut inf, &cfg, &mut sink, &flag).unwrap();
        assert_eq!(ending, Ending::Interrupted);
        store.finish_run(run, mlport::model::RunState::Interrupted).unwrap();
        run
    };
    // A fresh process would reopen the store: what was committed is there.
    let mut store = Store::open(&db).unwrap();
    let s = store.run(run).unwrap();
    assert_eq!((s.state.as_str(), s.results), ("interrupted", 2));
    let first: Vec<String> = store.results(run).unwrap().into_iter().map(|r| r.case.key).collect();
    let mut inf = s.info.clone();
    let mut counter = InterruptAfter { after: usize::MAX, seen: 0, flag: &AtomicBool::new(false) };
    let cases = store.cases(run).unwrap();
    let ending =
        runner::execute(&mut store, run, &cases, &mut inf, &cfg, &mut counter, &AtomicBool::new(false)).unwrap();
    assert_eq!(ending, Ending::Finished);
    assert_eq!(counter.seen, 2, "resume runs only the two missing cases");
    let results = store.results(run).unwrap();
    assert_eq!(results.len(), 4);
    for k in first {
        assert_eq!(results.iter().filter(|r| r.case.key == k).count(), 1);
    }
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn hostile_cases_cannot_shift_answers_blame_the_next_case_or_leave_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!("mlport-orphan-marker-{}", std::process::id());
    let cat = Catalogue::new(load_path(&common::fixture("hostile")).unwrap()).unwrap();
    let p = plan(&cat, &Selection::default(), 0).unwrap();
    let mut store = Store::open(&tmp.path().join("s.db")).unwrap();
    let mut inf = info();
    let run = store.create_run(&inf, &Default::default(), &p.functions, &p.cases).unwrap();
    let mut cfg = config(tmp.path());
    cfg.case_timeout = Duration::from_secs(30);
    let spec_env = ("MLPORT_TEST_MARKER", marker.as_str());
    // SAFETY: tests in this binary read no environment variable concurrently with this one.
    unsafe { std::env::set_var(spec_env.0, spec_env.1) };
    let ending =
        runner::execute(&mut store, run, &p.cases, &mut inf, &cfg, &mut NullSink, &AtomicBool::new(false)).unwrap();
    assert_eq!(ending, Ending::Finished);
    let results = store.results(run).unwrap();
    let by_case = |id: &str| results.iter().find(|r| r.case.case_id == id).unwrap().result.clone();

    // The forged "pass" carries no nonce: refused, recorded as the harness's problem.
    let forge = by_case("forge");
    assert_eq!((forge.outcome, forge.reason), (Outcome::Fail, Some(Reason::HarnessError)), "{forge:?}");
    // The next case gets its own answer, not the forging case's real failure.
    let next = by_case("after_forge");
    assert_eq!(next.outcome, Outcome::Pass, "{next:?}");

    // The worker killed after answering is not blamed on the next case.
    assert_eq!(by_case("late_death").outcome, Outcome::Pass);
    let after = by_case("after_late_death");
    assert_eq!(after.outcome, Outcome::Pass, "{after:?}");

    // A 50 MB stderr line is kept as a few kilobytes.
    let flood = by_case("flood");
    assert_eq!(flood.outcome, Outcome::Crash, "{:?}", flood.message);
    let tail = flood.stderr_tail.unwrap_or_default();
    assert!(tail.len() < 64 * 1024 && tail.contains("[…cut]"), "{} bytes", tail.len());

    // The worker that died left a child in its group: it is gone too.
    let orphan = by_case("orphan");
    assert_eq!(orphan.outcome, Outcome::Crash, "{orphan:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_with(&marker), Vec::<u32>::new(), "processes left behind");
}
