//! One worker process: spawned in its own process group, spoken to over the protocol,
//! killed as a group (SIGTERM, a grace period, SIGKILL) on timeout or shutdown.
//! A worker that dies is reported with its signal and last stderr lines: crash and
//! timeout are data (an outcome), never an `Err` of the run.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, unbounded};

use super::protocol::{Hello, Message, PROTOCOL_VERSION, Request, RunReply};
use crate::model::{Framework, Target};
use crate::process;

/// Bytes kept of one stderr line; the rest of a longer line is dropped and marked.
const STDERR_LINE_BYTES: usize = 4096;
/// Lines of stderr kept for crash reports.
const STDERR_TAIL_LINES: usize = 40;
pub use crate::process::KILL_GRACE;

/// How to start a worker.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// The Python interpreter (managed environment or `--python`).
    pub python: PathBuf,
    /// Folder holding mlport_worker.py and its modules.
    pub script_dir: PathBuf,
    /// The framework to import (`--framework`).
    pub framework: Framework,
    /// The target to run on: the device (`--device`, [`Target::base`]) and its mode
    /// (`--mode`, [`Target::mode`]); one worker serves one target.
    pub device: Target,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

/// The environment that sets a worker's host compute threads to `n` for every framework:
/// `MLPORT_THREADS` (read by the adapters: torch.set_num_threads, TensorFlow's intra- and
/// inter-op parallelism), the OpenMP/MKL/OpenBLAS variables (NumPy and the BLAS under all of
/// them) and, for one thread, XLA's `--xla_cpu_multi_thread_eigen=false` (JAX).
pub fn thread_env(n: u32) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        ["MLPORT_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"]
            .iter()
            .map(|k| (k.to_string(), n.to_string()))
            .collect();
    if n == 1 {
        let old = std::env::var("XLA_FLAGS").unwrap_or_default();
        env.push(("XLA_FLAGS".into(), format!("{old} --xla_cpu_multi_thread_eigen=false").trim().to_string()));
    }
    env
}

/// How a request ended when the worker did not answer normally.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// No answer within the limit; the worker group was killed.
    Timeout {
        /// The limit that passed (the case's `timeout_s`, or the start limit while waiting for hello).
        after: Duration,
        /// The signal number that ended the worker after the group kill (15 SIGTERM, or 9 SIGKILL
        /// after [`KILL_GRACE`]); `None` if it ended without a signal.
        signal: Option<i32>,
        /// The worker's last stderr lines (at most 40), newline-joined.
        stderr_tail: String,
    },
    /// The worker died (or closed its pipe) before answering.
    Died {
        /// The signal number that killed it (11 SIGSEGV, 6 SIGABRT, 9 SIGKILL from the OOM
        /// killer); `None` if it exited or could not be started.
        signal: Option<i32>,
        /// Its exit code when it exited without a signal.
        exit_code: Option<i32>,
        /// The worker's last stderr lines (at most 40), or why the interpreter could not be started.
        stderr_tail: String,
    },
    /// The worker answered something that is not protocol v1.
    Protocol {
        /// What was wrong: not JSON, another version, an unexpected kind, or an answer whose
        /// `case_key` or `nonce` is not the request's.
        message: String,
        /// The worker's last stderr lines (at most 40), newline-joined.
        stderr_tail: String,
    },
    /// The run was interrupted (Ctrl-C) while waiting.
    Interrupted,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tail = |t: &str| if t.trim().is_empty() { String::new() } else { format!("; its last stderr lines:\n{t}") };
        match self {
            Failure::Timeout { after, stderr_tail, .. } => {
                write!(f, "no answer within {:.1} s{}", after.as_secs_f64(), tail(stderr_tail))
            }
            Failure::Died { signal: Some(s), stderr_tail, .. } => {
                write!(f, "the worker was killed by signal {s}{}", tail(stderr_tail))
            }
            Failure::Died { exit_code: Some(c), stderr_tail, .. } => {
                write!(f, "the worker exited with code {c}{}", tail(stderr_tail))
            }
            Failure::Died { stderr_tail, .. } => {
                write!(f, "the worker could not be started or closed its pipe{}", tail(stderr_tail))
            }
            Failure::Protocol { message, stderr_tail } => write!(f, "protocol error: {message}{}", tail(stderr_tail)),
            Failure::Interrupted => f.write_str("interrupted"),
        }
    }
}

/// A running worker.
pub struct Worker {
    /// How it was started.
    pub spec: WorkerSpec,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Its first message: interpreter, framework version, devices, or the import error.
    pub hello: Hello,
}

