//! `dot_general` on the host. f32 and f64 operands whose free and
//! contracting dimensions each flatten to one stride (every layout of a
//! matrix product, transposed or not) are read in place: each batch index
//! is one strided product, run by our packed GEMM (`packed`, on x86-64
//! with AVX2 or AVX-512, for products of at least 2^24 multiply-adds at
//! least one register tile tall and wide), by `direct` (opt-in: smaller
//! products whose `c` has contiguous rows, no operand copied) or else by
//! the `gemm` crate. Other
//! layouts are permuted into
//! `[batch, M, K]` and `[batch, K, N]` row-major copies first; integers use
//! a plain triple loop (with wrap-around like the interpreter). bf16 and
//! f16 products (`CastDot`'s) are packed from their bits by `bf16`, into
//! `vdpbf16ps` pair panels (AVX-512 BF16) or widened f32 panels, summed in
//! f32 and rounded once. A plan may
//! read an operand from inside a larger array (`with_operand_view`), add
//! its product to the destination (`dst += l·r`, `gemm`'s `read_dst`) and
//! write a 2-D result with a row stride (`with_out_row_stride`), and
//! apply an [`Epilogue`] (a bias along the columns, relu) to each result
//! after its whole sum: in the register tiles' final store for `packed`
//! and `direct`, as a pass right after the product otherwise; `fuse` and
//! `plan::epilogue` have the peepholes that use them.
//!
//! `unsafe` is confined to [`gemm_raw`] (`gemm::gemm` takes raw pointers
//! and strides), its callers [`gemm_strided`] and `split` (which check
//! its contract), `packed` and `bf16` (their panels' casts and their
//! tiles' writes), `microkernel` and `bf16_tile` (the register tiles'
//! intrinsics), each stating its
//! invariant, and to `DotPlan::run_raw`, which views the buffers
//! generated code passes as slices (their invariant: each pointer holds the
//! elements of its operand's type, see `runtime`). Invariant relied on by
//! `gemm_strided`: every address `base + p·rs + t·cs` of a matrix index
//! lies inside its slice (checked before the call), and `dst` does not
//! alias the operands (it is a distinct `&mut` slice).

#[cfg(target_arch = "x86_64")]
mod bf16;
#[cfg(target_arch = "x86_64")]
mod bf16_pack;
#[cfg(target_arch = "x86_64")]
mod bf16_tile;
#[cfg(target_arch = "x86_64")]
mod direct;
mod epilogue;
#[cfg(target_arch = "x86_64")]
mod microkernel;
#[cfg(target_arch = "x86_64")]
mod packed;
mod permute;
mod split;
mod views;

use epilogue::Epi;
pub(crate) use epilogue::Epilogue;
use permute::permuted;

use crate::error::run_error;
use crate::error::CpuError;
use jaxon_ir::primitive::DotDimensionNumbers;
use jaxon_ir::{DType, HostArray, IrError, Storage};

/// Whether [`DotPlan::run`] multiplies this dtype directly.
pub(crate) fn gemm_dtype(dt: DType) -> bool {
    !matches!(dt, DType::F16 | DType::BF16 | DType::Bool)
}

/// A resolved `dot_general` for static operand shapes.
#[derive(Clone, Debug)]
pub(crate) struct DotPlan {
    lhs_perm: Vec<usize>,
    rhs_perm: Vec<usize>,
    lhs_shape: Vec<usize>,
    rhs_shape: Vec<usize>,
    b: usize,
    m: usize,
    k: usize,
    n: usize,
    out_shape: Vec<usize>,
    dtype: DType,
    /// How to multiply the operands in place, when their free and
    /// contracting dimensions each flatten to one stride.
    strided: Option<Box<Strided>>,
    /// The result is added to what the destination holds (`o += l·r`,
    /// one GEMM pass, no product temporary): see `dot_fuse::fuse_accumulate`.
    pub(crate) accumulate: bool,
    /// The (2-D, unbatched) result's row stride in elements when it is
    /// written inside a wider array (`with_out_row_stride`).
    out_rs: Option<usize>,
    /// What the GEMM applies to each result as it stores it (a bias along
    /// the last axis, relu): see `plan::epilogue`.
    pub(crate) epilogue: Epilogue,
    /// How the operands are laid out (boxed: plans live in `Step`s).
    layout: Box<Layout>,
}

