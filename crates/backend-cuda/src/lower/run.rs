//! Running a [`Program`]: the host-side interpreter of its steps over any
//! [`Target`] (the simulator here, the GPU runtime in `backend.rs`), and the
//! conversions between `HostArray`s and device bytes.
//!
//! Invariants: steps run in order; a `Host` step reads its operands back,
//! calls the host function and writes its results before the next step;
//! a `Cond` index is clamped into the
//! branch range (a bool index is 0 or 1); a `While` body runs only after
//! its predicate read true; a `Scan` copies its stacked results out before
//! updating its carries; carry updates copy every source to its temporary
//! before writing any destination, and exchange buffers only after those
//! copies.

use super::plan::{BufId, CarryUpdate, KArg, Program, ScanSlice, ShardBody, Step};
use crate::blas::{model, GemmPlan};
use crate::error::{CudaError, Result};
use crate::kir::{Kernel, LaunchDims};
use crate::sim::{self, Arg, DeviceLimits, SimBuffer};
use jaxon_ir::primitive::{Callback, Collective};
use jaxon_ir::{DType, HostArray};

/// Where a plan runs: buffers of the program's table, kernels by index.
pub trait Target {
    /// Launches kernel `kernel` of the program.
    fn launch(&mut self, kernel: usize, dims: LaunchDims, args: &[KArg]) -> Result<()>;
    /// Runs a GEMM plan (with `bias` for a bias epilogue).
    fn gemm(
        &mut self,
        plan: &GemmPlan,
        a: BufId,
        b: BufId,
        out: BufId,
        bias: Option<BufId>,
    ) -> Result<()>;
    /// Copies `len` elements between buffers of one dtype.
    fn copy(
        &mut self,
        src: BufId,
        src_off: usize,
        dst: BufId,
        dst_off: usize,
        len: usize,
    ) -> Result<()>;
    /// Reads element 0 of a bool or integer buffer.
    fn read_i64(&mut self, b: BufId) -> Result<i64>;
    /// Reads a whole buffer to the host (little-endian elements).
    fn read(&mut self, b: BufId) -> Result<Vec<u8>>;
    /// Overwrites a whole buffer with `bytes` from the host.
    fn write(&mut self, b: BufId, bytes: &[u8]) -> Result<()>;
    /// Exchanges the memory behind two buffers of one type (a carry
    /// update without a copy; see `plan::CarryUpdate`).
    fn swap(&mut self, a: BufId, b: BufId) -> Result<()>;
    /// Runs a `shard_map` step (`spmd.rs`): `body` once per mesh device on
    /// the shards of `args`, the assembled results into `outs`.
    fn shard_map(
        &mut self,
        prog: &Program,
        body: &ShardBody,
        args: &[(BufId, Vec<usize>)],
        outs: &[(BufId, Vec<usize>)],
    ) -> Result<()>;
    /// Runs a collective step inside a `shard_map` instance.
    fn collective(
        &mut self,
        prog: &Program,
        op: &Collective,
        args: &[(BufId, Vec<usize>)],
        outs: &[(BufId, Vec<usize>)],
    ) -> Result<()>;
    /// The device's streaming multiprocessors (grid-stride launches are
    /// sized from it).
    fn sm_count(&self) -> u32;
}

/// Resident blocks per SM a grid-stride launch is sized for: 2048 threads
/// per SM (sm_80, sm_90) in blocks of `kernel::THREADS`.
pub const BLOCKS_PER_SM: u32 = 2048 / super::kernel::THREADS;

/// The launch of a grid-stride kernel (`Kernel::grid_stride`) shrunk to
/// `min(dims.grid[0], sms × BLOCKS_PER_SM)` blocks (at least one); any
/// other kernel's `dims` unchanged. The plan's `grid[0]` is the number of
/// blocks that gives each thread one trip of its loop, so small launches
/// stay small (the simulator runs no idle blocks) and large ones fill the
/// device once and stride.
pub fn sized(kernel: Option<&Kernel>, dims: LaunchDims, sms: u32) -> LaunchDims {
    match kernel {
        Some(k) if k.grid_stride => {
            let cap = sms.max(1).saturating_mul(BLOCKS_PER_SM);
            let mut d = dims;
            d.grid[0] = dims.grid[0].clamp(1, cap);
            d
        }
        _ => dims,
    }
}

fn callback_err(name: &str, message: String) -> CudaError {
    CudaError::Launch {
        kernel: name.to_string(),
        message,
    }
}

