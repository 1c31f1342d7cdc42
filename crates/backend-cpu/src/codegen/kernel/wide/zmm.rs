//! [`Lanes`], [`Tile`] and [`Rows`] on `zmm` registers (AVX-512 F, DQ, BW
//! and VL): sixteen f32 lanes ([`Avx512F32`]) and eight f64 lanes
//! ([`Avx512F64`]), one macro instantiated with each type's intrinsics.
//!
//! The same operations as `ymm.rs`, so `math.rs` gives the same bits per
//! lane at both widths: `neg`/`abs` are sign-bit masks, `at_least`/
//! `at_most` one `max`/`min` with `x` second (x86 returns the second
//! operand when unordered, at every width), comparisons the same
//! predicates. Masks differ: a lane mask is a `k` register (`__mmask16`,
//! `__mmask8`), so `Lanes::M` is not `Lanes::F` here; `sel` is a masked
//! blend, `nonzero` a `vptestm`. A partial vector is a masked load (zero
//! in the lanes above, which never fault) and a masked store; a row
//! reduction's 64 bytes of accumulators are one `zmm` register and its
//! NaN flags a `k` mask.

use super::super::lanes::{Cmp, Lanes, Scalar, ScalarElem};
use super::tile::{Elem, Rows, Tile};
use jaxon_ir::DType;
use std::arch::x86_64::*;

/// Sixteen f32 lanes in a `zmm` register. A token: only constructed by the
/// routines of `routines.rs`, which run only where AVX-512 F/DQ/BW/VL
/// exist.
pub(crate) struct Avx512F32(pub(super) ());

/// Eight f64 lanes in a `zmm` register; a token like [`Avx512F32`].
pub(crate) struct Avx512F64(pub(super) ());

macro_rules! zmm_lanes {
    (
        $ty:ident, $dt:expr, $f:ty, $elem:ty, $int:ty, $m:ty, $w:literal,
        set1: $set1:ident, set1i: $set1i:ident, add: $add:ident, sub: $sub:ident,
        mul: $mul:ident, div: $div:ident, fma: $fma:ident, xor: $xor:ident,
        andnot: $andnot:ident, and: $and:ident, or: $or:ident, max: $max:ident,
        min: $min:ident, cmp: $cmp:ident, test: $test:ident, blend: $blend:ident,
        blendi: $blendi:ident, to_f: $to_f:ident, to_i: $to_i:ident, addi: $addi:ident,
        subi: $subi:ident, sll: $sll:ident, srl: $srl:ident, load: $load:ident,
        store: $store:ident, maskz_load: $maskz_load:ident, mask_store: $mask_store:ident,
        mask_mov: $mask_mov:ident, low: $low:ident, insert: $insert:ident
    ) => {
        // SAFETY (every `unsafe` block in these impls): the type exists
        // only inside a routine of `routines.rs`, which `wide` hands out
        // only after `isa::detected()` found AVX-512 F/DQ/BW/VL; memory
        // accesses keep the pointer contracts their callers keep.
        impl Lanes for $ty {
            type F = $f;
            type I = __m512i;
            type M = $m;

            #[inline(always)]
            fn dt(&self) -> DType {
                $dt
            }
            #[inline(always)]
            fn f(&mut self, v: f64) -> $f {
                unsafe { $set1(v as $elem) }
            }
            #[inline(always)]
            fn i(&mut self, v: i64) -> __m512i {
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
            fn cmp(&mut self, cc: Cmp, a: $f, b: $f) -> $m {
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
            fn mask_or(&mut self, a: $m, b: $m) -> $m {
                a | b
            }
            #[inline(always)]
            fn nonzero(&mut self, a: __m512i) -> $m {
                unsafe { $test(a, a) }
            }
            #[inline(always)]
            fn sel(&mut self, m: $m, a: $f, b: $f) -> $f {
                unsafe { $blend(m, b, a) }
            }
            #[inline(always)]
            fn sel_i(&mut self, m: $m, a: __m512i, b: __m512i) -> __m512i {
                unsafe { $blendi(m, b, a) }
            }
            #[inline(always)]
            fn bits(&mut self, a: $f) -> __m512i {
                unsafe { $to_i(a) }
            }
            #[inline(always)]
            fn float_bits(&mut self, a: __m512i) -> $f {
                unsafe { $to_f(a) }
            }
            #[inline(always)]
            fn iadd(&mut self, a: __m512i, b: __m512i) -> __m512i {
                unsafe { $addi(a, b) }
            }
            #[inline(always)]
            fn isub(&mut self, a: __m512i, b: __m512i) -> __m512i {
                unsafe { $subi(a, b) }
            }
            #[inline(always)]
            fn and(&mut self, a: __m512i, b: __m512i) -> __m512i {
                unsafe { _mm512_and_si512(a, b) }
            }
            #[inline(always)]
            fn or(&mut self, a: __m512i, b: __m512i) -> __m512i {
                unsafe { _mm512_or_si512(a, b) }
            }
            #[inline(always)]
            fn xor(&mut self, a: __m512i, b: __m512i) -> __m512i {
                unsafe { _mm512_xor_si512(a, b) }
            }
            #[inline(always)]
            fn and_not(&mut self, a: __m512i, b: __m512i) -> __m512i {
                unsafe { _mm512_andnot_si512(b, a) }
            }
            #[inline(always)]
            fn shl(&mut self, a: __m512i, n: u8) -> __m512i {
                unsafe { $sll(a, _mm_cvtsi32_si128(n as i32)) }
            }
            #[inline(always)]
            fn ushr(&mut self, a: __m512i, n: u8) -> __m512i {
                unsafe { $srl(a, _mm_cvtsi32_si128(n as i32)) }
            }
            #[inline(always)]
            fn patch(&mut self, m: $m, x: $f, y: $f, slow: Scalar) -> $f {
                const N: usize = 64 / std::mem::size_of::<$elem>();
                if m == 0 {
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
                    if m >> i & 1 != 0 {
                        *yv = xv.through(slow);
                    }
                }
                // SAFETY: as above.
                unsafe { std::mem::transmute::<[$elem; N], $f>(ys) }
            }
        }

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
                // Masked-off lanes are neither read nor faulted on.
                unsafe { $maskz_load(((1u32 << k) - 1) as $m, p) }
            }
            #[inline(always)]
            unsafe fn store_part(&mut self, p: *mut $elem, k: usize, v: $f) {
                unsafe { $mask_store(p, ((1u32 << k) - 1) as $m, v) }
            }
        }

        impl Rows for $ty {
            type Acc = $f;
            type Nan = $m;

            #[inline(always)]
            unsafe fn load_acc(&mut self, p: *const $elem) -> $f {
                unsafe { $load(p) }
            }
            #[inline(always)]
            unsafe fn store_acc(&mut self, p: *mut $elem, a: $f) {
                unsafe { $store(p, a) }
            }
            #[inline(always)]
            fn is_nan(&mut self, a: $f) -> $m {
                unsafe { $cmp::<_CMP_UNORD_Q>(a, a) }
            }
            #[inline(always)]
            fn nan_or(&mut self, a: $m, b: $m) -> $m {
                a | b
            }
            #[inline(always)]
            fn fill_nan(&mut self, a: $f, m: $m) -> $f {
                unsafe { $mask_mov(a, m, $set1(<$elem>::NAN)) }
            }
            #[inline(always)]
            fn acc_add(&mut self, a: $f, x: $f) -> $f {
                unsafe { $add(a, x) }
            }
            #[inline(always)]
            fn acc_max(&mut self, a: $f, x: $f) -> $f {
                unsafe { $and($max(a, x), $max(x, a)) }
            }
            #[inline(always)]
            fn acc_min(&mut self, a: $f, x: $f) -> $f {
                unsafe { $or($min(a, x), $min(x, a)) }
            }
            #[inline(always)]
            fn low(&mut self, a: $f) -> <$elem as Elem>::H {
                unsafe { $low(a) }
            }
            #[inline(always)]
            fn with_low(&mut self, a: $f, lo: <$elem as Elem>::H) -> $f {
                unsafe { $insert::<0>(a, lo) }
            }
        }
    };
}

