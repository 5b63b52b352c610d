//! The on-disk layout mlport keeps beside a store and in its cache: each run's folder
//! (`.mlport/<store file>-run-<id>/`, its `.npy` outputs and `run.lock`), the folder `mlport
//! pytest` keeps pytest's raw report in, the worker's sources in the cache; and opening a
//! store to write (creating it) or to read (it must exist), with errors that name the path.

use std::fs::File;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::pyenv;
use crate::store::{Store, StoreError};
use crate::worker;

/// What can go wrong with the layout; every message names the path.
#[derive(Debug, Error)]
pub enum WorkspaceError {
    /// The store's folder does not exist (mlport creates the file, never its folders).
    #[error("{}: the folder {} does not exist", db.display(), folder.display())]
    NoFolder {
        /// The store asked for.
        db: PathBuf,
        /// Its missing folder.
        folder: PathBuf,
    },
    /// A store that must exist does not; `why` says what it was wanted for and how to make one.
    #[error("{}: no such store {why}", db.display())]
    NoStore {
        /// The store asked for.
        db: PathBuf,
        /// What it was wanted for, e.g. "to resume".
        why: String,
    },
    /// Another process executes the run (it holds the lock).
    #[error(
        "run {run} in {} is being executed by another mlport process right now (it holds {}); \
         wait for it, or stop it (Ctrl-C) and resume then",
        db.display(),
        lock.display()
    )]
    Locked {
        /// The run.
        run: i64,
        /// Its store.
        db: PathBuf,
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

/// Opens (or creates) the store to write, saying plainly when its folder does not exist.
pub fn open_store(db: &Path) -> Result<Store, WorkspaceError> {
    if let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty() && !p.is_dir()) {
        return Err(WorkspaceError::NoFolder { db: db.to_path_buf(), folder: parent.to_path_buf() });
    }
    Ok(Store::open(db)?)
}

/// Fails with [`WorkspaceError::NoStore`], saying `why`, when the store `db` does not exist.
fn require_store(db: &Path, why: &str) -> Result<(), WorkspaceError> {
    if !db.exists() {
        return Err(WorkspaceError::NoStore { db: db.to_path_buf(), why: why.to_string() });
    }
    Ok(())
}

/// Opens a store that must already exist, to write.
pub fn open_existing(db: &Path, why: &str) -> Result<Store, WorkspaceError> {
    require_store(db, why)?;
    open_store(db)
}

/// Opens a store that must already exist, for a command that only reads it: read-only when
/// it (or its folder) cannot be written.
pub fn open_to_read(db: &Path, why: &str) -> Result<Store, WorkspaceError> {
    require_store(db, why)?;
    Ok(Store::open_for_reading(db)?)
}

/// The folder for a run's files (.npy outputs): `.mlport/<store file name>-run-<id>`
/// beside the store, as an absolute path, so stores sharing a folder never share files.
/// The store's real path is used when it exists, so a symlink to a store shares its run
/// folders (and so its run locks).
pub fn run_dir(db: &Path, run_id: i64) -> PathBuf {
    let real = db.canonicalize().ok();
    let db = real.as_deref().unwrap_or(db);
    let parent = folder_of(db);
    let parent = parent.canonicalize().unwrap_or_else(|_| parent.to_path_buf());
    let name = db.file_name().map_or_else(|| "mlport.db".into(), |n| n.to_string_lossy().into_owned());
    parent.join(".mlport").join(format!("{name}-run-{run_id}"))
}

/// Creates `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<(), WorkspaceError> {
    std::fs::create_dir_all(dir).map_err(io("create", dir))
}

/// Takes the run's lock (`run.lock` in its folder, an exclusive advisory lock held until
/// the returned file is dropped or the process ends), so that two processes never execute
/// the same run: a second `--resume` of a run still executing is refused.
///
/// Errors: [`WorkspaceError::Locked`] when another process executes the run; the folder or
/// file cannot be made.
pub fn lock_run(db: &Path, run_id: i64) -> Result<File, WorkspaceError> {
    let dir = run_dir(db, run_id);
    create_dir(&dir)?;
    let path = dir.join("run.lock");
    let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(io("open", &path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(WorkspaceError::Locked { run: run_id, db: db.to_path_buf(), lock: path })
        }
        Err(std::fs::TryLockError::Error(e)) => Err(io("lock", &path)(e)),
    }
}

/// Where `mlport pytest` keeps pytest's raw report: `.mlport/pytest-<UTC time>-<pid>/` beside
/// the store (not created here).
pub fn pytest_dir(db: &Path) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S");
    folder_of(db).join(".mlport").join(format!("pytest-{stamp}-{}", std::process::id()))
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
        let db = tmp.path().join("a.db");
        let dir = run_dir(&db, 7);
        assert!(dir.is_absolute());
        assert_eq!(dir, tmp.path().canonicalize().unwrap().join(".mlport").join("a.db-run-7"));
        // Two stores in one folder never share run folders.
        assert_ne!(run_dir(&tmp.path().join("b.db"), 7), dir);
    }

    #[test]
    fn a_run_is_locked_once() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("a.db");
        let held = lock_run(&db, 1).unwrap();
        let again = lock_run(&db, 1).unwrap_err();
        assert!(matches!(again, WorkspaceError::Locked { run: 1, .. }), "{again}");
        assert!(again.to_string().contains("being executed by another mlport process"));
        assert!(lock_run(&db, 2).is_ok(), "another run has its own lock");
        drop(held);
        assert!(lock_run(&db, 1).is_ok(), "the lock goes with the file");
    }

    #[test]
    fn missing_stores_and_folders_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let nowhere = tmp.path().join("no/such/x.db");
        let e = open_store(&nowhere).unwrap_err().to_string();
        assert!(e.contains("the folder") && e.contains("does not exist"), "{e}");
        let e = open_to_read(&tmp.path().join("none.db"), "to report").unwrap_err().to_string();
        assert!(e.ends_with("none.db: no such store to report"), "{e}");
        assert!(!tmp.path().join("none.db").exists(), "reading never creates a store");
    }
}
