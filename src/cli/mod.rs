//! Command-line parsing (clap) only: the argument structs, whose fields are already typed
//! and validated by the value parsers in [`values`] (frameworks, targets, modes, positive
//! numbers, `--slowdown` sides), so the commands never parse a string clap has seen. A bad
//! value is a usage error (exit code 2, [`crate::commands::ExitStatus::Usage`]).

pub mod report;
pub mod values;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::{Dtype, Framework, Mode, Shard, Target};
use crate::store::Location;
pub use report::ReportKind;
pub use values::{SlowdownSide, SlowdownSpec, TargetArg, ThresholdFor};

/// mlport: which ML framework functions run on which devices and dtypes, whether they
/// give the same answer, and how fast — after "The Grand Illusion" (arXiv 2309.07181).
#[derive(Debug, Parser)]
#[command(name = "mlport", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// More logging on stderr (-v info, -vv debug, -vvv worker stderr).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// The subcommands; each has its own argument struct.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the catalogue on every (framework, device, dtype) and store the results.
    Run(RunArgs),
    /// Print a report of stored results: `mlport report <KIND>` (portability, slowdown, modes,
    /// routes, workloads, dtypes, frameworks, paper, paper-compare, campaign, suite, overview;
    /// default portability). The older flags (`--slowdown`, `--modes`, `--run all`, ...) are
    /// aliases of the kinds (docs/reports.md).
    Report(ReportArgs),
    /// Show the catalogue, the frameworks and the devices they can see.
    List(ListArgs),
    /// List the runs in a store.
    Runs(RunsArgs),
    /// Create (or check) the managed Python environment and print its versions.
    Env(EnvArgs),
    /// Import results measured elsewhere: a pytest-json-report, or the paper's raw data.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Run your own pytest suite on a device in the managed environment, then import it.
    ///
    /// The device reaches the tests as the environment variable MLPORT_DEVICE (cpu, cuda:0,
    /// tpu:0, ...); a suite that times its calls writes them to MLPORT_TIMINGS. See
    /// docs/pytest.md for a conftest.py that does both.
    Pytest(PytestArgs),
    /// List the framework functions a code base calls (Python files and notebooks).
    Scan(ScanArgs),
    /// Join a code base's framework calls with measured results on a device.
    Audit(AuditArgs),
    /// Usage frequencies of framework functions over a corpus of code.
    Mine(MineArgs),
    /// Draw a catalogue sample the paper's way from mined frequencies, reproducibly.
    Sample(SampleArgs),
    /// Write a self-contained Python script (inputs saved beside it) that reproduces one
    /// stored failure or wrong result, for filing upstream.
    Repro(ReproArgs),
    /// What changed from run A to run B: per function × target the status changes, agreement
    /// changes and slowdowns beyond --threshold, with both sides' versions.
    Diff(DiffArgs),
    /// Write runs (with their results, samples, references and comparisons) to a versioned,
    /// self-contained bundle that `mlport import bundle` loads into any store.
    Export(ExportArgs),
}

/// Arguments of `mlport export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The store holding the runs.
    #[command(flatten)]
    pub db: DbArg,
    /// Runs to export: ids, labels or campaign names (a campaign exports all its runs).
    #[arg(value_name = "RUN|CAMPAIGN", required = true)]
    pub runs: Vec<String>,
    /// The bundle to write (a gzip-compressed tar; replaced once complete).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Also carry each run's files: its .npy outputs, inputs and float64 references.
    #[arg(long)]
    pub with_outputs: bool,
    /// Where the runs' files are (with --with-outputs).
    #[command(flatten)]
    pub outputs: OutputsArg,
}

