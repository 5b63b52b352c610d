//! vulkan:0 for real (docs/vulkan.md): Mesa's lavapipe (Debian's `mesa-vulkan-drivers`,
//! installed with apt-get when missing, as `.ci/run` does), IREE's vulkan-spirv compiler and
//! its Vulkan driver (python/ir-routes.lock). One `mlport run --device cpu,vulkan:0 --jax-x64` of
//! tests/fixtures/vulkan: real SPIR-V on a real Vulkan driver, no test double.
//!
//! A case that agrees on vulkan:0 (JAX through StableHLO, torch through ONNX and IREE's ONNX
//! importer); float64 as it really behaves (IREE demotes it: `dtype_changed` from StableHLO,
//! `dtype_unsupported` from ONNX); a compile error classified with IREE's message; no Vulkan
//! driver → unavailable, said once, nothing counted; `repro` of a vulkan:0 result.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::mlport;
use mlport::model::{Outcome, Reason, ResultRow};
use mlport::store::Store;

/// Installs Debian's Vulkan loader and lavapipe when this machine has no Vulkan device and we
/// are root with apt-get (as `.ci/run` does); panics with the command otherwise.
fn ensure_lavapipe() {
    if mlport::vulkan::devices().is_ok() {
        return;
    }
    if let Err(why) = common::apt_install(&["libvulkan1", "mesa-vulkan-drivers"]) {
        panic!("no Vulkan device ({:?}) and {why}", mlport::vulkan::devices());
    }
    let found = mlport::vulkan::devices();
    assert!(found.is_ok(), "lavapipe installed but no Vulkan device: {found:?}");
}

/// The fixture's run on cpu and vulkan:0, made once for every test of this binary.
fn store() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DB.get_or_init(|| {
        ensure_lavapipe();
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("vulkan.db");
        mlport()
            // Exports and SPIR-V compiles take seconds each on a loaded machine: a generous limit.
            .args(["run", "--device", "cpu,vulkan:0", "--framework", "jax,torch", "--jax-x64", "--timeout", "600"])
            .arg("--catalogue")
            .arg(common::fixture("vulkan"))
            .arg("--db")
            .arg(&db)
            .timeout(std::time::Duration::from_secs(1800))
            .assert()
            .success();
        (tmp, db)
    })
    .1
}

fn rows() -> Vec<ResultRow> {
    common::latest_results(store())
}

/// The result of `function` at `dtype` on `target`.
fn result<'a>(rows: &'a [ResultRow], function: &str, dtype: &str, target: &str) -> &'a ResultRow {
    rows.iter()
        .find(|r| {
            r.function.name == function
                && r.result.device.as_str() == target
                && r.case.dtype.map(|d| d.as_str()) == Some(dtype)
        })
        .unwrap_or_else(|| panic!("no result of {function} at {dtype} on {target}"))
}

fn message(r: &ResultRow) -> &str {
    r.result.message.as_deref().unwrap_or_default()
}

#[test]
fn a_case_agrees_on_vulkan_through_each_route() {
    let rows = rows();
    for (function, target) in [("jax.numpy.sin", "vulkan:0/stablehlo"), ("torch.add", "vulkan:0/onnx")] {
        let r = result(&rows, function, "float32", target);
        assert_eq!(r.result.outcome, Outcome::Pass, "{function} on {target}: {:?}", r.result.message);
        assert!(r.result.first_call_ns.is_some_and(|ns| ns > 0), "the first call (compile) is timed: {r:?}");
        assert!(!r.result.samples_ns.is_empty(), "the steady state is timed apart: {r:?}");
    }
    // The run records the Vulkan device the routes ran on, as the loader describes it.
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let devices = store.devices(run).unwrap();
    let d = devices.iter().find(|d| d.device.as_str() == "vulkan:0/stablehlo" && d.available).expect("recorded");
    let loader = mlport::vulkan::device(0).unwrap();
    assert!(d.detail.contains("vulkan-spirv") && d.detail.contains(&loader.name), "{}", d.detail);
}

