//! Warp matrix multiply-accumulate ([`Stmt::Mma`](crate::kir::Stmt::Mma)) on
//! the simulator, with the per-lane fragment layouts of the PTX ISA
//! ("Matrix Fragments for mma.m16n8k16 with floating point type" and
//! "... for mma.m16n8k8", `.tf32`):
//!
//! - `groupID = lane >> 2`, `tig = lane % 4` (threadID_in_group);
//! - m16n8k16 `A` (16×16, row): `a_i` is at row `groupID + 8·[i ∈ {2,3,6,7}]`,
//!   column `tig·2 + (i & 1) + 8·[i ≥ 4]`; `B` (16×8, col): `b_i` at row
//!   `tig·2 + (i & 1) + 8·[i ≥ 2]`, column `groupID`;
//! - m16n8k8 tf32 `A` (16×8): `a_i` at row `groupID + 8·[i odd]`, column
//!   `tig + 4·[i ≥ 2]`; `B` (8×8): `b_i` at row `tig + 4·i`, column `groupID`;
//! - `C`/`D` (16×8 f32), both shapes: `c_i` at row `groupID + 8·[i ≥ 2]`,
//!   column `tig·2 + (i & 1)`.
//!
//! `ldmatrix` (m8n8, 16-bit): lane `l` receives elements
//! `(l / 4, 2·(l % 4) + j)` of each matrix, or their transposes.
//!
//! Arithmetic: operands are exact in `f64` (tf32 operands are first rounded
//! to 10 mantissa bits, ties away from zero, as `cvt.rna.tf32.f32` does),
//! products and the sum over `k` are formed in `f64`, `c` is added and the
//! result is rounded once to `f32`. Tensor cores round differently (within a
//! few `f32` ulp of this); tests compare with a tolerance.
//!
//! Invariant: `mma_warp` is given the fragments of all 32 lanes of one
//! warp; it never panics on any values.

use super::value::to_f64;
use crate::kir::MmaShape;
use jaxon_ir::DType;

/// The `k` extent of a shape.
pub fn k_of(shape: MmaShape) -> usize {
    match shape {
        MmaShape::M16N8K16 => 16,
        MmaShape::M16N8K8Tf32 => 8,
    }
}

/// The (row, column) of `A` that lane `lane`'s fragment element `i` holds.
pub fn a_coord(shape: MmaShape, lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    match shape {
        MmaShape::M16N8K16 => {
            let row = g + if matches!(i, 2 | 3 | 6 | 7) { 8 } else { 0 };
            let col = t * 2 + (i & 1) + if i >= 4 { 8 } else { 0 };
            (row, col)
        }
        MmaShape::M16N8K8Tf32 => (g + 8 * (i & 1), t + if i >= 2 { 4 } else { 0 }),
    }
}

/// The (row `k`, column `n`) of `B` that lane `lane`'s element `i` holds.
pub fn b_coord(shape: MmaShape, lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    match shape {
        MmaShape::M16N8K16 => (t * 2 + (i & 1) + if i >= 2 { 8 } else { 0 }, g),
        MmaShape::M16N8K8Tf32 => (t + 4 * i, g),
    }
}

/// The (row, column) of `C`/`D` that lane `lane`'s element `i` holds.
pub fn c_coord(lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    (g + if i >= 2 { 8 } else { 0 }, t * 2 + (i & 1))
}

/// The (row, column) of an 8×8 matrix that `ldmatrix` gives lane `lane`
/// as element `j` (0 or 1) of its register: `(lane / 4, 2·(lane % 4) + j)`,
/// transposed with `trans`.
pub fn ldmatrix_coord(lane: usize, j: usize, trans: bool) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    if trans {
        (2 * t + j, g)
    } else {
        (g, 2 * t + j)
    }
}

/// `x`'s bits rounded to tf32 (10 mantissa bits), to nearest with ties
/// away from zero, as `cvt.rna.tf32.f32`; infinities and NaN pass.
pub fn tf32_rna(bits: u32) -> u32 {
    if bits & 0x7f80_0000 == 0x7f80_0000 {
        return bits;
    }
    bits.wrapping_add(0x1000) & 0xffff_e000
}

/// An operand's value: `dtype` is `f16`/`bf16` for m16n8k16 and `f32`
/// (rounded to tf32) for m16n8k8.
fn operand(shape: MmaShape, dtype: DType, bits: u64) -> f64 {
    match shape {
        MmaShape::M16N8K16 => to_f64(dtype, bits),
        MmaShape::M16N8K8Tf32 => f64::from(f32::from_bits(tf32_rna(bits as u32))),
    }
}

/// One warp's `d = a · b + c`. `frag(which, i, lane)` gives element `i` of
/// lane `lane`'s fragment of `which` (`0` = a, `1` = b, `2` = c), in the
/// encoding of `dtype` (a, b) or `f32` (c); the result is `d[lane][i]` as
/// `f32` bits.
pub(crate) fn mma_warp(
    shape: MmaShape,
    dtype: DType,
    frag: impl Fn(usize, usize, usize) -> u64,
) -> [[u64; 4]; 32] {
    let k = k_of(shape);
    let (na, nb) = (k / 2, k / 4);
    let mut a = [[0f64; 16]; 16];
    let mut b = [[0f64; 8]; 16];
    let mut c = [[0f64; 8]; 16];
    for lane in 0..32 {
        for i in 0..na {
            let (r, col) = a_coord(shape, lane, i);
            a[r][col] = operand(shape, dtype, frag(0, i, lane));
        }
        for i in 0..nb {
            let (r, col) = b_coord(shape, lane, i);
            b[r][col] = operand(shape, dtype, frag(1, i, lane));
        }
        for i in 0..4 {
            let (r, col) = c_coord(lane, i);
            c[r][col] = f64::from(f32::from_bits(frag(2, i, lane) as u32));
        }
    }
    let mut d = [[0u64; 4]; 32];
    for (lane, out) in d.iter_mut().enumerate() {
        for (i, o) in out.iter_mut().enumerate() {
            let (r, col) = c_coord(lane, i);
            let dot: f64 = (0..k).map(|kk| a[r][kk] * b[kk][col]).sum();
            *o = u64::from(((dot + c[r][col]) as f32).to_bits());
        }
    }
    d
}
