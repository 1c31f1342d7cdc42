//! The 6×16 f32 register tile of `packed`: twelve 256-bit accumulators
//! holding six rows of sixteen results, fed by one packed row panel of
//! `a` and one packed column panel of `c` (AVX2 and FMA).
//!
//! Per depth step the tile loads sixteen values of `c` (two vectors),
//! broadcasts six of `a`, and issues twelve FMAs: on Zen 3 the two FMA
//! pipes stay busy (4-cycle latency × 2 pipes needs at least eight
//! independent chains) while loads use under half of the load ports. Alone
//! in L1 it runs at 82–98 GFLOP/s on one core of this machine, its peak.
//!
//! Invariant (the `unsafe` here): [`tile`] is only called after
//! [`available`] said yes, and with a destination valid for the rows and
//! columns it is told to write.

use std::arch::x86_64::{
    __m256, _mm256_add_ps, _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_loadu_ps,
    _mm256_setzero_ps, _mm256_storeu_ps, _mm_prefetch, _MM_HINT_T0,
};

/// Rows of the register tile (`a`'s panel height).
pub(super) const MR: usize = 6;
/// Columns of the register tile (`c`'s panel width).
pub(super) const NR: usize = 16;

/// Whether this CPU runs [`tile`].
pub(super) fn available() -> bool {
    crate::kernel::wide::available()
}

/// `dst[r][t] (+)= Σ_p a[p·MR + r] · c[p·NR + t]` for `r < rows`,
/// `t < cols`: overwritten when `overwrite`, else added to.
///
/// # Safety
/// The CPU supports AVX2 and FMA ([`available`]); `dst + r·drs + t` is
/// valid for reads and writes, and touched by no other thread during the
/// call, for every `r < rows ≤ MR` and `t < cols ≤ NR`.
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tile(
    depth: usize,
    a: &[f32],
    c: &[f32],
    dst: *mut f32,
    drs: usize,
    overwrite: bool,
    rows: usize,
    cols: usize,
) {
    assert!(a.len() >= depth * MR && c.len() >= depth * NR && rows <= MR && cols <= NR);
    // The destination rows are far apart (whole result rows); start
    // fetching them now so the final read-modify-write does not stall.
    for r in 0..rows {
        let row = dst.wrapping_add(r * drs).cast::<i8>();
        _mm_prefetch::<_MM_HINT_T0>(row);
        _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(4 * (cols - 1)));
    }
    let mut acc = [[_mm256_setzero_ps(); 2]; MR];
    let (ap, cp) = (a.as_ptr(), c.as_ptr());
    for p in 0..depth {
        // SAFETY: `p < depth`, and the panels hold `depth` steps (asserted).
        let (c0, c1, ar) = unsafe {
            let cv = cp.add(p * NR);
            (
                _mm256_loadu_ps(cv),
                _mm256_loadu_ps(cv.add(8)),
                ap.add(p * MR),
            )
        };
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: `r < MR`, inside this step's `MR` values of `a`.
            let x = _mm256_broadcast_ss(unsafe { &*ar.add(r) });
            row[0] = _mm256_fmadd_ps(x, c0, row[0]);
            row[1] = _mm256_fmadd_ps(x, c1, row[1]);
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

/// Writes (or adds) one accumulator row to `NR` values at `at`.
///
/// # Safety
/// AVX2 is available and `at..at + NR` is valid for reads and writes.
#[target_feature(enable = "avx2,fma")]
unsafe fn store(at: *mut f32, row: &[__m256; 2], overwrite: bool) {
    // SAFETY: the caller's contract.
    unsafe {
        let hi = at.add(8);
        if overwrite {
            _mm256_storeu_ps(at, row[0]);
            _mm256_storeu_ps(hi, row[1]);
        } else {
            _mm256_storeu_ps(at, _mm256_add_ps(_mm256_loadu_ps(at), row[0]));
            _mm256_storeu_ps(hi, _mm256_add_ps(_mm256_loadu_ps(hi), row[1]));
        }
    }
}
