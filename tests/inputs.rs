//! Literal inputs with the real worker and PyTorch: `value` broadcast to `shape` and `fill`
//! build the arrays they say (read back from the run's input files and checked with NumPy,
//! which builds the expected arrays itself), the function sees them (its output is their
//! negation), and a `value` that contradicts its `shape` is refused naming file:line:column.

mod common;

use common::mlport;
use mlport::model::Outcome;
use mlport::store::Store;

#[test]
fn shape_and_value_build_the_array_they_say_and_a_contradiction_names_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("inputs.db");
    common::run_catalogue(&db, "inputs", &["--device", "cpu"]);
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run).unwrap();
    assert_eq!(rows.len(), 4, "value_to_shape at float32 and bfloat16, rows, fill");
    let inputs_dir = mlport::workspace::RunFolders::new(&db.clone().into(), None).run_dir(run).join("inputs");
    for r in &rows {
        assert_eq!(r.result.outcome, Outcome::Pass, "{:?}", r.result.message);
        let dtype = r.case.dtype.unwrap();
        let key = mlport::plan::input_key(&r.case.spec.catalogue().unwrap().inputs, dtype, r.case.seed);
        let input = inputs_dir.join(format!("{key}.in0.npy"));
        let output = r.result.outputs[0]["path"].as_str().unwrap();
        // NumPy builds what the case asks for on its own, then checks the worker's input file
        // and the function's output (-input) against it, element by element.
        let expected = match (r.case.case_id.as_str(), dtype.as_str()) {
            ("value_to_shape", "float32") => "np.full((250, 250), 1.23, dtype=np.float32)",
            // 1.23 rounded to bfloat16 (8 significant bits): 1.2265625, held as float32.
            ("value_to_shape", "bfloat16") => "np.full((250, 250), 1.2265625, dtype=np.float32)",
            ("rows", _) => "np.repeat(np.array([[1], [2], [3]], dtype=np.int32), 4, axis=1)",
            ("fill", _) => "np.full((2, 5), -7.5)",
            other => panic!("unexpected case {other:?}"),
        };
        let code = format!(
            "import numpy as np\n\
             want = {expected}\n\
             got = np.load({input:?}); out = np.load({output:?})\n\
             assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)\n\
             assert np.array_equal(got, want), got\n\
             assert np.array_equal(out.astype(np.float64), -want.astype(np.float64)), out\n\
             print('ok', got.shape, got.dtype)"
        );
        let out = std::process::Command::new(common::python()).args(["-c", &code]).output().unwrap();
        assert!(out.status.success(), "{} {dtype}: {}", r.case.case_id, String::from_utf8_lossy(&out.stderr));
    }

    let bad = mlport()
        .args(["run", "--device", "cpu", "--catalogue"])
        .arg(common::fixture("inputs-bad"))
        .arg("--db")
        .arg(tmp.path().join("bad.db"))
        .arg("--python")
        .arg(common::python())
        .assert()
        .code(1);
    let err = String::from_utf8(bad.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("inputs-bad/torch.toml:9:14: `value` of shape [2] cannot be broadcast to `shape` [2, 3]"),
        "{err}"
    );
}
