//! `mlport report --format html`: one self-contained HTML page (no network, no external
//! scripts, styles or fonts; a Content-Security-Policy meta forbids them) of a run's
//! [`PortabilityReport`]: the run header, per framework × target a stacked bar (SVG drawn
//! by [`bars`] with `plotters`) and the counts table, the failure reasons, and every
//! counted failing case with its reason, message and `mlport repro ID` command. The reasons
//! cells link to the failing cases they count (anchors); a filter box and sortable columns
//! are a little inline JavaScript (`#filter=TEXT` in the URL fills the box), and the page is
//! fully readable without it. The page comes from the minijinja template `page.html.j2`.

pub mod bars;
pub mod heatmap;
pub mod slowdown;

use minijinja::{Environment, context};
use serde::Serialize;

use crate::analysis::PortabilityReport;
use crate::analysis::SlowdownReport;
use crate::analysis::dtypes::DtypeMatrix;
use crate::analysis::frameworks::FrameworkTable;
use crate::analysis::modes::ModesReport;
use crate::analysis::portability::TargetSummary;
use crate::model::Reason;

/// The versioned name of the page's layout, written into a `<meta name="generator">`.
pub const HTML_FORMAT: &str = "mlport.report.html";
/// The version of [`HTML_FORMAT`]; raised when the page's ids or data attributes change.
pub const HTML_VERSION: u32 = 1;

/// The run's page.
const TEMPLATE: &str = include_str!("page.html.j2");
/// The paper's figures' page ([`crate::render::paper`]).
const PAPER_TEMPLATE: &str = include_str!("paper.html.j2");
/// The `grid` macro both pages draw their tables with.
const GRID_TEMPLATE: &str = include_str!("grid.html.j2");

/// The pages' templates (HTML auto-escaping, by their `.html` names).
///
/// Errors: a template that does not parse (named, with its line).
pub(crate) fn environment() -> anyhow::Result<Environment<'static>> {
    let mut env = Environment::new();
    env.add_template("grid.html", GRID_TEMPLATE)?;
    env.add_template("page.html", TEMPLATE)?;
    env.add_template("paper.html", PAPER_TEMPLATE)?;
    env.add_template("ops.html", include_str!("ops.html.j2"))?;
    Ok(env)
}

#[derive(Serialize)]
struct Row {
    anchor: String,
    framework: String,
    device: String,
    functions_run: usize,
    success: usize,
    partial: usize,
    complete_failure: usize,
    wrong_result: usize,
    wrong_everywhere: usize,
    success_percent: String,
    cases_passed: usize,
    cases_failed: usize,
    cases_wrong: usize,
    cases_wrong_everywhere: usize,
    cases_dtype_changed: usize,
    reasons: Vec<ReasonCell>,
}

#[derive(Serialize)]
struct ReasonCell {
    reason: String,
    count: usize,
    /// The id of the failing cases' group this cell counts.
    group: String,
}

#[derive(Serialize)]
struct Failure {
    group: String,
    framework: String,
    device: String,
    function: String,
    case_id: String,
    dtype: String,
    reason: String,
    message: String,
    repro: String,
}

/// The reasons cell of device-attributable wrong answers.
const WRONG_DEVICE: &str = "wrong_result";
/// The reasons cell of wrong answers on the reference target itself (not counted by default).
const WRONG_EVERYWHERE: &str = "wrong_result (everywhere)";

