//! `mlport report`: one run's portability (optionally with its failing functions), the
//! overview of every run, a slowdown between two targets, runs or frameworks, eager against
//! compiled, the dtype matrix or the cross-framework table; and the portability report that
//! `run`, `import` and `pytest` print when they end. Which report is meant is decided once,
//! by [`Which::of`].

use anyhow::{Result, bail};

use super::ExitStatus;
use super::output::{emit, format_of};
use super::select::{self, resolve_run};
use crate::analysis::{self, ReportOptions};
use crate::cli::{FormatArg, MeasureArg, ReportArgs, RuleArg, SlowdownSpec};
use crate::model::{ComparisonRow, DeviceInfo, Framework, ReferenceRow, ResultRow, RunSummary};
use crate::render::{self, Format};
use crate::store::Store;
use crate::workspace;

/// The portability report of a run, built from the store.
pub fn build_portability(store: &Store, run_id: i64, opts: &ReportOptions) -> Result<analysis::PortabilityReport> {
    let summary = store.run(run_id)?;
    // Workloads (whole models, rut pairs) are not API functions: they have their own report.
    let (workloads, functions): (Vec<_>, Vec<_>) =
        store.results(run_id)?.into_iter().partition(|r| r.case.spec.is_workload());
    let mut report = analysis::build(&summary, &store.devices(run_id)?, &functions, opts);
    if !workloads.is_empty() {
        report.run.notes.push(format!(
            "{} of workloads (whole models, train steps, off-the-rut pairs) are not counted as functions here: \
             `mlport report --workloads --run {run_id}`",
            crate::render::units::plural(workloads.len(), "result")
        ));
    }
    // A missing float64 reference is said in every rendering (its cases count as unchecked).
    report.run.notes.extend(analysis::coverage::missing_references_note(&store.references(run_id)?));
    Ok(report)
}

/// Prints a run's portability report with the default options (what `run`, `import` and
/// `pytest` print at the end), with its failing functions when `functions`.
pub fn print_portability(store: &Store, run_id: i64, format: FormatArg, functions: bool) -> Result<()> {
    print_with(store, run_id, format_of(format)?, &ReportOptions::default(), functions)
}

fn print_with(store: &Store, run_id: i64, format: Format, opts: &ReportOptions, functions: bool) -> Result<()> {
    let rep = build_portability(store, run_id, opts)?;
    emit(&if functions { render::render_with_functions(&rep, format) } else { render::render(&rep, format) })?;
    timing_note(store, run_id)
}

/// On stderr: that a `--quick` run has no timings, or what ended its steady states
/// ([`crate::analysis::stops`]).
fn timing_note(store: &Store, run_id: i64) -> Result<()> {
    let quick = store.run(run_id)?.info.switches.is_some_and(|s| s.quick);
    if quick {
        eprintln!(
            "mlport: run {run_id} ran with --quick: timings are absent (no steady state was timed); time it with a \
             run without --quick for slowdowns"
        );
    } else if let Some(note) =
        crate::analysis::stops::Stops::count(store.results(run_id)?.iter().map(|r| &r.result)).note()
    {
        eprintln!("mlport: run {run_id}: {note}");
    }
    Ok(())
}

/// The report `mlport report`'s flags ask for.
#[derive(Debug, PartialEq)]
enum Which<'a> {
    Slowdown(&'a [SlowdownSpec]),
    Paper,
    Modes,
    /// `--routes`: eager against the export routes.
    Routes,
    /// `--workloads`: whole models and off-the-rut pairs.
    Workloads,
    Overview,
    Dtypes,
    Frameworks,
    Portability,
    /// `--campaign` without a view that reads one machine: every machine's portability.
    Campaign,
    /// `--paper-compare`: the paper's TPU v3 statuses beside today's xla:0.
    PaperCompare,
}

/// The runs one report reads: one run, or one machine's runs of a campaign (disjoint shards of
/// one plan) read together as if they were one run.
struct Picked {
    /// The run, or the machine's first run with the group's machine and summed counts.
    summary: RunSummary,
    ids: Vec<i64>,
}

