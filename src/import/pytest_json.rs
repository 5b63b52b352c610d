//! Reads pytest-json-report files (the `pytest --json-report` plugin, format of version
//! 1.5, <https://github.com/numirias/pytest-json-report>): the list of tests with their
//! outcome and, per stage (setup, call, teardown), duration, crash and longrepr. Only what
//! mlport needs is read; unknown fields are ignored. Errors name the file and the line and
//! column (from serde_json) or the test (`tests[12]`) where the file stops making sense.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::ImportError;

/// A pytest-json-report document.
#[derive(Clone, Debug, Deserialize)]
pub struct PytestReport {
    /// Unix time (s) the session ended.
    pub created: Option<f64>,
    /// Session duration, s.
    pub duration: Option<f64>,
    /// pytest's exit code (0 all passed, 1 some failed, ...).
    pub exitcode: Option<i64>,
    /// The session's root folder.
    pub root: Option<String>,
    /// Python version, platform, packages and plugins as the plugin recorded them.
    #[serde(default)]
    pub environment: BTreeMap<String, serde_json::Value>,
    /// Counts per outcome plus `total` and `collected`. Sometimes disagrees with `tests`;
    /// the list is trusted.
    #[serde(default)]
    pub summary: BTreeMap<String, serde_json::Value>,
    /// Every test, in the order the session ran them.
    pub tests: Vec<PytestTest>,
}

/// One test item.
#[derive(Clone, Debug, Deserialize)]
pub struct PytestTest {
    /// `path/to/file.py::Class::test_name` (the class is optional).
    pub nodeid: String,
    /// How the test ended.
    pub outcome: TestOutcome,
    /// Fixtures and set-up.
    pub setup: Option<Stage>,
    /// The test body.
    pub call: Option<Stage>,
    /// Clean-up.
    pub teardown: Option<Stage>,
    /// What the suite attached to the test (`json_metadata` fixture of pytest-json-report),
    /// e.g. `{"function": "numpy.sin"}`; read by `--group-by metadata:KEY`.
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A test's outcome as pytest reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOutcome {
    /// Passed.
    Passed,
    /// Failed in its body (or another stage).
    Failed,
    /// Skipped (`pytest.skip`, `skipif`).
    Skipped,
    /// An error outside the test body (a fixture or setup failed).
    Error,
    /// Failed as expected (`pytest.mark.xfail`).
    Xfailed,
    /// Passed although expected to fail.
    Xpassed,
    /// A failed attempt that pytest-rerunfailures ran again; the test's last entry with the
    /// same nodeid holds the final outcome.
    Rerun,
}

impl TestOutcome {
    /// The outcome as pytest-json-report spells it (`passed`, `failed`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TestOutcome::Passed => "passed",
            TestOutcome::Failed => "failed",
            TestOutcome::Skipped => "skipped",
            TestOutcome::Error => "error",
            TestOutcome::Xfailed => "xfailed",
            TestOutcome::Xpassed => "xpassed",
            TestOutcome::Rerun => "rerun",
        }
    }
}

/// One stage of a test: setup, call or teardown.
#[derive(Clone, Debug, Deserialize)]
pub struct Stage {
    /// Seconds.
    pub duration: Option<f64>,
    /// `passed`, `failed` or `skipped`.
    pub outcome: Option<String>,
    /// Where and why it failed.
    pub crash: Option<Crash>,
    /// The failure's (or skip's) text; for skips often `('file', line, 'Skipped: why')`.
    pub longrepr: Option<serde_json::Value>,
}

/// Where and why a stage failed.
#[derive(Clone, Debug, Deserialize)]
pub struct Crash {
    /// The file the exception was raised in.
    pub path: Option<String>,
    /// Its line.
    pub lineno: Option<i64>,
    /// `ExceptionType: message`, e.g. `RuntimeError: Error while lowering: [] aten::isnan`.
    pub message: String,
}

impl PytestTest {
    /// The node id before its parametrization (`[...]`, which may itself hold `::`).
    fn head(&self) -> &str {
        self.nodeid.find('[').map_or(self.nodeid.as_str(), |i| &self.nodeid[..i])
    }

