//! The catalogue: which framework functions mlport calls and how (docs/catalogue.md).
//! The built-in catalogue (catalogue/*.toml) is embedded in the binary.

mod builtin;
mod inputs;
mod load;
pub mod spec;

pub use builtin::builtin;
pub use load::{CatalogueError, MAX_TIMEOUT_S, load_path, parse, parse_files};

use crate::model::{CaseSpec, Dtype, Framework, FunctionRow};

/// One catalogue file: the functions of one framework.
#[derive(Clone, Debug)]
pub struct CatalogueFile {
    /// Where it was read from, for messages (`catalogue/torch.toml (built in)`).
    pub path: String,
    /// The framework every function in the file belongs to (its `framework` key).
    pub framework: Framework,
    /// Content version, recorded with each run.
    pub version: String,
    /// The file's `[[function]]` tables in file order; names are unique within the file.
    pub functions: Vec<Function>,
}

/// A framework function and its cases.
#[derive(Clone, Debug)]
pub struct Function {
    /// Fully qualified name, e.g. `torch.linalg.svd`.
    pub name: String,
    /// `kind = "workload"`: each case builds a whole model or composite computation
    /// (docs/workloads.md); its cases carry a [`crate::model::WorkloadSpec`].
    pub workload: bool,
    /// The paper's test-file stem (the `name` in `paper-functions.json`), when the paper tested it.
    pub paper: Option<String>,
    /// The paper's usage decile, 10 (rarest) ..= 100 (most used).
    pub decile: Option<u8>,
    /// One of the paper's 20 most used functions of its framework.
    pub top20: bool,
    /// Canonical, framework-neutral op name (`svd`) that maps functions across frameworks.
    pub op: Option<String>,
    /// Where the paper's function lives now, if it moved (`torch.svd -> torch.linalg.svd`).
    pub moved: Option<String>,
    /// Free text for readers of the report.
    pub note: Option<String>,
    /// Only supplies float64 references (NumPy files): never planned as a test.
    pub reference_only: bool,
    /// At least one; ids are unique within the function.
    pub cases: Vec<Case>,
}

impl Function {
    /// The function as a run records it (everything but its cases).
    pub fn row(&self, framework: Framework) -> FunctionRow {
        FunctionRow {
            framework,
            name: self.name.clone(),
            paper: self.paper.clone(),
            decile: self.decile,
            top20: self.top20,
            op: self.op.clone(),
            moved: self.moved.clone(),
            note: self.note.clone(),
        }
    }
}

/// A case's own float64 reference: a NumPy or SciPy callable run by the NumPy worker on the
/// case's inputs upcast to float64 (complex128).
#[derive(Clone, Debug, PartialEq)]
pub struct OwnReference {
    /// The callable's full name (`scipy.special.expit`, `numpy.cumsum`).
    pub function: String,
    /// Its keyword arguments (`reference_kwargs`), literal JSON.
    pub kwargs: serde_json::Map<String, serde_json::Value>,
}

/// One case of a function; planned once per dtype.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique within the function, without `/` or whitespace; `default` when the file gives none.
    pub id: String,
    /// The dtype sweep, no repeats; `[float32]` by default.
    pub dtypes: Vec<Dtype>,
    /// Input seed (default 0); the plan adds the run's seed to it (wrapping).
    pub seed: u64,
    /// Per-case timeout override in seconds, in (0, [`MAX_TIMEOUT_S`]]; `None` uses the run's
    /// (60 s by default).
    pub timeout_s: Option<f64>,
    /// Recorded as `skip` with this why, never run.
    pub skip: Option<String>,
    /// The case's own float64 reference (`reference = "scipy.special.expit"`), which wins
    /// over its op's.
    pub reference: Option<OwnReference>,
    /// What the worker receives (function, id, inputs, kwargs, code) and what the comparison
    /// reads (compare, outputs, rtol, atol, tolerance).
    pub spec: CaseSpec,
    /// The catalogue file the case was read from, for messages.
    pub path: String,
    /// The 1-based line of its `[[function.case]]` table.
    pub line: usize,
}

/// A set of catalogue files, at most one per framework.
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    /// Sorted by framework (report order), at most one per framework.
    pub files: Vec<CatalogueFile>,
}

