//! `mlport pytest`'s results as they happen: the messages of mlport's pytest plugin
//! ([`PLUGIN_SOURCE`], shipped inside the binary and loaded with `-p`), one JSON object a line
//! (docs/protocol.md, "pytest stream", version [`STREAM_VERSION`]), each turned into the piece
//! of the run it adds — the test's function, case and result, decided by the same
//! [`Suite`] conversion as an imported pytest-json-report — for the store to commit at once
//! ([`crate::store::Store::append_to_run`]). A test that was running when pytest died or the
//! session's time ran out gets its `crash` or `timeout` here; a file that could not be
//! collected gets a `harness_error` case of its own.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::group::GroupBy;
use super::pytest_json::{PytestReport, PytestTest, TestOutcome};
use super::suite::{Suite, function_stem};
use super::{blank_info, stem_function};
use crate::model::{CaseRow, DeviceInfo, Framework, FunctionRow, ImportedSpec, RunData, RunOrigin, Spec, Target};
use crate::outcome::{self, TestEnding};

/// The plugin's Python source, written to a private folder and loaded with `-p mlport_pytest`.
pub const PLUGIN_SOURCE: &str = include_str!("mlport_pytest.py");

/// The plugin's module name (`-p` argument and file stem).
pub const PLUGIN_MODULE: &str = "mlport_pytest";

/// The stream's format version; the plugin's `hello` must carry it.
pub const STREAM_VERSION: u32 = 1;

/// The case key suffix of a file that could not be collected (`tests/test_x.py::<collection>`).
pub const COLLECTION_CASE: &str = "<collection>";

/// One line of the plugin's stream.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// First line: the stream's version and pytest's.
    Hello {
        /// [`STREAM_VERSION`].
        v: u32,
        /// pytest's version.
        #[serde(default)]
        pytest: String,
    },
    /// A file (or other collector) that could not be collected.
    CollectError {
        /// The collector's node id, usually the file.
        nodeid: String,
        /// pytest's error line (`ImportError: No module named 'x'`).
        message: String,
        /// The whole error text.
        #[serde(default)]
        longrepr: Option<String>,
    },
    /// A test is about to run.
    Start {
        /// Its node id.
        nodeid: String,
    },
    /// A test (or a failed attempt pytest-rerunfailures runs again) finished.
    Test {
        /// The test in pytest-json-report's shape.
        test: Box<PytestTest>,
        /// The devices its tensors were on, as the plugin saw them (`cpu`, `cuda:0`).
        #[serde(default)]
        devices: Vec<String>,
    },
    /// The session ended with pytest's exit status.
    End {
        /// 0 all passed, 1 some failed, 2 interrupted, 5 nothing collected ...
        exitstatus: i64,
    },
}

/// Parses one line of the stream. Errors: the line is not a message (the text says where).
pub fn parse(line: &str) -> Result<Message, String> {
    serde_json::from_str(line).map_err(|e| format!("not a message of mlport's pytest plugin: {e}: {line:.200}"))
}

/// Turns a suite's stream into pieces of one run.
pub struct Stream {
    framework: Framework,
    device: Target,
    group_by: GroupBy,
    /// Failed attempts (`rerun`) waiting for their test's final entry, by node id.
    reruns: HashMap<String, Vec<PytestTest>>,
    /// The test running now (`start` without its `test`).
    pub in_flight: Option<String>,
    /// How many finished tests each device was seen in.
    pub devices_seen: BTreeMap<String, usize>,
    /// Finished tests (rerun attempts not counted) and collection errors, per pytest outcome.
    pub counts: BTreeMap<String, usize>,
}

impl Stream {
    /// A stream of `framework`'s suite on `device`, grouped by `group_by`.
    pub fn new(framework: Framework, device: Target, group_by: GroupBy) -> Stream {
        Stream {
            framework,
            device,
            group_by,
            reruns: HashMap::new(),
            in_flight: None,
            devices_seen: BTreeMap::new(),
            counts: BTreeMap::new(),
        }
    }

    fn convert(&self, tests: Vec<PytestTest>) -> RunData {
        let report = PytestReport {
            created: None,
            duration: None,
            exitcode: None,
            root: None,
            environment: BTreeMap::new(),
            summary: BTreeMap::new(),
            tests,
        };
        let framework = self.framework;
        let by_file = matches!(self.group_by, GroupBy::File);
        let group_by = &self.group_by;
        let namer = move |stem: &str, file: &str| {
            if by_file {
                stem_function(framework, stem, file)
            } else {
                FunctionRow { note: Some(format!("tests grouped by {group_by}")), ..FunctionRow::new(framework, stem) }
            }
        };
        let suite = Suite {
            framework,
            device: self.device.clone(),
            report: Some(&report),
            timings: &[],
            namer: &namer,
            harness_bugs: &[],
            group_by: &self.group_by,
        };
        suite.convert(blank_info(framework, ""), RunOrigin::default())
    }

