//! `mlport import bundle FILE...`: every bundle read and checked whole before the store is
//! opened (so a bad file — empty, a folder, truncated, damaged — imports nothing and leaves no
//! new store behind), then each bundle's runs written in one transaction. A run whose uid the
//! store holds is skipped (said on stderr), unless the store's copy is an earlier state of it
//! (exported while it was running): the bundle's then replaces it under the same run id.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::ExitStatus;
use super::output::plural;
use crate::bundle::{self, Bundle};
use crate::cli::ImportBundleArgs;
use crate::model::{RunRecord, RunState};
use crate::store::{Imported, Location, Store, supersedes};
use crate::workspace::{self, RunFolders};

/// A bundle to import: its file and, unless it carries output files (read again when its turn
/// comes, so that many large bundles are never all in memory), its checked contents.
struct Checked {
    file: PathBuf,
    bundle: Option<Bundle>,
}

/// `mlport import bundle`.
pub fn bundle(args: ImportBundleArgs) -> Result<ExitStatus> {
    let mut checked: Vec<Checked> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for file in &args.files {
        let same = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
        if seen.contains(&same) {
            eprintln!("mlport: {} is named twice on the command line; importing it once", file.display());
            continue;
        }
        seen.push(same);
        let b = bundle::read(file)?;
        let keep = b.outputs.is_empty();
        checked.push(Checked { file: file.clone(), bundle: keep.then_some(b) });
    }
    let mut store = workspace::open_store(&args.db.db)?;
    let folders = RunFolders::new(&args.db.db, args.outputs.outputs.as_deref());
    for c in checked {
        let b = match c.bundle {
            Some(b) => b,
            None => bundle::read(&c.file)?,
        };
        import_one(&mut store, &folders, &args.db.db, &c.file, b)?;
    }
    Ok(ExitStatus::Ok)
}

/// Writes one checked bundle: its files first (removed again if its runs cannot be written),
/// then its runs in one transaction.
fn import_one(store: &mut Store, folders: &RunFolders, db: &Location, file: &Path, mut b: Bundle) -> Result<()> {
    let started = Instant::now();
    // A stored copy the bundle replaces must not be in the middle of a run on this machine.
    let mut locks = Vec::new();
    for record in &b.records {
        let uid = record.run.uid.as_deref().unwrap_or_default();
        if let Some(stored) = store.run_by_uid(uid)?
            && supersedes(record.state, record.run.results.len() as u64, stored.state, stored.results)
        {
            let lock = folders.lock_run(stored.id).with_context(|| {
                format!(
                    "{}: run {uid} would replace run {} of {db}, which an mlport process on this machine is \
                     running; nothing was imported: import it once that run ends",
                    file.display(),
                    stored.id
                )
            })?;
            locks.push(lock);
        }
    }
    let mut placed = Vec::new();
    for (run, record) in b.manifest.runs.iter().zip(b.records.iter_mut()) {
        let (Some(o), Some(files)) = (&run.outputs, b.outputs.get(&run.uid)) else { continue };
        if store
            .run_by_uid(&run.uid)?
            .is_some_and(|s| !supersedes(record.state, record.run.results.len() as u64, s.state, s.results))
        {
            continue;
        }
        let dir = folders.bundle_dir(&run.uid);
        for (rel, bytes) in files {
            let path = dir.join(rel);
            workspace::create_dir(path.parent().expect("a file in a folder"))?;
            std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        }
        let now = dir.to_string_lossy();
        for r in &mut record.run.results {
            bundle::relocate(&mut r.outputs, &o.was, &now);
        }
        for r in &mut record.references {
            bundle::relocate(&mut r.outputs, &o.was, &now);
        }
        placed.push(dir);
    }
    let done = match store.import_records(&b.records) {
        Ok(done) => done,
        Err(e) => {
            for dir in &placed {
                let _ = std::fs::remove_dir_all(dir);
            }
            return Err(anyhow::Error::from(e).context(format!("{}: nothing was imported", file.display())));
        }
    };
    drop(locks);
    let mut new = Vec::new();
    for ((run, record), d) in b.manifest.runs.iter().zip(&b.records).zip(&done) {
        let name = format!("run {} ({})", run.uid, run.label.as_deref().unwrap_or(&run.machine));
        match d {
            Imported::New(id) => new.push(id.to_string()),
            Imported::Present(id) => {
                let stored = store.run(*id)?;
                let theirs = if stored.state == RunState::Finished && record.state == RunState::Finished {
                    String::new()
                } else {
                    format!(
                        " (there {}, {}; in the bundle {}, {}: not newer)",
                        stored.state,
                        plural(stored.results as usize, "result"),
                        record.state,
                        plural(record.run.results.len(), "result")
                    )
                };
                eprintln!("mlport: {}: {name} is already in {db} as run {id}{theirs}; skipped", file.display());
            }
            Imported::Replaced { id, was, results_before } => eprintln!(
                "mlport: {}: {name} was in {db} as run {id}, {was} with {}; replaced by the bundle's, {} with {} \
                 (still run {id})",
                file.display(),
                plural(*results_before as usize, "result"),
                record.state,
                plural(record.run.results.len(), "result"),
            ),
        }
        if record.state != RunState::Finished && !matches!(d, Imported::Present(_)) {
            eprintln!("mlport: {}", not_finished(record, &format!("{name} in {}", file.display()), false));
        }
    }
    let replaced = done.iter().filter(|d| matches!(d, Imported::Replaced { .. })).count();
    eprintln!(
        "mlport: imported {} from {} in {:.2} s{}{}",
        plural(new.len(), "run"),
        file.display(),
        started.elapsed().as_secs_f64(),
        if new.is_empty() { String::new() } else { format!(" (ids {})", new.join(", ")) },
        if replaced == 0 { String::new() } else { format!("; replaced {}", plural(replaced, "run")) }
    );
    Ok(())
}

/// What a run that had not finished when it was exported means: `what` names it; `exporting`
/// says it now (by `mlport export`), else as it was (by `mlport import`).
pub fn not_finished(record: &RunRecord, what: &str, exporting: bool) -> String {
    let state = match (record.state, exporting) {
        (RunState::Running, true) => "is still running (or was killed)".to_string(),
        (RunState::Running, false) => "was still running (or killed) when it was exported".to_string(),
        (s, true) => format!("is {s}"),
        (s, false) => format!("was {s} when it was exported"),
    };
    let done: std::collections::HashSet<&str> = record.run.results.iter().map(|r| r.case_key.as_str()).collect();
    let then = if exporting {
        "the bundle holds it as it stands now. Export it again once it has ended: importing that bundle \
         replaces this one"
    } else {
        "reports show it as it stood. Export it again once it has ended and import that bundle: it replaces \
         this one"
    };
    format!("{what} {state}: {} of its {} planned cases have a result; {then}", done.len(), record.run.cases.len())
}