/// The operands' layout in memory.
#[derive(Clone, Debug)]
struct Layout {
    /// The dimension numbers (to re-plan operand views).
    dn: DotDimensionNumbers,
    /// Per operand: element strides (row-major unless it is a view).
    strides: [Vec<usize>; 2],
    /// Per operand: read in place inside a larger array (a static slice
    /// of it): the first element's offset and the elements of the array
    /// up to the slice's last one.
    views: [Option<(usize, usize)>; 2],
}

/// Operands read in place: per batch index, `A[p, t] = lhs[off_l + p·rs_a
/// + t·cs_a]` and `C[t, q] = rhs[off_r + t·rs_c + q·cs_c]` (element
/// strides), so transposed layouts (`xᵀ·g`, `g·Wᵀ`) need no copy.
#[derive(Clone, Debug)]
struct Strided {
    batch: Vec<usize>,
    lhs_batch_strides: Vec<usize>,
    rhs_batch_strides: Vec<usize>,
    rs_a: usize,
    cs_a: usize,
    rs_c: usize,
    cs_c: usize,
}

/// Row-major element strides of `shape`.
fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut st = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    st
}

/// The one stride that walks `dims` (in this order) as a single flattened
/// index, if there is one: each dimension's stride is the next one's times
/// its size. Size-1 dimensions never matter. An empty list walks nothing.
fn merged_stride(dims: &[usize], shape: &[usize], st: &[usize]) -> Option<usize> {
    let live: Vec<usize> = dims.iter().copied().filter(|&d| shape[d] != 1).collect();
    for w in live.windows(2) {
        if st[w[0]] != st[w[1]] * shape[w[1]] {
            return None;
        }
    }
    Some(live.last().map_or(1, |&d| st[d]))
}

impl Strided {
    #[allow(clippy::too_many_arguments)]
    fn new(
        ls: &[usize],
        rs: &[usize],
        dn: &DotDimensionNumbers,
        lfree: &[usize],
        rfree: &[usize],
        lst: &[usize],
        rst: &[usize],
    ) -> Option<Strided> {
        Some(Strided {
            batch: dn.lhs_batch.iter().map(|&d| ls[d]).collect(),
            lhs_batch_strides: dn.lhs_batch.iter().map(|&d| lst[d]).collect(),
            rhs_batch_strides: dn.rhs_batch.iter().map(|&d| rst[d]).collect(),
            rs_a: merged_stride(lfree, ls, lst)?,
            cs_a: merged_stride(&dn.lhs_contracting, ls, lst)?,
            rs_c: merged_stride(&dn.rhs_contracting, rs, rst)?,
            cs_c: merged_stride(rfree, rs, rst)?,
        })
    }

    /// The operands' element offsets of each batch index, in row-major
    /// batch order.
    fn batch_offsets(&self) -> Vec<(usize, usize)> {
        let n: usize = self.batch.iter().product();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; self.batch.len()];
        let (mut ol, mut or) = (0usize, 0usize);
        for _ in 0..n {
            out.push((ol, or));
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                ol += self.lhs_batch_strides[d];
                or += self.rhs_batch_strides[d];
                if idx[d] < self.batch[d] {
                    break;
                }
                ol -= self.lhs_batch_strides[d] * self.batch[d];
                or -= self.rhs_batch_strides[d] * self.batch[d];
                idx[d] = 0;
            }
        }
        out
    }
}

