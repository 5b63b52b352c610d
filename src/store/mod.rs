//! Durable storage of runs, cases and results: the SQL schema with its migrations, and the
//! SQLite store. The records it reads and writes are [`crate::model`]'s.

pub mod schema;
mod sqlite;

pub use sqlite::{Store, StoreError};
