//! GEMMs on several threads as blocks of rows or of columns, each one
//! single-threaded `gemm` call that rayon hands to a free thread, for the
//! large products `packed` does not run: off x86-64, without AVX2 and
//! FMA, thinner than its register tile, or with
//! `JAXON_CPU_PACKED_GEMM=0`. The numbers below are f32 `gemm` ones.
//!
//! `gemm`'s own threading shares packed panels between its threads and
//! scales less well on two cores for the largest products (2048³: 118–143
//! GFLOP/s against 120–149 in blocks, interleaved runs). A block packs its
//! own copy of the operand it does not cut (`c` for a row block, `a` for a
//! column block), so the cut runs along the longer side of the result.
//!
//! Invariant (the `unsafe` below): column blocks write disjoint columns of
//! `dst`, checked whole against `gemm_raw`'s contract before any block
//! runs; row blocks are disjoint `&mut` chunks of `dst`.

use super::{gemm_raw, gemm_strided, Epi, GemmScalar, View};
use rayon::prelude::*;

/// Products of fewer multiply-adds keep `gemm`'s own threading. In
/// paired runs, blocks ran the MLP's 256×1024×1024-sized products 3–8%
/// slower per training step and 1024³ 2–9% slower than `gemm`'s shared
/// panels, and 2048³ 2–7% faster.
const SPLIT_MIN_WORK: usize = 1 << 31;

/// Blocks per thread, so a thread on a slowed core (these machines are
/// shared) takes fewer of them; each block packs its own operand copy.
const BLOCKS_PER_THREAD: usize = 2;

/// No block is narrower than this (rows or columns).
const MIN_BLOCK: usize = 64;

/// Blocks start at multiples of this many rows or columns, the size of
/// `gemm`'s widest f32 register tiles.
const BLOCK_ALIGN: usize = 16;

/// How a product is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
    /// Row blocks of `a` and `dst`, this many rows each.
    Rows(usize),
    /// Column blocks of `c` and `dst`, this many columns each.
    Cols(usize),
}

impl Cut {
    /// The cut of an `m×k · k×n` product on `threads` threads, or `None`
    /// when `gemm`'s own threading should run it.
    pub(super) fn choose(m: usize, k: usize, n: usize, threads: usize) -> Option<Cut> {
        let work = m.saturating_mul(k).saturating_mul(n);
        if threads < 2 || work < SPLIT_MIN_WORK || switched_off() {
            return None;
        }
        let side = |len: usize| {
            let blocks = (threads * BLOCKS_PER_THREAD).min(len / MIN_BLOCK);
            (blocks >= threads).then(|| len.div_ceil(blocks).next_multiple_of(BLOCK_ALIGN))
        };
        // Rows unless the result is much wider than tall: a row block packs
        // all of `c`, a column block all of `a`.
        if 2 * m >= n {
            side(m).map(Cut::Rows).or_else(|| side(n).map(Cut::Cols))
        } else {
            side(n).map(Cut::Cols).or_else(|| side(m).map(Cut::Rows))
        }
    }
}

/// `JAXON_CPU_GEMM_SPLIT=0` leaves every product to `gemm`'s threading,
/// for side-by-side timing.
fn switched_off() -> bool {
    std::env::var_os("JAXON_CPU_GEMM_SPLIT").is_some_and(|v| v == "0")
}

