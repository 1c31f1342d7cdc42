//! The tile routines themselves: `extern "C"` entry points instantiating
//! `math.rs` with [`Avx2F32`] and [`Avx2F64`], division by a scalar, and
//! the row reductions, each compiled with AVX2 and FMA enabled.
//!
//! Invariant: the routines touch exactly the `n` elements they are given
//! (a partial last vector goes through a padded stack copy), so callers
//! may pass the end of any buffer.

use super::super::lanes::Lanes;
use super::super::math;
use super::ymm::{Avx2F32, Avx2F64};
use super::{ADD, MUL, ROW_BLOCK, STATE_BYTES};
use jaxon_ir::primitive::{ReduceOp, UnaryOp};
use jaxon_ir::DType;
use std::arch::x86_64::*;

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

/// Defines one tile routine per function, for element type `$t` in `$w`
/// lanes of type `$v` handled by `$lanes`. The argument of lane `k` is
/// `src[k]`, times `scale` when `mode & MUL`, plus `offset` when `mode &
/// ADD` (two roundings, as the inline code has them); four vectors at a
/// time (each function is one long dependency chain: interleaving hides
/// its latency), then one, then the padded tail.
macro_rules! tile_routines {
    (
        $t:ty, $w:literal, $lanes:ident, $load:ident, $store:ident, $set1:ident,
        $mul:ident, $add:ident;
        $($name:ident => $kind:ident $f:path;)*
    ) => {$(
        /// # Safety
        /// `src` and `dst` are valid for `n` elements (they may be equal);
        /// the CPU supports AVX2 and FMA.
        unsafe extern "C" fn $name(
            src: *const $t,
            dst: *mut $t,
            n: usize,
            scale: $t,
            offset: $t,
            mode: u32,
            c: $t,
        ) {
            #[target_feature(enable = "avx2,fma")]
            unsafe fn run<const MUL: bool, const ADD: bool>(
                src: *const $t,
                dst: *mut $t,
                n: usize,
                scale: $t,
                offset: $t,
                c: $t,
            ) {
                let mut l = $lanes(());
                let (s, o, c) = ($set1(scale), $set1(offset), $set1(c));
                let arg = |x| {
                    let x = if MUL { $mul(x, s) } else { x };
                    if ADD { $add(x, o) } else { x }
                };
                let mut i = 0;
                while i + 4 * $w <= n {
                    // SAFETY: i + 4w <= n, inside both buffers.
                    unsafe {
                        let x0 = arg($load(src.add(i)));
                        let x1 = arg($load(src.add(i + $w)));
                        let x2 = arg($load(src.add(i + 2 * $w)));
                        let x3 = arg($load(src.add(i + 3 * $w)));
                        let y0 = call!($kind $f, &mut l, x0, c);
                        let y1 = call!($kind $f, &mut l, x1, c);
                        let y2 = call!($kind $f, &mut l, x2, c);
                        let y3 = call!($kind $f, &mut l, x3, c);
                        $store(dst.add(i), y0);
                        $store(dst.add(i + $w), y1);
                        $store(dst.add(i + 2 * $w), y2);
                        $store(dst.add(i + 3 * $w), y3);
                    }
                    i += 4 * $w;
                }
                while i + $w <= n {
                    // SAFETY: i + w <= n, inside both buffers.
                    unsafe {
                        let y = call!($kind $f, &mut l, arg($load(src.add(i))), c);
                        $store(dst.add(i), y);
                    }
                    i += $w;
                }
                if i < n {
                    let mut buf = [0.0 as $t; $w];
                    // SAFETY: the n - i < w remaining elements are inside
                    // both buffers; `buf` holds w.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src.add(i), buf.as_mut_ptr(), n - i);
                        let y = call!($kind $f, &mut l, arg($load(buf.as_ptr())), c);
                        $store(buf.as_mut_ptr(), y);
                        std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.add(i), n - i);
                    }
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
    )*};
}

tile_routines! {
    f32, 8, Avx2F32, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
    _mm256_mul_ps, _mm256_add_ps;
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
    f64, 4, Avx2F64, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
    _mm256_mul_pd, _mm256_add_pd;
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

/// Defines the row reductions for element type `$t` over an accumulator
/// state `acc` of `4 * $nw + 1` elements: the inline code's four
/// `$nw`-lane accumulators (two `ymm` of `$w` lanes here) and its scalar
/// tail. Elements go to the lanes `2 * $w` at a time, then `$nw` at a time
/// into the first accumulator, then one at a time into the scalar: the
/// inline code's order, so sums round identically. Max and min also keep
/// per-lane NaN masks (the lane operation alone would drop a NaN).
///
/// Each op gets two entry points in a module of its name: `one` reduces
/// one row; `block` reduces [`ROW_BLOCK`] rows `stride` elements apart in
/// lockstep, each row in `one`'s order (so with `one`'s bits), their
/// states [`STATE_BYTES`] apart. Streams from several rows keep more of a
/// core's memory requests in flight than one row does.
macro_rules! row_reductions {
    (
        $t:ty, $v:ty, $w:literal, $nw:literal, $load:ident, $load128:ident, $store:ident,
        $low:ident, $insert:ident, $cmp:ident, $unord128:ident, $or:ident, $or128:ident,
        $blendv:ident, $set1:ident;
        $($name:ident: $wide:expr, $narrow:expr, $scalar:expr, $nan_sticky:expr;)*
    ) => {$(
        mod $name {
            use super::*;

            /// A row's running state: the two accumulators and their NaN
            /// masks.
            struct State {
                a: $v,
                b: $v,
                na: $v,
                nb: $v,
            }

            /// # Safety
            /// `acc` is valid for `2 * w + 1` elements; the CPU supports
            /// AVX2.
            #[target_feature(enable = "avx2,fma")]
            #[inline]
            unsafe fn load_state(acc: *const $t) -> State {
                // SAFETY: the caller's contract.
                unsafe {
                    let (a, b) = ($load(acc), $load(acc.add($w)));
                    State { a, b, na: $cmp::<_CMP_UNORD_Q>(a, a), nb: $cmp::<_CMP_UNORD_Q>(b, b) }
                }
            }

            /// Takes `2 * w` elements at `src`.
            ///
            /// # Safety
            /// `src` is valid for `2 * w` elements; the CPU supports AVX2.
            #[target_feature(enable = "avx2,fma")]
            #[inline]
            unsafe fn step(s: &mut State, src: *const $t) {
                // SAFETY: the caller's contract.
                unsafe {
                    let x = $load(src);
                    let y = $load(src.add($w));
                    if $nan_sticky {
                        s.na = $or(s.na, $cmp::<_CMP_UNORD_Q>(x, x));
                        s.nb = $or(s.nb, $cmp::<_CMP_UNORD_Q>(y, y));
                    }
                    s.a = $wide(s.a, x);
                    s.b = $wide(s.b, y);
                }
            }

            /// Takes elements `i..n` of the row at `src` (fewer than
            /// `2 * w` whole chunks' worth remain for the wide lanes) and
            /// stores the state to `acc`.
            ///
            /// # Safety
            /// `src` is valid for `n` elements and `acc` for `2 * w + 1`;
            /// the CPU supports AVX2.
            #[target_feature(enable = "avx2,fma")]
            #[inline]
            unsafe fn finish(mut s: State, src: *const $t, mut i: usize, n: usize, acc: *mut $t) {
                // SAFETY: every access is below `n` in `src` and below
                // 2w + 1 in `acc`.
                unsafe {
                    let mut lo = $low(s.a);
                    let mut nlo = $low(s.na);
                    while i + $nw <= n {
                        let x = $load128(src.add(i));
                        if $nan_sticky {
                            nlo = $or128(nlo, $unord128(x, x));
                        }
                        lo = $narrow(lo, x);
                        i += $nw;
                    }
                    s.a = $insert::<0>(s.a, lo);
                    s.na = $insert::<0>(s.na, nlo);
                    if $nan_sticky {
                        s.a = $blendv(s.a, $set1(<$t>::NAN), s.na);
                        s.b = $blendv(s.b, $set1(<$t>::NAN), s.nb);
                    }
                    $store(acc, s.a);
                    $store(acc.add($w), s.b);
                    let mut r = *acc.add(2 * $w);
                    while i < n {
                        r = $scalar(r, *src.add(i));
                        i += 1;
                    }
                    *acc.add(2 * $w) = r;
                }
            }

            /// # Safety
            /// `src` is valid for `n` elements and `acc` for `2 * w + 1`;
            /// the CPU supports AVX2.
            pub(in super::super) unsafe extern "C" fn one(src: *const $t, n: usize, acc: *mut $t) {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn run(src: *const $t, n: usize, acc: *mut $t) {
                    // SAFETY: every access is below `n` in `src` and below
                    // 2w + 1 in `acc`.
                    unsafe {
                        let mut s = load_state(acc);
                        let mut i = 0;
                        while i + 2 * $w <= n {
                            step(&mut s, src.add(i));
                            i += 2 * $w;
                        }
                        finish(s, src, i, n, acc);
                    }
                }
                // SAFETY: the caller's contract is `run`'s.
                unsafe { run(src, n, acc) }
            }

            /// # Safety
            /// Rows `q < ROW_BLOCK` at `src + q·stride` are valid for `n`
            /// elements each, states at `acc + q·STATE_BYTES` bytes for
            /// `2 * w + 1` elements each; the CPU supports AVX2.
            pub(in super::super) unsafe extern "C" fn block(
                src: *const $t,
                n: usize,
                acc: *mut $t,
                stride: isize,
            ) {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn run(src: *const $t, n: usize, acc: *mut $t, stride: isize) {
                    let row = |q: usize| src.wrapping_offset(q as isize * stride);
                    let state = |q: usize| acc.wrapping_byte_add(q * STATE_BYTES);
                    // SAFETY: every access is below `n` in a row and below
                    // 2w + 1 in a state (the caller's contract).
                    unsafe {
                        let mut s: [State; ROW_BLOCK] =
                            std::array::from_fn(|q| load_state(state(q)));
                        let mut i = 0;
                        while i + 2 * $w <= n {
                            for (q, s) in s.iter_mut().enumerate() {
                                step(s, row(q).add(i));
                            }
                            i += 2 * $w;
                        }
                        for (q, s) in s.into_iter().enumerate() {
                            finish(s, row(q), i, n, state(q));
                        }
                    }
                }
                // SAFETY: the caller's contract is `run`'s.
                unsafe { run(src, n, acc, stride) }
            }
        }
    )*};
}

// IEEE maximum/minimum of non-NaN lanes, +0 above -0: x86 `max` returns
// its second operand on ties, so both orders are taken and their bits
// combined (and: +0 wins a max; or: -0 wins a min).
macro_rules! ieee_max_min {
    ($($max:ident, $min:ident: $v:ty, $vmax:ident, $vmin:ident, $and:ident, $or:ident;)*) => {$(
        #[inline(always)]
        unsafe fn $max(a: $v, x: $v) -> $v {
            unsafe { $and($vmax(a, x), $vmax(x, a)) }
        }
        #[inline(always)]
        unsafe fn $min(a: $v, x: $v) -> $v {
            unsafe { $or($vmin(a, x), $vmin(x, a)) }
        }
    )*};
}

ieee_max_min! {
    max8, min8: __m256, _mm256_max_ps, _mm256_min_ps, _mm256_and_ps, _mm256_or_ps;
    max4, min4: __m128, _mm_max_ps, _mm_min_ps, _mm_and_ps, _mm_or_ps;
    max4d, min4d: __m256d, _mm256_max_pd, _mm256_min_pd, _mm256_and_pd, _mm256_or_pd;
    max2d, min2d: __m128d, _mm_max_pd, _mm_min_pd, _mm_and_pd, _mm_or_pd;
}

/// The scalar accumulators' IEEE maximum and minimum (NaN wins; +0 above
/// -0).
macro_rules! scalar_max_min {
    ($($max:ident, $min:ident: $t:ty;)*) => {$(
        fn $max(a: $t, x: $t) -> $t {
            match (a.is_nan() || x.is_nan(), a == x) {
                (true, _) => <$t>::NAN,
                (false, true) => <$t>::from_bits(a.to_bits() & x.to_bits()),
                (false, false) => a.max(x),
            }
        }
        fn $min(a: $t, x: $t) -> $t {
            match (a.is_nan() || x.is_nan(), a == x) {
                (true, _) => <$t>::NAN,
                (false, true) => <$t>::from_bits(a.to_bits() | x.to_bits()),
                (false, false) => a.min(x),
            }
        }
    )*};
}

scalar_max_min! {
    max1, min1: f32;
    max1d, min1d: f64;
}

row_reductions! {
    f32, __m256, 8, 4, _mm256_loadu_ps, _mm_loadu_ps, _mm256_storeu_ps,
    _mm256_castps256_ps128, _mm256_insertf128_ps, _mm256_cmp_ps, _mm_cmpunord_ps,
    _mm256_or_ps, _mm_or_ps, _mm256_blendv_ps, _mm256_set1_ps;
    reduce_sum_f32: |a, x| _mm256_add_ps(a, x), |a, x| _mm_add_ps(a, x), |a: f32, x: f32| a + x, false;
    reduce_max_f32: |a, x| max8(a, x), |a, x| max4(a, x), max1, true;
    reduce_min_f32: |a, x| min8(a, x), |a, x| min4(a, x), min1, true;
}

row_reductions! {
    f64, __m256d, 4, 2, _mm256_loadu_pd, _mm_loadu_pd, _mm256_storeu_pd,
    _mm256_castpd256_pd128, _mm256_insertf128_pd, _mm256_cmp_pd, _mm_cmpunord_pd,
    _mm256_or_pd, _mm_or_pd, _mm256_blendv_pd, _mm256_set1_pd;
    reduce_sum_f64: |a, x| _mm256_add_pd(a, x), |a, x| _mm_add_pd(a, x), |a: f64, x: f64| a + x, false;
    reduce_max_f64: |a, x| max4d(a, x), |a, x| max2d(a, x), max1d, true;
    reduce_min_f64: |a, x| min4d(a, x), |a, x| min2d(a, x), min1d, true;
}

type Tile32 = unsafe extern "C" fn(*const f32, *mut f32, usize, f32, f32, u32, f32);
type Tile64 = unsafe extern "C" fn(*const f64, *mut f64, usize, f64, f64, u32, f64);
type Row32 = unsafe extern "C" fn(*const f32, usize, *mut f32);
type Row64 = unsafe extern "C" fn(*const f64, usize, *mut f64);
type Rows32 = unsafe extern "C" fn(*const f32, usize, *mut f32, isize);
type Rows64 = unsafe extern "C" fn(*const f64, usize, *mut f64, isize);

/// The routine of `op` on `dt` (the caller checked the CPU).
pub(super) fn routine(op: UnaryOp, dt: DType) -> Option<usize> {
    let (f, d): (Tile32, Tile64) = match op {
        UnaryOp::Exp => (exp_f32, exp_f64),
        UnaryOp::Expm1 => (expm1_f32, expm1_f64),
        UnaryOp::Log => (log_f32, log_f64),
        UnaryOp::Log1p => (log1p_f32, log1p_f64),
        UnaryOp::Tanh => (tanh_f32, tanh_f64),
        UnaryOp::Logistic => (logistic_f32, logistic_f64),
        UnaryOp::Sin => (sin_f32, sin_f64),
        UnaryOp::Cos => (cos_f32, cos_f64),
        UnaryOp::Tan => (tan_f32, tan_f64),
        UnaryOp::Exp2 => (exp2_f32, exp2_f64),
        UnaryOp::Sinh => (sinh_f32, sinh_f64),
        UnaryOp::Cosh => (cosh_f32, cosh_f64),
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
    };
    pick(dt, f as usize, d as usize)
}

/// The routine dividing by a scalar operand on `dt`.
pub(super) fn divide(dt: DType) -> Option<usize> {
    let (f, d): (Tile32, Tile64) = (div_f32, div_f64);
    pick(dt, f as usize, d as usize)
}

/// The one-row and the block-of-rows reduction of `op` on `dt`.
pub(super) fn reduction(op: ReduceOp, dt: DType) -> Option<(usize, usize)> {
    let (f, d): ((Row32, Rows32), (Row64, Rows64)) = match op {
        ReduceOp::Sum => (
            (reduce_sum_f32::one, reduce_sum_f32::block),
            (reduce_sum_f64::one, reduce_sum_f64::block),
        ),
        ReduceOp::Max => (
            (reduce_max_f32::one, reduce_max_f32::block),
            (reduce_max_f64::one, reduce_max_f64::block),
        ),
        ReduceOp::Min => (
            (reduce_min_f32::one, reduce_min_f32::block),
            (reduce_min_f64::one, reduce_min_f64::block),
        ),
        ReduceOp::Prod | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => return None,
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