/// An id safe in a URL fragment: letters, digits and `-`.
fn slug(parts: &[&str]) -> String {
    parts.join("-").chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

fn row(t: &TargetSummary) -> Row {
    let (fw, dev) = (t.framework.to_string(), t.device.to_string());
    Row {
        anchor: slug(&["t", &fw, &dev]),
        reasons: t
            .reasons
            .iter()
            .map(|(r, n)| ReasonCell {
                reason: r.to_string(),
                count: *n,
                group: slug(&["g", &fw, &dev, &r.to_string()]),
            })
            // Wrong results (the device's, then the reference target's own) and dtype changes are
            // kept apart from the error reasons; their cases are listed too.
            .chain(
                [
                    (WRONG_DEVICE, t.cases_wrong),
                    (WRONG_EVERYWHERE, t.cases_wrong_everywhere),
                    ("dtype_changed", t.cases_dtype_changed),
                ]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(reason, count)| ReasonCell {
                    reason: reason.into(),
                    count,
                    group: slug(&["g", &fw, &dev, reason]),
                }),
            )
            .collect(),
        functions_run: t.functions_run,
        success: t.success,
        partial: t.partial,
        complete_failure: t.complete_failure,
        wrong_result: t.wrong_result_functions,
        wrong_everywhere: t.wrong_everywhere_functions,
        success_percent: t.percent(t.success).map(|p| format!("{p:.2}")).unwrap_or_else(|| "–".into()),
        cases_passed: t.cases_passed,
        cases_failed: t.cases_failed,
        cases_wrong: t.cases_wrong,
        cases_wrong_everywhere: t.cases_wrong_everywhere,
        cases_dtype_changed: t.cases_dtype_changed,
        framework: fw,
        device: dev,
    }
}

fn failures(report: &PortabilityReport) -> Vec<Failure> {
    let mut out = Vec::new();
    for t in &report.targets {
        let (fw, dev) = (t.framework.to_string(), t.device.to_string());
        for f in &t.functions {
            // Excused cases (listed on request) are not in any reasons cell: left out here.
            for c in f.failures.iter().filter(|c| !c.not_attributable) {
                let reason = match (c.reason, c.everywhere) {
                    (Reason::WrongResult, true) => WRONG_EVERYWHERE.to_string(),
                    (Reason::WrongResult, false) => WRONG_DEVICE.to_string(),
                    (r, _) => r.to_string(),
                };
                out.push(Failure {
                    group: slug(&["g", &fw, &dev, &reason]),
                    framework: fw.clone(),
                    device: dev.clone(),
                    function: f.name.clone(),
                    case_id: c.case_id.clone(),
                    dtype: c.dtype.map(|d| d.to_string()).unwrap_or_default(),
                    reason,
                    message: c.message.clone(),
                    repro: if c.result_id > 0 { format!("mlport repro {}", c.result_id) } else { String::new() },
                });
            }
        }
    }
    // Grouped by the reasons cells that count them, so each group's first row is its anchor.
    out.sort_by(|a, b| (&a.group, &a.function, &a.case_id).cmp(&(&b.group, &b.function, &b.case_id)));
    out
}

/// What one page shows: analysis results of the same run (or machine of a campaign), each
/// also what `report` renders in the other formats.
pub struct Page<'a> {
    /// The run's portability.
    pub report: &'a PortabilityReport,
    /// Its dtype matrix (a heatmap).
    pub dtypes: &'a DtypeMatrix,
    /// One section per `--slowdown A..B` (histogram and empirical CDF, log scale).
    pub slowdowns: &'a [SlowdownReport],
    /// The cross-framework agreement table (a section when it has rows).
    pub frameworks: &'a FrameworkTable,
    /// Eager vs compiled (a section when the run has compiled targets).
    pub modes: &'a ModesReport,
}