/// Runs a host callback step: operands read back, the host function
/// called (as the interpreter calls it), results checked and written.
fn host_call<T: Target>(
    t: &mut T,
    prog: &Program,
    call: &Callback,
    args: &[(BufId, Vec<usize>)],
    outs: &[(BufId, Vec<usize>)],
) -> Result<()> {
    use jaxon_ir::interp::ops::callback as cb;
    let name = call.name();
    let arrays = super::spmd::read_arrays(t, prog, name, args)?;
    let results = match call {
        Callback::DebugPrint(p) => cb::debug_print(p, &arrays).map(|()| Vec::new()),
        Callback::DebugCallback(p) => {
            cb::call_for_effect(&p.callback, &arrays).map(|()| Vec::new())
        }
        Callback::PureCallback(p) => cb::pure_callback(p, &arrays),
    }
    .map_err(|e| callback_err(name, e.to_string()))?;
    super::spmd::write_arrays(t, prog, name, &results, outs)
}

fn update<T: Target>(
    t: &mut T,
    carry: &[CarryUpdate],
    lens: &dyn Fn(BufId) -> usize,
) -> Result<()> {
    for c in carry {
        if let Some(temp) = c.temp {
            t.copy(c.src, 0, temp, 0, lens(temp))?;
        }
    }
    for c in carry {
        match c.temp {
            Some(temp) => t.copy(temp, 0, c.dst, 0, lens(temp))?,
            None => t.swap(c.src, c.dst)?,
        }
    }
    Ok(())
}

/// Runs `steps` of `prog` on `t`.
pub fn run_steps<T: Target>(t: &mut T, prog: &Program, steps: &[Step]) -> Result<()> {
    let lens = |b: BufId| prog.buffers.get(b.index()).map_or(0, |d| d.len);
    for s in steps {
        match s {
            Step::Launch { kernel, dims, args } => {
                let dims = sized(prog.kernels.get(*kernel), *dims, t.sm_count());
                t.launch(*kernel, dims, args)?
            }
            Step::Gemm {
                plan,
                a,
                b,
                out,
                bias,
            } => t.gemm(plan, *a, *b, *out, *bias)?,
            Step::Copy {
                src,
                src_offset,
                dst,
                dst_offset,
                len,
            } => t.copy(*src, *src_offset, *dst, *dst_offset, *len)?,
            Step::Host { call, args, outs } => host_call(t, prog, call, args, outs)?,
            Step::CheckStep { step, reverse } => {
                let s = t.read_i64(*step)?;
                jaxon_ir::interp::support::for_loop_trips(0, 0, s, *reverse)
                    .map_err(|e| CudaError::Eval(e.to_string()))?;
            }
            Step::ShardMap { body, args, outs } => t.shard_map(prog, body, args, outs)?,
            Step::Collective { op, args, outs } => t.collective(prog, op, args, outs)?,
            Step::Cond { index, branches } => {
                let i = t.read_i64(*index)?;
                let last = branches.len().saturating_sub(1) as i64;
                if let Some(b) = branches.get(i.clamp(0, last) as usize) {
                    run_steps(t, prog, b)?;
                }
            }
            Step::While {
                cond,
                pred,
                body,
                carry,
            } => loop {
                run_steps(t, prog, cond)?;
                if t.read_i64(*pred)? == 0 {
                    break;
                }
                run_steps(t, prog, body)?;
                update(t, carry, &lens)?;
            },
            Step::Scan {
                length,
                reverse,
                xs,
                body,
                carry,
                ys,
            } => {
                for it in 0..*length {
                    let i = if *reverse { length - 1 - it } else { it };
                    for ScanSlice { stacked, item, len } in xs {
                        if *len > 0 {
                            t.copy(*stacked, i * len, *item, 0, *len)?;
                        }
                    }
                    run_steps(t, prog, body)?;
                    // Results out before the carries move: a `y` may be a
                    // carry the body passed through.
                    for ScanSlice { stacked, item, len } in ys {
                        if *len > 0 {
                            t.copy(*item, 0, *stacked, i * len, *len)?;
                        }
                    }
                    update(t, carry, &lens)?;
                }
            }
        }
    }
    Ok(())
}

/// The simulator as a [`Target`].
pub struct SimTarget<'a> {
    /// The program's kernels.
    pub kernels: &'a [Kernel],
    /// One buffer per entry of the program's table.
    pub bufs: Vec<SimBuffer>,
    /// The simulated device.
    pub limits: DeviceLimits,
}

fn sim_err(what: String) -> CudaError {
    CudaError::Launch {
        kernel: "plan".into(),
        message: what,
    }
}

