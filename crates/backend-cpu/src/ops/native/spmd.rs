//! SPMD on the CPU devices of one process: `shard_map` and the mesh
//! collectives as native steps.
//!
//! [`ShardMapOp`] holds its body compiled once (`plan::spmd`) and runs one
//! instance of it per device of the mesh, each on its own thread inside
//! its device context (`jaxon_ir::spmd`: the split by `in_specs`, the
//! threads, the poisoning on failure and the assembly by `out_specs` are
//! the interpreter's code), with an equal share of the step's threads.
//!
//! A mesh larger than this process's devices spans the processes of the
//! registered group: each process runs its own devices' instances
//! (`jaxon_ir::spmd::shard_map_on`).
//!
//! [`MeshCollective`] exchanges through the communicator of the running
//! instance (shared memory; across processes its rounds all-gather with
//! the other processes, and every collective takes the generic path).
//! `psum` of f32/f64 on one process's mesh runs on the step's buffers
//! (`run_raw`): every device deposits the addresses of its operand and
//! result, sums its 1/n chunk of the group's operands (in group order, as
//! the interpreter does) and writes it into every group member's result,
//! then waits at a barrier; so each byte is read once and written once,
//! with no copies. Every other collective is `jaxon_ir::spmd::collective`
//! on copies (one exchange of the arrays). Outside a `shard_map` naming its
//! axes a collective is the interpreter's: a positional `psum` reduces, a
//! named axis is an error naming it.
//!
//! Invariants (the `unsafe` below): a device reads another's operand and
//! writes another's result only between the address exchange and the
//! barrier that follows it; both devices are inside the same step then,
//! so the buffers are alive, the operands are not written and the results
//! not read by their owners. Result ranges written by different devices
//! are disjoint (each writes its own chunk).

use super::{NativeOp, RawArg};
use crate::run::executable::CpuExecutable;
use jaxon_ir::primitive::{
    AllReduceParams, AxisRef, Collective, CollectiveOp, Mesh, PartitionSpec, Primitive,
};
use jaxon_ir::spmd::{context_for, Token};
use jaxon_ir::{DType, HostArray, IrError};
use std::sync::Arc;

/// A `shard_map` with its body compiled.
pub(crate) struct ShardMapOp {
    body: CpuExecutable,
    /// This process's devices (a larger mesh spans processes).
    devices: usize,
    /// The body's signature, the same on every process.
    sig: u64,
    mesh: Mesh,
    in_specs: Vec<PartitionSpec>,
    out_specs: Vec<PartitionSpec>,
}

impl std::fmt::Debug for ShardMapOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardMapOp")
            .field("mesh", &self.mesh)
            .field("in_specs", &self.in_specs)
            .field("out_specs", &self.out_specs)
            .finish_non_exhaustive()
    }
}

impl ShardMapOp {
    /// The op running `body` over `mesh`.
    pub(crate) fn new(
        body: CpuExecutable,
        devices: usize,
        sig: u64,
        mesh: Mesh,
        in_specs: Vec<PartitionSpec>,
        out_specs: Vec<PartitionSpec>,
    ) -> ShardMapOp {
        ShardMapOp {
            body,
            devices,
            sig,
            mesh,
            in_specs,
            out_specs,
        }
    }
}

impl NativeOp for ShardMapOp {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        // Each device gets an equal share of the threads; on one thread
        // per device no parallel region opens, and a device that opens one
        // never waits in it for another device (collectives run between
        // steps, on the device's own thread).
        let here = self.mesh.size().min(self.devices).max(1);
        let per_device = (threads / here).max(1);
        jaxon_ir::spmd::shard_map_on(
            &self.mesh,
            &self.in_specs,
            &self.out_specs,
            inputs,
            self.devices,
            self.sig,
            |mine| {
                let args: Vec<&HostArray> = mine.iter().collect();
                self.body
                    .run_threads(&args, per_device)?
                    .iter()
                    .map(|b| b.to_host())
                    .collect()
            },
        )
    }
}

