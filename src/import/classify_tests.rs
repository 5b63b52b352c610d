//! Classification of real pytest failures through the importer: exception groups and chains,
//! assertions on values and dtypes, the test framework's own errors, reruns.

use std::path::Path;

use super::pytest_json;
use super::suite::Suite;
use crate::model::{CaseResult, Framework, Outcome, Reason, RunData, RunOrigin};

fn run_of(json: &str) -> RunData {
    let report = pytest_json::parse(Path::new("r.json"), json.as_bytes()).unwrap();
    let namer = |stem: &str, file: &str| crate::import::stem_function(Framework::Numpy, stem, file);
    let suite = Suite {
        framework: Framework::Numpy,
        device: "cpu".parse().unwrap(),
        report: Some(&report),
        timings: &[],
        namer: &namer,
        harness_bugs: &[],
        group_by: &crate::import::group::GroupBy::File,
    };
    suite.convert(crate::import::blank_info(Framework::Numpy, "test"), RunOrigin::default())
}

fn result<'a>(run: &'a RunData, key_end: &str) -> &'a CaseResult {
    run.results.iter().find(|r| r.case_key.ends_with(key_end)).unwrap_or_else(|| panic!("no {key_end}"))
}

fn why(run: &RunData, key_end: &str) -> (Outcome, Option<Reason>) {
    let r = result(run, key_end);
    (r.outcome, r.reason)
}

/// A real report of `tests/fixtures/pytest-classify/test_grp.py` (pytest 8, numpy, Python
/// 3.12's ExceptionGroup).
#[test]
fn groups_chains_and_assertions_of_a_real_report() {
    let run = run_of(include_str!("../../tests/fixtures/pytest-classify/report.json"));
    // The group's own line is `other`; its members are dtype_unsupported and wrong_result.
    let (o, r) = why(&run, "test_group");
    assert_eq!(o, Outcome::Fail);
    assert_eq!(r, Some(Reason::DtypeUnsupported), "the most specific member wins");
    assert_eq!(
        result(&run, "test_group").message.as_deref(),
        Some("Hypothesis found 2 distinct failures. (2 sub-exceptions)")
    );
    assert_eq!(why(&run, "test_dtype[float16]"), (Outcome::Fail, Some(Reason::DtypeChanged)));
    assert_eq!(why(&run, "test_dtype[int64]"), (Outcome::Fail, Some(Reason::DtypeChanged)));
    assert_eq!(why(&run, "test_value"), (Outcome::Fail, Some(Reason::WrongResult)));
    // ValueError: inner / RuntimeError: outer wrapper — nothing specific in the chain.
    assert_eq!(why(&run, "test_chain"), (Outcome::Fail, Some(Reason::Other)));
}

const HAND: &str = r#"{"tests": [
 {"nodeid": "t.py::test_health", "outcome": "failed",
  "call": {"outcome": "failed", "crash": {"message": "hypothesis.errors.FailedHealthCheck: Data generation is extremely slow"}}},
 {"nodeid": "t.py::test_deadline", "outcome": "failed",
  "call": {"outcome": "failed", "crash": {"message": "hypothesis.errors.FlakyFailure: Hypothesis test_deadline(x=0) produces unreliable results: Falsified on the first call but did not on a subsequent one (1 sub-exception)"},
   "longrepr": "  | hypothesis.errors.FlakyFailure: unreliable (1 sub-exception)\n  +-+---------------- 1 ----------------\n    | hypothesis.errors.DeadlineExceeded: Test took 312.50ms, which exceeds the deadline of 200.00ms\n    +------------------------------------"}},
 {"nodeid": "t.py::test_fixture", "outcome": "error",
  "setup": {"outcome": "failed", "longrepr": "file /x/t.py, line 3\n  def test_fixture(nofix):\nE       fixture 'nofix' not found\n>       available fixtures: cache\n"}},
 {"nodeid": "t.py::test_rr[a::b]", "outcome": "rerun",
  "call": {"outcome": "failed", "crash": {"message": "AssertionError: assert 1 == 2"}}},
 {"nodeid": "t.py::test_rr[a::b]", "outcome": "rerun",
  "call": {"outcome": "failed", "crash": {"message": "AssertionError: assert 1 == 3"}}},
 {"nodeid": "t.py::test_rr[a::b]", "outcome": "passed", "call": {"outcome": "passed", "duration": 0.5}},
 {"nodeid": "t.py::test_still", "outcome": "rerun",
  "call": {"outcome": "failed", "crash": {"message": "TypeError: \"sum_cpu\" not implemented for 'UInt16'"}}},
 {"nodeid": "t.py::test_still", "outcome": "failed",
  "call": {"outcome": "failed", "crash": {"message": "AssertionError: assert torch.float32 == torch.bfloat16"}}},
 {"nodeid": "t.py::test_ut", "outcome": "failed",
  "call": {"outcome": "failed", "crash": {"message": "AssertionError: 'float32' != 'float16'"}}}
]}"#;

#[test]
fn framework_errors_are_harness_reruns_are_flaky() {
    let run = run_of(HAND);
    assert_eq!(why(&run, "test_health"), (Outcome::Fail, Some(Reason::HarnessError)));
    assert_eq!(why(&run, "test_deadline"), (Outcome::Flaky, None), "a deadline flake is flaky, not a failure");
    assert!(result(&run, "test_deadline").message.as_deref().unwrap().starts_with("flaky: "));
    assert_eq!(why(&run, "test_fixture"), (Outcome::Fail, Some(Reason::HarnessError)));
    // Two failed attempts then a pass: one case, flaky, never against the device.
    let rr: Vec<&CaseResult> = run.results.iter().filter(|r| r.case_key.contains("test_rr")).collect();
    assert_eq!(rr.len(), 1);
    assert_eq!((rr[0].outcome, rr[0].reason), (Outcome::Flaky, None));
    assert_eq!(
        rr[0].message.as_deref(),
        Some("flaky: passed after 2 failed attempt(s); first: AssertionError: assert 1 == 2")
    );
    assert_eq!(rr[0].case_key, "t.py::test_rr[a::b]", "a parametrize id with `::` is kept whole");
    assert_eq!(why(&run, "test_still"), (Outcome::Fail, Some(Reason::DtypeChanged)));
    assert_eq!(why(&run, "test_ut"), (Outcome::Fail, Some(Reason::DtypeChanged)));
    assert_eq!(run.results.len(), 6);
    assert!(run.origin.notes.is_empty(), "{:?}", run.origin.notes);
}
