//! The cross-framework table ([`crate::analysis::frameworks`]) as a table, Markdown,
//! versioned JSON (`{"format": "mlport.frameworks", "version": 2}`; 2 counts `dtype_changed`
//! apart from `wrong`) or CSV: per row, each
//! framework's verdict against float64 with its largest error and median time.

use std::io::{self, Write};

use super::Format;
use super::grid::Grid;
use super::json::versioned;
use super::markdown::escape;
use super::report::Report;
use super::units::latency;
use crate::analysis::frameworks::{Entry, FrameworkTable, compared};
use crate::model::ComparisonRow;
use crate::model::{ComparisonVerdict, Outcome, Reason};

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.frameworks";
/// Its version; bumped on any incompatible change.
pub const JSON_VERSION: u32 = 2;

/// A number with three significant digits: `0.031`, `4.8e-4`, `83.3`, `13174`.
fn num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 {
        "0".into()
    } else if (1e-2..1e5).contains(&a) {
        let s = super::units::significant(x, 3);
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
    } else {
        super::units::scientific(x, 2)
    }
}

/// The largest error over an entry's float64 comparisons: `max abs 3.1e-2, 41 ULP`, or `exact`.
/// ULPs are of the output's dtype at the reference value (fractional: 0.4 is a correctly
/// rounded result).
fn worst(cmp: &[ComparisonRow]) -> String {
    let max = |f: fn(&ComparisonRow) -> Option<f64>| {
        cmp.iter().filter_map(f).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    };
    match (max(|c| c.max_abs), max(|c| c.max_ulp)) {
        (Some(a), Some(u)) if a == 0.0 && u == 0.0 => "exact".into(),
        (Some(a), Some(u)) => {
            format!("max abs {}, {} ULP", num(a), if u < 10.0 { format!("{u:.1}") } else { format!("{u:.0}") })
        }
        (Some(a), None) => format!("max abs {}", num(a)),
        (None, Some(u)) => format!("{} ULP", num(u)),
        (None, None) => "compared".into(),
    }
}

/// A dtype change in a few words: `int32, expected int64`, from the first float64 comparison
/// that found it (its message otherwise: a declared `out_dtype`, another target).
fn dtype_change(e: &Entry) -> String {
    let found = e.float64.iter().find(|c| c.dtype_changed);
    match found.and_then(|c| Some((c.detail["dtype_actual"].as_str()?, c.detail["out_dtype_expected"].as_str()?))) {
        Some((actual, expected)) => {
            let values =
                found.filter(|c| c.mismatched > 0).map(|c| format!(" ({} of {} values off)", c.mismatched, c.elements));
            format!("{actual}, expected {expected}{}", values.unwrap_or_default())
        }
        None => e.message.clone().unwrap_or_else(|| "dtype changed".into()),
    }
}

/// What a wrong result's disagreement is, in a few words: a shape or output count change, NaN/Inf
/// patterns, or how many elements are off and by how much.
fn disagreement(e: &Entry) -> String {
    let bad: Vec<ComparisonRow> =
        e.float64.iter().filter(|c| c.verdict == ComparisonVerdict::Disagree).cloned().collect();
    let Some(first) = bad.first() else {
        // Not against float64: against the reference device; its message says how.
        return e.message.clone().unwrap_or_else(|| "disagrees".into());
    };
    if first.shape_changed {
        return match (first.detail["shape_actual"].as_array(), first.detail["shape_expected"].as_array()) {
            (Some(a), Some(x)) => format!("shape {a:?} vs {x:?}").replace('"', ""),
            _ => first.summary.clone(),
        };
    }
    let mut parts = Vec::new();
    let (nan, inf): (u64, u64) = bad.iter().fold((0, 0), |(n, i), c| (n + c.nan_mismatch, i + c.inf_mismatch));
    if nan > 0 {
        parts.push(format!("{nan} NaN differ"));
    }
    if inf > 0 {
        parts.push(format!("{inf} Inf differ"));
    }
    let (off, of) = bad.iter().map(|c| (c.mismatched, c.elements)).max().unwrap_or((0, 0));
    parts.push(format!("{off} of {of} off, {}", worst(&bad)));
    parts.join(", ")
}

