//! The CSV rendering of a portability report: the summary is the overview's row format
//! ([`crate::render::overview`]) for this one run; the per-function detail lists every
//! function with a result on every target.

use crate::analysis::PortabilityReport;
use crate::render::Format;
use crate::render::csv::Csv;

/// The summary: the overview's CSV of this run alone.
pub(super) fn report(report: &PortabilityReport) -> String {
    crate::render::report::to_text(&crate::render::overview::Overview(std::slice::from_ref(report)), Format::Csv)
}

/// Per-function CSV of one report: every function with a result on every target.
pub fn functions(r: &PortabilityReport) -> String {
    let mut out = Csv::new();
    out.row([
        "run",
        "framework",
        "device",
        "function",
        "status",
        "passed",
        "unchecked",
        "failed",
        "wrong_result",
        "wrong_everywhere",
        "dtype_changed",
        "not_attributable",
        "reasons",
    ]);
    for t in &r.targets {
        for f in &t.functions {
            let reasons: Vec<String> = f.reasons.iter().map(|(r, n)| format!("{r}={n}")).collect();
            out.row([
                r.run.id.to_string(),
                t.framework.to_string(),
                t.device.to_string(),
                f.name.clone(),
                f.status.map_or("not_run", |s| s.as_str()).to_string(),
                f.passed.to_string(),
                f.unchecked.to_string(),
                f.failed.to_string(),
                f.wrong.to_string(),
                f.wrong_everywhere.to_string(),
                f.dtype_changed.to_string(),
                f.not_attributable.to_string(),
                reasons.join(";"),
            ]);
        }
    }
    out.finish()
}
