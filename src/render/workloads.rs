//! `mlport report --workloads` as a terminal table, Markdown, CSV or JSON
//! ([`crate::analysis::workloads`] computes it). Table and Markdown: the workloads table, the
//! rut table, the cross-framework table and the rules. CSV: the workloads table's numbers (ns,
//! bytes, samples/s; empty when unknown). JSON: everything, `{"format": "mlport.workloads",
//! "version": 1}`.

use std::io::{self, Write};

use std::fmt::Write as _;

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::json::versioned;
use super::markdown::escape;
use super::report::Report;
use super::units::{bytes, interval, latency, ratio};
use crate::analysis::workloads::{JSON_FORMAT, JSON_VERSION, WorkloadRow, WorkloadsReport};

fn sci(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2e}")).unwrap_or_else(|| "—".into())
}

/// The status cell: `pass`, `pass (non-deterministic)`, `wrong_result`, `fail (out_of_memory)`.
fn status(r: &WorkloadRow) -> String {
    let base = r.outcome.as_str().to_string();
    match (&r.reason, r.non_deterministic) {
        (_, true) => format!("{base} (non-deterministic)"),
        (Some(reason), _) if reason != &base => format!("{base} ({reason})"),
        _ => base,
    }
}

fn workloads_grid(rep: &WorkloadsReport) -> Grid {
    let mut g = Grid::new([
        "framework",
        "workload",
        "target",
        "status",
        "rule",
        "RMSE vs float64",
        "× floor",
        "first call",
        "steady state",
        "samples/s",
        "peak RSS",
    ])
    .right_aligned(&[5, 6, 7, 8, 9, 10]);
    for r in &rep.rows {
        let dtype = r.dtype.map(|d| format!(" ({d})")).filter(|d| d != " (float32)").unwrap_or_default();
        g.push([
            r.framework.to_string(),
            format!("{} {}{dtype}", r.function, r.case_id),
            r.target.to_string(),
            status(r),
            r.rule.clone().unwrap_or_else(|| "—".into()),
            sci(r.rmse),
            r.ratio.map(ratio).unwrap_or_else(|| "—".into()),
            r.first_call_ns.map(|n| latency(n as f64)).unwrap_or_else(|| "—".into()),
            r.steady_ns.map(latency).unwrap_or_else(|| "—".into()),
            r.samples_per_s
                .map(|s| if s >= 100.0 { format!("{s:.0}") } else { format!("{s:.1}") })
                .unwrap_or_else(|| "—".into()),
            match (r.peak_rss_bytes, r.device_peak_bytes) {
                (Some(h), Some(d)) => format!("{} (device {})", bytes(h), bytes(d)),
                (Some(h), None) => bytes(h),
                _ => "—".into(),
            },
        ]);
    }
    g
}

fn rut_grid(rep: &WorkloadsReport) -> Grid {
    let mut g = Grid::new([
        "pair",
        "framework",
        "target",
        "composed",
        "monolithic",
        "composed",
        "monolithic",
        "composed / monolithic",
    ])
    .right_aligned(&[5, 6, 7]);
    for r in &rep.rut {
        g.push([
            r.pair.clone(),
            r.framework.to_string(),
            r.target.to_string(),
            r.composed.clone(),
            r.monolithic.clone(),
            latency(r.composed_ns),
            latency(r.monolithic_ns),
            format!("{} {}", ratio(r.ratio.point), interval(&r.ratio)),
        ]);
    }
    g
}

fn cross_grid(rep: &WorkloadsReport) -> Grid {
    let mut g = Grid::new([
        "workload",
        "framework",
        "against",
        "verdict",
        "rule",
        "RMSE vs against's float64",
        "max |Δ| vs against",
    ])
    .right_aligned(&[5, 6]);
    for r in &rep.cross {
        g.push([
            format!("{} {}", r.op, r.case_id),
            r.framework.to_string(),
            r.against.to_string(),
            r.verdict.clone().unwrap_or_else(|| r.note.clone().unwrap_or_else(|| "—".into())),
            r.rule.clone().unwrap_or_else(|| "—".into()),
            sci(r.rmse),
            sci(r.max_abs_vs_first),
        ]);
    }
    g
}

fn csv(rep: &WorkloadsReport) -> String {
    let num = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_default();
    let int = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_default();
    let mut out = Csv::new();
    out.row([
        "framework",
        "function",
        "case",
        "dtype",
        "target",
        "result_id",
        "outcome",
        "reason",
        "rule",
        "rmse",
        "floor_rmse",
        "ratio",
        "non_deterministic",
        "first_call_ns",
        "steady_ns",
        "samples_per_s",
        "peak_rss_bytes",
        "device_peak_bytes",
    ]);
    for r in &rep.rows {
        out.row([
            r.framework.to_string(),
            r.function.clone(),
            r.case_id.clone(),
            r.dtype.map(|d| d.to_string()).unwrap_or_default(),
            r.target.to_string(),
            r.result_id.to_string(),
            r.outcome.as_str().to_string(),
            r.reason.clone().unwrap_or_default(),
            r.rule.clone().unwrap_or_default(),
            num(r.rmse),
            num(r.floor_rmse),
            num(r.ratio),
            r.non_deterministic.to_string(),
            int(r.first_call_ns),
            num(r.steady_ns),
            num(r.samples_per_s),
            int(r.peak_rss_bytes),
            int(r.device_peak_bytes),
        ]);
    }
    out.finish()
}

