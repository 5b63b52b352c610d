//! `--format html -o FILE`: the page of one run (`--run`), or of one machine's runs of a
//! campaign (`--campaign`, `--machine`), written to FILE: its portability, dtype matrix,
//! cross-framework table and modes, and with `report slowdown A..B` that slowdown's
//! distribution ([`crate::render::html`]).

use std::path::Path;

use anyhow::Result;

use super::picked::Picked;
use super::write_page;
use crate::analysis::{self, ReportOptions};
use crate::cli::report::RunPick;
use crate::render;
use crate::store::Store;

/// The slowdowns a page shows, computed once its run is read (so a run that cannot be read is
/// said first).
pub type Slowdowns<'a> = &'a dyn Fn() -> Result<Vec<analysis::SlowdownReport>>;

/// What one page shows.
pub struct PageOf<'a> {
    /// The run, or the campaign's machine.
    pub pick: &'a RunPick,
    /// How failures are counted.
    pub opts: &'a ReportOptions,
    /// The bootstrap's seed of the modes section (default: the run's).
    pub stats_seed: Option<u64>,
    /// `report slowdown`'s slowdowns: one section each.
    pub slowdowns: Option<Slowdowns<'a>>,
}

/// Writes the page of `what` to `path`, and says so on stderr.
///
/// Errors: no such run, campaign or machine; the store's read errors; `path` that cannot be
/// written (named).
pub fn write(store: &Store, what: &PageOf<'_>, path: &Path) -> Result<()> {
    let picked = Picked::of(store, what.pick, what.pick.run.as_deref(), None)?;
    let results = picked.results(store)?;
    let mut rep = analysis::build(&picked.summary, &picked.devices(store)?, &results, what.opts);
    rep.run.notes.extend(analysis::coverage::missing_references_note(&picked.references(store)?));
    let comparisons = picked.comparisons(store)?;
    let dtypes =
        analysis::dtypes::build(picked.summary.id, picked.summary.origin.source, &results, &comparisons, &|_| true);
    let frameworks =
        analysis::frameworks::build(picked.summary.id, &results, &comparisons, &picked.references(store)?, &|_| true);
    let modes = analysis::modes::build(
        &picked.summary,
        &picked.devices(store)?,
        &results,
        what.stats_seed,
        analysis::modes::View::Compiled,
    );
    let sds = match what.slowdowns {
        Some(slowdowns) => slowdowns()?,
        None => Vec::new(),
    };
    let page = render::html::render(&render::html::Page {
        report: &rep,
        dtypes: &dtypes,
        slowdowns: &sds,
        frameworks: &frameworks,
        modes: &modes,
    })?;
    write_page(path, &page, &picked.describe())
}
