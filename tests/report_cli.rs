//! `mlport report <KIND>` and the older flags that are its aliases (`--slowdown A..B`,
//! `--modes`, `--run all`, ...): on a real store (the paper's raw data imported, and one
//! pytest-json-report suite imported for two frameworks), every alias prints the same stdout
//! and stderr, and ends with the same exit code, as its subcommand, in every format; an HTML
//! page is the same file. The help lists the kinds and the aliases.

mod common;

use std::path::Path;

use common::{mlport, paper_dir};

/// The paper's GPU → TPU slowdown: a bootstrap over its functions, seconds in a debug build,
/// so compared in one format; the suite's is compared in every format.
const GPU_TPU: &str = "cuda:0@paper/torch/t4_vm/gpu..tpu:0@paper/torch/tpu_vm/tpu";
const SUITE: &str = "jax/cpu@suite-jax..torch/cpu@suite-torch";
const TPU: &str = "paper/torch/tpu_vm/tpu";
const FORMATS: [&str; 4] = ["table", "markdown", "json", "csv"];

/// A pytest-json-report of three tests for `fw`, the ids carrying the framework's name.
fn suite_report(dir: &Path, fw: &str, outcomes: [&str; 3]) -> std::path::PathBuf {
    let test = |id: String, outcome: &str| serde_json::json!({"nodeid": id, "outcome": outcome, "call": {"duration": 0.5, "outcome": outcome}});
    let doc = serde_json::json!({
        "created": 1.0, "duration": 1.0, "exitcode": 1, "root": "/r", "environment": {},
        "tests": [
            test(format!("ops/math_test.py::MathTest::test_logsumexp[float16-{fw}]"), outcomes[0]),
            test(format!("ops/math_test.py::MathTest::test_sum_{fw}"), outcomes[1]),
            test("ops/math_test.py::MathTest::test_erf".into(), outcomes[2]),
        ]
    });
    let path = dir.join(format!("{fw}.json"));
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// The store every comparison reads: the paper's 18 runs, then the suite's two runs.
fn store(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("reports.db");
    mlport().args(["import", "paper"]).arg(paper_dir()).arg("--db").arg(&db).assert().success();
    for (fw, outcomes) in [("jax", ["passed", "passed", "failed"]), ("torch", ["passed", "skipped", "passed"])] {
        mlport()
            .args(["import", "pytest-json"])
            .arg(suite_report(dir, fw, outcomes))
            .args(["--framework", fw, "--device", "cpu", "--label", &format!("suite-{fw}"), "--db"])
            .arg(&db)
            .assert()
            .success();
    }
    db
}

/// What one `mlport report ...` printed: stdout, stderr and the exit code.
fn report(db: &Path, args: &[String]) -> (String, String, Option<i32>) {
    let out = mlport().arg("report").args(args).arg("--db").arg(db).output().unwrap();
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap(), out.status.code())
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Asserts that the alias line and the subcommand line print the same; returns the output.
fn same(db: &Path, alias: &[&str], kind: &[&str]) -> (String, String, Option<i32>) {
    let (a, k) = (report(db, &strings(alias)), report(db, &strings(kind)));
    assert_eq!(a, k, "`report {}` and `report {}` differ", alias.join(" "), kind.join(" "));
    a
}

#[test]
fn every_alias_prints_what_its_kind_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let db = store(tmp.path());
    let mut compared = 0;
    let mut succeeded = 0;
    let mut check = |alias: &[&str], kind: &[&str]| {
        let (stdout, _, code) = same(&db, alias, kind);
        compared += 1;
        if code == Some(0) {
            assert!(!stdout.is_empty(), "`report {}` printed nothing", kind.join(" "));
            succeeded += 1;
        }
    };
    for f in FORMATS {
        let fmt = ["--format", f];
        let with = |a: &[&'static str]| -> Vec<&str> { a.iter().copied().chain(fmt).collect() };
        check(&with(&[]), &with(&["portability"]));
        check(&with(&["--run", TPU, "--functions"]), &with(&["portability", "--run", TPU, "--functions"]));
        check(&with(&["--run", "3", "--all-failures"]), &with(&["portability", "--run", "3", "--all-failures"]));
        check(
            &with(&["--run", "3", "--reference", "cpu"]),
            &with(&["portability", "--run", "3", "--reference", "cpu"]),
        );
        check(&with(&["--run", "all"]), &with(&["overview"]));
        check(&with(&["--run", "all", "--all-failures"]), &with(&["overview", "--all-failures"]));
        check(&with(&["--slowdown", SUITE, "--measure", "test"]), &with(&["slowdown", SUITE, "--measure", "test"]));
        check(
            &with(&["--slowdown", SUITE, "--rule", "paper", "--measure", "first-call", "--threshold", "2"]),
            &with(&["slowdown", SUITE, "--rule", "paper", "--measure", "first-call", "--threshold", "2"]),
        );
        check(
            &with(&["--slowdown", SUITE, "--slowdown", "cpu@suite-jax..cpu@suite-torch", "--measure", "test"]),
            &with(&["slowdown", SUITE, "cpu@suite-jax..cpu@suite-torch", "--measure", "test"]),
        );
        check(&with(&["--modes", "--run", TPU]), &with(&["modes", "--run", TPU]));
        check(&with(&["--modes", "--run", "all"]), &with(&["modes"]));
        check(&with(&["--routes", "--run", TPU]), &with(&["routes", "--run", TPU]));
        check(&with(&["--workloads"]), &with(&["workloads"]));
        check(&with(&["--dtypes", "--run", TPU]), &with(&["dtypes", "--run", TPU]));
        check(
            &with(&["--dtypes", "--run", TPU, "--only", "torch.sum"]),
            &with(&["dtypes", "--run", TPU, "--only", "torch.sum"]),
        );
        check(&with(&["--frameworks", "--run", TPU]), &with(&["frameworks", "--run", TPU]));
        check(&with(&["--paper-compare"]), &with(&["paper-compare"]));
        check(&with(&["--paper-compare", "--run", TPU]), &with(&["paper-compare", "--run", TPU]));
        check(&with(&["--campaign", "none"]), &with(&["campaign", "none"]));
        check(&with(&["--suite", "suite-jax,suite-torch"]), &with(&["suite", "suite-jax", "suite-torch"]));
        check(&with(&["--suite", "suite-jax"]), &with(&["suite", "suite-jax"]));
    }
    // The paper's figures (a bootstrap over 18 runs: slow in a debug build, so one format here;
    // scripts/report_parity.sh renders every format).
    check(&["--paper", "--stats-seed", "3"], &["paper", "--stats-seed", "3"]);
    check(
        &["--slowdown", GPU_TPU, "--threshold-for", "torch.add=2"],
        &["slowdown", GPU_TPU, "--threshold-for", "torch.add=2"],
    );
    // `--run all` with a view of one run is refused, no longer silently the overview.
    for view in ["--dtypes", "--frameworks"] {
        let (stdout, stderr, code) = report(&db, &strings(&[view, "--run", "all"]));
        assert_eq!((stdout.as_str(), code), ("", Some(1)), "{stderr}");
        assert!(stderr.contains("--run all is the overview of every run") && stderr.contains(view), "{stderr}");
    }
    check(&["--paper-compare", "--routes"], &["paper-compare"]);
    // The refusals stay the same.
    check(
        &["--slowdown", SUITE, "--slowdown", SUITE, "--format", "csv"],
        &["slowdown", SUITE, SUITE, "--format", "csv"],
    );
    check(&["--routes", "--format", "html", "-o", "x.html"], &["routes", "--format", "html", "-o", "x.html"]);
    check(&["--run", "all", "--format", "html", "-o", "x.html"], &["overview", "--format", "html"]);
    check(&["-o", "x.txt"], &["portability", "-o", "x.txt"]);
    assert!(compared >= 4 * 20 + 8, "{compared}");
    assert!(succeeded >= 4 * 15, "most comparisons are of reports, not of errors: {succeeded} of {compared}");
    an_alias_writes_the_same_page_as_its_kind(tmp.path(), &db);
}

/// HTML: the alias and the kind write the same page.
fn an_alias_writes_the_same_page_as_its_kind(tmp: &Path, db: &Path) {
    let page = tmp.join("page.html");
    let p = page.to_str().unwrap();
    let html = ["--format", "html", "-o", p];
    let write = |args: Vec<&str>| {
        let _ = std::fs::remove_file(&page);
        let out = report(db, &strings(&args));
        (out, std::fs::read_to_string(&page).unwrap_or_default())
    };
    let pairs: [(Vec<&str>, Vec<&str>); 5] = [
        (vec!["--run", TPU], vec!["portability", "--run", TPU]),
        (vec!["--run", TPU, "--dtypes", "--all-failures"], vec!["portability", "--run", TPU, "--all-failures"]),
        (vec!["--run", TPU, "--frameworks"], vec!["frameworks", "--run", TPU]),
        (vec!["--slowdown", SUITE, "--measure", "test"], vec!["slowdown", SUITE, "--measure", "test"]),
        (vec!["--paper"], vec!["paper"]),
    ];
    for (alias, kind) in pairs {
        let a = write(alias.iter().copied().chain(html).collect());
        let k = write(kind.iter().copied().chain(html).collect());
        assert_eq!(a.0.2, Some(0), "{alias:?}: {}", a.0.1);
        assert!(a.1.starts_with("<!DOCTYPE html>"), "{alias:?}");
        assert_eq!(a, k, "{alias:?} and {kind:?} write different pages");
    }
}

#[test]
fn the_help_lists_every_kind_and_its_alias() {
    let out = mlport().args(["report", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for kind in [
        "portability",
        "slowdown",
        "modes",
        "routes",
        "workloads",
        "dtypes",
        "frameworks",
        "paper",
        "paper-compare",
        "campaign",
        "suite",
        "overview",
        "ops",
    ] {
        assert!(help.contains(&format!("\n  {kind} ")), "{kind} missing from:\n{help}");
    }
    for alias in
        ["--slowdown A..B        = mlport report slowdown A..B", "--run all              = mlport report overview"]
    {
        assert!(help.contains(alias), "{alias} missing from:\n{help}");
    }
    // A kind takes only its own options, and a kind with the alias flags is a usage error.
    let out = mlport().args(["report", "slowdown", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--measure") && !help.contains("--paper-compare") && !help.contains("--only"), "{help}");
    mlport().args(["report", "--modes", "dtypes"]).assert().code(2);
    mlport().args(["report", "modes", "--only", "x"]).assert().code(2);
}
