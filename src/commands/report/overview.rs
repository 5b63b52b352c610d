//! `mlport report overview` (alias `--run all`): every run of the store, one row per run ×
//! framework × target.

use anyhow::{Result, bail};

use super::portability::build_portability;
use super::{options, show, text_format};
use crate::analysis;
use crate::cli::FormatArg;
use crate::cli::report::OverviewArgs;
use crate::render::overview::Overview;
use crate::store::Store;

/// `report overview`.
///
/// Errors: HTML (the page shows one run); the store's read errors.
pub fn report(store: &Store, args: &OverviewArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        bail!(
            "--format html shows one run (or one machine of a campaign); --run all is not in the page (use table, markdown, json or csv)"
        );
    }
    let format = text_format(args.format, None)?;
    let opts = options(&args.counting);
    let reports: Vec<analysis::PortabilityReport> =
        store.runs()?.iter().map(|r| build_portability(store, r.id, &opts)).collect::<Result<_>>()?;
    show(&Overview(&reports), format, String::new)
}
