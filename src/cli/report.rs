//! The arguments of `mlport report <KIND>`: one subcommand per report, each taking only the
//! options that apply to it. `mlport report` without a kind keeps its older flags
//! (`--slowdown`, `--modes`, `--dtypes`, `--run all`, ...; [`super::ReportArgs`]), which
//! `commands::report` turns into one of these kinds with the same precedence as before, so
//! both spellings print the same bytes (docs/reports.md lists every kind and its aliases).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{DbArg, FormatArg, MeasureArg, RuleArg, SlowdownSpec, ThresholdFor};
use crate::model::Target;

/// The reports of `mlport report`, one subcommand each (default: `portability`).
#[derive(Debug, Subcommand)]
pub enum ReportKind {
    /// One run's portability (the default): per framework × target how many functions
    /// succeed, are partial or fail completely, with the reasons. Alias: `mlport report` with
    /// no view flag.
    Portability(PortabilityArgs),
    /// Slowdown of B relative to A, per function, with bootstrap intervals. Alias:
    /// `--slowdown A..B`.
    Slowdown(SlowdownArgs),
    /// Eager against compiled, per framework and device. Alias: `--modes`.
    Modes(ModesArgs),
    /// Eager against the export routes (`X/onnx`, `X/onnx_openvino`, `X/stablehlo`), per
    /// framework and device. Alias: `--routes`.
    Routes(ModesArgs),
    /// Whole models and off-the-rut workloads (docs/workloads.md). Alias: `--workloads`.
    Workloads(ModesArgs),
    /// The dtype matrix of one run: per function × device, which dtypes pass, fail or give a
    /// wrong result. Alias: `--dtypes`.
    Dtypes(MatrixArgs),
    /// The cross-framework table of one run: per canonical op, case and dtype, which
    /// frameworks agree with the float64 reference. Alias: `--frameworks`.
    Frameworks(MatrixArgs),
    /// The figures of "The Grand Illusion" from its raw data (after `mlport import paper`).
    /// Alias: `--paper`.
    Paper(PaperArgs),
    /// The paper's PyTorch TPU v3 statuses beside torch on `xla:0` today. Alias:
    /// `--paper-compare`.
    PaperCompare(PaperCompareArgs),
    /// Every machine's portability in a campaign, each against its own reference device.
    /// Alias: `--campaign NAME` with no view flag.
    Campaign(CampaignArgs),
    /// The same test suite's runs side by side, one row per test. Alias: `--suite A,B`.
    Suite(SuiteArgs),
    /// Every run of the store, one row per run × target. Alias: `--run all`.
    Overview(OverviewArgs),
    /// The operator table of a suite run (`mlport run --suite`, docs/suites.md): per entry ×
    /// dtype × target whether a kernel is registered, the dtype declared, the samples run and
    /// agree; and the lists "declared but fails", "works but undeclared", "registered but
    /// wrong", "not registered". With --declared A..B: what two device types declare
    /// differently, from the installed framework alone (nothing run).
    Ops(OpsArgs),
}

/// How failures are counted (`portability`, `campaign`, `overview`, `paper-compare`, and
/// the HTML page).
#[derive(Debug, Args, Clone, Default)]
pub struct CountingArgs {
    /// Count every failure, not only device-attributable ones (those that pass on the
    /// reference device).
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
    /// The reference device (default: the run's).
    #[arg(long, value_name = "DEVICE")]
    pub reference: Option<Target>,
}

/// Arguments of `mlport report portability`.
#[derive(Debug, Args)]
pub struct PortabilityArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The run to report: an id or a label (default: the latest).
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// Also list, per framework and device, the functions that fail and why.
    #[arg(long)]
    pub functions: bool,
    /// How failures are counted.
    #[command(flatten)]
    pub counting: CountingArgs,
    /// With --format html: the bootstrap's seed of the page's eager-vs-compiled section
    /// (default: the run's stored seed).
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// Output format: table, markdown, json (`mlport.portability`; with --functions
    /// `mlport.portability.bundle`), csv, or html (the run's page, with -o FILE).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// The file the HTML page is written to (required with --format html, refused otherwise).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The runs a report of one run reads: `--run`, or one machine of `--campaign`.
