//! ONNX Runtime as a framework of its own, for real: the built-in `catalogue/onnxruntime.toml`
//! (single ONNX operators, one `InferenceSession` each, CPUExecutionProvider) run by `mlport run
//! --framework onnxruntime --quick` with the real onnx and onnxruntime, judged against the
//! float64 references and shown by `mlport report --dtypes`.
//!
//! The interpreter: the managed environment, which `mlport run --framework onnxruntime` completes
//! with the ir-routes add-on (python/ir-routes.lock) on first use; `MLPORT_ORT_PYTHON` names
//! another interpreter that has onnx and onnxruntime.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::mlport;
use mlport::model::{Outcome, Reason, ResultRow};
use mlport::store::Store;

/// `--python` for the run, when `MLPORT_ORT_PYTHON` names one; else the managed environment.
fn ort_python() -> Option<PathBuf> {
    std::env::var_os("MLPORT_ORT_PYTHON").filter(|p| !p.is_empty()).map(PathBuf::from)
}

/// The interpreter the run used, for the repro script: `MLPORT_ORT_PYTHON`, else the managed one.
fn script_python() -> PathBuf {
    ort_python().unwrap_or_else(common::python)
}

/// The run of seven operators of the built-in catalogue, made once for every test of this binary.
fn store() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, db) = DB.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("ort.db");
        let mut cmd = mlport();
        cmd.args(["run", "--framework", "ort", "--device", "cpu", "--quick", "--function"])
            .arg("ai.onnx.Sin,ai.onnx.Exp,ai.onnx.Erf,ai.onnx.MatMul,ai.onnx.TopK,ai.onnx.Reshape,ai.onnx.Sigmoid");
        if let Some(python) = ort_python() {
            cmd.arg("--python").arg(python);
        }
        cmd.arg("--db").arg(&db).timeout(std::time::Duration::from_secs(1200)).assert().success();
        (tmp, db)
    });
    db.as_path()
}

fn rows(db: &Path) -> Vec<ResultRow> {
    let store = Store::open(db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    store.results(run).unwrap()
}

fn result<'a>(rows: &'a [ResultRow], function: &str, dtype: &str) -> &'a ResultRow {
    rows.iter()
        .find(|r| r.function.name == function && r.case.dtype.map(|d| d.to_string()).as_deref() == Some(dtype))
        .unwrap_or_else(|| panic!("no result of {function} at {dtype}"))
}

#[test]
fn an_operator_runs_and_agrees_with_its_float64_reference() {
    let db = store();
    let rows = rows(db);
    let store = Store::open(db).unwrap();
    let comparisons = store.comparisons(store.latest_run().unwrap().unwrap().id).unwrap();
    for (function, dtype, reference) in [
        ("ai.onnx.Sin", "float32", "numpy.sin in float64"),
        ("ai.onnx.Sin", "float16", "numpy.sin in float64"),
        ("ai.onnx.MatMul", "float64", "numpy.matmul in float64"),
        // The NumPy file's reference_only `onnx` case `top_k`: two outputs, values and indices.
        ("ai.onnx.TopK", "float32", "numpy.ndarray in float64"),
        // bfloat16 in and out: fed and read back as OrtValues (ORT's NumPy bridge has no bfloat16).
        ("ai.onnx.Reshape", "bfloat16", "numpy.reshape in float64"),
    ] {
        let r = result(&rows, function, dtype);
        assert_eq!(r.result.outcome, Outcome::Pass, "{function} at {dtype}: {:?}", r.result.message);
        let judged: Vec<_> = comparisons.iter().filter(|c| c.case_key == r.case.key).collect();
        assert!(!judged.is_empty(), "{function} at {dtype}: not compared");
        assert!(judged.iter().all(|c| c.verdict.as_str() == "agree" && c.reference == reference), "{judged:?}");
    }
    // TopK's indices come back as int64, as ONNX says and the reference has them.
    let topk = result(&rows, "ai.onnx.TopK", "float32");
    assert_eq!(comparisons.iter().filter(|c| c.case_key == topk.case.key).count(), 2);
}

