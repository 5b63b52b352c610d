//! `mlport report ops`: the operator table of a suite run, or (`--declared A..B`) what two
//! device types declare differently in the installed framework's own test data.

use anyhow::{Context, Result, bail};

use super::picked::Picked;
use super::{html_path, show, text_format, write_page};
use crate::analysis;
use crate::cli::FormatArg;
use crate::cli::report::OpsArgs;
use crate::render::Report;
use crate::store::Store;
use crate::testdata::{self, Samples};

/// `report ops` of a stored run.
///
/// Errors: no such run or campaign; HTML without `-o`; a `--csv-dir` that cannot be written.
pub fn report(store: &Store, args: &OpsArgs) -> Result<()> {
    let run = Picked::of(store, &args.pick, args.pick.run.as_deref(), None)?;
    let suites: Vec<String> = run.summary.info.catalogue_version.values().cloned().collect();
    let rep = analysis::ops::build(run.summary.id, suites, &run.results(store)?);
    if let Some(dir) = &args.csv_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for t in &rep.targets {
            let path = dir.join(format!("{}.csv", t.as_str().replace([':', '/'], "_")));
            std::fs::write(&path, crate::render::ops::csv_for(&rep, t))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        eprintln!("mlport: wrote {} CSV files (one per target) into {}", rep.targets.len(), dir.display());
    }
    if args.format == FormatArg::Html {
        let path = html_path(args.output.as_ref())?;
        let page = rep.html().expect("the operator table has a page")?;
        return write_page(path, &page, &format!("the operator table of run {}", rep.run_id));
    }
    show(&rep, text_format(args.format, args.output.as_ref())?, String::new)
}

/// `report ops --declared A..B`: no store, no run; the suite listed (or read from the cache)
/// with the interpreter `--python` names, else the managed environment.
///
/// Errors: a spec that is not `A..B`; the listing's ([`testdata::list_with`]); a device type the
/// suite declares nothing for; HTML (refused).
pub fn declared(args: &OpsArgs, spec: &str) -> Result<()> {
    let Some((a, b)) = spec.split_once("..").filter(|(a, b)| !a.is_empty() && !b.is_empty()) else {
        bail!("--declared {spec}: expected two device types, A..B (e.g. cpu..cuda)");
    };
    if args.format == FormatArg::Html {
        bail!("--declared has no HTML page (use table, markdown, json or csv)");
    }
    let format = text_format(args.format, args.output.as_ref())?;
    let fw = args.suite.framework();
    let env = crate::commands::env::python_env(&args.python, &[fw])?;
    let listed = testdata::list_with(
        &env,
        args.suite,
        Samples::First(1),
        &testdata::USUAL_DTYPES,
        &[],
        crate::process_group::interrupted(),
    )?;
    let diff = analysis::ops::declared_diff(&listed.listing, a, b)?;
    show(&diff, format, String::new)
}
