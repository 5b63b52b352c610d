//! Opening a store on either engine: identifying it (an empty database, an mlport store of a
//! known schema version, or someone else's, left untouched), migrating it under a lock, and
//! running every read and write through one connection — each write one transaction,
//! committed before the call returns. On PostgreSQL a lost connection (the server restarted,
//! the network dropped) is reconnected with backoff for up to [`RETRY_FOR`] and the
//! interrupted transaction run again; every write is safe to repeat (upserts keyed on what
//! makes a row unique), so a retry never doubles a row.

use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::error::{Ctx, OrStore, StoreError};
use super::location::{Location, PgUrl};
use super::postgres::{self as pg, PgConn};
use super::schema::{self, Dialect};
use super::sqlite;
use super::value::DbError;
use crate::params;

/// How long a PostgreSQL store keeps reconnecting after losing its server before the write
/// fails (the run then stops, its finished cases kept, and `--resume` continues it).
/// `MLPORT_DB_RETRY_SECS` overrides it.
pub const RETRY_FOR: Duration = Duration::from_secs(60);

/// The longest pause between two reconnection attempts (they start at 100 ms and double).
const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// The key of the PostgreSQL advisory lock migrations take (`pg_advisory_xact_lock`), so two
/// processes opening one new database migrate it once: "mlport" in ASCII.
const MIGRATION_LOCK: i64 = 0x6d6c_706f_7274;

