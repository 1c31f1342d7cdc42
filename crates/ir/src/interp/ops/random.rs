//! Kernels of the random family: threefry2x32, and the typed-key
//! primitives built on it (`random_seed`, `random_wrap`, `random_unwrap`,
//! `random_bits`, `random_split`, `random_fold_in`) with JAX 0.10's
//! threefry semantics (`jax_threefry_partitionable=True`), and
//! `random_gamma` (Marsaglia-Tsang rejection per element, as JAX's
//! `_gamma_one`).

use super::special::{erf_inv_f32, erf_inv_f64};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;

/// Threefry's key-schedule parity constant.
const PARITY: u32 = 0x1BD1_1BDA;

/// Rotation amounts of the even and odd groups of four rounds.
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// Threefry-2x32 (20 rounds) of the counter pair `x` under key `k`.
pub fn threefry2x32_one(k: [u32; 2], x: [u32; 2]) -> [u32; 2] {
    let ks = [k[0], k[1], k[0] ^ k[1] ^ PARITY];
    let mut a = x[0].wrapping_add(ks[0]);
    let mut b = x[1].wrapping_add(ks[1]);
    for group in 0..5usize {
        for &r in &ROTATIONS[group % 2] {
            a = a.wrapping_add(b);
            b = b.rotate_left(r);
            b ^= a;
        }
        a = a.wrapping_add(ks[(group + 1) % 3]);
        b = b
            .wrapping_add(ks[(group + 2) % 3])
            .wrapping_add(group as u32 + 1);
    }
    [a, b]
}

fn err(name: &str, msg: impl Into<String>) -> IrError {
    IrError::Eval(format!("{name}: {}", msg.into()))
}

/// The key words of a `key<fry>` array.
fn keys<'a>(name: &str, a: &'a HostArray) -> Result<&'a [[u32; 2]], IrError> {
    match a.data() {
        Storage::Key(v) => Ok(v),
        other => Err(err(
            name,
            format!("expected a key<fry> array, got {}", other.dtype()),
        )),
    }
}

/// The elements of a `u32` array.
fn u32s<'a>(name: &str, a: &'a HostArray) -> Result<&'a [u32], IrError> {
    match a.data() {
        Storage::U32(v) => Ok(v),
        other => Err(err(
            name,
            format!("expected a u32 array, got {}", other.dtype()),
        )),
    }
}

/// `random_seed[impl=fry]`: key `[seed >> 32, seed & 0xFFFFFFFF]` per seed
/// (32-bit seeds give a zero high word, as JAX's `threefry_seed`).
pub fn seed(seeds: &HostArray) -> Result<HostArray, IrError> {
    let d = seeds.dtype();
    if !(d.is_int() || d.is_bool()) {
        return Err(err(
            "random_seed",
            format!("seeds must be integers, got {d}"),
        ));
    }
    let wide = d.bits() == 64;
    let data: Vec<[u32; 2]> = (0..seeds.len())
        .map(|i| {
            let s = seeds.data().get_i64(i);
            let s = if d == DType::U64 {
                match seeds.data() {
                    Storage::U64(v) => v[i],
                    _ => s as u64,
                }
            } else {
                s as u64
            };
            let hi = if wide { (s >> 32) as u32 } else { 0 };
            [hi, s as u32]
        })
        .collect();
    HostArray::new(seeds.shape().to_vec(), Storage::Key(data))
}

/// `random_wrap[impl=fry]`: `u32[..., 2]` data to keys `key<fry>[...]`.
pub fn wrap(data: &HostArray) -> Result<HostArray, IrError> {
    let v = u32s("random_wrap", data)?;
    let (last, lead) = data.shape().split_last().ok_or_else(|| {
        err(
            "random_wrap",
            "key data must have a trailing dimension of 2",
        )
    })?;
    if *last != 2 {
        return Err(err(
            "random_wrap",
            "key data must have a trailing dimension of 2",
        ));
    }
    let keys = v.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
    HostArray::new(lead.to_vec(), Storage::Key(keys))
}

