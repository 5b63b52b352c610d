//! Process groups, the one supervisor of child processes mlport starts (workers and `mlport
//! pytest`'s suite): each child leads its own group (std's `CommandExt::process_group(0)`), and
//! is stopped as a group — SIGTERM, [`KILL_GRACE`], SIGKILL — so nothing it started outlives
//! it; signal names for messages; and the one Ctrl-C/SIGTERM flag of the process
//! ([`interrupted`]), installed once.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Time between SIGTERM and SIGKILL when stopping a group.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// The process's interruption flag: set once Ctrl-C (SIGINT) or SIGTERM reaches mlport. The
/// handler is installed on the first call (and only then); every later call returns the
/// same flag. Long loops (the runner, [`run_in_group`]) poll it and stop cleanly.
pub fn interrupted() -> &'static AtomicBool {
    static FLAG: AtomicBool = AtomicBool::new(false);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        // Fails only when another handler is installed (a test harness's): the flag then
        // stays unset, which is the behaviour without a handler.
        let _ = ctrlc::set_handler(|| FLAG.store(true, Ordering::SeqCst));
    });
    &FLAG
}

/// A signal's name and number for messages: `SIGSEGV (11)`, or `signal 99` when unknown.
pub fn signal_name(sig: i32) -> String {
    Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| format!("{s} ({sig})"))
}

/// Makes `cmd` start as the leader of a new process group.
pub fn own_group(cmd: &mut Command) -> &mut Command {
    cmd.process_group(0)
}

/// Sends SIGKILL to the group `child` leads: what it left running (data-loader processes, a
/// suite's servers). Harmless when the group is gone.
pub fn kill_group(child: &Child) {
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
}

/// Stops the group `child` leads: SIGTERM, up to [`KILL_GRACE`] for the leader to exit,
/// SIGKILL for the whole group, then reaps the leader. Returns how the leader ended, when it
/// could be reaped.
pub fn stop_group(child: &mut Child) -> Option<ExitStatus> {
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let status = wait_with_timeout(child, KILL_GRACE).or_else(|| {
        kill_group(child);
        child.wait().ok()
    });
    kill_group(child);
    status
}

/// Waits up to `limit` for `child` to exit; `None` when it is still running (or cannot be waited for).
pub fn wait_with_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}

/// How a command run by [`run_in_group`] ended.
#[derive(Debug)]
pub enum GroupEnd {
    /// The leader exited on its own (what it left in its group was killed).
    Exited(ExitStatus),
    /// `interrupted` was set; the group was stopped.
    Interrupted,
    /// The time limit passed; the group was stopped.
    TimedOut,
}

/// Runs `cmd` as the leader of its own group and waits, stopping the whole group
/// ([`stop_group`]) once `interrupted` is set or `limit` has passed, so nothing it started
/// outlives it.
///
/// Errors: `cmd` cannot be started.
pub fn run_in_group(cmd: &mut Command, limit: Option<Duration>, interrupted: &AtomicBool) -> std::io::Result<GroupEnd> {
    let mut child = own_group(cmd).spawn()?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            kill_group(&child);
            return Ok(GroupEnd::Exited(status));
        }
        if interrupted.load(Ordering::SeqCst) {
            stop_group(&mut child);
            return Ok(GroupEnd::Interrupted);
        }
        if limit.is_some_and(|l| started.elapsed() >= l) {
            stop_group(&mut child);
            return Ok(GroupEnd::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(11), "SIGSEGV (11)");
        assert_eq!(signal_name(99), "signal 99");
    }

    #[test]
    fn a_group_is_stopped_whole_on_timeout() {
        // The shell leads the group and leaves a sleeping child: both must be gone.
        // On a loaded machine the shell may not have started its child before a short timeout:
        // then the timeout is quadrupled and the test repeated (the property is the same).
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child.pid");
        let mut timeout = Duration::from_millis(300);
        let pid: i32 = loop {
            let mut cmd = Command::new("sh");
            cmd.arg("-c").arg(format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
            let flag = AtomicBool::new(false);
            let end = run_in_group(&mut cmd, Some(timeout), &flag).unwrap();
            assert!(matches!(end, GroupEnd::TimedOut), "{end:?}");
            match std::fs::read_to_string(&pidfile).ok().and_then(|t| t.trim().parse().ok()) {
                Some(pid) => break pid,
                None if timeout < Duration::from_secs(20) => timeout *= 4,
                None => panic!("the shell never started its child within {timeout:?}"),
            }
        };
        std::thread::sleep(Duration::from_millis(100));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for init to reap it.
        assert!(state.is_empty() || state.contains(") Z"), "the group's child still runs: {state}");
    }

    #[test]
    fn an_exit_is_reported_and_an_interrupt_stops() {
        let flag = AtomicBool::new(false);
        let end = run_in_group(Command::new("sh").args(["-c", "exit 3"]), None, &flag).unwrap();
        assert!(matches!(end, GroupEnd::Exited(s) if s.code() == Some(3)));
        flag.store(true, Ordering::SeqCst);
        let end = run_in_group(Command::new("sleep").arg("30"), None, &flag).unwrap();
        assert!(matches!(end, GroupEnd::Interrupted));
        let mut child = own_group(Command::new("sleep").arg("30")).spawn().unwrap();
        let status = stop_group(&mut child).unwrap();
        assert_eq!(status.signal(), Some(15));
    }
}
