//! Runs: a run's environment ([`RunInfo`]), provenance ([`RunOrigin`], [`RunSource`]), state
//! ([`RunState`]) and summary as stored, and a whole imported run ([`RunData`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CaseResult, CaseRow, ComparisonRow, Framework, FunctionRow, Mode, ReferenceRow, Target};

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
    /// The process-wide switches its worker set (`jax_enable_x64: false`), from the hello
    /// (protocol 6; docs/protocol.md lists them); empty for older runs and imports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, serde_json::Value>,
}

/// A device as discovered by one framework's worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The framework whose worker reported (or was asked for) the device.
    pub framework: Framework,
    /// The canonical device name.
    pub device: Target,
    /// False when the device was asked for but this framework cannot see it:
    /// reported as unavailable, never as failures.
    pub available: bool,
    /// The framework's own name for it and anything it says (model, driver).
    pub detail: String,
}

/// The framework versions a device ran with, where they are not the run's ([`crate::analysis::RunHeader`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStack {
    pub framework: Framework,
    pub device: Target,
    /// As its worker said them, e.g. `torch_xla 2.9.0, PJRT_DEVICE=CPU; torch 2.9.0+cu128` (the
    /// interpreter's path left out).
    pub versions: String,
}

/// The devices of `devices` that a framework ran with another stack: the available `xla:N` ones,
/// whose detail the run composed from the torch-xla worker's own hello
/// (`NATIVE torch_xla V, PJRT_DEVICE=…; torch V; python PATH`, `runner::devices`), the native
/// device name (`xla:0`) and the interpreter's path left out.
pub fn device_stacks(devices: &[DeviceInfo]) -> Vec<DeviceStack> {
    devices
        .iter()
        .filter(|d| d.available && d.device.is_xla() && d.detail.contains("; torch "))
        .map(|d| DeviceStack {
            framework: d.framework,
            device: d.device.clone(),
            versions: {
                let v = d.detail.split("; python ").next().unwrap_or_default();
                match v.split_once(' ') {
                    Some((native, rest)) if native.contains(':') => rest.to_string(),
                    _ => v.to_string(),
                }
            },
        })
        .collect()
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
    pub reference_device: Target,
    /// The mlport binary's version (`CARGO_PKG_VERSION`).
    pub mlport_version: String,
    /// JAX ran with `jax_enable_x64` on (`mlport run --jax-x64`); off, JAX's shipped default,
    /// unless asked for. Runs stored before mlport recorded it read as `true`: its workers
    /// always turned it on then.
    #[serde(default = "x64_before_it_was_recorded")]
    pub jax_x64: bool,
    /// The other switches of `mlport run` that change results; `None` for runs stored before
    /// mlport recorded them (schema 10) and for imports.
    #[serde(default)]
    pub switches: Option<RunSwitches>,
}

/// The switches of `mlport run` that change what a run measures without changing its plan
/// (which [`RunOrigin::plan_digest`] fingerprints), beside [`RunInfo::jax_x64`] and
/// [`RunInfo::reference_device`]. The shards of a campaign on one machine must agree on them
/// (`crate::fleet::existing_shard`): one shard timed with another budget, or on other devices,
/// would make the campaign's report mix two measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSwitches {
    /// `--device`, each device with its modes applied; `None`: every device the workers report.
    pub devices: Option<Vec<Target>>,
    /// `--modes`: the modes applied to devices given without one.
    pub modes: Vec<Mode>,
    /// `--threads`: each framework's intra-op threads; `None`: the frameworks' defaults.
    pub threads: Option<u32>,
    /// `--budget-ms`: the timing budget per case, ms.
    pub budget_ms: f64,
    /// `--target-spread`: the IQR/median at which timing stops.
    pub target_spread: f64,
    /// `--timeout`: seconds a case may run before it is a timeout.
    pub timeout_s: f64,
    /// `--quick`: portability only, no steady-state timing (each case called once, plus its
    /// first call); false for runs stored before it existed.
    #[serde(default)]
    pub quick: bool,
    /// `--jobs`: workers at once, each pinned to its own cores; `None` for runs stored before
    /// it existed (one at a time). Changes no result: not compared between shards.
    #[serde(default)]
    pub jobs: Option<u32>,
}

