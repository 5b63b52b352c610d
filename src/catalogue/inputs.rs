//! Validation of a case's input tables (docs/catalogue.md, "Inputs"): every key an input may
//! have either means something next to the others, for at least one dtype the input takes, or
//! is an error. A key that would be read by nothing (`std` with `dist = "uniform"`, `low` with
//! `value`) is refused rather than silently ignored, as is a `value` whose shape cannot be
//! broadcast to `shape` (NumPy's rules: dimensions right-aligned, each equal or 1).
//!
//! What each key is read by (src/worker/python/mlport_inputs.py):
//! - the source of the values, one of: `dist` (default `normal`), `value`, `fill`;
//! - `shape`: every source (`value` is broadcast to it; default `[]`, or the value's own shape);
//! - `mean`, `std`: `normal`, for floating and complex dtypes (integers draw `randint`);
//! - `low`, `high`: `uniform`, `positive`, `randint`;
//! - `start`: `arange`;
//! - `p`: bool dtypes, whatever the source (a bool input reads nothing else but `shape`);
//! - `dtype`, `as`, `scalar`: every input (`scalar = true` is `as = "scalar"`).

use toml::Value;

use super::spec::{DISTS, InputSpec, PASS_AS};
use crate::model::Dtype;

/// Why an input table is refused (the caller adds file, line and column).
pub type InputError = String;

/// The dtypes an input takes: its fixed `dtype`, or the case's sweep for `T` (the default).
fn input_dtypes(spec: &InputSpec, sweep: &[Dtype]) -> Vec<Dtype> {
    match spec.dtype.as_deref().map(str::parse::<Dtype>) {
        Some(Ok(d)) => vec![d],
        _ => sweep.to_vec(),
    }
}

/// The shape of a literal value: `[]` for a number or bool, one dimension per list level.
/// Errors on a ragged list, a string, a table or a date.
pub fn value_shape(v: &Value) -> Result<Vec<usize>, InputError> {
    match v {
        Value::Integer(_) | Value::Float(_) | Value::Boolean(_) => Ok(Vec::new()),
        Value::Array(items) => {
            let mut inner: Option<Vec<usize>> = None;
            for item in items {
                let s = value_shape(item)?;
                match &inner {
                    None => inner = Some(s),
                    Some(t) if *t != s => {
                        return Err(format!("`value` is a ragged list: items of shapes {t:?} and {s:?}"));
                    }
                    Some(_) => {}
                }
            }
            let mut shape = vec![items.len()];
            shape.extend(inner.unwrap_or_default());
            Ok(shape)
        }
        other => Err(format!("`value` must be a number, a bool or (nested) lists of them, not a {}", other.type_str())),
    }
}

/// Whether an array of `from` broadcasts to `to` by NumPy's rules (dimensions right-aligned,
/// each equal or 1, `from` no longer than `to`).
pub fn broadcasts(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len() && from.iter().rev().zip(to.iter().rev()).all(|(&f, &t)| f == t || f == 1)
}

/// The numbers of a literal value, flattened.
fn numbers(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Integer(i) => out.push(*i as f64),
        Value::Float(f) => out.push(*f),
        Value::Boolean(b) => out.push(f64::from(u8::from(*b))),
        Value::Array(items) => items.iter().for_each(|i| numbers(i, out)),
        _ => {}
    }
}

/// The smallest and largest value an integer dtype holds; 0 and 1 for bool (other dtypes:
/// the whole `i128` range, never used).
fn exact_range(d: Dtype) -> (i128, i128) {
    match d {
        Dtype::Bool => (0, 1),
        Dtype::Int8 => (i8::MIN.into(), i8::MAX.into()),
        Dtype::Int16 => (i16::MIN.into(), i16::MAX.into()),
        Dtype::Int32 => (i32::MIN.into(), i32::MAX.into()),
        Dtype::Int64 => (i64::MIN.into(), i64::MAX.into()),
        Dtype::Uint8 => (0, u8::MAX.into()),
        Dtype::Uint16 => (0, u16::MAX.into()),
        Dtype::Uint32 => (0, u32::MAX.into()),
        Dtype::Uint64 => (0, u64::MAX.into()),
        _ => (i128::MIN, i128::MAX),
    }
}

