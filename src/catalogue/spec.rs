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
    /// Relative tolerance for every dtype of the case, replacing the dtype's default
    /// (torch.testing.assert_close's; DESIGN.md); non-negative.
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
    /// Record the case as `skip` with this reason and never run it.
    #[serde(default)]
    pub skip: Option<String>,
    /// Python defining `build(ctx, *inputs, **kwargs)`, run once untimed; it returns the
    /// zero-argument callable that is timed (docs/catalogue.md, "Python case code").
    #[serde(default)]
    pub code: Option<Spanned<String>>,
}

/// A case's `compare`: one rule for every compared output, or one per compared output.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum CompareSpec {
    /// `compare = "up_to_sign"`.
    One(String),
    /// `compare = ["up_to_sign", "allclose", "up_to_sign_rows"]`.
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
    /// Value distribution, one of [`DISTS`] (the worker's default is `normal`); not with `value`.
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
    /// A literal value, cast to the input's dtype, instead of a distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<toml::Value>,
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
pub const COMPARES: [&str; 8] =
    ["allclose", "exact", "sorted", "up_to_sign", "up_to_sign_rows", "shape_dtype", "statistical", "none"];

/// Ways an input may be passed instead of a framework tensor.
pub const PASS_AS: [&str; 4] = ["tensor", "numpy", "list", "scalar"];