impl SimTarget<'_> {
    fn buf(&self, b: BufId) -> Result<&SimBuffer> {
        self.bufs
            .get(b.index())
            .ok_or_else(|| sim_err(format!("no buffer {}", b.0)))
    }
}

impl Target for SimTarget<'_> {
    fn sm_count(&self) -> u32 {
        self.limits.sm_count
    }

    fn launch(&mut self, kernel: usize, dims: LaunchDims, args: &[KArg]) -> Result<()> {
        let k = self
            .kernels
            .get(kernel)
            .ok_or_else(|| sim_err(format!("no kernel {kernel}")))?;
        let args: Vec<Arg> = args
            .iter()
            .map(|a| match a {
                KArg::Buffer(b) => Arg::Buffer(b.index()),
                KArg::Scalar(c) => Arg::Scalar(*c),
            })
            .collect();
        sim::launch(k, dims, &mut self.bufs, &args, &self.limits)?;
        Ok(())
    }

    fn gemm(
        &mut self,
        plan: &GemmPlan,
        a: BufId,
        b: BufId,
        out: BufId,
        bias: Option<BufId>,
    ) -> Result<()> {
        let av = self.buf(a)?.to_f64();
        let bv = self.buf(b)?.to_f64();
        let biv = match bias {
            Some(x) => self.buf(x)?.to_f64(),
            None => Vec::new(),
        };
        let mut ov = self.buf(out)?.to_f64();
        model::run(plan, &av, &bv, &biv, &mut ov)?;
        let dt = self.buf(out)?.dtype;
        self.bufs[out.index()] = SimBuffer::from_f64(dt, &ov);
        Ok(())
    }

    fn copy(
        &mut self,
        src: BufId,
        src_off: usize,
        dst: BufId,
        dst_off: usize,
        len: usize,
    ) -> Result<()> {
        let (s, d) = (self.buf(src)?, self.buf(dst)?);
        if s.dtype != d.dtype {
            return Err(sim_err(format!("copy from {} to {}", s.dtype, d.dtype)));
        }
        let w = s.dtype.size_bytes();
        if src_off + len > s.len() || dst_off + len > d.len() {
            return Err(sim_err(format!(
                "copy of {len} elements from {src_off} of {} to {dst_off} of {} is out of range",
                s.len(),
                d.len()
            )));
        }
        let bytes = s.bytes[src_off * w..(src_off + len) * w].to_vec();
        self.bufs[dst.index()].bytes[dst_off * w..(dst_off + len) * w].copy_from_slice(&bytes);
        Ok(())
    }

    fn read(&mut self, b: BufId) -> Result<Vec<u8>> {
        Ok(self.buf(b)?.bytes.clone())
    }

    fn write(&mut self, b: BufId, bytes: &[u8]) -> Result<()> {
        let slot = self
            .bufs
            .get_mut(b.index())
            .ok_or_else(|| sim_err(format!("no buffer {}", b.0)))?;
        if slot.bytes.len() != bytes.len() {
            return Err(sim_err(format!(
                "{} bytes written to a buffer of {}",
                bytes.len(),
                slot.bytes.len()
            )));
        }
        slot.bytes.copy_from_slice(bytes);
        Ok(())
    }

    fn swap(&mut self, a: BufId, b: BufId) -> Result<()> {
        let (x, y) = (self.buf(a)?, self.buf(b)?);
        if x.dtype != y.dtype || x.len() != y.len() {
            return Err(sim_err(format!(
                "swap of buffer {} ({} x{}) and {} ({} x{})",
                a.0,
                x.dtype,
                x.len(),
                b.0,
                y.dtype,
                y.len()
            )));
        }
        self.bufs.swap(a.index(), b.index());
        Ok(())
    }

    /// Each instance on the simulator (`run_simulated`), on its own thread.
    fn shard_map(
        &mut self,
        prog: &Program,
        body: &ShardBody,
        args: &[(BufId, Vec<usize>)],
        outs: &[(BufId, Vec<usize>)],
    ) -> Result<()> {
        super::spmd::run_shard_map(self, prog, body, args, outs, |_, shards| {
            run_simulated(&body.program, &shards)
        })
    }

    /// The interpreter's definition, through the instance's communicator.
    fn collective(
        &mut self,
        prog: &Program,
        op: &Collective,
        args: &[(BufId, Vec<usize>)],
        outs: &[(BufId, Vec<usize>)],
    ) -> Result<()> {
        super::spmd::host_collective(self, prog, op, args, outs)
    }

    fn read_i64(&mut self, b: BufId) -> Result<i64> {
        let v = self.buf(b)?.to_f64();
        v.first()
            .map(|x| *x as i64)
            .ok_or_else(|| sim_err(format!("buffer {} is empty", b.0)))
    }
}