    /// The piece a `test` message adds; `None` for a failed attempt that will run again (kept
    /// for the test's final entry, which then becomes `flaky` when it passes).
    pub fn test(&mut self, test: PytestTest, devices: &[String]) -> Option<RunData> {
        if test.outcome == TestOutcome::Rerun {
            self.reruns.entry(test.nodeid.clone()).or_default().push(test);
            return None;
        }
        if self.in_flight.as_deref() == Some(test.nodeid.as_str()) {
            self.in_flight = None;
        }
        for d in devices {
            *self.devices_seen.entry(d.clone()).or_default() += 1;
        }
        let word = format!("{:?}", test.outcome).to_ascii_lowercase();
        *self.counts.entry(word).or_default() += 1;
        let mut tests = self.reruns.remove(&test.nodeid).unwrap_or_default();
        tests.push(test);
        let mut data = self.convert(tests);
        data.devices.retain(|d| d.device != self.device || data.results.iter().any(|r| r.device == d.device));
        Some(data)
    }

    /// The piece a collection error adds: a case `<file>::<collection>` of the file's function
    /// with outcome `fail`, reason `harness_error`, and pytest's message.
    pub fn collect_error(&mut self, nodeid: &str, message: &str, longrepr: Option<&str>) -> RunData {
        *self.counts.entry("collection error".into()).or_default() += 1;
        let file = nodeid.split("::").next().unwrap_or(nodeid);
        let mut r = outcome::imported(self.framework, &TestEnding::CollectionError(message))
            .into_result(&format!("{file}::{COLLECTION_CASE}"), self.device.clone());
        r.traceback = longrepr.map(str::to_string);
        r.phase = Some("collection".into());
        r.finished_at = now();
        self.piece(file, function_stem(file), COLLECTION_CASE, nodeid, r)
    }

    /// The piece for the test in flight when the session ended without finishing it: `ending`
    /// is [`TestEnding::Crashed`] or [`TestEnding::TimedOut`]. `None` when no test was running.
    pub fn unfinished(&mut self, ending: &TestEnding<'_>) -> Option<RunData> {
        let nodeid = self.in_flight.take()?;
        let word = if matches!(ending, TestEnding::TimedOut(_)) { "timeout" } else { "crash" };
        *self.counts.entry(word.into()).or_default() += 1;
        // Placed exactly as a finished test would be: its case and function come from the
        // same conversion, then the ending replaces the outcome.
        let probe: PytestTest = serde_json::from_value(serde_json::json!({"nodeid": nodeid, "outcome": "passed"}))
            .expect("a minimal test entry");
        let mut data = self.convert(vec![probe]);
        let decision = outcome::imported(self.framework, ending);
        for r in &mut data.results {
            decision.clone().apply(r);
            r.finished_at = now();
        }
        Some(data)
    }

    fn piece(&self, file: &str, stem: &str, case_id: &str, nodeid: &str, r: crate::model::CaseResult) -> RunData {
        let function = stem_function(self.framework, stem, file);
        let case = CaseRow {
            key: r.case_key.clone(),
            framework: self.framework,
            function: function.name.clone(),
            case_id: case_id.into(),
            dtype: None,
            seed: 0,
            spec: Spec::Imported(ImportedSpec { nodeid: Some(nodeid.to_string()), ..Default::default() }),
        };
        let device =
            DeviceInfo { framework: self.framework, device: r.device.clone(), available: true, detail: String::new() };
        RunData {
            uid: None,
            info: blank_info(self.framework, ""),
            origin: RunOrigin::default(),
            functions: vec![function],
            cases: vec![case],
            devices: vec![device],
            results: vec![r],
        }
    }

    /// A note when the finished tests' tensors were seen on devices but never on the asked
    /// one (a suite that ignores `MLPORT_DEVICE`); `None` when it was seen, or nothing was.
    pub fn device_note(&self) -> Option<String> {
        if self.devices_seen.is_empty() {
            return None;
        }
        let asked = self.device.as_str();
        let base = asked.split('/').next().unwrap_or(asked);
        if self.devices_seen.keys().any(|d| d == base) {
            return None;
        }
        let seen: Vec<String> = self.devices_seen.iter().map(|(d, n)| format!("{d} ({n} tests)")).collect();
        Some(format!(
            "device not used: the tests' tensors were never seen on {base}, only on {}; the suite most likely \
             ignores MLPORT_DEVICE (docs/pytest.md: suites you cannot edit)",
            seen.join(", ")
        ))
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, Reason};

