//! A real Slurm cluster of one node on localhost, started by this test: Debian's `slurm-wlm`
//! and `munge` (installed with apt-get when missing and we are root, as `.ci/run` does), a
//! `slurm.conf` of its own in a temporary folder (no cgroups, no accounting, free ports, its
//! own state, spool, pid and log files), its own `munged`, `slurmctld` and `slurmd`. The
//! shipped `deploy/slurm/mlport-array.sbatch` runs 4 shards of a small catalogue (real NumPy
//! workers) into the test's own PostgreSQL server; the campaign must report what one unsharded
//! run of the same plan reports, with every planned (case, target) stored exactly once.
//! Everything is stopped and removed at the end, also when the test panics.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::postgres::PgServer;
use mlport::store::{Location, Store};

/// The cluster's name: the script's default `--machine` (`SLURM_CLUSTER_NAME`).
const CLUSTER: &str = "mlporttest";
/// The programs the test needs, with the Debian package that has each.
const PROGRAMS: [(&str, &str); 7] = [
    ("/usr/sbin/munged", "munge"),
    ("/usr/sbin/slurmctld", "slurmctld"),
    ("/usr/sbin/slurmd", "slurmd"),
    ("/usr/bin/sbatch", "slurm-client"),
    ("/usr/bin/squeue", "slurm-client"),
    ("/usr/bin/sinfo", "slurm-client"),
    ("/usr/bin/scontrol", "slurm-client"),
];