impl DotPlan {
    /// Resolves the dimension numbers for the given operand shapes.
    pub fn new(
        ls: &[usize],
        rs: &[usize],
        dn: &DotDimensionNumbers,
        dtype: DType,
    ) -> Result<DotPlan, CpuError> {
        let bad = || format!("dimension numbers {dn:?} do not fit shapes {ls:?} and {rs:?}");
        let in_range = |ds: &[usize], r: usize| ds.iter().all(|&d| d < r);
        if dn.lhs_batch.len() != dn.rhs_batch.len()
            || dn.lhs_contracting.len() != dn.rhs_contracting.len()
            || !in_range(&dn.lhs_batch, ls.len())
            || !in_range(&dn.lhs_contracting, ls.len())
            || !in_range(&dn.rhs_batch, rs.len())
            || !in_range(&dn.rhs_contracting, rs.len())
        {
            return Err(bad().into());
        }
        let same = |a: &[usize], b: &[usize]| a.iter().zip(b).all(|(&x, &y)| ls[x] == rs[y]);
        if !same(&dn.lhs_batch, &dn.rhs_batch) || !same(&dn.lhs_contracting, &dn.rhs_contracting) {
            return Err(bad().into());
        }
        let lfree: Vec<usize> = (0..ls.len())
            .filter(|d| !dn.lhs_batch.contains(d) && !dn.lhs_contracting.contains(d))
            .collect();
        let rfree: Vec<usize> = (0..rs.len())
            .filter(|d| !dn.rhs_batch.contains(d) && !dn.rhs_contracting.contains(d))
            .collect();
        let prod = |ds: &[usize], s: &[usize]| ds.iter().map(|&d| s[d]).product::<usize>();
        let lhs_perm: Vec<usize> = dn
            .lhs_batch
            .iter()
            .chain(&lfree)
            .chain(&dn.lhs_contracting)
            .copied()
            .collect();
        let rhs_perm: Vec<usize> = dn
            .rhs_batch
            .iter()
            .chain(&dn.rhs_contracting)
            .chain(&rfree)
            .copied()
            .collect();
        let out_shape = dn
            .lhs_batch
            .iter()
            .map(|&d| ls[d])
            .chain(lfree.iter().map(|&d| ls[d]))
            .chain(rfree.iter().map(|&d| rs[d]))
            .collect();
        let (lst, rst) = (row_major_strides(ls), row_major_strides(rs));
        let strided = Strided::new(ls, rs, dn, &lfree, &rfree, &lst, &rst).map(Box::new);
        Ok(DotPlan {
            accumulate: false,
            epilogue: Epilogue::default(),
            out_rs: None,
            layout: Box::new(Layout {
                dn: dn.clone(),
                strides: [lst, rst],
                views: [None, None],
            }),
            strided,
            lhs_perm,
            rhs_perm,
            lhs_shape: ls.to_vec(),
            rhs_shape: rs.to_vec(),
            b: prod(&dn.lhs_batch, ls),
            m: prod(&lfree, ls),
            k: prod(&dn.lhs_contracting, ls),
            n: prod(&rfree, rs),
            out_shape,
            dtype,
        })
    }

