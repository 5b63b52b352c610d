//! The eager-against-compiled view ([`crate::analysis::modes`]) as a table, Markdown,
//! versioned JSON (`{"format": "mlport.modes", "version": 2}`; 2: one row per compiled mode, with
//! torch's graph breaks and the functions that run only compiled) or CSV.

use std::io::{self, Write};

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::Format;
use super::csv::Csv;
use super::grid::Grid;
use super::histogram::log2_rows;
use super::json::versioned;
use super::markdown::escape;
use super::portability::words::versions;
use super::report::Report;
use super::units::{count_of, interval, latency, ratio, reasons};
use crate::analysis::modes::{ModeRow, ModesReport, View};
use crate::model::{Framework, Reason};

/// The `format` of the JSON document.
pub const JSON_FORMAT: &str = "mlport.modes";
/// Its version; bumped on any incompatible change.
pub const JSON_VERSION: u32 = 2;

const COLUMNS: [&str; 14] = [
    "framework",
    "target",
    "functions",
    "compile",
    "fail to compile",
    "failure reasons (cases)",
    "recompile",
    "changed answer",
    "graph breaks (functions)",
    "compiled only",
    "first call eager → compiled",
    "compiled/eager median",
    "geometric mean [95% CI]",
    "faster compiled",
];

/// The routes view's columns (`report --routes`): the same numbers, named for export routes.
const ROUTE_COLUMNS: [&str; 14] = [
    "framework",
    "target",
    "functions",
    "export and run",
    "fail",
    "failure reasons (cases)",
    "recompile",
    "changed answer",
    "graph breaks (functions)",
    "route only",
    "first call eager → route (export, load, run)",
    "route/eager median",
    "geometric mean [95% CI]",
    "faster on the route",
];

/// The `format` of the routes view's JSON document.
pub const ROUTES_JSON_FORMAT: &str = "mlport.routes";
/// Its version; bumped on any incompatible change (2: rows carry the route's `runtime`).
pub const ROUTES_JSON_VERSION: u32 = 2;

fn columns(view: View) -> [&'static str; 14] {
    match view {
        View::Compiled => COLUMNS,
        View::Routes => ROUTE_COLUMNS,
    }
}

fn opt_latency(ns: Option<f64>) -> String {
    ns.map_or("—".into(), latency)
}

fn cells(r: &ModeRow) -> Vec<String> {
    let d = &r.steady;
    vec![
        r.framework.to_string(),
        r.compiled.to_string(),
        r.functions.to_string(),
        count_of(r.compile, r.functions),
        count_of(r.fail_to_compile, r.functions),
        reasons(&r.failure_reasons),
        r.recompile.to_string(),
        r.change_answer.to_string(),
        match (r.graph_breaks, r.graph_break_functions) {
            (Some(b), Some(f)) => format!("{b} ({f})"),
            _ => "—".into(),
        },
        r.compiled_only.len().to_string(),
        format!("{} → {}", opt_latency(r.first_call_eager_ns), opt_latency(r.first_call_compiled_ns)),
        d.median.map_or("—".into(), ratio),
        match (d.geometric_mean, &d.geometric_mean_ci) {
            (Some(g), Some(ci)) => format!("{} {}", ratio(g), interval(ci)),
            (Some(g), None) => ratio(g),
            _ => "—".into(),
        },
        match d.share(d.faster) {
            Some(s) => format!("{} of {} ({:.0}%)", d.faster, d.functions, 100.0 * s),
            None => "—".into(),
        },
    ]
}

/// The eager-vs-compiled summary as a grid (also the HTML page's section).
pub fn grid(rep: &ModesReport) -> Grid {
    let mut g = Grid::new(columns(rep.view)).right_aligned(&[2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13]);
    for r in &rep.rows {
        g.push(cells(r));
    }
    g
}

/// CSV for spreadsheets and scripts: numbers only (counts, ns, ratios; empty when unknown),
/// one row per framework; the failure reasons as `reason=cases` pairs joined by `;`.
fn csv(rep: &ModesReport) -> String {
    let header = [
        "framework",
        "eager",
        "compiled",
        "functions",
        "compile",
        "fail_to_compile",
        "failure_reasons",
        "recompile",
        "changed_answer",
        "graph_breaks",
        "graph_break_functions",
        "compiled_only",
        "first_call_eager_ns",
        "first_call_compiled_ns",
        "steady_ratio_functions",
        "steady_ratio_median",
        "steady_ratio_geometric_mean",
        "steady_ratio_geometric_mean_lower",
        "steady_ratio_geometric_mean_upper",
        "faster_compiled",
    ];
    let num = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_default();
    let mut out = Csv::new();
    out.row(header);
    for r in &rep.rows {
        let ci = r.steady.geometric_mean_ci;
        let reasons: Vec<String> = r.failure_reasons.iter().map(|(k, n)| format!("{k}={n}")).collect();
        out.row([
            r.framework.to_string(),
            r.eager.to_string(),
            r.compiled.to_string(),
            r.functions.to_string(),
            r.compile.to_string(),
            r.fail_to_compile.to_string(),
            reasons.join(";"),
            r.recompile.to_string(),
            r.change_answer.to_string(),
            r.graph_breaks.map(|n| n.to_string()).unwrap_or_default(),
            r.graph_break_functions.map(|n| n.to_string()).unwrap_or_default(),
            r.compiled_only.len().to_string(),
            num(r.first_call_eager_ns),
            num(r.first_call_compiled_ns),
            r.steady.functions.to_string(),
            num(r.steady.median),
            num(r.steady.geometric_mean),
            num(ci.map(|e| e.lower)),
            num(ci.map(|e| e.upper)),
            r.steady.faster.to_string(),
        ]);
    }
    out.finish()
}

