//! mlport's own cost per case — everything that is not the framework call: planning, the
//! protocol, building inputs, writing outputs, classifying and committing the result — and
//! the time split of a 500-case CPU sweep. Through the release binary, as a user runs it:
//!
//! 1. Harness cost: `mlport run` over 500 no-op cases (`builtins.id(0)` as an int64 case, so no float64 self-reference is planned, in the NumPy worker,
//!    with the timing cut to its minimum, `--budget-ms 0.001`: about seven calls of ~100 ns),
//!    minus the same run of 1 case (start-up, framework import), over 499. Target: under 2 ms.
//! 2. A 500-case sweep of real torch ops (add, mul, sum, argsort, matmul over 100 sizes each,
//!    default timing, one thread): its wall time split into worker start-up, harness (500 × the
//!    cost from 1), and everything else — the framework calls: first calls, warm-up, block-size
//!    calibration and the timed blocks (of which the stored samples × block sizes are shown).
//!
//! Run with `MLPORT_TEST_PYTHON=/path/to/python cargo bench --bench overhead`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use mlport::store::Store;

mod common;
use common::{load, python};

fn noop_catalogue(cases: usize) -> String {
    let mut s = String::from(
        "format = 1\nframework = \"numpy\"\nversion = \"bench\"\n\n[[function]]\nname = \"builtins.id\"\n",
    );
    for i in 0..cases {
        let _ = writeln!(
            s,
            "  [[function.case]]\n  id = \"c{i}\"\n  dtypes = [\"int64\"]\n  inputs = [{{ value = 0, scalar = true, dtype = \"int64\" }}]"
        );
    }
    s
}

fn add_catalogue(cases: usize) -> String {
    let mut s =
        String::from("format = 1\nframework = \"torch\"\nversion = \"bench\"\n\n[[function]]\nname = \"torch.add\"\n");
    for i in 0..cases {
        let _ = writeln!(
            s,
            "  [[function.case]]\n  id = \"c{i}\"\n  inputs = [{{ shape = [1000] }}, {{ shape = [1000] }}]"
        );
    }
    s
}

fn sweep_catalogue() -> String {
    let mut s = String::from("format = 1\nframework = \"torch\"\nversion = \"bench\"\n");
    for f in ["torch.add", "torch.mul", "torch.sum", "torch.argsort", "torch.matmul"] {
        let _ = writeln!(s, "\n[[function]]\nname = \"{f}\"");
        for k in 1..=100 {
            let inputs = match f {
                "torch.sum" | "torch.argsort" => format!("[{{ shape = [{}] }}]", k * 100),
                "torch.matmul" => format!("[{{ shape = [{k}, 32] }}, {{ shape = [32, {k}] }}]"),
                _ => format!("[{{ shape = [{}] }}, {{ shape = [{}] }}]", k * 100, k * 100),
            };
            let _ = writeln!(s, "  [[function.case]]\n  id = \"n{k}\"\n  inputs = {inputs}");
        }
    }
    s
}

/// Runs `mlport run` on a catalogue file; returns (wall seconds, store path).
fn run(dir: &Path, name: &str, catalogue: &str, framework: &str, extra: &[&str]) -> (f64, PathBuf) {
    let cat = dir.join(format!("{name}.toml"));
    std::fs::write(&cat, catalogue).unwrap();
    let db = dir.join(format!("{name}.db"));
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .args(["run", "--framework", framework, "--device", "cpu", "--threads", "1", "--catalogue"])
        .arg(&cat)
        .args(extra)
        .arg("--python")
        .arg(python())
        .arg("--db")
        .arg(&db)
        .output()
        .expect("mlport runs");
    let wall = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "mlport run failed: {}", String::from_utf8_lossy(&out.stderr));
    (wall, db)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    println!("load average before: {} (2-core VM; other sessions share it)", load());

    // 1. Harness cost per case.
    let minimal = ["--budget-ms", "0.001"];
    let mut h = 0.0;
    for (what, framework, catalogue) in [
        ("no-op builtins.id(0), NumPy worker", "numpy", noop_catalogue as fn(usize) -> String),
        ("torch.add of two 1000-float inputs (inputs built, output written as .npy)", "torch", add_catalogue),
    ] {
        let mut per_case = Vec::new();
        for round in 0..3 {
            let (one, _) = run(dir, &format!("{framework}1-{round}"), &catalogue(1), framework, &minimal);
            let (many, db) = run(dir, &format!("{framework}500-{round}"), &catalogue(500), framework, &minimal);
            let store = Store::open(&db).unwrap();
            let run = store.latest_run().unwrap().unwrap();
            let results = store.results(run.id).unwrap();
            assert_eq!(results.len(), 500);
            assert!(results.iter().all(|r| r.result.outcome == mlport::model::Outcome::Pass));
            let calls_ns: f64 = results
                .iter()
                .map(|r| {
                    r.result.first_call_ns.unwrap_or(0) as f64
                        + r.result
                            .samples_ns
                            .iter()
                            .zip(&r.result.block_sizes)
                            .map(|(s, b)| (s * b) as f64)
                            .sum::<f64>()
                })
                .sum();
            let per = (many - one) / 499.0;
            println!(
                "  {framework} round {round}: 1 case {one:.2} s, 500 cases {many:.2} s → {:.3} ms per case (of which \
                 timed calls {:.4} ms)",
                1e3 * per,
                calls_ns / 500.0 / 1e6
            );
            per_case.push(per);
        }
        per_case.sort_by(f64::total_cmp);
        h = f64::max(h, per_case[1]);
        println!(
            "harness cost per case, {what}: median {:.3} ms over 3 rounds (target: under 2 ms) — {}",
            1e3 * per_case[1],
            if per_case[1] < 0.002 { "met" } else { "NOT met" }
        );
    }

    // 2. A 500-case sweep of real ops.
    let (one, _) = run(
        dir,
        "sweep1",
        sweep_catalogue().split("\n  [[function.case]]\n  id = \"n2\"").next().unwrap(),
        "torch",
        &[],
    );
    let (wall, db) = run(dir, "sweep500", &sweep_catalogue(), "torch", &[]);
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    let results = store.results(run.id).unwrap();
    let passed = results.iter().filter(|r| r.result.outcome == mlport::model::Outcome::Pass).count();
    let first: f64 = results.iter().map(|r| r.result.first_call_ns.unwrap_or(0) as f64 / 1e9).sum();
    let blocks: f64 = results
        .iter()
        .map(|r| r.result.samples_ns.iter().zip(&r.result.block_sizes).map(|(s, b)| (s * b) as f64 / 1e9).sum::<f64>())
        .sum();
    let startup = one; // a 1-case run: process start, plan, torch import, one case
    let harness = h * results.len() as f64; // the larger (torch) cost per case
    let calls = wall - startup - harness;
    println!(
        "500-case torch CPU sweep ({passed} passed, 1 thread): wall {wall:.2} s = start-up {startup:.2} s ({:.1}%) + \
         harness {harness:.2} s ({:.1}%) + framework calls {calls:.2} s ({:.1}%: first calls {first:.2} s, timed \
         blocks {blocks:.2} s, warm-up and block-size calibration the rest)",
        100.0 * startup / wall,
        100.0 * harness / wall,
        100.0 * calls / wall
    );
    println!("load average after: {}", load());
}
