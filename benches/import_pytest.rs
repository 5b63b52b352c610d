//! The wall time of `mlport import pytest-json` of a generated report with 100,000 tests (a
//! fifth of them failing with an `ExceptionGroup` of two members, some parametrized by dtype,
//! some rerun), end to end through the release binary into a new SQLite store.
//! Run with `cargo bench --bench import_pytest`; prints the figure (target: under 5 s).

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

const TESTS: usize = 100_000;
const ROUNDS: usize = 3;

/// A pytest-json-report of `TESTS` tests over 100 files.
fn report() -> String {
    let mut tests = String::new();
    for i in 0..TESTS {
        let nodeid =
            format!("tests/test_f{}.py::TestOps::test_op{}[float{}-{i}]", i % 100, i % 500, [16, 32, 64][i % 3]);
        if i > 0 {
            tests.push(',');
        }
        if i % 5 == 0 {
            let longrepr = "  | ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)\\n  +-+---- 1 ----\\n    | NotImplementedError: \\\"sum_cpu\\\" not implemented for 'UInt16'\\n    +---- 2 ----\\n    | AssertionError: assert 3 == 4\\n    +------------";
            write!(
                tests,
                r#"{{"nodeid": "{nodeid}", "outcome": "failed", "call": {{"duration": 0.01, "outcome": "failed", "crash": {{"path": "/x.py", "lineno": 3, "message": "ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)"}}, "longrepr": "{longrepr}"}}}}"#
            )
            .unwrap();
        } else if i % 97 == 0 {
            write!(tests, r#"{{"nodeid": "{nodeid}", "outcome": "rerun", "call": {{"duration": 0.01, "outcome": "failed", "crash": {{"message": "AssertionError: assert 1 == 2"}}}}}},"#).unwrap();
            write!(
                tests,
                r#"{{"nodeid": "{nodeid}", "outcome": "passed", "call": {{"duration": 0.01, "outcome": "passed"}}}}"#
            )
            .unwrap();
        } else {
            write!(tests, r#"{{"nodeid": "{nodeid}", "outcome": "passed", "setup": {{"duration": 0.0, "outcome": "passed"}}, "call": {{"duration": 0.01, "outcome": "passed"}}}}"#).unwrap();
        }
    }
    format!(r#"{{"created": 1682974146.79, "duration": 100.0, "exitcode": 1, "root": "/x", "tests": [{tests}]}}"#)
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_mlport");
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let path = tmp.path().join("report.json");
    std::fs::write(&path, report()).expect("the report is written");
    let mut secs = Vec::new();
    for round in 0..ROUNDS {
        let db = tmp.path().join(format!("pytest-{round}.db"));
        let start = Instant::now();
        let out = Command::new(exe)
            .args(["import", "pytest-json"])
            .arg(&path)
            .args(["--framework", "numpy", "--device", "cpu", "--format", "json", "--db"])
            .arg(&db)
            .output()
            .expect("mlport runs");
        secs.push(start.elapsed().as_secs_f64());
        assert!(out.status.success(), "import failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    secs.sort_by(f64::total_cmp);
    println!(
        "import pytest-json of {TESTS} tests: median {:.3} s over {ROUNDS} rounds (min {:.3} s, max {:.3} s; target < 5 s)",
        secs[ROUNDS / 2],
        secs[0],
        secs[ROUNDS - 1]
    );
}
