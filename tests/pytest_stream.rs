//! `mlport pytest` on small suites written for the purpose (tests/fixtures/pytest-stream/),
//! run by real pytest with mlport's streaming plugin: grouping by metadata, test and regex;
//! an ExceptionGroup of two different errors; Hypothesis' health check and deadline flake;
//! `os.abort()` mid-suite then `--resume`; `--timeout` firing; a collection error in one file;
//! a device that does not exist; pytest-rerunfailures' reruns; `--fail-on`.

mod common;

use std::path::Path;

use common::{fixture, mlport};
use predicates::prelude::*;

/// (case key, device, outcome, reason, message) of one result.
type Row = (String, String, String, Option<String>, Option<String>);

/// Every result of run `run`, in order.
fn results(db: &Path, run: i64) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT c.key, r.device, r.outcome, r.reason, r.message FROM results r JOIN cases c ON c.id = r.case_id \
             WHERE r.run_id = ?1 ORDER BY c.ordinal, r.device",
        )
        .unwrap();
    st.query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn functions(db: &Path, run: i64) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT c.key, f.name FROM cases c JOIN functions f ON f.id = c.function_id WHERE c.run_id = ?1 \
             ORDER BY c.ordinal",
        )
        .unwrap();
    st.query_map([run], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

fn state(db: &Path, run: i64) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT state FROM runs WHERE id = ?1", [run], |r| r.get(0)).unwrap()
}

/// `mlport pytest SUITE --framework numpy --device cpu` with the suite interpreter.
fn pytest(suite: &str, db: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut c = mlport();
    c.arg("pytest")
        .arg(fixture(&format!("pytest-stream/{suite}")))
        .args(["--framework", "numpy", "--device", "cpu", "--python"])
        .arg(common::suite_python())
        .arg("--db")
        .arg(db)
        .args(extra);
    c
}

fn short(rows: &[Row]) -> Vec<(&str, &str, Option<&str>)> {
    rows.iter().map(|(k, _, o, r, _)| (k.rsplit("::").next().unwrap(), o.as_str(), r.as_deref())).collect()
}

#[test]
fn tests_are_grouped_by_metadata_by_test_and_by_regex() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("g.db");
    pytest("grouping", &db, &[]).assert().success();
    let names: Vec<String> = functions(&db, 1).into_iter().map(|(_, f)| f).collect();
    assert_eq!(
        names,
        ["numpy.sin", "numpy.sin", "numpy.cos", "exp_grad"],
        "auto: metadata (json_metadata, record_property), else test"
    );
    pytest("grouping", &db, &["--group-by", "test"]).assert().success();
    let names: Vec<String> = functions(&db, 2).into_iter().map(|(_, f)| f).collect();
    assert_eq!(names, ["sin_values", "sin_values", "cos_grad", "exp_grad"]);
    pytest("grouping", &db, &["--group-by", r"regex:test_(\w+?)_"]).assert().success();
    let names: Vec<String> = functions(&db, 3).into_iter().map(|(_, f)| f).collect();
    assert_eq!(names, ["sin", "sin", "cos", "exp"]);
    let rows = results(&db, 3);
    assert_eq!(rows[3].2, "fail");
    assert_eq!(rows[3].3.as_deref(), Some("wrong_result"), "assert 1.0 == 2.0 compares values: {rows:?}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let dtypes: Vec<String> = conn
        .prepare("SELECT dtype FROM cases WHERE run_id = 3 ORDER BY ordinal")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(dtypes, ["float32", "float16", "", ""], "the dtype column from the parametrize id");
}

#[test]
fn an_exception_group_and_hypothesis_complaints_get_real_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let out = pytest("reasons", &db, &["--format", "json"]).assert().success().get_output().clone();
    let rows = results(&db, 1);
    let got = short(&rows);
    assert_eq!(
        got,
        [
            ("test_group_of_two", "fail", Some("dtype_unsupported")),
            ("test_health_check", "fail", Some("harness_error")),
            ("test_deadline_flake", "flaky", None),
        ],
        "{rows:#?}"
    );
    let rep: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rep["flaky"][0]["case_key"], rows[2].0, "listed apart: {rep:#}");
    assert!(rep["harness_errors"].as_array().unwrap().iter().any(|e| e["case_key"] == rows[1].0));
}

