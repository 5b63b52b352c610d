//! The managed Python environment: a virtual environment under the cache folder with
//! the frameworks pinned by `python/requirements.lock` (embedded), or the user's own
//! interpreter (`--python`). A framework that fails to install is recorded by name and
//! the others still run. Packages are installed with uv when it can be had, else pip
//! ([`installer`]).

pub mod installer;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::Framework;

pub mod addon;
pub mod stack;

pub use stack::{Accelerator, Choice, Stack};

/// The main stack's lock file: a pip constraints file pinning every package.
pub const LOCK: &str = include_str!("../../python/requirements.lock");

/// Marker written once an environment is complete: lock hash and install outcome.
pub(crate) const MARKER: &str = "mlport-env.json";

/// Top-level packages the main stack installs for each framework (the lock pins them and
/// their deps); see [`Stack::packages`] for the others.
pub fn packages_for(fw: Framework) -> &'static [&'static str] {
    Stack::Main.packages(fw)
}

/// The interpreter mlport runs workers with, and what it knows about it.
#[derive(Clone, Debug)]
pub struct PythonEnv {
    /// The interpreter workers run: the managed venv's `bin/python` (`Scripts\python.exe` on
    /// Windows), or the `--python` path as given.
    pub python: PathBuf,
    /// True for the managed environment, false for `--python`.
    pub managed: bool,
    /// Frameworks whose install failed, with the tail of pip's output.
    pub install_failures: BTreeMap<Framework, String>,
    /// The managed environment's stack and why it was chosen; `None` for `--python`.
    pub stack: Option<Choice>,
}

/// What an environment holds: the lock it follows, the frameworks installed into it and
/// those whose install failed. Frameworks asked for later are added to the same env.
#[derive(Serialize, Deserialize, Default)]
pub(crate) struct Marker {
    lock_sha256: String,
    #[serde(default)]
    installed: Vec<Framework>,
    failed: BTreeMap<Framework, String>,
    /// Add-ons installed since ([`addon`]): `ir-routes:<lock hash>`.
    #[serde(default)]
    pub(crate) addons: Vec<String>,
}

pub(crate) fn read_marker(path: &Path) -> Option<Marker> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// mlport's cache folder: `$MLPORT_CACHE`, else the platform cache dir + `/mlport`.
pub fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("MLPORT_CACHE") {
        return PathBuf::from(p);
    }
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("mlport")
}

fn lock_hash(stack: Stack) -> String {
    hex::encode(Sha256::digest(stack.lock().as_bytes()))
}

/// The main stack's environment folder for its lock file.
pub fn env_dir() -> PathBuf {
    stack_dir(Stack::Main)
}

/// A stack's environment folder: `<cache>/envs/<prefix>-<first 12 hex of the lock's SHA-256>`.
pub fn stack_dir(stack: Stack) -> PathBuf {
    cache_dir().join("envs").join(format!("{}-{}", stack.dir_prefix(), &lock_hash(stack)[..12]))
}

pub(crate) fn venv_python(dir: &Path) -> PathBuf {
    if cfg!(windows) { dir.join("Scripts").join("python.exe") } else { dir.join("bin").join("python") }
}

