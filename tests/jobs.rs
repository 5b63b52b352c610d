//! `mlport run --jobs` and `--quick` with real workers: two pinned workers and a quick run give
//! the serial run's outcomes; the pinning, thread counts and steady-state endings are stored.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{fixture, mlport, python};
use mlport::model::SteadyStop;
use mlport::store::Store;

/// Outcome and reason per (case key, target) of the store's latest run.
fn outcomes(db: &Path) -> BTreeMap<String, String> {
    let store = Store::open(db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    store
        .results(run.id)
        .unwrap()
        .iter()
        .map(|r| {
            let why = r.result.reason.map(|x| x.as_str()).unwrap_or("-");
            (format!("{} {}", r.case.key, r.result.device), format!("{} {why}", r.result.outcome.as_str()))
        })
        .collect()
}

/// Outcome and output files (`.npy` paths) per float64 reference of the store's latest run.
fn references(db: &Path) -> BTreeMap<String, (String, Vec<String>)> {
    let store = Store::open(db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    store
        .references(run.id)
        .unwrap()
        .into_iter()
        .map(|r| {
            let files = r.outputs.as_array().into_iter().flatten().filter_map(|o| o["path"].as_str().map(String::from));
            (r.key, (format!("{:?}", r.outcome), files.collect()))
        })
        .collect()
}

/// `mlport run` of the small fixture (NumPy and torch) with `args`; its stderr.
fn run_small(db: &Path, args: &[&str]) -> String {
    let out = mlport()
        .args(["run", "--framework", "numpy,torch", "--device", "cpu"])
        .args(args)
        .arg("--catalogue")
        .arg(fixture("small"))
        .arg("--db")
        .arg(db)
        .arg("--python")
        .arg(python())
        .assert()
        .success();
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

#[test]
fn two_pinned_workers_and_a_quick_run_give_the_serial_runs_outcomes() {
    let tmp = tempfile::tempdir().unwrap();
    let serial_db = tmp.path().join("serial.db");
    run_small(&serial_db, &["--jobs", "1"]);
    let serial = outcomes(&serial_db);
    assert!(serial.len() >= 8, "{serial:?}");

    // Two workers at once, one core and one thread each.
    let par_db = tmp.path().join("parallel.db");
    let err = run_small(&par_db, &["--jobs", "2", "--threads", "1"]);
    assert!(err.contains("2 workers at once, pinned to cores"), "{err}");
    assert_eq!(outcomes(&par_db), serial);
    // The float64 references, computed on the two lanes, are the serial run's: same outcomes
    // and, output by output, the same bytes.
    let (serial_refs, par_refs) = (references(&serial_db), references(&par_db));
    assert!(serial_refs.len() >= 4, "{serial_refs:?}");
    assert_eq!(serial_refs.keys().collect::<Vec<_>>(), par_refs.keys().collect::<Vec<_>>());
    for (key, (outcome, files)) in &serial_refs {
        let (par_outcome, par_files) = &par_refs[key];
        assert_eq!(outcome, par_outcome, "{key}");
        assert_eq!(files.len(), par_files.len(), "{key}");
        for (a, b) in files.iter().zip(par_files) {
            assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{key}: {a} vs {b}");
        }
    }
    let store = Store::open(&par_db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    let switches = run.info.switches.clone().unwrap();
    assert_eq!((switches.jobs, switches.threads, switches.quick), (Some(2), Some(1), false));
    // Each framework's worker reported the one core it was pinned to, and one thread.
    let allowed = mlport::runner::schedule::available_cores();
    for (fw, info) in &run.info.frameworks {
        let cpus: Vec<usize> = serde_json::from_value(info.settings["cpus"].clone()).unwrap();
        assert!(cpus.len() == 1 && allowed[..2].contains(&cpus[0]), "{fw}: {cpus:?}");
        assert_eq!(info.threads, Some(1), "{fw}");
    }
    // Every timed case says what ended its steady state.
    let results = store.results(run.id).unwrap();
    let timed: Vec<_> = results.iter().filter(|r| !r.result.samples_ns.is_empty()).collect();
    assert!(!timed.is_empty());
    for r in &timed {
        assert!(
            matches!(r.result.steady_stop, Some(SteadyStop::Precision | SteadyStop::Budget | SteadyStop::MaxBlocks)),
            "{}",
            r.case.key
        );
    }
    assert!(results.iter().filter(|r| r.result.samples_ns.is_empty()).all(|r| r.result.steady_stop.is_none()));

    // --quick: the same outcomes, no samples, and the report says timings are absent.
    let quick_db = tmp.path().join("quick.db");
    let err = run_small(&quick_db, &["--quick", "--jobs", "1"]);
    assert!(err.contains("timings are absent"), "{err}");
    assert_eq!(outcomes(&quick_db), serial);
    let store = Store::open(&quick_db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    assert!(run.info.switches.as_ref().unwrap().quick);
    for r in store.results(run.id).unwrap() {
        assert!(r.result.samples_ns.is_empty() && r.result.steady_stop.is_none(), "{}", r.case.key);
        if r.result.outcome.as_str() == "pass" {
            assert!(r.result.first_call_ns.is_some(), "{}", r.case.key);
        }
    }
    let out = mlport().args(["report", "--db"]).arg(&quick_db).assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("timings are absent"));
}

#[test]
fn more_cores_than_the_process_has_is_refused_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("none.db");
    let n = mlport::runner::schedule::available_cores().len() + 1;
    let out = mlport()
        .args(["run", "--jobs", &n.to_string(), "--db"])
        .arg(&db)
        .arg("--catalogue")
        .arg(fixture("small"))
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains(&format!("--jobs {n}")) && err.contains(&format!("needs {n} cores")), "{err}");
    assert!(!db.exists(), "nothing is written");
}
