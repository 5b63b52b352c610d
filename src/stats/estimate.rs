//! The shape every estimator returns — a point with an interval at a confidence level —
//! and the statistics' defaults, kept in one documented [`Default`] impl.

use serde::{Deserialize, Serialize};

/// A point estimate with a confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The estimate from the data as observed (same unit as the data: ns, or a ratio).
    pub point: f64,
    /// Lower end of the interval.
    pub lower: f64,
    /// Upper end of the interval.
    pub upper: f64,
    /// Confidence level of the interval, e.g. 0.95.
    pub level: f64,
}

impl Estimate {
    /// A point with no uncertainty (the interval is the point itself).
    pub fn exact(point: f64, level: f64) -> Estimate {
        Estimate { point, lower: point, upper: point, level }
    }

    /// Half the interval's width relative to the point (`0.04` for ±4%); 0 when the point is 0.
    pub fn relative_half_width(&self) -> f64 {
        if self.point == 0.0 { 0.0 } else { (self.upper - self.lower) / 2.0 / self.point.abs() }
    }

    /// The estimate with every value mapped by a monotone increasing `f` (e.g. `exp`).
    pub fn map(self, f: impl Fn(f64) -> f64) -> Estimate {
        Estimate { point: f(self.point), lower: f(self.lower), upper: f(self.upper), level: self.level }
    }
}

/// Settings of the statistics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatsConfig {
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// Confidence level of every interval.
    pub level: f64,
    /// Seed of the bootstrap's generator; reports use the run's stored seed, so a report
    /// reproduces exactly.
    pub seed: u64,
    /// A case whose IQR/median exceeds this is flagged `unstable`.
    pub unstable_spread: f64,
    /// A case with fewer samples than this is flagged `unstable`.
    pub min_samples: usize,
    /// A case whose worker threads waited for a CPU (runnable, not running: Linux's schedstat
    /// run delay, summed over threads) for more than this share of its steady state's wall
    /// time is flagged `unstable`: other processes held the CPUs it was timed on.
    #[serde(default = "default_max_runqueue_wait")]
    pub max_runqueue_wait: f64,
}

fn default_max_runqueue_wait() -> f64 {
    StatsConfig::default().max_runqueue_wait
}

impl Default for StatsConfig {
    /// 10,000 resamples (criterion.rs's cheap default is 100,000; 10,000 keeps a
    /// 200-function report under a second) for 95% percentile intervals, seed 0; a case is
    /// unstable when its IQR exceeds 10% of its median (twice the worker's 5% stopping
    /// target), it has fewer than 3 samples, or its threads waited for a CPU more than 10% of
    /// its steady state (on this project's 2-core machine an idle run measures 0–2%; a run
    /// beside one CPU-bound process 50–130%).
    fn default() -> Self {
        StatsConfig {
            resamples: 10_000,
            level: 0.95,
            seed: 0,
            unstable_spread: 0.10,
            min_samples: 3,
            max_runqueue_wait: 0.10,
        }
    }
}
