//! Numeric agreement with the real frameworks: a float16 cumulative sum that NumPy gets wrong
//! (it accumulates in float16) and PyTorch gets right (it accumulates in float32), both judged
//! against the float64 reference on the same inputs; SVD compared up to sign; a deliberately
//! wrong result (a test double, named as one in tests/fixtures/agreement/torch.toml) caught as
//! `wrong_result`; the dtype matrix, the cross-framework table and `mlport repro` on them.

mod common;

use std::path::Path;

use common::mlport;
use mlport::model::Outcome;
use mlport::store::Store;
use serde_json::Value;

fn run_fixture(db: &Path) {
    common::run_catalogue(db, "agreement", &["--device", "cpu"]);
}

/// Max |a - e| and the count beyond |a - e| <= atol + rtol |e|, computed by NumPy from the
/// stored .npy files: an independent check of the Rust comparison.
fn numpy_check(actual: &str, expected: &str, rtol: f64, atol: f64) -> (f64, u64) {
    let code = format!(
        "import numpy as np; a = np.load({actual:?}).astype(np.float64); e = np.load({expected:?}).astype(np.float64); \
         print(float(np.abs(a - e).max()), int((~np.isclose(a, e, rtol={rtol}, atol={atol})).sum()))"
    );
    let out = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut it = text.split_whitespace();
    (it.next().unwrap().parse().unwrap(), it.next().unwrap().parse().unwrap())
}

fn path_of(outputs: &Value, index: u64) -> String {
    outputs.as_array().unwrap().iter().find(|d| d["index"] == index).unwrap()["path"].as_str().unwrap().to_string()
}