/// For a floating or complex dtype narrower than float64: its largest finite value, and the
/// magnitude from which a float64 rounds to ±inf in it (the largest value plus half its ULP:
/// IEEE round-to-nearest-even sends the halfway point up, the largest value's significand being
/// odd). float16 65504 and 65520; bfloat16 (2 − 2⁻⁷)·2¹²⁷ and 2¹²⁸ − 2¹¹⁹ − 2¹⁰³; float32 and
/// complex64 (parts) (2 − 2⁻²³)·2¹²⁷ and 2¹²⁸ − 2¹⁰⁴. `None` for other dtypes.
fn finite_range(d: Dtype) -> Option<(f64, f64)> {
    let two128 = 2f64.powi(128);
    match d {
        Dtype::Float16 => Some((65504.0, 65520.0)),
        // Built as float32, then rounded to bfloat16 (mlport_inputs.round_to_bfloat16): the
        // float32 rounding comes first, so the halfway point's own float32 half-ULP counts too.
        Dtype::Bfloat16 => Some((two128 - 2f64.powi(120), two128 - 2f64.powi(119) - 2f64.powi(103))),
        Dtype::Float32 | Dtype::Complex64 => Some((f64::from(f32::MAX), two128 - 2f64.powi(103))),
        _ => None,
    }
}

/// The first number of a literal outside `[lo, hi]` (integers compared exactly, whole floats
/// by value; fractions and non-finite numbers are the truncation check's), in TOML's spelling.
fn beyond(v: &Value, lo: i128, hi: i128) -> Option<String> {
    match v {
        Value::Integer(i) => (!(lo..=hi).contains(&i128::from(*i))).then(|| i.to_string()),
        Value::Float(f) if f.is_finite() && (*f < lo as f64 || *f > hi as f64) => Some(f.to_string()),
        Value::Array(items) => items.iter().find_map(|i| beyond(i, lo, hi)),
        _ => None,
    }
}

