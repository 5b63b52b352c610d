//! Turns one run of a pytest suite on one device — a pytest-json-report, timing files of
//! repeated sessions, or both — into an mlport run: a test file is a function, a test is a
//! case, and how each test ended becomes an outcome in [`crate::outcome::imported`] (a
//! failure's crash message goes through the failure taxonomy of live runs).
//!
//! Reference copies: PyTorch's device-generic tests are instantiated once per device type
//! (`TestFooCPU::test_x_cpu_float32` beside `TestFooXLA::test_x_xla_float32`), so a device
//! run also holds each test's CPU copy. A test whose class ends in `CPU` and whose name
//! carries the `_cpu` token is recorded on the reference device (cpu) as the same case as its
//! device twin; the report's attribution rule then excuses a device failure whose CPU copy
//! failed too. Device tokens per device: cpu `CPU`/`_cpu`, cuda `CUDA`/`_cuda`, tpu
//! `XLA`/`_xla` (torch_xla), mps `MPS`/`_mps`, xpu `XPU`/`_xpu`; the token is the last one
//! in the name, followed by nothing or by dtype parameters (`_float32`).
//!
//! Case keys: `<file>::<Class>::<test>` from a report (class and name with the device token
//! replaced by `{device}`), `<file>::<test>` for tests known only from timing files (whose
//! keys have no class). The case id is the normalised test name, so runs from different
//! sources match case by case in slowdown analyses.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::group::{self, GroupBy};
use super::pytest_json::{PytestReport, PytestTest, TestOutcome, skip_reason};
use super::timings::{self, Merged, TimingEntry, TimingFile};
use crate::model::{CaseResult, CaseRow, DeviceInfo, FunctionRow, RunData, RunInfo, RunOrigin};
use crate::model::{Framework, ImportedSpec, Spec, Target};
use crate::outcome::{self, TestEnding, TestFailure};

/// The placeholder that replaces a device token in normalised test names.
pub const DEVICE_TOKEN: &str = "{device}";

/// Gives the function a test file stands for, from the file's stem without its `test_`
/// prefix or `_test` suffix (`Adamax_test.py` → `Adamax`) and the file path.
pub type Namer<'a> = &'a dyn Fn(&str, &str) -> FunctionRow;

/// One run of a suite on one device, as the importer sees it.
pub struct Suite<'a> {
    /// The framework the suite tests.
    pub framework: Framework,
    /// The device the suite ran on.
    pub device: Target,
    /// The session's report; `None` for a run known only from timing files.
    pub report: Option<&'a PytestReport>,
    /// Timing files of the session(s), one per repeat, in order.
    pub timings: &'a [TimingFile],
    /// Names each test file's function.
    pub namer: Namer<'a>,
    /// Phrases of a failure's crash line (`Type: message`) that mark a bug of the suite's own
    /// harness, not of the framework (the paper's `partial_timed()` timer bug): such failures
    /// are `harness_error` ([`crate::outcome::imported`]).
    pub harness_bugs: &'a [&'a str],
    /// How report tests are grouped into functions ([`GroupBy::File`] for the paper).
    pub group_by: &'a GroupBy,
}

/// Which device a test ran for within the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Role {
    Device,
    Reference,
}

/// A test's place in the run: its case and the device its result belongs to.
struct Placed {
    key: String,
    case_id: String,
    file: String,
    role: Role,
    /// The function under `--group-by` (none: the file's).
    group: Option<String>,
    /// The dtype the test's parametrization names.
    dtype: Option<crate::model::Dtype>,
}

/// The class-name suffix and lowercase name token PyTorch's device-type tests use for `device`.
pub fn device_suffix(device: &Target) -> &'static str {
    match device.as_str().split(':').next().unwrap_or("") {
        "cuda" => "CUDA",
        "tpu" => "XLA",
        "mps" => "MPS",
        "xpu" => "XPU",
        _ => "CPU",
    }
}

/// `name` with its last `_<token>` (followed by nothing or `_...`) replaced by
/// `_{device}`; `None` when the token is absent.
pub fn normalise_name(name: &str, token: &str) -> Option<String> {
    let needle = format!("_{token}");
    let mut search = name.len();
    while let Some(i) = name[..search].rfind(&needle) {
        let end = i + needle.len();
        if end == name.len() || name[end..].starts_with('_') || name[end..].starts_with('[') {
            return Some(format!("{}_{DEVICE_TOKEN}{}", &name[..i], &name[end..]));
        }
        search = i;
    }
    None
}

