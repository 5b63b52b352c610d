//! `mlport report campaign NAME` (alias `--campaign NAME` with no view flag): every
//! machine's portability, each against its own reference device; with `--functions`, each
//! machine's failing functions after. `--format html` is one machine's page.

use anyhow::Result;

use super::portability::campaign_page;
use super::{options, show, text_format};
use crate::analysis;
use crate::cli::FormatArg;
use crate::cli::report::CampaignArgs;
use crate::lifecycle::select;
use crate::render::Report;
use crate::render::campaign::CampaignWithFunctions;
use crate::store::Store;

/// `report campaign NAME`.
///
/// Errors: no such campaign; `--functions` as JSON or CSV; HTML without `-o`, or of a
/// campaign of several machines without `--machine`.
pub fn report(store: &Store, args: &CampaignArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        return campaign_page(store, args);
    }
    let format = text_format(args.format, args.output.as_ref())?;
    let mut runs = Vec::new();
    for r in select::campaign_runs(store, &args.name)? {
        let (devices, results) = (store.devices(r.id)?, store.results(r.id)?);
        runs.push((r, devices, results));
    }
    let rep = analysis::campaign::build(&args.name, &runs, &options(&args.counting));
    let with_functions = CampaignWithFunctions(&rep);
    let report: &dyn Report = if args.functions { &with_functions } else { &rep };
    show(report, format, || {
        "--campaign --functions renders as table or markdown (json and csv: one --machine at a time with --run)".into()
    })
}
