//! Formats only: each file renders one result computed elsewhere, in the formats it has.

pub mod catalogue;
pub mod env;
pub mod frequencies;
pub mod runs;
