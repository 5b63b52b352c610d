//! `mlport report paper --format html`: the paper's figures ([`PaperFigures`]) as one
//! self-contained page (nothing fetched: the same Content-Security-Policy as the run's page)
//! from the minijinja template `paper.html.j2`: the status figure as stacked bars (drawn with
//! `plotters`, [`super::bars`]) and as a table, the latency table, and why the methods differ.
//! The tables are [`crate::render::paper`]'s grids, the notes its words.

use minijinja::context;

use super::bars::{self, Bar};
use crate::analysis::paper::PaperFigures;
use crate::render::paper::{JSON_FORMAT, JSON_VERSION, latency_grid, notes, status_grid};

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
pub fn page(p: &PaperFigures) -> anyhow::Result<String> {
    let env = super::environment()?;
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
