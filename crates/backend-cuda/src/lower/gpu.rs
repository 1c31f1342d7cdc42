//! Running a [`Program`] on a GPU through `runtime/`: its kernels (and one
//! copy kernel per dtype the copies use) compiled by NVRTC into one module
//! for the device's architecture, its buffers allocated on the device, GEMM
//! steps through cuBLASLt, control flow read back one scalar at a time.
//!
//! A [`Loaded`] program holds what every run reuses: the device (one per
//! process, opened at first use), the module's functions and a cuBLASLt
//! handle. Making them costs milliseconds (NVRTC or its cache, the module
//! load, the handle), so a jitted function pays it once, not per call. The
//! program's constants are immutable: they are uploaded once, when the
//! program is loaded, and stay device-resident with the module.
//!
//! Invariants: every driver call goes through the guarded runtime, so a
//! missing GPU, driver or NVRTC is a `CudaError`, never a panic; nothing is
//! read back except `Cond`/`While` scalars and the results.

use super::kernel::{finish, THREADS};
use super::plan::{BufId, KArg, Program, ShardBody};
use super::run::{array_from_bytes, fills, host_bytes, output_dtype, run_steps, Target};
use crate::blas::lt::Blas;
use crate::blas::GemmPlan;
use crate::error::{CudaError, Result};
use crate::kir::{Const, Expr, Kernel, KernelBuilder, LaunchDims};
use crate::nvrtc::{self, Arch};
use crate::runtime::{Device, DeviceArg, DeviceBuffer, Function};
use jaxon_ir::primitive::Collective;
use jaxon_ir::{DType, HostArray};
use std::sync::{Arc, Mutex};

/// `dst[dst_off + i] = src[src_off + i]` for `i < len`, grid-stride.
pub fn copy_kernel(dtype: DType) -> Result<Kernel> {
    let mut k = KernelBuilder::new(&format!("plan_copy_{}", dtype.short_name()), THREADS);
    let src = k.global("src", dtype, false);
    let dst = k.global("dst", dtype, true);
    let so = k.scalar("src_off", DType::I64);
    let d_o = k.scalar("dst_off", DType::I64);
    let n = k.scalar("len", DType::I64);
    let i = k.var("i", DType::I64);
    let x = k.var("x", dtype);
    let start = Expr::global_thread_id_x().cast(DType::I64);
    let step = (Expr::grid_dim_x() * Expr::block_dim_x()).cast(DType::I64);
    k.for_(i, start, Expr::param(n), step, |k| {
        k.load(&[x], src.into(), Expr::param(so) + Expr::var(i), None);
        k.store(
            dst.into(),
            Expr::param(d_o) + Expr::var(i),
            vec![Expr::var(x)],
            None,
        );
    });
    finish(k).map_err(|e| CudaError::InvalidKir {
        kernel: "plan_copy".into(),
        message: e.to_string(),
    })
}

/// GPU 0, opened once per process. A failure is not kept: the next call
/// tries again and reports the same error.
pub(crate) fn device0() -> Result<Arc<Device>> {
    device_at(0)
}

/// GPU `ordinal`, opened once per process (the same `Arc` for every
/// caller, so buffers made on it bind to any program loaded on it). A
/// failure is not kept.
pub(crate) fn device_at(ordinal: usize) -> Result<Arc<Device>> {
    static DEVICES: Mutex<Vec<Option<Arc<Device>>>> = Mutex::new(Vec::new());
    let mut slots = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Some(d)) = slots.get(ordinal) {
        return Ok(d.clone());
    }
    let d = Device::open(ordinal)?;
    if slots.len() <= ordinal {
        slots.resize(ordinal + 1, None);
    }
    slots[ordinal] = Some(d.clone());
    Ok(d)
}

