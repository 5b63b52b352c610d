//! Latency statistics, self-contained (after criterion.rs's stats module): robust
//! summaries of a case's samples ([`summary`]), bootstrap confidence intervals with a
//! seeded portable generator ([`bootstrap`]), and the [`Estimate`] every estimator returns.
//! Nothing here knows about stores, workers or reports.

pub mod bootstrap;
pub mod estimate;
pub mod summary;

pub use bootstrap::{SplitMix64, geometric_mean, median_ci, ratio_of_medians};
pub use estimate::{Estimate, StatsConfig};
pub use summary::{Summary, median, median_in_place, quantile};
