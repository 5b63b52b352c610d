//! The frameworks' own test data as cases (`mlport run --suite`, docs/suites.md): PyTorch's
//! OpInfos and ModuleInfos and JAX's test harnesses, listed from the installed framework by the
//! worker's `mlport_suites.py list` ([`list`], cached per interpreter, framework version and
//! request), read back as an untrusted, versioned [`listing::Listing`], and turned into a
//! catalogue ([`catalogue::catalogue_file`]) that the planner, runner, store and reports take
//! like any other.

pub mod catalogue;
pub mod listing;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

pub use catalogue::{EntryFilter, catalogue_file};
pub use listing::Listing;

use crate::model::{Dtype, Suite};
use crate::process_group::{GroupEnd, run_in_group};

/// How many samples per entry and dtype a suite run takes (`--samples`): the first N of the
/// entry's sample stream, or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Samples {
    /// The first N (at least 1).
    First(u32),
    /// Every sample the suite generates.
    All,
}

impl Default for Samples {
    /// [`DEFAULT_SAMPLES`].
    fn default() -> Samples {
        Samples::First(DEFAULT_SAMPLES)
    }
}

/// `--samples`' default: 3 per entry and dtype, about 17,000 OpInfo samples on a CPU.
pub const DEFAULT_SAMPLES: u32 = 3;

impl std::str::FromStr for Samples {
    type Err = String;
    fn from_str(s: &str) -> Result<Samples, String> {
        if s == "all" {
            return Ok(Samples::All);
        }
        match s.parse::<u32>() {
            Ok(n) if (1..=listing::MAX_SAMPLES).contains(&n) => Ok(Samples::First(n)),
            _ => Err(format!("`{s}` is not a number of samples from 1 to {} or `all`", listing::MAX_SAMPLES)),
        }
    }
}

impl std::fmt::Display for Samples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Samples::First(n) => write!(f, "{n}"),
            Samples::All => f.write_str("all"),
        }
    }
}

/// The dtypes tried beyond an entry's declared ones when the run names none (`--dtypes`): the
/// catalogue's usual sweep, so that "works but undeclared" can be seen.
pub const USUAL_DTYPES: [Dtype; 8] = [
    Dtype::Float16,
    Dtype::Bfloat16,
    Dtype::Float32,
    Dtype::Float64,
    Dtype::Int32,
    Dtype::Int64,
    Dtype::Bool,
    Dtype::Complex64,
];

/// The longest a listing may take before it is stopped (op_db at every sample on one core
/// takes a few minutes).
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// What to list.
#[derive(Clone, Debug)]
pub struct ListRequest<'a> {
    /// The suite.
    pub suite: Suite,
    /// The cap on samples.
    pub samples: Samples,
    /// The dtypes tried beyond the declared ones.
    pub dtypes: &'a [Dtype],
    /// Only these entries (names, `name.variant` or public functions); empty: all.
    pub only: &'a [String],
    /// The interpreter whose framework is listed.
    pub python: &'a Path,
    /// The folder holding the worker's sources (`mlport_suites.py`).
    pub scripts: &'a Path,
    /// Where listings are cached.
    pub cache: &'a Path,
}

/// A listing and where it came from.
#[derive(Debug)]
pub struct Listed {
    /// The listing.
    pub listing: Listing,
    /// Its file in the cache.
    pub path: PathBuf,
    /// Whether it was read from the cache rather than listed now.
    pub cached: bool,
}

impl Listed {
    /// One sentence for the run's header: `the opinfo suite of torch 2.15.0 (listed in 41.2 s,
    /// PATH): 637 OpInfos, 6,156 OpInfo × dtype pairs, 17,184 samples`, counting what `filter`
    /// plans.
    pub fn describe(&self, filter: &EntryFilter) -> String {
        let l = &self.listing;
        let (entries, pairs, samples) = catalogue::planned(&[l], filter);
        let how = if self.cached { "cached".to_string() } else { format!("listed in {:.1} s", l.seconds) };
        format!(
            "the {} suite of {} {} ({how}, {}): {}, {pairs} {} × dtype pairs, {}",
            l.suite,
            l.suite.framework(),
            l.framework_version,
            self.path.display(),
            l.suite.count(entries),
            l.suite.entry(),
            if samples == 1 { "1 sample".to_string() } else { format!("{samples} samples") },
        )
    }
}

