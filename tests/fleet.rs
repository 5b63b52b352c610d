//! Fleets on one machine: `run --shard I/N` and `--campaign`, with real NumPy workers on a
//! small catalogue (tests/fixtures/fleet) and a real SQLite store; bad shard values are
//! usage errors that write nothing.

mod common;

use clap::Parser;
use common::mlport;
use predicates::prelude::*;

#[test]
fn bad_shards_are_usage_errors_naming_what_to_fix_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("bad.db");
    for (value, says) in [
        ("5/4", "shard index 5 is not below the count 4"),
        ("0/0", "the shard count must be at least 1"),
        ("x/2", "`x` in `x/2` is not a shard index"),
        ("3", "`3` is not INDEX/COUNT"),
        // A negative index is the parser's to name, not taken for an unknown option.
        ("-1/2", "`-1` in `-1/2` is not a shard index"),
        ("1/-2", "`-2` in `1/-2` is not a shard count"),
    ] {
        mlport()
            .args(["run", "--campaign", "c", "--shard", value, "--db"])
            .arg(&db)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("JOB_COMPLETION_INDEX")
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--shard").and(predicate::str::contains(says)));
    }
    mlport()
        .args(["run", "--shards", "0", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("at least 1"));
    mlport()
        .args(["run", "--campaign", "a@b", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds `..` or `@`"));
    // --shard without a campaign is a usage error (exit 2); a Kubernetes index without a
    // count comes from the environment, an error (exit 1); both before the store.
    mlport()
        .args(["run", "--shard", "1/2", "--catalogue"])
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(&db)
        .env_remove("MLPORT_CAMPAIGN")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("shard 1/2 (from --shard) needs --campaign NAME"));
    mlport()
        .args(["run", "--campaign", "c", "--catalogue"])
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(&db)
        .env("JOB_COMPLETION_INDEX", "2")
        .env_remove("MLPORT_SHARDS")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("JOB_COMPLETION_INDEX=2").and(predicate::str::contains("MLPORT_SHARDS")));
    mlport()
        .args(["run", "--campaign", "c", "--shard", "0/4", "--catalogue"])
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(&db)
        .env("SLURM_ARRAY_TASK_ID", "2")
        .env("SLURM_ARRAY_TASK_COUNT", "4")
        .env_remove("JOB_COMPLETION_INDEX")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--shard gives shard 0/4 but the Slurm job array"));
    assert!(!db.exists(), "nothing was written");
}

