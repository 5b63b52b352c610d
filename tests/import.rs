//! `mlport import` and `mlport pytest` as a user meets them: the paper's data and a
//! pytest-json-report imported and reported (portability, overview, slowdown), clear errors
//! naming file and place for bad input with nothing stored, and a real pytest suite run end
//! to end in the managed environment.

mod common;

use common::{mlport, stdout, target};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn runs_in(db: &std::path::Path) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get::<_, i64>(0)).unwrap() as usize
}

#[test]
fn a_pytest_json_report_with_timings_imports_as_one_run_with_its_cpu_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let dir = common::paper_dir().join("pytorch_timings/tpu_vm");
    let out = stdout(
        mlport()
            .args(["import", "pytest-json"])
            .arg(dir.join("test_failure_report.json"))
            .args(["--framework", "torch", "--device", "tpu:0", "--label", "torch on v3", "--machine", "tpu_vm"])
            .args(["--group-by", "file"])
            .arg("--timings")
            .args(["tpu_1.json", "tpu_2.json", "tpu_3.json"].map(|f| dir.join(f)))
            .args(["--format", "json", "--db"])
            .arg(&db),
    );
    let rep: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rep["run"]["source"], "import:pytest-json");
    assert_eq!(rep["run"]["label"], "torch on v3");
    let tpu = target(&rep, "torch", "tpu:0");
    assert_eq!(
        (&tpu["functions_run"], &tpu["success"]["count"], &tpu["partial"]["count"], &tpu["complete_failure"]["count"]),
        (&Value::from(64), &Value::from(35), &Value::from(15), &Value::from(14))
    );
    assert_eq!(format!("{:.2}", tpu["success"]["percent"].as_f64().unwrap()), "54.69");
    // A user's suite names functions by test file: `log1p_test.py` is `log1p`.
    let log1p = tpu["functions"].as_array().unwrap().iter().find(|f| f["name"] == "log1p").unwrap();
    assert_eq!(log1p["status"], "complete_failure");
    assert_eq!(log1p["reasons"]["not_implemented"], 7);
    // The label names the run elsewhere, and the table's footer states the rule.
    let table = stdout(mlport().args(["report", "--run", "torch on v3", "--db"]).arg(&db));
    assert!(table.contains("35 (54.7%)") && table.contains("unless its cpu copy"), "{table}");
    // Slowdown of the TPU against the CPU copies of the same run.
    let csv = stdout(mlport().args(["report", "--slowdown", "cpu..tpu:0", "--format", "csv", "--db"]).arg(&db));
    assert!(csv.starts_with("framework,function,cases,a_mean_ns,b_mean_ns,mean_ratio,"), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("torch,Adamax,1,")), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("torch,(share > 10x slower),")), "{csv}");
}

#[test]
fn malformed_truncated_and_foreign_files_are_refused_with_file_and_place_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let good = common::paper_dir().join("pytorch_timings/t4_vm/test_failure_report.json");
    let text = std::fs::read_to_string(&good).unwrap();
    let truncated = tmp.path().join("truncated.json");
    std::fs::write(&truncated, &text[..text.len() / 3]).unwrap();
    let malformed = tmp.path().join("malformed.json");
    std::fs::write(&malformed, text.replacen("\"outcome\": \"passed\"", "\"outcome\": passed", 1)).unwrap();
    let timing = common::paper_dir().join("pytorch_timings/t4_vm/gpu_1.json");
    let import = |report: &std::path::Path, extra: &[&std::path::Path]| {
        let mut c = mlport();
        c.args(["import", "pytest-json"]).arg(report).args(["--framework", "torch", "--device", "cuda:0"]);
        if !extra.is_empty() {
            c.arg("--timings").args(extra);
        }
        c.arg("--db").arg(&db);
        c
    };
    import(&truncated, &[]).assert().code(1).stderr(
        predicate::str::contains(format!("{}:", truncated.display())).and(predicate::str::contains("truncated JSON")),
    );
    import(&malformed, &[])
        .assert()
        .code(1)
        .stderr(predicate::str::is_match(r"malformed\.json:\d+:\d+: malformed JSON: expected value").unwrap());
    // A timing file given as the report, and a report given as timings: foreign JSON.
    import(&timing, &[])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("gpu_1.json:").and(predicate::str::contains("not a pytest-json-report file")));
    import(&good, &[timing.as_path(), good.as_path()]).assert().code(1).stderr(
        predicate::str::contains("test_failure_report.json:").and(predicate::str::contains("not a timing file")),
    );
    assert!(!db.exists(), "a refused import must not create a store");

    // With a store holding a run, a bad import leaves it as it was.
    import(&good, &[]).assert().success();
    import(&good, &[truncated.as_path()]).assert().code(1);
    assert_eq!(runs_in(&db), 1);
}

