//! Issue 17's benchmark: for 20 small torch ops, eager against the `onnx` route (torch.onnx.export
//! with dynamo=True, then ONNX Runtime on the CPUExecutionProvider) in one session — the
//! route/eager ratio of steady-state medians per op, beside the route's first call (export,
//! session creation and the first run, as mlport stores it) and, measured apart by
//! `benches/route_stages.py`, the export and the session-creation times.
//!
//! One `mlport run --framework torch --modes eager,onnx --jobs 1 --threads 1` of the catalogue
//! below (both targets timed by mlport's blocked timer, one thread each), then `report --routes
//! --format json`. Run (about 6 min on a quiet 2-core machine; the route's export packages are
//! installed into the managed environment on first use):
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
        .args(["run", "--framework", "torch", "--modes", "eager,onnx", "--jobs", "1", "--threads", "1", "--catalogue"])
        .arg(&cat)
        .arg("--db")
        .arg(&db)
        .args(["--format", "json"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("mlport runs");
    assert!(status.success(), "mlport run failed");
    println!("mlport run (eager + onnx, 20 ops): {:.1} s; load after: {}", t0.elapsed().as_secs_f64(), load());
    let out = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .args(["report", "--routes", "--format", "json", "--db"])
        .arg(&db)
        .output()
        .expect("mlport report runs");
    let v: Value = serde_json::from_slice(&out.stdout).expect("report --routes JSON");
    let row = v["rows"].as_array().and_then(|r| r.first()).expect("a torch cpu/onnx row").clone();
    let ratios: BTreeMap<String, f64> = row["steady_ratios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_f64().unwrap()))
        .collect();

    // The route's first calls, per op, from the store (export + session + first run).
    let store = mlport::store::Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let mut first: BTreeMap<String, (Option<u64>, Option<u64>, String)> = BTreeMap::new();
    for r in store.results(run).unwrap() {
        let e = first.entry(r.function.name.clone()).or_default();
        match r.result.device.as_str() {
            "cpu" => e.0 = r.result.first_call_ns,
            "cpu/onnx" => {
                e.1 = r.result.first_call_ns;
                e.2 = r.result.outcome.to_string();
            }
            _ => {}
        }
    }
    let stages = Command::new(python())
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/route_stages.py"))
        .env("PYTHONPATH", concat!(env!("CARGO_MANIFEST_DIR"), "/src/worker/python"))
        .output()
        .expect("python runs route_stages.py");
    let stages: Value = serde_json::from_slice(&stages.stdout).unwrap_or(Value::Null);

    println!(
        "\n{:<16} {:>9} {:>13} {:>15} {:>11} {:>12}",
        "op", "outcome", "onnx/eager", "first call", "export", "session"
    );
    let ms = |ns: Option<u64>| ns.map_or("—".to_string(), |n| format!("{:.1} ms", n as f64 / 1e6));
    for (name, (_eager, onnx, outcome)) in &first {
        let s = &stages[name.as_str()];
        println!(
            "{:<16} {:>9} {:>13} {:>15} {:>11} {:>12}",
            name,
            outcome,
            ratios.get(name).map_or("—".into(), |r| format!("{r:.2}×")),
            ms(*onnx),
            s["export_ms"].as_f64().map_or("—".into(), |x| format!("{x:.0} ms")),
            s["session_ms"].as_f64().map_or("—".into(), |x| format!("{x:.1} ms")),
        );
    }
    let d = &row["steady"];
    println!(
        "\nonnx/eager steady state over {} ops: median {}, geometric mean {} [{}], {} faster on the route; load: {}",
        d["functions"],
        d["median"].as_f64().map_or("—".into(), |x| format!("{x:.2}×")),
        d["geometric_mean_ci"]["point"].as_f64().map_or("—".into(), |x| format!("{x:.2}×")),
        format!(
            "{:.2}, {:.2}",
            d["geometric_mean_ci"]["lower"].as_f64().unwrap_or(f64::NAN),
            d["geometric_mean_ci"]["upper"].as_f64().unwrap_or(f64::NAN)
        ),
        d["faster"],
        load()
    );
}