/// Lists `req.suite` from the installed framework, or reads the cached listing of the same
/// request (same suite, samples, dtypes, entries, interpreter, framework version and worker
/// sources). Listing imports the suite (op_db: about 15 s) and generates every counted sample
/// on the CPU.
///
/// Errors: the framework is not installed in the interpreter; the module the suite needs
/// (`expecttest`, `absl`) is missing — said with the `pip install` line that fixes it —; the
/// listing fails, times out ([`LIST_TIMEOUT`]), is interrupted, or its file is not a valid
/// listing. Nothing is written to any store.
pub fn list(req: &ListRequest, interrupted: &AtomicBool) -> Result<Listed> {
    let version = framework_version(req.python, req.suite)?;
    let path = req.cache.join(format!("{}-{}.json", req.suite, cache_key(req, &version)));
    if path.is_file() {
        let listing = Listing::read(&path)?;
        matches_request(&listing, req, &version)
            .with_context(|| format!("the cached suite listing {}", path.display()))?;
        return Ok(Listed { listing, path, cached: true });
    }
    std::fs::create_dir_all(req.cache).with_context(|| format!("cannot create {}", req.cache.display()))?;
    let tmp = req.cache.join(format!(".{}.{}.json", req.suite, std::process::id()));
    let out = std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let err_path = tmp.with_extension("stderr");
    let err = std::fs::File::create(&err_path).with_context(|| format!("cannot create {}", err_path.display()))?;
    let dtypes: Vec<&str> = req.dtypes.iter().map(|d| d.as_str()).collect();
    let mut cmd = Command::new(req.python);
    cmd.arg(req.scripts.join("mlport_suites.py"))
        .args(["list", "--suite", req.suite.as_str(), "--samples", &req.samples.to_string()])
        .args(["--dtypes", &dtypes.join(",")])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    if !req.only.is_empty() {
        cmd.args(["--only", &req.only.join(",")]);
    }
    let end = run_in_group(&mut cmd, Some(LIST_TIMEOUT), interrupted)
        .with_context(|| format!("cannot start {}", req.python.display()));
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let fail = |why: String| {
        let _ = std::fs::remove_file(&tmp);
        Err(anyhow::anyhow!(why))
    };
    match end? {
        GroupEnd::Exited(s) if s.success() => {}
        GroupEnd::Exited(s) => {
            // The script's own one-line refusals (a missing module: status 3) are said as they are.
            let last = stderr.lines().rev().find(|l| l.starts_with("mlport: ")).map(str::to_string);
            return fail(match last {
                Some(line) if s.code() == Some(3) => line.trim_start_matches("mlport: ").to_string(),
                _ => format!(
                    "listing the {} suite with {} failed ({s}):\n{}",
                    req.suite,
                    req.python.display(),
                    tail(&stderr, 20)
                ),
            });
        }
        GroupEnd::Interrupted => return fail(format!("listing the {} suite was interrupted", req.suite)),
        GroupEnd::TimedOut => {
            return fail(format!("listing the {} suite took longer than {} s", req.suite, LIST_TIMEOUT.as_secs()));
        }
    }
    let listing = match Listing::read(&tmp) {
        Ok(l) => l,
        Err(e) => return fail(format!("{e:#}")),
    };
    if let Err(e) = matches_request(&listing, req, &version) {
        return fail(format!("the listing of {}: {e}", req.suite));
    }
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Listed { listing, path, cached: false })
}

/// [`list`] with `env`'s interpreter, the worker's installed sources and mlport's cache folder,
/// after giving a managed environment the `suites` add-on (a failed install is said; the
/// listing's missing-module error follows it).
///
/// Errors: [`list`]'s; the worker's sources cannot be written.
pub fn list_with(
    env: &crate::pyenv::PythonEnv,
    suite: Suite,
    samples: Samples,
    dtypes: &[Dtype],
    only: &[String],
    interrupted: &AtomicBool,
) -> Result<Listed> {
    if let Err(e) = crate::pyenv::addon::ensure(env, &crate::pyenv::addon::SUITES) {
        eprintln!("mlport: {e:#}");
    }
    let scripts = crate::workspace::worker_dir()?;
    let cache = crate::pyenv::cache_dir().join("suites");
    list(
        &ListRequest { suite, samples, dtypes, only, python: &env.python, scripts: &scripts, cache: &cache },
        interrupted,
    )
}

/// A run's catalogue made from suites, and the listings it came from.
#[derive(Debug)]
pub struct Prepared {
    /// One catalogue file per framework (opinfo and modules share PyTorch's).
    pub catalogue: crate::catalogue::Catalogue,
    /// Each suite's listing, in the order asked.
    pub listed: Vec<Listed>,
}

/// Lists each of `suites` with `env`'s interpreter ([`list`]; the `suites` add-on installed
/// first into a managed environment) and builds the run's catalogue from them, planning only
/// the entries `only` names (every entry when empty).
///
/// Errors: [`list`]'s; an `only` name that no listed entry has (with the suites named); a
/// failed add-on install is said by [`list`]'s missing-module error that follows it.
pub fn prepare(
    suites: &[Suite],
    samples: Samples,
    dtypes: &[Dtype],
    only: &[String],
    env: &crate::pyenv::PythonEnv,
    interrupted: &AtomicBool,
) -> Result<Prepared> {
    let dtypes = if dtypes.is_empty() { &USUAL_DTYPES[..] } else { dtypes };
    let mut suites = suites.to_vec();
    suites.sort();
    suites.dedup();
    let mut listed = Vec::new();
    for suite in suites {
        listed.push(list_with(env, suite, samples, dtypes, only, interrupted)?);
    }
    let filter = EntryFilter(only.to_vec());
    if let Some(missing) = only.iter().find(|n| {
        let one = EntryFilter(vec![(*n).clone()]);
        !listed.iter().any(|l| l.listing.ops.iter().any(|e| one.admits(e)))
    }) {
        let names: Vec<String> = listed.iter().map(|l| l.listing.suite.to_string()).collect();
        bail!("--op {missing}: no entry of the {} suite has that name, name.variant or function", names.join(", "));
    }
    let mut files = Vec::new();
    let mut frameworks: Vec<crate::model::Framework> = listed.iter().map(|l| l.listing.suite.framework()).collect();
    frameworks.dedup();
    for fw in frameworks {
        let mine: Vec<&Listing> = listed.iter().map(|l| &l.listing).filter(|l| l.suite.framework() == fw).collect();
        files.push(catalogue_file(&mine, &filter));
    }
    Ok(Prepared { catalogue: crate::catalogue::Catalogue::new(files)?, listed })
}

