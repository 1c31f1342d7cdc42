//! [`Lanes`] on `ymm` registers (AVX2 and FMA): eight f32 lanes
//! ([`Avx2F32`]) and four f64 lanes ([`Avx2F64`]), one macro instantiated
//! with each type's intrinsics.
//!
//! Every operation is one instruction, or two where x86 differs from IEEE
//! (`neg`, `abs`: sign-bit masks; `nonzero`: compare and invert), and
//! keeps the invariants of `lanes.rs`, so the algorithms of `math.rs` give
//! the same bits here as in the inline code. `at_least`/`at_most` are one
//! `max`/`min` each: x86 returns the second operand when unordered, and
//! with `x` second a NaN stays, exactly as the compare-and-select default.

use super::super::lanes::{Cmp, Lanes};
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
        srl: $srl:ident
    ) => {
        // SAFETY (every `unsafe` block in this impl): the type exists only
        // inside a routine of `routines.rs`, which `wide::routine` hands out
        // only after `available()` confirmed AVX2 and FMA; the intrinsics
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
    subi: _mm256_sub_epi32, sll: _mm256_sll_epi32, srl: _mm256_srl_epi32
}

ymm_lanes! {
    Avx2F64, DType::F64, __m256d, f64, i64,
    set1: _mm256_set1_pd, set1i: _mm256_set1_epi64x, add: _mm256_add_pd, sub: _mm256_sub_pd,
    mul: _mm256_mul_pd, div: _mm256_div_pd, fma: _mm256_fmadd_pd, xor: _mm256_xor_pd,
    andnot: _mm256_andnot_pd, max: _mm256_max_pd, min: _mm256_min_pd, cmp: _mm256_cmp_pd,
    or: _mm256_or_pd, cmpeqi: _mm256_cmpeq_epi64, to_f: _mm256_castsi256_pd,
    to_i: _mm256_castpd_si256, blendv: _mm256_blendv_pd, addi: _mm256_add_epi64,
    subi: _mm256_sub_epi64, sll: _mm256_sll_epi64, srl: _mm256_srl_epi64
}
