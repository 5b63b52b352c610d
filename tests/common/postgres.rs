//! A real PostgreSQL server for tests and benchmarks, started by the test itself: Debian's
//! `postgresql` binaries (`/usr/lib/postgresql/<version>/bin`, or `pg_config --bindir`),
//! `initdb` into a temporary folder, `pg_ctl start` on a free localhost port, stopped (and its
//! folder removed) when the [`PgServer`] is dropped — also when the test panics.
//!
//! PostgreSQL refuses to run as root; as root the server runs as the system user
//! `mlport-test` (created with `useradd` when missing) through `runuser`.
//!
//! The superuser is `mlport` with the password [`PASSWORD`]; connections over TCP need it
//! (scram-sha-256), so a wrong password is refused as on a real server.
//!
//! Shared by `tests/*.rs` (through `common`) and `benches/store.rs` (`#[path]`), never copied.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The superuser's name.
pub const USER: &str = "mlport";
/// The superuser's password.
pub const PASSWORD: &str = "mlport-test-pw";
/// The unprivileged system user the server runs as when the tests run as root.
const SYSTEM_USER: &str = "mlport-test";

/// A running server in a temporary folder, stopped on drop.
pub struct PgServer {
    bin: PathBuf,
    /// The temporary folder: `data/` (the cluster), `log`, the socket.
    dir: tempfile::TempDir,
    port: u16,
    /// `Some(user)` when commands run as that user (we are root).
    run_as: Option<String>,
    databases: AtomicUsize,
}