fn stderr_tail(buf: &Arc<Mutex<VecDeque<String>>>) -> String {
    let g = buf.lock().unwrap_or_else(|e| e.into_inner());
    g.iter().cloned().collect::<Vec<_>>().join("\n")
}

/// Starts a worker and waits up to `start_timeout` for its hello.
///
/// Errors: [`Failure::Died`] if the interpreter cannot be started or exits first,
/// [`Failure::Timeout`] if no hello comes in time, [`Failure::Protocol`] for a first message
/// that is not a hello of [`PROTOCOL_VERSION`], [`Failure::Interrupted`] when `interrupted` is set.
/// A worker whose framework failed to import still starts: see [`Hello::import_error`].
pub fn spawn(spec: &WorkerSpec, start_timeout: Duration, interrupted: &AtomicBool) -> Result<Worker, Failure> {
    let script = spec.script_dir.join("mlport_worker.py");
    let mut cmd = Command::new(&spec.python);
    cmd.arg("-u")
        .arg(&script)
        .arg("--framework")
        .arg(spec.framework.as_str())
        .arg("--device")
        .arg(spec.device.base().as_str())
        .arg("--mode")
        .arg(spec.device.mode().as_str())
        .env("PYTHONPATH", &spec.script_dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    process::own_group(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Err(Failure::Died {
                signal: None,
                exit_code: None,
                stderr_tail: format!("cannot start {}: {e}", spec.python.display()),
            });
        }
    };
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = unbounded();
    std::thread::spawn(move || {
        // Bytes, not `lines()`: a line that is not UTF-8 is a protocol error for the
        // core to record, not the end of the conversation.
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string();
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_LINES)));
    let tail2 = Arc::clone(&tail);
    std::thread::spawn(move || {
        let keep = |bytes: &[u8], cut: bool| {
            let mut l = String::from_utf8_lossy(bytes).into_owned();
            if cut {
                l.push_str(" […cut]");
            }
            tracing::trace!(target: "worker_stderr", "{l}");
            let mut g = tail2.lock().unwrap_or_else(|e| e.into_inner());
            if g.len() == STDERR_TAIL_LINES {
                g.pop_front();
            }
            g.push_back(l);
        };
        // Lines are kept up to STDERR_LINE_BYTES: a case that prints 300 MB without a
        // newline costs neither memory nor store space.
        let mut reader = BufReader::new(stderr);
        let mut line: Vec<u8> = Vec::new();
        let mut cut = false;
        loop {
            let (consumed, end) = match reader.fill_buf() {
                Ok([]) | Err(_) => break,
                Ok(buf) => {
                    let (chunk, consumed, end) = match buf.iter().position(|&b| b == b'\n') {
                        Some(i) => (&buf[..i], i + 1, true),
                        None => (buf, buf.len(), false),
                    };
                    let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                    cut |= chunk.len() > room;
                    line.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    (consumed, end)
                }
            };
            reader.consume(consumed);
            if end {
                keep(&line, cut);
                line.clear();
                cut = false;
            }
        }
        if !line.is_empty() {
            keep(&line, cut);
        }
    });
    let mut w = Worker { spec: spec.clone(), child, stdin: None, lines: rx, stderr: tail, hello: placeholder_hello() };
    w.stdin = w.child.stdin.take();
    match w.receive(start_timeout, interrupted) {
        Ok(Message::Hello(h)) => {
            if h.protocol != PROTOCOL_VERSION {
                let f = Failure::Protocol {
                    message: format!("worker speaks protocol {}, core {}", h.protocol, PROTOCOL_VERSION),
                    stderr_tail: w.stderr_tail(),
                };
                w.kill();
                return Err(f);
            }
            w.hello = h;
            Ok(w)
        }
        Ok(other) => {
            let f =
                Failure::Protocol { message: format!("expected hello, got {other:?}"), stderr_tail: w.stderr_tail() };
            w.kill();
            Err(f)
        }
        Err(f) => Err(f),
    }
}

fn placeholder_hello() -> Hello {
    Hello {
        v: PROTOCOL_VERSION,
        protocol: PROTOCOL_VERSION,
        pid: 0,
        python: String::new(),
        python_executable: String::new(),
        framework: String::new(),
        device: String::new(),
        mode: String::new(),
        framework_version: None,
        import_error: None,
        devices: Vec::new(),
        packages: Default::default(),
        threads: None,
        settings: Default::default(),
    }
}