    /// The file part of the node id (`src/x/Adamax_test.py`).
    pub fn file(&self) -> &str {
        self.nodeid.split("::").next().unwrap_or(&self.nodeid)
    }

    /// The class, when the test is a method (`TestOptimXLA`).
    pub fn class(&self) -> Option<&str> {
        let parts: Vec<&str> = self.head().split("::").collect();
        (parts.len() > 2).then(|| parts[parts.len() - 2])
    }

    /// The test's own name, parameters included (`test_adamax_xla`, `test_x[a-b]`,
    /// `test_x[a::b]`).
    pub fn name(&self) -> &str {
        let head = self.head();
        let start = head.rfind("::").map_or(0, |i| i + 2);
        &self.nodeid[start..]
    }

    /// The first stage that failed, with its name, in the order setup, call, teardown (a stage
    /// of a failed attempt that pytest-rerunfailures ran again says `rerun`).
    pub fn failed_stage(&self) -> Option<(&'static str, &Stage)> {
        [("setup", &self.setup), ("call", &self.call), ("teardown", &self.teardown)].into_iter().find_map(
            |(name, s)| {
                s.as_ref().filter(|s| matches!(s.outcome.as_deref(), Some("failed" | "rerun"))).map(|s| (name, s))
            },
        )
    }

    /// The stage that carries a skip's reason (setup or call).
    pub fn skipped_stage(&self) -> Option<&Stage> {
        [&self.setup, &self.call].into_iter().flatten().find(|s| s.outcome.as_deref() == Some("skipped"))
    }
}

