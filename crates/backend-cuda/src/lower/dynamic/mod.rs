//! Dynamic shapes on the CUDA backend: a jaxpr whose dimensions are
//! runtime values compiles once into a symbolic plan, and every call runs
//! it for its sizes.
//!
//! Design:
//! - **Compile once** (`build.rs`, `ops.rs`, `control.rs`): one walk over
//!   the jaxpr and its nested bodies declares every buffer with a length
//!   that is a size expression (`sym::Sz`) over the program's integer
//!   scalar inputs, builds every kernel once with its sizes and strides as
//!   `Scalar(I64)` parameters, and emits symbolic steps (`SStep`): launches
//!   whose grid is computed from a size expression, copies, GEMMs whose
//!   [`GemmPlan`] is resolved per call, and host-driven `cond`/`while`/
//!   `scan`/`for_loop` over nested step lists.
//! - **Run per call** ([`DynProgram::instantiate`]): the dimension
//!   variables are resolved from the values of the integer scalar
//!   arguments, each argument is checked against its declared type with
//!   them (an error naming both shapes), and the plan is instantiated into
//!   an ordinary [`Program`] — the same kernels, buffer lengths and launch
//!   arguments evaluated — that the simulator and the GPU run through the
//!   same `Target`/`run_steps` machinery as static programs. No kernel is
//!   rebuilt per size; on a GPU the program's module is compiled by NVRTC
//!   once, at the first call, and kept (`Loaded`), since kernel sources do
//!   not depend on sizes.
//!
//! What lowers: fused runs of elementwise equations over one shape (with
//! scalar operands and broadcasts of scalars; into a following reduction
//! when nothing else of the run is used later, `fuse.rs`), `broadcast_in_dim`,
//! `reshape`, `squeeze`, `transpose`, `rev`, `iota`, `concatenate`, `pad`,
//! `split`, `tile`, `stack`, `empty2`,
//! `slice`, `dynamic_slice`, `dynamic_update_slice`, `gather` (clamping
//! modes), `scatter-add` (atomics), reductions along axes (`reduce_*`),
//! `argmax`/`argmin`, the cumulative family, `sort`, `top_k`, `dot_general`
//! (batched, any layout; GEMM for the cuBLASLt types, a kernel otherwise),
//! `cond`, `while`, `scan`, `for_loop`, inlined calls and host callbacks
//! (`debug_print`, `debug_callback`, `pure_callback`). Everything else
//! is a compile-time `Unsupported` error naming the equation, as is a
//! dimension computed from array data or a loop counter, and a loop whose
//! carry changes shape.
//!
//! Invariants: a dimension variable's value is known on the host before
//! the run (it is a size expression of the arguments), so every buffer of
//! an instantiated program has its final length before any step runs;
//! every argument is checked against its resolved type before anything
//! runs.

mod build;
mod control;
mod fuse;
mod ops;
mod reduce;
mod scatter;
pub(crate) mod sym;

use super::plan::{BufId, BufferDecl, CarryUpdate, KArg, Program, ScanSlice, Step};
use crate::blas::{Compute, Epilogue, GemmPlan, Operand};
use crate::kir::{Const, Kernel};
use build::{Scope, B, DV};
use jaxon_ir::{Aval, ClosedJaxpr, DType, Dim, HostArray, IrError, Jaxpr};
use std::sync::atomic::{AtomicUsize, Ordering};
use sym::Sz;

/// Kernels built by dynamic-shape compilations in this process (for
/// tests: a new size must not build any).
static KERNELS_BUILT: AtomicUsize = AtomicUsize::new(0);

/// The number of kernels dynamic-shape compilations have built in this
/// process.
pub fn kernels_built() -> usize {
    KERNELS_BUILT.load(Ordering::Relaxed)
}

/// Whether any type in `jaxpr` or its nested jaxprs has a dynamic
/// dimension.
pub fn is_dynamic(jaxpr: &Jaxpr) -> bool {
    let dyn_aval = |a: &Aval| {
        a.as_array()
            .is_some_and(|s| s.shape.iter().any(|d| matches!(d, Dim::Var(_))))
    };
    jaxpr.vars.iter().any(dyn_aval)
        || jaxpr.eqns.iter().any(|e| {
            e.outputs.iter().any(|b| match b {
                jaxon_ir::Binder::Drop(a) => dyn_aval(a),
                jaxon_ir::Binder::Var(_) => false,
            }) || e.primitive.sub_jaxprs().iter().any(|j| is_dynamic(j))
        })
}

/// A kernel launch argument of a symbolic launch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SArg {
    Buf(BufId),
    /// An `i64` size, evaluated per call.
    Size(Sz),
}