#[test]
fn an_operator_dtype_pair_without_a_kernel_is_not_implemented() {
    let db = store();
    let rows = rows(db);
    for (function, dtype, says) in [
        ("ai.onnx.Exp", "bfloat16", "Could not find an implementation for Exp("),
        ("ai.onnx.Erf", "float64", "Could not find an implementation for Erf("),
        ("ai.onnx.MatMul", "bfloat16", "Could not find an implementation for MatMul("),
    ] {
        let r = result(&rows, function, dtype);
        assert_eq!((r.result.outcome, r.result.reason), (Outcome::Fail, Some(Reason::NotImplemented)), "{r:?}");
        let m = r.result.message.as_deref().unwrap_or_default();
        assert!(m.contains(says), "{function} at {dtype}: {m}");
    }
    // Sin's schema has no integer types: int32 is never planned rather than counted as a failure.
    assert!(!rows.iter().any(|r| r.function.name == "ai.onnx.Sin" && r.case.dtype.is_some_and(|d| d.is_integer())));
}

#[test]
fn the_dtype_matrix_shows_each_operator_by_dtype() {
    let db = store();
    let md = common::stdout(mlport().args(["report", "--dtypes", "--format", "markdown", "--db"]).arg(db));
    let header = md.lines().find(|l| l.starts_with("| function |")).expect("a matrix header");
    let columns: Vec<&str> = header.split('|').map(str::trim).collect();
    let exp = md.lines().find(|l| l.starts_with("| ai.onnx.Exp |")).expect("a row for Exp");
    let cells: Vec<&str> = exp.split('|').map(str::trim).collect();
    let cell = |dtype: &str| cells[columns.iter().position(|c| *c == dtype).unwrap()];
    assert_eq!(cell("bfloat16"), "N", "{exp}");
    assert!(cell("float32").starts_with('✓'), "{exp}");
    assert_eq!(cell("int32"), "", "Exp at int32 is outside its schema: not in the sweep ({exp})");
}

#[test]
fn onnxruntime_is_left_out_of_a_run_that_does_not_name_it() {
    // A catalogue of the ONNX file alone, no --framework: nothing is planned, and the error says
    // how to select it (before any interpreter is needed).
    let tmp = tempfile::tempdir().unwrap();
    let out = mlport()
        .args(["run", "--quick", "--python", "/nonexistent/python", "--catalogue"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue/onnxruntime.toml"))
        .arg("--db")
        .arg(tmp.path().join("none.db"))
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("onnxruntime runs only when selected (--framework onnxruntime)"), "{err}");
}

#[test]
fn repro_of_a_missing_kernel_raises_the_same_error() {
    let db = store();
    let python = script_python();
    let rows = rows(db);
    let exp = result(&rows, "ai.onnx.Exp", "bfloat16");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("repro");
    mlport().args(["repro", &exp.id.to_string(), "--db"]).arg(db).arg("--out").arg(&out).assert().success();
    let script = out.join(format!("repro_{}.py", exp.id));
    let run = std::process::Command::new(python).arg(&script).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the script should fail as the case did");
    assert!(err.contains("Could not find an implementation for Exp("), "{err}");
}

#[test]
fn sigmoids_negative_tail_loses_its_relative_accuracy() {
    // ONNX Runtime's CPU Sigmoid gives 0 for x <= -18 where sigmoid(x) is a normal float32
    // (1.5e-8 at -18): wrong against scipy.special.expit in float64. Its float64 kernel drifts
    // too (9.348e-14 at -30 where sigmoid is 9.358e-14; 0 at -40).
    let rows = rows(store());
    let tail = |dtype: &str| {
        rows.iter()
            .find(|r| {
                r.function.name == "ai.onnx.Sigmoid"
                    && r.case.case_id == "negative_tail"
                    && r.case.dtype.map(|d| d.to_string()).as_deref() == Some(dtype)
            })
            .unwrap_or_else(|| panic!("no negative_tail result at {dtype}"))
    };
    let f32 = tail("float32");
    assert_eq!(f32.result.outcome, Outcome::WrongResult, "{:?}", f32.result.message);
    let m = f32.result.message.as_deref().unwrap_or_default();
    assert!(m.contains("scipy.special.expit"), "{m}");
    assert_eq!(tail("float64").result.outcome, Outcome::WrongResult, "{:?}", tail("float64").result.message);
    // The usual range still agrees.
    assert_eq!(result(&rows, "ai.onnx.Sigmoid", "float32").result.outcome, Outcome::Pass);
}
