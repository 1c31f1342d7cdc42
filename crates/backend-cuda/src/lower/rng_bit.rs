//! `rng_bit_generator`: XLA's `RngBitGenerator` as integer KIR, bit for bit
//! the interpreter's (`ir::interp::ops::rng_bit`, itself checked against
//! JAX 0.10.2), so the same key gives the same bits and new key.
//!
//! The state is two `u64` words `s` (a `u32[4]` key read little-endian in
//! pairs, or a `u64[2]` key); `s[0]` is the cipher key. One thread per bits
//! element computes its own hash (Philox blocks are recomputed by each of
//! their four elements rather than shared):
//! - Threefry-2x32, 8-32 bits: the shape splits in halves along its first
//!   even dimension (else the first largest); element `2i + w` along it
//!   reads word `w` of the hash of `s[1] + j(i)` (the interpreter's
//!   `threefry_u32`). 64 bits: element `i` is the hash of `s[1] + i`,
//!   `lo | hi << 32`.
//! - Philox-4x32-10 (also `RNG_DEFAULT`): block `j` encrypts the 128-bit
//!   counter `s[1] + 2^64 s[0] + j`; its four words are elements `4j..4j+4`
//!   (64 bits: pairs of words).
//!
//! The new key (one thread per key word) keeps `s[0]` and advances the
//! counter by the number of hashes, a static count.
//!
//! Invariant: the bits' dtype is `u8`, `u16`, `u32` or `u64` and the key
//! `u32[4]` or `u64[2]`; anything else is a type error at lowering.

use super::kernel::{i64c, load, loop_kernel, store};
use super::plan::Step;
use super::random::threefry;
use super::{atom_type, bind_outputs, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder};
use jaxon_ir::primitive::{RandomAlgorithm, RngBitGeneratorParams};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

const NAME: &str = "rng_bit_generator";

fn u64c(v: u64) -> Expr {
    Expr::int(DType::U64, v as i64)
}

/// The low and high `u32` words of a `u64` expression.
fn halves(x: Expr) -> [Expr; 2] {
    [x.clone().cast(DType::U32), (x >> u64c(32)).cast(DType::U32)]
}

/// The state words `[s0, s1]` read from the key buffer.
fn state(
    k: &mut KernelBuilder,
    args: &mut super::kernel::Args,
    ctx: &Ctx,
    key: Value,
    key_dt: DType,
) -> Result<[Expr; 2], IrError> {
    let word = |k: &mut KernelBuilder, args: &mut super::kernel::Args, i: i64| {
        load(k, args, ctx, key, i64c(i)).map(|x| x.cast(DType::U64))
    };
    let s = if key_dt == DType::U64 {
        [word(k, args, 0)?, word(k, args, 1)?]
    } else {
        let (a, b) = (word(k, args, 0)?, word(k, args, 1)?);
        let (c, d) = (word(k, args, 2)?, word(k, args, 3)?);
        [a | (b << u64c(32)), c | (d << u64c(32))]
    };
    let s0 = k.let_("s0", DType::U64, s[0].clone());
    let s1 = k.let_("s1", DType::U64, s[1].clone());
    Ok([Expr::var(s0), Expr::var(s1)])
}

/// Philox-4x32-10 of counter `ctr` under `key`: the four words.
fn philox(k: &mut KernelBuilder, key: [Expr; 2], ctr: [Expr; 4]) -> [Expr; 4] {
    const W32A: u32 = 0x9E37_79B9;
    const W32B: u32 = 0xBB67_AE85;
    const M4X32A: u64 = 0xD251_1F53;
    const M4X32B: u64 = 0xCD9E_8D57;
    let u = DType::U32;
    let k0 = k.let_("ph_k0", u, key[0].clone());
    let k1 = k.let_("ph_k1", u, key[1].clone());
    let x: Vec<_> = ctr.iter().map(|c| k.let_("ph_x", u, c.clone())).collect();
    let p0 = k.var("ph_p0", DType::U64);
    let p1 = k.var("ph_p1", DType::U64);
    let t0 = k.var("ph_t0", u);
    let t2 = k.var("ph_t2", u);
    for _ in 0..10 {
        k.assign(p0, Expr::var(x[0]).cast(DType::U64) * u64c(M4X32A));
        k.assign(p1, Expr::var(x[2]).cast(DType::U64) * u64c(M4X32B));
        k.assign(
            t0,
            (Expr::var(p1) >> u64c(32)).cast(u) ^ Expr::var(x[1]) ^ Expr::var(k0),
        );
        k.assign(
            t2,
            (Expr::var(p0) >> u64c(32)).cast(u) ^ Expr::var(x[3]) ^ Expr::var(k1),
        );
        k.assign(x[0], Expr::var(t0));
        k.assign(x[1], Expr::var(p1).cast(u));
        k.assign(x[2], Expr::var(t2));
        k.assign(x[3], Expr::var(p0).cast(u));
        k.assign(k0, Expr::var(k0) + Expr::u32(W32A));
        k.assign(k1, Expr::var(k1) + Expr::u32(W32B));
    }
    [
        Expr::var(x[0]),
        Expr::var(x[1]),
        Expr::var(x[2]),
        Expr::var(x[3]),
    ]
}

