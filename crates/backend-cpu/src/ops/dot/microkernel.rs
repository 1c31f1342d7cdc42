//! The register tiles of `packed`, one family per instruction set, each
//! fed by one packed row panel of `a` (`mr` rows, depth-major) and one
//! packed column panel of `c` (`nr` columns, depth-major):
//!
//! | ISA | f32 tile | f64 tile | accumulators |
//! |---|---|---|---|
//! | AVX2 + FMA | 6×16 | 6×8 | 12 `ymm` of 16 |
//! | AVX-512 F | 12×32 | 12×16 | 24 `zmm` of 32 |
//!
//! Per depth step a tile loads its row of `c` (two vectors), broadcasts
//! `mr` values of `a`, and issues `2·mr` FMAs into independent chains.
//! Two FMA pipes of 4-cycle latency need at least eight chains; the AVX2
//! tile has 12 (two `ymm` registers left for `c`, one for the broadcast),
//! the AVX-512 tile 24 out of 32 registers, which also halves the loads
//! per FMA (14 per 24 FMAs against 8 per 12). Alone in L1 the AVX2 f32
//! tile ran at 82–98 GFLOP/s on one Zen 3 core, its peak.
//!
//! [`Kernel::choose`] picks the family of `isa::isa()` once; tests ask
//! for each family the CPU has with [`Kernel::at`].
//!
//! Invariant (the `unsafe` here): a [`Kernel`] is only constructed for an
//! instruction set that `isa` found on this CPU, and its tile is only
//! called with a destination valid for the rows and columns it is told to
//! write.

use super::Epi;
use crate::isa::{self, Isa};
use std::arch::x86_64::*;

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

/// A register tile: `dst[r][t] (+)= Σ_p a[p·mr + r] · c[p·crs + t]` for
/// `r < rows`, `t < cols`, overwritten when `overwrite`, else added to.
/// `c` is a packed panel (`crs = nr`) or, for `direct`, the rows of an
/// unpacked row-major operand (`crs` its row stride).
///
/// # Safety
/// The CPU supports the tile's instruction set; `a` holds `depth·mr`
/// values and `c` at least `(depth - 1)·crs + nr`; `dst + r·drs + t` is
/// valid for reads and writes, and touched by no other thread during the
/// call, for every `r < rows ≤ mr` and `t < cols ≤ nr`.
pub(super) type TileFn<T> = unsafe fn(
    depth: usize,
    a: &[T],
    c: &[T],
    crs: usize,
    dst: *mut T,
    drs: usize,
    overwrite: bool,
    rows: usize,
    cols: usize,
);

/// A [`TileFn`] that then applies the epilogue `epi` to each value as
/// it stores it (its bias from the tile's first column): a function of
/// its own, so the plain tile's code stays as it was (with the epilogue
/// compiled in, `matmul_1024` ran 2–3% slower on Zen 4, three A/B
/// batches, although its inner loop was the same).
///
/// # Safety
/// As [`TileFn`], and a bias holds at least `cols` values.
pub(super) type TileEpiFn<T> = for<'e> unsafe fn(
    depth: usize,
    a: &[T],
    c: &[T],
    crs: usize,
    dst: *mut T,
    drs: usize,
    overwrite: bool,
    rows: usize,
    cols: usize,
    epi: Epi<'e, T>,
);

/// A register tile reading `a` in place: as [`TileFn`] with `a`'s value
/// `(r, p)` at `a[r·ars + p·acs]` (`direct`: an unpacked operand).
///
/// # Safety
/// As [`TileFn`], with `a` holding index `(rows - 1)·ars + (depth - 1)·acs`.
pub(super) type StridedFn<T> = for<'e> unsafe fn(
    depth: usize,
    a: &[T],
    ars: usize,
    acs: usize,
    c: &[T],
    crs: usize,
    dst: *mut T,
    drs: usize,
    overwrite: bool,
    rows: usize,
    cols: usize,
    epi: Epi<'e, T>,
);

/// One register tile and its shape.
pub(super) struct Kernel<T> {
    /// Rows of the tile (`a`'s panel height).
    pub(super) mr: usize,
    /// Columns of the tile (`c`'s panel width): two vectors.
    pub(super) nr: usize,
    /// The instruction set it needs.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) isa: Isa,
    /// The tile itself.
    pub(super) tile: TileFn<T>,
    /// The tile with an epilogue.
    pub(super) tile_epi: TileEpiFn<T>,
    /// The same tile reading `a` in place.
    pub(super) strided: StridedFn<T>,
}