/// A GEMM whose sizes are resolved per call (dense row-major operands).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SGemm {
    pub batch: Sz,
    pub m: Sz,
    pub n: Sz,
    pub k: Sz,
    pub operand_dtype: DType,
    pub out_dtype: DType,
    pub compute: Compute,
}

/// A step of a symbolic plan; see [`Step`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SStep {
    /// A grid-stride kernel over `n` items (not launched when `n` is 0).
    Launch {
        kernel: usize,
        n: Sz,
        args: Vec<SArg>,
    },
    /// A GEMM; `zero` (a fill of `out`) runs instead for an empty
    /// contraction.
    Gemm {
        g: SGemm,
        a: BufId,
        b: BufId,
        out: BufId,
        zero: Vec<SStep>,
    },
    Copy {
        src: BufId,
        src_off: Sz,
        dst: BufId,
        dst_off: Sz,
        len: Sz,
    },
    Cond {
        index: BufId,
        branches: Vec<Vec<SStep>>,
    },
    While {
        cond: Vec<SStep>,
        pred: BufId,
        body: Vec<SStep>,
        carry: Vec<CarryUpdate>,
    },
    /// A host callback (see [`Step::Host`]), operand and result shapes
    /// resolved per call.
    Host {
        call: jaxon_ir::primitive::Callback,
        args: Vec<(BufId, Vec<Sz>)>,
        outs: Vec<(BufId, Vec<Sz>)>,
    },
    /// See [`Step::CheckStep`].
    CheckStep { step: BufId, reverse: bool },
    /// A check at instantiation: `small <= large`, else the error `what`
    /// (a size the interpreter refuses, such as `top_k` of more elements
    /// than the axis has). No step runs.
    Require { small: Sz, large: Sz, what: String },
    Scan {
        length: Sz,
        reverse: bool,
        /// `(stacked, item, item length)`.
        xs: Vec<(BufId, BufId, Sz)>,
        body: Vec<SStep>,
        carry: Vec<CarryUpdate>,
        ys: Vec<(BufId, BufId, Sz)>,
    },
}

/// A dynamic-shape program, compiled once for every size.
#[derive(Clone, Debug)]
pub struct DynProgram {
    kernels: Vec<Kernel>,
    buffers: Vec<(DType, Sz)>,
    consts: Vec<(BufId, HostArray)>,
    /// Each input's buffer and declared type.
    inputs: Vec<(BufId, DType, Vec<Sz>)>,
    /// Whether input `k` is an integer scalar whose value sizes the call.
    size_inputs: Vec<bool>,
    steps: Vec<SStep>,
    outputs: Vec<(BufId, DType, Vec<Sz>)>,
}

/// Compiles `closed`, a jaxpr with dynamic dimensions, once for every
/// size, with the default options (full `f32` products).
pub fn compile(closed: &ClosedJaxpr) -> Result<DynProgram, IrError> {
    compile_with(closed, crate::lower::precision::LowerOptions::default())
}

/// [`compile`] with `opts`.
pub fn compile_with(
    closed: &ClosedJaxpr,
    opts: crate::lower::precision::LowerOptions,
) -> Result<DynProgram, IrError> {
    let jaxpr = &closed.jaxpr;
    let mut b = B::default();
    b.opts = opts;
    let mut types = Scope::default();
    let mut size_inputs = Vec::new();
    for (k, v) in jaxpr.invars.iter().enumerate() {
        let arr = jaxpr
            .try_aval(*v)
            .and_then(Aval::as_array)
            .ok_or_else(|| super::unsupported("ref", "Ref arguments of a dynamic-shape program"))?;
        let sized = arr.shape.is_empty() && arr.dtype.is_int() && !arr.dtype.is_bool();
        size_inputs.push(sized);
        let dummy = DV::Lit(build::i64_lit(0));
        types.bind(*v, dummy, sized.then_some(Sz::Arg(k)));
    }
    let mut inputs = Vec::new();
    let mut args = Vec::new();
    for (k, v) in jaxpr.invars.iter().enumerate() {
        let (dt, shape) = build::ty(jaxpr, &types, &jaxon_ir::Atom::Var(*v))?;
        let buf = b.alloc(dt, &shape)?;
        inputs.push((buf, dt, shape));
        args.push((DV::Buf(buf), size_inputs[k].then_some(Sz::Arg(k))));
    }
    let mut steps = Vec::new();
    let outs = build::body(&mut b, closed, &args, &mut steps)?;
    let mut outputs = Vec::new();
    for (o, a) in outs.iter().zip(&jaxpr.outvars) {
        let dt = jaxpr
            .atom_aval(a)
            .and_then(|a| a.as_array().map(|s| s.dtype))
            .ok_or_else(|| IrError::Invalid("cuda lowering: output not in the table".into()))?;
        let buf = build::materialize(&mut b, &mut steps, o.dv, dt, &o.shape)?;
        outputs.push((buf, dt, o.shape.clone()));
    }
    KERNELS_BUILT.fetch_add(b.kernels.len(), Ordering::Relaxed);
    Ok(DynProgram {
        kernels: b.kernels,
        buffers: b.buffers,
        consts: b.consts,
        inputs,
        size_inputs,
        steps,
        outputs,
    })
}

