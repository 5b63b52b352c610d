//! One case's samples summarised robustly: median, quartiles and IQR (linear
//! interpolation between order statistics, NumPy's default `quantile` method), min, Tukey's
//! fences (mild beyond 1.5×IQR, severe beyond 3×IQR; outliers are counted, never dropped)
//! and an `unstable` flag.

use serde::{Deserialize, Serialize};

use super::StatsConfig;

/// The `p` quantile (0..=1) of sorted values by linear interpolation between order
/// statistics (Hyndman–Fan type 7, NumPy's default). `NaN` for no values.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// The median of unsorted values (mean of the middle two for an even count); `NaN` for none.
pub fn median(values: &[f64]) -> f64 {
    median_in_place(&mut values.to_vec())
}

/// [`median`] of `v` in place, without a copy: reorders it (a selection, not a sort; order by
/// [`f64::total_cmp`]). The one median of mlport: the bootstrap's resamples and every
/// analysis use it.
pub fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (left, &mut hi, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        hi
    } else {
        let lo = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo + hi) / 2.0
    }
}

/// Robust summary of one case's samples (ns per call).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Largest sample.
    pub max: f64,
    /// `q3 - q1`.
    pub iqr: f64,
    /// `iqr / median`: the spread relative to the median (0 when the median is 0).
    pub spread: f64,
    /// Samples beyond 1.5×IQR from the quartiles but within 3×IQR (Tukey's mild outliers).
    pub mild_outliers: usize,
    /// Samples beyond 3×IQR from the quartiles (Tukey's severe outliers).
    pub severe_outliers: usize,
    /// Spread above [`StatsConfig::unstable_spread`], more than 10% of the samples severe
    /// outliers, or fewer than [`StatsConfig::min_samples`] samples: the median should not be
    /// trusted to a few percent.
    pub unstable: bool,
}

impl Summary {
    /// Summarises `samples` (any order). `None` for no samples.
    pub fn of(samples: &[f64], config: &StatsConfig) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let (q1, median, q3) = (quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75));
        let iqr = q3 - q1;
        let (mild_lo, mild_hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let (severe_lo, severe_hi) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
        let severe = v.iter().filter(|&&x| x < severe_lo || x > severe_hi).count();
        let beyond_mild = v.iter().filter(|&&x| x < mild_lo || x > mild_hi).count();
        let spread = if median == 0.0 { 0.0 } else { iqr / median };
        Some(Summary {
            n: v.len(),
            min: v[0],
            q1,
            median,
            q3,
            max: v[v.len() - 1],
            iqr,
            spread,
            mild_outliers: beyond_mild - severe,
            severe_outliers: severe,
            unstable: spread > config.unstable_spread || severe * 10 > v.len() || v.len() < config.min_samples,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_hand() {
        // 1..=8: h = 7p; q1 at h=1.75 → 2 + 0.75 = 2.75; median h=3.5 → 4.5; q3 h=5.25 → 6.25.
        let v: Vec<f64> = (1..=8).map(f64::from).collect();
        assert_eq!((quantile(&v, 0.25), quantile(&v, 0.5), quantile(&v, 0.75)), (2.75, 4.5, 6.25));
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn tukey_fences_by_hand() {
        // Sorted: 10 10 11 11 12 12 13 13 30 100 (n = 10, h = 9p).
        // q1: h = 2.25 → 11 + 0.25·0 = 11; median: h = 4.5 → 12; q3: h = 6.75 → 13 + 0.75·0 = 13.
        // IQR 2: mild fences [8, 16], severe fences [5, 19]: 30 and 100 are severe, none mild.
        let s = [12.0, 10.0, 11.0, 13.0, 100.0, 10.0, 11.0, 12.0, 13.0, 30.0];
        let cfg = StatsConfig::default();
        let sum = Summary::of(&s, &cfg).unwrap();
        assert_eq!((sum.q1, sum.median, sum.q3, sum.iqr), (11.0, 12.0, 13.0, 2.0));
        assert_eq!((sum.mild_outliers, sum.severe_outliers), (0, 2));
        assert_eq!((sum.min, sum.max, sum.n), (10.0, 100.0, 10));
        assert!((sum.spread - 2.0 / 12.0).abs() < 1e-12);
        assert!(sum.unstable, "IQR 16.7% of the median is past 10%");
        // 17 is mild (past 16, within 19).
        let s2 = [10.0, 10.0, 11.0, 11.0, 12.0, 12.0, 13.0, 13.0, 13.0, 17.0];
        let sum2 = Summary::of(&s2, &cfg).unwrap();
        assert_eq!((sum2.q1, sum2.q3), (11.0, 13.0));
        assert_eq!((sum2.mild_outliers, sum2.severe_outliers), (1, 0));
    }

    #[test]
    fn steady_samples_are_stable_noisy_ones_are_not() {
        let cfg = StatsConfig::default();
        let steady: Vec<f64> = (0..20).map(|i| 1000.0 + (i % 5) as f64).collect();
        assert!(!Summary::of(&steady, &cfg).unwrap().unstable);
        let noisy: Vec<f64> = (0..20).map(|i| if i % 2 == 0 { 1000.0 } else { 1500.0 }).collect();
        assert!(Summary::of(&noisy, &cfg).unwrap().unstable);
        assert!(Summary::of(&[1.0, 1.0], &cfg).unwrap().unstable, "too few samples");
        // A tight middle with 2 of 5 samples far out (IQR 0.4% of the median) is unstable too.
        let spiky = [1.37e6, 4.0931e6, 4.0934e6, 4.1096e6, 9.26e6];
        let s = Summary::of(&spiky, &cfg).unwrap();
        assert!(s.spread < 0.01 && s.severe_outliers == 2 && s.unstable, "{s:?}");
        assert!(Summary::of(&[], &cfg).is_none());
    }
}