/// Block `j` (a `u64` expression) of the Philox stream of state `s`.
fn philox_block(k: &mut KernelBuilder, s: &[Expr; 2], j: Expr) -> [Expr; 4] {
    let l = k.let_("ph_l", DType::U64, s[1].clone() + j);
    let carry = Expr::select(Expr::var(l).lt(s[1].clone()), u64c(1), u64c(0));
    let h = k.let_("ph_h", DType::U64, s[0].clone() + carry);
    let [a, b] = halves(Expr::var(l));
    let [c, d] = halves(Expr::var(h));
    philox(k, halves(s[0].clone()), [a, b, c, d])
}

/// Picks `words[sel]` (`sel` a `u64` expression below `words.len()`).
fn pick(words: &[Expr], sel: Expr) -> Expr {
    let mut e = words[words.len() - 1].clone();
    for (i, w) in words.iter().enumerate().rev().skip(1) {
        e = Expr::select(sel.clone().eq(u64c(i as u64)), w.clone(), e);
    }
    e
}

/// The dimension XLA's `SplitShapeIntoHalves` splits (the interpreter's
/// `split_dim`): the first even one, else the first largest.
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

/// Lowers `rng_bit_generator`.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &RngBitGeneratorParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let [key_atom] = &eqn.inputs[..] else {
        return Err(IrError::ty(NAME, "takes one key"));
    };
    let (key_dt, key_shape) = atom_type(jaxpr, key_atom)?;
    match (key_dt, &key_shape[..]) {
        (DType::U32, [4]) | (DType::U64, [2]) => {}
        _ => return Err(IrError::ty(NAME, "the key must be u32[4] or u64[2]")),
    }
    let wide = match p.dtype {
        DType::U8 | DType::U16 | DType::U32 => false,
        DType::U64 => true,
        _ => return Err(IrError::ty(NAME, "the bits must be u8, u16, u32 or u64")),
    };
    let key = env.atom(key_atom)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let [(new_key, _, _), (bits, bits_dt, ref shape)] = outs[..] else {
        return Err(IrError::ty(NAME, "gives a key and the bits"));
    };
    if bits_dt != p.dtype || shape != &p.shape {
        return Err(IrError::ty(NAME, "the bits' type is not the params'"));
    }
    let n: usize = shape.iter().product();
    let threefry_alg = match p.algorithm {
        RandomAlgorithm::ThreeFry => true,
        RandomAlgorithm::Philox | RandomAlgorithm::Default => false,
    };
    // The number of hashes (the counter's advance).
    let hashes = match (threefry_alg, wide, split_dim(shape)) {
        (true, false, None) => 1,
        (true, false, Some(d)) => n / shape[d].max(1) * shape[d].div_ceil(2),
        (true, true, _) => n,
        (false, false, _) => n.div_ceil(4),
        (false, true, _) => (2 * n).div_ceil(4),
    } as u64;
    let sh = shape.clone();
    let step = loop_kernel(ctx, NAME, &sh, |k, args, ctx, lin, _| {
        let s = state(k, args, ctx, key, key_dt)?;
        let i = k.let_("i", DType::U64, lin.clone().cast(DType::U64));
        let i = Expr::var(i);
        let word: Expr = match (threefry_alg, wide) {
            (true, false) => {
                let (j, w) = match split_dim(&sh) {
                    None => (u64c(0), u64c(0)),
                    Some(d) => {
                        let size = sh[d] as u64;
                        let inner = sh[d + 1..].iter().product::<usize>() as u64;
                        let half = size.div_ceil(2);
                        let outer = i.clone() / u64c(size * inner);
                        let rest = i.clone() % u64c(size * inner);
                        let kk = k.let_("kk", DType::U64, rest.clone() / u64c(inner));
                        let r = rest % u64c(inner);
                        let j = (outer * u64c(half) + Expr::var(kk) / u64c(2)) * u64c(inner) + r;
                        (j, Expr::var(kk) % u64c(2))
                    }
                };
                let h = threefry(k, halves(s[0].clone()), halves(s[1].clone() + j));
                pick(&h, w)
            }
            (true, true) => {
                let h = threefry(k, halves(s[0].clone()), halves(s[1].clone() + i));
                h[0].clone().cast(DType::U64) | (h[1].clone().cast(DType::U64) << u64c(32))
            }
            (false, false) => {
                let b = philox_block(k, &s, i.clone() / u64c(4));
                pick(&b, i % u64c(4))
            }
            (false, true) => {
                let b = philox_block(k, &s, i.clone() / u64c(2));
                let lo = pick(&[b[0].clone(), b[2].clone()], i.clone() % u64c(2));
                let hi = pick(&[b[1].clone(), b[3].clone()], i % u64c(2));
                lo.cast(DType::U64) | (hi.cast(DType::U64) << u64c(32))
            }
        };
        store(k, args, ctx, bits, lin.clone(), word.cast(p.dtype))
    })?;
    steps.extend(step);
    let key_len = key_shape[0];
    let step = loop_kernel(ctx, "rng_key", &[key_len], |k, args, ctx, lin, _| {
        let s = state(k, args, ctx, key, key_dt)?;
        let c = k.let_("c", DType::U64, s[1].clone() + u64c(hashes));
        let words: Vec<Expr> = if key_dt == DType::U64 {
            vec![s[0].clone(), Expr::var(c)]
        } else {
            let [a, b] = halves(s[0].clone());
            let [c0, c1] = halves(Expr::var(c));
            vec![a, b, c0, c1]
        };
        let e = pick(&words, lin.clone().cast(DType::U64));
        store(k, args, ctx, new_key, lin.clone(), e.cast(key_dt))
    })?;
    steps.extend(step);
    Ok(())
}
