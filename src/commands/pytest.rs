//! `mlport pytest`: run a user's suite in the managed environment (or `--python`) on one
//! device, in its own process group, with mlport's pytest plugin loaded (`-p`, from a private
//! folder; nothing is installed), which streams each test's result as it finishes; each is
//! committed to the store at once ([`crate::import::stream`]). A test that kills the
//! interpreter is recorded as `crash`, the test running when `--timeout` passes as `timeout`;
//! `--resume` runs the tests a run lacks.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use crossbeam_channel::RecvTimeoutError;

use super::output::command_line;
use super::report::print_portability;
use super::select::{check_label, resolve_run};
use super::{ExitStatus, env};
use crate::cli::{PytestArgs, SuiteFailOn};
use crate::import::stream::{self, Message, Stream};
use crate::model::{FrameworkInfo, RunData, RunOrigin, RunSource, RunState, Spec};
use crate::outcome::TestEnding;
use crate::store::Store;
use crate::worker::pipes::{Incoming, read_lines};
use crate::{catalogue, import, process, pyenv, runner, workspace};

/// Why pytest's exit code leaves nothing to report, when nothing was recorded.
fn exit_problem(code: i32, path: &Path) -> String {
    match code {
        5 => format!("pytest collected no tests from {}", path.display()),
        2 => "pytest was interrupted (exit code 2); nothing was recorded".into(),
        c => format!("pytest exited with code {c} (internal or usage error); nothing was recorded"),
    }
}

/// pytest arguments after `--` that mlport must know about: a user's `--json-report-file`
/// is honoured (pytest-json-report then writes it there, beside mlport's own stream), so
/// `--json-report` is added when missing. Errors: `-p no:mlport_pytest`, which would silence
/// the stream.
fn user_args(args: &[String]) -> Result<Vec<String>> {
    let mut out = args.to_vec();
    if args.windows(2).any(|w| w[0] == "-p" && w[1] == format!("no:{}", stream::PLUGIN_MODULE)) {
        bail!(
            "`-p no:{}` would stop mlport's plugin, which reports each test's result; remove it",
            stream::PLUGIN_MODULE
        );
    }
    let wants_file = args.iter().any(|a| a == "--json-report-file" || a.starts_with("--json-report-file="));
    if wants_file && !args.iter().any(|a| a == "--json-report") {
        out.push("--json-report".into());
    }
    Ok(out)
}

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

/// The node ids a run already has results for (what `--resume` deselects).
fn done_nodeids(store: &Store, run: i64) -> Result<Vec<String>> {
    let mut seen = HashSet::new();
    Ok(store
        .results(run)?
        .into_iter()
        .filter_map(|r| match r.case.spec {
            Spec::Imported(s) => s.nodeid,
            _ => None,
        })
        .filter(|n| seen.insert(n.clone()))
        .collect())
}

/// The run the results go to: created with the first piece, or the resumed one.
struct Target<'a> {
    store: &'a mut Store,
    run: Option<i64>,
    info: crate::model::RunInfo,
    origin: RunOrigin,
    pieces: usize,
}

impl Target<'_> {
    fn add(&mut self, piece: &RunData) -> Result<()> {
        let run = match self.run {
            Some(r) => r,
            None => {
                let r = self.store.create_run(&self.info, &self.origin, &[], &[])?;
                self.run = Some(r);
                r
            }
        };
        self.store.append_to_run(run, piece)?;
        self.pieces += 1;
        Ok(())
    }
}

/// How the session ended, as mlport saw it.
enum Ending {
    Exited(std::process::ExitStatus),
    Interrupted,
    TimedOut(f64),
}

