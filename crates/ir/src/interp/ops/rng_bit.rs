//! The kernel of `rng_bit_generator`: XLA's `RngBitGenerator` as XLA's
//! CPU expands it (`RngBitGeneratorExpander` over `prng.cc`), so the bits
//! and the new key equal JAX 0.10.2's on CPU bit for bit.
//!
//! The state is two `u64` words `s` (a `u32[4]` key is read little-endian
//! in pairs, as JAX's `bitcast_convert` to `u64[2]`): `s[0]` is the cipher
//! key for both algorithms, and it is returned unchanged.
//! - Threefry-2x32: the counter is `s[1]`. 32-bit (and narrower, truncated)
//!   bits split the shape in halves along its first even dimension (else
//!   its largest, first on ties; a scalar is one half): half element `j`
//!   hashes `s[1] + j` and element `2i + w` along that dimension reads word
//!   `w` of half element `i`. 64-bit bits hash `s[1] + i` per element, as
//!   `lo | hi << 32`. The new counter adds the number of hashes.
//! - Philox-4x32-10 (and `RNG_DEFAULT`, XLA's CPU default): the 128-bit
//!   counter is `s[1] + 2^64 s[0]` (XLA reverses a two-word state); block
//!   `j` encrypts counter `+ j` into four words, laid out in order (64-bit
//!   bits pair them `w0 | w1 << 32`, `w2 | w3 << 32`). The new state keeps
//!   the counter's low word only.
//!
//! Invariant: never panics on a user's key or shape; errors name the
//! primitive.

use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::RandomAlgorithm;

use super::random::threefry2x32_one;

const NAME: &str = "rng_bit_generator";

fn err(msg: impl Into<String>) -> IrError {
    IrError::Eval(format!("{NAME}: {}", msg.into()))
}

