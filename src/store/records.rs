//! The rows mlport stores: a run's environment, its planned functions and cases, and
//! one result per (case, device). These are the types every store backend reads and
//! writes and every report consumes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{Device, Framework, Outcome, Reason};

/// A framework as seen by a run: its version, or why it could not be imported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameworkInfo {
    /// The framework's `__version__`, `None` when import failed.
    pub version: Option<String>,
    /// Exception type and message when the framework failed to import.
    pub import_error: Option<String>,
    /// Versions of the Python packages around it (numpy, jaxlib, ...), by distribution name.
    pub packages: BTreeMap<String, String>,
    /// Threads the framework uses for host compute (torch.get_num_threads()).
    pub threads: Option<u32>,
}

/// A device as discovered by one framework's worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The framework whose worker reported (or was asked for) the device.
    pub framework: Framework,
    /// The canonical device name.
    pub device: Device,
    /// False when the device was asked for but this framework cannot see it:
    /// reported as unavailable, never as failures.
    pub available: bool,
    /// The framework's own name for it and anything it says (model, driver).
    pub detail: String,
}

/// Everything needed to describe and reproduce a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// RFC 3339 UTC.
    pub started_at: String,
    /// Host name, or `unknown` ([`crate::sysinfo::host`]).
    pub host: String,
    /// e.g. "Linux 6.1.0 x86_64".
    pub os: String,
    /// `model name` from /proc/cpuinfo, or the architecture ([`crate::sysinfo::cpu_model`]).
    pub cpu_model: String,
    /// Logical cores available to mlport ([`crate::sysinfo::cpu_cores`]).
    pub cpu_cores: u32,
    /// Accelerators and driver versions, one line each (e.g. from nvidia-smi).
    pub accelerators: Vec<String>,
    /// The workers' interpreter version from their hello (`3.11.7`); empty until one starts.
    pub python_version: String,
    /// The workers' interpreter path (`sys.executable`); empty until one starts.
    pub python_executable: String,
    /// Each planned framework's version or import error, filled in as its worker starts.
    pub frameworks: BTreeMap<Framework, FrameworkInfo>,
    /// Catalogue content version per framework file, e.g. {"torch": "2026.11.30"}.
    pub catalogue_version: BTreeMap<Framework, String>,
    /// mlport's arguments, joined by spaces, as the run was started.
    pub command_line: String,
    /// Seed mixed into every case's input seed.
    pub seed: u64,
    /// The device failures are attributed against (default cpu).
    pub reference_device: Device,
    /// The mlport binary's version (`CARGO_PKG_VERSION`).
    pub mlport_version: String,
}

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
    /// The swept dtype of this row, one of [`crate::model::DTYPES`].
    pub dtype: String,
    /// Input seed actually used (run seed mixed with the case seed).
    pub seed: u64,
    /// The case's catalogue entry as JSON (what the worker receives).
    pub spec: serde_json::Value,
}

/// How one case ended on one device. Crash and timeout are outcomes, not errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The [`CaseRow::key`] this result belongs to.
    pub case_key: String,
    /// The device the case ran on.
    pub device: Device,
    /// How it ended.
    pub outcome: Outcome,
    /// Set for `fail`, `timeout` and `crash`.
    pub reason: Option<Reason>,
    /// Qualified exception type, e.g. `torch.OutOfMemoryError`.
    pub error_type: Option<String>,
    /// Exception message, or the skip's why.
    pub message: Option<String>,
    /// The Python traceback (its last 8000 characters), when the worker sent a non-empty one.
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
    /// Calls per sample, parallel to `samples_ns`; empty means one call each (imports and
    /// stores older than schema version 3).
    #[serde(default)]
    pub block_sizes: Vec<u64>,
    /// Compiled targets: compilations during the case (its first call and steady state; JAX
    /// and TensorFlow count traces, torch Dynamo's graphs). More than one is reason
    /// `recompiles`. `None` for eager targets, imports and stores older than schema version 5.
    #[serde(default)]
    pub compiles: Option<u64>,
    /// Time the worker's threads waited for a CPU (runnable, not running) during the steady
    /// state, ns, summed over threads (Linux schedstat run delay). `None` for imports, kernels
    /// without schedstat, cases that failed before their steady state, and stores older than
    /// schema version 6.
    #[serde(default)]
    pub runqueue_wait_ns: Option<u64>,
    /// Wall time of the steady state over which `runqueue_wait_ns` was taken, ns.
    #[serde(default)]
    pub steady_wall_ns: Option<u64>,
    /// Output descriptions (index, dtype, shape, .npy path) as JSON.
    pub outputs: serde_json::Value,
    /// Wall time of the whole case including harness work, in ms.
    pub wall_ms: f64,
    /// When the case ended: RFC 3339 UTC with milliseconds.
    pub finished_at: String,
}

