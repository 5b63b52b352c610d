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

/// Whether `child` has ended, without reaping it (`waitid` with `WNOWAIT`): while it stays
/// unreaped its pid, and the group id it gave its group, cannot be taken by another process, so
/// signalling the group afterwards can reach no stranger. True also when it was reaped already
/// or cannot be waited for.
pub fn has_ended(child: &Child) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    !matches!(waitid(Id::Pid(Pid::from_raw(child.id() as i32)), flags), Ok(WaitStatus::StillAlive))
}

/// Waits up to `limit` for `child` to end, without reaping it ([`has_ended`]); false when it
/// still runs.
pub fn wait_ended(child: &Child, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if has_ended(child) {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends SIGKILL to the group `child` leads: what it left running (data-loader processes, a
/// suite's servers). Harmless when the group is gone. Call it before `child` is reaped (see
/// [`has_ended`]): once reaped, its group id may be another's.
pub fn kill_group(child: &Child) {
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
}

/// Stops the group `child` leads, whether or not `child` itself still runs: SIGTERM to the
/// group, up to `grace` for the leader to end, SIGKILL to the whole group (while the leader is
/// still unreaped, so the group id is still its own), then reaps the leader. Returns how the
/// leader ended, when it could be reaped. A leader that had already ended still gets its group
/// killed: processes it left there (a case's forked children) go with it.
pub fn stop_group_within(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if !has_ended(child) {
        let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        wait_ended(child, grace);
    }
    kill_group(child);
    child.wait().ok()
}

/// [`stop_group_within`] [`KILL_GRACE`].
pub fn stop_group(child: &mut Child) -> Option<ExitStatus> {
    stop_group_within(child, KILL_GRACE)
}

/// Waits up to `limit` for `child` to exit, reaping it; `None` when it is still running (or
/// cannot be waited for).
pub fn wait_with_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    if wait_ended(child, limit) { child.try_wait().ok().flatten() } else { None }
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
        if has_ended(&child) {
            kill_group(&child);
            return Ok(GroupEnd::Exited(child.wait()?));
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
