//! The store's write speed on both engines, in one session, and what PostgreSQL adds to
//! mlport's cost per case:
//!
//! 1. 10,000 results (20 latency samples each, one transaction per result, as a run commits
//!    them) written through `Store::record_result` into SQLite (a file in a temporary folder) and
//!    into PostgreSQL on localhost (a server this benchmark starts with the tests' harness,
//!    `tests/common/postgres.rs`): results/s and ms per result for each.
//! 2. Harness cost per case with `--db postgresql://…`, measured as `benches/overhead.rs`
//!    measures it for SQLite: `mlport run` over 500 no-op cases (`builtins.id(0)` as an int64 case, so no float64 self-reference is planned, in the NumPy
//!    worker, `--budget-ms 0.001`) minus the same run of 1 case, over 499; median of 3 rounds,
//!    each engine. Target: under 1 ms per case with PostgreSQL.
//!
//! Durability differs, and the output says so: SQLite commits with its defaults (WAL journal,
//! `synchronous=FULL`: every commit waits for the WAL to reach the disk); the PostgreSQL test
//! server runs with `fsync=off` (`tests/common/postgres.rs`: its data is thrown away), so its
//! commits never wait for the disk — a production server adds a WAL flush to each.
//!
//! Run with `MLPORT_TEST_PYTHON=/path/to/python cargo bench --bench store`;
//! `MLPORT_BENCH_ENGINES=postgresql` (or `sqlite`) measures one engine only, e.g. when the disk is
//! so busy that SQLite's per-commit fsyncs take the whole session.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use mlport::model::{CaseResult, CaseRow, CaseSpec, Dtype, Framework, FunctionRow, Outcome, RunInfo, Spec, Target};
use mlport::store::{Location, Store};

mod common;
use common::{load, python};

#[path = "../tests/common/postgres.rs"]
mod postgres;

const RESULTS: usize = 10_000;

/// 100 functions × 100 cases.
fn plan() -> (Vec<FunctionRow>, Vec<CaseRow>) {
    let functions: Vec<FunctionRow> =
        (0..100).map(|f| FunctionRow::new(Framework::Torch, &format!("torch.bench{f}"))).collect();
    let cases = (0..RESULTS)
        .map(|i| {
            let name = format!("torch.bench{}", i / 100);
            CaseRow {
                key: format!("torch/{name}/c{i}/float32"),
                framework: Framework::Torch,
                function: name.clone(),
                case_id: format!("c{i}"),
                dtype: Some(Dtype::Float32),
                seed: i as u64,
                spec: Spec::from(CaseSpec::new(&name, &format!("c{i}"))),
            }
        })
        .collect();
    (functions, cases)
}

fn result(c: &CaseRow, i: usize) -> CaseResult {
    let mut r = CaseResult::new(&c.key, Target::cpu(), Outcome::Pass);
    r.first_call_ns = Some(50_000 + i as u64);
    r.samples_ns = (0..20).map(|k| 1_000 + k + i as u64).collect();
    r.block_sizes = vec![64; 20];
    r.outputs = serde_json::json!([{"index": 0, "dtype": "float32", "shape": [1000], "path": "torch-cpu/x.npy"}]);
    r.wall_ms = 1.5;
    r.finished_at = "2026-12-02T07:00:00Z".into();
    r
}

/// Writes the results one transaction each; returns seconds.
fn write_results(location: &Location) -> f64 {
    let mut store = Store::open_at(location).unwrap();
    let (functions, cases) = plan();
    let run =
        store.create_run(&RunInfo::blank("bench", Target::cpu()), &Default::default(), &functions, &cases).unwrap();
    let start = Instant::now();
    for (i, c) in cases.iter().enumerate() {
        store.record_result(run, &result(c, i)).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(store.run(run).unwrap().results, RESULTS as u64);
    secs
}

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

/// `mlport run` of `cases` no-op cases into `db`; wall seconds.
fn run(dir: &Path, cases: usize, db: &str) -> f64 {
    let cat = dir.join(format!("noop{cases}.toml"));
    std::fs::write(&cat, noop_catalogue(cases)).unwrap();
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_mlport"))
        .current_dir(dir)
        .args(["run", "--framework", "numpy", "--device", "cpu", "--threads", "1", "--budget-ms", "0.001"])
        .arg("--catalogue")
        .arg(&cat)
        .arg("--python")
        .arg(python())
        .args(["--db", db])
        .output()
        .expect("mlport runs");
    let wall = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "mlport run failed: {}", String::from_utf8_lossy(&out.stderr));
    wall
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    println!("load average before: {} (2-core VM; other sessions share it)", load());
    let server = postgres::PgServer::start();

    // 1. 10,000 results into each engine.
    let lite = Location::Sqlite(dir.join("bench.db"));
    let pg = Location::parse(&server.create_database()).unwrap();
    let wanted = std::env::var("MLPORT_BENCH_ENGINES").unwrap_or_else(|_| "sqlite,postgresql".into()).to_lowercase();
    let engines: Vec<(&str, &str, &Location)> =
        [("SQLite", "SQLite (file, WAL)", &lite), ("PostgreSQL", "PostgreSQL (localhost TCP)", &pg)]
            .into_iter()
            .filter(|(short, _, _)| wanted.split(',').any(|w| w.trim() == short.to_lowercase()))
            .collect();
    let mut table: Vec<[String; 4]> = Vec::new();
    for &(_, engine, location) in &engines {
        let secs = write_results(location);
        println!(
            "{RESULTS} results into {engine}: {secs:.2} s, {:.0} results/s, {:.3} ms per result",
            RESULTS as f64 / secs,
            1e3 * secs / RESULTS as f64
        );
        table.push([
            engine.to_string(),
            format!("{:.0}", RESULTS as f64 / secs),
            format!("{:.3}", 1e3 * secs / RESULTS as f64),
            String::new(),
        ]);
    }

    // 2. Harness cost per case, each engine.
    for (row, &(engine, _, _)) in engines.iter().enumerate() {
        let mut per_case = Vec::new();
        for round in 0..3 {
            let db = |n: usize| match engine {
                "SQLite" => dir.join(format!("h{round}-{n}.db")).display().to_string(),
                _ => server.create_database(),
            };
            let one = run(dir, 1, &db(1));
            let many = run(dir, 500, &db(500));
            let per = (many - one) / 499.0;
            println!(
                "  {engine} round {round}: 1 case {one:.2} s, 500 cases {many:.2} s → {:.3} ms per case",
                1e3 * per
            );
            per_case.push(per);
        }
        per_case.sort_by(f64::total_cmp);
        let target = if engine == "PostgreSQL" { " (target with PostgreSQL: under 1 ms)" } else { "" };
        println!("harness cost per case, {engine}: median {:.3} ms over 3 rounds{target}", 1e3 * per_case[1]);
        table[row][3] = format!("{:.3}", 1e3 * per_case[1]);
    }
    println!("\nengine                       results/s   ms/result   harness ms/case (median of 3)");
    for [engine, per_s, per_result, harness] in &table {
        println!("{engine:<28} {per_s:>9}   {per_result:>9}   {harness:>9}");
    }
    println!(
        "durability: SQLite with its defaults (WAL, synchronous=FULL: each commit waits for the disk); the \
         PostgreSQL test server with fsync=off (commits never wait for the disk; a production server adds a WAL \
         flush per commit)"
    );
    println!("load average after: {}", load());
}
