//! The AVX-512 BF16 register tile of `bf16` (12 rows × 32 columns, 24
//! `zmm` accumulators of f32), and the half-precision conversions its
//! packing uses.
//!
//! Panels hold depth *pairs*: a `u32` whose low half is the bf16 value at
//! an even depth and whose high half is the next depth's (zero past the
//! end). Per pair step the tile loads two vectors of `c` (32 columns × 2
//! depths), broadcasts each row's pair of `a`, and issues `vdpbf16ps`,
//! which adds both products of a lane's pair to its f32 accumulator.
//!
//! `vdpbf16ps` against an f32 FMA loop: the products of two bf16 values
//! are exact in f32, and each of the two additions rounds to nearest even
//! like an f32 FMA, so the error bound of an f32 accumulation holds
//! (`|err| ≤ k·2⁻²⁴·Σ|aᵢcᵢ|`), but the odd depth is added before the even
//! one, and the instruction ignores MXCSR: denormal inputs (bf16 values
//! below 2⁻¹²⁶) count as zero and denormal results flush to zero, an
//! absolute difference of at most `k·2⁻¹²⁶` per product, far below the
//! relative bound for any value that is not itself near the denormals.
//!
//! Invariant (the `unsafe` here): the tile is only called once
//! `isa::has_avx512_bf16()` said yes, with panels holding the steps it is
//! told to read and a destination valid for the rows and columns it is
//! told to write.

use std::arch::x86_64::*;

/// Rows of the tile.
pub(super) const MR: usize = 12;
/// Columns of the tile: two vectors of 16 f32 lanes.
pub(super) const NR: usize = 32;

/// `dst[r][t] (+)= Σ_s a[s·MR + r] · c[s·NR + t]` over `steps` depth
/// pairs with `vdpbf16ps`, for `r < rows`, `t < cols`, overwritten when
/// `overwrite`, else added to.
///
/// # Safety
/// The CPU has AVX-512 F and BF16; `dst + r·drs + t` is valid for reads
/// and writes, and touched by no other thread during the call, for every
/// `r < rows ≤ MR` and `t < cols ≤ NR`. (The panels' lengths are checked.)
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn zmm_bf16(
    steps: usize,
    a: &[u32],
    c: &[u32],
    dst: *mut f32,
    drs: usize,
    overwrite: bool,
    rows: usize,
    cols: usize,
) {
    assert!(a.len() >= steps * MR && c.len() >= steps * NR && rows <= MR && cols <= NR);
    for r in 0..rows {
        let row = dst.wrapping_add(r * drs).cast::<i8>();
        _mm_prefetch::<_MM_HINT_T0>(row);
        _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(4 * (cols - 1)));
    }
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    let (ap, cp) = (a.as_ptr(), c.as_ptr());
    for s in 0..steps {
        // SAFETY: `s < steps`, and the panels hold `steps` steps
        // (asserted); `__m512i` and `__m512bh` are both 64 bytes of lanes.
        let (c0, c1, ar) = unsafe {
            let cv = cp.add(s * NR);
            (
                bh(_mm512_loadu_si512(cv.cast())),
                bh(_mm512_loadu_si512(cv.add(16).cast())),
                ap.add(s * MR),
            )
        };
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: `r < MR`, inside this step's `MR` pairs of `a`.
            let x = bh(_mm512_set1_epi32(unsafe { *ar.add(r) } as i32));
            row[0] = _mm512_dpbf16_ps(row[0], x, c0);
            row[1] = _mm512_dpbf16_ps(row[1], x, c1);
        }
    }
    if rows == MR && cols == NR {
        for (r, row) in acc.iter().enumerate() {
            // SAFETY: the caller's contract, for all `MR × NR` entries.
            unsafe { store(dst.add(r * drs), row, overwrite) }
        }
    } else {
        let mut full = [0f32; MR * NR];
        for (r, row) in acc.iter().enumerate() {
            // SAFETY: `full` has `MR × NR` entries.
            unsafe { store(full.as_mut_ptr().add(r * NR), row, true) }
        }
        for r in 0..rows {
            for t in 0..cols {
                // SAFETY: the caller's contract, `r < rows`, `t < cols`.
                let d = unsafe { &mut *dst.add(r * drs + t) };
                let v = full[r * NR + t];
                *d = if overwrite { v } else { *d + v };
            }
        }
    }
}

