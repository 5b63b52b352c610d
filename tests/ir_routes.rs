//! The export routes, for real (docs/ir-routes.md): one `mlport run --modes eager,onnx,onnx_openvino,stablehlo
//! --quick` of tests/fixtures/ir with the real exporters (torch.onnx.export(dynamo=True),
//! jax2onnx, tf2onnx, jax.export) and runtimes (ONNX Runtime's CPU provider, OpenVINO's CPU device,
//! IREE llvm-cpu),
//! installed into the managed environment on first use of a route (python/ir-routes.lock).
//!
//! Per route: a function that exports, runs and agrees with eager; one the exporter refuses for
//! a stated reason (`export_error`); one the runtime cannot run (`not_implemented`); one whose
//! answer changes (`wrong_result`, counted: eager passed). Routes a framework lacks are
//! unavailable, said once; a route name that does not exist is refused before anything runs.

mod common;

use std::path::Path;
use std::sync::OnceLock;

use common::mlport;
use mlport::model::{Outcome, Reason, ResultRow};
use mlport::store::Store;
use serde_json::Value;

/// The fixture's run, made once for every test of this binary.
fn store() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
    &DB.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("ir.db");
        mlport()
            // Exports take seconds each (the first torch.onnx.export in a process ~15 s): a generous
            // limit, so a loaded machine does not turn them into timeouts.
            .args([
                "run",
                "--modes",
                "eager,onnx,onnx_openvino,stablehlo",
                "--quick",
                "--timeout",
                "600",
                "--catalogue",
            ])
            .arg(common::fixture("ir"))
            .arg("--db")
            .arg(&db)
            .timeout(std::time::Duration::from_secs(2400))
            .assert()
            .success();
        (tmp, db)
    })
    .1
}

fn rows() -> Vec<ResultRow> {
    common::latest_results(store())
}

use common::result_on as result;

fn failed_with(r: &ResultRow, reason: Reason, says: &str) {
    assert_eq!((r.result.outcome, r.result.reason), (Outcome::Fail, Some(reason)), "{:?}", r.result.message);
    let m = r.result.message.as_deref().unwrap_or_default();
    assert!(m.contains(says), "{} on {}: {m}", r.function.name, r.result.device);
}

#[test]
fn a_function_exports_runs_and_agrees_on_every_route() {
    let rows = rows();
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let comparisons = store.comparisons(run).unwrap();
    for (function, target) in [
        ("torch.sin", "cpu/onnx"),
        ("jax.numpy.sin", "cpu/onnx"),
        ("jax.numpy.sin", "cpu/stablehlo"),
        ("tf.math.sin", "cpu/onnx"),
        ("torch.sin", "cpu/onnx_openvino"),
        ("jax.numpy.sin", "cpu/onnx_openvino"),
        ("tf.math.sin", "cpu/onnx_openvino"),
    ] {
        let r = result(&rows, function, target);
        assert_eq!(r.result.outcome, Outcome::Pass, "{function} on {target}: {:?}", r.result.message);
        // The first call exports, compiles and loads the graph: no exporter and runtime do that
        // in under a millisecond. (Comparing it with eager's first call, timed in another process,
        // failed once on a loaded machine: JAX's first eager call also compiles.)
        assert!(
            r.result.first_call_ns.is_some_and(|ns| ns >= 1_000_000),
            "{function} on {target}: export not in the first call ({:?} ns)",
            r.result.first_call_ns
        );
        // Its answer was compared with eager's on the same device, and agreed.
        let against_eager: Vec<_> = comparisons
            .iter()
            .filter(|c| {
                c.case_key == r.case.key && c.device.as_str() == target && c.against.to_string() == "device:cpu"
            })
            .collect();
        assert!(!against_eager.is_empty(), "{function} on {target}: not compared with eager");
        assert!(against_eager.iter().all(|c| c.verdict.as_str() == "agree"), "{against_eager:?}");
    }
}

#[test]
fn an_exporter_refusal_is_an_export_error_with_the_exporters_reason() {
    let rows = rows();
    // torch.export cannot follow a Python branch on a tensor's value.
    failed_with(result(&rows, "torch.Tensor.item", "cpu/onnx"), Reason::ExportError, "torch.export");
    assert_eq!(result(&rows, "torch.Tensor.item", "cpu").result.outcome, Outcome::Pass);
    // jnp.nonzero without `size=`: the output's shape depends on the data.
    for target in ["cpu/onnx", "cpu/stablehlo"] {
        failed_with(result(&rows, "jax.numpy.nonzero", target), Reason::ExportError, "ConcretizationTypeError");
    }
}

