//! `mlport audit`: a code base's framework calls ([`crate::scan`]) joined with measured
//! results on a target device: status, reason and slowdown per function the code calls,
//! unknown where no run measured it. Rendered by [`crate::render::audit`].

pub mod join;

pub use join::{AuditOptions, AuditReport, AuditRow, Finding, UnresolvedUse, audit, catalogue_drafts};