    /// Computes the product of the operands at `l` and `r` into `o`
    /// (called from generated code), then its epilogue, whose bias (when
    /// [`Epilogue::bias`]) is the `n` values at `bias`. The caller
    /// guarantees (see `runtime`) that the pointers hold the operand and
    /// result types of this plan, aligned, that `bias` holds `n` values of
    /// its dtype when the plan has a bias, and that `o` overlaps neither
    /// operand nor the bias.
    pub fn run_raw(
        &self,
        l: *const u8,
        r: *const u8,
        o: *mut u8,
        bias: *const u8,
        threads: usize,
    ) -> Result<(), IrError> {
        let (b, m, k, n) = (self.b, self.m, self.k, self.n);
        if self.epilogue.bias && bias.is_null() {
            return Err(run_error("internal error: a GEMM bias without its values"));
        }
        let identity = |p: &[usize]| p.iter().enumerate().all(|(i, &q)| i == q);
        let par = self.parallelism(threads);
        macro_rules! direct {
            ($t:ty) => {{
                // SAFETY: the caller's contract above: `b·m·k`, `b·k·n`
                // and `b·m·n` elements of this dtype, `o` unaliased.
                let (a, c, d) = unsafe {
                    (
                        std::slice::from_raw_parts(l.cast::<$t>(), b * m * k),
                        std::slice::from_raw_parts(r.cast::<$t>(), b * k * n),
                        std::slice::from_raw_parts_mut(o.cast::<$t>(), self.out_len()),
                    )
                };
                // SAFETY: the caller's contract: `n` values when a bias.
                let epi = unsafe { self.epi::<$t>(bias) };
                if m > 0 && n > 0 && k > 0 {
                    for i in 0..b {
                        let lhs = View {
                            data: &a[i * m * k..(i + 1) * m * k],
                            rs: k,
                            cs: 1,
                        };
                        let rhs = View {
                            data: &c[i * k * n..(i + 1) * k * n],
                            rs: n,
                            cs: 1,
                        };
                        let dst = &mut d[self.out_range(i)];
                        let drs = self.drs();
                        gemm_strided(m, k, n, lhs, rhs, dst, drs, par, self.accumulate, epi);
                    }
                } else {
                    self.empty_product(d, epi);
                }
                return Ok(());
            }};
        }
        if identity(&self.lhs_perm) && identity(&self.rhs_perm) && self.layout.views == [None, None]
        {
            match self.dtype {
                DType::F32 => direct!(f32),
                DType::F64 => direct!(f64),
                _ => {}
            }
        }
        if let Some(st) = &self.strided {
            macro_rules! in_place {
                ($t:ty) => {{
                    let [(vl, nl), (vr, nr)] = [(0, &self.lhs_shape), (1, &self.rhs_shape)]
                        .map(|(i, s)| self.layout.views[i].unwrap_or((0, s.iter().product())));
                    // SAFETY: the caller's contract above: the operands'
                    // element counts and `b·m·n` results, `o` unaliased.
                    let (a, c, d) = unsafe {
                        (
                            std::slice::from_raw_parts(l.cast::<$t>(), nl),
                            std::slice::from_raw_parts(r.cast::<$t>(), nr),
                            std::slice::from_raw_parts_mut(o.cast::<$t>(), self.out_len()),
                        )
                    };
                    // SAFETY: the caller's contract: `n` values when a bias.
                    let epi = unsafe { self.epi::<$t>(bias) };
                    if m == 0 || n == 0 || k == 0 {
                        self.empty_product(d, epi);
                        return Ok(());
                    }
                    for (i, (ol, or)) in st.batch_offsets().into_iter().enumerate() {
                        let lhs = View {
                            data: &a[vl + ol..],
                            rs: st.rs_a,
                            cs: st.cs_a,
                        };
                        let rhs = View {
                            data: &c[vr + or..],
                            rs: st.rs_c,
                            cs: st.cs_c,
                        };
                        let dst = &mut d[self.out_range(i)];
                        let drs = self.drs();
                        gemm_strided(m, k, n, lhs, rhs, dst, drs, par, self.accumulate, epi);
                    }
                    return Ok(());
                }};
            }
            match self.dtype {
                DType::F32 => in_place!(f32),
                DType::F64 => in_place!(f64),
                _ => {}
            }
        }
        if self.accumulate || self.out_rs.is_some() || self.layout.views != [None, None] {
            return Err(run_error(
                "internal error: accumulating dot_general without a direct GEMM",
            ));
        }
        // Other dtypes and permuted operands: through host arrays.
        // SAFETY: as above.
        let (la, ra) = unsafe {
            (
                crate::run::raw::read_array(l, self.dtype, &self.lhs_shape)?,
                crate::run::raw::read_array(r, self.dtype, &self.rhs_shape)?,
            )
        };
        let out = self.run(&la, &ra, threads)?;
        jaxon_ir::with_storage!(out.data(), v => {
            // SAFETY: as above: `o` has room for the `b·m·n` results.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), o.cast(), v.len()) }
        });
        macro_rules! finish {
            ($t:ty) => {{
                // SAFETY: as above: `b·m·n` results at `o`, unaliased, and
                // `n` bias values when the plan has a bias.
                let (d, epi) = unsafe {
                    (
                        std::slice::from_raw_parts_mut(o.cast::<$t>(), b * m * n),
                        self.epi::<$t>(bias),
                    )
                };
                epi.apply(b * m, n, d, n);
            }};
        }
        if !self.epilogue.is_none() {
            match self.dtype {
                DType::F32 => finish!(f32),
                DType::F64 => finish!(f64),
                _ => return Err(run_error("internal error: a GEMM epilogue on integers")),
            }
        }
        Ok(())
    }

