//! bf16 and f16 `dot_general` without cast copies: both operands packed
//! straight from their half-precision bits into cache-sized panels,
//! multiplied into an f32 result, rounded once at the end (to nearest
//! even) unless the result is f32 (`preferred_element_type=f32`). This is
//! XLA's rule on CPU, and the interpreter's: products in f32, one
//! rounding.
//!
//! Two ways to run, chosen once per call ([`Format`]):
//! - `Pairs`: bf16 on AVX-512 BF16 (`isa::has_avx512_bf16`). Panels hold
//!   depth pairs (`u32`: even depth low, odd depth high, zero past an odd
//!   `k`), the 12×32 `vdpbf16ps` tile of `bf16_tile` multiplies them;
//!   about twice the f32 tile's multiply-adds per instruction. Its
//!   rounding differs slightly from an f32 loop (see `bf16_tile`).
//! - `Widen`: f16 anywhere, and bf16 below that level. Values are widened
//!   to f32 while packing (a shift for bf16, F16C for f16) and the f32
//!   register tile of `microkernel` (the `isa::isa()` family, AVX2 or
//!   AVX-512) multiplies them.
//!
//! The driver follows `packed`: chunks of at most [`CHUNK_MN`] rows and
//! columns and [`CHUNK_STEPS`] depth steps, packed in one parallel pass
//! into depth blocks of `kc` steps, then tiles handed out by
//! `share_ranges`. Operands are strided views (transposed or not); each
//! batch index is one product.
//!
//! Invariant (the `unsafe` below): every product is checked against
//! `View::covers` before it runs; tiles write disjoint rectangles of the
//! f32 result, a unique borrow distinct from the operands; a tile function
//! is only chosen for an instruction set `isa` found.

use super::bf16_pack::{narrow, pack_panels};
use super::bf16_tile;
use super::microkernel::Kernel;
use super::packed::{block_sizes, Schedule};
use super::split::SharedDst;
use super::{DotPlan, View};
use crate::run::sched::share_ranges;
use half::slice::HalfFloatSliceExt;
use jaxon_ir::{DType, HostArray, IrError, Storage};
use std::sync::{Mutex, PoisonError};

/// Rows and columns of a chunk.
const CHUNK_MN: usize = 4096;
/// Depth steps of a chunk (rounded down to a multiple of `kc`).
const CHUNK_STEPS: usize = 1024;
/// Panels packed by one work item.
const PANELS_PER_ITEM: usize = 8;

/// Which half-precision format the operands hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Half {
    Bf16,
    F16,
}

/// How a product's panels are built and multiplied.
#[derive(Clone, Copy)]
pub(super) enum Format {
    /// bf16 depth pairs and the `vdpbf16ps` tile.
    Pairs,
    /// Values widened to f32 and the f32 tile `.0`.
    Widen(Kernel<f32>, Half),
}

impl Format {
    /// The format for `half` operands on this machine (`JAXON_CPU_ISA`
    /// included), if any.
    fn chosen(half: Half) -> Option<Format> {
        if half == Half::Bf16 && crate::isa::has_avx512_bf16() {
            return Some(Format::Pairs);
        }
        Kernel::<f32>::choose().map(|k| Format::Widen(k, half))
    }

    /// Rows and columns of the register tile.
    fn tile_shape(self) -> (usize, usize) {
        match self {
            Format::Pairs => (bf16_tile::MR, bf16_tile::NR),
            Format::Widen(k, _) => (k.mr, k.nr),
        }
    }

    /// Depth values per packed step.
    fn step(self) -> usize {
        match self {
            Format::Pairs => 2,
            Format::Widen(..) => 1,
        }
    }
}

/// Block sizes, in packed steps of 4 bytes per lane, from the caches by
/// `packed::block_sizes` (the f32 GEMM's rules).
#[derive(Clone, Copy)]
struct Blocking {
    format: Format,
    mr: usize,
    nr: usize,
    kc: usize,
    tile_m: usize,
    tile_n: usize,
    chunk: usize,
}

