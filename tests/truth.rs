//! "A pass means checked and right", with the real frameworks (issue 15): JAX runs with its
//! shipped defaults (`jax_enable_x64` off) unless `--jax-x64`, and an int64 value beyond
//! 2**31 is then caught; every verdict below is computed by the frameworks themselves and
//! checked against values worked out here independently.

mod common;

use std::path::Path;

use common::mlport;
use mlport::model::{Framework, Outcome};
use mlport::store::Store;

fn run(db: &Path, fixture: &str, extra: &[&str]) -> String {
    let out = common::run_catalogue(db, fixture, &[&["--device", "cpu"], extra].concat());
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

#[test]
fn jax_int64_beyond_int32_is_caught_with_jax_defaults_and_passes_with_jax_x64() {
    let tmp = tempfile::tempdir().unwrap();

    // JAX's shipped default: int64 inputs become int32, 3_000_000_000 wraps to -1_294_967_296.
    let db = tmp.path().join("default.db");
    let report = run(&db, "truth/x64", &[]);
    assert!(report.contains("(jax_enable_x64 off)"), "the report header says how JAX ran:\n{report}");
    let store = Store::open(&db).unwrap();
    let summary = store.latest_run().unwrap().unwrap();
    assert!(!summary.info.jax_x64);
    let jax = &summary.info.frameworks[&Framework::Jax];
    assert_eq!(jax.settings.get("jax_enable_x64"), Some(&serde_json::json!(false)), "{jax:?}");
    let rows = store.results(summary.id).unwrap();
    let add = rows.iter().find(|r| r.function.name == "jax.numpy.add").unwrap();
    assert_eq!(add.result.outcome, Outcome::WrongResult, "{:?}", add.result.message);
    assert_eq!(add.result.reason, Some(mlport::model::Reason::DtypeChanged), "int32 where int64 was asked");
    let out = add.result.outputs.as_array().unwrap();
    assert_eq!(out[0]["dtype"], "int32", "JAX returned int32 for an int64 case: {out:?}");
    // The stored output holds the wrapped value: 3e9 + 1 - 2**32.
    let path = out[0]["path"].as_str().unwrap();
    let code = format!("import numpy as np; print(np.load({path:?}).tolist())");
    let printed = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&printed.stdout).trim(), format!("[{}, 7]", 3_000_000_001i64 - (1i64 << 32)));

    // The float64 self-reference of jax.numpy.cumsum was computed in float64 (inside
    // jax.enable_x64(True)) by a JAX worker of a run whose JAX has 64-bit types off: 1e8 + 1 - 1e8
    // is 1 in float64 and 0 in float32. The case itself ran at float32, as asked, and lost it.
    let refs = store.references(summary.id).unwrap();
    let cumsum_ref = refs.iter().find(|r| r.function == "jax.numpy.cumsum").expect("a self-reference is planned");
    assert_eq!(cumsum_ref.framework, Framework::Jax);
    assert_eq!(cumsum_ref.outcome, Some(Outcome::Pass), "{:?}", cumsum_ref.message);
    let out = cumsum_ref.outputs.as_array().unwrap();
    assert_eq!(out[0]["dtype"], "float64", "{out:?}");
    let path = out[0]["path"].as_str().unwrap();
    let code = format!("import numpy as np; print(np.load({path:?}).tolist())");
    let printed = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&printed.stdout).trim(), "[100000000.0, 100000001.0, 1.0]");
    let cumsum = rows.iter().find(|r| r.function.name == "jax.numpy.cumsum").unwrap();
    assert_eq!(cumsum.result.outputs.as_array().unwrap()[0]["dtype"], "float32");
    assert_eq!(cumsum.result.outcome, Outcome::WrongResult, "the float32 answer's last element is 0, not 1");

    // `repro` sets JAX up as the run had it, and still sees the wrong answer (exit 1).
    let dir = tmp.path().join("repro");
    mlport().args(["repro", &add.id.to_string(), "--db"]).arg(&db).arg("--out").arg(&dir).assert().success();
    let script = dir.join(format!("repro_{}.py", add.id));
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("jax.config.update(\"jax_enable_x64\", False)"), "{text}");
    let status = std::process::Command::new(common::python()).arg(&script).current_dir(&dir).status().unwrap();
    assert_eq!(status.code(), Some(1), "the reproduction still disagrees");

    // With --jax-x64 the same case passes, and the run says so.
    let db = tmp.path().join("x64.db");
    let report = run(&db, "truth/x64", &["--jax-x64"]);
    assert!(report.contains("(jax_enable_x64 on)"), "{report}");
    let store = Store::open(&db).unwrap();
    let summary = store.latest_run().unwrap().unwrap();
    assert!(summary.info.jax_x64);
    let rows = store.results(summary.id).unwrap();
    let add = rows.iter().find(|r| r.function.name == "jax.numpy.add").unwrap();
    assert_eq!(add.result.outcome, Outcome::Pass, "{:?}", add.result.message);
    assert!(!store.comparisons(summary.id).unwrap().is_empty(), "the pass was compared, not unchecked");
}

