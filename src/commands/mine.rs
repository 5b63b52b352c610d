//! `mlport mine`: usage frequencies of one framework's functions over a corpus.

use anyhow::Result;

use super::ExitStatus;
use super::output::{emit, format_of};
use super::scan::scan_with;
use crate::cli::MineArgs;
use crate::render;

/// `mlport mine`.
pub fn mine(args: MineArgs) -> Result<ExitStatus> {
    let scan = scan_with(&args.paths, args.threads)?;
    let freq = crate::mine::frequencies(&scan, args.framework);
    emit(&render::frequencies::frequencies(&freq, args.framework, scan.files, format_of(args.format)?))?;
    Ok(ExitStatus::Ok)
}
