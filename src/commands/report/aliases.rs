//! `mlport report` without a kind: the older flags (`--slowdown`, `--paper`, `--modes`,
//! `--run all`, ...), each an alias of a kind ([`ReportKind`]). Which kind they mean is
//! decided once, by [`Which::of`], with the precedence and refusals they always had, and the
//! flags that kind reads are carried over, so an alias prints the same bytes as its kind.

use anyhow::{Result, bail};

use crate::cli::report::{
    CampaignArgs, CountingArgs, MatrixArgs, ModesArgs, OverviewArgs, PaperArgs, PaperCompareArgs, PortabilityArgs,
    RunPick, SlowdownArgs, SuiteArgs,
};
use crate::cli::{FormatArg, ReportArgs, ReportKind};

/// The report `mlport report`'s flags ask for.
#[derive(Debug, PartialEq)]
enum Which {
    Slowdown,
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

impl Which {
    /// Decides the report, refusing flags that do not go together (clap refuses the rest).
    fn of(args: &ReportArgs) -> Result<Which> {
        let all = args.run.as_deref() == Some("all");
        Ok(if args.paper_compare {
            Which::PaperCompare
        } else if !args.slowdown.is_empty() {
            Which::Slowdown
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
        } else if all && (args.dtypes || args.frameworks) {
            bail!(
                "--run all is the overview of every run, and {} reads one run: pick a run (`--run ID`), or ask for \
                 the overview alone (`mlport report overview`)",
                if args.dtypes { "--dtypes" } else { "--frameworks" }
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
fn one_run(args: &ReportArgs) -> Option<String> {
    args.run.clone().filter(|r| r != "all")
}

/// The kind the flags of `args` mean, in the order the flags were always checked: `--suite`
/// with HTML, `-o` (required with HTML, refused without), `--suite`, then [`Which::of`].
///
/// Errors: flags that do not go together (the messages `mlport report` always gave).
pub fn kind_of(args: ReportArgs) -> Result<ReportKind> {
    let html = args.format == FormatArg::Html;
    if html {
        if !args.suite.is_empty() {
            bail!("--suite is a table, Markdown, CSV or JSON report; the HTML page does not hold it yet");
        }
        if args.output.is_none() {
            bail!("--format html writes one file: add -o FILE (e.g. -o report.html)");
        }
    } else if let Some(path) = &args.output {
        bail!("-o {}: only --format html writes to a file (the other formats go to stdout)", path.display());
    } else if !args.suite.is_empty() {
        return Ok(ReportKind::Suite(SuiteArgs { db: args.db, runs: args.suite, format: args.format }));
    }
    let which = Which::of(&args)?;
    let counting = CountingArgs {
        all_failures: args.all_failures,
        strict: args.strict,
        not_attributable: args.not_attributable,
        reference: args.reference.clone(),
    };
    let pick = RunPick { run: one_run(&args), campaign: args.campaign.clone(), machine: args.machine.clone() };
    let (db, format, output) = (args.db.clone(), args.format, args.output.clone());
    let modes = |pick: RunPick| ModesArgs { db: db.clone(), pick, stats_seed: args.stats_seed, format, output: None };
    let page_of_one_run = || match &args.campaign {
        // The page of one run or one machine: it holds the dtype matrix, the cross-framework
        // table and the modes, so those flags ask for nothing more.
        Some(name) => ReportKind::Campaign(CampaignArgs {
            db: db.clone(),
            name: name.clone(),
            functions: false,
            counting: counting.clone(),
            machine: args.machine.clone(),
            stats_seed: args.stats_seed,
            format,
            output: output.clone(),
        }),
        None => ReportKind::Portability(PortabilityArgs {
            db: db.clone(),
            run: one_run(&args),
            functions: false,
            counting: counting.clone(),
            stats_seed: args.stats_seed,
            format,
            output: output.clone(),
        }),
    };
    Ok(match which {
        Which::Portability | Which::Campaign | Which::Dtypes | Which::Frameworks | Which::Modes if html => {
            page_of_one_run()
        }
        Which::PaperCompare => {
            ReportKind::PaperCompare(PaperCompareArgs { db: db.clone(), run: one_run(&args), counting, format })
        }
        Which::Slowdown => ReportKind::Slowdown(SlowdownArgs {
            db: db.clone(),
            specs: args.slowdown.clone(),
            pick,
            measure: args.measure,
            rule: args.rule,
            threshold: args.threshold,
            threshold_for: args.threshold_for.clone(),
            stats_seed: args.stats_seed,
            counting,
            format,
            output,
        }),
        Which::Paper => ReportKind::Paper(PaperArgs { db: db.clone(), stats_seed: args.stats_seed, format, output }),
        Which::Modes => ReportKind::Modes(modes(pick)),
        Which::Routes => ReportKind::Routes(modes(pick)),
        Which::Workloads => ReportKind::Workloads(modes(pick)),
        Which::Overview => ReportKind::Overview(OverviewArgs { db: db.clone(), counting, format }),
        Which::Dtypes | Which::Frameworks => {
            // These read --run as given (`all` was the overview above).
            let pick = RunPick { run: args.run.clone(), ..pick };
            let m = MatrixArgs { db: db.clone(), pick, only: args.only.clone(), format, output: None };
            if which == Which::Dtypes { ReportKind::Dtypes(m) } else { ReportKind::Frameworks(m) }
        }
        Which::Campaign => ReportKind::Campaign(CampaignArgs {
            db: db.clone(),
            name: args.campaign.clone().unwrap_or_default(),
            functions: args.functions,
            counting,
            machine: args.machine.clone(),
            stats_seed: args.stats_seed,
            format,
            output: None,
        }),
        Which::Portability => ReportKind::Portability(PortabilityArgs {
            db: db.clone(),
            run: args.run.clone(),
            functions: args.functions,
            counting,
            stats_seed: args.stats_seed,
            format,
            output: None,
        }),
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
        Which::of(&a).map(|w| format!("{w:?}"))
    }

    /// The kind an alias line becomes, as its subcommand's name.
    fn kind(line: &[&str]) -> String {
        let k = kind_of(args(line)).unwrap();
        format!("{k:?}").split('(').next().unwrap().to_string()
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
        // `all` with a view of one run is refused (it used to become the overview silently).
        for view in ["--dtypes", "--frameworks"] {
            let e = which(&[view, "--run", "all"]).unwrap_err().to_string();
            assert!(e.contains("--run all is the overview") && e.contains(view), "{e}");
        }
        assert!(which(&["--only", "torch.sum"]).unwrap_err().to_string().contains("--only applies to"));
        assert_eq!(one_run(&args(&["--run", "all"])), None);
        assert_eq!(one_run(&args(&["--run", "gpu"])).as_deref(), Some("gpu"));
    }

    #[test]
    fn aliases_become_kinds() {
        assert_eq!(kind(&[]), "Portability");
        assert_eq!(kind(&["--run", "all"]), "Overview");
        assert_eq!(kind(&["--suite", "a,b"]), "Suite");
        assert_eq!(kind(&["--campaign", "c"]), "Campaign");
        assert_eq!(kind(&["--campaign", "c", "--dtypes"]), "Dtypes");
        assert_eq!(kind(&["--paper-compare", "--routes"]), "PaperCompare");
        assert_eq!(kind(&["--workloads", "--campaign", "c"]), "Workloads");
        // The run's page holds the dtypes, frameworks and modes: HTML of those is the page.
        assert_eq!(kind(&["--dtypes", "--format", "html", "-o", "x.html"]), "Portability");
        assert_eq!(kind(&["--modes", "--campaign", "c", "--format", "html", "-o", "x.html"]), "Campaign");
        assert_eq!(kind(&["--slowdown", "cpu..cpu", "--format", "html", "-o", "x.html"]), "Slowdown");
        let err = |line: &[&str]| kind_of(args(line)).unwrap_err().to_string();
        assert!(err(&["--format", "html"]).contains("add -o FILE"));
        assert!(err(&["--suite", "a,b", "--format", "html"]).contains("--suite is a table"));
        assert!(err(&["-o", "x"]).contains("only --format html writes to a file"));
    }

    #[test]
    fn a_kind_and_the_alias_flags_do_not_go_together() {
        let mut v = vec!["mlport", "report", "--modes", "dtypes"];
        assert!(crate::cli::Cli::try_parse_from(&v).is_err());
        v = vec!["mlport", "report", "dtypes", "--only", "x", "--db", "a.db"];
        assert!(crate::cli::Cli::try_parse_from(&v).is_ok());
    }
}