impl Catalogue {
    /// Builds a catalogue. A framework has one file of functions and may have one of
    /// workloads (every function `kind = "workload"`, `catalogue/workloads/<framework>.toml`),
    /// whose functions join the first file's; any other second file for a framework, or a
    /// function name in both, is an error.
    pub fn new(files: Vec<CatalogueFile>) -> Result<Catalogue, CatalogueError> {
        let mut out: Vec<CatalogueFile> = Vec::new();
        let mut merged: Vec<Framework> = Vec::new();
        for mut f in files {
            let only_workloads = |g: &CatalogueFile| !g.functions.is_empty() && g.functions.iter().all(|x| x.workload);
            if let Some(prev) = out.iter_mut().find(|g| g.framework == f.framework) {
                let invalid = |line: usize, message: String| CatalogueError::Invalid {
                    path: f.path.clone(),
                    line,
                    column: 1,
                    message,
                };
                if only_workloads(&f) == only_workloads(prev) || merged.contains(&f.framework) {
                    return Err(invalid(
                        1,
                        format!(
                            "a second catalogue for {} (the first is {}); a framework may add one file of workloads only",
                            f.framework, prev.path
                        ),
                    ));
                }
                if let Some(twice) = f.functions.iter().find(|x| prev.functions.iter().any(|y| y.name == x.name)) {
                    let line = twice.cases.first().map_or(1, |c| c.line);
                    return Err(invalid(line, format!("`{}` is in {} too", twice.name, prev.path)));
                }
                merged.push(f.framework);
                // The functions' file leads: it names the framework's catalogue and version.
                if only_workloads(prev) {
                    std::mem::swap(prev, &mut f);
                }
                prev.path = format!("{} + {}", prev.path, f.path);
                prev.functions.extend(f.functions);
                continue;
            }
            out.push(f);
        }
        out.sort_by_key(|f| f.framework);
        let cat = Catalogue { files: out };
        cat.check_aligned()?;
        Ok(cat)
    }

    /// Cases of different frameworks with the same `op` and case id are compared with each
    /// other and with one float64 reference, so they must get the same inputs: identical
    /// `inputs` and `seed`. The first difference is an error naming both places.
    fn check_aligned(&self) -> Result<(), CatalogueError> {
        let mut first: std::collections::HashMap<(&str, &str), (&Function, &Case)> = Default::default();
        for file in &self.files {
            for f in &file.functions {
                let Some(op) = f.op.as_deref() else { continue };
                for c in &f.cases {
                    match first.get(&(op, c.id.as_str())) {
                        None => {
                            first.insert((op, c.id.as_str()), (f, c));
                        }
                        Some((g, d)) => {
                            let what = if c.seed != d.seed {
                                Some(format!("seed {} but {} has seed {}", c.seed, g.name, d.seed))
                            } else if c.spec.inputs != d.spec.inputs {
                                let json = |i: &[serde_json::Value]| serde_json::Value::from(i.to_vec());
                                Some(format!(
                                    "inputs {} but {} has {}",
                                    json(&c.spec.inputs),
                                    g.name,
                                    json(&d.spec.inputs)
                                ))
                            } else {
                                None
                            };
                            if let Some(what) = what {
                                return Err(CatalogueError::Invalid {
                                    path: c.path.clone(),
                                    line: c.line,
                                    column: 1,
                                    message: format!(
                                        "case `{}` of {} (op `{op}`) must get the same inputs as case `{}` of {} \
                                         ({}:{}) to be compared with it: it has {what}",
                                        c.id, f.name, d.id, g.name, d.path, d.line
                                    ),
                                });
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The NumPy function with this canonical op and a case with this id, the first in file
    /// order (a `reference_only` function may add case ids to an op that a NumPy test already
    /// has): the float64 reference of every aligned case (`None` when the catalogue has none).
    /// The case may be skipped as a NumPy test, or its function `reference_only`: it still
    /// supplies the reference.
    pub fn reference_for(&self, op: &str, case_id: &str) -> Option<(&Function, &Case)> {
        self.file(Framework::Numpy)?
            .functions
            .iter()
            .filter(|f| f.op.as_deref() == Some(op))
            .find_map(|f| f.cases.iter().find(|c| c.id == case_id).map(|c| (f, c)))
    }

    /// The file for a framework, if any.
    pub fn file(&self, fw: Framework) -> Option<&CatalogueFile> {
        self.files.iter().find(|f| f.framework == fw)
    }

    /// Number of functions over all frameworks.
    pub fn function_count(&self) -> usize {
        self.files.iter().map(|f| f.functions.len()).sum()
    }

    /// Looks a function up by fully qualified name in any framework.
    pub fn find(&self, name: &str) -> Option<(Framework, &Function)> {
        self.files.iter().find_map(|f| f.functions.iter().find(|g| g.name == name).map(|g| (f.framework, g)))
    }
}
