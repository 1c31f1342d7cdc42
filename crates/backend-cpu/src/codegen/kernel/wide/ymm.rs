//! [`Lanes`], [`Tile`] and [`Rows`] on `ymm` registers (AVX2 and FMA):
//! eight f32 lanes ([`Avx2F32`]) and four f64 lanes ([`Avx2F64`]), one
//! macro per trait instantiated with each type's intrinsics.
//!
//! Every operation is one instruction, or two where x86 differs from IEEE
//! (`neg`, `abs`: sign-bit masks; `nonzero`: compare and invert), and
//! keeps the invariants of `lanes.rs`, so the algorithms of `math.rs` give
//! the same bits here as in the inline code. `at_least`/`at_most` are one
//! `max`/`min` each: x86 returns the second operand when unordered, and
//! with `x` second a NaN stays, exactly as the compare-and-select default.
//! A partial vector goes through a zero-padded stack copy; a row
//! reduction's 64 bytes of accumulators are two `ymm` registers.

use super::super::lanes::{Cmp, Lanes, Scalar, ScalarElem};
use super::tile::{Rows, Tile};
use jaxon_ir::DType;
use std::arch::x86_64::*;

/// Eight f32 lanes in a `ymm` register. A token: only constructed by the
/// routines of `routines.rs`, which run only where AVX2 and FMA exist.
pub(crate) struct Avx2F32(pub(super) ());

/// Four f64 lanes in a `ymm` register; a token like [`Avx2F32`].
pub(crate) struct Avx2F64(pub(super) ());

