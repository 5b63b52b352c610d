//! `mlport diff` between two real runs of a small catalogue with real NumPy and PyTorch: the
//! second run's catalogue (tests/fixtures/diff/after) makes one case fail, one answer wrong and
//! one function about 1000× slower (test doubles of a regression, named as such in the
//! catalogue). The diff lists exactly those changes and `--fail-on` exits 3; a run against itself
//! lists none and exits 0. Two campaigns of two machines each are compared machine by machine.

mod common;

use std::path::Path;

use common::{mlport, stdout};
use serde_json::Value;

/// A run of `catalogue` on cpu with NumPy and PyTorch, with `extra` options.
fn run(db: &Path, catalogue: &str, extra: &[&str]) {
    let args = ["--device", "cpu", "--framework", "numpy,torch", "--budget-ms", "30"];
    common::run_catalogue(db, catalogue, &[&args[..], extra].concat());
}

/// (kind, function) of the changes tests/fixtures/diff/after makes.
fn regressions() -> Vec<(String, String)> {
    [
        ("new_failure", "torch.cumsum"),
        ("new_wrong_result", "torch.sum"),
        ("agreement_changed", "torch.sum"),
        ("slowdown", "torch.abs"),
    ]
    .iter()
    .map(|(k, f)| (k.to_string(), f.to_string()))
    .collect()
}

fn diff_json(db: &Path, args: &[&str]) -> Value {
    let out = stdout(mlport().arg("diff").args(args).args(["--format", "json", "--db"]).arg(db));
    serde_json::from_str(&out).unwrap()
}

