//! `mlport repro` of a Keras result runs on the Keras backend the result was recorded on: the
//! script sets `KERAS_BACKEND` before Keras is imported, whatever the caller's environment says
//! (it once never set it, ran on Keras's default backend, printed "agrees" and exited 0).

mod common;

use common::mlport;
use mlport::model::{Outcome, Reason};
use mlport::store::Store;

#[test]
fn a_keras_result_is_reproduced_on_its_own_backend() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("keras.db");
    common::run_catalogue(&db, "keras-repro", &["--device", "cpu", "--framework", "keras-torch", "--quick"]);
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap().id;
    let rows = store.results(run).unwrap();
    let add = rows.iter().find(|r| r.function.name == "keras.ops.add").expect("keras.ops.add ran");
    assert_eq!(
        (add.result.outcome, add.result.reason),
        (Outcome::WrongResult, Some(Reason::DtypeChanged)),
        "{:?}",
        add.result.message
    );

    let dir = tmp.path().join("repro");
    let wrote =
        mlport().args(["repro", &add.id.to_string(), "--db"]).arg(&db).arg("--out").arg(&dir).assert().success();
    let script = dir.join(format!("repro_{}.py", add.id));
    // It names the interpreter the run used (it has the frameworks), not a bare `python`.
    let said = String::from_utf8_lossy(&wrote.get_output().stderr).into_owned();
    let python = common::python();
    assert!(
        said.contains(&format!("run it with the run's interpreter: {} {}", python.display(), script.display())),
        "{said}"
    );
    // The caller's environment names another backend: the script must not follow it.
    let out = std::process::Command::new(common::python())
        .arg(&script)
        .current_dir(&dir)
        .env("KERAS_BACKEND", "jax")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // What Keras itself says, and the type the call returned: a torch tensor (a JAX or NumPy
    // backend would print `float32`).
    assert!(stdout.contains("keras backend here: torch"), "{stdout}\n{stderr}");
    assert!(stdout.contains("output 0: dtype torch.float32"), "{stdout}\n{stderr}");
    assert!(stdout.contains("expected float64 (dtype changed)"), "{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(1), "the reproduction still sees the dtype change: {stdout}\n{stderr}");
}