/// Counts elements beyond |a - e| <= atol + rtol |e| between two stored .npy files, by NumPy.
fn numpy_mismatches(actual: &str, expected: &str, rtol: f64, atol: f64) -> u64 {
    let code = format!(
        "import numpy as np; a = np.load({actual:?}).astype(np.float64); e = np.load({expected:?}).astype(np.float64); \
         print(int((~np.isclose(a, e, rtol={rtol}, atol={atol})).sum()))"
    );
    let out = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

fn output_path(outputs: &serde_json::Value) -> String {
    outputs.as_array().unwrap()[0]["path"].as_str().unwrap().to_string()
}

#[test]
fn eager_wrong_and_compiled_right_are_attributed_by_the_float64_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("modes.db");
    run(&db, "truth/modes", &["--framework", "torch", "--modes", "eager,compiled"]);
    let store = Store::open(&db).unwrap();
    let run_id = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run_id).unwrap();
    let on = |target: &str| rows.iter().find(|r| r.result.device.as_str() == target).unwrap();
    let (eager, compiled) = (on("cpu"), on("cpu/compiled"));
    let reference = store.references(run_id).unwrap().into_iter().next().unwrap();
    let reference_file = output_path(&reference.outputs);

    // Independently, by NumPy at float16's tolerance: eager is off, compiled is not, and the
    // two differ from each other.
    let (e, c) = (output_path(&eager.result.outputs), output_path(&compiled.result.outputs));
    assert!(numpy_mismatches(&e, &reference_file, 1e-3, 1e-5) > 0, "eager float16 prod is off");
    assert_eq!(numpy_mismatches(&c, &reference_file, 1e-3, 1e-5), 0, "compiled float16 prod is right");
    assert!(numpy_mismatches(&c, &e, 1e-3, 1e-5) > 0, "the two targets differ");

    // mlport blames eager, not the compiler.
    assert_eq!(eager.result.outcome, Outcome::WrongResult, "{:?}", eager.result.message);
    assert!(eager.result.message.as_deref().unwrap().starts_with("disagrees with numpy.prod in float64"));
    assert_eq!(compiled.result.outcome, Outcome::Pass, "{:?}", compiled.result.message);
    let comparisons = store.comparisons(run_id).unwrap();
    let of_compiled: Vec<(String, &str)> = comparisons
        .iter()
        .filter(|c| c.device.as_str() == "cpu/compiled")
        .map(|c| (c.against.to_string(), c.verdict.as_str()))
        .collect();
    assert!(of_compiled.contains(&("float64".into(), "agree")), "{of_compiled:?}");
    assert!(of_compiled.contains(&("device:cpu".into(), "disagree")), "kept for reports: {of_compiled:?}");

    // The dtype matrix shows W for eager only.
    let out = mlport().args(["report", "--dtypes", "--db"]).arg(&db).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let line = |target: &str| {
        text.lines().find(|l| l.contains("torch.prod") && l.contains(&format!(" {target} "))).unwrap_or("").to_string()
    };
    assert!(line("cpu").contains('W'), "{text}");
    assert!(!line("cpu/compiled").contains('W'), "{text}");

    // repro of the wrong result expects the float64 answer (a copy of the reference's file).
    let dir = tmp.path().join("repro");
    mlport().args(["repro", &eager.id.to_string(), "--db"]).arg(&db).arg("--out").arg(&dir).assert().success();
    let expected: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("expected"))
        .collect();
    assert_eq!(expected, ["expected0_float64.npy"], "only the float64 reference is expected");
    assert_eq!(std::fs::read(dir.join(&expected[0])).unwrap(), std::fs::read(&reference_file).unwrap());
    let status = std::process::Command::new(common::python())
        .arg(dir.join(format!("repro_{}.py", eager.id)))
        .current_dir(&dir)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "eager's answer still disagrees with float64");
}

