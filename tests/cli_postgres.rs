//! `--db postgresql://…` as a user meets it, on a real PostgreSQL server the test starts
//! (`common/postgres.rs`) and real frameworks: a run and its report equal the same run into
//! SQLite; four shards of a campaign write one database at once and hold the plan exactly
//! once — also when one is killed with SIGKILL and run again, and when the server restarts
//! under them; an outage longer than the retry budget followed by `--resume` loses and doubles
//! nothing; and bad stores are clear errors that write nothing.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mlport;
use common::postgres::PgServer;
use predicates::prelude::*;
use serde_json::Value;

/// The database name at the end of a test URL.
fn db_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

/// A report's JSON without what differs between two runs of the same plan: times, latencies,
/// ids, and the store's name.
fn comparable(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| {
                    !(k.contains("latency")
                        || k.ends_with("_ns")
                        || k.ends_with("_ms")
                        || k.ends_with("_at")
                        || k == "id"
                        || k == "result_id"
                        || k == "store"
                        || k == "command_line"
                        || k == "seconds")
                });
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn a_run_into_postgres_reports_what_the_same_run_into_sqlite_reports() {
    let server = PgServer::start();
    let url = server.create_database();
    let tmp = tempfile::tempdir().unwrap();
    let lite = tmp.path().join("e2e.db");
    let py = common::python();
    let mut reports = Vec::new();
    for db in [lite.to_str().unwrap(), url.as_str()] {
        mlport()
            .current_dir(tmp.path())
            .args(["run", "--device", "cpu", "--framework", "numpy,torch", "--catalogue"])
            .arg(common::fixture("small"))
            .args(["--db", db, "--python"])
            .arg(&py)
            .assert()
            .success();
        let out = mlport()
            .current_dir(tmp.path())
            .args(["report", "--functions", "--format", "json", "--db", db])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        reports.push(comparable(serde_json::from_slice(&out).unwrap()));
    }
    assert_eq!(reports[1], reports[0], "PostgreSQL's report differs from SQLite's");
    let n = reports[0]["functions"]["targets"].as_array().map_or(0, Vec::len);
    assert_eq!(n, 2, "numpy and torch on cpu: {:#}", reports[0]);
    // The arrays stay on this machine, in .mlport/<host>-<port>-<db>-run-<id>/ of the current folder.
    let folder = tmp.path().join(".mlport").join(format!("127.0.0.1-{}-{}-run-1", server.port(), db_name(&url)));
    let npy = std::fs::read_dir(folder.join("numpy-cpu")).map(|d| d.count()).unwrap_or(0);
    assert!(npy > 0, "no arrays in {}", folder.display());
    // `runs` lists it from the database.
    mlport().args(["runs", "--db", &url]).assert().success().stdout(predicate::str::contains("finished"));
}

#[test]
fn the_paper_data_imported_into_postgres_reports_byte_for_byte_as_in_sqlite() {
    let server = PgServer::start();
    let url = server.create_database();
    let tmp = tempfile::tempdir().unwrap();
    let lite = tmp.path().join("paper.db");
    let paper = common::paper_dir();
    let mut outputs = Vec::new();
    for db in [lite.to_str().unwrap(), url.as_str()] {
        mlport().args(["import", "paper"]).arg(&paper).args(["--db", db]).assert().success();
        let report = mlport().args(["report", "--run", "all", "--format", "csv", "--db", db]).assert().success();
        let slowdown = mlport()
            .args([
                "report",
                "--slowdown",
                "cpu@paper/torch/t4_vm/gpu..cuda:0@paper/torch/t4_vm/gpu",
                "--format",
                "json",
            ])
            .args(["--db", db])
            .output()
            .unwrap();
        outputs.push((report.get_output().stdout.clone(), slowdown.stdout, slowdown.status.code()));
    }
    assert_eq!(String::from_utf8_lossy(&outputs[1].0), String::from_utf8_lossy(&outputs[0].0));
    assert_eq!(outputs[1], outputs[0]);
    // Importing again is refused, and adds nothing.
    let before = server.sql(db_name(&url), "SELECT COUNT(*) FROM results");
    mlport().args(["import", "paper"]).arg(&paper).args(["--db", &url]).assert().failure();
    assert_eq!(server.sql(db_name(&url), "SELECT COUNT(*) FROM results"), before);
}

