//! How an output is compared with its reference: the catalogue's comparison rules (their
//! spellings, and the sorting and sign/phase alignment some of them apply before comparing)
//! and the per-dtype tolerances, which are `torch.testing.assert_close`'s documented defaults
//! (<https://pytorch.org/docs/stable/testing.html#torch.testing.assert_close>).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use half::f16;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::dtype::{Dtype, DtypeName};
use super::npy::{Data, NpyArray, with_data};

/// A comparison rule, as a catalogue case names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `allclose` (the default): elementwise, `|a − e| ≤ atol + rtol·|e|`, NaN equal to NaN,
    /// ±Inf equal only to the same-signed Inf.
    #[default]
    AllClose,
    /// `exact`: elementwise with zero tolerance.
    Exact,
    /// `sorted`: both arrays sorted along their last axis (a 1-D array as a whole; NaN last,
    /// complex numbers by real then imaginary part, as `numpy.sort` orders them), then `allclose`.
    /// For outputs whose order is unspecified (`unique`, eigenvalues).
    Sorted,
    /// `up_to_sign` (`axis` −2: the columns of a matrix, like SVD's U or eigenvectors) and
    /// `up_to_sign_rows` (`axis` −1: the rows, like SVD's Vh): each vector of the output along
    /// `axis` (a 1-D array: the whole vector; 0-d: the scalar) is multiplied by the sign of its
    /// dot product with the reference vector (+1 on a tie), or, for complex data, by the unit
    /// phase `conj(⟨out, ref⟩)/|⟨out, ref⟩|` with `⟨out, ref⟩ = Σ out·conj(ref)` ("up to
    /// phase"); then `allclose`.
    UpToSign {
        /// The axis the vectors run along, negative counting from the end.
        axis: isize,
    },
    /// `ulp`: elementwise, at most `max_ulp` ULPs of the output's dtype apart (the case's
    /// `max_ulp`, or `ulp = N`); NaN and ±Inf as for `allclose`.
    Ulp,
    /// `shape_dtype`: only the shape (and the dtype, when dtypes are checked) must match.
    ShapeDtype,
    /// `statistical`: a two-sample Kolmogorov–Smirnov test on the flattened values; the
    /// outputs disagree when p < 0.001 (for random samplers).
    Statistical,
    /// `none`: the output is never compared.
    None,
    /// `whole_model` (the default of workloads): each output leaf is measured as `allclose`
    /// does, and the verdict over all of them together is the whole-model rule's
    /// (`crate::agreement::whole_model`: float64 golden run, RMSE ratio to eager's, cosine
    /// fallback, non-determinism flagged).
    WholeModel,
}

impl Rule {
    /// Every catalogue spelling, in the order of the variants.
    pub const NAMES: [&'static str; 10] = [
        "allclose",
        "exact",
        "sorted",
        "up_to_sign",
        "up_to_sign_rows",
        "ulp",
        "shape_dtype",
        "statistical",
        "none",
        "whole_model",
    ];

    /// The catalogue spelling. [`Rule::UpToSign`] gives `up_to_sign_rows` for axis −1 and
    /// `up_to_sign` for any other axis; `Display` spells other axes out (`up_to_sign(axis=0)`).
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::AllClose => "allclose",
            Rule::Exact => "exact",
            Rule::Sorted => "sorted",
            Rule::UpToSign { axis: -1 } => "up_to_sign_rows",
            Rule::UpToSign { .. } => "up_to_sign",
            Rule::Ulp => "ulp",
            Rule::ShapeDtype => "shape_dtype",
            Rule::Statistical => "statistical",
            Rule::None => "none",
            Rule::WholeModel => "whole_model",
        }
    }

    /// True for the rules decided element by element after an optional reordering
    /// (`allclose`, `exact`, `sorted`, `up_to_sign*`, `ulp`).
    pub fn is_elementwise(self) -> bool {
        matches!(
            self,
            Rule::AllClose | Rule::Exact | Rule::Sorted | Rule::UpToSign { .. } | Rule::Ulp | Rule::WholeModel
        )
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::UpToSign { axis } if *axis != -1 && *axis != -2 => write!(f, "up_to_sign(axis={axis})"),
            _ => f.write_str(self.as_str()),
        }
    }
}