/// Renders the report in `format`.
fn render(rep: &WorkloadsReport, format: Format) -> String {
    match format {
        Format::Json => versioned(JSON_FORMAT, JSON_VERSION, rep),
        Format::Csv => csv(rep),
        Format::Table | Format::Markdown => {
            let md = format == Format::Markdown;
            let mut out = String::new();
            let section = |out: &mut String, title: &str, g: &Grid| {
                if md {
                    let _ = write!(out, "\n## {title}\n\n{}", g.markdown());
                } else {
                    let _ = write!(out, "\n{title}\n{}\n", g.table());
                }
            };
            let title = format!("Workloads, run {}", rep.run);
            let _ = writeln!(out, "{}", if md { format!("# {title}") } else { title });
            if rep.rows.is_empty() {
                out.push_str(
                    "\nThe run has no workload (run `mlport run --kind workloads`, or a run without `--kind functions`).\n",
                );
                return out;
            }
            section(&mut out, "Whole models and workloads", &workloads_grid(rep));
            if !rep.timed {
                let _ = writeln!(out, "\nTimings are absent: the run was made with --quick.");
            }
            if !rep.rut.is_empty() {
                section(&mut out, "Off the rut: composed vs the framework's own kernel", &rut_grid(rep));
            }
            if !rep.cross.is_empty() {
                section(&mut out, "The same model across frameworks (eager, reference device)", &cross_grid(rep));
            }
            let rule = if md { escape(&rep.rule) } else { rep.rule.clone() };
            let _ = writeln!(out, "\n{rule}");
            out
        }
    }
}

/// The workloads report in every text format.
impl Report for WorkloadsReport {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::workloads::{CrossRow, RutRow, rule_text};
    use crate::model::{Dtype, Framework, Outcome, Target};
    use crate::stats::Estimate;

    /// A report written by hand (no run): two ResNet-18 rows, one rut pair, one cross row.
    fn example() -> WorkloadsReport {
        let row = |target: &str, outcome, rule: &str, ratio: f64, steady: Option<f64>| WorkloadRow {
            framework: Framework::Torch,
            function: "torchvision.models.resnet18".into(),
            case_id: "forward".into(),
            dtype: Some(Dtype::Float32),
            target: target.parse::<Target>().unwrap(),
            result_id: 7,
            outcome,
            reason: (outcome == Outcome::WrongResult).then(|| "wrong_result".into()),
            message: None,
            rule: Some(rule.into()),
            rmse: Some(5.1e-7 * ratio),
            floor_rmse: Some(5.1e-7),
            ratio: Some(ratio),
            non_deterministic: false,
            first_call_ns: Some(2_490_000_000),
            steady_ns: steady,
            samples_per_s: steady.map(|ns| 2.0 / (ns * 1e-9)),
            peak_rss_bytes: Some(910_548_992),
            device_peak_bytes: None,
        };
        WorkloadsReport {
            run: 3,
            rows: vec![
                row("cpu", Outcome::Pass, "floor", 1.0, Some(390e6)),
                row("cpu/compiled", Outcome::WrongResult, "rmse_ratio", 17885.0, Some(377e6)),
            ],
            rut: vec![RutRow {
                pair: "capsule".into(),
                framework: Framework::Torch,
                target: Target::cpu(),
                monolithic: "capsule_conv".into(),
                composed: "capsule_em".into(),
                monolithic_ns: 1.4e6,
                composed_ns: 9.9e6,
                ratio: Estimate { point: 7.07, lower: 6.8, upper: 7.4, level: 0.95 },
            }],
            cross: vec![CrossRow {
                op: "keras_resnet50".into(),
                case_id: "forward".into(),
                dtype: Some(Dtype::Float32),
                framework: Framework::KerasJax,
                against: Framework::KerasTorch,
                verdict: Some("agrees".into()),
                rule: Some("rmse_ratio".into()),
                rmse: Some(3.2e-5),
                max_abs_vs_first: Some(1.1e-4),
                note: None,
            }],
            timed: true,
            rule: rule_text(),
        }
    }

    #[test]
    fn workloads_table_snapshot() {
        insta::assert_snapshot!(render(&example(), Format::Table));
    }

    #[test]
    fn workloads_markdown_snapshot() {
        insta::assert_snapshot!(render(&example(), Format::Markdown));
    }

    #[test]
    fn workloads_csv_snapshot() {
        insta::assert_snapshot!(render(&example(), Format::Csv));
    }

    #[test]
    fn workloads_json_snapshot() {
        insta::assert_snapshot!(render(&example(), Format::Json));
    }
}
