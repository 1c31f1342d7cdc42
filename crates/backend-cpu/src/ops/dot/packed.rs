//! f32 and f64 GEMM of our own for large products: both operands packed
//! into cache-sized panels in one parallel pass, then tiles of the result
//! handed out dynamically to up to `threads` threads (`share_ranges`, the
//! split kernels' scheduler), each tile a loop of `microkernel` calls (the
//! register tile of `isa::isa()`: 6×16/6×8 on AVX2, 12×32/12×16 on
//! AVX-512, f32/f64).
//!
//! Why not `gemm`'s threading: on a two-core Zen 3 it reached (f32)
//! 95–120 GFLOP/s at 1024³ where XLA reaches 140–170, although one core of
//! either runs at 80–90. Two things cost it: packing buffers that are
//! fresh pages on every call (two threads faulting at once serialise on
//! the address space), and fixed halves, so the call waits for the slower
//! of two shared vCPUs. Here the packed panels live in a per-thread cache
//! reused from call to call, and tiles are small enough (tens per 1024²
//! result) for a fast core to take more of them.
//!
//! Layout. A chunk of the product (at most [`CHUNK_MN`] rows and columns
//! and [`CHUNK_K`] of depth, so the panels stay bounded) is cut into depth
//! blocks of `kc`. In each block, `a` becomes row panels of `mr` rows
//! and `c` column panels of `nr` columns, each stored depth-major (all of
//! a panel's values of one depth step together), zero-padded past the
//! last row or column. A tile runs, for each depth block, its column
//! panels (each half of L1) against its row panels (the tile's block of
//! `a`, 3/16 of L2). [`Blocking`] derives `kc` and the tile's rows from the
//! cache sizes the machine reports. While one column panel runs,
//! the next is fetched into L1 a slice per register tile: the panels come
//! from L3 or memory, a fetch the hardware prefetcher does not start in
//! time. Packing reads each depth step of a contiguous operand as one run
//! and fetches the run a few steps ahead, for the same reason.
//!
//! Invariant (the `unsafe` below): the whole product is checked with
//! `Product::fits` before anything runs; tiles write disjoint rectangles of
//! `dst`, which is a unique borrow distinct from the operands.

use super::microkernel::{self, Kernel, Tile};
use super::split::SharedDst;
use super::{Epi, Product, View};
use crate::run::sched::share_ranges;
use std::sync::{Mutex, PoisonError};

/// Rows and columns of a chunk; bounds the packed panels to 16 MiB each.
const CHUNK_MN: usize = 4096;
/// Depth of a chunk, rounded down to a multiple of the depth block.
const CHUNK_K: usize = 1024;
/// Depth blocks are at least this deep: the register tile loads and
/// stores its accumulators once per block, and 256 steps keep that under
/// 1% of its FMAs. On Zen 4 with 12×32 `zmm` tiles, a 256-deep block (the
/// column panel then fills its 32 KiB L1) ran 1024³ at 197–201 GFLOP/s
/// against 183–188 at 128 deep (best of 3, alternating runs, two threads).
const MIN_KC: usize = 256;
/// Columns of a tile (rounded up to a multiple of `nr`): see
/// [`Blocking::tile_n`].
const TILE_N: usize = 256;
/// Rows of a tile at most, whatever L2 holds: tiles stay small enough
/// that two threads share even the MLP's 256-row products evenly (Zen 4,
/// 1 MiB L2, would otherwise take 384-row tiles).
const MAX_TILE_M: usize = 192;

/// How products of one element type are cut on this machine: the register
/// tile, and block sizes from the caches that `isa::caches` reports.
#[derive(Clone, Copy)]
struct Blocking<T> {
    kernel: Kernel<T>,
    /// Depth of a block: a column panel of `c` (`kc × nr`) fills half of
    /// L1, but at least [`MIN_KC`] deep (Zen 3, 32 KiB, AVX2 f32: 256, as
    /// tuned before; Zen 4 AVX-512: 256, where half of L1 would be 128).
    kc: usize,
    /// Rows of a tile (a multiple of `mr`): its block of `a` (`tile_m ×
    /// kc`) takes 3/16 of L2 while `c`'s panels pass through (Zen 3: 96
    /// in f32; there paired runs at 1024³ had 96 5–10% faster than 144
    /// and 72).
    tile_m: usize,
    /// Columns of a tile (a multiple of `nr`): 44 tiles per 1024² result
    /// and 12 for the MLP's 256×1024 ones, so a faster core takes more of
    /// them. Paired runs against 512 on Zen 3: MLP training step 12%
    /// faster, 2048³ 2%, 1024³ even.
    tile_n: usize,
    /// Depth of a chunk (a multiple of `kc`).
    chunk_k: usize,
}

