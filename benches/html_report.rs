//! The HTML report of a store with 50,000 results: `mlport report --format html -o FILE`
//! through the release binary, its wall time (target under 2 s) and the file's size (target
//! under 5 MB). The store's content is synthetic: a generated pytest-json-report of 50,000
//! tests over 500 test files (functions), a tenth failing with one of three messages, some
//! parametrized by dtype, imported with `mlport import pytest-json` (not timed). When Debian's
//! `chromium` is on PATH the page is also opened headless and its own load time printed.
//! Run with `cargo bench --bench html_report`.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

const TESTS: usize = 50_000;
const ROUNDS: usize = 5;

/// A pytest-json-report of `TESTS` tests over 500 files.
fn report() -> String {
    let messages = [
        r#"NotImplementedError: \"sum_cpu\" not implemented for 'UInt16'"#,
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "AssertionError: Tensor-likes are not close! Mismatched elements: 3 / 16 (18.8%)",
    ];
    let mut tests = String::new();
    for i in 0..TESTS {
        let nodeid =
            format!("tests/test_f{}.py::TestOps::test_op{}[float{}-{i}]", i % 500, i % 2_000, [16, 32, 64][i % 3]);
        if i > 0 {
            tests.push(',');
        }
        if i % 10 == 0 {
            write!(
                tests,
                r#"{{"nodeid": "{nodeid}", "outcome": "failed", "call": {{"duration": 0.01, "outcome": "failed", "crash": {{"path": "/x.py", "lineno": 3, "message": "{}"}}}}}}"#,
                messages[i % 3]
            )
            .unwrap();
        } else {
            write!(
                tests,
                r#"{{"nodeid": "{nodeid}", "outcome": "passed", "call": {{"duration": 0.01, "outcome": "passed"}}}}"#
            )
            .unwrap();
        }
    }
    format!(r#"{{"created": 1682974146.79, "duration": 100.0, "exitcode": 1, "root": "/x", "tests": [{tests}]}}"#)
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_mlport");
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let json = tmp.path().join("report.json");
    std::fs::write(&json, report()).expect("the report is written");
    let db = tmp.path().join("html.db");
    let out = Command::new(exe)
        .args(["import", "pytest-json"])
        .arg(&json)
        .args(["--framework", "torch", "--device", "cpu", "--format", "json", "--db"])
        .arg(&db)
        .output()
        .expect("mlport runs");
    assert!(out.status.success(), "import failed: {}", String::from_utf8_lossy(&out.stderr));
    let page = tmp.path().join("report.html");
    let mut secs = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let out = Command::new(exe)
            .args(["report", "--format", "html", "-o"])
            .arg(&page)
            .arg("--db")
            .arg(&db)
            .output()
            .expect("mlport runs");
        secs.push(start.elapsed().as_secs_f64());
        assert!(out.status.success(), "report failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    secs.sort_by(f64::total_cmp);
    let bytes = std::fs::metadata(&page).expect("the page was written").len();
    let mb = bytes as f64 / 1e6;
    let html = std::fs::read_to_string(&page).unwrap();
    let rows = html.matches("<tr class=\"case\"").count();
    println!(
        "report --format html of {TESTS} results ({rows} failing cases listed): median {:.3} s over {ROUNDS} rounds \
         (min {:.3} s, max {:.3} s; target < 2 s: {}); file {bytes} bytes = {mb:.2} MB (target < 5 MB: {})",
        secs[ROUNDS / 2],
        secs[0],
        secs[ROUNDS - 1],
        if secs[ROUNDS / 2] < 2.0 { "met" } else { "NOT met" },
        if mb < 5.0 { "met" } else { "NOT met" }
    );
    let chromium = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("chromium")).find(|p| p.is_file()));
    if let Some(browser) = chromium {
        let start = Instant::now();
        let out = Command::new(browser)
            .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--virtual-time-budget=5000"])
            .arg(format!("--user-data-dir={}", tmp.path().join("profile").display()))
            .arg("--dump-dom")
            .arg(format!("file://{}", page.display()))
            .output()
            .expect("chromium runs");
        let wall = start.elapsed().as_secs_f64();
        let dom = String::from_utf8_lossy(&out.stdout);
        let load = dom
            .find("data-load-ms=\"")
            .map(|at| &dom[at + 14..])
            .and_then(|rest| rest[..rest.find('"')?].parse::<u64>().ok());
        println!(
            "chromium --headless: the page's load event at {} ms after navigation start; whole browser run {wall:.2} s",
            load.map_or("?".into(), |ms| ms.to_string())
        );
    }
}