/// Arguments of `mlport diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The store holding both runs.
    #[command(flatten)]
    pub db: DbArg,
    /// The baseline: a run id or label (`latest` for the newest run).
    #[arg(value_name = "A")]
    pub a: String,
    /// What is compared with it: a run id or label.
    #[arg(value_name = "B")]
    pub b: String,
    /// A function is slower on B when the bootstrap interval of its median steady-state ratio
    /// B/A lies wholly above this (faster when wholly below its inverse).
    #[arg(long, default_value = "1.5", value_parser = values::above_one, value_name = "RATIO")]
    pub threshold: f64,
    /// An output agreeing with the float64 reference on both sides is listed when its largest
    /// error (ULPs) grew or shrank by this factor.
    #[arg(long, default_value = "2", value_parser = values::above_one, value_name = "FACTOR")]
    pub error_factor: f64,
    /// Exit with code 3 when a change of these kinds is present, e.g.
    /// `new_failure,new_wrong_result,slowdown,now_unchecked` (any kind the diff lists).
    #[arg(long, value_delimiter = ',', value_name = "CHANGE")]
    pub fail_on: Vec<crate::analysis::diff::ChangeKind>,
    /// Count every failure, not only device-attributable ones.
    #[arg(long)]
    pub all_failures: bool,
    /// The strict view: a case that disagrees with float64 or changes dtype on the reference
    /// target itself (the dtype's precision, JAX's x64 default) counts toward the functions' statuses too. By
    /// default it is listed in its own column and not counted (the paper's rule).
    #[arg(long)]
    pub strict: bool,
    /// The bootstrap's seed (default: run A's stored seed).
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// Output format: table, markdown, json (`mlport.diff`, version 3) or csv.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// Arguments of `mlport scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files or folders to scan (.py and .ipynb; .gitignore is respected).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Output format: table, json (`mlport.scan`, version 1) or csv.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ScanFormatArg,
    /// Worker threads (default: all cores; at most 8 per core).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = values::scan_threads)]
    pub threads: usize,
    /// Parse every file, also those whose text cannot refer to a framework (same result, slower).
    #[arg(long)]
    pub full_parse: bool,
}

/// Arguments of `mlport audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The store with the measured results.
    #[command(flatten)]
    pub db: DbArg,
    /// Files or folders to audit.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// The target device (cpu, cuda:0, tpu:0, ...; a Vulkan device with its route, vulkan:0/onnx).
    #[arg(long, value_name = "DEVICE", value_parser = values::result_target)]
    pub device: Target,
    /// Runs to take results from: ids or labels, comma-separated (default: every run in the store).
    #[arg(long = "run", value_delimiter = ',', value_name = "RUN")]
    pub runs: Vec<String>,
    /// A campaign's runs instead (its shards read together), on one machine: the campaign's
    /// only machine, or the one --machine names.
    #[arg(long, value_name = "NAME", conflicts_with = "runs")]
    pub campaign: Option<String>,
    /// With --campaign: the machine whose runs to read (needed when the campaign has more than one).
    #[arg(long, value_name = "NAME", requires = "campaign")]
    pub machine: Option<String>,
    /// The reference device the target is compared with.
    #[arg(long, default_value = "cpu", value_name = "DEVICE", value_parser = values::reference)]
    pub reference: Target,
    /// A function this many times slower on the target than on the reference is flagged.
    #[arg(long, default_value = "10", value_parser = values::positive, value_name = "RATIO")]
    pub threshold: f64,
    /// Exit with code 3 when any called function has one of these findings:
    /// complete_failure, partial, wrong_result, slowdown, unknown.
    #[arg(long, value_delimiter = ',', value_name = "FINDING")]
    pub fail_on: Vec<crate::audit::Finding>,
    /// Write catalogue entries (TOML, to fill in) for the called functions no run has measured.
    #[arg(long, value_name = "FILE")]
    pub add_to_catalogue: Option<PathBuf>,
    /// Output format: table, markdown, json or csv.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Worker threads for the scan (default: all cores; at most 8 per core).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = values::scan_threads)]
    pub threads: usize,
}

/// Arguments of `mlport mine`.
#[derive(Debug, Args)]
pub struct MineArgs {
    /// The corpus: files or folders of Python code and notebooks.
    #[arg(value_name = "CORPUS", required = true)]
    pub paths: Vec<PathBuf>,
    /// The framework whose functions are counted.
    #[arg(long, value_name = "NAME")]
    pub framework: Framework,
    /// Output format: table, json or csv (csv is what `mlport sample` reads).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Worker threads (default: all cores; at most 8 per core).
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = values::scan_threads)]
    pub threads: usize,
}

/// Arguments of `mlport sample`.
#[derive(Debug, Args)]
pub struct SampleArgs {
    /// Frequencies as written by `mlport mine --format csv` (`function,calls` columns).
    #[arg(value_name = "FREQUENCIES.csv")]
    pub frequencies: PathBuf,
    /// The k most used functions, always in the sample.
    #[arg(long, default_value_t = 20, value_name = "K")]
    pub top: usize,
    /// Functions drawn from each usage decile.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub per_decile: usize,
    /// The seed of the draw (stored in the output; the same seed gives the same sample).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output format: table, json or csv.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// The kinds of `mlport import`.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// One pytest-json-report file (one run of a suite on one device), with optional timing
    /// files in the paper's format (one per repeated session).
    PytestJson(ImportPytestJsonArgs),
    /// The published raw data of "The Grand Illusion" (a folder like ../shared/paper-data):
    /// one run per framework × machine × device, repeated sessions merged.
    Paper(ImportPaperArgs),
    /// Bundles written by `mlport export` (any machine's): each in one transaction; a run
    /// already in the store (same uid) is skipped, so importing twice changes nothing.
    Bundle(ImportBundleArgs),
}