/// The block sizes of an `mr × nr` register tile over packed steps of
/// `step_bytes` per lane, for `caches`: `(kc, tile_m, tile_n)` as
/// [`Blocking`] documents them (the bf16/f16 GEMM uses the same rules).
pub(super) fn block_sizes(
    mr: usize,
    nr: usize,
    step_bytes: usize,
    caches: crate::isa::Caches,
) -> (usize, usize, usize) {
    let kc = (caches.l1d / 2 / (nr * step_bytes)).clamp(MIN_KC, 512) / 16 * 16;
    let rows = (caches.l2 * 3 / 16 / (kc * step_bytes)).clamp(mr, MAX_TILE_M);
    (kc, rows / mr * mr, TILE_N.next_multiple_of(nr))
}

impl<T: Tile> Blocking<T> {
    /// The blocking of `kernel` for `caches`.
    fn new(kernel: Kernel<T>, caches: crate::isa::Caches) -> Blocking<T> {
        let (kc, tile_m, tile_n) =
            block_sizes(kernel.mr, kernel.nr, std::mem::size_of::<T>(), caches);
        Blocking {
            kernel,
            kc,
            tile_m,
            tile_n,
            chunk_k: CHUNK_K.max(kc) / kc * kc,
        }
    }

    /// The blocking of `isa::isa()`'s kernel on this machine.
    fn chosen() -> Option<Blocking<T>> {
        Kernel::choose().map(|k| Blocking::new(k, crate::isa::caches()))
    }
}

/// Panels packed by one work item.
const PANELS_PER_ITEM: usize = 8;

/// Products of fewer multiply-adds, or thinner than a register tile, go
/// to `gemm`, whose unpacked small kernels win there (at 256³ the two are
/// even; at 64³ `gemm` is 5× faster).
const MIN_WORK: usize = 1 << 24;

/// Whether [`gemm`] should run an `m×k · k×n` product of `T`.
pub(super) fn wanted<T: Tile>(m: usize, k: usize, n: usize) -> bool {
    Kernel::<T>::choose().is_some_and(|kernel| {
        m >= kernel.mr
            && n >= kernel.nr
            && m.saturating_mul(k).saturating_mul(n) >= MIN_WORK
            && !switched_off()
    })
}

/// `JAXON_CPU_PACKED_GEMM=0` leaves every product to `gemm`, for
/// side-by-side timing.
fn switched_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os("JAXON_CPU_PACKED_GEMM").is_some_and(|v| v == "0"))
}

/// Runs `p` into `dst` on up to `threads` threads. Needs [`wanted`] to
/// have said yes.
pub(super) fn gemm<T: Tile>(p: Product<'_, T>, dst: &mut [T], threads: usize) {
    let blocking = Blocking::chosen().expect("`wanted` found a register tile");
    gemm_with(blocking, p, dst, threads);
}

