//! mlport: measures how portable machine-learning framework functions are across
//! devices and dtypes, after "The Grand Illusion: The Myth of Software Portability and
//! Implications for ML Progress" (Mince et al., NeurIPS 2023, arXiv 2309.07181).
//!
//! Pipeline: catalogue → plan → workers → outcomes → store → report.

pub mod model;
pub mod report;
pub mod store;