/// Arguments of `mlport import bundle`.
#[derive(Debug, Args)]
pub struct ImportBundleArgs {
    /// The store to write (created when missing).
    #[command(flatten)]
    pub db: DbArg,
    /// The bundles.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Where files carried by bundles go.
    #[command(flatten)]
    pub outputs: OutputsArg,
}

/// Arguments of `mlport import pytest-json`.
#[derive(Debug, Args)]
pub struct ImportPytestJsonArgs {
    /// The store to write (created when missing).
    #[command(flatten)]
    pub db: DbArg,
    /// The pytest-json-report file.
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,
    /// The framework the suite tests: numpy, torch, jax or tensorflow (aliases np, pytorch, tf).
    #[arg(long, value_name = "NAME")]
    pub framework: Framework,
    /// The device the suite ran on: cpu, cuda:N, tpu:N, xla:N, mps or xpu:N.
    #[arg(long, value_name = "DEVICE")]
    pub device: Target,
    /// Timing files of the session(s), `{"file.py:test": {"operations": [s...], "test_time": s}}`.
    #[arg(long, num_args = 1.., value_name = "TIMINGS.json")]
    pub timings: Vec<PathBuf>,
    /// A name for the run, usable wherever a run id is (`--run`, `--slowdown`).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The machine the suite ran on (shown in reports).
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// How tests are grouped into functions: file, test, metadata:KEY or regex:PATTERN
    /// (default: a `function`/`op`/`func` metadata key when the test has one, else the test
    /// name without its parametrization).
    #[arg(long, value_name = "HOW", default_value = "auto")]
    pub group_by: crate::import::group::GroupBy,
    /// Format of the report printed after the import.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// Arguments of `mlport import paper`.
#[derive(Debug, Args)]
pub struct ImportPaperArgs {
    /// The store to write (created when missing).
    #[command(flatten)]
    pub db: DbArg,
    /// The data set's folder (holding pytorch_timings/, tensorflow_timings/, jax_timings/).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Format of the overview printed after the import.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// What `mlport pytest --fail-on` fails on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum SuiteFailOn {
    /// Any counted failing test (harness errors, flaky tests and skips never count).
    Failure,
    /// A test that passed in the previous run of the same framework and device and fails now.
    NewFailure,
}

/// Arguments of `mlport pytest`.
#[derive(Debug, Args)]
pub struct PytestArgs {
    /// The store to write (created when missing).
    #[command(flatten)]
    pub db: DbArg,
    /// Which interpreter runs pytest (default: the managed environment).
    #[command(flatten)]
    pub python: PythonArg,
    /// The test files or folders, as you would give them to pytest.
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    pub path: Vec<PathBuf>,
    /// The framework the suite tests: numpy, torch, jax or tensorflow (aliases np, pytorch, tf).
    #[arg(long, value_name = "NAME")]
    pub framework: Framework,
    /// The device to run on, passed to the tests as MLPORT_DEVICE.
    #[arg(long, value_name = "DEVICE")]
    pub device: Target,
    /// A name for the run, usable wherever a run id is.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// How tests are grouped into functions: file, test, metadata:KEY or regex:PATTERN
    /// (default: a `function`/`op`/`func` metadata key when the test has one, else the test
    /// name without its parametrization).
    #[arg(long, value_name = "HOW", default_value = "auto")]
    pub group_by: crate::import::group::GroupBy,
    /// Stop the whole suite after this many seconds: its process group is killed, the test then
    /// running is recorded as `timeout` and the finished tests are kept.
    #[arg(long, value_name = "SECS", value_parser = values::positive)]
    pub timeout: Option<f64>,
    /// Continue an earlier `mlport pytest` run (an id or label; default the latest run) of the
    /// same suite, framework and device: the tests it has results for are deselected, the rest
    /// run and are added to it.
    #[arg(long, value_name = "RUN", num_args = 0..=1, default_missing_value = "latest")]
    pub resume: Option<String>,
    /// Exit with code 3 when the run has any of these: `failure` (a counted failing test),
    /// `new_failure` (a test that passed in the previous `mlport pytest` run of the same
    /// framework and device and fails now). For CI.
    #[arg(long, value_delimiter = ',', value_name = "WHAT")]
    pub fail_on: Vec<SuiteFailOn>,
    /// Format of the report printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Arguments for pytest itself, after `--` (e.g. `-- -k matmul -x`).
    #[arg(last = true, value_name = "PYTEST ARGS")]
    pub pytest_args: Vec<String>,
}

/// `mlport runs`.
#[derive(Debug, Args, Clone)]
pub struct RunsArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Check the store's pages and indexes first (SQLite's `PRAGMA quick_check`, one read of the
    /// whole file); a damaged store fails with SQLite's findings. PostgreSQL stores are not checked.
    #[arg(long)]
    pub check: bool,
}

