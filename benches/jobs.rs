//! Issue 21's figures in one session: `mlport run --jobs`, timing quality under parallel
//! workers, a busy neighbour, and `--quick`.
//!
//! 1. The built-in catalogue, eager, with `--jobs 1 --threads 1` and with the default (one
//!    pinned worker per core, one thread each): wall times and their ratio (target: default ≤
//!    0.55× of `--jobs 1`). Both at one thread per worker, so that figure 3 compares like with like.
//! 2. Expected scaling with cores, on paper: the serial run's per-case wall times scheduled
//!    longest-first ([`mlport::runner::schedule::pick`]) on k lanes, plus its float64 reference
//!    phase divided among the k lanes, plus the rest of its time outside cases (worker start-up,
//!    imports, the closing pass), which each lane pays again: an upper bound, since a lane that
//!    computed a framework's references runs its cases on the same worker (no second start).
//! 3. Timing quality: the same 200 timed cases (passes with samples, the first 200 in plan order
//!    timed in both) in the serial and the parallel run: the median over cases of the ratio of
//!    their medians (parallel/serial; target within ±3%) and its IQR, beside the floor — the same
//!    ratios between the serial run and a serial run of the same functions repeated.
//! 4. The latency benchmark's torch `Timer` comparison (benches/latency.rs' ops, one thread,
//!    mlport and Timer pinned to core 0 with `taskset`) quiet and with a busy neighbour pinned to
//!    core 1 (a memory-bound loop: `x.add_(1)` over 64 MB, the worst case for memory-bandwidth
//!    interference), and mlport's own medians with the neighbour over without it.
//! 5. `--quick` on the catalogue: wall time (target under 90 s) and every case whose status
//!    differs from the default (timed) run's; and `--quick --kind functions`, the catalogue
//!    without its workloads (as it was when the target was set).
//!
//! 0. With `MLPORT_BENCH_BASELINE=/path/to/old/mlport` (a release build of an earlier commit),
//!    first: `--jobs 1 --threads 1` with that binary and this one in alternating rounds
//!    (`MLPORT_BENCH_BASELINE_ROUNDS`, default 2): wall times and the per-case median ratio
//!    (issue 35's "no slower" and ±3%); `MLPORT_BENCH_ONLY=0` stops after it.
//!
//! The load average is printed beside every figure. Run (about 25 min on a quiet 2-core machine):
//!
//! ```text
//! MLPORT_TEST_PYTHON=$(ls -d ~/.cache/mlport/envs/py-*/bin/python) cargo bench --bench jobs
//! ```
//!
//! `MLPORT_BENCH_REDUCED=1` runs a reduced version (one eighth of the catalogue, `--shard 0/8`,
//! 100 cases for quality, 3 Timer rounds) in a few minutes, to validate the bench;
//! `MLPORT_BENCH_ROUNDS` sets the Timer rounds (default 5).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use mlport::model::{Framework, Target};
use mlport::runner::schedule::{self, Pending};
use mlport::stats::{median, quantile};
use mlport::store::Store;

mod common;
use common::{LATENCY_CATALOGUE, load, python};

fn reduced() -> bool {
    std::env::var("MLPORT_BENCH_REDUCED").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Runs the release binary with `args` (and `--python`, `--db db`), under `taskset -c cpus` when
/// given; returns the wall time, s. Panics with mlport's stderr when it fails.
fn mlport(args: &[String], db: &Path, cpus: Option<&str>) -> f64 {
    mlport_phases(args, db, cpus).0
}

/// This build of mlport (the release binary `cargo bench` built).
fn this_mlport() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mlport"))
}

/// [`mlport`], also returning when the float64 reference phase ended (s from the start: the
/// time mlport reported "float64 references: …"), `None` when it had none.
fn mlport_phases(args: &[String], db: &Path, cpus: Option<&str>) -> (f64, Option<f64>) {
    mlport_of(&this_mlport(), args, db, cpus)
}

