//! `mlport report modes` (eager against compiled), `routes` (eager against the export
//! routes) and `workloads` (whole models and off-the-rut pairs): of one run, or of one
//! machine's runs of a campaign. `modes --format html` is the run's page, which holds the
//! modes.

use anyhow::{Result, bail};

use super::page::{self, PageOf};
use super::picked::Picked;
use super::{html_path, show, text_format};
use crate::analysis::{self, ReportOptions};
use crate::cli::FormatArg;
use crate::cli::report::ModesArgs;
use crate::store::Store;

/// `report modes` (alias `--modes`).
///
/// Errors: no such run, campaign or machine; HTML without `-o`.
pub fn modes(store: &Store, args: &ModesArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        let path = html_path(args.output.as_ref())?;
        let what =
            PageOf { pick: &args.pick, opts: &ReportOptions::default(), stats_seed: args.stats_seed, slowdowns: None };
        return page::write(store, &what, path);
    }
    view(store, args, analysis::modes::View::Compiled)
}

/// `report routes` (alias `--routes`).
///
/// Errors: no such run, campaign or machine; HTML (the page does not show routes yet).
pub fn routes(store: &Store, args: &ModesArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        bail!("--format html does not show --routes yet (use table, markdown, json or csv)");
    }
    view(store, args, analysis::modes::View::Routes)
}

fn view(store: &Store, args: &ModesArgs, view: analysis::modes::View) -> Result<()> {
    let format = text_format(args.format, args.output.as_ref())?;
    let run = Picked::of(store, &args.pick, args.pick.run.as_deref(), None)?;
    let rep = analysis::modes::build(&run.summary, &run.devices(store)?, &run.results(store)?, args.stats_seed, view);
    show(&rep, format, String::new)
}

/// `report workloads` (alias `--workloads`).
///
/// Errors: no such run, campaign or machine; HTML (the page does not show workloads yet).
pub fn workloads(store: &Store, args: &ModesArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        bail!("--format html does not show --workloads yet (use table, markdown, json or csv)");
    }
    let format = text_format(args.format, args.output.as_ref())?;
    let run = Picked::of(store, &args.pick, args.pick.run.as_deref(), None)?;
    let stats =
        crate::stats::StatsConfig { seed: args.stats_seed.unwrap_or(run.summary.info.seed), ..Default::default() };
    let rep = analysis::workloads::build(
        &run.summary,
        &run.results(store)?,
        &run.comparisons(store)?,
        &run.references(store)?,
        &stats,
    );
    show(&rep, format, String::new)
}
