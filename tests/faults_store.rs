//! Faults of mlport's own storage, injected for real (issue 23, faults 1, 2 and 4), each
//! checked against an unfaulted run of the same plan (tests/fixtures/faults: NumPy and PyTorch
//! workers, op references and float64 self-references):
//! - a full disk (a 512 KiB tmpfs as `--outputs`, or a 360 KiB one holding the store) and an
//!   input cache that cannot be created stop the run with a message naming the path; the case
//!   stays pending, the run is not `finished`, and `--resume` once the cause is gone gives the
//!   unfaulted run's store;
//! - a kill right after the run is created (`MLPORT_FAULT=after-create-run`) loses no planned
//!   reference: `--resume` gives the unfaulted run's comparisons;
//! - a float64 reference whose worker dies is computed again on a fresh worker; one that dies
//!   every time is said in the run's end and in every report, and `--resume` computes it.
//!
//! After each faulted command, no process mlport started is left (the test tags mlport's
//! environment and scans /proc for the tag).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::snapshot::{self, Snapshot};
use common::{fixture, mlport, python};

/// The environment variable every process of a test's mlport inherits.
const TAG: &str = "MLPORT_TEST_TAG";

/// `mlport run` of `catalogue` (tests/fixtures) into `db`, tagged, with `extra` arguments and
/// environment; its output, not yet asserted.
fn run(db: &Path, catalogue: &str, tag: &str, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = mlport();
    c.args(["run", "--device", "cpu", "--budget-ms", "5", "--threads", "1", "--catalogue"])
        .arg(fixture(catalogue))
        .arg("--db")
        .arg(db)
        .arg("--python")
        .arg(python())
        .args(extra)
        .env(TAG, tag);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// `mlport run --resume latest` of `db`, tagged, with `extra` arguments; must succeed.
fn resume(db: &Path, tag: &str, extra: &[&str]) -> String {
    let out = mlport()
        .args(["run", "--resume", "latest", "--python"])
        .arg(python())
        .arg("--db")
        .arg(db)
        .args(extra)
        .env(TAG, tag)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "--resume failed: {err}");
    err
}

/// Asserts that nothing mlport started under `tag` is still running.
fn nothing_left(tag: &str, when: &str) {
    let left = snapshot::processes_tagged(TAG, tag);
    assert!(left.is_empty(), "{when}: processes left behind: {left:?}");
}