#[test]
fn a_broken_paper_folder_imports_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    mlport().args(["import", "paper"]).arg(tmp.path()).arg("--db").arg(&db).assert().code(1).stderr(
        predicate::str::contains(
            "not the paper's data set: no pytorch_timings, tensorflow_timings or jax_timings folder",
        ),
    );
    // A copy of one machine with a truncated session file: an error naming it, nothing stored.
    let run = tmp.path().join("data/pytorch_timings/t4_vm");
    std::fs::create_dir_all(&run).unwrap();
    let src = common::paper_dir().join("pytorch_timings/t4_vm");
    for f in ["test_failure_report.json", "gpu_1.json", "gpu_2.json"] {
        std::fs::copy(src.join(f), run.join(f)).unwrap();
    }
    let text = std::fs::read(src.join("gpu_3.json")).unwrap();
    std::fs::write(run.join("gpu_3.json"), &text[..1000]).unwrap();
    mlport()
        .args(["import", "paper"])
        .arg(tmp.path().join("data"))
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::is_match(r"t4_vm/gpu_3\.json:\d+:\d+: truncated JSON").unwrap());
    assert!(!db.exists());
}

#[test]
fn the_paper_overview_and_a_cross_run_slowdown() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("paper.db");
    let out = mlport().args(["import", "paper"]).arg(common::paper_dir()).arg("--db").arg(&db).assert().success();
    // A second import of the same data is refused, and labels stay unique.
    mlport()
        .args(["import", "paper"])
        .arg(common::paper_dir())
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the paper's data is already here"));
    let out = out.get_output();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("paper/torch/tpu_vm/tpu") && table.contains("35 (54.69%)"), "{table}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("left out"));
    assert_eq!(runs_in(&db), 18);
    let csv = stdout(mlport().args(["report", "--run", "all", "--format", "csv", "--db"]).arg(&db));
    let row = csv.lines().find(|l| l.contains("paper/torch/tpu_vm/tpu,import:paper,tpu_vm,torch,tpu:0,")).unwrap();
    // 64 functions: 35 success, 15 partial, 14 complete failure; 15 with a precision failure (a test's
    // assertion on the value, counted as wrong_result), none wrong everywhere (a test suite counts every
    // failing test); 54.6875% success.
    assert!(row.contains(",64,35,15,14,15,0,54.6875,"), "{row}");
    let json = stdout(
        mlport()
            .args([
                "report",
                "--slowdown",
                "cuda:0@paper/torch/t4_vm/gpu..tpu:0@paper/torch/tpu_vm/tpu",
                "--format",
                "json",
            ])
            .arg("--db")
            .arg(&db),
    );
    let sd: Value = serde_json::from_str(&json).unwrap();
    assert_eq!((sd["format"].as_str(), sd["version"].as_u64()), (Some("mlport.slowdown"), Some(2)));
    let fw = &sd["frameworks"][0];
    assert_eq!(fw["framework"], "torch");
    assert!(fw["by_mean"]["functions"].as_u64().unwrap() >= 40, "{fw:#}");
    // Intervals with the stored seed, and the summary line.
    let g = &fw["by_median"]["geometric_mean_ci"];
    assert!(g["lower"].as_f64().unwrap() <= g["point"].as_f64().unwrap(), "{g}");
    assert!(g["point"].as_f64().unwrap() <= g["upper"].as_f64().unwrap(), "{g}");
    let line = sd["summary"][0].as_str().unwrap();
    assert!(line.starts_with("torch on tpu:0 (run ") && line.contains("slower than on cuda:0 (run "), "{line}");
    assert!(line.contains("geometric mean over") && line.contains("beyond 10×"), "{line}");
    let table = stdout(
        mlport()
            .args([
                "report",
                "--slowdown",
                "cuda:0@paper/jax/t4_vm/gpu..tpu:0@paper/jax/tpu_vm/tpu",
                "--measure",
                "first-call",
            ])
            .arg("--db")
            .arg(&db),
    );
    assert!(table.contains("first timed calls") && table.contains("faster on B"), "{table}");
    mlport()
        .args(["report", "--slowdown", "cuda:0@nope..tpu:0", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no run with id or label `nope`"));
    mlport()
        .args(["report", "--slowdown", "mps..tpu:0@paper/jax/tpu_vm/tpu", "--run", "paper/jax/tpu_vm/tpu", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("has no result on mps"));
}

#[test]
fn mlport_pytest_runs_a_real_suite_on_the_device_and_imports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("suite.db");
    let out = mlport()
        .args(["pytest"])
        .arg(common::fixture("pytest-suite"))
        .args(["--group-by", "file"])
        .args(["--framework", "torch", "--device", "cpu", "--label", "fixture suite", "--format", "json", "--python"])
        .arg(common::pytest_python())
        .arg("--db")
        .arg(&db)
        .args(["--", "-q", "-p", "no:randomly"])
        .assert()
        .success()
        .get_output()
        .clone();
    let log = String::from_utf8_lossy(&out.stderr);
    let rep: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\nstderr:\n{log}"));
    assert_eq!(rep["run"]["source"], "pytest");
    assert!(rep["run"]["frameworks"]["torch"].as_str().is_some_and(|v| v.starts_with('2')), "{:#}", rep["run"]);
    assert!(
        rep["run"]["python_version"].as_str().is_some_and(|v| v.starts_with("3.")),
        "the Python that ran it: {:#}",
        rep["run"]
    );
    let cpu = target(&rep, "torch", "cpu");
    let status = |name: &str| {
        let f = cpu["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {cpu:#}"));
        (f["status"].as_str().unwrap().to_string(), f["reasons"].clone())
    };
    assert_eq!(status("matmul").0, "success");
    let (svd, reasons) = status("svd");
    assert_eq!((svd.as_str(), &reasons["dtype_unsupported"]), ("partial", &Value::from(1)), "{log}");
    let (sum, _) = status("sum");
    assert_eq!(sum, "partial", "{log}");
    let sum_fn = cpu["functions"].as_array().unwrap().iter().find(|f| f["name"] == "sum").unwrap();
    assert_eq!(sum_fn["wrong_result"], 1, "an assertion on the value is a wrong result, apart from the errors");
    let (symeig, reasons) = status("symeig");
    assert_eq!((symeig.as_str(), &reasons["api_missing"]), ("complete_failure", &Value::from(1)), "{log}");
    assert_eq!(cpu["cases"]["skipped"], 1);
    // The device reached the tests, and the test durations can be compared.
    let runs = stdout(mlport().args(["runs", "--db"]).arg(&db));
    assert!(runs.contains("fixture suite") && runs.contains("pytest"), "{runs}");
    let sd = stdout(
        mlport().args(["report", "--slowdown", "cpu..cpu", "--measure", "test", "--format", "csv", "--db"]).arg(&db),
    );
    assert!(sd.lines().any(|l| l.starts_with("torch,matmul,2,")), "{sd}");
}

