//! The tile routines themselves, at every width: `extern "C"` entry points
//! instantiating `math.rs` and the row reductions (`rows.rs`) with the
//! `ymm` lanes ([`Avx2F32`], [`Avx2F64`]: module `avx2`, compiled with
//! AVX2 and FMA) and with the `zmm` lanes ([`Avx512F32`], [`Avx512F64`]:
//! module `avx512`, compiled with AVX-512 F/DQ/BW/VL), from one macro
//! ([`width!`]) so both have the same functions in the same table order.
//!
//! Invariant: the routines touch exactly the `n` elements they are given
//! (a partial last vector goes through [`Tile::load_part`] and
//! [`Tile::store_part`]), so callers may pass the end of any buffer.

use super::super::lanes::Lanes;
use super::super::math;
use super::rows::{self, Max, Min, Sum};
use super::tile::Tile;
use super::ymm::{Avx2F32, Avx2F64};
use super::zmm::{Avx512F32, Avx512F64};
use super::{ADD, MUL};
use crate::isa::Isa;
use jaxon_ir::primitive::{ReduceOp, UnaryOp};
use jaxon_ir::DType;

/// A routine's function of its argument `x` (and, for binary ones, the
/// scalar operand `c`), as a type, so the mapping loop is generic in it.
trait Func {
    fn apply<L: Lanes>(l: &mut L, x: L::F, c: L::F) -> L::F;
}

/// A routine's function applied to `x` (and, for binary ones, the scalar
/// operand `c`).
macro_rules! call {
    (unary $f:path, $l:expr, $x:expr, $c:expr) => {{
        let _ = $c;
        $f($l, $x)
    }};
    (binary $f:path, $l:expr, $x:expr, $c:expr) => {
        $f($l, $x, $c)
    };
}

/// `x / c`.
#[inline(always)]
fn div_by<L: Lanes>(l: &mut L, x: L::F, c: L::F) -> L::F {
    l.div(x, c)
}

/// The argument of a lane: `x`, times `s` when `MUL`, plus `o` when
/// `ADD` (two roundings, as the inline code has them).
#[inline(always)]
fn arg<L: Lanes, const MUL: bool, const ADD: bool>(l: &mut L, x: L::F, s: L::F, o: L::F) -> L::F {
    let x = if MUL { l.mul(x, s) } else { x };
    if ADD {
        l.add(x, o)
    } else {
        x
    }
}

/// Maps `n` values of `src` to `dst` through `G`: four vectors at a time
/// (each function is one long dependency chain: interleaving hides its
/// latency), then one, then the partial last vector.
///
/// # Safety
/// `src` and `dst` are valid for `n` elements (they may be equal); the
/// CPU has `L`'s instructions (the caller is compiled with them).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn map<L: Tile, G: Func, const MUL: bool, const ADD: bool>(
    l: &mut L,
    src: *const L::E,
    dst: *mut L::E,
    n: usize,
    scale: L::E,
    offset: L::E,
    c: L::E,
) {
    let w = L::W;
    let (s, o, c) = (l.splat(scale), l.splat(offset), l.splat(c));
    let mut i = 0;
    // SAFETY (every block below): each access is below `n` in both
    // buffers.
    while i + 4 * w <= n {
        unsafe {
            let x0 = l.load(src.add(i));
            let x1 = l.load(src.add(i + w));
            let x2 = l.load(src.add(i + 2 * w));
            let x3 = l.load(src.add(i + 3 * w));
            let x0 = arg::<L, MUL, ADD>(l, x0, s, o);
            let x1 = arg::<L, MUL, ADD>(l, x1, s, o);
            let x2 = arg::<L, MUL, ADD>(l, x2, s, o);
            let x3 = arg::<L, MUL, ADD>(l, x3, s, o);
            let y0 = G::apply(l, x0, c);
            let y1 = G::apply(l, x1, c);
            let y2 = G::apply(l, x2, c);
            let y3 = G::apply(l, x3, c);
            l.store(dst.add(i), y0);
            l.store(dst.add(i + w), y1);
            l.store(dst.add(i + 2 * w), y2);
            l.store(dst.add(i + 3 * w), y3);
        }
        i += 4 * w;
    }
    while i + w <= n {
        unsafe {
            let x = l.load(src.add(i));
            let x = arg::<L, MUL, ADD>(l, x, s, o);
            let y = G::apply(l, x, c);
            l.store(dst.add(i), y);
        }
        i += w;
    }
    if i < n {
        unsafe {
            let x = l.load_part(src.add(i), n - i);
            let x = arg::<L, MUL, ADD>(l, x, s, o);
            let y = G::apply(l, x, c);
            l.store_part(dst.add(i), n - i, y);
        }
    }
}

