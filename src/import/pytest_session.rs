//! A user's pytest suite run live under mlport's plugin (`mlport pytest`): pytest in its own
//! process group on one device, with the plugin loaded (`-p`, from a private folder; nothing is
//! installed), which streams each test's result as it finishes; each is committed to the store
//! at once ([`super::stream`]). A test that kills the interpreter is recorded as `crash`, the
//! test running when the time limit passes as `timeout`; a resumed run deselects the tests it
//! already has.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use crossbeam_channel::RecvTimeoutError;

use super::group::GroupBy;
use super::stream::{self, Message, Stream};
use crate::model::{Framework, FrameworkInfo, RunData, RunOrigin, RunSource, RunState, Spec, Target};
use crate::outcome::TestEnding;
use crate::store::Store;
use crate::worker::pipes::{Incoming, read_lines};
use crate::{catalogue, process_group, pyenv, runner};

/// What to run: a suite, the framework and device it is for, and where mlport keeps its files.
pub struct Session<'a> {
    /// The interpreter that runs pytest (it has pytest and the framework).
    pub python: &'a Path,
    /// The test files or folders.
    pub paths: &'a [PathBuf],
    /// The user's pytest arguments ([`user_args`]).
    pub pytest_args: &'a [String],
    /// The framework the suite tests (`MLPORT_FRAMEWORK`).
    pub framework: Framework,
    /// The device it runs on (`MLPORT_DEVICE`).
    pub device: &'a Target,
    /// How tests are grouped into functions.
    pub group_by: GroupBy,
    /// The whole session's limit, s (at most [`catalogue::MAX_TIMEOUT_S`]).
    pub timeout: Option<f64>,
    /// mlport's folder for the plugin, the stream log and timings.
    pub out_dir: PathBuf,
    /// The run's label.
    pub label: Option<String>,
    /// The command line, as recorded with the run.
    pub command_line: String,
    /// The run continued (`--resume`): its tests with results are deselected.
    pub resumed: Option<i64>,
}

/// How a session ended, once its results are stored.
pub enum Recorded {
    /// Results stored in this run (finished, incomplete or interrupted).
    Run {
        /// The run's id.
        run: i64,
        /// Stopped by Ctrl-C or SIGTERM.
        interrupted: bool,
    },
    /// Stopped by Ctrl-C or SIGTERM before any result: nothing was recorded.
    Nothing,
}

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
pub fn user_args(args: &[String]) -> Result<Vec<String>> {
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
struct Destination<'a> {
    store: &'a mut Store,
    run: Option<i64>,
    info: crate::model::RunInfo,
    origin: RunOrigin,
    pieces: usize,
}

impl Destination<'_> {
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

