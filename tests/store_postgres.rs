//! The store's API on a real PostgreSQL server (started by the test, `common/postgres.rs`):
//! what it reads back equals what the same writes read back from SQLite, many connections
//! write one database at once (each result exactly once), and a server restart in the middle
//! of writing loses and doubles nothing.

mod common;

use std::collections::BTreeMap;

use common::postgres::PgServer;
use mlport::compare::{Rule, Tolerance};
use mlport::model::{
    Against, CaseResult, CaseRow, CaseSpec, ComparisonRow, ComparisonVerdict, DeviceInfo, Dtype, Framework,
    FrameworkInfo, FunctionRow, Mode, Outcome, Reason, ReferenceRow, RunInfo, RunOrigin, RunState, RunSwitches, Shard,
    Spec, Target,
};
use mlport::outcome::Decision;
use mlport::store::{Location, Store};

fn info(host: &str) -> RunInfo {
    let torch = FrameworkInfo {
        version: Some("2.5.1+cu124".into()),
        import_error: None,
        packages: BTreeMap::from([("numpy".into(), "2.1.3".into())]),
        threads: Some(16),
        settings: BTreeMap::from([("jax_enable_x64".into(), serde_json::json!(false))]),
    };
    RunInfo {
        started_at: "2026-12-01T10:00:00Z".into(),
        host: host.into(),
        os: "Linux 6.1.0 x86_64".into(),
        cpu_model: "AMD EPYC 9454 — ünïcode".into(),
        cpu_cores: 48,
        accelerators: vec!["NVIDIA H200, driver 560.35".into()],
        python_version: "3.11.8".into(),
        python_executable: "/home/u/.venv/bin/python".into(),
        frameworks: BTreeMap::from([(Framework::Torch, torch)]),
        catalogue_version: BTreeMap::from([(Framework::Torch, "2026.11.30".into())]),
        command_line: "mlport run --device cpu,cuda:0".into(),
        seed: u64::MAX,
        reference_device: Target::cpu(),
        mlport_version: "0.1.0".into(),
        jax_x64: true,
        switches: Some(RunSwitches {
            devices: Some(vec![Target::cpu(), "cuda:0/compiled".parse().unwrap()]),
            modes: vec![Mode::Eager, Mode::Compiled],
            threads: Some(4),
            budget_ms: 0.25,
            target_spread: 0.05,
            timeout_s: 60.0,
            quick: false,
            jobs: None,
        }),
    }
}

fn functions() -> Vec<FunctionRow> {
    let mut f = FunctionRow::new(Framework::Torch, "torch.argsort");
    f.paper = Some("test_argsort".into());
    f.decile = Some(100);
    f.top20 = true;
    f.op = Some("argsort".into());
    vec![f, FunctionRow::new(Framework::Jax, "jax.numpy.argsort")]
}

/// `n` cases per function, dtypes alternating.
fn cases(n: usize) -> Vec<CaseRow> {
    let mut out = Vec::new();
    for (fw, name) in [(Framework::Torch, "torch.argsort"), (Framework::Jax, "jax.numpy.argsort")] {
        for i in 0..n {
            let dtype = if i % 2 == 0 { Dtype::Float32 } else { Dtype::Bfloat16 };
            out.push(CaseRow {
                key: format!("{fw}/{name}/c{i}/{dtype}"),
                framework: fw,
                function: name.into(),
                case_id: format!("c{i}"),
                dtype: Some(dtype),
                seed: (i as u64) << 60,
                spec: Spec::from(CaseSpec::new(name, &format!("c{i}"))),
            });
        }
    }
    out
}