/// Defines one tile routine per function, each in a module of its name
/// (`entry`), for element type `$t` on lanes `$lanes`, compiled with the
/// target features `$feat`.
macro_rules! tile_routines {
    ($feat:literal, $lanes:ident, $t:ty; $($name:ident => $kind:ident $f:path;)*) => {$(
        mod $name {
            use super::*;

            struct G;

            impl Func for G {
                #[inline(always)]
                fn apply<L: Lanes>(l: &mut L, x: L::F, c: L::F) -> L::F {
                    call!($kind $f, l, x, c)
                }
            }

            /// # Safety
            /// `src` and `dst` are valid for `n` elements (they may be
            /// equal); the CPU has the features `$feat`.
            pub(super) unsafe extern "C" fn entry(
                src: *const $t,
                dst: *mut $t,
                n: usize,
                scale: $t,
                offset: $t,
                mode: u32,
                c: $t,
            ) {
                #[target_feature(enable = $feat)]
                unsafe fn run<const MUL: bool, const ADD: bool>(
                    src: *const $t,
                    dst: *mut $t,
                    n: usize,
                    scale: $t,
                    offset: $t,
                    c: $t,
                ) {
                    // SAFETY: the caller's contract is `map`'s.
                    unsafe {
                        map::<$lanes, G, MUL, ADD>(&mut $lanes(()), src, dst, n, scale, offset, c)
                    }
                }
                // SAFETY: the caller's contract is `run`'s.
                unsafe {
                    match (mode & MUL != 0, mode & ADD != 0) {
                        (false, false) => run::<false, false>(src, dst, n, scale, offset, c),
                        (true, false) => run::<true, false>(src, dst, n, scale, offset, c),
                        (false, true) => run::<false, true>(src, dst, n, scale, offset, c),
                        (true, true) => run::<true, true>(src, dst, n, scale, offset, c),
                    }
                }
            }
        }
    )*};
}

/// Defines the row reductions (`rows.rs`) for element type `$t` on lanes
/// `$lanes`, compiled with `$feat`: per op a module of its name with
/// `one` (one row) and `block` ([`super::ROW_BLOCK`] rows).
macro_rules! row_reductions {
    ($feat:literal, $lanes:ident, $t:ty; $($name:ident: $op:ty;)*) => {$(
        mod $name {
            use super::*;

            /// # Safety
            /// `src` is valid for `n` elements and `acc` for a state; the
            /// CPU has the features `$feat`.
            pub(super) unsafe extern "C" fn one(src: *const $t, n: usize, acc: *mut $t) {
                #[target_feature(enable = $feat)]
                unsafe fn run(src: *const $t, n: usize, acc: *mut $t) {
                    // SAFETY: the caller's contract is `rows::one`'s.
                    unsafe { rows::one::<$lanes, $op>(&mut $lanes(()), src, n, acc) }
                }
                // SAFETY: the caller's contract is `run`'s.
                unsafe { run(src, n, acc) }
            }

            /// # Safety
            /// As `rows::block`; the CPU has the features `$feat`.
            pub(super) unsafe extern "C" fn block(
                src: *const $t,
                n: usize,
                acc: *mut $t,
                stride: isize,
            ) {
                #[target_feature(enable = $feat)]
                unsafe fn run(src: *const $t, n: usize, acc: *mut $t, stride: isize) {
                    // SAFETY: the caller's contract is `rows::block`'s.
                    unsafe { rows::block::<$lanes, $op>(&mut $lanes(()), src, n, acc, stride) }
                }
                // SAFETY: the caller's contract is `run`'s.
                unsafe { run(src, n, acc, stride) }
            }
        }
    )*};
}

