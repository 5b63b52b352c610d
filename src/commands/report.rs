//! `mlport report`: one run's portability (optionally with its failing functions), the
//! overview of every run, a slowdown between two targets, runs or frameworks, eager against
//! compiled, the dtype matrix or the cross-framework table; and the portability report that
//! `run`, `import` and `pytest` print when they end. Which report is meant is decided once,
//! by [`Which::of`].

use anyhow::{Result, bail};

use super::ExitStatus;
use super::output::{emit, format_of};
use super::select::resolve_run;
use crate::analysis::{self, ReportOptions};
use crate::cli::{FormatArg, MeasureArg, ReportArgs, SlowdownSpec};
use crate::model::ResultRow;
use crate::render::{self, Format};
use crate::store::Store;
use crate::workspace;

/// The portability report of a run, built from the store.
pub fn build_portability(store: &Store, run_id: i64, opts: &ReportOptions) -> Result<analysis::PortabilityReport> {
    let summary = store.run(run_id)?;
    Ok(analysis::build(&summary, &store.devices(run_id)?, &store.results(run_id)?, opts))
}

/// Prints a run's portability report with the default options (what `run`, `import` and
/// `pytest` print at the end), with its failing functions when `functions`.
pub fn print_portability(store: &Store, run_id: i64, format: FormatArg, functions: bool) -> Result<()> {
    print_with(store, run_id, format_of(format), &ReportOptions::default(), functions)
}

fn print_with(store: &Store, run_id: i64, format: Format, opts: &ReportOptions, functions: bool) -> Result<()> {
    let rep = build_portability(store, run_id, opts)?;
    emit(&if functions { render::render_with_functions(&rep, format) } else { render::render(&rep, format) })
}

/// The report `mlport report`'s flags ask for.
#[derive(Debug, PartialEq)]
enum Which<'a> {
    Slowdown(&'a SlowdownSpec),
    Modes,
    Overview,
    Dtypes,
    Frameworks,
    Portability,
}