fn result(key: &str, device: &str, i: u64) -> CaseResult {
    let mut r =
        CaseResult::new(key, device.parse().unwrap(), if i.is_multiple_of(3) { Outcome::Fail } else { Outcome::Pass });
    if r.outcome == Outcome::Fail {
        r.reason = Some(Reason::DtypeUnsupported);
        r.error_type = Some("RuntimeError".into());
        r.message = Some("\"argsort\" not implemented for 'BFloat16' — \u{1F600}".into());
        r.signal = Some(9);
    }
    r.first_call_ns = Some(1_234_567_890 + i);
    r.samples_ns = vec![30 + i, 10, 20, i64::MAX as u64];
    r.block_sizes = vec![1, 2, 3, 4];
    r.compiles = (device.contains("compiled")).then_some(2);
    r.runqueue_wait_ns = Some(1_500_000);
    r.steady_wall_ns = Some(101_000_000);
    r.outputs = serde_json::json!([{"index": 0, "dtype": "int64", "shape": [4, 5], "path": "o/0.npy"}]);
    r.wall_ms = 12.75 + i as f64;
    r.finished_at = "2026-12-01T10:00:03Z".into();
    r
}

/// Everything a report reads of a run, for comparing two stores.
fn everything(store: &Store, run: i64) -> String {
    let mut summary = store.run(run).unwrap();
    summary.finished_at = summary.finished_at.map(|_| "set".into());
    assert_eq!(summary.uid.len(), 32);
    summary.uid = "random".into();
    format!(
        "{summary:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        store.functions(run).unwrap(),
        store.cases(run).unwrap(),
        store.devices(run).unwrap(),
        store.results(run).unwrap().into_iter().map(|r| (r.function, r.case, r.result)).collect::<Vec<_>>(),
        store.references(run).unwrap(),
        store.comparisons(run).unwrap(),
    )
}

/// The same writes, through the same API.
fn write_everything(store: &mut Store) -> i64 {
    let cases = cases(3);
    let origin = RunOrigin {
        label: Some("nightly on gpu-box".into()),
        machine: Some("gpu-box".into()),
        campaign: Some("nightly".into()),
        shard: Some(Shard::new(2, 4).unwrap()),
        plan_digest: Some("abc".into()),
        ..RunOrigin::default()
    };
    let run = store.create_run(&info("gpu-box"), &origin, &functions(), &cases).unwrap();
    let mut later = info("gpu-box");
    later.reference_device = "cuda:1".parse().unwrap();
    store.update_run_info(run, &later).unwrap();
    let devices = [
        DeviceInfo {
            framework: Framework::Torch,
            device: "cuda:0".parse().unwrap(),
            available: true,
            detail: "H200".into(),
        },
        DeviceInfo {
            framework: Framework::Jax,
            device: "tpu:0".parse().unwrap(),
            available: false,
            detail: String::new(),
        },
    ];
    store.record_devices(run, &devices).unwrap();
    store.record_devices(run, &devices).unwrap();
    for (i, c) in cases.iter().enumerate() {
        for device in ["cpu", "cuda:0", "cpu/compiled"] {
            store.record_result(run, &result(&c.key, device, i as u64)).unwrap();
        }
    }
    // Recording again replaces, also with fewer samples or none (the old ones beyond the new
    // count go: on PostgreSQL in the same statement as the result).
    store.record_result(run, &result(&cases[0].key, "cpu", 7)).unwrap();
    let mut shorter = result(&cases[1].key, "cpu", 1);
    shorter.samples_ns.truncate(2);
    shorter.block_sizes.truncate(2);
    store.record_result(run, &shorter).unwrap();
    let mut none = result(&cases[2].key, "cuda:0", 2);
    none.samples_ns.clear();
    none.block_sizes.clear();
    store.record_result(run, &none).unwrap();
    let reference = ReferenceRow {
        key: "reference/argsort/c0/float32".into(),
        framework: Framework::Numpy,
        op: "argsort".into(),
        case_id: "c0".into(),
        dtype: Dtype::Float32,
        function: "numpy.argsort".into(),
        seed: u64::MAX,
        spec: CaseSpec::new("numpy.argsort", "c0"),
        outcome: None,
        message: None,
        outputs: serde_json::json!([]),
    };
    // A float64 self-reference: computed by the case's own framework (schema 8).
    let own = ReferenceRow {
        key: mlport::agreement::case_reference_key(&cases[1].key),
        framework: Framework::Torch,
        op: String::new(),
        function: "torch.argsort".into(),
        spec: CaseSpec::new("torch.argsort", "c0"),
        ..reference.clone()
    };
    store.plan_references(run, &[reference.clone(), own.clone()]).unwrap();
    store.plan_references(run, std::slice::from_ref(&reference)).unwrap();
    store.record_reference(run, &reference.key, Outcome::Pass, None, &serde_json::json!([{"index": 0}])).unwrap();
    let (rule, tol) = (Rule::UpToSign { axis: -1 }, Tolerance::for_dtype(Dtype::Float32));
    let row = ComparisonRow::incomparable(&cases[0].key, &Target::cpu(), &Against::Float64, "numpy", 0, rule, tol);
    let row = ComparisonRow {
        verdict: ComparisonVerdict::Disagree,
        elements: 4,
        mismatched: 1,
        max_abs: Some(0.5),
        max_ulp: Some(1e300),
        summary: "1 of 4".into(),
        ..row
    };
    let wrong = Decision::with(Outcome::WrongResult, Some(Reason::WrongResult), "disagrees");
    store.record_comparisons(run, &cases[0].key, &Target::cpu(), &[row], Some(&wrong)).unwrap();
    store.finish_run(run, RunState::Finished).unwrap();
    run
}

