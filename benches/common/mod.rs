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

/// The latency benchmark's torch catalogue (benches/latency.rs, benches/jobs.rs): add on 1e3
/// and 1e6 float32 elements, a 256×256 matmul, argsort of 1e5 — the ops of
/// `benches/latency_timer.py`.
#[allow(dead_code)]
pub const LATENCY_CATALOGUE: &str = r#"
format = 1
framework = "torch"
version = "bench"

[[function]]
name = "torch.add"
  [[function.case]]
  id = "add_1e3"
  inputs = [{ shape = [1000] }, { shape = [1000] }]
  [[function.case]]
  id = "add_1e6"
  inputs = [{ shape = [1000000] }, { shape = [1000000] }]

[[function]]
name = "torch.matmul"
  [[function.case]]
  id = "matmul_256"
  inputs = [{ shape = [256, 256] }, { shape = [256, 256] }]

[[function]]
name = "torch.argsort"
  [[function.case]]
  id = "argsort_1e5"
  inputs = [{ shape = [100000] }]
"#;