    /// This plan with `epilogue` applied as each result is stored (see
    /// [`Epilogue`]); `bias_len` is the bias's length, which must be the
    /// product's column count `n`. `None` for a dtype without one (only
    /// f32 and f64 have it) or a plan that has one already.
    pub(crate) fn with_epilogue(
        &self,
        epilogue: Epilogue,
        bias_len: Option<usize>,
    ) -> Option<DotPlan> {
        let fits = matches!(self.dtype, DType::F32 | DType::F64)
            && self.epilogue.is_none()
            && !epilogue.is_none()
            && epilogue.bias == bias_len.is_some()
            && bias_len.is_none_or(|len| len == self.n);
        fits.then(|| DotPlan {
            epilogue,
            ..self.clone()
        })
    }

    fn parallelism(&self, threads: usize) -> gemm::Parallelism {
        let (m, k, n) = (self.m, self.k, self.n);
        if threads > 1 && m.saturating_mul(n).saturating_mul(k) >= Self::PARALLEL_MIN_WORK {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        }
    }

    /// Products of at least this many multiply-adds use `threads` threads.
    /// Smaller ones (a 32×256·256×256 RNN step is 2^21) take 30–60 µs on
    /// one core, and waking a second vCPU of these shared machines costs a
    /// good part of that, many times per loop: with the threshold at 2^18,
    /// `scan_rnn_grad` ran 1.05–1.29× JAX's speed, at 2^22 1.58–1.80×
    /// (`scan_rnn_fwd` 0.88–1.17× and 1.18–1.39×), in alternating runs.
    const PARALLEL_MIN_WORK: usize = 1 << 22;

    /// Computes the product, on up to `threads` threads when it is large.
    pub fn run(
        &self,
        lhs: &HostArray,
        rhs: &HostArray,
        threads: usize,
    ) -> Result<HostArray, IrError> {
        let lp = permuted(lhs, &self.lhs_perm)?;
        let rp = permuted(rhs, &self.rhs_perm)?;
        let (l, r) = (lp.as_ref().unwrap_or(lhs), rp.as_ref().unwrap_or(rhs));
        let (b, m, k, n) = (self.b, self.m, self.k, self.n);
        let zeros = jaxon_ir::memory::try_zeros("dot_general", self.dtype, &self.out_shape)?;
        let mut out = HostArray::new(self.out_shape.clone(), zeros)?;
        let par = self.parallelism(threads);
        macro_rules! float {
            ($a:expr, $c:expr, $o:expr) => {{
                if m > 0 && n > 0 && k > 0 {
                    for i in 0..b {
                        gemm_call(
                            m,
                            k,
                            n,
                            &$a[i * m * k..(i + 1) * m * k],
                            &$c[i * k * n..(i + 1) * k * n],
                            &mut $o[i * m * n..(i + 1) * m * n],
                            par,
                        );
                    }
                }
            }};
        }
        macro_rules! int {
            ($a:expr, $c:expr, $o:expr) => {{
                for i in 0..b {
                    let (a, c) = (&$a[i * m * k..], &$c[i * k * n..]);
                    let o = &mut $o[i * m * n..];
                    for p in 0..m {
                        for q in 0..n {
                            let mut acc = 0;
                            for t in 0..k {
                                acc = a[p * k + t].wrapping_mul(c[t * n + q]).wrapping_add(acc);
                            }
                            o[p * n + q] = acc;
                        }
                    }
                }
            }};
        }
        match (l.data(), r.data(), out.data_mut()) {
            (Storage::F32(a), Storage::F32(c), Storage::F32(o)) => float!(a, c, o),
            (Storage::F64(a), Storage::F64(c), Storage::F64(o)) => float!(a, c, o),
            (Storage::I8(a), Storage::I8(c), Storage::I8(o)) => int!(a, c, o),
            (Storage::I16(a), Storage::I16(c), Storage::I16(o)) => int!(a, c, o),
            (Storage::I32(a), Storage::I32(c), Storage::I32(o)) => int!(a, c, o),
            (Storage::I64(a), Storage::I64(c), Storage::I64(o)) => int!(a, c, o),
            (Storage::U8(a), Storage::U8(c), Storage::U8(o)) => int!(a, c, o),
            (Storage::U16(a), Storage::U16(c), Storage::U16(o)) => int!(a, c, o),
            (Storage::U32(a), Storage::U32(c), Storage::U32(o)) => int!(a, c, o),
            (Storage::U64(a), Storage::U64(c), Storage::U64(o)) => int!(a, c, o),
            _ => {
                return Err(IrError::UnsupportedDType {
                    primitive: "dot_general".into(),
                    dtype: self.dtype,
                })
            }
        }
        Ok(out)
    }
}

