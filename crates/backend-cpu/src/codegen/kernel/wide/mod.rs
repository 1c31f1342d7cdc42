//! 256-bit tile routines: the transcendental functions of `math.rs`,
//! division by a scalar and row reductions, precompiled for AVX2 and FMA
//! on f32 (8 lanes) and f64 (4 lanes), that kernels call on a tile of
//! values (Cranelift 0.135 emits at most 128-bit vectors).
//!
//! A tile routine is `unsafe extern "C" fn(src: *const T, dst: *mut T,
//! n: usize, scale: T, offset: T, mode: u32, c: T)` mapping `n` values
//! (optionally scaled and offset first: see [`MUL`], [`ADD`]; `c` is the
//! scalar operand of binary ones: the divisor of [`divide`]'s); `src` and
//! `dst` may be the same buffer. A row reduction ([`reduction`]) is
//! `unsafe extern "C" fn(src: *const T, n: usize, acc: *mut T)` folding a
//! row into an accumulator state laid out as the inline code holds it.
//!
//! The functions are `math.rs`'s algorithms instantiated with `Avx2F32`
//! and `Avx2F64` (`ymm.rs`) as their `Lanes`: the same
//! operations in the same order, so results are bit-identical to the
//! inline code (`tests/math_ulp.rs`, `tests/wide_math.rs`).
//!
//! Invariant: those `Lanes` types exist only inside routines
//! (`routines.rs`), and routines are only handed out after the CPU was
//! found to support AVX2 and FMA; that is what makes their intrinsics
//! sound.

use jaxon_ir::primitive::{ReduceOp, UnaryOp};
use jaxon_ir::DType;

#[cfg(target_arch = "x86_64")]
mod routines;
#[cfg(target_arch = "x86_64")]
mod ymm;

/// Routine `mode` bit: multiply the argument by `scale` first.
pub(crate) const MUL: u32 = 1;
/// Routine `mode` bit: then add `offset`.
pub(crate) const ADD: u32 = 2;

/// Whether this CPU runs the tile routines.
pub(crate) fn available() -> bool {
    crate::isa::has(crate::isa::Isa::Avx2)
}

/// The address of the tile routine of `op` on `dt`, if there is one and
/// this CPU can run it.
pub(crate) fn routine(op: UnaryOp, dt: DType) -> Option<usize> {
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        routines::routine(op, dt)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, dt);
        None
    }
}

/// The address of the tile routine dividing `dt` values by a scalar
/// operand (the routine's `c`), if this CPU can run it.
pub(crate) fn divide(dt: DType) -> Option<usize> {
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        routines::divide(dt)
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
/// `dt`, if there are some and this CPU can run them.
pub(crate) fn reduction(op: ReduceOp, dt: DType) -> Option<(usize, usize)> {
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        routines::reduction(op, dt)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, dt);
        None
    }
}