/// An open mlport store: an SQLite file (WAL journal, foreign keys on) or a PostgreSQL database.
pub struct Store {
    conn: RefCell<Conn>,
    location: Location,
    /// The case ids of the run whose results are being recorded, by case key
    /// ([`Store::case_id`]): read once per run, since a run's cases never change once created.
    case_ids: RefCell<Option<(i64, HashMap<String, i64>)>>,
    /// Set while [`Store::snapshot`] holds a transaction open: a lost connection is then not
    /// retried statement by statement (the retry would read outside the snapshot) but by the
    /// snapshot, whole.
    in_snapshot: std::cell::Cell<bool>,
    /// The runs this process claimed ([`Store::claim_run`]), claimed again after a reconnection.
    pub(super) claims: RefCell<Vec<i64>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("location", &self.location).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the SQLite store at `path`, creating it when the file is missing or empty and
    /// applying any pending migrations otherwise. The file is checked first (SQLite's
    /// `PRAGMA quick_check`): nothing is written to a damaged store.
    ///
    /// Errors: [`StoreError::Invalid`] for a damaged store ([`Store::check`]'s findings),
    /// [`StoreError::NotSqlite`] for a file that is not SQLite,
    /// [`StoreError::NotMlport`] for an SQLite database with tables but no mlport
    /// `meta`/`schema_version` (left untouched), [`StoreError::TooNew`] for a store
    /// written by a newer mlport, and I/O or SQLite errors naming the path.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let store = Store::new(Conn::Sqlite(sqlite::open(path)?), Location::from(path));
        // Identify before changing anything, so a foreign database is never touched.
        let (found, supported) = store.identify_supported()?;
        if let Conn::Sqlite(c) = &*store.conn.borrow() {
            sqlite::quick_check(c, path)?;
            sqlite::setup(c, path)?;
        }
        // Only take the write lock when there is something to apply.
        if found < supported {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Opens the store at `location` to read and write: [`Store::open`] for an SQLite file;
    /// for PostgreSQL, connects, identifies the database (an empty one becomes a store) and
    /// migrates it.
    ///
    /// Errors: [`Store::open`]'s, and for PostgreSQL [`StoreError::Connect`] (no server, a
    /// refused user or password, no such database: the message says which and what to fix),
    /// [`StoreError::NotMlport`] for a database with tables that are not mlport's (left
    /// untouched), [`StoreError::TooNew`].
    pub fn open_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres(url) => {
                let store = Store::connect(url)?;
                store.migrate_if_older()?;
                Ok(store)
            }
        }
    }

    /// Opens an existing SQLite store for reading only, never writing to it: for stores
    /// on read-only media, in folders the user may not write to, or owned by someone else.
    /// Tries SQLite's read-only mode first, then `immutable=1` (SQLite's URI parameter for a
    /// file nobody changes while it is read), which is what a WAL-mode store needs when its
    /// `-shm` file cannot be created beside it.
    ///
    /// Errors: as [`Store::open`], and [`StoreError::Invalid`] naming the file for a store of an
    /// older schema (upgrading it needs write access once).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let store = Store::new(Conn::Sqlite(sqlite::open_read_only(path)?), Location::from(path));
        store.refuse_older()?;
        Ok(store)
    }

    /// Opens the store for writing when that is possible (applying migrations, as
    /// [`Store::open_at`]), else, for an SQLite file that cannot be written, read-only
    /// ([`Store::open_read_only`]): what the commands that only read (reports, `runs`, `audit`,
    /// `repro`) use. An empty SQLite file stays empty: a reader never makes it a store.
    ///
    /// Errors: [`Store::open_read_only`]'s when the store cannot be written;
    /// [`StoreError::Invalid`] for an empty file.
    pub fn open_for_reading(location: &Location) -> Result<Store, StoreError> {
        if let Location::Sqlite(path) = location
            && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0)
        {
            return Err(Ctx(location).invalid(
                "the file is empty: no mlport store has been written to it (run `mlport run` or `mlport import` \
                 with this --db first)",
            ));
        }
        if let Location::Postgres(url) = location {
            // A reader never turns an empty database into a store.
            let store = Store::connect(url)?;
            if store.identify()? == 0 {
                return Err(Ctx(location).invalid(
                    "the database is empty: no mlport store has been written to it (run `mlport run` or \
                     `mlport import` with this --db first)",
                ));
            }
            store.migrate_if_older()?;
            return Ok(store);
        }
        match Store::open_at(location) {
            Err(e)
                if e.is_read_only()
                    && let Location::Sqlite(path) = location =>
            {
                Store::open_read_only(path)
            }
            opened => opened,
        }
    }

    /// Checks an SQLite store's pages and indexes (SQLite's `PRAGMA quick_check`, reading the
    /// whole file once; `mlport runs --check`). `Ok(false)` for PostgreSQL, which keeps its own
    /// checksums: nothing is checked there.
    ///
    /// Errors: [`StoreError::Invalid`] naming the file and SQLite's first findings.
    pub fn check(&self) -> Result<bool, StoreError> {
        match (&*self.conn.borrow(), &self.location) {
            (Conn::Sqlite(c), Location::Sqlite(path)) => sqlite::quick_check(c, path).map(|()| true),
            _ => Ok(false),
        }
    }

    fn connect(url: &PgUrl) -> Result<Store, StoreError> {
        let location = Location::Postgres(Box::new(url.clone()));
        let conn = PgConn::connect(url).map_err(|source| StoreError::Connect {
            hint: pg::connect_hint(url, &source),
            store: location.clone(),
            source,
        })?;
        Ok(Store::new(Conn::Postgres(Box::new(conn)), location))
    }

    fn new(conn: Conn, location: Location) -> Store {
        Store {
            conn: RefCell::new(conn),
            location,
            case_ids: RefCell::new(None),
            in_snapshot: std::cell::Cell::new(false),
            claims: RefCell::new(Vec::new()),
        }
    }

    /// The engine's dialect.
    pub(super) fn dialect(&self) -> Dialect {
        self.conn.borrow().dialect()
    }

    /// The id of case `key` of run `run`. The run's case ids are read in one query the first
    /// time one of its results is recorded and kept (only the latest run's), so recording a
    /// result looks nothing up in the database.
    ///
    /// Errors: [`StoreError::UnknownRun`], [`StoreError::UnknownCase`].
    pub(super) fn case_id(&self, run: i64, key: &str) -> Result<i64, StoreError> {
        let mut cache = self.case_ids.borrow_mut();
        let ids = match &mut *cache {
            Some((cached, ids)) if *cached == run => ids,
            slot => {
                let ids = self.read(|c, ctx| {
                    ensure_run(c, ctx, run)?;
                    c.query("SELECT key, id FROM cases WHERE run_id = $1", params![run], |r| Ok((r.get(0)?, r.get(1)?)))
                        .or_store(ctx)
                })?;
                &mut slot.insert((run, ids.into_iter().collect())).1
            }
        };
        ids.get(key).copied().ok_or_else(|| StoreError::UnknownCase {
            store: self.location.clone(),
            run,
            key: key.into(),
        })
    }

    /// Where this store lives (displays as the file, or the URL without its password).
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Identifies the store and applies the migrations it lacks.
    fn migrate_if_older(&self) -> Result<(), StoreError> {
        let (found, supported) = self.identify_supported()?;
        if found < supported {
            self.migrate()?;
        }
        Ok(())
    }

    /// Refuses a store of an older schema (it cannot be upgraded without writing).
    fn refuse_older(&self) -> Result<(), StoreError> {
        let (found, supported) = self.identify_supported()?;
        if found < supported {
            return Err(Ctx(&self.location).invalid(format!(
                "the store has schema version {found} and this mlport reads version {supported}; \
                 it cannot be upgraded read-only: open it once where it can be written \
                 (any mlport command), or copy it"
            )));
        }
        Ok(())
    }

    /// The store's schema version and the one this mlport writes; [`StoreError::TooNew`] when
    /// the store's is newer.
    fn identify_supported(&self) -> Result<(i64, i64), StoreError> {
        let (found, supported) = (self.identify()?, schema::latest_version());
        if found > supported {
            return Err(StoreError::TooNew { store: self.location.clone(), found, supported });
        }
        Ok((found, supported))
    }

    /// The schema version of an mlport store, 0 for an empty database.
    fn identify(&self) -> Result<i64, StoreError> {
        let not_mlport = || StoreError::NotMlport { store: self.location.clone() };
        self.read(|conn, ctx| {
            // A query that does not fit (no such column, wrong type) means someone else's
            // tables; a busy, unreachable or unreadable database is reported as itself.
            let misfit = |e: DbError| {
                let foreign = match &e {
                    DbError::Sqlite(s) => matches!(s.sqlite_error_code(), None | Some(rusqlite::ErrorCode::Unknown)),
                    DbError::Postgres(p) => p.code().is_some_and(|c| c.code().starts_with("42")),
                    DbError::Column(_) => true,
                };
                if foreign { not_mlport() } else { ctx.db(e) }
            };
            let tables = conn.user_tables().or_store(ctx)?;
            if tables.is_empty() {
                return Ok(0);
            }
            if !tables.contains("meta") || !tables.contains("schema_version") {
                return Err(not_mlport());
            }
            let application: Option<String> = conn
                .query_opt("SELECT value FROM meta WHERE key = 'application'", &[], |r| r.get(0))
                .map_err(misfit)?;
            if application.as_deref() != Some(schema::APPLICATION) {
                return Err(not_mlport());
            }
            let version: Option<i64> =
                conn.query_value("SELECT MAX(version) FROM schema_version", &[]).map_err(misfit)?;
            version.ok_or_else(not_mlport)
        })
    }

    /// Applies every migration newer than the stored version, in one transaction that
    /// re-reads the version under a lock (SQLite's write lock, taken by `BEGIN IMMEDIATE`;
    /// a PostgreSQL advisory lock), so two processes opening the same new or old store do not
    /// race.
    fn migrate(&self) -> Result<(), StoreError> {
        self.write(|conn, ctx| {
            let dialect = conn.dialect();
            if dialect == Dialect::Postgres {
                conn.query("SELECT pg_advisory_xact_lock($1)", params![MIGRATION_LOCK], |_| Ok(())).or_store(ctx)?;
            }
            let current: i64 = if conn.user_tables().or_store(ctx)?.contains("schema_version") {
                conn.query_value("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[]).or_store(ctx)?
            } else {
                0
            };
            for m in schema::MIGRATIONS.iter().filter(|m| m.version > current) {
                conn.batch(&m.sql(dialect)).or_store(ctx)?;
                conn.execute(
                    "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
                    params![m.version, m.name, now()],
                )
                .or_store(ctx)?;
            }
            Ok(())
        })
    }

    /// Runs `f` in one transaction, committed when it returns `Ok` and rolled back otherwise;
    /// on PostgreSQL, run again after a lost connection ([`Store::read`]).
    pub(super) fn write<T>(
        &self,
        mut f: impl FnMut(&mut Conn, Ctx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.read(|conn, ctx| {
            conn.begin().or_store(ctx)?;
            match f(conn, ctx) {
                Ok(v) => {
                    conn.commit().or_store(ctx)?;
                    Ok(v)
                }
                Err(e) => {
                    conn.rollback();
                    Err(e)
                }
            }
        })
    }

    /// Runs `f` on the connection. When PostgreSQL's connection is lost, reconnects with
    /// backoff (100 ms doubling to 4 s) for up to [`RETRY_FOR`], saying so on stderr, and runs
    /// `f` again; after that [`StoreError::Unreachable`] is returned.
    pub(super) fn read<T>(
        &self,
        mut f: impl FnMut(&mut Conn, Ctx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // Inside a snapshot the whole snapshot is retried, never one of its statements alone.
        if self.in_snapshot.get() {
            return f(&mut self.conn.borrow_mut(), Ctx(&self.location));
        }
        self.retrying(|| f(&mut self.conn.borrow_mut(), Ctx(&self.location)))
    }

    /// Runs `attempt` again after each lost PostgreSQL connection, reconnecting in between
    /// ([`Store::read`]).
    fn retrying<T>(&self, mut attempt: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut lost_at: Option<Instant> = None;
        loop {
            match attempt() {
                Err(e) if e.is_connection_lost() => {
                    let since = *lost_at.get_or_insert_with(|| {
                        eprintln!(
                            "mlport: lost the connection to {} ({}); reconnecting for up to {}",
                            self.location,
                            error_chain(&e),
                            seconds(retry_for())
                        );
                        Instant::now()
                    });
                    reconnect(&mut self.conn.borrow_mut(), since, e)?;
                    // Lost again at once: the next attempt reconnects (and claims) again.
                    match self.reclaim(&mut self.conn.borrow_mut()) {
                        Err(e) if !e.is_connection_lost() => return Err(e),
                        _ => {}
                    }
                }
                done => {
                    if let Some(since) = lost_at {
                        eprintln!(
                            "mlport: reconnected to {} after {:.1} s; the interrupted transaction ran again",
                            self.location,
                            since.elapsed().as_secs_f64()
                        );
                    }
                    return done;
                }
            }
        }
    }

    /// Runs `f` — any number of the store's reads — on ONE consistent view of the store: what
    /// was committed when it started, whatever other processes commit meanwhile (PostgreSQL: a
    /// `REPEATABLE READ READ ONLY` transaction; SQLite: one read transaction of its WAL). A
    /// lost PostgreSQL connection runs the whole of `f` again once reconnected. Used to export
    /// a run that another process is still writing: its results, references and comparisons
    /// are then from the same moment.
    ///
    /// Errors: `f`'s, and the engine's.
    pub fn snapshot<T>(&self, mut f: impl FnMut(&Store) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let begin = match self.dialect() {
            Dialect::Sqlite => "BEGIN DEFERRED",
            Dialect::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        };
        self.retrying(|| {
            let ctx = Ctx(&self.location);
            self.conn.borrow_mut().batch(begin).or_store(ctx)?;
            self.in_snapshot.set(true);
            let out = f(self);
            self.in_snapshot.set(false);
            match out {
                Ok(v) => {
                    self.conn.borrow_mut().commit().or_store(ctx)?;
                    Ok(v)
                }
                Err(e) => {
                    self.conn.borrow_mut().rollback();
                    Err(e)
                }
            }
        })
    }

    /// Drops the case ids [`Store::case_id`] keeps (a run's cases were rewritten).
    pub(super) fn forget_case_ids(&self) {
        self.case_ids.borrow_mut().take();
    }

    /// The SQLite connection, for tests that look under the store's API.
    #[cfg(test)]
    pub(super) fn sqlite(&self) -> RefMut<'_, rusqlite::Connection> {
        RefMut::map(self.conn.borrow_mut(), |c| match c {
            Conn::Sqlite(c) => c,
            Conn::Postgres(_) => panic!("not an SQLite store"),
        })
    }
}

/// [`RETRY_FOR`], or `MLPORT_DB_RETRY_SECS` when set to a number of seconds.
fn retry_for() -> Duration {
    std::env::var("MLPORT_DB_RETRY_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(RETRY_FOR, Duration::from_secs_f64)
}

/// `d` in seconds as a person writes it: `60 s`, `2.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", (d.as_secs_f64() * 10.0).round() / 10.0)
}

/// Reconnects `conn` (PostgreSQL) until it succeeds or [`retry_for`] has passed since `since`;
/// then returns [`StoreError::Unreachable`] with the last attempt's error (`lost`, the error
/// that started it, when no attempt was made).
fn reconnect(conn: &mut RefMut<'_, Conn>, since: Instant, lost: StoreError) -> Result<(), StoreError> {
    let Conn::Postgres(pg) = &mut **conn else { return Err(lost) };
    let mut pause = Duration::from_millis(100);
    let mut last: Option<postgres::Error> = None;
    loop {
        let left = retry_for().saturating_sub(since.elapsed());
        if left.is_zero() {
            eprintln!("mlport: gave up reconnecting after {}", seconds(retry_for()));
            let source = match (last, lost) {
                (Some(e), lost) => Box::new(StoreError::Postgres { store: lost.store().clone(), source: e }),
                (None, lost) => Box::new(lost),
            };
            return Err(StoreError::Unreachable {
                store: source.store().clone(),
                waited: seconds(retry_for()),
                source,
            });
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(MAX_BACKOFF);
        match pg.reconnect() {
            Ok(()) => return Ok(()),
            Err(e) if pg::is_connection_lost(&e) => last = Some(e),
            Err(e) => return Err(StoreError::Postgres { store: lost.store().clone(), source: e }),
        }
    }
}

/// An error and its sources on one line.
pub(in crate::store) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// Now, UTC, RFC 3339 to the second: what every stored time is.
pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// [`StoreError::UnknownRun`] unless the run exists.
pub(super) fn ensure_run(c: &mut Conn, ctx: Ctx<'_>, run: i64) -> Result<(), StoreError> {
    let found: Option<i64> =
        c.query_opt("SELECT id FROM runs WHERE id = $1", params![run], |r| r.get(0)).or_store(ctx)?;
    found.map(|_| ()).ok_or_else(|| ctx.unknown_run(run))
}
