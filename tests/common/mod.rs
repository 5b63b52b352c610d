//! Shared set-up for the integration tests: the Python interpreter with the real
//! frameworks. By default the managed environment (created on first use, as `mlport env`
//! would); `MLPORT_TEST_PYTHON` points at another interpreter that has them.

#![allow(dead_code)]

pub mod postgres;
pub mod snapshot;

use std::path::PathBuf;
use std::sync::OnceLock;

use mlport::model::Framework;

/// The interpreter the tests run workers with.
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        if let Some(p) = std::env::var_os("MLPORT_TEST_PYTHON").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let env = mlport::pyenv::ensure_managed(&Framework::ALL).expect("the managed Python environment");
        assert!(env.install_failures.is_empty(), "frameworks failed to install: {:?}", env.install_failures.keys());
        env.python
    })
    .clone()
}

/// The worker sources, written to a temporary folder.
pub fn worker_dir(tmp: &std::path::Path) -> PathBuf {
    mlport::worker::install_scripts(&tmp.join("worker")).expect("worker sources")
}

/// How the runner tests run real workers: [`python`], the worker sources in `tmp`, the run folder
/// `tmp/run`, the cpu target only, 60 s per case, 300 s to start.
pub fn run_config(tmp: &std::path::Path) -> mlport::runner::RunConfig {
    mlport::runner::RunConfig {
        python: python(),
        script_dir: worker_dir(tmp),
        run_dir: tmp.join("run"),
        devices: Some(vec![mlport::model::Target::cpu()]),
        case_timeout: std::time::Duration::from_secs(60),
        start_timeout: std::time::Duration::from_secs(300),
        ..mlport::runner::RunConfig::default()
    }
}

/// A fixture path under tests/fixtures.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join(rel)
}

/// An interpreter with the frameworks and pytest + pytest-json-report, for `mlport pytest`:
/// [`python`] when it has them (`MLPORT_TEST_PYTHON` may predate them in the lock), else the
/// managed environment of the current lock, which installs them with NumPy.
pub fn pytest_python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let has_pytest = |py: &std::path::Path| {
            std::process::Command::new(py)
                .args(["-c", "import pytest, pytest_jsonreport, torch"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let py = python();
        if has_pytest(&py) {
            return py;
        }
        let env = mlport::pyenv::ensure_managed(&Framework::ALL).expect("the managed Python environment");
        assert!(has_pytest(&env.python), "{} lacks pytest, pytest-json-report or torch", env.python.display());
        env.python
    })
    .clone()
}

/// The paper's data set beside the clone; its absence fails the test, never passes it.
pub fn paper_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/paper-data");
    assert!(
        dir.join("README.md").is_file() && dir.join("pytorch_timings").is_dir(),
        "the paper's data set is missing: expected it at {} (shared/ beside the clone)",
        dir.display()
    );
    dir
}

/// The standard output of a command that must succeed.
pub fn stdout(c: &mut assert_cmd::Command) -> String {
    String::from_utf8(c.assert().success().get_output().stdout.clone()).unwrap()
}

/// The `mlport` binary under test, with colour off.
pub fn mlport() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("mlport").unwrap();
    c.env("NO_COLOR", "1");
    c
}

/// The `framework`/`device` entry of a JSON report's `targets`.
pub fn target<'a>(report: &'a serde_json::Value, fw: &str, device: &str) -> &'a serde_json::Value {
    report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["framework"] == fw && t["device"] == device)
        .unwrap_or_else(|| panic!("no target {fw} {device} in {report:#}"))
}

/// Per (framework, device, function) its status, from a `mlport.portability` or
/// `mlport.campaign` machine's `targets` list.
pub fn statuses(targets: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for t in targets.as_array().unwrap() {
        for f in t["functions"].as_array().unwrap() {
            out.insert(format!("{}/{}/{}", t["framework"], t["device"], f["name"]), f["status"].to_string());
        }
    }
    out
}

