//! The random family: `random_seed`, `random_wrap`, `random_unwrap`,
//! `random_bits`, `random_split`, `random_fold_in`, `threefry2x32` and
//! `random_gamma` (`rng_bit_generator` is in `rng_bit.rs`), with
//! the threefry2x32 hash (20 rounds, Random123's rotations) as integer KIR
//! — bit-exact against the interpreter (`ir::interp::ops::random`).
//!
//! Keys: a `key<fry>` array of shape `S` is a `u32` buffer of `S x 2`
//! elements (the two words of each key, in order), which is also the byte
//! layout of the host's key arrays, so `random_wrap`/`random_unwrap` are
//! copies. `Ctx::alloc` declares key buffers so; `unsupported::keys`
//! refuses key values anywhere but in this family (a data-movement
//! primitive on keys would move one word per key).
//!
//! Each kernel is one thread per result element (for `random_bits` and
//! `random_split`: per key and counter), with no shared state.
//!
//! `random_gamma` is Marsaglia and Tsang's rejection sampler per element,
//! with the interpreter's key splits, loop guards and float formats (f32
//! samples compute in f32; the normal draws use `erf_inv`, which the
//! simulator and CUDA evaluate within ulps of the interpreter's, so a
//! sample agrees to within rounding unless a draw lands on the acceptance
//! boundary).

use super::kernel::{i64c, load, loop_kernel, store, strides};
use super::plan::Step;
use super::{atom_type, bind_outputs, Ctx, Env};
use crate::kir::{Expr, KernelBuilder};
use jaxon_ir::primitive::Random;
use jaxon_ir::{Atom, DType, Eqn, IrError, Jaxpr};

const PARITY: u32 = 0x1BD1_1BDA;
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// Lowers one equation of the random family.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Random,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = p.name();
    match p {
        Random::Seed(_) => seed(ctx, jaxpr, eqn, env, steps),
        Random::Wrap(_) | Random::Unwrap(_) => {
            let [a] = eqn.inputs.as_slice() else {
                return Err(arity(name));
            };
            let src = env.atom(a)?;
            let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
            let (out, _, _) = outs.first().cloned().ok_or_else(|| arity(name))?;
            let sl = match src {
                super::Value::Buf(b) => ctx.decl(b)?.len,
                super::Value::Lit(_) => return Err(IrError::ty(name, "a literal operand")),
            };
            let ol = ctx.decl(out)?.len;
            if sl != ol {
                return Err(IrError::ty(
                    name,
                    "the key data and the keys differ in size",
                ));
            }
            super::kernel::copy_into(ctx, steps, src, out, ol)
        }
        Random::Bits(bp) => counters(
            ctx,
            jaxpr,
            eqn,
            env,
            steps,
            name,
            &bp.shape,
            Some(bp.bit_width),
        ),
        Random::Split(sp) => counters(ctx, jaxpr, eqn, env, steps, name, &sp.shape, None),
        Random::FoldIn(_) => broadcast_hash(ctx, jaxpr, eqn, env, steps, name, true),
        Random::Threefry2x32(_) => broadcast_hash(ctx, jaxpr, eqn, env, steps, name, false),
        Random::Gamma(gp) => gamma(ctx, jaxpr, eqn, env, steps, gp.log_space),
        Random::RngBitGenerator(rp) => super::rng_bit::lower(ctx, jaxpr, eqn, rp, env, steps),
    }
}

fn arity(name: &str) -> IrError {
    IrError::Invalid(format!("{name}: wrong number of operands or results"))
}

fn u32c(v: u32) -> Expr {
    Expr::u32(v)
}