/// Runs the session and stores its results as they come (a run created with the first one, or
/// the resumed run); says on stderr what it does.
///
/// Errors: the store's; pytest could not start, did not load the plugin, or recorded nothing.
pub fn run(store: &mut Store, args: &Session) -> Result<Recorded> {
    let (framework, device) = (args.framework, args.device);
    let extra = user_args(args.pytest_args)?;
    let out_dir = &args.out_dir;
    let plugin_dir = out_dir.join("plugin");
    std::fs::create_dir_all(&plugin_dir).with_context(|| format!("cannot create {}", plugin_dir.display()))?;
    let plugin = plugin_dir.join(format!("{}.py", stream::PLUGIN_MODULE));
    std::fs::write(&plugin, stream::PLUGIN_SOURCE).with_context(|| format!("cannot write {}", plugin.display()))?;
    let timings_path = out_dir.join("timings.json");
    let mut cmd = Command::new(args.python);
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
        .args(args.paths)
        .args(["-p", stream::PLUGIN_MODULE, "-p", "no:cacheprovider", "--continue-on-collection-errors"])
        .args(&extra)
        .env("PYTHONPATH", python_path)
        .env("MLPORT_DEVICE", device.as_str())
        .env("MLPORT_FRAMEWORK", framework.as_str())
        .env("MLPORT_TIMINGS", &timings_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    if let Some(run) = args.resumed {
        let done = done_nodeids(store, run)?;
        let skip = out_dir.join("done-nodeids.txt");
        std::fs::write(&skip, done.join("\n")).with_context(|| format!("cannot write {}", skip.display()))?;
        cmd.env("MLPORT_PYTEST_SKIP", &skip);
        eprintln!("mlport: resuming run {run}: {} tests already have results and are deselected", done.len());
    }
    eprintln!(
        "mlport: running pytest on {} with MLPORT_DEVICE={device} ({})",
        args.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "),
        args.python.display()
    );

    let mut info = super::blank_info(framework, &args.command_line);
    runner::machine_info(&mut info);
    info.started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    info.python_executable = args.python.display().to_string();
    if let Some(v) = pyenv::package_version(args.python, framework) {
        info.frameworks.insert(framework, FrameworkInfo { version: Some(v), ..Default::default() });
    }
    if let Some(v) = pyenv::python_version(args.python) {
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
    let mut target = Destination { store, run: args.resumed, info, origin, pieces: 0 };
    let mut s = Stream::new(framework, device.clone(), args.group_by.clone());
    let log_path = out_dir.join("stream.jsonl");
    let mut log = std::fs::File::create(&log_path).with_context(|| format!("cannot write {}", log_path.display()))?;

    let limit = args.timeout.map(|t| Duration::from_secs_f64(t.min(catalogue::MAX_TIMEOUT_S)));
    let mut child =
        process_group::own_group(&mut cmd).spawn().with_context(|| format!("cannot run {}", args.python.display()))?;
    let rx = read_lines(child.stdout.take().context("pytest's stdout")?);
    let started = Instant::now();
    let (mut hello, mut ended_cleanly) = (false, false);
    let interrupted = process_group::interrupted();
    let mut handle = |line: &str, s: &mut Stream, target: &mut Destination<'_>| -> Result<()> {
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
            process_group::stop_group(&mut child);
            break Ending::Interrupted;
        }
        if let Some(l) = limit
            && started.elapsed() >= l
        {
            process_group::stop_group(&mut child);
            break Ending::TimedOut(l.as_secs_f64());
        }
        if process_group::has_ended(&child) {
            // What the suite left in its group (forked workers holding the pipe) goes with it;
            // the lines already written are read to the end.
            process_group::kill_group(&child);
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
                let how = status.signal().map_or_else(
                    || status.code().map_or_else(|| "no exit code".to_string(), |c| format!("exit code {c}")),
                    process_group::signal_name,
                );
                eprintln!("mlport: pytest died ({how}) while {name} ran; it is recorded as crash");
                notes.push(format!(
                    "pytest died ({how}) while {name} ran; `mlport pytest ... --resume` runs the tests after it"
                ));
                RunState::Incomplete
            } else if !hello {
                bail!(
                    "pytest did not load mlport's plugin ({}); nothing was recorded",
                    status.code().map_or_else(|| format!("{status}"), |c| exit_problem(c, &args.paths[0]))
                );
            } else if target.pieces == 0 {
                bail!("{}", exit_problem(status.code().unwrap_or(-1), &args.paths[0]));
            } else {
                RunState::Finished
            }
        }
    };
    let Some(run) = target.run else {
        if matches!(ending, Ending::Interrupted) {
            eprintln!("mlport: interrupted; pytest's process group was stopped and nothing was recorded");
            return Ok(Recorded::Nothing);
        }
        bail!("pytest recorded no test; nothing was stored");
    };
    if target.pieces == 0 && args.resumed.is_some() {
        eprintln!("mlport: no test was left to run");
    }
    if let Some(note) = s.device_note() {
        eprintln!("mlport: {note}");
        notes.push(note);
    }
    let store = target.store;
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
    Ok(Recorded::Run { run, interrupted: matches!(ending, Ending::Interrupted) })
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
