//! The command line as a user meets it: a real end-to-end run of a small catalogue with
//! real NumPy, PyTorch, JAX and TensorFlow, the report from the store, and clear errors
//! for bad input that leave nothing behind.

mod common;

use common::{mlport, target};

use predicates::prelude::*;
use serde_json::Value;

fn function<'a>(t: &'a Value, name: &str) -> &'a Value {
    t["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {t:#}"))
}

#[test]
fn a_small_catalogue_runs_end_to_end_on_all_four_frameworks() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("e2e.db");
    let py = common::python();
    let out = mlport()
        .args(["run", "--device", "cpu", "--catalogue"])
        .arg(common::fixture("small"))
        .arg("--db")
        .arg(&db)
        .arg("--python")
        .arg(&py)
        .assert()
        .success()
        .get_output()
        .clone();
    let table = String::from_utf8(out.stdout).unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    for fw in ["numpy", "torch", "jax", "tensorflow"] {
        assert!(table.contains(&format!("│ {fw}")), "{fw} missing from\n{table}\nstderr:\n{log}");
    }

    // The report, later, from the store alone.
    let json =
        mlport().args(["report", "--format", "json", "--db"]).arg(&db).assert().success().get_output().stdout.clone();
    let rep: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(rep["format"], "mlport.portability");
    assert_eq!(rep["version"], 3);
    // SVD of a bfloat16 matrix fails as dtype_unsupported in torch, jax and tensorflow; float32 passes.
    for (fw, name) in [("torch", "torch.linalg.svd"), ("jax", "jax.numpy.linalg.svd"), ("tensorflow", "tf.linalg.svd")]
    {
        let t = target(&rep, fw, "cpu");
        let f = function(t, name);
        assert_eq!(f["status"], "partial", "{fw}: {f:#}");
        assert_eq!((f["passed"].as_u64(), f["failed"].as_u64()), (Some(1), Some(1)), "{fw}: {f:#}");
        assert_eq!(f["reasons"]["dtype_unsupported"], 1, "{fw}: {f:#}");
        assert!(rep["run"]["frameworks"][fw].as_str().is_some_and(|v| !v.is_empty()), "{fw} version recorded");
    }
    // NumPy's linalg has no float16; sum passes for float32 and int64.
    let np = target(&rep, "numpy", "cpu");
    assert_eq!(function(np, "numpy.linalg.svd")["reasons"]["dtype_unsupported"], 1);
    assert_eq!(function(np, "numpy.sum")["status"], "success");
    assert_eq!((np["success"]["count"].as_u64(), np["partial"]["count"].as_u64()), (Some(1), Some(1)));
    // A function that no longer exists is api_missing; the catalogue's own bug is a harness error, apart.
    let torch = target(&rep, "torch", "cpu");
    let gone = function(torch, "torch.matrix_rank_removed_long_ago");
    assert_eq!(gone["status"], "complete_failure");
    assert_eq!(gone["reasons"]["api_missing"], 1);
    assert_eq!(torch["functions_run"], 2, "the harness-error-only function is not counted: {torch:#}");
    let harness = rep["harness_errors"].as_array().unwrap();
    assert_eq!(harness.len(), 1, "{harness:?}");
    assert!(harness[0]["case_key"].as_str().unwrap().contains("torch.nn.Linear"));

    // repro of the missing function: no inputs needed, the script fails looking the name up.
    let store = mlport::store::Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let missing =
        store.results(run).unwrap().into_iter().find(|r| r.function.name == "torch.matrix_rank_removed_long_ago");
    let id = missing.expect("the api_missing result").id;
    drop(store);
    let out_dir = tmp.path().join("repro-missing");
    mlport().args(["repro", &id.to_string(), "--db"]).arg(&db).arg("--out").arg(&out_dir).assert().success();
    let script = out_dir.join(format!("repro_{id}.py"));
    let ran = std::process::Command::new(&py).arg(&script).output().unwrap();
    let err = String::from_utf8_lossy(&ran.stderr);
    assert!(
        !ran.status.success() && err.contains("AttributeError") && err.contains("matrix_rank_removed_long_ago"),
        "{err}"
    );

    // The paper's data imported afterwards: `report` still defaults to this machine's run, and
    // `audit` takes a function's status from it before the paper's (2023) runs.
    mlport().args(["import", "paper"]).arg(common::paper_dir()).arg("--db").arg(&db).assert().success();
    let again: Value =
        serde_json::from_str(&common::stdout(mlport().args(["report", "--format", "json", "--db"]).arg(&db))).unwrap();
    assert_eq!(again["run"]["id"], rep["run"]["id"], "the live run, not the last imported one");
    let code = tmp.path().join("code");
    std::fs::create_dir(&code).unwrap();
    std::fs::write(code.join("m.py"), "import torch\nu, s, vh = torch.linalg.svd(torch.eye(3))\n").unwrap();
    let audit =
        common::stdout(mlport().arg("audit").arg(&code).args(["--device", "cpu", "--format", "json", "--db"]).arg(&db));
    let audit: Value = serde_json::from_str(&audit).unwrap();
    let svd = audit["audit"]["rows"].as_array().unwrap().iter().find(|r| r["function"] == "torch.linalg.svd").unwrap();
    assert_eq!(svd["status"], "partial", "this machine's run (bfloat16 unsupported): {svd:#}");
    assert_eq!(svd["run"], format!("run {}", rep["run"]["id"]), "{svd:#}");
    assert!(svd["slowdown"].is_null(), "no slowdown of the reference device against itself: {svd:#}");

    // The markdown report reproduces the same numbers.
    mlport()
        .args(["report", "--format", "markdown", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("| torch").and(predicate::str::contains("dtype_unsupported")));
}