impl Picked {
    /// `--run`'s run (`spec`), or with `--campaign` the runs of `machine` (or the only machine).
    fn of(store: &Store, args: &ReportArgs, spec: Option<&str>, machine: Option<&str>) -> Result<Picked> {
        let Some(campaign) = &args.campaign else {
            let summary = resolve_run(store, spec)?;
            return Ok(Picked { ids: vec![summary.id], summary });
        };
        let runs = select::campaign_runs(store, campaign)?;
        let mine = select::machine_runs(
            campaign,
            &runs,
            machine.or(args.machine.as_deref()),
            "--machine NAME, or DEVICE@NAME in --slowdown",
        )?;
        let mut summary = mine[0].clone();
        summary.origin.machine = Some(analysis::campaign::machine_of(&mine[0]).to_string());
        summary.cases_planned = mine.iter().map(|r| r.cases_planned).sum();
        summary.results = mine.iter().map(|r| r.results).sum();
        Ok(Picked { summary, ids: mine.iter().map(|r| r.id).collect() })
    }

    fn results(&self, store: &Store) -> Result<Vec<ResultRow>> {
        self.gather(|id| store.results(id))
    }

    fn devices(&self, store: &Store) -> Result<Vec<DeviceInfo>> {
        self.gather(|id| store.devices(id))
    }

    fn comparisons(&self, store: &Store) -> Result<Vec<ComparisonRow>> {
        self.gather(|id| store.comparisons(id))
    }

    fn references(&self, store: &Store) -> Result<Vec<ReferenceRow>> {
        self.gather(|id| store.references(id))
    }

    fn gather<T, E: Into<anyhow::Error>>(&self, read: impl Fn(i64) -> Result<Vec<T>, E>) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for id in &self.ids {
            out.extend(read(*id).map_err(Into::into)?);
        }
        Ok(out)
    }

    /// How the runs read are named in messages: `run 3`, or `machine gpu-box of campaign c (runs 1, 2)`.
    fn describe(&self, args: &ReportArgs) -> String {
        match &args.campaign {
            None => format!("run {}", self.summary.id),
            Some(c) => {
                let ids: Vec<String> = self.ids.iter().map(i64::to_string).collect();
                format!(
                    "machine {} of campaign `{c}` (runs {})",
                    self.summary.origin.machine.as_deref().unwrap_or_default(),
                    ids.join(", ")
                )
            }
        }
    }
}

