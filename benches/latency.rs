//! mlport's latency against torch.utils.benchmark's `Timer.blocked_autorange` in one
//! session, at the same thread count, with the paper's one-call method beside them:
//! add on 1e3 and 1e6 float32 elements, a 256×256 matmul, argsort of 1e5 — through the
//! release binary (`mlport run --threads T`), then `benches/latency_timer.py`, five rounds interleaved,
//! for T = 1 (Timer's default) and T = 2; each side's figure is its median over the rounds. Prints the table; target: mlport's medians within 5% of Timer's.
//!
//! Run with `MLPORT_TEST_PYTHON=/path/to/python cargo bench --bench latency` (the managed
//! environment's interpreter: `mlport env` prints it). mlport runs with its defaults unless
//! `MLPORT_BENCH_BUDGET_MS` / `MLPORT_BENCH_TARGET_SPREAD` say otherwise (e.g. 200 and 0.001 to
//! measure as long as Timer's 0.2 s).

use std::path::{Path, PathBuf};
use std::process::Command;

use mlport::stats::{StatsConfig, Summary, median_ci};
use mlport::store::Store;

mod common;
use common::{load, python};

const CATALOGUE: &str = r#"
format = 1
framework = "torch"
version = "bench"

[[function]]
name = "torch.add"
  [[function.case]]
  id = "add_1e3"
  inputs = [{ shape = [1000] }, { shape = [1000] }]
  [[function.case]]
  id = "add_1e6"
  inputs = [{ shape = [1000000] }, { shape = [1000000] }]

[[function]]
name = "torch.matmul"
  [[function.case]]
  id = "matmul_256"
  inputs = [{ shape = [256, 256] }, { shape = [256, 256] }]

[[function]]
name = "torch.argsort"
  [[function.case]]
  id = "argsort_1e5"
  inputs = [{ shape = [100000] }]
"#;

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

#[derive(Clone)]
struct Mlport {
    median: mlport::stats::Estimate,
    summary: Summary,
    block: u64,
    first_call_ns: f64,
    threads: Option<u32>,
}

fn run_mlport(dir: &Path, threads: u32, budget_ms: f64, spread: f64) -> Vec<(String, Mlport)> {
    let db = dir.join(format!("t{threads}-{}.db", rand_suffix()));
    let out = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .args(["run", "--framework", "torch", "--device", "cpu", "--threads", &threads.to_string()])
        .args(["--budget-ms", &budget_ms.to_string(), "--target-spread", &spread.to_string(), "--catalogue"])
        .arg(dir.join("torch.toml"))
        .arg("--python")
        .arg(python())
        .arg("--db")
        .arg(&db)
        .output()
        .expect("mlport runs");
    assert!(out.status.success(), "mlport run failed: {}", String::from_utf8_lossy(&out.stderr));
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    let fw_threads = run.info.frameworks.values().next().and_then(|f| f.threads);
    let cfg = StatsConfig::default();
    store
        .results(run.id)
        .unwrap()
        .into_iter()
        .map(|r| {
            let s: Vec<f64> = r.result.samples_ns.iter().map(|&x| x as f64).collect();
            (
                r.case.case_id.clone(),
                Mlport {
                    median: median_ci(&s, &cfg).expect("samples"),
                    summary: Summary::of(&s, &cfg).unwrap(),
                    block: r.result.block_sizes.first().copied().unwrap_or(1),
                    first_call_ns: r.result.first_call_ns.unwrap_or(0) as f64,
                    threads: fw_threads,
                },
            )
        })
        .collect()
}

const ROUNDS: usize = 5;

fn run_timer(threads: u32) -> serde_json::Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/latency_timer.py");
    let out = Command::new(python()).arg(script).arg(threads.to_string()).output().expect("python runs");
    assert!(out.status.success(), "Timer script failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON from the Timer script")
}

