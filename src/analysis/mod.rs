//! What the stored results mean, computed and never formatted: the portability of each
//! framework on each target by the paper's definitions ([`portability`]), the slowdown
//! between two targets ([`slowdown`]), eager against compiled execution ([`modes`]), the
//! dtype matrix ([`dtypes`]), the cross-framework agreement table ([`frameworks`]) and what
//! changed between two runs ([`diff`]); the paper's TPU v3 statuses beside today's `xla:0`
//! ([`paper_compare`]); the paper's figures from its raw data, both methods ([`paper`]; the
//! authors' latency by their own plotting code, [`paper_plotting`]); a campaign's runs of many
//! shards and machines read as one, per machine ([`campaign`]).
//! [`crate::render`] turns each result into text.

pub mod campaign;
pub mod coverage;
pub mod diff;
pub mod dtypes;
pub mod excerpt;
pub mod frameworks;
pub mod modes;
pub mod ops;
pub mod paper;
pub mod paper_compare;
pub mod paper_plotting;
pub mod portability;
pub mod slowdown;
pub mod stops;
pub mod suite;
pub mod workloads;

pub use excerpt::excerpt;
pub use portability::{
    Attribution, CaseFailure, FunctionSummary, HarnessError, PortabilityReport, ReportOptions, RunHeader,
    TargetSummary, build, percent_of, rule_text, rule_text_for,
};
pub use slowdown::{Measure, Rule, SlowdownOptions, SlowdownReport};
