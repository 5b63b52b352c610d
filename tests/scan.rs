//! `mlport scan`, `audit`, `mine` and `sample` on small Python sources written for the
//! purpose (tests/fixtures/scan/proj: every alias form, relative and star imports, nested
//! attribute chains, decorators, a notebook, a file with a syntax error, a .gitignore), and
//! the default scan (skipping files that cannot refer to a framework) checked against
//! `--full-parse` on a real tree (the installed jax and keras).

mod common;

use common::mlport;

use std::path::PathBuf;

use mlport::render;
use mlport::scan::{self, ScanOptions};

fn proj() -> PathBuf {
    common::fixture("scan/proj")
}

fn scan_proj(full: bool) -> scan::ScanReport {
    let opts = ScanOptions { threads: 2, full_parse: full, ..Default::default() };
    let mut r = scan::scan(&[proj()], &opts).unwrap();
    r.paths = vec!["proj".into()];
    r
}

fn names(r: &scan::ScanReport) -> Vec<&str> {
    r.functions.iter().map(|f| f.name.as_str()).collect()
}

#[test]
fn every_alias_form_resolves() {
    let r = scan_proj(false);
    let n = names(&r);
    for want in [
        "torch.nn.functional.conv2d",       // from torch.nn import functional as F
        "torch.nn.functional.relu",         // from torch import nn; nested chain
        "jax.numpy.argsort",                // from jax import numpy as jnp
        "jax.numpy.sum",                    // import jax.numpy
        "numpy.array",                      // import numpy
        "numpy.ones",                       // import numpy as np
        "tensorflow.compat.v1.placeholder", // import tensorflow.compat.v1 as tf
        "torch.no_grad",                    // decorator with a call
        "torch.jit.script",                 // bare decorator
        "torch.Tensor.argsort",             // annotated parameter
        "torch.Tensor.sum",                 // local bound once to torch.zeros
        "torch.Tensor.cumsum",              // method of a framework call's result
        "torch.nn.Linear.forward",          // method of a framework class instance
        "torch.randperm",                   // star import of the tree's own package
        "torch.nn.GELU",                    // ditto
        "tensorflow.linalg.svd",            // notebook
    ] {
        assert!(n.contains(&want), "{want} missing from {n:?}");
    }
    assert!(!n.iter().any(|f| f.starts_with("os.")), "non-framework calls are not listed");
    assert!(!n.contains(&"torch.cuda.synchronize"), ".gitignore'd files are not scanned");
    // Receivers that are not clearly tensors are listed, never guessed.
    let unresolved: Vec<&str> = r.unresolved.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(unresolved, ["?.sum", "torch.nn.functional.softmax?"]);
    assert_eq!(r.unresolved[0].calls, 3);
    // The notebook's sites name cell and line.
    let svd = r.functions.iter().find(|f| f.name == "tensorflow.linalg.svd").unwrap();
    assert_eq!(svd.sites[0].to_string(), "nb.ipynb[3]:3");
    // The broken file is reported, not fatal.
    assert_eq!(r.unparsable.len(), 1);
    assert_eq!((r.unparsable[0].file.as_str(), r.unparsable[0].line), ("broken.py", Some(3)));
}

#[test]
fn fast_path_equals_full_parse_on_the_fixtures() {
    let (fast, full) = (scan_proj(false), scan_proj(true));
    assert_eq!(fast.functions, full.functions);
    assert_eq!(fast.unresolved, full.unresolved);
    assert_eq!(fast.unparsable, full.unparsable);
}

#[test]
fn scan_renderings() {
    let r = scan_proj(false);
    insta::assert_snapshot!("scan_table", render::scan::render_table(&r));
    insta::assert_snapshot!("scan_json", render::scan::render_json(&r));
    insta::assert_snapshot!("scan_csv", render::scan::render_csv(&r));
}