/// `mlport run --catalogue tests/fixtures/CATALOGUE --db DB --python PY` with `args` (devices,
/// frameworks, timing budget), which must succeed; its output for the caller to read.
pub fn run_catalogue(db: &std::path::Path, catalogue: &str, args: &[&str]) -> assert_cmd::assert::Assert {
    mlport()
        .arg("run")
        .args(args)
        .arg("--catalogue")
        .arg(fixture(catalogue))
        .arg("--db")
        .arg(db)
        .arg("--python")
        .arg(python())
        .assert()
        .success()
}

/// An interpreter with pytest, pytest-json-report, Hypothesis, pytest-rerunfailures and NumPy,
/// for the suites written to test `mlport pytest`'s streaming: `MLPORT_TEST_SUITE_PYTHON`, else
/// a virtual environment of its own (never the shared managed one), created on first use under
/// the mlport cache folder (`<cache>/test-envs/pytest-suite-1`) with `python3 -m venv` and pip
/// from PyPI, and kept.
pub fn suite_python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        if let Some(p) = std::env::var_os("MLPORT_TEST_SUITE_PYTHON").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let dir = mlport::pyenv::cache_dir().join("test-envs").join("pytest-suite-1");
        let py = dir.join("bin").join("python");
        let ready = dir.join(".ready");
        if !ready.is_file() {
            let ok = std::process::Command::new("python3").args(["-m", "venv"]).arg(&dir).status();
            assert!(ok.is_ok_and(|s| s.success()), "python3 -m venv {}", dir.display());
            let ok = std::process::Command::new(&py)
                .args(["-m", "pip", "install", "-q", "pytest", "pytest-json-report", "hypothesis"])
                .args(["pytest-rerunfailures", "numpy"])
                .status();
            assert!(ok.is_ok_and(|s| s.success()), "pip install into {}", dir.display());
            std::fs::write(&ready, "").unwrap();
        }
        py
    })
    .clone()
}

/// The results of the latest run in the SQLite store `db`.
pub fn latest_results(db: &std::path::Path) -> Vec<mlport::model::ResultRow> {
    let store = mlport::store::Store::open(db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    store.results(run).unwrap()
}

/// The result of `function` on `target` among `rows`; panics naming both when there is none.
pub fn result_on<'a>(
    rows: &'a [mlport::model::ResultRow],
    function: &str,
    target: &str,
) -> &'a mlport::model::ResultRow {
    rows.iter()
        .find(|r| r.function.name == function && r.result.device.as_str() == target)
        .unwrap_or_else(|| panic!("no result of {function} on {target}"))
}

/// [`python`] with what the frameworks' own test data imports (`expecttest`, `absl-py`): the
/// managed environment gets the `suites` add-on, as `mlport run --suite` gives it; an
/// interpreter from `MLPORT_TEST_PYTHON` must have them already.
pub fn suites_python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let py = python();
        let has = |py: &std::path::Path| {
            std::process::Command::new(py)
                .args(["-c", "import expecttest, absl"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if has(&py) {
            return py;
        }
        let env = mlport::pyenv::ensure_managed(&Framework::ALL).expect("the managed Python environment");
        mlport::pyenv::addon::ensure(&env, &mlport::pyenv::addon::SUITES).expect("the suites add-on");
        assert!(has(&env.python), "{} lacks expecttest or absl after the suites add-on", env.python.display());
        env.python
    })
    .clone()
}

/// Installs Debian `packages` with apt-get (`update`, then `install -y`, noninteractive), as
/// `.ci/run` does, for tests that start a real part from them. `Err` naming the command when this
/// cannot be tried (not root, or no apt-get); panics when apt-get itself fails.
pub fn apt_install(packages: &[&str]) -> Result<(), String> {
    let command = format!("apt-get install -y {}", packages.join(" "));
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !std::path::Path::new("/usr/bin/apt-get").exists() {
        return Err(format!("installing it needs root with apt-get: {command}"));
    }
    eprintln!("{command}");
    let _ = std::process::Command::new("apt-get").args(["update", "-qq"]).status();
    let status = std::process::Command::new("apt-get")
        .args(["install", "-y", "-qq"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .expect("apt-get");
    assert!(status.success(), "{command} failed");
    Ok(())
}