/// Uses `--python PATH` as is, after checking it runs.
pub fn user_python(path: &Path) -> Result<PythonEnv> {
    let out = Command::new(path)
        .args(["-c", "import sys; print(sys.version.split()[0])"])
        .output()
        .with_context(|| format!("--python {}: cannot run it", path.display()))?;
    if !out.status.success() {
        bail!(
            "--python {}: it exits with {} ({})",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(PythonEnv { python: path.to_path_buf(), managed: false, install_failures: BTreeMap::new(), stack: None })
}

/// The managed environment, created (with a spinner on stderr) if missing or stale, of the
/// stack this machine gets ([`stack::choose`]: CUDA where `nvidia-smi` lists a GPU, else main).
/// The venv is made by `$MLPORT_BASE_PYTHON`, else `python3`.
pub fn ensure_managed(frameworks: &[Framework]) -> Result<PythonEnv> {
    ensure_stack(stack::choose(None, stack::nvidia_gpu), frameworks)
}

/// The managed environment of `choice.stack` with `frameworks` (those the stack holds)
/// installed, created or completed as [`ensure_managed`] does.
///
/// Errors: the cache folder cannot be created or locked, the base Python is missing or too
/// old, `venv` fails, or NumPy fails to install (the stack's install log is named).
pub fn ensure_stack(choice: Choice, frameworks: &[Framework]) -> Result<PythonEnv> {
    let stack = choice.stack;
    // A Keras backend needs its framework's packages (and Keras, which comes with TensorFlow).
    let mut frameworks: Vec<Framework> =
        frameworks.iter().flat_map(|f| f.needs()).filter(|f| stack.frameworks().contains(f)).collect();
    frameworks.sort();
    frameworks.dedup();
    let dir = stack_dir(stack);
    // One creator at a time: a second mlport waits here, then finds the marker.
    let parent = dir.parent().unwrap_or(&dir).to_path_buf();
    std::fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let lock_path = parent.join(".lock");
    let lock = std::fs::File::create(&lock_path).with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
    let python = venv_python(&dir);
    let marker_path = dir.join(MARKER);
    let marker = read_marker(&marker_path).filter(|m| m.lock_sha256 == lock_hash(stack) && python.exists());
    let mut marker = marker.unwrap_or_else(|| Marker { lock_sha256: lock_hash(stack), ..Marker::default() });
    // Frameworks asked for that are not installed yet (or failed before: retried).
    let missing: Vec<Framework> = frameworks.iter().copied().filter(|f| !marker.installed.contains(f)).collect();
    if !missing.is_empty() {
        let failed = install(&dir, stack, &missing)?;
        for fw in missing {
            match failed.get(&fw) {
                Some(tail) => {
                    marker.failed.insert(fw, tail.clone());
                }
                None => {
                    marker.failed.remove(&fw);
                    marker.installed.push(fw);
                }
            }
        }
        if !marker.installed.contains(&Framework::Numpy) {
            marker.installed.push(Framework::Numpy);
        }
        marker.installed.sort();
        marker.installed.dedup();
        std::fs::write(&marker_path, serde_json::to_string_pretty(&marker)?)
            .with_context(|| format!("cannot write {}", marker_path.display()))?;
    }
    Ok(PythonEnv { python, managed: true, install_failures: marker.failed, stack: Some(choice) })
}

pub(crate) fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(ProgressStyle::with_template("{spinner} {elapsed:>4} {msg:.dim}").expect("valid template"));
    pb.enable_steady_tick(Duration::from_millis(120));
    pb.set_message(msg.to_string());
    pb
}

/// Runs a command, streaming its output into `log` and its last line into the spinner.
/// `prefix` says what the step is; pip's latest line follows it.
pub(crate) fn run_logged(cmd: &mut Command, prefix: &str, pb: &ProgressBar, log: &Path) -> Result<(bool, String)> {
    use std::io::Write;
    let mut logf = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    writeln!(logf, "$ {cmd:?}")?;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    let stderr = child.stderr.take().expect("piped");
    let err_thread =
        std::thread::spawn(move || BufReader::new(stderr).lines().map_while(Result::ok).collect::<Vec<_>>());
    let mut tail: Vec<String> = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("piped")).lines().map_while(Result::ok) {
        writeln!(logf, "{line}")?;
        let short: String = line.trim().chars().take(90).collect();
        if !short.is_empty() {
            pb.set_message(format!("{prefix} · {short}"));
        }
        tail.push(line);
        if tail.len() > 30 {
            tail.remove(0);
        }
    }
    let errs = err_thread.join().unwrap_or_default();
    for l in &errs {
        writeln!(logf, "{l}")?;
    }
    tail.extend(errs.into_iter().rev().take(20).collect::<Vec<_>>().into_iter().rev());
    let status = child.wait()?;
    Ok((status.success(), tail.join("\n")))
}