fn us(ns: f64) -> String {
    if ns >= 1e6 { format!("{:.3} ms", ns / 1e6) } else { format!("{:.2} µs", ns / 1e3) }
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("torch.toml"), CATALOGUE).unwrap();
    let budget_ms: f64 = std::env::var("MLPORT_BENCH_BUDGET_MS").ok().and_then(|b| b.parse().ok()).unwrap_or(100.0);
    let spread: f64 = std::env::var("MLPORT_BENCH_TARGET_SPREAD").ok().and_then(|b| b.parse().ok()).unwrap_or(0.05);
    println!(
        "mlport settings: --budget-ms {budget_ms} --target-spread {spread} (MLPORT_BENCH_BUDGET_MS, \
         MLPORT_BENCH_TARGET_SPREAD); Timer: blocked_autorange(min_run_time=0.2)"
    );
    println!("load average before: {} (2-core VM; other sessions share it)", load());
    println!(
        "{:<12} {:>3} {:>26} {:>10} {:>12} {:>8} {:>15} {:>7} {:>12} {:>9} {:>12} {:>9}",
        "op",
        "thr",
        "mlport median [95% CI]",
        "spread",
        "Timer median",
        "diff",
        "rounds ml/Timer",
        "block",
        "one-call",
        "error",
        "mlport 1st",
        "error"
    );
    let mut worst: f64 = 0.0;
    for threads in [1u32, 2] {
        // Interleaved rounds, so that load from other work on the machine falls on both
        // sides alike; each side's figure is its median over rounds.
        let mut mls = Vec::new();
        let mut timers = Vec::new();
        for _ in 0..ROUNDS {
            mls.push(run_mlport(tmp.path(), threads, budget_ms, spread));
            timers.push(run_timer(threads));
        }
        let mid = ROUNDS / 2;
        let ml: Vec<(String, Mlport)> = (0..mls[0].len())
            .map(|i| {
                let mut rounds: Vec<&(String, Mlport)> = mls.iter().map(|m| &m[i]).collect();
                rounds.sort_by(|x, y| x.1.median.point.total_cmp(&y.1.median.point));
                rounds[mid].clone()
            })
            .collect();
        for (op, m) in &ml {
            let mut tms: Vec<f64> =
                timers.iter().map(|t| t[op.as_str()]["timer_median_ns"].as_f64().unwrap()).collect();
            tms.sort_by(f64::total_cmp);
            let t = &timers[0][op.as_str()];
            let tm = tms[mid];
            // Each tool's own round-to-round range, relative to its median over rounds.
            let mut mrs: Vec<f64> =
                mls.iter().map(|r| r.iter().find(|(o, _)| o == op).unwrap().1.median.point).collect();
            mrs.sort_by(f64::total_cmp);
            let range = |v: &[f64]| 100.0 * (v[v.len() - 1] - v[0]) / v[v.len() / 2];
            let ranges = format!("±{:.0}%/±{:.0}%", range(&mrs) / 2.0, range(&tms) / 2.0);
            let one = t["one_call_ns"].as_f64().unwrap();
            let diff = m.median.point / tm - 1.0;
            worst = worst.max(diff.abs());
            assert_eq!(m.threads, Some(threads), "torch ran at the requested thread count");
            assert_eq!(t["threads"].as_u64(), Some(u64::from(threads)));
            println!(
                "{:<12} {:>3} {:>26} {:>9.1}% {:>12} {:>+7.1}% {:>15} {:>4}×{:<2} {:>12} {:>+8.0}% {:>12} {:>+8.0}%",
                op,
                threads,
                format!("{} [{}, {}]", us(m.median.point), us(m.median.lower), us(m.median.upper)),
                100.0 * m.summary.spread,
                us(tm),
                100.0 * diff,
                ranges,
                m.block,
                m.summary.n,
                us(one),
                100.0 * (one / tm - 1.0),
                us(m.first_call_ns),
                100.0 * (m.first_call_ns / tm - 1.0),
            );
        }
    }
    println!("load average after: {}", load());
    println!(
        "largest |mlport/Timer - 1|: {:.1}% (target: under 5%) — {}; `rounds` is half the range of each tool's \
         medians over the {ROUNDS} rounds; `block` is calls per block × blocks taken; \
         one-call = the paper's method (one wall-clock call, no warm-up) and mlport's stored first call, each as \
         error against Timer's median",
        100.0 * worst,
        if worst < 0.05 { "met" } else { "NOT met" }
    );
}