/// `random_unwrap`: keys `key<fry>[...]` to their data `u32[..., 2]`.
pub fn unwrap(k: &HostArray) -> Result<HostArray, IrError> {
    let v = keys("random_unwrap", k)?;
    let mut shape = k.shape().to_vec();
    shape.push(2);
    HostArray::new(shape, Storage::U32(v.iter().flatten().copied().collect()))
}

/// `random_bits[bit_width shape]`: per key, element `i` of `shape` is
/// threefry of the counter `(0, i)`; 32 bits are the xor of the two words,
/// 8/16 bits truncate it, 64 bits are `hi << 32 | lo`.
pub fn bits(k: &HostArray, bit_width: u32, shape: &[usize]) -> Result<HostArray, IrError> {
    let v = keys("random_bits", k)?;
    let n: usize = shape.iter().product();
    if n as u128 > u32::MAX as u128 {
        return Err(err("random_bits", "more than 2**32 bits per key"));
    }
    let words = v
        .iter()
        .flat_map(|&key| (0..n).map(move |i| threefry2x32_one(key, [0, i as u32])));
    let data = match bit_width {
        8 => Storage::U8(words.map(|w| (w[0] ^ w[1]) as u8).collect()),
        16 => Storage::U16(words.map(|w| (w[0] ^ w[1]) as u16).collect()),
        32 => Storage::U32(words.map(|w| w[0] ^ w[1]).collect()),
        64 => Storage::U64(words.map(|w| ((w[0] as u64) << 32) | w[1] as u64).collect()),
        w => {
            return Err(err(
                "random_bits",
                format!("bit_width must be 8, 16, 32 or 64, got {w}"),
            ))
        }
    };
    let mut out = k.shape().to_vec();
    out.extend_from_slice(shape);
    HostArray::new(out, data)
}

/// The `n` keys one key splits into: key `i` is threefry of `(0, i)`.
pub fn split_one(key: [u32; 2], n: usize) -> impl Iterator<Item = [u32; 2]> {
    (0..n).map(move |i| threefry2x32_one(key, [0, i as u32]))
}

/// `random_split[shape]`: each key to `shape` new keys.
pub fn split(k: &HostArray, shape: &[usize]) -> Result<HostArray, IrError> {
    let v = keys("random_split", k)?;
    let n: usize = shape.iter().product();
    let data = v.iter().flat_map(|&key| split_one(key, n)).collect();
    let mut out = k.shape().to_vec();
    out.extend_from_slice(shape);
    HostArray::new(out, Storage::Key(data))
}

/// Index of element `i` of `out` in an operand of `shape` broadcast to it
/// (size-1 and rank-0 operands repeat).
fn bcast_index(shape: &[usize], out: &[usize], i: usize) -> usize {
    if shape.is_empty() {
        return 0;
    }
    let (mut rem, mut idx, mut stride) = (i, 0, 1);
    for d in (0..out.len()).rev() {
        let c = rem % out[d];
        rem /= out[d];
        if shape[d] != 1 {
            idx += c * stride;
        }
        stride *= shape[d];
    }
    idx
}

/// The broadcast shape of operands (rank 0 or equal rank, sizes equal or 1).
pub fn bcast_shape(name: &str, shapes: &[&[usize]]) -> Result<Vec<usize>, IrError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1; rank];
    for s in shapes.iter().filter(|s| !s.is_empty()) {
        if s.len() != rank {
            return Err(err(name, format!("incompatible shapes {shapes:?}")));
        }
        for (o, &d) in out.iter_mut().zip(s.iter()) {
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(err(name, format!("incompatible shapes {shapes:?}")));
            }
        }
    }
    Ok(out)
}