/// [`gemm_strided`] cut into single-threaded blocks on rayon's pool.
#[allow(clippy::too_many_arguments)]
pub(super) fn gemm_split<T: GemmScalar>(
    cut: Cut,
    m: usize,
    k: usize,
    n: usize,
    a: View<'_, T>,
    c: View<'_, T>,
    dst: &mut [T],
    drs: usize,
    acc: bool,
    epi: Epi<'_, T>,
) {
    let one = gemm::Parallelism::None;
    match cut {
        Cut::Rows(rows) => dst
            .par_chunks_mut(rows * drs)
            .with_max_len(1)
            .enumerate()
            .for_each(|(b, mine)| {
                let i0 = b * rows;
                if i0 < m {
                    let a = View {
                        data: &a.data[i0 * a.rs..],
                        ..a
                    };
                    gemm_strided(rows.min(m - i0), k, n, a, c, mine, drs, one, acc, epi)
                }
            }),
        Cut::Cols(cols) => {
            let d = View {
                data: &*dst,
                rs: drs,
                cs: 1,
            };
            // Rows at least `n` apart: blocks then write disjoint elements.
            let rows_apart = m <= 1 || drs >= n;
            assert!(rows_apart && a.covers(m, k) && c.covers(k, n) && d.covers(m, n));
            let base = SharedDst(dst.as_mut_ptr());
            (0..n.div_ceil(cols))
                .into_par_iter()
                .with_max_len(1)
                .for_each(|b| {
                    let j0 = b * cols;
                    let c = View {
                        data: &c.data[j0 * c.cs..],
                        ..c
                    };
                    // SAFETY: the whole product was checked against
                    // `gemm_raw`'s contract above; this block's columns
                    // `j0..j0 + w` of `dst` are written by no other block,
                    // and `dst` is a unique borrow distinct from `a`, `c`.
                    unsafe { gemm_raw(m, k, cols.min(n - j0), a, c, base.at(j0), drs, one, acc) }
                });
            // The epilogue after every block, over the whole result.
            epi.apply(m, n, dst, drs);
        }
    }
}

/// The destination of a GEMM whose blocks (here) or tiles (`packed`)
/// write disjoint parts of it from several threads.
pub(super) struct SharedDst<T>(pub(super) *mut T);

impl<T> SharedDst<T> {
    /// The address of the element `offset` elements past the start.
    pub(super) fn at(&self, offset: usize) -> *mut T {
        self.0.wrapping_add(offset)
    }
}

// SAFETY: its users write disjoint elements through it (the invariants of
// this module and of `packed`).
unsafe impl<T: Send> Send for SharedDst<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedDst<T> {}

#[cfg(test)]
mod tests {
    use super::super::test_values;
    use super::*;

    /// Row and column blocks (with a short last block) against a triple
    /// loop in f64, overwriting and accumulating, into a destination with
    /// padded rows: `packed` runs the large products the differential
    /// tests make on AVX2 machines, so the blocks are checked here.
    #[test]
    fn blocks_match_a_triple_loop() {
        let (m, k, n, drs) = (150, 37, 130, 133);
        let (av, cv) = (test_values(m * k, 1), test_values(k * n, 2));
        let start = test_values(m * drs, 3);
        let a = View {
            data: &av,
            rs: k,
            cs: 1,
        };
        let c = View {
            data: &cv,
            rs: 1,
            cs: k,
        };
        for cut in [Cut::Rows(64), Cut::Cols(48)] {
            for acc in [false, true] {
                let mut dst = start.clone();
                gemm_split(cut, m, k, n, a, c, &mut dst, drs, acc, Epi::NONE);
                for i in 0..m {
                    for j in 0..drs {
                        let before = start[i * drs + j];
                        let want = if j >= n {
                            before
                        } else {
                            let dot: f64 = (0..k).map(|p| av[i * k + p] * cv[j * k + p]).sum();
                            dot + if acc { before } else { 0.0 }
                        };
                        let got = dst[i * drs + j];
                        assert!(
                            (got - want).abs() <= 1e-12,
                            "{cut:?} acc={acc}: ({i},{j}) = {got}, want {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn cuts_follow_the_longer_side() {
        assert_eq!(Cut::choose(2048, 2048, 2048, 2), Some(Cut::Rows(512)));
        assert_eq!(Cut::choose(1024, 1024, 1024, 2), None);
        assert_eq!(Cut::choose(256, 8192, 1024, 2), Some(Cut::Cols(256)));
        assert_eq!(Cut::choose(100, 8192, 4096, 2), Some(Cut::Cols(1024)));
        assert_eq!(Cut::choose(256, 1024, 1024, 2), None);
        assert_eq!(Cut::choose(8192, 1 << 17, 2, 2), Some(Cut::Rows(2048)));
        assert_eq!(Cut::choose(100, 1 << 24, 2, 2), None);
        assert_eq!(Cut::choose(2048, 2048, 2048, 1), None);
    }
}
