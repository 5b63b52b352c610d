//! The published raw data of "The Grand Illusion" (Mince et al., arXiv 2309.07181; the
//! authors' repository for-ai/portability, commit b220f30) as mlport runs: one run per
//! framework × machine × device, the three repeated sessions merged. Layout and quirks as
//! described in the data's README (`../shared/paper-data/README.md`), handled by these rules:
//!
//! - Framework folders `pytorch_timings`, `tensorflow_timings`, `jax_timings`. A run is a
//!   folder below one holding session timing files `<cpu|gpu|tpu>_<N>.json` of one device
//!   kind (gpu → `cuda:0`, tpu → `tpu:0`); its machine is the folder's first component
//!   (`t4_vm`, `a100_vm`, `tpu_vm`, `tpu_v2`, `soft_placement`, ...) and its label
//!   `paper/<framework>/<folder>[/<kind>]`.
//! - JSON files at the top of a framework folder (`cpu.json`, `gpu.json`, `tpu_1.json`,
//!   `*_cpu_vm*.json`) are older single runs of larger test sets: left out.
//! - A session holding fewer than 90% of the tests of the fullest session of its run is a
//!   partial run (PyTorch's `a100_vm/gpu_1.json`): left out.
//! - A run whose sessions are byte-identical to another run's (`tpu_vm_soft/` and
//!   `soft_placement/tpu/`) is imported once, from the first folder in path order.
//! - A `test_failure_report.json` belongs to the run whose timing files sit beside it. A
//!   report elsewhere is left out: as a copy when byte-identical to a report that belongs to
//!   a run (the three JAX reports are one GPU run's), otherwise as an earlier report set
//!   superseded by the one beside the timings (TensorFlow's 8 May reports).
//! - The authors' plotting code reads, for a machine's GPU or TPU sessions, the report at the
//!   top of the machine's folder (for-ai/portability, `src/plotting/utils.py`, `open_file`).
//!   Where that is an earlier report set with other contents (TensorFlow's 8 May reports),
//!   each device test's outcome in it is kept on its case
//!   ([`crate::model::ImportedSpec::authors_outcome`]) for the authors' method of `report
//!   paper` only, and the run's note says how many differ; everything else reads the report
//!   beside the timings. Each report test's place in its report is kept too
//!   ([`crate::model::ImportedSpec::report_index`]): their code reads tests in report order.
//! - Runs without a report have timings only: their tests are recorded as skipped with an
//!   unknown outcome (never counted). The only evidence of failure there, a test recording
//!   fewer timed calls than its CPU copy or than the same test in the machine's CPU run, is
//!   counted in a note, not as failures.
//! - Summaries that disagree with their test lists, timing keys shared by two classes'
//!   tests, and PyTorch's `_cpu` copies are handled by [`super::suite`].
//! - Test files are mapped to functions through the built-in catalogue's `paper` stems
//!   (`cum_prod` → `tf.math.cumprod`, `make_jax_pr` → `jax.make_jaxpr`); a stem the catalogue lacks keeps its own name.
//! - A failure raised by the authors' own timer (`TypeError: partial_timed() takes 1
//!   positional argument but 2 were given`, in JAX's ones, zeros and vjp tests) is a
//!   `harness_error`: the study's bug, never counted against the framework.
//! - `device_logging/` (raw pytest output) and `frequencies/` are not results: not read.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::pytest_json::{self, PytestReport, TestOutcome};
use super::suite::{Suite, device_suffix, normalise_name};
use super::timings::{self, TimingFile};
use super::{ImportError, blank_info, describe_report};
use crate::catalogue;
use crate::model::{Framework, Target};
use crate::model::{FunctionRow, RunData, RunOrigin, RunSource, Spec};

/// The framework folders of the data set, in import order.
pub const FRAMEWORK_DIRS: [(&str, Framework); 3] = [
    ("pytorch_timings", Framework::Torch),
    ("tensorflow_timings", Framework::Tensorflow),
    ("jax_timings", Framework::Jax),
];

/// The phrase of the authors' own timer bug (module docs): a failure whose crash line holds it
/// is `harness_error` ([`crate::outcome::imported`]).
pub const PAPER_HARNESS_BUGS: &[&str] = &["partial_timed()"];

/// A session holding fewer than this share of its run's fullest session's tests is partial.
pub const PARTIAL_SESSION: f64 = 0.9;

