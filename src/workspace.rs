//! The on-disk layout mlport keeps beside a store and in its cache: each run's folder
//! (`.mlport/<store file>-run-<id>/` beside an SQLite store, `.mlport/<host>-<port>-<db>-run-<id>/`
//! in the current folder for a PostgreSQL store, or under `--outputs DIR`; its `.npy` outputs
//! and `run.lock`), the folder `mlport pytest` keeps pytest's raw report in, the worker's sources
//! in the cache; and opening a store to write (creating it) or to read (it must exist), with
//! errors that name the path.

use std::fs::File;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::pyenv;
use crate::store::{Location, Store, StoreError};
use crate::worker;

/// What can go wrong with the layout; every message names the path.
#[derive(Debug, Error)]
pub enum WorkspaceError {
    /// The store's folder does not exist (mlport creates the file, never its folders).
    #[error("{db}: the folder {} does not exist", folder.display())]
    NoFolder {
        /// The store asked for.
        db: Location,
        /// Its missing folder.
        folder: PathBuf,
    },
    /// A store that must exist does not; `why` says what it was wanted for and how to make one.
    #[error("{db}: no such store {why}")]
    NoStore {
        /// The store asked for.
        db: Location,
        /// What it was wanted for, e.g. "to resume".
        why: String,
    },
    /// Another process executes the run (it holds the lock).
    #[error(
        "run {run} in {db} is being executed by another mlport process right now (it holds {}); \
         wait for it, or stop it (Ctrl-C) and resume then",
        lock.display()
    )]
    Locked {
        /// The run.
        run: i64,
        /// Its store.
        db: Location,
        /// The lock file held.
        lock: PathBuf,
    },
    /// A folder or file of the layout cannot be made.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// "create", "open", "lock", "write the worker's sources to".
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store itself.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + 'a {
    move |source| WorkspaceError::Io { what, path: path.to_path_buf(), source }
}

/// The folder a store lives in (`.` for a bare file name).
fn folder_of(db: &Path) -> &Path {
    db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The folder `.mlport/` sits in: an SQLite store's own folder, the current folder for PostgreSQL
/// (the store is on a server; the arrays stay on the machine that made them).
fn home_of(db: &Location) -> &Path {
    match db {
        Location::Sqlite(path) => folder_of(path),
        Location::Postgres(_) => Path::new("."),
    }
}

/// Opens (or creates) the store to write, saying plainly when its folder does not exist.
pub fn open_store(db: &Location) -> Result<Store, WorkspaceError> {
    if let Location::Sqlite(path) = db
        && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir())
    {
        return Err(WorkspaceError::NoFolder { db: db.clone(), folder: parent.to_path_buf() });
    }
    Ok(Store::open_at(db)?)
}

/// Fails with [`WorkspaceError::NoStore`], saying `why`, when the SQLite store `db` does not
/// exist (a PostgreSQL database is checked when it is opened).
fn require_store(db: &Location, why: &str) -> Result<(), WorkspaceError> {
    if let Location::Sqlite(path) = db
        && !path.exists()
    {
        return Err(WorkspaceError::NoStore { db: db.clone(), why: why.to_string() });
    }
    Ok(())
}

/// Opens a store that must already exist, to write.
pub fn open_existing(db: &Location, why: &str) -> Result<Store, WorkspaceError> {
    require_store(db, why)?;
    open_store(db)
}

/// Opens a store that must already exist, for a command that only reads it: read-only when
/// it (or its folder) cannot be written.
pub fn open_to_read(db: &Location, why: &str) -> Result<Store, WorkspaceError> {
    require_store(db, why)?;
    Ok(Store::open_for_reading(db)?)
}

/// Where a store's runs keep their files: `<root>/<store name>-run-<id>/`, with the root
/// `--outputs DIR` when given, else `.mlport/` beside an SQLite store or in the current folder
/// for a PostgreSQL one; the store name is the SQLite file's name, or `<host>-<port>-<database>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFolders {
    root: PathBuf,
    name: String,
    db: Location,
}

