//! The `mlport` binary: parse the command line once, run the command, print the error
//! chain on failure. Exit codes: 0 done (failures found are data, not errors),
//! 1 error, 2 usage error, 130 interrupted (resume with `mlport run --resume`).

use clap::Parser;
use mlport::app;
use mlport::cli::{Cli, Command, ImportCommand};

fn main() {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("MLPORT_LOG").unwrap_or_else(|_| level.into()))
        .init();
    let result = match cli.command {
        Command::Run(a) => app::run(a),
        Command::Report(a) => app::report(a),
        Command::List(a) => app::list(a),
        Command::Runs(a) => app::runs(a),
        Command::Env(a) => app::env(a),
        Command::Import(ImportCommand::PytestJson(a)) => app::import_pytest_json(a),
        Command::Import(ImportCommand::Paper(a)) => app::import_paper(a),
        Command::Pytest(a) => app::pytest(a),
        Command::Scan(a) => app::scan(a),
        Command::Audit(a) => app::audit(a),
        Command::Mine(a) => app::mine(a),
        Command::Sample(a) => app::sample(a),
        Command::Repro(a) => app::repro(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::exit(1);
        }
    }
}
