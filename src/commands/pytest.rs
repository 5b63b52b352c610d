//! `mlport pytest`: a user's suite run live on one device with each test's result committed as
//! it finishes ([`crate::import::pytest_session`]); this command checks the arguments, the
//! interpreter and the device, and prints the report and `--fail-on` findings.

use anyhow::{Context, Result, bail};

use super::report::print_portability;
use super::{ExitStatus, env};
use crate::cli::{PytestArgs, SuiteFailOn};
use crate::import::pytest_session::{self, Recorded, Session};
use crate::lifecycle::select::{check_label, resolve_run};
use crate::model::RunSource;
use crate::store::Store;
use crate::{pyenv, workspace};

/// Refuses a device the framework cannot see, asking the interpreter as `mlport list` does
/// (cpu is always there and is not asked).
fn check_device(python: &pyenv::PythonEnv, args: &PytestArgs) -> Result<()> {
    let asked = args.device.as_str();
    let base = asked.split('/').next().unwrap_or(asked);
    if base == "cpu" {
        return Ok(());
    }
    let (probes, _) = env::probe(python, &[args.framework])?;
    let probe = probes.first().context("the framework probe returned nothing")?;
    match &probe.version {
        Err(e) => bail!("{} cannot be used from {}: {e}", args.framework, python.python.display()),
        Ok(_) if !probe.devices.iter().any(|d| d == base) => bail!(
            "--device {base}: {} does not see this device here (it sees {}); nothing was run. `mlport list` shows \
             the devices each framework sees",
            args.framework,
            if probe.devices.is_empty() { "none".to_string() } else { probe.devices.join(", ") }
        ),
        Ok(_) => Ok(()),
    }
}

/// `mlport pytest`.
pub fn pytest(args: PytestArgs) -> Result<ExitStatus> {
    // --format html is a report of `mlport report` only: refused before any work.
    super::output::format_of(args.format)?;
    let (framework, device) = (args.framework, args.device.clone());
    if let Some(p) = args.path.iter().find(|p| !p.exists()) {
        bail!("{}: no such test file or folder", p.display());
    }
    pytest_session::user_args(&args.pytest_args)?;
    // The store is checked before the suite runs, so its results have somewhere to go.
    let mut store = workspace::open_store(&args.db.db)?;
    let resumed = match &args.resume {
        Some(spec) => {
            let run = resolve_run(&store, Some(spec))?;
            if run.origin.source != RunSource::Pytest {
                bail!("run {} is not an `mlport pytest` run ({}); --resume continues those", run.id, run.origin.source);
            }
            let fw: Vec<_> = run.info.frameworks.keys().copied().collect();
            let devices: Vec<String> = store.devices(run.id)?.into_iter().map(|d| d.device.to_string()).collect();
            if fw != [framework] || !devices.iter().any(|d| d == device.as_str()) {
                bail!(
                    "run {} ran {} on {}; --resume needs the same --framework and --device",
                    run.id,
                    fw.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", "),
                    devices.join(", ")
                );
            }
            Some(run)
        }
        None => {
            check_label(&store, args.label.as_deref())?;
            None
        }
    };
    let env = env::python_env(&args.python, &[framework])?;
    if !pyenv::can_import(&env.python, &["pytest"])? {
        bail!(
            "{} lacks pytest; install it (`{} -m pip install pytest`) or use the managed environment (omit --python)",
            env.python.display(),
            env.python.display()
        );
    }
    check_device(&env, &args)?;
    let session = Session {
        python: &env.python,
        paths: &args.path,
        pytest_args: &args.pytest_args,
        framework,
        device: &device,
        group_by: args.group_by.clone(),
        timeout: args.timeout,
        out_dir: workspace::pytest_dir(&args.db.db),
        label: args.label.clone(),
        command_line: super::output::command_line(),
        resumed: resumed.as_ref().map(|r| r.id),
    };
    let (run, interrupted) = match pytest_session::run(&mut store, &session)? {
        Recorded::Run { run, interrupted } => (run, interrupted),
        Recorded::Nothing => return Ok(ExitStatus::Interrupted),
    };
    print_portability(&store, run, args.format, false)?;
    if interrupted {
        return Ok(ExitStatus::Interrupted);
    }
    let found = fail_on(&store, run, &args.fail_on)?;
    for f in &found {
        eprintln!("mlport: --fail-on: {f}");
    }
    Ok(if found.is_empty() { ExitStatus::Ok } else { ExitStatus::Findings })
}

/// What `--fail-on` found in run `run`, one line each.
fn fail_on(store: &Store, run: i64, what: &[SuiteFailOn]) -> Result<Vec<String>> {
    if what.is_empty() {
        return Ok(Vec::new());
    }
    let summary = store.run(run)?;
    let results = store.results(run)?;
    let failing = crate::analysis::suite::counted_failures(&summary, &results);
    let mut found = Vec::new();
    if what.contains(&SuiteFailOn::Failure) && !failing.is_empty() {
        found.push(format!("failure: {} counted failing tests (first: {})", failing.len(), failing[0]));
    }
    if what.contains(&SuiteFailOn::NewFailure) {
        let previous = store
            .runs()?
            .into_iter()
            .filter(|r| {
                r.id < run
                    && r.origin.source == RunSource::Pytest
                    && r.info.frameworks.keys().eq(summary.info.frameworks.keys())
            })
            .filter(|r| {
                store
                    .devices(r.id)
                    .is_ok_and(|d| d.iter().any(|d| summary_devices(store, run).contains(&d.device.to_string())))
            })
            .last();
        if let Some(prev) = previous {
            let new = crate::analysis::suite::new_failures(&store.results(prev.id)?, &failing);
            if !new.is_empty() {
                found.push(format!(
                    "new_failure: {} tests passed in run {} and fail now (first: {})",
                    new.len(),
                    prev.id,
                    new[0]
                ));
            }
        }
    }
    Ok(found)
}

fn summary_devices(store: &Store, run: i64) -> Vec<String> {
    store.devices(run).map(|d| d.into_iter().map(|d| d.device.to_string()).collect()).unwrap_or_default()
}