/// Element types `gemm` multiplies (and, on x86-64, our packed GEMM).
trait GemmScalar:
    Copy + Send + Sync + 'static + std::ops::Add<Output = Self> + PartialOrd + Default + Packable
{
    const ZERO: Self;
    const ONE: Self;
}
impl GemmScalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}
impl GemmScalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

/// Types with a register tile for `packed`.
#[cfg(target_arch = "x86_64")]
use microkernel::Tile as Packable;
/// Types with a register tile for `packed` (none off x86-64).
#[cfg(not(target_arch = "x86_64"))]
trait Packable {}
#[cfg(not(target_arch = "x86_64"))]
impl<T> Packable for T {}

/// Runs `p` with our own GEMM when this CPU has one and the product is
/// large enough; whether it did.
fn own_gemm<T: GemmScalar>(p: Product<'_, T>, dst: &mut [T], threads: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if packed::wanted::<T>(p.m, p.k, p.n) {
        packed::gemm(p, dst, threads);
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    if direct::wanted(&p) {
        direct::gemm(p, dst, threads);
        return true;
    }
    let _ = (p, dst, threads);
    false
}

/// Deterministic values in `[-1, 1)` that are not round numbers (xorshift),
/// for the GEMM tests.
#[cfg(test)]
fn test_values(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// A strided product `dst = a · c` (`dst += a · c` when `acc`) of
/// `a: m×k` and `c: k×n` into a destination whose rows are `drs` apart.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Product<'a, T> {
    m: usize,
    k: usize,
    n: usize,
    a: View<'a, T>,
    c: View<'a, T>,
    drs: usize,
    acc: bool,
    /// Applied to each result after its whole sum.
    epi: Epi<'a, T>,
}

#[cfg(target_arch = "x86_64")]
impl<T> Product<'_, T> {
    /// Whether every index the product reads or writes lies inside its
    /// operands and `dst`, and rows of `dst` are at least `n` apart (so
    /// tiles write disjoint elements): the contract of our own GEMMs.
    fn fits(&self, dst: &[T]) -> bool {
        let d = View {
            data: dst,
            rs: self.drs,
            cs: 1,
        };
        (self.m <= 1 || self.drs >= self.n)
            && self.a.covers(self.m, self.k)
            && self.c.covers(self.k, self.n)
            && d.covers(self.m, self.n)
            && self.epi.bias.is_none_or(|b| b.len() >= self.n)
    }
}

impl DotPlan {
    /// The product of an empty contraction (or of empty free dimensions)
    /// into `d`: zeros, or, when accumulating, the destination plus zero
    /// (as the unfused `x + 0` rounds `-0` to `+0`); only the result's
    /// elements when it lies in a wider array.
    fn empty_product<T: GemmScalar>(&self, d: &mut [T], epi: Epi<'_, T>) {
        for i in 0..self.b {
            for row in 0..self.m {
                let at = self.out_range(i).start + row * self.drs();
                for (j, v) in d[at..at + self.n].iter_mut().enumerate() {
                    let x = if self.accumulate {
                        *v + T::ZERO
                    } else {
                        T::ZERO
                    };
                    *v = epi.at(j, x);
                }
            }
        }
    }

    /// The epilogue with its bias values.
    ///
    /// # Safety
    /// When [`Epilogue::bias`], `bias` points at `n` values of `T`, not
    /// written during the lifetime chosen.
    unsafe fn epi<'b, T>(&self, bias: *const u8) -> Epi<'b, T> {
        Epi {
            // SAFETY: the caller's contract.
            bias: (self.epilogue.bias && !bias.is_null())
                .then(|| unsafe { std::slice::from_raw_parts(bias.cast::<T>(), self.n) }),
            relu: self.epilogue.relu,
        }
    }

    /// The destination's row stride in elements.
    fn drs(&self) -> usize {
        self.out_rs.unwrap_or(self.n)
    }

