//! Workloads with the real torch (issue 18, docs/workloads.md): one `mlport run --modes
//! eager,compiled --quick` of tests/fixtures/workloads, whose cases each exercise one path:
//! accumulated rounding that fails elementwise allclose but agrees under the whole-model rule; a
//! perturbed model (a test double that adds noise to one layer outside eager mode) caught as
//! `wrong_result`; a non-deterministic model (dropout in training mode) flagged, not failed; a
//! train step whose updated weights agree across eager and `torch.compile`; peak memory checked
//! against getrusage(2); a batch too large on purpose recorded as `out_of_memory` while the run
//! goes on. Also the built-in workloads' catalogue and `report --workloads` in every format.

mod common;

use std::path::Path;
use std::sync::OnceLock;

use common::mlport;
use mlport::compare::{read_npy, real_f64};
use mlport::model::{Against, ComparisonVerdict, Outcome, Reason, ResultRow};
use mlport::store::Store;
use serde_json::Value;

const FN: &str = "torch.nn.modules.linear.Linear";

/// The fixture's run, made once for every test of this binary.
fn store() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
    &DB.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("w.db");
        common::run_catalogue(&db, "workloads", &["--modes", "eager,compiled", "--quick", "--timeout", "600"]);
        (tmp, db)
    })
    .1
}

fn rows() -> Vec<ResultRow> {
    common::latest_results(store())
}

fn case<'a>(rows: &'a [ResultRow], id: &str, target: &str) -> &'a ResultRow {
    rows.iter()
        .find(|r| r.case.case_id == id && r.result.device.as_str() == target)
        .unwrap_or_else(|| panic!("no result of {id} on {target}"))
}

/// The whole-model judgement stored with a result's float64 comparisons.
fn judgement(r: &ResultRow) -> Value {
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let rows = store.comparisons(run).unwrap();
    rows.into_iter()
        .filter(|c| c.case_key == r.case.key && c.device == r.result.device && c.against == Against::Float64)
        .find_map(|c| c.detail.get("whole_model").cloned())
        .unwrap_or_else(|| panic!("{} on {} has no whole-model judgement", r.case.key, r.result.device))
}

/// Every saved output of a result, flattened to float64 in order.
fn values(r: &ResultRow) -> Vec<f64> {
    let mut out = Vec::new();
    for leaf in r.result.outputs.as_array().unwrap() {
        out.extend(real_f64(&read_npy(Path::new(leaf["path"].as_str().unwrap())).unwrap()));
    }
    out
}

#[test]
fn accumulated_rounding_fails_allclose_but_agrees_under_the_whole_model_rule() {
    let rows = rows();
    for target in ["cpu", "cpu/compiled"] {
        let r = case(&rows, "deep_forward", target);
        assert_eq!(r.result.outcome, Outcome::Pass, "{target}: {:?}", r.result.message);
        // Elementwise, against float64 at float32's tolerance, some elements are beyond it.
        let store = Store::open(store()).unwrap();
        let run = store.latest_run().unwrap().unwrap().id;
        let mismatched: u64 = store
            .comparisons(run)
            .unwrap()
            .iter()
            .filter(|c| c.case_key == r.case.key && c.device == r.result.device && c.against == Against::Float64)
            .map(|c| c.mismatched)
            .sum();
        assert!(mismatched > 0, "{target}: every element within float32's tolerance: not the case this tests");
    }
    let eager = judgement(case(&rows, "deep_forward", "cpu"));
    assert_eq!(eager["rule"], "floor", "{eager}");
    let compiled = judgement(case(&rows, "deep_forward", "cpu/compiled"));
    assert_eq!((compiled["rule"].as_str(), compiled["verdict"].as_str()), (Some("rmse_ratio"), Some("agrees")));
    let ratio = compiled["ratio"].as_f64().unwrap();
    assert!(ratio <= 2.0, "compiled RMSE {ratio}x eager's");
    // The stored RMSE is the one computed here from the saved outputs and the golden run's.
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let golden = store
        .references(run)
        .unwrap()
        .into_iter()
        .find(|g| g.key == mlport::agreement::case_reference_key(&case(&rows, "deep_forward", "cpu").case.key))
        .unwrap();
    let mut g = Vec::new();
    for leaf in golden.outputs.as_array().unwrap() {
        g.extend(real_f64(&read_npy(Path::new(leaf["path"].as_str().unwrap())).unwrap()));
    }
    let c = values(case(&rows, "deep_forward", "cpu/compiled"));
    let rmse = (c.iter().zip(&g).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / c.len() as f64).sqrt();
    let stored = compiled["rmse"].as_f64().unwrap();
    assert!((rmse - stored).abs() <= 1e-9 * rmse.max(1.0), "stored {stored}, recomputed {rmse}");
}

