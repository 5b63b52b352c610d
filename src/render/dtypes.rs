//! The dtype matrix ([`crate::analysis::dtypes`]) as a table, Markdown, versioned JSON
//! (`{"format": "mlport.dtypes", "version": 3}`: version 2 counts `dtype_changed` per cell,
//! version 3 `unchecked`) or CSV: one mark per cell, a legend, then
//! the cases that did not pass.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use super::Format;
use super::grid::Grid;
use super::json::versioned;
use super::markdown::escape;
use super::report::Report;
use crate::analysis::dtypes::{Cell, DtypeMatrix, Problem};
use crate::model::{Framework, Outcome, Reason};

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.dtypes";
/// Its version; bumped on any incompatible change.
/// Version 2 counts `dtype_changed` per cell; version 3 each cell's `unchecked`.
pub const JSON_VERSION: u32 = 3;

/// A cell's marks: `✓` when a case passed (`✓½` when every passing case whose rounding is
/// known was correctly rounded: within ½ ULP of the float64 reference; `✓?` when a passing
/// case ran unchecked, nothing to compare its answer with), `W` for a wrong result,
/// then one letter per failure reason ([`reason_mark`]; `Δ` a silent dtype change); `s` when every case was skipped. `✓D`
/// means the cases at this dtype differ: some pass, some are dtype_unsupported.
pub fn marks(cell: &Cell) -> String {
    let mut s = String::new();
    if cell.passed > 0 {
        s.push('✓');
        if cell.rounding_known > 0 && cell.correctly_rounded == cell.rounding_known {
            s.push('½');
        }
        if cell.unchecked > 0 {
            s.push('?');
        }
    }
    if cell.wrong > 0 {
        s.push('W');
    }
    if cell.dtype_changed > 0 {
        s.push(reason_mark(Reason::DtypeChanged));
    }
    for r in cell.failed.keys() {
        s.push(reason_mark(*r));
    }
    if s.is_empty() && cell.skipped > 0 {
        s.push('s');
    }
    s
}