/// The data set as runs, and every file that was not imported with the reason.
#[derive(Clone, Debug)]
pub struct PaperImport {
    /// One run per framework × machine × device, in import order.
    pub runs: Vec<RunData>,
    /// Files left out, each with why, in path order.
    pub left_out: Vec<(PathBuf, String)>,
}

/// Timing sessions of one device kind in one folder.
struct Group {
    framework: Framework,
    /// Folder relative to the framework folder, `/`-separated (`t4_vm/gpu`).
    rel: String,
    kind: &'static str,
    sessions: Vec<(u32, PathBuf)>,
    report: Option<PathBuf>,
    /// The report the authors' plotting code read for this run's machine and device, where it
    /// is another file than `report` with other contents (module docs).
    authors_report: Option<PathBuf>,
}

impl Group {
    fn machine(&self) -> &str {
        self.rel.split('/').next().unwrap_or(&self.rel)
    }

    fn device(&self) -> Target {
        match self.kind {
            "gpu" => "cuda:0",
            "tpu" => "tpu:0",
            _ => "cpu",
        }
        .parse()
        .expect("canonical device")
    }

    fn label(&self) -> String {
        let last = self.rel.rsplit('/').next().unwrap_or("");
        if last == self.kind {
            format!("paper/{}/{}", self.framework, self.rel)
        } else {
            format!("paper/{}/{}/{}", self.framework, self.rel, self.kind)
        }
    }
}

/// Reads the whole data set under `dir` and builds its runs, touching no store.
///
/// Errors: [`ImportError::Layout`] when `dir` has none of the framework folders;
/// [`ImportError::Io`], [`ImportError::Json`] or [`ImportError::Invalid`] for the first
/// unreadable, malformed, truncated or foreign file (nothing is imported then).
pub fn import_paper(dir: &Path, command_line: &str) -> Result<PaperImport, ImportError> {
    if !dir.is_dir() {
        return Err(ImportError::Layout { path: dir.to_path_buf(), what: "no such folder".into() });
    }
    let present: Vec<(&str, Framework)> =
        FRAMEWORK_DIRS.iter().copied().filter(|(d, _)| dir.join(d).is_dir()).collect();
    if present.is_empty() {
        return Err(ImportError::Layout {
            path: dir.to_path_buf(),
            what: "not the paper's data set: no pytorch_timings, tensorflow_timings or jax_timings folder".into(),
        });
    }
    let catalogue = catalogue::builtin().ok();
    let mut runs = Vec::new();
    let mut left_out = Vec::new();
    for (name, framework) in present {
        let (groups, mut out) = discover(&dir.join(name), framework)?;
        let mut parsed: Vec<(Group, Vec<TimingFile>, Option<PytestReport>)> = Vec::new();
        for mut g in groups {
            let mut files: Vec<TimingFile> = Vec::new();
            for (_, p) in &g.sessions {
                files.push(timings::read(p)?);
            }
            let fullest = files.iter().map(|f| f.entries.len()).max().unwrap_or(0);
            let (keep, partial): (Vec<TimingFile>, Vec<TimingFile>) =
                files.into_iter().partition(|f| f.entries.len() as f64 >= PARTIAL_SESSION * fullest as f64);
            for f in partial {
                out.push((
                    f.path.clone(),
                    format!("a partial run: {} of the {fullest} tests of its fullest sibling session", f.entries.len()),
                ));
                g.sessions.retain(|(_, p)| *p != f.path);
            }
            let report = g.report.as_deref().map(pytest_json::read).transpose()?;
            parsed.push((g, keep, report));
        }
        for (i, (g, sessions, report)) in parsed.iter().enumerate() {
            let names = |stem: &str, _file: &str| paper_function(catalogue.as_ref(), framework, stem);
            let suite = Suite {
                framework,
                device: g.device(),
                report: report.as_ref(),
                timings: sessions,
                namer: &names,
                harness_bugs: PAPER_HARNESS_BUGS,
                group_by: &crate::import::group::GroupBy::File,
            };
            let mut info = blank_info(framework, command_line);
            info.host = g.machine().to_string();
            if let Some(r) = report {
                describe_report(&mut info, r);
            }
            let mut notes = Vec::new();
            let files: Vec<String> = g
                .sessions
                .iter()
                .filter_map(|(_, p)| p.file_name())
                .map(|f| f.to_string_lossy().into_owned())
                .collect();
            notes.push(format!(
                "imported from the paper's data: {} session{} merged ({}){}",
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                files.join(", "),
                g.report.as_ref().map(|_| " and the pytest report beside them").unwrap_or_default()
            ));
            if g.rel.contains("soft") {
                notes.push(
                    "soft device placement: TensorFlow may have run ops on the CPU without saying so (silent fallback)"
                        .into(),
                );
            }
            if report.is_none() && g.kind != "cpu" {
                notes.push(evidence_note(g, sessions, &parsed, i));
            }
            let origin = RunOrigin {
                source: RunSource::ImportPaper,
                label: Some(g.label()),
                machine: Some(g.machine().to_string()),
                notes,
                ..RunOrigin::default()
            };
            let mut run = suite.convert(info, origin);
            if let (Some(path), Some(own)) = (&g.authors_report, report) {
                let authors = pytest_json::read(path)?;
                let shown = path.strip_prefix(dir).unwrap_or(path).display().to_string();
                let note = keep_authors_outcomes(&mut run, own, &authors, &shown, &report_date(path));
                run.origin.notes.push(note);
            }
            runs.push(run);
        }
        left_out.append(&mut out);
    }
    left_out.sort();
    Ok(PaperImport { runs, left_out })
}