macro_rules! ymm_lanes {
    (
        $ty:ident, $dt:expr, $f:ty, $elem:ty, $int:ty,
        set1: $set1:ident, set1i: $set1i:ident, add: $add:ident, sub: $sub:ident,
        mul: $mul:ident, div: $div:ident, fma: $fma:ident, xor: $xor:ident,
        andnot: $andnot:ident, max: $max:ident, min: $min:ident, cmp: $cmp:ident,
        or: $or:ident, cmpeqi: $cmpeqi:ident, to_f: $to_f:ident, to_i: $to_i:ident,
        blendv: $blendv:ident, addi: $addi:ident, subi: $subi:ident, sll: $sll:ident,
        srl: $srl:ident, movemask: $movemask:ident
    ) => {
        // SAFETY (every `unsafe` block in this impl): the type exists only
        // inside a routine of `routines.rs`, which `wide::routine` hands out
        // only after `isa::isa()` confirmed AVX2 and FMA; the intrinsics
        // need nothing else.
        impl Lanes for $ty {
            type F = $f;
            type I = __m256i;
            type M = $f;

            #[inline(always)]
            fn dt(&self) -> DType {
                $dt
            }
            #[inline(always)]
            fn f(&mut self, v: f64) -> $f {
                unsafe { $set1(v as $elem) }
            }
            #[inline(always)]
            fn i(&mut self, v: i64) -> __m256i {
                unsafe { $set1i(v as $int) }
            }
            #[inline(always)]
            fn add(&mut self, a: $f, b: $f) -> $f {
                unsafe { $add(a, b) }
            }
            #[inline(always)]
            fn sub(&mut self, a: $f, b: $f) -> $f {
                unsafe { $sub(a, b) }
            }
            #[inline(always)]
            fn mul(&mut self, a: $f, b: $f) -> $f {
                unsafe { $mul(a, b) }
            }
            #[inline(always)]
            fn div(&mut self, a: $f, b: $f) -> $f {
                unsafe { $div(a, b) }
            }
            #[inline(always)]
            fn fma(&mut self, a: $f, b: $f, c: $f) -> $f {
                unsafe { $fma(a, b, c) }
            }
            #[inline(always)]
            fn neg(&mut self, a: $f) -> $f {
                unsafe { $xor(a, $set1(-0.0)) }
            }
            #[inline(always)]
            fn abs(&mut self, a: $f) -> $f {
                unsafe { $andnot($set1(-0.0), a) }
            }
            #[inline(always)]
            fn at_least(&mut self, x: $f, lo: $f) -> $f {
                unsafe { $max(lo, x) }
            }
            #[inline(always)]
            fn at_most(&mut self, x: $f, hi: $f) -> $f {
                unsafe { $min(hi, x) }
            }
            #[inline(always)]
            fn cmp(&mut self, cc: Cmp, a: $f, b: $f) -> $f {
                unsafe {
                    match cc {
                        Cmp::Lt => $cmp::<_CMP_LT_OQ>(a, b),
                        Cmp::Gt => $cmp::<_CMP_GT_OQ>(a, b),
                        Cmp::Ge => $cmp::<_CMP_GE_OQ>(a, b),
                        Cmp::Eq => $cmp::<_CMP_EQ_OQ>(a, b),
                        Cmp::Ne => $cmp::<_CMP_NEQ_UQ>(a, b),
                    }
                }
            }
            #[inline(always)]
            fn mask_or(&mut self, a: $f, b: $f) -> $f {
                unsafe { $or(a, b) }
            }
            #[inline(always)]
            fn nonzero(&mut self, a: __m256i) -> $f {
                unsafe {
                    let zero = $cmpeqi(a, _mm256_setzero_si256());
                    $to_f(_mm256_xor_si256(zero, _mm256_set1_epi32(-1)))
                }
            }
            #[inline(always)]
            fn sel(&mut self, m: $f, a: $f, b: $f) -> $f {
                unsafe { $blendv(b, a, m) }
            }
            #[inline(always)]
            fn sel_i(&mut self, m: $f, a: __m256i, b: __m256i) -> __m256i {
                unsafe { $to_i($blendv($to_f(b), $to_f(a), m)) }
            }
            #[inline(always)]
            fn bits(&mut self, a: $f) -> __m256i {
                unsafe { $to_i(a) }
            }
            #[inline(always)]
            fn float_bits(&mut self, a: __m256i) -> $f {
                unsafe { $to_f(a) }
            }
            #[inline(always)]
            fn iadd(&mut self, a: __m256i, b: __m256i) -> __m256i {
                unsafe { $addi(a, b) }
            }
            #[inline(always)]
            fn isub(&mut self, a: __m256i, b: __m256i) -> __m256i {
                unsafe { $subi(a, b) }
            }
            #[inline(always)]
            fn and(&mut self, a: __m256i, b: __m256i) -> __m256i {
                unsafe { _mm256_and_si256(a, b) }
            }
            #[inline(always)]
            fn or(&mut self, a: __m256i, b: __m256i) -> __m256i {
                unsafe { _mm256_or_si256(a, b) }
            }
            #[inline(always)]
            fn xor(&mut self, a: __m256i, b: __m256i) -> __m256i {
                unsafe { _mm256_xor_si256(a, b) }
            }
            #[inline(always)]
            fn and_not(&mut self, a: __m256i, b: __m256i) -> __m256i {
                unsafe { _mm256_andnot_si256(b, a) }
            }
            #[inline(always)]
            fn shl(&mut self, a: __m256i, n: u8) -> __m256i {
                unsafe { $sll(a, _mm_cvtsi32_si128(n as i32)) }
            }
            #[inline(always)]
            fn ushr(&mut self, a: __m256i, n: u8) -> __m256i {
                unsafe { $srl(a, _mm_cvtsi32_si128(n as i32)) }
            }
            #[inline(always)]
            fn patch(&mut self, m: $f, x: $f, y: $f, slow: Scalar) -> $f {
                const N: usize = 32 / std::mem::size_of::<$elem>();
                let bits = unsafe { $movemask(m) };
                if bits == 0 {
                    return y;
                }
                // SAFETY: a vector register and an array of its lanes have
                // the same size and any bits are valid in both.
                let (xs, mut ys) = unsafe {
                    (
                        std::mem::transmute::<$f, [$elem; N]>(x),
                        std::mem::transmute::<$f, [$elem; N]>(y),
                    )
                };
                for (i, (yv, xv)) in ys.iter_mut().zip(xs).enumerate() {
                    if bits >> i & 1 != 0 {
                        *yv = xv.through(slow);
                    }
                }
                // SAFETY: as above.
                unsafe { std::mem::transmute::<[$elem; N], $f>(ys) }
            }
        }
    };
}