impl Blocking {
    fn new(format: Format, caches: crate::isa::Caches) -> Blocking {
        let (mr, nr) = format.tile_shape();
        let (kc, tile_m, tile_n) = block_sizes(mr, nr, 4, caches);
        Blocking {
            format,
            mr,
            nr,
            kc,
            tile_m,
            tile_n,
            chunk: CHUNK_STEPS.max(kc) / kc * kc,
        }
    }
}

/// `JAXON_CPU_HALF_GEMM=0` (or `JAXON_CPU_PACKED_GEMM=0`, which sends
/// f32 products to `gemm`) sends half-precision products back to the cast
/// path, for side-by-side timing.
fn switched_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| {
        ["JAXON_CPU_HALF_GEMM", "JAXON_CPU_PACKED_GEMM"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| v == "0"))
    })
}

impl DotPlan {
    /// The product of bf16 or f16 operands (both of one format) as `out`
    /// (that format or f32), computed in f32 and rounded once; `None` when
    /// this path does not take them (other dtypes, operand views, empty
    /// products, a CPU or `JAXON_CPU_ISA` without a tile): the caller then
    /// casts.
    pub(crate) fn run_half(
        &self,
        lhs: &HostArray,
        rhs: &HostArray,
        out: DType,
        threads: usize,
    ) -> Option<Result<HostArray, IrError>> {
        let (a, c, half): (&[u16], &[u16], Half) = match (lhs.data(), rhs.data()) {
            (Storage::BF16(a), Storage::BF16(c)) => {
                (a.reinterpret_cast(), c.reinterpret_cast(), Half::Bf16)
            }
            (Storage::F16(a), Storage::F16(c)) => {
                (a.reinterpret_cast(), c.reinterpret_cast(), Half::F16)
            }
            _ => return None,
        };
        let st = self.strided.as_deref()?;
        let (b, m, k, n) = (self.b, self.m, self.k, self.n);
        if out != lhs.dtype() && out != DType::F32
            || self.accumulate
            || self.out_rs.is_some()
            || self.layout.views != [None, None]
            || m == 0
            || n == 0
            || k == 0
            || switched_off()
        {
            return None;
        }
        let blocking = Blocking::new(Format::chosen(half)?, crate::isa::caches());
        let threads = match self.parallelism(threads) {
            gemm::Parallelism::Rayon(t) => t,
            gemm::Parallelism::None => 1,
        };
        let len = b * m * n;
        let multiply = |d: &mut [f32]| {
            for (i, (ol, or)) in st.batch_offsets().into_iter().enumerate() {
                let av = View {
                    data: &a[ol..],
                    rs: st.rs_a,
                    cs: st.cs_a,
                };
                let cv = View {
                    data: &c[or..],
                    rs: st.rs_c,
                    cs: st.cs_c,
                };
                let dst = &mut d[i * m * n..(i + 1) * m * n];
                product(blocking, m, k, n, av, cv, dst, threads);
            }
        };
        let run = || -> Result<HostArray, IrError> {
            let mut data = jaxon_ir::memory::try_zeros("dot_general", out, &[len])?;
            match &mut data {
                Storage::F32(d) => multiply(d),
                Storage::BF16(h) => with_scratch(len, |d| {
                    multiply(d);
                    narrow(d, h.reinterpret_cast_mut(), Half::Bf16, threads);
                })?,
                Storage::F16(h) => with_scratch(len, |d| {
                    multiply(d);
                    narrow(d, h.reinterpret_cast_mut(), Half::F16, threads);
                })?,
                _ => {
                    return Err(IrError::UnsupportedDType {
                        primitive: "dot_general".into(),
                        dtype: out,
                    })
                }
            }
            HostArray::new(self.out_shape.clone(), data)
        };
        Some(run())
    }
}