/// The stem naming a test file's function: `src/x/Adamax_test.py` → `Adamax`,
/// `tests/test_matmul.py` → `matmul`.
pub fn function_stem(file: &str) -> &str {
    let base = file.rsplit('/').next().unwrap_or(file);
    let stem = base.strip_suffix(".py").unwrap_or(base);
    stem.strip_suffix("_test").or_else(|| stem.strip_prefix("test_")).filter(|s| !s.is_empty()).unwrap_or(stem)
}

fn basename(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

impl Suite<'_> {
    fn tokens(&self) -> Option<(&'static str, String)> {
        let suffix = device_suffix(&self.device);
        (suffix != "CPU").then(|| (suffix, suffix.to_ascii_lowercase()))
    }

    /// Places a report test: a CPU copy, a device copy (both normalised) or a plain test.
    fn place_test(&self, t: &PytestTest) -> Placed {
        let mut placed = self.place_test_key(t);
        placed.group = group::function_of(self.group_by, t);
        placed.dtype = group::dtype_of(&t.nodeid);
        placed
    }

    fn place_test_key(&self, t: &PytestTest) -> Placed {
        let file = t.file().to_string();
        let name = t.name();
        let class = t.class();
        let plain = || {
            let key = match class {
                Some(c) => format!("{file}::{c}::{name}"),
                None => format!("{file}::{name}"),
            };
            Placed { key, case_id: name.to_string(), file: file.clone(), role: Role::Device, group: None, dtype: None }
        };
        let Some((suffix, token)) = self.tokens() else { return plain() };
        let Some(class) = class else { return plain() };
        for (sfx, tok, role) in [("CPU", "cpu", Role::Reference), (suffix, token.as_str(), Role::Device)] {
            if let (Some(base), Some(norm)) =
                (class.strip_suffix(sfx).filter(|b| !b.is_empty()), normalise_name(name, tok))
            {
                return Placed {
                    key: format!("{file}::{base}::{norm}"),
                    case_id: norm,
                    file: file.clone(),
                    role,
                    group: None,
                    dtype: None,
                };
            }
        }
        plain()
    }

    /// Places tests known only by timing key (no class): a `_cpu` test is the reference copy
    /// when the same file has its device twin, and that device twin is normalised; a test
    /// without a twin keeps its name (JAX's `test_xla_computation` is no device copy).
    fn place_keys<'e>(&self, entries: &[&'e TimingEntry]) -> Vec<(&'e TimingEntry, Placed)> {
        let normalised = |token: &str| -> HashSet<(&str, String)> {
            entries.iter().filter_map(|e| normalise_name(e.test(), token).map(|n| (e.file(), n))).collect()
        };
        let (twins, cpu_twins) = match self.tokens() {
            Some((_, token)) => (normalised(&token), normalised("cpu")),
            None => (HashSet::new(), HashSet::new()),
        };
        entries
            .iter()
            .map(|e| {
                let (file, name) = (e.file().to_string(), e.test());
                let mut placed = Placed {
                    key: format!("{file}::{name}"),
                    case_id: name.to_string(),
                    file: file.clone(),
                    role: Role::Device,
                    group: None,
                    dtype: None,
                };
                if let Some((_, token)) = self.tokens() {
                    if let Some(norm) = normalise_name(name, "cpu").filter(|n| twins.contains(&(e.file(), n.clone()))) {
                        placed = Placed {
                            key: format!("{file}::{norm}"),
                            case_id: norm,
                            file,
                            role: Role::Reference,
                            group: None,
                            dtype: None,
                        };
                    } else if let Some(norm) =
                        normalise_name(name, &token).filter(|n| cpu_twins.contains(&(e.file(), n.clone())))
                    {
                        placed = Placed {
                            key: format!("{file}::{norm}"),
                            case_id: norm,
                            file,
                            role: Role::Device,
                            group: None,
                            dtype: None,
                        };
                    }
                }
                (*e, placed)
            })
            .collect()
    }

    fn role_device(&self, role: Role) -> Target {
        match role {
            Role::Device => self.device.clone(),
            Role::Reference => Target::cpu(),
        }
    }

    /// The failure of a failed (or errored) test: its crash line, and the stage and longrepr it
    /// came from.
    fn failure(&self, t: &PytestTest) -> Failure {
        let stage = t.failed_stage().or_else(|| t.setup.as_ref().map(|s| ("setup", s)));
        let (stage_name, crash, longrepr) = match stage {
            Some((n, s)) => (n, s.crash.as_ref().map(|c| c.message.clone()), s.longrepr_text()),
            None => ("call", None, None),
        };
        let text = crash
            .or_else(|| longrepr.as_deref().and_then(last_error_line))
            .unwrap_or_else(|| format!("pytest reported `{}` without a message", outcome_word(t.outcome)));
        let (error_type, message) = split_exception(&text);
        let causes = longrepr.as_deref().map(super::causes::causes).unwrap_or_default();
        Failure { text, error_type, message, traceback: longrepr, stage: stage_name, causes }
    }

    /// Builds the run: functions and cases in the report's order (then timing-only tests in
    /// timing-file order), one result per (case, device), the devices seen, and notes.
    pub fn convert(&self, info: RunInfo, mut origin: RunOrigin) -> RunData {
        let finished_at = info.started_at.clone();
        // Every session's entry per timing key, sessions in order.
        let mut by_key: HashMap<&str, Vec<&TimingEntry>> = HashMap::new();
        let mut key_order: Vec<&TimingEntry> = Vec::new();
        for f in self.timings {
            for e in &f.entries {
                let v = by_key.entry(e.key.as_str()).or_default();
                if v.is_empty() {
                    key_order.push(e);
                }
                v.push(e);
            }
        }

        let mut b = Builder::default();
        let mut used_keys: HashSet<String> = HashSet::new();
        if let Some(report) = self.report {
            // A timing key belongs to the last test with that file and name: the timing file
            // kept the last one when two classes share a test name.
            let mut owner: HashMap<String, usize> = HashMap::new();
            for (i, t) in report.tests.iter().enumerate().filter(|(_, t)| t.outcome != TestOutcome::Rerun) {
                owner.insert(format!("{}:{}", basename(t.file()), t.name()), i);
            }
            let attempts = report.tests.iter().filter(|t| t.outcome != TestOutcome::Rerun).count();
            let collided = attempts - owner.len();
            // pytest-rerunfailures: failed attempts (`rerun`) precede the test's final entry.
            let mut reruns: HashMap<&str, Rerun> = HashMap::new();
            for (i, t) in report.tests.iter().enumerate() {
                if t.outcome == TestOutcome::Rerun {
                    let r = reruns.entry(t.nodeid.as_str()).or_default();
                    r.count += 1;
                    if r.first.is_none() {
                        r.first = Some(self.failure(t).text);
                    }
                    continue;
                }
                let rerun = reruns.remove(t.nodeid.as_str());
                let placed = self.place_test(t);
                let tkey = format!("{}:{}", basename(t.file()), t.name());
                let merged = if owner.get(&tkey) == Some(&i) {
                    used_keys.insert(tkey.clone());
                    by_key.get(tkey.as_str()).map(|v| timings::merge(v)).unwrap_or_default()
                } else {
                    Merged::default()
                };
                let mut r = self.result_of(t, &placed, merged, &finished_at, rerun.as_ref());
                r.case_key = placed.key.clone();
                let spec = ImportedSpec {
                    nodeid: Some(t.nodeid.clone()),
                    report_index: (placed.role == Role::Device).then_some(i as u64),
                    ..Default::default()
                };
                b.add(self, &placed, spec, r);
            }
            if collided > 0 && !self.timings.is_empty() {
                origin.notes.push(format!(
                    "{collided} tests share a file and test name with another class's test; the timing file kept \
                     one entry per name, attributed to the last of them"
                ));
            }
            if let Some(note) = summary_disagreement(report) {
                origin.notes.push(note);
            }
        }
        let unmatched: Vec<&TimingEntry> = key_order.into_iter().filter(|e| !used_keys.contains(&e.key)).collect();
        if !unmatched.is_empty() {
            let why = if self.report.is_some() {
                "timed, but absent from the pytest report: outcome unknown"
            } else {
                "no pytest report for this run: outcome unknown (timings only)"
            };
            if self.report.is_some() {
                origin.notes.push(format!(
                    "{} timed tests are absent from the pytest report (outcome unknown, timings kept)",
                    unmatched.len()
                ));
            }
            for (e, placed) in self.place_keys(&unmatched) {
                let merged = timings::merge(&by_key[e.key.as_str()]);
                let unknown = outcome::imported(self.framework, &TestEnding::Unknown(why));
                let r = CaseResult {
                    case_key: placed.key.clone(),
                    device: self.role_device(placed.role),
                    outcome: unknown.outcome,
                    reason: unknown.reason,
                    error_type: None,
                    message: unknown.message,
                    traceback: None,
                    phase: None,
                    signal: None,
                    stderr_tail: None,
                    wall_ms: merged.test_time_s.map_or(0.0, |s| s * 1e3),
                    first_call_ns: merged.first_call_ns,
                    samples_ns: merged.samples_ns,
                    session_first_calls_ns: merged.session_first_calls_ns,
                    block_sizes: Vec::new(),
                    compiles: None,
                    graph_breaks: None,
                    steady_stop: None,
                    runqueue_wait_ns: None,
                    steady_wall_ns: None,
                    measures: None,
                    outputs: serde_json::Value::Null,
                    finished_at: finished_at.clone(),
                };
                b.add(self, &placed, ImportedSpec { timing_key: Some(e.key.clone()), ..Default::default() }, r);
            }
        }
        if b.replaced > 0 {
            origin.notes.push(format!("{} tests appear twice in the report; the later one is kept", b.replaced));
        }
        let mut devices = vec![DeviceInfo {
            framework: self.framework,
            device: self.device.clone(),
            available: true,
            detail: String::new(),
        }];
        if b.results.keys().any(|(_, d)| *d != self.device) {
            devices.insert(
                0,
                DeviceInfo {
                    framework: self.framework,
                    device: Target::cpu(),
                    available: true,
                    detail: "reference copies of the tests".into(),
                },
            );
        }
        let results = b.order.iter().filter_map(|k| b.results.remove(k)).collect();
        RunData { uid: None, info, origin, functions: b.functions, cases: b.cases, devices, results }
    }

    fn result_of(
        &self,
        t: &PytestTest,
        placed: &Placed,
        merged: Merged,
        finished_at: &str,
        rerun: Option<&Rerun>,
    ) -> CaseResult {
        let wall_ms = merged.test_time_s.or_else(|| t.call.as_ref().and_then(|c| c.duration)).map_or(0.0, |s| s * 1e3);
        let skip_why = t.skipped_stage().and_then(|s| s.longrepr_text()).map(|l| skip_reason(&l));
        let failure = matches!(t.outcome, TestOutcome::Failed | TestOutcome::Error).then(|| self.failure(t));
        let ending = match (&failure, t.outcome) {
            (Some(f), _) => TestEnding::Failed(TestFailure {
                text: &f.text,
                error_type: f.error_type.as_deref(),
                message: &f.message,
                stage: f.stage,
                harness_bugs: self.harness_bugs,
                causes: &f.causes,
            }),
            (None, TestOutcome::Passed) if let Some(r) = rerun => {
                TestEnding::Flaky { reruns: r.count, first: r.first.as_deref() }
            }
            (None, TestOutcome::Xfailed) => TestEnding::ExpectedFailure,
            (None, TestOutcome::Skipped) => TestEnding::Skipped(skip_why.as_deref()),
            (None, _) => TestEnding::Passed,
        };
        let mut r = outcome::imported(self.framework, &ending).into_result(&placed.key, self.role_device(placed.role));
        r.first_call_ns = merged.first_call_ns;
        r.samples_ns = merged.samples_ns;
        r.session_first_calls_ns = merged.session_first_calls_ns;
        r.wall_ms = wall_ms;
        r.finished_at = finished_at.to_string();
        if let Some(f) = failure {
            r.error_type = f.error_type;
            r.traceback = f.traceback;
            r.phase = Some(f.stage.to_string());
        }
        r
    }
}

