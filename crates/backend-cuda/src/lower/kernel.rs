//! Helpers every lowering uses to build KIR kernels: the grid-stride loop
//! over an output's elements with its multi-index, kernel arguments
//! collected as they are used, typed loads and stores in the *compute
//! dtype* (`f16`/`bf16` values computed in `f32`, rounded when stored), and
//! copies and fills of values into buffers.
//!
//! Invariants: index arithmetic is `i64`; a loop kernel with no elements is
//! not launched at all (a launch needs a nonzero grid); every kernel built
//! here is verified by `KernelBuilder::finish`.

use super::plan::{BufId, KArg, Step};
use super::{Ctx, Value};
use crate::kir::{Const, Expr, KernelBuilder, LaunchDims, ParamId, Var};
use jaxon_ir::{DType, IrError, Literal, Scalar};
use std::collections::HashMap;

/// Threads per block of the generated kernels.
pub(crate) const THREADS: u32 = 256;
/// The most blocks a grid-stride kernel is launched with.
const MAX_BLOCKS: u64 = 1024;

/// The dtype values of `d` are computed in: `f32` for the 16-bit floats.
pub(crate) fn compute(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// An `i64` constant.
pub(crate) fn i64c(v: i64) -> Expr {
    Expr::int(DType::I64, v)
}

/// A literal as a constant of its compute dtype.
pub(crate) fn lit_expr(l: &Literal) -> Expr {
    let d = l.dtype;
    let c = match l.value {
        Scalar::Bool(b) => Const::int(d, i64::from(b)),
        Scalar::Int(i) => Const::int(d, i),
        Scalar::UInt(u) => Const::int(d, u as i64),
        Scalar::Float(x) => Const::from_f64(compute(d), x),
        // Complex values never reach a kernel (`complex.rs` splits them).
        Scalar::Complex(re, _) => Const::from_f64(compute(d), re),
    };
    if d.is_float() {
        Expr::Const(Const::from_f64(compute(d), c.to_f64()))
    } else {
        Expr::Const(c)
    }
}

/// `x` (a compute-dtype value) rounded to storage dtype `d` and back, so
/// that 16-bit float arithmetic rounds after every operation as the
/// interpreter does.
pub(crate) fn round_to(d: DType, x: Expr) -> Expr {
    match d {
        DType::F16 | DType::BF16 => x.cast(d).cast(DType::F32),
        _ => x,
    }
}

/// Row-major strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![0i64; shape.len()];
    let mut acc = 1i64;
    for d in (0..shape.len()).rev() {
        s[d] = acc;
        acc *= shape[d] as i64;
    }
    s
}

/// `base + Σ strides[d] · idx[d]`, skipping zero strides.
pub(crate) fn affine(base: i64, strides: &[i64], idx: &[Expr]) -> Expr {
    let mut e: Option<Expr> = if base != 0 { Some(i64c(base)) } else { None };
    for (s, i) in strides.iter().zip(idx) {
        if *s == 0 {
            continue;
        }
        let term = if *s == 1 {
            i.clone()
        } else {
            i.clone() * i64c(*s)
        };
        e = Some(match e {
            None => term,
            Some(e) => e + term,
        });
    }
    e.unwrap_or_else(|| i64c(0))
}

/// The arguments of a kernel being built, one per parameter.
pub(crate) struct Args {
    pub args: Vec<KArg>,
    bufs: HashMap<BufId, ParamId>,
}

impl Args {
    pub fn new() -> Args {
        Args {
            args: Vec::new(),
            bufs: HashMap::new(),
        }
    }

    /// The parameter of buffer `b` (added on first use).
    pub fn buffer(
        &mut self,
        k: &mut KernelBuilder,
        ctx: &Ctx,
        b: BufId,
        writable: bool,
    ) -> Result<ParamId, IrError> {
        if let Some(p) = self.bufs.get(&b) {
            return Ok(*p);
        }
        let d = ctx.decl(b)?;
        let p = k.global(&format!("b{}", b.0), d.dtype, writable);
        self.args.push(KArg::Buffer(b));
        self.bufs.insert(b, p);
        Ok(p)
    }
}

