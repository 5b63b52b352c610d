//! Durable storage of runs, cases and results: the SQL schema with its migrations, written once
//! for both engines — SQLite (a file, the default) and PostgreSQL (a server many machines write
//! to at once) — behind one [`Store`]. The records it reads and writes are [`crate::model`]'s.

mod agreement;
mod append;
mod claim;
mod conn;
mod error;
mod history;
pub mod location;
mod open;
mod postgres;
mod records;
mod runs;
pub mod schema;
mod sqlite;
mod value;

pub use error::StoreError;
pub use location::{Location, LocationError, PgUrl};
pub use open::{RETRY_FOR, Store};
pub use records::{Imported, supersedes};
pub use value::{ToValue, Value};
