//! Durable storage of runs, cases and results: the SQL schema with its migrations, and the
//! SQLite store. The records it reads and writes are [`crate::model`]'s.

pub mod schema;
mod sqlite;

// Re-exported from their old home for callers not yet moved to `crate::model`.
pub use crate::model::{
    CaseResult, CaseRow, ComparisonRow, DeviceInfo, FrameworkInfo, FunctionRow, ReferenceRow, ResultRow, RunData,
    RunInfo, RunOrigin, RunSource, RunState, RunSummary,
};
pub use sqlite::{Store, StoreError};