impl<'a> Which<'a> {
    /// Decides the report, refusing flags that do not go together (clap refuses the rest).
    fn of(args: &'a ReportArgs) -> Result<Which<'a>> {
        let all = args.run.as_deref() == Some("all");
        Ok(if args.paper_compare {
            Which::PaperCompare
        } else if !args.slowdown.is_empty() {
            Which::Slowdown(&args.slowdown)
        } else if args.paper {
            Which::Paper
        } else if args.modes {
            Which::Modes
        } else if args.routes {
            Which::Routes
        } else if args.workloads {
            Which::Workloads
        } else if all && args.functions {
            bail!(
                "--functions lists one run's failing functions and --run all is the overview of every run; pick a \
                 run (`--run ID --functions`)"
            );
        } else if all {
            Which::Overview
        } else if !(args.only.is_empty() || args.dtypes || args.frameworks) {
            bail!("--only applies to --dtypes and --frameworks");
        } else if args.dtypes {
            Which::Dtypes
        } else if args.frameworks {
            Which::Frameworks
        } else if args.campaign.is_some() {
            Which::Campaign
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
    if args.format == FormatArg::Html {
        if !args.suite.is_empty() {
            bail!("--suite is a table, Markdown, CSV or JSON report; the HTML page does not hold it yet");
        }
        return html(&store, &args, &opts);
    }
    if let Some(path) = &args.output {
        bail!("-o {}: only --format html writes to a file (the other formats go to stdout)", path.display());
    }
    let format = format_of(args.format)?;
    if !args.suite.is_empty() {
        if args.suite.len() < 2 {
            bail!("--suite compares runs side by side: give two or more (`--suite RUN_A,RUN_B`)");
        }
        let mut runs = Vec::new();
        for spec in &args.suite {
            let run = resolve_run(&store, Some(spec))?;
            let results = store.results(run.id)?;
            runs.push((run, results));
        }
        emit(&render::suite::render(&analysis::suite::side_by_side(&runs), format))?;
        return Ok(ExitStatus::Ok);
    }
    let out = match Which::of(&args)? {
        Which::Slowdown(specs) => slowdown(&store, &args, specs, format)?,
        Which::Paper => render::paper::render(&paper(&store, &args)?, format),
        Which::Modes | Which::Routes => {
            let view = if matches!(Which::of(&args)?, Which::Routes) {
                analysis::modes::View::Routes
            } else {
                analysis::modes::View::Compiled
            };
            let run = Picked::of(&store, &args, one_run(&args), None)?;
            let rep = analysis::modes::build(
                &run.summary,
                &run.devices(&store)?,
                &run.results(&store)?,
                args.stats_seed,
                view,
            );
            render::modes::render(&rep, format)
        }
        Which::Workloads => {
            let run = Picked::of(&store, &args, one_run(&args), None)?;
            let stats = crate::stats::StatsConfig {
                seed: args.stats_seed.unwrap_or(run.summary.info.seed),
                ..Default::default()
            };
            let rep = analysis::workloads::build(
                &run.summary,
                &run.results(&store)?,
                &run.comparisons(&store)?,
                &run.references(&store)?,
                &stats,
            );
            render::workloads::render(&rep, format)
        }
        Which::Campaign => campaign(&store, &args, &opts, format)?,
        Which::Overview => {
            let reports: Vec<analysis::PortabilityReport> =
                store.runs()?.iter().map(|r| build_portability(&store, r.id, &opts)).collect::<Result<_>>()?;
            render::overview::render(&reports, format)
        }
        Which::Dtypes | Which::Frameworks => matrix(&store, &args, format)?,
        Which::PaperCompare => paper_compare(&store, &args, &opts, format)?,
        Which::Portability => {
            let run = resolve_run(&store, args.run.as_deref())?;
            print_with(&store, run.id, format, &opts, args.functions)?;
            return Ok(ExitStatus::Ok);
        }
    };
    emit(&out)?;
    Ok(ExitStatus::Ok)
}

/// `--paper-compare`: the paper's PyTorch TPU v3 run beside --run's torch on `xla:0` (the
/// latest run that has torch results on an `xla:N` or `tpu:N` device when --run is not given).
///
/// Errors: the paper's run is not in the store (`mlport import paper` first); no run has
/// torch on an XLA device.
fn paper_compare(store: &Store, args: &ReportArgs, opts: &ReportOptions, format: Format) -> Result<String> {
    use analysis::paper_compare::{self as pc, PAPER_TPU_V3_LABEL};
    let Some(paper) = store.run_by_label(PAPER_TPU_V3_LABEL)? else {
        bail!(
            "--paper-compare needs the paper's PyTorch TPU v3 run (label `{PAPER_TPU_V3_LABEL}`) in {}: run `mlport \
             import paper PAPER-DATA-DIR --db {}` first",
            args.db.db,
            args.db.db
        );
    };
    let is_xla = |t: &analysis::TargetSummary| {
        t.framework == Framework::Torch && !t.device.mode().is_compiled() && matches!(t.device.kind(), "xla" | "tpu")
    };
    let today = match one_run(args) {
        Some(spec) => resolve_run(store, Some(spec))?,
        None => {
            let mut found = None;
            for r in store.runs()?.into_iter().rev().filter(|r| r.id != paper.id && !r.origin.source.is_test_suite()) {
                if build_portability(store, r.id, opts)?.targets.iter().any(is_xla) {
                    found = Some(r);
                    break;
                }
            }
            found.ok_or_else(|| {
                anyhow::anyhow!(
                    "no run in {} has torch on xla:0: run `mlport run --framework torch --device cpu,xla:0` first",
                    args.db.db
                )
            })?
        }
    };
    let then_rep = build_portability(store, paper.id, opts)?;
    let then = then_rep.targets.iter().find(|t| t.framework == Framework::Torch && t.device == pc::paper_device());
    let now_rep = build_portability(store, today.id, opts)?;
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
    Ok(render::paper_compare::render(&pc::build(paper.id, then, today.id, now, &detail), format))
}

/// `--format html -o FILE`: the page of one run (`--run`), or of one machine's runs of a
/// campaign (`--campaign`, `--machine`), written to FILE.
///
/// With `--slowdown A..B` the page adds that slowdown's distribution (of `--run`'s run).
///
/// Errors: without `-o`; with a view the page does not hold yet (`--modes`,
/// `--frameworks`, `--run all`, `--functions`: the page always lists every
/// failing case); the store's read errors; FILE that cannot be written (named).
fn html(store: &Store, args: &ReportArgs, opts: &ReportOptions) -> Result<ExitStatus> {
    let Some(path) = &args.output else {
        bail!("--format html writes one file: add -o FILE (e.g. -o report.html)");
    };
    let which = Which::of(args)?;
    match which {
        // The page always holds the dtype matrix, the cross-framework table and the modes
        // (when the run has them), so those flags ask for nothing more.
        Which::Portability
        | Which::Campaign
        | Which::Slowdown(_)
        | Which::Dtypes
        | Which::Frameworks
        | Which::Modes => {}
        Which::Paper => {
            let page = render::paper::html(&paper(store, args)?);
            std::fs::write(path, page).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("mlport: wrote {} (the paper's figures)", path.display());
            return Ok(ExitStatus::Ok);
        }
        Which::PaperCompare => bail!("--format html does not show --paper-compare (use table, markdown, json or csv)"),
        Which::Routes => bail!("--format html does not show --routes yet (use table, markdown, json or csv)"),
        Which::Workloads => bail!("--format html does not show --workloads yet (use table, markdown, json or csv)"),
        Which::Overview => bail!(
            "--format html shows one run (or one machine of a campaign); --run all is not in the page (use table, markdown, json or csv)"
        ),
    }
    let picked = Picked::of(store, args, one_run(args), None)?;
    let results = picked.results(store)?;
    let mut rep = analysis::build(&picked.summary, &picked.devices(store)?, &results, opts);
    rep.run.notes.extend(analysis::coverage::missing_references_note(&picked.references(store)?));
    let comparisons = picked.comparisons(store)?;
    let dtypes =
        analysis::dtypes::build(picked.summary.id, picked.summary.origin.source, &results, &comparisons, &|_| true);
    let frameworks =
        analysis::frameworks::build(picked.summary.id, &results, &comparisons, &picked.references(store)?, &|_| true);
    let modes = analysis::modes::build(
        &picked.summary,
        &picked.devices(store)?,
        &results,
        args.stats_seed,
        analysis::modes::View::Compiled,
    );
    let sds: Vec<analysis::SlowdownReport> = match which {
        Which::Slowdown(specs) => specs.iter().map(|s| slowdown_report(store, args, s)).collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    let page = render::html::render(&render::html::Page {
        report: &rep,
        dtypes: &dtypes,
        slowdowns: &sds,
        frameworks: &frameworks,
        modes: &modes,
    })?;
    std::fs::write(path, page).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    eprintln!("mlport: wrote {} ({})", path.display(), picked.describe(args));
    Ok(ExitStatus::Ok)
}

/// `--paper`: the paper's figures from every imported paper run of the store, both methods.
fn paper(store: &Store, args: &ReportArgs) -> Result<analysis::paper::PaperFigures> {
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
    let runs: Vec<analysis::paper::PaperRun<'_>> = loaded
        .iter()
        .map(|(summary, portability, results)| analysis::paper::PaperRun { summary, portability, results })
        .collect();
    Ok(analysis::paper::build(&runs, args.stats_seed))
}

/// `--campaign NAME`: every machine's portability, each against its own reference device;
/// with `--functions`, each machine's failing functions after.
fn campaign(store: &Store, args: &ReportArgs, opts: &ReportOptions, format: Format) -> Result<String> {
    let name = args.campaign.as_deref().unwrap_or_default();
    let mut runs = Vec::new();
    for r in select::campaign_runs(store, name)? {
        let (devices, results) = (store.devices(r.id)?, store.results(r.id)?);
        runs.push((r, devices, results));
    }
    let rep = analysis::campaign::build(name, &runs, opts);
    let mut out = render::campaign::render(&rep, format);
    if args.functions && format != Format::Json && format != Format::Csv {
        for m in &rep.machines {
            out.push('\n');
            out.push_str(&render::render_functions(&m.report, format));
        }
    } else if args.functions {
        bail!("--campaign --functions renders as table or markdown (json and csv: one --machine at a time with --run)");
    }
    Ok(out)
}

/// `--slowdown A..B`: a side without @RUN is in --run's run, else in the other side's run,
/// else the latest. With `--campaign` a side's @NAME is a machine of the campaign (default
/// --machine's, else the other side's, else the only one), and the rule line says the sides
/// are on different machines.
fn slowdown(store: &Store, args: &ReportArgs, specs: &[SlowdownSpec], format: Format) -> Result<String> {
    if specs.len() > 1 {
        if format != Format::Table {
            bail!(
                "--slowdown given {} times: only --format table or html holds several (one at a time for csv or json)",
                specs.len()
            );
        }
        let parts: Vec<String> =
            specs.iter().map(|s| slowdown(store, args, std::slice::from_ref(s), format)).collect::<Result<_>>()?;
        return Ok(parts.join("\n"));
    }
    let sd = slowdown_report(store, args, &specs[0])?;
    Ok(match format {
        Format::Table => render::slowdown::render_table(&sd),
        Format::Csv => render::slowdown::render_csv(&sd),
        Format::Json => render::slowdown::render_json(&sd),
        Format::Markdown => bail!("--slowdown renders as table, csv, json or html"),
    })
}

/// The slowdown `--slowdown A..B` asks for (see [`slowdown`] for how the sides are found).
fn slowdown_report(store: &Store, args: &ReportArgs, spec: &SlowdownSpec) -> Result<analysis::SlowdownReport> {
    let (a, b) = (&spec.a, &spec.b);
    let default = one_run(args);
    let pa = Picked::of(
        store,
        args,
        a.run.as_deref().or(default).or(b.run.as_deref()),
        a.run.as_deref().or(b.run.as_deref()),
    )?;
    let pb = Picked::of(
        store,
        args,
        b.run.as_deref().or(default).or(a.run.as_deref()),
        b.run.as_deref().or(a.run.as_deref()),
    )?;
    let (ra, rb) = (&pa.summary, &pb.summary);
    let (rows_a, rows_b) = (pa.results(store)?, pb.results(store)?);
    for (picked, side, rows) in [(&pa, a, &rows_a), (&pb, b, &rows_b)] {
        if !rows.iter().any(|r| r.result.device == side.device) {
            bail!("--slowdown: {} has no result on {}", picked.describe(args), side.device);
        }
    }
    let measure = match args.measure {
        MeasureArg::Steady => analysis::Measure::Steady,
        MeasureArg::Test => analysis::Measure::TestTime,
        MeasureArg::FirstCall => analysis::Measure::FirstCall,
    };
    let sd = analysis::slowdown::slowdown(
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
    let mut sd = sd;
    if let Some(c) = &args.campaign {
        let machine = |p: &Picked| p.summary.origin.machine.clone().unwrap_or_default();
        sd.rule.push(' ');
        sd.rule.push_str(&analysis::campaign::slowdown_rule(c, &machine(&pa), &machine(&pb)));
    }
    Ok(sd)
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

/// `--dtypes` or `--frameworks` of one run, or of one machine's runs of a campaign.
fn matrix(store: &Store, args: &ReportArgs, format: Format) -> Result<String> {
    let picked = Picked::of(store, args, args.run.as_deref(), None)?;
    let run = &picked.summary;
    let results = picked.results(store)?;
    let only = only_names(&args.only, &results, args.frameworks);
    let keep = |r: &ResultRow| kept(&only, r);
    if !only.is_empty() && !results.iter().any(keep) {
        bail!("--only {}: {} has no such function or op", only.join(","), picked.describe(args));
    }
    Ok(if args.dtypes {
        render::dtypes::render(
            &analysis::dtypes::build(run.id, run.origin.source, &results, &store.comparisons(run.id)?, &keep),
            format,
        )
    } else {
        let t = analysis::frameworks::build(
            run.id,
            &results,
            &picked.comparisons(store)?,
            &picked.references(store)?,
            &keep,
        );
        if t.rows.is_empty() {
            eprintln!(
                "mlport: {} has no op run by two or more frameworks (the catalogue's `op` key maps them)",
                picked.describe(args)
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
