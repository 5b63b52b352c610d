//! Execution modes with the real frameworks (tests/fixtures/modes): in each of PyTorch, JAX and
//! TensorFlow, a function that compiles and agrees with eager, one that fails to compile for a
//! stated reason (torch: a Python branch on a tensor's value under fullgraph; JAX: jnp.nonzero
//! without `size`, a data-dependent shape; TensorFlow: a shape XLA cannot know at compile
//! time) and one that recompiles when its shapes change — all from one
//! `mlport run --modes eager,compiled,compiled_fullgraph` (torch's strict mode is
//! `compiled_fullgraph`; its `compiled` takes the graph break and runs), then `report --modes` and a
//! compiled/eager slowdown.

mod common;

use std::path::Path;

use common::mlport;
use mlport::model::{Outcome, Reason, Target};
use mlport::store::Store;
use serde_json::Value;

fn run_fixture(db: &Path) {
    // JAX in 64-bit mode: with its shipped default, jnp.nonzero's int32 indices differ from its
    // float64 self-reference's int64 (`dtype_changed`, tests/truth_dtype.rs); here only the
    // compilers are under test, and every case must pass eagerly.
    let modes = ["--device", "cpu", "--modes", "eager,compiled,compiled_fullgraph", "--budget-ms", "20", "--jax-x64"];
    common::run_catalogue(db, "modes", &modes);
}

use common::result_on as result;

