//! What a tile routine needs beyond [`Lanes`], at one register width:
//! [`Tile`] (loads, stores and partial vectors of `W` lanes) and [`Rows`]
//! (a row reduction's accumulator state held in that width's registers),
//! implemented beside `Lanes` in `ymm.rs` and `zmm.rs`; and [`Elem`], the
//! 128-bit and scalar steps of a row reduction that every width shares.
//!
//! Invariants: a row reduction's state is the inline code's: 64 bytes of
//! accumulators (four 16-byte vectors: lane `j` folds the elements `j`
//! mod [`chunk`] of the row) and a scalar, whatever the width holding them
//! (two `ymm` or one `zmm`), so every width folds the same elements into
//! the same lane in the same order. The implementing types are tokens
//! built only inside routines (`routines.rs`), which are only handed out
//! where the CPU has their instructions; methods that only compute are
//! therefore safe, and those that touch memory are `unsafe` for the
//! pointers alone. [`Elem`]'s functions are `unsafe`: they need SSE4.1,
//! which only the routines that inline them guarantee.

use super::super::lanes::Lanes;

/// Elements of `E` in a row reduction's accumulators (64 bytes).
pub(crate) const fn chunk<E>() -> usize {
    64 / std::mem::size_of::<E>()
}

/// Loads and stores of a [`Lanes`] vector of `W` elements.
pub(crate) trait Tile: Lanes {
    /// The element type (`f32` or `f64`).
    type E: Copy;
    /// Lanes per vector.
    const W: usize;

    /// `e` in every lane.
    fn splat(&mut self, e: Self::E) -> Self::F;
    /// # Safety
    /// `p` is valid for reading `W` elements.
    unsafe fn load(&mut self, p: *const Self::E) -> Self::F;
    /// # Safety
    /// `p` is valid for writing `W` elements.
    unsafe fn store(&mut self, p: *mut Self::E, v: Self::F);
    /// The first `k < W` elements at `p`, zero in the lanes above; reads
    /// nothing past them.
    ///
    /// # Safety
    /// `p` is valid for reading `k` elements.
    unsafe fn load_part(&mut self, p: *const Self::E, k: usize) -> Self::F;
    /// Stores the first `k < W` lanes of `v` to `p`, nothing past them.
    ///
    /// # Safety
    /// `p` is valid for writing `k` elements.
    unsafe fn store_part(&mut self, p: *mut Self::E, k: usize, v: Self::F);
}

/// A row reduction's 64 bytes of accumulators in registers.
pub(crate) trait Rows: Tile<E: Elem> {
    /// The accumulators ([`chunk`] lanes).
    type Acc: Copy;
    /// Which lanes of an [`Rows::Acc`] hold NaN.
    type Nan: Copy;

    /// # Safety
    /// `p` is valid for reading 64 bytes.
    unsafe fn load_acc(&mut self, p: *const Self::E) -> Self::Acc;
    /// # Safety
    /// `p` is valid for writing 64 bytes.
    unsafe fn store_acc(&mut self, p: *mut Self::E, a: Self::Acc);
    /// The lanes of `a` that are NaN.
    fn is_nan(&mut self, a: Self::Acc) -> Self::Nan;
    fn nan_or(&mut self, a: Self::Nan, b: Self::Nan) -> Self::Nan;
    /// `a` with the lanes of `m` set to the element's `NAN`.
    fn fill_nan(&mut self, a: Self::Acc, m: Self::Nan) -> Self::Acc;
    /// Lane-wise sum.
    fn acc_add(&mut self, a: Self::Acc, x: Self::Acc) -> Self::Acc;
    /// Lane-wise IEEE maximum of non-NaN lanes (+0 above -0).
    fn acc_max(&mut self, a: Self::Acc, x: Self::Acc) -> Self::Acc;
    /// Lane-wise IEEE minimum of non-NaN lanes (-0 below +0).
    fn acc_min(&mut self, a: Self::Acc, x: Self::Acc) -> Self::Acc;
    /// The first 16 bytes (the inline code's first accumulator).
    fn low(&mut self, a: Self::Acc) -> <Self::E as Elem>::H;
    /// `a` with its first 16 bytes replaced by `lo`.
    fn with_low(&mut self, a: Self::Acc, lo: <Self::E as Elem>::H) -> Self::Acc;
}

/// The 16-byte and scalar steps of a row reduction on `f32` or `f64`.
pub(crate) trait Elem: Copy {
    /// A 16-byte vector of the element.
    type H: Copy;
    /// Lanes of [`Elem::H`].
    const NW: usize;