/// Philox-4x32 with 10 rounds of `ctr` under `key`.
pub fn philox4x32_one(key: [u32; 2], ctr: [u32; 4]) -> [u32; 4] {
    const W32A: u32 = 0x9E37_79B9;
    const W32B: u32 = 0xBB67_AE85;
    const M4X32A: u64 = 0xD251_1F53;
    const M4X32B: u64 = 0xCD9E_8D57;
    let (mut k, mut x) = (key, ctr);
    for _ in 0..10 {
        let p0 = x[0] as u64 * M4X32A;
        let p1 = x[2] as u64 * M4X32B;
        x = [
            (p1 >> 32) as u32 ^ x[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ x[3] ^ k[1],
            p0 as u32,
        ];
        k = [k[0].wrapping_add(W32A), k[1].wrapping_add(W32B)];
    }
    x
}

/// The low and high `u32` halves of a `u64`.
fn halves(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

/// The generator state as two `u64` words, from a `u32[4]` or `u64[2]` key.
fn state(key: &HostArray) -> Result<[u64; 2], IrError> {
    match (key.data(), key.shape()) {
        (Storage::U32(v), [4]) => Ok([
            v[0] as u64 | (v[1] as u64) << 32,
            v[2] as u64 | (v[3] as u64) << 32,
        ]),
        (Storage::U64(v), [2]) => Ok([v[0], v[1]]),
        (d, s) => Err(err(format!(
            "the key must be u32[4] or u64[2], got {}{s:?}",
            d.dtype()
        ))),
    }
}

/// The new key, in the type of `key`.
fn key_like(key: &HostArray, s: [u64; 2]) -> Result<HostArray, IrError> {
    let data = match key.data() {
        Storage::U64(_) => Storage::U64(s.to_vec()),
        _ => Storage::U32(s.iter().flat_map(|&w| halves(w)).collect()),
    };
    HostArray::new(key.shape().to_vec(), data)
}

/// The dimension XLA's `SplitShapeIntoHalves` splits: the first even one,
/// else the first largest; `None` for a scalar.
fn split_dim(shape: &[usize]) -> Option<usize> {
    if let Some(d) = shape.iter().position(|&n| n % 2 == 0) {
        return Some(d);
    }
    let mut best: Option<usize> = None;
    for (i, &n) in shape.iter().enumerate() {
        if best.is_none_or(|b| n > shape[b]) {
            best = Some(i);
        }
    }
    best
}

/// Threefry words, 32 bits per element: the halves layout (module header).
fn threefry_u32(s: [u64; 2], shape: &[usize]) -> (Vec<u32>, u64) {
    let key = halves(s[0]);
    let hash = |j: usize| threefry2x32_one(key, halves(s[1].wrapping_add(j as u64)));
    let Some(d) = split_dim(shape) else {
        return (vec![hash(0)[0]], s[1].wrapping_add(1));
    };
    let n: usize = shape.iter().product();
    let (size, inner) = (shape[d], shape[d + 1..].iter().product::<usize>());
    let half = size.div_ceil(2);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (outer, rest) = (i / (size * inner), i % (size * inner));
        let (k, r) = (rest / inner, rest % inner);
        let j = (outer * half + k / 2) * inner + r;
        out.push(hash(j)[k % 2]);
    }
    let hashes = n / size.max(1) * half;
    (out, s[1].wrapping_add(hashes as u64))
}

/// The 128-bit Philox counter `c + j` as four words.
fn philox_ctr(lo: u64, hi: u64, j: u64) -> [u32; 4] {
    let l = lo.wrapping_add(j);
    let h = hi.wrapping_add(u64::from(l < lo));
    let [a, b] = halves(l);
    let [c, d] = halves(h);
    [a, b, c, d]
}

/// `words` Philox words in block order, and the new counter's low word.
fn philox_words(s: [u64; 2], words: usize) -> (Vec<u32>, u64) {
    let key = halves(s[0]);
    let blocks = words.div_ceil(4);
    let mut out = Vec::with_capacity(blocks * 4);
    for j in 0..blocks {
        out.extend(philox4x32_one(key, philox_ctr(s[1], s[0], j as u64)));
    }
    out.truncate(words);
    (out, s[1].wrapping_add(blocks as u64))
}

/// `rng_bit_generator[algorithm dtype shape]`: the new key and the bits.
pub fn rng_bit_generator(
    key: &HostArray,
    algorithm: RandomAlgorithm,
    dtype: DType,
    shape: &[usize],
) -> Result<Vec<HostArray>, IrError> {
    let s = state(key)?;
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n.checked_mul(2).is_some())
        .ok_or_else(|| err(format!("shape {shape:?} is too large")))?;
    let wide = match dtype {
        DType::U8 | DType::U16 | DType::U32 => false,
        DType::U64 => true,
        d => {
            return Err(err(format!(
                "dtype must be uint8, uint16, uint32 or uint64, got {d}"
            )))
        }
    };
    let (words, counter) = match (algorithm, wide) {
        (RandomAlgorithm::ThreeFry, false) => threefry_u32(s, shape),
        (RandomAlgorithm::ThreeFry, true) => {
            let key = halves(s[0]);
            let w = (0..n)
                .flat_map(|i| threefry2x32_one(key, halves(s[1].wrapping_add(i as u64))))
                .collect();
            (w, s[1].wrapping_add(n as u64))
        }
        (RandomAlgorithm::Philox | RandomAlgorithm::Default, false) => philox_words(s, n),
        (RandomAlgorithm::Philox | RandomAlgorithm::Default, true) => philox_words(s, 2 * n),
    };
    let data = match dtype {
        DType::U8 => Storage::U8(words.iter().map(|&w| w as u8).collect()),
        DType::U16 => Storage::U16(words.iter().map(|&w| w as u16).collect()),
        DType::U32 => Storage::U32(words),
        _ => Storage::U64(
            words
                .chunks_exact(2)
                .map(|c| c[0] as u64 | (c[1] as u64) << 32)
                .collect(),
        ),
    };
    Ok(vec![
        key_like(key, [s[0], counter])?,
        HostArray::new(shape.to_vec(), data)?,
    ])
}
