//! The SQLite store: one file holding runs, their planned functions and cases, the
//! devices each framework saw, and one result (with its latency samples) per
//! (case, device). Every write is its own transaction, committed before the call
//! returns, so an interrupted run loses at most the case in flight.
//!
//! SQL is hand-written with `$N` parameters in the subset PostgreSQL also accepts
//! (`INSERT … RETURNING`, `ON CONFLICT … DO UPDATE`); only [`Store::open`]'s identity
//! checks read SQLite's own catalogue. The schema lives in [`super::schema`].

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use rusqlite::types::Type;
use rusqlite::{CachedStatement, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

mod agreement;

use super::schema::{self, Dialect};
use crate::model::{
    CaseResult, CaseRow, DeviceInfo, Dtype, Framework, FunctionRow, ResultRow, RunData, RunInfo, RunOrigin, RunState,
    RunSummary, Target,
};

/// How long a writer waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Why a store operation failed. Every variant names the store's file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{} is not an SQLite database", path.display())]
    NotSqlite { path: PathBuf },
    #[error("{} is an SQLite database but not an mlport store", path.display())]
    NotMlport { path: PathBuf },
    #[error(
        "{} has schema version {found}, newer than this mlport supports ({supported}); use a newer mlport",
        path.display()
    )]
    TooNew { path: PathBuf, found: i64, supported: i64 },
    #[error("{}: cannot read the file", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: SQLite error", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}: no run with id {id}", path.display())]
    UnknownRun { path: PathBuf, id: i64 },
    #[error("{}: run {run} has no case `{key}`", path.display())]
    UnknownCase { path: PathBuf, run: i64, key: String },
    /// The caller asked for something the store cannot hold (duplicate keys, a case
    /// naming an unplanned function, an unknown run state, a value out of range).
    #[error("{}: {what}", path.display())]
    Invalid { path: PathBuf, what: String },
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
}

/// Builds errors that name one file; borrowed alongside a mutably borrowed connection.
#[derive(Clone, Copy)]
struct Ctx<'a>(&'a Path);

impl Ctx<'_> {
    fn db(self, source: rusqlite::Error) -> StoreError {
        if source.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
            return StoreError::NotSqlite { path: self.0.to_path_buf() };
        }
        StoreError::Sqlite { path: self.0.to_path_buf(), source }
    }

    fn invalid(self, what: impl Into<String>) -> StoreError {
        StoreError::Invalid { path: self.0.to_path_buf(), what: what.into() }
    }

    fn unknown_run(self, id: i64) -> StoreError {
        StoreError::UnknownRun { path: self.0.to_path_buf(), id }
    }

    fn int(self, value: u64, what: &str) -> Result<i64, StoreError> {
        i64::try_from(value).map_err(|_| self.invalid(format!("{what} {value} does not fit a 64-bit signed integer")))
    }

    fn json(self, value: &impl Serialize, what: &str) -> Result<String, StoreError> {
        serde_json::to_string(value).map_err(|e| self.invalid(format!("cannot encode {what} as JSON: {e}")))
    }
}