/// `--db PATH|URL` (or `MLPORT_DB`), shared by the commands that read or write a store.
#[derive(Debug, Args, Clone)]
pub struct DbArg {
    /// The store: an SQLite file, or a PostgreSQL database (postgresql://USER[:PASSWORD]@HOST:PORT/DB)
    /// that many machines write to at once.
    #[arg(
        long,
        env = "MLPORT_DB",
        hide_env_values = true,
        default_value = "mlport.db",
        value_name = "PATH|URL",
        value_parser = values::StoreParser
    )]
    pub db: Location,
}

/// `--outputs DIR`, shared by the commands that write or read a run's arrays.
#[derive(Debug, Args, Clone)]
pub struct OutputsArg {
    /// Keep (or find) each run's output arrays in DIR/<store>-run-<id>/ instead of .mlport/ beside
    /// the SQLite store (for PostgreSQL: in the current folder); a folder shared by the machines of
    /// a fleet lets any of them reproduce a result.
    #[arg(long, value_name = "DIR")]
    pub outputs: Option<PathBuf>,
}

/// `--python PATH`, shared by the commands that start workers.
#[derive(Debug, Args, Clone)]
pub struct PythonArg {
    /// Use this Python interpreter (your own CUDA/ROCm/TPU stack) instead of the managed environment.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// The accelerator the managed environment is installed for: cpu or cuda (default: cuda
    /// where `nvidia-smi -L` lists a GPU, else cpu; docs/stacks.md).
    #[arg(long, value_name = "KIND")]
    pub accelerator: Option<crate::pyenv::Accelerator>,
}

/// `mlport env`.
#[derive(Args, Debug)]
pub struct EnvArgs {
    #[command(flatten)]
    pub python: PythonArg,
    /// Set up (and probe) this stack's managed environment instead of the main one: main,
    /// cuda, or torch-xla (PyTorch/XLA with the torch it pins, used for xla:N; docs/stacks.md).
    #[arg(long, value_name = "STACK")]
    pub stack: Option<crate::pyenv::Stack>,
}

/// Output formats for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// A terminal table.
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Versioned JSON (the document names its format and version).
    Json,
    /// CSV (RFC 4180), for spreadsheets and DuckDB.
    Csv,
    /// One self-contained HTML page (`mlport report` only, with `-o FILE`).
    Html,
}

/// Output formats of `mlport scan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScanFormatArg {
    /// A terminal table.
    Table,
    /// Versioned JSON (`mlport.scan`, version 1).
    Json,
    /// CSV (RFC 4180): kind, framework, function, calls, files, sites.
    Csv,
}

/// What `--slowdown` compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MeasureArg {
    /// Steady-state samples: timed calls after each case's first.
    Steady,
    /// Whole durations of passing cases (tests).
    Test,
    /// Each case's first timed call (compilation included).
    FirstCall,
}

/// The method of `report --slowdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RuleArg {
    /// mlport's: --measure samples, median ratios, bootstrap intervals, unstable flags.
    Mlport,
    /// The paper's authors': every timed call of passing tests, ratio of means.
    Paper,
}

