//! The SQLite side of [`super::conn::Conn`] (rusqlite, bundled SQLite): cached statements whose
//! `$1..$N` parameters SQLite binds in order, [`Value`]s bound and read, and opening a store
//! file — checking its header first, WAL journal and foreign keys on, or read-only (SQLite's
//! `mode=ro`, then `immutable=1`) for stores the user cannot write.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{CachedStatement, Connection, OpenFlags};

use super::error::StoreError;
use super::location::Location;
use super::value::{ColumnError, DbError, Row, Value};

/// How long a writer waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Opens (creating when missing) the file to read and write; the caller identifies it before
/// [`setup`] changes anything.
pub fn open(path: &Path) -> Result<Connection, StoreError> {
    check_header(path)?;
    let conn = Connection::open(path).map_err(|e| err(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| err(path, e))?;
    Ok(conn)
}

/// Lines of `PRAGMA quick_check`'s findings quoted in an error.
const CHECK_LINES: usize = 5;

/// Runs SQLite's `PRAGMA quick_check` (every page and index structure read, in O(N); not the
/// full `integrity_check`'s index-against-table comparison): `Ok` when it says `ok`.
///
/// Errors: [`StoreError::Invalid`] naming the file and quoting SQLite's first findings (or its
/// error, for a file too damaged to check), with what to do.
pub fn quick_check(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let found: Result<Vec<String>, rusqlite::Error> =
        conn.prepare("PRAGMA quick_check").and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect());
    let findings = match found {
        Ok(lines) if lines.len() == 1 && lines[0] == "ok" => return Ok(()),
        Ok(lines) => lines,
        Err(e) => vec![e.to_string()],
    };
    let more = findings.len().saturating_sub(CHECK_LINES);
    let mut what = format!(
        "the store is damaged (SQLite's quick_check: {}{})",
        findings.iter().take(CHECK_LINES).cloned().collect::<Vec<_>>().join("; "),
        if more > 0 { format!("; and {more} more") } else { String::new() }
    );
    what.push_str(
        "; nothing was written to it. Restore it from a copy, or read what is left with `sqlite3 FILE .recover`",
    );
    Err(StoreError::Invalid { store: Location::from(path), what })
}

/// Page cache of a writing connection, in KiB (SQLite's `cache_size` takes a negative
/// number as KiB): 64 MiB, taken only as pages are touched. SQLite's default of 2 MiB is
/// smaller than one transaction importing 100,000 tests (about 40 MB of rows and indexes),
/// which then spills dirty pages to the write-ahead log mid-transaction (`pagerStress`).
const CACHE_KIB: i64 = 64 * 1024;

/// Turns foreign keys on and the journal to WAL, once the file is known to be an mlport store
/// (or empty); sizes the page cache ([`CACHE_KIB`]) and keeps temporary files — the statement
/// journals of multi-row inserts and upserts inside a transaction — in memory.
pub fn setup(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    conn.pragma_update(None, "foreign_keys", true).map_err(|e| err(path, e))?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB).map_err(|e| err(path, e))?;
    conn.pragma_update(None, "temp_store", "MEMORY").map_err(|e| err(path, e))?;
    let _mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(|e| err(path, e))?;
    Ok(())
}

/// Opens an existing store without ever writing to it: SQLite's read-only mode, then
/// `immutable=1` (for a WAL-mode store whose `-shm` file cannot be created beside it).
///
/// Errors: a missing or empty file, a write-ahead log holding changes that `immutable=1` would
/// not see, and SQLite's own, each naming the file.
pub fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let invalid = |what: String| StoreError::Invalid { store: Location::from(path), what };
    if !path.exists() {
        return Err(StoreError::Io {
            store: Location::from(path),
            source: io::Error::new(io::ErrorKind::NotFound, "no such store"),
        });
    }
    check_header(path)?;
    if std::fs::metadata(path).map(|m| m.len() == 0).unwrap_or(false) {
        return Err(invalid("the file is empty: no mlport store has been written to it".into()));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // `immutable=1` reads the main file alone: only safe when no write-ahead log holds
    // committed changes beside it (a store copied or archived mid-run keeps them there).
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal_has_data = std::fs::metadata(&wal).map(|m| m.len() > 0).unwrap_or(false);
    let mut last = None;
    for query in ["mode=ro", "immutable=1"] {
        if query == "immutable=1" && wal_has_data {
            return Err(invalid(format!(
                "cannot read it here: its write-ahead log {} holds changes not yet in the store, and SQLite \
                 needs to create {}-shm beside it to read them (the folder is read-only); open it once \
                 where it can be written (any mlport command folds the log in), or copy both files \
                 somewhere writable",
                Path::new(&wal).display(),
                path.display()
            )));
        }
        let uri = format!("{}?{query}", file_uri(path));
        let attempt = Connection::open_with_flags(&uri, flags).and_then(|conn| {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            // Reading the schema is where a WAL store without a creatable -shm fails.
            conn.prepare("SELECT name FROM sqlite_master")?.query([])?.next()?;
            Ok(conn)
        });
        match attempt {
            Ok(conn) => return Ok(conn),
            Err(e) => last = Some(e),
        }
    }
    Err(err(path, last.expect("two attempts were made")))
}