/// An open mlport store in one SQLite file (WAL journal, foreign keys on).
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store at `path`, creating it when the file is missing or empty and
    /// applying any pending migrations otherwise.
    ///
    /// Errors: [`StoreError::NotSqlite`] for a file that is not SQLite,
    /// [`StoreError::NotMlport`] for an SQLite database with tables but no mlport
    /// `meta`/`schema_version` (left untouched), [`StoreError::TooNew`] for a store
    /// written by a newer mlport, and I/O or SQLite errors naming the path.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let ctx = Ctx(path);
        check_header(path)?;
        let conn = Connection::open(path).map_err(|e| ctx.db(e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| ctx.db(e))?;
        let mut store = Store { conn, path: path.to_path_buf() };
        // Identify before changing anything, so a foreign database is never touched.
        let (found, supported) = store.identify_supported()?;
        store.conn.pragma_update(None, "foreign_keys", true).map_err(|e| ctx.db(e))?;
        let _mode: String =
            store.conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(|e| ctx.db(e))?;
        // Only take the write lock when there is something to apply.
        if found < supported {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Opens an existing store for reading only, never writing to it: for stores
    /// on read-only media, in folders the user may not write to, or owned by someone else.
    /// Tries SQLite's read-only mode first, then `immutable=1` (SQLite's URI parameter for a
    /// file nobody changes while it is read), which is what a WAL-mode store needs when its
    /// `-shm` file cannot be created beside it.
    ///
    /// Errors: as [`Store::open`], and [`StoreError::Invalid`] naming the file for a store of an
    /// older schema (upgrading it needs write access once).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let ctx = Ctx(path);
        if !path.exists() {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source: io::Error::new(io::ErrorKind::NotFound, "no such store"),
            });
        }
        check_header(path)?;
        if std::fs::metadata(path).map(|m| m.len() == 0).unwrap_or(false) {
            return Err(ctx.invalid("the file is empty: no mlport store has been written to it"));
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
                return Err(ctx.invalid(format!(
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
                user_tables(&conn)?;
                Ok(conn)
            });
            match attempt {
                Ok(conn) => {
                    let store = Store { conn, path: path.to_path_buf() };
                    let (found, supported) = store.identify_supported()?;
                    if found < supported {
                        return Err(ctx.invalid(format!(
                            "the store has schema version {found} and this mlport reads version {supported}; \
                             it cannot be upgraded read-only: open it once where it can be written \
                             (any mlport command), or copy it"
                        )));
                    }
                    return Ok(store);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(ctx.db(last.expect("two attempts were made")))
    }

    /// Opens the store at `path` for writing when that is possible (applying migrations, as
    /// [`Store::open`]), else read-only ([`Store::open_read_only`]): what the commands that
    /// only read (reports, `runs`, `audit`, `repro`) use.
    ///
    /// Errors: [`Store::open_read_only`]'s when the store cannot be written.
    pub fn open_for_reading(path: &Path) -> Result<Store, StoreError> {
        match Store::open(path) {
            Ok(store) => Ok(store),
            Err(e) if e.is_read_only() => Store::open_read_only(path),
            Err(e) => Err(e),
        }
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's schema version and the one this mlport writes; [`StoreError::TooNew`] when
    /// the store's is newer.
    fn identify_supported(&self) -> Result<(i64, i64), StoreError> {
        let (found, supported) = (self.identify()?, schema::latest_version());
        if found > supported {
            return Err(StoreError::TooNew { path: self.path.clone(), found, supported });
        }
        Ok((found, supported))
    }

    /// The schema version of an mlport store, 0 for an empty database.
    fn identify(&self) -> Result<i64, StoreError> {
        let ctx = Ctx(&self.path);
        let not_mlport = || StoreError::NotMlport { path: self.path.clone() };
        // A query that does not fit (no such column, wrong type) means someone else's
        // tables; a busy or unreadable database is reported as itself.
        let misfit = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(code) if code != rusqlite::ErrorCode::Unknown => ctx.db(e),
            _ => not_mlport(),
        };
        let tables = user_tables(&self.conn).map_err(|e| ctx.db(e))?;
        if tables.is_empty() {
            return Ok(0);
        }
        if !tables.contains("meta") || !tables.contains("schema_version") {
            return Err(not_mlport());
        }
        let application: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'application'", [], |r| r.get(0))
            .optional()
            .map_err(misfit)?;
        if application.as_deref() != Some(schema::APPLICATION) {
            return Err(not_mlport());
        }
        let version: Option<i64> =
            self.conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0)).map_err(misfit)?;
        version.ok_or_else(not_mlport)
    }

    /// Applies every migration newer than the stored version, in one immediate
    /// transaction that re-reads the version, so two processes opening the same new
    /// or old store do not race.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let ctx = Ctx(&self.path);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| ctx.db(e))?;
        let current: i64 = if user_tables(&tx).map_err(|e| ctx.db(e))?.contains("schema_version") {
            tx.query_row("SELECT COALESCE(MAX(version), 0) FROM schema_version", [], |r| r.get(0))
                .map_err(|e| ctx.db(e))?
        } else {
            0
        };
        let mut applied = false;
        for m in schema::MIGRATIONS.iter().filter(|m| m.version > current) {
            tx.execute_batch(&m.sql(Dialect::Sqlite)).map_err(|e| ctx.db(e))?;
            tx.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
                params![m.version, m.name, now()],
            )
            .map_err(|e| ctx.db(e))?;
            applied = true;
        }
        if applied {
            tx.commit().map_err(|e| ctx.db(e))?;
        }
        Ok(())
    }

    /// Records a new run with its planned functions and cases (cases keep their order)
    /// in one transaction; the run starts in state `running`. Returns the run id.
    ///
    /// Errors: [`StoreError::Invalid`] for a function or case key listed twice or a
    /// case whose function is not among `functions`.
    pub fn create_run(
        &mut self,
        info: &RunInfo,
        functions: &[FunctionRow],
        cases: &[CaseRow],
    ) -> Result<i64, StoreError> {
        let ctx = Ctx(&self.path);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| ctx.db(e))?;
        let (run, _) = insert_plan(&tx, ctx, info, &RunOrigin::default(), functions, cases)?;
        tx.commit().map_err(|e| ctx.db(e))?;
        Ok(run)
    }

    /// Writes whole runs (environment, origin, functions, cases, devices, results with
    /// their samples) in ONE transaction: either every run is stored, finished, or nothing
    /// is. Returns the new run ids in the order given.
    ///
    /// Errors: those of [`Store::create_run`], and [`StoreError::Invalid`] for a result
    /// naming a case its run does not plan, two results for one (case, device), or a
    /// duration beyond `i64` ns. Nothing is written on any error.
    pub fn import_runs(&mut self, runs: &[RunData]) -> Result<Vec<i64>, StoreError> {
        let ctx = Ctx(&self.path);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| ctx.db(e))?;
        let mut ids = Vec::with_capacity(runs.len());
        for data in runs {
            let (run, case_ids) = insert_plan(&tx, ctx, &data.info, &data.origin, &data.functions, &data.cases)?;
            let mut devices = prepare(
                &tx,
                "INSERT INTO devices (run_id, framework, device, available, detail) VALUES ($1, $2, $3, $4, $5)",
            )
            .map_err(|e| ctx.db(e))?;
            for d in &data.devices {
                devices
                    .execute(params![run, d.framework.as_str(), d.device.as_str(), d.available, d.detail])
                    .map_err(|e| ctx.db(e))?;
            }
            let mut seen = HashSet::new();
            for r in &data.results {
                let case = *case_ids.get(r.case_key.as_str()).ok_or_else(|| {
                    ctx.invalid(format!("a result names case `{}`, which the imported run does not plan", r.case_key))
                })?;
                if !seen.insert((case, r.device.as_str())) {
                    return Err(ctx.invalid(format!("case `{}` has two results on {}", r.case_key, r.device)));
                }
                insert_result(&tx, ctx, run, case, r)?;
            }
            prepare(&tx, "UPDATE runs SET state = $1, finished_at = $2 WHERE id = $3")
                .and_then(|mut s| s.execute(params![RunState::Finished.as_str(), now(), run]))
                .map_err(|e| ctx.db(e))?;
            ids.push(run);
        }
        tx.commit().map_err(|e| ctx.db(e))?;
        Ok(ids)
    }

    /// Replaces a run's environment description (framework versions become known only
    /// after the workers start). Errors: [`StoreError::UnknownRun`].
    pub fn update_run_info(&mut self, run: i64, info: &RunInfo) -> Result<(), StoreError> {
        let ctx = Ctx(&self.path);
        let cols = RunCols::new(ctx, info)?;
        let mut values = cols.params(info);
        values.push(&run);
        let changed = prepare(
            &self.conn,
            "UPDATE runs SET started_at = $1, host = $2, os = $3, cpu_model = $4, cpu_cores = $5, \
             accelerators = $6, python_version = $7, python_executable = $8, frameworks = $9, \
             catalogue_version = $10, command_line = $11, seed = $12, reference_device = $13, \
             mlport_version = $14 WHERE id = $15",
        )
        .and_then(|mut s| s.execute(values.as_slice()))
        .map_err(|e| ctx.db(e))?;
        if changed == 0 {
            return Err(ctx.unknown_run(run));
        }
        Ok(())
    }

    /// Records the devices each framework saw; a (framework, device) already recorded
    /// for the run is updated. Errors: [`StoreError::UnknownRun`].
    pub fn record_devices(&mut self, run: i64, devices: &[DeviceInfo]) -> Result<(), StoreError> {
        let ctx = Ctx(&self.path);
        self.ensure_run(run)?;
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| ctx.db(e))?;
        {
            let mut upsert = prepare(
                &tx,
                "INSERT INTO devices (run_id, framework, device, available, detail) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (run_id, framework, device) \
                 DO UPDATE SET available = excluded.available, detail = excluded.detail",
            )
            .map_err(|e| ctx.db(e))?;
            for d in devices {
                upsert
                    .execute(params![run, d.framework.as_str(), d.device.as_str(), d.available, d.detail])
                    .map_err(|e| ctx.db(e))?;
            }
        }
        tx.commit().map_err(|e| ctx.db(e))
    }

    /// Records one case's result and its samples in one transaction, committed on
    /// return. Recording the same (case, device) again replaces the earlier result.
    ///
    /// Errors: [`StoreError::UnknownRun`], [`StoreError::UnknownCase`] when the key was
    /// not planned in this run, [`StoreError::Invalid`] for a duration beyond `i64` ns.
    pub fn record_result(&mut self, run: i64, r: &CaseResult) -> Result<(), StoreError> {
        let ctx = Ctx(&self.path);
        check_result(ctx, r)?;
        self.ensure_run(run)?;
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| ctx.db(e))?;
        let case: i64 = prepare(&tx, "SELECT id FROM cases WHERE run_id = $1 AND key = $2")
            .and_then(|mut s| s.query_row(params![run, r.case_key], |row| row.get(0)).optional())
            .map_err(|e| ctx.db(e))?
            .ok_or_else(|| StoreError::UnknownCase { path: self.path.clone(), run, key: r.case_key.clone() })?;
        insert_result(&tx, ctx, run, case, r)?;
        tx.commit().map_err(|e| ctx.db(e))
    }

    /// Ends a run: `state` is [`RunState::Finished`], [`RunState::Interrupted`] (stopped by a
    /// signal) or [`RunState::Incomplete`] (cases left that could not run); sets `finished_at`
    /// to now (UTC). Errors: [`StoreError::Invalid`] for [`RunState::Running`],
    /// [`StoreError::UnknownRun`].
    pub fn finish_run(&mut self, run: i64, state: RunState) -> Result<(), StoreError> {
        let ctx = Ctx(&self.path);
        if state == RunState::Running {
            return Err(ctx.invalid(format!("run state `{state}` is not `finished`, `interrupted` or `incomplete`")));
        }
        let changed = prepare(&self.conn, "UPDATE runs SET state = $1, finished_at = $2 WHERE id = $3")
            .and_then(|mut s| s.execute(params![state.as_str(), now(), run]))
            .map_err(|e| ctx.db(e))?;
        if changed == 0 {
            return Err(ctx.unknown_run(run));
        }
        Ok(())
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let ctx = Ctx(&self.path);
        let sql = format!("{RUN_SELECT} ORDER BY r.id");
        prepare(&self.conn, &sql).and_then(|mut s| s.query_map([], run_from_row)?.collect()).map_err(|e| ctx.db(e))
    }

    /// One run. Errors: [`StoreError::UnknownRun`] when no run has this id.
    pub fn run(&self, id: i64) -> Result<RunSummary, StoreError> {
        let ctx = Ctx(&self.path);
        let sql = format!("{RUN_SELECT} WHERE r.id = $1");
        prepare(&self.conn, &sql)
            .and_then(|mut s| s.query_row([id], run_from_row).optional())
            .map_err(|e| ctx.db(e))?
            .ok_or_else(|| ctx.unknown_run(id))
    }

    /// The most recently created run, `None` for an empty store.
    pub fn latest_run(&self) -> Result<Option<RunSummary>, StoreError> {
        let ctx = Ctx(&self.path);
        let sql = format!("{RUN_SELECT} ORDER BY r.id DESC LIMIT 1");
        prepare(&self.conn, &sql).and_then(|mut s| s.query_row([], run_from_row).optional()).map_err(|e| ctx.db(e))
    }

    /// The newest run labelled `label` (see [`RunOrigin::label`]), `None` when no run is.
    pub fn run_by_label(&self, label: &str) -> Result<Option<RunSummary>, StoreError> {
        let ctx = Ctx(&self.path);
        let sql = format!("{RUN_SELECT} WHERE r.label = $1 ORDER BY r.id DESC LIMIT 1");
        prepare(&self.conn, &sql).and_then(|mut s| s.query_row([label], run_from_row).optional()).map_err(|e| ctx.db(e))
    }

    /// The run's planned functions, in the order given to [`Store::create_run`].
    /// Errors: [`StoreError::UnknownRun`].
    pub fn functions(&self, run: i64) -> Result<Vec<FunctionRow>, StoreError> {
        let ctx = Ctx(&self.path);
        self.ensure_run(run)?;
        prepare(
            &self.conn,
            "SELECT framework, name, paper, decile, top20, op, moved, note FROM functions WHERE run_id = $1 ORDER BY id",
        )
        .and_then(|mut s| s.query_map([run], |row| function_from_row(row, 0))?.collect())
        .map_err(|e| ctx.db(e))
    }

    /// The run's planned cases, in planned order. Errors: [`StoreError::UnknownRun`].
    pub fn cases(&self, run: i64) -> Result<Vec<CaseRow>, StoreError> {
        let ctx = Ctx(&self.path);
        self.ensure_run(run)?;
        prepare(
            &self.conn,
            "SELECT c.key, f.framework, f.name, c.case_id, c.dtype, c.seed, c.spec \
             FROM cases c JOIN functions f ON f.id = c.function_id WHERE c.run_id = $1 ORDER BY c.ordinal",
        )
        .and_then(|mut s| s.query_map([run], |row| case_from_row(row, 0))?.collect())
        .map_err(|e| ctx.db(e))
    }

    /// The devices recorded for the run, ordered by framework (report order) then device.
    /// Errors: [`StoreError::UnknownRun`].
    pub fn devices(&self, run: i64) -> Result<Vec<DeviceInfo>, StoreError> {
        let ctx = Ctx(&self.path);
        self.ensure_run(run)?;
        let mut devices: Vec<DeviceInfo> =
            prepare(&self.conn, "SELECT framework, device, available, detail FROM devices WHERE run_id = $1")
                .and_then(|mut s| {
                    s.query_map([run], |row| {
                        Ok(DeviceInfo {
                            framework: parse(row, 0)?,
                            device: parse(row, 1)?,
                            available: row.get(2)?,
                            detail: row.get(3)?,
                        })
                    })?
                    .collect()
                })
                .map_err(|e| ctx.db(e))?;
        devices.sort_by(|a, b| (a.framework, &a.device).cmp(&(b.framework, &b.device)));
        Ok(devices)
    }

    /// Keys of the cases that already have a result (any outcome) on `device`, for
    /// `run --resume`. Errors: [`StoreError::UnknownRun`].
    pub fn done_keys(&self, run: i64, device: &Target) -> Result<HashSet<String>, StoreError> {
        let ctx = Ctx(&self.path);
        self.ensure_run(run)?;
        prepare(
            &self.conn,
            "SELECT c.key FROM results r JOIN cases c ON c.id = r.case_id WHERE r.run_id = $1 AND r.device = $2",
        )
        .and_then(|mut s| s.query_map(params![run, device.as_str()], |row| row.get(0))?.collect())
        .map_err(|e| ctx.db(e))
    }

    /// Every result of the run joined with its case and function, in planned case order
    /// then device; samples in the order taken. Errors: [`StoreError::UnknownRun`].
    pub fn results(&self, run: i64) -> Result<Vec<ResultRow>, StoreError> {
        let ctx = Ctx(&self.path);
        self.ensure_run(run)?;
        let mut samples: HashMap<i64, Vec<u64>> = HashMap::new();
        let mut calls: HashMap<i64, Vec<u64>> = HashMap::new();
        prepare(
            &self.conn,
            "SELECT s.result_id, s.ns, s.calls FROM samples s JOIN results r ON r.id = s.result_id \
             WHERE r.run_id = $1 ORDER BY s.result_id, s.idx",
        )
        .and_then(|mut s| {
            let mut rows = s.query([run])?;
            while let Some(row) = rows.next()? {
                let id: i64 = row.get(0)?;
                samples.entry(id).or_default().push(unsigned(row, 1)?);
                if let Some(n) = row.get::<_, Option<i64>>(2)? {
                    calls.entry(id).or_default().push(to_u64(n, 2)?);
                }
            }
            Ok(())
        })
        .map_err(|e| ctx.db(e))?;

        prepare(
            &self.conn,
            "SELECT f.framework, f.name, f.paper, f.decile, f.top20, f.op, f.moved, f.note, \
             c.key, f.framework, f.name, c.case_id, c.dtype, c.seed, c.spec, \
             r.id, r.device, r.outcome, r.reason, r.error_type, r.message, r.traceback, r.phase, r.signal, \
             r.stderr_tail, r.first_call_ns, r.wall_ms, r.outputs, r.finished_at, r.compiles, \
             r.runqueue_wait_ns, r.steady_wall_ns \
             FROM results r JOIN cases c ON c.id = r.case_id JOIN functions f ON f.id = c.function_id \
             WHERE r.run_id = $1 ORDER BY c.ordinal, r.device",
        )
        .and_then(|mut s| {
            s.query_map([run], |row| {
                let function = function_from_row(row, 0)?;
                let case = case_from_row(row, 8)?;
                let id: i64 = row.get(15)?;
                let result = CaseResult {
                    case_key: case.key.clone(),
                    device: parse(row, 16)?,
                    outcome: parse(row, 17)?,
                    reason: parse_opt(row, 18)?,
                    error_type: row.get(19)?,
                    message: row.get(20)?,
                    traceback: row.get(21)?,
                    phase: row.get(22)?,
                    signal: row.get(23)?,
                    stderr_tail: row.get(24)?,
                    first_call_ns: row.get::<_, Option<i64>>(25)?.map(|v| to_u64(v, 25)).transpose()?,
                    wall_ms: row.get(26)?,
                    outputs: json(row, 27)?,
                    finished_at: row.get(28)?,
                    compiles: row.get::<_, Option<i64>>(29)?.map(|v| to_u64(v, 29)).transpose()?,
                    runqueue_wait_ns: row.get::<_, Option<i64>>(30)?.map(|v| to_u64(v, 30)).transpose()?,
                    steady_wall_ns: row.get::<_, Option<i64>>(31)?.map(|v| to_u64(v, 31)).transpose()?,
                    samples_ns: samples.remove(&id).unwrap_or_default(),
                    block_sizes: calls.remove(&id).unwrap_or_default(),
                };
                Ok(ResultRow { id, function, case, result })
            })?
            .collect()
        })
        .map_err(|e| ctx.db(e))
    }

    fn ensure_run(&self, run: i64) -> Result<(), StoreError> {
        let ctx = Ctx(&self.path);
        let found = prepare(&self.conn, "SELECT id FROM runs WHERE id = $1")
            .and_then(|mut s| s.query_row([run], |r| r.get::<_, i64>(0)).optional())
            .map_err(|e| ctx.db(e))?;
        found.map(|_| ()).ok_or_else(|| ctx.unknown_run(run))
    }
}