    /// Elements of the destination buffer the result spans.
    fn out_len(&self) -> usize {
        match self.out_rs {
            Some(rs) if self.m > 0 && self.n > 0 => (self.m - 1) * rs + self.n,
            Some(_) => 0,
            None => self.b * self.m * self.n,
        }
    }

    /// The destination elements of batch index `i`.
    fn out_range(&self, i: usize) -> std::ops::Range<usize> {
        match self.out_rs {
            Some(_) => 0..self.out_len(),
            None => i * self.m * self.n..(i + 1) * self.m * self.n,
        }
    }
}

/// A strided matrix inside a slice: element `(p, t)` is
/// `data[p·rs + t·cs]`.
#[derive(Clone, Copy)]
struct View<'a, T> {
    data: &'a [T],
    rs: usize,
    cs: usize,
}

impl<T> View<'_, T> {
    /// Whether every element of a `rows × cols` matrix lies in `data`.
    fn covers(&self, rows: usize, cols: usize) -> bool {
        rows == 0 || cols == 0 || (rows - 1) * self.rs + (cols - 1) * self.cs < self.data.len()
    }
}

/// `dst = a · c` (or `dst += a · c` when `acc`) for strided `a: m×k`,
/// `c: k×n` and `dst: m×n` with rows `drs` elements apart.
#[allow(clippy::too_many_arguments)]
fn gemm_strided<T: GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: View<'_, T>,
    c: View<'_, T>,
    dst: &mut [T],
    drs: usize,
    par: gemm::Parallelism,
    acc: bool,
    epi: Epi<'_, T>,
) {
    let threads = match par {
        gemm::Parallelism::Rayon(threads) => threads,
        gemm::Parallelism::None => 1,
    };
    let product = Product {
        m,
        k,
        n,
        a,
        c,
        drs,
        acc,
        epi,
    };
    if own_gemm(product, dst, threads) {
        return;
    }
    if let gemm::Parallelism::Rayon(threads) = par {
        if let Some(cut) = split::Cut::choose(m, k, n, threads) {
            return split::gemm_split(cut, m, k, n, a, c, dst, drs, acc, epi);
        }
    }
    let d = View {
        data: &*dst,
        rs: drs,
        cs: 1,
    };
    assert!(a.covers(m, k) && c.covers(k, n) && d.covers(m, n));
    // SAFETY: every address `gemm` forms lies in its slice (asserted
    // above); `dst` is a unique borrow distinct from `a` and `c`.
    unsafe { gemm_raw(m, k, n, a, c, dst.as_mut_ptr(), drs, par, acc) }
    // `gemm` stores its tiles itself: the epilogue follows, a pass over
    // the (small, still cached) result.
    epi.apply(m, n, dst, drs);
}

/// `gemm::gemm` on raw parts: `dst = a · c` (`+=` when `acc`).
///
/// # Safety
/// `a` covers `m×k`, `c` covers `k×n`, and `dst` is valid for writes of
/// every `dst + i·drs + j` (`i < m`, `j < n`), none of which another
/// thread touches during the call or which `a` or `c` reads.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_raw<T: GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: View<'_, T>,
    c: View<'_, T>,
    dst: *mut T,
    drs: usize,
    par: gemm::Parallelism,
    acc: bool,
) {
    // SAFETY: the caller's contract: every address `gemm` forms,
    // `base + p·rs + t·cs` for indices inside a matrix, is valid.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            drs as isize,
            acc,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            c.data.as_ptr(),
            c.cs as isize,
            c.rs as isize,
            if acc { T::ONE } else { T::ZERO },
            T::ONE,
            false,
            false,
            false,
            par,
        )
    }
}

/// `dst = a · c` for row-major `a: m×k`, `c: k×n`, `dst: m×n`.
#[allow(clippy::too_many_arguments)]
fn gemm_call<T: GemmScalar>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    c: &[T],
    dst: &mut [T],
    par: gemm::Parallelism,
) {
    let a = View {
        data: a,
        rs: k,
        cs: 1,
    };
    let c = View {
        data: c,
        rs: n,
        cs: 1,
    };
    gemm_strided(m, k, n, a, c, dst, n, par, false, Epi::NONE);
}