/// Skipping the files that cannot refer to a framework gives the full parse's result on a real
/// tree: the installed keras (which holds such files) and jax.
#[test]
fn fast_path_equals_full_parse_on_a_real_tree() {
    let out = std::process::Command::new(common::python())
        .args([
            "-c",
            "import os, jax, keras; print(os.path.dirname(jax.__file__)); print(os.path.dirname(keras.__file__))",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "jax and keras are importable");
    let dirs: Vec<PathBuf> = String::from_utf8(out.stdout).unwrap().lines().map(PathBuf::from).collect();
    let run = |full| scan::scan(&dirs, &ScanOptions { full_parse: full, ..Default::default() }).unwrap();
    let (fast, full) = (run(false), run(true));
    assert!(full.files > 1000 && full.calls() > 30_000, "{} files, {} calls", full.files, full.calls());
    assert!(fast.skipped > 50 && fast.parsed_bytes < full.parsed_bytes, "the fast path skips files");
    assert_eq!(full.skipped, 0);
    assert_eq!(fast.functions, full.functions);
    assert_eq!(fast.unresolved, full.unresolved);
    assert_eq!(fast.unparsable, full.unparsable);
    assert_eq!(render::scan::render_json(&fast), render::scan::render_json(&full));
}

/// Deeply nested code is reported, never a crash: trees deeper than 10,000 levels (CPython
/// refuses far shallower ones) are unparsable; one just under the limit is scanned.
#[test]
fn deep_nesting_is_reported_not_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let nest = |n: usize| -> String {
        let mut s = String::from("import torch\n");
        for i in 0..n {
            s += &format!("{}if x:\n", " ".repeat(i));
        }
        s + &format!("{}torch.ones(1)\n", " ".repeat(n))
    };
    std::fs::write(tmp.path().join("ok.py"), nest(9_990)).unwrap();
    std::fs::write(tmp.path().join("ifs.py"), nest(10_500)).unwrap();
    std::fs::write(tmp.path().join("attrs.py"), format!("import torch\nx = torch{}()\n", ".a".repeat(200_000)))
        .unwrap();
    std::fs::write(tmp.path().join("neg.py"), format!("import torch\nx = {}torch.ones(1)\n", "-".repeat(200_000)))
        .unwrap();
    let r = scan::scan(&[tmp.path().to_path_buf()], &ScanOptions { threads: 2, ..Default::default() }).unwrap();
    let bad: Vec<(&str, Option<u32>)> = r.unparsable.iter().map(|u| (u.file.as_str(), u.line)).collect();
    assert_eq!(bad, [("attrs.py", Some(2)), ("ifs.py", Some(10_001)), ("neg.py", Some(2))]);
    assert!(r.unparsable.iter().all(|u| u.error.contains("10000 levels")), "{:?}", r.unparsable);
    let ones = r.functions.iter().find(|f| f.name == "torch.ones").unwrap();
    assert_eq!(ones.sites[0].to_string(), "ok.py:9992");
}

/// A notebook cell with a syntax error is reported by cell and line and left out; the other
/// cells (sharing the first cell's imports) are scanned.
#[test]
fn a_bad_notebook_cell_is_left_out_not_the_notebook() {
    let tmp = tempfile::tempdir().unwrap();
    let nb = serde_json::json!({"nbformat": 4, "cells": [
        {"cell_type": "code", "source": ["import numpy as np\n", "files = !ls\n"]},
        {"cell_type": "markdown", "source": "# text"},
        {"cell_type": "code", "source": ["x = np.ones(3)\n", "def broken(:\n", "    np.zeros(1)\n"]},
        {"cell_type": "code", "source": "np.sum(x)\nfor\n"},
        {"cell_type": "code", "source": "y = np.argsort(x)\n"},
        {"cell_type": "code", "source": "%%time\nmsg = (\"n=%d\"\n       % np.size(1))\n!ls\n"},
        {"cell_type": "code", "source": "s = \"\"\"\n"},
        {"cell_type": "code", "source": "  np.ones(7)\n"},
        {"cell_type": "code", "source": "\"\"\"\n"}
    ]});
    std::fs::write(tmp.path().join("nb.ipynb"), nb.to_string()).unwrap();
    let r = scan::scan(&[tmp.path().to_path_buf()], &ScanOptions::default()).unwrap();
    let bad: Vec<String> = r.unparsable.iter().map(|u| u.location()).collect();
    // An open string in cell 7 does not swallow cell 8 (run alone, dedented, by Jupyter).
    assert_eq!(bad, ["nb.ipynb[3]:2", "nb.ipynb[4]:2", "nb.ipynb[7]:1", "nb.ipynb[9]:1"]);
    let found: Vec<String> =
        r.functions.iter().flat_map(|f| f.sites.iter().map(move |s| format!("{} {s}", f.name))).collect();
    assert_eq!(found, ["numpy.argsort nb.ipynb[5]:1", "numpy.ones nb.ipynb[8]:1", "numpy.size nb.ipynb[6]:3"]);
    let json = render::scan::render_json(&r);
    assert!(json.contains("\"cell\": 3,"), "{json}");
}

/// Paths as users give them: overlapping folders count each file once, a trailing slash is not
/// doubled, a file named on the command line is scanned whatever its extension, and an absurd
/// `--threads` is refused.
#[test]
fn overlapping_paths_named_files_and_thread_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("r.py"), "import torch\ntorch.ones(1)\n").unwrap();
    std::fs::write(tmp.path().join("script"), "import numpy as np\nnp.zeros(1)\n").unwrap();
    let json = common::stdout(mlport().current_dir(tmp.path()).args([
        "scan",
        "real/",
        "./real",
        "real/r.py",
        "script",
        "--format",
        "json",
    ]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((v["files"].as_u64(), v["calls"].as_u64()), (Some(2), Some(2)), "{json}");
    let sites: Vec<&str> =
        v["functions"].as_array().unwrap().iter().map(|f| f["sites"][0]["file"].as_str().unwrap()).collect();
    assert_eq!(sites, ["script", "real/r.py"]);
    mlport()
        .args(["scan", "--threads", "100000"])
        .arg(&real)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("at most"));
}