type Tile32 = unsafe extern "C" fn(*const f32, *mut f32, usize, f32, f32, u32, f32);
type Tile64 = unsafe extern "C" fn(*const f64, *mut f64, usize, f64, f64, u32, f64);
type Row32 = unsafe extern "C" fn(*const f32, usize, *mut f32);
type Row64 = unsafe extern "C" fn(*const f64, usize, *mut f64);
type Rows32 = unsafe extern "C" fn(*const f32, usize, *mut f32, isize);
type Rows64 = unsafe extern "C" fn(*const f64, usize, *mut f64, isize);

/// Every routine of one width, in module `$m`: the unary functions in
/// [`unary_slot`]'s order, the division and the row reductions in
/// [`reduce_slot`]'s order.
macro_rules! width {
    ($m:ident, $feat:literal, $l32:ident, $l64:ident) => {
        mod $m {
            use super::*;

            tile_routines! {
                $feat, $l32, f32;
                exp_f32 => unary math::exp;
                expm1_f32 => unary math::expm1;
                log_f32 => unary math::log;
                log1p_f32 => unary math::log1p;
                tanh_f32 => unary math::tanh;
                logistic_f32 => unary math::logistic;
                sin_f32 => unary math::sin;
                cos_f32 => unary math::cos;
                tan_f32 => unary math::tan;
                exp2_f32 => unary math::exp2;
                sinh_f32 => unary math::sinh;
                cosh_f32 => unary math::cosh;
                div_f32 => binary div_by;
            }

            tile_routines! {
                $feat, $l64, f64;
                exp_f64 => unary math::exp;
                expm1_f64 => unary math::expm1;
                log_f64 => unary math::log;
                log1p_f64 => unary math::log1p;
                tanh_f64 => unary math::tanh;
                logistic_f64 => unary math::logistic;
                sin_f64 => unary math::sin;
                cos_f64 => unary math::cos;
                tan_f64 => unary math::tan;
                exp2_f64 => unary math::exp2;
                sinh_f64 => unary math::sinh;
                cosh_f64 => unary math::cosh;
                div_f64 => binary div_by;
            }

            row_reductions! {
                $feat, $l32, f32;
                sum_f32: Sum;
                max_f32: Max;
                min_f32: Min;
            }

            row_reductions! {
                $feat, $l64, f64;
                sum_f64: Sum;
                max_f64: Max;
                min_f64: Min;
            }

            pub(super) const UNARY: [(Tile32, Tile64); 12] = [
                (exp_f32::entry, exp_f64::entry),
                (expm1_f32::entry, expm1_f64::entry),
                (log_f32::entry, log_f64::entry),
                (log1p_f32::entry, log1p_f64::entry),
                (tanh_f32::entry, tanh_f64::entry),
                (logistic_f32::entry, logistic_f64::entry),
                (sin_f32::entry, sin_f64::entry),
                (cos_f32::entry, cos_f64::entry),
                (tan_f32::entry, tan_f64::entry),
                (exp2_f32::entry, exp2_f64::entry),
                (sinh_f32::entry, sinh_f64::entry),
                (cosh_f32::entry, cosh_f64::entry),
            ];

            pub(super) const DIVIDE: (Tile32, Tile64) = (div_f32::entry, div_f64::entry);

            pub(super) const REDUCE: [((Row32, Rows32), (Row64, Rows64)); 3] = [
                (
                    (sum_f32::one, sum_f32::block),
                    (sum_f64::one, sum_f64::block),
                ),
                (
                    (max_f32::one, max_f32::block),
                    (max_f64::one, max_f64::block),
                ),
                (
                    (min_f32::one, min_f32::block),
                    (min_f64::one, min_f64::block),
                ),
            ];
        }
    };
}

