//! What reports read and comparisons write: float64 references ([`ReferenceRow`]), comparisons
//! of a result's outputs with a reference ([`ComparisonRow`]), and results joined with their
//! case and function ([`ResultRow`]).

use serde::{Deserialize, Serialize};

use super::{CaseResult, CaseRow, Device, FunctionRow, Outcome};

/// once on the inputs of the aligned cases at one swept dtype, upcast to float64 (complex128).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRow {
    /// `reference/<op>/<case_id>/<dtype>`, unique within the run.
    pub key: String,
    /// The canonical op (`cumsum`).
    pub op: String,
    /// The aligned cases' id.
    pub case_id: String,
    /// The swept dtype whose inputs are upcast.
    pub dtype: String,
    /// The NumPy/SciPy function computing it (`numpy.cumsum`).
    pub function: String,
    /// Input seed, the aligned cases' (run seed mixed in).
    pub seed: u64,
    /// The NumPy case's spec as planned (what the worker receives).
    pub spec: serde_json::Value,
    /// `None` until computed; then `pass`, `fail`, `timeout` or `crash`.
    pub outcome: Option<Outcome>,
    /// Why it could not be computed (an error's type and message).
    pub message: Option<String>,
    /// Output descriptions as the worker sent them (index, dtype, shape, .npy path).
    pub outputs: serde_json::Value,
}

/// One output leaf of one result compared with one reference (schema 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// The compared result's case.
    pub case_key: String,
    /// The compared result's device.
    pub device: Device,
    /// `float64` (the NumPy reference) or `device:<name>` (the same case on the reference device).
    pub against: String,
    /// What the reference is, for people: `numpy.cumsum in float64`, `cpu`.
    pub reference: String,
    /// Index of the output leaf.
    pub output_index: u32,
    /// The comparison rule (`allclose`, `up_to_sign`, ...).
    pub rule: String,
    /// Relative tolerance used.
    pub rtol: f64,
    /// Absolute tolerance used.
    pub atol: f64,
    /// `agree`, `disagree` or `incomparable` (nothing to compare: an output not saved, an object).
    pub verdict: String,
    /// Elements compared.
    pub elements: u64,
    /// Elements beyond tolerance.
    pub mismatched: u64,
    /// Largest absolute error over finite elements.
    pub max_abs: Option<f64>,
    /// Largest relative error (|actual − expected| / |expected|, expected ≠ 0).
    pub max_rel: Option<f64>,
    /// Largest error in ULPs of the output's dtype.
    pub max_ulp: Option<f64>,
    /// Elements NaN on one side only.
    pub nan_mismatch: u64,
    /// Elements ±Inf on one side only or of opposite sign.
    pub inf_mismatch: u64,
    /// The output's shape differs from the reference's.
    pub shape_changed: bool,
    /// The output's dtype differs from the reference's (checked against devices only).
    pub dtype_changed: bool,
    /// One line for people.
    pub summary: String,
    /// The whole comparison as JSON.
    pub detail: serde_json::Value,
}

/// A result joined with its case and function, as reports read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The result's id in the store (what `mlport repro` takes); 0 for rows not read from a store.
    #[serde(default)]
    pub id: i64,
    /// The function the case belongs to.
    pub function: FunctionRow,
    /// The case at one dtype.
    pub case: CaseRow,
    /// Its result on one device.
    pub result: CaseResult,
}
