//! Silent dtype changes with the real frameworks (issue 15, point 6): an output whose dtype
//! differs from its float64 reference's (mapped to the case's precision) or from the case's
//! declared `out_dtype` is `wrong_result` with reason `dtype_changed`, under `exact` and
//! `shape_dtype` alike, and every report shows it apart from value disagreement. The dtypes
//! asserted are read back from the stored .npy files by NumPy, not taken from mlport.

mod common;

use std::path::Path;

use common::mlport;
use mlport::model::{Outcome, Reason, ResultRow};
use mlport::store::Store;

/// Runs the catalogue; returns what `mlport run` said on stderr.
fn run(db: &Path, extra: &[&str]) -> String {
    let out = common::run_catalogue(db, "truth/dtype", &[&["--device", "cpu"], extra].concat());
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

/// The dtype NumPy reads from a stored output file.
fn stored_dtype(r: &ResultRow) -> String {
    let path = r.result.outputs[0]["path"].as_str().unwrap();
    let code = format!("import numpy as np; print(np.load({path:?}).dtype)");
    let out = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn report(db: &Path, args: &[&str]) -> String {
    let out = mlport().arg("report").args(args).arg("--db").arg(db).assert().success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

#[test]
fn a_dtype_that_differs_between_frameworks_is_dtype_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("dtype.db");
    let said = run(&db, &[]);
    let store = Store::open(&db).unwrap();
    let run_id = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run_id).unwrap();

    // The end of the run counts dtype changes as every report does, apart from wrong values
    // (it once said "N wrong_result" where `report` said "wrong result 0 … dtype_changed N").
    let changed_rows = rows.iter().filter(|r| r.result.reason == Some(Reason::DtypeChanged)).count();
    let wrong_rows = rows
        .iter()
        .filter(|r| r.result.outcome == Outcome::WrongResult && r.result.reason != Some(Reason::DtypeChanged))
        .count();
    let end = said.lines().find(|l| l.contains(" ended after ")).unwrap_or_else(|| panic!("no end line: {said}"));
    assert!(changed_rows > 0, "the catalogue changes dtypes");
    assert!(end.contains(&format!("{changed_rows} dtype_changed")), "{end}");
    match wrong_rows {
        0 => assert!(!end.contains("wrong_result"), "{end}"),
        n => assert!(end.contains(&format!("{n} wrong_result")), "{end}"),
    }

    let of = |name: &str| rows.iter().find(|r| r.function.name == name).unwrap_or_else(|| panic!("no {name}"));
    let verdict = |name: &str| (of(name).result.outcome, of(name).result.reason);
    let changed = (Outcome::WrongResult, Some(Reason::DtypeChanged));

    // What NumPy and JAX (64-bit mode off, as shipped) return, read from their files.
    assert_eq!(stored_dtype(of("numpy.argmax")), "int64");
    assert_eq!(stored_dtype(of("jax.numpy.argmax")), "int32");
    assert_eq!(stored_dtype(of("torch.argmax")), "int64");
    assert_eq!(stored_dtype(of("tf.argsort")), "int32");
    assert_eq!(stored_dtype(of("jax.numpy.greater")), "bool");

    // The values agree (argmax is exact), the dtype does not: a finding of its own.
    assert_eq!(verdict("jax.numpy.argmax"), changed, "{:?}", of("jax.numpy.argmax").result.message);
    let message = of("jax.numpy.argmax").result.message.clone().unwrap();
    assert!(
        message.starts_with("dtype changed against numpy.argmax in float64 (output 0): dtype int32, expected int64"),
        "{message}"
    );
    // `shape_dtype` checks the dtype too.
    assert_eq!(verdict("jax.numpy.argsort"), changed);
    assert_eq!(verdict("tf.argsort"), changed);
    // Declared without any reference: checked as the worker answers.
    assert_eq!(verdict("jax.numpy.argmin"), changed);
    assert_eq!(
        of("jax.numpy.argmin").result.message.as_deref(),
        Some("dtype changed (output 0): int32, the case declares int64 (out_dtype)")
    );
    // A Python int is of the declared int32's kind: no change, and the worker says what it was.
    assert_eq!(verdict("jax.numpy.ndim"), (Outcome::Pass, None), "{:?}", of("jax.numpy.ndim").result.message);
    assert_eq!(of("jax.numpy.ndim").result.outputs[0]["python"], "int");
    // Those that return NumPy's dtypes pass: torch everywhere, TensorFlow's int64 argmax, bool.
    for name in ["torch.argmax", "torch.argsort", "torch.gt", "tf.math.argmax", "jax.numpy.greater", "tf.math.greater"]
    {
        assert_eq!(verdict(name), (Outcome::Pass, None), "{name}: {:?}", of(name).result.message);
    }

    // The comparison rows say which output changed, under which rule.
    let comparisons = store.comparisons(run_id).unwrap();
    let argsort = comparisons.iter().find(|c| c.case_key.starts_with("jax/jax.numpy.argsort/")).unwrap();
    assert_eq!(
        (argsort.rule.as_str(), argsort.verdict.as_str(), argsort.dtype_changed),
        ("shape_dtype", "disagree", true)
    );
    let argmax = comparisons.iter().find(|c| c.case_key.starts_with("jax/jax.numpy.argmax/")).unwrap();
    assert_eq!((argmax.mismatched, argmax.dtype_changed), (0, true), "values agree, the dtype changed");

    // Every report keeps it apart from wrong values: its own column, on the reference device
    // listed but not counted (JAX's x64 default named), counted in the strict view.
    let summary: serde_json::Value = serde_json::from_str(&report(&db, &["--format", "json"])).unwrap();
    let jax = summary["targets"].as_array().unwrap().iter().find(|t| t["framework"] == "jax").unwrap();
    assert_eq!((&jax["cases"]["dtype_changed"], &jax["cases"]["wrong_result"]), (&3.into(), &0.into()), "{jax:#}");
    assert!(jax["reasons"].get("dtype_changed").is_none(), "not an error: {jax:#}");
    let table = report(&db, &[]);
    let jax_row = table.lines().find(|l| l.starts_with("│ jax ")).unwrap();
    assert!(jax_row.contains("3 (x64 off)"), "{table}");
    let strict: serde_json::Value = serde_json::from_str(&report(&db, &["--format", "json", "--strict"])).unwrap();
    let strict_jax = strict["targets"].as_array().unwrap().iter().find(|t| t["framework"] == "jax").unwrap();
    let failing = |t: &serde_json::Value| {
        t["partial"]["count"].as_u64().unwrap() + t["complete_failure"]["count"].as_u64().unwrap()
    };
    assert_eq!(failing(strict_jax), failing(jax) + 3, "argmax, argsort, argmin fail when strict");
    let functions = report(&db, &["--functions"]);
    for name in ["jax.numpy.argmax", "jax.numpy.argsort", "jax.numpy.argmin"] {
        let line = functions.lines().find(|l| l.contains(name)).unwrap_or_else(|| panic!("{name}:\n{functions}"));
        assert!(line.contains("dtype_changed (everywhere)"), "{line}");
    }
    let frameworks = report(&db, &["--frameworks"]);
    let argmax_line = frameworks.lines().find(|l| l.contains("argmax")).unwrap();
    assert!(argmax_line.contains("✗ DTYPE int32, expected int64"), "{frameworks}");
    assert!(
        frameworks.contains("jax: 1 agree with the float64 reference, 0 wrong results, 2 dtype changes"),
        "{frameworks}"
    );
    let json: serde_json::Value = serde_json::from_str(&report(&db, &["--frameworks", "--format", "json"])).unwrap();
    assert_eq!((json["format"].as_str(), json["version"].as_u64()), (Some("mlport.frameworks"), Some(2)));
    assert_eq!(json["tally"]["tensorflow"]["dtype_changed"], 1);
    // repro checks the dtype: the values of argmax agree, the script still exits 1.
    for name in ["jax.numpy.argmax", "jax.numpy.argmin"] {
        let id = of(name).id.to_string();
        let dir = tmp.path().join(format!("repro-{id}"));
        mlport().args(["repro", &id, "--db"]).arg(&db).arg("--out").arg(&dir).assert().success();
        let out = std::process::Command::new(common::python())
            .arg(dir.join(format!("repro_{id}.py")))
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{name}: {text}");
        assert!(text.contains("output 0: dtype int32, expected int64 (dtype changed)"), "{name}: {text}");
    }
    let dtypes = report(&db, &["--dtypes"]);
    let line = dtypes.lines().find(|l| l.contains("jax.numpy.argmax")).unwrap();
    assert!(line.contains('Δ') && !line.contains('W'), "{dtypes}");
}

#[test]
fn with_jax_x64_the_same_jax_cases_keep_numpys_dtypes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x64.db");
    run(&db, &["--jax-x64", "--framework", "numpy,jax"]);
    let store = Store::open(&db).unwrap();
    let rows = store.results(store.latest_run().unwrap().unwrap().id).unwrap();
    for name in ["jax.numpy.argmax", "jax.numpy.argsort", "jax.numpy.argmin"] {
        let r = rows.iter().find(|r| r.function.name == name).unwrap();
        assert_eq!(stored_dtype(r), "int64", "{name}");
        assert_eq!((r.result.outcome, r.result.reason), (Outcome::Pass, None), "{name}: {:?}", r.result.message);
    }
}
