//! `mlport report paper`: the paper's figures ([`PaperFigures`]) as a terminal table, GitHub
//! Markdown, CSV, versioned JSON (`{"format": "mlport.paper", "version": 2}`; version 2 lists
//! the functions the authors' method compares, `latency[].authors_functions`, now their
//! plotting code's) or a
//! self-contained HTML page ([`super::html::paper`]: the same tables, stacked bars of the
//! statuses, both methods side by side). Percentages print with two decimals (the paper's 54.69%), ratios with four
//! significant digits ([`sig4`]); CSV holds the same printed values.

use std::io::{self, Write};

use std::fmt::Write as _;

use minijinja::context;

use super::Format;
use super::grid::Grid;
use super::html::bars::{self, Bar};
use super::json::versioned;
use super::markdown::escape;
use super::report::Report;
use crate::analysis::paper::{LatencyRow, PaperFigures, StatusCounts};
use crate::analysis::slowdown::{Distribution, fmt_threshold};

/// The JSON document's format name.
pub const JSON_FORMAT: &str = "mlport.paper";
/// Its version.
pub const JSON_VERSION: u32 = 2;

/// `v` with four significant digits, no exponent for 1e-4..1e6 (`82.49`, `0.3086`, `1234`).
pub fn sig4(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let digits = 3 - v.abs().log10().floor() as i32;
    let rounded = {
        let p = 10f64.powi(digits);
        (v * p).round() / p
    };
    // Rounding may carry into a new digit (9.9996 → 10.00): the decimals follow the rounded value.
    super::units::significant(rounded, 4)
}

fn count(c: &StatusCounts, n: usize) -> String {
    match c.percent(n) {
        Some(p) => format!("{n} ({p:.2}%)"),
        None => "—".into(),
    }
}