/// Runs `code` (Python, with `numpy as np` and `scipy.special` imported) and returns what it
/// printed, trimmed.
fn python(code: &str) -> String {
    let code = format!("import numpy as np, scipy.special\n{code}");
    let out = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn every_passing_case_is_checked_by_some_reference_or_counted_unchecked() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("refs.db");
    let out = common::run_catalogue(&db, "truth/refs", &["--device", "cpu"]);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let store = Store::open(&db).unwrap();
    let run_id = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run_id).unwrap();
    let result = |function: &str, dtype: &str| {
        rows.iter()
            .find(|r| r.function.name == function && r.case.dtype.is_some_and(|d| d.as_str() == dtype))
            .unwrap_or_else(|| panic!("no {function} at {dtype}"))
    };
    let comparisons = store.comparisons(run_id).unwrap();
    let against = |r: &mlport::model::ResultRow| -> Vec<(String, String)> {
        comparisons
            .iter()
            .filter(|c| c.case_key == r.case.key && c.device == r.result.device)
            .map(|c| (c.reference.clone(), c.verdict.as_str().to_string()))
            .collect()
    };
    let references = store.references(run_id).unwrap();
    let reference = |key: &str| references.iter().find(|r| r.key == key).unwrap_or_else(|| panic!("no {key}"));

    // A reference_only NumPy function is never a NumPy test; a skipped NumPy case is recorded
    // as skipped, and both still supply their op's float64 reference.
    assert!(rows.iter().all(|r| r.function.name != "numpy.cumsum"), "reference_only: no NumPy verdicts");
    let numpy_sum = result("numpy.sum", "float32");
    assert_eq!(numpy_sum.result.outcome, Outcome::Skip);
    for key in ["reference/cumsum/axis1/float16", "reference/sum/all/float32"] {
        assert_eq!(reference(key).outcome, Some(Outcome::Pass), "{key}: {:?}", reference(key).message);
        assert_eq!(reference(key).framework, Framework::Numpy);
    }
    let cumsum = result("torch.cumsum", "float16");
    assert_eq!(against(cumsum), [("numpy.cumsum in float64".to_string(), "agree".to_string())]);
    let sum = result("torch.sum", "float32");
    assert_eq!(sum.result.outcome, Outcome::Pass);
    assert_eq!(against(sum), [("numpy.sum in float64".to_string(), "agree".to_string())]);

    // torch.prod has no op: its float64 self-reference (torch itself, float64, same inputs)
    // catches eager float16's precision loss and passes float32.
    let prod16 = result("torch.prod", "float16");
    let own = reference(&format!("reference/case/{}", prod16.case.key));
    assert_eq!((own.framework, own.function.as_str()), (Framework::Torch, "torch.prod"));
    assert_eq!(own.outputs[0]["dtype"], "float64", "computed in float64");
    assert_eq!(prod16.result.outcome, Outcome::WrongResult, "{:?}", prod16.result.message);
    assert!(
        prod16.result.message.as_deref().unwrap().starts_with("disagrees with torch.prod in float64 (self-reference)"),
        "{:?}",
        prod16.result.message
    );
    // Independently: the product of the float16 inputs, by NumPy in float64, and the stored
    // float16 answer differ beyond float16's tolerance on at least one row.
    let (actual, expected) = (output_path(&prod16.result.outputs), output_path(&own.outputs));
    assert!(numpy_mismatches(&actual, &expected, 1e-3, 1e-5) > 0);
    let in16 = format!("{}/inputs", Path::new(&expected).parent().unwrap().parent().unwrap().display());
    let by_numpy = python(&format!(
        "import glob\ne = np.load({expected:?})\nfound = [f for f in glob.glob({in16:?} + '/*.in0.npy') \
         if np.load(f).dtype == np.float16 and np.load(f).shape == (16, 8)]\n\
         print(len(found), np.abs(np.prod(np.load(found[0]).astype(np.float64), axis=1) - e).max())"
    ));
    assert_eq!(by_numpy.split(' ').next(), Some("1"), "{by_numpy}");
    assert!(
        by_numpy.split(' ').nth(1).unwrap().parse::<f64>().unwrap() < 1e-12,
        "the self-reference is right: {by_numpy}"
    );
    let prod32 = result("torch.prod", "float32");
    assert_eq!(prod32.result.outcome, Outcome::Pass, "{:?}", prod32.result.message);
    assert_eq!(against(prod32)[0], ("torch.prod in float64 (self-reference)".into(), "agree".into()));

    // A case's own `reference` judges it: scipy.special.expit agrees with torch.sigmoid,
    // scipy.special.softmax (with its own keyword) with torch.softmax, numpy.exp disagrees
    // with torch.special.expit.
    let sigmoid = result("torch.sigmoid", "float32");
    assert_eq!(against(sigmoid), [("scipy.special.expit in float64".to_string(), "agree".to_string())]);
    let sig_ref = reference(&format!("reference/case/{}", sigmoid.case.key));
    let (a, e) = (output_path(&sigmoid.result.outputs), output_path(&sig_ref.outputs));
    assert_eq!(python(&format!("print(np.load({e:?}).dtype)")), "float64");
    assert_eq!(numpy_mismatches(&a, &e, 1.3e-6, 1e-5), 0);
    let softmax = result("torch.softmax", "float32");
    assert_eq!(against(softmax), [("scipy.special.softmax in float64".to_string(), "agree".to_string())]);
    let sm = output_path(&reference(&format!("reference/case/{}", softmax.case.key)).outputs);
    assert_eq!(python(&format!("print(np.allclose(np.load({sm:?}).sum(axis=1), 1.0))")), "True", "axis=1 reached it");
    let expit = result("torch.special.expit", "float32");
    assert_eq!(expit.result.outcome, Outcome::WrongResult, "{:?}", expit.result.message);
    assert!(expit.result.message.as_deref().unwrap().contains("numpy.exp in float64"));

    // Nothing can check torch.add at int32 (no op, no reference, no wider dtype): it passes
    // with no comparison, and the run says how many passed unchecked.
    let add = result("torch.add", "int32");
    assert_eq!(add.result.outcome, Outcome::Pass);
    assert!(against(add).is_empty());
    assert!(stderr.contains("; 1 ran unchecked: passed"), "the end-of-run summary counts it:\n{stderr}");
}