/// Inserts a run (state `running`) with its origin, functions and cases inside `tx`.
/// Returns the run id and each case key's id.
fn insert_plan<'k>(
    tx: &Connection,
    ctx: Ctx<'_>,
    info: &RunInfo,
    origin: &RunOrigin,
    functions: &[FunctionRow],
    cases: &'k [CaseRow],
) -> Result<(i64, HashMap<&'k str, i64>), StoreError> {
    let cols = RunCols::new(ctx, info)?;
    let mut values = cols.params(info);
    let source = origin.source.as_str();
    let notes = ctx.json(&origin.notes, "run notes")?;
    let state = RunState::Running.as_str();
    values.extend([&source as &dyn rusqlite::ToSql, &origin.label, &origin.machine, &notes, &state]);
    let run: i64 = prepare(
        tx,
        "INSERT INTO runs (started_at, host, os, cpu_model, cpu_cores, accelerators, python_version, \
         python_executable, frameworks, catalogue_version, command_line, seed, reference_device, \
         mlport_version, source, label, machine, notes, state) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) \
         RETURNING id",
    )
    .and_then(|mut s| s.query_row(values.as_slice(), |r| r.get(0)))
    .map_err(|e| ctx.db(e))?;

    let mut function_ids: HashMap<(Framework, &str), i64> = HashMap::new();
    {
        let mut insert = prepare(
            tx,
            "INSERT INTO functions (run_id, framework, name, paper, decile, top20, op, moved, note) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .map_err(|e| ctx.db(e))?;
        for f in functions {
            if function_ids.contains_key(&(f.framework, f.name.as_str())) {
                return Err(ctx.invalid(format!("function {} ({}) is listed twice", f.name, f.framework)));
            }
            let id: i64 = insert
                .query_row(
                    params![run, f.framework.as_str(), f.name, f.paper, f.decile, f.top20, f.op, f.moved, f.note],
                    |r| r.get(0),
                )
                .map_err(|e| ctx.db(e))?;
            function_ids.insert((f.framework, f.name.as_str()), id);
        }
    }
    let mut case_ids: HashMap<&str, i64> = HashMap::with_capacity(cases.len());
    let mut insert = prepare(
        tx,
        "INSERT INTO cases (run_id, function_id, key, case_id, dtype, seed, spec, ordinal) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .map_err(|e| ctx.db(e))?;
    for (ordinal, c) in cases.iter().enumerate() {
        let function = function_ids.get(&(c.framework, c.function.as_str())).ok_or_else(|| {
            ctx.invalid(format!(
                "case `{}` names function {} ({}), which is not planned",
                c.key, c.function, c.framework
            ))
        })?;
        if case_ids.contains_key(c.key.as_str()) {
            return Err(ctx.invalid(format!("case `{}` is listed twice", c.key)));
        }
        let ordinal = ctx.int(ordinal as u64, "case ordinal")?;
        let id: i64 = insert
            .query_row(
                params![
                    run,
                    function,
                    c.key,
                    c.case_id,
                    crate::model::name_or_empty(c.dtype),
                    c.seed.to_string(),
                    ctx.json(&c.spec, "case spec")?,
                    ordinal
                ],
                |r| r.get(0),
            )
            .map_err(|e| ctx.db(e))?;
        case_ids.insert(c.key.as_str(), id);
    }
    Ok((run, case_ids))
}

/// Checks that a result's durations fit the store's signed 64-bit nanoseconds.
fn check_result(ctx: Ctx<'_>, r: &CaseResult) -> Result<(), StoreError> {
    r.first_call_ns.map(|ns| ctx.int(ns, "first_call_ns")).transpose()?;
    r.compiles.map(|n| ctx.int(n, "compiles")).transpose()?;
    r.runqueue_wait_ns.map(|n| ctx.int(n, "runqueue_wait_ns")).transpose()?;
    r.steady_wall_ns.map(|n| ctx.int(n, "steady_wall_ns")).transpose()?;
    if !r.block_sizes.is_empty() && r.block_sizes.len() != r.samples_ns.len() {
        return Err(ctx.invalid(format!(
            "result {}: {} block sizes for {} samples",
            r.case_key,
            r.block_sizes.len(),
            r.samples_ns.len()
        )));
    }
    r.block_sizes.iter().try_for_each(|&n| ctx.int(n, "block size").map(|_| ()))?;
    r.samples_ns.iter().try_for_each(|&ns| ctx.int(ns, "sample").map(|_| ()))
}

/// Inserts (or replaces) one result and its samples for the case with id `case`.
fn insert_result(tx: &Connection, ctx: Ctx<'_>, run: i64, case: i64, r: &CaseResult) -> Result<(), StoreError> {
    let first_call = r.first_call_ns.map(|ns| ctx.int(ns, "first_call_ns")).transpose()?;
    let compiles = r.compiles.map(|n| ctx.int(n, "compiles")).transpose()?;
    let runqueue_wait = r.runqueue_wait_ns.map(|n| ctx.int(n, "runqueue_wait_ns")).transpose()?;
    let steady_wall = r.steady_wall_ns.map(|n| ctx.int(n, "steady_wall_ns")).transpose()?;
    let samples = r.samples_ns.iter().map(|&ns| ctx.int(ns, "sample")).collect::<Result<Vec<_>, _>>()?;
    let outputs = ctx.json(&r.outputs, "outputs")?;
    let result: i64 = prepare(
        tx,
        "INSERT INTO results (run_id, case_id, device, outcome, reason, error_type, message, traceback, \
         phase, signal, stderr_tail, first_call_ns, wall_ms, outputs, finished_at, compiles, runqueue_wait_ns, \
         steady_wall_ns) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (case_id, device) DO UPDATE SET \
         outcome = excluded.outcome, reason = excluded.reason, error_type = excluded.error_type, \
         message = excluded.message, traceback = excluded.traceback, phase = excluded.phase, \
         signal = excluded.signal, stderr_tail = excluded.stderr_tail, \
         first_call_ns = excluded.first_call_ns, wall_ms = excluded.wall_ms, \
         outputs = excluded.outputs, finished_at = excluded.finished_at, compiles = excluded.compiles, \
         runqueue_wait_ns = excluded.runqueue_wait_ns, steady_wall_ns = excluded.steady_wall_ns \
         RETURNING id",
    )
    .and_then(|mut s| {
        s.query_row(
            params![
                run,
                case,
                r.device.as_str(),
                r.outcome.as_str(),
                r.reason.map(|x| x.as_str()),
                r.error_type,
                r.message,
                r.traceback,
                r.phase,
                r.signal,
                r.stderr_tail,
                first_call,
                r.wall_ms,
                outputs,
                r.finished_at,
                compiles,
                runqueue_wait,
                steady_wall
            ],
            |row| row.get(0),
        )
    })
    .map_err(|e| ctx.db(e))?;
    prepare(tx, "DELETE FROM samples WHERE result_id = $1")
        .and_then(|mut s| s.execute([result]))
        .map_err(|e| ctx.db(e))?;
    let mut insert = prepare(tx, "INSERT INTO samples (result_id, idx, ns, calls) VALUES ($1, $2, $3, $4)")
        .map_err(|e| ctx.db(e))?;
    for (idx, ns) in samples.iter().enumerate() {
        let calls = r.block_sizes.get(idx).map(|&n| n as i64);
        insert.execute(params![result, idx as i64, ns, calls]).map_err(|e| ctx.db(e))?;
    }
    Ok(())
}

/// The run columns that need encoding, computed once per write.
struct RunCols {
    cpu_cores: i64,
    accelerators: String,
    frameworks: String,
    catalogue_version: String,
    seed: String,
    reference_device: String,
}

impl RunCols {
    fn new(ctx: Ctx<'_>, info: &RunInfo) -> Result<RunCols, StoreError> {
        Ok(RunCols {
            cpu_cores: i64::from(info.cpu_cores),
            accelerators: ctx.json(&info.accelerators, "accelerators")?,
            frameworks: ctx.json(&info.frameworks, "framework infos")?,
            catalogue_version: ctx.json(&info.catalogue_version, "catalogue versions")?,
            seed: info.seed.to_string(),
            reference_device: info.reference_device.to_string(),
        })
    }

    /// `$1..$14` of the run inserts and updates.
    fn params<'a>(&'a self, info: &'a RunInfo) -> Vec<&'a dyn rusqlite::ToSql> {
        vec![
            &info.started_at,
            &info.host,
            &info.os,
            &info.cpu_model,
            &self.cpu_cores,
            &self.accelerators,
            &info.python_version,
            &info.python_executable,
            &self.frameworks,
            &self.catalogue_version,
            &info.command_line,
            &self.seed,
            &self.reference_device,
            &info.mlport_version,
        ]
    }
}

/// A run row and its counts; `run_from_row` reads the columns in this order.
const RUN_SELECT: &str = "SELECT r.id, r.started_at, r.host, r.os, r.cpu_model, r.cpu_cores, r.accelerators, \
    r.python_version, r.python_executable, r.frameworks, r.catalogue_version, r.command_line, r.seed, \
    r.reference_device, r.mlport_version, r.state, r.finished_at, \
    (SELECT COUNT(*) FROM cases c WHERE c.run_id = r.id), \
    (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), \
    r.source, r.label, r.machine, r.notes \
    FROM runs r";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        id: row.get(0)?,
        info: RunInfo {
            started_at: row.get(1)?,
            host: row.get(2)?,
            os: row.get(3)?,
            cpu_model: row.get(4)?,
            cpu_cores: u32::try_from(row.get::<_, i64>(5)?).map_err(|e| conversion(5, Type::Integer, e))?,
            accelerators: json(row, 6)?,
            python_version: row.get(7)?,
            python_executable: row.get(8)?,
            frameworks: json(row, 9)?,
            catalogue_version: json(row, 10)?,
            command_line: row.get(11)?,
            seed: parse(row, 12)?,
            reference_device: parse(row, 13)?,
            mlport_version: row.get(14)?,
        },
        origin: RunOrigin {
            source: parse(row, 19)?,
            label: row.get(20)?,
            machine: row.get(21)?,
            notes: json(row, 22)?,
        },
        state: parse_column(row, 15, "runs.state")?,
        finished_at: row.get(16)?,
        cases_planned: unsigned(row, 17)?,
        results: unsigned(row, 18)?,
    })
}

