//! Issue 36's speed figures, side by side in one session: the frameworks' own test data run by
//! mlport against the framework's own plain loop over the same suite (the floor).
//!
//! 1. OpInfo: `benches/suite_floor_opinfo.py` (PyTorch's own loop: the first N samples of every
//!    OpInfo × CPU-declared dtype generated, called once, and called again upcast to float64, as
//!    mlport's float64 reference is) beside `mlport run --suite opinfo --quick --samples N
//!    --device cpu` (two workers on two cores, listing from the cache, then listed afresh). Both
//!    totals, seconds per sample and the ratio of per-sample costs (mlport ÷ floor; target ≤ 3),
//!    and the whole op_db's wall time on cpu (target under 3 minutes).
//! 2. JAX harnesses: `benches/suite_floor_jax.py --every K` (each harness jitted and called
//!    twice, plus its float64 call) beside `mlport run --suite jax-harnesses --modes compiled
//!    --quick` on the same harnesses (every harness of every K-th group, `--op` with the floor's
//!    groups); the ratio of per-sample costs (target ≤ 2).
//! 3. mlport's own overhead per sample: (mlport's wall − the floor's wall) ÷ samples (target
//!    under 1 ms).
//!
//! Run (about 15 min on a quiet 2-core machine):
//!
//! ```text
//! MLPORT_TEST_PYTHON=$(ls -d ~/.cache/mlport/envs/py-*/bin/python) cargo bench --bench suites
//! ```
//!
//! `MLPORT_BENCH_SAMPLES` (default 3) and `MLPORT_BENCH_JAX_EVERY` (default 10: every 10th
//! group of harnesses) set the sizes;
//! `MLPORT_BENCH_OPS=sin,add,...` restricts OpInfo to those entries (to validate the bench);
//! `MLPORT_BENCH_SKIP_OPINFO=1` runs the JAX figure only; `MLPORT_BENCH_DB_DIR=DIR` keeps the runs' stores there (`o.db`: OpInfo on cpu, `j.db`: the
//! harnesses on cpu/compiled).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

mod common;
use common::{load, python};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string())
}

/// Runs a floor script with the interpreter; its one JSON line.
fn floor(script: &str, args: &[&str]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches").join(script);
    let out = Command::new(python()).arg(path).args(args).output().expect("the floor script runs");
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{script}: {e}: {text}"))
}

/// Runs `mlport run` with `args`; (wall s, cases run).
fn mlport(db: &Path, args: &[&str]) -> (f64, u64) {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .arg("run")
        .args(args)
        .arg("--db")
        .arg(db)
        .arg("--python")
        .arg(python())
        .output()
        .expect("mlport runs");
    let wall = t0.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mlport run {args:?}: {err}");
    for line in err.lines().filter(|l| l.contains("suite of") || l.contains("ended after") || l.contains("references"))
    {
        println!("    {line}");
    }
    let store = mlport::store::Store::open(db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    (wall, run.results)
}

fn main() {
    let samples = env_or("MLPORT_BENCH_SAMPLES", "3");
    let every = env_or("MLPORT_BENCH_JAX_EVERY", "10");
    let ops = env_or("MLPORT_BENCH_OPS", "");
    // `MLPORT_BENCH_DB_DIR` keeps the runs' stores (for the results page's reports).
    let tmp = tempfile::tempdir().unwrap();
    let dir =
        std::env::var_os("MLPORT_BENCH_DB_DIR").map_or_else(|| tmp.path().to_path_buf(), std::path::PathBuf::from);
    std::fs::create_dir_all(&dir).unwrap();
    println!("suites bench: --samples {samples}, JAX every {every}th group of harnesses; load {}", load());

    if std::env::var_os("MLPORT_BENCH_SKIP_OPINFO").is_none() {
        opinfo(&dir, &samples, &ops);
    }

    // 2. JAX harnesses, compiled (jit) as the floor jits them.
    let j = floor("suite_floor_jax.py", &["--groups-every", every.as_str()]);
    let j_n = j["harnesses"].as_f64().unwrap();
    let j_total = j["total_s"].as_f64().unwrap();
    println!(
        "jax floor (each harness jitted, called twice, plus float64): {} harnesses ({} raised); total {j_total:.1} s = {:.1} ms \
         per harness; load {}",
        j["harnesses"],
        j["raised"],
        1e3 * j_total / j_n,
        load()
    );
    let groups: Vec<&str> =
        j["groups"].as_array().expect("the floor names its groups").iter().filter_map(Value::as_str).collect();
    let names = groups.join(",");
    let (jwall, jcases) = mlport(
        &dir.join("j.db"),
        &["--suite", "jax-harnesses", "--op", &names, "--device", "cpu", "--modes", "compiled", "--quick"],
    );
    let jper = jwall / jcases as f64;
    println!(
        "jax by mlport (cpu/compiled, the floor's harnesses): {jcases} harnesses in {jwall:.1} s = \
         {:.1} ms per harness; load {}",
        1e3 * jper,
        load()
    );
    println!("  ratio per harness, mlport ÷ floor: {:.2} (target ≤ 2)", jper / (j_total / j_n));
}

/// Figure 1 (and 3): OpInfo, the floor and mlport.
fn opinfo(dir: &Path, samples: &str, ops: &str) {
    // 1. OpInfo.
    let mut floor_args = vec!["--samples", samples];
    if !ops.is_empty() {
        floor_args.extend(["--ops", ops]);
    }
    let f = floor("suite_floor_opinfo.py", &floor_args);
    let f_samples = f["samples"].as_f64().unwrap();
    let f_total = f["total_s"].as_f64().unwrap();
    println!(
        "opinfo floor (PyTorch's own loop, one process, one core): {} samples of {} OpInfo × CPU-declared dtype pairs; \
         import {:.1} s, generate {:.1} s, call {:.1} s, float64 call {:.1} s; total {:.1} s = {:.2} ms per sample; load {}",
        f["samples"],
        f["pairs"],
        f["import_s"].as_f64().unwrap(),
        f["generate_s"].as_f64().unwrap(),
        f["call_s"].as_f64().unwrap(),
        f["float64_s"].as_f64().unwrap(),
        f_total,
        1e3 * f_total / f_samples,
        load()
    );
    let mut args = vec!["--suite", "opinfo", "--samples", samples, "--device", "cpu", "--quick"];
    if !ops.is_empty() {
        args.extend(["--op", ops]);
    }
    // First with the listing cached (a second run of the same suite), then the listing's own cost.
    let (_, _) = mlport(&dir.join("warm.db"), &args);
    let (wall, cases) = mlport(&dir.join("o.db"), &args);
    let per = wall / cases as f64;
    println!(
        "opinfo by mlport (listing cached; two workers, float64 references, comparisons, store): {cases} samples \
         (declared on any device type plus the usual dtypes) in {wall:.1} s = {:.2} ms per sample; load {}",
        1e3 * per,
        load()
    );
    println!(
        "  ratio per sample, mlport ÷ floor: {:.2} (target ≤ 3); whole op_db at --samples {samples} on cpu: {wall:.1} s \
         (target under 180 s)",
        per / (f_total / f_samples)
    );
    println!(
        "  mlport's overhead per sample beyond the floor's: {:.2} ms (target under 1 ms)",
        1e3 * (per - f_total / f_samples)
    );
}
