//! Outcomes of cases: turning what a worker reported into mlport's vocabulary
//! (DESIGN.md, "failure reason taxonomy").

mod classify;

pub use classify::{ErrorReport, classify};