/// [`mlport_phases`] with the mlport binary `bin`.
fn mlport_of(bin: &Path, args: &[String], db: &Path, cpus: Option<&str>) -> (f64, Option<f64>) {
    let mut cmd = match cpus {
        Some(c) => {
            let mut c2 = Command::new("taskset");
            c2.args(["-c", c]).arg(bin);
            c2
        }
        None => Command::new(bin),
    };
    cmd.args(args).arg("--python").arg(python()).arg("--db").arg(db).args(["--format", "json"]);
    cmd.env_remove("MLPORT_JOBS").stdout(Stdio::null()).stderr(Stdio::piped());
    let t = Instant::now();
    let mut child = cmd.spawn().expect("mlport runs");
    let mut stderr = String::new();
    let mut references = None;
    for line in BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok) {
        if references.is_none() && line.contains("float64 references:") {
            references = Some(t.elapsed().as_secs_f64());
        }
        stderr.push_str(&line);
        stderr.push('\n');
    }
    let status = child.wait().expect("mlport ends");
    let secs = t.elapsed().as_secs_f64();
    assert!(status.success(), "mlport {args:?} failed: {stderr}");
    (secs, references)
}

/// One stored result: status, median of its samples (ns), wall time (ms).
#[derive(Clone, Debug)]
struct Row {
    status: String,
    median_ns: Option<f64>,
    wall_ms: f64,
    framework: Framework,
}