/// Reads `v` at element `index` as a compute-dtype value (a literal is its
/// constant).
pub(crate) fn load(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    v: Value,
    index: Expr,
) -> Result<Expr, IrError> {
    match v {
        Value::Lit(l) => Ok(lit_expr(&l)),
        Value::Buf(b) => {
            let d = ctx.decl(b)?.dtype;
            let p = args.buffer(k, ctx, b, false)?;
            Ok(load_typed(k, p, d, index))
        }
    }
}

/// Element `index` of the `d` buffer parameter `p`, in `d`'s compute
/// dtype (the one typed load of the static and dynamic lowerings).
pub(crate) fn load_typed(k: &mut KernelBuilder, p: ParamId, d: DType, index: Expr) -> Expr {
    let x = k.var("x", d);
    k.load(&[x], p.into(), index, None);
    if compute(d) != d {
        Expr::var(x).cast(compute(d))
    } else {
        Expr::var(x)
    }
}

/// Stores the compute-dtype `x` to element `index` of the `d` buffer
/// parameter `p`, rounded to `d`.
pub(crate) fn store_typed(k: &mut KernelBuilder, p: ParamId, d: DType, index: Expr, x: Expr) {
    let x = if compute(d) != d { x.cast(d) } else { x };
    k.store(p.into(), index, vec![x], None);
}

/// Stores the compute-dtype value `x` to element `index` of `b`.
pub(crate) fn store(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    b: BufId,
    index: Expr,
    x: Expr,
) -> Result<(), IrError> {
    let d = ctx.decl(b)?.dtype;
    let p = args.buffer(k, ctx, b, true)?;
    store_typed(k, p, d, index, x);
    Ok(())
}

/// Launch dimensions of a grid-stride loop over `n > 0` items.
pub(crate) fn grid(n: u64) -> LaunchDims {
    let blocks = n.div_ceil(u64::from(THREADS)).clamp(1, MAX_BLOCKS);
    LaunchDims::linear(blocks as u32, THREADS)
}

/// Launch dimensions of a grid-stride kernel (`Kernel::grid_stride`) over
/// `n > 0` items, one per thread: `run::sized` caps the blocks at the
/// device's resident blocks when it launches.
pub(crate) fn stride_grid(n: u64) -> LaunchDims {
    let blocks = n
        .div_ceil(u64::from(THREADS))
        .clamp(1, u64::from(u32::MAX >> 1));
    LaunchDims::linear(blocks as u32, THREADS)
}

/// A kernel looping over the elements of `shape` (one thread per element,
/// grid-stride); `body` gets the linear index and the multi-index and
/// emits the element's work. `None` when `shape` has no elements.
pub(crate) fn loop_kernel(
    ctx: &mut Ctx,
    name: &str,
    shape: &[usize],
    body: impl FnOnce(&mut KernelBuilder, &mut Args, &Ctx, &Expr, &[Expr]) -> Result<(), IrError>,
) -> Result<Option<Step>, IrError> {
    let n: usize = shape.iter().product();
    if n == 0 {
        return Ok(None);
    }
    let name = ctx.name(name);
    let mut k = KernelBuilder::new(&name, THREADS);
    k.grid_stride();
    let mut args = Args::new();
    let lin = k.var("i", DType::I64);
    let start = Expr::global_thread_id_x().cast(DType::I64);
    let step = (Expr::grid_dim_x() * Expr::block_dim_x()).cast(DType::I64);
    let mut result = Ok(());
    let c: &Ctx = ctx;
    k.for_(lin, start, i64c(n as i64), step, |k| {
        let idx = multi_index(k, Expr::var(lin), shape);
        result = body(k, &mut args, c, &Expr::var(lin), &idx);
    });
    result?;
    let kernel = finish(k)?;
    let id = ctx.kernel(kernel);
    Ok(Some(Step::Launch {
        kernel: id,
        dims: stride_grid(n as u64),
        args: args.args,
    }))
}

/// Verifies a built kernel, as an `IrError`.
pub(crate) fn finish(k: KernelBuilder) -> Result<crate::kir::Kernel, IrError> {
    k.finish()
        .map_err(|e| IrError::Invalid(format!("cuda lowering built a bad kernel: {e}")))
}

