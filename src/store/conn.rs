//! One connection API over both engines, so the store's SQL is written once: statements in
//! the common subset (see [`super::schema`]) with `$1..$N` parameters (PostgreSQL's own
//! spelling, which SQLite reads as numbered parameters bound in order), typed parameter
//! values ([`Value`]) converted to what each engine's column wants, and rows read back as
//! [`Row`]s of the same values. Transactions are plain `BEGIN` (SQLite: `BEGIN IMMEDIATE`, so a
//! writer waits for the write lock up front instead of failing at commit) / `COMMIT`.

use super::postgres::PgConn;
use super::schema::Dialect;
use super::value::{ColumnError, DbError, FromValue, Row, Value};

/// An open connection to either engine.
pub enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(Box<PgConn>),
}

impl Conn {
    /// The engine's dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs one statement; returns the rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        match self {
            Conn::Sqlite(c) => Ok(super::sqlite::prepare(c, sql)?.execute(rusqlite::params_from_iter(params))? as u64),
            Conn::Postgres(c) => c.execute(sql, params),
        }
    }

    /// Runs one query and maps every row with `f`, in the order returned.
    pub fn query<T>(
        &mut self,
        sql: &str,
        params: &[Value],
        mut f: impl FnMut(&Row) -> Result<T, ColumnError>,
    ) -> Result<Vec<T>, DbError> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = super::sqlite::prepare(c, sql)?;
                let columns = stmt.column_count();
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(f(&super::sqlite::row(row, columns)?)?);
                }
                Ok(out)
            }
            Conn::Postgres(c) => c.query(sql, params)?.iter().map(|r| f(r).map_err(DbError::from)).collect(),
        }
    }

    /// The first row of a query mapped with `f`, `None` when it returns none.
    pub fn query_opt<T>(
        &mut self,
        sql: &str,
        params: &[Value],
        f: impl FnMut(&Row) -> Result<T, ColumnError>,
    ) -> Result<Option<T>, DbError> {
        Ok(self.query(sql, params, f)?.into_iter().next())
    }

    /// The first column of the first row of a query that always returns one (a count, an
    /// aggregate, `RETURNING id`).
    pub fn query_value<T: FromValue>(&mut self, sql: &str, params: &[Value]) -> Result<T, DbError> {
        match self.query_opt(sql, params, |r| r.get(0))? {
            Some(v) => Ok(v),
            None => Err(DbError::Column(ColumnError { index: 0, what: format!("no row returned by: {sql}") })),
        }
    }

    /// Runs several statements without parameters (a migration).
    pub fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Conn::Postgres(c) => c.batch(sql),
        }
    }

    /// Starts a transaction that will write (SQLite: takes the write lock now).
    pub fn begin(&mut self) -> Result<(), DbError> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch("BEGIN IMMEDIATE")?),
            Conn::Postgres(c) => c.batch("BEGIN"),
        }
    }

    /// Commits the transaction [`Conn::begin`] started.
    pub fn commit(&mut self) -> Result<(), DbError> {
        self.batch("COMMIT")
    }

    /// Rolls the transaction back; a connection already lost has nothing to roll back.
    pub fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }

    /// Names of the database's own tables (SQLite: not its `sqlite_*` ones; PostgreSQL: those
    /// in the connection's current schema).
    pub fn user_tables(&mut self) -> Result<std::collections::HashSet<String>, DbError> {
        let sql = match self.dialect() {
            Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            Dialect::Postgres => {
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()"
            }
        };
        Ok(self.query(sql, &[], |r| r.get(0))?.into_iter().collect())
    }
}