/// `threefry2x32(key, x)` on `u32` expressions: the two output words.
pub(crate) fn threefry(k: &mut KernelBuilder, key: [Expr; 2], x: [Expr; 2]) -> [Expr; 2] {
    let u = DType::U32;
    let k0 = k.let_("tf_k0", u, key[0].clone());
    let k1 = k.let_("tf_k1", u, key[1].clone());
    let k2 = k.let_("tf_k2", u, Expr::var(k0) ^ Expr::var(k1) ^ u32c(PARITY));
    let ks = [k0, k1, k2];
    let a = k.let_("tf_a", u, x[0].clone() + Expr::var(k0));
    let b = k.let_("tf_b", u, x[1].clone() + Expr::var(k1));
    for group in 0..5usize {
        for &r in &ROTATIONS[group % 2] {
            k.assign(a, Expr::var(a) + Expr::var(b));
            let rot = (Expr::var(b) << u32c(r)) | (Expr::var(b) >> u32c(32 - r));
            k.assign(b, rot);
            k.assign(b, Expr::var(b) ^ Expr::var(a));
        }
        k.assign(a, Expr::var(a) + Expr::var(ks[(group + 1) % 3]));
        k.assign(
            b,
            Expr::var(b) + Expr::var(ks[(group + 2) % 3]) + u32c(group as u32 + 1),
        );
    }
    [Expr::var(a), Expr::var(b)]
}

/// `random_seed`: key `[hi, lo]` of each integer seed (`hi` is the upper
/// word of 64-bit seeds, else 0).
fn seed(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let name = "random_seed";
    let [a] = eqn.inputs.as_slice() else {
        return Err(arity(name));
    };
    let (d, shape) = atom_type(jaxpr, a)?;
    if !(d.is_int() || d.is_bool()) {
        return Err(IrError::ty(
            name,
            format!("seeds must be integers, got {d}"),
        ));
    }
    let x = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, _) = outs.first().cloned().ok_or_else(|| arity(name))?;
    let step = loop_kernel(ctx, name, &shape, |k, args, ctx, lin, _| {
        let s = load(k, args, ctx, x, lin.clone())?;
        let (hi, lo) = if d.bits() == 64 {
            let s = if d == DType::U64 {
                s
            } else {
                s.bitcast(DType::U64)
            };
            let w = k.let_("seed", DType::U64, s);
            (
                (Expr::var(w) >> Expr::int(DType::U64, 32)).cast(DType::U32),
                Expr::var(w).cast(DType::U32),
            )
        } else if d.is_bool() {
            (u32c(0), s.cast(DType::U32))
        } else {
            // Sign-extended through 64 bits, then the low word.
            (u32c(0), s.cast(DType::I64).cast(DType::U32))
        };
        let at = k.let_("at", DType::I64, lin.clone() * i64c(2));
        store(k, args, ctx, out, Expr::var(at), hi)?;
        store(k, args, ctx, out, Expr::var(at) + i64c(1), lo)
    })?;
    steps.extend(step);
    Ok(())
}