impl PgServer {
    /// initdb + pg_ctl start on a free port on 127.0.0.1. Panics with what is missing when
    /// PostgreSQL is not installed (`.ci/run` installs Debian's `postgresql`).
    pub fn start() -> PgServer {
        let bin = bindir();
        stop_orphans(&bin);
        let run_as = is_root().then(|| {
            ensure_system_user();
            SYSTEM_USER.to_string()
        });
        let dir = tempfile::Builder::new().prefix("mlport-pg-").tempdir().expect("a temporary folder");
        let server = PgServer { bin, dir, port: free_port(), run_as, databases: AtomicUsize::new(0) };
        // Whose server this is, for `stop_orphans` when this process dies without dropping it.
        std::fs::write(server.dir.path().join("owner.pid"), std::process::id().to_string()).unwrap();
        let pwfile = server.dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if let Some(user) = &server.run_as {
            chown(server.dir.path(), user);
            chown(&pwfile, user);
        }
        let data = server.data_dir();
        server.pg(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                USER,
                "--pwfile",
                path_str(&pwfile),
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "-E",
                "UTF8",
                "--no-instructions",
                "--no-sync",
            ],
        );
        server.start_again();
        server
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgresql://mlport:PASSWORD@127.0.0.1:PORT/<db>`.
    pub fn url(&self, db: &str) -> String {
        format!("postgresql://{USER}:{PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// A URL with the wrong password.
    pub fn url_with_password(&self, db: &str, password: &str) -> String {
        format!("postgresql://{USER}:{password}@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a new, empty database and returns its URL.
    pub fn create_database(&self) -> String {
        let name = format!("t{}", self.databases.fetch_add(1, Ordering::SeqCst));
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// Runs SQL in `db` with `psql` (as the superuser, over the socket) and returns its
    /// unaligned output; panics with psql's stderr when it fails.
    pub fn sql(&self, db: &str, sql: &str) -> String {
        let port = self.port.to_string();
        let out = self.pg(
            "psql",
            &[
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                path_str(self.dir.path()),
                "-p",
                &port,
                "-U",
                USER,
                "-d",
                db,
                "-c",
                sql,
            ],
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `pg_ctl restart -m fast`: every connection is cut and the server comes back on the same
    /// port.
    pub fn restart(&self) {
        // -l: the new server's output must go to the log, not to pg_ctl's pipe (which the
        // server would then hold open, so reading pg_ctl's output would never end).
        let log = self.dir.path().join("log");
        self.pg(
            "pg_ctl",
            &["-D", path_str(&self.data_dir()), "-l", path_str(&log), "-m", "fast", "-w", "-t", "60", "restart"],
        );
    }

    /// Stops the server (`pg_ctl stop -m fast`) until [`PgServer::start_again`].
    pub fn stop(&self) {
        self.pg("pg_ctl", &["-D", path_str(&self.data_dir()), "-m", "fast", "-w", "-t", "60", "stop"]);
    }

    /// Starts the stopped server again on its port.
    pub fn start_again(&self) {
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -c port={} -c unix_socket_directories={} -c fsync=off \
             -c max_connections=100",
            self.port,
            path_str(self.dir.path())
        );
        let log = self.dir.path().join("log");
        self.pg(
            "pg_ctl",
            &["-D", path_str(&self.data_dir()), "-l", path_str(&log), "-o", &opts, "-w", "-t", "60", "start"],
        );
        // pg_ctl -w waits for the server to accept connections; check TCP too.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "PostgreSQL does not listen on {}; log:\n{}", self.port, self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of the server's programs (as the system user when we are root); panics with
    /// its output when it fails.
    fn pg(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        // The server's programs must not inherit a test's PG* settings.
        for var in ["PGPASSWORD", "PGUSER", "PGDATABASE", "PGHOST", "PGPORT"] {
            cmd.env_remove(var);
        }
        let out = cmd.args(args).current_dir(self.dir.path()).output().unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} failed ({}):\n{}{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        out
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.data_dir();
        let exe = self.bin.join("pg_ctl");
        let args = ["-D", path_str(&data), "-m", "immediate", "-w", "-t", "30", "stop"];
        let _ = match &self.run_as {
            Some(user) => Command::new("runuser").args(["-u", user, "--"]).arg(&exe).args(args).output(),
            None => Command::new(&exe).args(args).output(),
        };
    }
}

/// Stops and removes the servers of test processes that died without dropping their
/// [`PgServer`] (killed by a timeout, or SIGKILL): every `mlport-pg-*` folder in the temporary
/// folder whose `owner.pid` names no running process.
fn stop_orphans(bin: &Path) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for dir in entries.flatten().map(|e| e.path()) {
        let is_ours = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("mlport-pg-"));
        let Some(pid) = is_ours.then(|| std::fs::read_to_string(dir.join("owner.pid")).ok()).flatten() else {
            continue;
        };
        if Path::new("/proc").join(pid.trim()).exists() {
            continue;
        }
        let data = dir.join("data");
        let user = std::fs::metadata(&data).ok().map(|m| std::os::unix::fs::MetadataExt::uid(&m));
        let args = ["-D", path_str(&data), "-m", "immediate", "-w", "-t", "30", "stop"];
        let _ = match user {
            Some(uid) if is_root() && uid != 0 => {
                Command::new("runuser").args(["-u", SYSTEM_USER, "--"]).arg(bin.join("pg_ctl")).args(args).output()
            }
            _ => Command::new(bin.join("pg_ctl")).args(args).output(),
        };
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The folder of PostgreSQL's programs: the newest `/usr/lib/postgresql/<version>/bin` that has
/// `initdb`, else `pg_config --bindir`; when neither exists and we are root on a Debian-like
/// system, Debian's `postgresql` package is installed first (as `.ci/run` does).
pub fn bindir() -> PathBuf {
    if let Some(bin) = find_bindir() {
        return bin;
    }
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        if is_root() && Path::new("/usr/bin/apt-get").exists() {
            eprintln!("PostgreSQL is not installed: apt-get install postgresql");
            let _ = Command::new("apt-get").args(["update", "-qq"]).status();
            let _ = Command::new("apt-get")
                .args(["install", "-y", "-qq", "postgresql"])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status();
        }
    });
    find_bindir().unwrap_or_else(|| {
        panic!(
            "PostgreSQL's server programs (initdb, pg_ctl) are not installed: install Debian's `postgresql` \
             package (apt-get install -y postgresql; .ci/run does this)"
        )
    })
}

fn find_bindir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return Some(bin);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok().filter(|o| o.status.success())?;
    let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    bin.join("initdb").exists().then_some(bin)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe extern "C" {
        fn geteuid() -> u32;
    }
    unsafe { geteuid() == 0 }
}

/// Creates the system user the server runs as, when missing.
fn ensure_system_user() {
    let exists = Command::new("id").arg("-u").arg(SYSTEM_USER).output().is_ok_and(|o| o.status.success());
    if exists {
        return;
    }
    let out = Command::new("useradd")
        .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER])
        .output()
        .expect("useradd");
    // Another test process may have created it meanwhile (exit 9: the user exists).
    assert!(
        out.status.success() || out.status.code() == Some(9),
        "useradd {SYSTEM_USER}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn chown(path: &Path, user: &str) {
    let out = Command::new("chown").arg(user).arg(path).output().expect("chown");
    assert!(out.status.success(), "chown {user} {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).expect("a free port").port()
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}