/// One line per route target and runtime, with the frameworks that ran on it:
/// `cpu/onnx_openvino (torch, jax): OpenVINO 2026.4.1 CPU plugin, inference precision bf16 …`.
fn runtimes(rep: &ModesReport) -> Vec<String> {
    let mut by: BTreeMap<(String, &str), Vec<String>> = BTreeMap::new();
    for r in &rep.rows {
        if let Some(rt) = &r.runtime {
            by.entry((r.compiled.to_string(), rt.as_str())).or_default().push(r.framework.to_string());
        }
    }
    by.into_iter().map(|((target, rt), fws)| format!("{target} ({}): {rt}", fws.join(", "))).collect()
}

/// A text histogram of one row's steady-state ratios on a log scale (one line per factor of 2).
pub fn histogram(r: &ModeRow) -> String {
    let ratios: Vec<f64> = r.steady_ratios.iter().map(|(_, x)| *x).collect();
    let rows = log2_rows(&ratios, None);
    if rows.is_empty() {
        return rows;
    }
    let ratio = if r.compiled.mode().is_route() { "route/eager" } else { "compiled/eager" };
    format!("{} on {} vs {}, {ratio} steady state:\n{rows}", r.framework, r.compiled, r.eager)
}

/// Every reason with its count, most frequent first: `compile_error 2, wrong_result 1`.
fn all_reasons(reasons: &BTreeMap<Reason, usize>) -> String {
    let mut sorted: Vec<(&Reason, &usize)> = reasons.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    sorted.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", ")
}

/// The functions that do not come through the compiler whole, as a grid.
fn failures_grid(rep: &ModesReport) -> Grid {
    let columns = ["framework", "target", "function", "status", "reasons (cases)", "first failing case"];
    let mut g = Grid::new(columns);
    for r in &rep.rows {
        for f in &r.failures {
            g.push([
                r.framework.to_string(),
                r.compiled.to_string(),
                f.function.clone(),
                f.status.as_str().to_string(),
                all_reasons(&f.reasons),
                format!("#{} {}", f.result_id, f.first),
            ]);
        }
    }
    g
}

/// The functions that fail eagerly but run compiled, as a grid.
fn compiled_only_grid(rep: &ModesReport) -> Grid {
    let columns = ["framework", "target", "function", "cases", "first case (eager failure)"];
    let mut g = Grid::new(columns);
    for r in &rep.rows {
        for f in &r.compiled_only {
            g.push([
                r.framework.to_string(),
                r.compiled.to_string(),
                f.function.clone(),
                f.cases.to_string(),
                format!("#{} {}", f.result_id, f.first),
            ]);
        }
    }
    g
}