impl Stage {
    /// The longrepr as text (a string as is; a `[file, line, why]` list as `why`).
    pub fn longrepr_text(&self) -> Option<String> {
        match self.longrepr.as_ref()? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Array(items) => items.last().and_then(|v| v.as_str()).map(str::to_string),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

/// Why pytest skipped a test, from a longrepr such as
/// `('/x/Conv3d_test.py', 198, 'Skipped: Only runs on cuda')`: `Only runs on cuda`.
pub fn skip_reason(longrepr: &str) -> String {
    let text = longrepr.trim();
    let text = match text.rfind("Skipped: ") {
        Some(i) => &text[i + "Skipped: ".len()..],
        None => text,
    };
    text.trim_end_matches(')').trim_end_matches(['\'', '"']).trim().to_string()
}

/// Parses a pytest-json-report document from `bytes` read from `path`.
///
/// Errors: [`ImportError::Json`] with line and column for malformed or truncated JSON and
/// for JSON that is not a pytest-json-report (a missing `tests` list, a test without
/// `nodeid` or with an unknown `outcome`); [`ImportError::Invalid`] naming `tests[i]` for a
/// node id without `::` or a negative duration.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<PytestReport, ImportError> {
    let report: PytestReport = serde_json::from_slice(bytes)
        .map_err(|e| ImportError::from_serde(path, &e, "not a pytest-json-report file"))?;
    for (i, t) in report.tests.iter().enumerate() {
        let place = || format!("tests[{i}] ({})", t.nodeid);
        if !t.nodeid.contains("::") || t.nodeid.starts_with("::") || t.name().is_empty() {
            return Err(ImportError::Invalid {
                path: path.to_path_buf(),
                place: place(),
                what: "a test's nodeid must be `file::[Class::]test`".into(),
            });
        }
        for (name, stage) in [("setup", &t.setup), ("call", &t.call), ("teardown", &t.teardown)] {
            if let Some(d) = stage.as_ref().and_then(|s| s.duration)
                && !(d >= 0.0 && d.is_finite())
            {
                return Err(ImportError::Invalid {
                    path: path.to_path_buf(),
                    place: place(),
                    what: format!("{name}.duration is {d}, not a number of seconds"),
                });
            }
        }
    }
    Ok(report)
}

/// Reads and parses the pytest-json-report at `path`. Errors: [`ImportError::Io`] and
/// those of [`parse`].
pub fn read(path: &Path) -> Result<PytestReport, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })?;
    parse(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{
  "created": 1682974146.79, "duration": 12.5, "exitcode": 1, "root": "/x",
  "environment": {"Python": "3.8.10"},
  "summary": {"passed": 1, "failed": 1, "total": 2},
  "tests": [
    {"nodeid": "src/Adamax_test.py::TestOptimXLA::test_adamax_xla", "outcome": "passed",
     "setup": {"duration": 0.01, "outcome": "passed"}, "call": {"duration": 2.5, "outcome": "passed"}},
    {"nodeid": "src/log1p_test.py::test_log1p", "outcome": "failed",
     "call": {"duration": 0.2, "outcome": "failed",
              "crash": {"path": "/x/log1p_test.py", "lineno": 3, "message": "RuntimeError: Error while lowering"},
              "longrepr": "def test_log1p():\n>   raise\nE   RuntimeError: Error while lowering"}},
    {"nodeid": "src/c_test.py::T::test_c", "outcome": "skipped",
     "setup": {"duration": 0.0, "outcome": "skipped", "longrepr": "('/x/c_test.py', 198, 'Skipped: Only runs on cuda')"}}
  ]
}"#;

    fn p() -> &'static Path {
        Path::new("r.json")
    }

    #[test]
    fn reads_tests_stages_and_crashes() {
        let r = parse(p(), SMALL.as_bytes()).unwrap();
        assert_eq!(r.tests.len(), 3);
        let t = &r.tests[0];
        assert_eq!((t.file(), t.class(), t.name()), ("src/Adamax_test.py", Some("TestOptimXLA"), "test_adamax_xla"));
        assert_eq!(t.outcome, TestOutcome::Passed);
        let f = &r.tests[1];
        assert_eq!(f.class(), None);
        let (stage, s) = f.failed_stage().unwrap();
        assert_eq!((stage, s.crash.as_ref().unwrap().message.as_str()), ("call", "RuntimeError: Error while lowering"));
        let skip = r.tests[2].skipped_stage().unwrap();
        assert_eq!(skip_reason(&skip.longrepr_text().unwrap()), "Only runs on cuda");
        assert_eq!(r.environment["Python"], "3.8.10");
    }

    #[test]
    fn malformed_truncated_and_foreign_files_name_line_and_column() {
        let truncated = &SMALL[..SMALL.len() / 2];
        let e = parse(p(), truncated.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("r.json:") && e.contains("truncated JSON"), "{e}");
        let bad = SMALL.replacen("\"outcome\": \"passed\",", "\"outcome\": \"passed\",,", 1);
        let e = parse(p(), bad.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("r.json:6:") && e.contains("malformed JSON"), "{e}");
        let e = parse(p(), br#"{"a.py:test": {"operations": [1.0], "test_time": 2.0}}"#).unwrap_err().to_string();
        assert_eq!(e, "r.json:1:54: not a pytest-json-report file: missing field `tests`");
        let e = parse(
            p(),
            SMALL
                .replace("\"skipped\", \n", "\"exploded\", \n")
                .replace("\"outcome\": \"skipped\",\n     \"setup\"", "\"outcome\": \"exploded\",\n     \"setup\"")
                .as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("r.json:12:") && e.contains("unknown variant `exploded`"), "{e}");
        let e = parse(p(), b"[1, 2]").unwrap_err().to_string();
        assert!(e.starts_with("r.json:1:6: not a pytest-json-report file"), "{e}");
    }

    #[test]
    fn impossible_tests_are_named_by_index() {
        let bad = SMALL.replace("src/log1p_test.py::test_log1p", "src/log1p_test.py");
        let e = parse(p(), bad.as_bytes()).unwrap_err().to_string();
        assert_eq!(e, "r.json: tests[1] (src/log1p_test.py): a test's nodeid must be `file::[Class::]test`");
        let bad = SMALL.replace("\"duration\": 2.5", "\"duration\": -2.5");
        let e = parse(p(), bad.as_bytes()).unwrap_err().to_string();
        assert!(
            e.contains("tests[0] (src/Adamax_test.py::TestOptimXLA::test_adamax_xla): call.duration is -2.5"),
            "{e}"
        );
    }
}
