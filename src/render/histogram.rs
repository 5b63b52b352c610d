//! The text histogram of ratios both slowdown and modes reports draw: one row per factor of 2
//! (log2 bins `[2^k, 2^(k+1))`), bars scaled to 40 `#` for the fullest bin.

use std::fmt::Write as _;

/// The bin rows of `ratios` (those ≤ 0 are left out), each `  [lo, hi) ### n` and a newline;
/// with `mark = Some((limit, text))`, a rule line reading `text` before the first bin at or
/// beyond `limit`. Empty when no ratio is positive.
pub fn log2_rows(ratios: &[f64], mark: Option<(f64, &str)>) -> String {
    let ratios: Vec<f64> = ratios.iter().copied().filter(|x| *x > 0.0).collect();
    if ratios.is_empty() {
        return String::new();
    }
    let bin = |x: f64| x.log2().floor() as i32;
    let lo = ratios.iter().map(|&x| bin(x)).min().unwrap_or(0);
    let hi = ratios.iter().map(|&x| bin(x)).max().unwrap_or(0);
    let counts: Vec<usize> = (lo..=hi).map(|k| ratios.iter().filter(|&&x| bin(x) == k).count()).collect();
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let edge = |k: i32| {
        let v = 2f64.powi(k);
        if v >= 1.0 { format!("{v:.0}×") } else { format!("1/{:.0}×", 1.0 / v) }
    };
    let mut out = String::new();
    let mut marked = mark.is_none();
    for (i, k) in (lo..=hi).enumerate() {
        if let Some((_, text)) = mark.filter(|(limit, _)| !marked && 2f64.powi(k) >= *limit) {
            let _ = writeln!(out, "  {:─<24} {text}", "");
            marked = true;
        }
        let n = counts[i];
        let bar = "#".repeat((n * 40).div_ceil(most));
        let _ = writeln!(out, "  {:>16} {bar} {n}", format!("[{}, {})", edge(k), edge(k + 1)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_factors_of_two_and_the_mark_sits_before_the_limit() {
        let rows = log2_rows(&[0.3, 1.5, 1.9, 40.0, 0.0], Some((10.0, "beyond 10×")));
        let lines: Vec<&str> = rows.lines().map(str::trim_start).collect();
        // Bins 1/4× .. 64×: eight rows, the fullest (two ratios) 40 wide, and the mark before 16×.
        assert_eq!(lines.len(), 9, "{rows}");
        assert_eq!(lines[0], format!("[1/4×, 1/2×) {} 1", "#".repeat(20)));
        assert_eq!(lines[1], "[1/2×, 1×)  0");
        assert_eq!(lines[2], format!("[1×, 2×) {} 2", "#".repeat(40)));
        assert!(lines[6].starts_with('─') && lines[6].ends_with("beyond 10×"), "{rows}");
        assert!(lines[7].starts_with("[16×, 32×)") && lines[8].starts_with("[32×, 64×)"), "{rows}");
        // No mark when no bin reaches the limit; nothing at all without a positive ratio.
        assert!(!log2_rows(&[1.5], Some((10.0, "beyond 10×"))).contains("beyond"));
        assert!(log2_rows(&[0.0, -1.0], None).is_empty());
    }
}