/// Arguments of `mlport run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Where results go.
    #[command(flatten)]
    pub db: DbArg,
    /// Where output arrays go.
    #[command(flatten)]
    pub outputs: OutputsArg,
    /// Which interpreter runs the workers.
    #[command(flatten)]
    pub python: PythonArg,
    /// A catalogue file or folder of *.toml instead of the built-in one.
    #[arg(long, value_name = "PATH", conflicts_with = "suites")]
    pub catalogue: Option<PathBuf>,
    /// Run a framework's own test data instead of the catalogue (docs/suites.md): opinfo
    /// (PyTorch's OpInfos), modules (PyTorch's ModuleInfos), jax-harnesses (JAX's test
    /// harnesses), listed from the installed framework; each sample is a case, judged against
    /// the same sample in float64.
    #[arg(long = "suite", value_delimiter = ',', value_name = "SUITE")]
    pub suites: Vec<crate::model::Suite>,
    /// With --suite: the first N samples of each operator × dtype, or `all`.
    #[arg(long, value_name = "N|all", default_value = "3", requires = "suites")]
    pub samples: crate::testdata::Samples,
    /// With --suite: only these entries, by the suite's name (`sin`, `nn.functional.pad`),
    /// `name.variant` (`nn.functional.pad.reflect`) or public function (`torch.sin`).
    #[arg(long = "op", value_delimiter = ',', value_name = "NAME", requires = "suites")]
    pub ops: Vec<String>,
    /// Frameworks to run: numpy, torch, jax, tensorflow, onnxruntime, keras-jax, keras-torch,
    /// keras-tensorflow (aliases np, pytorch, tf, ort, keras/jax, keras/torch, keras/tensorflow,
    /// keras-tf; default: all in the catalogue but the add-ons, onnxruntime and the Keras ops,
    /// which run only when named here or by --function; Keras's workloads run in every run).
    #[arg(short, long = "framework", value_delimiter = ',', value_name = "NAME")]
    pub frameworks: Vec<Framework>,
    /// Devices to run on: cpu, cuda:N, tpu:N, xla:N (PyTorch/XLA), mps, xpu:N (default: every device found), and
    /// vulkan:N (run only when named: IREE's Vulkan driver, on lavapipe where there is no GPU; it takes its own
    /// routes, vulkan:N/stablehlo for JAX and vulkan:N/onnx through IREE's ONNX importer, whatever --modes says;
    /// docs/vulkan.md); a device with a mode (`cpu/compiled`) is a target on its own, outside --modes.
    #[arg(short, long = "device", value_delimiter = ',', value_name = "DEVICE")]
    pub devices: Vec<TargetArg>,
    /// Execution modes, each device a target in each: eager (each framework's own dispatch),
    /// compiled (torch.compile with graph breaks allowed, jax.jit, tf.function(jit_compile=True))
    /// compiled_fullgraph (torch.compile(fullgraph=True); torch only), and the export routes onnx
    /// (torch, jax, tensorflow → ONNX → ONNX Runtime), onnx_openvino (the same model on OpenVINO)
    /// and stablehlo (jax → StableHLO → IREE) (docs/ir-routes.md); e.g. `--modes eager,compiled`
    /// runs `cpu` and `cpu/compiled`. NumPy runs eager only; a case's catalogue `modes` can leave
    /// some out.
    #[arg(long = "modes", value_delimiter = ',', value_name = "MODE", default_value = "eager")]
    pub modes: Vec<Mode>,
    /// Only these functions (fully qualified, e.g. torch.linalg.svd).
    #[arg(long = "function", value_delimiter = ',', value_name = "NAME")]
    pub functions: Vec<String>,
    /// Only these dtypes of each case's sweep.
    #[arg(long = "dtype", value_delimiter = ',', value_name = "DTYPE")]
    pub dtypes: Vec<Dtype>,
    /// Only API functions, or only workloads (whole models, train steps, off-the-rut pairs;
    /// docs/workloads.md); default both.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<crate::plan::Kind>,
    /// Seed added to every case's input seed (stored with the run).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Per-case timeout in seconds (a case's own timeout_s wins).
    #[arg(long, default_value = "60", value_parser = values::timeout, value_name = "SECS")]
    pub timeout: f64,
    /// The reference device for device-attributable failures (not vulkan:N: its routes are judged against it).
    #[arg(long, default_value = "cpu", value_name = "DEVICE", value_parser = values::reference)]
    pub reference: Target,
    /// Steady-state time budget per case, ms.
    #[arg(long, default_value = "100", value_parser = values::positive, value_name = "MS")]
    pub budget_ms: f64,
    /// Stop a case's timing once IQR/median of its blocks is under this (0.05 = 5%).
    #[arg(long, default_value = "0.05", value_parser = values::positive, value_name = "FRACTION")]
    pub target_spread: f64,
    /// Host compute threads for every framework (torch.set_num_threads, TensorFlow intra-op,
    /// OMP/MKL/OpenBLAS, XLA); default: each framework's own (usually all cores). Recorded
    /// with the run, per framework.
    #[arg(long, value_name = "N", value_parser = values::threads)]
    pub threads: Option<u32>,
    /// Workers at once, each pinned (sched_setaffinity) to its own cores with its frameworks'
    /// host threads set to their number; the plan runs longest case first. Default: as many as
    /// fit, the cores this process may use ÷ --threads (1 when unset). `--jobs 1` without
    /// --threads is the serial run, unpinned, at each framework's default threads.
    #[arg(long, env = "MLPORT_JOBS", value_name = "N")]
    pub jobs: Option<usize>,
    /// Portability only: every case called once plus its first call, compared, classified and
    /// stored, with no steady-state timing (for CI gates and first looks); reports say
    /// timings are absent.
    #[arg(long)]
    pub quick: bool,
    /// Run JAX with `jax_enable_x64` on (64-bit int64/float64/complex128 arrays). Off by
    /// default, as JAX ships: an int64 or float64 case then runs at int32/float32, as a JAX
    /// user's code would. Recorded with the run; `--resume` and `repro` use the run's setting.
    #[arg(long)]
    pub jax_x64: bool,
    /// A name for the run, usable wherever a run id is (`--run`, `--slowdown`, `mlport diff`,
    /// `mlport export`).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Continue an interrupted run (the latest, or the one given) instead of starting one.
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "latest", value_parser = values::resume_run)]
    pub resume: Option<String>,
    /// Run one of N disjoint parts of the plan, `INDEX/COUNT` from 0 (`--shard 0/4` is the first
    /// of four), split by a stable hash of the function name (docs/fleet.md). Inside a Slurm job
    /// array or a Kubernetes Indexed Job the shard comes from the environment. Needs --campaign
    /// (inside a Slurm array it defaults to `slurm-<array job id>`); running a campaign's shard
    /// again continues its run.
    #[arg(long, value_name = "I/N", value_parser = values::shard, allow_hyphen_values = true)]
    pub shard: Option<Shard>,
    /// The number of shards when the index comes from a Kubernetes Indexed Job
    /// (`JOB_COMPLETION_INDEX`): the Job's `completions`.
    #[arg(long, env = "MLPORT_SHARDS", value_name = "N", value_parser = values::shard_count)]
    pub shards: Option<u32>,
    /// The campaign the run belongs to: the runs of many shards and machines that
    /// `report --campaign` reads as one. One run per (campaign, --machine, shard): running the
    /// same one again continues it (its pending cases) instead of starting another.
    #[arg(long, env = "MLPORT_CAMPAIGN", value_name = "NAME", value_parser = values::fleet_name)]
    pub campaign: Option<String>,
    /// The machine's name in reports (default: the host name); names a machine in
    /// `report --campaign C --slowdown cuda:0@MACHINE..tpu:0@MACHINE`. Give it on a cluster whose
    /// nodes share one kind of hardware, so a shard requeued on another node is the same machine.
    #[arg(long, env = "MLPORT_MACHINE", value_name = "NAME", value_parser = values::fleet_name)]
    pub machine: Option<String>,
    /// Format of the table printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// The aliases of `mlport report`'s kinds, as `mlport report --help` lists them.
