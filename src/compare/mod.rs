//! Numeric comparison of an output with its reference: [`dtype`] names the dtypes (one
//! vocabulary for the whole crate, re-exported as `crate::model::Dtype` and `DtypeName`),
//! [`npy`] reads and writes NumPy `.npy`
//! files into typed arrays, [`rule`] holds the catalogue's comparison rules and
//! `torch.testing.assert_close`'s per-dtype tolerances, [`metrics`] compares (verdict, max
//! abs/rel error, ULPs, NaN/Inf mismatches, worst element) in one parallel pass, [`ks`] is the
//! two-sample Kolmogorov–Smirnov test of the `statistical` rule, and `element` reads any
//! dtype's elements as float64 or exact integers.

pub mod dtype;
mod element;
pub mod ks;
pub mod metrics;
pub mod npy;
#[cfg(test)]
mod numpy_fixtures;
pub mod rule;

pub use ks::{KsTest, kolmogorov_sf, ks_2samp};
pub use metrics::{Comparison, KS_ALPHA, Verdict, compare};
pub use npy::{Data, ElementType, NpyArray, NpyError, ShapeError, read_npy, write_npy};
pub use rule::{Rule, Tolerance, UnknownRule};

/// The real parts of every element of `a`, row-major, as float64 (integers and bools converted;
/// complex data gives its real parts). For the whole-model rule, which flattens a model's outputs.
pub fn real_f64(a: &NpyArray) -> Vec<f64> {
    let mut re = vec![0.0; a.len()];
    if a.dtype().is_complex() {
        let mut im = vec![0.0; a.len()];
        element::load_f64(a.data(), 0, &mut re, Some(&mut im));
    } else {
        element::load_f64(a.data(), 0, &mut re, None);
    }
    re
}