ymm_lanes! {
    Avx2F32, DType::F32, __m256, f32, i32,
    set1: _mm256_set1_ps, set1i: _mm256_set1_epi32, add: _mm256_add_ps, sub: _mm256_sub_ps,
    mul: _mm256_mul_ps, div: _mm256_div_ps, fma: _mm256_fmadd_ps, xor: _mm256_xor_ps,
    andnot: _mm256_andnot_ps, max: _mm256_max_ps, min: _mm256_min_ps, cmp: _mm256_cmp_ps,
    or: _mm256_or_ps, cmpeqi: _mm256_cmpeq_epi32, to_f: _mm256_castsi256_ps,
    to_i: _mm256_castps_si256, blendv: _mm256_blendv_ps, addi: _mm256_add_epi32,
    subi: _mm256_sub_epi32, sll: _mm256_sll_epi32, srl: _mm256_srl_epi32,
    movemask: _mm256_movemask_ps
}

ymm_lanes! {
    Avx2F64, DType::F64, __m256d, f64, i64,
    set1: _mm256_set1_pd, set1i: _mm256_set1_epi64x, add: _mm256_add_pd, sub: _mm256_sub_pd,
    mul: _mm256_mul_pd, div: _mm256_div_pd, fma: _mm256_fmadd_pd, xor: _mm256_xor_pd,
    andnot: _mm256_andnot_pd, max: _mm256_max_pd, min: _mm256_min_pd, cmp: _mm256_cmp_pd,
    or: _mm256_or_pd, cmpeqi: _mm256_cmpeq_epi64, to_f: _mm256_castsi256_pd,
    to_i: _mm256_castpd_si256, blendv: _mm256_blendv_pd, addi: _mm256_add_epi64,
    subi: _mm256_sub_epi64, sll: _mm256_sll_epi64, srl: _mm256_srl_epi64,
    movemask: _mm256_movemask_pd
}

