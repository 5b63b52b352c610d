//! Issue 23, "Also": a worker's output the core bounds. A 20 MB protocol line is a protocol
//! error of its case (read no further than 8 MiB); a timeout's stderr tail holds the lines of
//! its own case, not those of the case before it on the same worker. Real NumPy workers.

mod common;

use std::sync::atomic::AtomicBool;

use mlport::catalogue::{Catalogue, load_path};
use mlport::model::{Outcome, Reason, RunInfo, Target};
use mlport::plan::{Selection, plan};
use mlport::runner::{self, Ending, NullSink};
use mlport::store::Store;

#[test]
fn a_huge_protocol_line_is_a_protocol_error_and_a_timeout_keeps_only_its_own_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let cat = Catalogue::new(load_path(&common::fixture("worker-faults")).unwrap()).unwrap();
    let p = plan(&cat, &Selection::default(), 0).unwrap();
    let order: Vec<&str> = p.cases.iter().map(|c| c.case_id.as_str()).collect();
    assert_eq!(order, ["huge_line", "chatty", "slow"], "chatty runs just before slow, on the same worker");
    let mut store = Store::open(&tmp.path().join("s.db")).unwrap();
    let mut info = RunInfo::blank("test", Target::cpu());
    let run = store.create_run(&info, &Default::default(), &p.functions, &p.cases).unwrap();
    let cfg = common::run_config(tmp.path());
    let ending =
        runner::execute(&mut store, run, &p.cases, &mut info, &cfg, &mut NullSink, &AtomicBool::new(false)).unwrap();
    assert_eq!(ending, Ending::Finished);
    let results = store.results(run).unwrap();
    let by_case = |id: &str| results.iter().find(|r| r.case.case_id == id).unwrap().result.clone();

    let huge = by_case("huge_line");
    assert_eq!((huge.outcome, huge.reason), (Outcome::Fail, Some(Reason::HarnessError)), "{huge:?}");
    assert_eq!(huge.message.as_deref(), Some("protocol error: a line longer than 8388608 bytes"));

    assert_eq!(by_case("chatty").outcome, Outcome::Pass);
    let slow = by_case("slow");
    assert_eq!(slow.outcome, Outcome::Timeout, "{slow:?}");
    let tail = slow.stderr_tail.unwrap_or_default();
    assert!(tail.contains("a line of the slow case"), "{tail}");
    assert!(!tail.contains("a line of the case before"), "the previous case's line is in the tail: {tail}");
}
