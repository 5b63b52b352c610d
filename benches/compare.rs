//! `cargo bench --bench compare`: the cost of checking one output against its reference.
//!
//! 1. Two 10⁸-element float32 arrays (400 MB each; a seeded SplitMix64 generator; the second is
//!    the first with most elements moved by a few ULPs, 1 in 10⁴ moved beyond tolerance, and a
//!    few NaNs and Infs) written as `.npy` to a temporary folder, then timed: reading both files
//!    (from the page cache: they were just written), comparing them in memory under `allclose`
//!    with every metric, and both together. Target: the comparison well under 1 s on 2 cores.
//! 2. A 10⁶-element float16 output against a float64 reference, read and compared.
//!
//! Each figure is the median wall time of 7 repeats, with the range and the CPU time per repeat
//! (all threads; on a shared machine, CPU time well below cores × wall time means the
//! benchmark was waiting for a core). `MLPORT_BENCH_ELEMENTS` overrides 10⁸.

use std::path::Path;
use std::time::Instant;

use half::f16;
use mlport::compare::{NpyArray, Rule, Tolerance, compare, read_npy, write_npy};
use mlport::model::Dtype;
use mlport::stats::{SplitMix64, median};
use rayon::prelude::*;

#[allow(dead_code)]
mod common;

const REPEATS: usize = 7;
const SEED: u64 = 0x6d6c_706f_7274;

/// A uniform float in [0, 1) from 24 random bits.
fn unit(rng: &mut SplitMix64) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32
}

/// Reference and output: the output moves each element 0-3 ULPs, 1 in 10⁴ by 1%, and holds
/// 16 NaNs and 16 Infs (half of them matched by the reference).
fn float32_pair(n: usize) -> (Vec<f32>, Vec<f32>) {
    const CHUNK: usize = 1 << 20;
    let mut e = vec![0f32; n];
    let mut a = vec![0f32; n];
    e.par_chunks_mut(CHUNK).zip(a.par_chunks_mut(CHUNK)).enumerate().for_each(|(c, (e, a))| {
        let mut rng = SplitMix64::stream(SEED, &c.to_string());
        for (e, a) in e.iter_mut().zip(a.iter_mut()) {
            *e = unit(&mut rng) * 200.0 - 100.0;
            let r = rng.next_u64();
            *a = if r.is_multiple_of(10_000) {
                *e * 1.01
            } else {
                f32::from_bits(e.to_bits().wrapping_add((r >> 32) as u32 % 4))
            };
        }
    });
    let mut rng = SplitMix64::new(SEED);
    for k in 0..16 {
        let i = rng.below(n as u64) as usize;
        a[i] = if k % 2 == 0 { f32::NAN } else { f32::INFINITY };
        if k % 4 < 2 {
            e[i] = a[i];
        }
    }
    (a, e)
}

/// CPU time used so far by all of this process's threads, in seconds (Linux: the
/// schedulers' own accounting in /proc/self/task/*/schedstat; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0.0 };
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// One figure: the median wall time of `REPEATS` runs, their range, and the CPU time per run
/// (all threads), in seconds.
struct Figure {
    median: f64,
    lo: f64,
    hi: f64,
    cpu: f64,
}

/// Times `REPEATS` runs of `f`; returns the figure and the last run's result.
fn time<T>(mut f: impl FnMut() -> T) -> (Figure, T) {
    let mut secs = Vec::with_capacity(REPEATS);
    let mut last = None;
    let cpu0 = cpu_seconds();
    for _ in 0..REPEATS {
        let start = Instant::now();
        let out = f();
        secs.push(start.elapsed().as_secs_f64());
        last = Some(out);
    }
    let cpu = (cpu_seconds() - cpu0) / REPEATS as f64;
    let (lo, hi) = secs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    (Figure { median: median(&secs), lo, hi, cpu }, last.unwrap())
}

