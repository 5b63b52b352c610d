//! The worker protocol, version 8 (docs/protocol.md): JSON lines. The core writes
//! requests to the worker's stdin; the worker answers on a dedicated pipe (the pipe it
//! inherited as fd 1, which it moves to a private descriptor before importing any
//! framework, pointing fd 1 at stderr). Arrays travel as .npy files in the run folder.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::{Framework, Mode};

/// How the worker says a case ended ([`RunReply::outcome`]); timeouts and crashes are decided
/// by the core.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::Display,
    strum::VariantArray,
    strum::EnumCount,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReplyOutcome {
    /// The case ran (its outputs are still to be compared).
    Pass,
    /// The case raised: [`RunReply::error`] says what.
    Fail,
    /// mlport's own file I/O failed (protocol 8): [`RunReply::io_error`] says what.
    IoError,
}

/// The phase of a case in which the worker saw an error ([`WorkerError::phase`]), in the order
/// a case goes through them.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::Display,
    strum::VariantArray,
    strum::EnumCount,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Phase {
    /// Importing the framework (the worker then answers every case with the error).
    Import,
    /// Looking the function up by its name.
    Resolve,
    /// Building or reading the case's inputs.
    Inputs,
    /// The case's own setup code.
    Setup,
    /// The first call on the device, with its synchronisation (compilation included).
    FirstCall,
    /// Checking and writing the outputs.
    Outputs,
    /// `--quick`: the untimed second call.
    Repeat,
    /// The steady-state timing.
    Steady,
}

/// The start of the message of a field whose value is not one the protocol defines: the
/// error [`parse_line`] returns then names the field rather than the message kind.
const UNKNOWN_VALUE: &str = "worker protocol: field `";

/// The one of `candidates` (spelled by `name`) named `value`, or the error for `field` that
/// lists them: ``worker protocol: field `outcome`: unknown value `passs` (expected one of pass,
/// fail, io_error)``.
fn wire_value<T: Copy>(
    field: &str,
    value: &str,
    candidates: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<T, String> {
    candidates.iter().copied().find(|&c| name(c) == value).ok_or_else(|| {
        let names: Vec<&str> = candidates.iter().map(|&c| name(c)).collect();
        format!("{UNKNOWN_VALUE}{field}`: unknown value `{value}` (expected one of {})", names.join(", "))
    })
}

/// Deserialises a field holding one of `candidates` by name.
fn wire_field<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    field: &str,
    candidates: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    wire_value(field, &s, candidates, name).map_err(D::Error::custom)
}

impl<'de> Deserialize<'de> for ReplyOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        wire_field(d, "outcome", &ReplyOutcome::ALL, <&'static str>::from)
    }
}

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        wire_field(d, "phase", &Phase::ALL, <&'static str>::from)
    }
}

impl ReplyOutcome {
    /// Every outcome a worker may answer.
    pub const ALL: [ReplyOutcome; <ReplyOutcome as strum::EnumCount>::COUNT] =
        *<ReplyOutcome as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");
}

impl Phase {
    /// Every phase, in the order a case goes through them.
    pub const ALL: [Phase; <Phase as strum::EnumCount>::COUNT] =
        *<Phase as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");
}

/// Serde for [`WorkerError::phase`]: `""` (or no field) is `None`.
mod phase_or_empty {
    use super::*;

    pub fn serialize<S: Serializer>(p: &Option<Phase>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.map_or("", <&'static str>::from))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Phase>, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Ok(None);
        }
        wire_value("phase", &s, &Phase::ALL, <&'static str>::from).map(Some).map_err(D::Error::custom)
    }
}

/// [`Hello::framework`]: a framework's stored name ([`Framework::as_str`]), no alias.
fn hello_framework<'de, D: Deserializer<'de>>(d: D) -> Result<Framework, D::Error> {
    let all: Vec<Framework> =
        Framework::ALL.iter().chain(&Framework::ADD_ONS).chain(&Framework::KERAS).copied().collect();
    wire_field(d, "framework", &all, Framework::as_str)
}

/// [`Hello::mode`]: a mode's name ([`Mode::as_str`]).
fn hello_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
    wire_field(d, "mode", &Mode::ALL, Mode::as_str)
}