/// A program's kernels loaded on the device, reused by every run.
pub struct Loaded {
    device: Arc<Device>,
    funcs: Vec<Function>,
    copies: Vec<(DType, Function)>,
    /// The program's constants on the device, by buffer index (`None` for
    /// the buffers that are not constants).
    consts: Vec<Option<Arc<DeviceBuffer>>>,
    /// The program's intermediate buffers, by buffer index, allocated at
    /// the first run and reused by every later one, so a steady-state call
    /// allocates only its results (which outlive it). Runs take `&mut
    /// self` and queue on the device's one stream, so a run's kernels see
    /// these buffers only after the previous run's kernels are done.
    scratch: Vec<Option<Arc<DeviceBuffer>>>,
    blas: Option<Blas>,
}

/// An argument of [`Loaded::run_resident`]: host values to upload, or a
/// buffer already on the device, bound to the program's input without a
/// copy (programs never write their inputs: every equation writes buffers
/// of its own, and loop carries are copies).
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// Values on the host.
    Host(&'a HostArray),
    /// A device buffer holding the input's elements, as the program
    /// declares them (a key as two `u32` words).
    Device(&'a Arc<DeviceBuffer>),
}

/// A result of [`Loaded::run_resident`], still on the device.
#[derive(Clone, Debug)]
pub struct Resident {
    /// The elements.
    pub buffer: Arc<DeviceBuffer>,
    /// The dtype on the host (`key<fry>` for a `u32` word-pair buffer).
    pub dtype: DType,
    /// The shape.
    pub shape: Vec<usize>,
}

impl Resident {
    /// Copies the result to the host.
    pub fn to_host(&self) -> Result<HostArray> {
        let bytes = self.buffer.device().download(&self.buffer)?;
        array_from_bytes(self.dtype, &self.shape, &bytes).map_err(|e| no(e.to_string()))
    }
}

struct GpuTarget<'a> {
    device: &'a Arc<Device>,
    funcs: &'a [Function],
    copies: &'a [(DType, Function)],
    /// This run's buffers (`None` for the constants).
    bufs: Vec<Option<Arc<DeviceBuffer>>>,
    consts: &'a [Option<Arc<DeviceBuffer>>],
    blas: &'a mut Option<Blas>,
}

fn no(what: String) -> CudaError {
    CudaError::Launch {
        kernel: "plan".into(),
        message: what,
    }
}

impl GpuTarget<'_> {
    fn buf(&self, b: BufId) -> Result<&DeviceBuffer> {
        self.shared(b).map(|a| &**a)
    }

    fn shared(&self, b: BufId) -> Result<&Arc<DeviceBuffer>> {
        let own = self.bufs.get(b.index()).and_then(Option::as_ref);
        own.or_else(|| self.consts.get(b.index()).and_then(Option::as_ref))
            .ok_or_else(|| no(format!("no buffer {}", b.0)))
    }
}