#[test]
fn scan_cli_formats_and_missing_paths() {
    let out = mlport().arg("scan").arg(proj()).args(["--format", "csv", "--threads", "1"]).assert().success();
    let csv = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(csv.starts_with("kind,framework,function,calls,files,sites\r\n"));
    assert!(csv.contains("resolved,torch,torch.zeros,2,1,pkg/aliases.py:24 pkg/aliases.py:27\r\n"));
    mlport()
        .args(["scan", "/no/such/dir"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no such file or folder"));
    mlport().arg("scan").arg(proj()).args(["--format", "markdown"]).assert().code(2);
}

#[test]
fn audit_against_the_papers_tpu_data() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("m.db");
    mlport().args(["import", "paper"]).arg(common::paper_dir()).arg("--db").arg(&db).assert().success();
    let out = mlport()
        .arg("audit")
        .arg(proj())
        .arg("--db")
        .arg(&db)
        .args(["--device", "tpu:0", "--format", "markdown"])
        .arg("--add-to-catalogue")
        .arg(tmp.path().join("todo.toml"))
        .assert()
        .success();
    let md = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("audit_markdown", md);
    assert!(md.contains("| `torch.randperm` | 1 | 1 | complete failure |"), "{md}");
    assert!(tmp.path().join("todo.torch.toml").is_file());
    // The unknown jax functions are in mlport's catalogue: a run measures them, no draft is written.
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("`mlport run --device tpu:0 --function jax.numpy.argsort,jax.numpy.sum`"), "{err}");
    assert!(!tmp.path().join("todo.jax.toml").exists());
    let torch_drafts = std::fs::read_to_string(tmp.path().join("todo.torch.toml")).unwrap();
    assert!(torch_drafts.contains("name = \"torch.nn.functional.relu\"") && !torch_drafts.contains("randperm"));
    // The drafts are a valid catalogue.
    mlport().args(["list", "--no-probe", "--catalogue"]).arg(tmp.path().join("todo.torch.toml")).assert().success();
    // CI exit codes.
    let fail = |what: &str| {
        mlport().arg("audit").arg(proj()).arg("--db").arg(&db).args(["--device", "tpu:0", "--fail-on", what]).assert()
    };
    fail("complete_failure").code(3);
    fail("nonsense").code(2).stderr(predicates::str::contains("unknown finding"));
    // A reader that closes stdout early (`audit ... | head`) still gets the findings' exit code.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = std::process::Command::new(assert_cmd::cargo::cargo_bin("mlport"))
        .arg("audit")
        .arg(proj())
        .arg("--db")
        .arg(&db)
        .args(["--device", "tpu:0", "--fail-on", "complete_failure"])
        .stdout(writer)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3), "a closed stdout must not hide the findings");
    let json = mlport()
        .arg("audit")
        .arg(proj())
        .arg("--db")
        .arg(&db)
        .args(["--device", "tpu:0", "--format", "json", "--run", "paper/torch/tpu_vm/tpu"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(v["format"], "mlport.audit");
    // Calls the scan could not resolve are listed, not dropped.
    assert_eq!(v["audit"]["unresolved"][0], serde_json::json!({"name": "?.sum", "calls": 3, "files": 1}));
    assert_eq!(v["audit"]["runs"], serde_json::json!(["paper/torch/tpu_vm/tpu"]));
}

#[test]
fn mine_then_sample_is_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let out = mlport().arg("mine").arg(proj()).args(["--framework", "torch", "--format", "csv"]).assert().success();
    let csv = tmp.path().join("freq.csv");
    std::fs::write(&csv, &out.get_output().stdout).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("function,calls,files,decile\r\ntorch.zeros,2,1,100\r\n"), "{text}");
    let draw = |seed: &str| {
        let o = mlport()
            .arg("sample")
            .arg(&csv)
            .args(["--top", "2", "--per-decile", "1", "--seed", seed, "--format", "csv"])
            .assert()
            .success();
        String::from_utf8(o.get_output().stdout.clone()).unwrap()
    };
    let a = draw("7");
    assert_eq!(a, draw("7"));
    assert_eq!(a.lines().filter(|l| l.ends_with(",top")).count(), 2);
    assert!(a.lines().count() > 1 + 2 + 5, "{a}");
}