/// A host array's elements as little-endian device bytes.
pub fn host_bytes(a: &HostArray) -> Vec<u8> {
    a.to_le_bytes()
}

/// Whether host array `a` fills a buffer of `dtype x len` (a `key<fry>`
/// array fills a `u32` buffer of two words per key, with the same bytes).
pub fn fills(a: &HostArray, dtype: DType, len: usize) -> bool {
    match a.dtype() {
        DType::KeyFry => dtype == DType::U32 && a.len().checked_mul(2) == Some(len),
        // Interleaved (real, imaginary) parts (`complex.rs`).
        DType::C64 | DType::C128 => {
            dtype == a.dtype().real_dtype() && a.len().checked_mul(2) == Some(len)
        }
        d => d == dtype && a.len() == len,
    }
}

/// The dtype result `i` of `prog` has on the host: its buffer's, or
/// `key<fry>` for keys.
pub fn output_dtype(prog: &Program, i: usize, buffer: DType) -> DType {
    prog.output_dtypes.get(i).copied().unwrap_or(buffer)
}

/// Device bytes (whole elements of `dtype`) as a host array of `shape`.
pub fn array_from_bytes(
    dtype: DType,
    shape: &[usize],
    bytes: &[u8],
) -> std::result::Result<HostArray, jaxon_ir::IrError> {
    // A complex array's bytes are its interleaved parts (`complex.rs`).
    HostArray::from_le_bytes(dtype, shape, bytes)
}

/// The element type of the device buffer that holds an array of `dtype`:
/// itself, two `u32` words per key (`u32` with twice the length), or
/// `None` for the complex dtypes, which stay on the host until a program
/// takes them (as interleaved parts, see [`fills`]).
pub fn buffer_dtype(dtype: DType) -> Option<DType> {
    match dtype {
        DType::C64 | DType::C128 => None,
        DType::KeyFry => Some(DType::U32),
        DType::Bool
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64
        | DType::F16
        | DType::BF16
        | DType::F32
        | DType::F64 => Some(dtype),
    }
}

/// Runs `prog` on the simulator with `args` (one per input).
pub fn run_simulated(prog: &Program, args: &[HostArray]) -> Result<Vec<HostArray>> {
    if args.len() != prog.inputs.len() {
        return Err(sim_err(format!(
            "{} arguments for {} inputs",
            args.len(),
            prog.inputs.len()
        )));
    }
    let mut bufs: Vec<SimBuffer> = prog
        .buffers
        .iter()
        .map(|d| {
            SimBuffer::try_zeroed(d.dtype, d.len).ok_or_else(|| {
                sim_err(format!(
                    "the host cannot provide a simulated buffer of {} x{}",
                    d.dtype, d.len
                ))
            })
        })
        .collect::<Result<_>>()?;
    let mut put = |b: BufId, a: &HostArray| -> Result<()> {
        let slot = bufs
            .get_mut(b.index())
            .ok_or_else(|| sim_err(format!("no buffer {}", b.0)))?;
        if !fills(a, slot.dtype, slot.len()) {
            return Err(sim_err(format!(
                "an argument of {} x{} for a buffer of {} x{}",
                a.dtype(),
                a.len(),
                slot.dtype,
                slot.len()
            )));
        }
        slot.bytes = host_bytes(a);
        Ok(())
    };
    for (b, a) in prog.inputs.iter().zip(args) {
        put(*b, a)?;
    }
    for (b, a) in &prog.consts {
        put(*b, a)?;
    }
    let mut t = SimTarget {
        kernels: &prog.kernels,
        bufs,
        limits: DeviceLimits::default(),
    };
    run_steps(&mut t, prog, &prog.steps)?;
    // The GPU binds resident arrays to the inputs without copying them, so
    // a program must never write its inputs (or its constants): check it
    // here, where every lowering runs in the tests.
    for (b, a) in prog
        .inputs
        .iter()
        .zip(args)
        .chain(prog.consts.iter().map(|(b, a)| (b, a)))
    {
        if t.buf(*b)?.bytes != host_bytes(a) {
            return Err(sim_err(format!(
                "the program wrote its input or constant buffer {}, which a resident array \
                 may share",
                b.0
            )));
        }
    }
    prog.outputs
        .iter()
        .enumerate()
        .map(|(i, (b, shape))| {
            let buf = t.buf(*b)?;
            let dt = output_dtype(prog, i, buf.dtype);
            array_from_bytes(dt, shape, &buf.bytes).map_err(|e| sim_err(e.to_string()))
        })
        .collect()
}