/// `random_fold_in keys msgs`: threefry of `(0, msg)` under each key.
pub fn fold_in(k: &HostArray, msgs: &HostArray) -> Result<HostArray, IrError> {
    let v = keys("random_fold_in", k)?;
    let m = u32s("random_fold_in", msgs)?;
    let out = bcast_shape("random_fold_in", &[k.shape(), msgs.shape()])?;
    let n: usize = out.iter().product();
    let data = (0..n)
        .map(|i| {
            let key = v[bcast_index(k.shape(), &out, i)];
            threefry2x32_one(key, [0, m[bcast_index(msgs.shape(), &out, i)]])
        })
        .collect();
    HostArray::new(out, Storage::Key(data))
}

/// `threefry2x32 k0 k1 x0 x1`: two `u32` arrays of the broadcast shape.
pub fn threefry2x32(args: &[&HostArray]) -> Result<Vec<HostArray>, IrError> {
    let [k0, k1, x0, x1] = args else {
        return Err(err("threefry2x32", "takes four operands"));
    };
    let vs = [
        u32s("threefry2x32", k0)?,
        u32s("threefry2x32", k1)?,
        u32s("threefry2x32", x0)?,
        u32s("threefry2x32", x1)?,
    ];
    let shapes = [k0.shape(), k1.shape(), x0.shape(), x1.shape()];
    let out = bcast_shape("threefry2x32", &shapes)?;
    let n: usize = out.iter().product();
    let at = |j: usize, i: usize| vs[j][bcast_index(shapes[j], &out, i)];
    let (mut y0, mut y1) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let y = threefry2x32_one([at(0, i), at(1, i)], [at(2, i), at(3, i)]);
        y0.push(y[0]);
        y1.push(y[1]);
    }
    Ok(vec![
        HostArray::new(out.clone(), Storage::U32(y0))?,
        HostArray::new(out, Storage::U32(y1))?,
    ])
}

/// The float arithmetic `random_gamma` needs, in the sample's own precision.
trait GammaFloat:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    fn c(x: f64) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp(self) -> Self;
    fn sqrt(self) -> Self;
    fn erf_inv(self) -> Self;
    fn tiny() -> Self;
    /// `jax.random.uniform(key, (), dtype)` in `[0, 1)`.
    fn uniform01(key: [u32; 2]) -> Self;
    /// The float just above -1.
    fn above_minus_one() -> Self;
}

impl GammaFloat for f32 {
    fn c(x: f64) -> f32 {
        x as f32
    }
    fn ln(self) -> f32 {
        f32::ln(self)
    }
    fn ln_1p(self) -> f32 {
        f32::ln_1p(self)
    }
    fn exp(self) -> f32 {
        f32::exp(self)
    }
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    fn erf_inv(self) -> f32 {
        erf_inv_f32(self)
    }
    fn tiny() -> f32 {
        f32::MIN_POSITIVE
    }
    fn uniform01(key: [u32; 2]) -> f32 {
        let w = threefry2x32_one(key, [0, 0]);
        f32::from_bits(((w[0] ^ w[1]) >> 9) | 0x3F80_0000) - 1.0
    }
    fn above_minus_one() -> f32 {
        f32::from_bits(0xBF80_0000 - 1)
    }
}

impl GammaFloat for f64 {
    fn c(x: f64) -> f64 {
        x
    }
    fn ln(self) -> f64 {
        f64::ln(self)
    }
    fn ln_1p(self) -> f64 {
        f64::ln_1p(self)
    }
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    fn erf_inv(self) -> f64 {
        erf_inv_f64(self)
    }
    fn tiny() -> f64 {
        f64::MIN_POSITIVE
    }
    fn uniform01(key: [u32; 2]) -> f64 {
        let w = threefry2x32_one(key, [0, 0]);
        let b = ((w[0] as u64) << 32) | w[1] as u64;
        f64::from_bits((b >> 12) | 0x3FF0_0000_0000_0000) - 1.0
    }
    fn above_minus_one() -> f64 {
        f64::from_bits(0xBFF0_0000_0000_0000 - 1)
    }
}

/// Splits a key in two, as JAX's `_split(key)`.
fn split2(key: [u32; 2]) -> ([u32; 2], [u32; 2]) {
    (threefry2x32_one(key, [0, 0]), threefry2x32_one(key, [0, 1]))
}