#[test]
fn disagreements_are_found_classified_and_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("agree.db");
    run_fixture(&db);

    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run).unwrap();
    let outcome = |name: &str, dtype: &str| {
        rows.iter()
            .find(|r| r.function.name == name && mlport::model::name_or_empty(r.case.dtype) == dtype)
            .unwrap_or_else(|| panic!("no {name} at {dtype}"))
    };
    // The real disagreement: NumPy's float16 cumsum drifts, PyTorch's does not.
    assert_eq!(outcome("numpy.cumsum", "float16").result.outcome, Outcome::WrongResult);
    assert_eq!(outcome("torch.cumsum", "float16").result.outcome, Outcome::Pass);
    assert_eq!(outcome("numpy.cumsum", "float32").result.outcome, Outcome::Pass);
    assert_eq!(outcome("torch.cumsum", "float32").result.outcome, Outcome::Pass);
    // The test double's wrong element is caught.
    let double = outcome("torch.Tensor.cumsum", "float32");
    assert_eq!(double.result.outcome, Outcome::WrongResult);
    assert!(
        double.result.message.as_deref().unwrap().contains("numpy.cumsum in float64"),
        "{:?}",
        double.result.message
    );
    // SVD up to sign agrees on all three outputs.
    let svd = outcome("torch.linalg.svd", "float32");
    assert_eq!(svd.result.outcome, Outcome::Pass);

    let comparisons = store.comparisons(run).unwrap();
    let of = |key: &str| comparisons.iter().filter(|c| c.case_key == key).collect::<Vec<_>>();
    let svd_cmp = of(&svd.case.key);
    assert_eq!(svd_cmp.len(), 3, "{svd_cmp:#?}");
    assert!(
        svd_cmp.iter().all(|c| c.verdict.as_str() == "agree" && c.against.to_string() == "float64"),
        "{svd_cmp:#?}"
    );
    assert_eq!(
        svd_cmp.iter().map(|c| c.rule.as_str()).collect::<Vec<_>>(),
        ["up_to_sign", "allclose", "up_to_sign_rows"]
    );

    // The stored figures equal NumPy's own computation on the same files.
    let refs = store.references(run).unwrap();
    let reference = |dtype: &str| refs.iter().find(|r| r.op == "cumsum" && r.dtype.as_str() == dtype).unwrap();
    for (name, dtype, wrong) in [
        ("numpy.cumsum", "float16", true),
        ("torch.cumsum", "float16", false),
        ("torch.Tensor.cumsum", "float32", true),
    ] {
        let row = outcome(name, dtype);
        let c = of(&row.case.key).into_iter().find(|c| c.against.to_string() == "float64").unwrap().clone();
        let (rtol, atol) = if dtype == "float16" { (1e-3, 1e-5) } else { (1.3e-6, 1e-5) };
        assert_eq!((c.rtol, c.atol), (rtol, atol), "torch.testing.assert_close's defaults for {dtype}");
        let (max_abs, mismatched) =
            numpy_check(&path_of(&row.result.outputs, 0), &path_of(&reference(dtype).outputs, 0), rtol, atol);
        assert_eq!(c.mismatched, mismatched, "{name} {dtype}");
        assert!((c.max_abs.unwrap() - max_abs).abs() <= 1e-12 * max_abs.max(1.0), "{name}: {c:?} vs {max_abs}");
        assert_eq!(c.verdict.as_str() == "disagree", wrong, "{name} {dtype}: {}", c.summary);
        assert_eq!(c.elements, 8 * 512);
    }
    let double_cmp = of(&double.case.key)[0].clone();
    assert_eq!(double_cmp.mismatched, 1, "exactly the one element the test double changed");
    assert!((double_cmp.max_abs.unwrap() - 0.5).abs() < 1e-3, "{double_cmp:?}");
    assert_eq!(double_cmp.detail["worst_index"], serde_json::json!([3, 100]));

    // The dtype matrix and the cross-framework table, from the store.
    let dtypes = mlport().args(["report", "--dtypes", "--db"]).arg(&db).assert().success().get_output().stdout.clone();
    let dtypes = String::from_utf8(dtypes).unwrap();
    let line = |text: &str, start: &str| {
        text.lines().find(|l| l.contains(start)).unwrap_or_else(|| panic!("no `{start}` in\n{text}")).to_string()
    };
    let np_row = line(&dtypes, "│ numpy.cumsum ");
    assert!(np_row.contains('W') && np_row.contains('✓'), "{np_row}");
    assert!(!line(&dtypes, "│ torch.cumsum ").contains('W'), "{dtypes}");
    assert!(
        dtypes.contains(&format!(
            "#{} numpy.cumsum on cpu at float16 [rows]: wrong_result",
            outcome("numpy.cumsum", "float16").id
        )),
        "{dtypes}"
    );

    let json = mlport()
        .args(["report", "--frameworks", "--format", "json", "--db"])
        .arg(&db)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let t: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!((t["format"].as_str(), t["version"].as_u64()), (Some("mlport.frameworks"), Some(2)));
    assert_eq!(t["shared_ops"], 2);
    let row = t["rows"].as_array().unwrap().iter().find(|r| r["op"] == "cumsum" && r["dtype"] == "float16").unwrap();
    assert_eq!(row["reference"], "numpy.cumsum in float64");
    assert_eq!(row["frameworks"]["numpy"][0]["outcome"], "wrong_result");
    assert_eq!(row["frameworks"]["torch"][0]["outcome"], "pass");
    assert!(row["frameworks"]["torch"][0]["median_ns"].as_f64().is_some_and(|ns| ns > 0.0));

    // A script that reproduces the disagreement without mlport.
    let id = outcome("numpy.cumsum", "float16").id;
    let out = tmp.path().join("repro");
    mlport().args(["repro", &id.to_string(), "--out"]).arg(&out).arg("--db").arg(&db).assert().success();
    let script = out.join(format!("repro_{id}.py"));
    assert!(out.join("input0.npy").is_file() && script.is_file());
    let ran = std::process::Command::new(common::python()).arg(&script).output().unwrap();
    let said = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(ran.status.code(), Some(1), "{said}\n{}", String::from_utf8_lossy(&ran.stderr));
    assert!(said.contains("output 0 DISAGREES with numpy.cumsum in float64"), "{said}");
    // A passing result has nothing to reproduce.
    mlport()
        .args(["repro", &svd.id.to_string(), "--db"])
        .arg(&db)
        .assert()
        .failure()
        .stderr(predicates::str::contains("nothing to reproduce"));

    // Bad input: clear errors, nothing written.
    for (args, says) in [
        (vec!["repro", "abc"], "`abc` is not a result id"),
        (vec!["repro", "99999"], "no result #99999"),
        (vec!["report", "--only", "cumsum"], "--only applies to --dtypes and --frameworks"),
        (vec!["report", "--dtypes", "--only", "nosuch"], "has no such function or op"),
    ] {
        mlport().args(&args).arg("--db").arg(&db).assert().failure().stderr(predicates::str::contains(says));
    }
    mlport()
        .args(["repro", &id.to_string(), "--out"])
        .arg(&out)
        .arg("--db")
        .arg(&db)
        .assert()
        .failure()
        .stderr(predicates::str::contains("is not empty"));
    let only = mlport().args(["report", "--dtypes", "--only", "svd", "--db"]).arg(&db).assert().success();
    let only = String::from_utf8(only.get_output().stdout.clone()).unwrap();
    assert!(only.contains("torch.linalg.svd") && !only.contains("cumsum"), "{only}");

    // Inputs were made once: PyTorch's and NumPy's aligned cases read the same file.
    let folder = db.parent().unwrap().join(".mlport").join("agree.db-run-1").join("inputs");
    let made = std::fs::read_dir(&folder).unwrap().count();
    assert_eq!(made, 3, "cumsum at float16 and float32, svd at float32: one input file each");
}