fn function_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<FunctionRow> {
    Ok(FunctionRow {
        framework: parse(row, at)?,
        name: row.get(at + 1)?,
        paper: row.get(at + 2)?,
        decile: row
            .get::<_, Option<i64>>(at + 3)?
            .map(|v| u8::try_from(v).map_err(|e| conversion(at + 3, Type::Integer, e)))
            .transpose()?,
        top20: row.get(at + 4)?,
        op: row.get(at + 5)?,
        moved: row.get(at + 6)?,
        note: row.get(at + 7)?,
    })
}

fn case_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<CaseRow> {
    let key: String = row.get(at)?;
    Ok(CaseRow {
        framework: parse(row, at + 1)?,
        function: row.get(at + 2)?,
        case_id: row.get(at + 3)?,
        dtype: dtype_column(row, at + 4, "cases.dtype")?,
        seed: parse(row, at + 5)?,
        spec: spec_column(row, at + 6, "cases.spec", &key)?,
        key,
    })
}

/// Prepares (and caches) a statement; in debug builds checks that its parameters are
/// `$1..$N` in order of first use, which SQLite then binds positionally like PostgreSQL.
fn prepare<'c>(conn: &'c Connection, sql: &str) -> rusqlite::Result<CachedStatement<'c>> {
    let stmt = conn.prepare_cached(sql)?;
    debug_assert!(
        (1..=stmt.parameter_count()).all(|i| stmt.parameter_name(i) == Some(format!("${i}").as_str())),
        "parameters must be $1..$N in order of first use: {sql}"
    );
    Ok(stmt)
}