/// Checks one input of a case swept over `sweep`; the error says what is wrong (the caller
/// adds where).
pub fn check(spec: &InputSpec, sweep: &[Dtype]) -> Result<(), InputError> {
    let dtypes = input_dtypes(spec, sweep);
    let any = |f: fn(Dtype) -> bool| dtypes.iter().any(|&d| f(d));
    let all_bool = dtypes.iter().all(|d| d.is_bool());
    // The source of the values: exactly one of dist, value, fill (none: dist normal).
    let sources: Vec<&str> =
        [("dist", spec.dist.is_some()), ("value", spec.value.is_some()), ("fill", spec.fill.is_some())]
            .into_iter()
            .filter_map(|(k, set)| set.then_some(k))
            .collect();
    if sources.len() > 1 {
        return Err(format!("an input takes its values from one of `dist`, `value` or `fill`, not {}", and(&sources)));
    }
    if let Some(dist) = &spec.dist
        && !DISTS.contains(&dist.as_str())
    {
        return Err(format!("unknown dist `{dist}` (expected one of {})", DISTS.join(", ")));
    }
    if let Some(shape) = &spec.shape
        && shape.iter().any(|&s| s < 0)
    {
        return Err(format!("shape {shape:?} has a negative dimension"));
    }
    if let Some(a) = &spec.as_
        && !PASS_AS.contains(&a.as_str())
    {
        return Err(format!("unknown `as = \"{a}\"` (expected one of {})", PASS_AS.join(", ")));
    }
    if spec.scalar == Some(true) && spec.as_.as_deref().is_some_and(|a| a != "scalar") {
        return Err(format!(
            "`scalar = true` means `as = \"scalar\"`, which contradicts `as = \"{}\"`",
            spec.as_.as_deref().unwrap_or_default()
        ));
    }
    let shape: Option<Vec<usize>> = spec.shape.as_ref().map(|s| s.iter().map(|&d| d as usize).collect());
    // What the array will hold: `shape`, else a value's own shape, else a 0-d array.
    let mut built = shape.clone().unwrap_or_default();
    if let Some(v) = &spec.value {
        let vs = value_shape(v)?;
        if let Some(to) = &shape
            && !broadcasts(&vs, to)
        {
            return Err(format!(
                "`value` of shape {vs:?} cannot be broadcast to `shape` {to:?} (NumPy's rules: trailing dimensions \
                 equal or 1)"
            ));
        }
        if shape.is_none() {
            built = vs;
        }
    }
    if let Some(f) = &spec.fill
        && !matches!(f, Value::Integer(_) | Value::Float(_) | Value::Boolean(_))
    {
        return Err(format!("`fill` must be one number or bool, not a {}", f.type_str()));
    }
    let scalar = spec.scalar == Some(true) || spec.as_.as_deref() == Some("scalar");
    if scalar && built.iter().product::<usize>() != 1 {
        return Err(format!(
            "a scalar input (`scalar = true` or `as = \"scalar\"`) must hold one element, not shape {built:?}"
        ));
    }
    // A literal that an integer or bool dtype would silently truncate.
    if let Some(lit) = spec.value.as_ref().or(spec.fill.as_ref()) {
        let mut nums = Vec::new();
        numbers(lit, &mut nums);
        let exact = |d: Dtype| d.is_integer() || d.is_bool();
        if let Some(bad) = nums.iter().find(|x| x.fract() != 0.0 || !x.is_finite())
            && let Some(d) = dtypes.iter().find(|&&d| exact(d))
        {
            let key = if spec.value.is_some() { "value" } else { "fill" };
            return Err(format!(
                "`{key}` holds {bad}, which the input's dtype {d} cannot hold (it would be truncated)"
            ));
        }
        // A whole number beyond an integer or bool dtype's range (`fill = 300` at uint8): NumPy
        // refuses it when the worker builds the array, which would surface as a harness error.
        for &d in dtypes.iter().filter(|&&d| exact(d)) {
            let (lo, hi) = exact_range(d);
            if let Some(bad) = beyond(lit, lo, hi) {
                let key = if spec.value.is_some() { "value" } else { "fill" };
                return Err(format!("`{key}` holds {bad}, outside the range of the input's dtype {d} ({lo} to {hi})"));
            }
        }
    }
    // A finite literal a floating dtype would silently turn into ±inf (`value = 1e39` at float32).
    if let Some(lit) = spec.value.as_ref().or(spec.fill.as_ref()) {
        let mut nums = Vec::new();
        numbers(lit, &mut nums);
        for &d in &dtypes {
            let Some((largest, overflow)) = finite_range(d) else { continue };
            if let Some(bad) = nums.iter().find(|x| x.is_finite() && x.abs() >= overflow) {
                let key = if spec.value.is_some() { "value" } else { "fill" };
                return Err(format!(
                    "`{key}` holds {bad}, outside the range of the input's dtype {d} (largest finite value \
                     {largest:e}): it would silently become inf; write inf if that is what the case means"
                ));
            }
        }
    }
    let dist = spec.dist.as_deref();
    let drawn = spec.value.is_none() && spec.fill.is_none();
    let mut unread: Vec<(&str, String)> = Vec::new();
    let mut need = |key: &'static str, set: bool, ok: bool, why: String| {
        if set && !ok {
            unread.push((key, why));
        }
    };
    let float_like = any(Dtype::is_inexact);
    let non_bool = !all_bool;
    let normal = drawn && matches!(dist, None | Some("normal"));
    need(
        "mean",
        spec.mean.is_some(),
        normal && float_like,
        "it is read by `dist = \"normal\"` (the default) for floating and complex dtypes".into(),
    );
    need(
        "std",
        spec.std.is_some(),
        normal && float_like,
        "it is read by `dist = \"normal\"` (the default) for floating and complex dtypes".into(),
    );
    let bounded = drawn && matches!(dist, Some("uniform" | "positive" | "randint")) && non_bool;
    let bounds_why = "it is read by `dist = \"uniform\"`, `\"positive\"` or `\"randint\"` (integers drawn from \
                      [low, high): `randint`), for dtypes other than bool";
    need("low", spec.low.is_some(), bounded, bounds_why.into());
    need("high", spec.high.is_some(), bounded, bounds_why.into());
    need(
        "start",
        spec.start.is_some(),
        drawn && dist == Some("arange") && non_bool,
        "it is read by `dist = \"arange\"`, for dtypes other than bool".into(),
    );
    need(
        "p",
        spec.p.is_some(),
        drawn && any(Dtype::is_bool),
        "it is read for bool inputs drawn at random (the input's dtypes are not bool)".into(),
    );
    if spec.dist.is_some() && all_bool {
        unread.push((
            "dist",
            "a bool input is drawn with probability `p` of true (default 0.5); use `value` or `fill` for fixed ones"
                .into(),
        ));
    }
    if let Some((key, why)) = unread.into_iter().next() {
        let with = if let Some(d) = dist {
            format!("`dist = \"{d}\"`")
        } else if spec.value.is_some() {
            "`value`".into()
        } else if spec.fill.is_some() {
            "`fill`".into()
        } else {
            "the default `dist = \"normal\"`".into()
        };
        let names: Vec<&str> = dtypes.iter().map(|d| d.as_str()).collect();
        return Err(format!("`{key}` means nothing with {with} at dtype {}: {why}", names.join("/")));
    }
    if let (Some(lo), Some(hi)) = (spec.low, spec.high)
        && lo >= hi
    {
        return Err(format!("low {lo} must be below high {hi}"));
    }
    if let Some(p) = spec.p
        && !(0.0..=1.0).contains(&p)
    {
        return Err(format!("p {p} must be a probability in [0, 1]"));
    }
    if let Some(s) = spec.std
        && !(s >= 0.0 && s.is_finite())
    {
        return Err(format!("std {s} must be a finite number >= 0"));
    }
    match dist {
        Some("spd") if built.len() < 2 || built[built.len() - 1] != built[built.len() - 2] => Err(format!(
            "`dist = \"spd\"` makes square matrices: `shape` must end in two equal dimensions, not {built:?}"
        )),
        Some("probs") if built.is_empty() => {
            Err("`dist = \"probs\"` normalises along the last axis: `shape` needs at least one dimension".into())
        }
        _ => Ok(()),
    }
}