impl Target for GpuTarget<'_> {
    fn sm_count(&self) -> u32 {
        self.device.info().sm_count
    }

    fn launch(&mut self, kernel: usize, dims: LaunchDims, args: &[KArg]) -> Result<()> {
        let f = self
            .funcs
            .get(kernel)
            .ok_or_else(|| no(format!("no kernel {kernel}")))?;
        let mut dargs = Vec::with_capacity(args.len());
        for a in args {
            dargs.push(match a {
                KArg::Buffer(b) => DeviceArg::Buffer(self.buf(*b)?),
                KArg::Scalar(c) => DeviceArg::Scalar(*c),
            });
        }
        self.device.launch(f, dims, &dargs)
    }

    fn gemm(
        &mut self,
        plan: &GemmPlan,
        a: BufId,
        b: BufId,
        out: BufId,
        bias: Option<BufId>,
    ) -> Result<()> {
        if self.blas.is_none() {
            *self.blas = Some(Blas::new(self.device)?);
        }
        let blas = self.blas.as_ref().ok_or_else(|| no("cuBLASLt".into()))?;
        let bias = bias.map(|x| self.buf(x)).transpose()?;
        blas.gemm(plan, self.buf(a)?, self.buf(b)?, self.buf(out)?, bias)
    }

    fn copy(
        &mut self,
        src: BufId,
        src_off: usize,
        dst: BufId,
        dst_off: usize,
        len: usize,
    ) -> Result<()> {
        let dt = self.buf(src)?.dtype();
        let f = self
            .copies
            .iter()
            .find(|(d, _)| *d == dt)
            .map(|(_, f)| f)
            .ok_or_else(|| no(format!("no copy kernel for {dt}")))?;
        let blocks = (len as u64).div_ceil(u64::from(THREADS)).clamp(1, 1024) as u32;
        let args = [
            DeviceArg::Buffer(self.buf(src)?),
            DeviceArg::Buffer(self.buf(dst)?),
            DeviceArg::Scalar(Const::int(DType::I64, src_off as i64)),
            DeviceArg::Scalar(Const::int(DType::I64, dst_off as i64)),
            DeviceArg::Scalar(Const::int(DType::I64, len as i64)),
        ];
        self.device
            .launch(f, LaunchDims::linear(blocks, THREADS), &args)
    }

    fn read(&mut self, b: BufId) -> Result<Vec<u8>> {
        let buf = self.buf(b)?;
        self.device.download(buf)
    }

    /// Replaces this run's buffer `b` with a new one holding `bytes` (kernel
    /// arguments are resolved at each launch, so later steps see it).
    fn write(&mut self, b: BufId, bytes: &[u8]) -> Result<()> {
        let (dtype, len) = {
            let old = self.buf(b)?;
            (old.dtype(), old.len())
        };
        if len * dtype.size_bytes() != bytes.len() {
            return Err(no(format!(
                "{} bytes written to a buffer of {dtype} x{len}",
                bytes.len()
            )));
        }
        let slot = self
            .bufs
            .get_mut(b.index())
            .and_then(Option::as_mut)
            .ok_or_else(|| no(format!("buffer {} is not writable", b.0)))?;
        *slot = Arc::new(self.device.upload(dtype, bytes)?);
        Ok(())
    }

    /// Exchanges this run's buffers `a` and `b` (kernel arguments are
    /// resolved at each launch). Both are the run's own: a constant or a
    /// missing buffer is an error.
    fn swap(&mut self, a: BufId, b: BufId) -> Result<()> {
        let owned = |t: &Self, x: BufId| {
            t.bufs
                .get(x.index())
                .and_then(Option::as_ref)
                .map(|d| (d.dtype(), d.len()))
                .ok_or_else(|| no(format!("buffer {} cannot be exchanged", x.0)))
        };
        let (ta, tb) = (owned(self, a)?, owned(self, b)?);
        if ta != tb {
            return Err(no(format!(
                "swap of buffer {} ({:?}) and {} ({:?})",
                a.0, ta, b.0, tb
            )));
        }
        self.bufs.swap(a.index(), b.index());
        Ok(())
    }

    /// Instance `rank` on GPU `rank` (`spmd_gpu.rs`), each on its own
    /// host thread.
    fn shard_map(
        &mut self,
        prog: &Program,
        body: &ShardBody,
        args: &[(BufId, Vec<usize>)],
        outs: &[(BufId, Vec<usize>)],
    ) -> Result<()> {
        super::spmd::run_shard_map(self, prog, body, args, outs, |rank, shards| {
            super::spmd_gpu::run_instance(rank, &body.program, shards)
        })
    }

    /// Through NCCL where the collective is one of its forms, else the
    /// host definition (`spmd_gpu.rs`).
    fn collective(
        &mut self,
        prog: &Program,
        op: &Collective,
        args: &[(BufId, Vec<usize>)],
        outs: &[(BufId, Vec<usize>)],
    ) -> Result<()> {
        let input = match args {
            [(b, _)] => Some(self.shared(*b)?.clone()),
            _ => None,
        };
        let out = match outs {
            [(b, _)] => Some(*b),
            _ => None,
        };
        let result = match out {
            Some(_) => super::spmd_gpu::nccl_collective(op, input.as_ref())?,
            None => None,
        };
        match (result, out) {
            (Some(r), Some(o)) => {
                let decl = prog
                    .buffers
                    .get(o.index())
                    .ok_or_else(|| no(format!("no buffer {}", o.0)))?;
                if r.dtype() != decl.dtype || r.len() != decl.len {
                    return Err(no(format!(
                        "{}: a result of {} x{} for a buffer of {} x{}",
                        op.name(),
                        r.dtype(),
                        r.len(),
                        decl.dtype,
                        decl.len
                    )));
                }
                let slot = self
                    .bufs
                    .get_mut(o.index())
                    .and_then(Option::as_mut)
                    .ok_or_else(|| no(format!("buffer {} is not writable", o.0)))?;
                *slot = Arc::new(r);
                Ok(())
            }
            _ => super::spmd::host_collective(self, prog, op, args, outs),
        }
    }

    fn read_i64(&mut self, b: BufId) -> Result<i64> {
        let buf = self.buf(b)?;
        let bytes = self.device.download(buf)?;
        let v = crate::host::decode(buf.dtype(), &bytes);
        v.first()
            .map(|x| *x as i64)
            .ok_or_else(|| no(format!("buffer {} is empty", b.0)))
    }
}

