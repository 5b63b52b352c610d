//! Durable storage of runs, cases and results: the record types every backend reads
//! and writes, the SQL schema with its migrations, and the SQLite store.

pub mod records;
pub mod schema;
mod sqlite;

pub use records::{
    CaseResult, CaseRow, ComparisonRow, DeviceInfo, FrameworkInfo, FunctionRow, ReferenceRow, ResultRow, RunData,
    RunInfo, RunOrigin, RunSource, RunSummary,
};
pub use sqlite::{Store, StoreError};