#[derive(Debug, Args, Clone, Default)]
pub struct RunPick {
    /// The run: an id or a label (default: the latest).
    #[arg(long, value_name = "RUN", conflicts_with = "campaign")]
    pub run: Option<String>,
    /// A campaign's runs instead of one run: one machine's runs (disjoint shards of one plan)
    /// read together as if they were one run.
    #[arg(long, value_name = "NAME")]
    pub campaign: Option<String>,
    /// With --campaign: the machine whose runs to read (needed when the campaign has more
    /// than one).
    #[arg(long, value_name = "NAME", requires = "campaign")]
    pub machine: Option<String>,
}

/// Arguments of `mlport report slowdown`.
#[derive(Debug, Args)]
pub struct SlowdownArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// Slowdown of B relative to A: `A..B`, each `[FRAMEWORK/]DEVICE[@RUN]` (RUN an id or a
    /// label; default --run's, else the other side's, else the latest): two devices
    /// (`cpu..tpu:0`), two runs (`cpu@torch-2.4..cpu@torch-2.5`) or two frameworks
    /// (`torch/cpu..jax/cpu`, functions matched by op). With --campaign a side's `@NAME` is a
    /// machine of the campaign (`cuda:0@gpu-box..tpu:0@tpu-box`). Several with --format table
    /// or html (one section each).
    #[arg(value_name = "A..B", required = true)]
    pub specs: Vec<SlowdownSpec>,
    /// The runs the sides default to.
    #[command(flatten)]
    pub pick: RunPick,
    /// What is compared.
    #[arg(long, value_enum, default_value = "steady")]
    pub measure: MeasureArg,
    /// The method: mlport's (the --measure samples, median ratios with bootstrap intervals,
    /// unstable flags) or the paper's authors' (every timed call of the tests that passed,
    /// first calls included, per function the ratio of means).
    #[arg(long, value_enum, default_value = "mlport")]
    pub rule: RuleArg,
    /// A function more than this many times slower on B is intolerable.
    #[arg(long, default_value = "10", value_parser = super::values::positive, value_name = "RATIO")]
    pub threshold: f64,
    /// A function's own threshold, `NAME=RATIO` (repeatable).
    #[arg(long = "threshold-for", value_name = "NAME=RATIO")]
    pub threshold_for: Vec<ThresholdFor>,
    /// The bootstrap's seed (default: run A's stored seed).
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// With --format html: how the page counts failures.
    #[command(flatten)]
    pub counting: CountingArgs,
    /// Output format: table, json (`mlport.slowdown`), csv, or html (the run's page with the
    /// slowdown's distribution, -o FILE). Markdown is refused.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// The file the HTML page is written to (required with --format html, refused otherwise).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `mlport report modes`, `routes` and `workloads`.
#[derive(Debug, Args)]
pub struct ModesArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The runs read.
    #[command(flatten)]
    pub pick: RunPick,
    /// The bootstrap's seed (default: the run's stored seed).
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// Output format: table, markdown, json or csv (`modes` also html: the run's page, which
    /// holds the modes, with -o FILE).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// With `modes --format html`: the file the page is written to.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `mlport report dtypes` and `frameworks`.
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The runs read.
    #[command(flatten)]
    pub pick: RunPick,
    /// Only these functions or canonical ops (comma-separated, e.g. `cumsum,torch.sum`).
    #[arg(long = "only", value_delimiter = ',', value_name = "NAME|OP")]
    pub only: Vec<String>,
    /// Output format: table, markdown, json or csv, or html (the run's page, which holds
    /// both the dtype matrix and the cross-framework table, with -o FILE).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// With --format html: the file the page is written to.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `mlport report paper`.
