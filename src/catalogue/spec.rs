//! The on-disk catalogue format (version 1, docs/catalogue.md) as serde types.
//! Unknown keys are rejected so that a typo is an error with a line number, not a
//! silently ignored setting.

use serde::Deserialize;
use toml::Spanned;

/// The catalogue format version this binary reads.
pub const FORMAT_VERSION: i64 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    pub format: Spanned<i64>,
    pub framework: Spanned<String>,
    pub version: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub function: Vec<Spanned<FunctionSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    pub name: Spanned<String>,
    #[serde(default)]
    pub paper: Option<String>,
    #[serde(default)]
    pub decile: Option<Spanned<i64>>,
    #[serde(default)]
    pub top20: bool,
    #[serde(default)]
    pub op: Option<String>,
    #[serde(default)]
    pub moved: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub case: Vec<Spanned<CaseSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    #[serde(default)]
    pub id: Option<Spanned<String>>,
    #[serde(default)]
    pub dtypes: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub inputs: Vec<Spanned<InputSpec>>,
    #[serde(default)]
    pub kwargs: toml::Table,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub compare: Option<Spanned<String>>,
    #[serde(default)]
    pub outputs: Option<Vec<u32>>,
    #[serde(default)]
    pub timeout_s: Option<Spanned<f64>>,
    #[serde(default)]
    pub skip: Option<String>,
    #[serde(default)]
    pub code: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dist: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<toml::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalar: Option<bool>,
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub as_: Option<String>,
}

/// Value distributions an input may draw from (mlport_inputs.py implements them).
pub const DISTS: [&str; 9] = ["normal", "uniform", "positive", "probs", "spd", "randint", "arange", "ones", "zeros"];

/// Comparison rules a case may declare (numeric comparison reads them).
pub const COMPARES: [&str; 6] = ["allclose", "exact", "sorted", "up_to_sign", "shape_dtype", "none"];

/// Ways an input may be passed instead of a framework tensor.
pub const PASS_AS: [&str; 4] = ["tensor", "numpy", "list", "scalar"];
