//! A run's life around the runner: starting one (a fresh plan, or a stored run continued by
//! `--resume` or a campaign shard run again: [`start`], [`resume`]), which stored runs a command
//! means ([`select`]), and closing one once the runner has ended — its state and the end-of-run
//! summary, reported as [`crate::runner::Event::RunEnded`] ([`close`]). `commands/run.rs`
//! only wires them to the command line.

pub mod close;
pub mod resume;
pub mod select;
pub mod start;

/// The command line as typed, recorded with each run, with any password in a URL
/// (`--db postgresql://USER:PASSWORD@…`) replaced by `***`: the line is stored, shown by
/// reports and exported in bundles.
pub fn command_line() -> String {
    recorded_command_line(std::env::args())
}

/// [`command_line`] of given arguments.
fn recorded_command_line(args: impl Iterator<Item = String>) -> String {
    args.map(|a| crate::store::location::redact(&a)).collect::<Vec<_>>().join(" ")
}

/// Now, UTC, to the second (RFC 3339), as runs record their start.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_command_lines_hold_no_password() {
        let args =
            ["mlport", "run", "--db", "postgresql://ann:s3cret@db/fleet", "--db=postgres://b:pw2@h/d?password=pw3"];
        let line = recorded_command_line(args.iter().map(|a| a.to_string()));
        assert_eq!(line, "mlport run --db postgresql://ann:***@db/fleet --db=postgres://b:***@h/d?password=***");
    }
}