fn cell(entries: &[Entry]) -> String {
    let several = entries.len() > 1;
    entries
        .iter()
        .map(|e| {
            let time = e.median_ns.map(|ns| format!(" · {}", latency(ns))).unwrap_or_default();
            let text = match e.outcome {
                Outcome::Pass if e.float64.is_empty() => format!("ran, not compared{time}"),
                Outcome::Pass if !compared(e) => {
                    let why = e
                        .float64
                        .iter()
                        .find(|c| c.verdict == ComparisonVerdict::Incomparable)
                        .map(|c| c.summary.as_str());
                    format!("ran, not compared: {}{time}", why.unwrap_or("?"))
                }
                Outcome::Pass => format!("✓ {}{time}", worst(&e.float64)),
                Outcome::WrongResult if e.reason == Some(Reason::DtypeChanged) => {
                    format!("✗ DTYPE {}{time} #{}", dtype_change(e), e.result_id)
                }
                Outcome::WrongResult => format!("✗ WRONG {}{time} #{}", disagreement(e), e.result_id),
                Outcome::Skip => "skip".into(),
                _ => {
                    format!("✗ {} #{}", e.reason.map_or_else(|| e.outcome.to_string(), |r| r.to_string()), e.result_id)
                }
            };
            if several { format!("{}: {text}", e.function) } else { text }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cross-framework table as a grid (also the HTML page's section).
pub fn grid(t: &FrameworkTable) -> Grid {
    let mut columns: Vec<String> = ["op", "case", "dtype", "device", "float64 reference"].map(String::from).to_vec();
    columns.extend(t.frameworks.iter().map(|f| f.to_string()));
    let mut g = Grid::new(columns);
    for r in &t.rows {
        let mut cells = vec![
            r.op.clone(),
            r.case_id.clone(),
            crate::model::name_or_empty(r.dtype).to_string(),
            r.device.to_string(),
            r.reference.clone(),
        ];
        cells.extend(t.frameworks.iter().map(|f| r.frameworks.get(f).map_or_else(|| "—".to_string(), |e| cell(e))));
        g.push(cells);
    }
    g
}

/// One line per framework: how its results on the shared ops compare with float64.
pub fn summary_lines(t: &FrameworkTable) -> Vec<String> {
    let mut out = vec![format!(
        "{} ops have functions in two or more frameworks; {} (op, case, dtype, device) rows.",
        t.shared_ops,
        t.rows.len()
    )];
    for (fw, n) in &t.tally {
        out.push(format!(
            "{fw}: {} agree with the float64 reference, {} wrong results, {} dtype changes, {} failed, {} ran without \
             a reference.",
            n.agree, n.wrong, n.dtype_changed, n.failed, n.unchecked
        ));
    }
    out.push(
        "Cells: ✓ agrees (largest error over the compared outputs; ULP of the output's dtype) · ✗ WRONG: the \
         elements beyond the dtype's tolerance (torch.testing.assert_close's defaults) · ✗ DTYPE: an output's dtype is \
         not the expected one (the reference's, at the case's precision) · ✗ REASON: the call failed · \
         the median steady-state time per call · #ID for `mlport repro ID` · — the framework has no function for the op or does not sweep the dtype."
            .into(),
    );
    out
}

/// Renders the table and its summary. CSV is the table only; JSON holds every comparison.
fn render(t: &FrameworkTable, format: Format) -> String {
    let g = grid(t);
    let lines = summary_lines(t);
    match format {
        Format::Json => versioned(JSON_FORMAT, JSON_VERSION, t),
        Format::Csv => g.csv(),
        Format::Table => format!("Cross-framework agreement, run {}\n{}\n{}\n", t.run, g.table(), lines.join("\n")),
        Format::Markdown => format!(
            "# Cross-framework agreement, run {}\n\n{}\n{}\n",
            t.run,
            g.markdown(),
            lines.iter().map(|l| format!("- {}", escape(l).replace("\\`", "`"))).collect::<Vec<_>>().join("\n")
        ),
    }
}

/// The cross-framework table in every text format.
impl Report for FrameworkTable {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::frameworks::tests::table;

    #[test]
    fn numbers_have_three_significant_digits() {
        assert_eq!(num(0.031), "0.031");
        assert_eq!(num(412.0), "412");
        assert_eq!(num(83.281), "83.3");
        assert_eq!(num(13174.4), "13174");
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(2.5e-7), "2.5e-7");
    }

    #[test]
    fn snapshots() {
        let t = table();
        insta::assert_snapshot!("frameworks_table", render(&t, Format::Table));
        insta::assert_snapshot!("frameworks_markdown", render(&t, Format::Markdown));
        insta::assert_snapshot!("frameworks_csv", render(&t, Format::Csv));
        insta::assert_snapshot!("frameworks_json", render(&t, Format::Json));
    }
}
