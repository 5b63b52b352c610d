//! The frameworks' own test data with the real frameworks (issue 36, docs/suites.md): PyTorch's
//! OpInfos run as cases on `cpu` and `cpu/compiled` and judged against the same sample in
//! float64; the four levels of `report ops` checked against what a few lines of Python outside
//! mlport say (declared dtypes, a call that works); a random operator compared on shape and
//! dtype; a wrong result rerun alone and reproduced by `mlport repro`'s script; a campaign's
//! shards of the suite and a killed run resumed; JAX's harnesses; and the refusals (an unknown
//! suite, an interpreter without expecttest) that write nothing.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{mlport, suites_python};
use mlport::compare::Rule;
use mlport::model::{Against, Outcome, ResultRow};
use mlport::store::Store;
use predicates::str::contains;
use serde_json::Value;

/// The OpInfos of the main run: sin (a NumPy `ref`), cumsum and conv2d (bool and int32 work
/// undeclared on the CPU), linalg.det (float16 undeclared, its one sample a 0×0 matrix),
/// nn.functional.dropout (random), addbmm (a float32 answer beyond torch.testing's float32
/// tolerance of the float64 reference at the run's seed).
const OPS: &str = "sin,cumsum,nn.functional.conv2d,linalg.det,nn.functional.dropout,addbmm";

fn run_suite(db: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    mlport().arg("run").args(args).arg("--db").arg(db).arg("--python").arg(suites_python()).assert()
}

/// The main run, made once: eager and compiled on the CPU, three dtypes, one sample each.
fn store() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DB.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("s.db");
        run_suite(
            &db,
            &[
                "--suite",
                "opinfo",
                "--op",
                OPS,
                "--samples",
                "1",
                "--dtype",
                "float16,float32,int32,bool",
                "--device",
                "cpu",
                "--modes",
                "eager,compiled",
                "--quick",
            ],
        )
        .success()
        .stderr(contains("the opinfo suite of torch"));
        (tmp, db)
    })
    .1
}

fn rows() -> Vec<ResultRow> {
    common::latest_results(store())
}

/// `report ops --format json` of the main run.
fn ops_json() -> Value {
    let out = mlport().args(["report", "ops", "--format", "json", "--db"]).arg(store()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ops_row<'a>(rep: &'a Value, entry: &str, dtype: &str, target: &str) -> &'a Value {
    rep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["entry"] == entry && r["dtype"] == dtype && r["target"] == target)
        .unwrap_or_else(|| panic!("no row {entry} {dtype} {target}"))
}

