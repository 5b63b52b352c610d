//! Shared set-up for the integration tests: the Python interpreter with the real
//! frameworks. By default the managed environment (created on first use, as `mlport env`
//! would); `MLPORT_TEST_PYTHON` points at another interpreter that has them.

#![allow(dead_code)]

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

/// A fixture path under tests/fixtures.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join(rel)
}
