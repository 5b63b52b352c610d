//! `mlport repro RESULT_ID`: the script and its arrays in `--out` (default `repro-<ID>`).

use std::path::PathBuf;

use anyhow::Result;

use super::ExitStatus;
use super::output::emit;
use crate::cli::ReproArgs;
use crate::workspace;

/// `mlport repro`.
pub fn repro(args: ReproArgs) -> Result<ExitStatus> {
    let id = args.result;
    let store = workspace::open_to_read(&args.db.db, "(run `mlport run` first, or pass --db)")?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("repro-{id}")));
    let folders = workspace::RunFolders::new(&args.db.db, args.outputs.outputs.as_deref());
    let w = crate::repro::write(&store, id, &out, &|run| folders.run_dir(run))?;
    eprintln!("mlport: result #{id}: {}", w.what);
    // The interpreter the run used has the framework (a system `python` may not even have NumPy).
    let python = if w.python.is_empty() { "python" } else { w.python.as_str() };
    eprintln!(
        "mlport: wrote {} and {} array files; run it with the run's interpreter: {python} {}",
        w.script.display(),
        w.files.len(),
        w.script.display()
    );
    emit(&format!("{}\n", w.script.display()))?;
    Ok(ExitStatus::Ok)
}