/// [`gemm`] with the given blocking (tests run every kernel the CPU has).
fn gemm_with<T: Tile>(b: Blocking<T>, p: Product<'_, T>, dst: &mut [T], threads: usize) {
    assert!(p.fits(dst));
    let Product {
        m,
        k,
        n,
        a,
        c,
        drs,
        acc,
        epi,
    } = p;
    let out = SharedDst(dst.as_mut_ptr());
    let (mr, nr, chunk_k) = (b.kernel.mr, b.kernel.nr, b.chunk_k);
    let a_len = m.min(CHUNK_MN).next_multiple_of(mr) * k.min(chunk_k);
    let c_len = n.min(CHUNK_MN).next_multiple_of(nr) * k.min(chunk_k);
    with_panels(a_len, c_len, |pa, pc| {
        for i0 in (0..m).step_by(CHUNK_MN) {
            for j0 in (0..n).step_by(CHUNK_MN) {
                for p0 in (0..k).step_by(chunk_k) {
                    let chunk = Chunk {
                        b,
                        i0,
                        j0,
                        p0,
                        m: CHUNK_MN.min(m - i0),
                        n: CHUNK_MN.min(n - j0),
                        k: chunk_k.min(k - p0),
                        acc: acc || p0 > 0,
                    };
                    // The epilogue goes with the last chunk's last block.
                    let epi = if p0 + chunk_k >= k { epi } else { Epi::NONE };
                    chunk.pack(a, c, pa, pc, threads);
                    chunk.multiply(pa, pc, &out, drs, threads, epi);
                }
            }
        }
    });
}

/// One bounded piece of the product: rows `i0..i0 + m`, columns
/// `j0..j0 + n`, depth `p0..p0 + k`, added to `dst` when `acc`.
#[derive(Clone, Copy)]
struct Chunk<T> {
    b: Blocking<T>,
    i0: usize,
    j0: usize,
    p0: usize,
    m: usize,
    n: usize,
    k: usize,
    acc: bool,
}

/// One work item of the packing pass: panels of `a` from chunk row `.1`
/// (`A`) or of `c` from chunk column `.1` (`C`), depth block at `.2` of
/// depth `.3`.
enum PackItem<'p, T> {
    A(&'p mut [T], usize, usize, usize),
    C(&'p mut [T], usize, usize, usize),
}

impl<T: Tile> Chunk<T> {
    /// The depth blocks: chunk-relative start and depth.
    fn blocks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let kc = self.b.kc;
        (0..self.k)
            .step_by(kc)
            .map(move |q| (q, kc.min(self.k - q)))
    }

    /// Packs this chunk's `a` into `pa` and `c` into `pc`.
    fn pack(&self, a: View<'_, T>, c: View<'_, T>, pa: &mut [T], pc: &mut [T], threads: usize) {
        let (mr, nr) = (self.b.kernel.mr, self.b.kernel.nr);
        let (mp, np) = (self.m.next_multiple_of(mr), self.n.next_multiple_of(nr));
        let mut items = Vec::new();
        let (mut rest_a, mut rest_c) = (pa, pc);
        for (q, kc) in self.blocks() {
            let (block_a, tail_a) = rest_a.split_at_mut(mp * kc);
            let (block_c, tail_c) = rest_c.split_at_mut(np * kc);
            (rest_a, rest_c) = (tail_a, tail_c);
            let step_a = mr * kc * PANELS_PER_ITEM;
            for (g, part) in block_a.chunks_mut(step_a).enumerate() {
                items.push(PackItem::A(part, g * mr * PANELS_PER_ITEM, q, kc));
            }
            let step_c = nr * kc * PANELS_PER_ITEM;
            for (g, part) in block_c.chunks_mut(step_c).enumerate() {
                items.push(PackItem::C(part, g * nr * PANELS_PER_ITEM, q, kc));
            }
        }
        let run = |item: PackItem<'_, T>| match item {
            PackItem::A(out, row, q, kc) => {
                pack_rows(out, a, self.i0 + row, self.m - row, self.p0 + q, kc, mr)
            }
            PackItem::C(out, col, q, kc) => {
                pack_cols(out, c, self.j0 + col, self.n - col, self.p0 + q, kc, nr)
            }
        };
        // Each item is taken once, by whichever thread reaches it.
        let slots: Vec<Mutex<Option<PackItem<'_, T>>>> =
            items.into_iter().map(|i| Mutex::new(Some(i))).collect();
        share_ranges(slots.len(), 1, threads, |lo, hi| {
            for slot in &slots[lo..hi] {
                let item = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                item.map(run);
            }
        });
    }

    /// Multiplies the packed panels into `dst`, tile by tile, applying
    /// `epi` (whose bias starts at column 0 of the product) in the last
    /// depth block's stores.
    fn multiply(
        &self,
        pa: &[T],
        pc: &[T],
        out: &SharedDst<T>,
        drs: usize,
        threads: usize,
        epi: Epi<'_, T>,
    ) {
        let kernel = self.b.kernel;
        let schedule = Schedule {
            i0: self.i0,
            j0: self.j0,
            m: self.m,
            n: self.n,
            depth: self.k,
            acc: self.acc,
            mr: kernel.mr,
            nr: kernel.nr,
            kc: self.b.kc,
            tile_m: self.b.tile_m,
            tile_n: self.b.tile_n,
            drs,
        };
        schedule.run(pa, pc, threads, |t| {
            let epi = if t.last { epi.at_col(t.col) } else { Epi::NONE };
            // SAFETY: the module invariant: the entries `(i0 + row + r,
            // j0 + col + t)` of `dst`, for `r` and `t` under the counts
            // passed, lie inside the checked product and belong to this
            // tile alone; a bias holds `n` values (`Product::fits`), so
            // `n - col ≥ cols` from the tile's column on.
            unsafe {
                kernel.run(
                    t.kc,
                    t.a,
                    t.c,
                    kernel.nr,
                    out.at(t.at),
                    drs,
                    t.overwrite,
                    t.rows,
                    t.cols,
                    epi,
                )
            }
        });
    }
}