/// The protocol version this core speaks; every message carries it as `v`.
pub const PROTOCOL_VERSION: u32 = 13;

/// Settings of blocked steady-state timing (after torch.utils.benchmark's
/// `blocked_autorange`): after warm-up calls for `warmup_ms` the block size doubles from 1 until a block
/// lasts `min_block_ms`; then blocks are timed until the spread (IQR/median of their ns per
/// call) is under `target_spread` with `min_blocks` taken and `min_time_ms` spent in blocks,
/// or `budget_ms` is spent with `min_blocks` taken, or `max_blocks` are taken.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    /// Warm-up before anything is timed, ms (at least one call): thread pools awake, caches
    /// warm, the allocator settled.
    pub warmup_ms: f64,
    /// Shortest block, ms: the timer's own cost (~100 ns a reading) is then under 1e-4 of
    /// a block, torch's `blocked_autorange` criterion.
    pub min_block_ms: f64,
    /// At least this many blocks.
    pub min_blocks: u32,
    /// At most this many blocks.
    pub max_blocks: u32,
    /// Stop once IQR/median of the blocks' ns per call is under this (and `min_blocks` are
    /// taken, and `min_time_ms` spent).
    pub target_spread: f64,
    /// Least time spent in blocks before the spread may stop the timing, ms: a burst of
    /// interference shorter than this cannot pass for a steady state.
    pub min_time_ms: f64,
    /// Stop once this many ms have passed since the warm-up began (and `min_blocks` are taken).
    pub budget_ms: f64,
    /// False for `mlport run --quick`: after the first call the case is called once more,
    /// untimed, and no steady state is taken (no samples). Sent only when false, so requests
    /// of a timed run read as before.
    #[serde(default = "steady_default", skip_serializing_if = "is_steady")]
    pub steady: bool,
}

fn steady_default() -> bool {
    true
}

fn is_steady(steady: &bool) -> bool {
    *steady
}

impl Default for Timing {
    /// 10 ms of warm-up, then blocks of at least 1 ms, 5..=1000 of them, at least 20 ms of them, until IQR/median
    /// < 5% or 100 ms per case: a call of a few µs gets blocks of hundreds of calls, one of
    /// 50 ms blocks of one call.
    fn default() -> Self {
        Timing {
            warmup_ms: 10.0,
            min_block_ms: 1.0,
            min_blocks: 5,
            max_blocks: 1000,
            target_spread: 0.05,
            min_time_ms: 20.0,
            budget_ms: 100.0,
            steady: true,
        }
    }
}

/// A request from the core.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request<'a> {
    /// Run one case at one dtype.
    Run {
        /// Always [`PROTOCOL_VERSION`].
        v: u32,
        /// A fresh number per request, echoed in the answer: a line that does not carry it
        /// (one a case wrote itself, or a late answer to an earlier request) is refused.
        nonce: u64,
        /// The case at this dtype, `framework/function/case_id/dtype` ([`crate::plan::case_key`]);
        /// echoed in the answer and used (sanitised) to name the output files.
        case_key: &'a str,
        /// The case's catalogue spec as planned ([`crate::model::CaseRow::spec`]):
        /// `function`, `id`, `inputs`, `kwargs`, `code`, `compare`, `outputs`.
        case: &'a crate::model::Spec,
        /// The swept dtype; inputs with dtype `T` take it (`""` for none: the worker's float32).
        #[serde(with = "crate::model::dtype_or_empty")]
        dtype: Option<crate::model::Dtype>,
        /// Input seed (run seed + case seed); input `i` is drawn with NumPy's PCG64 seeded
        /// `[seed mod 2^32, i]`.
        seed: u64,
        /// Folder the worker writes output `.npy` files into (one per framework and device).
        out_dir: &'a str,
        /// Folder of the run's input arrays, made once: input `i` of the case is
        /// `<inputs_dir>/<input_key>.in<i>.npy`, read when present, else built and written
        /// (protocol 3).
        inputs_dir: &'a str,
        /// [`crate::plan::input_key`] of the case at this dtype and seed (protocol 3).
        input_key: &'a str,
        /// Compute the float64 reference instead of running the case: floating inputs are
        /// upcast to float64 (complex to complex128), the call is made once and its outputs
        /// saved; no steady-state timing (protocol 3).
        reference: bool,
        /// Steady-state repetition settings.
        timing: &'a Timing,
    },
    /// Asks for a `pong`: a liveness check.
    Ping {
        /// Always [`PROTOCOL_VERSION`].
        v: u32,
    },
    /// Asks the worker to answer `bye` and exit.
    Shutdown {
        /// Always [`PROTOCOL_VERSION`].
        v: u32,
    },
}

