"""mlport worker supervisor: nothing a worker starts outlives it.

Started by the core (Rust) in a process group of its own, as

    python -I -S mlport_supervisor.py CORE_PID GRACE_MS -- PYTHON -u mlport_worker.py ARGS...

It makes itself a child subreaper (Linux's PR_SET_CHILD_SUBREAPER): every process the worker
starts stays its descendant, also one whose parent exits and one that leaves the worker's
session (setsid) or process group. It starts the worker (its only child) in a process group of
its own, sharing the supervisor's stdin, stdout (the protocol pipe) and stderr, and keeps none
of the pipes itself but stderr. Then it waits, and

- when the worker ends, SIGKILLs every descendant left, reaps them, and exits as the worker did
  (the same exit code, or killed by the same signal), so the core sees the worker's own ending;
- when told to stop (SIGTERM, SIGINT, SIGHUP: the core's kill), sends SIGTERM to the worker's
  group, gives it GRACE_MS to end, SIGKILLs the whole tree and exits as the worker did;
- when the core dies, even by SIGKILL (PR_SET_PDEATHSIG sends this process SIGTERM), does the
  same at once, without the grace.

It waits blocked in waitpid: it costs no CPU time while cases are measured. It imports only the
standard library (no site packages: -I -S). Leaves (what it killed) go to stderr, one line each
time it had to kill something, so a crash's stderr tail says what the case left running.
"""

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stop(Exception):
    """Raised by the signal handler: the core asked the worker to stop, or the core died."""


# True while main waits for the worker: only then does a stop signal interrupt it (once).
WAITING = [False]


def on_stop(signum, frame):
    if WAITING[0]:
        WAITING[0] = False
        raise Stop(signum)


def descendants(root):
    """Every process below `root` (read from /proc/*/stat), parents before their children."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def reap(worker, status):
    """Reaps every child that has ended; returns the worker's wait status once it is reaped."""
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == worker:
            status = st


def kill_all(worker, status):
    """SIGKILLs every descendant until none is left (orphans come back to this subreaper and are
    found again), reaping them; returns the worker's wait status."""
    me = os.getpid()
    killed = set()
    for _ in range(2000):
        status = reap(worker, status)
        pids = descendants(me)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                if pid != worker:
                    killed.add(pid)
            except OSError:
                pass
        time.sleep(0.002)
    if killed:
        os.write(2, f"mlport supervisor: killed {len(killed)} processes the worker left running\n".encode())
    return reap(worker, status)


def stop_worker(worker, status, core, grace_s):
    """SIGTERM to the worker's group, up to `grace_s` for the worker to end (none when the core is
    gone); returns the worker's wait status when it ended."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    if status is not None:
        return status
    if os.getppid() != core:
        return None
    try:
        os.killpg(worker, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            pid, st = os.waitpid(worker, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == worker:
            return st
        time.sleep(0.01)
    return None


def exit_as(status):
    """Ends this process as the worker ended: its exit code, or its signal."""
    if status is None:
        os._exit(70)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the worker's core dump, not ours
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two can be neither caught nor blocked:
            signal.signal(sig, signal.SIG_DFL)  # signal.signal raises OSError for them
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not end a process by default
    os._exit(os.WEXITSTATUS(status))


def main():
    core, grace_ms, sep, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    if sep != "--" or not argv:
        os.write(2, b"usage: mlport_supervisor.py CORE_PID GRACE_MS -- COMMAND...\n")
        os._exit(2)
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    for s in STOP_SIGNALS:
        signal.signal(s, on_stop)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != core:
        os._exit(70)  # the core died before it could be watched
    # `mlport run --jobs`: the lane's cores, set before the fork so the worker and every thread
    # it starts inherit them (the core pins this process too, right after spawning it).
    cpus = os.environ.get("MLPORT_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    worker = os.fork()
    if worker == 0:
        try:
            for s in STOP_SIGNALS:
                signal.signal(s, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            os.setpgid(0, 0)
            os.execvp(argv[0], argv)
        except BaseException as e:  # noqa: BLE001
            os.write(2, f"mlport supervisor: cannot start {argv[0]}: {e}\n".encode())
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    status = None
    try:
        WAITING[0] = True
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        while status is None:
            pid, st = os.waitpid(-1, 0)
            if pid == worker:
                status = st
        WAITING[0] = False
    except Stop:
        status = stop_worker(worker, status, core, grace_ms / 1000)
    except ChildProcessError:
        WAITING[0] = False
    exit_as(kill_all(worker, status))


if __name__ == "__main__":
    main()