const REPORT_ALIASES: &str = "\
Aliases (the older flags; each prints the same bytes as its kind):
  mlport report [--run RUN]            = mlport report portability [--run RUN]
  mlport report --slowdown A..B        = mlport report slowdown A..B
  mlport report --modes                = mlport report modes
  mlport report --routes               = mlport report routes
  mlport report --workloads            = mlport report workloads
  mlport report --dtypes               = mlport report dtypes
  mlport report --frameworks           = mlport report frameworks
  mlport report --paper                = mlport report paper
  mlport report --paper-compare        = mlport report paper-compare
  mlport report --campaign NAME        = mlport report campaign NAME
  mlport report --suite A,B            = mlport report suite A B
  mlport report --run all              = mlport report overview
When several are given, the first of --paper-compare, --slowdown, --paper, --modes, --routes,
--workloads, --run all, --dtypes, --frameworks, --campaign wins (as it always did); see
docs/reports.md.";

/// Arguments of `mlport report`: a kind ([`ReportKind`], each with its own options), or,
/// without one, the older flags, each an alias of a kind (`--slowdown A..B` is
/// `report slowdown A..B`); a kind and these flags do not go together.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_long_help = REPORT_ALIASES,
    next_help_heading = "Options without a kind (the older flags, each an alias of a kind)"
)]
pub struct ReportArgs {
    /// The report; without one, the flags below pick it (default: `portability`).
    #[command(subcommand)]
    pub kind: Option<ReportKind>,
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The run to report: an id, a label, or `all` for an overview of every run (default: the latest).
    #[arg(long, value_name = "RUN", conflicts_with = "campaign")]
    pub run: Option<String>,
    /// A campaign's runs instead of one run: one group per (machine, target), each machine
    /// counted against its own reference device; with --slowdown a side's `@NAME` is a machine
    /// of the campaign (`cuda:0@gpu-box..tpu:0@tpu-box`).
    #[arg(long, value_name = "NAME")]
    pub campaign: Option<String>,
    /// With --campaign and --dtypes, --frameworks or --modes: the machine whose runs to read
    /// (needed when the campaign has more than one).
    #[arg(long, value_name = "NAME", requires = "campaign")]
    pub machine: Option<String>,
    /// Output format (csv: the overview's rows, or with --slowdown its table).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Write the report to this file instead of stdout (required with --format html).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Slowdown of B relative to A: `A..B`, each `[FRAMEWORK/]DEVICE[@RUN]` (RUN an id or a
    /// label; default --run's, else the other side's, else the latest): two devices
    /// (`cpu..tpu:0`), two runs (`cpu@torch-2.4..cpu@torch-2.5`,
    /// `cuda:0@paper/torch/t4_vm/gpu..tpu:0@paper/torch/tpu_vm/tpu`) or two frameworks
    /// (`torch/cpu..jax/cpu`, functions matched by op). Repeatable with --format table or html
    /// (one section each).
    #[arg(long, value_name = "A..B")]
    pub slowdown: Vec<SlowdownSpec>,
    /// The same test suite's runs side by side (ids or labels, e.g. `keras-jax,keras-torch`):
    /// one row per test, matched by id (nodeid without device or framework tokens), one column
    /// per run, whatever their frameworks and devices.
    #[arg(long, value_delimiter = ',', value_name = "RUN,RUN,...", conflicts_with_all = ["slowdown", "paper", "paper_compare", "modes", "dtypes", "frameworks", "functions"])]
    pub suite: Vec<String>,
    /// What --slowdown compares.
    #[arg(long, value_enum, default_value = "steady")]
    pub measure: MeasureArg,
    /// The method of --slowdown: mlport's (the --measure samples, median ratios with bootstrap
    /// intervals, unstable flags) or the paper's authors' (every timed call of the tests that
    /// passed, first calls included, per function the ratio of means).
    #[arg(long, value_enum, default_value = "mlport")]
    pub rule: RuleArg,
    /// The figures of "The Grand Illusion" from its raw data (after `mlport import paper`):
    /// success / partial / complete failure per framework × device and the GPU (T4) → TPU v3
    /// latency per framework, each by the authors' method and by mlport's, side by side.
    #[arg(long, conflicts_with_all = ["slowdown", "modes", "dtypes", "frameworks", "functions", "run", "campaign"])]
    pub paper: bool,
    /// With --slowdown: a function more than this many times slower on B is intolerable.
    #[arg(long, default_value = "10", value_parser = values::positive, value_name = "RATIO")]
    pub threshold: f64,
    /// With --slowdown: a function's own threshold, `NAME=RATIO` (repeatable).
    #[arg(long = "threshold-for", value_name = "NAME=RATIO")]
    pub threshold_for: Vec<ThresholdFor>,
    /// With --slowdown: the bootstrap's seed (default: run A's stored seed).
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// Count every failure, not only device-attributable ones.
    #[arg(long)]
    pub all_failures: bool,
    /// The strict view: a case that disagrees with float64 or changes dtype on the reference
    /// target itself (the dtype's precision, JAX's x64 default) counts as a failure too. By
    /// default it is listed in its own column and not counted (the paper's rule).
    #[arg(long)]
    pub strict: bool,
    /// List the failing cases not attributable to the device (they did not pass on the reference)
    /// with each function's cases (--functions, and JSON's `failing_cases`), marked
    /// `(not attributable)`, never counted; attribution stays on.
    #[arg(long)]
    pub not_attributable: bool,
    /// Also list, per framework and device, the functions that fail and why.
    #[arg(long)]
    pub functions: bool,
    /// The reference device (default: the run's).
    #[arg(long, value_name = "DEVICE")]
    pub reference: Option<Target>,
    /// Eager against compiled, per framework and device: how many functions compile, fail to
    /// compile (by reason), recompile or change their answer, the compile cost (first calls)
    /// and the distribution of compiled/eager steady-state ratios.
    #[arg(long, conflicts_with_all = ["slowdown", "functions", "dtypes", "frameworks"])]
    pub modes: bool,
    /// Eager against the export routes (`X/onnx`, `X/onnx_openvino`, `X/stablehlo`; docs/ir-routes.md), per
    /// framework and device: how many functions export and run, fail (export_error,
    /// not_implemented, ...) or change their answer, the export + load cost (first calls) and
    /// the distribution of route/eager steady-state ratios.
    #[arg(long, conflicts_with_all = ["slowdown", "functions", "dtypes", "frameworks", "modes"])]
    pub routes: bool,
    /// Whole models and off-the-rut workloads (docs/workloads.md): per workload × framework ×
    /// target the status, the whole-model agreement (rule, RMSE against float64, ratio to the
    /// eager floor's), first call, steady state, samples/s and peak memory; the rut table
    /// (composed / monolithic steady state with bootstrap intervals); the same model across
    /// frameworks.
    #[arg(long, conflicts_with_all = ["slowdown", "functions", "dtypes", "frameworks", "modes", "routes"])]
    pub workloads: bool,
    /// The dtype matrix: per function × device, which dtypes pass, fail (with the reason) or
    /// give a wrong result, and the id of every case that did not pass.
    #[arg(long, conflicts_with_all = ["slowdown", "frameworks", "functions"])]
    pub dtypes: bool,
    /// The cross-framework table: per canonical op, case and dtype, which frameworks agree with
    /// the float64 reference (NumPy on the same inputs) and which do not, with their latencies.
    #[arg(long, conflicts_with_all = ["slowdown", "functions"])]
    pub frameworks: bool,
    /// The paper, then and now: the paper's PyTorch TPU v3 statuses (the run `mlport import
    /// paper` labels `paper/torch/tpu_vm/tpu`, in the same store) beside torch's statuses on
    /// `xla:0` (or `tpu:0`) in --run's run (default: the latest run with torch on xla:0).
    #[arg(long, conflicts_with_all = ["slowdown", "modes", "dtypes", "frameworks", "campaign"])]
    pub paper_compare: bool,
    /// With --dtypes or --frameworks: only these functions or canonical ops (comma-separated,
    /// e.g. `cumsum,torch.sum`).
    #[arg(long = "only", value_delimiter = ',', value_name = "NAME|OP")]
    pub only: Vec<String>,
}