#[derive(Debug, Args)]
pub struct PaperArgs {
    /// The store to read (it must hold `mlport import paper`'s runs).
    #[command(flatten)]
    pub db: DbArg,
    /// The bootstrap's seed of mlport's method.
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// Output format: table, markdown, json (`mlport.paper`), csv, or html (a page of its
    /// own, with -o FILE).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// With --format html: the file the page is written to.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `mlport report paper-compare`.
#[derive(Debug, Args)]
pub struct PaperCompareArgs {
    /// The store to read (it must hold the paper's run `paper/torch/tpu_vm/tpu`).
    #[command(flatten)]
    pub db: DbArg,
    /// The run with torch on `xla:0` (or `tpu:0`) (default: the latest such run).
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// How failures are counted.
    #[command(flatten)]
    pub counting: CountingArgs,
    /// Output format: table, markdown, json or csv.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// Arguments of `mlport report campaign`.
#[derive(Debug, Args)]
pub struct CampaignArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The campaign's name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// After the table, each machine's failing functions (table and markdown only).
    #[arg(long)]
    pub functions: bool,
    /// How failures are counted.
    #[command(flatten)]
    pub counting: CountingArgs,
    /// With --format html: the machine whose page is written (needed when the campaign has
    /// more than one).
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// With --format html: the bootstrap's seed of the page's eager-vs-compiled section.
    #[arg(long, value_name = "SEED")]
    pub stats_seed: Option<u64>,
    /// Output format: table, markdown, json, csv, or html (one machine's page, -o FILE).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// With --format html: the file the page is written to.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `mlport report suite`.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// Two or more runs of the same test suite (ids or labels, e.g. `keras-jax keras-torch`
    /// or `keras-jax,keras-torch`): one row per test, matched by id (nodeid without device or
    /// framework tokens), one column per run.
    #[arg(value_delimiter = ',', value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Output format: table, markdown, json (`mlport.suite`) or csv.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// Arguments of `mlport report overview`.
#[derive(Debug, Args)]
pub struct OverviewArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// How failures are counted.
    #[command(flatten)]
    pub counting: CountingArgs,
    /// Output format: table, markdown, json or csv (one row per run × target).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// Arguments of `mlport report ops`.
#[derive(Debug, Args)]
pub struct OpsArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The runs read.
    #[command(flatten)]
    pub pick: RunPick,
    /// Compare what two device types declare (`cpu..cuda`), from the installed framework's own
    /// test data, without running anything or reading a store.
    #[arg(long, value_name = "A..B", conflicts_with_all = ["run", "campaign", "csv_dir"])]
    pub declared: Option<String>,
    /// With --declared: the suite whose declarations are compared.
    #[arg(long, value_enum, default_value = "opinfo", requires = "declared")]
    pub suite: crate::model::Suite,
    /// With --declared: the interpreter whose framework is read.
    #[command(flatten)]
    pub python: super::PythonArg,
    /// Also write one CSV file per target into this folder (`cpu.csv`, `cpu_compiled.csv`), in
    /// the columns of llama.cpp's per-backend support files, so two machines' files can be diffed.
    #[arg(long, value_name = "DIR")]
    pub csv_dir: Option<PathBuf>,
    /// Output format: table, markdown, json (`mlport.ops`), csv (every row), or html (a page,
    /// with -o FILE).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// With --format html: the file the page is written to.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl ReportKind {
    /// The store the report reads.
    pub fn db(&self) -> &DbArg {
        match self {
            ReportKind::Portability(a) => &a.db,
            ReportKind::Slowdown(a) => &a.db,
            ReportKind::Modes(a) | ReportKind::Routes(a) | ReportKind::Workloads(a) => &a.db,
            ReportKind::Dtypes(a) | ReportKind::Frameworks(a) => &a.db,
            ReportKind::Paper(a) => &a.db,
            ReportKind::PaperCompare(a) => &a.db,
            ReportKind::Campaign(a) => &a.db,
            ReportKind::Suite(a) => &a.db,
            ReportKind::Overview(a) => &a.db,
            ReportKind::Ops(a) => &a.db,
        }
    }
}