impl DynProgram {
    /// The kernels, built once.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// Whether input `k` is an integer scalar whose value the call reads
    /// to resolve sizes.
    pub fn is_size_input(&self, k: usize) -> bool {
        self.size_inputs.get(k).copied().unwrap_or(false)
    }

    /// Checks the arguments' types (`dtype`, `shape`, one per input)
    /// against the declared ones with the sizes `vals` resolved (one per
    /// input, the value of each size input).
    pub fn check_args(&self, vals: &[i64], types: &[(DType, Vec<usize>)]) -> Result<(), IrError> {
        if types.len() != self.inputs.len() || vals.len() != self.inputs.len() {
            return Err(IrError::Invalid(format!(
                "cuda: {} arguments for {} inputs",
                types.len(),
                self.inputs.len()
            )));
        }
        for (k, ((_, dt, shape), (adt, ashape))) in self.inputs.iter().zip(types).enumerate() {
            let want: Vec<usize> = shape
                .iter()
                .map(|s| s.size(vals))
                .collect::<Result<_, _>>()?;
            if dt != adt || want != *ashape {
                return Err(IrError::ty(
                    "cuda dynamic-shape call",
                    format!(
                        "argument {k} is {adt}{ashape:?}, but the program declares {dt}{want:?} \
                         for these sizes"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The plan for sizes `vals` (one per input; see [`Self::check_args`]):
    /// the kernels as compiled, every size evaluated.
    pub fn instantiate(&self, vals: &[i64]) -> Result<Program, IrError> {
        let mut buffers = Vec::with_capacity(self.buffers.len());
        for (dt, len) in &self.buffers {
            let n = len.size(vals)?;
            jaxon_ir::memory::check_alloc("cuda buffer", *dt, &[n], 0)?;
            buffers.push(BufferDecl { dtype: *dt, len: n });
        }
        let steps = steps(&self.steps, vals, &buffers)?;
        let shape = |s: &[Sz]| {
            s.iter()
                .map(|d| d.size(vals))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Program {
            buffers,
            kernels: self.kernels.clone(),
            inputs: self.inputs.iter().map(|(b, _, _)| *b).collect(),
            consts: self.consts.clone(),
            steps,
            outputs: self
                .outputs
                .iter()
                .map(|(b, _, s)| Ok((*b, shape(s)?)))
                .collect::<Result<_, IrError>>()?,
            output_dtypes: self.outputs.iter().map(|(_, d, _)| *d).collect(),
        })
    }
}

fn steps(ss: &[SStep], vals: &[i64], bufs: &[BufferDecl]) -> Result<Vec<Step>, IrError> {
    let mut out = Vec::with_capacity(ss.len());
    for s in ss {
        match s {
            SStep::Launch { kernel, n, args } => {
                let n = n.size(vals)?;
                if n == 0 {
                    continue;
                }
                let args = args
                    .iter()
                    .map(|a| match a {
                        SArg::Buf(b) => Ok(KArg::Buffer(*b)),
                        SArg::Size(s) => Ok(KArg::Scalar(Const::int(DType::I64, s.eval(vals)?))),
                    })
                    .collect::<Result<_, IrError>>()?;
                out.push(Step::Launch {
                    kernel: *kernel,
                    dims: super::kernel::grid(n as u64),
                    args,
                });
            }
            SStep::Gemm {
                g,
                a,
                b,
                out: o,
                zero,
            } => {
                let (bt, m, n, k) = (
                    g.batch.size(vals)? as u64,
                    g.m.size(vals)? as u64,
                    g.n.size(vals)? as u64,
                    g.k.size(vals)? as u64,
                );
                let elems = bt.checked_mul(m).and_then(|x| x.checked_mul(n));
                let elems = elems.ok_or_else(|| {
                    IrError::Eval(format!(
                        "cuda dynamic shapes: a {bt}x{m}x{n} product overflows"
                    ))
                })?;
                if elems == 0 {
                    continue;
                }
                if k == 0 {
                    out.extend(steps(zero, vals, bufs)?);
                    continue;
                }
                let plan = GemmPlan {
                    batch: bt,
                    m,
                    n,
                    k,
                    a: Operand::row_major(m, k),
                    b: Operand::row_major(k, n),
                    out: Operand::row_major(m, n),
                    operand_dtype: g.operand_dtype,
                    out_dtype: g.out_dtype,
                    compute: g.compute,
                    accumulate: false,
                    epilogue: Epilogue::None,
                };
                let len = |b: &BufId| bufs.get(b.index()).map_or(0, |d| d.len as u64);
                plan.validate(len(a), len(b), len(o), 0)
                    .map_err(|e| IrError::Invalid(format!("cuda lowering: dot_general: {e}")))?;
                out.push(Step::Gemm {
                    plan,
                    a: *a,
                    b: *b,
                    out: *o,
                    bias: None,
                });
            }
            SStep::Copy {
                src,
                src_off,
                dst,
                dst_off,
                len,
            } => {
                let len = len.size(vals)?;
                if len > 0 {
                    out.push(Step::Copy {
                        src: *src,
                        src_offset: src_off.size(vals)?,
                        dst: *dst,
                        dst_offset: dst_off.size(vals)?,
                        len,
                    });
                }
            }
            SStep::Host { call, args, outs } => {
                let shaped = |v: &[(BufId, Vec<Sz>)]| {
                    v.iter()
                        .map(|(b, s)| {
                            let s = s.iter().map(|d| d.size(vals)).collect::<Result<_, _>>()?;
                            Ok((*b, s))
                        })
                        .collect::<Result<Vec<_>, IrError>>()
                };
                out.push(Step::Host {
                    call: call.clone(),
                    args: shaped(args)?,
                    outs: shaped(outs)?,
                });
            }
            SStep::CheckStep { step, reverse } => out.push(Step::CheckStep {
                step: *step,
                reverse: *reverse,
            }),
            SStep::Require { small, large, what } => {
                let (a, b) = (small.eval(vals)?, large.eval(vals)?);
                if a > b {
                    return Err(IrError::Eval(format!(
                        "cuda dynamic shapes: {what} ({a} > {b})"
                    )));
                }
            }
            SStep::Cond { index, branches } => out.push(Step::Cond {
                index: *index,
                branches: branches
                    .iter()
                    .map(|b| steps(b, vals, bufs))
                    .collect::<Result<_, _>>()?,
            }),
            SStep::While {
                cond,
                pred,
                body,
                carry,
            } => out.push(Step::While {
                cond: steps(cond, vals, bufs)?,
                pred: *pred,
                body: steps(body, vals, bufs)?,
                carry: nonempty(carry, bufs),
            }),
            SStep::Scan {
                length,
                reverse,
                xs,
                body,
                carry,
                ys,
            } => {
                let slices = |v: &[(BufId, BufId, Sz)]| {
                    v.iter()
                        .map(|(s, i, l)| {
                            Ok(ScanSlice {
                                stacked: *s,
                                item: *i,
                                len: l.size(vals)?,
                            })
                        })
                        .collect::<Result<Vec<_>, IrError>>()
                };
                out.push(Step::Scan {
                    length: length.size(vals)?,
                    reverse: *reverse,
                    xs: slices(xs)?,
                    body: steps(body, vals, bufs)?,
                    carry: nonempty(carry, bufs),
                    ys: slices(ys)?,
                });
            }
        }
    }
    Ok(out)
}

/// The carry updates of non-empty carries (an empty copy is no step).
fn nonempty(carry: &[CarryUpdate], bufs: &[BufferDecl]) -> Vec<CarryUpdate> {
    carry
        .iter()
        .filter(|c| bufs.get(c.dst.index()).is_some_and(|d| d.len > 0))
        .copied()
        .collect()
}

/// The values of the size inputs among `args` (0 for the others): element
/// 0 of each integer scalar argument.
pub fn size_values(prog: &DynProgram, args: &[HostArray]) -> Vec<i64> {
    args.iter()
        .enumerate()
        .map(|(k, a)| {
            if prog.is_size_input(k) && !a.is_empty() {
                a.data().get_i64(0)
            } else {
                0
            }
        })
        .collect()
}

/// Runs `prog` on the simulator with `args` (one per input).
pub fn run_simulated(prog: &DynProgram, args: &[HostArray]) -> Result<Vec<HostArray>, IrError> {
    let vals = size_values(prog, args);
    let types: Vec<(DType, Vec<usize>)> = args
        .iter()
        .map(|a| (a.dtype(), a.shape().to_vec()))
        .collect();
    prog.check_args(&vals, &types)?;
    let p = prog.instantiate(&vals)?;
    super::backend::check_program_memory(&p)?;
    super::run::run_simulated(&p, args).map_err(|e| IrError::Eval(format!("cuda-sim: {e}")))
}
