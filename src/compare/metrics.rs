//! The comparison of one output with its reference: the verdict under a [`Rule`] and the
//! error metrics a report shows, computed in one parallel pass (rayon over 64 Ki-element
//! tasks, each converting 1 Ki-element blocks into stack buffers, then a reduce). The
//! elementwise test is `torch.testing.assert_close`'s and `numpy.isclose`'s asymmetric form
//! `|a − e| ≤ atol + rtol·|e|` (complex: the modulus), NaN agreeing with NaN and ±Inf only
//! with the same-signed Inf; integers and bool compare exactly as `i128`.
//!
//! **ULPs** are counted in the dtype the framework reported (bfloat16 saved as float32 still
//! gets bfloat16 ULPs) as the number of representable values of that dtype between the output
//! and the expected value, fractionally: `|ord(a) − ord(e)|`, where `ord` numbers the dtype's
//! values in order (0 for +0, 1 for the smallest subnormal, negatives mirrored) and is linear
//! between neighbours. Within one binade this is `|a − e|` over the dtype's spacing there
//! (2^(⌊log₂|e|⌋ − p), p explicit mantissa bits: `numpy.spacing`'s); below the smallest normal
//! the spacing is that at the smallest normal (the subnormal step 2^(emin − p)), so zero is an
//! ordinary point and never divides. A distance across binades counts the values actually
//! between (NumPy's `nulp_diff` for representable values), so `0.38` against `0` in bfloat16
//! is 16,067 ULP (the bfloat16 values in between), not `0.38 / 2^-133` = 4.1e39. An output is
//! **correctly rounded** (the float64 reference rounded to nearest in the output's dtype) exactly
//! when every element is within 0.5 ULP by this count (Muller et al., "Handbook of
//! Floating-Point Arithmetic", 2.6: ulp(x) for x in [2^e, 2^(e+1)) is 2^(max(e, emin) − p)).

use std::borrow::Cow;

use half::{bf16, f16};
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize};

use super::dtype::{Dtype, DtypeName};
use super::element::{self, is_integral};
use super::ks::ks_2samp;
use super::npy::NpyArray;
use super::rule::{Rule, Tolerance, align_signs, sort_last_axis};

/// The `statistical` rule's significance level: the outputs disagree when the
/// Kolmogorov–Smirnov p-value is below it.
pub const KS_ALPHA: f64 = 0.001;

/// Elements per rayon task.
const TASK: usize = 1 << 16;
/// Elements per block converted into stack buffers.
const BLOCK: usize = 1 << 10;

/// What the comparison concluded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// The output matches the reference under the rule.
    Agree,
    /// The output differs: values beyond tolerance, a changed shape, a changed dtype (when
    /// dtypes are checked) or a different distribution.
    Disagree,
    /// The two cannot be compared under the rule (e.g. `statistical` on complex data, an
    /// `up_to_sign` axis out of range); usually a catalogue or harness problem.
    Incomparable {
        /// Why.
        reason: String,
    },
}

/// The result of comparing an output with its reference. Metrics that do not apply stay 0 /
/// `None`; non-finite floats serialise as JSON `null`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The rule applied.
    pub rule: Rule,
    /// The relative tolerance used (0 for `exact`).
    pub rtol: f64,
    /// The absolute tolerance used (0 for `exact`).
    pub atol: f64,
    /// The conclusion.
    pub verdict: Verdict,
    /// Elements compared (the expected side's count).
    pub elements: u64,
    /// Elements beyond tolerance, NaN and Inf mismatches included.
    pub mismatched: u64,
    /// `mismatched / elements` (0 for no elements).
    pub mismatched_share: f64,
    /// Largest |a − e| over the elements where both are finite (null in JSON when it overflowed).
    #[serde(deserialize_with = "null_as_inf")]
    pub max_abs: f64,
    /// Largest |a − e|/|e| over the elements where both are finite and e ≠ 0.
    #[serde(deserialize_with = "null_as_inf")]
    pub max_rel: f64,
    /// Largest difference in ULPs of `dtype_actual` (for integers and bool, |a − e|; complex:
    /// the larger of the two components'), over the finite elements.
    #[serde(deserialize_with = "null_as_inf")]
    pub max_ulp: f64,
    /// The `ulp` rule's bound in ULPs (`None` for the other rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ulp_limit: Option<f64>,
    /// Whether every element is the reference rounded to nearest in the output's dtype (within
    /// 0.5 ULP, no NaN/Inf mismatch): known only for an elementwise rule against a wider
    /// reference (float16, bfloat16, float32 or complex64 against float64 or complex128) with
    /// elements to compare; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctly_rounded: Option<bool>,
    /// Elements where exactly one side is NaN (complex: either component).
    pub nan_mismatch: u64,
    /// Elements where an Inf meets anything but the same Inf (and neither side is NaN).
    pub inf_mismatch: u64,
    /// The output's shape.
    pub shape_actual: Vec<usize>,
    /// The reference's shape.
    pub shape_expected: Vec<usize>,
    /// The shapes differ (then nothing else is compared, and the verdict is `Disagree`).
    pub shape_changed: bool,
    /// The dtype the framework reported for the output.
    pub dtype_actual: DtypeName,
    /// The dtype reported for the reference.
    pub dtype_expected: DtypeName,
    /// The reported dtypes differ (`Disagree` when dtypes are checked).
    pub dtype_changed: bool,
    /// C-order multi-index of the element that exceeds its tolerance by the most (or comes
    /// closest to it when none does); a NaN or Inf mismatch exceeds by +∞, the first one wins.
    /// For `sorted`, an index into the sorted arrays. `None` when nothing was compared.
    pub worst_index: Option<Vec<usize>>,
    /// The output's value at `worst_index` (the real part, for complex).
    pub worst_actual: Option<f64>,
    /// The reference's value at `worst_index` (the real part, for complex).
    pub worst_expected: Option<f64>,
    /// The imaginary part of the output's value at `worst_index`, for complex data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_actual_imag: Option<f64>,
    /// The imaginary part of the reference's value at `worst_index`, for complex data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_expected_imag: Option<f64>,
    /// The Kolmogorov–Smirnov statistic D (`statistical` only).
    pub ks_statistic: Option<f64>,
    /// The asymptotic Kolmogorov–Smirnov p-value (`statistical` only).
    pub ks_p_value: Option<f64>,
}

