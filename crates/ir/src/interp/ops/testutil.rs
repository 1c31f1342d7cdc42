//! Test helpers: a seeded PRNG and array builders/comparers.

use crate::array::HostArray;
use crate::dtype::DType;

/// splitmix64.
pub(crate) struct Rng(pub u64);

impl Rng {
    /// Next raw value.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// An array from f64 values.
pub(crate) fn arr(dtype: DType, shape: &[usize], v: &[f64]) -> HostArray {
    HostArray::from_f64(dtype, shape, v).expect("valid test array")
}

/// Asserts shape, dtype and values within `tol` (relative+absolute), NaN == NaN.
pub(crate) fn assert_close(got: &HostArray, dtype: DType, shape: &[usize], want: &[f64], tol: f64) {
    assert_eq!(got.dtype(), dtype, "dtype");
    assert_eq!(got.shape(), shape, "shape");
    let g = got.to_f64_vec();
    assert_eq!(g.len(), want.len(), "length");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * (1.0 + b.abs());
        assert!(ok, "element {i}: got {a}, want {b} (all: {g:?})");
    }
}

/// Evaluates `p` on `args` and compares every output with `want`
/// (dtype, shape, values) within `tol`.
pub(crate) fn check(
    p: &crate::primitive::Primitive,
    args: &[HostArray],
    want: &[(DType, &[usize], &[f64])],
    tol: f64,
) {
    let out = super::eval_op(p, args).expect("eval_op succeeds");
    assert_eq!(out.len(), want.len(), "number of outputs");
    for (o, (d, s, v)) in out.iter().zip(want) {
        assert_close(o, *d, s, v, tol);
    }
}
