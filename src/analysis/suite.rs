//! Test suites' runs: the questions CI asks of one (`mlport pytest --fail-on`: which tests
//! count as failing under the report's rules, which of them passed in an earlier run), and the
//! same suite's runs on several frameworks or devices side by side (`report --suite A,B`),
//! tests matched by id whatever the framework.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;

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

/// One run's column of a side-by-side suite view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteColumn {
    /// The run's id.
    pub run: i64,
    /// Its label, else `run N`.
    pub name: String,
    /// The frameworks and devices of its results (`jax/cpu`).
    pub targets: Vec<String>,
    /// How many of its results ended each way (`pass`, `fail`, `flaky`, ...).
    pub outcomes: BTreeMap<String, usize>,
}

/// One test's results across the runs (`None` where a run lacks it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteRow {
    /// The test's id: its case key without device or framework tokens ([`test_id`]).
    pub test: String,
    /// Per run, in column order: `pass`, `fail (dtype_unsupported)`, ...
    pub cells: Vec<Option<String>>,
}

/// The same suite's runs side by side, tests matched by id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuiteTable {
    /// The runs, in the order asked.
    pub columns: Vec<SuiteColumn>,
    /// Every test any run has, in first-seen order.
    pub rows: Vec<SuiteRow>,
    /// How many tests every run has a result for.
    pub in_all: usize,
}

/// Framework names that suites put into test ids (`test_x[jax]`, `test_x_torch`).
const FRAMEWORK_TOKENS: [&str; 6] = ["numpy", "torch", "jax", "tensorflow", "tf", "pytorch"];

/// A test's id across frameworks and devices: its case key (device tokens are already
/// replaced by `{device}`) without framework tokens — a parametrization part that names a
/// framework (`[jax]`, `[float32-torch]` → `[float32]`) or a trailing `_jax` of the name.
pub fn test_id(case_key: &str) -> String {
    let (head, params) = match case_key.find('[') {
        Some(i) if case_key.ends_with(']') => (&case_key[..i], Some(&case_key[i + 1..case_key.len() - 1])),
        _ => (case_key, None),
    };
    let mut head = head.to_string();
    for t in FRAMEWORK_TOKENS {
        if let Some(h) = head.strip_suffix(&format!("_{t}")) {
            head = h.to_string();
            break;
        }
    }
    match params {
        Some(p) => {
            let kept: Vec<&str> =
                p.split('-').filter(|part| !FRAMEWORK_TOKENS.contains(&part.to_ascii_lowercase().as_str())).collect();
            if kept.is_empty() { head } else { format!("{head}[{}]", kept.join("-")) }
        }
        None => head,
    }
}

/// A result as a cell: its outcome, with its reason when that says more.
fn cell(r: &ResultRow) -> String {
    match r.result.reason {
        Some(reason) if reason.as_str() != r.result.outcome.as_str() => format!("{} ({reason})", r.result.outcome),
        _ => r.result.outcome.to_string(),
    }
}

/// Builds the side-by-side view of `runs` (each run's summary and results). A run's results on
/// several devices are one column per run; a test's cell is its result on the run's device
/// (the last one, when the run has reference copies on cpu too).
pub fn side_by_side(runs: &[(RunSummary, Vec<ResultRow>)]) -> SuiteTable {
    let mut order: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut cells: Vec<Vec<Option<String>>> = Vec::new();
    let mut columns = Vec::new();
    for (i, (run, results)) in runs.iter().enumerate() {
        let mut targets = BTreeSet::new();
        let mut outcomes = BTreeMap::new();
        for r in results {
            targets.insert(format!("{}/{}", r.function.framework, r.result.device));
            *outcomes.entry(r.result.outcome.to_string()).or_default() += 1;
            let id = test_id(&r.result.case_key);
            let row = *index.entry(id.clone()).or_insert_with(|| {
                order.push(id);
                cells.push(vec![None; runs.len()]);
                cells.len() - 1
            });
            cells[row][i] = Some(cell(r));
        }
        columns.push(SuiteColumn {
            run: run.id,
            name: run.origin.label.clone().unwrap_or_else(|| format!("run {}", run.id)),
            targets: targets.into_iter().collect(),
            outcomes,
        });
    }
    let in_all = cells.iter().filter(|c| c.iter().all(Option::is_some)).count();
    let rows = order.into_iter().zip(cells).map(|(test, cells)| SuiteRow { test, cells }).collect();
    SuiteTable { columns, rows, in_all }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_ids_lose_framework_tokens_only() {
        assert_eq!(test_id("a_test.py::T::test_x[float32-jax]"), "a_test.py::T::test_x[float32]");
        assert_eq!(test_id("a_test.py::T::test_x[torch]"), "a_test.py::T::test_x");
        assert_eq!(test_id("a_test.py::test_sum_tf"), "a_test.py::test_sum");
        assert_eq!(test_id("a_test.py::T::test_x_{device}_float32"), "a_test.py::T::test_x_{device}_float32");
        assert_eq!(test_id("a_test.py::test_x[a::b]"), "a_test.py::test_x[a::b]");
    }
}