/// `random_bits` (`bit_width` given) and `random_split`: for every key and
/// counter `i < prod(shape)`, `threefry(key, [0, i])`, as bits of the width
/// (`w0 ^ w1` truncated, or `w0 << 32 | w1` for 64) or as a new key.
#[allow(clippy::too_many_arguments)]
fn counters(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
    name: &str,
    shape: &[usize],
    bit_width: Option<u32>,
) -> Result<(), IrError> {
    let [a] = eqn.inputs.as_slice() else {
        return Err(arity(name));
    };
    let (kd, kshape) = atom_type(jaxpr, a)?;
    if kd != DType::KeyFry {
        return Err(IrError::ty(
            name,
            format!("expected a key<fry> array, got {kd}"),
        ));
    }
    let n: usize = shape.iter().product();
    if n as u128 > u128::from(u32::MAX) {
        return Err(IrError::ty(name, "more than 2**32 values per key"));
    }
    let out_dt = match bit_width {
        None => DType::U32,
        Some(8) => DType::U8,
        Some(16) => DType::U16,
        Some(32) => DType::U32,
        Some(64) => DType::U64,
        Some(w) => {
            return Err(IrError::ty(
                name,
                format!("bit_width must be 8, 16, 32 or 64, got {w}"),
            ))
        }
    };
    let key = env.atom(a)?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, od, oshape) = outs.first().cloned().ok_or_else(|| arity(name))?;
    let mut want = kshape.clone();
    want.extend_from_slice(shape);
    let want_dt = if bit_width.is_some() {
        out_dt
    } else {
        DType::KeyFry
    };
    if oshape != want || od != want_dt {
        return Err(IrError::ty(
            name,
            format!("result {od}{oshape:?}, expected {want_dt}{want:?}"),
        ));
    }
    let step = loop_kernel(ctx, name, &want, |k, args, ctx, lin, _| {
        let ki = k.let_("ki", DType::I64, lin.clone() / i64c(n.max(1) as i64));
        let ctr = (lin.clone() % i64c(n.max(1) as i64)).cast(DType::U32);
        let k0 = load(k, args, ctx, key, Expr::var(ki) * i64c(2))?;
        let k1 = load(k, args, ctx, key, Expr::var(ki) * i64c(2) + i64c(1))?;
        let [w0, w1] = threefry(k, [k0, k1], [u32c(0), ctr]);
        match bit_width {
            None => {
                let at = k.let_("at", DType::I64, lin.clone() * i64c(2));
                store(k, args, ctx, out, Expr::var(at), w0)?;
                store(k, args, ctx, out, Expr::var(at) + i64c(1), w1)
            }
            Some(64) => {
                let hi = w0.cast(DType::U64) << Expr::int(DType::U64, 32);
                store(k, args, ctx, out, lin.clone(), hi | w1.cast(DType::U64))
            }
            Some(32) => store(k, args, ctx, out, lin.clone(), w0 ^ w1),
            Some(_) => store(k, args, ctx, out, lin.clone(), (w0 ^ w1).cast(out_dt)),
        }
    })?;
    steps.extend(step);
    Ok(())
}

/// The flat index into an operand of `shape` (rank 0, or the result's rank
/// with size-1 dimensions broadcasting) of result multi-index `idx`.
fn bcast_index(shape: &[usize], idx: &[Expr]) -> Expr {
    if shape.is_empty() {
        return i64c(0);
    }
    let st = strides(shape);
    let mut e = i64c(0);
    for (d, i) in idx.iter().enumerate() {
        if shape[d] != 1 {
            e = e + i.clone() * i64c(st[d]);
        }
    }
    e
}

/// The broadcast result shape of operands of `shapes` (each rank 0 or the
/// common rank, sizes equal or 1), as the interpreter's.
fn bcast_shape(name: &str, shapes: &[&[usize]]) -> Result<Vec<usize>, IrError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1; rank];
    for s in shapes.iter().filter(|s| !s.is_empty()) {
        if s.len() != rank {
            return Err(IrError::ty(name, format!("incompatible shapes {shapes:?}")));
        }
        for (o, &d) in out.iter_mut().zip(s.iter()) {
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(IrError::ty(name, format!("incompatible shapes {shapes:?}")));
            }
        }
    }
    Ok(out)
}

