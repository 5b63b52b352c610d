//! `mlport import pytest-json` and `mlport import paper`: read and check everything first,
//! then store the run(s) in one transaction and report (`mlport import bundle`:
//! [`super::import_bundle`]).

use std::time::Instant;

use anyhow::{Result, bail};

use super::ExitStatus;
use super::output::{command_line, emit, format_of};
use super::report::{build_portability, print_portability};
use crate::analysis::{self, ReportOptions};
use crate::cli::{ImportPaperArgs, ImportPytestJsonArgs};
use crate::import;
use crate::lifecycle::select::check_label;
use crate::model::RunSource;
use crate::render;
use crate::workspace;

/// `mlport import pytest-json`.
pub fn pytest_json(args: ImportPytestJsonArgs) -> Result<ExitStatus> {
    // --format html is a report of `mlport report` only: refused before any work.
    super::output::format_of(args.format)?;
    let spec = import::PytestJsonImport {
        report: args.report.clone(),
        timings: args.timings.clone(),
        framework: args.framework,
        device: args.device.clone(),
        label: args.label.clone(),
        machine: args.machine.clone(),
        source: RunSource::ImportPytestJson,
        command_line: command_line(),
        group_by: args.group_by.clone(),
    };
    let data = import::pytest_json_run(&spec)?;
    let mut store = workspace::open_store(&args.db.db)?;
    check_label(&store, args.label.as_deref())?;
    let id = store.import_runs(std::slice::from_ref(&data))?[0];
    eprintln!(
        "mlport: imported {} as run {id}: {} tests of {} functions on {}",
        args.report.display(),
        data.cases.len(),
        data.functions.len(),
        data.devices.iter().map(|d| d.device.to_string()).collect::<Vec<_>>().join(" and ")
    );
    print_portability(&store, id, args.format, false)?;
    Ok(ExitStatus::Ok)
}

/// `mlport import paper`: the whole data set, every run in one transaction, then the
/// overview. Refused, with nothing written, when the store already holds it.
pub fn paper(args: ImportPaperArgs) -> Result<ExitStatus> {
    // --format html is a report of `mlport report` only: refused before any work.
    super::output::format_of(args.format)?;
    let started = Instant::now();
    let data = import::import_paper(&args.dir, &command_line())?;
    for (path, why) in &data.left_out {
        eprintln!("mlport: left out {}: {why}", path.display());
    }
    let mut store = workspace::open_store(&args.db.db)?;
    for run in &data.runs {
        if let Some(label) = &run.origin.label
            && let Some(existing) = store.run_by_label(label)?
        {
            bail!(
                "{}: the paper's data is already here (run {} is labelled `{label}`); nothing was imported again",
                args.db.db,
                existing.id
            );
        }
    }
    let ids = store.import_runs(&data.runs)?;
    let reports: Vec<analysis::PortabilityReport> =
        ids.iter().map(|id| build_portability(&store, *id, &ReportOptions::default())).collect::<Result<_>>()?;
    eprintln!(
        "mlport: imported {} runs (ids {}..={}) from {} in {:.2} s",
        ids.len(),
        ids.first().copied().unwrap_or_default(),
        ids.last().copied().unwrap_or_default(),
        args.dir.display(),
        started.elapsed().as_secs_f64()
    );
    emit(&render::to_text(&render::overview::Overview(&reports), format_of(args.format)?))?;
    Ok(ExitStatus::Ok)
}
