//! torch's two compiled modes and per-case `modes`, with the real torch (issue 15, point 8): a
//! data-dependent Python branch on `.item()` is a graph break; under `compiled` (torch.compile's
//! defaults) the case runs and its graph breaks are counted, under `compiled_fullgraph` it is a
//! `compile_error`; a case or function limited by `modes` gets no result in the other modes,
//! and the run still finishes.

mod common;

use common::mlport;
use mlport::model::{Outcome, Reason, RunState};
use mlport::store::Store;

#[test]
fn graph_breaks_pass_compiled_are_counted_and_fail_fullgraph() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("modes.db");
    common::run_catalogue(
        &db,
        "truth/graphbreak",
        &["--device", "cpu", "--framework", "torch", "--modes", "eager,compiled,compiled_fullgraph"],
    );
    let store = Store::open(&db).unwrap();
    let summary = store.latest_run().unwrap().unwrap();
    assert_eq!(summary.state, RunState::Finished, "cases left out by `modes` are not pending");
    let rows = store.results(summary.id).unwrap();
    let on = |case: &str, target: &str| {
        rows.iter()
            .find(|r| r.case.case_id == case && r.result.device.as_str() == target && r.function.name == "torch.sum")
    };
    // Eager and compiled (graph breaks allowed) run it; Dynamo took at least one break.
    let eager = on("item_branch", "cpu").unwrap();
    assert_eq!(eager.result.outcome, Outcome::Pass, "{:?}", eager.result.message);
    let compiled = on("item_branch", "cpu/compiled").unwrap();
    assert_eq!(compiled.result.outcome, Outcome::Pass, "{:?}", compiled.result.message);
    let breaks = compiled.result.graph_breaks.expect("torch counts graph breaks");
    assert!(breaks >= 1, "the .item() branch is a graph break: {breaks}");
    assert!(compiled.result.compiles.unwrap() <= 1 + breaks, "one graph per break, not a recompile");
    // fullgraph=True refuses the same code.
    let strict = on("item_branch", "cpu/compiled_fullgraph").unwrap();
    assert_eq!((strict.result.outcome, strict.result.reason), (Outcome::Fail, Some(Reason::CompileError)));
    // `modes = ["eager"]` on a case, `modes = ["eager", "compiled_fullgraph"]` on a function.
    let targets = |name: &str, case: &str| -> Vec<&str> {
        rows.iter()
            .filter(|r| r.function.name == name && r.case.case_id == case)
            .map(|r| r.result.device.as_str())
            .collect()
    };
    assert_eq!(targets("torch.sum", "eager_only"), ["cpu"]);
    assert_eq!(targets("torch.exp", "default"), ["cpu", "cpu/compiled_fullgraph"]);

    // report --modes: one row per compiled mode, the breaks counted on `compiled`.
    let out = mlport().args(["report", "--modes", "--format", "json", "--db"]).arg(&db).assert().success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!((doc["format"].as_str(), doc["version"].as_u64()), (Some("mlport.modes"), Some(2)));
    let row = |target: &str| doc["rows"].as_array().unwrap().iter().find(|r| r["compiled"] == target).unwrap().clone();
    assert_eq!(row("cpu/compiled")["graph_breaks"].as_u64(), Some(breaks));
    assert_eq!(row("cpu/compiled")["graph_break_functions"].as_u64(), Some(1));
    assert_eq!(row("cpu/compiled_fullgraph")["fail_to_compile"].as_u64(), Some(1));
    let table = mlport().args(["report", "--modes", "--db"]).arg(&db).assert().success();
    let text = String::from_utf8_lossy(&table.get_output().stdout).into_owned();
    assert!(text.contains("cpu/compiled_fullgraph") && text.contains("graph breaks"), "{text}");
}