/// Arguments of `mlport repro`.
#[derive(Debug, Args)]
pub struct ReproArgs {
    /// The store holding the result.
    #[command(flatten)]
    pub db: DbArg,
    /// Where the run's output arrays are.
    #[command(flatten)]
    pub outputs: OutputsArg,
    /// The result's id, as `mlport report --dtypes`, `--frameworks` and `--functions` print it (`#123`).
    #[arg(value_name = "RESULT_ID", value_parser = values::result_id)]
    pub result: i64,
    /// The folder to write the script and its input arrays into (default `repro-<ID>`); created,
    /// and must be empty if it exists.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Arguments of `mlport list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Which interpreter probes frameworks and devices.
    #[command(flatten)]
    pub python: PythonArg,
    /// A catalogue file or folder instead of the built-in one.
    #[arg(long, value_name = "PATH")]
    pub catalogue: Option<PathBuf>,
    /// Only the catalogue: do not start workers to find frameworks and devices.
    #[arg(long)]
    pub no_probe: bool,
    /// List every function, not only counts.
    #[arg(long)]
    pub functions: bool,
    /// Per framework, what will judge the planned cases' answers: their op's float64
    /// reference, their own `reference`, a float64 self-reference, or nothing (they would pass
    /// "ran, unchecked").
    #[arg(long)]
    pub references: bool,
    /// List the planned floating-point cases nothing can check, one case key a line.
    #[arg(long)]
    pub unchecked: bool,
    /// Only these frameworks, for --references, --unchecked and the probe (names as for `mlport
    /// run --framework`; default: every framework of the catalogue, the add-ons onnxruntime and
    /// Keras included).
    #[arg(short, long = "framework", value_delimiter = ',', value_name = "NAME")]
    pub frameworks: Vec<Framework>,
}