/// `random_fold_in(keys, msgs)` (`fold_in`: a key per result,
/// `threefry(key, [0, msg])`) and `threefry2x32(k0, k1, x0, x1)` (two `u32`
/// results), over broadcast operands.
#[allow(clippy::too_many_arguments)]
fn broadcast_hash(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
    name: &str,
    fold_in: bool,
) -> Result<(), IrError> {
    let n_in = if fold_in { 2 } else { 4 };
    if eqn.inputs.len() != n_in {
        return Err(arity(name));
    }
    let mut shapes = Vec::new();
    for (j, a) in eqn.inputs.iter().enumerate() {
        let (d, s) = atom_type(jaxpr, a)?;
        let want = if fold_in && j == 0 {
            DType::KeyFry
        } else {
            DType::U32
        };
        if d != want {
            return Err(IrError::ty(
                name,
                format!("operand {j} is {d}, expected {want}"),
            ));
        }
        shapes.push(s);
    }
    let refs: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
    let out_shape = bcast_shape(name, &refs)?;
    let vals = eqn
        .inputs
        .iter()
        .map(|a: &Atom| env.atom(a))
        .collect::<Result<Vec<_>, _>>()?;
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    if outs.len() != if fold_in { 1 } else { 2 } {
        return Err(arity(name));
    }
    for (_, _, s) in &outs {
        if *s != out_shape {
            return Err(IrError::ty(
                name,
                format!("result shape {s:?}, the operands broadcast to {out_shape:?}"),
            ));
        }
    }
    let step = loop_kernel(ctx, name, &out_shape, |k, args, ctx, lin, idx| {
        let at = |j: usize| bcast_index(&shapes[j], idx);
        let (key, x) = if fold_in {
            let ki = k.let_("ki", DType::I64, at(0) * i64c(2));
            let k0 = load(k, args, ctx, vals[0], Expr::var(ki))?;
            let k1 = load(k, args, ctx, vals[0], Expr::var(ki) + i64c(1))?;
            let m = load(k, args, ctx, vals[1], at(1))?;
            ([k0, k1], [u32c(0), m])
        } else {
            let mut w = Vec::new();
            for (j, v) in vals.iter().enumerate() {
                w.push(load(k, args, ctx, *v, at(j))?);
            }
            ([w[0].clone(), w[1].clone()], [w[2].clone(), w[3].clone()])
        };
        let [y0, y1] = threefry(k, key, x);
        if fold_in {
            let o = k.let_("at", DType::I64, lin.clone() * i64c(2));
            store(k, args, ctx, outs[0].0, Expr::var(o), y0)?;
            store(k, args, ctx, outs[0].0, Expr::var(o) + i64c(1), y1)
        } else {
            store(k, args, ctx, outs[0].0, lin.clone(), y0)?;
            store(k, args, ctx, outs[1].0, lin.clone(), y1)
        }
    })?;
    steps.extend(step);
    Ok(())
}

/// `uniform01(key)` in `f` (f32 or f64): the top mantissa bits of the
/// key's first hash as a float in `[0, 1)`.
fn uniform01(k: &mut KernelBuilder, f: DType, key: [Expr; 2]) -> Expr {
    let [w0, w1] = threefry(k, key, [u32c(0), u32c(0)]);
    if f == DType::F64 {
        let b = (w0.cast(DType::U64) << Expr::int(DType::U64, 32)) | w1.cast(DType::U64);
        let bits = (b >> Expr::int(DType::U64, 12)) | Expr::int(DType::U64, 0x3FF0_0000_0000_0000);
        bits.bitcast(f) - Expr::constant(f, 1.0)
    } else {
        let bits = ((w0 ^ w1) >> u32c(9)) | u32c(0x3F80_0000);
        bits.bitcast(f) - Expr::constant(f, 1.0)
    }
}

/// A constant of `f` as the interpreter rounds it (`F::c`).
fn fc(f: DType, v: f64) -> Expr {
    Expr::constant(f, v)
}

/// A standard normal draw from `key`: `sqrt(2) erf_inv(u)` for `u`
/// uniform in `(-1, 1)`.
fn normal(k: &mut KernelBuilder, f: DType, key: [Expr; 2]) -> Expr {
    let (lo, span) = if f == DType::F64 {
        let lo = f64::from_bits(0xBFF0_0000_0000_0000 - 1);
        (lo, 1.0 - lo)
    } else {
        let lo = f32::from_bits(0xBF80_0000 - 1);
        (f64::from(lo), f64::from(1.0f32 - lo))
    };
    let u0 = uniform01(k, f, key);
    let u = k.let_("nu", f, u0 * fc(f, span) + fc(f, lo));
    let u = k.let_(
        "nu",
        f,
        Expr::select(fc(f, lo).gt(Expr::var(u)), fc(f, lo), Expr::var(u)),
    );
    let e = if f == DType::F64 {
        Expr::var(u).math(crate::kir::MathFn::ErfInv)
    } else {
        Expr::var(u)
            .cast(DType::F64)
            .math(crate::kir::MathFn::ErfInv)
            .cast(f)
    };
    fc(f, std::f64::consts::SQRT_2) * e
}

