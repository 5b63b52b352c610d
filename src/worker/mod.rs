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
pub const SOURCES: [(&str, &str); 5] = [
    ("mlport_supervisor.py", include_str!("python/mlport_supervisor.py")),
    ("mlport_worker.py", include_str!("python/mlport_worker.py")),
    ("mlport_adapters.py", include_str!("python/mlport_adapters.py")),
    ("mlport_inputs.py", include_str!("python/mlport_inputs.py")),
    // The IR routes (issue 17): export to ONNX / StableHLO and run on ONNX Runtime / IREE.
    ("mlport_routes.py", include_str!("python/mlport_routes.py")),
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