/// Names of the database's own tables (not SQLite's internal ones).
fn user_tables(conn: &Connection) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?;
    stmt.query_map([], |r| r.get(0))?.collect()
}

/// Rejects an existing, non-empty file that does not start with SQLite's header.
/// A missing or empty file is fine: SQLite creates the database in it.
fn check_header(path: &Path) -> Result<(), StoreError> {
    let io_err = |source| StoreError::Io { path: path.to_path_buf(), source };
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
        Err(StoreError::NotSqlite { path: path.to_path_buf() })
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

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn conversion(idx: usize, ty: Type, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, ty, e.into())
}

/// A TEXT column holding an `as_str` spelling (framework, device, outcome, reason) or a decimal u64.
fn parse<T>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T>
where
    T: FromStr,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    row.get::<_, String>(idx)?.parse().map_err(|e| conversion(idx, Type::Text, e))
}

/// A TEXT column holding the stored spelling of a closed set (run state, comparison reference,
/// rule, verdict): a value that spells none of it is an error naming the column (`table.column`)
/// and the value.
fn parse_column<T>(row: &Row<'_>, idx: usize, column: &str) -> rusqlite::Result<T>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    let text: String = row.get(idx)?;
    text.parse().map_err(|e| conversion(idx, Type::Text, format!("{column}: {e}")))
}

/// A dtype column where `""` stands for none (`cases.dtype` of an imported case); any other
/// value that names no [`Dtype`] is an error naming the column and the value.
fn dtype_column(row: &Row<'_>, idx: usize, column: &str) -> rusqlite::Result<Option<Dtype>> {
    let text: String = row.get(idx)?;
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|e| conversion(idx, Type::Text, format!("{column}: {e}")))
}

/// A JSON column holding a case's spec (`cases.spec`, `reference_outputs.spec`): one that does
/// not read as a spec is an error naming the column and the case's key.
fn spec_column<T: DeserializeOwned>(row: &Row<'_>, idx: usize, column: &str, key: &str) -> rusqlite::Result<T> {
    serde_json::from_str(&row.get::<_, String>(idx)?)
        .map_err(|e| conversion(idx, Type::Text, format!("{column} of case `{key}`: {e}")))
}

fn parse_opt<T>(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<T>>
where
    T: FromStr,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    row.get::<_, Option<String>>(idx)?.map(|s| s.parse().map_err(|e| conversion(idx, Type::Text, e))).transpose()
}

fn json<T: DeserializeOwned>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T> {
    serde_json::from_str(&row.get::<_, String>(idx)?).map_err(|e| conversion(idx, Type::Text, e))
}

fn to_u64(v: i64, idx: usize) -> rusqlite::Result<u64> {
    u64::try_from(v).map_err(|e| conversion(idx, Type::Integer, e))
}