#[test]
fn compiled_targets_compile_fail_to_compile_and_recompile() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("modes.db");
    run_fixture(&db);
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run).unwrap();
    // Inductor's cache served the run only, and went with it; the outputs stay.
    let run_dir = tmp.path().join(".mlport").join(format!("modes.db-run-{run}"));
    assert!(run_dir.join("torch-cpu-compiled").is_dir() && !run_dir.join("compile-cache").exists());

    // (framework, its whole-graph target, compiles, fails to compile with this error type,
    // recompiles, at least this often)
    let cases = [
        (
            "torch",
            "cpu/compiled_fullgraph",
            "torch.cumsum",
            "torch.where",
            "torch._dynamo.exc.Unsupported",
            "torch.flip",
            2,
        ),
        (
            "jax",
            "cpu/compiled",
            "jax.numpy.cumsum",
            "jax.numpy.nonzero",
            "jax.errors.ConcretizationTypeError",
            "jax.numpy.flip",
            4,
        ),
        ("tensorflow", "cpu/compiled", "tf.math.cumsum", "tf.zeros", "InvalidArgumentError", "tf.reverse", 4),
    ];
    let comparisons = store.comparisons(run).unwrap();
    for (fw, target, ok, bad, error_type, again, times) in cases {
        let compiled: Target = target.parse().unwrap();
        // Every case passes eagerly, where nothing is compiled.
        for f in [ok, bad, again] {
            let eager = result(&rows, f, "cpu");
            assert_eq!(eager.result.outcome, Outcome::Pass, "{fw}: {f} eagerly: {:?}", eager.result.message);
            assert_eq!(eager.result.compiles, None, "{fw}: {f} eagerly");
        }
        // Compiles once and agrees with eager (and with the float64 reference).
        let r = result(&rows, ok, target);
        assert_eq!((r.result.outcome, r.result.compiles), (Outcome::Pass, Some(1)), "{fw}: {:?}", r.result.message);
        assert!(r.result.first_call_ns.is_some() && !r.result.samples_ns.is_empty());
        let against: Vec<(String, &str)> = comparisons
            .iter()
            .filter(|c| c.case_key == r.case.key && c.device == compiled)
            .map(|c| (c.against.to_string(), c.verdict.as_str()))
            .collect();
        assert!(against.contains(&("device:cpu".into(), "agree")), "{fw}: {against:?}");
        assert!(against.contains(&("float64".into(), "agree")), "{fw}: {against:?}");

        // The compiler refuses it, for the stated reason.
        let r = result(&rows, bad, target);
        assert_eq!((r.result.outcome, r.result.reason), (Outcome::Fail, Some(Reason::CompileError)), "{fw}");
        let ty = r.result.error_type.as_deref().unwrap_or_default();
        assert!(ty.ends_with(error_type), "{fw}: {ty}: {:?}", r.result.message);
        assert_eq!(r.result.phase.as_deref(), Some("first_call"));

        // A new shape on each call: compiled again and again, counted.
        let r = result(&rows, again, target);
        assert_eq!((r.result.outcome, r.result.reason), (Outcome::Fail, Some(Reason::Recompiles)), "{fw}");
        let n = r.result.compiles.unwrap();
        assert!(n >= times, "{fw}: compiled {n} times");
        let message = r.result.message.as_deref().unwrap();
        assert!(
            message.starts_with(&format!("compiled {n} times for the same inputs: 1 at the first call")),
            "{message}"
        );
    }
    // torch's `compiled` (torch.compile's defaults) takes the graph break and runs it.
    let broken = result(&rows, "torch.where", "cpu/compiled");
    assert_eq!(broken.result.outcome, Outcome::Pass, "{:?}", broken.result.message);
    assert!(broken.result.graph_breaks.unwrap() >= 1, "{:?}", broken.result.graph_breaks);
    let compiled: Target = "cpu/compiled".parse().unwrap();
    // NumPy has no compiled mode: its compiled target is unavailable, never a failure.
    let numpy =
        store.devices(run).unwrap().into_iter().find(|d| d.device == compiled && d.framework.as_str() == "numpy");
    let numpy = numpy.expect("numpy's compiled target is recorded");
    assert!(!numpy.available && numpy.detail.contains("no compiled mode"), "{numpy:?}");
    assert!(rows.iter().all(|r| !(r.function.framework.as_str() == "numpy" && r.result.device == compiled)));

    // The eager-vs-compiled view counts the same.
    let out = mlport().args(["report", "--modes", "--format", "json", "--db"]).arg(&db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["format"], "mlport.modes");
    for (fw, target) in [("torch", "cpu/compiled_fullgraph"), ("jax", "cpu/compiled"), ("tensorflow", "cpu/compiled")] {
        let row =
            doc["rows"].as_array().unwrap().iter().find(|r| r["framework"] == fw && r["compiled"] == target).unwrap();
        let counts: Vec<u64> = ["functions", "compile", "fail_to_compile", "recompile", "change_answer"]
            .iter()
            .map(|k| row[*k].as_u64().unwrap())
            .collect();
        assert_eq!(counts, [3, 1, 1, 1, 0], "{fw}: {row}");
        assert_eq!(row["failure_reasons"]["compile_error"], 1, "{fw}");
        assert!(row["steady"]["functions"].as_u64().unwrap() >= 1, "{fw}: {row}");
        assert!(row["first_call_compiled_ns"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(doc["eager_only"][0][0], "numpy");
    let table = mlport().args(["report", "--modes", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(text.contains("Functions that fail, recompile or change their answer"), "{text}");

    // A script that reproduces a compile error without mlport compiles the call the same way.
    let bad = result(&rows, "jax.numpy.nonzero", "cpu/compiled");
    let out_dir = tmp.path().join("repro");
    mlport().args(["repro", &bad.id.to_string(), "--out"]).arg(&out_dir).arg("--db").arg(&db).assert().success();
    let script = out_dir.join(format!("repro_{}.py", bad.id));
    assert!(std::fs::read_to_string(&script).unwrap().contains("MODE = \"compiled\""));
    let ran = std::process::Command::new(common::python()).arg(&script).output().unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(!ran.status.success() && stderr.contains("ConcretizationTypeError"), "{stderr}");

    // Compiled against eager as a slowdown, steady state and first calls.
    for measure in ["steady", "first-call"] {
        let out = mlport()
            .args(["report", "--slowdown", "cpu..cpu/compiled", "--measure", measure, "--format", "json", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["b"]["device"], "cpu/compiled");
        let names: Vec<&str> =
            doc["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"torch.cumsum") && names.contains(&"jax.numpy.cumsum"), "{measure}: {names:?}");
    }
}