/// The oldest Python the lock file's pins support (numpy 2.4 and jax 0.10 need 3.11).
pub const MIN_PYTHON: (u32, u32) = (3, 11);

/// Checks that `base` runs, is new enough and has the venv module.
fn check_base_python(base: &str) -> Result<()> {
    let out = Command::new(base)
        .args(["-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .with_context(|| {
            format!("cannot run `{base}` to create the Python environment (set MLPORT_BASE_PYTHON or pass --python)")
        })?;
    if !out.status.success() {
        bail!("`{base}` cannot create virtual environments: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let version: Option<(u32, u32)> = text.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
    match version {
        Some(v) if v >= MIN_PYTHON => Ok(()),
        _ => bail!(
            "`{base}` is Python {text}; the pinned frameworks need Python {}.{} or newer (set MLPORT_BASE_PYTHON or pass --python)",
            MIN_PYTHON.0,
            MIN_PYTHON.1
        ),
    }
}

/// Creates the venv if needed and installs `frameworks` (NumPy always) into it; returns
/// the frameworks whose install failed, with the tail of pip's output.
fn install(dir: &Path, stack: Stack, frameworks: &[Framework]) -> Result<BTreeMap<Framework, String>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let base = std::env::var("MLPORT_BASE_PYTHON").unwrap_or_else(|_| "python3".into());
    let log = dir.join("install.log");
    let lock_path = dir.join("requirements.lock");
    std::fs::write(&lock_path, stack.lock())?;
    check_base_python(&base)?;
    eprintln!(
        "mlport: setting up the Python environment of the {stack} stack ({}) in {} (log: {})",
        stack.lock_path(),
        dir.display(),
        log.display()
    );
    let pb = spinner("creating virtual environment");
    let python = venv_python(dir);
    if !python.exists() {
        let (ok, tail) = run_logged(
            Command::new(&base).args(["-m", "venv"]).arg(dir),
            "creating the virtual environment",
            &pb,
            &log,
        )?;
        if !ok {
            pb.finish_and_clear();
            bail!("`{base} -m venv {}` failed:\n{tail}", dir.display());
        }
    }
    let installer = pick_installer(&base, &pb, &log)?;
    let pip = |pkgs: &[&str]| installer::install_command(&installer, &python, &lock_path, pkgs);
    let mut wanted: Vec<Framework> = frameworks.to_vec();
    if !wanted.contains(&Framework::Numpy) {
        wanted.insert(0, Framework::Numpy);
    }
    let all: Vec<&str> = wanted.iter().flat_map(|f| stack.packages(*f).iter().copied()).collect();
    let what = format!("{} install {} (about 3 GB of wheels on first use: 1–3 min)", installer.name(), all.join(" "));
    pb.set_message(what.clone());
    let (mut ok, _) = run_logged(&mut pip(&all), &what, &pb, &log)?;
    if !ok && installer != installer::Installer::Pip {
        // uv refused what pip may take (a resolver difference, an index quirk): pip once more.
        let what = format!("pip install {} (uv failed; see the log)", all.join(" "));
        pb.set_message(what.clone());
        let pip_all = installer::install_command(&installer::Installer::Pip, &python, &lock_path, &all);
        ok = run_logged(&mut { pip_all }, &what, &pb, &log)?.0;
    }
    let mut failed = BTreeMap::new();
    if !ok {
        // Install framework by framework so one failure does not cost the others.
        for fw in &wanted {
            let what = format!("pip install {} (retrying alone)", stack.packages(*fw).join(" "));
            pb.set_message(what.clone());
            let mut alone =
                installer::install_command(&installer::Installer::Pip, &python, &lock_path, stack.packages(*fw));
            let (ok, tail) = run_logged(&mut alone, &what, &pb, &log)?;
            if !ok {
                failed.insert(*fw, tail);
            }
        }
    }
    pb.finish_and_clear();
    for (fw, tail) in &failed {
        eprintln!("mlport: {fw} failed to install; the other frameworks still run. pip said:\n{tail}\n");
    }
    if failed.contains_key(&Framework::Numpy) {
        bail!("numpy failed to install into {}; see {}", dir.display(), log.display());
    }
    Ok(failed)
}

/// The installer for this environment ([`installer::choose`] with `MLPORT_INSTALLER`), uv
/// bootstrapped under the cache folder when needed; a fallback to pip is logged in `log`.
///
/// Errors: `MLPORT_INSTALLER` is not `auto`/`uv`/`pip`, or it is `uv` and uv cannot be had.
pub(crate) fn pick_installer(base: &str, pb: &ProgressBar, log: &Path) -> Result<installer::Installer> {
    let pref = installer::Preference::from_env(std::env::var("MLPORT_INSTALLER").ok().as_deref())?;
    pb.set_message(format!("getting uv {} (pip install uv)", installer::UV_VERSION));
    let (chosen, fell_back) = installer::choose(pref, || installer::bootstrap_uv(base, &cache_dir()))?;
    if let Some(why) = fell_back {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        writeln!(f, "mlport: uv could not be installed, using pip: {why}")?;
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_pins_every_framework_package_exactly() {
        for fw in Framework::ALL {
            for pkg in packages_for(fw) {
                let norm = pkg.replace('-', "_").to_lowercase();
                let pinned = LOCK.lines().any(|l| {
                    let l = l.trim();
                    l.split_once("==")
                        .is_some_and(|(name, ver)| name.replace('-', "_").to_lowercase() == norm && !ver.is_empty())
                });
                assert!(pinned, "{pkg} is not pinned in python/requirements.lock");
            }
        }
        for l in LOCK.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            assert!(l.contains("=="), "unpinned lock line: {l}");
        }
    }
}

/// The installed version of a framework's distribution in `python`, without importing it
/// (`importlib.metadata`); `None` when it is not installed or the interpreter fails.
pub fn package_version(python: &Path, fw: Framework) -> Option<String> {
    let names = match fw {
        Framework::Tensorflow => "['tensorflow', 'tensorflow-cpu']",
        Framework::Jax => "['jax']",
        Framework::Torch => "['torch']",
        Framework::Numpy => "['numpy']",
        Framework::Onnxruntime => "['onnxruntime', 'onnxruntime-gpu']",
        Framework::KerasJax | Framework::KerasTorch | Framework::KerasTensorflow => "['keras']",
    };
    let code = format!(
        "import importlib.metadata as m\nfor n in {names}:\n    try:\n        print(m.version(n)); break\n    except m.PackageNotFoundError: pass"
    );
    python_says(python, &code)
}

/// The interpreter's version (`platform.python_version()`, e.g. `3.11.7`).
pub fn python_version(python: &Path) -> Option<String> {
    python_says(python, "import platform; print(platform.python_version())")
}

/// Whether `python` can import every one of `modules`.
///
/// Errors: the interpreter cannot be started.
pub fn can_import(python: &Path, modules: &[&str]) -> Result<bool> {
    let out = std::process::Command::new(python)
        .args(["-c", &format!("import {}", modules.join(", "))])
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    Ok(out.status.success())
}

/// What `code` prints, trimmed, when it succeeds and prints something.
fn python_says(python: &Path, code: &str) -> Option<String> {
    let out = std::process::Command::new(python).args(["-c", code]).output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

/// What a worker started on the CPU says of its framework (`mlport env`, `mlport list`).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameworkProbe {
    /// The framework probed.
    pub framework: Framework,
    /// Its version, or why it is not usable (`Err`: the import error or the start failure).
    pub version: std::result::Result<String, String>,
    /// The devices it can see and use.
    pub devices: Vec<String>,
    /// The interpreter's description, as the worker reports it (empty when it did not start).
    pub python: String,
}
