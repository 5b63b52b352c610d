//! Numeric comparison of an output with its reference: [`npy`] reads and writes NumPy `.npy`
//! files into typed arrays, [`rule`] holds the catalogue's comparison rules and
//! `torch.testing.assert_close`'s per-dtype tolerances, [`metrics`] compares (verdict, max
//! abs/rel error, ULPs, NaN/Inf mismatches, worst element) in one parallel pass, [`ks`] is the
//! two-sample Kolmogorov–Smirnov test of the `statistical` rule, and `element` reads any
//! dtype's elements as float64 or exact integers.

mod element;
pub mod ks;
pub mod metrics;
pub mod npy;
#[cfg(test)]
mod numpy_fixtures;
pub mod rule;

pub use ks::{KsTest, kolmogorov_sf, ks_2samp};
pub use metrics::{Comparison, KS_ALPHA, Verdict, compare};
pub use npy::{Data, Dtype, NpyArray, NpyError, ShapeError, read_npy, write_npy};
pub use rule::{Rule, Tolerance, UnknownRule};