fn share(d: &Distribution, n: usize) -> String {
    match d.share(n) {
        Some(s) => format!("{n} of {} ({:.2}%)", d.functions, 100.0 * s),
        None => "—".into(),
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{}×", sig4(v)))
}

/// The status figure, both methods side by side.
pub fn status_grid(p: &PaperFigures) -> Grid {
    let mut g = Grid::new([
        "framework",
        "device (machine)",
        "authors: functions",
        "success",
        "partial",
        "complete failure",
        "mlport: functions",
        "success",
        "partial",
        "complete failure",
    ])
    .right_aligned(&[2, 3, 4, 5, 6, 7, 8, 9]);
    for r in &p.status {
        let (a, m) = (&r.authors, &r.mlport);
        g.push([
            r.framework.to_string(),
            format!("{} ({})", r.device, r.machine),
            a.functions.to_string(),
            count(a, a.success),
            count(a, a.partial),
            count(a, a.complete_failure),
            m.functions.to_string(),
            count(m, m.success),
            count(m, m.partial),
            count(m, m.complete_failure),
        ]);
    }
    g
}

/// The latency figure: per framework a row per method.
pub fn latency_grid(p: &PaperFigures) -> Grid {
    let limit = fmt_threshold(p.threshold);
    let mut g = Grid::new([
        "framework".to_string(),
        "method".into(),
        "functions".into(),
        "faster on TPU".into(),
        format!("> {limit}× slower"),
        "median TPU/GPU".into(),
        "geometric mean".into(),
        "95% interval".into(),
        "unstable".into(),
    ])
    .right_aligned(&[2, 3, 4, 5, 6, 7, 8]);
    for r in &p.latency {
        for (method, d, unstable) in rows_of(r) {
            g.push([
                r.framework.to_string(),
                method.to_string(),
                d.functions.to_string(),
                share(d, d.faster),
                share(d, d.intolerable),
                opt(d.median),
                opt(d.geometric_mean),
                if method == METHODS[1] {
                    d.geometric_mean_ci.map_or("—".into(), |e| format!("{}–{}×", sig4(e.lower), sig4(e.upper)))
                } else {
                    "—".into()
                },
                unstable,
            ]);
        }
    }
    g
}

/// The methods' names, as the tables print them.
pub const METHODS: [&str; 2] = ["authors (mean of every call)", "mlport (steady-state median)"];

fn rows_of(r: &LatencyRow) -> [(&'static str, &Distribution, String); 2] {
    [(METHODS[0], &r.authors, "—".into()), (METHODS[1], &r.mlport, r.unstable.to_string())]
}

/// The words under the tables: what was compared, then why the methods differ.
pub fn notes(p: &PaperFigures) -> Vec<String> {
    let mut out: Vec<String> = p
        .latency
        .iter()
        .map(|r| {
            format!(
                "{}: {} → {}; not compared: {} functions (authors), {} (mlport).",
                r.framework, r.gpu, r.tpu, r.authors_not_compared, r.mlport_not_compared
            )
        })
        .collect();
    out.extend(p.why.iter().cloned());
    out
}

/// CSV: one row per status cell and per latency method, the printed values.
pub fn csv(p: &PaperFigures) -> String {
    let mut g = Grid::new([
        "figure",
        "framework",
        "device",
        "machine",
        "method",
        "functions",
        "success",
        "partial",
        "complete_failure",
        "faster",
        "intolerable",
        "median",
        "geometric_mean",
        "geometric_mean_lower",
        "geometric_mean_upper",
        "unstable",
    ]);
    let o = |v: Option<f64>| v.map(sig4).unwrap_or_default();
    for r in &p.status {
        for (method, c) in [("authors", &r.authors), ("mlport", &r.mlport)] {
            g.push([
                "status".to_string(),
                r.framework.to_string(),
                r.device.to_string(),
                r.machine.clone(),
                method.into(),
                c.functions.to_string(),
                c.success.to_string(),
                c.partial.to_string(),
                c.complete_failure.to_string(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
    }
    for r in &p.latency {
        for (method, d, unstable) in
            [("authors", &r.authors, String::new()), ("mlport", &r.mlport, r.unstable.to_string())]
        {
            let ci = if method == "mlport" { d.geometric_mean_ci } else { None };
            g.push([
                "latency".to_string(),
                r.framework.to_string(),
                "cuda:0..tpu:0".into(),
                format!("{}..{}", crate::analysis::paper::GPU_MACHINE, crate::analysis::paper::TPU_MACHINE),
                method.into(),
                d.functions.to_string(),
                String::new(),
                String::new(),
                String::new(),
                d.faster.to_string(),
                d.intolerable.to_string(),
                o(d.median),
                o(d.geometric_mean),
                o(ci.map(|e| e.lower)),
                o(ci.map(|e| e.upper)),
                unstable,
            ]);
        }
    }
    g.csv()
}

/// Renders the figures in `format` (HTML: [`Report::html`]).
fn render(p: &PaperFigures, format: Format) -> String {
    let empty = p.status.is_empty() && p.latency.is_empty();
    const NONE: &str = "No imported paper data in this store: run `mlport import paper ../shared/paper-data` first.\n";
    match format {
        Format::Json => versioned(JSON_FORMAT, JSON_VERSION, p),
        Format::Csv => csv(p),
        Format::Table => {
            if empty {
                return NONE.into();
            }
            let mut out = String::from("The Grand Illusion's figures from its raw data, both methods\n\n");
            let _ = writeln!(out, "Functions by status per framework × device:\n{}\n", status_grid(p).table());
            let _ = writeln!(out, "GPU (T4) → TPU v3 latency per framework:\n{}\n", latency_grid(p).table());
            for n in notes(p) {
                let _ = writeln!(out, "{n}\n");
            }
            out
        }
        Format::Markdown => {
            if empty {
                return NONE.into();
            }
            let mut out = String::from("# The Grand Illusion's figures from its raw data, both methods\n\n");
            let _ = writeln!(out, "## Functions by status per framework × device\n\n{}", status_grid(p).markdown());
            let _ = writeln!(out, "## GPU (T4) → TPU v3 latency per framework\n\n{}", latency_grid(p).markdown());
            for n in notes(p) {
                let _ = writeln!(out, "{}\n", escape(&n).replace("\\`", "`"));
            }
            out
        }
    }
}

// The HTML page: the template `html/paper.html.j2` with plotters' stacked bars
// ([`super::html::bars`]) and the pages' `grid` macro.

/// The width of the bars' labels (`tensorflow cuda:0 authors`), in pixels.
const LABEL_WIDTH: i32 = 240;

/// The status figure's bars: per framework × device the authors' counting, then mlport's.
fn status_bars(p: &PaperFigures) -> Vec<Bar> {
    let mut out = Vec::new();
    for r in &p.status {
        for (method, c) in [("authors", &r.authors), ("mlport", &r.mlport)] {
            out.push(Bar {
                label: format!("{} {} {}", r.framework, r.device, method),
                functions: c.functions,
                success: c.success,
                partial: c.partial,
                complete_failure: c.complete_failure,
                wrong: 0,
            });
        }
    }
    out
}

/// The bars' text alternative: one clause per bar.
fn alt(bars: &[Bar]) -> String {
    let clauses: Vec<String> = bars
        .iter()
        .map(|b| {
            format!(
                "{}: {} success, {} partial, {} complete failure of {}",
                b.label, b.success, b.partial, b.complete_failure, b.functions
            )
        })
        .collect();
    clauses.join("; ")
}

/// The page of `p`, ending with a newline.
///
/// Errors: a template error (the templates are compiled in and tested), naming the template
/// and line.
fn page(p: &PaperFigures) -> anyhow::Result<String> {
    let env = super::html::environment()?;
    let bars = status_bars(p);
    let page = env.get_template("paper.html")?.render(context! {
        format => format!("{JSON_FORMAT}.html"),
        version => JSON_VERSION,
        bars_svg => bars::stacked(&bars, LABEL_WIDTH),
        bars_alt => alt(&bars),
        status => status_grid(p),
        latency => latency_grid(p),
        notes => notes(p),
    })?;
    Ok(page + "\n")
}

/// The paper's figures in every text format.
impl Report for PaperFigures {
    fn render(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(render(self, format).as_bytes())
    }

    fn html(&self) -> Option<anyhow::Result<String>> {
        Some(page(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::analysis::paper::{LatencyRow, StatusRow};
    use crate::analysis::paper_plotting::PlottedFunction;
    use crate::model::Framework;
    use crate::stats::StatsConfig;

    /// Synthetic figures (test double of the analysis result, not the paper's numbers).
    fn figures() -> PaperFigures {
        let stats = StatsConfig::default();
        let c = |functions, success, partial, complete_failure| StatusCounts {
            functions,
            success,
            partial,
            complete_failure,
        };
        PaperFigures {
            status: vec![
                StatusRow {
                    framework: Framework::Torch,
                    device: "tpu:0".parse().unwrap(),
                    machine: "tpu_vm".into(),
                    run: 2,
                    label: "paper/torch/tpu_vm/tpu".into(),
                    authors: c(64, 35, 15, 14),
                    mlport: c(64, 35, 15, 14),
                },
                StatusRow {
                    framework: Framework::Jax,
                    device: "cuda:0".parse().unwrap(),
                    machine: "t4_vm".into(),
                    run: 9,
                    label: "paper/jax/t4_vm/gpu".into(),
                    authors: c(64, 60, 0, 4),
                    mlport: c(61, 60, 0, 1),
                },
            ],
            latency: vec![LatencyRow {
                framework: Framework::Torch,
                gpu: "paper/torch/t4_vm/gpu".into(),
                tpu: "paper/torch/tpu_vm/tpu".into(),
                authors: Distribution::of(&[80.0, 120.5, 0.5, 12.25], 3, &stats),
                authors_functions: vec![PlottedFunction {
                    key: "Adamax_test".into(),
                    name: "torch.optim.Adamax".into(),
                    gpu_calls: 6,
                    tpu_calls: 6,
                    gpu_mean_ns: 1_000.0,
                    tpu_mean_ns: 80_000.0,
                    ratio: 80.0,
                }],
                mlport: Distribution::of(&[60.0, 90.0, 0.8], 2, &stats),
                unstable: 1,
                authors_not_compared: 2,
                mlport_not_compared: 3,
            }],
            threshold: 10.0,
            why: vec!["Why `they` differ.".into()],
        }
    }

    #[test]
    fn snapshots() {
        let p = figures();
        insta::assert_snapshot!("paper_table", render(&p, Format::Table));
        insta::assert_snapshot!("paper_markdown", render(&p, Format::Markdown));
        insta::assert_snapshot!("paper_csv", render(&p, Format::Csv));
        insta::assert_snapshot!("paper_html", p.html().unwrap().unwrap());
    }

    #[test]
    fn json_lists_the_functions_the_authors_method_compares() {
        let v: serde_json::Value = serde_json::from_str(&render(&figures(), Format::Json)).unwrap();
        assert_eq!((v["format"].as_str(), v["version"].as_u64()), (Some(JSON_FORMAT), Some(2)));
        let f = &v["latency"][0]["authors_functions"][0];
        assert_eq!(
            (f["key"].as_str(), f["name"].as_str(), f["ratio"].as_f64()),
            (Some("Adamax_test"), Some("torch.optim.Adamax"), Some(80.0))
        );
    }

    #[test]
    fn four_significant_digits() {
        assert_eq!(sig4(82.486853), "82.49");
        assert_eq!(sig4(0.30856815), "0.3086");
        assert_eq!(sig4(1.8753154), "1.875");
        assert_eq!(sig4(9.99996), "10.00");
        assert_eq!(sig4(1234.4), "1234");
        assert_eq!(sig4(72.83193), "72.83");
    }
}