/// `a`, `a and b`, `a, b and c`, each in backticks.
fn and(keys: &[&str]) -> String {
    let q: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_shapes_and_broadcasting() {
        let v = |s: &str| -> Value { toml::from_str::<toml::Table>(&format!("v = {s}")).unwrap()["v"].clone() };
        assert_eq!(value_shape(&v("1.5")).unwrap(), Vec::<usize>::new());
        assert_eq!(value_shape(&v("[[1, 2, 3], [4, 5, 6]]")).unwrap(), [2, 3]);
        assert_eq!(value_shape(&v("[]")).unwrap(), [0]);
        assert!(value_shape(&v("[[1], [2, 3]]")).unwrap_err().contains("ragged"));
        assert!(value_shape(&v("\"x\"")).unwrap_err().contains("not a string"));
        assert!(broadcasts(&[], &[250, 250]));
        assert!(broadcasts(&[3], &[2, 3]));
        assert!(broadcasts(&[2, 1], &[2, 3]));
        assert!(broadcasts(&[1, 3], &[4, 2, 3]));
        assert!(!broadcasts(&[2], &[2, 3]));
        assert!(!broadcasts(&[2, 3], &[3]));
        assert!(broadcasts(&[16], &[16]));
    }

    /// Found by the adversarial round: `fill = 300` at uint8 loaded, and NumPy's OverflowError
    /// when the worker built the array was stored as a harness error instead.
    #[test]
    fn literals_beyond_an_integer_dtype_are_refused() {
        let input = |src: &str| -> InputSpec { toml::from_str(src).unwrap() };
        let sweep = [Dtype::Float32, Dtype::Uint8];
        let e = check(&input("shape = [2]\nfill = 300"), &sweep).unwrap_err();
        assert!(e.contains("`fill` holds 300, outside the range of the input's dtype uint8 (0 to 255)"), "{e}");
        assert!(check(&input("shape = [2]\nfill = 255"), &sweep).is_ok());
        let e = check(&input("value = [1, -1]"), &sweep).unwrap_err();
        assert!(e.contains("`value` holds -1, outside the range of the input's dtype uint8"), "{e}");
        let e = check(&input("value = [3000000000]\ndtype = \"int32\""), &sweep).unwrap_err();
        assert!(
            e.contains("holds 3000000000, outside the range of the input's dtype int32 (-2147483648 to 2147483647)"),
            "{e}"
        );
        assert!(check(&input("value = [2147483647, -2147483648]\ndtype = \"int32\""), &sweep).is_ok());
        let e = check(&input("fill = 1e300\ndtype = \"int64\""), &sweep).unwrap_err();
        assert!(e.contains("outside the range of the input's dtype int64"), "{e}");
        assert!(check(&input("value = 9223372036854775807\ndtype = \"uint64\""), &sweep).is_ok());
        let e = check(&input("shape = [2]\nfill = 2\ndtype = \"bool\""), &sweep).unwrap_err();
        assert!(e.contains("outside the range of the input's dtype bool (0 to 1)"), "{e}");
        assert!(check(&input("value = [true, false, 1, 0]\ndtype = \"bool\""), &sweep).is_ok());
        // float64 takes any finite number.
        assert!(check(&input("fill = 1e300"), &[Dtype::Float64]).is_ok());
    }

    /// Found by the adversarial round: `value = 1e39` at float32 loaded and silently became inf.
    #[test]
    fn literals_beyond_a_floating_dtype_are_refused() {
        let input = |src: &str| -> InputSpec { toml::from_str(src).unwrap() };
        let e = check(&input("value = 1e39"), &[Dtype::Float32]).unwrap_err();
        assert!(e.contains("`value` holds 1000000000000000000000000000000000000000, outside the range of the input's dtype float32 (largest finite value 3.4028234663852886e38)"), "{e}");
        assert!(e.contains("would silently become inf"), "{e}");
        // The bounds are where NumPy's own casts overflow: float32(3.4028235e38) is finite,
        // float16(65519) rounds to 65504 and float16(65520) to inf.
        assert!(check(&input("value = 3.4028235e38"), &[Dtype::Float32]).is_ok());
        assert!(check(&input("value = [-65519.0, 65519]"), &[Dtype::Float16]).is_ok());
        let e = check(&input("value = [1, -65520]"), &[Dtype::Float16]).unwrap_err();
        assert!(
            e.contains("holds -65520, outside the range of the input's dtype float16 (largest finite value 6.5504e4)"),
            "{e}"
        );
        // A swept input is checked at every dtype of the sweep; fill as well as value.
        let e = check(&input("shape = [2]\nfill = 1e5"), &[Dtype::Float32, Dtype::Float16]).unwrap_err();
        assert!(e.contains("`fill` holds 100000, outside the range of the input's dtype float16"), "{e}");
        assert!(check(&input("shape = [2]\nfill = 1e39"), &[Dtype::Bfloat16]).is_err());
        assert!(check(&input("shape = [2]\nfill = 3.38e38"), &[Dtype::Bfloat16]).is_ok());
        // 2**128 - 2**119 - 2**100 becomes float32 2**128 - 2**119, which bfloat16 rounds to inf.
        let near = 2f64.powi(128) - 2f64.powi(119) - 2f64.powi(100);
        assert!(check(&input(&format!("shape = [2]\nfill = {near:e}")), &[Dtype::Bfloat16]).is_err());
        assert!(check(&input("value = 1e39"), &[Dtype::Complex64]).is_err());
        assert!(check(&input("value = [inf, -inf, 1e300]"), &[Dtype::Float64]).is_ok());
        assert!(check(&input("value = [inf, -inf]"), &[Dtype::Float16]).is_ok(), "inf written as inf is meant");
    }
}