    fn test_line(nodeid: &str, outcome: &str, crash: Option<&str>) -> Message {
        let mut t = serde_json::json!({"nodeid": nodeid, "outcome": outcome,
            "call": {"duration": 0.5, "outcome": if outcome == "rerun" { "failed" } else { outcome }}});
        if let Some(c) = crash {
            t["call"]["crash"] = serde_json::json!({"message": c});
        }
        parse(&serde_json::json!({"type": "test", "test": t, "devices": ["cpu"]}).to_string()).unwrap()
    }

    fn run(stream: &mut Stream, m: Message) -> Option<RunData> {
        match m {
            Message::Test { test, devices } => stream.test(*test, &devices),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tests_become_pieces_and_reruns_make_a_flaky_test() {
        let mut s = Stream::new(Framework::Torch, Target::cpu(), GroupBy::Test);
        let piece = run(&mut s, test_line("t/test_a.py::test_add[float16]", "passed", None)).unwrap();
        assert_eq!(piece.functions[0].name, "add");
        assert_eq!(piece.cases[0].dtype.map(|d| d.to_string()).as_deref(), Some("float16"));
        assert_eq!(piece.results[0].outcome, Outcome::Pass);
        assert_eq!(piece.results[0].wall_ms, 500.0);
        assert!(run(&mut s, test_line("t/test_a.py::test_x", "rerun", Some("AssertionError: 1 == 2"))).is_none());
        let piece = run(&mut s, test_line("t/test_a.py::test_x", "passed", None)).unwrap();
        let r = &piece.results[0];
        assert_eq!((r.outcome, r.reason), (Outcome::Flaky, None));
        assert_eq!(
            r.message.as_deref(),
            Some("flaky: passed after 1 failed attempt(s); first: AssertionError: 1 == 2")
        );
        assert_eq!(s.counts.get("passed"), Some(&2));
    }

    #[test]
    fn a_crash_a_timeout_and_a_collection_error_are_recorded_against_their_test_or_file() {
        let mut s = Stream::new(Framework::Numpy, Target::cpu(), GroupBy::Auto);
        assert!(s.unfinished(&TestEnding::Crashed { signal: Some(6), exit_code: None }).is_none());
        s.in_flight = Some("t/test_b.py::test_abort".into());
        let piece = s.unfinished(&TestEnding::Crashed { signal: Some(6), exit_code: None }).unwrap();
        let r = &piece.results[0];
        assert_eq!(
            (r.case_key.as_str(), r.outcome, r.reason),
            ("t/test_b.py::test_abort", Outcome::Crash, Some(Reason::Crash))
        );
        assert_eq!(r.message.as_deref(), Some("pytest killed by SIGABRT (6) while this test ran"));
        s.in_flight = Some("t/test_b.py::test_slow".into());
        let r = s.unfinished(&TestEnding::TimedOut(3.0)).unwrap().results.remove(0);
        assert_eq!((r.outcome, r.reason), (Outcome::Timeout, Some(Reason::Timeout)));
        let piece = s.collect_error("t/test_c.py", "ModuleNotFoundError: No module named 'nope'", Some("E ..."));
        let r = &piece.results[0];
        assert_eq!(r.case_key, "t/test_c.py::<collection>");
        assert_eq!((r.outcome, r.reason), (Outcome::Fail, Some(Reason::HarnessError)));
        assert_eq!(r.message.as_deref(), Some("collection error: ModuleNotFoundError: No module named 'nope'"));
        assert_eq!(piece.functions[0].name, "c");
    }

    #[test]
    fn a_suite_that_never_touched_the_device_is_flagged() {
        let mut s = Stream::new(Framework::Torch, "cuda:0".parse().unwrap(), GroupBy::Test);
        assert_eq!(s.device_note(), None, "nothing seen, nothing said");
        run(&mut s, test_line("t/test_a.py::test_a", "passed", None));
        let note = s.device_note().unwrap();
        assert!(
            note.starts_with("device not used: the tests' tensors were never seen on cuda:0, only on cpu (1 tests)"),
            "{note}"
        );
        s.devices_seen.insert("cuda:0".into(), 1);
        assert_eq!(s.device_note(), None);
    }

    #[test]
    fn bad_lines_are_refused_with_their_text() {
        assert!(parse("{\"type\": \"hello\", \"v\": 1}").is_ok());
        let e = parse("{\"type\": \"exploded\"}").unwrap_err();
        assert!(e.starts_with("not a message of mlport's pytest plugin") && e.contains("exploded"), "{e}");
    }
}