/// A float64 reference a run plans: the NumPy catalogue's function for a canonical op, run
/// once on the inputs of the aligned cases at one swept dtype, upcast to float64 (complex128).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRow {
    /// `reference/<op>/<case_id>/<dtype>`, unique within the run.
    pub key: String,
    /// The canonical op (`cumsum`).
    pub op: String,
    /// The aligned cases' id.
    pub case_id: String,
    /// The swept dtype whose inputs are upcast.
    pub dtype: String,
    /// The NumPy/SciPy function computing it (`numpy.cumsum`).
    pub function: String,
    /// Input seed, the aligned cases' (run seed mixed in).
    pub seed: u64,
    /// The NumPy case's spec as planned (what the worker receives).
    pub spec: serde_json::Value,
    /// `None` until computed; then `pass`, `fail`, `timeout` or `crash`.
    pub outcome: Option<Outcome>,
    /// Why it could not be computed (an error's type and message).
    pub message: Option<String>,
    /// Output descriptions as the worker sent them (index, dtype, shape, .npy path).
    pub outputs: serde_json::Value,
}

/// One output leaf of one result compared with one reference (schema 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// The compared result's case.
    pub case_key: String,
    /// The compared result's device.
    pub device: Device,
    /// `float64` (the NumPy reference) or `device:<name>` (the same case on the reference device).
    pub against: String,
    /// What the reference is, for people: `numpy.cumsum in float64`, `cpu`.
    pub reference: String,
    /// Index of the output leaf.
    pub output_index: u32,
    /// The comparison rule (`allclose`, `up_to_sign`, ...).
    pub rule: String,
    /// Relative tolerance used.
    pub rtol: f64,
    /// Absolute tolerance used.
    pub atol: f64,
    /// `agree`, `disagree` or `incomparable` (nothing to compare: an output not saved, an object).
    pub verdict: String,
    /// Elements compared.
    pub elements: u64,
    /// Elements beyond tolerance.
    pub mismatched: u64,
    /// Largest absolute error over finite elements.
    pub max_abs: Option<f64>,
    /// Largest relative error (|actual − expected| / |expected|, expected ≠ 0).
    pub max_rel: Option<f64>,
    /// Largest error in ULPs of the output's dtype.
    pub max_ulp: Option<f64>,
    /// Elements NaN on one side only.
    pub nan_mismatch: u64,
    /// Elements ±Inf on one side only or of opposite sign.
    pub inf_mismatch: u64,
    /// The output's shape differs from the reference's.
    pub shape_changed: bool,
    /// The output's dtype differs from the reference's (checked against devices only).
    pub dtype_changed: bool,
    /// One line for people.
    pub summary: String,
    /// The whole comparison as JSON.
    pub detail: serde_json::Value,
}

/// A result joined with its case and function, as reports read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The result's id in the store (what `mlport repro` takes); 0 for rows not read from a store.
    #[serde(default)]
    pub id: i64,
    /// The function the case belongs to.
    pub function: FunctionRow,
    /// The case at one dtype.
    pub case: CaseRow,
    /// Its result on one device.
    pub result: CaseResult,
}

/// Where a run's results came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RunSource {
    /// `mlport run`: the catalogue run by mlport's own workers.
    #[default]
    #[serde(rename = "live")]
    Live,
    /// `mlport pytest`: a user's pytest suite run by mlport, then imported.
    #[serde(rename = "pytest")]
    Pytest,
    /// `mlport import pytest-json`: a pytest-json-report file (and timings) from elsewhere.
    #[serde(rename = "import:pytest-json")]
    ImportPytestJson,
    /// `mlport import paper`: the published raw data of "The Grand Illusion".
    #[serde(rename = "import:paper")]
    ImportPaper,
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

