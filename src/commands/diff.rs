//! `mlport diff A B`: resolves both sides in the store (a run by id or label, or a campaign's
//! runs), reads their results and comparisons, compares them machine by machine (two sides
//! that share no machine, or no case, are an error),
//! computes the changes ([`crate::analysis::diff`]), prints them, and says whether a change of
//! a `--fail-on` kind is present (exit 3, [`ExitStatus::Findings`]).

use anyhow::{Result, bail};

use super::ExitStatus;
use super::output::{emit, format_of, plural};
use crate::analysis::ReportOptions;
use crate::analysis::diff::{DiffOptions, SideData, diff as compute};
use crate::cli::DiffArgs;
use crate::lifecycle::select::runs_named;
use crate::model::{ComparisonRow, ResultRow, RunSummary};
use crate::render::{self, Format};
use crate::stats::StatsConfig;
use crate::store::Store;
use crate::workspace;

/// One side's runs with their rows, read from the store.
struct Loaded {
    name: String,
    runs: Vec<(RunSummary, Vec<ResultRow>, Vec<ComparisonRow>)>,
}

impl Loaded {
    fn read(store: &Store, name: &str) -> Result<Loaded> {
        let runs = runs_named(store, name)?
            .into_iter()
            .map(|run| Ok((store.results(run.id)?, store.comparisons(run.id)?, run)))
            .map(|r: Result<_>| r.map(|(rows, comparisons, run)| (run, rows, comparisons)))
            .collect::<Result<_>>()?;
        Ok(Loaded { name: name.to_string(), runs })
    }

    fn side(&self) -> SideData<'_> {
        SideData {
            name: self.name.clone(),
            runs: self.runs.iter().map(|(r, x, c)| (r, x.as_slice(), c.as_slice())).collect(),
        }
    }
}

/// `mlport diff`.
pub fn diff(args: DiffArgs) -> Result<ExitStatus> {
    let store = workspace::open_to_read(&args.db.db, "(run `mlport run` or `mlport import` first, or pass --db)")?;
    let (a, b) = (Loaded::read(&store, &args.a)?, Loaded::read(&store, &args.b)?);
    let seed = args.stats_seed.unwrap_or(a.runs[0].0.info.seed);
    let opts = DiffOptions {
        threshold: args.threshold,
        error_factor: args.error_factor,
        report: ReportOptions {
            attributable: !args.all_failures,
            reference: None,
            strict: args.strict,
            list_not_attributable: false,
        },
        stats: StatsConfig { seed, ..Default::default() },
    };
    let report = compute(&a.side(), &b.side(), &opts);
    if report.machines.is_empty() {
        let names = |lone: &[crate::analysis::diff::LoneMachine]| {
            lone.iter().map(|m| m.machine.as_str()).collect::<Vec<_>>().join(", ")
        };
        bail!(
            "`{}` (machines {}) and `{}` (machines {}) share no machine: each machine is compared with the same \
             machine on the other side; diff runs or campaigns of the same machines, or two single runs",
            args.a,
            names(&report.only_a),
            args.b,
            names(&report.only_b)
        );
    }
    // Nothing in common is no diff at all (only added and removed cases), never one that passes
    // --fail-on.
    if report.compared.cases == 0 {
        let results = |l: &Loaded| plural(l.runs.iter().map(|(_, rows, _)| rows.len()).sum::<usize>(), "result");
        bail!(
            "`{}` ({}) and `{}` ({}) share no case: nothing was compared (cases are matched by \
             framework/function/case/dtype and target, machine by machine). Are they runs of other catalogues, \
             --function/--dtype selections, shards or devices? Diff runs of the same plan",
            args.a,
            results(&a),
            args.b,
            results(&b)
        );
    }
    let found = report.has_any(&args.fail_on);
    if format_of(args.format)? == Format::Csv {
        // CSV has no header lines to carry it.
        for note in &report.incomplete {
            eprintln!("mlport: incomplete: {note}");
        }
        for line in render::diff::header_lines(&report).iter().filter(|l| l.starts_with("Only on ")) {
            eprintln!("mlport: {line}");
        }
    }
    emit(&match format_of(args.format)? {
        Format::Table => render::diff::render_table(&report),
        Format::Markdown => render::diff::render_markdown(&report),
        Format::Json => render::diff::render_json(&report),
        Format::Csv => render::diff::render_csv(&report),
    })?;
    Ok(if found { ExitStatus::Findings } else { ExitStatus::Ok })
}