/// The failed attempts pytest-rerunfailures made before a test's final entry.
#[derive(Default)]
struct Rerun {
    count: usize,
    first: Option<String>,
}

struct Failure {
    text: String,
    error_type: Option<String>,
    message: String,
    traceback: Option<String>,
    stage: &'static str,
    causes: Vec<String>,
}

/// Accumulates functions, cases and results in first-seen order.
#[derive(Default)]
struct Builder {
    functions: Vec<FunctionRow>,
    function_names: HashSet<String>,
    cases: Vec<CaseRow>,
    /// Each case's position in `cases`, by key.
    case_index: HashMap<String, usize>,
    results: HashMap<(String, Target), CaseResult>,
    order: Vec<(String, Target)>,
    replaced: usize,
}

impl Builder {
    fn add(&mut self, suite: &Suite<'_>, placed: &Placed, spec: ImportedSpec, result: CaseResult) {
        let stem = placed.group.as_deref().unwrap_or_else(|| function_stem(&placed.file));
        let function = (suite.namer)(stem, &placed.file);
        if self.function_names.insert(function.name.clone()) {
            self.functions.push(function.clone());
        }
        match self.case_index.get(&placed.key) {
            // The case's device test came after its CPU copy, which made the case: the device
            // test's place in the report is the one kept (`report_index`).
            Some(&i) => {
                if let (Spec::Imported(have), Some(at)) = (&mut self.cases[i].spec, spec.report_index) {
                    have.report_index = Some(at);
                }
            }
            None => {
                self.case_index.insert(placed.key.clone(), self.cases.len());
                self.cases.push(CaseRow {
                    key: placed.key.clone(),
                    framework: suite.framework,
                    function: function.name,
                    case_id: placed.case_id.clone(),
                    dtype: placed.dtype,
                    seed: 0,
                    spec: Spec::Imported(spec),
                });
            }
        }
        let k = (placed.key.clone(), result.device.clone());
        if self.results.insert(k.clone(), result).is_some() {
            self.replaced += 1;
        } else {
            self.order.push(k);
        }
    }
}

