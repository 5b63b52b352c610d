//! The portability report: what stored results say about each framework on each
//! device, by the paper's definitions, rendered as a terminal table, Markdown or
//! versioned JSON.

mod json;
mod markdown;
mod render;
mod summary;
mod table;

pub use json::{FORMAT as JSON_FORMAT, FUNCTIONS_FORMAT as JSON_FUNCTIONS_FORMAT, VERSION as JSON_VERSION};
pub use render::{Format, render, render_functions};
pub use summary::{
    Attribution, FunctionSummary, HarnessError, PortabilityReport, ReportOptions, RunHeader, TargetSummary, build,
    rule_text, rule_text_for,
};