width!(avx2, "avx2,fma", Avx2F32, Avx2F64);
width!(
    avx512,
    "avx512f,avx512dq,avx512bw,avx512vl,avx2,fma",
    Avx512F32,
    Avx512F64
);

/// The index of `op`'s routine in a width's `UNARY` table.
fn unary_slot(op: UnaryOp) -> Option<usize> {
    Some(match op {
        UnaryOp::Exp => 0,
        UnaryOp::Expm1 => 1,
        UnaryOp::Log => 2,
        UnaryOp::Log1p => 3,
        UnaryOp::Tanh => 4,
        UnaryOp::Logistic => 5,
        UnaryOp::Sin => 6,
        UnaryOp::Cos => 7,
        UnaryOp::Tan => 8,
        UnaryOp::Exp2 => 9,
        UnaryOp::Sinh => 10,
        UnaryOp::Cosh => 11,
        // Cheap enough inline, or not yet written over `Lanes`.
        UnaryOp::Neg
        | UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::IsFinite
        | UnaryOp::Asin
        | UnaryOp::Acos
        | UnaryOp::Atan
        | UnaryOp::Asinh
        | UnaryOp::Acosh
        | UnaryOp::Atanh
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt
        | UnaryOp::Cbrt
        | UnaryOp::Abs
        | UnaryOp::Not
        | UnaryOp::Erf
        | UnaryOp::Erfc
        | UnaryOp::ErfInv
        | UnaryOp::Lgamma
        | UnaryOp::Digamma
        | UnaryOp::BesselI0e
        | UnaryOp::BesselI1e
        | UnaryOp::Square
        | UnaryOp::Copy
        | UnaryOp::StopGradient
        | UnaryOp::PopulationCount
        | UnaryOp::Clz => return None,
    })
}

/// The index of `op`'s routines in a width's `REDUCE` table.
fn reduce_slot(op: ReduceOp) -> Option<usize> {
    match op {
        ReduceOp::Sum => Some(0),
        ReduceOp::Max => Some(1),
        ReduceOp::Min => Some(2),
        ReduceOp::Prod | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => None,
    }
}

/// The routine of `op` on `dt` at `level` (the caller checked the CPU).
pub(super) fn routine(level: Isa, op: UnaryOp, dt: DType) -> Option<usize> {
    let k = unary_slot(op)?;
    let (f, d) = match level {
        Isa::Scalar => return None,
        Isa::Avx2 => avx2::UNARY[k],
        Isa::Avx512 => avx512::UNARY[k],
    };
    pick(dt, f as usize, d as usize)
}

/// The routine dividing by a scalar operand on `dt` at `level`.
pub(super) fn divide(level: Isa, dt: DType) -> Option<usize> {
    let (f, d) = match level {
        Isa::Scalar => return None,
        Isa::Avx2 => avx2::DIVIDE,
        Isa::Avx512 => avx512::DIVIDE,
    };
    pick(dt, f as usize, d as usize)
}

/// The one-row and the block-of-rows reduction of `op` on `dt` at
/// `level`.
pub(super) fn reduction(level: Isa, op: ReduceOp, dt: DType) -> Option<(usize, usize)> {
    let k = reduce_slot(op)?;
    let (f, d) = match level {
        Isa::Scalar => return None,
        Isa::Avx2 => avx2::REDUCE[k],
        Isa::Avx512 => avx512::REDUCE[k],
    };
    match dt {
        DType::F32 => Some((f.0 as usize, f.1 as usize)),
        DType::F64 => Some((d.0 as usize, d.1 as usize)),
        _ => None,
    }
}

fn pick(dt: DType, f32_routine: usize, f64_routine: usize) -> Option<usize> {
    match dt {
        DType::F32 => Some(f32_routine),
        DType::F64 => Some(f64_routine),
        _ => None,
    }
}