/// A device a framework reports.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct WorkerDevice {
    /// Canonical device name (`cpu`, `cuda:1`, `tpu:0`); the runner ignores names that do not
    /// parse as a [`crate::model::Target`].
    pub device: String,
    /// Whether the framework can use the device now; only available devices run cases.
    pub available: bool,
    /// The framework's own name for it (`/GPU:0` in TensorFlow, a JAX device's `str`, `cuda:0`).
    #[serde(default)]
    pub native: String,
    /// Free text, possibly empty: the GPU model, the CPU thread count, a JAX `device_kind`.
    #[serde(default)]
    pub detail: String,
}

/// An error as the worker saw it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Default)]
pub struct WorkerError {
    /// Qualified exception type (`torch.OutOfMemoryError`, `NotImplementedError`).
    #[serde(rename = "type")]
    pub error_type: String,
    /// `str(exception)`, whole up to 65,536 characters; a longer one keeps its first and last
    /// 32,768 with a note between them (protocol 6; its first 4000 before).
    pub message: String,
    /// The formatted Python traceback, whole up to 32,768 characters, else its head and tail; empty when there is
    /// none (a silent fallback is detected, not raised).
    #[serde(default)]
    pub traceback: String,
    /// The phase the error was raised in; `None` when the worker sent none (`""`).
    #[serde(default, with = "phase_or_empty")]
    pub phase: Option<Phase>,
    /// True when the worker judged the error its own or the catalogue's (harness_error).
    #[serde(default)]
    pub harness: bool,
}

/// A failure of mlport's own file I/O in the worker (protocol 8): writing an output `.npy`,
/// writing or reading the run's input cache, creating their folders. Never an outcome of the
/// case: the core stops the run and leaves the case pending (docs/protocol.md, "Faults").
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct OwnIoError {
    /// The file or folder mlport could not write or read (absolute, as the worker used it).
    pub path: String,
    /// What mlport was doing: `write`, `read` or `create folder`.
    pub operation: String,
    /// The OS error number (`28` for ENOSPC), when the error had one.
    #[serde(default)]
    pub errno: Option<i32>,
    /// The OS's words for it (`No space left on device`).
    pub message: String,
}

impl OwnIoError {
    /// The error of the core's own `operation` on `path` (a folder it could not create).
    pub fn from_io(path: &std::path::Path, operation: &str, e: &std::io::Error) -> OwnIoError {
        OwnIoError {
            path: path.display().to_string(),
            operation: operation.to_string(),
            errno: e.raw_os_error(),
            message: e.to_string(),
        }
    }
}

impl std::fmt::Display for OwnIoError {
    /// `could not write /r/numpy-cpu/x.out0.npy: No space left on device (errno 28)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not {} {}: {}", self.operation, self.path, self.message)?;
        match self.errno {
            Some(n)
                if !self.message.contains(&format!("Errno {n}")) && !self.message.contains(&format!("error {n}")) =>
            {
                write!(f, " (errno {n})")
            }
            _ => Ok(()),
        }
    }
}