fn null_as_inf<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// Compares `actual` (an output, whose framework reported dtype `actual_dtype`) with
/// `expected` (its reference, reported as `expected_dtype`) under `rule`.
///
/// The reported dtypes are canonical names and may differ from the files' (a bfloat16 output
/// is saved as float32): they decide the ULP unit and `dtype_changed`. The two sides may have
/// different file dtypes (a float64 reference for a float16 output): values are compared in
/// float64, or exactly as integers when both are integral. `tol` is used as given (see
/// [`Tolerance::for_dtype`]), except that [`Rule::Exact`] uses zero. A shape change is a
/// `Disagree` with `shape_changed`; a dtype change is a `Disagree` only when `check_dtype`.
/// [`Rule::None`] compares nothing and agrees.
///
/// Cost: one pass over both arrays for the elementwise rules, parallel, no per-element
/// allocation; `sorted` and `up_to_sign` first make sorted/aligned copies, `statistical` a
/// float64 copy of each side that it sorts.
pub fn compare(
    actual: &NpyArray,
    actual_dtype: &DtypeName,
    expected: &NpyArray,
    expected_dtype: &DtypeName,
    rule: Rule,
    tol: Tolerance,
    check_dtype: bool,
) -> Comparison {
    let tol = if rule == Rule::Exact { Tolerance::EXACT } else { tol };
    let mut c = Comparison {
        rule,
        rtol: tol.rtol,
        atol: tol.atol,
        verdict: Verdict::Agree,
        elements: expected.len() as u64,
        mismatched: 0,
        mismatched_share: 0.0,
        max_abs: 0.0,
        max_rel: 0.0,
        max_ulp: 0.0,
        ulp_limit: tol.max_ulp,
        correctly_rounded: None,
        nan_mismatch: 0,
        inf_mismatch: 0,
        shape_actual: actual.shape().to_vec(),
        shape_expected: expected.shape().to_vec(),
        shape_changed: actual.shape() != expected.shape(),
        dtype_actual: actual_dtype.clone(),
        dtype_expected: expected_dtype.clone(),
        dtype_changed: actual_dtype != expected_dtype,
        worst_index: None,
        worst_actual: None,
        worst_expected: None,
        worst_actual_imag: None,
        worst_expected_imag: None,
        ks_statistic: None,
        ks_p_value: None,
    };
    if rule == Rule::None {
        return c;
    }
    if c.shape_changed {
        c.verdict = Verdict::Disagree;
        return c;
    }
    let mut differs = check_dtype && c.dtype_changed;
    match rule {
        Rule::None | Rule::ShapeDtype => {}
        Rule::Statistical => {
            if actual.dtype().is_complex() || expected.dtype().is_complex() {
                c.verdict = Verdict::Incomparable { reason: "the statistical rule needs real values".into() };
                return c;
            }
            let (mut a, a_nan) = non_nan_values(actual);
            let (mut e, e_nan) = non_nan_values(expected);
            c.nan_mismatch = a_nan.abs_diff(e_nan);
            let test = ks_2samp(&mut a, &mut e);
            differs |= c.nan_mismatch > 0 || test.p_value < KS_ALPHA;
            c.ks_statistic = Some(test.statistic);
            c.ks_p_value = Some(test.p_value);
        }
        Rule::AllClose | Rule::Exact | Rule::Sorted | Rule::UpToSign { .. } | Rule::Ulp | Rule::WholeModel => {
            let (a, e): (Cow<NpyArray>, Cow<NpyArray>) = match rule {
                Rule::Sorted => (Cow::Owned(sort_last_axis(actual)), Cow::Owned(sort_last_axis(expected))),
                Rule::UpToSign { axis } => match align_signs(actual, expected, axis) {
                    Ok(aligned) => (Cow::Owned(aligned), Cow::Borrowed(expected)),
                    Err(reason) => {
                        c.verdict = Verdict::Incomparable { reason };
                        return c;
                    }
                },
                _ => (Cow::Borrowed(actual), Cow::Borrowed(expected)),
            };
            let ulp = UlpUnit::of(actual_dtype, actual);
            let acc = elementwise(&a, &e, tol, ulp);
            c.mismatched = acc.mismatched;
            c.mismatched_share = if c.elements == 0 { 0.0 } else { acc.mismatched as f64 / c.elements as f64 };
            c.max_abs = acc.max_abs;
            c.max_rel = acc.max_rel;
            c.max_ulp = acc.max_ulp;
            c.nan_mismatch = acc.nan;
            c.inf_mismatch = acc.inf;
            if acc.worst_idx != usize::MAX {
                let (ar, ai) = element::get(a.data(), acc.worst_idx);
                let (er, ei) = element::get(e.data(), acc.worst_idx);
                c.worst_index = Some(unravel(acc.worst_idx, e.shape()));
                c.worst_actual = Some(ar);
                c.worst_expected = Some(er);
                if a.dtype().is_complex() || e.dtype().is_complex() {
                    c.worst_actual_imag = Some(ai);
                    c.worst_expected_imag = Some(ei);
                }
            }
            differs |= acc.mismatched > 0;
            let narrow = matches!(
                actual_dtype.known(),
                Some(Dtype::Float16 | Dtype::Bfloat16 | Dtype::Float32 | Dtype::Complex64)
            );
            let wide = matches!(expected_dtype.known(), Some(Dtype::Float64 | Dtype::Complex128));
            if narrow && wide && c.elements > 0 {
                c.correctly_rounded = Some(c.max_ulp <= 0.5 && acc.nan == 0 && acc.inf == 0);
            }
        }
    }
    if differs {
        c.verdict = Verdict::Disagree;
    }
    c
}

/// The array's values as float64 without its NaNs, and how many NaNs there were.
fn non_nan_values(a: &NpyArray) -> (Vec<f64>, u64) {
    let mut v = vec![0.0; a.len()];
    for start in (0..a.len()).step_by(TASK) {
        let end = (start + TASK).min(a.len());
        element::load_f64(a.data(), start, &mut v[start..end], None);
    }
    let before = v.len();
    v.retain(|x| !x.is_nan());
    let nans = (before - v.len()) as u64;
    (v, nans)
}

/// The C-order multi-index of flat index `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        idx[k] = i % d;
        i /= d;
    }
    idx
}

/// The unit ULPs are counted in (see the module doc): a binary floating-point format with `p`
/// explicit mantissa bits and smallest normal exponent `emin`, or 1 (integers and bool).
/// Held as `scale` = 2^−p, `floor` = 2^(emin − p) (the spacing at the smallest normal and
/// below) and `min_normal` = 2^emin, so the spacing at `x` is `max(2^⌊log₂|x|⌋ · scale, floor)`:
/// exact, and branch-free. The unit 1 has `scale` 0, `floor` 1 and `min_normal` +∞.
#[derive(Clone, Copy, Debug, PartialEq)]
struct UlpUnit {
    scale: f64,
    floor: f64,
    min_normal: f64,
    p: i32,
    emin: i32,
}

impl UlpUnit {
    const ONE: UlpUnit = UlpUnit { scale: 0.0, floor: 1.0, min_normal: f64::INFINITY, p: 0, emin: 0 };

    /// The unit of a format with `p` explicit mantissa bits and smallest normal exponent `emin`.
    fn float(p: i32, emin: i32) -> UlpUnit {
        UlpUnit { scale: pow2(-p), floor: pow2(emin - p), min_normal: pow2(emin), p, emin }
    }

