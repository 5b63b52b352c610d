//! Outcomes of cases: the only code that sets a case's [`Outcome`](crate::model::Outcome) and
//! failure [`Reason`](crate::model::Reason) (docs/architecture.md, "Words"). Every way a case can
//! end has one function here, and callers write the [`Decision`] it returns:
//! - an exception the worker (or a pytest report) reported: [`classify`], the numbered rules
//!   tested on captured real errors, reached through [`answered`] and [`imported`];
//! - the worker's answer: [`answered`] (pass, fail with its classified reason, `recompiles`
//!   through [`recompiled`], an answer that makes no sense: [`harness_error`]);
//! - the core's clock and the worker's pipe: [`timeout`], [`crash`] (an out-of-memory kill among
//!   them, not retried: [`retry_crash`]), [`harness_error`] (protocol errors); a case the catalogue skips: [`skipped`];
//! - the verdict of comparing a passing result's outputs with a reference: [`wrong_result`]
//!   (values, reason `wrong_result`; a silent dtype change, reason `dtype_changed`), and an
//!   answer whose outputs are not of the case's declared `out_dtype`: [`declared_dtype`];
//! - a test of an imported suite (pytest-json-report, the paper's data): [`imported`].
//!
//! The runner, the comparisons, the store and the importers call these; the store only persists
//! what they decided.

mod classify;
mod decision;
mod dtype;
mod imported;
mod live;
mod verdict;

pub use classify::{ErrorReport, classify};
pub use decision::Decision;
pub use dtype::{Expected, declared_at, declared_dtype, expected_dtype, expected_of, leaf_admitted};
pub use imported::{TestEnding, TestFailure, imported};
pub use live::{Answer, answered, crash, harness_error, recompiled, retry_crash, skipped, timeout};
pub use verdict::{against_target, wrong_result};
