//! `mlport report portability` (the default kind): one run's portability, with its failing
//! functions on `--functions`; and the same report that `run`, `import` and `pytest` print
//! when they end. `--format html` writes the run's page ([`super::page`]).

use anyhow::Result;

use super::page::{self, PageOf};
use super::{emit, html_path, options, text_format};
use crate::analysis::{self, ReportOptions};
use crate::cli::report::{PortabilityArgs, RunPick};
use crate::cli::{FormatArg, report::CampaignArgs};
use crate::commands::output::format_of;
use crate::lifecycle::select::resolve_run;
use crate::render::portability::WithFunctions;
use crate::render::{Format, to_text};
use crate::store::Store;

/// The portability report of a run, built from the store: its functions only (workloads
/// have their own report, said in a note), with a note when float64 references are missing.
///
/// Errors: the store's read errors (no such run).
pub fn build_portability(store: &Store, run_id: i64, opts: &ReportOptions) -> Result<analysis::PortabilityReport> {
    let summary = store.run(run_id)?;
    // Workloads (whole models, rut pairs) are not API functions: they have their own report.
    let (workloads, functions): (Vec<_>, Vec<_>) =
        store.results(run_id)?.into_iter().partition(|r| r.case.spec.is_workload());
    let mut report = analysis::build(&summary, &store.devices(run_id)?, &functions, opts);
    if !workloads.is_empty() {
        report.run.notes.push(format!(
            "{} of workloads (whole models, train steps, off-the-rut pairs) are not counted as functions here: \
             `mlport report --workloads --run {run_id}`",
            crate::render::units::plural(workloads.len(), "result")
        ));
    }
    // A missing float64 reference is said in every rendering (its cases count as unchecked).
    report.run.notes.extend(analysis::coverage::missing_references_note(&store.references(run_id)?));
    Ok(report)
}

/// Prints a run's portability report with the default options (what `run`, `import` and
/// `pytest` print at the end), with its failing functions when `functions`.
///
/// Errors: the store's read errors; `--format html` (not a format of these commands).
pub fn print_portability(store: &Store, run_id: i64, format: FormatArg, functions: bool) -> Result<()> {
    print_with(store, run_id, format_of(format)?, &ReportOptions::default(), functions)
}

/// `mlport report portability`.
///
/// Errors: no such run; `-o` without `--format html`, or HTML without `-o`; the store's
/// read errors.
pub fn report(store: &Store, args: &PortabilityArgs) -> Result<()> {
    let opts = options(&args.counting);
    if args.format == FormatArg::Html {
        let pick = RunPick { run: args.run.clone(), campaign: None, machine: None };
        let path = html_path(args.output.as_ref())?;
        return page::write(
            store,
            &PageOf { pick: &pick, opts: &opts, stats_seed: args.stats_seed, slowdowns: None },
            path,
        );
    }
    let format = text_format(args.format, args.output.as_ref())?;
    let run = resolve_run(store, args.run.as_deref())?;
    print_with(store, run.id, format, &opts, args.functions)
}

/// The page of a campaign's machine (`report campaign NAME --format html`).
pub fn campaign_page(store: &Store, args: &CampaignArgs) -> Result<()> {
    let pick = RunPick { run: None, campaign: Some(args.name.clone()), machine: args.machine.clone() };
    let path = html_path(args.output.as_ref())?;
    let opts = options(&args.counting);
    page::write(store, &PageOf { pick: &pick, opts: &opts, stats_seed: args.stats_seed, slowdowns: None }, path)
}

fn print_with(store: &Store, run_id: i64, format: Format, opts: &ReportOptions, functions: bool) -> Result<()> {
    let rep = build_portability(store, run_id, opts)?;
    emit(&if functions { to_text(&WithFunctions(&rep), format) } else { to_text(&rep, format) })?;
    timing_note(store, run_id)
}

/// On stderr: that a `--quick` run has no timings, or what ended its steady states
/// ([`crate::analysis::stops`]).
fn timing_note(store: &Store, run_id: i64) -> Result<()> {
    let quick = store.run(run_id)?.info.switches.is_some_and(|s| s.quick);
    if quick {
        eprintln!(
            "mlport: run {run_id} ran with --quick: timings are absent (no steady state was timed); time it with a \
             run without --quick for slowdowns"
        );
    } else if let Some(note) =
        crate::analysis::stops::Stops::count(store.results(run_id)?.iter().map(|r| &r.result)).note()
    {
        eprintln!("mlport: run {run_id}: {note}");
    }
    Ok(())
}
