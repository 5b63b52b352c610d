//! `mlport audit`: scan a code base, join its calls with the store's results on a target,
//! report; optionally draft catalogue entries for what no run measured; exit 3 on a
//! `--fail-on` finding.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use super::ExitStatus;
use super::output::{StdoutClosed, emit, format_of};
use super::scan::scan_with;
use crate::audit::{self, AuditReport};
use crate::cli::AuditArgs;
use crate::lifecycle::select::{campaign_runs, machine_runs, resolve_run};
use crate::{render, workspace};

/// The file a framework's drafts go to: `path` itself for one framework, else
/// `<stem>.<framework>.toml` beside it.
fn draft_path(path: &Path, framework: &str, several: bool) -> std::path::PathBuf {
    if several {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        path.with_file_name(format!("{stem}.{framework}.toml"))
    } else {
        path.to_path_buf()
    }
}

/// `--add-to-catalogue`: drafts for the called functions mlport's catalogue lacks; a
/// ready `mlport run` line for those it has but no run measured.
fn add_to_catalogue(rep: &AuditReport, path: &Path) -> Result<()> {
    // Unknown functions mlport's catalogue already has need a run on the device, not a draft.
    let catalogue = crate::catalogue::builtin()?;
    let known: BTreeMap<String, String> = catalogue
        .files
        .iter()
        .flat_map(|f| f.functions.iter())
        // A `reference_only` NumPy function only supplies references: no run measures it.
        .filter(|f| !f.reference_only)
        .map(|f| (crate::scan::canonical(&f.name), f.name.to_string()))
        .collect();
    let runnable: Vec<&str> = rep
        .rows
        .iter()
        .filter(|r| r.status.is_none())
        .filter_map(|r| known.get(&r.function).map(String::as_str))
        .collect();
    if !runnable.is_empty() {
        eprintln!(
            "mlport: {} of the unknown functions are in mlport's catalogue, not yet measured on {}: \
             `mlport run --device {} --function {}` measures them (no drafts written for them)",
            runnable.len(),
            rep.device,
            rep.device,
            runnable.join(",")
        );
    }
    let drafts = audit::catalogue_drafts(rep, &known);
    if drafts.is_empty() {
        eprintln!("mlport: no catalogue drafts to write: every called function is measured or in the catalogue");
    }
    let several = drafts.len() > 1;
    for (fw, text) in drafts {
        let target = draft_path(path, &fw.to_string(), several);
        let replaced = target.exists();
        std::fs::write(&target, text).with_context(|| format!("cannot write {}", target.display()))?;
        eprintln!(
            "mlport: wrote catalogue drafts for {fw} to {}{}",
            target.display(),
            if replaced { " (replacing the file that was there)" } else { "" }
        );
    }
    Ok(())
}

/// `mlport audit`.
pub fn audit(args: AuditArgs) -> Result<ExitStatus> {
    let store =
        workspace::open_to_read(&args.db.db, "(run `mlport run` or `mlport import paper` first, or pass --db)")?;
    let runs = if let Some(campaign) = &args.campaign {
        // One machine's runs: an audit joins a target with its reference device on one machine.
        machine_runs(campaign, &campaign_runs(&store, campaign)?, args.machine.as_deref(), "--machine NAME")?
    } else if args.runs.is_empty() {
        store.runs()?
    } else {
        args.runs.iter().map(|r| resolve_run(&store, Some(r))).collect::<Result<Vec<_>>>()?
    };
    let scan = scan_with(&args.paths, args.threads)?;
    let opts = audit::AuditOptions {
        device: args.device.clone(),
        reference: args.reference.clone(),
        threshold: args.threshold,
    };
    let rep = audit::audit(&store, &runs, &scan, &opts)?;
    // A reader that closed stdout (`audit ... | head`) still gets the drafts and the findings'
    // exit code: CI gates on the code, not on the text.
    let closed = match emit(&render::audit::render(&rep, format_of(args.format)?)) {
        Err(e) if e.is::<StdoutClosed>() => Some(e),
        other => other.err().map_or(Ok(None), Err)?,
    };
    if let Some(path) = &args.add_to_catalogue {
        add_to_catalogue(&rep, path)?;
    }
    if args.fail_on.iter().any(|f| rep.count(*f) > 0) {
        return Ok(ExitStatus::Findings);
    }
    closed.map_or(Ok(ExitStatus::Ok), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_of_several_frameworks_get_a_file_each() {
        let p = Path::new("/x/drafts.toml");
        assert_eq!(draft_path(p, "torch", false), Path::new("/x/drafts.toml"));
        assert_eq!(draft_path(p, "torch", true), Path::new("/x/drafts.torch.toml"));
    }
}
