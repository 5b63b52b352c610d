//! Command-line parsing (clap), turned once into validated option structs so the rest
//! of mlport never sees clap.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::model::{Device, Framework};

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
    /// Print the portability report of a stored run.
    Report(ReportArgs),
    /// Show the catalogue, the frameworks and the devices they can see.
    List(ListArgs),
    /// List the runs in a store.
    Runs(DbArg),
    /// Create (or check) the managed Python environment and print its versions.
    Env(PythonArg),
}

/// `--db PATH`, shared by the commands that read or write a store.
#[derive(Debug, Args, Clone)]
pub struct DbArg {
    /// The SQLite store.
    #[arg(long, default_value = "mlport.db", value_name = "PATH")]
    pub db: PathBuf,
}

/// `--python PATH`, shared by the commands that start workers.
#[derive(Debug, Args, Clone)]
pub struct PythonArg {
    /// Use this Python interpreter (your own CUDA/ROCm/TPU stack) instead of the managed environment.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
}

/// Output formats for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// A terminal table.
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Versioned JSON (`mlport.portability`, version 1).
    Json,
}

/// Arguments of `mlport run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Where results go.
    #[command(flatten)]
    pub db: DbArg,
    /// Which interpreter runs the workers.
    #[command(flatten)]
    pub python: PythonArg,
    /// A catalogue file or folder of *.toml instead of the built-in one.
    #[arg(long, value_name = "PATH")]
    pub catalogue: Option<PathBuf>,
    /// Frameworks to run (default: all in the catalogue).
    #[arg(short, long = "framework", value_delimiter = ',', value_name = "NAME")]
    pub frameworks: Vec<String>,
    /// Devices to run on: cpu, cuda:N, tpu:N, mps, xpu:N (default: every device found).
    #[arg(short, long = "device", value_delimiter = ',', value_name = "DEVICE")]
    pub devices: Vec<String>,
    /// Only these functions (fully qualified, e.g. torch.linalg.svd).
    #[arg(long = "function", value_delimiter = ',', value_name = "NAME")]
    pub functions: Vec<String>,
    /// Only these dtypes of each case's sweep.
    #[arg(long = "dtype", value_delimiter = ',', value_name = "DTYPE")]
    pub dtypes: Vec<String>,
    /// Seed added to every case's input seed (stored with the run).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Per-case timeout in seconds (a case's own timeout_s wins).
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub timeout: f64,
    /// The reference device for device-attributable failures.
    #[arg(long, default_value = "cpu", value_name = "DEVICE")]
    pub reference: String,
    /// Steady-state time budget per case, ms.
    #[arg(long, default_value_t = 100.0, value_name = "MS")]
    pub budget_ms: f64,
    /// Continue an interrupted run (the latest, or the one given) instead of starting one.
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "latest")]
    pub resume: Option<String>,
    /// Format of the table printed at the end.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
}

/// Arguments of `mlport report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The store to read.
    #[command(flatten)]
    pub db: DbArg,
    /// The run to report (default: the latest).
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<i64>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Count every failure, not only device-attributable ones.
    #[arg(long)]
    pub all_failures: bool,
    /// Also list, per framework and device, the functions that fail and why.
    #[arg(long)]
    pub functions: bool,
    /// The reference device (default: the run's).
    #[arg(long, value_name = "DEVICE")]
    pub reference: Option<String>,
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
}

/// Parses `--device` values, naming the bad one.
pub fn parse_devices(v: &[String]) -> Result<Vec<Device>> {
    let mut out: Vec<Device> = Vec::new();
    for s in v {
        let d: Device = s.parse().map_err(|e: String| anyhow::anyhow!("--device: {e}"))?;
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Ok(out)
}

/// Parses `--framework` values, naming the bad one.
pub fn parse_frameworks(v: &[String]) -> Result<Vec<Framework>> {
    let mut out = Vec::new();
    for s in v {
        let f: Framework = s.parse().map_err(|e: String| anyhow::anyhow!("--framework: {e}"))?;
        if !out.contains(&f) {
            out.push(f);
        }
    }
    Ok(out)
}

/// Checks a positive finite number of seconds or ms.
pub fn positive(name: &str, v: f64) -> Result<f64> {
    if !(v > 0.0 && v.is_finite()) {
        bail!("{name} must be a positive number, not {v}");
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn bad_devices_and_frameworks_are_named() {
        assert!(parse_devices(&["gpu0".into()]).unwrap_err().to_string().contains("unknown device `gpu0`"));
        assert_eq!(parse_devices(&["cpu".into(), "cuda".into(), "cuda:0".into()]).unwrap().len(), 2);
        assert!(parse_frameworks(&["mxnet".into()]).unwrap_err().to_string().contains("unknown framework `mxnet`"));
        assert!(positive("--timeout", 0.0).is_err());
    }
}
