//! `mlport import pytest-json`, `mlport import paper` and `mlport import bundle`: read and
//! check everything first, then store the run(s) in one transaction (per bundle) and report.

use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::ExitStatus;
use super::output::{command_line, emit, format_of};
use super::report::{build_portability, print_portability};
use super::select::check_label;
use crate::analysis::{self, ReportOptions};
use crate::cli::{ImportBundleArgs, ImportPaperArgs, ImportPytestJsonArgs};
use crate::import;
use crate::model::RunSource;
use crate::render;
use crate::store::Imported;
use crate::workspace;

/// `mlport import pytest-json`.
pub fn pytest_json(args: ImportPytestJsonArgs) -> Result<ExitStatus> {
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
    emit(&render::overview::render(&reports, format_of(args.format)))?;
    Ok(ExitStatus::Ok)
}

/// `mlport import bundle`: each bundle read and checked whole, then its runs written in one
/// transaction; a run whose uid the store holds is skipped (said on stderr). Files carried by a
/// bundle go to `.mlport/<store>-bundle-<uid>/` beside the store, and the runs' paths with them.
pub fn bundle(args: ImportBundleArgs) -> Result<ExitStatus> {
    let mut store = workspace::open_store(&args.db.db)?;
    let folders = workspace::RunFolders::new(&args.db.db, args.outputs.outputs.as_deref());
    for file in &args.files {
        let started = Instant::now();
        let mut b = crate::bundle::read(file)?;
        // Files first (removed again if the runs cannot be written), paths pointing at them.
        let mut placed = Vec::new();
        for (run, record) in b.manifest.runs.iter().zip(b.records.iter_mut()) {
            let (Some(o), Some(files)) = (&run.outputs, b.outputs.get(&run.uid)) else { continue };
            if store.run_by_uid(&run.uid)?.is_some() {
                continue;
            }
            let dir = folders.bundle_dir(&run.uid);
            for (rel, bytes) in files {
                let path = dir.join(rel);
                workspace::create_dir(path.parent().expect("a file in a folder"))?;
                std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
            }
            let now = dir.to_string_lossy();
            for r in &mut record.run.results {
                crate::bundle::relocate(&mut r.outputs, &o.was, &now);
            }
            for r in &mut record.references {
                crate::bundle::relocate(&mut r.outputs, &o.was, &now);
            }
            placed.push(dir);
        }
        let done = match store.import_records(&b.records) {
            Ok(done) => done,
            Err(e) => {
                for dir in &placed {
                    let _ = std::fs::remove_dir_all(dir);
                }
                return Err(anyhow::Error::from(e).context(format!("{}: nothing was imported", file.display())));
            }
        };
        let mut new = Vec::new();
        for (run, d) in b.manifest.runs.iter().zip(&done) {
            match d {
                Imported::New(id) => new.push(id.to_string()),
                Imported::Present(id) => eprintln!(
                    "mlport: {}: run {} ({}) is already in {} as run {id}; skipped",
                    file.display(),
                    run.uid,
                    run.label.as_deref().unwrap_or(&run.machine),
                    args.db.db
                ),
            }
        }
        eprintln!(
            "mlport: imported {} from {} in {:.2} s{}",
            super::output::plural(new.len(), "run"),
            file.display(),
            started.elapsed().as_secs_f64(),
            if new.is_empty() { String::new() } else { format!(" (ids {})", new.join(", ")) }
        );
    }
    Ok(ExitStatus::Ok)
}
