//! What the benchmarks that drive real workers share: the interpreter they run and the
//! machine's load, printed beside every figure.

use std::path::PathBuf;

/// The interpreter with the frameworks, from `MLPORT_TEST_PYTHON`.
pub fn python() -> PathBuf {
    std::env::var_os("MLPORT_TEST_PYTHON")
        .map(PathBuf::from)
        .expect("set MLPORT_TEST_PYTHON to the managed environment's python (`mlport env` prints it)")
}

/// The 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
