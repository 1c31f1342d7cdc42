//! Shared helpers of the Pallas tests: a seeded generator and comparisons.

#![allow(dead_code)]

use jaxon_trace::Array;

/// A small seeded generator (SplitMix64), so inputs are random but fixed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect()
    }

    pub fn i32s(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        (0..n)
            .map(|_| lo + (self.next_u64() % (hi - lo) as u64) as i32)
            .collect()
    }

    pub fn array(&mut self, shape: &[usize]) -> Array {
        let n = shape.iter().product();
        Array::from_vec(self.f32s(n), shape)
    }
}

/// Asserts `got` is within `tol` (absolute + relative) of `want`.
pub fn assert_close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (*g as f64 - w).abs();
        assert!(
            err <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w} (error {err})"
        );
    }
}

/// Asserts two f32 arrays agree within `tol`.
pub fn assert_arrays_close(got: &Array, want: &Array, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "shapes differ");
    let w: Vec<f64> = want.to_vec::<f32>().iter().map(|v| *v as f64).collect();
    assert_close(&got.to_vec::<f32>(), &w, tol);
}