#[test]
fn a_perturbed_model_is_a_wrong_result() {
    let rows = rows();
    let eager = case(&rows, "perturbed_forward", "cpu");
    assert_eq!(eager.result.outcome, Outcome::Pass, "{:?}", eager.result.message);
    let r = case(&rows, "perturbed_forward", "cpu/compiled");
    assert_eq!((r.result.outcome, r.result.reason), (Outcome::WrongResult, Some(Reason::WrongResult)));
    let j = judgement(r);
    assert_eq!(j["rule"], "rmse_ratio");
    assert!(j["ratio"].as_f64().unwrap() > 100.0, "{j}");
    let m = r.result.message.as_deref().unwrap();
    assert!(m.contains("whole model (rmse_ratio)") && m.contains("wrong"), "{m}");
}

#[test]
fn a_non_deterministic_model_is_flagged_not_failed() {
    let rows = rows();
    for target in ["cpu", "cpu/compiled"] {
        let r = case(&rows, "dropout_forward", target);
        assert_eq!(r.result.outcome, Outcome::Pass, "{target}: {:?}", r.result.message);
        let spread = r.result.measures.unwrap().repeat_rmse.unwrap();
        assert!(spread > 0.01, "{target}: two dropout calls gave RMSE {spread} apart");
        let j = judgement(r);
        assert_eq!(j["non_deterministic"].as_bool(), Some(true), "{j}");
    }
    let table = common::stdout(mlport().args(["report", "--workloads", "--db", store().to_str().unwrap()]));
    assert!(table.contains("pass (non-deterministic)"), "{table}");
    // A deterministic model's two calls are equal, -inf where masked included.
    for id in ["perturbed_forward", "masked_forward"] {
        let det = case(&rows, id, "cpu").result.measures.unwrap();
        assert_eq!((det.repeat_rmse, det.repeat_nan_mismatch), (Some(0.0), Some(0)), "{id}");
    }
}

#[test]
fn equal_infinities_are_equal() {
    let rows = rows();
    for target in ["cpu", "cpu/compiled"] {
        let r = case(&rows, "masked_forward", target);
        assert_eq!(r.result.outcome, Outcome::Pass, "{target}: {:?}", r.result.message);
        let j = judgement(r);
        assert_eq!(j["non_deterministic"].as_bool(), Some(false), "{target}: {j}");
        assert!(j["rmse"].as_f64().is_some_and(f64::is_finite), "{target}: {j}");
    }
}

#[test]
fn a_train_steps_updated_weights_agree_across_eager_and_compiled() {
    let rows = rows();
    let eager = case(&rows, "train_step", "cpu");
    let compiled = case(&rows, "train_step", "cpu/compiled");
    assert_eq!(compiled.result.outcome, Outcome::Pass, "{:?}", compiled.result.message);
    // Loss + 4 parameter tensors: 1 + 64*128 + 128 + 128*8 + 8 values.
    let (e, c) = (values(eager), values(compiled));
    assert_eq!((e.len(), c.len()), (1 + 64 * 128 + 128 + 128 * 8 + 8, e.len()));
    let max_abs = e.iter().zip(&c).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(max_abs < 1e-5, "eager and compiled updated weights differ by {max_abs}");
    assert!(matches!(judgement(compiled)["rule"].as_str(), Some("tolerance" | "rmse_ratio")));
}

#[test]
fn peak_memory_matches_getrusage() {
    let rows = rows();
    let r = case(&rows, "allocates_1gib", "cpu");
    assert_eq!(r.result.outcome, Outcome::Pass, "{:?}", r.result.message);
    let peak = r.result.measures.unwrap().peak_rss_bytes.unwrap() as f64;
    // Output 1: ru_maxrss (kB) read inside the call, while the 1 GiB buffer's pages were touched.
    let leaf = &r.result.outputs.as_array().unwrap()[1];
    let kb = real_f64(&read_npy(Path::new(leaf["path"].as_str().unwrap())).unwrap())[0];
    let rusage = kb * 1024.0;
    assert!(peak >= (1u64 << 30) as f64, "peak {peak} bytes for a 1 GiB buffer");
    assert!((peak - rusage).abs() / rusage < 0.10, "VmHWM {peak} vs ru_maxrss {rusage}");
}