/// An unknown rule name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "unknown comparison rule {0:?} (known: allclose, exact, sorted, up_to_sign, up_to_sign_rows, ulp, shape_dtype, statistical, none, whole_model)"
)]
pub struct UnknownRule(pub String);

impl FromStr for Rule {
    type Err = UnknownRule;

    /// The catalogue spellings, plus `up_to_sign(axis=N)` as `Display` writes it.
    fn from_str(s: &str) -> Result<Rule, UnknownRule> {
        Ok(match s {
            "allclose" => Rule::AllClose,
            "exact" => Rule::Exact,
            "sorted" => Rule::Sorted,
            "up_to_sign" => Rule::UpToSign { axis: -2 },
            "up_to_sign_rows" => Rule::UpToSign { axis: -1 },
            "ulp" => Rule::Ulp,
            "shape_dtype" => Rule::ShapeDtype,
            "statistical" => Rule::Statistical,
            "none" => Rule::None,
            "whole_model" => Rule::WholeModel,
            other => {
                let axis = other.strip_prefix("up_to_sign(axis=").and_then(|r| r.strip_suffix(')'));
                match axis.and_then(|a| a.parse().ok()) {
                    Some(axis) => Rule::UpToSign { axis },
                    None => return Err(UnknownRule(other.to_string())),
                }
            }
        })
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rule, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Elementwise tolerance: `actual` agrees with `expected` when `|a − e| ≤ atol + rtol·|e|`,
/// or, under the `ulp` rule ([`Tolerance::max_ulp`] set), when they are at most `max_ulp` ULPs
/// of the output's dtype apart (`crate::compare::metrics`'s count).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Relative tolerance (a fraction of `|expected|`).
    pub rtol: f64,
    /// Absolute tolerance (in the data's units).
    pub atol: f64,
    /// The `ulp` rule's bound in ULPs of the output's dtype (0.5: correctly rounded); when set,
    /// it alone decides and `rtol`/`atol` are 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ulp: Option<f64>,
}

impl Tolerance {
    /// Zero tolerance: exact equality.
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0, max_ulp: None };

    /// How far an element with difference `d`, `|expected|` `mag` and `ulp` ULPs lies beyond
    /// the tolerance: positive when it disagrees.
    #[inline(always)]
    pub fn excess(self, d: f64, mag: f64, ulp: f64) -> f64 {
        match self.max_ulp {
            Some(m) => ulp - m,
            None => d - (self.atol + self.rtol * mag),
        }
    }

    /// At most `n` ULPs of the output's dtype apart (the `ulp` rule).
    pub fn ulps(n: f64) -> Tolerance {
        Tolerance { rtol: 0.0, atol: 0.0, max_ulp: Some(n) }
    }

    /// `rtol` and `atol` (`allclose`).
    pub fn close(rtol: f64, atol: f64) -> Tolerance {
        Tolerance { rtol, atol, max_ulp: None }
    }

    /// `torch.testing.assert_close`'s default (rtol, atol) for a dtype
    /// (<https://pytorch.org/docs/stable/testing.html#torch.testing.assert_close>): float16
    /// (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 and complex64 (1.3e-6, 1e-5), float64
    /// and complex128 (1e-7, 1e-7); the integers and bool compare exactly (0, 0).
    pub fn for_dtype(dtype: Dtype) -> Tolerance {
        let (rtol, atol) = match dtype {
            Dtype::Float16 => (1e-3, 1e-5),
            Dtype::Bfloat16 => (1.6e-2, 1e-5),
            Dtype::Float32 | Dtype::Complex64 => (1.3e-6, 1e-5),
            Dtype::Float64 | Dtype::Complex128 => (1e-7, 1e-7),
            // bool and the integers
            _ => (0.0, 0.0),
        };
        Tolerance::close(rtol, atol)
    }

