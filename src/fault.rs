//! Named fault-injection points for mlport's own tests (issue 23): where a test must kill
//! mlport at an exact moment that no outside timing can hit reliably. With
//! `MLPORT_FAULT=<name>` in the environment, [`point`]`("<name>")` kills the process with
//! SIGKILL, as `kill -9` would (no destructor, no handler, no flush). Without the variable, or
//! with another name, it does nothing; no user-facing behaviour depends on it.
//!
//! The points (docs/protocol.md, "Faults"):
//! - `after-create-run`: `mlport run` has stored a new run with its plan and not yet taken the
//!   run's lock or started a worker.

/// The environment variable naming the fault-injection point to die at.
pub const VAR: &str = "MLPORT_FAULT";

/// Kills this process with SIGKILL when `MLPORT_FAULT` is `name`; otherwise returns.
pub fn point(name: &str) {
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        tracing::warn!("{VAR}={name}: killing mlport here (fault injection)");
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
