//! The dtype matrix (`mlport report --dtypes`): per function × device, which of the swept
//! dtypes pass, fail (with the reason) or give a wrong result; then every case that did not
//! pass, with its result id for `mlport repro` (rendered by [`crate::render::dtypes`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::agreement::FLOAT64;
use crate::model::{ComparisonRow, ResultRow, RunSource};
use crate::model::{Dtype, Framework, Outcome, Reason, Target, name_or_empty};

/// The outcomes of one function's cases at one dtype on one device.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cell {
    /// Cases that passed.
    pub passed: usize,
    /// Of them, those nothing compared ("ran, unchecked": no reference, or outputs that could
    /// not be compared); live runs only.
    pub unchecked: usize,
    /// Ran but disagreed with a reference in value (`wrong_result`, reason `wrong_result`).
    pub wrong: usize,
    /// Ran, but an output's dtype was not the expected one (`wrong_result`, reason
    /// `dtype_changed`): counted apart from `wrong` (JSON version 2).
    pub dtype_changed: usize,
    /// Failed (raised, timed out, crashed), by reason.
    pub failed: BTreeMap<Reason, usize>,
    /// Cases skipped.
    pub skipped: usize,
    /// Passing cases whose comparisons with the float64 reference say whether they were
    /// correctly rounded (elementwise rules, an output narrower than the reference).
    pub rounding_known: usize,
    /// Of them, those correctly rounded in every compared output (within 0.5 ULP of the float64
    /// reference): information, never a verdict.
    pub correctly_rounded: usize,
}

/// One function on one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixRow {
    /// The function's framework.
    pub framework: Framework,
    /// Fully qualified name.
    pub function: String,
    /// The target.
    pub device: Target,
    /// By dtype name (`""` for imported cases, which have none), the keys of the JSON
    /// document; dtypes the function does not sweep are absent.
    pub cells: BTreeMap<String, Cell>,
}

/// A case at one dtype on one device that did not pass.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    /// The result's id: `mlport repro ID` writes a script that reproduces it.
    pub result_id: i64,
    /// The function's framework.
    pub framework: Framework,
    /// Fully qualified name.
    pub function: String,
    /// The target.
    pub device: Target,
    /// The case's dtype (`None`, written `""`, for an imported case).
    #[serde(with = "crate::model::dtype_or_empty")]
    pub dtype: Option<Dtype>,
    /// The case's id within the function.
    pub case_id: String,
    /// What happened.
    pub outcome: Outcome,
    /// Why it failed, when it did.
    pub reason: Option<Reason>,
    /// The first line of the error or disagreement.
    pub message: String,
}

/// The matrix of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DtypeMatrix {
    /// The run's id.
    pub run: i64,
    /// The dtypes of the columns, in [`Dtype::ALL`] order: those swept by any row.
    pub dtypes: Vec<Dtype>,
    /// In planned function order, then device.
    pub rows: Vec<MatrixRow>,
    /// Every case that did not pass (nor was skipped), in result order.
    pub problems: Vec<Problem>,
}

/// Builds the matrix from a run's results (planned order) and comparisons (for correct
/// rounding). `keep` selects functions; `source` is the run's (imported tests are never
/// "unchecked").
pub fn build(
    run: i64,
    source: RunSource,
    results: &[ResultRow],
    comparisons: &[ComparisonRow],
    keep: &dyn Fn(&ResultRow) -> bool,
) -> DtypeMatrix {
    // Per result, correct rounding over its float64 comparisons: None when any is unknown.
    let mut rounding: std::collections::HashMap<(&str, &Target), Option<bool>> = Default::default();
    for c in comparisons.iter().filter(|c| c.against == FLOAT64) {
        let e = rounding.entry((c.case_key.as_str(), &c.device)).or_insert(Some(true));
        *e = match (*e, c.correctly_rounded()) {
            (Some(a), Some(b)) => Some(a && b),
            _ => None,
        };
    }
    let mut rows: Vec<MatrixRow> = Vec::new();
    let mut index: BTreeMap<(Framework, String, Target), usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for r in results.iter().filter(|r| keep(r)) {
        let key = (r.function.framework, r.function.name.clone(), r.result.device.clone());
        let i = *index.entry(key).or_insert_with(|| {
            rows.push(MatrixRow {
                framework: r.function.framework,
                function: r.function.name.clone(),
                device: r.result.device.clone(),
                cells: BTreeMap::new(),
            });
            rows.len() - 1
        });
        let cell = rows[i].cells.entry(name_or_empty(r.case.dtype).to_string()).or_default();
        match r.result.outcome {
            Outcome::Pass => {
                cell.passed += 1;
                cell.unchecked += usize::from(r.unchecked(source));
                if let Some(Some(rounded)) = rounding.get(&(r.case.key.as_str(), &r.result.device)) {
                    cell.rounding_known += 1;
                    cell.correctly_rounded += usize::from(*rounded);
                }
            }
            // A flaky test (passed and failed in one session) is never counted: with the skips.
            Outcome::Skip | Outcome::Flaky => cell.skipped += 1,
            // A silent dtype change is its own mark, apart from the values' disagreement.
            Outcome::WrongResult if r.result.reason == Some(Reason::DtypeChanged) => cell.dtype_changed += 1,
            Outcome::WrongResult => cell.wrong += 1,
            Outcome::Fail | Outcome::Timeout | Outcome::Crash => {
                *cell.failed.entry(r.result.reason.unwrap_or(Reason::Other)).or_default() += 1
            }
        }
        if !matches!(r.result.outcome, Outcome::Pass | Outcome::Skip | Outcome::Flaky) {
            problems.push(Problem {
                result_id: r.id,
                framework: r.function.framework,
                function: r.function.name.clone(),
                device: r.result.device.clone(),
                dtype: r.case.dtype,
                case_id: r.case.case_id.clone(),
                outcome: r.result.outcome,
                reason: r.result.reason,
                message: first_line(r.result.error_type.as_deref(), r.result.message.as_deref()),
            });
        }
    }
    // Rows of one function stay together whatever order devices came in.
    let order: BTreeMap<(Framework, String), usize> =
        rows.iter().enumerate().rev().map(|(i, r)| ((r.framework, r.function.clone()), i)).collect();
    rows.sort_by_key(|r| (order[&(r.framework, r.function.clone())], r.device.clone()));
    let dtypes = Dtype::ALL.into_iter().filter(|d| rows.iter().any(|r| r.cells.contains_key(d.as_str()))).collect();
    DtypeMatrix { run, dtypes, rows, problems }
}

