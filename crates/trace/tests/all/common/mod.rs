//! Seeded test inputs shared by the trace crate's tests (xorshift64: fast,
//! deterministic, and not round numbers).

#![allow(dead_code)]

/// A xorshift64 stream seeded by `seed`.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` values uniform in `[-scale, scale)`.
pub fn uniform(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut r = XorShift::new(seed);
    (0..n).map(|_| (r.unit() * 2.0 - 1.0) * scale).collect()
}

/// [`uniform`] as `f32`.
pub fn uniform_f32(n: usize, seed: u64, scale: f64) -> Vec<f32> {
    uniform(n, seed, scale)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// `n` integers in `lo..=hi`.
pub fn ints(n: usize, lo: i32, hi: i32, seed: u64) -> Vec<i32> {
    let mut r = XorShift::new(seed);
    let span = (hi as i64 - lo as i64 + 1) as u64;
    (0..n)
        .map(|_| (lo as i64 + (r.next_u64() % span) as i64) as i32)
        .collect()
}
