//! `python/requirements-cuda.lock` resolves for Linux x86_64 with CPython 3.11: pip's resolver,
//! in a dry run with `--platform` tags, installs every top-level package of the CUDA stack under
//! the lock's constraints. No GPU is needed. Ignored by default: pip 23 downloads the wheels
//! PyPI serves no separate metadata for (about 3 GB, 3 min here); run it with
//! `cargo test --test cuda_lock -- --ignored` after changing the lock (docs/stacks.md).

mod common;

use mlport::model::Framework;
use mlport::pyenv::Stack;

#[test]
#[ignore = "downloads about 3 GB of wheels: cargo test --test cuda_lock -- --ignored"]
fn the_cuda_lock_resolves_for_linux_x86_64() {
    let tmp = tempfile::tempdir().unwrap();
    let lock = tmp.path().join("requirements-cuda.lock");
    std::fs::write(&lock, Stack::Cuda.lock()).unwrap();
    let report = tmp.path().join("report.json");
    let packages: Vec<&str> = Framework::ALL.iter().flat_map(|f| Stack::Cuda.packages(*f).iter().copied()).collect();
    let mut cmd = std::process::Command::new(common::python());
    cmd.args(["-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--quiet"]).args([
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
    ]);
    // pip 23 takes the platform tags literally: every manylinux glibc level up to 2.28.
    for minor in 17..=28 {
        cmd.arg("--platform").arg(format!("manylinux_2_{minor}_x86_64"));
    }
    cmd.args(["--platform", "manylinux2014_x86_64", "--target"])
        .arg(tmp.path().join("target"))
        .arg("-c")
        .arg(&lock)
        .arg("--report")
        .arg(&report)
        .args(&packages);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "pip could not resolve the CUDA lock:\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let installed: Vec<(String, String)> = report["install"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let m = &i["metadata"];
            (m["name"].as_str().unwrap().to_lowercase().replace('_', "-"), m["version"].as_str().unwrap().to_string())
        })
        .collect();
    // Exactly the lock's pins, and the CUDA builds among them.
    let pins: Vec<(String, String)> = Stack::Cuda
        .lock()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once("=="))
        .map(|(n, v)| (n.trim().to_lowercase().replace('_', "-"), v.trim().to_string()))
        .collect();
    for p in &installed {
        assert!(pins.contains(p), "{p:?} is not pinned by the lock");
    }
    for name in ["jax-cuda13-plugin", "jax-cuda13-pjrt", "tensorflow", "nvidia-cudnn-cu12", "torch"] {
        assert!(installed.iter().any(|(n, _)| n == name), "{name} missing from {installed:?}");
    }
    assert!(!installed.iter().any(|(n, _)| n == "tensorflow-cpu"), "the CUDA stack installs tensorflow, not -cpu");
}