#[test]
fn mlport_pytest_passes_the_device_to_the_tests() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(
        suite.join("test_device.py"),
        "import os\n\ndef test_device_is_passed():\n    assert os.environ['MLPORT_DEVICE'] == 'cpu'\n    assert os.environ['MLPORT_FRAMEWORK'] == 'numpy'\n",
    )
    .unwrap();
    let out = stdout(
        mlport()
            .arg("pytest")
            .arg(&suite)
            .args(["--framework", "numpy", "--device", "cpu", "--format", "csv", "--python"])
            .arg(common::pytest_python())
            .arg("--db")
            .arg(tmp.path().join("d.db")),
    );
    assert!(out.lines().any(|l| l.contains(",numpy,cpu,1,1,0,0,0,0,100,")), "{out}");
    mlport()
        .arg("pytest")
        .arg(tmp.path().join("missing"))
        .args(["--framework", "numpy", "--device", "cpu", "--db"])
        .arg(tmp.path().join("d.db"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no such test file or folder"));
}

#[test]
fn test_files_sharing_a_name_in_different_folders_stay_separate_functions() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let report = tmp.path().join("r.json");
    let test = |nodeid: &str, outcome: &str| {
        serde_json::json!({"nodeid": nodeid, "outcome": outcome, "keywords": [],
            "call": {"duration": 0.01, "outcome": outcome}})
    };
    let doc = serde_json::json!({
        "created": 1.0, "duration": 1.0, "exitcode": 1, "root": "/r", "environment": {},
        "summary": {"passed": 1, "failed": 2, "total": 3, "collected": 3},
        "tests": [test("a/test_x.py::test_one", "passed"), test("a/test_x.py::test_two", "failed"),
                  test("b/test_x.py::test_one", "failed")]
    });
    std::fs::write(&report, serde_json::to_vec(&doc).unwrap()).unwrap();
    mlport()
        .args(["import", "pytest-json"])
        .arg(&report)
        .args(["--framework", "torch", "--device", "cpu", "--group-by", "file", "--db"])
        .arg(&db)
        .assert()
        .success();
    let rep: Value =
        serde_json::from_str(&stdout(mlport().args(["report", "--format", "json", "--db"]).arg(&db))).unwrap();
    let t = target(&rep, "torch", "cpu");
    let mut f: Vec<(String, String)> = t["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), f["status"].as_str().unwrap().to_string()))
        .collect();
    f.sort();
    assert_eq!(f, [("a/test_x".into(), "partial".into()), ("b/test_x".into(), "complete_failure".into())]);
    // Labels must stay usable wherever a run id is.
    for (label, why) in [("007", "looks like a run id"), ("all", "keyword"), ("a..b", "`..`"), (" ", "is empty")] {
        mlport()
            .args(["import", "pytest-json"])
            .arg(&report)
            .args(["--framework", "torch", "--device", "cpu", "--label", label, "--db"])
            .arg(&db)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(why));
    }
}