#[test]
fn a_batch_too_large_is_out_of_memory_and_the_run_goes_on() {
    let rows = rows();
    let r = case(&rows, "batch_too_large", "cpu");
    assert_eq!(
        (r.result.outcome, r.result.reason),
        (Outcome::Fail, Some(Reason::OutOfMemory)),
        "{:?}",
        r.result.message
    );
    // Every other case ran to an answer: five on both targets, one eager only.
    let others: Vec<&ResultRow> = rows.iter().filter(|x| x.case.case_id != "batch_too_large").collect();
    assert_eq!(others.len(), 11);
    for o in others {
        assert!(matches!(o.result.outcome, Outcome::Pass | Outcome::WrongResult), "{}: {:?}", o.case.key, o.result);
        assert_eq!(o.function.name, FN);
    }
}

#[test]
fn report_workloads_in_every_format() {
    let db = store().to_str().unwrap();
    let json: Value =
        serde_json::from_str(&common::stdout(mlport().args(["report", "--workloads", "--format", "json", "--db", db])))
            .unwrap();
    assert_eq!((json["format"].as_str(), json["version"].as_u64()), (Some("mlport.workloads"), Some(1)));
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    let oom = rows.iter().find(|r| r["case_id"] == "batch_too_large").unwrap();
    assert_eq!((oom["outcome"].as_str(), oom["reason"].as_str()), (Some("fail"), Some("out_of_memory")));
    let table = common::stdout(mlport().args(["report", "--workloads", "--db", db]));
    assert!(table.contains("pass (non-deterministic)") && table.contains("fail (out_of_memory)"), "{table}");
    assert!(table.contains("Timings are absent"), "{table}");
    let csv = common::stdout(mlport().args(["report", "--workloads", "--format", "csv", "--db", db]));
    assert!(csv.starts_with("framework,function,case,dtype,target,result_id,outcome"), "{csv}");
    assert_eq!(csv.lines().count(), 13);
    let md = common::stdout(mlport().args(["report", "--workloads", "--format", "markdown", "--db", db]));
    assert!(md.starts_with("# Workloads, run "), "{md}");
    // The float64 comparisons' verdicts follow the model's: the agreeing deep model's rows agree.
    let store = Store::open(store()).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let deep: Vec<_> = store
        .comparisons(run)
        .unwrap()
        .into_iter()
        .filter(|c| c.case_key.contains("/deep_forward/") && c.against == Against::Float64)
        .collect();
    assert!(!deep.is_empty() && deep.iter().all(|c| c.verdict == ComparisonVerdict::Agree));
}

/// Keras 3 keyed by its backend: the built-in ResNet-50 workload and one op on keras-jax,
/// keras-torch and keras-tensorflow, with the same seeded weights, compared output to output.
#[test]
fn keras_backends_run_the_same_model_with_the_same_weights_and_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("k.db");
    mlport()
        .args(["run", "--framework", "keras-jax,keras-torch,keras-tensorflow", "--quick", "--function"])
        .args(["keras.applications.ResNet50,keras.ops.sin", "--db"])
        .arg(&db)
        .arg("--python")
        .arg(common::python())
        .timeout(std::time::Duration::from_secs(1200))
        .assert()
        .success();
    let rows = common::latest_results(&db);
    for fw in ["keras-jax", "keras-torch", "keras-tensorflow"] {
        for function in ["keras.applications.ResNet50", "keras.ops.sin"] {
            let r = rows
                .iter()
                .find(|r| r.function.framework.as_str() == fw && r.function.name == function)
                .unwrap_or_else(|| panic!("no {function} on {fw}"));
            assert_eq!(r.result.outcome, Outcome::Pass, "{fw} {function}: {:?}", r.result.message);
        }
    }
    let store = Store::open(&db).unwrap();
    let run = store.runs().unwrap().pop().unwrap();
    let keras_jax = &run.info.frameworks[&mlport::model::Framework::KerasJax].version;
    assert!(keras_jax.as_deref().is_some_and(|v| v.contains(" on jax ")), "{keras_jax:?}");
    let json: Value = serde_json::from_str(&common::stdout(
        mlport().args(["report", "--workloads", "--format", "json", "--db"]).arg(&db),
    ))
    .unwrap();
    let cross = json["cross"].as_array().unwrap();
    assert_eq!(cross.len(), 3, "{cross:?}");
    for c in cross {
        assert_eq!((c["op"].as_str(), c["verdict"].as_str()), (Some("keras_resnet50"), Some("agrees")), "{c}");
        assert_eq!(c["against"], "keras-jax");
    }
    // The backends differ (float32 rounding) but not by much: the same weights reached each.
    let differs =
        cross.iter().filter(|c| c["framework"] != "keras-jax").map(|c| c["max_abs_vs_first"].as_f64().unwrap());
    for d in differs {
        assert!(d > 0.0 && d < 0.1, "{d}");
    }
}
