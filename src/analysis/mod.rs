//! What the stored results mean, computed and never formatted: the portability of each
//! framework on each target by the paper's definitions ([`portability`]), the slowdown
//! between two targets ([`slowdown`]), eager against compiled execution ([`modes`]), the
//! dtype matrix ([`dtypes`]) and the cross-framework agreement table ([`frameworks`]).
//! [`crate::render`] turns each result into text.

pub mod dtypes;
pub mod frameworks;
pub mod modes;
pub mod portability;
pub mod slowdown;

pub use portability::{
    Attribution, CaseFailure, FunctionSummary, HarnessError, PortabilityReport, ReportOptions, RunHeader,
    TargetSummary, build, percent_of, rule_text, rule_text_for,
};
pub use slowdown::{Measure, SlowdownOptions, SlowdownReport};
