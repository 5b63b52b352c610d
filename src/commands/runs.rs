//! `mlport runs`: the runs in a store (read-only).

use anyhow::Result;

use super::ExitStatus;
use super::output::emit;
use crate::cli::DbArg;
use crate::{render, workspace};

/// `mlport runs`.
pub fn runs(args: DbArg) -> Result<ExitStatus> {
    let store = workspace::open_to_read(&args.db, "(run `mlport run` first, or pass --db)")?;
    emit(&render::runs::table(&store.runs()?))?;
    Ok(ExitStatus::Ok)
}
