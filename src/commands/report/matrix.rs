//! `mlport report dtypes` (the dtype matrix) and `frameworks` (the cross-framework table):
//! of one run, or of one machine's runs of a campaign, optionally `--only` some functions or
//! ops. `--format html` is the run's page, which holds both.

use anyhow::{Result, bail};

use super::page::{self, PageOf};
use super::picked::Picked;
use super::{html_path, show, text_format};
use crate::analysis::{self, ReportOptions};
use crate::cli::FormatArg;
use crate::cli::report::MatrixArgs;
use crate::model::ResultRow;
use crate::store::Store;

/// `report dtypes` (alias `--dtypes`).
///
/// Errors: see [`matrix`].
pub fn dtypes(store: &Store, args: &MatrixArgs) -> Result<()> {
    matrix(store, args, false)
}

/// `report frameworks` (alias `--frameworks`).
///
/// Errors: see [`matrix`].
pub fn frameworks(store: &Store, args: &MatrixArgs) -> Result<()> {
    matrix(store, args, true)
}

/// The functions `--only` keeps: named ones, and for `frameworks` every function of the
/// op a named function stands for (the table compares frameworks, so a row needs them all).
fn only_names(only: &[String], results: &[ResultRow], by_op: bool) -> Vec<String> {
    let mut names = only.to_vec();
    if by_op {
        let ops: Vec<String> =
            results.iter().filter(|r| only.contains(&r.function.name)).filter_map(|r| r.function.op.clone()).collect();
        names.extend(ops);
    }
    names
}

/// Whether `--only` (as [`only_names`]) keeps a result: everything when empty, else a result
/// of a named function or op.
fn kept(only: &[String], r: &ResultRow) -> bool {
    only.is_empty() || only.iter().any(|o| *o == r.function.name || r.function.op.as_deref() == Some(o.as_str()))
}

/// The dtype matrix or (`by_op`) the cross-framework table.
///
/// Errors: no such run, campaign or machine; `--only` naming nothing the runs hold; HTML
/// without `-o`.
fn matrix(store: &Store, args: &MatrixArgs, by_op: bool) -> Result<()> {
    if args.format == FormatArg::Html {
        let path = html_path(args.output.as_ref())?;
        let what = PageOf { pick: &args.pick, opts: &ReportOptions::default(), stats_seed: None, slowdowns: None };
        return page::write(store, &what, path);
    }
    let format = text_format(args.format, args.output.as_ref())?;
    let picked = Picked::of(store, &args.pick, args.pick.run.as_deref(), None)?;
    let run = &picked.summary;
    let results = picked.results(store)?;
    let only = only_names(&args.only, &results, by_op);
    let keep = |r: &ResultRow| kept(&only, r);
    if !only.is_empty() && !results.iter().any(keep) {
        bail!("--only {}: {} has no such function or op", only.join(","), picked.describe());
    }
    if !by_op {
        let m = analysis::dtypes::build(run.id, run.origin.source, &results, &store.comparisons(run.id)?, &keep);
        return show(&m, format, String::new);
    }
    let t =
        analysis::frameworks::build(run.id, &results, &picked.comparisons(store)?, &picked.references(store)?, &keep);
    if t.rows.is_empty() {
        eprintln!(
            "mlport: {} has no op run by two or more frameworks (the catalogue's `op` key maps them)",
            picked.describe()
        );
    }
    show(&t, format, String::new)
}