macro_rules! ymm_tile {
    (
        $ty:ident, $f:ty, $elem:ty, $w:literal, set1: $set1:ident, load: $load:ident,
        store: $store:ident, cmp: $cmp:ident, or: $or:ident, and: $and:ident,
        blendv: $blendv:ident, add: $add:ident, max: $max:ident, min: $min:ident,
        low: $low:ident, insert: $insert:ident
    ) => {
        // SAFETY (every `unsafe` block in these impls): as for `Lanes`
        // above, plus the pointer contracts the callers keep.
        impl Tile for $ty {
            type E = $elem;
            const W: usize = $w;

            #[inline(always)]
            fn splat(&mut self, e: $elem) -> $f {
                unsafe { $set1(e) }
            }
            #[inline(always)]
            unsafe fn load(&mut self, p: *const $elem) -> $f {
                unsafe { $load(p) }
            }
            #[inline(always)]
            unsafe fn store(&mut self, p: *mut $elem, v: $f) {
                unsafe { $store(p, v) }
            }
            #[inline(always)]
            unsafe fn load_part(&mut self, p: *const $elem, k: usize) -> $f {
                let mut buf = [0.0 as $elem; $w];
                unsafe {
                    std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), k);
                    $load(buf.as_ptr())
                }
            }
            #[inline(always)]
            unsafe fn store_part(&mut self, p: *mut $elem, k: usize, v: $f) {
                let mut buf = [0.0 as $elem; $w];
                unsafe {
                    $store(buf.as_mut_ptr(), v);
                    std::ptr::copy_nonoverlapping(buf.as_ptr(), p, k);
                }
            }
        }

        impl Rows for $ty {
            type Acc = [$f; 2];
            type Nan = [$f; 2];

            #[inline(always)]
            unsafe fn load_acc(&mut self, p: *const $elem) -> [$f; 2] {
                unsafe { [$load(p), $load(p.add($w))] }
            }
            #[inline(always)]
            unsafe fn store_acc(&mut self, p: *mut $elem, a: [$f; 2]) {
                unsafe {
                    $store(p, a[0]);
                    $store(p.add($w), a[1]);
                }
            }
            #[inline(always)]
            fn is_nan(&mut self, a: [$f; 2]) -> [$f; 2] {
                unsafe {
                    [
                        $cmp::<_CMP_UNORD_Q>(a[0], a[0]),
                        $cmp::<_CMP_UNORD_Q>(a[1], a[1]),
                    ]
                }
            }
            #[inline(always)]
            fn nan_or(&mut self, a: [$f; 2], b: [$f; 2]) -> [$f; 2] {
                unsafe { [$or(a[0], b[0]), $or(a[1], b[1])] }
            }
            #[inline(always)]
            fn fill_nan(&mut self, a: [$f; 2], m: [$f; 2]) -> [$f; 2] {
                unsafe {
                    let nan = $set1(<$elem>::NAN);
                    [$blendv(a[0], nan, m[0]), $blendv(a[1], nan, m[1])]
                }
            }
            #[inline(always)]
            fn acc_add(&mut self, a: [$f; 2], x: [$f; 2]) -> [$f; 2] {
                unsafe { [$add(a[0], x[0]), $add(a[1], x[1])] }
            }
            #[inline(always)]
            fn acc_max(&mut self, a: [$f; 2], x: [$f; 2]) -> [$f; 2] {
                unsafe {
                    [
                        $and($max(a[0], x[0]), $max(x[0], a[0])),
                        $and($max(a[1], x[1]), $max(x[1], a[1])),
                    ]
                }
            }
            #[inline(always)]
            fn acc_min(&mut self, a: [$f; 2], x: [$f; 2]) -> [$f; 2] {
                unsafe {
                    [
                        $or($min(a[0], x[0]), $min(x[0], a[0])),
                        $or($min(a[1], x[1]), $min(x[1], a[1])),
                    ]
                }
            }
            #[inline(always)]
            fn low(&mut self, a: [$f; 2]) -> <$elem as super::tile::Elem>::H {
                unsafe { $low(a[0]) }
            }
            #[inline(always)]
            fn with_low(&mut self, a: [$f; 2], lo: <$elem as super::tile::Elem>::H) -> [$f; 2] {
                unsafe { [$insert::<0>(a[0], lo), a[1]] }
            }
        }
    };
}

ymm_tile! {
    Avx2F32, __m256, f32, 8, set1: _mm256_set1_ps, load: _mm256_loadu_ps,
    store: _mm256_storeu_ps, cmp: _mm256_cmp_ps, or: _mm256_or_ps, and: _mm256_and_ps,
    blendv: _mm256_blendv_ps, add: _mm256_add_ps, max: _mm256_max_ps, min: _mm256_min_ps,
    low: _mm256_castps256_ps128, insert: _mm256_insertf128_ps
}

ymm_tile! {
    Avx2F64, __m256d, f64, 4, set1: _mm256_set1_pd, load: _mm256_loadu_pd,
    store: _mm256_storeu_pd, cmp: _mm256_cmp_pd, or: _mm256_or_pd, and: _mm256_and_pd,
    blendv: _mm256_blendv_pd, add: _mm256_add_pd, max: _mm256_max_pd, min: _mm256_min_pd,
    low: _mm256_castpd256_pd128, insert: _mm256_insertf128_pd
}
