//! `mlport runs`: the runs in a store (read-only); `--check` checks the store's pages first.

use anyhow::Result;

use super::ExitStatus;
use super::output::emit;
use crate::cli::RunsArgs;
use crate::{render, workspace};

/// `mlport runs`.
pub fn runs(args: RunsArgs) -> Result<ExitStatus> {
    let store = workspace::open_to_read(&args.db.db, "(run `mlport run` first, or pass --db)")?;
    if args.check {
        let checked = store.check()?;
        let what =
            if checked { "ok (SQLite's quick_check)" } else { "not checked (PostgreSQL keeps its own checksums)" };
        eprintln!("mlport: store {}: {what}", store.location());
    }
    emit(&render::runs::table(&store.runs()?))?;
    Ok(ExitStatus::Ok)
}
