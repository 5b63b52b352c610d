//! The paper's published raw data (../shared/paper-data beside the clone) imported and
//! reported: the one published figure reproduced exactly, and the same rule's numbers for
//! every framework × device that has a pytest report.

use std::path::PathBuf;

use mlport::import;
use mlport::model::FunctionStatus;
use mlport::report::{self, PortabilityReport, ReportOptions, TargetSummary};
use mlport::store::Store;

/// The data set; its absence is a failure, never a silent pass.
fn paper_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/paper-data");
    assert!(
        dir.join("README.md").is_file(),
        "the paper's data set is missing: expected it at {} (shared/ beside the clone)",
        dir.display()
    );
    dir
}

struct Imported {
    _tmp: tempfile::TempDir,
    store: Store,
    ids: Vec<i64>,
}

fn imported() -> Imported {
    let data = import::import_paper(&paper_dir(), "mlport import paper").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("paper.db")).unwrap();
    let ids = store.import_runs(&data.runs).unwrap();
    Imported { _tmp: tmp, store, ids }
}

fn report_of(i: &Imported, label: &str) -> PortabilityReport {
    let run = i.store.run_by_label(label).unwrap().unwrap_or_else(|| panic!("no run {label}"));
    report::build(&run, &i.store.devices(run.id).unwrap(), &i.store.results(run.id).unwrap(), &ReportOptions::default())
}

fn target<'r>(r: &'r PortabilityReport, device: &str) -> &'r TargetSummary {
    r.targets.iter().find(|t| t.device.as_str() == device).unwrap_or_else(|| panic!("no {device}"))
}

fn with_status(t: &TargetSummary, s: FunctionStatus) -> Vec<String> {
    let mut v: Vec<String> = t.functions.iter().filter(|f| f.status == Some(s)).map(|f| f.name.clone()).collect();
    v.sort();
    v
}

#[test]
fn print_everything() {
    let i = imported();
    for id in &i.ids {
        let run = i.store.run(*id).unwrap();
        let r = report::build(
            &run,
            &i.store.devices(run.id).unwrap(),
            &i.store.results(run.id).unwrap(),
            &ReportOptions::default(),
        );
        for t in &r.targets {
            println!(
                "{:40} {:8} {:3} {:3} {:3} {:3} {:?}",
                run.origin.label.clone().unwrap(),
                t.device.as_str(),
                t.functions_run,
                t.success,
                t.partial,
                t.complete_failure,
                t.percent(t.success)
            );
        }
    }
    let r = report_of(&i, "paper/torch/tpu_vm/tpu");
    let t = target(&r, "tpu:0");
    println!("{:?}\n{:?}", with_status(t, FunctionStatus::Partial), with_status(t, FunctionStatus::CompleteFailure));
}