impl Worker {
    /// The worker's process id (also its process-group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines the worker wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        stderr_tail(&self.stderr)
    }

    fn send(&mut self, req: &Request) -> Result<(), Failure> {
        let mut line = serde_json::to_string(req).expect("requests serialise");
        line.push('\n');
        let ok = match self.stdin.as_mut() {
            Some(s) => s.write_all(line.as_bytes()).and_then(|_| s.flush()).is_ok(),
            None => false,
        };
        if ok { Ok(()) } else { Err(self.died()) }
    }

    /// Waits for the next message; kills the group on timeout.
    fn receive(&mut self, timeout: Duration, interrupted: &AtomicBool) -> Result<Message, Failure> {
        let start = Instant::now();
        loop {
            if interrupted.load(Ordering::SeqCst) {
                self.kill();
                return Err(Failure::Interrupted);
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                let signal = self.kill();
                return Err(Failure::Timeout { after: timeout, signal, stderr_tail: self.stderr_tail() });
            }
            match self.lines.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(line) => {
                    return super::protocol::parse_line(&line).map_err(|message| {
                        let stderr_tail = self.stderr_tail();
                        self.kill();
                        Failure::Protocol { message, stderr_tail }
                    });
                }
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Err(self.died()),
            }
        }
    }

    /// The worker closed its pipe: wait for it and describe how it ended.
    fn died(&mut self) -> Failure {
        let status = process::wait_with_timeout(&mut self.child, Duration::from_secs(5)).or_else(|| {
            self.kill();
            self.child.try_wait().ok().flatten()
        });
        // Processes the worker started in its group do not outlive it.
        process::kill_group(&self.child);
        // Give the stderr reader a moment to drain the last lines.
        std::thread::sleep(Duration::from_millis(50));
        Failure::Died {
            signal: status.and_then(|s| s.signal()),
            exit_code: status.and_then(|s| s.code()),
            stderr_tail: self.stderr_tail(),
        }
    }

    /// True while the worker process runs and has said nothing unasked: a line waiting
    /// between requests (a late answer, or output a case forged) means the conversation
    /// can no longer be trusted, and the worker should be replaced.
    pub fn is_ready(&mut self) -> bool {
        let mut stale = false;
        while let Ok(line) = self.lines.try_recv() {
            tracing::warn!("worker {} said something unasked: {line:.200}", self.child.id());
            stale = true;
        }
        !stale && matches!(self.child.try_wait(), Ok(None))
    }

    /// Runs one case with a time limit. An answer for another case than the one asked
    /// is a protocol error (the worker is then killed).
    pub fn run(&mut self, req: &Request, timeout: Duration, interrupted: &AtomicBool) -> Result<RunReply, Failure> {
        self.send(req)?;
        match self.receive(timeout, interrupted)? {
            Message::Result(r) => {
                let (asked, nonce) = match req {
                    Request::Run { case_key, nonce, .. } => (Some(*case_key), Some(*nonce)),
                    _ => (None, None),
                };
                if r.case_key.as_deref() != asked || r.nonce != nonce {
                    let stderr_tail = self.stderr_tail();
                    self.kill();
                    return Err(Failure::Protocol {
                        message: format!(
                            "an answer for case {:?} (nonce {:?}) while {:?} (nonce {:?}) was asked",
                            r.case_key, r.nonce, asked, nonce
                        ),
                        stderr_tail,
                    });
                }
                Ok(r)
            }
            other => {
                let stderr_tail = self.stderr_tail();
                self.kill();
                Err(Failure::Protocol { message: format!("expected a result, got {other:?}"), stderr_tail })
            }
        }
    }

    /// Kills the worker's whole process group: SIGTERM, then SIGKILL after
    /// [`KILL_GRACE`]. Returns the signal that ended the worker, if one did.
    pub fn kill(&mut self) -> Option<i32> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return status.signal();
        }
        // Children the worker left in its group (e.g. data-loader processes) go with it.
        process::stop_group(&mut self.child).and_then(|s| s.signal())
    }

    /// Asks the worker to exit; kills it if it does not within the grace period.
    pub fn shutdown(mut self) {
        let ok = self.send(&Request::Shutdown { v: PROTOCOL_VERSION }).is_ok();
        self.stdin = None;
        if !ok || process::wait_with_timeout(&mut self.child, KILL_GRACE).is_none() {
            self.kill();
        } else {
            // Processes the worker started in its group do not outlive it.
            process::kill_group(&self.child);
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

/// Writes the embedded worker sources into `dir` (idempotent) and returns it.
pub fn install_scripts(dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in super::SOURCES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            std::fs::write(&tmp, text)?;
            std::fs::rename(&tmp, &path)?;
        }
    }
    Ok(dir.to_path_buf())
}
