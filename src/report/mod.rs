//! The portability report: what stored results say about each framework on each
//! device, by the paper's definitions, rendered as a terminal table, Markdown, versioned
//! JSON or CSV; the overview of several runs ([`overview`]); and the slowdown between two
//! devices ([`slowdown`]); eager against compiled execution ([`modes`]).

pub mod dtypes;
pub mod frameworks;
mod grid;
mod json;
mod markdown;
pub mod modes;
pub mod overview;
mod render;
pub mod slowdown;
mod summary;
mod table;

pub use json::{
    BUNDLE_FORMAT as JSON_BUNDLE_FORMAT, FORMAT as JSON_FORMAT, FUNCTIONS_FORMAT as JSON_FUNCTIONS_FORMAT,
    VERSION as JSON_VERSION,
};
pub use render::{Format, latency, render, render_functions, render_with_functions};
pub use slowdown::{Measure, SlowdownOptions, SlowdownReport};
pub use summary::{
    Attribution, FunctionSummary, HarnessError, PortabilityReport, ReportOptions, RunHeader, TargetSummary, build,
    rule_text, rule_text_for,
};