impl RunFolders {
    /// The run folders of the store `db`, under `outputs` when given. The root is absolute; an
    /// SQLite store's real path is used when it exists, so a symlink to a store shares its run
    /// folders (and so its run locks).
    pub fn new(db: &Location, outputs: Option<&Path>) -> RunFolders {
        let (root, name) = match db {
            Location::Sqlite(path) => {
                let real = path.canonicalize().ok();
                let path = real.as_deref().unwrap_or(path);
                let name = path.file_name().map_or_else(|| "mlport.db".into(), |n| n.to_string_lossy().into_owned());
                (folder_of(path).join(".mlport"), name)
            }
            Location::Postgres(url) => {
                let safe = |s: &str| s.replace(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)), "_");
                (home_of(db).join(".mlport"), format!("{}-{}-{}", safe(url.host()), url.port(), safe(url.dbname())))
            }
        };
        let root = outputs.map_or(root, Path::to_path_buf);
        let root = std::path::absolute(&root).unwrap_or(root);
        // Canonical where it exists, so `a/../b` and a symlinked folder name one place.
        let root = match (root.parent(), root.file_name()) {
            (Some(parent), Some(leaf)) => parent.canonicalize().map_or(root.clone(), |p| p.join(leaf)),
            _ => root,
        };
        RunFolders { root, name, db: db.clone() }
    }

    /// The folder for a run's files (.npy outputs), absolute, so stores sharing a folder never
    /// share files.
    pub fn run_dir(&self, run_id: i64) -> PathBuf {
        self.root.join(format!("{}-run-{run_id}", self.name))
    }

    /// The folder for the files of a run imported from a bundle, `<store>-bundle-<uid>` beside
    /// the run folders: named by the run's uid, which is known before the import gives it an id.
    pub fn bundle_dir(&self, uid: &str) -> PathBuf {
        self.root.join(format!("{}-bundle-{uid}", self.name))
    }

    /// Takes the run's lock (`run.lock` in its folder, an exclusive advisory lock held until
    /// the returned file is dropped or the process ends), so that two processes never execute
    /// the same run: a second `--resume` of a run still executing is refused.
    ///
    /// Errors: [`WorkspaceError::Locked`] when another process executes the run; the folder or
    /// file cannot be made.
    pub fn lock_run(&self, run_id: i64) -> Result<File, WorkspaceError> {
        let dir = self.run_dir(run_id);
        create_dir(&dir)?;
        let path = dir.join("run.lock");
        let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(io("open", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                Err(WorkspaceError::Locked { run: run_id, db: self.db.clone(), lock: path })
            }
            Err(std::fs::TryLockError::Error(e)) => Err(io("lock", &path)(e)),
        }
    }
}

/// Creates `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), WorkspaceError> {
    std::fs::create_dir_all(dir).map_err(io("create", dir))
}

/// Where `mlport pytest` keeps pytest's raw report: `.mlport/pytest-<UTC time>-<pid>/` beside
/// an SQLite store, in the current folder for PostgreSQL (not created here).
pub fn pytest_dir(db: &Location) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S");
    home_of(db).join(".mlport").join(format!("pytest-{stamp}-{}", std::process::id()))
}

/// The worker's sources, written into the cache (`<cache>/worker/<sources hash>/`) when
/// missing or different; returns the folder.
pub fn worker_dir() -> Result<PathBuf, WorkspaceError> {
    let dir = pyenv::cache_dir().join("worker").join(worker::sources_hash());
    worker::install_scripts(&dir).map_err(io("write the worker's sources to", &dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_folders_sit_beside_the_store_and_are_absolute() {
        let tmp = tempfile::tempdir().unwrap();
        let db = Location::from(tmp.path().join("a.db"));
        let dir = RunFolders::new(&db, None).run_dir(7);
        assert!(dir.is_absolute());
        assert_eq!(dir, tmp.path().canonicalize().unwrap().join(".mlport").join("a.db-run-7"));
        // Two stores in one folder never share run folders.
        assert_ne!(RunFolders::new(&tmp.path().join("b.db").into(), None).run_dir(7), dir);
        // --outputs moves them, keeping the store's name.
        let shared = tmp.path().join("shared");
        assert_eq!(
            RunFolders::new(&db, Some(&shared)).run_dir(7),
            tmp.path().canonicalize().unwrap().join("shared").join("a.db-run-7")
        );
    }

    #[test]
    fn a_postgres_store_keeps_its_run_folders_here_named_by_server_and_database() {
        let db = Location::parse("postgresql://ann:pw@db.example:6543/fleet").unwrap();
        let dir = RunFolders::new(&db, None).run_dir(3);
        let here = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(dir, here.join(".mlport").join("db.example-6543-fleet-run-3"));
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunFolders::new(&db, Some(tmp.path())).run_dir(3);
        assert_eq!(dir, tmp.path().canonicalize().unwrap().join("db.example-6543-fleet-run-3"));
    }

    #[test]
    fn a_run_is_locked_once() {
        let tmp = tempfile::tempdir().unwrap();
        let folders = RunFolders::new(&tmp.path().join("a.db").into(), None);
        let held = folders.lock_run(1).unwrap();
        let again = folders.lock_run(1).unwrap_err();
        assert!(matches!(again, WorkspaceError::Locked { run: 1, .. }), "{again}");
        assert!(again.to_string().contains("being executed by another mlport process"));
        assert!(folders.lock_run(2).is_ok(), "another run has its own lock");
        drop(held);
        assert!(folders.lock_run(1).is_ok(), "the lock goes with the file");
    }

    #[test]
    fn missing_stores_and_folders_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let nowhere = tmp.path().join("no/such/x.db");
        let e = open_store(&nowhere.into()).unwrap_err().to_string();
        assert!(e.contains("the folder") && e.contains("does not exist"), "{e}");
        let e = open_to_read(&tmp.path().join("none.db").into(), "to report").unwrap_err().to_string();
        assert!(e.ends_with("none.db: no such store to report"), "{e}");
        assert!(!tmp.path().join("none.db").exists(), "reading never creates a store");
    }
}