fn row(label: &str, f: &Figure, elements: usize) {
    println!(
        "  {label:<30} {:>8.1} ms  (range {:.1}-{:.1}, CPU {:.1} ms)  {:>5.2} G elements/s",
        f.median * 1e3,
        f.lo * 1e3,
        f.hi * 1e3,
        f.cpu * 1e3,
        elements as f64 / f.median / 1e9
    );
}

fn read_pair(a: &Path, e: &Path) -> (NpyArray, NpyArray) {
    (read_npy(a).unwrap(), read_npy(e).unwrap())
}

fn main() {
    let n: usize = std::env::var("MLPORT_BENCH_ELEMENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000_000);
    let dir = tempfile::tempdir().expect("temporary folder");
    println!(
        "compare benchmark: {} rayon threads, {} cores, load average {}; median of {REPEATS} repeats",
        rayon::current_num_threads(),
        std::thread::available_parallelism().map_or(1, |c| c.get()),
        common::load()
    );

    // 1. float32 vs float32, 10⁸ elements.
    let start = Instant::now();
    let (a, e) = float32_pair(n);
    let (pa, pe) = (dir.path().join("a.npy"), dir.path().join("e.npy"));
    write_npy(&pa, &NpyArray::new(vec![n / 1000, 1000], a.into()).unwrap()).unwrap();
    write_npy(&pe, &NpyArray::new(vec![n / 1000, 1000], e.into()).unwrap()).unwrap();
    println!(
        "float32 vs float32, {n} elements ({} MB per file; generated and written in {:.1} s):",
        n * 4 / 1_000_000,
        start.elapsed().as_secs_f64()
    );
    let tol = Tolerance::for_dtype(Dtype::Float32);
    let (f, _) = time(|| read_pair(&pa, &pe));
    row("read both files", &f, 2 * n);
    let (arr_a, arr_e) = read_pair(&pa, &pe);
    let (f, c) = time(|| compare(&arr_a, &"float32".into(), &arr_e, &"float32".into(), Rule::AllClose, tol, true));
    row("compare in memory (allclose)", &f, n);
    drop((arr_a, arr_e));
    let (f, _) = time(|| {
        let (a, e) = read_pair(&pa, &pe);
        compare(&a, &"float32".into(), &e, &"float32".into(), Rule::AllClose, tol, true)
    });
    row("read + compare", &f, n);
    println!("  result: {}", c.summary());
    std::fs::remove_file(&pa).ok();
    std::fs::remove_file(&pe).ok();

    // 2. float16 output vs float64 reference, 10⁶ elements.
    let m16 = 1_000_000;
    let mut rng = SplitMix64::new(SEED ^ 16);
    let e: Vec<f64> = (0..m16).map(|_| f64::from(unit(&mut rng)) * 20.0 - 10.0).collect();
    let a: Vec<f16> = e
        .iter()
        .map(|&x| {
            let h = f16::from_f64(x);
            if rng.below(1000) == 0 { f16::from_bits(h.to_bits() + 3) } else { h }
        })
        .collect();
    let (pa, pe) = (dir.path().join("a16.npy"), dir.path().join("e64.npy"));
    write_npy(&pa, &NpyArray::new(vec![m16], a.into()).unwrap()).unwrap();
    write_npy(&pe, &NpyArray::new(vec![m16], e.into()).unwrap()).unwrap();
    println!("float16 output vs float64 reference, {m16} elements:");
    let tol = Tolerance::for_dtype(Dtype::Float16);
    let (f, _) = time(|| read_pair(&pa, &pe));
    row("read both files", &f, 2 * m16);
    let (arr_a, arr_e) = read_pair(&pa, &pe);
    let (f, c) = time(|| compare(&arr_a, &"float16".into(), &arr_e, &"float64".into(), Rule::AllClose, tol, false));
    row("compare in memory (allclose)", &f, m16);
    let (f, _) = time(|| {
        let (a, e) = read_pair(&pa, &pe);
        compare(&a, &"float16".into(), &e, &"float64".into(), Rule::AllClose, tol, false)
    });
    row("read + compare", &f, m16);
    println!("  result: {}", c.summary());
}