#[test]
fn float64_is_recorded_as_iree_really_treats_it() {
    let rows = rows();
    // StableHLO: IREE demotes f64 to f32 and changes the signature; the answer comes back float32.
    let r = result(&rows, "jax.numpy.sin", "float64", "vulkan:0/stablehlo");
    assert_eq!((r.result.outcome, r.result.reason), (Outcome::WrongResult, Some(Reason::DtypeChanged)), "{r:?}");
    assert!(message(r).contains("float32"), "{}", message(r));
    // ...while the same case passed in float64 on the CPU, so it counts against vulkan:0.
    assert_eq!(result(&rows, "jax.numpy.sin", "float64", "cpu").result.outcome, Outcome::Pass);
    // ONNX through IREE's importer: demoted inside, float64 at the interface: refused.
    let r = result(&rows, "torch.sin", "float64", "vulkan:0/onnx");
    assert_eq!((r.result.outcome, r.result.reason), (Outcome::Fail, Some(Reason::DtypeUnsupported)), "{r:?}");
    let m = message(r);
    assert!(m.starts_with("IREE import (ONNX importer): unsupported dtype float64 on vulkan:0/onnx"), "{m}");
    assert_eq!(r.result.error_type.as_deref(), Some("mlport.UnsupportedDtype"), "{r:?}");
}

#[test]
fn a_compile_error_keeps_irees_message() {
    let rows = rows();
    let r = result(&rows, "jax.numpy.matmul", "bfloat16", "vulkan:0/stablehlo");
    assert_eq!((r.result.outcome, r.result.reason), (Outcome::Fail, Some(Reason::DtypeUnsupported)), "{r:?}");
    let m = message(r);
    assert!(m.starts_with("IREE compile (vulkan-spirv, target llvmpipe)"), "the stage first: {m}");
    assert!(m.contains("failed to legalize operation 'vector.bitcast'") && m.contains("bf16"), "IREE's own words: {m}");
    assert_eq!(
        r.result.error_type.as_deref(),
        Some("iree.compiler.tools.binaries.CompilerToolError"),
        "the compiler's own exception type: {r:?}"
    );
    assert_eq!(result(&rows, "jax.numpy.matmul", "bfloat16", "cpu").result.outcome, Outcome::Pass);
}

#[test]
fn no_vulkan_driver_means_unavailable_said_once_and_nothing_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("none.db");
    let out = mlport()
        .args(["run", "--device", "cpu,vulkan:0", "--framework", "jax,torch", "--function", "jax.numpy.sin,torch.add"])
        .arg("--catalogue")
        .arg(common::fixture("vulkan"))
        .arg("--db")
        .arg(&db)
        // The loader finds no driver: old loaders read VK_ICD_FILENAMES, newer VK_DRIVER_FILES.
        .env("VK_ICD_FILENAMES", tmp.path().join("none.json"))
        .env("VK_DRIVER_FILES", tmp.path().join("none.json"))
        .timeout(std::time::Duration::from_secs(900))
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("vulkan:0 is unavailable").count(),
        1,
        "said once, for two frameworks and two routes: {err}"
    );
    assert!(err.contains("mesa-vulkan-drivers"), "with how to get one: {err}");
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let devices = store.devices(run).unwrap();
    let vulkan: Vec<_> = devices.iter().filter(|d| d.device.is_vulkan()).collect();
    assert_eq!(vulkan.len(), 4, "each framework's two routes recorded: {devices:?}");
    assert!(vulkan.iter().all(|d| !d.available), "{vulkan:?}");
    let rows = common::latest_results(&db);
    assert!(rows.iter().all(|r| !r.result.device.is_vulkan()), "nothing ran on vulkan:0");
    assert!(rows.iter().any(|r| r.result.device.as_str() == "cpu"), "the CPU still ran");
}

#[test]
fn repro_runs_the_case_on_the_vulkan_device_again() {
    let rows = rows();
    let r = result(&rows, "jax.numpy.sin", "float64", "vulkan:0/stablehlo");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("repro");
    mlport().args(["repro", &r.id.to_string(), "--out"]).arg(&dir).arg("--db").arg(store()).assert().success();
    let script = dir.join(format!("repro_{}.py", r.id));
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains(r#"DEVICE = "vulkan:0""#) && text.contains(r#"MODE = "stablehlo""#), "{text}");
    let run = Command::new(common::python()).arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    // The script's own check finds the same float32 answer to a float64 request: exit 1, and
    // no crash on the way out (IREE's Vulkan objects are released before the interpreter ends).
    assert_eq!(run.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("dtype float32, expected float64 (dtype changed)"), "{stdout}");
}
