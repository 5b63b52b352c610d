//! The on-disk catalogue format (version 1, docs/catalogue.md) as serde types.
//! Unknown keys are rejected so that a typo is an error with a line number, not a
//! silently ignored setting.

use serde::Deserialize;
use toml::Spanned;

/// The catalogue format version this binary reads.
pub const FORMAT_VERSION: i64 = 1;

/// One catalogue file as written. `Spanned` values keep their byte range for error positions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Catalogue format version; must equal [`FORMAT_VERSION`].
    pub format: Spanned<i64>,
    /// `numpy`, `torch`, `jax` or `tensorflow` (also `np`, `pytorch`, `tf`).
    pub framework: Spanned<String>,
    /// Content version (non-empty), recorded with every run (`2026.11.30`).
    pub version: Spanned<String>,
    /// Free text about the file; read and not kept.
    #[serde(default)]
    pub description: Option<String>,
    /// The `[[function]]` tables.
    #[serde(default)]
    pub function: Vec<Spanned<FunctionSpec>>,
}

/// One `[[function]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    /// Fully qualified name (`torch.linalg.svd`): dotted identifiers, at least one dot, unique in the file.
    pub name: Spanned<String>,
    /// The paper's test-file stem (`paper-functions.json`'s `name`).
    #[serde(default)]
    pub paper: Option<String>,
    /// The paper's usage decile: 10, 20, ..., 100 (most used).
    #[serde(default)]
    pub decile: Option<Spanned<i64>>,
    /// One of the paper's 20 most used names (default false).
    #[serde(default)]
    pub top20: bool,
    /// Canonical, framework-neutral op name (`svd`).
    #[serde(default)]
    pub op: Option<String>,
    /// Where the paper's function lives now, if it moved (`torch.svd -> torch.linalg.svd`).
    #[serde(default)]
    pub moved: Option<String>,
    /// Free text for readers of the report.
    #[serde(default)]
    pub note: Option<String>,
    /// The default `out_dtype` of the function's cases (a case's own wins).
    #[serde(default)]
    pub out_dtype: Option<Spanned<CompareSpec>>,
    /// The default `modes` of the function's cases (a case's own wins).
    #[serde(default)]
    pub modes: Option<Spanned<Vec<String>>>,
    /// NumPy files only: the function is there to supply float64 references to the other
    /// frameworks' cases with its `op` and case ids, and is never run or judged as a NumPy test
    /// (default false).
    #[serde(default)]
    pub reference_only: Option<Spanned<bool>>,
    /// `function` (the default: one API call per case) or `workload` (each case builds a whole
    /// model or composite computation in `code`: one forward or one train step; docs/workloads.md).
    #[serde(default)]
    pub kind: Option<Spanned<String>>,
    /// The `[[function.case]]` tables; at least one.
    #[serde(default)]
    pub case: Vec<Spanned<CaseTable>>,
}

