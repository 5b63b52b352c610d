//! Bootstrap confidence intervals (Efron's percentile method) with a seeded, portable
//! generator, so an interval reproduces bit for bit on any machine from the stored seed:
//! the median of one case, the ratio of two sides' medians (each side resampled
//! independently, within each of its cases), and the geometric mean of ratios over functions.

use super::summary::{median_in_place, quantile};
use super::{Estimate, StatsConfig};

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny portable generator; its output for a seed
/// is the same on every platform.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// A generator for one named stream of a seed (e.g. one function of a report), so that
    /// intervals do not depend on the order they are computed in.
    pub fn stream(seed: u64, name: &str) -> SplitMix64 {
        // FNV-1a over the name, mixed into the seed.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        SplitMix64::new(seed ^ h)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`), without bias (Lemire's multiply-and-reject).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// Percentile interval of bootstrap `stats` around `point`.
fn percentile(point: f64, mut stats: Vec<f64>, level: f64) -> Estimate {
    stats.retain(|x| x.is_finite());
    if stats.is_empty() {
        return Estimate::exact(point, level);
    }
    stats.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0;
    Estimate { point, lower: quantile(&stats, alpha), upper: quantile(&stats, 1.0 - alpha), level }
}

/// Fills `out` with a resample (with replacement) of each group, pooled.
fn resample_pooled(groups: &[&[f64]], rng: &mut SplitMix64, out: &mut Vec<f64>) {
    out.clear();
    for g in groups {
        for _ in 0..g.len() {
            out.push(g[rng.below(g.len() as u64) as usize]);
        }
    }
}

/// The median of `samples` with a bootstrap percentile interval (`config.resamples`
/// resamples of the same size, drawn with `SplitMix64::new(config.seed)`). `None` when empty.
pub fn median_ci(samples: &[f64], config: &StatsConfig) -> Option<Estimate> {
    if samples.is_empty() {
        return None;
    }
    let point = median_in_place(&mut samples.to_vec());
    let mut rng = SplitMix64::new(config.seed);
    let mut buf = Vec::with_capacity(samples.len());
    let stats = (0..config.resamples)
        .map(|_| {
            resample_pooled(&[samples], &mut rng, &mut buf);
            median_in_place(&mut buf)
        })
        .collect();
    Some(percentile(point, stats, config.level))
}

/// The ratio `median(b) / median(a)` of the pooled samples of two sides, each side given as
/// its cases' samples, with a bootstrap percentile interval: each resample draws every case of
/// each side independently, with replacement, within that case (the cases themselves are
/// fixed). `None` when a side has no samples or a zero median.
pub fn ratio_of_medians(a: &[&[f64]], b: &[&[f64]], config: &StatsConfig) -> Option<Estimate> {
    let pooled = |s: &[&[f64]]| s.iter().flat_map(|g| g.iter().copied()).collect::<Vec<f64>>();
    let (mut pa, mut pb) = (pooled(a), pooled(b));
    if pa.is_empty() || pb.is_empty() {
        return None;
    }
    let (ma, mb) = (median_in_place(&mut pa), median_in_place(&mut pb));
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let mut rng = SplitMix64::new(config.seed);
    let stats = (0..config.resamples)
        .map(|_| {
            resample_pooled(a, &mut rng, &mut pa);
            let ra = median_in_place(&mut pa);
            resample_pooled(b, &mut rng, &mut pb);
            median_in_place(&mut pb) / ra
        })
        .collect();
    Some(percentile(mb / ma, stats, config.level))
}

/// The geometric mean of positive `ratios` (one per function) with a bootstrap percentile
/// interval over the functions (resampled with replacement). `None` when empty or when a
/// ratio is not positive.
pub fn geometric_mean(ratios: &[f64], config: &StatsConfig) -> Option<Estimate> {
    if ratios.is_empty() || ratios.iter().any(|r| r.is_nan() || *r <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let point = mean(&logs);
    let mut rng = SplitMix64::new(config.seed);
    let mut buf = Vec::with_capacity(logs.len());
    let stats = (0..config.resamples)
        .map(|_| {
            resample_pooled(&[&logs], &mut rng, &mut buf);
            mean(&buf)
        })
        .collect();
    Some(percentile(point, stats, config.level).map(f64::exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // The reference implementation (Vigna's splitmix64.c) seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        let mut r = SplitMix64::new(7);
        let mut counts = [0usize; 3];
        for _ in 0..30_000 {
            counts[r.below(3) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (9_500..10_500).contains(&c)), "{counts:?}");
    }

    #[test]
    fn bootstrap_median_distribution_matches_the_exact_one() {
        // Resampling {1, 2, 3} three times: the median is 1 when at least two draws are 1,
        // P = 3·(1/3)²·(2/3) + (1/3)³ = 7/27; likewise 3; and 2 with P = 13/27.
        let mut rng = SplitMix64::new(42);
        let (mut buf, mut ones, mut twos) = (Vec::new(), 0usize, 0usize);
        let n = 200_000;
        for _ in 0..n {
            resample_pooled(&[&[1.0, 2.0, 3.0]], &mut rng, &mut buf);
            match median_in_place(&mut buf) as i64 {
                1 => ones += 1,
                2 => twos += 1,
                _ => {}
            }
        }
        assert!((ones as f64 / n as f64 - 7.0 / 27.0).abs() < 0.005);
        assert!((twos as f64 / n as f64 - 13.0 / 27.0).abs() < 0.005);
        // So a 90% interval runs from 1 to 3 (each tail holds 25.9% > 5%) and a 40% one is
        // [2, 2] (the 30th and 70th percentiles both fall in the middle mass 25.9%..74.1%).
        let cfg = StatsConfig { seed: 42, ..StatsConfig::default() };
        let e = median_ci(&[1.0, 2.0, 3.0], &cfg).unwrap();
        assert_eq!((e.point, e.lower, e.upper, e.level), (2.0, 1.0, 3.0, 0.95));
        let e = median_ci(&[1.0, 2.0, 3.0], &StatsConfig { level: 0.4, ..cfg }).unwrap();
        assert_eq!((e.lower, e.upper), (2.0, 2.0));
    }

    #[test]
    fn a_fixed_seed_reproduces_the_interval_exactly() {
        let s: Vec<f64> = (0..50).map(|i| 100.0 + ((i * 37) % 23) as f64).collect();
        let cfg = StatsConfig { seed: 2024, resamples: 2_000, ..StatsConfig::default() };
        let e1 = median_ci(&s, &cfg).unwrap();
        let e2 = median_ci(&s, &cfg).unwrap();
        assert_eq!(e1, e2);
        // Computed independently by benches/stats_reference.py (the same generator and
        // percentile rule re-implemented in Python).
        assert_eq!((e1.point, e1.lower, e1.upper), REFERENCE_2024);
        assert!(e1.lower <= e1.point && e1.point <= e1.upper);
    }

    const REFERENCE_2024: (f64, f64, f64) = (111.0, 107.5, 114.0);

    #[test]
    fn ratio_of_medians_and_its_interval() {
        let a: Vec<f64> = (0..40).map(|i| 100.0 + (i % 7) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| 3.0 * x).collect();
        let cfg = StatsConfig { resamples: 2_000, ..StatsConfig::default() };
        let e = ratio_of_medians(&[&a], &[&b], &cfg).unwrap();
        assert_eq!(e.point, 3.0);
        assert!(e.lower < 3.0 && e.upper > 3.0 && e.upper / e.lower < 1.1, "{e:?}");
        // Identical constant sides: no uncertainty at all.
        let e = ratio_of_medians(&[&[5.0, 5.0], &[5.0]], &[&[10.0; 4]], &cfg).unwrap();
        assert_eq!((e.point, e.lower, e.upper), (2.0, 2.0, 2.0));
        assert!(ratio_of_medians(&[&[]], &[&[1.0]], &cfg).is_none());
        assert!(ratio_of_medians(&[&[0.0]], &[&[1.0]], &cfg).is_none());
    }

    #[test]
    fn geometric_mean_by_hand() {
        // (2 · 8)^(1/2) = 4; (1 · 10 · 100)^(1/3) = 10.
        let cfg = StatsConfig { resamples: 1_000, ..StatsConfig::default() };
        let e = geometric_mean(&[2.0, 8.0], &cfg).unwrap();
        assert!((e.point - 4.0).abs() < 1e-12);
        // Resamples of two values: {2,2}, {2,8}, {8,8}: the interval spans 2..8.
        assert!((e.lower - 2.0).abs() < 1e-12 && (e.upper - 8.0).abs() < 1e-9, "{e:?}");
        let e = geometric_mean(&[1.0, 10.0, 100.0], &cfg).unwrap();
        assert!((e.point - 10.0).abs() < 1e-9);
        assert!(geometric_mean(&[], &cfg).is_none() && geometric_mean(&[1.0, 0.0], &cfg).is_none());
    }
}