/// `jax.random.normal(key, (), dtype)`.
fn normal<F: GammaFloat>(key: [u32; 2]) -> F {
    let lo = F::above_minus_one();
    let hi = F::c(1.0);
    let u = F::uniform01(key) * (hi - lo) + lo;
    let u = if lo > u { lo } else { u };
    F::c(std::f64::consts::SQRT_2) * u.erf_inv()
}

/// One Gamma(alpha, 1) sample (its log when `log_space`), JAX's `_gamma_one`.
fn gamma_one<F: GammaFloat>(key: [u32; 2], alpha: F, log_space: bool) -> F {
    let (zero, one) = (F::c(0.0), F::c(1.0));
    let third = F::c(1.0 / 3.0);
    let boost_mask = alpha >= one;
    let alpha_orig = alpha;
    let alpha = if boost_mask { alpha } else { alpha + one };
    let d = alpha - third;
    let c = third / d.sqrt();
    let (mut key, subkey) = split2(key);
    let u_boost = F::uniform01(subkey);
    let (mut x2, mut v3, mut u) = (zero, one, F::c(2.0));
    // A NaN alpha would never be accepted: JAX loops forever; stop instead.
    let mut guard = 0u32;
    loop {
        let accept_fast = u < one - F::c(0.0331) * (x2 * x2);
        let accept_slow = u.ln() < x2 * F::c(0.5) + d * ((one - v3) + v3.ln());
        if accept_fast || accept_slow || guard > 10_000 {
            break;
        }
        guard += 1;
        let ks: Vec<[u32; 2]> = split_one(key, 3).collect();
        key = ks[0];
        let (mut xkey, ukey) = (ks[1], ks[2]);
        let (mut x, mut v) = (zero, F::c(-1.0));
        let mut inner = 0u32;
        while v <= zero && inner <= 10_000 {
            inner += 1;
            let (k, sub) = split2(xkey);
            xkey = k;
            x = normal::<F>(sub);
            v = one + x * c;
        }
        x2 = x * x;
        v3 = (v * v) * v;
        u = F::uniform01(ukey);
    }
    // The boost `U**(1/alpha)` is drawn as `log1p(-u) / alpha` (JAX 0.10:
    // the log of `1 - u`, never -inf).
    let log_boost = if boost_mask {
        zero
    } else {
        (zero - u_boost).ln_1p() * (one / alpha_orig)
    };
    if log_space {
        (d.ln() + v3.ln()) + log_boost
    } else {
        let boost = if boost_mask { one } else { log_boost.exp() };
        let z = (d * v3) * boost;
        if z == zero {
            F::tiny()
        } else {
            z
        }
    }
}

/// `random_gamma[log_space] keys a`: the keys' shape is a prefix of `a`'s;
/// each key splits into one key per element of the rest of `a`'s shape.
pub fn gamma(k: &HostArray, a: &HostArray, log_space: bool) -> Result<HostArray, IrError> {
    let v = keys("random_gamma", k)?;
    if !a.shape().starts_with(k.shape()) {
        return Err(err(
            "random_gamma",
            format!(
                "key shape {:?} is not a prefix of {:?}",
                k.shape(),
                a.shape()
            ),
        ));
    }
    let per: usize = a.shape()[k.ndim()..].iter().product();
    let all: Vec<[u32; 2]> = v.iter().flat_map(|&key| split_one(key, per)).collect();
    let data = match a.data() {
        Storage::F32(x) => Storage::F32(
            all.iter()
                .zip(x)
                .map(|(&key, &al)| gamma_one::<f32>(key, al, log_space))
                .collect(),
        ),
        Storage::F64(x) => Storage::F64(
            all.iter()
                .zip(x)
                .map(|(&key, &al)| gamma_one::<f64>(key, al, log_space))
                .collect(),
        ),
        other => {
            return Err(err(
                "random_gamma",
                format!("a must be f32 or f64, got {}", other.dtype()),
            ))
        }
    };
    HostArray::new(a.shape().to_vec(), data)
}