/// A note when the report's summary counts disagree with its own test list.
fn summary_disagreement(report: &PytestReport) -> Option<String> {
    let mut listed: BTreeMap<&str, u64> = BTreeMap::new();
    for t in &report.tests {
        *listed.entry(outcome_word(t.outcome)).or_default() += 1;
    }
    let mut diffs = Vec::new();
    for (word, n) in &report.summary {
        let Some(said) = n.as_u64() else { continue };
        let has = match word.as_str() {
            "total" => report.tests.len() as u64,
            "collected" | "deselected" => continue,
            w => listed.get(w).copied().unwrap_or(0),
        };
        if said != has {
            diffs.push(format!("{word} {said} (list: {has})"));
        }
    }
    (!diffs.is_empty())
        .then(|| format!("the report's summary disagrees with its test list — {}; the list is used", diffs.join(", ")))
}

fn outcome_word(o: TestOutcome) -> &'static str {
    o.as_str()
}

/// The last `E   ...` line of a longrepr (pytest's exception line), without the `E`.
fn last_error_line(longrepr: &str) -> Option<String> {
    longrepr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("E ").map(|rest| rest.trim().to_string()))
        .filter(|l| !l.is_empty())
        .or_else(|| longrepr.lines().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_string()))
}

/// Splits `pkg.Type: message` into its qualified type and message; a text whose prefix is
/// not a dotted identifier has no type.
pub fn split_exception(text: &str) -> (Option<String>, String) {
    if let Some((ty, msg)) = text.split_once(':') {
        let ident = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !ty.is_empty() && ty.split('.').all(ident) {
            return (Some(ty.to_string()), msg.trim_start().to_string());
        }
    }
    (None, text.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::import::{pytest_json, timings};
    use crate::model::{Outcome, Reason};

    #[test]
    fn device_tokens_are_the_last_ones() {
        assert_eq!(normalise_name("test_adamax_xla", "xla").as_deref(), Some("test_adamax_{device}"));
        assert_eq!(
            normalise_name("test_batchnorm_nhwc_cuda_cuda", "cuda").as_deref(),
            Some("test_batchnorm_nhwc_cuda_{device}")
        );
        assert_eq!(normalise_name("test_nhwc_cuda_cpu", "cuda").as_deref(), Some("test_nhwc_{device}_cpu"));
        assert_eq!(normalise_name("test_conv_cpu_float16", "cpu").as_deref(), Some("test_conv_{device}_float16"));
        assert_eq!(normalise_name("test_xlarge", "xla"), None);
        assert_eq!(normalise_name("test_x", "xla"), None);
        assert_eq!(function_stem("src/pytorch_tests_reduced/Adamax_test.py"), "Adamax");
        assert_eq!(function_stem("tests/test_matmul.py"), "matmul");
        assert_eq!(function_stem("conftest.py"), "conftest");
        assert_eq!(device_suffix(&"tpu:0".parse().unwrap()), "XLA");
    }

    #[test]
    fn exceptions_split_into_type_and_message() {
        assert_eq!(split_exception("RuntimeError: a: b"), (Some("RuntimeError".into()), "a: b".into()));
        assert_eq!(
            split_exception("torch.autograd.gradcheck.GradcheckError: Jacobian mismatch"),
            (Some("torch.autograd.gradcheck.GradcheckError".into()), "Jacobian mismatch".into())
        );
        assert_eq!(split_exception("assert 1 == 2"), (None, "assert 1 == 2".into()));
        assert_eq!(split_exception("AssertionError: "), (Some("AssertionError".into()), "".into()));
    }

    fn namer(stem: &str, _file: &str) -> FunctionRow {
        FunctionRow::new(Framework::Torch, &format!("torch.{stem}"))
    }

    const REPORT: &str = r#"{"created": 0, "summary": {"passed": 3, "failed": 4, "skipped": 1, "total": 9},
      "environment": {"Python": "3.8.10"}, "tests": [
      {"nodeid": "s/log1p_test.py::TestLogCPU::test_log1p_cpu_float32", "outcome": "passed", "call": {"duration": 0.5, "outcome": "passed"}},
      {"nodeid": "s/log1p_test.py::TestLogXLA::test_log1p_xla_float32", "outcome": "failed",
       "call": {"duration": 0.1, "outcome": "failed", "crash": {"message": "RuntimeError: Error while lowering: [] aten::isnan"}}},
      {"nodeid": "s/log1p_test.py::TestLogCPU::test_grad_cpu", "outcome": "failed",
       "call": {"outcome": "failed", "crash": {"message": "NameError: name 'stats' is not defined"}}},
      {"nodeid": "s/log1p_test.py::TestLogXLA::test_grad_xla", "outcome": "failed",
       "call": {"outcome": "failed", "crash": {"message": "NameError: name 'stats' is not defined"}}},
      {"nodeid": "s/sync_test.py::TestCuda::test_copy_streams", "outcome": "failed",
       "call": {"outcome": "failed", "crash": {"message": "RuntimeError: Found no NVIDIA driver on your system."}}},
      {"nodeid": "s/mm_test.py::TestMMXLA::test_mm_xla", "outcome": "failed",
       "call": {"outcome": "failed", "crash": {"message": "AssertionError: Tensor-likes are not close!"}}},
      {"nodeid": "s/mm_test.py::TestMMXLA::test_slow_xla", "outcome": "failed",
       "call": {"outcome": "failed", "crash": {"message": "Failed: Timeout >1020.0s"}}},
      {"nodeid": "s/mm_test.py::TestMMCPU::test_cuda_only_cpu", "outcome": "skipped",
       "setup": {"outcome": "skipped", "longrepr": "('/x/mm_test.py', 3, 'Skipped: Only runs on cuda')"}}
    ]}"#;

    const TIMINGS: &str = r#"{"log1p_test.py:test_log1p_cpu_float32": {"operations": [0.002, 0.000001, 0.000003], "test_time": 0.5},
      "log1p_test.py:test_log1p_xla_float32": {"operations": [0.9], "test_time": 1.5},
      "extra_test.py:test_e_cpu": {"operations": [0.1, 0.2], "test_time": 0.4},
      "extra_test.py:test_e_xla": {"operations": [0.1, 0.3], "test_time": 0.4}}"#;

    #[test]
    fn a_device_run_with_cpu_copies_becomes_one_run_with_a_reference() {
        let report = pytest_json::parse(Path::new("r.json"), REPORT.as_bytes()).unwrap();
        let t = timings::parse(Path::new("t.json"), TIMINGS.as_bytes()).unwrap();
        let suite = Suite {
            framework: Framework::Torch,
            device: "tpu:0".parse().unwrap(),
            report: Some(&report),
            timings: std::slice::from_ref(&t),
            namer: &namer,
            harness_bugs: &[],
            group_by: &GroupBy::File,
        };
        let run = suite.convert(crate::import::blank_info(Framework::Torch, "test"), RunOrigin::default());
        let names: Vec<&str> = run.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["torch.log1p", "torch.sync", "torch.mm", "torch.extra"]);
        let keys: Vec<&str> = run.cases.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "s/log1p_test.py::TestLog::test_log1p_{device}_float32",
                "s/log1p_test.py::TestLog::test_grad_{device}",
                "s/sync_test.py::TestCuda::test_copy_streams",
                "s/mm_test.py::TestMM::test_mm_{device}",
                "s/mm_test.py::TestMM::test_slow_{device}",
                "s/mm_test.py::TestMM::test_cuda_only_{device}",
                "extra_test.py::test_e_{device}",
            ]
        );
        assert_eq!(run.cases[0].case_id, "test_log1p_{device}_float32");
        // Each case keeps its device test's place in the report, not its CPU copy's.
        let at: Vec<Option<u64>> = run
            .cases
            .iter()
            .map(|c| match &c.spec {
                Spec::Imported(s) => s.report_index,
                Spec::Catalogue(_) => unreachable!(),
            })
            .collect();
        assert_eq!(at, [Some(1), Some(3), Some(4), Some(5), Some(6), None, None]);
        let got: Vec<(&str, &str, Outcome, Option<Reason>)> = run
            .results
            .iter()
            .map(|r| (r.case_key.rsplit("::").next().unwrap(), r.device.as_str(), r.outcome, r.reason))
            .collect();
        use Outcome::*;
        use Reason::*;
        assert_eq!(
            got,
            [
                ("test_log1p_{device}_float32", "cpu", Pass, None),
                ("test_log1p_{device}_float32", "tpu:0", Fail, Some(NotImplemented)),
                ("test_grad_{device}", "cpu", Fail, Some(Other)),
                ("test_grad_{device}", "tpu:0", Fail, Some(Other)),
                ("test_copy_streams", "tpu:0", Fail, Some(NotImplemented)),
                ("test_mm_{device}", "tpu:0", Fail, Some(Reason::WrongResult)),
                ("test_slow_{device}", "tpu:0", Outcome::Timeout, Some(Reason::Timeout)),
                ("test_cuda_only_{device}", "cpu", Skip, None),
                ("test_e_{device}", "cpu", Skip, None),
                ("test_e_{device}", "tpu:0", Skip, None),
            ]
        );
        let cpu = &run.results[0];
        assert_eq!(
            (cpu.first_call_ns, cpu.samples_ns.as_slice(), cpu.wall_ms),
            (Some(2_000_000), &[1_000, 3_000][..], 500.0)
        );
        let xla = &run.results[1];
        assert_eq!((xla.first_call_ns, xla.samples_ns.len()), (Some(900_000_000), 0));
        assert_eq!(xla.error_type.as_deref(), Some("RuntimeError"));
        assert_eq!(run.results[7].message.as_deref(), Some("Only runs on cuda"));
        assert_eq!(run.results[9].samples_ns, vec![300_000_000]);
        let devices: Vec<&str> = run.devices.iter().map(|d| d.device.as_str()).collect();
        assert_eq!(devices, ["cpu", "tpu:0"]);
        assert!(
            run.origin.notes.iter().any(|n| n.contains("summary disagrees") && n.contains("passed 3 (list: 1)")),
            "{:?}",
            run.origin.notes
        );
        assert!(run.origin.notes.iter().any(|n| n.starts_with("2 timed tests are absent")), "{:?}", run.origin.notes);
    }

    #[test]
    fn a_timings_only_run_pairs_cpu_copies_with_their_device_twins() {
        let t = timings::parse(
            Path::new("t.json"),
            br#"{"a_test.py:test_x_cpu": {"operations": [1e-3], "test_time": 1.0},
                 "a_test.py:test_x_cuda": {"operations": [1e-3, 2e-3], "test_time": 1.0},
                 "a_test.py:test_only_cpu": {"operations": [], "test_time": 1.0}}"#,
        )
        .unwrap();
        let suite = Suite {
            framework: Framework::Torch,
            device: "cuda:0".parse().unwrap(),
            report: None,
            timings: std::slice::from_ref(&t),
            namer: &namer,
            harness_bugs: &[],
            group_by: &GroupBy::File,
        };
        let run = suite.convert(crate::import::blank_info(Framework::Torch, "test"), RunOrigin::default());
        let got: Vec<(&str, &str)> = run.results.iter().map(|r| (r.case_key.as_str(), r.device.as_str())).collect();
        assert_eq!(
            got,
            [
                ("a_test.py::test_x_{device}", "cpu"),
                ("a_test.py::test_x_{device}", "cuda:0"),
                ("a_test.py::test_only_cpu", "cuda:0")
            ]
        );
        assert!(run.results.iter().all(|r| r.outcome == Outcome::Skip));
        assert!(run.results[0].message.as_deref().unwrap().contains("timings only"));
    }
}
