//! Outcomes of cases: the only code that sets a case's [`Outcome`](crate::model::Outcome) and
//! failure [`Reason`](crate::model::Reason) (DESIGN.md, "failure reasons"). Every way a case can
//! end has one function here, and callers write the [`Decision`] it returns:
//! - an exception the worker (or a pytest report) reported: [`classify`], the numbered rules
//!   tested on captured real errors, reached through [`answered`] and [`imported`];
//! - the worker's answer: [`answered`] (pass, fail with its classified reason, `recompiles`
//!   through [`recompiled`], an answer that makes no sense: [`harness_error`]);
//! - the core's clock and the worker's pipe: [`timeout`], [`crash`], [`harness_error`] (protocol
//!   errors); a case the catalogue skips: [`skipped`];
//! - the verdict of comparing a passing result's outputs with a reference: [`wrong_result`];
//! - a test of an imported suite (pytest-json-report, the paper's data): [`imported`].
//!
//! The runner, the comparisons, the store and the importers call these; the store only persists
//! what they decided.

mod classify;
mod decision;
mod imported;
mod live;
mod verdict;

pub use classify::{ErrorReport, classify};
pub use decision::Decision;
pub use imported::{TestEnding, TestFailure, imported};
pub use live::{Answer, answered, crash, harness_error, recompiled, skipped, timeout};
pub use verdict::wrong_result;
