//! Tile routines: the transcendental functions of `math.rs`, division by
//! a scalar and row reductions, precompiled at the widest vector width
//! the CPU has (Cranelift 0.135 emits at most 128-bit vectors), that
//! kernels call on a tile of values: 512-bit `zmm` code (AVX-512 F/DQ/BW/
//! VL; 16 f32 or 8 f64 lanes) where [`isa`](crate::isa::isa) is
//! `Avx512`, 256-bit `ymm` code (AVX2 and FMA; 8 or 4 lanes) where it is
//! `Avx2`, none where it is `Scalar`.
//!
//! A tile routine is `unsafe extern "C" fn(src: *const T, dst: *mut T,
//! n: usize, scale: T, offset: T, mode: u32, c: T)` mapping `n` values
//! (optionally scaled and offset first: see [`MUL`], [`ADD`]; `c` is the
//! scalar operand of binary ones: the divisor of [`divide`]'s); `src` and
//! `dst` may be the same buffer. A row reduction ([`reduction`]) is
//! `unsafe extern "C" fn(src: *const T, n: usize, acc: *mut T)` folding a
//! row into an accumulator state laid out as the inline code holds it
//! ([`STATE_BYTES`]; the same layout at every width).
//!
//! The functions are `math.rs`'s algorithms instantiated with the `Lanes`
//! of `ymm.rs` and `zmm.rs` (`routines.rs`, one macro for both widths),
//! and the row reductions one generic algorithm (`rows.rs`): the same
//! operations in the same order, so results are bit-identical to the
//! inline code at every width (`tests.rs` compares the widths with each
//! other and an f64 oracle; `tests/all/wide_math.rs` and `math_ulp.rs`
//! the default width with the inline code).
//!
//! Invariant: the `Lanes` types exist only inside routines, and a routine
//! of a width is only handed out after the CPU was found to support that
//! width's instructions ([`crate::isa::detected`]); that is what makes
//! their intrinsics sound.

use crate::isa::Isa;
use jaxon_ir::primitive::{ReduceOp, UnaryOp};
use jaxon_ir::DType;

#[cfg(target_arch = "x86_64")]
mod routines;
#[cfg(target_arch = "x86_64")]
mod rows;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests;
#[cfg(target_arch = "x86_64")]
mod tile;
#[cfg(target_arch = "x86_64")]
mod ymm;
#[cfg(target_arch = "x86_64")]
mod zmm;

/// Routine `mode` bit: multiply the argument by `scale` first.
pub(crate) const MUL: u32 = 1;
/// Routine `mode` bit: then add `offset`.
pub(crate) const ADD: u32 = 2;

/// The widths the routines exist at that this CPU can run, whatever the
/// `JAXON_CPU_ISA` cap (for tests that run every one).
#[cfg(test)]
pub(crate) fn widths() -> Vec<Isa> {
    [Isa::Avx2, Isa::Avx512]
        .into_iter()
        .filter(|&w| runs(w))
        .collect()
}

/// Whether routines of width `level` exist and this CPU runs them.
fn runs(level: Isa) -> bool {
    cfg!(target_arch = "x86_64") && level != Isa::Scalar && level <= crate::isa::detected()
}

/// The address of the tile routine of `op` on `dt` at the kernels' width
/// ([`crate::isa::isa`]), if there is one.
pub(crate) fn routine(op: UnaryOp, dt: DType) -> Option<usize> {
    routine_at(crate::isa::isa(), op, dt)
}

/// The address of the tile routine of `op` on `dt` at width `level`, if
/// there is one and this CPU can run it (the cap aside).
pub(crate) fn routine_at(level: Isa, op: UnaryOp, dt: DType) -> Option<usize> {
    if !runs(level) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        routines::routine(level, op, dt)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, dt);
        None
    }
}

/// The address of the tile routine dividing `dt` values by a scalar
/// operand (the routine's `c`) at the kernels' width, if there is one.
pub(crate) fn divide(dt: DType) -> Option<usize> {
    divide_at(crate::isa::isa(), dt)
}

/// [`divide`] at width `level`, if this CPU can run it.
pub(crate) fn divide_at(level: Isa, dt: DType) -> Option<usize> {
    if !runs(level) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        routines::divide(level, dt)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = dt;
        None
    }
}

/// Rows a block row reduction takes per call.
pub(crate) const ROW_BLOCK: usize = 4;

/// Bytes between the states of a block row reduction's rows: the inline
/// code's four 16-byte accumulators and its scalar (at byte 64).
pub(crate) const STATE_BYTES: usize = 64 + 8;

/// The addresses of the one-row and the block-of-rows reduction of `op` on
/// `dt` at the kernels' width, if there are some.
pub(crate) fn reduction(op: ReduceOp, dt: DType) -> Option<(usize, usize)> {
    reduction_at(crate::isa::isa(), op, dt)
}

/// [`reduction`] at width `level`, if this CPU can run it.
pub(crate) fn reduction_at(level: Isa, op: ReduceOp, dt: DType) -> Option<(usize, usize)> {
    if !runs(level) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        routines::reduction(level, op, dt)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, dt);
        None
    }
}