impl RunInfo {
    /// A description with nothing known yet but the command line and the reference device
    /// (cpu unless said otherwise): every field empty, zero or default. Runs and importers
    /// fill in what they learn.
    pub fn blank(command_line: &str, reference_device: Device) -> RunInfo {
        RunInfo {
            started_at: String::new(),
            host: String::new(),
            os: String::new(),
            cpu_model: String::new(),
            cpu_cores: 0,
            accelerators: Vec::new(),
            python_version: String::new(),
            python_executable: String::new(),
            frameworks: BTreeMap::new(),
            catalogue_version: BTreeMap::new(),
            command_line: command_line.to_string(),
            seed: 0,
            reference_device,
            mlport_version: env!("CARGO_PKG_VERSION").to_string(),
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
    pub fn new(case_key: &str, device: Device, outcome: Outcome) -> CaseResult {
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
            runqueue_wait_ns: None,
            steady_wall_ns: None,
            samples_ns: Vec::new(),
            block_sizes: Vec::new(),
            outputs: serde_json::Value::Null,
            wall_ms: 0.0,
            finished_at: String::new(),
        }
    }
}

impl RunSource {
    /// Every source, in the order above.
    pub const ALL: [RunSource; 4] =
        [RunSource::Live, RunSource::Pytest, RunSource::ImportPytestJson, RunSource::ImportPaper];

    /// The stored spelling: `live`, `pytest`, `import:pytest-json`, `import:paper`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunSource::Live => "live",
            RunSource::Pytest => "pytest",
            RunSource::ImportPytestJson => "import:pytest-json",
            RunSource::ImportPaper => "import:paper",
        }
    }

    /// True for `live`.
    pub fn is_live(&self) -> bool {
        *self == RunSource::Live
    }

    /// True for runs whose cases are tests of a pytest suite (imported or run by `mlport pytest`).
    pub fn is_test_suite(self) -> bool {
        !matches!(self, RunSource::Live)
    }
}

impl std::str::FromStr for RunSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        RunSource::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| format!("unknown run source `{s}`"))
    }
}

impl std::fmt::Display for RunSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run's provenance: where its results came from, a user's label, the machine the data
/// was measured on when that is not this host, and notes a reader of its report needs
/// (quirks of the data handled on import). Live runs have the default: source `live`,
/// nothing else.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunOrigin {
    /// Where the results came from.
    pub source: RunSource,
    /// A user's name for the run (`--label`); `import paper` labels runs
    /// `paper/<framework>/<machine>/<device folder>`. Reports and `--slowdown` accept it in
    /// place of a run id.
    pub label: Option<String>,
    /// The machine the results were measured on, e.g. the paper's `t4_vm`.
    pub machine: Option<String>,
    /// Lines printed under the run's report, e.g. "no pytest report: outcomes unknown".
    pub notes: Vec<String>,
}

/// A whole run as an importer produces it, written by [`crate::store::Store::import_runs`]
/// in one transaction with the others of the same import.
#[derive(Clone, Debug, PartialEq)]
pub struct RunData {
    /// The run's environment, as far as it is known.
    pub info: RunInfo,
    /// Where it came from.
    pub origin: RunOrigin,
    /// The functions (test files) of the run.
    pub functions: Vec<FunctionRow>,
    /// In the order they are to be reported.
    pub cases: Vec<CaseRow>,
    /// The devices results were recorded on.
    pub devices: Vec<DeviceInfo>,
    /// At most one per (case, device).
    pub results: Vec<CaseResult>,
}

/// A stored run with its id and state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's id in its store, assigned when it was created.
    pub id: i64,
    /// The run's environment and settings.
    pub info: RunInfo,
    /// Where the results came from; the default for live runs.
    pub origin: RunOrigin,
    /// `running`, `finished` or `interrupted`.
    pub state: String,
    /// When the run was marked `finished` or `interrupted`: RFC 3339 UTC, seconds; `None` while
    /// `running` (or after a run that was killed).
    pub finished_at: Option<String>,
    /// Number of planned cases (one per case and dtype, not multiplied by devices).
    pub cases_planned: u64,
    /// Number of stored results (one per case and device).
    pub results: u64,
}
