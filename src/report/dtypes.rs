//! The dtype matrix (`mlport report --dtypes`): per function × device, which of the swept
//! dtypes pass, fail (with the reason) or give a wrong result; then every case that did not
//! pass, with its result id for `mlport repro`. Rendered as a table, Markdown, versioned JSON
//! (`{"format": "mlport.dtypes", "version": 1}`) or CSV.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Format;
use super::grid::Grid;
use crate::model::{DTYPES, Device, Framework, Outcome, Reason};
use crate::store::ResultRow;

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.dtypes";
/// Its version; bumped on any incompatible change.
pub const JSON_VERSION: u32 = 1;

/// The outcomes of one function's cases at one dtype on one device.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cell {
    pub passed: usize,
    /// Ran but disagreed with a reference (`wrong_result`).
    pub wrong: usize,
    /// Failed (raised, timed out, crashed), by reason.
    pub failed: BTreeMap<Reason, usize>,
    pub skipped: usize,
}

impl Cell {
    /// The cell's marks: `✓` when a case passed, `W` for a wrong result, then one letter per
    /// failure reason ([`reason_mark`]); `s` when every case was skipped. `✓D` means the cases
    /// at this dtype differ: some pass, some are dtype_unsupported.
    pub fn marks(&self) -> String {
        let mut s = String::new();
        if self.passed > 0 {
            s.push('✓');
        }
        if self.wrong > 0 {
            s.push('W');
        }
        for r in self.failed.keys() {
            s.push(reason_mark(*r));
        }
        if s.is_empty() && self.skipped > 0 {
            s.push('s');
        }
        s
    }
}

/// One letter per failure reason, for the matrix's cells.
pub fn reason_mark(r: Reason) -> char {
    match r {
        Reason::NotImplemented => 'N',
        Reason::DtypeUnsupported => 'D',
        Reason::WrongResult => 'W',
        Reason::OutOfMemory => 'M',
        Reason::Timeout => 'T',
        Reason::Crash => 'C',
        Reason::SilentFallback => 'F',
        Reason::CompileError => 'X',
        Reason::Recompiles => 'R',
        Reason::ApiMissing => 'A',
        Reason::HarnessError => 'H',
        Reason::Other => 'O',
    }
}

/// The legend printed under the matrix.
pub fn legend() -> String {
    let reasons: Vec<String> = Reason::ALL
        .iter()
        .filter(|r| **r != Reason::WrongResult)
        .map(|r| format!("{} {}", reason_mark(*r), r))
        .collect();
    format!(
        "✓ passed · W wrong_result (ran, disagreed with its reference beyond tolerance) · {} · s skipped · \
         (blank) not in the sweep. Several marks: the function's cases at that dtype differ.",
        reasons.join(" · ")
    )
}

/// One function on one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatrixRow {
    pub framework: Framework,
    pub function: String,
    pub device: Device,
    /// By dtype name; dtypes the function does not sweep are absent.
    pub cells: BTreeMap<String, Cell>,
}

/// A case at one dtype on one device that did not pass.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    /// The result's id: `mlport repro ID` writes a script that reproduces it.
    pub result_id: i64,
    pub framework: Framework,
    pub function: String,
    pub device: Device,
    pub dtype: String,
    pub case_id: String,
    pub outcome: Outcome,
    pub reason: Option<Reason>,
    /// The first line of the error or disagreement.
    pub message: String,
}

/// The matrix of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DtypeMatrix {
    pub format: &'static str,
    pub version: u32,
    pub run: i64,
    /// The dtypes of the columns, in [`DTYPES`] order: those swept by any row.
    pub dtypes: Vec<String>,
    /// In planned function order, then device.
    pub rows: Vec<MatrixRow>,
    pub problems: Vec<Problem>,
}

