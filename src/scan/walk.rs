//! A scan of files and folders: find the Python files and notebooks (respecting
//! `.gitignore`, `.ignore` and hidden files like git does), scan them on all cores (or
//! `threads`), resolve star imports of modules of the scanned tree, and count each
//! framework function's calls with their files and lines.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::calls::Extracted;
use super::imports::{Aliases, canonical, framework_of};
use super::notebook;
use super::output::{FunctionUse, ScanReport, Site, Unparsable};
use super::source::{self, Handling, SourceScan};

/// How to scan. Defaults: all cores, skipping files that cannot refer to a framework, no
/// progress bar, and the method names of mlport's built-in catalogue as the ones worth listing
/// when unresolved.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// Worker threads; 0 uses every core.
    pub threads: usize,
    /// Parse every file, also those whose text cannot refer to a framework (same result; the
    /// reference the skipping is checked against).
    pub full_parse: bool,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// Method names listed as unresolved when their receiver is unclear.
    pub measured: HashSet<String>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions { threads: 0, full_parse: false, progress: false, measured: measured_methods() }
    }
}

/// The last component of every function in the built-in catalogue (`argsort`, `svd`, `to`).
pub fn measured_methods() -> HashSet<String> {
    let Ok(cat) = crate::catalogue::builtin() else { return HashSet::new() };
    cat.files
        .iter()
        .flat_map(|f| f.functions.iter())
        .filter_map(|f| f.name.rsplit('.').next().map(str::to_string))
        .collect()
}

/// A file to scan.
#[derive(Clone, Debug)]
struct Job {
    path: PathBuf,
    /// As shown in reports.
    display: String,
    notebook: bool,
    /// Its module, when it lies in a package (folders with `__init__.py`).
    module: Option<Vec<String>>,
    is_package: bool,
}

/// What one file gave.
struct FileResult {
    job: Job,
    bytes: u64,
    result: Result<SourceScan, (Option<u32>, String)>,
    notebook: Option<notebook::NotebookSource>,
    /// A notebook's cells left out for a syntax error: cell, line in the cell, message.
    cell_errors: Vec<(u32, u32, String)>,
}

/// The module path of a Python file: its stem below the folders that hold `__init__.py`.
fn module_of(path: &Path, packages: &mut HashMap<PathBuf, Option<Vec<String>>>) -> (Option<Vec<String>>, bool) {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
    let is_package = stem == "__init__";
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let pkg = package_of(&dir, packages);
    let module = match pkg {
        Some(mut p) => {
            if !is_package {
                p.push(stem);
            }
            Some(p)
        }
        None if !is_package => Some(vec![stem]),
        None => None,
    };
    (module, is_package)
}

fn package_of(dir: &Path, cache: &mut HashMap<PathBuf, Option<Vec<String>>>) -> Option<Vec<String>> {
    if let Some(v) = cache.get(dir) {
        return v.clone();
    }
    let v = if dir.join("__init__.py").is_file() {
        let name = dir.file_name().and_then(|s| s.to_str()).map(str::to_string);
        match (name, dir.parent()) {
            (Some(name), Some(parent)) => {
                let mut p = package_of(parent, cache).unwrap_or_default();
                p.push(name);
                Some(p)
            }
            _ => None,
        }
    } else {
        None
    };
    cache.insert(dir.to_path_buf(), v.clone());
    v
}

/// The files under `paths`: `.py` and `.ipynb`, in path order, honouring ignore files. Each
/// folder is walked on `threads` threads (0: ignore's default), then sorted: component-wise
/// path order is the order of a walk that visits each folder's entries by name.
fn discover(paths: &[PathBuf], threads: usize) -> Result<(Vec<Job>, Vec<Unparsable>), String> {
    let mut jobs = Vec::new();
    let mut errors = Vec::new();
    let mut packages = HashMap::new();
    // Each file once, however many of the paths hold it (`scan src src/models`).
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for root in paths {
        if !root.exists() {
            return Err(format!("{}: no such file or folder", root.display()));
        }
        if !root.is_file() && !root.is_dir() {
            return Err(format!("{}: not a file or folder", root.display()));
        }
        let root_is_file = root.is_file();
        // Shown as given, less repeated and trailing separators (`a//b/` is `a/b`).
        let shown: PathBuf = root.components().collect();
        let prefix = if paths.len() > 1 || root_is_file { Some(shown) } else { None };
        let found = std::sync::Mutex::new(Vec::new());
        let failed = std::sync::Mutex::new(Vec::new());
        ignore::WalkBuilder::new(root).require_git(false).threads(threads).build_parallel().run(|| {
            Box::new(|entry| {
                match entry {
                    Ok(entry) => {
                        let ext = entry.path().extension().and_then(|e| e.to_str()).unwrap_or("");
                        // A file named on the command line is scanned whatever its name.
                        let wanted = ext == "py" || ext == "ipynb" || entry.depth() == 0;
                        if wanted && entry.file_type().is_some_and(|t| t.is_file()) {
                            found.lock().expect("no walker panicked").push(entry.into_path());
                        }
                    }
                    Err(e) => failed.lock().expect("no walker panicked").push(e.to_string()),
                }
                ignore::WalkState::Continue
            })
        });
        for e in failed.into_inner().expect("no walker panicked") {
            errors.push(Unparsable { cell: None, error: e, file: root.display().to_string(), line: None });
        }
        let mut found = found.into_inner().expect("no walker panicked");
        found.sort();
        for path in found {
            if paths.len() > 1 && !seen.insert(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone())) {
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let display = match &prefix {
                Some(p) if root_is_file => p.display().to_string(),
                Some(p) => p.join(rel).display().to_string(),
                None => rel.display().to_string(),
            };
            let notebook = ext == "ipynb";
            let (module, is_package) = if notebook { (None, false) } else { module_of(&path, &mut packages) };
            jobs.push(Job { path, display, notebook, module, is_package });
        }
    }
    Ok((jobs, errors))
}