/// Checks that a listing is of the request: its suite, its cap on samples and the installed
/// framework's version (a cached file may have been edited, or copied from elsewhere).
///
/// Errors: the first that differs, with both values and what to do.
fn matches_request(listing: &Listing, req: &ListRequest, version: &str) -> Result<()> {
    let cap = match req.samples {
        Samples::First(n) => Some(n),
        Samples::All => None,
    };
    let fix = "remove the file and run again to list the suite afresh";
    if listing.suite != req.suite {
        bail!("it lists the {} suite, not {} ({fix})", listing.suite, req.suite);
    }
    if listing.samples != cap {
        bail!("it is capped at {:?} samples, not {:?} as asked ({fix})", listing.samples, cap);
    }
    // `torch.__version__` carries the local tag the package metadata leaves out (`+cu132`).
    let public = |v: &str| v.split('+').next().unwrap_or(v).to_string();
    if public(&listing.framework_version) != public(version) {
        bail!(
            "it lists {} {}, but {} has {version} ({fix})",
            req.suite.framework(),
            listing.framework_version,
            req.python.display()
        );
    }
    Ok(())
}

/// The installed version of the suite's framework in `python`, read from its package metadata
/// (no import).
///
/// Errors: the interpreter cannot run, or has no such package.
fn framework_version(python: &Path, suite: Suite) -> Result<String> {
    let package = match suite.framework() {
        crate::model::Framework::Jax => "jax",
        _ => "torch",
    };
    let out = Command::new(python)
        .args(["-c", &format!("import importlib.metadata as m; print(m.version('{package}'))")])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "the {suite} suite comes with {package}, which {} lacks (pip install {package}, or let mlport manage the environment)",
            python.display()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The cache key of a request: the first 16 hex digits of the SHA-256 of everything a listing
/// depends on.
fn cache_key(req: &ListRequest, version: &str) -> String {
    let mut h = Sha256::new();
    let source = crate::worker::SOURCES.iter().find(|(n, _)| *n == "mlport_suites.py").map_or("", |(_, t)| *t);
    for part in [
        req.suite.as_str(),
        &req.samples.to_string(),
        &req.dtypes.iter().map(|d| d.as_str()).collect::<Vec<_>>().join(","),
        &req.only.join(","),
        &req.python.display().to_string(),
        version,
        source,
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..8])
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_must_match_its_request() {
        let text = r#"{"format": 1, "suite": "opinfo", "framework_version": "2.15.0+cu132", "samples": 3, "ops": []}"#;
        let listing = Listing::parse(text).unwrap();
        let (python, scripts, cache) = (Path::new("/py"), Path::new("/s"), Path::new("/c"));
        let req = |suite, samples| ListRequest { suite, samples, dtypes: &[], only: &[], python, scripts, cache };
        // The package metadata's version has no local tag: 2.15.0 is torch.__version__'s 2.15.0+cu132.
        assert!(matches_request(&listing, &req(Suite::Opinfo, Samples::First(3)), "2.15.0").is_ok());
        let e = matches_request(&listing, &req(Suite::Opinfo, Samples::First(3)), "2.16.0").unwrap_err().to_string();
        assert!(e.contains("it lists torch 2.15.0+cu132, but /py has 2.16.0"), "{e}");
        let e = matches_request(&listing, &req(Suite::Opinfo, Samples::All), "2.15.0").unwrap_err().to_string();
        assert!(e.contains("capped at Some(3) samples, not None"), "{e}");
        let e = matches_request(&listing, &req(Suite::Modules, Samples::First(3)), "2.15.0").unwrap_err().to_string();
        assert!(e.contains("it lists the opinfo suite, not modules"), "{e}");
    }

    #[test]
    fn samples_parse() {
        assert_eq!("3".parse::<Samples>(), Ok(Samples::First(3)));
        assert_eq!("all".parse::<Samples>(), Ok(Samples::All));
        assert!("0".parse::<Samples>().unwrap_err().contains("from 1 to 10000 or `all`"));
        assert!("many".parse::<Samples>().is_err());
        assert_eq!(Samples::default().to_string(), "3");
    }
}
