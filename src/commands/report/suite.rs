//! `mlport report suite A B ...` (alias `--suite A,B`): the same test suite's runs side by
//! side, one row per test ([`crate::analysis::suite`]).

use anyhow::{Result, bail};

use super::{show, text_format};
use crate::analysis;
use crate::cli::FormatArg;
use crate::cli::report::SuiteArgs;
use crate::lifecycle::select::resolve_run;
use crate::store::Store;

/// `report suite`.
///
/// Errors: HTML; fewer than two runs; no such run.
pub fn report(store: &Store, args: &SuiteArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        bail!("--suite is a table, Markdown, CSV or JSON report; the HTML page does not hold it yet");
    }
    let format = text_format(args.format, None)?;
    if args.runs.len() < 2 {
        bail!("--suite compares runs side by side: give two or more (`--suite RUN_A,RUN_B`)");
    }
    let mut runs = Vec::new();
    for spec in &args.runs {
        let run = resolve_run(store, Some(spec))?;
        let results = store.results(run.id)?;
        runs.push((run, results));
    }
    show(&analysis::suite::side_by_side(&runs), format, String::new)
}