/// The note on a timings-only run: how many tests recorded fewer timed calls than their
/// CPU copy (PyTorch) or than the same test in the CPU run of the same machine.
fn evidence_note(
    g: &Group,
    sessions: &[TimingFile],
    all: &[(Group, Vec<TimingFile>, Option<PytestReport>)],
    me: usize,
) -> String {
    fn most(files: &[TimingFile]) -> HashMap<&str, usize> {
        let mut m: HashMap<&str, usize> = HashMap::new();
        for f in files {
            for e in &f.entries {
                let n = m.entry(e.key.as_str()).or_default();
                *n = (*n).max(e.operations.len());
            }
        }
        m
    }
    let mine = most(sessions);
    let token = device_suffix(&g.device()).to_ascii_lowercase();
    // PyTorch: device tests against their `_cpu` twins in the same sessions.
    let twins: Vec<(usize, usize)> = mine
        .iter()
        .filter_map(|(k, n)| {
            let (file, test) = k.split_once(':')?;
            let norm = normalise_name(test, &token)?;
            let twin = format!("{file}:{}", norm.replace(super::suite::DEVICE_TOKEN, "cpu"));
            mine.get(twin.as_str()).map(|c| (*n, *c))
        })
        .collect();
    let (pairs, against) = if !twins.is_empty() {
        (twins, "their cpu copies".to_string())
    } else if let Some((cpu, files, _)) = all
        .iter()
        .enumerate()
        .find(|(j, (o, _, _))| *j != me && o.kind == "cpu" && o.machine() == g.machine())
        .map(|(_, x)| x)
    {
        let theirs = most(files);
        let pairs = mine.iter().filter_map(|(k, n)| theirs.get(k).map(|c| (*n, *c))).collect();
        (pairs, format!("the same tests in {}", cpu.label()))
    } else {
        return "no pytest report for this run: outcomes unknown (timings only); no cpu run on this machine to compare \
                timed calls with"
            .into();
    };
    let fewer = pairs.iter().filter(|(n, c)| n < c).count();
    format!(
        "no pytest report for this run: outcomes unknown (timings only); {fewer} of {} tests recorded fewer timed calls \
         than {against} — evidence that an operation raised, not counted as failures",
        pairs.len()
    )
}

/// Records on each case of `run` (imported from `own`) its device test's outcome in `authors`,
/// the report the authors' plotting code read for the run's machine (module docs), and says
/// what differs in a note.
fn keep_authors_outcomes(
    run: &mut RunData,
    own: &PytestReport,
    authors: &PytestReport,
    path: &str,
    date: &str,
) -> String {
    let mut theirs: HashMap<&str, TestOutcome> = HashMap::new();
    for t in authors.tests.iter().filter(|t| t.outcome != TestOutcome::Rerun) {
        theirs.insert(t.nodeid.as_str(), t.outcome);
    }
    let mut differ = 0;
    for case in &mut run.cases {
        let Spec::Imported(spec) = &mut case.spec else { continue };
        let Some(test) = spec.report_index.and_then(|i| own.tests.get(i as usize)) else { continue };
        let word = theirs.get(test.nodeid.as_str()).map_or("absent", |o| o.as_str());
        differ += usize::from(word != test.outcome.as_str());
        spec.authors_outcome = Some(word.to_string());
    }
    let here: std::collections::HashSet<&str> = own.tests.iter().map(|t| t.nodeid.as_str()).collect();
    let only: Vec<TestOutcome> =
        authors.tests.iter().filter(|t| !here.contains(t.nodeid.as_str())).map(|t| t.outcome).collect();
    let passed = only.iter().filter(|o| **o == TestOutcome::Passed).count();
    format!(
        "the authors' plotting code read {path} ({date}) for this machine, not the report beside these timings: each \
         test's outcome there is kept for the authors' method of `report paper`; {differ} tests have another outcome \
         there, and {} tests there are not here ({passed} of them passed)",
        only.len()
    )
}