/// (kind, function) of every change.
fn changes(d: &Value) -> Vec<(String, String)> {
    d["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["kind"].as_str().unwrap().to_string(), c["function"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn diff_of_two_real_runs_lists_exactly_the_changes_and_fails_on_them() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("diff.db");
    run(&db, "diff/before", &[]);
    run(&db, "diff/after", &[]);

    // --threshold 20: the slowed function is ~1000× slower; the others' timings on this shared
    // machine move by less, and are not what this test checks (the unit tests check the 1.5×
    // default's interval rule on known samples).
    let d = diff_json(&db, &["1", "2", "--threshold", "20"]);
    assert_eq!((d["format"].as_str(), d["version"].as_u64()), (Some("mlport.diff"), Some(4)));
    assert_eq!(changes(&d), regressions(), "{d:#}");
    let c = &d["changes"];
    let cumsum = &c[0]["cases"][0];
    assert_eq!((cumsum["case_id"].as_str(), cumsum["dtype"].as_str()), (Some("vec"), Some("float32")));
    assert_eq!(cumsum["before"], "pass");
    assert!(cumsum["after"].as_str().unwrap().contains("IndexError: Dimension out of range"), "{cumsum:#}");
    assert_eq!((c[0]["status_a"].as_str(), c[0]["status_b"].as_str()), (Some("success"), Some("complete_failure")));
    // The answer made wrong by +0.5: its largest absolute error is 0.5 (printed as 5e-1).
    let wrong = c[2]["cases"][0]["after"].as_str().unwrap();
    assert!(wrong.starts_with("disagree:") && wrong.contains("max abs 5e-1"), "{wrong}");
    assert!(c[2]["cases"][0]["before"].as_str().unwrap().starts_with("agree, max"), "{:#}", c[2]);
    let t = &c[3]["timing"];
    assert!(t["ratio"]["lower"].as_f64().unwrap() > 20.0, "{t:#}");
    assert!(t["b_median_ns"].as_f64().unwrap() >= 2e6, "sleeps 2 ms per call: {t:#}");
    // Versions of both sides, as the runs recorded them.
    let torch = d["a"]["frameworks"]["torch"].as_str().unwrap();
    assert!(!torch.is_empty() && torch != "not importable");
    assert_eq!(d["b"]["frameworks"]["torch"].as_str(), Some(torch));
    assert_eq!(d["compared"]["cases"], 6, "numpy.sum, torch.sum, cumsum, abs and neg at two dtypes: {d:#}");

    // --fail-on: exit 3 when a change of those kinds is present, 0 when none is.
    let fail_on = |kinds: &str| {
        mlport()
            .args(["diff", "1", "2", "--threshold", "20", "--fail-on", kinds, "--db"])
            .arg(&db)
            .assert()
            .get_output()
            .status
            .code()
    };
    assert_eq!(fail_on("new_failure,new_wrong_result,slowdown"), Some(3));
    assert_eq!(fail_on("slowdown"), Some(3));
    assert_eq!(fail_on("fixed,speedup"), Some(0));

    // The other formats carry the same rows.
    let csv = stdout(mlport().args(["diff", "1", "2", "--threshold", "20", "--format", "csv", "--db"]).arg(&db));
    let kinds: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(kinds, ["new_failure", "new_wrong_result", "agreement_changed", "slowdown"], "{csv}");
    assert!(csv.starts_with("change,machine_a,machine_b,framework,"), "{csv}");
    let md = stdout(mlport().args(["diff", "1", "2", "--threshold", "20", "--format", "markdown", "--db"]).arg(&db));
    // Each row names its machine: both runs are on this host.
    let host = d["a"]["runs"][0]["machine"].as_str().unwrap();
    assert_eq!(d["changes"][0]["machine_a"], host);
    assert_eq!(d["changes"][0]["machine_b"], host);
    assert!(
        md.contains(&format!(
            "| new_failure | {host} | torch.cumsum | cpu | success → complete_failure | float32 \\[vec\\] #"
        )),
        "{md}"
    );

    // A run against itself: nothing changed, exit 0 even with every --fail-on kind.
    let same = diff_json(&db, &["2", "2"]);
    assert_eq!(changes(&same), Vec::<(String, String)>::new(), "{same:#}");
    assert_eq!(same["compared"]["cases"], 6);
    mlport()
        .args(["diff", "1", "1", "--fail-on", "new_failure,new_wrong_result,slowdown", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("No changes: 5 functions × targets, 6 cases"));

    // Bad input: an unknown run is an error naming it; a threshold of 1 a usage error.
    mlport()
        .args(["diff", "1", "9", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no run with id 9"));
    mlport().args(["diff", "1", "2", "--threshold", "1", "--db"]).arg(&db).assert().code(2);
    mlport().args(["diff", "1", "2", "--fail-on", "worse", "--db"]).arg(&db).assert().code(2);

    // A run stopped with Ctrl-C after its first result: the diff says that B is incomplete and
    // what its missing cases show as, in every format.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mlport"))
        .args(["run", "--device", "cpu", "--framework", "numpy,torch", "--budget-ms", "400", "--catalogue"])
        .arg(common::fixture("diff/before"))
        .arg("--db")
        .arg(&db)
        .arg("--python")
        .arg(common::python())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while mlport::store::Store::open_read_only(&db).unwrap().run(3).map_or(0, |r| r.results) == 0 {
        assert!(std::time::Instant::now() < deadline, "run 3 wrote no result within 300 s");
        assert!(child.try_wait().unwrap().is_none(), "run 3 ended before a result was seen");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let run3 = mlport::store::Store::open_read_only(&db).unwrap().run(3).unwrap();
    assert_eq!(run3.state.as_str(), "interrupted");
    assert!(run3.results < run3.cases_planned, "stopped mid-run: {run3:?}");
    let note = format!(
        "B's run 3 was interrupted: {} of its {} planned cases have a result",
        run3.results, run3.cases_planned
    );
    let d = diff_json(&db, &["1", "3", "--threshold", "1000"]);
    assert_eq!(d["b"]["runs"][0]["state"], "interrupted");
    assert_eq!(d["a"]["runs"][0]["state"], "finished");
    let notes: Vec<&str> = d["incomplete"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert_eq!(notes.len(), 1, "{d:#}");
    assert!(notes[0].starts_with(&note) && notes[0].contains("listed as removed"), "{notes:?}");
    // What run 3 had not run shows as removed, or, for a framework or target it had not reached,
    // counted as only on A: which of the two depends on where the interrupt fell.
    let lone_a = d["only_one_side"].as_array().unwrap().iter().any(|l| l["side"] == "A");
    assert!(changes(&d).iter().any(|(k, _)| k == "removed") || lone_a, "{d:#}");
    let table = stdout(mlport().args(["diff", "1", "3", "--threshold", "1000", "--db"]).arg(&db));
    assert!(table.contains(&note), "{table}");
    let md = stdout(mlport().args(["diff", "1", "3", "--threshold", "1000", "--format", "markdown", "--db"]).arg(&db));
    assert!(md.contains(&note), "{md}");
    let csv = mlport().args(["diff", "1", "3", "--format", "csv", "--db"]).arg(&db).assert().success();
    assert!(
        String::from_utf8_lossy(&csv.get_output().stderr).contains(&note),
        "CSV has no header: the note goes to stderr"
    );
    // Both sides complete: no note.
    assert_eq!(diff_json(&db, &["1", "2", "--threshold", "20"])["incomplete"], serde_json::json!([]));
}

#[test]
fn campaigns_are_compared_machine_by_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("campaigns.db");
    // Last night: box-1 and box-2 on the same catalogue. Tonight: box-1 regressed, box-2 did
    // not, and box-3 joined.
    for (catalogue, campaign, machine) in [
        ("diff/before", "night-1", "box-1"),
        ("diff/before", "night-1", "box-2"),
        ("diff/after", "night-2", "box-1"),
        ("diff/before", "night-2", "box-2"),
        ("diff/before", "night-2", "box-3"),
    ] {
        run(&db, catalogue, &["--campaign", campaign, "--machine", machine]);
    }

    let d = diff_json(&db, &["night-1", "night-2", "--threshold", "20"]);
    // Exactly the regressions, all on box-1: box-2's unchanged results are not merged with
    // box-1's (merged per target, box-1's failures would read as partial or be hidden).
    assert_eq!(changes(&d), regressions(), "{d:#}");
    for c in d["changes"].as_array().unwrap() {
        assert_eq!((c["machine_a"].as_str(), c["machine_b"].as_str()), (Some("box-1"), Some("box-1")), "{c:#}");
        // box-1's status, not a merge with box-2's passing case.
        if c["kind"] == "new_failure" {
            assert_eq!((c["status_a"].as_str(), c["status_b"].as_str()), (Some("success"), Some("complete_failure")));
        }
    }
    let pairs: Vec<(&str, &str, Vec<i64>, Vec<i64>)> = d["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let ids = |v: &Value| v.as_array().unwrap().iter().map(|i| i.as_i64().unwrap()).collect();
            (p["a"].as_str().unwrap(), p["b"].as_str().unwrap(), ids(&p["runs_a"]), ids(&p["runs_b"]))
        })
        .collect();
    assert_eq!(pairs, [("box-1", "box-1", vec![1], vec![3]), ("box-2", "box-2", vec![2], vec![4])]);
    assert_eq!(d["only_a"], serde_json::json!([]));
    assert_eq!(d["only_b"], serde_json::json!([{"machine": "box-3", "runs": [5]}]));
    assert_eq!(d["compared"]["cases"], 12, "6 cases on each of box-1 and box-2: {d:#}");

    let table = stdout(mlport().args(["diff", "night-1", "night-2", "--threshold", "20", "--db"]).arg(&db));
    assert!(table.contains("Machines, each with itself: box-1, box-2; only on B (not compared): box-3"), "{table}");
    assert!(table.contains("┆ box-1   ┆ torch.cumsum"), "{table}");
    let csv =
        stdout(mlport().args(["diff", "night-1", "night-2", "--threshold", "20", "--format", "csv", "--db"]).arg(&db));
    assert!(csv.lines().skip(1).all(|l| l.starts_with(&format!("{},box-1,box-1,", l.split(',').next().unwrap()))));
    mlport()
        .args(["diff", "night-1", "night-2", "--threshold", "20", "--fail-on", "new_failure", "--db"])
        .arg(&db)
        .assert()
        .code(3);
    // night-1 against itself, and against box-2 alone in tonight's campaign (box-2 is on both).
    let same = diff_json(&db, &["night-1", "night-1"]);
    assert_eq!(changes(&same), Vec::<(String, String)>::new());
    assert_eq!(same["compared"]["cases"], 12);
    mlport()
        .args(["diff", "night-1", "4", "--threshold", "20", "--fail-on", "new_failure,new_wrong_result", "--db"])
        .arg(&db)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("Machine: box-2; only on A (not compared): box-1"));
    // Two machines on A, none of them B's (run 5 is box-3 alone): nothing to compare, an error.
    mlport()
        .args(["diff", "night-1", "5", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("share no machine"));
}

/// A run against a campaign compares what they share (a whole run against one shard: the
/// shard's cases); two runs that share no case (other selections of a catalogue) are an error,
/// never an empty diff that passes `--fail-on`; a name that is neither a run nor a campaign is
/// named.
#[test]
fn a_run_against_a_shard_compares_their_common_cases_and_runs_sharing_none_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("fleet.db");
    let fleet = |extra: &[&str]| {
        common::run_catalogue(&db, "fleet", &[&["--device", "cpu", "--budget-ms", "5"][..], extra].concat())
    };
    fleet(&[]);
    fleet(&["--campaign", "half", "--shard", "0/2"]);
    fleet(&["--function", "numpy.sum", "--label", "sum"]);
    fleet(&["--function", "numpy.exp", "--label", "exp"]);
    let store = mlport::store::Store::open(&db).unwrap();
    let shard_cases = store.run(2).unwrap().cases_planned as usize;
    assert!(shard_cases > 0 && shard_cases < store.run(1).unwrap().cases_planned as usize);

    // What is compared is the point here, not timing: the two runs' 5 ms budgets on a shared
    // machine can differ 1.5× (a `speedup`), so only a 1000× change would count as one.
    let d = diff_json(&db, &["1", "half", "--fail-on", "new_failure", "--threshold", "1000"]);
    assert_eq!(d["compared"]["cases"].as_u64(), Some(shard_cases as u64), "{d:#}");
    assert!(changes(&d).iter().all(|(kind, _)| kind == "removed"), "{d:#}");

    let err = mlport().args(["diff", "sum", "exp", "--fail-on", "new_failure", "--db"]).arg(&db).assert().code(1);
    let err = String::from_utf8_lossy(&err.get_output().stderr).into_owned();
    assert!(err.contains("`sum` (2 results) and `exp` (1 result) share no case: nothing was compared"), "{err}");
    let err = mlport().args(["diff", "1", "nosuch", "--db"]).arg(&db).assert().code(1);
    let err = String::from_utf8_lossy(&err.get_output().stderr).into_owned();
    assert!(err.contains("`nosuch` names no run and no campaign"), "{err}");
    let err = mlport().args(["report", "--campaign", "nosuch", "--db"]).arg(&db).assert().code(1);
    let err = String::from_utf8_lossy(&err.get_output().stderr).into_owned();
    assert!(err.contains("no run belongs to campaign `nosuch` (campaigns in this store: half)"), "{err}");
}