#[test]
fn an_operator_the_runtime_lacks_is_not_implemented() {
    let rows = rows();
    failed_with(
        result(&rows, "torch.erf", "cpu/onnx"),
        Reason::NotImplemented,
        "Could not find an implementation for Erf",
    );
    failed_with(result(&rows, "jax.numpy.cumsum", "cpu/onnx"), Reason::NotImplemented, "CumSum");
    // IREE has no lowering for the LAPACK custom call JAX emits for det on cpu.
    failed_with(
        result(&rows, "jax.numpy.linalg.det", "cpu/stablehlo"),
        Reason::NotImplemented,
        "stablehlo.custom_call",
    );
    for f in ["torch.erf", "jax.numpy.linalg.det", "jax.numpy.cumsum"] {
        assert_eq!(result(&rows, f, "cpu").result.outcome, Outcome::Pass, "{f} eager");
    }
}

#[test]
fn an_answer_the_route_changes_is_a_counted_wrong_result() {
    let rows = rows();
    // IREE accumulates the bfloat16 cumsum in bfloat16 (it stalls at 256); JAX's CPU backend
    // accumulates in float32 and agrees with the float64 reference.
    let r = result(&rows, "jax.numpy.cumsum", "cpu/stablehlo");
    assert_eq!(r.result.outcome, Outcome::WrongResult, "{:?}", r.result.message);
    assert_eq!(result(&rows, "jax.numpy.cumsum", "cpu").result.outcome, Outcome::Pass);
    let report: Value =
        serde_json::from_str(&common::stdout(mlport().args(["report", "--format", "json", "--db"]).arg(store())))
            .unwrap();
    let target = report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["framework"] == "jax" && t["device"] == "cpu/stablehlo")
        .expect("jax on cpu/stablehlo in the report");
    let cumsum = target["functions"].as_array().unwrap().iter().find(|f| f["name"] == "jax.numpy.cumsum").unwrap();
    assert_eq!(cumsum["status"], "complete_failure", "{cumsum}");
}

#[test]
fn openvino_runs_the_same_model_in_float32_where_onnx_runtime_keeps_float64() {
    let rows = rows();
    // OpenVINO's CPU device runs f64 models at f32 precision: the float64 cumsum drifts beyond
    // float64's tolerance (rtol 1e-7, atol 1e-7); ONNX Runtime's CumSum kernel stays in float64.
    let r = result(&rows, "torch.cumsum", "cpu/onnx_openvino");
    assert_eq!(r.result.outcome, Outcome::WrongResult, "{:?}", r.result.message);
    assert_eq!(result(&rows, "torch.cumsum", "cpu/onnx").result.outcome, Outcome::Pass);
    assert_eq!(result(&rows, "torch.cumsum", "cpu").result.outcome, Outcome::Pass);
    // The bfloat16 Erf ONNX Runtime has no CPU kernel for, OpenVINO runs (and agrees).
    assert_eq!(result(&rows, "torch.erf", "cpu/onnx_openvino").result.outcome, Outcome::Pass);
}