/// Runs `prog` on GPU 0 with `args` (one per input), loading it first; a
/// program run more than once should keep its [`Loaded`].
pub fn run_on_gpu(prog: &Program, args: &[HostArray]) -> Result<Vec<HostArray>> {
    Loaded::new(prog)?.run(prog, args)
}

impl Loaded {
    /// Compiles `prog`'s kernels (through the NVRTC caches) and loads them
    /// on GPU 0.
    pub fn new(prog: &Program) -> Result<Loaded> {
        Loaded::on(device0()?, prog)
    }

    /// Compiles `prog`'s kernels and loads them on `device`.
    pub fn on(device: Arc<Device>, prog: &Program) -> Result<Loaded> {
        let (major, minor) = device.info().compute_capability;
        let arch = Arch::from_compute_capability(major.max(0) as u32, minor.max(0) as u32);
        let mut dtypes: Vec<DType> = prog.buffers.iter().map(|d| d.dtype).collect();
        dtypes.sort_by_key(|d| d.short_name());
        dtypes.dedup();
        let copy_kernels = dtypes
            .iter()
            .map(|&d| copy_kernel(d))
            .collect::<Result<Vec<_>>>()?;
        let all: Vec<&Kernel> = prog.kernels.iter().chain(&copy_kernels).collect();
        let compiled = nvrtc::compile_kernels(&all, arch)?;
        let module = device.load_module(&compiled.cubin)?;
        let funcs = prog
            .kernels
            .iter()
            .map(|k| module.function(k))
            .collect::<Result<Vec<_>>>()?;
        let mut copies = Vec::new();
        for (d, k) in dtypes.iter().zip(&copy_kernels) {
            copies.push((*d, module.function(k)?));
        }
        let mut consts: Vec<Option<Arc<DeviceBuffer>>> =
            prog.buffers.iter().map(|_| None).collect();
        for (b, a) in &prog.consts {
            let decl = prog
                .buffers
                .get(b.index())
                .ok_or_else(|| no(format!("no buffer {} for a constant", b.0)))?;
            if !fills(a, decl.dtype, decl.len) {
                return Err(no(format!(
                    "a constant of {} x{} for a buffer of {} x{}",
                    a.dtype(),
                    a.len(),
                    decl.dtype,
                    decl.len
                )));
            }
            consts[b.index()] = Some(Arc::new(device.upload(decl.dtype, &host_bytes(a))?));
        }
        Ok(Loaded {
            device,
            funcs,
            copies,
            consts,
            scratch: prog.buffers.iter().map(|_| None).collect(),
            blas: None,
        })
    }

    /// Runs `prog` (the program this was loaded from) with `args`, and
    /// copies the results to the host.
    pub fn run(&mut self, prog: &Program, args: &[HostArray]) -> Result<Vec<HostArray>> {
        let args: Vec<Arg<'_>> = args.iter().map(Arg::Host).collect();
        self.run_resident(prog, &args)?
            .iter()
            .map(Resident::to_host)
            .collect()
    }