/// Runs `code` with the suites' interpreter (outside mlport) and parses the JSON it prints.
fn python_json(code: &str) -> Value {
    let out = Command::new(suites_python()).args(["-c", code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(out.stdout.trim_ascii())
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_dtype_that_works_but_is_undeclared_is_listed_as_such() {
    // Outside mlport, with OpInfo's own first sample: cumsum at bool and conv2d at int32 are not
    // declared on the CPU and compute on inputs with elements; linalg.det's float16 sample 0 is a
    // 0×0 matrix (it runs, and shows only that float16 is accepted), and float16 is not declared.
    let by_hand = python_json(
        r#"
import json, torch
from torch.testing._internal.common_methods_invocations import op_db
out = {}
for name, d in (("cumsum", torch.bool), ("nn.functional.conv2d", torch.int32), ("linalg.det", torch.float16)):
    op = next(o for o in op_db if o.name == name and not o.variant_test_name)
    s = next(iter(op.sample_inputs("cpu", d)))
    y = op(s.input, *s.args, **s.kwargs)
    out[name] = {"declared": d in op.supported_dtypes("cpu"), "elements": s.input.numel()}
print(json.dumps(out))
"#,
    );
    assert_eq!(by_hand["cumsum"]["declared"], false);
    assert_eq!(by_hand["nn.functional.conv2d"]["declared"], false);
    assert!(
        by_hand["cumsum"]["elements"].as_u64().unwrap() > 0
            && by_hand["nn.functional.conv2d"]["elements"].as_u64().unwrap() > 0
    );
    assert_eq!(
        (by_hand["linalg.det"]["declared"].as_bool(), by_hand["linalg.det"]["elements"].as_u64()),
        (Some(false), Some(0))
    );
    let rep = ops_json();
    for (entry, dtype) in [("cumsum", "bool"), ("nn.functional.conv2d", "int32")] {
        let r = ops_row(&rep, entry, dtype, "cpu");
        assert_eq!((r["declared"].as_bool(), r["registered"].as_bool()), (Some(false), Some(true)), "{r}");
        assert!(
            r["samples"].as_u64().unwrap() >= 1 && r["ran"] == r["samples"] && r["wrong"] == 0 && r["empty"] == 0,
            "{r}"
        );
    }
    let det = ops_row(&rep, "linalg.det", "float16", "cpu");
    assert_eq!(
        (det["declared"].as_bool(), det["ran"].as_u64(), det["empty"].as_u64()),
        (Some(false), Some(1), Some(1)),
        "{det}"
    );
    assert_eq!(ops_row(&rep, "linalg.det", "float32", "cpu")["declared"], true);
    let works = mlport().args(["report", "ops", "--db"]).arg(store()).output().unwrap();
    let table = String::from_utf8_lossy(&works.stdout);
    let section = table.split("Works but undeclared").nth(1).unwrap().split("Registered but wrong").next().unwrap();
    assert!(section.contains("cumsum") && section.contains("nn.functional.conv2d"), "{table}");
    assert!(!section.contains("linalg.det"), "an empty sample proves nothing: {table}");
}

#[test]
fn each_sample_is_judged_against_the_same_sample_in_float64() {
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let refs = store.references(run).unwrap();
    let sin =
        refs.iter().find(|r| r.function == "torch.sin" && r.dtype.as_str() == "float16").expect("sin's reference");
    assert_eq!(sin.outcome, Some(Outcome::Pass));
    assert_eq!(sin.message.as_deref(), Some("op.ref numpy.sin"), "OpInfo's own NumPy reference computed it");
    let comparisons = store.comparisons(run).unwrap();
    let rows = rows();
    let sin16 = rows
        .iter()
        .find(|r| {
            r.function.name == "torch.sin"
                && r.case.dtype.map(|d| d.as_str()) == Some("float16")
                && r.result.device.as_str() == "cpu"
        })
        .unwrap();
    assert_eq!(sin16.result.outcome, Outcome::Pass);
    let judged: Vec<_> = comparisons
        .iter()
        .filter(|c| c.case_key == sin16.case.key && c.device.as_str() == "cpu" && c.against == Against::Float64)
        .collect();
    assert_eq!(judged.len(), 1, "one output, one float64 comparison");
    // The float64 reference's values: numpy.sin of the sample's float16 values, widened.
    let out = mlport::compare::real_f64(
        &mlport::compare::read_npy(Path::new(sin16.result.outputs[0]["path"].as_str().unwrap())).unwrap(),
    );
    let expected = mlport::compare::real_f64(
        &mlport::compare::read_npy(Path::new(sin.outputs[0]["path"].as_str().unwrap())).unwrap(),
    );
    assert_eq!(out.len(), expected.len());
    for (a, e) in out.iter().zip(&expected) {
        assert!((a - e).abs() <= 1e-5 + 1e-3 * e.abs(), "float16 sin {a} against float64 {e}");
    }
}

#[test]
fn a_random_operator_is_compared_on_shape_and_dtype() {
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let rows = rows();
    let dropout: Vec<&ResultRow> = rows
        .iter()
        .filter(|r| r.function.name == "torch.nn.functional.dropout")
        .filter(|r| r.case.dtype.is_some_and(|d| d.as_str().starts_with("float")))
        .collect();
    assert!(!dropout.is_empty());
    assert!(
        dropout.iter().all(|r| r.result.outcome == Outcome::Pass),
        "dropout's samples run: {:?}",
        dropout.iter().map(|r| (&r.case.key, r.result.outcome)).collect::<Vec<_>>()
    );
    let keys: BTreeSet<&str> = dropout.iter().map(|r| r.case.key.as_str()).collect();
    let compared: Vec<_> =
        store.comparisons(run).unwrap().into_iter().filter(|c| keys.contains(c.case_key.as_str())).collect();
    assert!(!compared.is_empty(), "cpu/compiled is compared with cpu");
    assert!(compared.iter().all(|c| c.rule == Rule::ShapeDtype), "{compared:?}");
    assert!(
        store.references(run).unwrap().iter().all(|r| r.function != "torch.nn.functional.dropout"),
        "no float64 reference"
    );
}

#[test]
fn a_wrong_result_is_rerun_alone_and_reproduced() {
    let rows = rows();
    let wrong = rows
        .iter()
        .find(|r| {
            r.function.name == "torch.addbmm"
                && r.case.dtype.map(|d| d.as_str()) == Some("float32")
                && r.result.device.as_str() == "cpu"
        })
        .expect("addbmm at float32 on cpu");
    assert_eq!(wrong.result.outcome, Outcome::WrongResult, "{:?}", wrong.result.message);
    // Alone: only that operator and dtype, in a fresh store and fresh workers.
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("alone.db");
    run_suite(
        &alone,
        &["--suite", "opinfo", "--op", "addbmm", "--samples", "1", "--dtype", "float32", "--device", "cpu", "--quick"],
    )
    .success();
    let again = common::latest_results(&alone);
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].case.key.as_str(), again[0].result.outcome), (wrong.case.key.as_str(), Outcome::WrongResult));
    assert_eq!(again[0].result.message, wrong.result.message, "the same sample, the same disagreement");
    // The repro script rebuilds the sample from the suite and disagrees the same way.
    let out = tmp.path().join("repro");
    mlport().args(["repro", &wrong.id.to_string(), "--out"]).arg(&out).arg("--db").arg(store()).assert().success();
    let script = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "py") && p.file_name().unwrap().to_string_lossy().starts_with("repro_")
        })
        .unwrap();
    assert!(out.join("mlport_suites.py").is_file());
    let ran = Command::new(suites_python()).arg(&script).output().unwrap();
    let text = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(
        ran.status.code(),
        Some(1),
        "the script says it disagrees: {text}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(text.contains("DISAGREES"), "{text}");
}