#[test]
fn a_suite_past_its_timeout_is_stopped_with_everything_it_started() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("t.db");
    let suite = tmp.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    let marker = format!("mlport-pytest-orphan-{}", std::process::id());
    std::fs::write(
        suite.join("test_hang.py"),
        format!(
            "import subprocess, sys, time\n\ndef test_hang():\n    subprocess.Popen([sys.executable, '-c', \
             'import time; time.sleep(300)', '{marker}'])\n    time.sleep(300)\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    mlport()
        .arg("pytest")
        .arg(&suite)
        .args(["--framework", "numpy", "--device", "cpu", "--timeout", "3", "--python"])
        .arg(common::pytest_python())
        .arg("--db")
        .arg(&db)
        .assert()
        .success()
        .stderr(predicate::str::contains("did not finish within --timeout 3 s"));
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .filter(|c| c.contains(&marker))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
    // The test that was running is recorded as a timeout; the run is kept.
    assert_eq!(runs_in(&db), 1);
}

/// The commands that only read a store work on one nobody may write: a read-only folder and
/// file (a shared results directory, a read-only mount). Run as an unprivileged user (root
/// writes anywhere), through util-linux's `setpriv` when the tests run as root.
#[test]
fn a_store_in_a_read_only_folder_can_be_reported() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    let db = dir.join("paper.db");
    mlport().args(["import", "paper"]).arg(common::paper_dir()).arg("--db").arg(&db).assert().success();
    let expected = stdout(mlport().args(["report", "--run", "all", "--format", "json", "--db"]).arg(&db));
    for (path, mode) in [(tmp.path(), 0o755), (dir.as_path(), 0o555), (db.as_path(), 0o444)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let uid = String::from_utf8(std::process::Command::new("id").arg("-u").output().unwrap().stdout).unwrap();
    // A copy of the binary the other user can reach (the checkout may sit under /root).
    let bin = tmp.path().join("mlport");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mlport"), &bin).unwrap();
    // `program` as the unprivileged user (through setpriv when the tests run as root).
    let unprivileged = |program: &std::ffi::OsStr| {
        let mut c = if uid.trim() == "0" {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        c.env("NO_COLOR", "1").env("HOME", tmp.path());
        c
    };
    let as_user = |args: &[&str]| {
        let mut c = unprivileged(bin.as_os_str());
        c.args(args).arg("--db").arg(&db);
        c
    };
    // The setting is real: this user cannot write there.
    unprivileged("touch".as_ref()).arg(dir.join("probe")).assert().failure();
    let got = stdout(&mut as_user(&["report", "--run", "all", "--format", "json"]));
    assert_eq!(got, expected, "the same report as from a writable store");
    assert!(stdout(&mut as_user(&["runs"])).contains("paper/torch/tpu_vm/tpu"));
    // A copy taken while a writer had committed changes only to its write-ahead log: reading
    // the main file alone would silently lose them, so it is refused, naming the log.
    let live = tmp.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let writer = rusqlite::Connection::open(live.join("w.db")).unwrap();
    std::fs::copy(&db, live.join("w.db")).unwrap();
    drop(writer);
    let writer = rusqlite::Connection::open(live.join("w.db")).unwrap();
    writer.pragma_update(None, "journal_mode", "WAL").unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    writer.execute("UPDATE runs SET label = 'changed in the log' WHERE id = 1", []).unwrap();
    let frozen = tmp.path().join("frozen");
    std::fs::create_dir(&frozen).unwrap();
    for f in ["w.db", "w.db-wal"] {
        std::fs::copy(live.join(f), frozen.join(f)).unwrap();
    }
    drop(writer);
    std::fs::set_permissions(&frozen, std::fs::Permissions::from_mode(0o555)).unwrap();
    let frozen_db = frozen.join("w.db");
    unprivileged(bin.as_os_str())
        .args(["runs", "--db"])
        .arg(&frozen_db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("w.db-wal holds changes not yet in the store"));
    std::fs::set_permissions(&frozen, std::fs::Permissions::from_mode(0o755)).unwrap();
    let listing: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(listing, vec![std::ffi::OsString::from("paper.db")], "nothing was created beside it");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}