#[test]
fn a_test_that_aborts_the_interpreter_is_a_crash_and_resume_runs_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    pytest("crash", &db, &[]).assert().success().stderr(
        predicate::str::contains("pytest died (SIGABRT (6)) while").and(predicate::str::contains("test_2_abort")),
    );
    let rows = results(&db, 1);
    assert_eq!(short(&rows), [("test_1_before", "pass", None), ("test_2_abort", "crash", Some("crash"))]);
    assert_eq!(rows[1].4.as_deref(), Some("pytest killed by SIGABRT (6) while this test ran"));
    assert_eq!(state(&db, 1), "incomplete");
    pytest("crash", &db, &["--resume", "1"])
        .assert()
        .success()
        .stderr(predicate::str::contains("resuming run 1: 2 tests already have results"));
    let rows = results(&db, 1);
    assert_eq!(
        short(&rows),
        [
            ("test_1_before", "pass", None),
            ("test_2_abort", "crash", Some("crash")),
            ("test_3_after", "pass", None),
            ("test_4_last", "pass", None)
        ]
    );
    assert_eq!(state(&db, 1), "finished");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let runs: i64 = conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(runs, 1, "resumed into the same run");
}

#[test]
fn a_collection_error_is_recorded_against_its_file_and_the_other_files_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("e.db");
    pytest("collect", &db, &[]).assert().success().stderr(predicate::str::contains("could not be collected"));
    let rows = results(&db, 1);
    // Node ids are relative to pytest's rootdir: compared by their file and test.
    let got: Vec<(&str, &str, Option<&str>)> =
        rows.iter().map(|(k, _, o, r, _)| (k.rsplit('/').next().unwrap(), o.as_str(), r.as_deref())).collect();
    assert_eq!(
        got,
        [
            ("test_broken.py::<collection>", "fail", Some("harness_error")),
            ("test_fine.py::test_one", "pass", None),
            ("test_fine.py::test_two", "pass", None),
        ]
    );
    assert!(rows[0].4.as_deref().unwrap().contains("No module named 'mlport_no_such_module'"), "{rows:?}");
}

#[test]
fn reruns_make_a_flaky_test_and_a_repeated_failure_stays_a_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("f.db");
    pytest("rerun", &db, &["--fail-on", "failure"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("--fail-on: failure: 1 counted failing tests"));
    let rows = results(&db, 1);
    assert_eq!(
        short(&rows),
        [("test_once_then_passes", "flaky", None), ("test_always_fails", "fail", Some("wrong_result"))]
    );
    assert!(
        rows[0].4.as_deref().unwrap().starts_with("flaky: passed after 1 failed attempt(s); first: assert 1 == 2"),
        "{rows:?}"
    );
}

#[test]
fn the_timeout_records_the_running_test_and_keeps_the_finished_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    std::fs::write(suite.join("test_slow.py"), "import time\n\ndef test_a():\n    pass\n\ndef test_b_hangs():\n    time.sleep(300)\n\ndef test_c():\n    pass\n").unwrap();
    let db = tmp.path().join("t.db");
    let started = std::time::Instant::now();
    mlport()
        .arg("pytest")
        .arg(&suite)
        .args(["--framework", "numpy", "--device", "cpu", "--timeout", "8", "--python"])
        .arg(common::suite_python())
        .arg("--db")
        .arg(&db)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("did not finish within --timeout 8 s")
                .and(predicate::str::contains("test_b_hangs ran (recorded as timeout)")),
        );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(short(&results(&db, 1)), [("test_a", "pass", None), ("test_b_hangs", "timeout", Some("timeout"))]);
    assert_eq!(state(&db, 1), "incomplete");
}

#[test]
fn a_device_the_framework_does_not_see_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("d.db");
    mlport()
        .arg("pytest")
        .arg(fixture("pytest-stream/grouping"))
        .args(["--framework", "numpy", "--device", "cuda:0", "--python"])
        .arg(common::suite_python())
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--device cuda:0: numpy does not see this device here (it sees cpu)"));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let runs: i64 = conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(runs, 0);
}