#[test]
fn a_malformed_catalogue_is_rejected_with_file_and_line_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    mlport()
        .args(["run", "--catalogue"])
        .arg(common::fixture("bad"))
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad/torch.toml:8:").and(predicate::str::contains("unknown dtype `floot64`")));
    assert!(!db.exists(), "a rejected catalogue must not create a store");
}

#[test]
fn unknown_functions_devices_and_frameworks_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    mlport()
        .args(["run", "--function", "torch.linalg.svdd", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("unknown function `torch.linalg.svdd`"));
    mlport()
        .args(["run", "--device", "gpu:0", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown device `gpu:0`"));
    mlport()
        .args(["run", "--framework", "caffe", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown framework `caffe`"));
    mlport().args(["run", "--modes", "eager,jit", "--db"]).arg(&db).assert().code(2).stderr(predicate::str::contains(
        "for '--modes <MODE>': unknown mode `jit` (expected eager, compiled, compiled_fullgraph, onnx, onnx_openvino or stablehlo)",
    ));
    mlport()
        .args(["run", "--device", "cpu/jit", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("target `cpu/jit`: unknown mode `jit`"));
    mlport()
        .args(["run", "--dtype", "float32,float8", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("for '--dtype <DTYPE>': unknown dtype `float8` (expected one of bool, int8,"));
    mlport()
        .args(["run", "--resume", "abc", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("for '--resume [<RUN_ID>]': `abc` is not a run id"));
    mlport()
        .args(["run", "--timeout", "1e300", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'1e300' for '--timeout <SECS>': 1e300 is longer than one day"));
    mlport()
        .args(["run", "--resume", "--function", "torch.sum", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--resume continues a stored run's own plan"));
    mlport()
        .args(["run", "--db"])
        .arg(tmp.path().join("no/such/folder/x.db"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("does not exist"));
    assert!(!db.exists());
}

#[test]
fn a_database_that_is_not_mlports_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("notes.db");
    std::fs::write(&junk, b"these are my notes, not a database\n".repeat(200)).unwrap();
    let before = std::fs::read(&junk).unwrap();
    mlport()
        .args(["report", "--db"])
        .arg(&junk)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("notes.db").and(predicate::str::contains("not an SQLite database")));
    mlport()
        .args(["run", "--function", "torch.sum", "--db"])
        .arg(&junk)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not an SQLite database"));
    assert_eq!(std::fs::read(&junk).unwrap(), before);

    let foreign = tmp.path().join("other.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch(
        "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers(name) VALUES ('a');",
    )
    .unwrap();
    drop(conn);
    mlport()
        .args(["report", "--db"])
        .arg(&foreign)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("other.db").and(predicate::str::contains("not an mlport store")));
}

#[test]
fn list_shows_the_built_in_catalogue_without_starting_python() {
    mlport().args(["list", "--no-probe"]).assert().success().stdout(
        predicate::str::contains("torch")
            .and(predicate::str::contains("tensorflow"))
            .and(predicate::str::contains("63")),
    );
}

#[test]
fn run_help_names_every_framework() {
    let out = mlport().args(["run", "--help"]).assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let section = &help[help.find("--framework").expect("run --help has --framework")..];
    let section = &section[..section.find("\n  -").unwrap_or(section.len())];
    for f in <mlport::model::Framework as strum::VariantArray>::VARIANTS {
        assert!(section.contains(&f.to_string()), "run --help's --framework does not name {f}: {section}");
    }
}

#[test]
fn list_references_covers_an_add_on_catalogue_and_takes_framework() {
    // A catalogue of ONNX Runtime cases only: `list --references` once refused it ("runs only
    // when selected (--framework onnxruntime)") while `list` had no --framework.
    let ort = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue/onnxruntime.toml");
    let out = mlport().args(["list", "--no-probe", "--references", "--catalogue"]).arg(&ort).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.lines().any(|l| l.contains("onnxruntime") && l.chars().any(|c| c.is_ascii_digit())), "{text}");
    mlport()
        .args(["list", "--no-probe", "--references", "--framework", "onnxruntime", "--catalogue"])
        .arg(&ort)
        .assert()
        .success();
    mlport()
        .args(["list", "--no-probe", "--references", "--framework", "torch", "--catalogue"])
        .arg(&ort)
        .assert()
        .failure()
        .stderr(predicate::str::contains("--framework torch: the catalogue has no torch file (it has onnxruntime)"));
}

#[test]
fn a_function_the_framework_lacks_is_api_missing_not_a_missing_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("gone.db");
    let out = common::run_catalogue(&db, "api-missing", &["--device", "cpu", "--quick"]);
    let said = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let store = mlport::store::Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let results = store.results(run).unwrap();
    let gone = results.iter().find(|r| r.function.name == "jax.numpy.no_such_function_in_any_jax").unwrap();
    assert_eq!(gone.result.reason, Some(mlport::model::Reason::ApiMissing), "{:?}", gone.result.message);
    let refs = store.references(run).unwrap();
    let gone_ref = refs.iter().find(|r| r.function == "jax.numpy.no_such_function_in_any_jax").expect("planned");
    assert_eq!(gone_ref.outcome, Some(mlport::model::Outcome::Skip), "{:?}", gone_ref.message);
    assert!(gone_ref.message.as_deref().unwrap_or("").starts_with("not needed: the installed jax lacks"));
    // The function it has still gets its reference, and the run says nothing is missing.
    let exp_ref = refs.iter().find(|r| r.function == "jax.numpy.exp").expect("planned");
    assert_eq!(exp_ref.outcome, Some(mlport::model::Outcome::Pass), "{:?}", exp_ref.message);
    assert!(!said.contains("could not be computed"), "{said}");
    assert!(said.contains("1 not needed"), "{said}");
    let report = mlport().args(["report", "--db"]).arg(&db).assert().success();
    let report = String::from_utf8_lossy(&report.get_output().stdout).into_owned();
    assert!(!report.contains("could not be computed"), "{report}");
}

#[test]
fn report_without_a_store_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    mlport()
        .args(["report", "--db"])
        .arg(tmp.path().join("none.db"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no such store"));
}

#[test]
fn a_framework_that_fails_to_import_is_named_and_the_others_still_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("b.db");
    mlport()
        .args(["run", "--framework", "numpy,torch", "--catalogue"])
        .arg(common::fixture("small"))
        .arg("--db")
        .arg(&db)
        .arg("--python")
        .arg(common::fixture("broken-torch/python"))
        .env("MLPORT_REAL_PYTHON", common::python())
        .assert()
        .success()
        .stderr(predicate::str::contains("torch is not usable").and(predicate::str::contains("libtorch_cpu.so")))
        .stdout(predicate::str::contains("torch: not usable (ImportError: libtorch_cpu.so"));
    let json =
        mlport().args(["report", "--format", "json", "--db"]).arg(&db).assert().success().get_output().stdout.clone();
    let rep: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(rep["not_usable"][0]["framework"], "torch");
    let fws: Vec<&str> = rep["targets"].as_array().unwrap().iter().map(|t| t["framework"].as_str().unwrap()).collect();
    assert_eq!(fws, ["numpy"], "numpy still ran, torch has no target");
}

#[test]
fn a_device_the_framework_cannot_see_is_unavailable_not_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("d.db");
    mlport()
        .args(["run", "--framework", "numpy", "--device", "cpu,cuda:0", "--catalogue"])
        .arg(common::fixture("small"))
        .arg("--db")
        .arg(&db)
        .arg("--python")
        .arg(common::python())
        .assert()
        .success()
        .stdout(predicate::str::contains("cuda:0: unavailable to numpy"));
    let json =
        mlport().args(["report", "--format", "json", "--db"]).arg(&db).assert().success().get_output().stdout.clone();
    let rep: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(rep["unavailable"][0]["device"], "cuda:0");
    assert_eq!(rep["targets"].as_array().unwrap().len(), 1, "only cpu has results");
}

#[test]
fn the_built_in_catalogue_shows_bfloat16_svd_as_dtype_unsupported_in_three_frameworks() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("svd.db");
    mlport()
        .args([
            "run",
            "--function",
            "torch.linalg.svd,jax.numpy.linalg.svd,tf.linalg.svd",
            "--dtype",
            "float32,bfloat16",
        ])
        .args(["--device", "cpu", "--db"])
        .arg(&db)
        .arg("--python")
        .arg(common::python())
        .assert()
        .success();
    let json = mlport()
        .args(["report", "--functions", "--format", "json", "--db"])
        .arg(&db)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    // `--functions` in JSON: one document holding the summary and the per-function detail.
    let bundle: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(bundle["format"], "mlport.portability.bundle");
    let rep = &bundle["summary"];
    // The per-function detail names each failing case with its dtype and the framework's message.
    let detail = &bundle["functions"];
    let torch = detail["targets"].as_array().unwrap().iter().find(|t| t["framework"] == "torch").unwrap();
    let svd = torch["listed"].as_array().unwrap().iter().find(|f| f["name"] == "torch.linalg.svd").unwrap();
    let failing = svd["failing_cases"].as_array().unwrap();
    assert!(!failing.is_empty() && failing.iter().all(|c| c["dtype"] == "bfloat16"), "{svd:#}");
    assert!(failing[0]["message"].as_str().unwrap().contains("not implemented for 'BFloat16'"), "{svd:#}");
    let store = mlport::store::Store::open(&db).unwrap();
    let results = store.results(store.latest_run().unwrap().unwrap().id).unwrap();
    for (fw, name) in [("torch", "torch.linalg.svd"), ("jax", "jax.numpy.linalg.svd"), ("tensorflow", "tf.linalg.svd")]
    {
        let f = function(target(rep, fw, "cpu"), name);
        assert_eq!(f["status"], "partial", "{f:#}");
        for r in results.iter().filter(|r| r.function.name == name) {
            let want = if r.case.dtype == Some(mlport::model::Dtype::Bfloat16) {
                Some(mlport::model::Reason::DtypeUnsupported)
            } else {
                None
            };
            assert_eq!(r.result.reason, want, "{} {:?}", r.case.key, r.result.message);
            assert_eq!(
                r.result.outcome == mlport::model::Outcome::Pass,
                r.case.dtype == Some(mlport::model::Dtype::Float32),
                "{}",
                r.case.key
            );
        }
    }
}

#[test]
fn resume_never_touches_imported_runs_and_says_when_cases_remain() {
    use mlport::catalogue::{Catalogue, load_path};
    use mlport::plan::{Selection, plan};
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    // A live run planned but never run (as if killed before its first case).
    let run = {
        let cat = Catalogue::new(load_path(&common::fixture("small/numpy.toml")).unwrap()).unwrap();
        let p = plan(&cat, &Selection::default(), 0).unwrap();
        let mut store = mlport::store::Store::open(&db).unwrap();
        let info = mlport::model::RunInfo::blank("test", mlport::model::Target::cpu());
        store.create_run(&info, &Default::default(), &p.functions, &p.cases).unwrap()
    };
    // Resumed on a device this machine lacks: nothing can run, the run is incomplete, not finished.
    mlport()
        .args(["run", "--resume", &run.to_string(), "--device", "cuda:0", "--python"])
        .arg(common::python())
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("4 cases still pending").and(predicate::str::contains("no case could run")));
    let store = mlport::store::Store::open(&db).unwrap();
    assert_eq!(store.run(run).unwrap().state.as_str(), "incomplete");
    drop(store);

    // An imported run is never resumed.
    let report = tmp.path().join("r.json");
    let doc = serde_json::json!({"created": 1.0, "duration": 1.0, "exitcode": 0, "root": "/r", "environment": {},
        "summary": {"passed": 1, "total": 1, "collected": 1},
        "tests": [{"nodeid": "test_a.py::test_cuda", "outcome": "passed", "keywords": [],
                   "call": {"duration": 0.01, "outcome": "passed"}}]});
    std::fs::write(&report, serde_json::to_vec(&doc).unwrap()).unwrap();
    mlport()
        .args(["import", "pytest-json"])
        .arg(&report)
        .args(["--framework", "torch", "--device", "cuda:0", "--db"])
        .arg(&db)
        .assert()
        .success();
    mlport()
        .args(["run", "--resume", &(run + 1).to_string(), "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("only live runs can be resumed"));
}

#[test]
fn threads_are_recorded_and_two_frameworks_compare_with_intervals() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    mlport()
        .args(["run", "--device", "cpu", "--threads", "1", "--budget-ms", "30", "--format", "json", "--catalogue"])
        .arg(common::fixture("crossfw"))
        .arg("--python")
        .arg(common::python())
        .arg("--db")
        .arg(&db)
        .assert()
        .success();
    let out = mlport()
        .args(["report", "--slowdown", "numpy/cpu..torch/cpu", "--threshold-for", "numpy.add=1000", "--db"])
        .arg(&db)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("numpy.add vs torch.add"), "{text}");
    assert!(
        text.contains("torch on cpu is ")
            && text.contains(" than numpy on cpu, geometric mean over 1 functions; 0 beyond 10×"),
        "{text}"
    );
    assert!(text.contains("Median ratios B/A (log scale") && text.contains("95% CI"), "{text}");
    let json = mlport()
        .args(["report", "--slowdown", "numpy/cpu..torch/cpu", "--format", "json", "--db"])
        .arg(&db)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(doc["stats"]["seed"], 0, "the run's stored seed");
    let f = &doc["functions"][0];
    assert!(f["median_ratio_ci"]["lower"].as_f64().unwrap() <= f["median_ratio"].as_f64().unwrap());
    // Bad sides and thresholds are named.
    mlport()
        .args(["report", "--slowdown", "pandas/cpu..torch/cpu", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown framework `pandas`"));
    mlport()
        .args(["report", "--slowdown", "numpy/cpu..torch/cpu", "--threshold-for", "numpy.add", "--db"])
        .arg(&db)
        .assert()
        .failure()
        .stderr(predicate::str::contains("expected NAME=RATIO"));
    // --threads reached both frameworks, recorded with the run.
    let store = mlport::store::Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    let threads: Vec<Option<u32>> = run.info.frameworks.values().map(|f| f.threads).collect();
    assert_eq!(threads, vec![Some(1), Some(1)], "{:?}", run.info.frameworks);
}

/// Two processes never execute one run: `--resume` of a run that another mlport process is
/// executing right now is refused (the run's lock), and works once that process is done.
#[test]
fn a_run_being_executed_cannot_be_resumed_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("slow.toml");
    std::fs::write(
        &cat,
        r#"format = 1
framework = "numpy"
version = "test-1"

[[function]]
name = "numpy.sum"
  [[function.case]]
  id = "slow_setup"
  inputs = [{ shape = [4] }]
  code = '''
import time
def build(ctx, x):
    time.sleep(4)
    return lambda: ctx.fn(x)
'''
"#,
    )
    .unwrap();
    let db = tmp.path().join("s.db");
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("mlport"))
        .args(["run", "--framework", "numpy", "--catalogue"])
        .arg(&cat)
        .arg("--python")
        .arg(common::python())
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = tmp.path().join(".mlport/s.db-run-1/run.lock");
    let waited = std::time::Instant::now();
    while !lock.exists() {
        assert!(waited.elapsed().as_secs() < 60, "the first run never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let resume = || {
        let mut c = mlport();
        c.args(["run", "--resume", "1", "--python"]).arg(common::python()).arg("--db").arg(&db);
        c
    };
    resume().assert().code(1).stderr(predicate::str::contains(
        "run 1 in ".to_string() + &db.display().to_string() + " is being executed by another mlport process",
    ));
    // The same store through a symbolic link shares the lock.
    let link = tmp.path().join("link.db");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    mlport()
        .args(["run", "--resume", "1", "--python"])
        .arg(common::python())
        .arg("--db")
        .arg(&link)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is being executed by another mlport process"));
    assert!(first.wait().unwrap().success());
    resume().assert().success().stderr(predicate::str::contains("nothing to resume"));
    let store = mlport::store::Store::open(&db).unwrap();
    let results = store.results(1).unwrap();
    assert_eq!(results.len(), 1, "the case ran once");
    assert_eq!(results[0].result.outcome, mlport::model::Outcome::Pass);
}

/// A case timed while other processes hold its CPU is told apart: the worker reports how long
/// its threads waited for a CPU (Linux schedstat), the store keeps it, the run says so at its
/// end. Made deterministic by pinning mlport (and so its worker) and two CPU-bound processes
/// to one CPU with `taskset`: the worker can run at most about a third of the time.
#[test]
fn cases_timed_beside_cpu_bound_processes_are_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("add.toml");
    std::fs::write(
        &cat,
        "format = 1\nframework = \"numpy\"\nversion = \"test-1\"\n\n[[function]]\nname = \"numpy.add\"\n  \
         [[function.case]]\n  inputs = [{ shape = [100000] }, { shape = [100000] }]\n",
    )
    .unwrap();
    let hogs: Vec<std::process::Child> = (0..2)
        .map(|_| {
            std::process::Command::new("taskset")
                .args(["-c", "0", "python3", "-c", "while True: pass"])
                .spawn()
                .expect("taskset (util-linux) and python3 run")
        })
        .collect();
    struct Kill(Vec<std::process::Child>);
    impl Drop for Kill {
        fn drop(&mut self) {
            for h in &mut self.0 {
                let _ = h.kill();
                let _ = h.wait();
            }
        }
    }
    let hogs = Kill(hogs);
    let db = tmp.path().join("busy.db");
    let out = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(assert_cmd::cargo::cargo_bin("mlport"))
        .args(["run", "--framework", "numpy", "--budget-ms", "300", "--catalogue"])
        .arg(&cat)
        .arg("--python")
        .arg(common::python())
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    drop(hogs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let store = mlport::store::Store::open(&db).unwrap();
    let results = store.results(1).unwrap();
    let timed: Vec<_> = results.iter().filter(|r| r.case.function == "numpy.add").collect();
    assert_eq!(timed.len(), 1, "{results:?}");
    let r = &timed[0].result;
    let share = r.runqueue_wait_share().expect("Linux reports run-queue wait");
    // Three CPU-bound processes on one CPU: the worker waits about two thirds of the time.
    assert!(
        share > 0.3,
        "run-queue wait share {share} (wait {:?} ns over {:?} ns)",
        r.runqueue_wait_ns,
        r.steady_wall_ns
    );
    // The steady state stops once IQR/median < 5% with min_time_ms (20 ms, the protocol's
    // default) spent in blocks, or at the 300 ms budget: under contention either can end it (a
    // 1 ms block mostly fits in one time slice, so the spread can still converge). Either way
    // at least 20 ms of blocks were timed, so the share is measured over a real window.
    let wall = r.steady_wall_ns.unwrap();
    assert!(wall >= 20_000_000, "the steady state spent at least min_time_ms in blocks: {r:?}");
    assert!(r.runqueue_wait_ns.unwrap() <= wall, "a wait cannot exceed the window it was measured in: {r:?}");
    assert!(
        stderr.contains("1 of the run's 1 timed cases waited for a CPU more than 10% of their steady state"),
        "{stderr}"
    );
}