/// The function a paper test file stands for, from the built-in catalogue's `paper` stems.
fn paper_function(catalogue: Option<&catalogue::Catalogue>, framework: Framework, stem: &str) -> FunctionRow {
    if let Some(f) = catalogue
        .and_then(|c| c.file(framework))
        .and_then(|file| file.functions.iter().find(|f| f.paper.as_deref() == Some(stem)))
    {
        return f.row(framework); // found by its `paper` stem, which it keeps
    }
    FunctionRow {
        paper: Some(stem.to_string()),
        note: Some("a paper test file with no function in mlport's catalogue".into()),
        ..FunctionRow::new(framework, stem)
    }
}

/// Every `.json` under `dir`, relative `/`-separated path and full path, in path order.
fn json_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, ImportError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| ImportError::Io { path: d.clone(), source })?;
        for e in entries {
            let e = e.map_err(|source| ImportError::Io { path: d.clone(), source })?;
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((rel, p));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn sha256(path: &Path) -> Result<Vec<u8>, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })?;
    Ok(Sha256::digest(&bytes).to_vec())
}

/// `gpu_2.json` → (`gpu`, 2).
fn session_file(name: &str) -> Option<(&'static str, u32)> {
    let stem = name.strip_suffix(".json")?;
    let (kind, n) = stem.split_once('_')?;
    let kind = ["cpu", "gpu", "tpu"].into_iter().find(|k| *k == kind)?;
    Some((kind, n.parse().ok()?))
}

