//! Questions CI asks of a test suite's run (`mlport pytest --fail-on`): which tests count as
//! failing under the report's rules, and which of them passed in an earlier run.

use std::collections::HashSet;

use super::portability::{Counted, ReportOptions, counted};
use crate::model::{Outcome, ResultRow, RunSummary};

/// The case keys (with their device, `key on device`) of `results` that count as failures under
/// the portability report's default rules ([`counted`]): harness errors, flaky tests, skips and
/// failures excused by the reference copy never count. In the run's order.
pub fn counted_failures(run: &RunSummary, results: &[ResultRow]) -> Vec<String> {
    results
        .iter()
        .zip(counted(run, results, &ReportOptions::default()))
        .filter(|(_, c)| matches!(c, Counted::Fail(_)))
        .map(|(r, _)| format!("{} on {}", r.result.case_key, r.result.device))
        .collect()
}

/// Of `failing` (as [`counted_failures`] names them), those whose case passed on the same
/// device in `before` (an earlier run's results).
pub fn new_failures(before: &[ResultRow], failing: &[String]) -> Vec<String> {
    let passed: HashSet<String> = before
        .iter()
        .filter(|r| r.result.outcome == Outcome::Pass)
        .map(|r| format!("{} on {}", r.result.case_key, r.result.device))
        .collect();
    failing.iter().filter(|f| passed.contains(*f)).cloned().collect()
}