/// `mlport pytest`.
pub fn pytest(args: PytestArgs) -> Result<ExitStatus> {
    // --format html is a report of `mlport report` only: refused before any work.
    super::output::format_of(args.format)?;
    let (framework, device) = (args.framework, args.device.clone());
    if let Some(p) = args.path.iter().find(|p| !p.exists()) {
        bail!("{}: no such test file or folder", p.display());
    }
    let extra = user_args(&args.pytest_args)?;
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
    let out_dir = workspace::pytest_dir(&args.db.db);
    let plugin_dir = out_dir.join("plugin");
    workspace::create_dir(&plugin_dir)?;
    let plugin = plugin_dir.join(format!("{}.py", stream::PLUGIN_MODULE));
    std::fs::write(&plugin, stream::PLUGIN_SOURCE).with_context(|| format!("cannot write {}", plugin.display()))?;
    let timings_path = out_dir.join("timings.json");
    let mut cmd = Command::new(&env.python);
    let python_path = match std::env::var_os("PYTHONPATH") {
        Some(p) if !p.is_empty() => {
            let mut v = plugin_dir.clone().into_os_string();
            v.push(":");
            v.push(p);
            v
        }
        _ => plugin_dir.clone().into_os_string(),
    };
    cmd.args(["-m", "pytest"])
        .args(&args.path)
        .args(["-p", stream::PLUGIN_MODULE, "-p", "no:cacheprovider", "--continue-on-collection-errors"])
        .args(&extra)
        .env("PYTHONPATH", python_path)
        .env("MLPORT_DEVICE", device.as_str())
        .env("MLPORT_FRAMEWORK", framework.as_str())
        .env("MLPORT_TIMINGS", &timings_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    if let Some(run) = &resumed {
        let done = done_nodeids(&store, run.id)?;
        let skip = out_dir.join("done-nodeids.txt");
        std::fs::write(&skip, done.join("\n")).with_context(|| format!("cannot write {}", skip.display()))?;
        cmd.env("MLPORT_PYTEST_SKIP", &skip);
        eprintln!("mlport: resuming run {}: {} tests already have results and are deselected", run.id, done.len());
    }
    eprintln!(
        "mlport: running pytest on {} with MLPORT_DEVICE={device} ({})",
        args.path.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "),
        env.python.display()
    );

    let mut info = import::blank_info(framework, &command_line());
    runner::machine_info(&mut info);
    info.started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    info.python_executable = env.python.display().to_string();
    if let Some(v) = pyenv::package_version(&env.python, framework) {
        info.frameworks.insert(framework, FrameworkInfo { version: Some(v), ..Default::default() });
    }
    if let Some(v) = pyenv::python_version(&env.python) {
        info.python_version = v;
    }
    let host = crate::sysinfo::host();
    let origin = RunOrigin {
        source: RunSource::Pytest,
        label: args.label.clone(),
        machine: Some(host),
        notes: vec![format!("pytest's stream is kept in {}", out_dir.join("stream.jsonl").display())],
        ..RunOrigin::default()
    };
    let mut target = Target { store: &mut store, run: resumed.as_ref().map(|r| r.id), info, origin, pieces: 0 };
    let mut s = Stream::new(framework, device.clone(), args.group_by.clone());
    let log_path = out_dir.join("stream.jsonl");
    let mut log = std::fs::File::create(&log_path).with_context(|| format!("cannot write {}", log_path.display()))?;

    let limit = args.timeout.map(|t| Duration::from_secs_f64(t.min(catalogue::MAX_TIMEOUT_S)));
    let mut child =
        process::own_group(&mut cmd).spawn().with_context(|| format!("cannot run {}", env.python.display()))?;
    let rx = read_lines(child.stdout.take().context("pytest's stdout")?);
    let started = Instant::now();
    let (mut hello, mut ended_cleanly) = (false, false);
    let interrupted = process::interrupted();
    let mut handle = |line: &str, s: &mut Stream, target: &mut Target<'_>| -> Result<()> {
        let _ = writeln!(log, "{line}");
        match stream::parse(line) {
            Ok(Message::Hello { v, .. }) if v == stream::STREAM_VERSION => hello = true,
            Ok(Message::Hello { v, .. }) => {
                bail!("mlport's pytest plugin speaks stream version {v}, this mlport {}", stream::STREAM_VERSION)
            }
            Ok(Message::Start { nodeid }) => s.in_flight = Some(nodeid),
            Ok(Message::Test { test, devices }) => {
                if let Some(piece) = s.test(*test, &devices) {
                    target.add(&piece)?;
                }
            }
            Ok(Message::CollectError { nodeid, message, longrepr }) => {
                eprintln!("mlport: {nodeid} could not be collected: {message}");
                target.add(&s.collect_error(&nodeid, &message, longrepr.as_deref()))?;
            }
            Ok(Message::End { .. }) => ended_cleanly = true,
            // A line that is not the plugin's (a test that wrote to the protocol's descriptor):
            // kept in the stream log, said, and skipped.
            Err(e) => eprintln!("mlport: {e}"),
        }
        Ok(())
    };
    let ending = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Incoming::Line(line)) => handle(&line, &mut s, &mut target)?,
            Ok(Incoming::TooLong) => eprintln!("mlport: a line of the plugin's stream was over 8 MiB; reading stopped"),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {}
        }
        if interrupted.load(Ordering::SeqCst) {
            process::stop_group(&mut child);
            break Ending::Interrupted;
        }
        if let Some(l) = limit
            && started.elapsed() >= l
        {
            process::stop_group(&mut child);
            break Ending::TimedOut(l.as_secs_f64());
        }
        if process::has_ended(&child) {
            // What the suite left in its group (forked workers holding the pipe) goes with it;
            // the lines already written are read to the end.
            process::kill_group(&child);
            let deadline = Instant::now() + Duration::from_secs(5);
            while let Ok(m) = rx.recv_deadline(deadline) {
                if let Incoming::Line(line) = m {
                    handle(&line, &mut s, &mut target)?;
                }
            }
            break Ending::Exited(child.wait()?);
        }
    };
    // Lines read while the group was being stopped.
    while let Ok(Incoming::Line(line)) = rx.try_recv() {
        handle(&line, &mut s, &mut target)?;
    }
    let mut notes = Vec::new();
    let state = match &ending {
        // Stopped by the user: the test in flight has no result, and none is made up for it.
        Ending::Interrupted => RunState::Interrupted,
        Ending::TimedOut(after) => {
            let name = s.in_flight.clone();
            if let Some(piece) = s.unfinished(&TestEnding::TimedOut(*after)) {
                target.add(&piece)?;
            }
            eprintln!(
                "mlport: pytest did not finish within --timeout {after:.0} s; its process group was killed{}",
                name.map(|n| format!(" while {n} ran (recorded as timeout)")).unwrap_or_default()
            );
            RunState::Incomplete
        }
        Ending::Exited(status) => {
            let crashed = status.signal().is_some() || !ended_cleanly;
            if crashed && let Some(name) = s.in_flight.clone() {
                let piece = s.unfinished(&TestEnding::Crashed { signal: status.signal(), exit_code: status.code() });
                if let Some(piece) = piece {
                    target.add(&piece)?;
                }
                let how =
                    status.signal().map_or_else(|| format!("exit code {:?}", status.code()), process::signal_name);
                eprintln!("mlport: pytest died ({how}) while {name} ran; it is recorded as crash");
                notes.push(format!(
                    "pytest died ({how}) while {name} ran; `mlport pytest ... --resume` runs the tests after it"
                ));
                RunState::Incomplete
            } else if !hello {
                bail!(
                    "pytest did not load mlport's plugin ({}); nothing was recorded",
                    status.code().map_or_else(|| format!("{status}"), |c| exit_problem(c, &args.path[0]))
                );
            } else if target.pieces == 0 {
                bail!("{}", exit_problem(status.code().unwrap_or(-1), &args.path[0]));
            } else {
                RunState::Finished
            }
        }
    };
    let Some(run) = target.run else {
        if matches!(ending, Ending::Interrupted) {
            eprintln!("mlport: interrupted; pytest's process group was stopped and nothing was recorded");
            return Ok(ExitStatus::Interrupted);
        }
        bail!("pytest recorded no test; nothing was stored");
    };
    if target.pieces == 0 && resumed.is_some() {
        eprintln!("mlport: no test was left to run");
    }
    if let Some(note) = s.device_note() {
        eprintln!("mlport: {note}");
        notes.push(note);
    }
    let mut all = store.run(run)?.origin.notes;
    for n in notes {
        if !all.contains(&n) {
            all.push(n);
        }
    }
    store.set_run_notes(run, &all)?;
    store.finish_run(run, state)?;
    let counts: Vec<String> = s.counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    eprintln!(
        "mlport: stored in run {run} ({})",
        if counts.is_empty() { "no tests".into() } else { counts.join(", ") }
    );
    print_portability(&store, run, args.format, false)?;
    if matches!(ending, Ending::Interrupted) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_exits_that_leave_nothing_are_explained() {
        let p = Path::new("tests/");
        assert_eq!(exit_problem(5, p), "pytest collected no tests from tests/");
        assert!(exit_problem(2, p).contains("interrupted"));
        assert!(exit_problem(4, p).contains("code 4"));
    }

    #[test]
    fn a_users_json_report_file_is_honoured_and_the_plugin_cannot_be_disabled() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            user_args(&args(&["--json-report-file=r.json"])).unwrap(),
            args(&["--json-report-file=r.json", "--json-report"])
        );
        assert_eq!(user_args(&args(&["-q"])).unwrap(), args(&["-q"]));
        let e = user_args(&args(&["-p", "no:mlport_pytest"])).unwrap_err().to_string();
        assert!(e.contains("would stop mlport's plugin"), "{e}");
    }
}