/// How a chunk of packed panels is multiplied, for both packed GEMMs (f32
/// and f64 here, bf16 and f16 in `bf16`): tiles of `tile_m × tile_n`
/// results taken by up to `threads` threads from a shared counter; in
/// each, per depth block of `kc` steps, the column panels (`nr` wide)
/// against the tile's row panels (`mr` tall), the next column panel
/// fetched into L1 a slice per row panel while one runs (it comes from L3
/// or memory, which the hardware prefetcher does not start in time: +15%
/// at 1024³ and 2048³ on two Zen 3 threads, 14 of 16 paired runs).
pub(super) struct Schedule {
    /// The chunk's first row and column in `dst`.
    pub(super) i0: usize,
    pub(super) j0: usize,
    /// The chunk's rows, columns and depth steps.
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) depth: usize,
    /// Whether the first depth block adds to `dst`.
    pub(super) acc: bool,
    pub(super) mr: usize,
    pub(super) nr: usize,
    pub(super) kc: usize,
    pub(super) tile_m: usize,
    pub(super) tile_n: usize,
    /// `dst`'s row stride.
    pub(super) drs: usize,
}

/// One register-tile call of a [`Schedule`].
pub(super) struct TileCall<'p, P> {
    /// Depth steps of this block.
    pub(super) kc: usize,
    /// The row panel and the column panel, from their first value.
    pub(super) a: &'p [P],
    pub(super) c: &'p [P],
    /// The index in `dst` of the tile's first entry.
    pub(super) at: usize,
    /// Whether the tile overwrites `dst` (else adds to it).
    pub(super) overwrite: bool,
    /// The tile's rows (≤ `mr`) and columns (≤ `nr`).
    pub(super) rows: usize,
    pub(super) cols: usize,
    /// The tile's first column in `dst` (`j0` included).
    pub(super) col: usize,
    /// Whether this is the chunk's last depth block (where an epilogue
    /// belongs).
    pub(super) last: bool,
}