impl<T> Clone for Kernel<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Kernel<T> {}

/// An element type with register tiles.
pub(super) trait Tile:
    Copy + Send + Sync + Default + PartialOrd + std::ops::Add<Output = Self>
{
    /// The tile of family `level`, whatever the CPU has (unchecked).
    fn family(level: Isa) -> Option<Kernel<Self>>;
}

impl<T: Tile> Kernel<T> {
    #[cfg_attr(not(test), allow(dead_code))]
    /// The tile of `level`, if this CPU has that instruction set (the
    /// `JAXON_CPU_ISA` cap aside: tests run every family the CPU has).
    pub(super) fn at(level: Isa) -> Option<Kernel<T>> {
        (isa::detected() >= level)
            .then(|| T::family(level))
            .flatten()
    }

    /// The tile of `isa::gemm_isa()` (the widest `isa::isa()` allows, but
    /// `ymm` on CPUs with 256-bit FMA units), chosen once per type.
    pub(super) fn choose() -> Option<Kernel<T>> {
        match isa::gemm_isa() {
            Isa::Avx512 => T::family(Isa::Avx512),
            Isa::Avx2 => T::family(Isa::Avx2),
            Isa::Scalar => None,
        }
    }

    /// Runs the tile.
    ///
    /// # Safety
    /// As [`TileFn`], minus the instruction set (this kernel's invariant).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn run(
        &self,
        depth: usize,
        a: &[T],
        c: &[T],
        crs: usize,
        dst: *mut T,
        drs: usize,
        overwrite: bool,
        rows: usize,
        cols: usize,
        epi: Epi<'_, T>,
    ) {
        // SAFETY: the caller's contract; the kernel exists only for an
        // instruction set this CPU has.
        unsafe {
            if epi.bias.is_none() && !epi.relu {
                (self.tile)(depth, a, c, crs, dst, drs, overwrite, rows, cols)
            } else {
                (self.tile_epi)(depth, a, c, crs, dst, drs, overwrite, rows, cols, epi)
            }
        }
    }

    /// Runs the tile on an unpacked `a`.
    ///
    /// # Safety
    /// As [`StridedFn`], minus the instruction set.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn run_strided(
        &self,
        depth: usize,
        a: (&[T], usize, usize),
        c: &[T],
        crs: usize,
        dst: *mut T,
        drs: usize,
        overwrite: bool,
        rows: usize,
        cols: usize,
        epi: Epi<'_, T>,
    ) {
        let (a, ars, acs) = a;
        // SAFETY: as `run`.
        unsafe {
            (self.strided)(
                depth, a, ars, acs, c, crs, dst, drs, overwrite, rows, cols, epi,
            )
        }
    }
}