/// The latest run's results by (case key, target), in plan order (the Vec).
fn results(db: &Path) -> Vec<(String, Target, Row)> {
    let store = Store::open(db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    store
        .results(run.id)
        .unwrap()
        .into_iter()
        .map(|r| {
            let s: Vec<f64> = r.result.samples_ns.iter().map(|&x| x as f64).collect();
            let status = match r.result.reason {
                Some(why) => format!("{} ({})", r.result.outcome.as_str(), why.as_str()),
                None => r.result.outcome.as_str().to_string(),
            };
            let row = Row {
                status,
                median_ns: (!s.is_empty()).then(|| median(&s)),
                wall_ms: r.result.wall_ms,
                framework: r.case.framework,
            };
            (r.case.key.clone(), r.result.device.clone(), row)
        })
        .collect()
}

/// Median and IQR of `v`.
fn med_iqr(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (quantile(&s, 0.5), quantile(&s, 0.75) - quantile(&s, 0.25))
}

/// Longest-first list scheduling of `ms` on `lanes` lanes: the makespan, ms.
fn lpt(cases: &[(Framework, f64)], lanes: usize) -> f64 {
    let mut pending: Vec<Pending> = cases
        .iter()
        .enumerate()
        .map(|(i, (fw, ms))| Pending { case: i, framework: *fw, target: Target::cpu(), expected_ms: *ms })
        .collect();
    let mut load = vec![0.0f64; lanes];
    while let Some(i) = schedule::pick(&pending, None) {
        let lane = (0..lanes).min_by(|a, b| load[*a].total_cmp(&load[*b])).unwrap();
        load[lane] += pending.remove(i).expected_ms;
    }
    load.into_iter().fold(0.0, f64::max)
}

/// The plan arguments: the whole catalogue, or one eighth of it (reduced).
fn plan_args(name: &str) -> Vec<String> {
    let mut v: Vec<String> = vec!["run".into(), "--device".into(), "cpu".into()];
    if reduced() {
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        v.extend(["--shard".into(), "0/8".into(), "--campaign".into(), format!("bench-{name}-{stamp}")]);
    }
    v
}

/// Per op, mlport's medians and Timer's over the rounds.
type PerOp = BTreeMap<String, (Vec<f64>, Vec<f64>)>;

/// A busy neighbour on `cpu`: a memory-bound torch loop (`x.add_(1)` over 16 Mi float32, 64 MB).
fn neighbour(cpu: &str) -> Child {
    let code = "import torch\ntorch.set_num_threads(1)\nx = torch.zeros(1 << 24)\nwhile True:\n    x.add_(1.0)\n";
    Command::new("taskset")
        .args(["-c", cpu])
        .arg(python())
        .args(["-c", code])
        .stdout(Stdio::null())
        .spawn()
        .expect("the neighbour starts")
}

/// One paired round of the latency comparison on core 0: mlport's median per op and Timer's.
fn latency_round(dir: &Path, round: usize) -> HashMap<String, (f64, f64)> {
    let db = dir.join(format!("latency-{round}-{}.db", std::process::id()));
    let args: Vec<String> = ["run", "--framework", "torch", "--jobs", "1", "--threads", "1", "--catalogue"]
        .iter()
        .map(|s| s.to_string())
        .chain([dir.join("torch.toml").display().to_string()])
        .collect();
    mlport(&args, &db, Some("0"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/latency_timer.py");
    let out = Command::new("taskset").args(["-c", "0"]).arg(python()).arg(script).arg("1").output().unwrap();
    assert!(out.status.success(), "Timer script failed: {}", String::from_utf8_lossy(&out.stderr));
    let timer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = Store::open(&db).unwrap();
    let run = store.latest_run().unwrap().unwrap();
    store
        .results(run.id)
        .unwrap()
        .into_iter()
        .map(|r| {
            let s: Vec<f64> = r.result.samples_ns.iter().map(|&x| x as f64).collect();
            let op = r.case.case_id.clone();
            let t = timer[op.as_str()]["timer_median_ns"].as_f64().unwrap();
            (op, (median(&s), t))
        })
        .collect()
}

/// Figure 0, one runner (issue 35): the plan at `--jobs 1 --threads 1` with `baseline` (a release build
/// of the commit before, `MLPORT_BENCH_BASELINE`) and with this build, `rounds` times each in
/// alternating order (baseline first in even rounds): wall times (median over rounds), and over
/// the cases timed in every run the ratio of medians (this build's median over rounds / the
/// baseline's), beside the floor: the baseline's last round over its first, and this build's.
fn one_runner(dir: &Path, baseline: &Path, rounds: usize) {
    let args = [plan_args("one-runner"), vec!["--jobs".into(), "1".into(), "--threads".into(), "1".into()]].concat();
    let mut walls: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut medians: [Vec<HashMap<(String, Target), f64>>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let bin = if side == 0 { baseline.to_path_buf() } else { this_mlport() };
            let db = dir.join(format!("one-runner-{side}-{round}.db"));
            walls[side].push(mlport_of(&bin, &args, &db, None).0);
            medians[side].push(results(&db).into_iter().filter_map(|(k, d, r)| Some(((k, d), r.median_ns?))).collect());
        }
    }
    let keys: Vec<&(String, Target)> =
        medians[0][0].keys().filter(|k| medians.iter().flatten().all(|m| m.contains_key(*k))).collect();
    let per_case = |side: usize, k: &(String, Target)| median(&medians[side].iter().map(|m| m[k]).collect::<Vec<_>>());
    let ratios: Vec<f64> = keys.iter().map(|k| per_case(1, k) / per_case(0, k)).collect();
    let floor = |side: usize| -> Vec<f64> {
        keys.iter().map(|k| medians[side][rounds - 1][*k] / medians[side][0][*k]).collect()
    };
    let (rm, ri) = med_iqr(&ratios);
    println!("\n0. one runner: --jobs 1 --threads 1, {rounds} rounds each, alternating (load after: {}):", load());
    println!(
        "   wall time, median over rounds: baseline {:.1} s, this build {:.1} s ({:+.1}%)",
        median(&walls[0]),
        median(&walls[1]),
        100.0 * (median(&walls[1]) / median(&walls[0]) - 1.0)
    );
    println!(
        "   per-case median, this build / baseline, over {} timed cases: median {:+.1}%  IQR {:.2}%   target within ±3%: {}",
        keys.len(),
        100.0 * (rm - 1.0),
        100.0 * ri,
        if (rm - 1.0).abs() <= 0.03 { "met" } else { "NOT met" }
    );
    if rounds > 1 {
        for (side, name) in [(0, "baseline"), (1, "this build")] {
            let (fm, fi) = med_iqr(&floor(side));
            println!(
                "   floor, {name} round {rounds} / round 1:  median {:+.1}%  IQR {:.2}%",
                100.0 * (fm - 1.0),
                100.0 * fi
            );
        }
    }
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rounds: usize =
        std::env::var("MLPORT_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(if reduced() { 3 } else { 5 });
    let cores = schedule::available_cores();
    println!(
        "issue 21 bench{}: {} cores available ({}); load average at start: {}",
        if reduced() { " (REDUCED: --shard 0/8 of the catalogue)" } else { "" },
        cores.len(),
        schedule::describe(&cores),
        load()
    );

    // 0. One runner, before and after.
    if let Some(baseline) = std::env::var_os("MLPORT_BENCH_BASELINE") {
        let rounds = std::env::var("MLPORT_BENCH_BASELINE_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(2);
        one_runner(dir, Path::new(&baseline), rounds);
        if std::env::var("MLPORT_BENCH_ONLY").is_ok_and(|v| v == "0") {
            return;
        }
    }

    // 1. --jobs 1 vs the default.
    let serial_db = dir.join("serial.db");
    let (w1, refs1) = mlport_phases(
        &[plan_args("serial"), vec!["--jobs".into(), "1".into(), "--threads".into(), "1".into()]].concat(),
        &serial_db,
        None,
    );
    let load1 = load();
    let par_db = dir.join("parallel.db");
    let (wd, refsd) = mlport_phases(&plan_args("parallel"), &par_db, None);
    let loadd = load();
    let serial = results(&serial_db);
    let parallel = results(&par_db);
    println!("\n1. catalogue, eager, {} cases:", serial.len());
    let phase =
        |r: Option<f64>| r.map(|s| format!("the last float64 reference recorded at {s:.1} s")).unwrap_or_default();
    println!("   --jobs 1 --threads 1: {w1:>7.1} s   ({}; load after: {load1})", phase(refs1));
    println!("   default (--jobs {}):   {wd:>7.1} s   ({}; load after: {loadd})", cores.len(), phase(refsd));
    println!(
        "   default / --jobs 1:   {:>7.3}     target ≤ 0.55: {}",
        wd / w1,
        if wd / w1 <= 0.55 { "met" } else { "NOT met" }
    );

    // 2. Expected scaling on paper.
    let cases: Vec<(Framework, f64)> = serial.iter().map(|(_, _, r)| (r.framework, r.wall_ms)).collect();
    let sum_s: f64 = cases.iter().map(|c| c.1).sum::<f64>() / 1e3;
    let outside = (w1 - sum_s).max(0.0);
    let references = refs1.unwrap_or(0.0).min(outside);
    println!(
        "\n2. expected scaling (serial run: {sum_s:.1} s in cases, {outside:.1} s outside them: {references:.1} s of \
         float64 references, shared out among the lanes, and {:.1} s of start-up, imports and the closing pass, \
         paid again by each lane, so counted whole):",
        outside - references
    );
    println!("   {:>5} {:>10} {:>9}", "cores", "expected", "speed-up");
    for k in [1usize, 2, 4, 8, 16] {
        let t = outside - references + references / k as f64 + lpt(&cases, k) / 1e3;
        println!("   {k:>5} {t:>9.1}s {:>8.2}×", w1 / t);
    }

    // 3. Timing quality: the same cases serial vs parallel, against serial repeated.
    let want = if reduced() { 100 } else { 200 };
    let par_map: HashMap<(String, Target), Row> =
        parallel.iter().map(|(k, d, r)| ((k.clone(), d.clone()), r.clone())).collect();
    let chosen: Vec<(String, Target, f64, f64)> = serial
        .iter()
        .filter_map(|(k, d, r)| {
            let p = par_map.get(&(k.clone(), d.clone()))?;
            Some((k.clone(), d.clone(), r.median_ns?, p.median_ns?))
        })
        .take(want)
        .collect();
    let mut functions: Vec<String> =
        chosen.iter().map(|(k, ..)| k.split('/').nth(1).unwrap_or_default().to_string()).collect();
    functions.sort();
    functions.dedup();
    let repeat_db = dir.join("repeat.db");
    let wr = mlport(
        &[
            vec![
                "run".into(),
                "--device".into(),
                "cpu".into(),
                "--jobs".into(),
                "1".into(),
                "--threads".into(),
                "1".into(),
            ],
            vec!["--function".into(), functions.join(",")],
        ]
        .concat(),
        &repeat_db,
        None,
    );
    let repeat: HashMap<(String, Target), Row> = results(&repeat_db).into_iter().map(|(k, d, r)| ((k, d), r)).collect();
    let ratios: Vec<f64> = chosen.iter().map(|(_, _, s, p)| p / s).collect();
    let floor: Vec<f64> =
        chosen.iter().filter_map(|(k, d, s, _)| Some(repeat.get(&(k.clone(), d.clone()))?.median_ns? / s)).collect();
    let (rm, ri) = med_iqr(&ratios);
    let (fm, fi) = med_iqr(&floor);
    println!("\n3. timing quality over {} timed cases (repeat run {wr:.1} s; load after: {}):", chosen.len(), load());
    println!(
        "   parallel / serial:          median {:+.1}%  IQR {:.2}%   target: median within ±3%: {}",
        100.0 * (rm - 1.0),
        100.0 * ri,
        if (rm - 1.0).abs() <= 0.03 { "met" } else { "NOT met" }
    );
    println!(
        "   serial repeated / serial:   median {:+.1}%  IQR {:.2}%   ({} cases) target: parallel IQR ≤ this floor: {}",
        100.0 * (fm - 1.0),
        100.0 * fi,
        floor.len(),
        if ri <= fi { "met" } else { "NOT met" }
    );

    // 4. The Timer comparison, quiet and with a busy neighbour on the other core.
    std::fs::write(dir.join("torch.toml"), LATENCY_CATALOGUE).unwrap();
    let mut sides: Vec<PerOp> = Vec::new();
    let mut loads = Vec::new();
    for busy in [false, true] {
        let mut n = if busy && cores.len() >= 2 { Some(neighbour(&cores[1].to_string())) } else { None };
        let mut per_op: PerOp = BTreeMap::new();
        for round in 0..rounds {
            for (op, (m, t)) in latency_round(dir, round + if busy { 100 } else { 0 }) {
                let e = per_op.entry(op).or_default();
                e.0.push(m);
                e.1.push(t);
            }
        }
        loads.push(load());
        if let Some(c) = n.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        sides.push(per_op);
    }
    println!(
        "\n4. torch Timer comparison, 1 thread, mlport and Timer on core 0, {rounds} paired rounds (loads after: quiet {}, \
         neighbour {}):",
        loads[0], loads[1]
    );
    println!(
        "   {:<12} {:>14} {:>22} {:>24}",
        "op", "mlport/Timer", "with neighbour (core 1)", "mlport neighbour/quiet"
    );
    for (op, (m0, t0)) in &sides[0] {
        let (m1, t1) = &sides[1][op];
        let r0 = median(&m0.iter().zip(t0).map(|(m, t)| m / t).collect::<Vec<_>>());
        let r1 = median(&m1.iter().zip(t1).map(|(m, t)| m / t).collect::<Vec<_>>());
        println!(
            "   {op:<12} {:>+13.1}% {:>+21.1}% {:>+23.1}%",
            100.0 * (r0 - 1.0),
            100.0 * (r1 - 1.0),
            100.0 * (median(m1) / median(m0) - 1.0)
        );
    }

    // 5. --quick.
    let quick_db = dir.join("quick.db");
    let wq = mlport(&[plan_args("quick"), vec!["--quick".into()]].concat(), &quick_db, None);
    let quick = results(&quick_db);
    let differ: Vec<String> = quick
        .iter()
        .filter_map(|(k, d, q)| {
            let p = par_map.get(&(k.clone(), d.clone()))?;
            (p.status != q.status).then(|| format!("{k} on {d}: timed run {} / quick {}", p.status, q.status))
        })
        .collect();
    println!(
        "\n5. --quick: {} cases in {wq:.1} s (target under 90 s{}: {}; load after: {}); {} of them differ in status from \
         the default run:",
        quick.len(),
        if reduced() { " for the whole catalogue" } else { "" },
        if wq < 90.0 { "met" } else { "NOT met" },
        load(),
        differ.len()
    );
    for d in &differ {
        println!("   {d}");
    }
    // The catalogue the target was set on: functions only (the workloads came later, issue 18).
    let functions_db = dir.join("quick-functions.db");
    let wf = mlport(
        &[plan_args("quick-functions"), vec!["--quick".into(), "--kind".into(), "functions".into()]].concat(),
        &functions_db,
        None,
    );
    println!(
        "   --quick --kind functions (the catalogue without its workloads, as when the target was set): {} cases in \
         {wf:.1} s ({}; load after: {})",
        results(&functions_db).len(),
        if wf < 90.0 { "under 90 s" } else { "not under 90 s" },
        load()
    );
    println!("\nload average at end: {}", load());
}