    /// # Safety
    /// `p` is valid for reading 16 bytes; the CPU has SSE4.1.
    unsafe fn load_h(p: *const Self) -> Self::H;
    /// All-ones lanes where `x` is NaN.
    ///
    /// # Safety
    /// The CPU has SSE4.1 (so for every function of this trait).
    unsafe fn h_nan(x: Self::H) -> Self::H;
    /// # Safety
    /// As [`Elem::h_nan`].
    unsafe fn h_or(a: Self::H, b: Self::H) -> Self::H;
    /// `x` with the lanes of `m` set to `NAN`.
    ///
    /// # Safety
    /// As [`Elem::h_nan`].
    unsafe fn h_fill_nan(x: Self::H, m: Self::H) -> Self::H;
    /// # Safety
    /// As [`Elem::h_nan`].
    unsafe fn h_add(a: Self::H, x: Self::H) -> Self::H;
    /// IEEE maximum of non-NaN lanes (+0 above -0).
    ///
    /// # Safety
    /// As [`Elem::h_nan`].
    unsafe fn h_max(a: Self::H, x: Self::H) -> Self::H;
    /// IEEE minimum of non-NaN lanes (-0 below +0).
    ///
    /// # Safety
    /// As [`Elem::h_nan`].
    unsafe fn h_min(a: Self::H, x: Self::H) -> Self::H;
    /// The scalar accumulator's sum.
    fn s_add(a: Self, x: Self) -> Self;
    /// The scalar accumulator's IEEE maximum (NaN wins; +0 above -0).
    fn s_max(a: Self, x: Self) -> Self;
    /// The scalar accumulator's IEEE minimum (NaN wins; -0 below +0).
    fn s_min(a: Self, x: Self) -> Self;
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Elem;
    use std::arch::x86_64::*;

    // x86 `max`/`min` return the second operand on ties and NaN, so the
    // IEEE forms take both orders and combine their bits (and: +0 wins a
    // max; or: -0 wins a min). The same holds at every width (`ymm.rs`,
    // `zmm.rs`).
    macro_rules! elem {
        (
            $t:ty, $h:ty, $nw:literal, load: $load:ident, unord: $unord:ident, or: $or:ident,
            and: $and:ident, blendv: $blendv:ident, set1: $set1:ident, add: $add:ident,
            max: $max:ident, min: $min:ident
        ) => {
            impl Elem for $t {
                type H = $h;
                const NW: usize = $nw;

                #[inline(always)]
                unsafe fn load_h(p: *const $t) -> $h {
                    // SAFETY: the caller's contract.
                    unsafe { $load(p) }
                }
                #[inline(always)]
                unsafe fn h_nan(x: $h) -> $h {
                    // SAFETY: the caller's contract (SSE4.1).
                    unsafe { $unord(x, x) }
                }
                #[inline(always)]
                unsafe fn h_or(a: $h, b: $h) -> $h {
                    // SAFETY: the caller's contract (SSE4.1).
                    unsafe { $or(a, b) }
                }
                #[inline(always)]
                unsafe fn h_fill_nan(x: $h, m: $h) -> $h {
                    // SAFETY: the caller's contract (SSE4.1).
                    unsafe { $blendv(x, $set1(<$t>::NAN), m) }
                }
                #[inline(always)]
                unsafe fn h_add(a: $h, x: $h) -> $h {
                    // SAFETY: the caller's contract (SSE4.1).
                    unsafe { $add(a, x) }
                }
                #[inline(always)]
                unsafe fn h_max(a: $h, x: $h) -> $h {
                    // SAFETY: the caller's contract (SSE4.1).
                    unsafe { $and($max(a, x), $max(x, a)) }
                }
                #[inline(always)]
                unsafe fn h_min(a: $h, x: $h) -> $h {
                    // SAFETY: the caller's contract (SSE4.1).
                    unsafe { $or($min(a, x), $min(x, a)) }
                }
                #[inline(always)]
                fn s_add(a: $t, x: $t) -> $t {
                    a + x
                }
                #[inline(always)]
                fn s_max(a: $t, x: $t) -> $t {
                    match (a.is_nan() || x.is_nan(), a == x) {
                        (true, _) => <$t>::NAN,
                        (false, true) => <$t>::from_bits(a.to_bits() & x.to_bits()),
                        (false, false) => a.max(x),
                    }
                }
                #[inline(always)]
                fn s_min(a: $t, x: $t) -> $t {
                    match (a.is_nan() || x.is_nan(), a == x) {
                        (true, _) => <$t>::NAN,
                        (false, true) => <$t>::from_bits(a.to_bits() | x.to_bits()),
                        (false, false) => a.min(x),
                    }
                }
            }
        };
    }

    elem! {
        f32, __m128, 4, load: _mm_loadu_ps, unord: _mm_cmpunord_ps, or: _mm_or_ps,
        and: _mm_and_ps, blendv: _mm_blendv_ps, set1: _mm_set1_ps, add: _mm_add_ps,
        max: _mm_max_ps, min: _mm_min_ps
    }

    elem! {
        f64, __m128d, 2, load: _mm_loadu_pd, unord: _mm_cmpunord_pd, or: _mm_or_pd,
        and: _mm_and_pd, blendv: _mm_blendv_pd, set1: _mm_set1_pd, add: _mm_add_pd,
        max: _mm_max_pd, min: _mm_min_pd
    }
}
