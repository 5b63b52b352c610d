//! `mlport report <KIND>`: orchestration only. Each kind has its file here, which reads the
//! store, asks [`crate::analysis`] for the report and writes it through the one renderer
//! shape, [`crate::render::Report`]: `portability` (the default; also what `run`, `import`
//! and `pytest` print when they end), `slowdown`, `modes`, `routes`, `workloads`, `dtypes`,
//! `frameworks`, `paper`, `paper-compare`, `campaign`, `suite`, `overview` and `ops`; `page` writes
//! the HTML page of one run. Without a kind, the older flags are aliases ([`aliases`]).

mod aliases;
mod campaign;
mod matrix;
mod modes;
mod ops;
mod overview;
mod page;
mod paper;
mod picked;
mod portability;
mod slowdown;
mod suite;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::ExitStatus;
use super::output::{emit, format_of};
use crate::analysis::ReportOptions;
use crate::cli::report::CountingArgs;
use crate::cli::{FormatArg, ReportArgs, ReportKind};
use crate::render::{Format, Report, to_text};
use crate::workspace;

pub use portability::{build_portability, print_portability};

/// `mlport report`: the kind asked for, or the one its alias flags mean.
///
/// Errors: a store that cannot be opened (said first, whatever else is wrong); flags that do
/// not go together; what the kind's report refuses (see each kind).
pub fn report(args: ReportArgs) -> Result<ExitStatus> {
    // What two device types declare is read from the installed framework, not from a store.
    if let Some(ReportKind::Ops(a)) = &args.kind
        && let Some(spec) = &a.declared
    {
        ops::declared(a, spec)?;
        return Ok(ExitStatus::Ok);
    }
    let db = args.kind.as_ref().map_or(&args.db, ReportKind::db);
    let store = workspace::open_to_read(&db.db, "(run `mlport run` or `mlport import` first, or pass --db)")?;
    let kind = match args.kind {
        Some(kind) => kind,
        None => aliases::kind_of(args)?,
    };
    match kind {
        ReportKind::Portability(a) => portability::report(&store, &a),
        ReportKind::Slowdown(a) => slowdown::report(&store, &a),
        ReportKind::Modes(a) => modes::modes(&store, &a),
        ReportKind::Routes(a) => modes::routes(&store, &a),
        ReportKind::Workloads(a) => modes::workloads(&store, &a),
        ReportKind::Dtypes(a) => matrix::dtypes(&store, &a),
        ReportKind::Frameworks(a) => matrix::frameworks(&store, &a),
        ReportKind::Paper(a) => paper::paper(&store, &a),
        ReportKind::PaperCompare(a) => paper::paper_compare(&store, &a),
        ReportKind::Campaign(a) => campaign::report(&store, &a),
        ReportKind::Suite(a) => suite::report(&store, &a),
        ReportKind::Overview(a) => overview::report(&store, &a),
        ReportKind::Ops(a) => ops::report(&store, &a),
    }?;
    Ok(ExitStatus::Ok)
}

/// The counting options of `--all-failures` and `--reference`.
fn options(counting: &CountingArgs) -> ReportOptions {
    ReportOptions {
        attributable: !counting.all_failures,
        reference: counting.reference.clone(),
        strict: counting.strict,
        list_not_attributable: counting.not_attributable,
    }
}

/// The text format of `--format` for a report written to stdout.
///
/// Errors: `-o FILE` (only HTML writes to a file).
fn text_format(format: FormatArg, output: Option<&PathBuf>) -> Result<Format> {
    if let Some(path) = output {
        bail!("-o {}: only --format html writes to a file (the other formats go to stdout)", path.display());
    }
    format_of(format)
}

/// The file an HTML page is written to.
///
/// Errors: no `-o FILE`.
fn html_path(output: Option<&PathBuf>) -> Result<&Path> {
    match output {
        Some(path) => Ok(path),
        None => bail!("--format html writes one file: add -o FILE (e.g. -o report.html)"),
    }
}

/// Writes `report` in `format` to stdout.
///
/// Errors: `refusal` when the report has no such format; a closed stdout.
fn show(report: &dyn Report, format: Format, refusal: impl FnOnce() -> String) -> Result<()> {
    if !report.formats().contains(&format) {
        bail!(refusal());
    }
    emit(&to_text(report, format))
}

/// Writes a page to `path` and says so on stderr (`what`: whose page it is).
///
/// Errors: `path` cannot be written (named).
fn write_page(path: &Path, page: &str, what: &str) -> Result<()> {
    std::fs::write(path, page).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    eprintln!("mlport: wrote {} ({what})", path.display());
    Ok(())
}