    /// The unit for a reported dtype; a name mlport does not know falls back to the file's dtype.
    fn of(dtype: &DtypeName, array: &NpyArray) -> UlpUnit {
        match dtype.known().unwrap_or(array.dtype()) {
            Dtype::Float16 => UlpUnit::float(10, -14),
            Dtype::Bfloat16 => UlpUnit::float(7, -126),
            Dtype::Float32 | Dtype::Complex64 => UlpUnit::float(23, -126),
            Dtype::Float64 | Dtype::Complex128 => UlpUnit::float(52, -1022),
            // bool and the integers
            _ => UlpUnit::ONE,
        }
    }

    /// The spacing at `x` (finite).
    #[inline(always)]
    fn spacing(self, x: f64) -> f64 {
        // 2^⌊log₂|x|⌋: `x` with its sign and mantissa cleared (0 for zero and float64
        // subnormals, which lie below every format's floor).
        let s = f64::from_bits(x.to_bits() & 0x7ff0_0000_0000_0000) * self.scale;
        if s > self.floor { s } else { self.floor }
    }

    /// Whether `a` and `e` lie in different binades of the format (another sign, or another
    /// power of two above the smallest normal): then `|a − e| / spacing(e)` is not the count
    /// of values between them and [`UlpUnit::distance`] must count.
    #[inline(always)]
    fn crosses(self, a: f64, e: f64) -> bool {
        ((a.to_bits() ^ e.to_bits()) >> 52) != 0 && a.abs().max(e.abs()) >= self.min_normal
    }