/// `dst = a · c` for `a: m×k`, `c: k×n` (half-precision bits, strided)
/// and a row-major f32 `dst: m×n`, on up to `threads` threads.
#[allow(clippy::too_many_arguments)]
fn product(
    b: Blocking,
    m: usize,
    k: usize,
    n: usize,
    a: View<'_, u16>,
    c: View<'_, u16>,
    dst: &mut [f32],
    threads: usize,
) {
    assert!(a.covers(m, k) && c.covers(k, n) && dst.len() >= m * n);
    let out = SharedDst(dst.as_mut_ptr());
    let steps = k.div_ceil(b.format.step());
    let a_len = m.min(CHUNK_MN).next_multiple_of(b.mr) * steps.min(b.chunk);
    let c_len = n.min(CHUNK_MN).next_multiple_of(b.nr) * steps.min(b.chunk);
    let ct = View {
        data: c.data,
        rs: c.cs,
        cs: c.rs,
    };
    with_panels(a_len, c_len, |pa, pc| {
        for i0 in (0..m).step_by(CHUNK_MN) {
            for j0 in (0..n).step_by(CHUNK_MN) {
                for s0 in (0..steps).step_by(b.chunk) {
                    let chunk = Chunk {
                        b,
                        i0,
                        j0,
                        s0,
                        m: CHUNK_MN.min(m - i0),
                        n: CHUNK_MN.min(n - j0),
                        steps: b.chunk.min(steps - s0),
                        k,
                        acc: s0 > 0,
                    };
                    chunk.pack(a, ct, pa, pc, threads);
                    chunk.multiply(pa, pc, &out, n, threads);
                }
            }
        }
    });
}

/// One bounded piece of the product: rows `i0..i0 + m`, columns
/// `j0..j0 + n`, depth steps `s0..s0 + steps` (of a product of depth
/// `k`), added to `dst` when `acc`.
#[derive(Clone, Copy)]
struct Chunk {
    b: Blocking,
    i0: usize,
    j0: usize,
    s0: usize,
    m: usize,
    n: usize,
    steps: usize,
    k: usize,
    acc: bool,
}

/// One packing work item: panels from lane `.1` of `a` (`A`) or `cᵀ`
/// (`C`), depth block at step `.2` of `.3` steps.
enum PackItem<'p> {
    A(&'p mut [u32], usize, usize, usize),
    C(&'p mut [u32], usize, usize, usize),
}

impl Chunk {
    /// The depth blocks: chunk-relative first step and steps.
    fn blocks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let kc = self.b.kc;
        (0..self.steps)
            .step_by(kc)
            .map(move |q| (q, kc.min(self.steps - q)))
    }

    /// Packs this chunk's `a` into `pa` and `cᵀ` (`c` with rows and
    /// columns swapped) into `pc`.
    fn pack(
        &self,
        a: View<'_, u16>,
        ct: View<'_, u16>,
        pa: &mut [u32],
        pc: &mut [u32],
        threads: usize,
    ) {
        let (mr, nr) = (self.b.mr, self.b.nr);
        let (mp, np) = (self.m.next_multiple_of(mr), self.n.next_multiple_of(nr));
        let mut items = Vec::new();
        let (mut rest_a, mut rest_c) = (pa, pc);
        for (q, kc) in self.blocks() {
            let (block_a, tail_a) = rest_a.split_at_mut(mp * kc);
            let (block_c, tail_c) = rest_c.split_at_mut(np * kc);
            (rest_a, rest_c) = (tail_a, tail_c);
            for (g, part) in block_a.chunks_mut(mr * kc * PANELS_PER_ITEM).enumerate() {
                items.push(PackItem::A(part, g * mr * PANELS_PER_ITEM, q, kc));
            }
            for (g, part) in block_c.chunks_mut(nr * kc * PANELS_PER_ITEM).enumerate() {
                items.push(PackItem::C(part, g * nr * PANELS_PER_ITEM, q, kc));
            }
        }
        let step = self.b.format.step();
        let run = |item: PackItem<'_>| {
            let (out, v, first, count, q, kc, w) = match item {
                PackItem::A(out, row, q, kc) => (out, a, self.i0 + row, self.m - row, q, kc, mr),
                PackItem::C(out, col, q, kc) => (out, ct, self.j0 + col, self.n - col, q, kc, nr),
            };
            let d0 = (self.s0 + q) * step;
            let d1 = ((self.s0 + q + kc) * step).min(self.k);
            pack_panels(self.b.format, out, v, first, count, d0, d1, kc, w);
        };
        let slots: Vec<Mutex<Option<PackItem<'_>>>> =
            items.into_iter().map(|i| Mutex::new(Some(i))).collect();
        share_ranges(slots.len(), 1, threads, |lo, hi| {
            for slot in &slots[lo..hi] {
                let item = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                item.map(run);
            }
        });
    }

    /// Multiplies the packed panels into `dst` (rows `drs` apart), tile by
    /// tile.
    fn multiply(&self, pa: &[u32], pc: &[u32], out: &SharedDst<f32>, drs: usize, threads: usize) {
        let b = self.b;
        let schedule = Schedule {
            i0: self.i0,
            j0: self.j0,
            m: self.m,
            n: self.n,
            depth: self.steps,
            acc: self.acc,
            mr: b.mr,
            nr: b.nr,
            kc: b.kc,
            tile_m: b.tile_m,
            tile_n: b.tile_n,
            drs,
        };
        schedule.run(pa, pc, threads, |t| {
            // SAFETY: the module invariant: the entries `(i0 + row + r,
            // j0 + col + t)` of `dst`, for `r` and `t` under the counts
            // passed, lie inside the checked product and belong to this
            // tile alone; each format's tile exists only for an
            // instruction set this CPU has.
            unsafe {
                match b.format {
                    Format::Pairs => bf16_tile::zmm_bf16(
                        t.kc,
                        t.a,
                        t.c,
                        out.at(t.at),
                        drs,
                        t.overwrite,
                        t.rows,
                        t.cols,
                    ),
                    Format::Widen(kernel, _) => kernel.run(
                        t.kc,
                        as_f32(t.a),
                        as_f32(t.c),
                        kernel.nr,
                        out.at(t.at),
                        drs,
                        t.overwrite,
                        t.rows,
                        t.cols,
                        super::Epi::NONE,
                    ),
                }
            }
        });
    }
}