    /// Runs `prog` (the program this was loaded from) with `args`, leaving
    /// the results on the device. A device argument whose buffer does not
    /// match the input's declaration is an error naming both.
    pub fn run_resident(&mut self, prog: &Program, args: &[Arg<'_>]) -> Result<Vec<Resident>> {
        if args.len() != prog.inputs.len() {
            return Err(no(format!(
                "{} arguments for {} inputs",
                args.len(),
                prog.inputs.len()
            )));
        }
        if self.funcs.len() != prog.kernels.len() {
            return Err(no(format!(
                "a program of {} kernels run with {} loaded",
                prog.kernels.len(),
                self.funcs.len()
            )));
        }
        if self.consts.len() != prog.buffers.len() {
            return Err(no(format!(
                "a program of {} buffers run with constants for {}",
                prog.buffers.len(),
                self.consts.len()
            )));
        }
        let device = &self.device;
        let mut init: Vec<Option<Arg<'_>>> = vec![None; prog.buffers.len()];
        for (b, a) in prog.inputs.iter().zip(args) {
            if let Some(slot) = init.get_mut(b.index()) {
                *slot = Some(*a);
            }
        }
        if self.scratch.len() != prog.buffers.len() {
            return Err(no(format!(
                "a program of {} buffers run with scratch for {}",
                prog.buffers.len(),
                self.scratch.len()
            )));
        }
        let mut escapes = vec![false; prog.buffers.len()];
        for (b, _) in &prog.outputs {
            if let Some(e) = escapes.get_mut(b.index()) {
                *e = true;
            }
        }
        let mut bufs = Vec::with_capacity(prog.buffers.len());
        for (i, ((decl, a), c)) in prog.buffers.iter().zip(init).zip(&self.consts).enumerate() {
            bufs.push(match a {
                _ if c.is_some() => None,
                Some(Arg::Host(a)) if fills(a, decl.dtype, decl.len) => {
                    Some(Arc::new(device.upload(decl.dtype, &host_bytes(a))?))
                }
                Some(Arg::Host(a)) => {
                    return Err(no(format!(
                        "an argument of {} x{} for a buffer of {} x{}",
                        a.dtype(),
                        a.len(),
                        decl.dtype,
                        decl.len
                    )))
                }
                Some(Arg::Device(d))
                    if d.dtype() == decl.dtype
                        && d.len() == decl.len
                        && Arc::ptr_eq(d.device(), device) =>
                {
                    Some(d.clone())
                }
                Some(Arg::Device(d)) => {
                    return Err(no(format!(
                        "a device argument of {} x{} (on {}) for a buffer of {} x{} (on {})",
                        d.dtype(),
                        d.len(),
                        d.device().info().name,
                        decl.dtype,
                        decl.len,
                        device.info().name
                    )))
                }
                None if escapes[i] => Some(Arc::new(device.alloc(decl.dtype, decl.len)?)),
                // A dynamic-shape program's instantiations share buffer
                // indices but not lengths: scratch of another length is
                // replaced.
                None => match &self.scratch[i] {
                    Some(b) if b.len() == decl.len && b.dtype() == decl.dtype => Some(b.clone()),
                    _ => {
                        let b = Arc::new(device.alloc(decl.dtype, decl.len)?);
                        self.scratch[i] = Some(b.clone());
                        Some(b)
                    }
                },
            });
        }
        let mut t = GpuTarget {
            device,
            funcs: &self.funcs,
            copies: &self.copies,
            bufs,
            consts: &self.consts,
            blas: &mut self.blas,
        };
        run_steps(&mut t, prog, &prog.steps)?;
        prog.outputs
            .iter()
            .enumerate()
            .map(|(i, (b, shape))| {
                let buffer = t.shared(*b)?.clone();
                Ok(Resident {
                    dtype: output_dtype(prog, i, buffer.dtype()),
                    buffer,
                    shape: shape.clone(),
                })
            })
            .collect()
    }
}
