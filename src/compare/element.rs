//! Element access for the comparison: any dtype's elements read as float64 `(re, im)` pairs,
//! or as exact `i128` integers, one element at a time or a block at a time into a caller's
//! buffer (so the comparison's hot loop allocates nothing and keeps the file's own type in
//! memory). float16 blocks use `half`'s bulk conversion (F16C where the CPU has it).

use half::f16;

use super::npy::{Data, f16_to_f64, with_data};

/// An element type of a [`Data`] variant, read as a float64 complex number.
pub(crate) trait Element: Copy + Send + Sync {
    /// The real part (the value, for real types; 0 or 1 for bool).
    fn re(self) -> f64;
    /// The imaginary part (0 for real types).
    fn im(self) -> f64 {
        0.0
    }
    /// The value as an exact integer, for the integer types and bool; `None` otherwise.
    fn int(self) -> Option<i128> {
        None
    }
}

macro_rules! int_element {
    ($($t:ty),*) => {
        $(impl Element for $t {
            fn re(self) -> f64 {
                self as f64
            }
            fn int(self) -> Option<i128> {
                Some(self as i128)
            }
        })*
    };
}
int_element!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Element for bool {
    fn re(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn int(self) -> Option<i128> {
        Some(i128::from(self))
    }
}

impl Element for f16 {
    fn re(self) -> f64 {
        self.to_f64()
    }
}

impl Element for f32 {
    fn re(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    fn re(self) -> f64 {
        self
    }
}

impl Element for [f32; 2] {
    fn re(self) -> f64 {
        f64::from(self[0])
    }
    fn im(self) -> f64 {
        f64::from(self[1])
    }
}

impl Element for [f64; 2] {
    fn re(self) -> f64 {
        self[0]
    }
    fn im(self) -> f64 {
        self[1]
    }
}

/// True for the integer dtypes and bool, whose elements compare exactly as `i128`.
pub(crate) fn is_integral(data: &Data) -> bool {
    !data.dtype().is_inexact()
}

/// Element `i` as `(re, im)` in float64.
pub(crate) fn get(data: &Data, i: usize) -> (f64, f64) {
    with_data!(data, v => (v[i].re(), v[i].im()))
}

/// Fills `re` (and `im`, when given) with the elements from `start` on, as float64;
/// `re.len()` elements are read. Real data leaves `im` zeroed.
pub(crate) fn load_f64(data: &Data, start: usize, re: &mut [f64], im: Option<&mut [f64]>) {
    let n = re.len();
    match data {
        Data::Float16(v) => f16_to_f64(&v[start..start + n], re),
        Data::Float32(v) => re.iter_mut().zip(&v[start..start + n]).for_each(|(o, x)| *o = f64::from(*x)),
        Data::Float64(v) => re.copy_from_slice(&v[start..start + n]),
        Data::Complex64(v) => {
            let im = im.expect("complex data needs an imaginary buffer");
            for ((r, i), x) in re.iter_mut().zip(im.iter_mut()).zip(&v[start..start + n]) {
                *r = f64::from(x[0]);
                *i = f64::from(x[1]);
            }
            return;
        }
        Data::Complex128(v) => {
            let im = im.expect("complex data needs an imaginary buffer");
            for ((r, i), x) in re.iter_mut().zip(im.iter_mut()).zip(&v[start..start + n]) {
                *r = x[0];
                *i = x[1];
            }
            return;
        }
        other => with_data!(other, v => re.iter_mut().zip(&v[start..start + n]).for_each(|(o, x)| *o = x.re())),
    }
    if let Some(im) = im {
        im[..n].fill(0.0);
    }
}

/// Fills `out` with the integer elements from `start` on (`out.len()` of them).
/// Panics on floating-point data: check [`is_integral`] first.
pub(crate) fn load_i128(data: &Data, start: usize, out: &mut [i128]) {
    let n = out.len();
    with_data!(data, v => out.iter_mut().zip(&v[start..start + n]).for_each(|(o, x)| {
        *o = x.int().expect("integral data");
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_blocks_of_every_kind() {
        let mut re = [9.0; 2];
        let mut im = [9.0; 2];
        load_f64(&Data::Float16(vec![f16::from_f32(0.5), f16::from_f32(-2.0), f16::ONE]), 1, &mut re, Some(&mut im));
        assert_eq!((re, im), ([-2.0, 1.0], [0.0, 0.0]));
        load_f64(&Data::Complex64(vec![[1.0, 2.0], [3.0, -4.0]]), 0, &mut re, Some(&mut im));
        assert_eq!((re, im), ([1.0, 3.0], [2.0, -4.0]));
        load_f64(&Data::Bool(vec![true, false]), 0, &mut re, None);
        assert_eq!(re, [1.0, 0.0]);
        load_f64(&Data::UInt64(vec![u64::MAX, 3]), 0, &mut re, None);
        assert_eq!(re, [u64::MAX as f64, 3.0]);
        let mut ints = [0i128; 2];
        load_i128(&Data::UInt64(vec![u64::MAX, 3]), 0, &mut ints);
        assert_eq!(ints, [i128::from(u64::MAX), 3]);
        load_i128(&Data::Int8(vec![-128, 5]), 0, &mut ints);
        assert_eq!(ints, [-128, 5]);
        assert_eq!(get(&Data::Complex128(vec![[1.5, -0.5]]), 0), (1.5, -0.5));
        assert!(is_integral(&Data::Bool(vec![])) && !is_integral(&Data::Float16(vec![])));
    }
}