/// An f32 buffer kept from call to call on the calling thread (the
/// result before rounding; fresh pages cost as they do for panels).
fn with_scratch(len: usize, f: impl FnOnce(&mut [f32])) -> Result<(), IrError> {
    thread_local! {
        static SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut buf = SCRATCH.take();
    if buf.len() < len {
        buf = match jaxon_ir::memory::try_zeros("dot_general", DType::F32, &[len])? {
            Storage::F32(v) => v,
            _ => return Err(crate::error::run_error("dot_general: f32 scratch")),
        };
    }
    f(&mut buf[..len]);
    if buf.len() <= KEEP_WORDS {
        SCRATCH.set(buf);
    }
    Ok(())
}

/// The panel words as the f32 values they hold (`Widen` stores f32 bits).
fn as_f32(words: &[u32]) -> &[f32] {
    // SAFETY: `u32` and `f32` have one size and alignment, and every bit
    // pattern is a value of either; the borrow is the same.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<f32>(), words.len()) }
}

/// Packed panels kept from call to call, on the calling thread (fresh
/// pages on every call cost `packed` 10–25%).
type Panels = [Vec<u32>; 2];

thread_local! {
    static PANELS: std::cell::Cell<Panels> = const { std::cell::Cell::new([Vec::new(), Vec::new()]) };
}

/// Panels kept past a call are at most this many words (24 MiB).
const KEEP_WORDS: usize = 6 << 20;

/// Runs `f` on panel buffers of at least `a_len` and `c_len` words, each
/// starting on a cache line.
fn with_panels(a_len: usize, c_len: usize, f: impl FnOnce(&mut [u32], &mut [u32])) {
    // Taken out of the cell, so a nested call finds it empty, not borrowed.
    let [mut pa, mut pc] = PANELS.take();
    for (buf, len) in [(&mut pa, a_len), (&mut pc, c_len)] {
        if buf.len() < len + 16 {
            *buf = vec![0; len + 16];
        }
    }
    // `align_offset` of a `u32` pointer is below 16 words: the slack.
    let (oa, oc) = (pa.as_ptr().align_offset(64), pc.as_ptr().align_offset(64));
    f(&mut pa[oa.min(16)..], &mut pc[oc.min(16)..]);
    if pa.len() + pc.len() <= KEEP_WORDS {
        PANELS.set([pa, pc]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_values as values;
    use super::*;
    use crate::isa::Isa;

    /// `(m, k, n)`, `a` transposed, `c` transposed.
    const CASES: [(usize, usize, usize, bool, bool); 8] = [
        (1, 1, 1, false, false),
        (13, 7, 33, false, false),
        (97, 301, 613, false, false),
        (61, 1501, 200, false, false),
        (200, 700, 130, true, false),
        (130, 521, 300, false, true),
        (37, 2100, 250, true, true),
        (12, 2, 32, true, true),
    ];

    /// A half format's rounding from f64 and widening to f64.
    type Conversions = (fn(f64) -> u16, fn(u16) -> f64);

    /// Every format this CPU has, for both halves.
    fn formats() -> Vec<Format> {
        let mut out = Vec::new();
        if crate::isa::detected() >= Isa::Avx512
            && std::arch::is_x86_feature_detected!("avx512bf16")
        {
            out.push(Format::Pairs);
        } else {
            eprintln!("skipped: this CPU lacks AVX-512 BF16");
        }
        for level in [Isa::Avx2, Isa::Avx512] {
            match Kernel::<f32>::at(level) {
                Some(k) => out.extend([Format::Widen(k, Half::Bf16), Format::Widen(k, Half::F16)]),
                None => eprintln!("skipped: this CPU lacks {level}"),
            }
        }
        out
    }

    /// Each case, each format, this machine's blocking and a tiny one (many
    /// depth blocks, chunks and tiles), one and two threads, against an f64
    /// loop: within `(k + 1)·2⁻²⁴·Σ|a·c|` (see `bf16_tile`).
    #[test]
    fn products_match_f64_loops() {
        let tiny = crate::isa::Caches {
            l1d: 4 << 10,
            l2: 64 << 10,
            l3: 0,
        };
        for format in formats() {
            let half = match format {
                Format::Pairs => Half::Bf16,
                Format::Widen(_, h) => h,
            };
            let (to_bits, value): Conversions = match half {
                Half::Bf16 => (
                    |x| half::bf16::from_f64(x).to_bits(),
                    |b| half::bf16::from_bits(b).to_f64(),
                ),
                Half::F16 => (
                    |x| half::f16::from_f64(x).to_bits(),
                    |b| half::f16::from_bits(b).to_f64(),
                ),
            };
            for caches in [crate::isa::caches(), tiny] {
                let b = Blocking::new(format, caches);
                for (m, k, n, ta, tc) in CASES {
                    let av: Vec<u16> = values(m * k, 1).into_iter().map(to_bits).collect();
                    let cv: Vec<u16> = values(k * n, 2).into_iter().map(to_bits).collect();
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
                    for threads in [1, 2] {
                        let mut dst = vec![f32::NAN; m * n];
                        product(b, m, k, n, a, c, &mut dst, threads);
                        for i in 0..m {
                            for j in 0..n {
                                let (mut want, mut mag) = (0.0, 0.0);
                                for p in 0..k {
                                    let x = value(av[i * ars + p * acs]);
                                    let y = value(cv[p * crs + j * ccs]);
                                    want += x * y;
                                    mag += (x * y).abs();
                                }
                                let got = f64::from(dst[i * n + j]);
                                let tol = (k + 1) as f64 * mag * 2f64.powi(-24);
                                assert!(
                                    (got - want).abs() <= tol,
                                    "{half:?} {} kc={}: ({m},{k},{n}) ta={ta} tc={tc} threads={threads}: ({i},{j}) = {got}, want {want}",
                                    b.mr,
                                    b.kc
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