fn err(path: &Path, e: rusqlite::Error) -> StoreError {
    super::error::Ctx(&Location::from(path)).db(DbError::Sqlite(e))
}

/// Prepares (and caches) a statement; in debug builds checks that its parameters are
/// `$1..$N` in order of first use, which SQLite then binds positionally like PostgreSQL.
pub fn prepare<'c>(conn: &'c Connection, sql: &str) -> rusqlite::Result<CachedStatement<'c>> {
    let stmt = conn.prepare_cached(sql)?;
    debug_assert!(
        (1..=stmt.parameter_count()).all(|i| stmt.parameter_name(i) == Some(format!("${i}").as_str())),
        "parameters must be $1..$N in order of first use: {sql}"
    );
    Ok(stmt)
}

/// Reads a row's `columns` columns as [`Value`]s.
pub fn row(row: &rusqlite::Row<'_>, columns: usize) -> Result<Row, DbError> {
    let mut values = Vec::with_capacity(columns);
    for index in 0..columns {
        values.push(match row.get_ref(index)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Int(i),
            ValueRef::Real(x) => Value::Real(x),
            ValueRef::Text(t) => Value::Text(
                String::from_utf8(t.to_vec())
                    .map_err(|e| ColumnError { index, what: format!("text that is not UTF-8: {e}") })?,
            ),
            ValueRef::Blob(_) => {
                return Err(ColumnError { index, what: "a blob, which mlport never writes".into() }.into());
            }
        });
    }
    Ok(Row(values))
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Owned(rusqlite::types::Value::Null),
            Value::Int(i) => ToSqlOutput::Owned(rusqlite::types::Value::Integer(*i)),
            Value::Real(x) => ToSqlOutput::Owned(rusqlite::types::Value::Real(*x)),
            Value::Bool(b) => ToSqlOutput::Owned(rusqlite::types::Value::Integer(i64::from(*b))),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Ints(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure("SQLite has no arrays to bind a list to".into()));
            }
        })
    }
}

/// Rejects an existing, non-empty file that does not start with SQLite's header.
/// A missing or empty file is fine: SQLite creates the database in it.
fn check_header(path: &Path) -> Result<(), StoreError> {
    let io_err = |source| StoreError::Io { store: Location::from(path), source };
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(e)),
    };
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    file.by_ref().take(SQLITE_HEADER.len() as u64).read_to_end(&mut head).map_err(io_err)?;
    if head.is_empty() || head == SQLITE_HEADER {
        Ok(())
    } else {
        Err(StoreError::NotSqlite { store: Location::from(path) })
    }
}

/// `path` as an SQLite `file:` URI: absolute, leading slashes collapsed to one (SQLite reads
/// `file://x/` as an authority), and every byte but ASCII letters, digits and `/._-~`
/// percent-encoded, so any file name (non-UTF-8 included) reaches SQLite byte for byte.
fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let bytes = abs.as_os_str().as_bytes();
    let start = bytes.iter().take_while(|b| **b == b'/').count().saturating_sub(1);
    let mut uri = String::from("file:");
    for &b in &bytes[start..] {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_escape_what_sqlite_would_read_as_syntax() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(file_uri(Path::new("/a b/c%d?e#f.db")), "file:/a%20b/c%25d%3Fe%23f.db");
        assert_eq!(file_uri(Path::new("//tmp/s.db")), "file:/tmp/s.db");
        let odd = std::ffi::OsStr::from_bytes(b"/t/bad\xff\xc3\xa9.db");
        assert_eq!(file_uri(Path::new(odd)), "file:/t/bad%FF%C3%A9.db");
    }
}