/// What a run stored before `jax_x64` was recorded ran with: JAX's 64-bit mode on.
fn x64_before_it_was_recorded() -> bool {
    true
}

/// Where a run's results came from.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
    strum::VariantArray,
    strum::EnumCount,
)]
#[strum(parse_err_ty = String, parse_err_fn = unknown_run_source)]
pub enum RunSource {
    /// `mlport run`: the catalogue run by mlport's own workers.
    #[default]
    #[serde(rename = "live")]
    #[strum(serialize = "live")]
    Live,
    /// `mlport pytest`: a user's pytest suite run by mlport, then imported.
    #[serde(rename = "pytest")]
    #[strum(serialize = "pytest")]
    Pytest,
    /// `mlport import pytest-json`: a pytest-json-report file (and timings) from elsewhere.
    #[serde(rename = "import:pytest-json")]
    #[strum(serialize = "import:pytest-json")]
    ImportPytestJson,
    /// `mlport import paper`: the published raw data of "The Grand Illusion".
    #[serde(rename = "import:paper")]
    #[strum(serialize = "import:paper")]
    ImportPaper,
}

impl RunInfo {
    /// A description with nothing known yet but the command line and the reference device
    /// (cpu unless said otherwise): every field empty, zero or default. Runs and importers
    /// fill in what they learn.
    pub fn blank(command_line: &str, reference_device: Target) -> RunInfo {
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
            jax_x64: false,
            switches: None,
        }
    }
}

impl RunSource {
    /// Every source, in the order above.
    pub const ALL: [RunSource; <RunSource as strum::EnumCount>::COUNT] =
        *<RunSource as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// The stored spelling: `live`, `pytest`, `import:pytest-json`, `import:paper`.
    pub fn as_str(self) -> &'static str {
        self.into()
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

/// The error of parsing an unknown [`RunSource`], as it read before strum.
fn unknown_run_source(s: &str) -> String {
    format!("unknown run source `{s}`")
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
    /// The campaign the run belongs to (`--campaign`): the runs of many shards and machines
    /// that `report --campaign` reads as one.
    pub campaign: Option<String>,
    /// Which part of the plan the run holds; a campaign run without `--shard` is 0 of 1.
    pub shard: Option<Shard>,
    /// A fingerprint of the whole unsharded plan of a campaign run ([`crate::plan::Plan::digest`]),
    /// so a rerun of a shard can tell it plans the same cases.
    pub plan_digest: Option<String>,
}

impl RunOrigin {
    /// The machine the run's results describe: `--machine` (or an import's machine) when
    /// given, else the host it ran on.
    pub fn machine_or<'a>(&'a self, host: &'a str) -> &'a str {
        self.machine.as_deref().unwrap_or(host)
    }
}

/// One of `count` disjoint parts of a plan, `index` counted from 0 (`--shard 2/4` is the third
/// of four). Which functions a shard holds is decided by [`crate::plan::shard_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// 0-based, below `count`.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl Shard {
    /// The whole plan: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`. Errors (a sentence naming what to fix) for a count of 0 or an
    /// index not below the count.
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("the shard count must be at least 1 (`--shard 0/4` is the first of 4 shards)".into());
        }
        if index >= count {
            return Err(format!(
                "shard index {index} is not below the count {count}: shards are numbered 0 to {} (`--shard {}/{count}` is the last)",
                count - 1,
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    /// `INDEX/COUNT`, as `--shard` takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    /// `INDEX/COUNT` with `0 <= INDEX < COUNT`, e.g. `0/4`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) =
            s.split_once('/').ok_or_else(|| format!("`{s}` is not INDEX/COUNT (e.g. `0/4`, the first of 4 shards)"))?;
        let number = |part: &str, what: &str| {
            part.trim().parse::<u32>().map_err(|_| {
                format!("`{part}` in `{s}` is not a shard {what}: INDEX/COUNT takes whole numbers (e.g. `0/4`)")
            })
        };
        Shard::new(number(i, "index")?, number(n, "count")?)
    }
}

/// A whole run as an importer produces it, written by [`crate::store::Store::import_runs`]
/// in one transaction with the others of the same import.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunData {
    /// The run's globally unique id when it has one already (a bundle's run); `None` gives it a
    /// new one.
    pub uid: Option<String>,
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

/// A whole stored run with everything its reports read: the run (with its uid) and its
/// results, how it ended, its float64 references and its comparisons. What a bundle carries
/// ([`crate::store::Store::run_record`] reads one, [`crate::store::Store::import_records`] writes them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run: its uid (always set), environment, origin, plan, devices and results.
    pub run: RunData,
    /// How it stood when it was exported.
    pub state: RunState,
    /// When it ended (RFC 3339 UTC), if it did.
    pub finished_at: Option<String>,
    /// Its planned float64 references, computed or not.
    pub references: Vec<ReferenceRow>,
    /// The comparisons of its results' outputs with their references.
    pub comparisons: Vec<ComparisonRow>,
}