#[test]
fn postgres_reads_back_exactly_what_sqlite_reads_back() {
    let server = PgServer::start();
    let url = server.create_database();
    let tmp = tempfile::tempdir().unwrap();
    let mut lite = Store::open(&tmp.path().join("s.db")).unwrap();
    let mut pg = Store::open_at(&Location::parse(&url).unwrap()).unwrap();
    let (a, b) = (write_everything(&mut lite), write_everything(&mut pg));
    assert_eq!(everything(&pg, b), everything(&lite, a));
    let samples = |key: &str, device: &str| {
        let rows = pg.results(b).unwrap();
        let r = rows.iter().find(|r| r.case.key == key && r.result.device.as_str() == device).unwrap();
        (r.result.samples_ns.clone(), r.result.block_sizes.clone())
    };
    let keys: Vec<String> = cases(3).into_iter().map(|c| c.key).collect();
    assert_eq!(samples(&keys[1], "cpu"), (vec![31, 10], vec![1, 2]), "the replaced result's 2 samples, not 4");
    assert_eq!(samples(&keys[2], "cuda:0"), (vec![], vec![]), "no samples left");
    assert_eq!(samples(&keys[0], "cpu"), (vec![37, 10, 20, i64::MAX as u64], vec![1, 2, 3, 4]));
    assert_eq!(pg.campaign_runs("nightly").unwrap().len(), 1);
    let frameworks: Vec<Framework> = pg.references(b).unwrap().iter().map(|r| r.framework).collect();
    assert_eq!(frameworks, [Framework::Numpy, Framework::Torch], "who computes each reference survives");
    let uid = pg.run(b).unwrap().uid;
    assert_eq!(pg.run_by_uid(&uid).unwrap().map(|r| r.id), Some(b));
    assert_eq!(pg.run_of_result(1).unwrap(), Some(b));
    assert_eq!(pg.done_keys(b, &Target::cpu()).unwrap(), lite.done_keys(a, &Target::cpu()).unwrap());
    // The same schema: every migration recorded, ids from identity columns.
    let db = url.rsplit('/').next().unwrap();
    let versions = server.sql(db, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version");
    let want: Vec<String> = (1..=mlport::store::schema::latest_version()).map(|v| v.to_string()).collect();
    assert_eq!(versions, want.join(","));
    let identity = server.sql(
        db,
        "SELECT is_identity FROM information_schema.columns WHERE table_name = 'results' AND column_name = 'id'",
    );
    assert_eq!(identity, "YES");
    assert_eq!(server.sql(db, "SELECT value FROM meta WHERE key = 'application'"), "mlport");
}

#[test]
fn many_connections_write_one_database_at_once_each_result_exactly_once() {
    let server = PgServer::start();
    let url = server.create_database();
    let location = Location::parse(&url).unwrap();
    let cases = cases(20);
    // Six writers open the empty database at the same moment (each migrates it, under the
    // migration lock), then all record every case of one shared run, in different orders,
    // and one run of their own.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let (location, cases, barrier) = (location.clone(), cases.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut store = Store::open_at(&location).unwrap();
                let own = store
                    .create_run(&info(&format!("writer-{w}")), &RunOrigin::default(), &functions(), &cases)
                    .unwrap();
                barrier.wait();
                let shared = store.runs().unwrap().into_iter().map(|r| r.id).min().unwrap();
                let mut order: Vec<usize> = (0..cases.len()).collect();
                order.rotate_left(w * 3);
                for i in order {
                    store.record_result(shared, &result(&cases[i].key, "cpu", i as u64)).unwrap();
                    store.record_result(own, &result(&cases[i].key, "cpu", i as u64)).unwrap();
                }
                own
            })
        })
        .collect();
    let own: Vec<i64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let store = Store::open_at(&location).unwrap();
    assert_eq!(store.runs().unwrap().len(), 6);
    for run in own {
        let results = store.results(run).unwrap();
        assert_eq!(results.len(), cases.len(), "run {run}");
        for (r, c) in results.iter().zip(&cases) {
            assert_eq!(r.case.key, c.key);
            assert_eq!(r.result.samples_ns.len(), 4, "samples of {} written once", c.key);
        }
    }
    let db = url.rsplit('/').next().unwrap();
    assert_eq!(
        server.sql(db, "SELECT COUNT(*) FROM schema_version"),
        mlport::store::schema::latest_version().to_string()
    );
    assert_eq!(server.sql(db, "SELECT COUNT(*) FROM results"), (6 * cases.len()).to_string());
    assert_eq!(server.sql(db, "SELECT COUNT(*) FROM samples"), (6 * cases.len() * 4).to_string());
}