/// A mesh collective.
#[derive(Debug)]
pub(crate) struct MeshCollective {
    c: Collective,
    /// The named axes of a `psum` that may run on the step's buffers.
    sum_axes: Option<Vec<String>>,
}

impl MeshCollective {
    /// The op of collective `c` on operands of shapes `ins`.
    pub(crate) fn new(c: &Collective, ins: &[Vec<usize>]) -> MeshCollective {
        let sum_axes = match c {
            Collective::AllReduce(AllReduceParams {
                op: CollectiveOp::Sum,
                axes,
            }) if ins.len() == 1 && !axes.is_empty() => axes
                .iter()
                .map(|a| match a {
                    AxisRef::Name(n) => Some(n.clone()),
                    AxisRef::Pos(_) => None,
                })
                .collect(),
            _ => None,
        };
        MeshCollective {
            c: c.clone(),
            sum_axes,
        }
    }
}

impl NativeOp for MeshCollective {
    fn run(&self, inputs: &[&HostArray], _threads: usize) -> Result<Vec<HostArray>, IrError> {
        let owned: Vec<HostArray> = inputs.iter().map(|a| (*a).clone()).collect();
        jaxon_ir::interp::ops::eval_op(&Primitive::Collective(self.c.clone()), &owned)
    }

    unsafe fn run_raw(
        &self,
        ins: &[RawArg<'_>],
        outs: &[RawArg<'_>],
    ) -> Option<Result<(), IrError>> {
        let axes = self.sum_axes.as_ref()?;
        let ([x], [y]) = (ins, outs) else {
            return None;
        };
        if x.dtype != y.dtype || x.shape != y.shape || !matches!(x.dtype, DType::F32 | DType::F64) {
            return None;
        }
        let refs: Vec<&str> = axes.iter().map(String::as_str).collect();
        // Outside a `shard_map` naming the axes: the generic path's error.
        let cx = context_for(&refs)?;
        if cx.comm.spans_processes() {
            // Addresses do not travel: the generic path exchanges arrays.
            return None;
        }
        let len: usize = x.shape.iter().product();
        // SAFETY: the caller's contract (`x` and `y` hold `len` elements of
        // their dtype, not aliasing); the module invariants for the peers'.
        Some(unsafe { psum_raw(&cx, axes, x.dtype, x.ptr, y.ptr, len) })
    }
}

/// What a device deposits for a `psum` on buffers.
struct SumBufs {
    dtype: DType,
    len: usize,
    src: usize,
    dst: usize,
}

/// Elements summed per block: the block's sum stays in L1 while it is
/// written to every result.
const BLOCK: usize = 4096;

/// A block of sums, aligned for vector loads and stores.
#[repr(C, align(64))]
struct Acc([u8; BLOCK * 8]);

/// `psum` over `axes` of `len` elements at `src` into `dst`: a
/// reduce-scatter into every group member's result.
///
/// # Safety
/// `src` and `dst` hold `len` elements of `dtype` and do not overlap; the
/// module invariants.
unsafe fn psum_raw(
    cx: &jaxon_ir::spmd::DeviceContext,
    axes: &[String],
    dtype: DType,
    src: *mut u8,
    dst: *mut u8,
    len: usize,
) -> Result<(), IrError> {
    let (ranks, me) = cx.group("psum", axes)?;
    let rank = cx.rank();
    let mine: Token = Arc::new(SumBufs {
        dtype,
        len,
        src: src as usize,
        dst: dst as usize,
    });
    let all = cx.comm.exchange_token(rank, mine)?;
    let mut group: Vec<&SumBufs> = Vec::with_capacity(ranks.len());
    let mut bad = None;
    for &r in &ranks {
        match all.get(r).and_then(|t| t.downcast_ref::<SumBufs>()) {
            Some(b) if b.dtype == dtype && b.len == len => group.push(b),
            _ => bad = Some(r),
        }
    }
    if let Some(r) = bad {
        let why =
            format!("psum: device {r} did not reach the same psum (dtype {dtype}, {len} elements)");
        cx.comm.poison(&why);
        return Err(IrError::Eval(why));
    }
    let g = group.len();
    let (lo, hi) = (me * len / g, (me + 1) * len / g);
    match dtype {
        // SAFETY: the function's contract: every member's buffers hold
        // `len` elements of `dtype`; the chunk `lo..hi` is this device's.
        DType::F32 => unsafe { sum_chunk::<f32>(&group, lo, hi) },
        // SAFETY: as above.
        DType::F64 => unsafe { sum_chunk::<f64>(&group, lo, hi) },
        _ => return Err(IrError::Eval(format!("psum: no buffer path for {dtype}"))),
    }
    cx.comm.barrier(rank)
}

/// Sums elements `lo..hi` of every member's operand, in group order, into
/// every member's result.
///
/// # Safety
/// Every member's `src` and `dst` hold at least `hi` elements of `T`, the
/// range `lo..hi` of the results is written by no one else meanwhile, and
/// no operand is written (module invariants).
unsafe fn sum_chunk<T: Lane>(group: &[&SumBufs], lo: usize, hi: usize) {
    let mut acc = Box::new(Acc([0; BLOCK * 8]));
    let es = std::mem::size_of::<T>();
    let mut start = lo;
    while start < hi {
        let n = BLOCK.min(hi - start);
        let acc = acc.0.as_mut_ptr();
        // Two members per pass, left to right: ((s0 + s1) + s2) + s3 ..
        for (k, pair) in group.chunks(2).enumerate() {
            // SAFETY: `start..start + n` lies in `lo..hi` (the contract);
            // `acc` holds `BLOCK` elements of at most 8 bytes.
            unsafe {
                let a = (pair[0].src as *const u8).add(start * es);
                let b = pair.get(1).map(|m| (m.src as *const u8).add(start * es));
                T::add_into(acc, a, b, n, k == 0)
            };
        }
        for m in group {
            // SAFETY: as above; results of different members are distinct
            // buffers.
            unsafe { stream_copy((m.dst as *mut u8).add(start * es), acc, n * es) };
        }
        start += n;
    }
    fence();
}

/// An element type with a vector sum.
trait Lane: Copy + std::ops::Add<Output = Self> {
    /// `acc[i] = (acc[i] + a[i]) + b[i]` for `n` elements, without the
    /// `acc[i]` term when `first`, without `b` when it is `None`.
    ///
    /// # Safety
    /// `acc` (aligned to 64), `a` and `b` hold `n` elements of `Self`.
    unsafe fn add_into(acc: *mut u8, a: *const u8, b: Option<*const u8>, n: usize, first: bool) {
        let (acc, a) = (acc.cast::<Self>(), a.cast::<Self>());
        let b = b.map(<*const u8>::cast::<Self>);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the function's contract.
        let mut i = unsafe { Self::add_vec(acc, a, b, n, first) };
        #[cfg(not(target_arch = "x86_64"))]
        let mut i = 0;
        while i < n {
            // SAFETY: `i < n`.
            unsafe {
                let mut v = *a.add(i);
                if !first {
                    v = *acc.add(i) + v;
                }
                if let Some(b) = b {
                    v = v + *b.add(i);
                }
                *acc.add(i) = v;
            }
            i += 1;
        }
    }

    /// [`Lane::add_into`] on whole 64-byte groups; returns how many
    /// elements it did.
    ///
    /// # Safety
    /// As [`Lane::add_into`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn add_vec(
        acc: *mut Self,
        a: *const Self,
        b: Option<*const Self>,
        n: usize,
        first: bool,
    ) -> usize;
}

/// The body of [`Lane::add_vec`] for one vector type: four 16-byte
/// vectors (64 bytes) per step, SSE/SSE2 (baseline on x86-64).
macro_rules! add_vec {
    ($t:ty, $lanes:expr, $load:ident, $loadu:ident, $add:ident, $store:ident) => {
        #[cfg(target_arch = "x86_64")]
        unsafe fn add_vec(
            acc: *mut $t,
            a: *const $t,
            b: Option<*const $t>,
            n: usize,
            first: bool,
        ) -> usize {
            use std::arch::x86_64::{$add, $load, $loadu, $store};
            let step = 4 * $lanes;
            let mut i = 0;
            while i + step <= n {
                // SAFETY: `i + step <= n`; `acc + i` is 16-aligned (`acc`
                // is 64-aligned and `i` a multiple of the lanes).
                unsafe {
                    let (p, q) = (acc.add(i), a.add(i));
                    let mut v0 = $loadu(q);
                    let mut v1 = $loadu(q.add($lanes));
                    let mut v2 = $loadu(q.add(2 * $lanes));
                    let mut v3 = $loadu(q.add(3 * $lanes));
                    if !first {
                        v0 = $add($load(p), v0);
                        v1 = $add($load(p.add($lanes)), v1);
                        v2 = $add($load(p.add(2 * $lanes)), v2);
                        v3 = $add($load(p.add(3 * $lanes)), v3);
                    }
                    if let Some(b) = b {
                        let r = b.add(i);
                        v0 = $add(v0, $loadu(r));
                        v1 = $add(v1, $loadu(r.add($lanes)));
                        v2 = $add(v2, $loadu(r.add(2 * $lanes)));
                        v3 = $add(v3, $loadu(r.add(3 * $lanes)));
                    }
                    $store(p, v0);
                    $store(p.add($lanes), v1);
                    $store(p.add(2 * $lanes), v2);
                    $store(p.add(3 * $lanes), v3);
                }
                i += step;
            }
            i
        }
    };
}

impl Lane for f32 {
    add_vec!(f32, 4, _mm_load_ps, _mm_loadu_ps, _mm_add_ps, _mm_store_ps);
}

impl Lane for f64 {
    add_vec!(f64, 2, _mm_load_pd, _mm_loadu_pd, _mm_add_pd, _mm_store_pd);
}

/// Copies `len` bytes from `src` to `dst` with non-temporal stores where
/// `dst` is 16-aligned (the result is not read again soon; streaming it
/// saves reading each line before writing it), plain ones at the edges.
///
/// # Safety
/// `src` holds `len` readable bytes, `dst` `len` writable ones, not
/// overlapping. Call [`fence`] before another thread reads `dst`.
unsafe fn stream_copy(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    let i = if !streaming() {
        0
    } else {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let head = dst.align_offset(16).min(len);
        // SAFETY: `head <= len`.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
        let mut i = head;
        while i + 64 <= len {
            // SAFETY: `i + 64 <= len`; `dst + i` is 16-aligned; SSE2 is
            // baseline on x86-64.
            unsafe {
                let (s, d) = (src.add(i).cast::<__m128i>(), dst.add(i).cast::<__m128i>());
                let (v0, v1) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
                let (v2, v3) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
                _mm_stream_si128(d, v0);
                _mm_stream_si128(d.add(1), v1);
                _mm_stream_si128(d.add(2), v2);
                _mm_stream_si128(d.add(3), v3);
            }
            i += 64;
        }
        while i + 16 <= len {
            // SAFETY: as above, one vector.
            unsafe {
                let v = _mm_loadu_si128(src.add(i).cast::<__m128i>());
                _mm_stream_si128(dst.add(i).cast::<__m128i>(), v);
            }
            i += 16;
        }
        i
    };
    #[cfg(not(target_arch = "x86_64"))]
    let i = 0;
    // SAFETY: `i <= len`.
    unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i) };
}

/// Whether results are written with non-temporal stores
/// (`JAXON_CPU_PSUM_STREAM=0` turns them off, for measuring).
fn streaming() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("JAXON_CPU_PSUM_STREAM").map_or(true, |v| v != "0"))
}

/// Orders this thread's non-temporal stores before its later stores (the
/// barrier's lock), so peers see the results.
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is baseline on x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}