/// The multi-index of linear index `lin` in `shape` (row-major), as
/// variables.
pub(crate) fn multi_index(k: &mut KernelBuilder, lin: Expr, shape: &[usize]) -> Vec<Expr> {
    let mut idx = vec![i64c(0); shape.len()];
    let rem = k.let_("rem", DType::I64, lin);
    for d in (0..shape.len()).rev() {
        let n = shape[d] as i64;
        if n == 1 {
            continue;
        }
        if d == 0 {
            idx[d] = Expr::var(rem);
            break;
        }
        let v: Var = k.let_("ix", DType::I64, Expr::var(rem) % i64c(n));
        k.assign(rem, Expr::var(rem) / i64c(n));
        idx[d] = Expr::var(v);
    }
    idx
}

/// A buffer holding `v` (a literal is filled into a new buffer of `len`
/// elements of `dtype`).
pub(crate) fn materialize(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    v: Value,
    dtype: DType,
    len: usize,
) -> Result<BufId, IrError> {
    match v {
        Value::Buf(b) => Ok(b),
        Value::Lit(_) => {
            let b = ctx.alloc(dtype, &[len])?;
            copy_into(ctx, steps, v, b, len)?;
            Ok(b)
        }
    }
}

/// Copies `v` into `dst` (`len` elements; a literal is broadcast).
pub(crate) fn copy_into(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    v: Value,
    dst: BufId,
    len: usize,
) -> Result<(), IrError> {
    match v {
        Value::Buf(src) if src == dst => Ok(()),
        Value::Buf(src) => {
            if len > 0 {
                steps.push(Step::Copy {
                    src,
                    src_offset: 0,
                    dst,
                    dst_offset: 0,
                    len,
                });
            }
            Ok(())
        }
        Value::Lit(l) => {
            let step = loop_kernel(ctx, "fill", &[len], |k, args, ctx, lin, _| {
                store(k, args, ctx, dst, lin.clone(), lit_expr(&l))
            })?;
            steps.extend(step);
            Ok(())
        }
    }
}

/// Reads `v` at `index` where `mask` holds (nothing is read elsewhere, and
/// the result there is zero); a literal is its constant.
pub(crate) fn load_masked(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    v: Value,
    index: Expr,
    mask: Expr,
) -> Result<Expr, IrError> {
    match v {
        Value::Lit(l) => Ok(lit_expr(&l)),
        Value::Buf(b) => {
            let d = ctx.decl(b)?.dtype;
            let p = args.buffer(k, ctx, b, false)?;
            let x = k.var("x", d);
            k.load(&[x], p.into(), index, Some((mask, Expr::int(d, 0))));
            Ok(if compute(d) != d {
                Expr::var(x).cast(compute(d))
            } else {
                Expr::var(x)
            })
        }
    }
}

/// A kernel writing `value(idx)` to every element of `out` (of `shape`).
pub(crate) fn gather_kernel(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    name: &str,
    out: BufId,
    shape: &[usize],
    value: impl FnOnce(&mut KernelBuilder, &mut Args, &Ctx, &[Expr]) -> Result<Expr, IrError>,
) -> Result<(), IrError> {
    let step = loop_kernel(ctx, name, shape, |k, args, ctx, lin, idx| {
        let v = value(k, args, ctx, idx)?;
        store(k, args, ctx, out, lin.clone(), v)
    })?;
    steps.extend(step);
    Ok(())
}

/// `for (var = start; var < end; var += step)` with a fallible body
/// builder: the body's error, if any.
pub(crate) fn try_for(
    k: &mut KernelBuilder,
    var: Var,
    (start, end, step): (Expr, Expr, Expr),
    body: impl FnOnce(&mut KernelBuilder) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let mut res = Ok(());
    k.for_(var, start, end, step, |k| res = body(k));
    res
}

/// `if cond { then }` with a fallible body builder.
pub(crate) fn try_if(
    k: &mut KernelBuilder,
    cond: Expr,
    then: impl FnOnce(&mut KernelBuilder) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let mut res = Ok(());
    k.if_(cond, |k| res = then(k));
    res
}
