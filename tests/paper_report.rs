//! `mlport report --paper` on the paper's published raw data (../shared/paper-data), checked
//! against `scripts/paper_figures.py`, which computes the authors' method from the raw JSON
//! files with the Python standard library and no mlport code: every status count and every
//! latency figure must agree, to the precision the report prints.

mod common;

use std::collections::HashMap;

use common::{mlport, paper_dir, stdout};

/// `v` rounded to four significant digits, as the report prints ratios.
fn sig4(v: f64) -> f64 {
    let digits = 3 - v.abs().log10().floor() as i32;
    let p = 10f64.powi(digits);
    (v * p).round() / p
}

#[test]
fn paper_figures_agree_with_the_independent_script() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("paper.db");
    mlport().args(["import", "paper"]).arg(paper_dir()).arg("--db").arg(&db).assert().success();

    let csv = stdout(mlport().args(["report", "--paper", "--format", "csv", "--db"]).arg(&db));
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<HashMap<&str, &str>> = lines.map(|l| header.iter().copied().zip(l.split(',')).collect()).collect();

    let script = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/paper_figures.py"))
        .arg(paper_dir())
        .output()
        .expect("python3 runs");
    assert!(script.status.success(), "{}", String::from_utf8_lossy(&script.stderr));
    let want: serde_json::Value = serde_json::from_slice(&script.stdout).unwrap();

    // Status: every framework × device with a report (JAX's only report is a T4 run).
    let mut checked = 0;
    for (fw, devices) in want["status"].as_object().unwrap() {
        for (kind, counts) in devices.as_object().unwrap() {
            let (device, machine) = if kind == "gpu" { ("cuda:0", "t4_vm") } else { ("tpu:0", "tpu_vm") };
            let row = rows
                .iter()
                .find(|r| {
                    r["figure"] == "status"
                        && r["framework"] == fw.as_str()
                        && r["device"] == device
                        && r["machine"] == machine
                        && r["method"] == "authors"
                })
                .unwrap_or_else(|| panic!("no status row for {fw} {device}: {csv}"));
            for field in ["functions", "success", "partial", "complete_failure"] {
                assert_eq!(row[field], counts[field].to_string(), "{fw} {device} {field}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 5, "torch and tensorflow on T4 and TPU v3, jax on T4");

    // Latency, T4 → TPU v3, the authors' method, for all three frameworks.
    for fw in ["torch", "tensorflow", "jax"] {
        let w = &want["latency"][fw];
        let row = rows
            .iter()
            .find(|r| r["figure"] == "latency" && r["framework"] == fw && r["method"] == "authors")
            .unwrap_or_else(|| panic!("no latency row for {fw}: {csv}"));
        for field in ["functions", "faster", "intolerable"] {
            assert_eq!(row[field], w[field].to_string(), "{fw} {field}");
        }
        for field in ["median", "geometric_mean"] {
            let got: f64 = row[field].parse().unwrap();
            assert_eq!(got, sig4(w[field].as_f64().unwrap()), "{fw} {field}");
        }
    }

    // The paper's published figure: PyTorch on TPU v3, 35 of 64 functions succeed (54.69%),
    // by both methods.
    for method in ["authors", "mlport"] {
        let row = rows
            .iter()
            .find(|r| {
                r["figure"] == "status" && r["framework"] == "torch" && r["device"] == "tpu:0" && r["method"] == method
            })
            .unwrap();
        assert_eq!((row["success"], row["functions"]), ("35", "64"), "{method}");
    }
}