#[test]
fn a_suites_shards_cover_it_once_and_a_killed_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    let base = [
        "--suite",
        "opinfo",
        "--op",
        "sin,cos,exp,abs,neg",
        "--samples",
        "1",
        "--dtype",
        "float32",
        "--device",
        "cpu",
        "--quick",
        "--campaign",
        "c",
    ];
    for shard in ["0/2", "1/2"] {
        let mut args = base.to_vec();
        args.extend(["--shard", shard]);
        run_suite(&db, &args).success();
    }
    let store = Store::open(&db).unwrap();
    let mut keys = Vec::new();
    for run in store.runs().unwrap() {
        keys.extend(store.results(run.id).unwrap().into_iter().map(|r| r.case.key));
    }
    keys.sort();
    let unique: BTreeSet<&String> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "no case in two shards");
    let functions: BTreeSet<&str> = keys.iter().map(|k| k.split('/').nth(1).unwrap()).collect();
    assert_eq!(functions, BTreeSet::from(["torch.abs", "torch.cos", "torch.exp", "torch.neg", "torch.sin"]));
    // A run killed right after it was stored, then resumed: every case once.
    let killed = tmp.path().join("k.db");
    let mut cmd = mlport();
    cmd.env("MLPORT_FAULT", "after-create-run");
    cmd.arg("run").args(&base[..base.len() - 2]).arg("--db").arg(&killed).arg("--python").arg(suites_python());
    assert!(!cmd.output().unwrap().status.success(), "killed at the fault point");
    run_suite(&killed, &["--resume"]).success();
    let after = common::latest_results(&killed);
    let keys: BTreeSet<&str> = after.iter().map(|r| r.case.key.as_str()).collect();
    assert_eq!((after.len(), keys.len()), (unique.len(), unique.len()), "resumed: every case once");
}

#[test]
fn jax_harnesses_run_with_their_declared_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("j.db");
    run_suite(
        &db,
        &["--suite", "jax-harnesses", "--op", "abs", "--device", "cpu", "--modes", "eager,compiled", "--quick"],
    )
    .success()
    .stderr(contains("the jax-harnesses suite of jax"));
    let rows = common::latest_results(&db);
    assert!(rows.iter().all(|r| r.function.name == "jax.lax.abs"), "one public function");
    assert!(rows.iter().any(|r| r.result.device.as_str() == "cpu/compiled"));
    let failed: Vec<_> =
        rows.iter().filter(|r| r.result.outcome != Outcome::Pass).map(|r| (&r.case.key, &r.result.message)).collect();
    assert!(failed.is_empty(), "abs runs at every harness dtype: {failed:?}");
}

#[test]
fn a_bad_suite_or_an_interpreter_without_expecttest_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("none.db");
    mlport()
        .args(["run", "--suite", "nosuch", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(contains("nosuch"))
        .stderr(contains("opinfo"));
    assert!(!db.exists());
    // A test double of an interpreter without expecttest: the real one, with a sitecustomize
    // that marks the module missing (`sys.modules["expecttest"] = None`, as Python does for an
    // import that must fail).
    let shim = tmp.path().join("shim");
    std::fs::create_dir(&shim).unwrap();
    std::fs::write(shim.join("sitecustomize.py"), "import sys\nsys.modules['expecttest'] = None\n").unwrap();
    let wrapper = tmp.path().join("python-without-expecttest");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nPYTHONPATH={} exec {} \"$@\"\n", shim.display(), suites_python().display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    mlport()
        .args(["run", "--suite", "opinfo", "--op", "sin", "--db"])
        .arg(&db)
        .arg("--python")
        .arg(&wrapper)
        .assert()
        .code(1)
        .stderr(contains("needs expecttest"))
        .stderr(contains("pip install expecttest==0.3.0"));
    assert!(!db.exists(), "nothing written");
    // An --op no entry has: named, nothing written.
    run_suite(&db, &["--suite", "opinfo", "--op", "no.such.op"]).code(1).stderr(contains("--op no.such.op"));
    assert!(!db.exists());
}