/// A stored run with its id and state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's id in its store, assigned when it was created.
    pub id: i64,
    /// The run's globally unique id (32 lowercase hex digits), the same in every store it is
    /// exported to ([`crate::store::schema::new_run_uid`]).
    pub uid: String,
    /// The run's environment and settings.
    pub info: RunInfo,
    /// Where the results came from; the default for live runs.
    pub origin: RunOrigin,
    /// Where the run stands.
    pub state: RunState,
    /// When the run was marked `finished`, `interrupted` or `incomplete`: RFC 3339 UTC,
    /// seconds; `None` while `running` (or after a run that was killed).
    pub finished_at: Option<String>,
    /// Number of planned cases (one per case and dtype, not multiplied by devices).
    pub cases_planned: u64,
    /// Number of stored results (one per case and device).
    pub results: u64,
}

/// Where a stored run stands (`runs.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumString, strum::VariantArray, strum::EnumCount)]
#[strum(serialize_all = "lowercase", parse_err_ty = String, parse_err_fn = unknown_run_state)]
pub enum RunState {
    /// `running`: created and not ended: its cases are being run, or the process running it
    /// was killed before it could say how it ended (no `finished_at`).
    Running,
    /// `finished`: every planned case has its results; imported runs are finished when stored.
    Finished,
    /// `interrupted`: stopped by Ctrl-C (or SIGTERM), or because mlport could not write its own
    /// files (a full disk); the case in flight stays pending and `mlport run --resume` continues.
    Interrupted,
    /// `incomplete`: the run went through every framework, but cases remain pending (a device
    /// was unavailable, a worker could not be restarted); `--resume` runs them once it can.
    Incomplete,
}

impl RunState {
    /// Every state, in the order above.
    pub const ALL: [RunState; <RunState as strum::EnumCount>::COUNT] =
        *<RunState as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// The stored spelling: `running`, `finished`, `interrupted`, `incomplete`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The error of parsing an unknown [`RunState`], listing the states.
fn unknown_run_state(s: &str) -> String {
    format!("unknown run state `{s}` (expected running, finished, interrupted or incomplete)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in RunState::ALL {
            assert_eq!(s.as_str().parse::<RunState>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        for s in RunSource::ALL {
            assert_eq!(s.as_str().parse::<RunSource>().unwrap(), s);
        }
        assert!("done".parse::<RunState>().unwrap_err().contains("unknown run state `done`"));
    }

    #[test]
    fn shards_parse_and_print_as_index_over_count() {
        let s: Shard = "2/4".parse().unwrap();
        assert_eq!((s.index, s.count, s.to_string()), (2, 4, "2/4".to_string()));
        assert_eq!("0/1".parse::<Shard>().unwrap(), Shard::WHOLE);
        for (bad, says) in [
            ("5/4", "not below the count 4"),
            ("4/4", "numbered 0 to 3"),
            ("0/0", "at least 1"),
            ("x/2", "`x` in `x/2` is not a shard index"),
            ("1/y", "not a shard count"),
            ("-1/2", "not a shard index"),
            ("3", "not INDEX/COUNT"),
        ] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
