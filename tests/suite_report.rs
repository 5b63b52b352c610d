//! `mlport report --suite A,B` and `report --slowdown A..B` across frameworks: the same
//! suite's pytest-json-reports imported for two frameworks, tests matched by id.

mod common;

use common::{mlport, stdout};

/// A pytest-json-report of the same three tests with the given outcomes, call durations and
/// parametrization suffix (`jax`, `torch`).
fn report(dir: &std::path::Path, name: &str, fw: &str, outcomes: [(&str, f64); 3]) -> std::path::PathBuf {
    let test = |id: &str, (outcome, d): (&str, f64)| {
        let mut call = serde_json::json!({"duration": d, "outcome": outcome});
        if outcome == "failed" {
            call["crash"] =
                serde_json::json!({"message": "NotImplementedError: \"sum_cpu\" not implemented for 'UInt16'"});
        }
        serde_json::json!({"nodeid": id, "outcome": outcome, "call": call})
    };
    let doc = serde_json::json!({
        "created": 1.0, "duration": 1.0, "exitcode": 1, "root": "/r", "environment": {},
        "tests": [
            test(&format!("ops/math_test.py::MathTest::test_logsumexp[float16-{fw}]"), outcomes[0]),
            test(&format!("ops/math_test.py::MathTest::test_sum_{fw}"), outcomes[1]),
            test("ops/math_test.py::MathTest::test_erf", outcomes[2]),
        ]
    });
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

#[test]
fn one_suite_on_two_frameworks_side_by_side_and_its_slowdown() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let a = report(tmp.path(), "jax.json", "jax", [("passed", 0.5), ("passed", 1.0), ("passed", 2.0)]);
    let b = report(tmp.path(), "torch.json", "torch", [("passed", 1.0), ("failed", 1.0), ("skipped", 1.0)]);
    for (path, fw) in [(&a, "jax"), (&b, "torch")] {
        mlport()
            .args(["import", "pytest-json"])
            .arg(path)
            .args(["--framework", fw, "--device", "cpu", "--label", &format!("suite-{fw}"), "--db"])
            .arg(&db)
            .assert()
            .success();
    }
    let table = stdout(mlport().args(["report", "--suite", "suite-jax,suite-torch", "--db"]).arg(&db));
    insta::assert_snapshot!("suite_table", table);
    let json =
        stdout(mlport().args(["report", "--suite", "suite-jax,suite-torch", "--format", "json", "--db"]).arg(&db));
    insta::assert_snapshot!("suite_json", json);
    let md =
        stdout(mlport().args(["report", "--suite", "suite-jax,suite-torch", "--format", "markdown", "--db"]).arg(&db));
    insta::assert_snapshot!("suite_markdown", md);
    // Test durations compared across the frameworks: logsumexp is the only test that passed on
    // both (0.5 s on jax, 1.0 s on torch): a 2x slowdown.
    let csv = stdout(
        mlport()
            .args(["report", "--slowdown", "jax/cpu@suite-jax..torch/cpu@suite-torch", "--measure", "test"])
            .args(["--format", "csv", "--db"])
            .arg(&db),
    );
    assert!(
        csv.lines()
            .any(|l| l.contains("logsumexp") && l.contains(",2,") || l.contains("logsumexp") && l.contains(",2.0")),
        "{csv}"
    );
    mlport()
        .args(["report", "--suite", "suite-jax", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("give two or more"));
}