    /// [`Tolerance::for_dtype`] of a reported dtype; a name mlport does not know compares exactly.
    pub fn for_name(name: &DtypeName) -> Tolerance {
        name.known().map_or(Tolerance::EXACT, Tolerance::for_dtype)
    }
}

/// A copy of `array` with every run of its last axis sorted ascending (the whole array when
/// 0- or 1-D), in `numpy.sort`'s order: NaN last, complex by real then imaginary part.
pub(crate) fn sort_last_axis(array: &NpyArray) -> NpyArray {
    fn nan_last<T: PartialOrd>(a: &T, b: &T, a_nan: bool, b_nan: bool) -> Ordering {
        match (a_nan, b_nan) {
            (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (a_nan, b_nan) => a_nan.cmp(&b_nan),
        }
    }
    fn sort_rows<T: Copy>(v: &[T], row: usize, cmp: impl Fn(&T, &T) -> Ordering) -> Vec<T> {
        let mut out = v.to_vec();
        if row > 0 {
            out.chunks_mut(row).for_each(|r| r.sort_by(&cmp));
        }
        out
    }
    let row = array.shape().last().copied().unwrap_or(1);
    let data = match array.data() {
        Data::Float16(v) => Data::Float16(sort_rows(v, row, |a: &f16, b: &f16| nan_last(a, b, a.is_nan(), b.is_nan()))),
        Data::Float32(v) => Data::Float32(sort_rows(v, row, |a, b| nan_last(a, b, a.is_nan(), b.is_nan()))),
        Data::Float64(v) => Data::Float64(sort_rows(v, row, |a, b| nan_last(a, b, a.is_nan(), b.is_nan()))),
        Data::Complex64(v) => Data::Complex64(sort_rows(v, row, |a, b| {
            nan_last(&a[0], &b[0], a[0].is_nan(), b[0].is_nan())
                .then_with(|| nan_last(&a[1], &b[1], a[1].is_nan(), b[1].is_nan()))
        })),
        Data::Complex128(v) => Data::Complex128(sort_rows(v, row, |a, b| {
            nan_last(&a[0], &b[0], a[0].is_nan(), b[0].is_nan())
                .then_with(|| nan_last(&a[1], &b[1], a[1].is_nan(), b[1].is_nan()))
        })),
        Data::Bool(v) => Data::Bool(sort_rows(v, row, Ord::cmp)),
        Data::Int8(v) => Data::Int8(sort_rows(v, row, Ord::cmp)),
        Data::Int16(v) => Data::Int16(sort_rows(v, row, Ord::cmp)),
        Data::Int32(v) => Data::Int32(sort_rows(v, row, Ord::cmp)),
        Data::Int64(v) => Data::Int64(sort_rows(v, row, Ord::cmp)),
        Data::UInt8(v) => Data::UInt8(sort_rows(v, row, Ord::cmp)),
        Data::UInt16(v) => Data::UInt16(sort_rows(v, row, Ord::cmp)),
        Data::UInt32(v) => Data::UInt32(sort_rows(v, row, Ord::cmp)),
        Data::UInt64(v) => Data::UInt64(sort_rows(v, row, Ord::cmp)),
    };
    NpyArray::new(array.shape().to_vec(), data).expect("same shape, same count")
}

/// Every element as `[re, im]` in float64 (`im` 0 for real data; bool as 0/1).
pub(crate) fn to_complex_f64(data: &Data) -> Vec<[f64; 2]> {
    use super::element::Element;
    with_data!(data, v => v.iter().map(|x| [x.re(), x.im()]).collect())
}

/// `actual` with each of its vectors along `axis` multiplied by the sign (real data) or unit
/// phase (complex data, either side) that best aligns it with the matching vector of
/// `expected` (see [`Rule::UpToSign`]). The result is float64 (complex128 when either side is
/// complex). The shapes must be equal; errors when `axis` is out of range.
pub(crate) fn align_signs(actual: &NpyArray, expected: &NpyArray, axis: isize) -> Result<NpyArray, String> {
    let shape = actual.shape();
    debug_assert_eq!(shape, expected.shape());
    let ndim = shape.len() as isize;
    // The vectors: `outer` groups of `inner` interleaved vectors of `len` elements.
    let (outer, len, inner) = if ndim <= 1 {
        (1, actual.len(), 1)
    } else {
        let ax = if axis < 0 { axis + ndim } else { axis };
        if !(0..ndim).contains(&ax) {
            return Err(format!("axis {axis} is out of range for a {ndim}-d array"));
        }
        let ax = ax as usize;
        (shape[..ax].iter().product(), shape[ax], shape[ax + 1..].iter().product())
    };
    let complex = actual.dtype().is_complex() || expected.dtype().is_complex();
    let mut a = to_complex_f64(actual.data());
    let e = to_complex_f64(expected.data());
    for o in 0..outer {
        for j in 0..inner {
            let at = |i: usize| o * len * inner + i * inner + j;
            // ⟨a, e⟩ = Σ a·conj(e).
            let (mut dr, mut di) = (0.0, 0.0);
            for i in 0..len {
                let (x, y) = (a[at(i)], e[at(i)]);
                dr += x[0] * y[0] + x[1] * y[1];
                di += x[1] * y[0] - x[0] * y[1];
            }
            if complex {
                let m = dr.hypot(di);
                if m > 0.0 && m.is_finite() {
                    // Multiply by conj(⟨a, e⟩)/|⟨a, e⟩|.
                    let (pr, pi) = (dr / m, -di / m);
                    for i in 0..len {
                        let x = a[at(i)];
                        a[at(i)] = [x[0] * pr - x[1] * pi, x[0] * pi + x[1] * pr];
                    }
                }
            } else if dr < 0.0 {
                for i in 0..len {
                    a[at(i)][0] = -a[at(i)][0];
                }
            }
        }
    }
    let data = if complex { Data::Complex128(a) } else { Data::Float64(a.into_iter().map(|x| x[0]).collect()) };
    Ok(NpyArray::new(shape.to_vec(), data).expect("same shape, same count"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for name in Rule::NAMES {
            let rule: Rule = name.parse().unwrap();
            assert_eq!(rule.as_str(), name);
            assert_eq!(rule.to_string(), name);
            assert_eq!(serde_json::to_string(&rule).unwrap(), format!("\"{name}\""));
        }
        assert_eq!("up_to_sign".parse(), Ok(Rule::UpToSign { axis: -2 }));
        assert_eq!("up_to_sign_rows".parse(), Ok(Rule::UpToSign { axis: -1 }));
        let odd = Rule::UpToSign { axis: 0 };
        assert_eq!(odd.to_string().parse(), Ok(odd));
        assert_eq!(serde_json::from_str::<Rule>("\"up_to_sign(axis=0)\"").unwrap(), odd);
        assert!("close".parse::<Rule>().unwrap_err().to_string().contains("\"close\""));
        assert_eq!(Rule::default(), Rule::AllClose);
    }

    #[test]
    fn torch_default_tolerances() {
        let t = |n: &str| {
            let t = Tolerance::for_name(&n.into());
            (t.rtol, t.atol)
        };
        assert_eq!(t("float16"), (1e-3, 1e-5));
        assert_eq!(t("bfloat16"), (1.6e-2, 1e-5));
        assert_eq!(t("float32"), (1.3e-6, 1e-5));
        assert_eq!(t("complex64"), (1.3e-6, 1e-5));
        assert_eq!(t("float64"), (1e-7, 1e-7));
        assert_eq!(t("complex128"), (1e-7, 1e-7));
        for exact in ["bool", "int8", "int64", "uint8", "uint64", "float8_e4m3fn"] {
            assert_eq!(Tolerance::for_name(&exact.into()), Tolerance::EXACT, "{exact}");
        }
    }

    #[test]
    fn sorts_each_last_axis_run_nan_last() {
        let a = NpyArray::new(vec![2, 3], vec![3.0f32, f32::NAN, 1.0, -0.5, 2.0, -1.0].into()).unwrap();
        let Data::Float32(s) = sort_last_axis(&a).into_parts().1 else { panic!() };
        assert_eq!(&s[..2], &[1.0, 3.0]);
        assert!(s[2].is_nan());
        assert_eq!(&s[3..], &[-1.0, -0.5, 2.0]);
        let c = NpyArray::new(vec![4], vec![[1.0, f64::NAN], [f64::NAN, 0.0], [1.0, -1.0], [0.0, 5.0]].into()).unwrap();
        let Data::Complex128(s) = sort_last_axis(&c).into_parts().1 else { panic!() };
        assert_eq!((s[0], s[1]), ([0.0, 5.0], [1.0, -1.0]));
        assert!(s[2][1].is_nan() && s[3][0].is_nan());
        let empty = NpyArray::new(vec![3, 0], Vec::<i32>::new().into()).unwrap();
        assert!(sort_last_axis(&empty).is_empty());
        let scalar = NpyArray::new(vec![], vec![7u8].into()).unwrap();
        assert_eq!(sort_last_axis(&scalar), scalar);
    }

    #[test]
    fn aligns_column_and_row_signs() {
        // 2×2, columns of the reference: (1, 2) and (3, 4). The output flips the second column.
        let e = NpyArray::new(vec![2, 2], vec![1.0f64, 3.0, 2.0, 4.0].into()).unwrap();
        let a = NpyArray::new(vec![2, 2], vec![1.0f64, -3.0, 2.0, -4.0].into()).unwrap();
        let fixed = align_signs(&a, &e, -2).unwrap();
        assert_eq!(fixed.data(), e.data());
        // Along rows (axis −1) the rows (1, −3)·(1, 3) = −8 and (2, −4)·(2, 4) = −12 both flip:
        // the result is the negated columns-flipped output, not the reference.
        let rows = align_signs(&a, &e, -1).unwrap();
        assert_eq!(rows.data(), &Data::Float64(vec![-1.0, 3.0, -2.0, 4.0]));
        assert!(align_signs(&a, &e, 2).unwrap_err().contains("out of range"));
        // A tie (orthogonal vectors) keeps the sign.
        let t = NpyArray::new(vec![2], vec![0.0f32, 1.0].into()).unwrap();
        let r = NpyArray::new(vec![2], vec![1.0f32, 0.0].into()).unwrap();
        assert_eq!(align_signs(&t, &r, -2).unwrap().data(), &Data::Float64(vec![0.0, 1.0]));
    }

    #[test]
    fn aligns_complex_phase() {
        // out = i·ref: ⟨out, ref⟩ = i·|ref|², so the phase applied is −i.
        let e = NpyArray::new(vec![2], vec![[1.0f64, 0.0], [0.0, 2.0]].into()).unwrap();
        let a = NpyArray::new(vec![2], vec![[0.0f64, 1.0], [-2.0, 0.0]].into()).unwrap();
        let Data::Complex128(v) = align_signs(&a, &e, -2).unwrap().into_parts().1 else { panic!() };
        for (x, y) in v.iter().zip([[1.0, 0.0], [0.0, 2.0]]) {
            assert!((x[0] - y[0]).abs() < 1e-15 && (x[1] - y[1]).abs() < 1e-15, "{v:?}");
        }
    }
}