/// The runs of one framework folder and the files left out of them.
#[allow(clippy::type_complexity)]
fn discover(root: &Path, framework: Framework) -> Result<(Vec<Group>, Vec<(PathBuf, String)>), ImportError> {
    let mut left_out = Vec::new();
    let mut groups: BTreeMap<(String, &'static str), Group> = BTreeMap::new();
    let mut reports: Vec<(String, PathBuf)> = Vec::new();
    for (rel, path) in json_files(root)? {
        let (folder, name) = match rel.rsplit_once('/') {
            Some((f, n)) => (f.to_string(), n.to_string()),
            None => {
                left_out.push((path, "an older single run of a larger test set (top of the timing folder)".into()));
                continue;
            }
        };
        if name == "test_failure_report.json" {
            reports.push((folder, path));
        } else if let Some((kind, n)) = session_file(&name) {
            groups
                .entry((folder.clone(), kind))
                .or_insert_with(|| Group {
                    framework,
                    rel: folder.clone(),
                    kind,
                    sessions: Vec::new(),
                    report: None,
                    authors_report: None,
                })
                .sessions
                .push((n, path));
        } else {
            left_out.push((path, "neither a session timing file (<cpu|gpu|tpu>_<N>.json) nor a pytest report".into()));
        }
    }
    let mut groups: Vec<Group> = groups.into_values().collect();
    for g in &mut groups {
        g.sessions.sort();
    }
    // Byte-identical runs are imported once.
    let mut seen: HashMap<Vec<Vec<u8>>, String> = HashMap::new();
    let mut unique = Vec::new();
    for g in groups {
        let sig = g.sessions.iter().map(|(_, p)| sha256(p)).collect::<Result<Vec<_>, _>>()?;
        match seen.get(&sig) {
            Some(first) => {
                for (_, p) in &g.sessions {
                    left_out.push((p.clone(), format!("byte-identical to the sessions of {first}, imported once")));
                }
            }
            None => {
                seen.insert(sig, g.label());
                unique.push(g);
            }
        }
    }
    let mut groups = unique;
    // Reports belong to the run beside them.
    let mut attached: Vec<(PathBuf, Vec<u8>, String, String)> = Vec::new();
    let mut loose = Vec::new();
    for (folder, path) in reports {
        let here: Vec<usize> = groups.iter().enumerate().filter(|(_, g)| g.rel == folder).map(|(i, _)| i).collect();
        let devices: Vec<usize> = here.iter().copied().filter(|&i| groups[i].kind != "cpu").collect();
        let target = match (here.len(), devices.len()) {
            (1, _) => Some(here[0]),
            (_, 1) => Some(devices[0]),
            _ => None,
        };
        match target {
            Some(i) => {
                attached.push((path.clone(), sha256(&path)?, groups[i].label(), folder.clone()));
                groups[i].report = Some(path);
            }
            None => loose.push((folder, path)),
        }
    }
    for (folder, path) in loose {
        let hash = sha256(&path)?;
        // The authors' plotting code reads the report at the top of a machine's folder for that
        // machine's GPU or TPU sessions (for-ai/portability, src/plotting/utils.py, `open_file`).
        let mut read_by_authors = Vec::new();
        for g in groups.iter_mut().filter(|g| g.machine() == folder && g.rel != folder && g.kind != "cpu") {
            let Some(own) = &g.report else { continue };
            if sha256(own)? != hash {
                g.authors_report = Some(path.clone());
                read_by_authors.push(g.label());
            }
        }
        let why = if let Some((twin, _, label, _)) = attached.iter().find(|a| a.1 == hash) {
            format!(
                "byte-identical to {} (the report of {label}): not evidence for {folder}",
                twin.strip_prefix(root.parent().unwrap_or(root)).unwrap_or(twin).display()
            )
        } else if let Some((newer, _, label, _)) = attached.iter().find(|a| a.3.starts_with(&format!("{folder}/"))) {
            let authors = if read_by_authors.is_empty() {
                String::new()
            } else {
                format!(
                    "; the authors' plotting code read it, so each test's outcome here is kept for the authors' method \
                     of `report paper` ({})",
                    read_by_authors.join(", ")
                )
            };
            format!(
                "an earlier report set, not beside any timing files ({}); {} beside the timings of {label} ({}) is \
                 used{authors}",
                report_date(&path),
                newer.strip_prefix(root.parent().unwrap_or(root)).unwrap_or(newer).display(),
                report_date(newer)
            )
        } else {
            "not beside any timing files, so the device it ran on is not recorded".into()
        };
        left_out.push((path, why));
    }
    Ok((groups, left_out))
}

/// The `created` date of a report (`2023-05-08`), or `undated`.
fn report_date(path: &Path) -> String {
    #[derive(serde::Deserialize)]
    struct Created {
        created: Option<f64>,
    }
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Created>(&b).ok())
        .and_then(|c| c.created)
        .and_then(|t| chrono::DateTime::from_timestamp(t as i64, 0))
        .map_or_else(|| "undated".into(), |t| t.format("dated %Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_files_and_labels() {
        assert_eq!(session_file("gpu_2.json"), Some(("gpu", 2)));
        assert_eq!(session_file("tpu_cpu_vm_2.json"), None);
        assert_eq!(session_file("cpu.json"), None);
        let g = |rel: &str, kind| Group {
            framework: Framework::Jax,
            rel: rel.into(),
            kind,
            sessions: vec![],
            report: None,
            authors_report: None,
        };
        assert_eq!(g("t4_vm/gpu", "gpu").label(), "paper/jax/t4_vm/gpu");
        assert_eq!(g("tpu_vm_soft", "tpu").label(), "paper/jax/tpu_vm_soft/tpu");
        assert_eq!(g("tpu_v2_vm/tpu", "tpu").machine(), "tpu_v2_vm");
        assert_eq!(g("a100_vm", "gpu").device().as_str(), "cuda:0");
    }

    #[test]
    fn a_folder_without_the_data_set_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = import_paper(dir.path(), "x").unwrap_err().to_string();
        assert!(
            e.ends_with("not the paper's data set: no pytorch_timings, tensorflow_timings or jax_timings folder"),
            "{e}"
        );
        let e = import_paper(&dir.path().join("nope"), "x").unwrap_err().to_string();
        assert!(e.ends_with("nope: no such folder"), "{e}");
    }

    #[test]
    fn paper_stems_map_to_catalogue_functions() {
        let c = catalogue::builtin().unwrap();
        let f = paper_function(Some(&c), Framework::Tensorflow, "cum_prod");
        assert_eq!((f.name.as_str(), f.paper.as_deref()), ("tf.math.cumprod", Some("cum_prod")));
        let f = paper_function(Some(&c), Framework::Jax, "make_jax_pr");
        assert_eq!(f.name, "jax.make_jaxpr");
        let f = paper_function(Some(&c), Framework::Torch, "apply");
        assert_eq!((f.name.as_str(), f.paper.as_deref()), ("apply", Some("apply")));
    }
}