#[test]
fn the_routes_report_counts_each_framework_and_route() {
    let out = common::stdout(mlport().args(["report", "--routes", "--format", "json", "--db"]).arg(store()));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["format"].as_str(), v["version"].as_u64()), (Some("mlport.routes"), Some(2)));
    let row = |fw: &str, target: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["framework"] == fw && r["compiled"] == target)
            .unwrap_or_else(|| panic!("no row {fw} {target}: {out}"))
            .clone()
    };
    // torch on cpu/onnx: sin and cumsum export and run; item (export_error) and erf (not_implemented) fail.
    let torch = row("torch", "cpu/onnx");
    assert_eq!(
        (torch["functions"].as_u64(), torch["compile"].as_u64(), torch["fail_to_compile"].as_u64()),
        (Some(4), Some(2), Some(2))
    );
    assert_eq!(torch["failure_reasons"]["export_error"], 1);
    assert_eq!(torch["failure_reasons"]["not_implemented"], 1);
    // jax on cpu/stablehlo: sin passes; det fails; cumsum changes its answer; nonzero failed eagerly too
    // (its eager int32 indices are a dtype change against NumPy's int64): not attributable.
    let hlo = row("jax", "cpu/stablehlo");
    assert_eq!(hlo["change_answer"], 1, "{hlo}");
    assert_eq!(hlo["failure_reasons"]["not_implemented"], 1, "{hlo}");
    row("tensorflow", "cpu/onnx");
    // torch on cpu/onnx_openvino: cumsum's float64 answer changes.
    assert_eq!(row("torch", "cpu/onnx_openvino")["change_answer"], 1);
    let table = common::stdout(mlport().args(["report", "--routes", "--db"]).arg(store()));
    assert!(table.contains("Eager vs export routes") && table.contains("export and run"), "{table}");

    // Each route names its runtime, with what the runtimes themselves say here (asked apart):
    // OpenVINO's CPU inference precision is bf16 on CPUs with native bfloat16, f32 elsewhere.
    let asked = std::process::Command::new(common::python())
        .args([
            "-c",
            "import onnxruntime as o, openvino as v; \
             print(o.__version__, v.__version__.split('-')[0], \
             v.Core().get_property('CPU', 'INFERENCE_PRECISION_HINT').get_type_name())",
        ])
        .output()
        .expect("python runs");
    let asked = String::from_utf8(asked.stdout).unwrap();
    let [ort, ov, hint] = asked.split_whitespace().collect::<Vec<_>>()[..] else { panic!("{asked}") };
    assert_eq!(row("torch", "cpu/onnx")["runtime"], format!("ONNX Runtime {ort}"));
    let runtime = row("jax", "cpu/onnx_openvino")["runtime"].as_str().unwrap_or_default().to_string();
    assert!(runtime.starts_with(&format!("OpenVINO {ov} CPU plugin, inference precision {hint}")), "{runtime}");
    assert!(table.contains(&format!("cpu/onnx_openvino (torch, jax, tensorflow): {runtime}")), "{table}");
}

#[test]
fn a_route_a_framework_lacks_is_unavailable_not_failed() {
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let devices = store.devices(run).unwrap();
    for fw in ["torch", "tensorflow"] {
        let d = devices
            .iter()
            .find(|d| d.framework.as_str() == fw && d.device.as_str() == "cpu/stablehlo")
            .unwrap_or_else(|| panic!("{fw} cpu/stablehlo not recorded: {devices:?}"));
        assert!(!d.available && d.detail.contains("no stablehlo route"), "{d:?}");
    }
    assert!(
        rows()
            .iter()
            .all(|r| !(r.function.framework.as_str() == "torch" && r.result.device.as_str() == "cpu/stablehlo"))
    );
}

#[test]
fn a_route_that_does_not_exist_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = mlport()
        .args(["run", "--modes", "eager,openvino", "--db"])
        .arg(tmp.path().join("x.db"))
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown mode `openvino`") && err.contains("onnx_openvino or stablehlo"), "{err}");
    assert!(!tmp.path().join("x.db").exists(), "nothing is recorded");
}

#[test]
fn repro_exports_and_runs_the_same_way() {
    let rows = rows();
    let r = result(&rows, "jax.numpy.cumsum", "cpu/stablehlo");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("repro");
    mlport().args(["repro", &r.id.to_string(), "--out"]).arg(&dir).arg("--db").arg(store()).assert().success();
    assert!(dir.join("mlport_routes.py").exists(), "the route's code beside the script");
    let script = dir.join(format!("repro_{}.py", r.id));
    let run = std::process::Command::new(common::python()).arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    // The script's own comparison finds the same disagreement: exit 1.
    assert_eq!(run.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("output 0 DISAGREES"), "{stdout}");

    // OpenVINO's float64 cumsum: the script runs the model in OpenVINO (not torch.compile) and
    // finds the same disagreement with the stored eager answer.
    let r = result(&rows, "torch.cumsum", "cpu/onnx_openvino");
    let dir = out.path().join("repro-ov");
    mlport().args(["repro", &r.id.to_string(), "--out"]).arg(&dir).arg("--db").arg(store()).assert().success();
    let script = dir.join(format!("repro_{}.py", r.id));
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains(r#"MODE = "onnx_openvino""#) && text.contains("ROUTE = True"), "{text}");
    let run = std::process::Command::new(common::python()).arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("output 0 DISAGREES"), "{stdout}");
}