/// Defines one register-tile function: `$mr` rows of two vectors of
/// `$lanes` lanes, compiled with `$feature`.
macro_rules! register_tile {
    (
        $name:ident, $name_epi:ident, $strided:ident, $t:ty, $v:ty, $lanes:expr, $mr:expr, $feature:literal,
        $zero:ident, $load:ident, $bcast:expr, $fma:ident, $add:ident, $store:ident,
        $relu:ident
    ) => {
        /// # Safety
        /// As [`TileFn`], with this tile's instruction set.
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $feature)]
        unsafe fn $name(
            depth: usize,
            a: &[$t],
            c: &[$t],
            crs: usize,
            dst: *mut $t,
            drs: usize,
            overwrite: bool,
            rows: usize,
            cols: usize,
        ) {
            const MR: usize = $mr;
            assert!(a.len() >= depth * MR);
            // SAFETY: the packed panel holds `depth` steps of `MR` rows
            // (asserted); the rest is the caller's contract. The strides
            // are constants here, so the inlined loop is the packed one;
            // `EPI = false` folds the epilogue away.
            unsafe {
                $strided::<true, false>(
                    depth,
                    a,
                    1,
                    MR,
                    c,
                    crs,
                    dst,
                    drs,
                    overwrite,
                    rows,
                    cols,
                    Epi::NONE,
                )
            }
        }

        /// # Safety
        /// As [`TileEpiFn`], with this tile's instruction set.
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $feature)]
        unsafe fn $name_epi(
            depth: usize,
            a: &[$t],
            c: &[$t],
            crs: usize,
            dst: *mut $t,
            drs: usize,
            overwrite: bool,
            rows: usize,
            cols: usize,
            epi: Epi<'_, $t>,
        ) {
            const MR: usize = $mr;
            assert!(a.len() >= depth * MR);
            // SAFETY: as `$name`.
            unsafe {
                $strided::<true, true>(
                    depth, a, 1, MR, c, crs, dst, drs, overwrite, rows, cols, epi,
                )
            }
        }

        /// As [`StridedFn`], with this tile's instruction set; `PACKED`:
        /// `a` is a zero-padded panel (`ars = 1`, `acs = MR`), whose
        /// offsets are then constants; without `EPI`, `epi` is ignored
        /// (taken as `Epi::NONE`, so the epilogue's code folds away).
        ///
        /// # Safety
        /// As [`StridedFn`].
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn $strided<const PACKED: bool, const EPI: bool>(
            depth: usize,
            a: &[$t],
            ars: usize,
            acs: usize,
            c: &[$t],
            crs: usize,
            dst: *mut $t,
            drs: usize,
            overwrite: bool,
            rows: usize,
            cols: usize,
            epi: Epi<'_, $t>,
        ) {
            const MR: usize = $mr;
            const NR: usize = 2 * $lanes;
            let c_needs = depth.checked_sub(1).map_or(0, |d| d * crs + NR);
            let last_row = if PACKED {
                MR - 1
            } else {
                rows.saturating_sub(1)
            };
            let a_needs = match depth.checked_sub(1) {
                Some(p) => p * acs + last_row * ars + 1,
                None => 0,
            };
            assert!(
                a.len() >= a_needs && c.len() >= c_needs && rows <= MR && cols <= NR && rows > 0
            );
            let epi = if EPI { epi } else { Epi::NONE };
            assert!(epi.bias.is_none_or(|b| b.len() >= cols));
            // Unpacked, rows past `rows` repeat the last one (their sums
            // are never stored), so no read leaves `a`.
            let mut at = [0usize; MR];
            for (r, o) in at.iter_mut().enumerate() {
                *o = if PACKED { r } else { r.min(last_row) * ars };
            }
            // The destination rows are far apart (whole result rows);
            // start fetching them now so the final read-modify-write does
            // not stall.
            for r in 0..rows {
                let row = dst.wrapping_add(r * drs).cast::<i8>();
                _mm_prefetch::<_MM_HINT_T0>(row);
                let last = row.wrapping_add(std::mem::size_of::<$t>() * (cols - 1));
                _mm_prefetch::<_MM_HINT_T0>(last);
            }
            let mut acc = [[$zero(); 2]; MR];
            let (ap, cp) = (a.as_ptr(), c.as_ptr());
            for p in 0..depth {
                // SAFETY: `p < depth`: inside `c` (asserted).
                let (c0, c1, ar) = unsafe {
                    let cv = cp.add(p * crs);
                    ($load(cv), $load(cv.add($lanes)), ap.add(p * acs))
                };
                for (r, row) in acc.iter_mut().enumerate() {
                    // SAFETY: `at[r] ≤ (rows - 1)·ars`, inside `a`
                    // (asserted).
                    let x = $bcast(unsafe { *ar.add(at[r]) });
                    row[0] = $fma(x, c0, row[0]);
                    row[1] = $fma(x, c1, row[1]);
                }
            }
            /// Writes (or adds) one accumulator row to `NR` values, then
            /// adds the `NR` values at `bias` (unless null) and applies
            /// relu (when `relu`): the epilogue, while the row is in
            /// registers.
            ///
            /// # Safety
            /// The instruction set is available; `at..at + NR` is valid
            /// for reads and writes; `bias` is null or holds `NR` values.
            #[target_feature(enable = $feature)]
            unsafe fn store(
                at: *mut $t,
                row: &[$v; 2],
                overwrite: bool,
                bias: *const $t,
                relu: bool,
            ) {
                // SAFETY: the caller's contract.
                unsafe {
                    let hi = at.add($lanes);
                    let (mut lo_v, mut hi_v) = if overwrite {
                        (row[0], row[1])
                    } else {
                        ($add($load(at), row[0]), $add($load(hi), row[1]))
                    };
                    if !bias.is_null() {
                        lo_v = $add(lo_v, $load(bias));
                        hi_v = $add(hi_v, $load(bias.add($lanes)));
                    }
                    if relu {
                        lo_v = $relu(lo_v);
                        hi_v = $relu(hi_v);
                    }
                    $store(at, lo_v);
                    $store(hi, hi_v);
                }
            }
            if rows == MR && cols == NR {
                // `cols == NR`: a bias holds `NR` values (asserted).
                let bias = epi.bias.map_or(std::ptr::null(), |b| b.as_ptr());
                for (r, row) in acc.iter().enumerate() {
                    // SAFETY: the caller's contract, for all `MR × NR`
                    // entries.
                    unsafe { store(dst.add(r * drs), row, overwrite, bias, epi.relu) }
                }
            } else {
                let mut full = [<$t>::default(); MR * NR];
                for (r, row) in acc.iter().enumerate() {
                    // SAFETY: `full` has `MR × NR` entries.
                    unsafe {
                        store(
                            full.as_mut_ptr().add(r * NR),
                            row,
                            true,
                            std::ptr::null(),
                            false,
                        )
                    }
                }
                for r in 0..rows {
                    for t in 0..cols {
                        // SAFETY: the caller's contract, `r < rows`,
                        // `t < cols`.
                        let d = unsafe { &mut *dst.add(r * drs + t) };
                        let v = full[r * NR + t];
                        *d = epi.at(t, if overwrite { v } else { *d + v });
                    }
                }
            }
        }
    };
}

