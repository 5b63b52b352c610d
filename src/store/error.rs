//! Why a store operation failed ([`StoreError`], every variant naming the store: its file, or
//! its PostgreSQL URL without the password), and the small context that builds those errors.

use std::io;

use serde::Serialize;

use super::location::Location;
use super::value::{ColumnError, DbError};

/// Why a store operation failed. Every variant names the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{store} is not an SQLite database")]
    NotSqlite { store: Location },
    #[error("{store} is {} database but not an mlport store{}", .store.engine(), not_mlport_hint(.store))]
    NotMlport { store: Location },
    #[error("{store} has schema version {found}, newer than this mlport supports ({supported}); use a newer mlport")]
    TooNew { store: Location, found: i64, supported: i64 },
    #[error("{store}: cannot read the file")]
    Io {
        store: Location,
        #[source]
        source: io::Error,
    },
    #[error("{store}: SQLite error")]
    Sqlite {
        store: Location,
        #[source]
        source: rusqlite::Error,
    },
    /// The PostgreSQL server could not be reached or refused the connection; `hint` says what to fix.
    #[error("{store}: cannot connect: {hint}")]
    Connect {
        store: Location,
        hint: String,
        #[source]
        source: postgres::Error,
    },
    /// The connection to the PostgreSQL server was lost and no reconnection succeeded within
    /// `waited` (`MLPORT_DB_RETRY_SECS`, 60 s by default); the source is the last attempt's error.
    /// Everything committed before is in the database.
    #[error(
        "{store}: lost the connection to the server and could not reconnect within {waited} \
         (MLPORT_DB_RETRY_SECS); everything committed before is kept"
    )]
    Unreachable {
        store: Location,
        waited: String,
        #[source]
        source: Box<StoreError>,
    },
    /// Another process executes the run: it claimed it ([`super::Store::claim_run`]) first, or
    /// (`again`) while this one's connection was lost.
    /// `holder` names the process holding it (its `application_name`, client address, since
    /// when, server process id) when the server still lists it.
    #[error(
        "{store}: run {run} {}{}: wait for it to end, or stop it, then run again to continue it (a process \
         whose machine died loses its claim when the server notices, within about a minute)",
        if *.again {
            "was taken over by another mlport process while the connection was lost, so this one stops (every \
             case it finished is stored)"
        } else {
            "is being executed by another mlport process, on this machine or another, connected to this store"
        },
        if .holder.is_empty() { String::new() } else { format!(" — {}", .holder) }
    )]
    Claimed { store: Location, run: i64, again: bool, holder: String },
    #[error("{store}: PostgreSQL error")]
    Postgres {
        store: Location,
        #[source]
        source: postgres::Error,
    },
    /// A stored value that does not read as what the store wrote (the source names the column).
    #[error("{store}: a stored value does not read back")]
    Column {
        store: Location,
        #[source]
        source: ColumnError,
    },
    #[error("{store}: no run with id {id}")]
    UnknownRun { store: Location, id: i64 },
    #[error("{store}: run {run} has no case `{key}`")]
    UnknownCase { store: Location, run: i64, key: String },
    /// The caller asked for something the store cannot hold (duplicate keys, a case
    /// naming an unplanned function, an unknown run state, a value out of range).
    #[error("{store}: {what}")]
    Invalid { store: Location, what: String },
}

/// What to do about a database that is not mlport's: nothing for an SQLite file (name another
/// path), for PostgreSQL the database to use instead.
fn not_mlport_hint(store: &Location) -> &'static str {
    match store {
        Location::Sqlite(_) => "",
        Location::Postgres(_) => {
            " (it has tables and no meta.application = 'mlport'); name an empty database \
             (createdb NAME) or one mlport made"
        }
    }
}

impl StoreError {
    /// Whether the error says the store (or its folder) cannot be written: SQLite's
    /// `SQLITE_READONLY*` and `SQLITE_CANTOPEN`, or an I/O permission error.
    pub fn is_read_only(&self) -> bool {
        match self {
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
            ),
            StoreError::Io { source, .. } => source.kind() == io::ErrorKind::PermissionDenied,
            _ => false,
        }
    }

    /// Whether the PostgreSQL connection was lost (the server went away or is restarting):
    /// the store reconnects and runs the whole transaction again.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            StoreError::Postgres { source, .. } => super::postgres::is_connection_lost(source),
            _ => false,
        }
    }

    /// Whether the PostgreSQL server stayed away longer than the store keeps reconnecting
    /// ([`StoreError::Unreachable`]): what was committed before is kept, and the work can be
    /// continued once the server is back.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }

    /// The store the error names.
    pub fn store(&self) -> &Location {
        match self {
            StoreError::NotSqlite { store }
            | StoreError::NotMlport { store }
            | StoreError::TooNew { store, .. }
            | StoreError::Io { store, .. }
            | StoreError::Sqlite { store, .. }
            | StoreError::Connect { store, .. }
            | StoreError::Unreachable { store, .. }
            | StoreError::Claimed { store, .. }
            | StoreError::Postgres { store, .. }
            | StoreError::Column { store, .. }
            | StoreError::UnknownRun { store, .. }
            | StoreError::UnknownCase { store, .. }
            | StoreError::Invalid { store, .. } => store,
        }
    }
}

/// Builds errors that name one store; borrowed alongside a mutably borrowed connection.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a>(pub(super) &'a Location);

impl Ctx<'_> {
    pub(super) fn db(self, source: DbError) -> StoreError {
        let store = self.0.clone();
        match source {
            DbError::Sqlite(source) => {
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
                    return StoreError::NotSqlite { store };
                }
                StoreError::Sqlite { store, source }
            }
            DbError::Postgres(source) => StoreError::Postgres { store, source },
            DbError::Column(source) => StoreError::Column { store, source },
        }
    }

    pub(super) fn invalid(self, what: impl Into<String>) -> StoreError {
        StoreError::Invalid { store: self.0.clone(), what: what.into() }
    }

    pub(super) fn unknown_run(self, id: i64) -> StoreError {
        StoreError::UnknownRun { store: self.0.clone(), id }
    }

    pub(super) fn int(self, value: u64, what: &str) -> Result<i64, StoreError> {
        i64::try_from(value).map_err(|_| self.invalid(format!("{what} {value} does not fit a 64-bit signed integer")))
    }

    pub(super) fn json(self, value: &impl Serialize, what: &str) -> Result<String, StoreError> {
        serde_json::to_string(value).map_err(|e| self.invalid(format!("cannot encode {what} as JSON: {e}")))
    }
}

/// Lets `?` turn an engine error into a [`StoreError`] once [`Ctx::db`] has named the store.
pub(super) trait OrStore<T> {
    fn or_store(self, ctx: Ctx<'_>) -> Result<T, StoreError>;
}

impl<T, E: Into<DbError>> OrStore<T> for Result<T, E> {
    fn or_store(self, ctx: Ctx<'_>) -> Result<T, StoreError> {
        self.map_err(|e| ctx.db(e.into()))
    }
}