/// One `[[function.case]]` table: one concrete call, planned once per dtype.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseTable {
    /// Unique within the function, non-empty, without `/` or whitespace (default `default`).
    #[serde(default)]
    pub id: Option<Spanned<String>>,
    /// The dtype sweep: names of [`crate::model::Dtype`], non-empty, no repeats (default `["float32"]`).
    #[serde(default)]
    pub dtypes: Option<Spanned<Vec<Spanned<String>>>>,
    /// Positional inputs, in call order.
    #[serde(default)]
    pub inputs: Vec<Spanned<InputSpec>>,
    /// Literal keyword arguments; the worker turns the strings `"$dtype"`, `"$dtype:NAME"` and
    /// `"$device"` into the framework's own dtype and device objects.
    #[serde(default)]
    pub kwargs: toml::Table,
    /// Input seed (default 0); input `i` uses PCG64 seeded `[seed, i]` after the run seed is added.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Comparison rule, one of [`COMPARES`] (default `allclose`): one for every compared
    /// output, or a list with one per compared output.
    #[serde(default)]
    pub compare: Option<Spanned<CompareSpec>>,
    /// Indices of the output leaves to compare (default all).
    #[serde(default)]
    pub outputs: Option<Vec<u32>>,
    /// The dtype every compared output must have, a [`crate::model::Dtype`] name or `T` (the
    /// swept dtype), or a list with one per compared output (docs/catalogue.md, "Output
    /// dtypes"); default: the float64 reference's, mapped to the case's precision.
    #[serde(default)]
    pub out_dtype: Option<Spanned<CompareSpec>>,
    /// The execution modes the case runs in, among `eager`, `compiled`, `compiled_fullgraph`
    /// (docs/modes.md); default every mode a run asks for (`--modes`).
    #[serde(default)]
    pub modes: Option<Spanned<Vec<String>>>,
    /// The `ulp` rule's bound in ULPs of the output's dtype (0.5: correctly rounded); required
    /// by, and only with, a `compare` that names `ulp`.
    #[serde(default)]
    pub max_ulp: Option<Spanned<f64>>,
    /// `ulp = N`: the case's outputs are compared by the `ulp` rule with `max_ulp = N` instead of
    /// the default `allclose` (not with `compare` or `max_ulp`).
    #[serde(default)]
    pub ulp: Option<Spanned<f64>>,
    /// Relative tolerance for every dtype of the case, replacing the dtype's default
    /// (torch.testing.assert_close's; docs/architecture.md, "Words"); non-negative.
    #[serde(default)]
    pub rtol: Option<Spanned<f64>>,
    /// Absolute tolerance for every dtype of the case, replacing the dtype's default; non-negative.
    #[serde(default)]
    pub atol: Option<Spanned<f64>>,
    /// Per-dtype overrides, `tolerance = { float16 = { rtol = 1e-2, atol = 1e-3 } }`; they win
    /// over `rtol`/`atol`.
    #[serde(default)]
    pub tolerance: Option<Spanned<std::collections::BTreeMap<String, ToleranceSpec>>>,
    /// Per-case time limit in seconds, in (0, [`MAX_TIMEOUT_S`](super::MAX_TIMEOUT_S)]
    /// (default: the run's, 60 s).
    #[serde(default)]
    pub timeout_s: Option<Spanned<f64>>,
    /// Record the case as `skip` with this reason and never run it. On a NumPy case that
    /// supplies an op's float64 reference, only the NumPy test is skipped: the reference is
    /// still computed.
    #[serde(default)]
    pub skip: Option<String>,
    /// The case's own float64 reference, which wins over its op's: a NumPy or SciPy callable
    /// (`scipy.special.expit`), called on the case's inputs upcast to float64 with
    /// `reference_kwargs` (not the case's own `kwargs`, whose names are the framework's).
    #[serde(default)]
    pub reference: Option<Spanned<String>>,
    /// Literal keyword arguments of the `reference` callable (`{ axis = 1 }`); only with
    /// `reference`.
    #[serde(default)]
    pub reference_kwargs: Option<Spanned<toml::Table>>,
    /// Python defining `build(ctx, *inputs, **kwargs)`, run once untimed; it returns the
    /// zero-argument callable that is timed (docs/catalogue.md, "Python case code").
    #[serde(default)]
    pub code: Option<Spanned<String>>,
    /// Workloads only: samples each call processes (the batch), for throughput; at least 1.
    #[serde(default)]
    pub batch: Option<Spanned<i64>>,
    /// Workloads only: the off-the-rut pair the case belongs to (`conv2d`); with `rut_role`.
    #[serde(default)]
    pub rut_pair: Option<Spanned<String>>,
    /// Workloads only: `monolithic` (the framework's own kernel, the pair's baseline) or
    /// `composed` (the same mathematics from primitives); with `rut_pair`.
    #[serde(default)]
    pub rut_role: Option<Spanned<String>>,
}

/// A case's `compare` (one rule for every compared output, or one per compared output) or
/// `out_dtype` (likewise, dtype names): one name, or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum CompareSpec {
    /// `compare = "up_to_sign"`, `out_dtype = "int64"`.
    One(String),
    /// `compare = ["up_to_sign", "allclose", "up_to_sign_rows"]`, `out_dtype = ["T", "int64"]`.
    PerOutput(Vec<String>),
}

/// One dtype's entry in a case's `tolerance` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceSpec {
    /// Relative tolerance, non-negative (default: the dtype's).
    #[serde(default)]
    pub rtol: Option<f64>,
    /// Absolute tolerance, non-negative (default: the dtype's).
    #[serde(default)]
    pub atol: Option<f64>,
}

/// One positional input of a case, built in NumPy by `mlport_inputs.py` and sent to the worker
/// as JSON (absent keys are left out).
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// Dimensions, none negative; default `[]` (a 0-d array).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<i64>>,
    /// `T` (the swept dtype, the default) or a fixed [`crate::model::Dtype`] name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Value distribution, one of [`DISTS`] (the worker's default is `normal`); not with
    /// `value` or `fill`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist: Option<String>,
    /// Lower bound, inclusive, for `uniform` (default 0), `positive` (0.5) and integer draws
    /// (-10, or 0 for unsigned); must be below `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// Upper bound, exclusive, for `uniform` (default 1), `positive` (2) and integer draws
    /// (10, or 20 for unsigned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// Mean of `normal` (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Standard deviation of `normal` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
    /// Probability of `true` for a `bool` input (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// First value of `arange` (default 0; step 1, row-major over `shape`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
    /// A literal value (a number, a bool or nested lists of them), cast to the input's dtype,
    /// instead of a distribution; with `shape`, broadcast to it by NumPy's rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<toml::Value>,
    /// One number (or bool) every element of an array of `shape` takes, cast to the input's
    /// dtype: `{ shape = [250, 250], fill = 1.23 }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<toml::Value>,
    /// Pass as a Python scalar, the same as `as = "scalar"`; the shape must hold one element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalar: Option<bool>,
    /// The `as` key: how the input is passed, one of [`PASS_AS`] (default a framework tensor on
    /// the device).
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub as_: Option<String>,
}

/// Value distributions an input may draw from (mlport_inputs.py implements them).
pub const DISTS: [&str; 9] = ["normal", "uniform", "positive", "probs", "spd", "randint", "arange", "ones", "zeros"];

/// Comparison rules a case may declare (`crate::compare::Rule` spells the same names).
pub const COMPARES: [&str; 10] = crate::compare::Rule::NAMES;

/// Ways an input may be passed instead of a framework tensor.
pub const PASS_AS: [&str; 4] = ["tensor", "numpy", "list", "scalar"];
