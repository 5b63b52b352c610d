//! Formats only: every report of [`crate::analysis`] (and of [`crate::scan`] and
//! [`crate::audit`]) as a terminal table, GitHub Markdown, versioned JSON or CSV. Every
//! `mlport report` kind renders through one trait, [`Report`]. One [`Format`], one table builder ([`grid::Grid`]), one CSV writer ([`csv::Csv`], RFC 4180),
//! the Markdown helpers ([`markdown`]) and the words for numbers ([`units`]); then one file
//! per report, each reading an analysis result and computing nothing; and the listings of
//! the commands that only show what they hold (`runs`, `env`, `list`, `mine`, `sample`).

pub mod audit;
pub mod campaign;
pub mod catalogue;
pub mod csv;
pub mod diff;
pub mod dtypes;
pub mod env;
mod format;
pub mod frameworks;
pub mod frequencies;
pub mod grid;
pub mod histogram;
pub mod html;
pub mod json;
pub mod markdown;
pub mod modes;
pub mod ops;
pub mod overview;
pub mod paper;
pub mod paper_compare;
pub mod portability;
pub mod report;
pub mod runs;
pub mod scan;
pub mod slowdown;
pub mod suite;
pub mod units;
pub mod workloads;

pub use format::Format;
pub use portability::{JSON_BUNDLE_FORMAT, JSON_FORMAT, JSON_FUNCTIONS_FORMAT, JSON_VERSION};
pub use report::{Report, to_text};
pub use units::latency;
