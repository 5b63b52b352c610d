//! Planned functions and cases, and one case's result on one target ([`CaseResult`]).

use serde::{Deserialize, Serialize};

use super::{Dtype, Framework, Outcome, Reason, Spec, Target};

/// A catalogue function as planned in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    /// The framework the function belongs to.
    pub framework: Framework,
    /// Fully qualified name, e.g. `torch.linalg.svd`.
    pub name: String,
    /// The paper's test-file stem, if the paper tested it.
    pub paper: Option<String>,
    /// The paper's usage decile (10..=100).
    pub decile: Option<u8>,
    /// One of the paper's 20 most used functions of its framework.
    pub top20: bool,
    /// Canonical op name (`svd`).
    pub op: Option<String>,
    /// Where the paper's function lives now, if it moved (`torch.svd -> torch.linalg.svd`).
    pub moved: Option<String>,
    /// Free text from the catalogue for readers of the report.
    pub note: Option<String>,
}

/// One concrete call: a catalogue case at one dtype.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseRow {
    /// Unique within a run: `framework/function/case_id/dtype`.
    pub key: String,
    /// The framework the function belongs to.
    pub framework: Framework,
    /// The function's fully qualified name ([`FunctionRow::name`]).
    pub function: String,
    /// The catalogue case id, unique within the function (`default` unless set).
    pub case_id: String,
    /// The swept dtype of this row; `None` for imported results (tests and the paper's data
    /// have no swept dtype), stored as `""`.
    #[serde(with = "super::dtype_or_empty")]
    pub dtype: Option<Dtype>,
    /// Input seed actually used (run seed mixed with the case seed).
    pub seed: u64,
    /// The case's catalogue entry (what the worker receives), or an import's origin.
    pub spec: Spec,
}

impl CaseRow {
    /// Whether the case runs on targets in `mode`: its catalogue `modes` list it, or it has
    /// none (every mode). Imported rows run in every mode.
    pub fn runs_in(&self, mode: super::Mode) -> bool {
        self.spec.catalogue().and_then(|c| c.modes.as_ref()).is_none_or(|m| m.contains(&mode))
    }
}

/// What ended a case's steady state (protocol 8, `steady_stop`): the timing knew enough, or
/// ran out of time or blocks ([`crate::worker::protocol::Timing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case", parse_err_ty = String, parse_err_fn = unknown_steady_stop)]
pub enum SteadyStop {
    /// The blocks' IQR/median, or the 95% bootstrap interval of their median over the median,
    /// fell under `target_spread` (with `min_blocks` taken and `min_time_ms` spent).
    Precision,
    /// `budget_ms` was spent first.
    Budget,
    /// `max_blocks` were taken first.
    MaxBlocks,
}

impl SteadyStop {
    /// `precision`, `budget`, `max_blocks`: the stored spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`SteadyStop`].
fn unknown_steady_stop(s: &str) -> String {
    format!("unknown steady-state stop `{s}`")
}

/// How one case ended on one device. Crash and timeout are outcomes, not errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The [`CaseRow::key`] this result belongs to.
    pub case_key: String,
    /// The device the case ran on.
    pub device: Target,
    /// How it ended.
    pub outcome: Outcome,
    /// Set for `fail`, `timeout` and `crash`.
    pub reason: Option<Reason>,
    /// Qualified exception type, e.g. `torch.OutOfMemoryError`.
    pub error_type: Option<String>,
    /// Exception message, or the skip's why.
    pub message: Option<String>,
    /// The Python traceback (whole up to 32,768 characters, else head and tail), when the worker sent a non-empty one.
    pub traceback: Option<String>,
    /// Where in the case it failed: resolve, inputs, setup, first_call, outputs, steady, import.
    pub phase: Option<String>,
    /// The signal that killed the worker (crash, timeout kill).
    pub signal: Option<i32>,
    /// The worker's last stderr lines (crash, timeout).
    pub stderr_tail: Option<String>,
    /// First call, including compilation and caches, in ns.
    pub first_call_ns: Option<u64>,
    /// Steady-state samples, ns per call, in the order taken (one per timed block for live
    /// runs; one per timed call for imports).
    pub samples_ns: Vec<u64>,
    /// Imports of repeated sessions (the paper's timing files): the first timed call of each
    /// session that timed any, ns, in session order (`first_call_ns` is the first of them;
    /// the others are in no sample). With `samples_ns` they are every timed call, which the
    /// authors' method of "The Grand Illusion" averages. Empty for live runs and stores older
    /// than schema version 12.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_first_calls_ns: Vec<u64>,
    /// Calls per sample, parallel to `samples_ns`; empty means one call each (imports and
    /// stores older than schema version 3).
    #[serde(default)]
    pub block_sizes: Vec<u64>,
    /// Compiled targets: compilations during the case (its first call and steady state; JAX
    /// and TensorFlow count traces, torch Dynamo's graphs). More than one is reason
    /// `recompiles`. `None` for eager targets, imports and stores older than schema version 5.
    #[serde(default)]
    pub compiles: Option<u64>,
    /// torch's compiled targets: graph breaks Dynamo took during the case (under `compiled`,
    /// where a break returns to Python for part of the call; `compiled_fullgraph` makes one an
    /// error). `None` for other frameworks, eager targets, imports and stores older than
    /// schema version 9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_breaks: Option<u64>,
    /// What ended the steady state; `None` without one (failures, `--quick`, imports, results
    /// stored before schema 11).
    #[serde(default)]
    pub steady_stop: Option<SteadyStop>,
    /// Time the worker's threads waited for a CPU (runnable, not running) during the steady
    /// state, ns, summed over threads (Linux schedstat run delay). `None` for imports, kernels
    /// without schedstat, cases that failed before their steady state, and stores older than
    /// schema version 6.
    #[serde(default)]
    pub runqueue_wait_ns: Option<u64>,
    /// Wall time of the steady state over which `runqueue_wait_ns` was taken, ns.
    #[serde(default)]
    pub steady_wall_ns: Option<u64>,
    /// Workloads only (catalogue `kind = "workload"`): the worker's peak resident set, device
    /// memory and the repeat check ([`WorkloadMeasures`]). `None` for other cases, imports and
    /// stores older than schema version 13.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measures: Option<WorkloadMeasures>,
    /// Output descriptions (index, dtype, shape, .npy path) as JSON.
    pub outputs: serde_json::Value,
    /// Wall time of the whole case including harness work, in ms.
    pub wall_ms: f64,
    /// When the case ended: RFC 3339 UTC with milliseconds.
    pub finished_at: String,
}

