//! `mlport export RUN|CAMPAIGN... -o FILE [--with-outputs]`: reads the runs whole from the
//! store and writes them as one bundle ([`crate::bundle`]).

use std::time::Instant;

use anyhow::{Result, bail};

use super::ExitStatus;
use super::import_bundle::not_finished;
use super::output::{now, plural};
use crate::bundle::{self, ToExport};
use crate::cli::ExportArgs;
use crate::lifecycle::select::runs_named;
use crate::model::RunState;
use crate::workspace;

/// `mlport export`.
pub fn export(args: ExportArgs) -> Result<ExitStatus> {
    let started = Instant::now();
    let store = workspace::open_to_read(&args.db.db, "(run `mlport run` or `mlport import` first, or pass --db)")?;
    let mut ids: Vec<i64> = Vec::new();
    for name in &args.runs {
        for run in runs_named(&store, name)? {
            if !ids.contains(&run.id) {
                ids.push(run.id);
            }
        }
    }
    if ids.is_empty() {
        bail!("no run to export");
    }
    let folders = workspace::RunFolders::new(&args.db.db, args.outputs.outputs.as_deref());
    let runs = ids
        .iter()
        .map(|&id| {
            Ok(ToExport { record: store.run_record(id)?, run_dir: args.with_outputs.then(|| folders.run_dir(id)) })
        })
        .collect::<Result<Vec<_>>>()?;
    let w = bundle::write(&args.output, &runs, &now())?;
    for (id, r) in ids.iter().zip(&runs).filter(|(_, r)| r.record.state != RunState::Finished) {
        eprintln!("mlport: {}", not_finished(&r.record, &format!("run {id}"), true));
    }
    eprintln!(
        "mlport: wrote {} ({} from {}, {}, {:.1} MB of data in {:.1} MB) in {:.2} s",
        args.output.display(),
        plural(w.runs, "run"),
        args.db.db,
        plural(w.members, "member"),
        w.raw_bytes as f64 / 1e6,
        w.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitStatus::Ok)
}