/// The worker's first message, sent once its framework is imported (or failed to).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Hello {
    /// Version of this message, [`PROTOCOL_VERSION`] ([`parse_line`] checks it).
    pub v: u32,
    /// The protocol version the worker speaks; [`crate::worker::spawn`] refuses a worker whose
    /// version differs from [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The worker's process id (`os.getpid()`), which is also its process-group id.
    pub pid: u32,
    /// The interpreter's version, `platform.python_version()` (`3.11.7`).
    pub python: String,
    /// The interpreter's path, `sys.executable`.
    pub python_executable: String,
    /// The framework it was started for (its `--framework`).
    #[serde(deserialize_with = "hello_framework")]
    pub framework: Framework,
    /// The canonical device it was started for (its `--device`, without a mode).
    pub device: String,
    /// The execution mode it was started for (its `--mode`): `eager`, `compiled`, … (protocol 4).
    #[serde(deserialize_with = "hello_mode")]
    pub mode: Mode,
    /// The framework's `__version__`; `None` when the import failed.
    pub framework_version: Option<String>,
    /// Why the framework could not be imported (phase `import`); the core then runs no case of it.
    pub import_error: Option<WorkerError>,
    /// Every device the framework reports on this machine; empty after an import error.
    #[serde(default)]
    pub devices: Vec<WorkerDevice>,
    /// Installed versions of numpy, scipy, torch, jax, jaxlib, tensorflow, tensorflow-cpu, keras and
    /// ml_dtypes, by distribution name (`importlib.metadata`); packages not installed are absent.
    #[serde(default)]
    pub packages: BTreeMap<String, String>,
    /// Threads for host compute as the framework reports them: `torch.get_num_threads()` for
    /// PyTorch, TensorFlow's intra-op setting, `--threads` or `os.cpu_count()` for the others;
    /// absent after an import error.
    #[serde(default)]
    pub threads: Option<u32>,
    /// The process-wide switches the worker set in its framework, by name, with their values
    /// (`jax_enable_x64: false`, `tf.config.soft_device_placement: false`; docs/protocol.md lists
    /// every one; protocol 6). Absent after an import error.
    #[serde(default)]
    pub settings: BTreeMap<String, serde_json::Value>,
    /// Per export route (`onnx`, `stablehlo`; docs/ir-routes.md), why this framework cannot take
    /// it on this device (no such route, a module not installed, no runtime target), or `None`
    /// when it can (protocol 9); and per route target on a Vulkan device the run uses
    /// (`vulkan:0/onnx`, keyed by the whole target; protocol 13), the same for that target.
    /// Absent after an import error.
    #[serde(default)]
    pub routes: BTreeMap<String, Option<String>>,
    /// Per export route the run uses (the core lists them in `MLPORT_ROUTES`, route targets on
    /// Vulkan devices whole) and this worker can take, its runtime in words with the settings that change an answer (`OpenVINO
    /// 2026.4.1 CPU plugin, inference precision bf16 …`); the core stores it as the route
    /// target's detail. Absent from older workers and after an import error.
    #[serde(default)]
    pub route_details: BTreeMap<String, String>,
}