/// What a workload's worker measured beside its timing (protocol 10, schema 13), stored as
/// JSON in `results.measures`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadMeasures {
    /// The worker's peak resident set size during the case (build, first call and steady
    /// state), bytes: Linux's `VmHWM` from `/proc/self/status`, reset before the case by
    /// writing `5` to `/proc/self/clear_refs` (proc(5)). Includes the framework already
    /// loaded. `None` where the kernel offers neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// Peak device memory the framework allocated during the case, bytes
    /// (`torch.cuda.max_memory_allocated` after `reset_peak_memory_stats`); `None` on the cpu
    /// and for frameworks that do not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_peak_bytes: Option<u64>,
    /// RMSE between the first call's outputs and a second call's on the same inputs (every
    /// compared output flattened to float64 in order), over the elements finite in both calls:
    /// 0 for a deterministic model. The whole-model rule flags a model whose calls differ
    /// (`crate::agreement::whole_model`). `None` when the calls' outputs differ in shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_rmse: Option<f64>,
    /// Elements where the two calls differ and one of them is NaN or infinite (all of them when
    /// the outputs' shapes differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_nan_mismatch: Option<u64>,
}

impl FunctionRow {
    /// A function known only by its framework and name (no paper stem, decile, op or note).
    pub fn new(framework: Framework, name: &str) -> FunctionRow {
        FunctionRow {
            framework,
            name: name.to_string(),
            paper: None,
            decile: None,
            top20: false,
            op: None,
            moved: None,
            note: None,
        }
    }
}

impl CaseResult {
    /// The share of the steady state's wall time that the worker's threads spent waiting for
    /// a CPU (summed over threads, so above 1 when several threads waited at once): near 0 on a
    /// machine with CPUs to spare; large when other processes held the CPUs while this case was
    /// timed. `None` when not measured.
    pub fn runqueue_wait_share(&self) -> Option<f64> {
        match (self.runqueue_wait_ns, self.steady_wall_ns) {
            (Some(w), Some(t)) if t > 0 => Some(w as f64 / t as f64),
            _ => None,
        }
    }

    /// A result with only its case, device and outcome set; everything else empty.
    pub fn new(case_key: &str, device: Target, outcome: Outcome) -> CaseResult {
        CaseResult {
            case_key: case_key.to_string(),
            device,
            outcome,
            reason: None,
            error_type: None,
            message: None,
            traceback: None,
            phase: None,
            signal: None,
            stderr_tail: None,
            first_call_ns: None,
            compiles: None,
            graph_breaks: None,
            steady_stop: None,
            runqueue_wait_ns: None,
            steady_wall_ns: None,
            measures: None,
            samples_ns: Vec::new(),
            session_first_calls_ns: Vec::new(),
            block_sizes: Vec::new(),
            outputs: serde_json::Value::Null,
            wall_ms: 0.0,
            finished_at: String::new(),
        }
    }
}
