//! Workers: the Python processes that call framework functions, one per
//! (framework, device), and the versioned protocol the core speaks with them.
//! Each worker runs under a supervisor (`mlport_supervisor.py`) that keeps what it starts within
//! reach. The worker's sources are embedded in the binary and written to a cache folder.

pub mod oom;
pub mod pipes;
pub mod process;
pub mod protocol;

pub use process::{CPUS_VAR, Failure, Worker, WorkerSpec, install_scripts, pinned_env, spawn, thread_env};

use sha2::{Digest, Sha256};

/// The embedded worker sources, (file name, text).
pub const SOURCES: [(&str, &str); 6] = [
    ("mlport_supervisor.py", include_str!("python/mlport_supervisor.py")),
    ("mlport_worker.py", include_str!("python/mlport_worker.py")),
    ("mlport_adapters.py", include_str!("python/mlport_adapters.py")),
    ("mlport_inputs.py", include_str!("python/mlport_inputs.py")),
    // The IR routes (issue 17): export to ONNX / StableHLO and run on ONNX Runtime / IREE.
    ("mlport_routes.py", include_str!("python/mlport_routes.py")),
    // The frameworks' own test data (issue 36): listing suites and building their samples.
    ("mlport_suites.py", include_str!("python/mlport_suites.py")),
];

/// A short hash of the embedded sources: the cache folder's name, so that two mlport
/// versions never share worker files.
pub fn sources_hash() -> String {
    let mut h = Sha256::new();
    for (name, text) in SOURCES {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
    }
    hex::encode(&h.finalize()[..6])
}

#[cfg(test)]
mod tests {
    use super::SOURCES;
    use crate::model::Mode;

    fn source(name: &str) -> &'static str {
        SOURCES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).unwrap()
    }

    /// Every mode the core can ask for is one the worker accepts (`--mode` choices), and every
    /// export route is one the routes module runs: a mode missing on the Python side would turn
    /// each of its cases into an `other` failure rather than a refusal.
    #[test]
    fn the_worker_accepts_every_mode_and_runs_every_route() {
        let choices = source("mlport_worker.py")
            .lines()
            .find(|l| l.contains("\"--mode\""))
            .expect("the worker's --mode argument");
        let routes = source("mlport_routes.py").lines().find(|l| l.starts_with("ROUTES = ")).expect("ROUTES");
        for m in Mode::ALL {
            assert!(choices.contains(&format!("\"{}\"", m.as_str())), "--mode lacks {m}: {choices}");
            assert_eq!(routes.contains(&format!("\"{}\"", m.as_str())), m.is_route(), "ROUTES and {m}: {routes}");
        }
    }
}