/// The worker's answer to `run`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct RunReply {
    /// Version of this message, [`PROTOCOL_VERSION`].
    pub v: u32,
    /// The request's `case_key`, echoed; an answer for another key is a protocol error.
    pub case_key: Option<String>,
    /// The request's nonce, echoed.
    #[serde(default)]
    pub nonce: Option<u64>,
    /// `pass` or `fail` (timeouts and crashes are decided by the core), or `io_error` with
    /// [`RunReply::io_error`] set (protocol 8).
    pub outcome: ReplyOutcome,
    /// mlport's own file I/O failed while running the case (protocol 8): the answer says
    /// nothing about the function, and the core records no result for it.
    #[serde(default)]
    pub io_error: Option<OwnIoError>,
    /// What was raised, set when `outcome` is `fail`.
    pub error: Option<WorkerError>,
    /// Time of the first call and its device synchronisation, in ns (`time.perf_counter_ns`);
    /// includes compilation, autotuning and cache warm-up. `None` when the case failed before it ended.
    pub first_call_ns: Option<u64>,
    /// Steady-state samples, one per block: the block's time over its calls, ns per call
    /// (rounded, at least 1), in the order taken (see [`Timing`]); empty when the case failed
    /// before `steady`.
    #[serde(default)]
    pub samples_ns: Vec<u64>,
    /// Calls in each block, parallel to `samples_ns`.
    #[serde(default)]
    pub block_sizes: Vec<u64>,
    /// Compiled mode: compilations during the case so far — after the first call, and again
    /// after the steady state (protocol 4; JAX and TensorFlow count traces, torch Dynamo's
    /// graphs). `None` in eager mode or when the case failed before its first call ended.
    #[serde(default)]
    pub compiles: Option<u64>,
    /// Compiled mode: compilations made by the first call alone (protocol 4).
    #[serde(default)]
    pub compiles_first_call: Option<u64>,
    /// torch's `compiled` and `compiled_fullgraph` modes: graph breaks Dynamo took during the
    /// case (its `counters["graph_break"]`, summed over reasons), after the first call and
    /// again after the steady state (protocol 7). `None` for other frameworks and in eager mode.
    #[serde(default)]
    pub graph_breaks: Option<u64>,
    /// Time the worker's threads spent runnable but waiting for a CPU during the steady state,
    /// summed over threads, ns (Linux's per-thread `schedstat` run delay; protocol 5). `None`
    /// where the kernel does not report it or the case failed before its steady state.
    #[serde(default)]
    pub runqueue_wait_ns: Option<u64>,
    /// Wall time of the steady state over which `runqueue_wait_ns` was taken, ns (protocol 5).
    #[serde(default)]
    pub steady_wall_ns: Option<u64>,
    /// What ended the steady state: `precision` (the blocks' spread, or the bootstrap interval
    /// of their median, under `target_spread`), `budget` or `max_blocks` ([`Timing`]); absent
    /// when there was none (a failure, a reference, `--quick`).
    #[serde(default)]
    pub steady_stop: Option<crate::model::SteadyStop>,
    /// Workload cases only (protocol 10): peak resident set, device memory and the RMSE between
    /// two calls' outputs ([`crate::model::WorkloadMeasures`]).
    #[serde(default)]
    pub measures: Option<crate::model::WorkloadMeasures>,
    /// A float64 reference of a suite's case (protocol 12): what computed it — the suite's own
    /// NumPy reference (`op.ref numpy.sin`) or the operator itself in float64. `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_by: Option<String>,
    /// A JSON array describing each output leaf (at most 16): `{index, kind: "array", dtype, shape,
    /// path}` or `{index, kind: "object", type}`; an array over 64 MiB has `not_saved` instead of
    /// `path`, and bfloat16 arrays are saved as float32. Null when the case failed before `outputs`.
    #[serde(default)]
    pub outputs: serde_json::Value,
}

/// Any message from the worker.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// Sent once at start, after importing the framework or failing to.
    Hello(Hello),
    /// The answer to a `run` request.
    Result(RunReply),
    /// The answer to `ping`.
    Pong {
        /// Version of this message, [`PROTOCOL_VERSION`].
        v: u32,
    },
    /// The answer to `shutdown`; the worker exits after sending it.
    Bye {
        /// Version of this message, [`PROTOCOL_VERSION`].
        v: u32,
    },
    /// The answer to a request line the worker cannot read (not JSON, or an unknown `op`).
    Error {
        /// Version of this message, [`PROTOCOL_VERSION`].
        v: u32,
        /// What was wrong with the request line.
        message: String,
    },
}