/// The unfaulted run of tests/fixtures/`catalogue`, made once per test binary.
fn baseline(catalogue: &'static str) -> &'static Snapshot {
    static FAULTS: OnceLock<(tempfile::TempDir, Snapshot)> = OnceLock::new();
    static REFS: OnceLock<(tempfile::TempDir, Snapshot)> = OnceLock::new();
    let cell = if catalogue == "faults" { &FAULTS } else { &REFS };
    &cell
        .get_or_init(|| {
            let tmp = tempfile::tempdir().unwrap();
            let db = tmp.path().join("baseline.db");
            let out = run(&db, catalogue, "baseline", &[], &[]);
            assert!(out.status.success(), "baseline: {}", String::from_utf8_lossy(&out.stderr));
            let snap = snapshot::of(&db);
            assert_eq!(snap.state, "finished");
            (tmp, snap)
        })
        .1
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A tmpfs of a given size mounted by this test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`512k`) at `dir`; `None`, after printing `SKIPPED:` and why,
    /// when it cannot (not root, no CAP_SYS_ADMIN in this container).
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        Self::try_mount(dir, size).map_err(|why| eprintln!("SKIPPED: {why}")).ok()
    }

    fn try_mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount -t tmpfs failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }

    /// Grows it to `size`: the space is freed, the files stay.
    fn grow(&self, size: &str) {
        let status = Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(&self.0).status().unwrap();
        assert!(status.success(), "remount of {}", self.0.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Fault 1: the worker's `.npy` write fails with ENOSPC on a real, full filesystem.
#[test]
fn a_full_disk_stops_the_run_with_the_case_pending_and_resume_completes_it() {
    let want = baseline("faults");
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small");
    // Everything but numpy.outer's 1.28 MB output takes about 250 KiB (4 KiB pages).
    // Without a mount, the unwritable input cache test covers the same path.
    let Some(disk) = Tmpfs::mount(&small, "512k") else { return };
    let db = tmp.path().join("full.db");
    let tag = format!("full-{}", std::process::id());
    let out = run(&db, "faults", &tag, &["--outputs", small.to_str().unwrap()], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "a full disk is an error: {err}");
    nothing_left(&tag, "after the full disk");
    // The message names the file, the OS's reason, and the way on.
    assert!(err.contains("could not write") && err.contains("No space left on device"), "{err}");
    assert!(err.contains(&small.display().to_string()) && err.contains("numpy_numpy.outer"), "{err}");
    assert!(err.contains("numpy/numpy.outer/default/int64") && err.contains("--resume"), "{err}");
    let got = snapshot::of(&db);
    assert_eq!(got.state, "interrupted", "a run stopped by its own I/O is never finished");
    let outer = ("numpy/numpy.outer/default/int64".to_string(), "cpu".to_string());
    assert!(!got.results.contains_key(&outer), "the case is pending, not an outcome: {:?}", got.results.get(&outer));
    assert!(
        got.results.values().all(|v| !v.contains("No space") && !v.contains("Errno 28")),
        "no full-disk outcome is stored: {:?}",
        got.results
    );
    // What ran before the disk filled is kept as it would be.
    assert!(!got.results.is_empty());
    for (k, v) in &got.results {
        assert_eq!(want.results.get(k), Some(v), "{k:?}");
    }
    assert!(got.results.len() < want.results.len());

    disk.grow("64m");
    let err = resume(&db, &tag, &["--outputs", small.to_str().unwrap()]);
    nothing_left(&tag, "after the resume");
    assert!(err.contains("resuming run"), "{err}");
    snapshot::assert_same(&snapshot::of(&db), want, "full disk, then --resume");
    eprintln!(
        "full disk: {} of {} results stored before ENOSPC; --resume completed the rest",
        got.results.len(),
        want.results.len()
    );
}

/// Fault 1, the store's side: the SQLite store itself on a full disk. Its write fails as a
/// store error naming the store; the run stays `running` with the case pending.
#[test]
fn a_full_store_disk_stops_the_run_and_resume_completes_it() {
    let want = baseline("faults");
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("store");
    // The empty store and the run's plan take about 300 KiB; a few results more fill it.
    let Some(disk) = Tmpfs::mount(&small, "360k") else { return };
    let db = small.join("full.db");
    let outputs = tmp.path().join("outputs");
    let tag = format!("store-{}", std::process::id());
    let out = run(&db, "faults", &tag, &["--outputs", outputs.to_str().unwrap()], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    nothing_left(&tag, "after the full store");
    assert!(err.contains(&format!("{}: SQLite error", db.display())) && err.contains("disk is full"), "{err}");
    disk.grow("64m");
    let got = snapshot::of(&db);
    assert_ne!(got.state, "finished");
    assert!(got.results.len() < want.results.len());
    resume(&db, &tag, &["--outputs", outputs.to_str().unwrap()]);
    nothing_left(&tag, "after the resume");
    snapshot::assert_same(&snapshot::of(&db), want, "full store disk, then --resume");
    eprintln!("full store disk: {} of {} results stored before it filled", got.results.len(), want.results.len());
}

/// Fault 1 without a mount: the run's input cache folder cannot be created (a file holds its
/// name), so the very first float64 reference cannot build its inputs.
#[test]
fn an_input_cache_that_cannot_be_written_stops_the_run_in_the_reference_phase() {
    let want = baseline("faults");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("cache.db");
    let blocker = tmp.path().join(".mlport").join("cache.db-run-1").join("inputs");
    std::fs::create_dir_all(blocker.parent().unwrap()).unwrap();
    std::fs::write(&blocker, b"not a folder").unwrap();
    let tag = format!("cache-{}", std::process::id());
    let out = run(&db, "faults", &tag, &[], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    nothing_left(&tag, "after the failed input cache");
    assert!(err.contains(&format!("could not create folder {}", blocker.display())), "{err}");
    let got = snapshot::of(&db);
    assert_eq!(got.state, "interrupted");
    assert!(got.results.is_empty(), "no case ran: {:?}", got.results);
    assert_eq!(got.references.len(), want.references.len(), "every reference is planned");
    // The first one failed before it needed inputs (its function does not exist); none passed.
    assert!(got.references.values().all(|r| !r.starts_with("Some(Pass)")), "none computed: {:?}", got.references);
    assert!(got.references.values().filter(|r| r.starts_with("None None")).count() >= want.references.len() - 2);

    std::fs::remove_file(&blocker).unwrap();
    resume(&db, &tag, &[]);
    nothing_left(&tag, "after the resume");
    snapshot::assert_same(&snapshot::of(&db), want, "input cache, then --resume");
}

/// Fault 2: kill -9 right after the run is created, before its lock or any worker.
#[test]
fn a_kill_right_after_the_run_is_created_loses_no_reference() {
    let want = baseline("faults");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("killed.db");
    let tag = format!("create-{}", std::process::id());
    let out = run(&db, "faults", &tag, &[], &[("MLPORT_FAULT", "after-create-run")]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9), "killed at the injection point: {}", stderr(&out));
    nothing_left(&tag, "after the kill");
    let got = snapshot::of(&db);
    assert_eq!((got.state.as_str(), got.planned), ("running", want.planned));
    assert_eq!(got.references.len(), want.references.len(), "the plan's references are stored with it");
    assert!(got.results.is_empty());

    resume(&db, &tag, &[]);
    nothing_left(&tag, "after the resume");
    let got = snapshot::of(&db);
    assert!(!got.comparisons.is_empty());
    snapshot::assert_same(&got, want, "kill after create, then --resume");
    eprintln!("kill after create: {} comparisons, as unfaulted", got.comparisons.len());
}

/// A `--quick` run killed right after it is created and resumed stays untimed: the resume
/// takes `--quick` from the run, not from its own command line.
#[test]
fn a_resumed_quick_run_stays_untimed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("quick.db");
    let tag = format!("quick-{}", std::process::id());
    let out = run(&db, "faults", &tag, &["--quick"], &[("MLPORT_FAULT", "after-create-run")]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9), "killed at the injection point: {}", stderr(&out));
    resume(&db, &tag, &[]);
    nothing_left(&tag, "after the resume");
    let store = mlport::store::Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    assert!(run.info.switches.as_ref().is_some_and(|s| s.quick), "{:?}", run.info.switches);
    let results = store.results(run.id).unwrap();
    assert!(!results.is_empty());
    let timed: Vec<&str> =
        results.iter().filter(|r| !r.result.samples_ns.is_empty()).map(|r| r.case.key.as_str()).collect();
    assert!(timed.is_empty(), "steady-state samples in a --quick run: {timed:?}");
}

/// Fault 4: float64 references whose worker dies.
#[test]
fn a_reference_whose_worker_dies_is_retried_and_a_missing_one_is_reported() {
    let want = baseline("faults-reference");
    assert!(want.references.values().all(|r| r.starts_with("Some(Pass)")), "{:?}", want.references);
    let tmp = tempfile::tempdir().unwrap();

    // Dies once: computed again on a fresh worker, nothing lost.
    let db = tmp.path().join("once.db");
    let marker = tmp.path().join("killed-once");
    let tag = format!("once-{}", std::process::id());
    let out = run(&db, "faults-reference", &tag, &[], &[("MLPORT_TEST_KILL_ONCE", marker.to_str().unwrap())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists(), "the reference's worker was killed");
    nothing_left(&tag, "after the reference's worker died once");
    snapshot::assert_same(&snapshot::of(&db), want, "a reference whose worker died once");

    // Dies every time: recorded as a crash after the retry, said at the end and in reports.
    let db = tmp.path().join("always.db");
    let tag = format!("always-{}", std::process::id());
    let out = run(&db, "faults-reference", &tag, &[], &[("MLPORT_TEST_KILL_ALWAYS", "1")]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    nothing_left(&tag, "after the reference's worker died twice");
    let got = snapshot::of(&db);
    let cos = "reference/case/torch/torch.cos/default/float32";
    let stored = &got.references[cos];
    assert!(stored.starts_with("Some(Crash)") && stored.contains("the first attempt's worker died too"), "{stored}");
    let note = "1 of 4 float64 references could not be computed (1 crash)";
    // Said once: in the report the run prints, with the hint on stderr (it was said twice).
    let said = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(said.matches(note).count(), 1, "{said}");
    assert!(said.contains(cos), "{said}");
    assert!(err.contains("`--resume` computes a crashed or timed-out float64 reference again"), "{err}");
    let cos_case = ("torch/torch.cos/default/float32".to_string(), "cpu".to_string());
    assert!(got.results[&cos_case].contains("compared=false"), "ran unchecked: {}", got.results[&cos_case]);
    for format in ["table", "json", "markdown"] {
        let report = common::stdout(mlport().args(["report", "--format", format, "--db"]).arg(&db));
        assert!(report.contains(note), "{format} report: {report}");
    }
    // `--resume` computes the crashed reference once more (here it succeeds) and compares.
    resume(&db, &tag, &[]);
    nothing_left(&tag, "after the resume");
    snapshot::assert_same(&snapshot::of(&db), want, "a crashed reference, then --resume");
}