impl<'a> Which<'a> {
    /// Decides the report, refusing flags that do not go together (clap refuses the rest).
    fn of(args: &'a ReportArgs) -> Result<Which<'a>> {
        let all = args.run.as_deref() == Some("all");
        Ok(if let Some(spec) = &args.slowdown {
            Which::Slowdown(spec)
        } else if args.modes {
            Which::Modes
        } else if all {
            Which::Overview
        } else if !(args.only.is_empty() || args.dtypes || args.frameworks) {
            bail!("--only applies to --dtypes and --frameworks");
        } else if args.dtypes {
            Which::Dtypes
        } else if args.frameworks {
            Which::Frameworks
        } else {
            Which::Portability
        })
    }
}

/// `--run` unless it is `all` (which slowdowns and modes read as "the default run").
fn one_run(args: &ReportArgs) -> Option<&str> {
    args.run.as_deref().filter(|r| *r != "all")
}

/// `mlport report`.
pub fn report(args: ReportArgs) -> Result<ExitStatus> {
    let store = workspace::open_to_read(&args.db.db, "(run `mlport run` or `mlport import` first, or pass --db)")?;
    let opts = ReportOptions { attributable: !args.all_failures, reference: args.reference.clone() };
    let format = format_of(args.format);
    let out = match Which::of(&args)? {
        Which::Slowdown(spec) => slowdown(&store, &args, spec, format)?,
        Which::Modes => {
            let run = resolve_run(&store, one_run(&args))?;
            let rep = analysis::modes::build(&run, &store.devices(run.id)?, &store.results(run.id)?, args.stats_seed);
            render::modes::render(&rep, format)
        }
        Which::Overview => {
            let reports: Vec<analysis::PortabilityReport> =
                store.runs()?.iter().map(|r| build_portability(&store, r.id, &opts)).collect::<Result<_>>()?;
            render::overview::render(&reports, format)
        }
        Which::Dtypes | Which::Frameworks => matrix(&store, &args, format)?,
        Which::Portability => {
            let run = resolve_run(&store, args.run.as_deref())?;
            print_with(&store, run.id, format, &opts, args.functions)?;
            return Ok(ExitStatus::Ok);
        }
    };
    emit(&out)?;
    Ok(ExitStatus::Ok)
}

/// `--slowdown A..B`: a side without @RUN is in --run's run, else in the other side's run,
/// else the latest.
fn slowdown(store: &Store, args: &ReportArgs, spec: &SlowdownSpec, format: Format) -> Result<String> {
    let (a, b) = (&spec.a, &spec.b);
    let default = one_run(args);
    let ra = resolve_run(store, a.run.as_deref().or(default).or(b.run.as_deref()))?;
    let rb = resolve_run(store, b.run.as_deref().or(default).or(a.run.as_deref()))?;
    let (rows_a, rows_b) = (store.results(ra.id)?, store.results(rb.id)?);
    for (run, side, rows) in [(&ra, a, &rows_a), (&rb, b, &rows_b)] {
        if !rows.iter().any(|r| r.result.device == side.device) {
            bail!("--slowdown: run {} has no result on {}", run.id, side.device);
        }
    }
    let measure = match args.measure {
        MeasureArg::Steady => analysis::Measure::Steady,
        MeasureArg::Test => analysis::Measure::TestTime,
        MeasureArg::FirstCall => analysis::Measure::FirstCall,
    };
    let sd = analysis::slowdown::slowdown(
        (&ra, &a.device, &rows_a),
        (&rb, &b.device, &rows_b),
        &analysis::SlowdownOptions {
            measure,
            threshold: args.threshold,
            function_thresholds: args.threshold_for.iter().map(|t| (t.name.clone(), t.ratio)).collect(),
            a_framework: a.framework,
            b_framework: b.framework,
            stats: crate::stats::StatsConfig { seed: args.stats_seed.unwrap_or(ra.info.seed), ..Default::default() },
        },
    );
    Ok(match format {
        Format::Table => render::slowdown::render_table(&sd),
        Format::Csv => render::slowdown::render_csv(&sd),
        Format::Json => render::slowdown::render_json(&sd),
        Format::Markdown => bail!("--slowdown renders as table, csv or json"),
    })
}

/// The functions `--only` keeps: named ones, and for `--frameworks` every function of the
/// op a named function stands for (the table compares frameworks, so a row needs them all).
fn only_names(only: &[String], results: &[ResultRow], by_op: bool) -> Vec<String> {
    let mut names = only.to_vec();
    if by_op {
        let ops: Vec<String> =
            results.iter().filter(|r| only.contains(&r.function.name)).filter_map(|r| r.function.op.clone()).collect();
        names.extend(ops);
    }
    names
}

/// Whether `--only` (as [`only_names`]) keeps a result: everything when empty, else a result
/// of a named function or op.
fn kept(only: &[String], r: &ResultRow) -> bool {
    only.is_empty() || only.iter().any(|o| *o == r.function.name || r.function.op.as_deref() == Some(o.as_str()))
}

/// `--dtypes` or `--frameworks` of one run.
fn matrix(store: &Store, args: &ReportArgs, format: Format) -> Result<String> {
    let run = resolve_run(store, args.run.as_deref())?;
    let results = store.results(run.id)?;
    let only = only_names(&args.only, &results, args.frameworks);
    let keep = |r: &ResultRow| kept(&only, r);
    if !only.is_empty() && !results.iter().any(keep) {
        bail!("--only {}: run {} has no such function or op", only.join(","), run.id);
    }
    Ok(if args.dtypes {
        render::dtypes::render(&analysis::dtypes::build(run.id, &results, &keep), format)
    } else {
        let t = analysis::frameworks::build(
            run.id,
            &results,
            &store.comparisons(run.id)?,
            &store.references(run.id)?,
            &keep,
        );
        if t.rows.is_empty() {
            eprintln!(
                "mlport: run {} has no op run by two or more frameworks (the catalogue's `op` key maps them)",
                run.id
            );
        }
        render::frameworks::render(&t, format)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> ReportArgs {
        let mut v = vec!["mlport", "report"];
        v.extend_from_slice(line);
        match crate::cli::Cli::try_parse_from(v).unwrap().command {
            crate::cli::Command::Report(a) => a,
            _ => unreachable!(),
        }
    }

    fn which(line: &[&str]) -> Result<String> {
        let a = args(line);
        Which::of(&a).map(|w| format!("{w:?}").split('(').next().unwrap().to_string())
    }

    #[test]
    fn the_flags_pick_one_report() {
        assert_eq!(which(&[]).unwrap(), "Portability");
        assert_eq!(which(&["--functions", "--run", "3"]).unwrap(), "Portability");
        assert_eq!(which(&["--run", "all"]).unwrap(), "Overview");
        assert_eq!(which(&["--modes", "--run", "all"]).unwrap(), "Modes");
        assert_eq!(which(&["--slowdown", "cpu..cpu/compiled", "--run", "all"]).unwrap(), "Slowdown");
        assert_eq!(which(&["--dtypes", "--only", "torch.sum"]).unwrap(), "Dtypes");
        assert_eq!(which(&["--frameworks"]).unwrap(), "Frameworks");
        // `all` is an overview whatever else is asked (as it always was).
        assert_eq!(which(&["--dtypes", "--run", "all"]).unwrap(), "Overview");
        assert!(which(&["--only", "torch.sum"]).unwrap_err().to_string().contains("--only applies to"));
        assert_eq!(one_run(&args(&["--run", "all"])), None);
        assert_eq!(one_run(&args(&["--run", "gpu"])), Some("gpu"));
    }
}