/// The error type's last part and the message on one line, its head and tail when longer
/// than 200 characters ([`super::excerpt`]).
fn first_line(error_type: Option<&str>, message: Option<&str>) -> String {
    let line = super::excerpt(message.unwrap_or(""), 200);
    match error_type {
        Some(t) => format!("{}: {line}", t.rsplit('.').next().unwrap_or(t)),
        None => line,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::portability::tests::row;

    /// torch.a: float16 wrong, float32 pass, bfloat16 one case unsupported and one passing;
    /// jax.a: float32 pass on cpu, float32 not implemented on tpu:0, float16 a dtype change on cpu.
    pub(crate) fn rows() -> Vec<ResultRow> {
        let at = |mut r: ResultRow, dtype: &str, id: i64, message: Option<&str>| {
            r.case.dtype = Some(dtype.parse().unwrap());
            r.case.key = r.case.key.replace("float32", dtype);
            r.result.case_key = r.case.key.clone();
            r.id = id;
            r.result.message = message.map(str::to_string);
            r
        };
        vec![
            at(
                row(Framework::Torch, "a", 1, "cpu", Outcome::WrongResult, Some(Reason::WrongResult), &[]),
                "float16",
                1,
                Some("disagrees with numpy.a in float64 (output 0): 3 of 8 elements beyond rtol 1e-3"),
            ),
            at(row(Framework::Torch, "a", 1, "cpu", Outcome::Pass, None, &[10]), "float32", 2, None),
            at(
                row(Framework::Torch, "a", 1, "cpu", Outcome::Fail, Some(Reason::DtypeUnsupported), &[]),
                "bfloat16",
                3,
                Some("\"a_cpu\" not implemented for 'BFloat16'\nmore"),
            ),
            at(row(Framework::Torch, "a", 2, "cpu", Outcome::Pass, None, &[10]), "bfloat16", 4, None),
            // Nothing compared it: "ran, unchecked".
            ResultRow {
                compared: false,
                ..at(row(Framework::Jax, "a", 1, "cpu", Outcome::Pass, None, &[10]), "float32", 5, None)
            },
            at(
                row(Framework::Jax, "a", 1, "tpu:0", Outcome::Fail, Some(Reason::NotImplemented), &[]),
                "float32",
                6,
                Some("no lowering"),
            ),
            at(
                row(Framework::Jax, "a", 1, "cpu", Outcome::WrongResult, Some(Reason::DtypeChanged), &[10]),
                "float16",
                7,
                Some(
                    "dtype changed against numpy.a in float64 (output 0): all 8 elements within exact equality: max abs 0, max rel 0, 0 ULP (int32); dtype changed: int32, expected int64",
                ),
            ),
        ]
    }

    #[test]
    fn cells_count_pass_wrong_and_reasons() {
        let m = build(3, RunSource::Live, &rows(), &[], &|_| true);
        assert_eq!(m.dtypes, [Dtype::Float16, Dtype::Bfloat16, Dtype::Float32], "Dtype::ALL order, swept ones only");
        let torch = &m.rows[0];
        assert_eq!((torch.cells["float16"].wrong, torch.cells["float16"].passed), (1, 0));
        assert_eq!(torch.cells["bfloat16"].failed, BTreeMap::from([(Reason::DtypeUnsupported, 1)]));
        assert_eq!(torch.cells["bfloat16"].passed, 1);
        assert_eq!(m.problems.iter().map(|p| p.result_id).collect::<Vec<_>>(), [1, 3, 6, 7]);
        let jax = &m.rows[1];
        assert_eq!((jax.cells["float16"].dtype_changed, jax.cells["float16"].wrong), (1, 0), "apart from values");
        let only_jax = build(3, RunSource::Live, &rows(), &[], &|r| r.function.framework == Framework::Jax);
        assert_eq!(only_jax.rows.len(), 2);
        assert_eq!(only_jax.dtypes, [Dtype::Float16, Dtype::Float32]);
    }
}