    /// `ord(|x|)` as its integer part and fraction: the number of the format's non-negative
    /// values below `|x|` (finite), linear between neighbours. Exact: the scalings are by
    /// powers of two and `m − 1` is exact for `m` in [1, 2).
    fn ord(self, x: f64) -> (i128, f64) {
        let m = x.abs();
        if m < self.min_normal {
            let q = m / self.floor;
            let i = q.floor();
            return (i as i128, q - i);
        }
        let e = ((m.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let t = (m / pow2(e) - 1.0) * pow2(self.p);
        let i = t.floor();
        ((1i128 << self.p) * i128::from(e - self.emin + 1) + i as i128, t - i)
    }

    /// The ULP distance between finite `a` and `e`: `|ord(a) − ord(e)|` (the module doc); for
    /// the unit 1, `|a − e|`.
    fn distance(self, a: f64, e: f64) -> f64 {
        if self.scale == 0.0 {
            return (a - e).abs();
        }
        let ((ia, fa), (ie, fe)) = (self.ord(a), self.ord(e));
        let (na, ne) = (a.is_sign_negative() && a != 0.0, e.is_sign_negative() && e != 0.0);
        if na == ne { ((ia - ie) as f64 + (fa - fe)).abs() } else { (ia + ie) as f64 + (fa + fe) }
    }
}

/// 2^k, exactly, for −1074 ≤ k ≤ 1023 (`powi` loses the subnormal powers).
fn pow2(k: i32) -> f64 {
    if k >= -1022 { f64::from_bits(((k + 1023) as u64) << 52) } else { f64::from_bits(1u64 << (k + 1074)) }
}

/// The running metrics of a range of elements.
#[derive(Clone, Copy, Debug)]
struct Acc {
    mismatched: u64,
    nan: u64,
    inf: u64,
    max_abs: f64,
    max_rel: f64,
    max_ulp: f64,
    /// Largest |a − e| − (atol + rtol·|e|) so far, and its flat index (`usize::MAX`: none).
    worst_excess: f64,
    worst_idx: usize,
}

impl Acc {
    const EMPTY: Acc = Acc {
        mismatched: 0,
        nan: 0,
        inf: 0,
        max_abs: 0.0,
        max_rel: 0.0,
        max_ulp: 0.0,
        worst_excess: f64::NEG_INFINITY,
        worst_idx: usize::MAX,
    };

    /// Combines two ranges' metrics; the worst element is the larger excess, the lower
    /// index on a tie, so the result does not depend on how the work was split.
    fn merge(self, o: Acc) -> Acc {
        let take_o = o.worst_idx != usize::MAX
            && (self.worst_idx == usize::MAX
                || o.worst_excess > self.worst_excess
                || (o.worst_excess == self.worst_excess && o.worst_idx < self.worst_idx));
        Acc {
            mismatched: self.mismatched + o.mismatched,
            nan: self.nan + o.nan,
            inf: self.inf + o.inf,
            max_abs: self.max_abs.max(o.max_abs),
            max_rel: self.max_rel.max(o.max_rel),
            max_ulp: self.max_ulp.max(o.max_ulp),
            worst_excess: if take_o { o.worst_excess } else { self.worst_excess },
            worst_idx: if take_o { o.worst_idx } else { self.worst_idx },
        }
    }

    /// A NaN or Inf mismatch at `idx`: it exceeds any tolerance.
    #[inline(always)]
    fn nonfinite_mismatch(&mut self, idx: usize) {
        self.mismatched += 1;
        if self.worst_excess != f64::INFINITY {
            self.worst_excess = f64::INFINITY;
            self.worst_idx = idx;
        }
    }

    /// A finite element's difference `d`, `|e|`, its ULPs; its excess over `tol`.
    #[inline(always)]
    fn finite(&mut self, idx: usize, d: f64, mag: f64, ulp: f64, tol: Tolerance) {
        let excess = tol.excess(d, mag, ulp);
        self.mismatched += u64::from(excess > 0.0);
        self.max_abs = self.max_abs.max(d);
        self.max_rel = self.max_rel.max(if mag > 0.0 { d / mag } else { 0.0 });
        self.max_ulp = self.max_ulp.max(ulp);
        if excess > self.worst_excess {
            self.worst_excess = excess;
            self.worst_idx = idx;
        }
    }
}

/// The elementwise metrics of `a` against `e` (same element count).
fn elementwise(a: &NpyArray, e: &NpyArray, tol: Tolerance, ulp: UlpUnit) -> Acc {
    let n = e.len();
    debug_assert_eq!(a.len(), n);
    let integral = is_integral(a.data()) && is_integral(e.data());
    let complex = a.dtype().is_complex() || e.dtype().is_complex();
    (0..n.div_ceil(TASK))
        .into_par_iter()
        .map(|t| {
            let (start, end) = (t * TASK, ((t + 1) * TASK).min(n));
            let mut acc = Acc::EMPTY;
            if integral {
                let (mut ab, mut eb) = ([0i128; BLOCK], [0i128; BLOCK]);
                for s in (start..end).step_by(BLOCK) {
                    let m = BLOCK.min(end - s);
                    element::load_i128(a.data(), s, &mut ab[..m]);
                    element::load_i128(e.data(), s, &mut eb[..m]);
                    int_block(&ab[..m], &eb[..m], s, tol, &mut acc);
                }
            } else {
                let (mut ar, mut er) = ([0.0; BLOCK], [0.0; BLOCK]);
                let (mut ai, mut ei) = ([0.0; BLOCK], [0.0; BLOCK]);
                for s in (start..end).step_by(BLOCK) {
                    let m = BLOCK.min(end - s);
                    if complex {
                        element::load_f64(a.data(), s, &mut ar[..m], Some(&mut ai[..m]));
                        element::load_f64(e.data(), s, &mut er[..m], Some(&mut ei[..m]));
                        complex_block(&ar[..m], &ai[..m], &er[..m], &ei[..m], s, tol, ulp, &mut acc);
                    } else {
                        element::load_f64(a.data(), s, &mut ar[..m], None);
                        element::load_f64(e.data(), s, &mut er[..m], None);
                        real_block(&ar[..m], &er[..m], s, tol, ulp, &mut acc);
                    }
                }
            }
            acc
        })
        .reduce(|| Acc::EMPTY, Acc::merge)
}

/// Real float64 values of one block starting at flat index `base`.
#[inline(always)]
fn real_block(a: &[f64], e: &[f64], base: usize, tol: Tolerance, ulp: UlpUnit, acc: &mut Acc) {
    // Non-finite values and pairs in different binades are rare: when a block has none, take
    // the branch-free path, whose ULPs (|a − e| over the spacing at e) are then exact counts.
    let mut plain = true;
    for (&a, &e) in a.iter().zip(e) {
        plain &= a.is_finite() & e.is_finite() & !ulp.crosses(a, e);
    }
    if plain {
        return finite_real_block(a, e, base, tol, ulp, acc);
    }
    for (k, (&a, &e)) in a.iter().zip(e).enumerate() {
        if a.is_finite() && e.is_finite() {
            acc.finite(base + k, (a - e).abs(), e.abs(), ulp.distance(a, e), tol);
        } else if a.is_nan() || e.is_nan() {
            if !(a.is_nan() && e.is_nan()) {
                acc.nan += 1;
                acc.nonfinite_mismatch(base + k);
            }
        } else if a != e {
            acc.inf += 1;
            acc.nonfinite_mismatch(base + k);
        }
    }
}

/// [`real_block`] for a block of finite values, each pair within one binade: the same
/// arithmetic in `LANES` independent accumulators, which the compiler vectorises; the worst
/// element is looked for only when the block's largest excess beats the one so far, so the
/// result equals the scalar loop's.
#[inline(never)]
fn finite_real_block(a: &[f64], e: &[f64], base: usize, tol: Tolerance, ulp: UlpUnit, acc: &mut Acc) {
    const LANES: usize = 4;
    let mut mism = [0u64; LANES];
    let mut max_abs = [0.0f64; LANES];
    let mut max_rel = [0.0f64; LANES];
    let mut max_ulp = [0.0f64; LANES];
    let mut max_exc = [f64::NEG_INFINITY; LANES];
    // |a − e|, |e|, the ULPs and the excess over the tolerance, as `Acc::finite` computes them.
    let measure = |a: f64, e: f64| {
        let d = (a - e).abs();
        let mag = e.abs();
        let u = d / ulp.spacing(e);
        (d, mag, u, tol.excess(d, mag, u))
    };
    let (ac, ec) = (a.chunks_exact(LANES), e.chunks_exact(LANES));
    let (ar, er) = (ac.remainder(), ec.remainder());
    for (ac, ec) in ac.zip(ec) {
        for l in 0..LANES {
            let (d, mag, u, exc) = measure(ac[l], ec[l]);
            mism[l] += u64::from(exc > 0.0);
            max_abs[l] = if d > max_abs[l] { d } else { max_abs[l] };
            // Divide unconditionally, then select: no branch in the loop.
            let rel = d / mag;
            let rel = if mag > 0.0 { rel } else { 0.0 };
            max_rel[l] = if rel > max_rel[l] { rel } else { max_rel[l] };
            max_ulp[l] = if u > max_ulp[l] { u } else { max_ulp[l] };
            max_exc[l] = if exc > max_exc[l] { exc } else { max_exc[l] };
        }
    }
    for (&a, &e) in ar.iter().zip(er) {
        let (d, mag, u, exc) = measure(a, e);
        mism[0] += u64::from(exc > 0.0);
        max_abs[0] = max_abs[0].max(d);
        max_rel[0] = max_rel[0].max(if mag > 0.0 { d / mag } else { 0.0 });
        max_ulp[0] = max_ulp[0].max(u);
        max_exc[0] = max_exc[0].max(exc);
    }
    acc.mismatched += mism.iter().sum::<u64>();
    acc.max_abs = max_abs.iter().fold(acc.max_abs, |m, &x| m.max(x));
    acc.max_rel = max_rel.iter().fold(acc.max_rel, |m, &x| m.max(x));
    acc.max_ulp = max_ulp.iter().fold(acc.max_ulp, |m, &x| m.max(x));
    let block_worst = max_exc.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
    if block_worst > acc.worst_excess
        && let Some(k) = a.iter().zip(e).position(|(&a, &e)| measure(a, e).3 == block_worst)
    {
        acc.worst_excess = block_worst;
        acc.worst_idx = base + k;
    }
}

/// Complex values (or real against complex) of one block starting at flat index `base`.
#[allow(clippy::too_many_arguments)]
fn complex_block(
    ar: &[f64],
    ai: &[f64],
    er: &[f64],
    ei: &[f64],
    base: usize,
    tol: Tolerance,
    ulp: UlpUnit,
    acc: &mut Acc,
) {
    for k in 0..ar.len() {
        let (a_re, a_im, e_re, e_im) = (ar[k], ai[k], er[k], ei[k]);
        let (a_nan, e_nan) = (a_re.is_nan() || a_im.is_nan(), e_re.is_nan() || e_im.is_nan());
        if a_nan || e_nan {
            if a_nan != e_nan {
                acc.nan += 1;
                acc.nonfinite_mismatch(base + k);
            }
        } else if a_re.is_finite() && a_im.is_finite() && e_re.is_finite() && e_im.is_finite() {
            let d = (a_re - e_re).hypot(a_im - e_im);
            let ulps = ulp.distance(a_re, e_re).max(ulp.distance(a_im, e_im));
            acc.finite(base + k, d, e_re.hypot(e_im), ulps, tol);
        } else if a_re != e_re || a_im != e_im {
            acc.inf += 1;
            acc.nonfinite_mismatch(base + k);
        }
    }
}

/// Integers (and bool) of one block starting at flat index `base`, exactly.
fn int_block(a: &[i128], e: &[i128], base: usize, tol: Tolerance, acc: &mut Acc) {
    for (k, (&a, &e)) in a.iter().zip(e).enumerate() {
        let d = a.abs_diff(e) as f64;
        // Any difference is ≥ 1 as a float, so a zero tolerance fails it however large the integers.
        acc.finite(base + k, d, e.unsigned_abs() as f64, d, tol);
    }
}

/// Two significant digits, exponent form without a trailing `.0` or `e0`: `1e-3`, `3.1e-2`, `1`, `2.5e3`.
/// (Its own: `compare` sits below `render`, whose `units` formats every report's numbers.)
fn short(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let s = format!("{x:.1e}").replace(".0e", "e");
    s.strip_suffix("e0").map_or(s.clone(), str::to_string)
}

/// A value as the reported dtype would print it (shortest round-trip form of that dtype).
fn value(re: f64, im: Option<f64>, dtype: &DtypeName) -> String {
    let one = |x: f64| match dtype.known() {
        Some(Dtype::Float16) => f16::from_f64(x).to_string(),
        Some(Dtype::Bfloat16) => bf16::from_f64(x).to_string(),
        Some(Dtype::Float32 | Dtype::Complex64) => (x as f32).to_string(),
        _ => x.to_string(),
    };
    match im {
        Some(im) => {
            let sign = if im.is_sign_negative() { '-' } else { '+' };
            format!("({}{sign}{}j)", one(re), one(im.abs()))
        }
        None => one(re),
    }
}

impl Comparison {
    /// One human line: what was compared, how far apart, where the worst element is. E.g.
    /// "12 of 16384 elements (0.07%) beyond rtol 1e-3, atol 1e-5: max abs 3.1e-2, max rel
    /// 4.2e-3, 41 ULP (float16); worst at [3, 17]: 12.5 vs 12.53".
    pub fn summary(&self) -> String {
        let dtype_note = if self.dtype_changed {
            format!("; dtype changed: {} vs {}", self.dtype_actual, self.dtype_expected)
        } else {
            String::new()
        };
        if let Verdict::Incomparable { reason } = &self.verdict {
            return format!("not comparable: {reason}{dtype_note}");
        }
        if self.rule == Rule::None {
            return format!("not compared (rule none){dtype_note}");
        }
        if self.shape_changed {
            return format!("shape changed: {:?} vs {:?}{dtype_note}", self.shape_actual, self.shape_expected);
        }
        match self.rule {
            Rule::ShapeDtype => {
                return format!("shape {:?} matches (values not compared){dtype_note}", self.shape_expected);
            }
            Rule::Statistical => {
                let (d, p) = (self.ks_statistic.unwrap_or(0.0), self.ks_p_value.unwrap_or(1.0));
                let verdict = if p < KS_ALPHA { "different distributions" } else { "same distribution" };
                let nan = if self.nan_mismatch > 0 {
                    format!("; NaN counts differ by {}", self.nan_mismatch)
                } else {
                    String::new()
                };
                return format!(
                    "Kolmogorov-Smirnov D {}, p {} over {} values: {verdict} at p < {}{nan}{dtype_note}",
                    short(d),
                    short(p),
                    self.elements,
                    short(KS_ALPHA)
                );
            }
            _ => {}
        }
        if self.elements == 0 {
            return format!("no elements to compare (shape {:?}){dtype_note}", self.shape_expected);
        }
        let prefix = match self.rule {
            Rule::Sorted => "after sorting, ",
            Rule::UpToSign { .. } => "up to sign, ",
            _ => "",
        };
        let head = if self.mismatched == 0 {
            format!("{prefix}all {} elements within", self.elements)
        } else {
            let pct = 100.0 * self.mismatched_share;
            let pct = if pct < 0.01 { "<0.01%".to_string() } else { format!("{pct:.2}%") };
            format!("{prefix}{} of {} elements ({pct}) beyond", self.mismatched, self.elements)
        };
        let tol = if let Some(n) = self.ulp_limit {
            format!("{} ULP", short(n))
        } else if self.rtol == 0.0 && self.atol == 0.0 {
            "exact equality".to_string()
        } else {
            format!("rtol {}, atol {}", short(self.rtol), short(self.atol))
        };
        let ulp = if self.max_ulp < 10.0 && self.max_ulp.fract() != 0.0 {
            format!("{:.1}", self.max_ulp)
        } else if self.max_ulp < 1e6 {
            format!("{:.0}", self.max_ulp)
        } else {
            short(self.max_ulp)
        };
        let mut line = format!(
            "{head} {tol}: max abs {}, max rel {}, {ulp} ULP ({})",
            short(self.max_abs),
            short(self.max_rel),
            self.dtype_actual
        );
        if self.nan_mismatch > 0 || self.inf_mismatch > 0 {
            line += &format!("; {} NaN and {} Inf mismatches", self.nan_mismatch, self.inf_mismatch);
        }
        if self.mismatched > 0
            && let (Some(idx), Some(a), Some(e)) = (&self.worst_index, self.worst_actual, self.worst_expected)
        {
            line += &format!(
                "; worst at {idx:?}: {} vs {}",
                value(a, self.worst_actual_imag, &self.dtype_actual),
                value(e, self.worst_expected_imag, &self.dtype_expected)
            );
        }
        line + &dtype_note
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::npy::Data;

    fn arr(shape: &[usize], data: impl Into<Data>) -> NpyArray {
        NpyArray::new(shape.to_vec(), data.into()).unwrap()
    }

    fn cmp(a: &NpyArray, e: &NpyArray, dtype: &str, rule: Rule) -> Comparison {
        let d = DtypeName::parse(dtype);
        compare(a, &d, e, &d, rule, Tolerance::for_dtype(d.known().unwrap()), true)
    }

    #[test]
    fn allclose_by_hand() {
        // float32, rtol 1.3e-6, atol 1e-5: at 1000 the allowance is 1e-5 + 1.3e-3 = 1.31e-3.
        let e = arr(&[2, 2], vec![1000.0f32, 1.0, 0.0, -2.0]);
        let a = arr(&[2, 2], vec![1000.001f32, 1.0, 2e-5, -2.0]);
        let c = cmp(&a, &e, "float32", Rule::AllClose);
        // 1000.001f32 is 1000.00098 (1000 + 16·2^-14): within 1.31e-3. 2e-5 vs 0 is beyond 1e-5.
        assert_eq!((c.mismatched, c.elements), (1, 4));
        assert_eq!(c.verdict, Verdict::Disagree);
        assert_eq!(c.worst_index, Some(vec![1, 0]));
        assert_eq!((c.worst_actual, c.worst_expected), (Some(f64::from(2e-5f32)), Some(0.0)));
        assert_eq!(c.max_abs, f64::from(1000.001f32) - 1000.0);
        // ULPs at 1000 (exponent 9): spacing 2^(9−23) = 2^-14, so 16 ULP; 2e-5 against 0: the
        // float32 values between them, which for a positive float32 is its bit pattern read as
        // an integer (0 is +0's, each next value adds 1).
        assert_eq!(c.max_ulp, f64::from(2e-5f32.to_bits()));
        assert_eq!(c.max_rel, (f64::from(1000.001f32) - 1000.0) / 1000.0);
        let a_ok = arr(&[2, 2], vec![1000.001f32, 1.0, 9e-6, -2.0]);
        let ok = cmp(&a_ok, &e, "float32", Rule::AllClose);
        assert_eq!((&ok.verdict, ok.mismatched), (&Verdict::Agree, 0));
        // The element closest to failing is reported even when all agree.
        assert_eq!(ok.worst_index, Some(vec![1, 0]));
        assert!(ok.summary().starts_with("all 4 elements within rtol 1.3e-6, atol 1e-5: max abs 9.8e-4"));
        // Exact fails both.
        let ex = cmp(&a_ok, &e, "float32", Rule::Exact);
        assert_eq!((ex.mismatched, ex.rtol, ex.atol), (2, 0.0, 0.0));
    }

    #[test]
    fn nan_and_inf_patterns() {
        let inf = f64::INFINITY;
        let nan = f64::NAN;
        let e = arr(&[8], vec![nan, nan, 1.0, inf, inf, -inf, inf, 2.0]);
        let a = arr(&[8], vec![nan, 1.0, nan, inf, -inf, -inf, 5.0, inf]);
        let c = cmp(&a, &e, "float64", Rule::AllClose);
        assert_eq!((c.nan_mismatch, c.inf_mismatch, c.mismatched), (2, 3, 5));
        // The first non-finite mismatch is the worst.
        assert_eq!(c.worst_index, Some(vec![1]));
        assert_eq!(c.max_abs, 0.0, "no finite pair differs");
        assert_eq!(c.verdict, Verdict::Disagree);
        assert!(c.summary().contains("2 NaN and 3 Inf mismatches; worst at [1]: 1 vs NaN"), "{}", c.summary());
        // Complex: NaN in either component is NaN; an Inf component must match exactly.
        let e = arr(&[3], vec![[nan, 0.0], [inf, 1.0], [1.0, 1.0]]);
        let a = arr(&[3], vec![[0.0, nan], [inf, 2.0], [1.0, 1.0]]);
        let c = cmp(&a, &e, "complex128", Rule::AllClose);
        assert_eq!((c.nan_mismatch, c.inf_mismatch, c.mismatched), (0, 1, 1));
    }

    #[test]
    fn shape_and_dtype_changes() {
        let a = arr(&[2, 3], vec![0.0f32; 6]);
        let e = arr(&[3, 2], vec![0.0f32; 6]);
        let c = cmp(&a, &e, "float32", Rule::AllClose);
        assert!(c.shape_changed && c.verdict == Verdict::Disagree);
        assert_eq!(c.summary(), "shape changed: [2, 3] vs [3, 2]");
        assert!(cmp(&a, &e, "float32", Rule::ShapeDtype).shape_changed);
        assert_eq!(cmp(&a, &e, "float32", Rule::None).verdict, Verdict::Agree);
        // A float64 output against a float32 reference: a dtype change, fatal only when checked.
        let a64 = arr(&[3, 2], vec![0.0f64; 6]);
        let checked = compare(
            &a64,
            &"float64".into(),
            &e,
            &"float32".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Float32),
            true,
        );
        assert!(checked.dtype_changed && checked.verdict == Verdict::Disagree && checked.mismatched == 0);
        assert!(checked.summary().ends_with("; dtype changed: float64 vs float32"), "{}", checked.summary());
        let loose = compare(&a64, &"float64".into(), &e, &"float32".into(), Rule::ShapeDtype, Tolerance::EXACT, false);
        assert_eq!(loose.verdict, Verdict::Agree);
    }

    #[test]
    fn svd_columns_up_to_sign() {
        // U of a 3×2 SVD-like factor; the output flips the second column.
        let u = [0.6f64, 0.0, 0.8, 0.0, 0.0, 1.0];
        let flipped = [0.6f64, -0.0, 0.8, -0.0, 0.0, -1.0];
        let (e, a) = (arr(&[3, 2], u.to_vec()), arr(&[3, 2], flipped.to_vec()));
        assert_eq!(cmp(&a, &e, "float64", Rule::AllClose).verdict, Verdict::Disagree);
        let c = cmp(&a, &e, "float64", Rule::UpToSign { axis: -2 });
        assert_eq!((&c.verdict, c.max_abs), (&Verdict::Agree, 0.0));
        assert!(c.summary().starts_with("up to sign, all 6 elements"));
        // Vh (2×3): its rows are the vectors; flipping a row passes up_to_sign_rows, not up_to_sign.
        let vh = arr(&[2, 3], vec![0.6f64, 0.8, 0.0, 0.0, 0.6, 0.8]);
        let vh_flipped = arr(&[2, 3], vec![-0.6f64, -0.8, 0.0, 0.0, 0.6, 0.8]);
        assert_eq!(cmp(&vh_flipped, &vh, "float64", Rule::UpToSign { axis: -1 }).verdict, Verdict::Agree);
        assert_eq!(cmp(&vh_flipped, &vh, "float64", Rule::UpToSign { axis: -2 }).verdict, Verdict::Disagree);
        // A batch of two 2×2 matrices, each with its own flips.
        let e = arr(&[2, 2, 2], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let a = arr(&[2, 2, 2], vec![-1.0f32, 2.0, -3.0, 4.0, 5.0, -6.0, 7.0, -8.0]);
        assert_eq!(cmp(&a, &e, "float32", Rule::UpToSign { axis: -2 }).verdict, Verdict::Agree);
        let bad_axis = cmp(&a, &e, "float32", Rule::UpToSign { axis: -4 });
        assert!(matches!(bad_axis.verdict, Verdict::Incomparable { .. }));
        assert!(bad_axis.summary().starts_with("not comparable: axis -4 is out of range"));
    }

    #[test]
    fn complex_eigenvectors_up_to_phase() {
        // Reference vector (1, i)/√2 in one column; the output is it times e^{iπ/3}.
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let (c, sn) = ((std::f64::consts::PI / 3.0).cos(), (std::f64::consts::PI / 3.0).sin());
        let e = arr(&[2, 1], vec![[s, 0.0], [0.0, s]]);
        let a_vals: Vec<[f32; 2]> = [[s, 0.0], [0.0, s]]
            .iter()
            .map(|v| [(v[0] * c - v[1] * sn) as f32, (v[0] * sn + v[1] * c) as f32])
            .collect();
        let a = arr(&[2, 1], a_vals);
        let plain = compare(
            &a,
            &"complex64".into(),
            &e,
            &"complex128".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Complex64),
            false,
        );
        assert_eq!(plain.verdict, Verdict::Disagree);
        assert!(plain.worst_actual_imag.is_some());
        let phased = compare(
            &a,
            &"complex64".into(),
            &e,
            &"complex128".into(),
            Rule::UpToSign { axis: -2 },
            Tolerance::for_dtype(Dtype::Complex64),
            false,
        );
        assert_eq!(phased.verdict, Verdict::Agree, "{}", phased.summary());
        assert!(phased.max_abs < 1e-7);
    }

    #[test]
    fn sorted_rule() {
        let e = arr(&[2, 3], vec![1i64, 2, 3, 7, 8, 9]);
        let a = arr(&[2, 3], vec![3i64, 1, 2, 9, 7, 8]);
        assert_eq!(cmp(&a, &e, "int64", Rule::AllClose).mismatched, 6);
        let c = cmp(&a, &e, "int64", Rule::Sorted);
        assert_eq!(c.verdict, Verdict::Agree);
        // Sorting is per row: moving a value across rows is still a difference.
        let across = arr(&[2, 3], vec![1i64, 2, 7, 3, 8, 9]);
        assert_eq!(cmp(&across, &e, "int64", Rule::Sorted).mismatched, 2);
    }

    #[test]
    fn bfloat16_stored_as_float32_gets_bfloat16_ulps() {
        // 1.0 + 2^-7 is bfloat16's next value after 1.0 (7 explicit mantissa bits).
        let e = arr(&[3], vec![1.0f64, 3.0, 1000.0]);
        let a = arr(&[3], vec![1.0f32 + 2f32.powi(-7), 3.0, 1000.0 - 4.0]);
        let c = compare(
            &a,
            &"bfloat16".into(),
            &e,
            &"float64".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Bfloat16),
            false,
        );
        // 1000 lies in [512, 1024): bfloat16 spacing 2^(9−7) = 4, so 4 below is 1 ULP.
        assert_eq!(c.max_ulp, 1.0);
        assert_eq!(c.verdict, Verdict::Agree, "{}", c.summary());
        // The same values measured as float32 are 2^16 and 2^(23−9+2) = 65536 ULP.
        let f = compare(
            &a,
            &"float32".into(),
            &e,
            &"float64".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Bfloat16),
            false,
        );
        assert_eq!(f.max_ulp, 65536.0);
        // float16: 10 bits; the subnormal floor: at 0 the spacing is 2^-24.
        let e = arr(&[2], vec![0.0f64, 2.0]);
        let a = arr(&[2], vec![f16::from_bits(3), f16::from_f64(2.0 + 2.0 / 1024.0)]);
        let h = compare(
            &a,
            &"float16".into(),
            &e,
            &"float64".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Float16),
            false,
        );
        assert_eq!(h.max_ulp, 3.0);
        assert!(h.summary().contains("3 ULP (float16)"), "{}", h.summary());
    }

    #[test]
    fn integers_compare_exactly() {
        let big = i64::MAX - 1;
        let e = arr(&[3], vec![big, 5, -3]);
        let a = arr(&[3], vec![big - 1, 5, -3]);
        // big and big−1 are the same float64; the integer path still sees them differ.
        let c = cmp(&a, &e, "int64", Rule::AllClose);
        assert_eq!((c.mismatched, c.max_abs, c.max_ulp), (1, 1.0, 1.0));
        assert!(c.summary().contains("beyond exact equality"), "{}", c.summary());
        let u = arr(&[2], vec![u64::MAX, 0]);
        let i = arr(&[2], vec![-1i64, 0]);
        let c = compare(&i, &"int64".into(), &u, &"uint64".into(), Rule::AllClose, Tolerance::EXACT, false);
        assert_eq!(c.mismatched, 1);
        let bools = cmp(&arr(&[2], vec![true, false]), &arr(&[2], vec![true, true]), "bool", Rule::AllClose);
        assert_eq!((bools.mismatched, bools.worst_index), (1, Some(vec![1])));
    }

    #[test]
    fn statistical_rule() {
        // Two interleaved samples of the same grid agree; shifted ones do not.
        let e: Vec<f64> = (0..2000).map(|i| f64::from(i) / 2000.0).collect();
        let a: Vec<f64> = (0..2000).map(|i| (f64::from(i) + 0.5) / 2000.0).collect();
        let (ea, aa) = (arr(&[2000], e.clone()), arr(&[2000], a));
        let c = cmp(&aa, &ea, "float64", Rule::Statistical);
        assert_eq!(c.verdict, Verdict::Agree);
        assert!((c.ks_statistic.unwrap() - 1.0 / 2000.0).abs() < 1e-15);
        let shifted = arr(&[2000], e.iter().map(|x| x + 0.2).collect::<Vec<_>>());
        let s = cmp(&shifted, &ea, "float64", Rule::Statistical);
        assert_eq!(s.verdict, Verdict::Disagree);
        assert!((s.ks_statistic.unwrap() - 0.2).abs() <= 1e-3, "{:?}", s.ks_statistic);
        assert!(s.summary().contains("different distributions"), "{}", s.summary());
        let z = arr(&[1], vec![[0.0f32, 1.0]]);
        assert!(matches!(cmp(&z, &z, "complex64", Rule::Statistical).verdict, Verdict::Incomparable { .. }));
    }

    #[test]
    fn empty_and_scalar() {
        let e = arr(&[0, 4], Vec::<f32>::new());
        let c = cmp(&e, &e, "float32", Rule::AllClose);
        assert_eq!((&c.verdict, c.elements, &c.worst_index), (&Verdict::Agree, 0, &None));
        assert_eq!(c.summary(), "no elements to compare (shape [0, 4])");
        let s = cmp(&arr(&[], vec![2.5f64]), &arr(&[], vec![2.0f64]), "float64", Rule::AllClose);
        assert_eq!((s.worst_index, s.mismatched), (Some(vec![]), 1));
    }

    #[test]
    fn parallel_split_gives_the_serial_answer() {
        // Several tasks; equal excesses in different tasks: the lowest index wins.
        let n = 3 * TASK + 17;
        let e: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
        let mut a = e.clone();
        for i in [5, TASK + 3, 2 * TASK + 9, n - 1] {
            a[i] += 1.0;
        }
        let c = cmp(&arr(&[n], a), &arr(&[n], e), "float32", Rule::AllClose);
        assert_eq!(c.mismatched, 4);
        // Excess 1 − 1e-5 − 1.3e-6·|e|: the smallest |e| wins: e[5] = 5, e[65539] = 65539 % 97 ...
        let expect = [5, TASK + 3, 2 * TASK + 9, n - 1].into_iter().min_by_key(|&i| (i % 97, i)).unwrap();
        assert_eq!(c.worst_index, Some(vec![expect]));
    }

    #[test]
    fn serialises_and_summarises() {
        let e = arr(&[2, 2], vec![1.0f64, 2.0, 3.0, 12.53]);
        let a = arr(&[2, 2], vec![f16::from_f64(1.0), f16::from_f64(2.0), f16::from_f64(3.0), f16::from_f64(12.5)]);
        let c = compare(
            &a,
            &"float16".into(),
            &e,
            &"float64".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Float16),
            false,
        );
        assert_eq!(
            c.summary(),
            "1 of 4 elements (25.00%) beyond rtol 1e-3, atol 1e-5: max abs 3e-2, max rel 2.4e-3, 3.8 ULP (float16); \
             worst at [1, 1]: 12.5 vs 12.53; dtype changed: float16 vs float64"
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["verdict"], serde_json::json!({"kind": "disagree"}));
        assert_eq!(json["rule"], "allclose");
        assert!(json.get("worst_actual_imag").is_none());
        let back: Comparison = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
        let inc = Verdict::Incomparable { reason: "x".into() };
        assert_eq!(serde_json::to_value(&inc).unwrap(), serde_json::json!({"kind": "incomparable", "reason": "x"}));
    }

    #[test]
    fn ulps_count_the_values_between_across_binades_signs_and_zero() {
        let bf = UlpUnit::float(7, -126);
        // bfloat16 0.38 against 0: the positive bfloat16 values below 0.38 are its bit patterns
        // (as u16) below it; 0.38 lies 0.56 of the way from bf16(0.37890625) to the next.
        let lo = half::bf16::from_f64(0.37890625);
        let want = f64::from(lo.to_bits()) + (0.38 - 0.37890625) / 2f64.powi(-9);
        assert_eq!(bf.distance(0.38, 0.0), want);
        assert!((16_000.0..16_300.0).contains(&want), "{want}: not 4.1e39");
        // Across a power of two: 1 − 2^-8 (the last bfloat16 below 1) to 1 + 2^-7 is 2 values.
        assert_eq!(bf.distance(1.0 + 2f64.powi(-7), 1.0 - 2f64.powi(-8)), 2.0);
        // Across zero: ±the smallest subnormal are 2 apart; symmetric.
        let tiny = 2f64.powi(-133);
        assert_eq!(bf.distance(tiny, -tiny), 2.0);
        assert_eq!(bf.distance(-tiny, tiny), 2.0);
        assert_eq!(bf.distance(0.0, -0.0), 0.0);
        // Within a binade the count is |a − e| over the spacing, fractions included.
        assert_eq!(bf.distance(1.0, 1.0 + 2f64.powi(-9)), 0.25);
        // float64's own count does not lose the small difference of two huge ordinals.
        let f64u = UlpUnit::float(52, -1022);
        let x = 1e300f64;
        assert_eq!(f64u.distance(f64::from_bits(x.to_bits() + 3), x), 3.0);
        assert_eq!(f64u.distance(-f64::MAX, f64::MAX), 2.0 * f64::MAX.to_bits() as f64);
        assert_eq!(UlpUnit::ONE.distance(7.0, 2.0), 5.0);
        // The comparison uses the count: a bfloat16 0.38 where the reference is 1e-40.
        let c = compare(
            &arr(&[2], vec![0.38f32, 1.0]),
            &"bfloat16".into(),
            &arr(&[2], vec![1e-40f64, 1.0]),
            &"float64".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Bfloat16),
            false,
        );
        assert!(c.max_ulp > 16_000.0 && c.max_ulp < 16_300.0, "{}", c.max_ulp);
        assert_eq!(c.correctly_rounded, Some(false));
    }

    #[test]
    fn the_ulp_rule_and_correct_rounding() {
        // float32 outputs against float64 values: 1/3 rounded to nearest, and one value off by one.
        let e = arr(&[3], vec![1.0 / 3.0, 2.0 / 3.0, 10.0]);
        let rn: Vec<f32> = vec![(1.0f64 / 3.0) as f32, (2.0f64 / 3.0) as f32, 10.0];
        let mut off = rn.clone();
        off[1] = f32::from_bits(off[1].to_bits() + 1);
        let run = |a: &[f32], tol: Tolerance, rule: Rule| {
            compare(&arr(&[3], a.to_vec()), &"float32".into(), &e, &"float64".into(), rule, tol, false)
        };
        let exact = run(&rn, Tolerance::for_dtype(Dtype::Float32), Rule::AllClose);
        assert_eq!((exact.correctly_rounded, &exact.verdict), (Some(true), &Verdict::Agree));
        assert!(exact.max_ulp <= 0.5, "{}", exact.max_ulp);
        // One ULP off: within float32's rtol 1.3e-6 (11 ULP at 2/3), beyond max_ulp 0.5.
        let loose = run(&off, Tolerance::for_dtype(Dtype::Float32), Rule::AllClose);
        assert_eq!((loose.correctly_rounded, &loose.verdict), (Some(false), &Verdict::Agree));
        let strict = run(&off, Tolerance::ulps(0.5), Rule::Ulp);
        assert_eq!(
            (&strict.verdict, strict.mismatched, strict.worst_index.clone()),
            (&Verdict::Disagree, 1, Some(vec![1]))
        );
        // 2/3 lies 1/3 ULP below its float32 rounding, so the next value up is 4/3 ULP away.
        assert!((strict.max_ulp - 4.0 / 3.0).abs() < 1e-6, "{}", strict.max_ulp);
        assert!(strict.summary().starts_with("1 of 3 elements (33.33%) beyond 5e-1 ULP"), "{}", strict.summary());
        assert_eq!(run(&off, Tolerance::ulps(1.5), Rule::Ulp).verdict, Verdict::Agree);
        // Same-dtype comparisons (another device) say nothing about rounding.
        let same = compare(
            &arr(&[1], vec![1.0f32]),
            &"float32".into(),
            &arr(&[1], vec![1.0f32]),
            &"float32".into(),
            Rule::AllClose,
            Tolerance::for_dtype(Dtype::Float32),
            true,
        );
        assert_eq!(same.correctly_rounded, None);
    }

    #[test]
    fn spacing_matches_numpy_definition() {
        let f32u = UlpUnit::float(23, -126);
        assert_eq!(f32u.spacing(1.0), f64::from(f32::EPSILON));
        assert_eq!(f32u.spacing(-1.5), f64::from(f32::EPSILON));
        assert_eq!(f32u.spacing(0.0), 2f64.powi(-149));
        assert_eq!(f32u.spacing(1e-40), 2f64.powi(-149), "float32 subnormal");
        let f64u = UlpUnit::float(52, -1022);
        assert_eq!(f64u.spacing(0.0), f64::from_bits(1));
        assert_eq!(f64u.spacing(1e-310), f64::from_bits(1), "float64 subnormal");
        assert_eq!(f64u.spacing(1e300), 2f64.powi(996 - 52));
        assert_eq!(f64u.spacing(-f64::MAX), 2f64.powi(1023 - 52));
        let f16u = UlpUnit::float(10, -14);
        assert_eq!(f16u.spacing(65504.0), 32.0);
        assert_eq!(f16u.spacing(1e-6), 2f64.powi(-24));
        assert_eq!(UlpUnit::float(7, -126).spacing(1000.0), 4.0);
        assert_eq!(UlpUnit::ONE.spacing(1e9), 1.0);
        assert_eq!(UlpUnit::ONE.spacing(0.0), 1.0);
        assert_eq!(unravel(7, &[2, 2, 2]), vec![1, 1, 1]);
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
    }
}