/// The HTML page of a [`Page`], ending with a newline.
///
/// Errors: none in practice (the template is compiled in and tested); a template error is
/// returned as text so it names the template and line.
pub fn render(page: &Page<'_>) -> anyhow::Result<String> {
    let (report, dtypes) = (page.report, page.dtypes);
    let env = environment()?;
    let r = &report.run;
    let frameworks: Vec<(String, String, String)> = r
        .frameworks
        .iter()
        .map(|(f, v)| {
            let cat = r.catalogue_version.get(f).cloned().unwrap_or_default();
            (f.to_string(), v.clone().unwrap_or_else(|| "unknown".into()), cat)
        })
        .collect();
    let rows: Vec<Row> = report.targets.iter().map(row).collect();
    let failures = failures(report);
    let unavailable: Vec<String> =
        report.unavailable.iter().map(|d| format!("{} {}: {}", d.framework, d.device, d.detail)).collect();
    let page = env.get_template("page.html")?.render(context! {
        format => HTML_FORMAT,
        version => HTML_VERSION,
        run_id => r.id,
        host => &r.host,
        machine => r.machine.clone().unwrap_or_default(),
        label => r.label.clone().unwrap_or_default(),
        source => r.source.to_string(),
        started_at => &r.started_at,
        state => &r.state,
        python => if r.python_version.is_empty() { "unknown".to_string() } else { r.python_version.clone() },
        mlport_version => &r.mlport_version,
        seed => r.seed,
        reference => report.reference.to_string(),
        rule => &report.rule,
        notes => &r.notes,
        frameworks => frameworks,
        unavailable => unavailable,
        rows => rows,
        failures => failures,
        bars_svg => bars::svg(&report.targets),
        bars_alt => bars::alt(&report.targets),
        heatmap_svg => heatmap::svg(dtypes),
        heatmap_alt => heatmap::alt(dtypes),
        slowdowns => page.slowdowns.iter().enumerate().map(|(i, sd)| context! {
            id => if i == 0 { "slowdown".to_string() } else { format!("slowdown-{}", i + 1) },
            a => sd.a.describe(),
            b => sd.b.describe(),
            rule => &sd.rule,
            method => if sd.options.rule == crate::analysis::Rule::Paper {
                "the authors' method: per function the mean of every timed call on B over the same on A"
            } else {
                "per function, B's median time over A's"
            },
            histogram => slowdown::histogram(sd),
            cdf => slowdown::cdf(sd),
            caption => slowdown::caption(sd),
            compared => sd.functions.len(),
            threshold => sd.options.threshold,
        }).collect::<Vec<_>>(),
        frameworks_table => (!page.frameworks.rows.is_empty()).then(|| super::frameworks::grid(page.frameworks)),
        frameworks_count => page.frameworks.rows.len(),
        frameworks_notes => super::frameworks::summary_lines(page.frameworks),
        modes_table => (!page.modes.rows.is_empty()).then(|| super::modes::grid(page.modes)),
        modes_count => page.modes.rows.len(),
        modes_rule => &page.modes.rule,
    })?;
    Ok(page + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::portability::tests::report;

    /// No cross-framework rows and no compiled targets: those sections are left out.
    fn empty_sections() -> (FrameworkTable, ModesReport) {
        let run = crate::analysis::portability::tests::run_summary();
        (
            crate::analysis::frameworks::build(run.id, &[], &[], &[], &|_| true),
            crate::analysis::modes::build(&run, &[], &[], None, crate::analysis::modes::View::Compiled),
        )
    }

    #[test]
    fn html_snapshot() {
        let m = crate::analysis::dtypes::build(
            7,
            crate::model::RunSource::Live,
            &crate::analysis::portability::tests::results(),
            &[],
            &|_| true,
        );
        let (f, mo) = empty_sections();
        let html = render(&Page { report: &report(), dtypes: &m, slowdowns: &[], frameworks: &f, modes: &mo }).unwrap();
        assert!(html.contains("Dtype matrix of"), "{html}");
        assert!(html.contains("default-src 'none'"), "{html}");
        assert!(!html.contains("src=\"http") && !html.contains("href=\"http"), "nothing fetched: {html}");
        insta::assert_snapshot!("html", html);
    }

    #[test]
    fn an_empty_run_renders() {
        let rep =
            crate::analysis::build(&crate::analysis::portability::tests::run_summary(), &[], &[], &Default::default());
        let m = crate::analysis::dtypes::build(0, crate::model::RunSource::Live, &[], &[], &|_| true);
        let (f, mo) = empty_sections();
        let html = render(&Page { report: &rep, dtypes: &m, slowdowns: &[], frameworks: &f, modes: &mo }).unwrap();
        assert!(html.contains("No results to report.") && html.contains("No dtype results."), "{html}");
    }
}