zmm_lanes! {
    Avx512F32, DType::F32, __m512, f32, i32, __mmask16, 16,
    set1: _mm512_set1_ps, set1i: _mm512_set1_epi32, add: _mm512_add_ps, sub: _mm512_sub_ps,
    mul: _mm512_mul_ps, div: _mm512_div_ps, fma: _mm512_fmadd_ps, xor: _mm512_xor_ps,
    andnot: _mm512_andnot_ps, and: _mm512_and_ps, or: _mm512_or_ps, max: _mm512_max_ps,
    min: _mm512_min_ps, cmp: _mm512_cmp_ps_mask, test: _mm512_test_epi32_mask,
    blend: _mm512_mask_blend_ps, blendi: _mm512_mask_blend_epi32, to_f: _mm512_castsi512_ps,
    to_i: _mm512_castps_si512, addi: _mm512_add_epi32, subi: _mm512_sub_epi32,
    sll: _mm512_sll_epi32, srl: _mm512_srl_epi32, load: _mm512_loadu_ps,
    store: _mm512_storeu_ps, maskz_load: _mm512_maskz_loadu_ps,
    mask_store: _mm512_mask_storeu_ps, mask_mov: _mm512_mask_mov_ps,
    low: _mm512_castps512_ps128, insert: _mm512_insertf32x4
}

zmm_lanes! {
    Avx512F64, DType::F64, __m512d, f64, i64, __mmask8, 8,
    set1: _mm512_set1_pd, set1i: _mm512_set1_epi64, add: _mm512_add_pd, sub: _mm512_sub_pd,
    mul: _mm512_mul_pd, div: _mm512_div_pd, fma: _mm512_fmadd_pd, xor: _mm512_xor_pd,
    andnot: _mm512_andnot_pd, and: _mm512_and_pd, or: _mm512_or_pd, max: _mm512_max_pd,
    min: _mm512_min_pd, cmp: _mm512_cmp_pd_mask, test: _mm512_test_epi64_mask,
    blend: _mm512_mask_blend_pd, blendi: _mm512_mask_blend_epi64, to_f: _mm512_castsi512_pd,
    to_i: _mm512_castpd_si512, addi: _mm512_add_epi64, subi: _mm512_sub_epi64,
    sll: _mm512_sll_epi64, srl: _mm512_srl_epi64, load: _mm512_loadu_pd,
    store: _mm512_storeu_pd, maskz_load: _mm512_maskz_loadu_pd,
    mask_store: _mm512_mask_storeu_pd, mask_mov: _mm512_mask_mov_pd,
    low: _mm512_castpd512_pd128, insert: _mm512_insertf64x2
}