impl Schedule {
    /// Runs `call` for every register tile of the chunk whose panels, per
    /// depth block, are `pa` (`mr`-row panels, rows padded to `mr`) and
    /// `pc` (`nr`-column panels).
    pub(super) fn run<P: Sync>(
        &self,
        pa: &[P],
        pc: &[P],
        threads: usize,
        call: impl Fn(TileCall<'_, P>) + Sync,
    ) {
        let (mr, nr, kc) = (self.mr, self.nr, self.kc);
        let (mp, np) = (self.m.next_multiple_of(mr), self.n.next_multiple_of(nr));
        let tiles_n = self.n.div_ceil(self.tile_n);
        let tile = |t: usize| {
            let (r0, t0) = ((t / tiles_n) * self.tile_m, (t % tiles_n) * self.tile_n);
            let (r1, t1) = (
                (r0 + self.tile_m).min(self.m),
                (t0 + self.tile_n).min(self.n),
            );
            for q in (0..self.depth).step_by(kc) {
                let kc = kc.min(self.depth - q);
                let (block_a, block_c) = (&pa[q * mp..], &pc[q * np..]);
                let overwrite = q == 0 && !self.acc;
                let panels = (r1 - r0).div_ceil(mr);
                for col in (t0..t1).step_by(nr) {
                    let next = if col + nr < t1 {
                        &block_c[(col + nr) * kc..][..nr * kc]
                    } else {
                        &[]
                    };
                    let slice = next.len().div_ceil(panels);
                    for (j, row) in (r0..r1).step_by(mr).enumerate() {
                        let part = next.get(j * slice..).unwrap_or(&[]);
                        microkernel::prefetch(&part[..slice.min(part.len())]);
                        call(TileCall {
                            kc,
                            a: &block_a[row * kc..],
                            c: &block_c[col * kc..],
                            at: (self.i0 + row) * self.drs + self.j0 + col,
                            overwrite,
                            rows: mr.min(r1 - row),
                            cols: nr.min(t1 - col),
                            col: self.j0 + col,
                            last: q + kc >= self.depth,
                        });
                    }
                }
            }
        };
        let tiles = self.m.div_ceil(self.tile_m) * tiles_n;
        share_ranges(tiles, 1, threads, |lo, hi| (lo..hi).for_each(tile));
    }
}

/// Packs rows `i0..i0 + rows` (fewer than `out` has room for are
/// zero-padded), depth `p0..p0 + kc`, of `a` into `mr`-row panels.
fn pack_rows<T: Tile>(
    out: &mut [T],
    a: View<'_, T>,
    i0: usize,
    rows: usize,
    p0: usize,
    kc: usize,
    mr: usize,
) {
    pack_width(out, a, i0, rows, p0, kc, mr);
}

/// Packs columns `j0..j0 + cols` (zero-padded likewise), depth
/// `p0..p0 + kc`, of `c` into `nr`-column panels: the rows of `cᵀ`.
fn pack_cols<T: Tile>(
    out: &mut [T],
    c: View<'_, T>,
    j0: usize,
    cols: usize,
    p0: usize,
    kc: usize,
    nr: usize,
) {
    let ct = View {
        data: c.data,
        rs: c.cs,
        cs: c.rs,
    };
    pack_width(out, ct, j0, cols, p0, kc, nr);
}

/// [`pack_panels`] with the panel widths of the kernels as constants, so
/// each copy of a depth step is a few moves, not a call to `memcpy`.
pub(super) fn pack_width<T: Copy + Default>(
    out: &mut [T],
    v: View<'_, T>,
    first: usize,
    count: usize,
    p0: usize,
    kc: usize,
    w: usize,
) {
    match w {
        6 => pack_panels(out, v, first, count, p0, kc, 6),
        8 => pack_panels(out, v, first, count, p0, kc, 8),
        12 => pack_panels(out, v, first, count, p0, kc, 12),
        16 => pack_panels(out, v, first, count, p0, kc, 16),
        32 => pack_panels(out, v, first, count, p0, kc, 32),
        _ => pack_panels(out, v, first, count, p0, kc, w),
    }
}

/// Packs rows `first..first + count` of `v` (its columns are the depth),
/// depth `p0..p0 + kc`, into depth-major panels of `w` rows, zero-padding
/// the rows past `count` that `out` has room for. Inlined, so `w` is a
/// constant in each caller.
#[inline(always)]
fn pack_panels<T: Copy + Default>(
    out: &mut [T],
    v: View<'_, T>,
    first: usize,
    count: usize,
    p0: usize,
    kc: usize,
    w: usize,
) {
    let done = if v.rs == 1 {
        pack_contiguous(out, v.data, first + p0 * v.cs, v.cs, count / w, w, kc)
    } else {
        0
    };
    for (g, panel) in out.chunks_exact_mut(w * kc).enumerate().skip(done) {
        let r0 = first + g * w;
        let h = w.min(count.saturating_sub(g * w));
        if v.cs == 1 {
            // Each row is contiguous: read it once, scatter it by `w`,
            // fetching the next row (far away) meanwhile.
            for r in 0..w {
                if r + 1 < h {
                    microkernel::prefetch(&v.data[(r0 + r + 1) * v.rs + p0..][..kc]);
                }
                if r < h {
                    let row = &v.data[(r0 + r) * v.rs + p0..][..kc];
                    for (p, &x) in row.iter().enumerate() {
                        panel[p * w + r] = x;
                    }
                } else {
                    (0..kc).for_each(|p| panel[p * w + r] = T::default());
                }
            }
        } else {
            for (p, step) in panel.chunks_exact_mut(w).enumerate() {
                for (r, x) in step.iter_mut().enumerate() {
                    *x = if r < h {
                        v.data[(r0 + r) * v.rs + (p0 + p) * v.cs]
                    } else {
                        T::default()
                    };
                }
            }
        }
    }
}

/// Depth steps ahead whose values [`pack_contiguous`] fetches early.
const AHEAD: usize = 8;

/// Packs the first `whole` (at most as many as `out` holds) full panels of
/// width `w` whose values at one depth step are contiguous in `data`:
/// lane `t` of panel `g` at depth `p` is `data[base + p·step + g·w + t]`.
/// Returns how many it packed. Depth step by depth step, so each step is
/// one contiguous read, and the read `AHEAD` steps on (its rows are far
/// apart, past what the hardware prefetcher follows) is fetched early:
/// 4% on the MLP training step, 7 of 8 paired runs. Inlined, so `w` is a
/// constant and each copy a few moves, not a call to `memcpy`.
#[inline(always)]
fn pack_contiguous<T: Copy>(
    out: &mut [T],
    data: &[T],
    base: usize,
    step: usize,
    whole: usize,
    w: usize,
    kc: usize,
) -> usize {
    let whole = whole.min(out.len() / (w * kc));
    if whole == 0 {
        return 0;
    }
    let run = whole * w;
    for p in 0..kc {
        if p + AHEAD < kc {
            microkernel::prefetch(&data[base + (p + AHEAD) * step..][..run]);
        }
        let src = &data[base + p * step..][..run];
        for (g, lanes) in src.chunks_exact(w).enumerate() {
            out[g * w * kc + p * w..][..w].copy_from_slice(lanes);
        }
    }
    whole
}

/// 64 bytes of panel: the panels' alignment, so `c`'s depth steps (two
/// vectors) are whole cache lines.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Packed panels kept from call to call, on the calling thread: fresh
/// pages on every call cost 10–25% at 1024³ on two cores.
type Panels = [Vec<Line>; 2];

thread_local! {
    static PANELS: std::cell::Cell<Panels> = const { std::cell::Cell::new([Vec::new(), Vec::new()]) };
}

/// Panels kept past a call are at most this many lines (24 MiB; a 2048²
/// f32 product's are 16 MiB, larger ones are allocated afresh). Every
/// thread that ran a product keeps its panels until it exits.
const KEEP_LINES: usize = 24 << 14;

/// Runs `f` on panel buffers of at least `a_len` and `c_len` values.
pub(super) fn with_panels<T: Tile>(a_len: usize, c_len: usize, f: impl FnOnce(&mut [T], &mut [T])) {
    // Taken out of the cell, so a nested call (rayon may run another
    // product on this thread while it waits) finds it empty, not borrowed.
    let [mut pa, mut pc] = PANELS.take();
    let per_line = 64 / std::mem::size_of::<T>();
    for (buf, len) in [(&mut pa, a_len), (&mut pc, c_len)] {
        if buf.len() * per_line < len {
            *buf = vec![Line([0; 64]); len.div_ceil(per_line)];
        }
    }
    f(floats(&mut pa), floats(&mut pc));
    if pa.len() + pc.len() <= KEEP_LINES {
        PANELS.set([pa, pc]);
    }
}

/// The values of `lines`.
fn floats<T: Tile>(lines: &mut [Line]) -> &mut [T] {
    let per_line = 64 / std::mem::size_of::<T>();
    // SAFETY: `Line` is 64 initialised bytes aligned to 64, no padding;
    // `T` is f32 or f64 (the `Tile` types), whose alignment divides 64,
    // whose size divides 64 and for which every bit pattern is a value;
    // so `n` lines are `n · per_line` consecutive `T`s, borrowed mutably
    // for the lifetime of `lines`.
    unsafe {
        std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<T>(), lines.len() * per_line)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_values as values;
    use super::*;
    use crate::isa::Isa;

    /// `(m, k, n)`, `a` transposed, `c` transposed, extra row stride of
    /// `dst`, accumulate.
    type Case = (usize, usize, usize, bool, bool, usize, bool);

    const CASES: [Case; 9] = [
        (256, 256, 256, false, false, 0, false),
        (97, 301, 613, false, false, 0, false),
        (61, 1500, 200, false, false, 0, true),
        (200, 700, 130, true, false, 3, false),
        (130, 520, 300, false, true, 0, true),
        (37, 2100, 250, true, true, 5, true),
        (16, 40, 4150, false, false, 0, false),
        (4100, 20, 17, false, true, 0, false),
        (50, 1100, 40, false, true, 2, false),
    ];

    /// Every case on one and two threads against an f64 triple loop, with
    /// an error bound of `eps` per multiply-add, for every register tile
    /// this CPU has, blocked for this machine's caches and for tiny ones
    /// (many depth blocks and tiles per product).
    fn check<T: Tile + Into<f64>>(from: fn(f64) -> T, eps: f64) {
        let tiny = crate::isa::Caches {
            l1d: 4 << 10,
            l2: 64 << 10,
            l3: 0,
        };
        for level in [Isa::Avx2, Isa::Avx512] {
            let Some(kernel) = Kernel::<T>::at(level) else {
                eprintln!("skipped: this CPU lacks {level}");
                continue;
            };
            for caches in [crate::isa::caches(), tiny] {
                check_blocking(Blocking::new(kernel, caches), from, eps);
            }
        }
    }

    fn check_blocking<T: Tile + Into<f64>>(b: Blocking<T>, from: fn(f64) -> T, eps: f64) {
        for (m, k, n, ta, tc, pad, acc) in CASES {
            let (av, cv): (Vec<T>, Vec<T>) = (
                values(m * k, 1).into_iter().map(from).collect(),
                values(k * n, 2).into_iter().map(from).collect(),
            );
            let (ars, acs) = if ta { (1, m) } else { (k, 1) };
            let (crs, ccs) = if tc { (1, k) } else { (n, 1) };
            let a = View {
                data: &av,
                rs: ars,
                cs: acs,
            };
            let c = View {
                data: &cv,
                rs: crs,
                cs: ccs,
            };
            let drs = n + pad;
            let start: Vec<T> = values(m * drs, 3).into_iter().map(from).collect();
            for threads in [1, 2] {
                let mut dst = start.clone();
                let p = Product {
                    m,
                    k,
                    n,
                    a,
                    c,
                    drs,
                    acc,
                    epi: Epi::NONE,
                };
                gemm_with(b, p, &mut dst, threads);
                let isa = b.kernel.isa;
                for i in 0..m {
                    for j in 0..drs {
                        let got: f64 = dst[i * drs + j].into();
                        let before: f64 = start[i * drs + j].into();
                        if j >= n {
                            assert_eq!(got, before, "{isa}: padding ({i},{j}) written");
                            continue;
                        }
                        let mut want = if acc { before } else { 0.0 };
                        for p in 0..k {
                            let x: f64 = a.data[i * a.rs + p * a.cs].into();
                            let y: f64 = c.data[p * c.rs + j * c.cs].into();
                            want += x * y;
                        }
                        let tol = eps * k as f64 + eps;
                        assert!(
                            (got - want).abs() <= tol,
                            "{isa} kc={} tile_m={}: ({m},{k},{n}) ta={ta} tc={tc} acc={acc} threads={threads}: ({i},{j}) = {got}, want {want}",
                            b.kc,
                            b.tile_m
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn packed_products_match_f64_loops() {
        check::<f32>(|x| x as f32, 2e-7);
        check::<f64>(|x| x, 4e-16);
    }
}
