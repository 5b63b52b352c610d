//! Numbers in words, as every human-readable rendering writes them: durations, ratios and
//! their intervals, counts with shares, failure reasons.

use std::collections::BTreeMap;

use crate::model::Reason;
use crate::stats::Estimate;

/// A count with its noun, plural when it is not one: `1 case`, `3 cases`.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A duration in ns in human units with three significant digits: `850 ns`, `12.3 µs`, `4.56 ms`, `1.20 s`.
pub fn latency(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        return format!("{ns:.0} ns");
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    three_significant(value, unit)
}

/// `1.23 GiB`, `512 MiB`: bytes in binary units, three significant digits.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    const KIB: f64 = 1024.0;
    let (value, unit) = if n >= KIB * KIB * KIB {
        (n / (KIB * KIB * KIB), "GiB")
    } else if n >= KIB * KIB {
        (n / (KIB * KIB), "MiB")
    } else if n >= KIB {
        (n / KIB, "KiB")
    } else {
        return format!("{n:.0} B");
    };
    three_significant(value, unit)
}

/// `value unit` with three significant digits for a value in [1, 1000): `4.56 ms`, `868 MiB`.
fn three_significant(value: f64, unit: &str) -> String {
    format!("{} {unit}", significant(value, 3))
}

/// The number formatter of every rendering: `x` (finite, not zero) with `digits` significant
/// digits in positional notation, `{x:.N}` with N = `digits` − 1 − ⌊log₁₀|x|⌋ decimals (none
/// for large values, whose extra digits are kept: `13174`): `4.56`, `83.3`, `0.0310`. The
/// value is rounded once, by the formatting; a value that rounds up to the next power of ten
/// keeps the decimals of its magnitude (`9.996` to three digits is `10.00`); round first (as
/// [`crate::render::paper::sig4`] does) to count the carry.
pub fn significant(x: f64, digits: i32) -> String {
    let decimals = (digits - 1 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// `x` with `digits` significant digits in exponent notation, as Rust writes it: `4.8e-4`,
/// `3.10e1` (`{x:.N e}` with N = `digits` − 1).
pub fn scientific(x: f64, digits: usize) -> String {
    let decimals = digits.saturating_sub(1);
    format!("{x:.decimals$e}")
}

/// A ratio for people: `3.21×`, `0.052×`, `1234×`.
pub fn ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}×")
    } else if r >= 0.1 {
        format!("{r:.2}×")
    } else {
        format!("{r:.3}×")
    }
}

/// `[1.62, 2.03]`: an interval with the precision of [`ratio`].
pub fn interval(e: &Estimate) -> String {
    let r = ratio(e.lower);
    let u = ratio(e.upper);
    format!("[{}, {}]", r.trim_end_matches('×'), u.trim_end_matches('×'))
}

/// `n` and its share of `of`, e.g. `12 (80.0%)`; `n` alone when `of` is 0.
pub fn count_of(n: usize, of: usize) -> String {
    match crate::analysis::percent_of(n, of) {
        Some(p) => format!("{n} ({p:.1}%)"),
        None => n.to_string(),
    }
}

/// Failure reasons, most frequent first, e.g. `dtype_unsupported 12, api_missing 3`; `—` when none.
/// `wrong_result` is left out: it is not an error and has its own column.
pub fn reasons(reasons: &BTreeMap<Reason, usize>) -> String {
    let mut sorted: Vec<(&Reason, &usize)> = reasons.iter().filter(|(r, _)| **r != Reason::WrongResult).collect();
    if sorted.is_empty() {
        return "—".into();
    }
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    sorted.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_formatter_for_significant_digits() {
        assert_eq!(significant(4.5612, 3), "4.56");
        assert_eq!(significant(83.281, 3), "83.3");
        assert_eq!(significant(13174.4, 3), "13174");
        assert_eq!(significant(0.031, 3), "0.0310");
        assert_eq!(significant(-0.30864, 4), "-0.3086");
        assert_eq!(significant(9.996, 3), "10.00", "the decimals of the unrounded magnitude");
        assert_eq!(scientific(4.8e-4, 2), "4.8e-4");
        assert_eq!(scientific(31.0, 3), "3.10e1");
        assert_eq!(scientific(2.0, 1), "2e0");
    }

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(910_548_992), "868 MiB");
        assert_eq!(bytes(2_215_000_000), "2.06 GiB");
        assert_eq!(bytes(50 * 1024 * 1024), "50.0 MiB");
    }

    #[test]
    fn latency_units() {
        assert_eq!(latency(850.0), "850 ns");
        assert_eq!(latency(12_345.0), "12.3 µs");
        assert_eq!(latency(4_561_000.0), "4.56 ms");
        assert_eq!(latency(123_400_000.0), "123 ms");
        assert_eq!(latency(1.2e9), "1.20 s");
    }

    #[test]
    fn reasons_most_frequent_first() {
        let r = BTreeMap::from([(Reason::NotImplemented, 1), (Reason::DtypeUnsupported, 12), (Reason::ApiMissing, 3)]);
        assert_eq!(reasons(&r), "dtype_unsupported 12, api_missing 3, not_implemented 1");
        assert_eq!(reasons(&BTreeMap::new()), "—");
    }
}
