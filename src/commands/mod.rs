//! One file per command, orchestration only: each takes its typed arguments from
//! [`crate::cli`], does its job through the library modules, writes results to stdout (logs
//! and progress to stderr) and returns an [`ExitStatus`]. [`invoke`] runs the command asked for;
//! `main.rs` maps the status, or an error, to the process's exit code — the one place that
//! does (see [`ExitStatus::code`]).

mod audit;
mod diff;
mod env;
mod export;
mod import;
mod import_bundle;
mod list;
mod mine;
mod output;
mod pytest;
mod report;
mod repro;
mod run;
mod runs;
mod sample;
mod scan;

use anyhow::Result;

use crate::cli::{Command, ImportCommand};
pub use output::{StdoutClosed, UsageError};

/// How a command ended, and so the process's exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: done. Failures found in the frameworks are data, not errors.
    Ok,
    /// 1: an error (its chain is printed on stderr), or a run in which no case could run.
    Error,
    /// 2: a usage error: an unknown option or a bad value (clap's message).
    Usage,
    /// 3: `mlport audit --fail-on` or `mlport diff --fail-on` found what it was asked to fail on.
    Findings,
    /// 130 (128 + SIGINT): stopped by Ctrl-C or SIGTERM; `mlport run --resume` continues.
    Interrupted,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Error => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Findings => 3,
            ExitStatus::Interrupted => 130,
        }
    }
}

/// Runs one command.
///
/// Errors: whatever stops the command (a store that cannot be opened, a catalogue error, a
/// closed stdout: [`StdoutClosed`]); worker crashes and timeouts are outcomes, never errors.
pub fn invoke(command: Command) -> Result<ExitStatus> {
    match command {
        Command::Run(a) => run::run(a),
        Command::Report(a) => report::report(a),
        Command::List(a) => list::list(a),
        Command::Runs(a) => runs::runs(a),
        Command::Env(a) => env::env(a),
        Command::Import(ImportCommand::PytestJson(a)) => import::pytest_json(a),
        Command::Import(ImportCommand::Paper(a)) => import::paper(a),
        Command::Import(ImportCommand::Bundle(a)) => import_bundle::bundle(a),
        Command::Pytest(a) => pytest::pytest(a),
        Command::Scan(a) => scan::scan(a),
        Command::Audit(a) => audit::audit(a),
        Command::Mine(a) => mine::mine(a),
        Command::Sample(a) => sample::sample(a),
        Command::Repro(a) => repro::repro(a),
        Command::Diff(a) => diff::diff(a),
        Command::Export(a) => export::export(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_documented_ones() {
        let all = [ExitStatus::Ok, ExitStatus::Error, ExitStatus::Usage, ExitStatus::Findings, ExitStatus::Interrupted];
        assert_eq!(all.map(ExitStatus::code), [0, 1, 2, 3, 130]);
    }
}
