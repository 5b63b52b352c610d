//! Issue 23, fault 5: a `mlport repro` script holds what the store recorded (case ids,
//! messages) as literals only. A catalogue whose case id closes a docstring and calls
//! os.system, and whose failures' messages carry Windows paths, triple quotes of both kinds and
//! line ends, runs for real (real NumPy worker); each script compiles, reproduces the failure
//! and creates no file.

mod common;

use common::mlport;

#[test]
fn repro_scripts_of_hostile_ids_and_messages_compile_and_only_reproduce() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    common::run_catalogue(&db, "repro-hostile", &["--device", "cpu"]);
    let store = mlport::store::Store::open_read_only(&db).unwrap();
    let run = store.runs().unwrap()[0].id;
    let results = store.results(run).unwrap();
    assert_eq!(results.len(), 2);
    let hostile_id = r#""""+__import__("os").system("touch${IFS}PWNED")+"""\'''"#;
    let cases = [
        (
            hostile_id,
            "ValueError",
            "C:\\new\\table\\x1 \"\"\"; import os; os.system(\"touch PWNED_MESSAGE\") ''' \\N{oops}\nsecond line",
        ),
        ("backslash\\u00e9\\", "RuntimeError", "'''\\\\server\\share\\x\"\"\""),
    ];
    for (case_id, error_type, message) in cases {
        let row = results.iter().find(|r| r.case.case_id == case_id).unwrap_or_else(|| panic!("no {case_id}"));
        // The store holds what the worker said, unchanged.
        assert_eq!(row.result.message.as_deref(), Some(message), "{case_id}");
        let dir = tmp.path().join(format!("repro-{}", row.id));
        mlport().args(["repro", &row.id.to_string(), "--db"]).arg(&db).arg("--out").arg(&dir).assert().success();
        let script = dir.join(format!("repro_{}.py", row.id));

        let compiled = std::process::Command::new(common::python())
            .args(["-m", "py_compile"])
            .arg(&script)
            .env("PYTHONPYCACHEPREFIX", tmp.path().join("pycache"))
            .output()
            .unwrap();
        assert!(compiled.status.success(), "{}", String::from_utf8_lossy(&compiled.stderr));

        let ran = std::process::Command::new(common::python()).arg(&script).current_dir(&dir).output().unwrap();
        let (out, err) = (String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
        // It reproduces: the same exception with the same message, and says what was recorded.
        assert_eq!(ran.status.code(), Some(1), "{out}\n{err}");
        assert!(err.contains(&format!("{error_type}: ")), "{err}");
        assert!(err.trim_end().ends_with(message.lines().last().unwrap()), "{err}");
        assert!(out.contains(&format!("recorded outcome: fail (other)\n{error_type}: {message}\n")), "{out}");
        // Nothing else ran: no file appeared beside the script or in the test's folder.
        for name in ["PWNED", "PWNED_MESSAGE"] {
            assert!(!dir.join(name).exists() && !tmp.path().join(name).exists(), "{name} was created: {out}");
        }
        let mut files: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        assert_eq!(files, ["input0.npy".to_string(), format!("repro_{}.py", row.id)]);
    }
}