/// The 32 bf16 lanes of `v`.
#[inline(always)]
fn bh(v: __m512i) -> __m512bh {
    // SAFETY: both are 64 bytes of plain lanes; every bit pattern is a
    // value of either.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}

/// Writes (or adds) one accumulator row to `NR` values.
///
/// # Safety
/// AVX-512 F is available; `at..at + NR` is valid for reads and writes.
#[target_feature(enable = "avx512f")]
unsafe fn store(at: *mut f32, row: &[__m512; 2], overwrite: bool) {
    // SAFETY: the caller's contract.
    unsafe {
        let hi = at.add(16);
        if overwrite {
            _mm512_storeu_ps(at, row[0]);
            _mm512_storeu_ps(hi, row[1]);
        } else {
            _mm512_storeu_ps(at, _mm512_add_ps(_mm512_loadu_ps(at), row[0]));
            _mm512_storeu_ps(hi, _mm512_add_ps(_mm512_loadu_ps(hi), row[1]));
        }
    }
}

/// bf16 bits widened to f32 (exact: the bits are f32's top half).
pub(super) fn widen_bf16(src: &[u16], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f32::from_bits(u32::from(s) << 16);
    }
}

/// f16 bits widened to f32 (exact; `half` uses F16C where the CPU has it).
pub(super) fn widen_f16(src: &[u16], dst: &mut [f32]) {
    use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
    let h: &[half::f16] = src.reinterpret_cast();
    h.convert_to_f32_slice(dst);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One tile against an f64 loop over the same pairs, full and
    /// partial, overwriting and accumulating.
    #[test]
    fn the_tile_matches_a_loop() {
        if !crate::isa::has_avx512_bf16() {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
            return;
        }
        let steps = 37;
        let v = super::super::test_values(steps * (MR + NR) * 2, 7);
        let bits: Vec<u16> = v
            .iter()
            .map(|&x| half::bf16::from_f64(x).to_bits())
            .collect();
        let val = |b: u16| half::bf16::from_bits(b).to_f64();
        let pair = |i: usize| u32::from(bits[2 * i]) | u32::from(bits[2 * i + 1]) << 16;
        let a: Vec<u32> = (0..steps * MR).map(pair).collect();
        let c: Vec<u32> = (steps * MR..steps * (MR + NR)).map(pair).collect();
        for (rows, cols, overwrite) in [
            (MR, NR, true),
            (MR, NR, false),
            (5, 19, true),
            (7, 3, false),
        ] {
            let drs = NR + 3;
            let mut dst: Vec<f32> = (0..MR * drs).map(|i| i as f32 * 0.25).collect();
            let start = dst.clone();
            // SAFETY: checked above; `dst` holds `MR` rows of `drs`.
            unsafe { zmm_bf16(steps, &a, &c, dst.as_mut_ptr(), drs, overwrite, rows, cols) };
            for r in 0..MR {
                for t in 0..drs {
                    let got = f64::from(dst[r * drs + t]);
                    let before = f64::from(start[r * drs + t]);
                    if r >= rows || t >= cols {
                        assert_eq!(got, before, "({r},{t}) written");
                        continue;
                    }
                    let mut want = if overwrite { 0.0 } else { before };
                    let mut mag = want.abs();
                    for s in 0..steps {
                        for h in 0..2 {
                            let x = val(bits[2 * (s * MR + r) + h]);
                            let y = val(bits[2 * (steps * MR + s * NR + t) + h]);
                            want += x * y;
                            mag += (x * y).abs();
                        }
                    }
                    let tol = (2 * steps + 2) as f64 * mag * f64::from(f32::EPSILON) / 2.0;
                    assert!((got - want).abs() <= tol, "({r},{t}) {got} vs {want}");
                }
            }
        }
    }
}