/// A one-node Slurm cluster on 127.0.0.1 in a temporary folder; its daemons are children of
/// the test, stopped (and its jobs cancelled) on drop.
struct Slurm {
    dir: tempfile::TempDir,
    /// (name, process) of `munged`, `slurmctld`, `slurmd`, in start order.
    daemons: Vec<(&'static str, Child)>,
}

impl Slurm {
    /// Writes the configuration, starts the daemons and waits until the node is idle.
    fn start() -> Slurm {
        stop_orphans();
        let dir = tempfile::Builder::new().prefix("mlport-slurm-").tempdir().expect("a temporary folder");
        std::fs::write(dir.path().join("owner.pid"), std::process::id().to_string()).unwrap();
        let mut slurm = Slurm { dir, daemons: Vec::new() };
        let d = slurm.dir.path().to_path_buf();
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        // munge: a fresh 1024-byte key, readable by its owner only, and a socket of our own.
        let mut key = [0u8; 1024];
        getrandom::fill(&mut key).expect("random bytes");
        std::fs::write(d.join("munge.key"), key).unwrap();
        std::fs::set_permissions(d.join("munge.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let user = current_user();
        let node = hostname();
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let p = |name: &str| d.join(name).to_str().expect("a UTF-8 temporary path").to_string();
        let conf = format!(
            "# Written by tests/slurm.rs: one node on 127.0.0.1, no cgroups, no accounting.
ClusterName={CLUSTER}
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={slurmd_pid}
SlurmctldLogFile={ctld_log}
SlurmdLogFile={slurmd_log}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
NodeName={node} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
",
            sock = p("munge.sock"),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            slurmd_pid = p("slurmd.pid"),
            ctld_log = p("slurmctld.log"),
            slurmd_log = p("slurmd.log"),
        );
        std::fs::write(d.join("slurm.conf"), conf).unwrap();
        // -F: in the foreground, a child of the test; -f: a key in a world-writable /tmp is fine here.
        slurm.spawn(
            "munged",
            Command::new("/usr/sbin/munged").args(["-F", "-f"]).args([
                format!("--socket={}", p("munge.sock")),
                format!("--key-file={}", p("munge.key")),
                format!("--pid-file={}", p("munged.pid")),
                format!("--seed-file={}", p("munged.seed")),
                format!("--log-file={}", p("munged.log")),
            ]),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while !d.join("munge.sock").exists() {
            slurm.check_alive();
            assert!(Instant::now() < deadline, "munged made no socket in 30 s\n{}", slurm.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
        let conf_path = p("slurm.conf");
        slurm.spawn("slurmctld", Command::new("/usr/sbin/slurmctld").args(["-D", "-f", &conf_path]));
        slurm.spawn("slurmd", Command::new("/usr/sbin/slurmd").args(["-D", "-f", &conf_path, "-N", &node]));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = slurm.client("sinfo").args(["-h", "-N", "-o", "%N %t"]).output().expect("sinfo");
            let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if line == format!("{node} idle") {
                break;
            }
            slurm.check_alive();
            assert!(Instant::now() < deadline, "the node is not idle after 60 s (sinfo: `{line}`)\n{}", slurm.logs());
            std::thread::sleep(Duration::from_millis(200));
        }
        slurm
    }

    /// Starts a daemon (with this cluster's `SLURM_CONF`, which [`stop_orphans`] looks for),
    /// its output in `<name>.out`.
    fn spawn(&mut self, name: &'static str, cmd: &mut Command) {
        let out = std::fs::File::create(self.dir.path().join(format!("{name}.out"))).unwrap();
        let child = cmd
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        self.daemons.push((name, child));
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm client (`sbatch`, `squeue`, …) talking to this cluster.
    fn client(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf());
        c
    }

    /// Panics with the logs when a daemon has exited.
    fn check_alive(&mut self) {
        let dead: Vec<String> = self
            .daemons
            .iter_mut()
            .filter_map(|(name, c)| c.try_wait().unwrap().map(|s| format!("{name} exited ({s})")))
            .collect();
        assert!(dead.is_empty(), "{}\n{}", dead.join(", "), self.logs());
    }

    /// Every daemon's output and log file, for a failure message.
    fn logs(&self) -> String {
        let mut all = String::new();
        for name in ["munged.out", "munged.log", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"] {
            let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            all += &format!("--- {name} (last 30 lines)\n");
            for l in tail.into_iter().rev() {
                all += l;
                all += "\n";
            }
        }
        all
    }

    /// Waits until `squeue` lists no job (polling every 500 ms); panics after `limit`.
    fn wait_for_empty_queue(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let out = self.client("squeue").args(["-h", "-o", "%i %T"]).output().expect("squeue");
            assert!(out.status.success(), "squeue: {}", String::from_utf8_lossy(&out.stderr));
            let queue = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if queue.is_empty() {
                return;
            }
            self.check_alive();
            assert!(Instant::now() < deadline, "jobs still queued after {limit:?}:\n{queue}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // Cancel what still runs (its mlport processes too), then stop the daemons.
        if self.daemons.iter_mut().all(|(_, c)| matches!(c.try_wait(), Ok(None))) {
            let _ = self.client("scancel").arg(format!("--user={}", current_user())).output();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                let out = self.client("squeue").args(["-h", "-o", "%i"]).output();
                if out.map_or(true, |o| !o.status.success() || o.stdout.is_empty()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Stops the daemons of earlier test processes that died without dropping their [`Slurm`]
/// (a timeout, SIGKILL) and removes their folders: every `mlport-slurm-*` folder in the
/// temporary folder whose `owner.pid` names no running process. Its processes are those whose
/// environment holds `SLURM_CONF=<folder>/slurm.conf` (daemons, `slurmstepd`, the jobs), so
/// nothing else is touched.
fn stop_orphans() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for dir in entries.flatten().map(|e| e.path()) {
        let ours = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("mlport-slurm-"));
        let Some(owner) = ours.then(|| std::fs::read_to_string(dir.join("owner.pid")).ok()).flatten() else {
            continue;
        };
        if Path::new("/proc").join(owner.trim()).exists() {
            continue;
        }
        // The daemons, slurmstepd and the jobs' processes all carry SLURM_CONF=<dir>/slurm.conf.
        let mark = format!("SLURM_CONF={}", dir.join("slurm.conf").display());
        for proc in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) =
                proc.file_name().to_str().filter(|p| p.bytes().all(|b| b.is_ascii_digit())).map(String::from)
            else {
                continue;
            };
            let environ = std::fs::read(proc.path().join("environ")).unwrap_or_default();
            if environ.split(|b| *b == 0).any(|v| v == mark.as_bytes()) {
                let _ = Command::new("kill").args(["-KILL", &pid]).output();
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Whether Slurm and munge are installed; when not and we are root on a Debian-like system,
/// installs `slurm-wlm` and `munge` with apt-get (as `.ci/run` does). `Err` says why the test
/// cannot run (only: missing, and not root to install them).
fn ensure_installed() -> Result<(), String> {
    let missing = || PROGRAMS.iter().filter(|(p, _)| !Path::new(p).exists()).map(|(_, pkg)| *pkg).collect::<Vec<_>>();
    if missing().is_empty() {
        return Ok(());
    }
    common::apt_install(&["slurm-wlm", "munge"])
        .map_err(|why| format!("Slurm is not installed ({} missing) and {why}", missing().join(", ")))?;
    assert!(missing().is_empty(), "apt-get install slurm-wlm munge left these missing: {:?}", missing());
    Ok(())
}

/// `id ARG`'s answer (`-u`: the effective user id, `-un`: its name).
fn id(arg: &str) -> String {
    let out = Command::new("id").arg(arg).output().expect("id");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn current_user() -> String {
    id("-un")
}

/// The short host name: `slurmctld` runs only where `SlurmctldHost` names this host.
fn hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
    name.trim().split('.').next().unwrap().to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).expect("a free port").port()
}

#[test]
fn the_shipped_job_array_runs_four_shards_into_postgresql_like_one_run() {
    if let Err(why) = ensure_installed() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    // Seconds each phase took, printed at the end (the test's figure in docs/fleet.md).
    let mut phases: Vec<(&str, f64)> = Vec::new();
    let mut clock = Instant::now();
    let mut lap = |name: &'static str| {
        phases.push((name, clock.elapsed().as_secs_f64()));
        clock = Instant::now();
    };
    let tmp = tempfile::tempdir().unwrap();
    let pg = PgServer::start();
    let url = pg.create_database();
    lap("PostgreSQL up");
    let mlport_bin = assert_cmd::cargo::cargo_bin("mlport");
    let python = common::python();
    let catalogue = common::fixture("fleet");
    let run_args =
        format!("--device cpu --budget-ms 5 --catalogue {} --python {}", catalogue.display(), python.display());
    // The script splits MLPORT_RUN_ARGS on spaces.
    assert_eq!(run_args.split_whitespace().count(), 8, "paths without spaces: {run_args}");

    // One unsharded run of the same plan: run 1.
    common::mlport()
        .current_dir(tmp.path())
        .arg("run")
        .args(run_args.split_whitespace())
        .args(["--db", &url])
        .env_remove("MLPORT_CAMPAIGN")
        .env_remove("MLPORT_MACHINE")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .assert()
        .success();
    let whole: serde_json::Value = serde_json::from_str(&common::stdout(
        common::mlport().args(["report", "--run", "1", "--format", "json", "--db", &url]),
    ))
    .unwrap();
    lap("unsharded run");

    let mut slurm = Slurm::start();
    lap("Slurm up");
    // The shipped script, as a user submits it: its own #SBATCH lines (--array=0-3, its output
    // files in the submission folder), the store and the run's options from the environment.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm/mlport-array.sbatch");
    let out = slurm
        .client("sbatch")
        .arg("--parsable")
        .arg(&script)
        .current_dir(tmp.path())
        .env("MLPORT_DB", &url)
        .env("MLPORT", &mlport_bin)
        .env("MLPORT_RUN_ARGS", &run_args)
        .env("NO_COLOR", "1")
        .env_remove("MLPORT_CAMPAIGN")
        .env_remove("MLPORT_MACHINE")
        .env_remove("MLPORT_SHARDS")
        .output()
        .expect("sbatch");
    assert!(out.status.success(), "sbatch: {}\n{}", String::from_utf8_lossy(&out.stderr), slurm.logs());
    let job: u64 = String::from_utf8_lossy(&out.stdout).trim().split(';').next().unwrap().parse().expect("a job id");
    slurm.wait_for_empty_queue(Duration::from_secs(240));
    lap("job array");

    // Every task completed with exit code 0 (scontrol keeps finished jobs for MinJobAge).
    let out = slurm.client("scontrol").args(["show", "job", "-o", &job.to_string()]).output().expect("scontrol");
    let tasks = String::from_utf8_lossy(&out.stdout).into_owned();
    let task_logs = || {
        (0..4)
            .map(|i| {
                let f = tmp.path().join(format!("mlport-{job}_{i}.out"));
                format!("--- {}\n{}", f.display(), std::fs::read_to_string(&f).unwrap_or_default())
            })
            .collect::<String>()
    };
    let states: Vec<&str> =
        tasks.lines().map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("JobState=")).unwrap_or("?")).collect();
    assert_eq!(states, ["COMPLETED"; 4], "{tasks}\n{}", task_logs());
    for i in 0..4 {
        let log = std::fs::read_to_string(tmp.path().join(format!("mlport-{job}_{i}.out"))).unwrap();
        assert!(
            log.contains(&format!("campaign `slurm-{job}`, shard {i}/4 (the Slurm job array (SLURM_ARRAY_TASK_ID))")),
            "task {i}:\n{log}"
        );
    }

    // The campaign (the script's default name) holds 4 shards of machine `mlporttest`, and
    // every planned (case, target) exactly once across them.
    let campaign = format!("slurm-{job}");
    let store = Store::open_at(&Location::parse(&url).unwrap()).unwrap();
    let runs = store.campaign_runs(&campaign).unwrap();
    let mut shards: Vec<(u32, u32)> =
        runs.iter().map(|r| r.origin.shard.map(|s| (s.index, s.count)).unwrap()).collect();
    shards.sort();
    assert_eq!(shards, [(0, 4), (1, 4), (2, 4), (3, 4)]);
    assert!(runs.iter().all(|r| r.origin.machine.as_deref() == Some(CLUSTER)), "{runs:?}");
    let mut stored: HashMap<(String, String), u32> = HashMap::new();
    for r in &runs {
        for x in store.results(r.id).unwrap() {
            *stored.entry((x.result.case_key.clone(), x.result.device.to_string())).or_default() += 1;
        }
    }
    let planned: HashMap<(String, String), u32> =
        store.results(1).unwrap().into_iter().map(|x| ((x.result.case_key, x.result.device.to_string()), 1)).collect();
    assert!(!planned.is_empty());
    assert_eq!(stored, planned, "every (case, target) of the plan exactly once across the shards");
    drop(store);

    let rep: serde_json::Value = serde_json::from_str(&common::stdout(common::mlport().args([
        "report",
        "--campaign",
        &campaign,
        "--format",
        "json",
        "--db",
        &url,
    ])))
    .unwrap();
    let machines = rep["machines"].as_array().unwrap();
    assert_eq!(machines.len(), 1, "{rep:#}");
    assert_eq!(machines[0]["machine"], CLUSTER);
    assert_eq!(machines[0]["shard_count"], 4);
    let expected = common::statuses(&whole["targets"]);
    assert_eq!(common::statuses(&machines[0]["targets"]), expected);
    assert!(expected.values().any(|s| s == "\"partial\""), "the catalogue has a partial function: {whole:#}");
    lap("checks");
    drop(slurm);
    lap("Slurm stopped");
    drop(pg);
    lap("PostgreSQL stopped");
    let total: f64 = phases.iter().map(|(_, s)| s).sum();
    let each: Vec<String> = phases.iter().map(|(n, s)| format!("{n} {s:.1} s")).collect();
    eprintln!("Slurm test: {total:.1} s ({})", each.join(", "));
}
