//! The two-sample Kolmogorov–Smirnov test for the `statistical` rule: the statistic
//! D = sup_x |F₁(x) − F₂(x)| of the two empirical distribution functions (ties handled by
//! stepping past all equal values on both sides, as `scipy.stats.ks_2samp` does with
//! `searchsorted(side='right')`), and its asymptotic p-value from Kolmogorov's limiting
//! distribution (Kolmogorov 1933; Smirnov 1948 for two samples):
//! p = Q_KS(√(n₁n₂/(n₁+n₂))·D) with Q_KS(λ) = 2 Σ_{j≥1} (−1)^{j−1} e^{−2j²λ²}
//! (Numerical Recipes, 3rd ed., §14.3.3, eq. 14.3.7), summed for λ < 1 through the equivalent
//! theta-function form 1 − (√(2π)/λ) Σ_{j≥1} e^{−(2j−1)²π²/(8λ²)}, which converges fast there.
//! This is `scipy.stats.kstwobign.sf`; scipy's own `ks_2samp(method='asymp')` instead uses
//! the finite-n one-sample distribution `kstwo.sf(D, round(n₁n₂/(n₁+n₂)))`, which is close
//! for large samples.

use rayon::slice::ParallelSliceMut;

/// The outcome of a two-sample Kolmogorov–Smirnov test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KsTest {
    /// D: the largest distance between the two empirical distribution functions, in [0, 1].
    pub statistic: f64,
    /// The asymptotic two-sided p-value, in [0, 1].
    pub p_value: f64,
}

/// Kolmogorov's limiting survival function Q_KS(λ) = P(K > λ), `scipy.stats.kstwobign.sf`.
/// 1 for λ ≤ 0.
pub fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda.is_nan() {
        return f64::NAN;
    }
    if lambda <= 0.0 {
        return 1.0;
    }
    if lambda < 1.0 {
        // P(K ≤ λ) = (√(2π)/λ) Σ exp(−(2j−1)²π²/(8λ²)).
        let c = -std::f64::consts::PI * std::f64::consts::PI / (8.0 * lambda * lambda);
        let mut sum = 0.0;
        for j in 1..=100 {
            let k = (2 * j - 1) as f64;
            let term = (k * k * c).exp();
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        (1.0 - (2.0 * std::f64::consts::PI).sqrt() / lambda * sum).clamp(0.0, 1.0)
    } else {
        let c = -2.0 * lambda * lambda;
        let mut sum = 0.0;
        for j in 1..=100 {
            let jf = j as f64;
            let term = (jf * jf * c).exp();
            sum += if j % 2 == 1 { term } else { -term };
            if term <= sum.abs() * 1e-17 {
                break;
            }
        }
        (2.0 * sum).clamp(0.0, 1.0)
    }
}

/// The two-sample test on `a` and `b` (any order; sorted in place here, in parallel). Neither
/// may hold NaN (the caller drops them); ±Inf are fine. Both non-empty, or D is 0 and p 1.
pub fn ks_2samp(a: &mut [f64], b: &mut [f64]) -> KsTest {
    debug_assert!(!a.iter().chain(b.iter()).any(|x| x.is_nan()));
    if a.is_empty() || b.is_empty() {
        return KsTest { statistic: 0.0, p_value: 1.0 };
    }
    a.par_sort_unstable_by(f64::total_cmp);
    b.par_sort_unstable_by(f64::total_cmp);
    let (n1, n2) = (a.len(), b.len());
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < n1 && j < n2 {
        // The next distinct value of the pooled sample; step past it on both sides.
        let x = if a[i] <= b[j] { a[i] } else { b[j] };
        while i < n1 && a[i] <= x {
            i += 1;
        }
        while j < n2 && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n1 as f64 - j as f64 / n2 as f64).abs());
    }
    let en = n1 as f64 * n2 as f64 / (n1 + n2) as f64;
    KsTest { statistic: d, p_value: kolmogorov_sf(en.sqrt() * d) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kolmogorov_distribution_known_values() {
        // Q_KS(1.36) ≈ 0.05 and Q_KS(1.63) ≈ 0.01: the classic critical values.
        assert!((kolmogorov_sf(1.3581) - 0.05).abs() < 1e-4);
        assert!((kolmogorov_sf(1.6276) - 0.01).abs() < 1e-4);
        // The two series agree where they meet.
        let below = kolmogorov_sf(1.0 - 1e-12);
        let at = kolmogorov_sf(1.0);
        assert!((below - at).abs() < 1e-11, "{below} vs {at}");
        assert!((at - 0.26999967167735456).abs() < 1e-15, "{at}");
        assert_eq!(kolmogorov_sf(0.0), 1.0);
        assert_eq!(kolmogorov_sf(0.05), 1.0);
        assert!(kolmogorov_sf(10.0) < 1e-80);
    }

    #[test]
    fn statistic_by_hand() {
        // a = {1, 2, 3}, b = {2, 4}: after 1: |1/3 − 0|; after 2: |2/3 − 1/2|; after 3: |1 − 1/2|;
        // after 4: 0. D = 1/2; en = 6/5.
        let t = ks_2samp(&mut [3.0, 1.0, 2.0], &mut [4.0, 2.0]);
        assert_eq!(t.statistic, 0.5);
        assert_eq!(t.p_value, kolmogorov_sf((1.2f64).sqrt() * 0.5));
        // Identical samples (with ties) have D = 0, p = 1.
        let t = ks_2samp(&mut [1.0, 1.0, 2.0, f64::INFINITY], &mut [2.0, 1.0, f64::INFINITY, 1.0]);
        assert_eq!((t.statistic, t.p_value), (0.0, 1.0));
        // Disjoint samples: D = 1.
        let t = ks_2samp(&mut [0.0; 50], &mut [1.0; 50]);
        assert_eq!(t.statistic, 1.0);
        assert!(t.p_value < 1e-20);
    }
}