fn scan_job(job: Job, opts: &ScanOptions) -> FileResult {
    let bytes = match std::fs::read(&job.path) {
        Ok(b) => b,
        Err(e) => {
            let result = Err((None, format!("cannot read: {e}")));
            return FileResult { job, bytes: 0, result, notebook: None, cell_errors: Vec::new() };
        }
    };
    let size = bytes.len() as u64;
    if job.notebook {
        let nb = match notebook::code_cells(&bytes) {
            Ok(nb) => nb,
            Err(e) => {
                return FileResult { job, bytes: size, result: Err((None, e)), notebook: None, cell_errors: vec![] };
            }
        };
        let (result, cell_errors, nb) = scan_notebook(nb, opts);
        return FileResult { job, bytes: size, result, notebook: Some(nb), cell_errors };
    }
    let origin = source::Origin { module: job.module.as_deref(), is_package: job.is_package, notebook: false };
    let result =
        source::scan_source(&bytes, &origin, &opts.measured, opts.full_parse).map_err(|e| (Some(e.line), e.message));
    FileResult { job, bytes: size, result, notebook: None, cell_errors: Vec::new() }
}

/// A notebook's scan: a code cell with a syntax error is left out and reported as (cell, line
/// in the cell, message); the other cells are scanned together (they share one namespace).
#[allow(clippy::type_complexity)]
fn scan_notebook(
    mut nb: notebook::NotebookSource,
    opts: &ScanOptions,
) -> (Result<SourceScan, (Option<u32>, String)>, Vec<(u32, u32, String)>, notebook::NotebookSource) {
    let origin = source::Origin { notebook: true, ..Default::default() };
    let mut cell_errors = Vec::new();
    // Jupyter compiles each cell on its own: a cell that does not parse alone is left out (an
    // open string or block must not swallow the cells after it).
    let none = HashSet::new();
    for i in 0..nb.cells.len() {
        let (cell, start) = nb.cells[i];
        if let Err(e) = source::scan_source(nb.cell_source(i).as_bytes(), &origin, &none, true) {
            cell_errors.push((cell, e.line, e.message));
            nb.blank_cell_at(start);
        }
    }
    loop {
        match source::scan_source(nb.source.as_bytes(), &origin, &opts.measured, opts.full_parse) {
            Ok(s) => return (Ok(s), cell_errors, nb),
            Err(e) => {
                let (cell, line) = nb.locate(e.line);
                // Each round leaves out one more cell; a cell left out twice means blanking did
                // not remove the error (it cannot happen: an empty source parses).
                if cell_errors.iter().any(|(c, _, _)| *c == cell) || cell_errors.len() > nb.cells.len() {
                    return (Err((Some(e.line), e.message)), cell_errors, nb);
                }
                cell_errors.push((cell, line, e.message));
                nb.blank_cell_at(e.line);
            }
        }
    }
}

/// Each scanning thread's stack, in bytes: Ruff's node types drop recursively, and dropping a
/// tree just under [`source::MAX_DEPTH`] (9,990 nested `if` blocks) overflows rayon's default
/// 2 MiB in a debug build. Reserved address space, touched only as deep as a tree goes.
const SCAN_STACK: usize = 128 << 20;

/// Threads per core `--threads` may ask for (a thread pool of thousands spends its time
/// stealing work from itself): at most this many per core, and 64 whatever the cores.
const MAX_THREADS_PER_CORE: usize = 8;

/// `threads` when this machine allows that many scanning threads (see
/// [`MAX_THREADS_PER_CORE`]); else an error saying the limit.
pub fn check_threads(threads: usize) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let limit = MAX_THREADS_PER_CORE * cores.max(64 / MAX_THREADS_PER_CORE);
    if threads > limit {
        return Err(format!("at most {limit} on this machine ({MAX_THREADS_PER_CORE} per core)"));
    }
    Ok(threads)
}

