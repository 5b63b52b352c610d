//! `mlport report slowdown A..B [C..D ...]` (alias `--slowdown A..B`): per function the
//! slowdown of B relative to A ([`crate::analysis::slowdown`]); with `--format html` the run's
//! page with each slowdown's distribution.

use anyhow::{Result, bail};

use super::page::{self, PageOf};
use super::picked::Picked;
use super::{html_path, options, show, text_format};
use crate::analysis;
use crate::cli::report::SlowdownArgs;
use crate::cli::{FormatArg, MeasureArg, RuleArg, SlowdownSpec};
use crate::render::Format;
use crate::render::slowdown::Slowdowns;
use crate::store::Store;

/// `report slowdown`: a side without @RUN is in --run's run, else in the other side's run,
/// else the latest. With `--campaign` a side's @NAME is a machine of the campaign (default
/// --machine's, else the other side's, else the only one), and the rule line says the sides
/// are on different machines.
///
/// Errors: several slowdowns in a format other than table (or html); Markdown; a side with
/// no result on its device; no such run, campaign or machine.
pub fn report(store: &Store, args: &SlowdownArgs) -> Result<()> {
    if args.format == FormatArg::Html {
        let path = html_path(args.output.as_ref())?;
        let opts = options(&args.counting);
        let slowdowns = || -> Result<Vec<analysis::SlowdownReport>> {
            args.specs.iter().map(|s| slowdown_report(store, args, s)).collect()
        };
        let what = PageOf { pick: &args.pick, opts: &opts, stats_seed: args.stats_seed, slowdowns: Some(&slowdowns) };
        return page::write(store, &what, path);
    }
    let format = text_format(args.format, args.output.as_ref())?;
    if args.specs.len() > 1 && format != Format::Table {
        bail!(
            "--slowdown given {} times: only --format table or html holds several (one at a time for csv or json)",
            args.specs.len()
        );
    }
    let sds: Vec<analysis::SlowdownReport> =
        args.specs.iter().map(|s| slowdown_report(store, args, s)).collect::<Result<_>>()?;
    show(&Slowdowns(&sds), format, || "--slowdown renders as table, csv, json or html".into())
}

/// The slowdown one `A..B` asks for (see [`report`] for how the sides are found).
///
/// Errors: a side with no result on its device; no such run, campaign or machine.
pub fn slowdown_report(store: &Store, args: &SlowdownArgs, spec: &SlowdownSpec) -> Result<analysis::SlowdownReport> {
    let (a, b) = (&spec.a, &spec.b);
    let default = args.pick.run.as_deref();
    let pa = Picked::of(
        store,
        &args.pick,
        a.run.as_deref().or(default).or(b.run.as_deref()),
        a.run.as_deref().or(b.run.as_deref()),
    )?;
    let pb = Picked::of(
        store,
        &args.pick,
        b.run.as_deref().or(default).or(a.run.as_deref()),
        b.run.as_deref().or(a.run.as_deref()),
    )?;
    let (ra, rb) = (&pa.summary, &pb.summary);
    let (rows_a, rows_b) = (pa.results(store)?, pb.results(store)?);
    for (picked, side, rows) in [(&pa, a, &rows_a), (&pb, b, &rows_b)] {
        if !rows.iter().any(|r| r.result.device == side.device) {
            bail!("--slowdown: {} has no result on {}", picked.describe(), side.device);
        }
    }
    let measure = match args.measure {
        MeasureArg::Steady => analysis::Measure::Steady,
        MeasureArg::Test => analysis::Measure::TestTime,
        MeasureArg::FirstCall => analysis::Measure::FirstCall,
    };
    let mut sd = analysis::slowdown::slowdown(
        (ra, &a.device, &rows_a),
        (rb, &b.device, &rows_b),
        &analysis::SlowdownOptions {
            measure,
            threshold: args.threshold,
            function_thresholds: args.threshold_for.iter().map(|t| (t.name.clone(), t.ratio)).collect(),
            a_framework: a.framework,
            b_framework: b.framework,
            stats: crate::stats::StatsConfig { seed: args.stats_seed.unwrap_or(ra.info.seed), ..Default::default() },
            rule: match args.rule {
                RuleArg::Mlport => analysis::Rule::Mlport,
                RuleArg::Paper => analysis::Rule::Paper,
            },
        },
    );
    if let Some(c) = &args.pick.campaign {
        let machine = |p: &Picked| p.summary.origin.machine.clone().unwrap_or_default();
        sd.rule.push(' ');
        sd.rule.push_str(&analysis::campaign::slowdown_rule(c, &machine(&pa), &machine(&pb)));
    }
    Ok(sd)
}