/// Builds the matrix from a run's results (planned order). `keep` selects functions.
pub fn build(run: i64, results: &[ResultRow], keep: &dyn Fn(&ResultRow) -> bool) -> DtypeMatrix {
    let mut rows: Vec<MatrixRow> = Vec::new();
    let mut index: BTreeMap<(Framework, String, Device), usize> = BTreeMap::new();
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
        let cell = rows[i].cells.entry(r.case.dtype.clone()).or_default();
        match r.result.outcome {
            Outcome::Pass => cell.passed += 1,
            Outcome::Skip => cell.skipped += 1,
            Outcome::WrongResult => cell.wrong += 1,
            Outcome::Fail | Outcome::Timeout | Outcome::Crash => {
                *cell.failed.entry(r.result.reason.unwrap_or(Reason::Other)).or_default() += 1
            }
        }
        if !matches!(r.result.outcome, Outcome::Pass | Outcome::Skip) {
            problems.push(Problem {
                result_id: r.id,
                framework: r.function.framework,
                function: r.function.name.clone(),
                device: r.result.device.clone(),
                dtype: r.case.dtype.clone(),
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
    let dtypes =
        DTYPES.iter().filter(|d| rows.iter().any(|r| r.cells.contains_key(**d))).map(|d| d.to_string()).collect();
    DtypeMatrix { format: JSON_FORMAT, version: JSON_VERSION, run, dtypes, rows, problems }
}

fn first_line(error_type: Option<&str>, message: Option<&str>) -> String {
    let line = message.and_then(|m| m.lines().map(str::trim).find(|l| !l.is_empty())).unwrap_or("");
    let line: String = if line.chars().count() > 200 {
        format!("{}…", line.chars().take(200).collect::<String>())
    } else {
        line.into()
    };
    match error_type {
        Some(t) => format!("{}: {line}", t.rsplit('.').next().unwrap_or(t)),
        None => line,
    }
}

fn grid(m: &DtypeMatrix) -> Grid {
    let mut columns = vec!["function".to_string(), "device".to_string()];
    columns.extend(m.dtypes.iter().cloned());
    let rows = m
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.function.clone(), r.device.to_string()];
            cells.extend(m.dtypes.iter().map(|d| r.cells.get(d).map_or_else(String::new, Cell::marks)));
            cells
        })
        .collect();
    Grid { columns, right: Vec::new(), rows }
}

fn problem_line(p: &Problem) -> String {
    let what = match (p.outcome, p.reason) {
        (Outcome::WrongResult, _) | (_, None) => p.outcome.to_string(),
        (_, Some(r)) => r.to_string(),
    };
    format!("#{} {} on {} at {} [{}]: {what} — {}", p.result_id, p.function, p.device, p.dtype, p.case_id, p.message)
}

/// Renders the matrix, its legend and the list of cases that did not pass. CSV is the matrix
/// only (marks as in the table); JSON holds everything with counts per cell.
pub fn render(m: &DtypeMatrix, format: Format) -> String {
    let g = grid(m);
    match format {
        Format::Json => serde_json::to_string_pretty(m).expect("serialisable") + "\n",
        Format::Csv => g.csv(),
        Format::Table => {
            let mut out = format!("Dtype matrix of run {}\n{}{}\n", m.run, g.table(), legend());
            if !m.problems.is_empty() {
                out.push_str("\nCases that did not pass (`mlport repro ID` reproduces one):\n");
                for p in &m.problems {
                    out.push_str(&format!("  {}\n", problem_line(p)));
                }
            }
            out
        }
        Format::Markdown => {
            let mut out = format!(
                "# Dtype matrix of run {}\n\n{}\n{}\n",
                m.run,
                g.markdown(),
                super::markdown::escape(&legend())
            );
            if !m.problems.is_empty() {
                out.push_str("\nCases that did not pass (`mlport repro ID` reproduces one):\n\n");
                for p in &m.problems {
                    out.push_str(&format!("- {}\n", super::markdown::escape(&problem_line(p))));
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::tests::row;

    /// torch.a: float16 wrong, float32 pass, bfloat16 one case unsupported and one passing;
    /// jax.a: float32 pass on cpu, float32 not implemented on tpu:0.
    fn rows() -> Vec<ResultRow> {
        let at = |mut r: ResultRow, dtype: &str, id: i64, message: Option<&str>| {
            r.case.dtype = dtype.into();
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
            at(row(Framework::Jax, "a", 1, "cpu", Outcome::Pass, None, &[10]), "float32", 5, None),
            at(
                row(Framework::Jax, "a", 1, "tpu:0", Outcome::Fail, Some(Reason::NotImplemented), &[]),
                "float32",
                6,
                Some("no lowering"),
            ),
        ]
    }

    #[test]
    fn cells_mark_pass_wrong_and_reasons() {
        let m = build(3, &rows(), &|_| true);
        assert_eq!(m.dtypes, ["float16", "bfloat16", "float32"], "DTYPES order, swept ones only");
        let torch = &m.rows[0];
        assert_eq!(torch.cells["float16"].marks(), "W");
        assert_eq!(torch.cells["bfloat16"].marks(), "✓D");
        assert_eq!(torch.cells["float32"].marks(), "✓");
        assert_eq!(m.problems.iter().map(|p| p.result_id).collect::<Vec<_>>(), [1, 3, 6]);
        let only_jax = build(3, &rows(), &|r| r.function.framework == Framework::Jax);
        assert_eq!(only_jax.rows.len(), 2);
        assert_eq!(only_jax.dtypes, ["float32"]);
    }

    #[test]
    fn snapshots() {
        let m = build(3, &rows(), &|_| true);
        insta::assert_snapshot!("dtypes_table", render(&m, Format::Table));
        insta::assert_snapshot!("dtypes_markdown", render(&m, Format::Markdown));
        insta::assert_snapshot!("dtypes_csv", render(&m, Format::Csv));
        insta::assert_snapshot!("dtypes_json", render(&m, Format::Json));
    }
}