/// `mlport run` of the fleet catalogue on cpu into `db` (5 ms of timing per case unless `extra`
/// says otherwise), with `extra` arguments; the run's stderr.
fn run_fleet(db: &std::path::Path, extra: &[&str]) -> String {
    let budget: &[&str] = if extra.contains(&"--budget-ms") { &[] } else { &["--budget-ms", "5"] };
    let out = mlport()
        .args(["run", "--device", "cpu"])
        .args(budget)
        .arg("--catalogue")
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(db)
        .arg("--python")
        .arg(common::python())
        .args(extra)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("MLPORT_CAMPAIGN")
        .env_remove("MLPORT_SHARDS")
        .env_remove("MLPORT_MACHINE")
        .assert()
        .success()
        .get_output()
        .clone();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_campaigns_shards_cover_the_plan_once_and_report_like_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("fleet.db");
    run_fleet(&db, &["--machine", "box-b"]);
    let whole: serde_json::Value = serde_json::from_str(&common::stdout(
        mlport().args(["report", "--run", "1", "--format", "json", "--db"]).arg(&db),
    ))
    .unwrap();
    for i in 0..4 {
        let log = run_fleet(&db, &["--campaign", "c", "--machine", "box-a", "--shard", &format!("{i}/4")]);
        assert!(log.contains(&format!("campaign `c`, shard {i}/4 (--shard)")), "{log}");
    }
    // The same shard again continues its run: nothing added.
    let log = run_fleet(&db, &["--campaign", "c", "--machine", "box-a", "--shard", "2/4"]);
    assert!(
        log.contains("campaign `c` shard 2/4 is run 4: continuing it") && log.contains("already complete"),
        "{log}"
    );
    // Another count for the same campaign and machine is refused.
    mlport()
        .args(["run", "--campaign", "c", "--machine", "box-a", "--shard", "0/2", "--catalogue"])
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is split in 4 shards"));

    let store = mlport::store::Store::open(&db).unwrap();
    let shards = store.campaign_runs("c").unwrap();
    assert_eq!(shards.len(), 4);
    let mut keys = std::collections::HashMap::new();
    for r in &shards {
        for x in store.results(r.id).unwrap() {
            *keys.entry((x.result.case_key.clone(), x.result.device.to_string())).or_insert(0) += 1;
        }
    }
    let planned: std::collections::HashMap<(String, String), i32> =
        store.results(1).unwrap().into_iter().map(|x| ((x.result.case_key, x.result.device.to_string()), 1)).collect();
    assert_eq!(keys, planned, "every (case, target) of the plan exactly once across the shards");
    // Balance over this catalogue, as tests/fixtures/fleet/numpy.toml says: 2, 3, 4, 3 functions.
    let mut per_shard: Vec<(u32, usize)> =
        shards.iter().map(|r| (r.origin.shard.unwrap().index, store.functions(r.id).unwrap().len())).collect();
    per_shard.sort();
    assert_eq!(per_shard, [(0, 2), (1, 3), (2, 4), (3, 3)]);
    drop(store);

    // The campaign report: box-a's shards give the unsharded run's statuses (box-b is not in it).
    let rep: serde_json::Value = serde_json::from_str(&common::stdout(
        mlport().args(["report", "--campaign", "c", "--format", "json", "--db"]).arg(&db),
    ))
    .unwrap();
    assert_eq!(rep["format"], "mlport.campaign");
    let machines = rep["machines"].as_array().unwrap();
    assert_eq!(machines.len(), 1);
    assert_eq!((machines[0]["machine"].as_str(), machines[0]["shard_count"].as_u64()), (Some("box-a"), Some(4)));
    assert_eq!(common::statuses(&machines[0]["targets"]), common::statuses(&whole["targets"]));
    assert!(common::statuses(&whole["targets"]).values().any(|s| s == "\"partial\""), "svd float16 fails: {whole:#}");

    // box-b joins the campaign: two machine groups, and a slowdown across them says so.
    run_fleet(&db, &["--campaign", "c", "--machine", "box-b"]);
    let table = common::stdout(mlport().args(["report", "--campaign", "c", "--db"]).arg(&db));
    assert!(table.contains("box-a") && table.contains("box-b") && table.contains("shards 4 of 4"), "{table}");
    assert!(table.contains("own reference device (box-a cpu, box-b cpu)"), "{table}");
    let sd = common::stdout(
        mlport().args(["report", "--campaign", "c", "--slowdown", "cpu@box-a..cpu@box-b", "--db"]).arg(&db),
    );
    assert!(sd.contains("Across machines: A is on box-a, B on box-b"), "{sd}");
    mlport()
        .args(["report", "--campaign", "c", "--dtypes", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("spans machines box-a, box-b"));
    mlport().args(["report", "--campaign", "c", "--dtypes", "--machine", "box-a", "--db"]).arg(&db).assert().success();
    mlport()
        .args(["report", "--campaign", "nope", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no run belongs to campaign `nope` (campaigns in this store: c)"));
}

#[test]
fn a_shard_killed_mid_run_is_continued_by_its_rerun_never_doubled() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("kill.db");
    let args = ["--campaign", "k", "--shard", "2/4"];
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mlport"))
        .args(["run", "--device", "cpu", "--catalogue"])
        .arg(common::fixture("fleet"))
        .arg("--db")
        .arg(&db)
        .arg("--python")
        .arg(common::python())
        .args(args)
        .args(["--budget-ms", "400"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the first result, then kill -9.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let recorded = loop {
        let n = mlport::store::Store::open_read_only(&db)
            .ok()
            .and_then(|s| s.campaign_runs("k").ok())
            .and_then(|r| r.first().map(|r| (r.results, r.cases_planned)));
        if let Some((done, planned)) = n.filter(|(done, _)| *done > 0) {
            break (done, planned);
        }
        assert!(std::time::Instant::now() < deadline, "no result within 300 s");
        assert!(child.try_wait().unwrap().is_none(), "the shard ended before a result was seen");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    assert!(recorded.0 < recorded.1, "killed mid-run: {recorded:?}");
    // The rerun has the shard's switches (another budget would be refused).
    let log = run_fleet(&db, &[&args[..], &["--budget-ms", "400"]].concat());
    assert!(log.contains("continuing it"), "{log}");
    let store = mlport::store::Store::open(&db).unwrap();
    let runs = store.campaign_runs("k").unwrap();
    assert_eq!(runs.len(), 1, "the rerun continued the shard's run");
    let rows = store.results(runs[0].id).unwrap();
    let keys: std::collections::HashSet<&str> = rows.iter().map(|r| r.result.case_key.as_str()).collect();
    assert_eq!(keys.len(), rows.len(), "no case twice");
    assert_eq!(rows.len() as u64, runs[0].cases_planned, "every planned case once");
    assert_eq!(runs[0].state.as_str(), "finished");
}

/// The words of the `mlport run` line of the Slurm script and the Kubernetes manifest's
/// command + args, each variable written `$NAME` (`"$NAME"` in the shell, `$(NAME)` in Kubernetes).
fn deploy_commands() -> (Vec<String>, Vec<String>, String, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("deploy/slurm/mlport-array.sbatch")).unwrap();
    let manifest = std::fs::read_to_string(root.join("deploy/k8s/mlport-indexed-job.yaml")).unwrap();
    let exec = script.lines().find(|l| l.starts_with("exec ")).expect("the script execs mlport");
    let slurm: Vec<String> = exec
        .split_whitespace()
        .skip(1)
        .filter(|w| !w.starts_with("${MLPORT_RUN_ARGS"))
        .map(|w| w.trim_matches('"').to_string())
        .map(|w| if w.starts_with("${MLPORT:-") { "mlport".into() } else { w })
        .collect();
    // The manifest writes command and args as flow sequences, which are JSON.
    let flow = |key: &str| -> Vec<String> {
        let line = manifest.lines().find(|l| l.trim_start().starts_with(key)).unwrap_or_else(|| panic!("no {key}"));
        serde_json::from_str(line.trim_start().trim_start_matches(key).trim()).unwrap()
    };
    let k8s: Vec<String> = flow("command:")
        .into_iter()
        .chain(flow("args:"))
        .map(|w| if w.starts_with("$(") && w.ends_with(')') { format!("${}", &w[2..w.len() - 1]) } else { w })
        .collect();
    (slurm, k8s, script, manifest)
}

#[test]
fn the_kubernetes_manifest_runs_what_the_slurm_script_runs() {
    let (slurm, k8s, script, manifest) = deploy_commands();
    assert_eq!(slurm, k8s);
    assert_eq!(slurm[..2], ["mlport", "run"]);
    assert!(slurm.windows(2).any(|w| w == ["--db", "$MLPORT_DB"]), "{slurm:?}");
    // The variables the command names are set by both: the script exports them, the manifest's env lists them.
    for var in slurm.iter().filter_map(|w| w.strip_prefix('$')) {
        assert!(manifest.contains(&format!("- name: {var}\n")), "the manifest sets {var}");
        assert!(
            script.contains(&format!("{var}=")) || script.contains(&format!("${{{var}:?")),
            "the script sets {var}"
        );
    }
    // The shard comes from each engine: the array's range from 0, the Indexed Job with MLPORT_SHARDS = completions.
    assert!(script.contains("#SBATCH --array=0-3"));
    assert!(manifest.contains("completionMode: Indexed") && manifest.contains("completions: 4"));
    assert!(manifest.contains("- name: MLPORT_SHARDS\n              value: \"4\""));
    // mlport parses the command line both run (everything but the store is checked before it is opened).
    let args: Vec<String> = slurm[1..]
        .iter()
        .map(|w| match w.as_str() {
            "$MLPORT_CAMPAIGN" => "nightly".to_string(),
            "$MLPORT_MACHINE" => "pool".to_string(),
            "$MLPORT_DB" => "mlport.db".to_string(),
            w => w.to_string(),
        })
        .collect();
    let parsed = mlport::cli::Cli::try_parse_from(std::iter::once("mlport".to_string()).chain(args));
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}

/// The cells of `mlport runs`' row for run `id`.
fn runs_row(table: &str, id: i64) -> Vec<String> {
    let line =
        table.lines().find(|l| l.starts_with(&format!("│ {id} "))).unwrap_or_else(|| panic!("no run {id}:\n{table}"));
    line.trim_matches('│').split('┆').map(|c| c.trim().to_string()).collect()
}

#[test]
fn runs_lists_campaign_shard_and_machine_and_audit_reads_one_machine_of_a_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("c.db");
    run_fleet(&db, &["--campaign", "c", "--machine", "box-a", "--shard", "0/2"]);
    run_fleet(&db, &["--campaign", "c", "--machine", "box-a", "--shard", "1/2"]);
    run_fleet(&db, &["--campaign", "c", "--machine", "box-b"]);
    run_fleet(&db, &[]);
    let host = mlport::store::Store::open(&db).unwrap().run(4).unwrap().info.host;

    // runs: run, started, state, cases, results, campaign, shard, machine, ...
    let table = common::stdout(mlport().args(["runs", "--db"]).arg(&db));
    let header: Vec<String> =
        table.lines().nth(1).unwrap().trim_matches('│').split('┆').map(|c| c.trim().to_string()).collect();
    assert_eq!(header[5..8], ["campaign", "shard", "machine"], "{table}");
    let cells = |id| runs_row(&table, id)[5..8].to_vec();
    assert_eq!(cells(1), ["c", "0/2", &format!("box-a ({host})")]);
    assert_eq!(cells(2), ["c", "1/2", &format!("box-a ({host})")]);
    assert_eq!(cells(3), ["c", "0/1", &format!("box-b ({host})")]);
    assert_eq!(cells(4), ["", "", host.as_str()]);

    // audit --campaign: one machine's runs, its shards read together.
    let proj = tmp.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(
        proj.join("m.py"),
        "import numpy as np\nx = np.ones(3)\nnp.linalg.svd(x)\nnp.sum(x)\nnp.cumsum(x)\n",
    )
    .unwrap();
    let audit = |extra: &[&str]| {
        let mut c = mlport();
        c.arg("audit").arg(&proj).args(["--device", "cpu", "--db"]).arg(&db).args(extra);
        c
    };
    audit(&["--campaign", "c"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("spans machines box-a, box-b: name one (--machine NAME)"));
    let json = |machine: &str| -> serde_json::Value {
        serde_json::from_str(&common::stdout(&mut audit(&[
            "--campaign",
            "c",
            "--machine",
            machine,
            "--format",
            "json",
        ])))
        .unwrap()
    };
    let a = json("box-a");
    let mut runs: Vec<&str> = a["audit"]["runs"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    runs.sort();
    // The three functions lie in both of box-a's shards (a run consulted only if it has a status).
    let rows = a["audit"]["rows"].as_array().unwrap();
    let status_of = |rows: &[serde_json::Value], f: &str| {
        let r = rows.iter().find(|r| r["function"] == f).unwrap_or_else(|| panic!("no {f}"));
        (r["status"].as_str().map(String::from), r["run"].as_str().map(String::from))
    };
    let unsharded: serde_json::Value = serde_json::from_str(&common::stdout(
        mlport().args(["report", "--run", "4", "--format", "json", "--db"]).arg(&db),
    ))
    .unwrap();
    let whole = common::statuses(&unsharded["targets"]);
    for f in ["numpy.linalg.svd", "numpy.sum", "numpy.cumsum"] {
        let (status, run) = status_of(rows, f);
        assert_eq!(Some(&format!("{:?}", status.unwrap())), whole.get(&format!("\"numpy\"/\"cpu\"/\"{f}\"")), "{f}");
        assert!(matches!(run.as_deref(), Some("run 1" | "run 2")), "{f} from box-a's shards: {run:?}");
    }
    assert!(runs.iter().all(|r| ["run 1", "run 2"].contains(r)) && !runs.is_empty(), "{runs:?}");
    let b = json("box-b");
    assert_eq!(b["audit"]["runs"], serde_json::json!(["run 3"]));
    assert_eq!(status_of(b["audit"]["rows"].as_array().unwrap(), "numpy.linalg.svd").1.as_deref(), Some("run 3"));
    audit(&["--campaign", "c", "--run", "1"]).assert().code(2);
    audit(&["--machine", "box-a"]).assert().code(2);
    audit(&["--campaign", "nope"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no run belongs to campaign `nope`"));
}

#[test]
fn an_empty_shard_records_a_finished_run_and_the_campaign_is_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("empty.db");
    // numpy.flip alone is in shard 0 of 4 (tests/fixtures/fleet/numpy.toml): shards 1..3 hold nothing.
    for i in 0..4 {
        let log = run_fleet(&db, &["--campaign", "e", "--shard", &format!("{i}/4"), "--function", "numpy.flip"]);
        if i > 0 {
            assert!(log.contains(&format!("shard {i}/4 holds no function of this plan")), "{log}");
        }
    }
    // Again: the empty shard is complete, and no second run is added.
    let log = run_fleet(&db, &["--campaign", "e", "--shard", "3/4", "--function", "numpy.flip"]);
    assert!(log.contains("already complete"), "{log}");
    let store = mlport::store::Store::open(&db).unwrap();
    let runs = store.campaign_runs("e").unwrap();
    let shards: Vec<(String, u64, &str)> =
        runs.iter().map(|r| (r.origin.shard.unwrap().to_string(), r.cases_planned, r.state.as_str())).collect();
    assert_eq!(
        shards,
        [
            ("0/4".into(), 1, "finished"),
            ("1/4".into(), 0, "finished"),
            ("2/4".into(), 0, "finished"),
            ("3/4".into(), 0, "finished")
        ]
    );
    drop(store);
    let rep: serde_json::Value = serde_json::from_str(&common::stdout(
        mlport().args(["report", "--campaign", "e", "--format", "json", "--db"]).arg(&db),
    ))
    .unwrap();
    let m = &rep["machines"][0];
    assert_eq!(
        (m["shard_count"].as_u64(), m["missing_shards"].as_array().map(Vec::len)),
        (Some(4), Some(0)),
        "{rep:#}"
    );
    let table = common::stdout(mlport().args(["report", "--campaign", "e", "--db"]).arg(&db));
    assert!(table.contains("shards 4 of 4"), "{table}");
}

#[test]
fn a_later_shard_with_other_result_changing_switches_is_refused_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("switches.db");
    // numpy.flip alone: shard 0 runs it, shard 1 is empty (no worker needed to be refused or not).
    let base = ["--campaign", "s", "--machine", "box", "--function", "numpy.flip"];
    run_fleet(&db, &[&base[..], &["--shard", "0/4", "--threads", "1"]].concat());
    let refused = |extra: &[&str], says: &[&str]| {
        let budget: &[&str] = if extra.contains(&"--budget-ms") { &[] } else { &["--budget-ms", "5"] };
        let out = mlport()
            .args(["run", "--device", "cpu", "--catalogue"])
            .arg(common::fixture("fleet"))
            .arg("--db")
            .arg(&db)
            .args(base)
            .args(budget)
            .args(extra)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("JOB_COMPLETION_INDEX")
            .assert()
            .code(1)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&out);
        for s in says {
            assert!(err.contains(s), "{extra:?}: `{s}` not in {err}");
        }
    };
    // `--jobs 1` without `--threads` is the serial path with each framework's own thread count
    // ("unset"); the default `--jobs` sets one thread per pinned worker, which would agree here.
    refused(
        &["--shard", "1/4", "--jobs", "1"],
        &["run 1 (shard 0/4) ran with --threads 1, this shard with --threads unset"],
    );
    refused(
        &["--shard", "1/4", "--threads", "1", "--budget-ms", "50"],
        &["--budget-ms 5", "--budget-ms 50", "campaign `s` (machine `box`)"],
    );
    refused(&["--shard", "2/4", "--threads", "1", "--jax-x64"], &["--jax-x64 off", "--jax-x64 on"]);
    refused(&["--shard", "3/4", "--threads", "1", "--modes", "eager,compiled"], &["--modes eager,compiled"]);
    refused(&["--shard", "1/4", "--threads", "1", "--timeout", "5"], &["--timeout 60", "--timeout 5"]);
    // The same shard again with other switches is refused too (its run would mix them).
    refused(&["--shard", "0/4", "--threads", "2"], &["--threads 2"]);
    let store = mlport::store::Store::open(&db).unwrap();
    assert_eq!(store.runs().unwrap().len(), 1, "nothing was written");
    drop(store);
    // The campaign's own switches: accepted.
    run_fleet(&db, &[&base[..], &["--shard", "1/4", "--threads", "1"]].concat());
    // Another machine may run with other switches (it is another group of the report).
    run_fleet(&db, &["--campaign", "s", "--machine", "other", "--function", "numpy.flip", "--shard", "1/4"]);
}
