//! Issue 17's benchmark: for 20 small torch ops, eager against the `onnx` route (torch.onnx.export
//! with dynamo=True, then ONNX Runtime on the CPUExecutionProvider) and the `onnx_openvino` route
//! (the same ONNX model compiled by OpenVINO for its CPU plugin) in one session — the route/eager
//! ratio of steady-state medians per op, beside the routes' first calls (export, session creation
//! or OpenVINO's compile, and the first run, as mlport stores them) and, measured apart by
//! `benches/route_stages.py`, the export, the ONNX Runtime session-creation and the OpenVINO
//! compile times.
//!
//! One `mlport run --framework torch --modes eager,onnx,onnx_openvino --jobs 1 --threads 1` of
//! the catalogue below (all three targets timed by mlport's blocked timer, one thread each), then
//! `report --routes --format json`. Run (about 10 min on a quiet 2-core machine; the routes'
//! packages are installed into the managed environment on first use):
//!
//! ```text
//! MLPORT_TEST_PYTHON=$(ls -d ~/.cache/mlport/envs/py-*/bin/python) cargo bench --bench ir_routes
//! ```

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{load, python};

/// 20 small ops: 10 unary and 5 binary elementwise on 4,096 float32 elements, a 64×64 matmul,
/// two reductions, softmax and cumsum over a 64×64 matrix — the ops of `route_stages.py`.
fn catalogue() -> String {
    let mut s = String::from("format = 1\nframework = \"torch\"\nversion = \"bench\"\n");
    let unary = ["sin", "cos", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "erf"];
    for op in unary {
        let dist = if matches!(op, "log" | "sqrt") { ", dist = \"positive\"" } else { "" };
        s += &format!(
            "\n[[function]]\nname = \"torch.{op}\"\n  [[function.case]]\n  id = \"v4096\"\n  dtypes = [\"float32\"]\n  \
             inputs = [ {{ shape = [4096]{dist} }} ]\n"
        );
    }
    for op in ["add", "mul", "sub", "div", "maximum"] {
        s += &format!(
            "\n[[function]]\nname = \"torch.{op}\"\n  [[function.case]]\n  id = \"v4096\"\n  dtypes = [\"float32\"]\n  \
             inputs = [ {{ shape = [4096] }}, {{ shape = [4096], dist = \"positive\" }} ]\n"
        );
    }
    for (op, inputs, kwargs) in [
        ("matmul", "{ shape = [64, 64] }, { shape = [64, 64] }", ""),
        ("sum", "{ shape = [64, 64] }", ""),
        ("mean", "{ shape = [64, 64] }", ""),
        ("softmax", "{ shape = [64, 64] }", "\n  kwargs = { dim = 1 }"),
        ("cumsum", "{ shape = [64, 64] }", "\n  kwargs = { dim = 1 }"),
    ] {
        s += &format!(
            "\n[[function]]\nname = \"torch.{op}\"\n  [[function.case]]\n  id = \"m64\"\n  dtypes = [\"float32\"]\n  \
             inputs = [ {inputs} ]{kwargs}\n"
        );
    }
    s
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("cat");
    std::fs::create_dir_all(&cat).unwrap();
    std::fs::write(cat.join("torch.toml"), catalogue()).unwrap();
    let db = tmp.path().join("routes.db");
    println!("load before: {}", load());
    let t0 = std::time::Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .args([
            "run",
            "--framework",
            "torch",
            "--modes",
            "eager,onnx,onnx_openvino",
            "--jobs",
            "1",
            "--threads",
            "1",
            "--catalogue",
        ])
        .arg(&cat)
        .arg("--db")
        .arg(&db)
        .args(["--format", "json"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("mlport runs");
    assert!(status.success(), "mlport run failed");
    println!(
        "mlport run (eager + onnx + onnx_openvino, 20 ops): {:.1} s; load after: {}",
        t0.elapsed().as_secs_f64(),
        load()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .args(["report", "--routes", "--format", "json", "--db"])
        .arg(&db)
        .output()
        .expect("mlport report runs");
    let v: Value = serde_json::from_slice(&out.stdout).expect("report --routes JSON");
    // The report's rows, one per route: `compiled` names the route's target.
    let row = |target: &str| -> Value {
        v["rows"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["compiled"] == target))
            .unwrap_or_else(|| panic!("a torch {target} row in report --routes"))
            .clone()
    };
    let routes = ["cpu/onnx", "cpu/onnx_openvino"].map(|t| (t, row(t)));
    let ratios: Vec<BTreeMap<String, f64>> = routes
        .iter()
        .map(|(_, r)| {
            r["steady_ratios"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_f64().unwrap()))
                .collect()
        })
        .collect();

    // Per op and target, the first call and the outcome, from the store.
    let store = mlport::store::Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let mut first: BTreeMap<String, BTreeMap<String, (Option<u64>, String)>> = BTreeMap::new();
    for r in store.results(run).unwrap() {
        first
            .entry(r.function.name.clone())
            .or_default()
            .insert(r.result.device.to_string(), (r.result.first_call_ns, r.result.outcome.to_string()));
    }
    let stages = Command::new(python())
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/route_stages.py"))
        .env("PYTHONPATH", concat!(env!("CARGO_MANIFEST_DIR"), "/src/worker/python"))
        .output()
        .expect("python runs route_stages.py");
    let stages: Value = serde_json::from_slice(&stages.stdout).unwrap_or(Value::Null);

    println!(
        "\n{:<16} {:>9} {:>9} {:>11} {:>11} {:>12} {:>12} {:>9} {:>9} {:>11}",
        "op", "ort", "openvino", "ort/eager", "ov/eager", "ort 1st", "ov 1st", "export", "session", "ov compile"
    );
    let ms = |ns: Option<u64>| ns.map_or("—".to_string(), |n| format!("{:.1} ms", n as f64 / 1e6));
    let ratio = |i: usize, name: &str| ratios[i].get(name).map_or("—".into(), |r| format!("{r:.2}×"));
    let stage =
        |s: &Value, key: &str, digits: usize| s[key].as_f64().map_or("—".into(), |x| format!("{x:.digits$} ms"));
    for (name, targets) in &first {
        let s = &stages[name.as_str()];
        let at = |t: &str| targets.get(t).cloned().unwrap_or((None, "—".into()));
        let (ort, ov) = (at("cpu/onnx"), at("cpu/onnx_openvino"));
        println!(
            "{:<16} {:>9} {:>9} {:>11} {:>11} {:>12} {:>12} {:>9} {:>9} {:>11}",
            name,
            ort.1,
            ov.1,
            ratio(0, name),
            ratio(1, name),
            ms(ort.0),
            ms(ov.0),
            stage(s, "export_ms", 0),
            stage(s, "session_ms", 1),
            stage(s, "openvino_compile_ms", 1),
        );
    }
    for (target, r) in &routes {
        let d = &r["steady"];
        println!(
            "\n{target} / eager steady state over {} ops: median {}, geometric mean {} [{:.2}, {:.2}], {} faster on the route",
            d["functions"],
            d["median"].as_f64().map_or("—".into(), |x| format!("{x:.2}×")),
            d["geometric_mean_ci"]["point"].as_f64().map_or("—".into(), |x| format!("{x:.2}×")),
            d["geometric_mean_ci"]["lower"].as_f64().unwrap_or(f64::NAN),
            d["geometric_mean_ci"]["upper"].as_f64().unwrap_or(f64::NAN),
            d["faster"],
        );
    }
    println!("load: {}", load());
}