/// Parses one protocol line, checking the version.
///
/// Errors (a protocol error for the caller to record): the line is not JSON, its `v` is not
/// [`PROTOCOL_VERSION`], it is not one of the [`Message`] kinds, or a field of a closed set
/// (`outcome`, `phase`, `framework`, `mode`) holds another value. Each message quotes at most
/// the line's first 200 characters.
pub fn parse_line(line: &str) -> Result<Message, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line:.200}"))?;
    let v = value.get("v").and_then(|v| v.as_u64());
    if v != Some(u64::from(PROTOCOL_VERSION)) {
        return Err(format!("protocol version {v:?} (this core speaks {PROTOCOL_VERSION}): {line:.200}"));
    }
    serde_json::from_value(value).map_err(|e| match e.to_string() {
        m if m.starts_with(UNKNOWN_VALUE) => format!("{m}: {line:.200}"),
        m => format!("unexpected message ({m}): {line:.200}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_serialise_as_documented() {
        let spec = crate::model::Spec::from(crate::model::CaseSpec::new("torch.add", "default"));
        let t = Timing::default();
        let r = Request::Run {
            v: 13,
            nonce: 9,
            case_key: "k",
            case: &spec,
            dtype: Some(crate::model::Dtype::Float32),
            seed: 7,
            out_dir: "/o",
            inputs_dir: "/i",
            input_key: "ab12",
            reference: false,
            timing: &t,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"op":"run","v":13,"nonce":9,"case_key":"k","case":{"code":null,"compare":"allclose","function":"torch.add","id":"default","inputs":[],"kwargs":{},"outputs":null},"dtype":"float32","seed":7,"out_dir":"/o","inputs_dir":"/i","input_key":"ab12","reference":false,"timing":{"warmup_ms":10.0,"min_block_ms":1.0,"min_blocks":5,"max_blocks":1000,"target_spread":0.05,"min_time_ms":20.0,"budget_ms":100.0}}"#
        );
        assert_eq!(serde_json::to_string(&Request::Shutdown { v: 13 }).unwrap(), r#"{"op":"shutdown","v":13}"#);
    }

    #[test]
    fn replies_parse_and_versions_are_checked() {
        let m = parse_line(r#"{"v":13,"kind":"result","case_key":"k","outcome":"fail","error":{"type":"NotImplementedError","message":"x","traceback":"","phase":"first_call","harness":false},"first_call_ns":null}"#).unwrap();
        match m {
            Message::Result(r) => {
                assert_eq!(r.outcome, ReplyOutcome::Fail);
                assert_eq!(r.error.unwrap().phase, Some(Phase::FirstCall));
                assert!(r.samples_ns.is_empty() && r.block_sizes.is_empty());
                assert_eq!(r.compiles, None);
            }
            other => panic!("{other:?}"),
        }
        match parse_line(r#"{"v":13,"kind":"result","case_key":"k","outcome":"pass","first_call_ns":9,"samples_ns":[5,6],"block_sizes":[64,64],"compiles":3,"compiles_first_call":1,"graph_breaks":2,"runqueue_wait_ns":7,"steady_wall_ns":100}"#).unwrap() {
            Message::Result(r) => {
                assert_eq!((r.samples_ns, r.block_sizes), (vec![5, 6], vec![64, 64]));
                assert_eq!((r.compiles, r.compiles_first_call, r.graph_breaks), (Some(3), Some(1), Some(2)));
                assert_eq!((r.runqueue_wait_ns, r.steady_wall_ns), (Some(7), Some(100)));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_line(r#"{"v":1,"kind":"pong"}"#).unwrap_err().contains("protocol version"));
        assert!(parse_line("hello").unwrap_err().contains("not JSON"));
        assert!(parse_line(r#"{"v":7,"kind":"pong"}"#).unwrap_err().contains("protocol version"));
        // Protocol 8: mlport's own I/O failure, distinct from any outcome.
        match parse_line(r#"{"v":13,"kind":"result","case_key":"k","nonce":3,"outcome":"io_error","io_error":{"path":"/r/x.out0.npy","operation":"write","errno":28,"message":"[Errno 28] No space left on device"}}"#).unwrap() {
            Message::Result(r) => {
                let e = r.io_error.unwrap();
                assert_eq!((e.path.as_str(), e.operation.as_str(), e.errno), ("/r/x.out0.npy", "write", Some(28)));
                assert_eq!(e.to_string(), "could not write /r/x.out0.npy: [Errno 28] No space left on device");
            }
            other => panic!("{other:?}"),
        }
        let e =
            OwnIoError::from_io(std::path::Path::new("/r/d"), "create folder", &std::io::Error::from_raw_os_error(28));
        assert!(e.to_string().starts_with("could not create folder /r/d: No space left on device"), "{e}");
        assert!(parse_line(r#"{"v":13,"kind":"dance"}"#).unwrap_err().contains("unexpected message"));
    }

    #[test]
    fn unknown_values_of_closed_fields_are_protocol_errors_naming_the_field() {
        let e = parse_line(r#"{"v":13,"kind":"result","case_key":"k","outcome":"passs","first_call_ns":null}"#)
            .unwrap_err();
        assert!(
            e.starts_with(
                "worker protocol: field `outcome`: unknown value `passs` (expected one of pass, fail, io_error): {"
            ),
            "{e}"
        );
        let e = parse_line(r#"{"v":13,"kind":"result","case_key":"k","outcome":"fail","error":{"type":"E","message":"x","phase":"lunch","harness":false},"first_call_ns":null}"#).unwrap_err();
        assert!(
            e.starts_with(
                "worker protocol: field `phase`: unknown value `lunch` (expected one of import, resolve, inputs, setup, \
                 first_call, outputs, repeat, steady): "
            ),
            "{e}"
        );
        let hello = |framework: &str, mode: &str| {
            format!(
                r#"{{"v":13,"kind":"hello","protocol":13,"pid":1,"python":"3.12","python_executable":"/p","framework":"{framework}","device":"cpu","mode":"{mode}","framework_version":"2","import_error":null}}"#
            )
        };
        match parse_line(&hello("keras-jax", "compiled_fullgraph")).unwrap() {
            Message::Hello(h) => assert_eq!((h.framework, h.mode), (Framework::KerasJax, Mode::CompiledFullgraph)),
            other => panic!("{other:?}"),
        }
        let e = parse_line(&hello("pytorch", "eager")).unwrap_err();
        assert!(
            e.starts_with(
                "worker protocol: field `framework`: unknown value `pytorch` (expected one of numpy, torch, jax, \
                 tensorflow, onnxruntime, keras-jax, keras-torch, keras-tensorflow): "
            ),
            "{e}"
        );
        let e = parse_line(&hello("torch", "jit")).unwrap_err();
        assert!(
            e.starts_with(
                "worker protocol: field `mode`: unknown value `jit` (expected one of eager, compiled, \
                 compiled_fullgraph, onnx, onnx_openvino, stablehlo): "
            ),
            "{e}"
        );
        // Wire spellings round-trip; an absent or empty phase is none.
        for o in ReplyOutcome::ALL {
            let s = serde_json::to_string(&o).unwrap();
            assert_eq!(s, format!("\"{o}\""));
            assert_eq!(serde_json::from_str::<ReplyOutcome>(&s).unwrap(), o);
        }
        let e: WorkerError = serde_json::from_str(r#"{"type":"E","message":"x"}"#).unwrap();
        assert_eq!(e.phase, None);
        assert_eq!(serde_json::to_value(&e).unwrap()["phase"], "");
        for p in Phase::ALL {
            let e = WorkerError { phase: Some(p), ..e.clone() };
            let back: WorkerError = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
            assert_eq!(back, e);
        }
    }
}
