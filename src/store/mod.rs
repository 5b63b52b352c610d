//! Durable storage of runs, cases and results.

pub mod records;
