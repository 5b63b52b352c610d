//! `mlport pytest`: run a user's suite with pytest-json-report in the managed environment
//! (or `--python`) on one device, in its own process group, then import and report it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};

use super::output::command_line;
use super::report::print_portability;
use super::select::check_label;
use super::{ExitStatus, env};
use crate::cli::PytestArgs;
use crate::model::{FrameworkInfo, RunSource};
use crate::process::{self, GroupEnd};
use crate::{catalogue, import, pyenv, runner, workspace};

/// The exit codes of pytest that still leave a usable report: all passed, some failed.
const PYTEST_OK: [i32; 2] = [0, 1];

/// Whether pytest's exit leaves a report to import, or why not (nothing is imported then).
fn check_exit(status: std::process::ExitStatus, path: &Path) -> Result<()> {
    match status.code() {
        Some(c) if PYTEST_OK.contains(&c) => Ok(()),
        Some(5) => bail!("pytest collected no tests from {}", path.display()),
        Some(2) => bail!("pytest was interrupted (exit code 2); nothing was imported"),
        Some(c) => bail!("pytest exited with code {c} (internal or usage error); nothing was imported"),
        None => bail!(
            "pytest was killed by {} — a test most likely crashed the interpreter, and pytest-json-report \
             writes its report only at the end of a session, so nothing was imported; run the crashing \
             tests in subprocesses or deselect them (`-- -k 'not NAME'`)",
            status.signal().map_or("a signal".to_string(), process::signal_name)
        ),
    }
}

/// `mlport pytest`.
pub fn pytest(args: PytestArgs) -> Result<ExitStatus> {
    // --format html is a report of `mlport report` only: refused before any work.
    super::output::format_of(args.format)?;
    let (framework, device) = (args.framework, args.device.clone());
    if !args.path.exists() {
        bail!("{}: no such test file or folder", args.path.display());
    }
    // The store is checked before the suite runs, so its results have somewhere to go.
    let mut store = workspace::open_store(&args.db.db)?;
    check_label(&store, args.label.as_deref())?;
    let env = env::python_env(&args.python, &[framework])?;
    if !pyenv::can_import(&env.python, &["pytest", "pytest_jsonreport"])? {
        bail!(
            "{} lacks pytest or pytest-json-report; install them (`{} -m pip install pytest pytest-json-report`) or \
             use the managed environment (omit --python)",
            env.python.display(),
            env.python.display()
        );
    }
    let out_dir = workspace::pytest_dir(&args.db.db);
    workspace::create_dir(&out_dir)?;
    let report_path = out_dir.join("report.json");
    let timings_path = out_dir.join("timings.json");
    let mut cmd = Command::new(&env.python);
    cmd.args(["-m", "pytest"])
        .arg(&args.path)
        .arg("--json-report")
        .arg(format!("--json-report-file={}", report_path.display()))
        .args(["-p", "no:cacheprovider"])
        .args(&args.pytest_args)
        .env("MLPORT_DEVICE", device.as_str())
        .env("MLPORT_FRAMEWORK", framework.as_str())
        .env("MLPORT_TIMINGS", &timings_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(std::io::stderr());
    eprintln!(
        "mlport: running pytest on {} with MLPORT_DEVICE={device} ({})",
        args.path.display(),
        env.python.display()
    );
    let limit = args.timeout.map(|t| Duration::from_secs_f64(t.min(catalogue::MAX_TIMEOUT_S)));
    let end = process::run_in_group(&mut cmd, limit, process::interrupted())
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot run {:?}", cmd.get_program())))?;
    let status = match end {
        GroupEnd::Exited(status) => status,
        GroupEnd::Interrupted => {
            eprintln!("mlport: interrupted; pytest's process group was stopped and nothing was imported");
            return Ok(ExitStatus::Interrupted);
        }
        GroupEnd::TimedOut => bail!(
            "pytest did not finish within --timeout {:.0} s; its process group was killed and nothing was imported",
            limit.unwrap_or_default().as_secs_f64()
        ),
    };
    check_exit(status, &args.path)?;
    let spec = import::PytestJsonImport {
        report: report_path.clone(),
        // Written by suites that time their calls (docs/pytest.md); absent otherwise.
        timings: if timings_path.is_file() { vec![timings_path.clone()] } else { Vec::new() },
        framework,
        device,
        label: args.label.clone(),
        machine: Some(crate::sysinfo::host()),
        source: RunSource::Pytest,
        command_line: command_line(),
        group_by: args.group_by.clone(),
    };
    let mut data = import::pytest_json_run(&spec)?;
    runner::machine_info(&mut data.info);
    data.info.python_executable = env.python.display().to_string();
    if let Some(v) = pyenv::package_version(&env.python, framework) {
        data.info.frameworks.insert(framework, FrameworkInfo { version: Some(v), ..Default::default() });
    }
    if data.info.python_version.is_empty() {
        // pytest-json-report names the Python version only with pytest-metadata installed: ask
        // the interpreter that ran the suite.
        if let Some(v) = pyenv::python_version(&env.python) {
            data.info.python_version = v;
        }
    }
    data.origin.notes.push(format!("pytest's report is kept in {}", out_dir.display()));
    let id = store.import_runs(std::slice::from_ref(&data))?[0];
    eprintln!("mlport: stored as run {id} ({} tests of {} functions)", data.cases.len(), data.functions.len());
    print_portability(&store, id, args.format, false)?;
    Ok(ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn exit(code: i32) -> std::process::ExitStatus {
        std::process::ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn pytest_exits_that_leave_no_report_are_explained() {
        let p = Path::new("tests/");
        assert!(check_exit(exit(0), p).is_ok());
        assert!(check_exit(exit(1), p).is_ok(), "failed tests still leave a report");
        assert!(check_exit(exit(5), p).unwrap_err().to_string().contains("collected no tests from tests/"));
        assert!(check_exit(exit(2), p).unwrap_err().to_string().contains("interrupted"));
        assert!(check_exit(exit(4), p).unwrap_err().to_string().contains("code 4"));
        let killed = std::process::ExitStatus::from_raw(11);
        assert!(check_exit(killed, p).unwrap_err().to_string().contains("killed by SIGSEGV (11)"));
    }
}