/// relu as the interpreter's `max(x, 0)`: lanes that are `> 0` or NaN
/// (`NLE_UQ`: not less-or-equal, true when unordered) keep `x`, bits and
/// all; the others (`-0` included) become `+0`.
#[target_feature(enable = "avx2,fma")]
fn relu_ymm_f32(x: __m256) -> __m256 {
    _mm256_and_ps(_mm256_cmp_ps::<_CMP_NLE_UQ>(x, _mm256_setzero_ps()), x)
}
/// As [`relu_ymm_f32`].
#[target_feature(enable = "avx2,fma")]
fn relu_ymm_f64(x: __m256d) -> __m256d {
    _mm256_and_pd(_mm256_cmp_pd::<_CMP_NLE_UQ>(x, _mm256_setzero_pd()), x)
}
/// As [`relu_ymm_f32`], with a mask register.
#[target_feature(enable = "avx512f")]
fn relu_zmm_f32(x: __m512) -> __m512 {
    _mm512_maskz_mov_ps(_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(x, _mm512_setzero_ps()), x)
}
/// As [`relu_zmm_f32`].
#[target_feature(enable = "avx512f")]
fn relu_zmm_f64(x: __m512d) -> __m512d {
    _mm512_maskz_mov_pd(_mm512_cmp_pd_mask::<_CMP_NLE_UQ>(x, _mm512_setzero_pd()), x)
}

/// Rows of the AVX2 tiles.
const MR_YMM: usize = 6;
/// Rows of the AVX-512 tiles.
const MR_ZMM: usize = 12;

register_tile!(
    ymm_f32,
    ymm_f32_epi,
    ymm_f32_strided,
    f32,
    __m256,
    8,
    MR_YMM,
    "avx2,fma",
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps,
    relu_ymm_f32
);
register_tile!(
    ymm_f64,
    ymm_f64_epi,
    ymm_f64_strided,
    f64,
    __m256d,
    4,
    MR_YMM,
    "avx2,fma",
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd,
    relu_ymm_f64
);
register_tile!(
    zmm_f32,
    zmm_f32_epi,
    zmm_f32_strided,
    f32,
    __m512,
    16,
    MR_ZMM,
    "avx512f",
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps,
    relu_zmm_f32
);
register_tile!(
    zmm_f64,
    zmm_f64_epi,
    zmm_f64_strided,
    f64,
    __m512d,
    8,
    MR_ZMM,
    "avx512f",
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd,
    relu_zmm_f64
);

/// One family's kernel: `mr` rows, two vectors of `lanes`.
fn kernel<T>(
    mr: usize,
    lanes: usize,
    isa: Isa,
    tile: (TileFn<T>, TileEpiFn<T>),
    strided: StridedFn<T>,
) -> Option<Kernel<T>> {
    Some(Kernel {
        mr,
        nr: 2 * lanes,
        isa,
        tile: tile.0,
        tile_epi: tile.1,
        strided,
    })
}

