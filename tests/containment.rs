//! Issue 23, fault 3: nothing a case starts outlives its worker, and a worker that exits
//! while its children hold the protocol pipe is a `crash` with its exit code, recorded at
//! once (not a `timeout` after the whole limit). Real workers (real Python, real NumPy) under
//! the real supervisor; what is left is found by scanning /proc for the test's marker in each
//! process's environment.

mod common;

use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use mlport::catalogue::{Catalogue, load_path};
use mlport::model::{Outcome, Reason, RunInfo, Target};
use mlport::plan::{Selection, plan};
use mlport::runner::{self, Ending, NullSink, RunConfig};
use mlport::store::Store;
use mlport::worker::protocol::Timing;

/// The marker the fixtures' children inherit in their environment: unique to this test process.
fn marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| {
        let m = format!("mlport-escape-{}", std::process::id());
        // SAFETY: set once, before any test of this binary starts a process (each calls
        // `marker()` first, and OnceLock makes the others wait until it is set).
        unsafe { std::env::set_var("MLPORT_TEST_ESCAPE_MARKER", &m) };
        m
    })
}

/// Processes whose environment holds `MLPORT_TEST_ESCAPE_MARKER=<marker>` (zombies, which hold
/// nothing, have an empty environment and are not counted).
fn processes_with_marker() -> Vec<u32> {
    let needle = format!("MLPORT_TEST_ESCAPE_MARKER={}", marker());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(env) = std::fs::read(entry.path().join("environ"))
            && env.split(|&b| b == 0).any(|v| v == needle.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `limit` for no marked process to be left; returns those still there.
fn left_after(limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left = processes_with_marker();
        if left.is_empty() || start.elapsed() >= limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn config(tmp: &std::path::Path) -> RunConfig {
    // A few calls per case: each call of the daemon case starts one more daemon.
    RunConfig {
        timing: Timing { warmup_ms: 0.0, min_blocks: 1, max_blocks: 2, budget_ms: 0.0, ..Timing::default() },
        ..common::run_config(tmp)
    }
}

#[test]
fn forked_children_and_daemons_die_with_their_worker_and_an_exit_is_a_prompt_crash() {
    let marker = marker();
    let tmp = tempfile::tempdir().unwrap();
    let cat = Catalogue::new(load_path(&common::fixture("escape")).unwrap()).unwrap();
    let p = plan(&cat, &Selection::default(), 0).unwrap();
    let mut store = Store::open(&tmp.path().join("s.db")).unwrap();
    let mut info = RunInfo::blank("test", Target::cpu());
    let run = store.create_run(&info, &Default::default(), &p.functions, &p.cases).unwrap();
    let cfg = config(tmp.path());
    let started = Instant::now();
    let ending =
        runner::execute(&mut store, run, &p.cases, &mut info, &cfg, &mut NullSink, &AtomicBool::new(false)).unwrap();
    let took = started.elapsed();
    assert_eq!(ending, Ending::Finished);
    let results = store.results(run).unwrap();
    let by_case = |id: &str| results.iter().find(|r| r.case.case_id == id).unwrap().result.clone();

    // 50 forked children hold the protocol pipe open after the worker exits with code 7: a
    // crash with that code, its supervisor saying what it killed; not a timeout after 60 s.
    let fork = by_case("fork50_exit7");
    assert_eq!((fork.outcome, fork.reason), (Outcome::Crash, Some(Reason::Crash)), "{fork:?}");
    assert_eq!(fork.message.as_deref(), Some("worker exited with code 7"));
    assert_eq!(fork.signal, None);
    let tail = fork.stderr_tail.clone().unwrap_or_default();
    assert!(tail.contains("mlport supervisor: killed 50 processes the worker left running"), "{tail}");
    // Two attempts (a crash is confirmed on a fresh worker) and three other cases, each well
    // under the 60 s limit the old core waited out.
    assert!(took < Duration::from_secs(40), "the run took {took:?}");

    // A daemon (fork, setsid, fork) outlives the case that passed, but not its worker.
    let daemon = by_case("daemon");
    assert_eq!(daemon.outcome, Outcome::Pass, "{daemon:?}");

    // A child in a group of its own and a daemon, then the worker exits: a crash, nothing left.
    let group = by_case("leave_group_exit3");
    assert_eq!((group.outcome, group.message.as_deref()), (Outcome::Crash, Some("worker exited with code 3")));
    let tail = group.stderr_tail.unwrap_or_default();
    assert!(tail.contains("mlport supervisor: killed 2 processes the worker left running"), "{tail}");

    assert_eq!(left_after(Duration::from_secs(5)), Vec::<u32>::new(), "processes with {marker} left behind");
}

#[test]
fn kill_9_of_mlport_leaves_none_of_the_workers_children() {
    let marker = marker();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let mut mlport = std::process::Command::new(env!("CARGO_BIN_EXE_mlport"))
        .args(["run", "--device", "cpu", "--catalogue"])
        .arg(common::fixture("escape-hang"))
        .arg("--db")
        .arg(&db)
        .arg("--python")
        .arg(common::python())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // mlport, the supervisor, the worker, its 3 children and the daemon all inherit the marker:
    // wait until the case's children run.
    let start = Instant::now();
    while processes_with_marker().len() < 7 {
        assert!(start.elapsed() < Duration::from_secs(180), "the case never started its children");
        assert!(mlport.try_wait().unwrap().is_none(), "mlport ended before the case hung");
        std::thread::sleep(Duration::from_millis(100));
    }
    mlport.kill().unwrap(); // SIGKILL
    mlport.wait().unwrap();
    assert_eq!(left_after(Duration::from_secs(10)), Vec::<u32>::new(), "processes with {marker} left behind");
    // The case in flight stays pending, for --resume to run again.
    let store = Store::open_read_only(&db).unwrap();
    let run = store.runs().unwrap()[0].id;
    assert_eq!(store.results(run).unwrap().len(), 0);
    assert_eq!(store.cases(run).unwrap().len(), 1);
}
