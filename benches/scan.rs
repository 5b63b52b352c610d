//! `cargo bench --bench scan`: `mlport scan` (release binary) over the site-packages of
//! torch, tensorflow and jax in the managed environment, on one thread and on all cores,
//! by default and with --full-parse, beside the Python ast-based scanner (benches/py_scanner.py)
//! on one process and on all cores, in the same session. Prints files/s and MB/s.
//! One untimed scan first brings the files into the page cache; then every row runs
//! `MLPORT_BENCH_ROUNDS` times (default 3), the rows interleaved round by round, and the
//! median wall time counts. `MLPORT_TEST_PYTHON` picks the interpreter (default: the managed
//! environment).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

fn main() {
    let python = std::env::var_os("MLPORT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| mlport::pyenv::ensure_managed(&mlport::model::Framework::ALL).expect("managed env").python);
    let out = Command::new(&python)
        .args(["-c", "import os, torch, tensorflow, jax; print('\\n'.join(os.path.dirname(m.__file__) for m in (torch, tensorflow, jax)))"])
        .output()
        .expect("python runs");
    let dirs: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(dirs.len(), 3, "torch, tensorflow and jax are importable");
    let status = Command::new("cargo").args(["build", "--release", "--quiet"]).status().expect("cargo");
    assert!(status.success());
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let bin = PathBuf::from(target).join("release").join("mlport");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "scan benchmark: {} cores, load average {}",
        cores,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let rounds: usize = std::env::var("MLPORT_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3).max(1);
    let mut commands: Vec<(String, usize, Command)> = Vec::new();
    for (label, threads, full) in [
        ("mlport scan, 1 thread", 1, false),
        ("mlport scan, all cores", cores, false),
        ("mlport scan --full-parse, 1 thread", 1, true),
        ("mlport scan --full-parse, all cores", cores, true),
    ] {
        let mut cmd = Command::new(&bin);
        cmd.arg("scan").args(&dirs).args(["--format", "json", "--threads", &threads.to_string()]);
        if full {
            cmd.arg("--full-parse");
        }
        commands.push((label.to_string(), threads, cmd));
    }
    for (label, jobs) in [("python ast scanner, 1 process", 1), ("python ast scanner, all cores", cores)] {
        let mut cmd = Command::new(&python);
        cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/py_scanner.py"))
            .args(["--jobs", &jobs.to_string()])
            .args(&dirs);
        commands.push((label.to_string(), jobs, cmd));
    }
    // Runs one command: wall seconds, and the JSON it printed.
    let time = |cmd: &mut Command| {
        let start = Instant::now();
        let o = cmd.output().expect("the scanner runs");
        let secs = start.elapsed().as_secs_f64();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (secs, v)
    };
    let (_, warm) = time(&mut commands[1].2);
    let files = warm["files"].as_f64().unwrap();
    let bytes = warm["bytes"].as_f64().unwrap();
    let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); commands.len()];
    let mut calls = vec![0; commands.len()];
    for _ in 0..rounds {
        for (i, (_, _, cmd)) in commands.iter_mut().enumerate() {
            let (secs, v) = time(cmd);
            seconds[i].push(secs);
            calls[i] = v["calls"].as_u64().unwrap();
        }
    }
    let rows: Vec<(String, usize, f64, u64)> = commands
        .iter()
        .zip(&seconds)
        .zip(&calls)
        .map(|(((label, threads, _), secs), calls)| (label.clone(), *threads, mlport::stats::median(secs), *calls))
        .collect();
    println!("median of {rounds} rounds");
    println!("{files} files, {:.1} MB", bytes / 1e6);
    println!(
        "{:<38} {:>7} {:>8} {:>9} {:>8} {:>12} {:>9}",
        "scanner", "threads", "seconds", "files/s", "MB/s", "MB/s/thread", "calls"
    );
    for (label, threads, secs, calls) in &rows {
        let mbs = bytes / 1e6 / secs;
        println!(
            "{label:<38} {threads:>7} {secs:>8.2} {:>9.0} {mbs:>8.1} {:>12.1} {calls:>9}",
            files / secs,
            mbs / *threads as f64
        );
    }
    let per_core = |i: usize| bytes / rows[i].2 / rows[i].1 as f64;
    println!(
        "per core, mlport scan is {:.2}× the Python scanner (target 5×); all cores / one thread: {:.2}× on {cores} cores",
        per_core(0) / per_core(4),
        rows[0].2 / rows[1].2
    );
}
