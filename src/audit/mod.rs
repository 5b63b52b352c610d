//! `mlport audit`: a code base's framework calls ([`crate::scan`]) joined with measured
//! results on a target device: status, reason and slowdown per function the code calls,
//! unknown where no run measured it.

pub mod join;

pub use join::{AuditOptions, AuditReport, AuditRow, Finding, UnresolvedUse, audit, catalogue_drafts};