#[test]
fn a_server_restart_while_writing_loses_and_doubles_nothing() {
    let server = PgServer::start();
    let url = server.create_database();
    let location = Location::parse(&url).unwrap();
    let cases = cases(150);
    let mut store = Store::open_at(&location).unwrap();
    let run = store.create_run(&info("restarting"), &RunOrigin::default(), &functions(), &cases).unwrap();
    let writer = {
        let cases = cases.clone();
        std::thread::spawn(move || {
            for (i, c) in cases.iter().enumerate() {
                store.record_result(run, &result(&c.key, "cpu", i as u64)).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            store.finish_run(run, RunState::Finished).unwrap();
        })
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    // Restart once the writer is well under way.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while server.sql(&db, "SELECT COUNT(*) FROM results").parse::<usize>().unwrap() < 20 {
        assert!(std::time::Instant::now() < deadline, "the writer does not write");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.restart();
    let written_before = server.sql(&db, "SELECT COUNT(*) FROM results").parse::<usize>().unwrap();
    assert!(written_before < cases.len(), "the restart came too late to test anything");
    writer.join().expect("the writer carried on after the restart");
    let store = Store::open_at(&location).unwrap();
    let summary = store.run(run).unwrap();
    assert_eq!((summary.state, summary.results), (RunState::Finished, cases.len() as u64));
    let results = store.results(run).unwrap();
    let keys: Vec<&str> = results.iter().map(|r| r.case.key.as_str()).collect();
    let want: Vec<&str> = cases.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, want, "every case exactly once, in planned order");
    assert!(results.iter().all(|r| r.result.samples_ns.len() == 4));
    assert_eq!(server.sql(&db, "SELECT COUNT(*) FROM samples"), (4 * cases.len()).to_string());
}
