//! One connection API over both engines, so the store's SQL is written once: statements in
//! the common subset (see [`super::schema`]) with `$1..$N` parameters (PostgreSQL's own
//! spelling, which SQLite reads as numbered parameters bound in order), typed parameter
//! values ([`Value`]) converted to what each engine's column wants, and rows read back as
//! [`Row`]s of the same values. Transactions are plain `BEGIN` (SQLite: `BEGIN IMMEDIATE`, so a
//! writer waits for the write lock up front instead of failing at commit) / `COMMIT`.

use super::postgres::PgConn;
use super::schema::Dialect;
use super::value::{ColumnError, DbError, FromValue, Row, Value};

/// Rows per statement in [`Conn::insert_rows`]: 256 rows of up to 127 values stay under
/// SQLite's default limit of 32,766 parameters (`SQLITE_MAX_VARIABLE_NUMBER` since 3.32) and
/// PostgreSQL's 65,535; a fixed size keeps the statement text (and its prepared statement)
/// the same for every full chunk.
const ROWS_PER_INSERT: usize = 256;

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

    /// Inserts `rows` (each the same number of values, in `head`'s column order) and maps the
    /// rows each statement returns (`tail` may hold `ON CONFLICT` and `RETURNING`) with `f`.
    /// PostgreSQL: multi-row statements `{head} VALUES ($1, ..), (..) {tail}`,
    /// [`ROWS_PER_INSERT`] rows each — one round trip per 256 rows instead of one per row, so a
    /// plan of 4,000 cases is written in 16 statements. SQLite (in-process, no round trips):
    /// one prepared single-row statement run per row, which needs no statement journal — a
    /// multi-row statement inside a transaction copies every page it touches to one, and that
    /// was a quarter of importing 100,000 tests (`benches/import_pytest.rs`). The order of
    /// returned rows is not guaranteed (neither engine promises it for `RETURNING`): return a
    /// key with each.
    ///
    /// Errors: the engine's, for the first statement that fails (the caller's transaction
    /// rolls the others back).
    pub fn insert_rows<T>(
        &mut self,
        head: &str,
        tail: &str,
        rows: &[Vec<Value>],
        mut f: impl FnMut(&Row) -> Result<T, ColumnError>,
    ) -> Result<Vec<T>, DbError> {
        let Some(width) = rows.first().map(Vec::len) else { return Ok(Vec::new()) };
        assert!(rows.iter().all(|r| r.len() == width), "insert_rows: rows of different widths for {head}");
        let mut out = Vec::with_capacity(rows.len());
        if let Conn::Sqlite(c) = self {
            let sql = format!("{head} VALUES {} {tail}", placeholders(1, width));
            let mut stmt = super::sqlite::prepare(c, &sql)?;
            let columns = stmt.column_count();
            for row in rows {
                let mut returned = stmt.query(rusqlite::params_from_iter(row))?;
                while let Some(r) = returned.next()? {
                    out.push(f(&super::sqlite::row(r, columns)?)?);
                }
            }
            return Ok(out);
        }
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let sql = format!("{head} VALUES {} {tail}", placeholders(chunk.len(), width));
            let params: Vec<Value> = chunk.iter().flatten().cloned().collect();
            out.extend(self.query(&sql, &params, &mut f)?);
        }
        Ok(out)
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

/// `($1, $2), ($3, $4)` for 2 rows of width 2: the VALUES list of a multi-row insert, its
/// parameters numbered row by row.
fn placeholders(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|r| {
            let row: Vec<String> = (1..=width).map(|c| format!("${}", r * width + c)).collect();
            format!("({})", row.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    #[test]
    fn placeholders_number_parameters_row_by_row() {
        assert_eq!(placeholders(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(placeholders(1, 1), "($1)");
    }

    /// 600 rows (three statements: 256, 256, 88) into a real SQLite file, each returned once
    /// with its key; an empty list runs nothing.
    #[test]
    fn insert_rows_writes_every_row_across_chunks_and_returns_each() {
        let tmp = tempfile::tempdir().unwrap();
        let mut conn = Conn::Sqlite(rusqlite::Connection::open(tmp.path().join("t.db")).unwrap());
        conn.batch("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE, v INTEGER)").unwrap();
        let rows: Vec<Vec<Value>> = (0..600).map(|i| params![format!("k{i}"), i * 7].to_vec()).collect();
        let mut back: Vec<(String, i64)> =
            conn.insert_rows("INSERT INTO t (k, v)", "RETURNING k, id", &rows, |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!(back.len(), 600);
        back.sort_by_key(|(_, id)| *id);
        assert_eq!(back[599].0, "k599");
        let sum: i64 = conn.query_value("SELECT SUM(v) FROM t", &[]).unwrap();
        assert_eq!(sum, 7 * (0..600).sum::<i64>());
        let none: Vec<i64> = conn.insert_rows("INSERT INTO t (k, v)", "", &[], |r| r.get(0)).unwrap();
        assert!(none.is_empty());
    }
}