/// One letter per failure reason, for the matrix's cells.
pub fn reason_mark(r: Reason) -> char {
    match r {
        Reason::NotImplemented => 'N',
        Reason::DtypeUnsupported => 'D',
        Reason::WrongResult => 'W',
        Reason::DtypeChanged => 'Δ',
        Reason::OutOfMemory => 'M',
        Reason::Timeout => 'T',
        Reason::Crash => 'C',
        Reason::SilentFallback => 'F',
        Reason::CompileError => 'X',
        Reason::ExportError => 'E',
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
        .filter(|r| !matches!(r, Reason::WrongResult | Reason::DtypeChanged))
        .map(|r| format!("{} {}", reason_mark(*r), r))
        .collect();
    format!(
        "✓ passed (✓½: correctly rounded, within ½ ULP of the float64 reference; information only; ✓?: a passing \
         case ran unchecked, with nothing to compare its answer with) · W wrong_result (ran, disagreed with its reference beyond tolerance) · Δ dtype_changed (ran, an output's dtype is not the expected one) · {} · s skipped · \
         (blank) not in the sweep. Several marks: the function's cases at that dtype differ.",
        reasons.join(" · ")
    )
}

/// The function names that rows of more than one framework share (`keras.ops.size` on
/// keras-jax, keras-torch and keras-tensorflow): shown with their framework.
fn shared_names(m: &DtypeMatrix) -> BTreeSet<&str> {
    let mut frameworks: BTreeMap<&str, BTreeSet<Framework>> = BTreeMap::new();
    for r in &m.rows {
        frameworks.entry(r.function.as_str()).or_default().insert(r.framework);
    }
    frameworks.into_iter().filter(|(_, f)| f.len() > 1).map(|(name, _)| name).collect()
}

/// `function`, or `function (framework)` when other frameworks' rows have the same name.
fn shown(function: &str, framework: Framework, shared: &BTreeSet<&str>) -> String {
    if shared.contains(function) { format!("{function} ({framework})") } else { function.to_string() }
}

fn grid(m: &DtypeMatrix, shared: &BTreeSet<&str>) -> Grid {
    let mut columns = vec!["function".to_string(), "device".to_string()];
    columns.extend(m.dtypes.iter().map(|d| d.to_string()));
    let mut g = Grid::new(columns);
    for r in &m.rows {
        let mut cells = vec![shown(&r.function, r.framework, shared), r.device.to_string()];
        cells.extend(m.dtypes.iter().map(|d| r.cells.get(d.as_str()).map_or_else(String::new, marks)));
        g.push(cells);
    }
    g
}

fn problem_line(p: &Problem, shared: &BTreeSet<&str>) -> String {
    let what = match (p.outcome, p.reason) {
        (Outcome::WrongResult, Some(Reason::DtypeChanged)) => Reason::DtypeChanged.to_string(),
        (Outcome::WrongResult, _) | (_, None) => p.outcome.to_string(),
        (_, Some(r)) => r.to_string(),
    };
    format!(
        "#{} {} on {} at {} [{}]: {what} — {}",
        p.result_id,
        shown(&p.function, p.framework, shared),
        p.device,
        crate::model::name_or_empty(p.dtype),
        p.case_id,
        p.message
    )
}

/// Renders the matrix, its legend and the list of cases that did not pass. CSV is the matrix
/// only (marks as in the table); JSON holds everything with counts per cell.
fn render(m: &DtypeMatrix, format: Format) -> String {
    let shared = shared_names(m);
    let g = grid(m, &shared);
    match format {
        Format::Json => versioned(JSON_FORMAT, JSON_VERSION, m),
        Format::Csv => g.csv(),
        Format::Table => {
            let mut out = format!("Dtype matrix of run {}\n{}\n{}\n", m.run, g.table(), legend());
            if !m.problems.is_empty() {
                out.push_str("\nCases that did not pass (`mlport repro ID` reproduces one):\n");
                for p in &m.problems {
                    out.push_str(&format!("  {}\n", problem_line(p, &shared)));
                }
            }
            out
        }
        Format::Markdown => {
            let mut out = format!("# Dtype matrix of run {}\n\n{}\n{}\n", m.run, g.markdown(), escape(&legend()));
            if !m.problems.is_empty() {
                out.push_str("\nCases that did not pass (`mlport repro ID` reproduces one):\n\n");
                for p in &m.problems {
                    out.push_str(&format!("- {}\n", escape(&problem_line(p, &shared))));
                }
            }
            out
        }
    }
}

/// The dtype matrix in every text format.
impl Report for DtypeMatrix {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::dtypes::MatrixRow;
    use crate::analysis::dtypes::build;
    use crate::analysis::dtypes::tests::rows;

    /// The float64 comparison of a result: correctly rounded or not.
    fn rounded(r: &crate::model::ResultRow, yes: bool) -> crate::model::ComparisonRow {
        let (rule, tol) =
            (crate::compare::Rule::AllClose, crate::compare::Tolerance::for_dtype(crate::model::Dtype::Float32));
        let mut c = crate::model::ComparisonRow::incomparable(
            &r.case.key,
            &r.result.device,
            &crate::agreement::FLOAT64,
            "numpy.a in float64",
            0,
            rule,
            tol,
        );
        c.detail = serde_json::json!({ "correctly_rounded": yes });
        c
    }

    /// torch.a at float32 correctly rounded, at bfloat16 (its passing case) not; jax.a unknown.
    fn comparisons() -> Vec<crate::model::ComparisonRow> {
        let rows = rows();
        vec![rounded(&rows[1], true), rounded(&rows[3], false)]
    }

    #[test]
    fn cells_mark_pass_wrong_and_reasons() {
        let m = build(3, crate::model::RunSource::Live, &rows(), &comparisons(), &|_| true);
        let torch = &m.rows[0];
        assert_eq!(marks(&torch.cells["float16"]), "W");
        assert_eq!(marks(&torch.cells["bfloat16"]), "✓D");
        assert_eq!(marks(&torch.cells["float32"]), "✓½");
        assert_eq!(marks(&m.rows[1].cells["float32"]), "✓?", "rounding unknown, and nothing compared it");
        assert_eq!(m.rows[1].cells["float32"].unchecked, 1);
        // An imported test checked its own answer.
        let imported = build(3, crate::model::RunSource::ImportPytestJson, &rows(), &comparisons(), &|_| true);
        assert_eq!(marks(&imported.rows[1].cells["float32"]), "✓");
        assert_eq!(marks(&m.rows[1].cells["float16"]), "Δ");
        assert_eq!((torch.cells["bfloat16"].rounding_known, torch.cells["bfloat16"].correctly_rounded), (1, 0));
    }

    #[test]
    fn a_name_several_frameworks_share_shows_its_framework() {
        // keras.ops.size on three Keras backends: three rows that once read the same.
        let mut m = build(3, crate::model::RunSource::Live, &rows(), &comparisons(), &|_| true);
        let first = m.rows[0].clone();
        let mut rows = Vec::new();
        for f in [Framework::KerasJax, Framework::KerasTorch, Framework::KerasTensorflow] {
            rows.push(MatrixRow { framework: f, function: "keras.ops.size".into(), ..first.clone() });
        }
        m.rows = rows;
        m.problems.clear();
        let table = render(&m, Format::Table);
        for f in ["keras-jax", "keras-torch", "keras-tensorflow"] {
            assert_eq!(table.matches(&format!("keras.ops.size ({f})")).count(), 1, "{table}");
        }
        // A name only one framework has stays as it is.
        let alone = build(3, crate::model::RunSource::Live, &self::rows(), &comparisons(), &|_| true);
        assert!(!render(&alone, Format::Table).contains(" (torch)"));
    }

    #[test]
    fn snapshots() {
        let m = build(3, crate::model::RunSource::Live, &rows(), &comparisons(), &|_| true);
        insta::assert_snapshot!("dtypes_table", render(&m, Format::Table));
        insta::assert_snapshot!("dtypes_markdown", render(&m, Format::Markdown));
        insta::assert_snapshot!("dtypes_csv", render(&m, Format::Csv));
        insta::assert_snapshot!("dtypes_json", render(&m, Format::Json));
    }
}
