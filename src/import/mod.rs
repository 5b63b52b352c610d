//! Importing results measured elsewhere: any pytest suite's pytest-json-report (with
//! optional timing files in the paper's format) as one run, and the whole published data set
//! of "The Grand Illusion" (arXiv 2309.07181) as one run per framework × machine × device.
//! Everything is parsed and checked before the store is touched; the store then writes all
//! runs of one import in one transaction ([`crate::store::Store::import_runs`]).

pub mod causes;
#[cfg(test)]
mod classify_tests;
pub mod group;
pub mod paper;
pub mod pytest_json;
pub mod pytest_session;
pub mod stream;
pub mod suite;
pub mod timings;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use paper::{PaperImport, import_paper};
pub use pytest_json::PytestReport;
pub use suite::Suite;
pub use timings::TimingFile;

use crate::model::{Framework, Target};
use crate::model::{FrameworkInfo, FunctionRow, RunData, RunInfo, RunOrigin, RunSource};

/// Why an import was refused. Every variant names the file, and where in it the problem is.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file or folder could not be read.
    #[error("{}: cannot read the file", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Malformed, truncated or foreign JSON, at a line and column (1-based).
    #[error("{}:{line}:{column}: {what}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// `malformed JSON: ...`, `truncated JSON: ...` or `not a ... file: ...`.
        what: String,
    },
    /// Well-formed JSON that makes no sense at `place` (a test index, a timing key).
    #[error("{}: {place}: {what}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where in it: `tests[12] (nodeid)`, `` `file.py:test` ``.
        place: String,
        /// What is wrong there.
        what: String,
    },
    /// A data-set folder that does not have the expected layout.
    #[error("{}: {what}", path.display())]
    Layout {
        /// The folder.
        path: PathBuf,
        /// What is missing or unexpected.
        what: String,
    },
}

impl ImportError {
    /// Wraps a serde_json error: syntax errors are `malformed JSON`, an early end is
    /// `truncated JSON`, JSON of another shape is `{foreign}: ...`.
    pub(crate) fn from_serde(path: &Path, e: &serde_json::Error, foreign: &str) -> ImportError {
        use serde_json::error::Category;
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let msg = text.strip_suffix(&suffix).unwrap_or(&text);
        let what = match e.classify() {
            Category::Eof => format!("truncated JSON: {msg}"),
            Category::Syntax => format!("malformed JSON: {msg}"),
            Category::Data => format!("{foreign}: {msg}"),
            Category::Io => format!("cannot read: {msg}"),
        };
        ImportError::Json { path: path.to_path_buf(), line: e.line(), column: e.column(), what }
    }
}

/// A run description with nothing known but the framework and the command: the base every
/// importer fills in.
pub fn blank_info(framework: Framework, command_line: &str) -> RunInfo {
    let mut info = RunInfo::blank(command_line, Target::cpu());
    info.frameworks.insert(framework, FrameworkInfo::default());
    info
}

/// Fills `info` from a report's environment: start time (`created` minus `duration`, UTC),
/// Python version and platform.
pub fn describe_report(info: &mut RunInfo, report: &PytestReport) {
    if let Some(created) = report.created {
        let start = created - report.duration.unwrap_or(0.0);
        if let Some(t) = chrono::DateTime::from_timestamp(start.floor() as i64, 0) {
            info.started_at = t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        }
    }
    let text = |k: &str| report.environment.get(k).and_then(|v| v.as_str()).map(str::to_string);
    if let Some(v) = text("Python") {
        info.python_version = v;
    }
    if let Some(v) = text("Platform") {
        info.os = v;
    }
}

/// What `mlport import pytest-json` was given.
#[derive(Clone, Debug)]
pub struct PytestJsonImport {
    /// The pytest-json-report file.
    pub report: PathBuf,
    /// Timing files of the session(s), one per repeat, in order.
    pub timings: Vec<PathBuf>,
    /// The framework the suite tests.
    pub framework: Framework,
    /// The device the suite ran on.
    pub device: Target,
    /// The run's label (`--label`).
    pub label: Option<String>,
    /// The machine the suite ran on (default: unknown).
    pub machine: Option<String>,
    /// `import:pytest-json`, or `pytest` for `mlport pytest`.
    pub source: RunSource,
    /// The mlport command, recorded with the run.
    pub command_line: String,
    /// How tests are grouped into functions (`--group-by`; default [`group::GroupBy::Auto`]).
    pub group_by: group::GroupBy,
}

/// The function a test file stands for in a user's suite: its stem (`test_matmul.py` →
/// `matmul`), with the file as a note.
pub fn stem_function(framework: Framework, stem: &str, file: &str) -> FunctionRow {
    FunctionRow { note: Some(format!("tests in {file}")), ..FunctionRow::new(framework, stem) }
}

/// Reads a pytest-json-report and its timing files and builds the run, touching no store.
///
/// Errors: [`ImportError`] naming the file and place of the first problem.
pub fn pytest_json_run(args: &PytestJsonImport) -> Result<RunData, ImportError> {
    let report = pytest_json::read(&args.report)?;
    let timings: Vec<TimingFile> = args.timings.iter().map(|p| timings::read(p)).collect::<Result<_, _>>()?;
    let framework = args.framework;
    // Files in different folders may share a stem (a/test_x.py, b/test_x.py): those are
    // named by their path instead, so that two functions never merge into one.
    let mut files_of_stem: HashMap<&str, HashSet<&str>> = HashMap::new();
    for t in &report.tests {
        let file = t.nodeid.split("::").next().unwrap_or(&t.nodeid);
        files_of_stem.entry(suite::function_stem(file)).or_default().insert(file);
    }
    let by_file = matches!(args.group_by, group::GroupBy::File);
    let namer = move |stem: &str, file: &str| {
        if !by_file {
            return FunctionRow {
                note: Some(format!("tests grouped by {}", args.group_by)),
                ..FunctionRow::new(framework, stem)
            };
        }
        if files_of_stem.get(stem).is_some_and(|files| files.len() > 1) {
            let path = file.strip_suffix(".py").unwrap_or(file).trim_start_matches("./");
            stem_function(framework, path, file)
        } else {
            stem_function(framework, stem, file)
        }
    };
    let suite = Suite {
        framework,
        device: args.device.clone(),
        report: Some(&report),
        timings: &timings,
        namer: &namer,
        harness_bugs: &[],
        group_by: &args.group_by,
    };
    let mut info = blank_info(framework, &args.command_line);
    describe_report(&mut info, &report);
    info.host = args.machine.clone().unwrap_or_else(|| "unknown".into());
    if info.started_at.is_empty() {
        info.started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    }
    let origin = RunOrigin {
        source: args.source,
        label: args.label.clone(),
        machine: args.machine.clone(),
        ..RunOrigin::default()
    };
    Ok(suite.convert(info, origin))
}