impl Tile for f32 {
    fn family(level: Isa) -> Option<Kernel<f32>> {
        match level {
            Isa::Avx512 => kernel(
                MR_ZMM,
                16,
                level,
                (zmm_f32, zmm_f32_epi),
                zmm_f32_strided::<false, true>,
            ),
            Isa::Avx2 => kernel(
                MR_YMM,
                8,
                level,
                (ymm_f32, ymm_f32_epi),
                ymm_f32_strided::<false, true>,
            ),
            Isa::Scalar => None,
        }
    }
}

impl Tile for f64 {
    fn family(level: Isa) -> Option<Kernel<f64>> {
        match level {
            Isa::Avx512 => kernel(
                MR_ZMM,
                8,
                level,
                (zmm_f64, zmm_f64_epi),
                zmm_f64_strided::<false, true>,
            ),
            Isa::Avx2 => kernel(
                MR_YMM,
                4,
                level,
                (ymm_f64, ymm_f64_epi),
                ymm_f64_strided::<false, true>,
            ),
            Isa::Scalar => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Special values a product or sum can take.
    const SPECIAL: [f64; 8] = [0.0, -0.0, 1.5, -1.5, f64::NAN, -f64::NAN, 1e-310, -1e-310];

    /// The vector relu of every family this CPU has matches `Epi::at`
    /// (the interpreter's `max(x, 0)`) bit for bit: NaN kept as it is,
    /// `-0`, negatives and negative subnormals to `+0`.
    #[test]
    fn vector_relu_is_the_interpreters_max() {
        let epi = Epi::<f64> {
            bias: None,
            relu: true,
        };
        let want: Vec<u64> = SPECIAL.iter().map(|&x| epi.at(0, x).to_bits()).collect();
        let want32: Vec<u32> = SPECIAL
            .iter()
            .map(|&x| {
                let e = Epi::<f32> {
                    bias: None,
                    relu: true,
                };
                e.at(0, x as f32).to_bits()
            })
            .collect();
        assert_eq!(want[1], 0, "relu(-0) is +0");
        assert!(f64::from_bits(want[4]).is_nan() && f64::from_bits(want[5]).is_nan());
        let mut f = [0f32; 16];
        let mut d = [0f64; 8];
        for (i, &x) in SPECIAL.iter().enumerate() {
            f[i] = x as f32;
            f[i + 8] = x as f32;
            d[i] = x;
        }
        for level in [Isa::Avx2, Isa::Avx512] {
            if isa::detected() < level {
                eprintln!("skipped: this CPU lacks {level}");
                continue;
            }
            let (mut gf, mut gd) = ([0f32; 16], [0f64; 8]);
            // SAFETY: the CPU has `level` (checked); every load and store
            // stays inside the 16- and 8-lane arrays.
            unsafe {
                match level {
                    Isa::Avx512 => {
                        _mm512_storeu_ps(
                            gf.as_mut_ptr(),
                            relu_zmm_f32(_mm512_loadu_ps(f.as_ptr())),
                        );
                        _mm512_storeu_pd(
                            gd.as_mut_ptr(),
                            relu_zmm_f64(_mm512_loadu_pd(d.as_ptr())),
                        );
                    }
                    Isa::Avx2 => {
                        for h in 0..2 {
                            let (src, dst) = (f.as_ptr().add(8 * h), gf.as_mut_ptr().add(8 * h));
                            _mm256_storeu_ps(dst, relu_ymm_f32(_mm256_loadu_ps(src)));
                            let (src, dst) = (d.as_ptr().add(4 * h), gd.as_mut_ptr().add(4 * h));
                            _mm256_storeu_pd(dst, relu_ymm_f64(_mm256_loadu_pd(src)));
                        }
                    }
                    Isa::Scalar => {}
                }
            }
            for i in 0..8 {
                assert_eq!(gd[i].to_bits(), want[i], "{level} f64 relu({})", SPECIAL[i]);
                assert_eq!(
                    gf[i].to_bits(),
                    want32[i],
                    "{level} f32 relu({})",
                    SPECIAL[i]
                );
                assert_eq!(
                    gf[i + 8].to_bits(),
                    want32[i],
                    "{level} f32 relu({})",
                    SPECIAL[i]
                );
            }
        }
    }
}