/// Renders the view. Table and Markdown: the summary table, per row a histogram of the
/// steady-state ratios, the functions that fail, recompile or change their answer, those that
/// fail eagerly but run compiled, the rule. CSV: the summary table's numbers ([`csv`]). JSON:
/// everything, `{"format": "mlport.modes", "version": 2}`.
fn render(rep: &ModesReport, format: Format) -> String {
    match format {
        Format::Json => {
            #[derive(Serialize)]
            struct Body<'a> {
                run: i64,
                versions: String,
                rows: &'a [ModeRow],
                eager_only: &'a [(Framework, String)],
                rule: &'a str,
            }
            let body = Body {
                run: rep.run,
                versions: versions(&rep.portability),
                rows: &rep.rows,
                eager_only: &rep.eager_only,
                rule: &rep.rule,
            };
            match rep.view {
                View::Compiled => versioned(JSON_FORMAT, JSON_VERSION, &body),
                View::Routes => versioned(ROUTES_JSON_FORMAT, ROUTES_JSON_VERSION, &body),
            }
        }
        Format::Csv => csv(rep),
        Format::Table | Format::Markdown => {
            let md = format == Format::Markdown;
            let mut out = String::new();
            let routes = rep.view == View::Routes;
            let title = if routes {
                format!("Eager vs export routes, run {}", rep.run)
            } else {
                format!("Eager vs compiled, run {}", rep.run)
            };
            if md {
                let _ = writeln!(out, "# {title}\n\n{}\n", escape(&versions(&rep.portability)));
            } else {
                let _ = writeln!(out, "{title}\n{}", versions(&rep.portability));
            }
            if rep.rows.is_empty() {
                out.push_str(if routes {
                    "No framework ran eagerly and on an export route (run with `mlport run --modes eager,onnx,stablehlo`).\n"
                } else {
                    "No framework ran in both modes (run with `mlport run --modes eager,compiled`).\n"
                });
            } else {
                out.push_str(&if md { grid(rep).markdown() } else { grid(rep).table() + "\n" });
            }
            for (fw, why) in &rep.eager_only {
                let line = format!("{fw}: eager only ({why})");
                let _ = writeln!(out, "{}", if md { format!("\n- {}", escape(&line)) } else { line });
            }
            for line in runtimes(rep) {
                let _ = writeln!(out, "{}", if md { format!("\n- {}", escape(&line)) } else { line });
            }
            let hist: Vec<String> = rep.rows.iter().map(histogram).filter(|h| !h.is_empty()).collect();
            if !hist.is_empty() {
                let body = hist.join("\n");
                if md {
                    let _ = write!(out, "\n```\n{body}```\n");
                } else {
                    let _ = write!(out, "\n{body}");
                }
            }
            let failures = failures_grid(rep);
            if !failures.rows.is_empty() {
                let heading = if routes {
                    "Functions that fail or change their answer on the route"
                } else {
                    "Functions that fail, recompile or change their answer under the compiler"
                };
                if md {
                    let _ = write!(out, "\n## {heading}\n\n{}", failures.markdown());
                } else {
                    let _ = write!(out, "\n{heading}:\n{}\n", failures.table());
                }
            }
            let only = compiled_only_grid(rep);
            if !only.rows.is_empty() {
                let heading = if routes {
                    "Functions that fail eagerly but run on the route"
                } else {
                    "Functions that fail eagerly but run compiled"
                };
                if md {
                    let _ = write!(out, "\n## {heading}\n\n{}", only.markdown());
                } else {
                    let _ = write!(out, "\n{heading}:\n{}\n", only.table());
                }
            }
            let rule =
                if md { format!("\n**Rule.** {}\n", escape(&rep.rule)) } else { format!("\nRule: {}\n", rep.rule) };
            out.push_str(&rule);
            out
        }
    }
}

/// The eager-against-compiled (or export routes) view in every text format.
impl Report for ModesReport {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::modes::build;
    use crate::analysis::modes::tests::{example, results};
    use crate::analysis::portability::tests::run_summary;
    use crate::model::Mode;
    use crate::model::ResultRow;

    #[test]
    fn snapshots() {
        let rep = example();
        insta::assert_snapshot!("modes_table", render(&rep, Format::Table));
        insta::assert_snapshot!("modes_markdown", render(&rep, Format::Markdown));
        insta::assert_snapshot!("modes_csv", render(&rep, Format::Csv));
        let json = render(&rep, Format::Json);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some(JSON_FORMAT), Some(2)));
        insta::assert_snapshot!("modes_json", json);
    }

    #[test]
    fn the_routes_view_prints_each_runtime_once_per_target() {
        use crate::analysis::modes::tests::route_example;
        let rep = route_example("cpu/onnx_openvino", "OpenVINO 2026.4.1 CPU plugin, inference precision bf16");
        let table = render(&rep, Format::Table);
        assert!(
            table.contains("\ncpu/onnx_openvino (torch): OpenVINO 2026.4.1 CPU plugin, inference precision bf16\n"),
            "{table}"
        );
        let md = render(&rep, Format::Markdown);
        assert!(
            md.contains("\n- cpu/onnx_openvino (torch): OpenVINO 2026.4.1 CPU plugin, inference precision bf16\n"),
            "{md}"
        );
        let doc: serde_json::Value = serde_json::from_str(&render(&rep, Format::Json)).unwrap();
        assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some(ROUTES_JSON_FORMAT), Some(2)));
        assert_eq!(doc["rows"][0]["runtime"], "OpenVINO 2026.4.1 CPU plugin, inference precision bf16");
    }

    #[test]
    fn without_compiled_results_it_says_how_to_get_them() {
        let rows: Vec<ResultRow> = results().into_iter().filter(|r| r.result.device.mode() == Mode::Eager).collect();
        let rep = build(&run_summary(), &[], &rows, None, View::Compiled);
        assert!(rep.rows.is_empty());
        assert!(render(&rep, Format::Table).contains("--modes eager,compiled"));
        assert_eq!(rep.eager_only.len(), 2);
        assert_eq!(rep.eager_only[0].1, "no result on cpu/compiled");
    }
}
