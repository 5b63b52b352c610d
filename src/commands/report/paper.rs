//! `mlport report paper` (the figures of "The Grand Illusion" from its raw data, both
//! methods; HTML: a page of its own) and `report paper-compare` (the paper's PyTorch TPU v3
//! statuses beside torch on `xla:0` today).

use anyhow::{Result, bail};

use super::portability::build_portability;
use super::{html_path, options, show, text_format, write_page};
use crate::analysis::{self, ReportOptions};
use crate::cli::FormatArg;
use crate::cli::report::{PaperArgs, PaperCompareArgs};
use crate::lifecycle::select::resolve_run;
use crate::model::Framework;
use crate::render::Report;
use crate::store::Store;

/// `report paper` (alias `--paper`): the paper's figures from every imported paper run of the
/// store; `--format html` writes them as a page.
///
/// Errors: no imported paper data, or data imported by an older mlport; HTML without `-o`.
pub fn paper(store: &Store, args: &PaperArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        let path = html_path(args.output.as_ref())?;
        let page = figures(store, args.stats_seed)?.html().expect("the paper's figures have a page")?;
        return write_page(path, &page, "the paper's figures");
    }
    let format = text_format(args.format, args.output.as_ref())?;
    show(&figures(store, args.stats_seed)?, format, String::new)
}

/// The paper's figures from every imported paper run of the store, both methods.
fn figures(store: &Store, stats_seed: Option<u64>) -> Result<analysis::paper::PaperFigures> {
    let opts = ReportOptions::default();
    let mut loaded = Vec::new();
    for r in store.runs()?.into_iter().filter(|r| r.origin.source == crate::model::RunSource::ImportPaper) {
        let results = store.results(r.id)?;
        let portability = analysis::build(&r, &store.devices(r.id)?, &results, &opts);
        loaded.push((r, portability, results));
    }
    if loaded.is_empty() {
        bail!("--paper: the store holds no imported paper data (run `mlport import paper ../shared/paper-data` first)");
    }
    if !loaded.iter().any(|(_, _, rows)| rows.iter().any(|r| !r.result.session_first_calls_ns.is_empty())) {
        bail!(
            "--paper: the paper data in this store was imported by an older mlport that kept only the first \
             session's first calls; import it again (`mlport import paper ../shared/paper-data` into a new store)"
        );
    }
    if loaded.iter().any(|(_, _, rows)| {
        rows.iter().any(|r| imported_has(r, |s| s.nodeid.is_some()))
            && !rows.iter().any(|r| imported_has(r, |s| s.report_index.is_some()))
    }) {
        bail!(
            "--paper: the paper data in this store was imported by an older mlport that did not keep each test's \
             place in its report (nor, for TensorFlow, its outcome in the report the authors' plotting code read), \
             which the authors' method needs; import it again (`mlport import paper ../shared/paper-data` into a new \
             store)"
        );
    }
    let runs: Vec<analysis::paper::PaperRun<'_>> = loaded
        .iter()
        .map(|(summary, portability, results)| analysis::paper::PaperRun { summary, portability, results })
        .collect();
    Ok(analysis::paper::build(&runs, stats_seed))
}

/// Whether `row` was imported from a test suite with `field` true of where it came from.
fn imported_has(row: &crate::model::ResultRow, field: fn(&crate::model::ImportedSpec) -> bool) -> bool {
    matches!(&row.case.spec, crate::model::Spec::Imported(s) if field(s))
}

/// `report paper-compare` (alias `--paper-compare`): the paper's PyTorch TPU v3 run beside
/// --run's torch on `xla:0` (the latest run that has torch results on an `xla:N` or `tpu:N`
/// device when --run is not given).
///
/// Errors: HTML; the paper's run is not in the store (`mlport import paper` first); no run
/// has torch on an XLA device.
pub fn paper_compare(store: &Store, args: &PaperCompareArgs) -> Result<()> {
    use analysis::paper_compare::{self as pc, PAPER_TPU_V3_LABEL};
    if args.format == FormatArg::Html {
        bail!("--format html does not show --paper-compare (use table, markdown, json or csv)");
    }
    let format = text_format(args.format, None)?;
    let opts = options(&args.counting);
    let db = &args.db.db;
    let Some(paper) = store.run_by_label(PAPER_TPU_V3_LABEL)? else {
        bail!(
            "--paper-compare needs the paper's PyTorch TPU v3 run (label `{PAPER_TPU_V3_LABEL}`) in {db}: run `mlport \
             import paper PAPER-DATA-DIR --db {db}` first"
        );
    };
    let is_xla = |t: &analysis::TargetSummary| {
        t.framework == Framework::Torch && !t.device.mode().is_compiled() && matches!(t.device.kind(), "xla" | "tpu")
    };
    let today = match args.run.as_deref() {
        Some(spec) => resolve_run(store, Some(spec))?,
        None => {
            let mut found = None;
            for r in store.runs()?.into_iter().rev().filter(|r| r.id != paper.id && !r.origin.source.is_test_suite()) {
                if build_portability(store, r.id, &opts)?.targets.iter().any(is_xla) {
                    found = Some(r);
                    break;
                }
            }
            found.ok_or_else(|| {
                anyhow::anyhow!(
                    "no run in {db} has torch on xla:0: run `mlport run --framework torch --device cpu,xla:0` first"
                )
            })?
        }
    };
    let then_rep = build_portability(store, paper.id, &opts)?;
    let then = then_rep.targets.iter().find(|t| t.framework == Framework::Torch && t.device == pc::paper_device());
    let now_rep = build_portability(store, today.id, &opts)?;
    let now = now_rep.targets.iter().find(|t| is_xla(t));
    let (Some(then), Some(now)) = (then, now) else {
        bail!("run {} has no torch results on xla:N or tpu:N to compare with the paper's TPU v3", today.id);
    };
    let devices = store.devices(today.id)?;
    let detail = devices
        .iter()
        .find(|d| d.device == now.device && d.framework == Framework::Torch)
        .map(|d| d.detail.clone())
        .unwrap_or_default();
    show(&pc::build(paper.id, then, today.id, now, &detail), format, String::new)
}