/// Two new u32 key variables holding `key`.
fn key_vars(k: &mut KernelBuilder, key: [Expr; 2]) -> [crate::kir::Var; 2] {
    let [a, b] = key;
    [k.let_("key0", DType::U32, a), k.let_("key1", DType::U32, b)]
}

fn kv(key: [crate::kir::Var; 2]) -> [Expr; 2] {
    [Expr::var(key[0]), Expr::var(key[1])]
}

/// `random_gamma(keys, a)`: a `Gamma(a, 1)` sample (or its log) per
/// element of `a`, keyed by the split of its key for its position.
fn gamma(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
    log_space: bool,
) -> Result<(), IrError> {
    let name = "random_gamma";
    let [ka, aa] = eqn.inputs.as_slice() else {
        return Err(arity(name));
    };
    let (kd, kshape) = atom_type(jaxpr, ka)?;
    let (f, ashape) = atom_type(jaxpr, aa)?;
    if kd != DType::KeyFry {
        return Err(IrError::ty(
            name,
            format!("expected a key<fry> array, got {kd}"),
        ));
    }
    if f != DType::F32 && f != DType::F64 {
        return Err(IrError::ty(name, format!("a must be f32 or f64, got {f}")));
    }
    if !ashape.starts_with(&kshape) {
        return Err(IrError::ty(
            name,
            format!("key shape {kshape:?} is not a prefix of {ashape:?}"),
        ));
    }
    let per: usize = ashape[kshape.len()..].iter().product();
    let (keys, alpha) = (env.atom(ka)?, env.atom(aa)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, _) = outs.first().cloned().ok_or_else(|| arity(name))?;
    let step = loop_kernel(ctx, name, &ashape, |k, args, ctx, lin, _| {
        let ki = k.let_("ki", DType::I64, lin.clone() / i64c(per.max(1) as i64));
        let ctr = (lin.clone() % i64c(per.max(1) as i64)).cast(DType::U32);
        let k0 = load(k, args, ctx, keys, Expr::var(ki) * i64c(2))?;
        let k1 = load(k, args, ctx, keys, Expr::var(ki) * i64c(2) + i64c(1))?;
        let ek = threefry(k, [k0, k1], [u32c(0), ctr]);
        let ekey = key_vars(k, ek);
        let a0 = load(k, args, ctx, alpha, lin.clone())?;
        let alpha_orig = k.let_("alpha0", f, a0);
        let (zero, one) = (fc(f, 0.0), fc(f, 1.0));
        let third = fc(f, 1.0 / 3.0);
        let boost = k.let_("boost", DType::Bool, Expr::var(alpha_orig).ge(one.clone()));
        let alpha = k.let_(
            "alpha",
            f,
            Expr::select(
                Expr::var(boost),
                Expr::var(alpha_orig),
                Expr::var(alpha_orig) + one.clone(),
            ),
        );
        let d = k.let_("d", f, Expr::var(alpha) - third.clone());
        let c = k.let_("c", f, third / Expr::var(d).math(crate::kir::MathFn::Sqrt));
        let nk = threefry(k, kv(ekey), [u32c(0), u32c(0)]);
        let key = key_vars(k, nk);
        let sk = threefry(k, kv(ekey), [u32c(0), u32c(1)]);
        let subkey = key_vars(k, sk);
        let ub = uniform01(k, f, kv(subkey));
        let u_boost = k.let_("u_boost", f, ub);
        let x2 = k.let_("x2", f, zero.clone());
        let v3 = k.let_("v3", f, one.clone());
        let u = k.let_("u", f, fc(f, 2.0));
        let guard = k.let_("guard", DType::U32, u32c(0));
        let done = k.let_("done", DType::Bool, Expr::bool(false));
        let ln = |x: Expr| x.math(crate::kir::MathFn::Log);
        k.while_(Expr::var(done).unary(crate::kir::UnOp::Not), |k| {
            let accept_fast =
                Expr::var(u).lt(one.clone() - fc(f, 0.0331) * (Expr::var(x2) * Expr::var(x2)));
            let accept_slow = ln(Expr::var(u)).lt(Expr::var(x2) * fc(f, 0.5)
                + Expr::var(d) * ((one.clone() - Expr::var(v3)) + ln(Expr::var(v3))));
            let stop = accept_fast
                .or(accept_slow)
                .or(Expr::var(guard).gt(u32c(10_000)));
            k.if_else(
                stop,
                |k| k.assign(done, Expr::bool(true)),
                |k| {
                    k.assign(guard, Expr::var(guard) + u32c(1));
                    let ks0 = threefry(k, kv(key), [u32c(0), u32c(0)]);
                    let ks0 = key_vars(k, ks0);
                    let ks1 = threefry(k, kv(key), [u32c(0), u32c(1)]);
                    let xkey = key_vars(k, ks1);
                    let ks2 = threefry(k, kv(key), [u32c(0), u32c(2)]);
                    let ukey = key_vars(k, ks2);
                    k.assign(key[0], Expr::var(ks0[0]));
                    k.assign(key[1], Expr::var(ks0[1]));
                    let x = k.let_("x", f, zero.clone());
                    let v = k.let_("v", f, fc(f, -1.0));
                    let inner = k.let_("inner", DType::U32, u32c(0));
                    let more = Expr::var(v)
                        .le(zero.clone())
                        .and(Expr::var(inner).le(u32c(10_000)));
                    k.while_(more, |k| {
                        k.assign(inner, Expr::var(inner) + u32c(1));
                        let nk = threefry(k, kv(xkey), [u32c(0), u32c(0)]);
                        let nk = key_vars(k, nk);
                        let sub = threefry(k, kv(xkey), [u32c(0), u32c(1)]);
                        let sub = key_vars(k, sub);
                        k.assign(xkey[0], Expr::var(nk[0]));
                        k.assign(xkey[1], Expr::var(nk[1]));
                        let z = normal(k, f, kv(sub));
                        k.assign(x, z);
                        k.assign(v, one.clone() + Expr::var(x) * Expr::var(c));
                    });
                    k.assign(x2, Expr::var(x) * Expr::var(x));
                    k.assign(v3, (Expr::var(v) * Expr::var(v)) * Expr::var(v));
                    let un = uniform01(k, f, kv(ukey));
                    k.assign(u, un);
                },
            );
        });
        let log_boost = k.let_(
            "log_boost",
            f,
            Expr::select(
                Expr::var(boost),
                zero.clone(),
                (zero.clone() - Expr::var(u_boost)).math(crate::kir::MathFn::Log1p)
                    * (one.clone() / Expr::var(alpha_orig)),
            ),
        );
        let r = if log_space {
            (ln(Expr::var(d)) + ln(Expr::var(v3))) + Expr::var(log_boost)
        } else {
            let b = Expr::select(
                Expr::var(boost),
                one.clone(),
                Expr::var(log_boost).math(crate::kir::MathFn::Exp),
            );
            let z = k.let_("z", f, (Expr::var(d) * Expr::var(v3)) * b);
            let tiny = if f == DType::F64 {
                f64::MIN_POSITIVE
            } else {
                f64::from(f32::MIN_POSITIVE)
            };
            Expr::select(Expr::var(z).eq(zero), fc(f, tiny), Expr::var(z))
        };
        store(k, args, ctx, out, lin.clone(), r)
    })?;
    steps.extend(step);
    Ok(())
}