/// `mlport run` of the built-in NumPy functions at float32 into `url`, started, not awaited.
fn numpy_run(url: &str, dir: &std::path::Path, env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("mlport"));
    cmd.current_dir(dir)
        .args(["run", "--device", "cpu", "--framework", "numpy", "--dtype", "float32", "--db", url, "--python"])
        .arg(common::python())
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

fn count(server: &PgServer, db: &str, sql: &str) -> usize {
    server.sql(db, sql).parse().unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Every run's planned cases each have exactly one result on cpu.
fn assert_each_case_once(server: &PgServer, db: &str) {
    let missing = count(
        server,
        db,
        "SELECT COUNT(*) FROM cases c WHERE NOT EXISTS \
         (SELECT 1 FROM results r WHERE r.case_id = c.id AND r.device = 'cpu')",
    );
    let doubled = count(
        server,
        db,
        "SELECT COUNT(*) FROM (SELECT case_id FROM results GROUP BY case_id, device HAVING COUNT(*) > 1) d",
    );
    assert_eq!((missing, doubled), (0, 0), "cases without a result, cases with two");
}

/// The number of results in the database, 0 before a run has created the schema.
fn results_so_far(server: &PgServer, db: &str) -> usize {
    if server.sql(db, "SELECT to_regclass('results') IS NULL") == "t" {
        return 0;
    }
    count(server, db, "SELECT COUNT(*) FROM results")
}

/// Waits until the database holds at least `n` results.
fn wait_for_results(server: &PgServer, db: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while results_so_far(server, db) < n {
        assert!(Instant::now() < deadline, "no results written");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Shard `index` of 4 of campaign `campaign` (the fleet catalogue on cpu, `budget_ms` of timing
/// per case) into `url`, started, not awaited.
fn shard(url: &str, dir: &std::path::Path, campaign: &str, index: u32, budget_ms: &str) -> std::process::Child {
    Command::new(assert_cmd::cargo::cargo_bin("mlport"))
        .current_dir(dir)
        .args(["run", "--device", "cpu", "--budget-ms", budget_ms, "--catalogue"])
        .arg(common::fixture("fleet"))
        .args(["--campaign", campaign, "--machine", "pool", "--shard", &format!("{index}/4"), "--db", url])
        .arg("--python")
        .arg(common::python())
        .env("NO_COLOR", "1")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("MLPORT_SHARDS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a started shard; its stderr, which must end in success.
fn finished(child: std::process::Child) -> String {
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    log
}

/// The case keys of the fleet catalogue's whole plan, from the library's planner (not from a run).
fn fleet_plan() -> std::collections::BTreeSet<String> {
    let catalogue =
        mlport::catalogue::Catalogue::new(mlport::catalogue::load_path(&common::fixture("fleet")).unwrap()).unwrap();
    let plan = mlport::plan::plan(&catalogue, &mlport::plan::Selection::default(), 0).unwrap();
    plan.cases.into_iter().map(|c| c.key).collect()
}

/// The results stored for `campaign`'s shard `index`.
fn shard_results(server: &PgServer, db: &str, campaign: &str, index: u32) -> usize {
    count(
        server,
        db,
        &format!(
            "SELECT COUNT(*) FROM results r JOIN runs u ON u.id = r.run_id \
             WHERE u.campaign = '{campaign}' AND u.shard_index = {index}"
        ),
    )
}

/// The cases `campaign`'s shard `index` plans (0 before its run exists).
fn shard_planned(server: &PgServer, db: &str, campaign: &str, index: u32) -> usize {
    count(
        server,
        db,
        &format!(
            "SELECT COUNT(*) FROM cases c JOIN runs u ON u.id = c.run_id \
             WHERE u.campaign = '{campaign}' AND u.shard_index = {index}"
        ),
    )
}

/// Waits until `campaign`'s shard `index` has stored at least one result.
fn wait_for_shard(server: &PgServer, db: &str, campaign: &str, index: u32) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while results_so_far(server, db) == 0 || shard_results(server, db, campaign, index) == 0 {
        assert!(Instant::now() < deadline, "shard {index} wrote no result within 300 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `campaign` in the database is the whole plan once: four finished runs of shards 0..3 of 4,
/// each case of the plan planned by exactly one of them, and exactly one result on cpu for each.
fn assert_campaign_is_the_plan_once(server: &PgServer, db: &str, campaign: &str) {
    let runs = server.sql(
        db,
        &format!(
            "SELECT string_agg(shard_index || '/' || shard_count || ' ' || state, ',' ORDER BY shard_index) \
             FROM runs WHERE campaign = '{campaign}'"
        ),
    );
    assert_eq!(runs, "0/4 finished,1/4 finished,2/4 finished,3/4 finished", "campaign {campaign}'s runs");
    let rows = |sql: &str| -> Vec<(String, usize)> {
        let out = server.sql(db, &sql.replace("CAMPAIGN", campaign));
        out.lines()
            .map(|l| {
                let (key, n) = l.rsplit_once('|').unwrap();
                (key.to_string(), n.parse().unwrap())
            })
            .collect()
    };
    let planned = rows(
        "SELECT c.key, COUNT(*) FROM cases c JOIN runs u ON u.id = c.run_id WHERE u.campaign = 'CAMPAIGN' \
         GROUP BY c.key ORDER BY c.key",
    );
    let results = rows(
        "SELECT c.key || '|' || r.device, COUNT(*) FROM results r JOIN cases c ON c.id = r.case_id \
         JOIN runs u ON u.id = r.run_id WHERE u.campaign = 'CAMPAIGN' GROUP BY c.key, r.device ORDER BY 1",
    );
    let plan = fleet_plan();
    let once = |suffix: &str| -> Vec<(String, usize)> { plan.iter().map(|k| (format!("{k}{suffix}"), 1)).collect() };
    assert_eq!(planned, once(""), "every case of the plan planned by exactly one shard");
    assert_eq!(results, once("|cpu"), "every (case, target) of the plan stored exactly once");
}

#[test]
fn four_shards_at_once_into_postgres_store_the_plan_once_through_a_kill_and_a_restart() {
    let server = PgServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let url = server.create_database();
    let db = db_name(&url);

    // Four shards at once into one new database: they migrate it once, and together they hold
    // every (case, target) of the plan exactly once.
    let children: Vec<_> = (0..4).map(|i| shard(&url, tmp.path(), "at-once", i, "5")).collect();
    children.into_iter().for_each(|c| drop(finished(c)));
    assert_eq!(
        count(&server, db, "SELECT COUNT(*) FROM schema_version"),
        mlport::store::schema::latest_version() as usize
    );
    assert_campaign_is_the_plan_once(&server, db, "at-once");

    // Shard 2 (5 cases, 1 s of timing each) is killed with SIGKILL after its first result while
    // the others run; running its index again continues its run.
    let mut children: Vec<_> = (0..4).map(|i| Some(shard(&url, tmp.path(), "killed", i, "1000"))).collect();
    wait_for_shard(&server, db, "killed", 2);
    let mut victim = children[2].take().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(victim.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    victim.wait().unwrap();
    let (kept, planned) = (shard_results(&server, db, "killed", 2), shard_planned(&server, db, "killed", 2));
    assert!(kept >= 1 && kept < planned, "killed mid-run: {kept} of {planned} results");
    children.into_iter().flatten().for_each(|c| drop(finished(c)));
    let log = finished(shard(&url, tmp.path(), "killed", 2, "1000"));
    assert!(log.contains("campaign `killed` shard 2/4 is run") && log.contains("continuing it"), "{log}");
    assert_campaign_is_the_plan_once(&server, db, "killed");

    // The server restarts while the four run: each reconnects and runs the interrupted
    // transaction again; nothing is lost or doubled.
    let children: Vec<_> = (0..4).map(|i| shard(&url, tmp.path(), "restarted", i, "1000")).collect();
    wait_for_shard(&server, db, "restarted", 2);
    server.restart();
    let (kept, planned) = (shard_results(&server, db, "restarted", 2), shard_planned(&server, db, "restarted", 2));
    assert!(kept < planned, "the restart came after shard 2's last case ({kept} of {planned})");
    let logs: Vec<String> = children.into_iter().map(finished).collect();
    // Shard 2 wrote before the restart and after it, so it saw its connection go.
    assert!(
        logs[2].contains("lost the connection to postgresql://mlport@127.0.0.1") && logs[2].contains("reconnected"),
        "{}",
        logs[2]
    );
    assert_campaign_is_the_plan_once(&server, db, "restarted");
    assert_each_case_once(&server, db);
}

#[test]
fn an_outage_longer_than_the_retry_budget_stops_the_run_and_resume_finishes_it() {
    let server = PgServer::start();
    let tmp = tempfile::tempdir().unwrap();

    // The server is gone longer than the retry budget: the run stops with the error, its
    // finished cases kept; once the server is back, --resume runs the rest.
    let url = server.create_database();
    let db = db_name(&url);
    let child = numpy_run(&url, tmp.path(), &[("MLPORT_DB_RETRY_SECS", "2")]);
    wait_for_results(&server, db, 10);
    let planned = count(&server, db, "SELECT COUNT(*) FROM cases");
    server.stop();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(log.contains("gave up reconnecting after 2 s"), "{log}");
    assert!(
        log.contains(&format!("error: {}", url.replace(":mlport-test-pw", ""))),
        "the error names the store: {log}"
    );
    assert!(
        log.contains("stopped: the store is unreachable")
            && log.contains("could not reconnect within 2 s (MLPORT_DB_RETRY_SECS)")
            && log.contains("finish the run with `mlport run --resume"),
        "the error says what happened and how to finish the run: {log}"
    );
    server.start_again();
    let kept = count(&server, db, "SELECT COUNT(*) FROM results");
    assert!(kept >= 10 && kept < planned, "{kept} of {planned} kept");
    mlport().current_dir(tmp.path()).args(["run", "--resume", "latest", "--db", &url]).assert().success();
    assert_eq!(count(&server, db, "SELECT COUNT(*) FROM results"), planned);
    assert_each_case_once(&server, db);
}

#[test]
fn bad_stores_are_clear_errors_that_write_nothing() {
    let server = PgServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let run = |db: &str| {
        mlport()
            .current_dir(tmp.path())
            .args(["run", "--device", "cpu", "--framework", "numpy", "--catalogue"])
            .arg(common::fixture("small"))
            .args(["--db", db])
            .assert()
    };

    // Not PostgreSQL, or not a URL at all: a usage error naming the value, password hidden.
    run("mysql://root:hunter2@localhost/results").code(2).stderr(
        predicate::str::contains("`mysql://root:***@localhost/results` is not a PostgreSQL URL")
            .and(predicate::str::contains("postgresql://USER@HOST:PORT/DB"))
            .and(predicate::str::contains("hunter2").not()),
    );
    run("postgresql://ann@127.0.0.1:notaport/db")
        .code(2)
        .stderr(predicate::str::contains("is not a valid PostgreSQL URL"));
    mlport()
        .current_dir(tmp.path())
        .arg("runs")
        .env("MLPORT_DB", "sqlserver://x/y")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`sqlserver://x/y` is not a PostgreSQL URL"));

    // A server that is not there, a wrong password, a database that does not exist.
    let nobody = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port();
    run(&format!("postgresql://mlport:pw@127.0.0.1:{nobody}/x")).code(1).stderr(predicate::str::contains(format!(
        "postgresql://mlport@127.0.0.1:{nobody}/x: cannot connect: no PostgreSQL server answers at 127.0.0.1:{nobody}"
    )));
    let url = server.create_database();
    let db = db_name(&url);
    run(&server.url_with_password(db, "wrong")).code(1).stderr(
        predicate::str::contains("cannot connect: the server refused user `mlport`: check the user and the password")
            .and(predicate::str::contains("wrong").not()),
    );
    run(&server.url("nosuchdb"))
        .code(1)
        .stderr(predicate::str::contains("the server has no database `nosuchdb`: create it (createdb"));
    assert_eq!(server.sql(db, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"), "0");

    // A database with someone else's tables, and one with a meta table that is not mlport's.
    server.sql(db, "CREATE TABLE photos (id integer); INSERT INTO photos VALUES (1)");
    let foreign = format!(
        "postgresql://mlport@127.0.0.1:{}/{db} is a PostgreSQL database but not an mlport store",
        server.port()
    );
    run(&url).code(1).stderr(predicate::str::contains(foreign.clone()).and(predicate::str::contains("createdb")));
    mlport().args(["report", "--db", &url]).assert().code(1).stderr(predicate::str::contains(foreign.clone()));
    let other = server.create_database();
    server.sql(
        db_name(&other),
        "CREATE TABLE meta (key text, value text); CREATE TABLE schema_version (version bigint); \
         INSERT INTO meta VALUES ('application', 'someone-else'); INSERT INTO schema_version VALUES (1)",
    );
    run(&other).code(1).stderr(predicate::str::contains("but not an mlport store"));
    assert_eq!(
        server.sql(
            db,
            "SELECT string_agg(table_name::text, ',') FROM information_schema.tables WHERE table_schema = 'public'"
        ),
        "photos",
        "the foreign database is untouched"
    );
    assert_eq!(server.sql(db_name(&other), "SELECT version FROM schema_version"), "1");

    // A reader never turns an empty database into a store.
    let empty = server.create_database();
    mlport().args(["runs", "--db", &empty]).assert().code(1).stderr(predicate::str::contains("the database is empty"));
    assert_eq!(
        server.sql(db_name(&empty), "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"),
        "0"
    );

    // A store from a newer mlport.
    let newer = server.create_database();
    drop(mlport::store::Store::open_at(&mlport::store::Location::parse(&newer).unwrap()).unwrap());
    server.sql(
        db_name(&newer),
        &format!(
            "INSERT INTO schema_version (version, name, applied_at) VALUES ({}, 'future', 'x')",
            mlport::store::schema::latest_version() + 1
        ),
    );
    run(&newer).code(1).stderr(predicate::str::contains(format!(
        "has schema version {}, newer than this mlport supports",
        mlport::store::schema::latest_version() + 1
    )));
    assert_eq!(server.sql(db_name(&newer), "SELECT COUNT(*) FROM runs"), "0");

    // None of it left a run folder behind.
    assert!(!tmp.path().join(".mlport").exists(), "a refused store must leave no .mlport folder");
}

/// Shard `index` of 4 of `campaign`'s planned cases and stored results, and whether each of its
/// planned cases has exactly one result on cpu.
fn shard_is_whole_once(server: &PgServer, db: &str, campaign: &str, index: u32) {
    let planned = shard_planned(server, db, campaign, index);
    assert!(planned > 0, "shard {index} plans cases");
    assert_eq!(shard_results(server, db, campaign, index), planned, "shard {index}: one result per planned case");
    assert_each_case_once(server, db);
}

#[test]
fn a_server_stopped_for_30_s_mid_run_is_waited_for_and_the_run_stores_each_case_once() {
    let server = PgServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let url = server.create_database();
    let db = db_name(&url);
    // Shard 2 of 4 (5 cases, 1 s of timing each); the server goes away for 30 s after its first
    // result, within the default 60 s of reconnecting.
    let child = shard(&url, tmp.path(), "paused", 2, "1000");
    wait_for_shard(&server, db, "paused", 2);
    server.stop();
    let stopped = Instant::now();
    std::thread::sleep(Duration::from_secs(30));
    server.start_again();
    let log = finished(child);
    let waited: f64 = log
        .split("reconnected to postgresql://mlport@127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(" after ").nth(1))
        .and_then(|rest| rest.split(" s;").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the run says it reconnected: {log}"));
    assert!(log.contains("lost the connection") && waited >= 29.0, "{log}");
    assert!(waited <= stopped.elapsed().as_secs_f64() + 5.0, "{waited} s: {log}");
    assert_eq!(server.sql(db, "SELECT state FROM runs"), "finished");
    shard_is_whole_once(&server, db, "paused", 2);
}

#[test]
fn a_second_process_continuing_a_running_shard_is_refused_naming_the_first() {
    let server = PgServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("machine-a"), tmp.path().join("machine-b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let url = server.create_database();
    let db = db_name(&url);
    // The same shard from two folders (each its own run lock file, as on two machines): the
    // second finds the first's run and would continue it, but the run is claimed in the store.
    let first = shard(&url, &a, "twice", 2, "1000");
    wait_for_shard(&server, db, "twice", 2);
    let second = shard(&url, &b, "twice", 2, "1000").wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{log}");
    assert!(
        log.contains("run 1 is being executed by another mlport process")
            && log.contains(&format!("mlport on {} pid {}", mlport::sysinfo::host(), first.id())),
        "the refusal names the process that runs it: {log}"
    );
    drop(finished(first));
    assert_eq!(count(&server, db, "SELECT COUNT(*) FROM runs"), 1);
    shard_is_whole_once(&server, db, "twice", 2);
    // Once the first has ended, the shard can be run again: it is complete.
    let log = finished(shard(&url, &b, "twice", 2, "1000"));
    assert!(log.contains("already complete"), "{log}");
}