/// Scans `paths` (files or folders). Unparsable files are listed in the report, never fatal;
/// an error only when a path does not exist or the thread pool cannot start.
pub fn scan(paths: &[PathBuf], opts: &ScanOptions) -> Result<ScanReport, String> {
    check_threads(opts.threads).map_err(|e| format!("--threads {}: {e}", opts.threads))?;
    let (jobs, walk_errors) = discover(paths, opts.threads)?;
    let bar = if opts.progress {
        let b =
            indicatif::ProgressBar::with_draw_target(Some(jobs.len() as u64), indicatif::ProgressDrawTarget::stderr());
        b.set_style(
            indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} files {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let parsed_bytes = AtomicU64::new(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .stack_size(SCAN_STACK)
        .build()
        .map_err(|e| e.to_string())?;
    let results: Vec<FileResult> = pool.install(|| {
        jobs.into_par_iter()
            .map(|job| {
                let r = scan_job(job, opts);
                if let Ok(s) = &r.result {
                    parsed_bytes.fetch_add(s.parsed_bytes as u64, Ordering::Relaxed);
                }
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let mut report = aggregate(paths, results, parsed_bytes.into_inner());
    // Folders the walk could not read hold files that were not scanned: said, never silent.
    report.unparsable.extend(walk_errors);
    Ok(report)
}

fn aggregate(paths: &[PathBuf], results: Vec<FileResult>, parsed_bytes: u64) -> ScanReport {
    // Star imports of the scanned tree's own modules: what those modules bind.
    let exports: HashMap<String, &Aliases> = results
        .iter()
        .filter_map(|r| Some((r.job.module.as_ref()?.join("."), &r.result.as_ref().ok()?.aliases)))
        .collect();
    let mut report = ScanReport {
        paths: paths.iter().map(|p| p.display().to_string()).collect(),
        parsed_bytes,
        ..ScanReport::default()
    };
    let mut found: BTreeMap<String, Vec<Site>> = BTreeMap::new();
    let mut unresolved: BTreeMap<String, Vec<Site>> = BTreeMap::new();
    for r in &results {
        report.files += 1;
        report.bytes += r.bytes;
        if r.job.notebook {
            report.notebooks += 1;
        }
        for (cell, line, error) in &r.cell_errors {
            report.unparsable.push(Unparsable {
                cell: Some(*cell),
                error: error.clone(),
                file: r.job.display.clone(),
                line: Some(*line),
            });
        }
        let s = match &r.result {
            Ok(s) => s,
            Err((line, error)) => {
                let (cell, line) = match (&r.notebook, line) {
                    (Some(nb), Some(l)) => {
                        let (cell, line) = nb.locate(*l);
                        (Some(cell), Some(line))
                    }
                    _ => (None, *line),
                };
                report.unparsable.push(Unparsable { cell, error: error.clone(), file: r.job.display.clone(), line });
                continue;
            }
        };
        if s.handling == Handling::Skipped {
            report.skipped += 1;
        }
        let site = |line: u32| match &r.notebook {
            Some(nb) => {
                let (cell, line) = nb.locate(line);
                Site { file: r.job.display.clone(), line, cell: Some(cell) }
            }
            None => Site { file: r.job.display.clone(), line, cell: None },
        };
        let Extracted { calls, unresolved: unres, free_calls } = &s.found;
        for (name, line) in calls {
            found.entry(canonical(name)).or_default().push(site(*line));
        }
        for (name, line) in unres {
            unresolved.entry(name.clone()).or_default().push(site(*line));
        }
        for (name, line) in free_calls {
            let mut resolved = None;
            for (module, _) in &s.aliases.stars {
                if let Some(q) = exports.get(module).and_then(|a| a.resolve(name)).filter(|q| framework_of(q).is_some())
                {
                    resolved = Some(Ok(q));
                    break;
                }
                if framework_of(module).is_some() && !name.contains('.') {
                    resolved = Some(Err(format!("{module}.{name}?")));
                    break;
                }
            }
            match resolved {
                Some(Ok(q)) => found.entry(canonical(&q)).or_default().push(site(*line)),
                Some(Err(u)) => unresolved.entry(u).or_default().push(site(*line)),
                None => {}
            }
        }
    }
    report.functions = uses(found, true);
    report.unresolved = uses(unresolved, false);
    report
}

fn uses(map: BTreeMap<String, Vec<Site>>, resolved: bool) -> Vec<FunctionUse> {
    let mut v: Vec<FunctionUse> = map
        .into_iter()
        .map(|(name, mut sites)| {
            sites.sort();
            let files = sites.iter().map(|s| s.file.as_str()).collect::<BTreeSet<_>>().len();
            let framework = if resolved { framework_of(&name) } else { None };
            FunctionUse { framework, calls: sites.len(), files, name, sites }
        })
        .collect();
    v.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.name.cmp(&b.name)));
    v
}
