//! The `mlport` binary: parse the command line once, run the command, print the error chain
//! on failure, and map how it ended to the exit code — the one place that does:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done: failures found in the frameworks are data, not errors (also `--help`, and a reader that closed stdout) |
//! | 1 | error: the chain is printed on stderr; or a run in which no case could run |
//! | 2 | usage error: an unknown option or a bad value (clap's), or flags that need others (`--shard` without `--campaign`) |
//! | 3 | `mlport audit --fail-on`, `mlport diff --fail-on` or `mlport pytest --fail-on` found what it was asked to fail on |
//! | 130 | interrupted by Ctrl-C or SIGTERM: continue with `mlport run --resume` |

use clap::Parser;
use mlport::cli::Cli;
use mlport::commands::{self, ExitStatus, StdoutClosed, UsageError};

fn main() {
    let status = match Cli::try_parse() {
        Ok(cli) => {
            init_logging(cli.verbose);
            match commands::invoke(cli.command) {
                Ok(status) => status,
                Err(e) if e.is::<StdoutClosed>() => ExitStatus::Ok,
                Err(e) if e.is::<UsageError>() => {
                    eprintln!("error: {e}");
                    ExitStatus::Usage
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    for cause in e.chain().skip(1) {
                        eprintln!("  caused by: {cause}");
                    }
                    ExitStatus::Error
                }
            }
        }
        Err(e) => {
            // clap's own message: help and version on stdout, usage errors on stderr.
            let _ = e.print();
            if e.use_stderr() { ExitStatus::Usage } else { ExitStatus::Ok }
        }
    };
    std::process::exit(status.code());
}

/// Logs on stderr: `-v` info, `-vv` debug, `-vvv` trace (worker stderr); `MLPORT_LOG` wins.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("MLPORT_LOG").unwrap_or_else(|_| level.into()))
        .init();
}