fn unsigned(row: &Row<'_>, idx: usize) -> rusqlite::Result<u64> {
    to_u64(row.get(idx)?, idx)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;
    use tempfile::TempDir;

    use super::*;
    use crate::model::{CaseSpec, FrameworkInfo, RunSource, Spec};
    use crate::model::{Outcome, Reason};

    fn dev(s: &str) -> Target {
        s.parse().unwrap()
    }

    fn info() -> RunInfo {
        let torch = FrameworkInfo {
            version: Some("2.5.1+cu124".into()),
            import_error: None,
            packages: BTreeMap::from([("numpy".into(), "2.1.3".into()), ("triton".into(), "3.1.0".into())]),
            threads: Some(16),
        };
        let jax = FrameworkInfo {
            version: None,
            import_error: Some("ImportError: no module named jaxlib".into()),
            packages: BTreeMap::new(),
            threads: None,
        };
        RunInfo {
            started_at: "2026-12-01T10:00:00Z".into(),
            host: "gpu-box".into(),
            os: "Linux 6.1.0 x86_64".into(),
            cpu_model: "AMD EPYC 9454".into(),
            cpu_cores: 48,
            accelerators: vec!["NVIDIA H200, driver 560.35".into(), "second line".into()],
            python_version: "3.11.8".into(),
            python_executable: "/home/u/.cache/mlport/venv/bin/python".into(),
            frameworks: BTreeMap::from([(Framework::Torch, torch), (Framework::Jax, jax)]),
            catalogue_version: BTreeMap::from([(Framework::Torch, "2026.11.30".into())]),
            command_line: "mlport run --devices cpu,cuda:0".into(),
            seed: u64::MAX,
            reference_device: Target::cpu(),
            mlport_version: "0.1.0".into(),
        }
    }

    fn functions() -> Vec<FunctionRow> {
        vec![
            FunctionRow {
                framework: Framework::Torch,
                name: "torch.argsort".into(),
                paper: Some("test_argsort".into()),
                decile: Some(100),
                top20: true,
                op: Some("argsort".into()),
                moved: Some("torch.sort".into()),
                note: Some("stable kwarg".into()),
            },
            FunctionRow::new(Framework::Jax, "jax.numpy.argsort"),
        ]
    }

    fn case(key: &str, framework: Framework, function: &str, dtype: &str, seed: u64) -> CaseRow {
        CaseRow {
            key: key.into(),
            framework,
            function: function.into(),
            case_id: "basic".into(),
            dtype: Some(dtype.parse().unwrap()),
            seed,
            spec: Spec::from(CaseSpec {
                inputs: vec![json!({"shape": [4, 5], "dist": "normal"})],
                kwargs: json!({"dim": -1}).as_object().unwrap().clone(),
                ..CaseSpec::new(function, "basic")
            }),
        }
    }

    fn cases() -> Vec<CaseRow> {
        vec![
            case("torch/torch.argsort/basic/float32", Framework::Torch, "torch.argsort", "float32", 0),
            case("torch/torch.argsort/basic/bfloat16", Framework::Torch, "torch.argsort", "bfloat16", u64::MAX),
            case("jax/jax.numpy.argsort/basic/float32", Framework::Jax, "jax.numpy.argsort", "float32", 1 << 63),
        ]
    }

    fn full_result(key: &str, device: &str) -> CaseResult {
        CaseResult {
            case_key: key.into(),
            device: dev(device),
            outcome: Outcome::Fail,
            reason: Some(Reason::DtypeUnsupported),
            error_type: Some("RuntimeError".into()),
            message: Some("\"argsort_cuda\" not implemented for 'BFloat16'".into()),
            traceback: Some("Traceback (most recent call last):\n  ...".into()),
            phase: Some("first_call".into()),
            signal: Some(9),
            stderr_tail: Some("warning: x\nwarning: y".into()),
            first_call_ns: Some(1_234_567_890),
            samples_ns: vec![30, 10, 20, i64::MAX as u64],
            block_sizes: vec![1, 2, 3, 4],
            compiles: Some(2),
            runqueue_wait_ns: Some(1_500_000),
            steady_wall_ns: Some(101_000_000),
            outputs: json!([{"index": 0, "dtype": "int64", "shape": [4, 5], "path": "o/0.npy"}]),
            wall_ms: 12.75,
            finished_at: "2026-12-01T10:00:03Z".into(),
        }
    }

    fn bare_result(key: &str, device: &str) -> CaseResult {
        let mut r = CaseResult::new(key, dev(device), Outcome::Pass);
        r.finished_at = "2026-12-01T10:00:04Z".into();
        r
    }

    /// An error and its sources, as `main` prints them.
    pub(super) fn chain(e: &dyn std::error::Error) -> String {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            text = format!("{text}: {s}");
            source = s.source();
        }
        text
    }

    fn new_store() -> (TempDir, Store) {
        let dir = TempDir::new().unwrap();
        let store = Store::open(&dir.path().join("mlport.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn two_processes_can_write_one_store_at_once() {
        // Two connections (as two mlport processes would hold) each create a run and
        // record every case concurrently; immediate transactions wait instead of failing.
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("shared.db");
        Store::open(&path).unwrap();
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&path).unwrap();
                    let run = store.create_run(&info(), &functions(), &cases()).unwrap();
                    for _ in 0..20 {
                        for c in cases() {
                            store.record_result(run, &bare_result(&c.key, "cpu")).unwrap();
                        }
                    }
                    run
                })
            })
            .collect();
        let runs: Vec<i64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        let store = Store::open(&path).unwrap();
        for run in runs {
            assert_eq!(store.results(run).unwrap().len(), cases().len());
        }
    }

    #[test]
    fn every_field_round_trips() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let fresh = store.run(run).unwrap();
        assert_eq!(fresh.info, info());
        assert_eq!((fresh.state.as_str(), fresh.finished_at.as_deref()), ("running", None));
        assert_eq!((fresh.cases_planned, fresh.results), (3, 0));

        let mut later = info();
        later.frameworks.get_mut(&Framework::Jax).unwrap().version = Some("0.4.35".into());
        later.reference_device = dev("cuda:1");
        store.update_run_info(run, &later).unwrap();

        let devices = vec![
            DeviceInfo { framework: Framework::Torch, device: dev("cuda:0"), available: true, detail: "H200".into() },
            DeviceInfo { framework: Framework::Jax, device: dev("tpu:0"), available: false, detail: String::new() },
        ];
        store.record_devices(run, &devices).unwrap();

        let keys: Vec<String> = cases().into_iter().map(|c| c.key).collect();
        let full = full_result(&keys[1], "cuda:0");
        let bare = bare_result(&keys[1], "cpu");
        let jax = full_result(&keys[2], "cpu");
        for r in [&full, &bare, &jax] {
            store.record_result(run, r).unwrap();
        }
        store.finish_run(run, RunState::Finished).unwrap();

        let summary = store.run(run).unwrap();
        assert_eq!(summary.info, later);
        assert_eq!(summary.state, RunState::Finished);
        assert!(summary.finished_at.as_deref().is_some_and(|t| t.ends_with('Z')));
        assert_eq!((summary.cases_planned, summary.results), (3, 3));
        assert_eq!(store.runs().unwrap(), vec![summary.clone()]);
        assert_eq!(store.latest_run().unwrap(), Some(summary));

        assert_eq!(store.functions(run).unwrap(), functions());
        assert_eq!(store.cases(run).unwrap(), cases());
        // Ordered by framework in report order (torch before jax), then device.
        assert_eq!(store.devices(run).unwrap(), devices);

        let results = store.results(run).unwrap();
        let got: Vec<_> = results.iter().map(|r| (&r.function, &r.case, &r.result)).collect();
        let (fs, cs) = (functions(), cases());
        assert_eq!(got, vec![(&fs[0], &cs[1], &bare), (&fs[0], &cs[1], &full), (&fs[1], &cs[2], &jax)]);
    }

    #[test]
    fn resume_keys_are_per_device() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let keys: Vec<String> = cases().into_iter().map(|c| c.key).collect();
        store.record_result(run, &bare_result(&keys[0], "cpu")).unwrap();
        store.record_result(run, &full_result(&keys[2], "cpu")).unwrap();
        store.record_result(run, &full_result(&keys[1], "cuda:0")).unwrap();
        store.record_result(run, &full_result(&keys[1], "cpu/compiled")).unwrap();

        let cpu = store.done_keys(run, &Target::cpu()).unwrap();
        assert_eq!(cpu, HashSet::from([keys[0].clone(), keys[2].clone()]));
        // A target is its own device: cpu and cpu/compiled resume apart.
        assert_eq!(store.done_keys(run, &dev("cpu/compiled")).unwrap(), HashSet::from([keys[1].clone()]));
        let compiled = store.results(run).unwrap().into_iter().find(|r| r.result.device.as_str() == "cpu/compiled");
        assert_eq!(compiled.unwrap().result, full_result(&keys[1], "cpu/compiled"));
        assert_eq!(store.done_keys(run, &dev("cuda:0")).unwrap(), HashSet::from([keys[1].clone()]));
        assert!(store.done_keys(run, &dev("tpu:0")).unwrap().is_empty());

        let other = store.create_run(&info(), &functions(), &cases()).unwrap();
        assert!(store.done_keys(other, &Target::cpu()).unwrap().is_empty());
    }

    #[test]
    fn recording_again_replaces_the_result_and_its_samples() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let key = &cases()[0].key;
        store.record_result(run, &full_result(key, "cpu")).unwrap();
        let mut again = bare_result(key, "cpu");
        again.samples_ns = vec![7, 5];
        store.record_result(run, &again).unwrap();

        let results = store.results(run).unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].result, again);
        let samples: i64 = store.conn.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)).unwrap();
        assert_eq!(samples, 2);
        assert_eq!(store.run(run).unwrap().results, 1);
    }

    #[test]
    fn devices_upsert() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let mut d =
            DeviceInfo { framework: Framework::Torch, device: dev("cuda:0"), available: false, detail: "?".into() };
        store.record_devices(run, std::slice::from_ref(&d)).unwrap();
        d.available = true;
        d.detail = "NVIDIA H200".into();
        store.record_devices(run, std::slice::from_ref(&d)).unwrap();
        assert_eq!(store.devices(run).unwrap(), vec![d]);
    }

    #[test]
    fn unknown_ids_and_keys_are_clear_errors() {
        let (dir, mut store) = new_store();
        let path = dir.path().join("mlport.db").display().to_string();
        let err = store.run(42).unwrap_err();
        assert_eq!(err.to_string(), format!("{path}: no run with id 42"));
        assert!(matches!(store.results(42), Err(StoreError::UnknownRun { id: 42, .. })));
        assert!(matches!(store.finish_run(42, RunState::Finished), Err(StoreError::UnknownRun { .. })));
        assert!(matches!(store.update_run_info(42, &info()), Err(StoreError::UnknownRun { .. })));
        assert_eq!(store.latest_run().unwrap(), None);

        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let err = store.record_result(run, &bare_result("torch/nope/basic/float32", "cpu")).unwrap_err();
        assert_eq!(err.to_string(), format!("{path}: run {run} has no case `torch/nope/basic/float32`"));
        let err = store.finish_run(run, RunState::Running).unwrap_err();
        assert!(err.to_string().contains("`running` is not `finished`, `interrupted` or `incomplete`"), "{err}");
        store.finish_run(run, RunState::Incomplete).unwrap();
        assert_eq!(store.run(run).unwrap().state, RunState::Incomplete);
        // A state no mlport writes, read back: the error names the column and the value.
        store.conn.execute("UPDATE runs SET state = 'done' WHERE id = ?1", [run]).unwrap();
        let err = chain(&store.run(run).unwrap_err());
        assert!(err.contains("runs.state: unknown run state `done`"), "{err}");
    }

    #[test]
    fn stored_specs_and_dtypes_read_typed_and_bad_ones_name_the_column() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let key = "torch/torch.argsort/basic/float32";
        // A spec as the previous version wrote it (/work/parity/store.db), and an import's.
        let old = r#"{"code":null,"compare":["up_to_sign","allclose","up_to_sign_rows"],"function":"torch.argsort","id":"basic","inputs":[{"shape":[32,16]}],"kwargs":{"full_matrices":false},"outputs":null,"tolerance":{"float32":{"atol":0.00005,"rtol":null}}}"#;
        store.conn.execute("UPDATE cases SET spec = ?1 WHERE key = ?2", [old, key]).unwrap();
        let rows = store.cases(run).unwrap();
        let c = rows[0].spec.catalogue().expect("a catalogue case");
        assert_eq!(c.tolerance[&Dtype::Float32].atol, Some(5e-5));
        assert_eq!(rows[0].dtype, Some(Dtype::Float32));
        store
            .conn
            .execute("UPDATE cases SET spec = '{\"nodeid\":\"t.py::x\"}', dtype = '' WHERE key = ?1", [key])
            .unwrap();
        let rows = store.cases(run).unwrap();
        assert_eq!((rows[0].dtype, rows[0].spec.catalogue().is_none()), (None, true), "an imported case");

        store.conn.execute("UPDATE cases SET dtype = 'float8' WHERE key = ?1", [key]).unwrap();
        let err = chain(&store.cases(run).unwrap_err());
        assert!(err.contains("cases.dtype: unknown dtype `float8`"), "{err}");
        store
            .conn
            .execute(
                "UPDATE cases SET dtype = 'float32', spec = ?1 WHERE key = ?2",
                [old.replace("exact", "x").replace("allclose", "roughly"), key.to_string()],
            )
            .unwrap();
        let err = chain(&store.cases(run).unwrap_err());
        assert!(err.contains(&format!("cases.spec of case `{key}`")) && err.contains("roughly"), "{err}");
    }

    #[test]
    fn bad_plans_are_rejected_whole() {
        let (_dir, mut store) = new_store();
        let mut twice = functions();
        twice.push(functions()[0].clone());
        let err = store.create_run(&info(), &twice, &cases()).unwrap_err();
        assert!(err.to_string().contains("torch.argsort (torch) is listed twice"), "{err}");

        let mut orphan = cases();
        orphan.push(case("torch/torch.sort/basic/float32", Framework::Torch, "torch.sort", "float32", 3));
        let err = store.create_run(&info(), &functions(), &orphan).unwrap_err();
        assert!(err.to_string().contains("names function torch.sort (torch), which is not planned"), "{err}");

        let mut dup = cases();
        dup.push(cases()[0].clone());
        assert!(matches!(store.create_run(&info(), &functions(), &dup), Err(StoreError::Invalid { .. })));
        // Nothing of the failed plans was kept.
        assert!(store.runs().unwrap().is_empty());
    }

    #[test]
    fn rejects_a_file_that_is_not_sqlite() {
        let dir = TempDir::new().unwrap();
        for (name, bytes) in [("notes.db", &b"just some text, not a database at all\n"[..]), ("tiny.db", b"SQL")] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = Store::open(&path).unwrap_err();
            assert_eq!(err.to_string(), format!("{} is not an SQLite database", path.display()));
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file must be left alone");
        }
    }

    #[test]
    fn rejects_a_foreign_sqlite_database_untouched() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("other.db");
        let other = Connection::open(&path).unwrap();
        other.execute_batch("CREATE TABLE meta (key TEXT, value TEXT); CREATE TABLE photos (id INTEGER);").unwrap();
        drop(other);
        let err = Store::open(&path).unwrap_err();
        assert_eq!(err.to_string(), format!("{} is an SQLite database but not an mlport store", path.display()));
        let other = Connection::open(&path).unwrap();
        let mode: String = other.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "delete", "journal mode must not have been changed");
        assert_eq!(user_tables(&other).unwrap(), HashSet::from(["meta".to_string(), "photos".to_string()]));
    }

    #[test]
    fn rejects_a_foreign_meta_table_of_another_shape() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("other.db");
        let other = Connection::open(&path).unwrap();
        other.execute_batch("CREATE TABLE meta (k TEXT, v TEXT); CREATE TABLE schema_version (n INTEGER);").unwrap();
        drop(other);
        assert!(matches!(Store::open(&path), Err(StoreError::NotMlport { .. })));
    }

    #[test]
    fn a_second_handle_sees_committed_results() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("mlport.db");
        let mut writer = Store::open(&path).unwrap();
        let reader = Store::open(&path).unwrap();
        let run = writer.create_run(&info(), &functions(), &cases()).unwrap();
        writer.record_result(run, &bare_result(&cases()[0].key, "cpu")).unwrap();
        assert_eq!(reader.run(run).unwrap().results, 1);
        assert_eq!(reader.done_keys(run, &Target::cpu()).unwrap(), HashSet::from([cases()[0].key.clone()]));
    }

    #[test]
    fn a_store_opens_read_only_without_writing_beside_it() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("odd ?#% name.db");
        let mut store = Store::open(&path).unwrap();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        store.record_result(run, &full_result(&cases()[0].key, "cpu")).unwrap();
        drop(store); // the last connection checkpoints the WAL and removes -wal and -shm
        let bytes = std::fs::read(&path).unwrap();
        let ro = Store::open_read_only(&path).unwrap();
        assert_eq!(ro.results(run).unwrap().len(), 1);
        assert_eq!(ro.run(run).unwrap().info, info());
        let mut ro = ro;
        assert!(ro.create_run(&info(), &functions(), &cases()).unwrap_err().is_read_only());
        drop(ro);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "not a byte of the store changed");
        // A missing store is an error naming it, not a new empty store.
        let missing = dir.path().join("missing.db");
        let err = Store::open_read_only(&missing).unwrap_err().to_string();
        assert!(err.contains("missing.db"), "{err}");
        assert!(!missing.exists());
    }

    #[test]
    fn an_older_store_is_not_upgraded_read_only() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("old.db");
        Store::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.execute("DELETE FROM schema_version WHERE version > 1", []).unwrap();
        drop(conn);
        let err = Store::open_read_only(&path).unwrap_err().to_string();
        assert!(err.contains("old.db") && err.contains("schema version 1") && err.contains("read-only"), "{err}");
    }

    #[test]
    fn file_uris_escape_what_sqlite_would_read_as_syntax() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(file_uri(Path::new("/a b/c%d?e#f.db")), "file:/a%20b/c%25d%3Fe%23f.db");
        assert_eq!(file_uri(Path::new("//tmp/s.db")), "file:/tmp/s.db");
        let odd = std::ffi::OsStr::from_bytes(b"/t/bad\xff\xc3\xa9.db");
        assert_eq!(file_uri(Path::new(odd)), "file:/t/bad%FF%C3%A9.db");
    }

    #[test]
    fn reopening_keeps_data_and_migrates_once() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("mlport.db");
        let mut store = Store::open(&path).unwrap();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        store.record_result(run, &full_result(&cases()[0].key, "cpu")).unwrap();
        drop(store); // interrupted: never finished

        for _ in 0..2 {
            let store = Store::open(&path).unwrap();
            let versions: Vec<i64> = store
                .conn
                .prepare("SELECT version FROM schema_version ORDER BY version")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(versions, (1..=schema::latest_version()).collect::<Vec<_>>());
            let summary = store.run(run).unwrap();
            assert_eq!((summary.state.as_str(), summary.results), ("running", 1));
            let mode: String = store.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
            assert_eq!(mode, "wal");
            let fk: bool = store.conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
            assert!(fk);
        }
    }

    #[test]
    fn an_empty_file_becomes_a_store() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").unwrap();
        let mut store = Store::open(&path).unwrap();
        assert!(store.create_run(&info(), &[], &[]).is_ok());
    }

    #[test]
    fn rejects_a_store_from_a_newer_mlport() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("mlport.db");
        let store = Store::open(&path).unwrap();
        let newer = schema::latest_version() + 1;
        store
            .conn
            .execute("INSERT INTO schema_version (version, name, applied_at) VALUES ($1, 'future', 'x')", [newer])
            .unwrap();
        drop(store);
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { found, .. } if found == newer));
        let text = err.to_string();
        assert!(text.starts_with(&path.display().to_string()) && text.contains(&format!("version {newer}")), "{text}");
    }

    fn imported(label: &str) -> RunData {
        let keys: Vec<String> = cases().into_iter().map(|c| c.key).collect();
        let mut pass = bare_result(&keys[0], "tpu:0");
        pass.samples_ns = vec![3, 1, 2];
        pass.first_call_ns = Some(99);
        RunData {
            info: info(),
            origin: RunOrigin {
                source: RunSource::ImportPaper,
                label: Some(label.into()),
                machine: Some("tpu_vm".into()),
                notes: vec!["no pytest report for cpu".into()],
            },
            functions: functions(),
            cases: cases(),
            devices: vec![DeviceInfo {
                framework: Framework::Torch,
                device: dev("tpu:0"),
                available: true,
                detail: "TPU v3".into(),
            }],
            results: vec![bare_result(&keys[0], "cpu"), pass, full_result(&keys[2], "cpu")],
        }
    }

    #[test]
    fn imported_runs_round_trip_finished_with_their_origin() {
        let (_dir, mut store) = new_store();
        let live = store.create_run(&info(), &functions(), &cases()).unwrap();
        let ids = store.import_runs(&[imported("paper/torch/tpu_vm/tpu"), imported("mine")]).unwrap();
        assert_eq!(ids.len(), 2);
        let run = store.run(ids[0]).unwrap();
        assert_eq!(run.origin, imported("paper/torch/tpu_vm/tpu").origin);
        assert_eq!((run.state.as_str(), run.cases_planned, run.results), ("finished", 3, 3));
        assert!(run.finished_at.is_some());
        assert_eq!(store.run(live).unwrap().origin, RunOrigin::default());
        assert_eq!(store.devices(ids[1]).unwrap(), imported("x").devices);
        let results: Vec<CaseResult> = store.results(ids[0]).unwrap().into_iter().map(|r| r.result).collect();
        let mut want = imported("x").results;
        want.sort_by(|a, b| (&a.case_key, &a.device).cmp(&(&b.case_key, &b.device)));
        let mut got = results.clone();
        got.sort_by(|a, b| (&a.case_key, &a.device).cmp(&(&b.case_key, &b.device)));
        assert_eq!(got, want);
        assert_eq!(store.run_by_label("mine").unwrap().map(|r| r.id), Some(ids[1]));
        assert_eq!(store.run_by_label("nobody").unwrap(), None);
        // The newest run wins a label used twice.
        let again = store.import_runs(&[imported("mine")]).unwrap();
        assert_eq!(store.run_by_label("mine").unwrap().map(|r| r.id), Some(again[0]));
    }

    #[test]
    fn an_import_is_all_or_nothing() {
        let (_dir, mut store) = new_store();
        let good = imported("good");
        let mut orphan = imported("bad");
        orphan.results.push(bare_result("torch/nope/basic/float32", "cpu"));
        let err = store.import_runs(&[good.clone(), orphan]).unwrap_err();
        assert!(err.to_string().contains("`torch/nope/basic/float32`, which the imported run does not plan"), "{err}");
        let mut twice = imported("bad");
        twice.results.push(twice.results[0].clone());
        let err = store.import_runs(&[good.clone(), twice]).unwrap_err();
        assert!(err.to_string().contains("has two results on cpu"), "{err}");
        let mut huge = imported("bad");
        huge.results[1].samples_ns.push(u64::MAX);
        assert!(matches!(store.import_runs(&[good, huge]), Err(StoreError::Invalid { .. })));
        assert!(store.runs().unwrap().is_empty(), "nothing of a failed import is kept");
        let samples: i64 = store.conn.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)).unwrap();
        assert_eq!(samples, 0);
    }

    #[test]
    fn a_version_1_store_upgrades_and_keeps_its_runs_as_live() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&schema::MIGRATIONS[0].sql(Dialect::Sqlite)).unwrap();
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (1, 'initial schema', 'then')",
                [],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO runs (started_at, host, os, cpu_model, cpu_cores, accelerators, python_version, \
                 python_executable, frameworks, catalogue_version, command_line, seed, reference_device, \
                 mlport_version, state) VALUES ('2026-01-01T00:00:00Z', 'old-box', 'Linux', 'cpu', 2, '[]', \
                 '3.11', '/py', '{}', '{}', 'mlport run', '7', 'cpu', '0.0.9', 'finished')",
                [],
            )
            .unwrap();
        }
        let mut store = Store::open(&path).unwrap();
        let versions: Vec<i64> = store
            .conn
            .prepare("SELECT version FROM schema_version ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(versions, (1..=schema::latest_version()).collect::<Vec<_>>());
        let old = store.latest_run().unwrap().unwrap();
        assert_eq!((old.info.host.as_str(), old.info.seed, old.state.as_str()), ("old-box", 7, "finished"));
        assert_eq!(old.origin, RunOrigin::default());
        // And the upgraded store takes imports.
        let ids = store.import_runs(&[imported("after upgrade")]).unwrap();
        assert_eq!(store.run(ids[0]).unwrap().origin.source, RunSource::ImportPaper);
    }

    #[test]
    fn a_version_2_store_upgrades_and_its_samples_read_as_single_calls() {
        let (dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let mut r = full_result(&cases()[0].key, "cpu");
        r.block_sizes.clear();
        store.record_result(run, &r).unwrap();
        // Make it what mlport wrote before blocked timing: no `calls` column, version 2.
        store
            .conn
            .execute_batch(
                "DROP TABLE comparisons; DROP TABLE reference_outputs; ALTER TABLE samples DROP COLUMN calls; \
                 ALTER TABLE results DROP COLUMN compiles; ALTER TABLE results DROP COLUMN runqueue_wait_ns; \
                 ALTER TABLE results DROP COLUMN steady_wall_ns; DELETE FROM schema_version WHERE version >= 3;",
            )
            .unwrap();
        let path = dir.path().join("mlport.db");
        drop(store);
        let mut store = Store::open(&path).unwrap();
        let v: i64 = store.conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v, schema::latest_version());
        let got = &store.results(run).unwrap()[0].result;
        assert_eq!(got.samples_ns, vec![30, 10, 20, i64::MAX as u64]);
        assert!(got.block_sizes.is_empty(), "old samples are single calls");
        assert_eq!((got.runqueue_wait_ns, got.steady_wall_ns), (None, None), "not measured before version 6");
        assert_eq!(got.compiles, None, "old results were not compiled");
        // New results keep their block sizes.
        let mut r = full_result(&cases()[1].key, "cpu");
        r.block_sizes = vec![64, 64, 64, 64];
        store.record_result(run, &r).unwrap();
        assert_eq!(store.results(run).unwrap()[1].result.block_sizes, vec![64, 64, 64, 64]);
        // Block sizes must match the samples one to one.
        r.block_sizes = vec![2];
        assert!(matches!(store.record_result(run, &r), Err(StoreError::Invalid { .. })));
    }

    #[test]
    fn out_of_range_durations_are_refused() {
        let (_dir, mut store) = new_store();
        let run = store.create_run(&info(), &functions(), &cases()).unwrap();
        let mut r = bare_result(&cases()[0].key, "cpu");
        r.samples_ns = vec![u64::MAX];
        assert!(matches!(store.record_result(run, &r), Err(StoreError::Invalid { .. })));
        assert!(store.results(run).unwrap().is_empty());
    }
}
