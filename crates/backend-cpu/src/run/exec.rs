//! Compiled programs and their execution: a list of steps (JIT kernels and
//! GEMM calls) over an environment of host arrays indexed by variable.

use crate::codegen::jit::{CodeModule, Kernel, ProgramFn};
use crate::codegen::kernel::identity_int;
use crate::error::run_error;
use crate::ops::dot::DotPlan;
use crate::util::literal_array;
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{Atom, DType, HostArray, IrError, ShapedArray, Storage, Var};
use std::sync::{Arc, Mutex};

/// An operand of a step: a variable or a constant (from a literal).
#[derive(Clone, Debug)]
pub(crate) enum Operand {
    /// A variable of the program's environment.
    Var(Var),
    /// A constant array.
    Const(HostArray),
}

/// One step of a program.
#[derive(Debug)]
pub(crate) enum Step {
    /// `iota`: the index along `dimension`, for static shapes.
    Iota {
        out: Var,
        dtype: DType,
        shape: Vec<usize>,
        dimension: usize,
    },
    /// `pad` with `(low, high, interior)` per dimension.
    Pad {
        x: Operand,
        value: Operand,
        out: Var,
        config: Vec<(i64, i64, i64)>,
        out_shape: Vec<usize>,
    },
    /// `concatenate` along `dim`.
    Concat {
        xs: Vec<Operand>,
        out: Var,
        dim: usize,
        out_shape: Vec<usize>,
    },
    /// `cumsum` and friends along `axis`.
    Cumulative {
        op: jaxon_ir::primitive::CumulativeOp,
        x: Operand,
        out: Var,
        axis: usize,
        reverse: bool,
    },
    /// `empty2`: an uninitialised value, zeros here.
    Zeros { out: Var, dtype: DType },
    /// `split` along `axis` into pieces of `sizes`.
    Split {
        x: Operand,
        axis: usize,
        sizes: Vec<usize>,
        outs: Vec<Option<Var>>,
    },
    /// `argmax`/`argmin` along `axis`.
    ArgReduce {
        max: bool,
        x: Operand,
        out: Var,
        axis: usize,
        index_dtype: DType,
    },
    /// A native operation (`crate::ops::native`) on operands, binding outputs.
    Native {
        op: Box<dyn crate::ops::native::NativeOp>,
        inputs: Vec<Operand>,
        outs: Vec<Option<Var>>,
    },
    /// A `dot_general`.
    Dot {
        lhs: Operand,
        rhs: Operand,
        out: Var,
        plan: DotPlan,
    },
}

/// A native step called from generated code, with the types of the
/// variables it reads and writes (in pointer-table order).
#[derive(Debug)]
pub(crate) struct StepCall {
    /// The step.
    pub step: Step,
    /// Size of the variable table of the jaxpr the step belongs to.
    pub n_vars: usize,
    /// Variables read (each once).
    pub ins: Vec<(Var, DType, Vec<usize>)>,
    /// Variables written.
    pub outs: Vec<(Var, DType, Vec<usize>)>,
}

/// Where a program result comes from.
#[derive(Debug)]
pub(crate) enum ResultSrc {
    /// Output buffer `i`, written by the program function.
    Buffer(usize),
    /// Argument `i`, passed through.
    Input(usize),
    /// Closed-over constant `i`.
    Const(usize),
    /// A literal.
    Literal(HostArray),
    /// The same value as result `i` (an earlier one).
    Again(usize),
}

/// A compiled jaxpr, independent of its constants (so it can be cached):
/// one program function that runs the whole jaxpr natively, and the
/// tables its trampolines use.
pub(crate) struct Program {
    /// The program function.
    pub entry: ProgramFn,
    /// Keeps `entry` (and the kernels) alive.
    pub _code: Arc<CodeModule>,
    /// Argument types.
    pub in_avals: Vec<ShapedArray>,
    /// Number of closed-over constants (passed after the arguments).
    pub n_consts: usize,
    /// Output buffers the program writes (dtype and shape).
    pub out_bufs: Vec<(DType, Vec<usize>)>,
    /// Per result, where it comes from.
    pub results: Vec<ResultSrc>,
    /// Bytes of the arena the program needs.
    pub arena_bytes: usize,
    /// Arenas of finished calls, reused by the next ones.
    pub arenas: Mutex<Vec<Vec<u64>>>,
    /// The pool the arenas came from (set by the first call) and return to
    /// when the program is dropped.
    pub arena_pool: std::sync::OnceLock<Arc<crate::run::pool::Pool>>,
    /// Kernels large enough to split over threads (`tramp_par_kernel`).
    pub par_kernels: Vec<Kernel>,
    /// `dot_general`s (`tramp_dot`).
    pub dots: Vec<DotPlan>,
    /// Other native steps (`tramp_step`).
    pub steps: Vec<StepCall>,
    /// Constants whose addresses are embedded in the code (nested
    /// jaxprs' consts, literals, reduction identities): never mutated or
    /// moved while the program lives.
    pub _pinned: Vec<Arc<[HostArray]>>,
    /// See `_pinned`.
    pub _pinned_bytes: Vec<Box<[u64]>>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Program({} args, {} results, arena {} bytes)",
            self.in_avals.len(),
            self.results.len(),
            self.arena_bytes
        )
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if let (Some(pool), Ok(arenas)) = (self.arena_pool.get(), self.arenas.get_mut()) {
            for a in arenas.drain(..) {
                pool.give_arena(a);
            }
        }
    }
}

impl Program {
    /// Length of the io pointer table: arguments, constants, outputs.
    pub fn io_len(&self) -> usize {
        self.in_avals.len() + self.n_consts + self.out_bufs.len()
    }
}

enum Slot {
    Owned(HostArray),
}

impl Slot {
    fn get(&self) -> &HostArray {
        match self {
            Slot::Owned(a) => a,
        }
    }
}

/// An array of `shape` filled with the identity of `op`.
pub(crate) fn identity_array(
    op: ReduceOp,
    dt: DType,
    shape: &[usize],
) -> Result<HostArray, IrError> {
    let n: usize = shape.iter().product();
    let v = if dt.is_float() {
        match op {
            ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => 0.0,
            ReduceOp::Prod | ReduceOp::And => 1.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        }
    } else {
        let bits = identity_int(op, dt, dt.bits());
        if dt.is_signed_int() || dt == DType::Bool {
            return HostArray::new(shape.to_vec(), signed_fill(dt, bits, n));
        }
        return HostArray::new(shape.to_vec(), unsigned_fill(dt, bits as u64, n));
    };
    HostArray::from_f64(dt, shape, &vec![v; n])
}

fn signed_fill(dt: DType, v: i64, n: usize) -> Storage {
    match dt {
        DType::Bool => Storage::Bool(vec![v != 0; n]),
        DType::I8 => Storage::I8(vec![v as i8; n]),
        DType::I16 => Storage::I16(vec![v as i16; n]),
        DType::I32 => Storage::I32(vec![v as i32; n]),
        _ => Storage::I64(vec![v; n]),
    }
}

fn unsigned_fill(dt: DType, v: u64, n: usize) -> Storage {
    match dt {
        DType::U8 => Storage::U8(vec![v as u8; n]),
        DType::U16 => Storage::U16(vec![v as u16; n]),
        DType::U32 => Storage::U32(vec![v as u32; n]),
        _ => Storage::U64(vec![v; n]),
    }
}

/// Binds the results of a multi-output step (dropped outputs are skipped).
fn bind(env: &mut [Option<Slot>], outs: &[Option<Var>], results: Vec<HostArray>) {
    for (o, r) in outs.iter().zip(results) {
        if let Some(v) = o {
            if let Some(slot) = env.get_mut(v.index()) {
                *slot = Some(Slot::Owned(r));
            }
        }
    }
}

/// The array an operand refers to.
fn operand_ref<'e>(env: &'e [Option<Slot>], o: &'e Operand) -> Result<&'e HostArray, IrError> {
    match o {
        Operand::Const(a) => Ok(a),
        Operand::Var(v) => env
            .get(v.index())
            .and_then(|s| s.as_ref())
            .map(|s| s.get())
            .ok_or_else(|| run_error(format!("variable {} not computed", v.0))),
    }
}

/// Runs one native step on the arrays in `env` (indexed by variable),
/// binding its results there.
fn run_step(
    step: &Step,
    mut env: Vec<Option<Slot>>,
    threads: usize,
) -> Result<Vec<Option<Slot>>, IrError> {
    {
        {
            match step {
                Step::Iota {
                    out,
                    dtype,
                    shape,
                    dimension,
                } => {
                    let n: usize = shape.iter().product();
                    let inner: usize = shape[dimension + 1..].iter().product();
                    let size = shape[*dimension];
                    let vals: Vec<f64> = (0..n).map(|i| ((i / inner) % size) as f64).collect();
                    env[out.index()] =
                        Some(Slot::Owned(HostArray::from_f64(*dtype, shape, &vals)?));
                }
                Step::Cumulative {
                    op,
                    x,
                    out,
                    axis,
                    reverse,
                } => {
                    let r = crate::ops::cumulative::cumulative(
                        *op,
                        operand_ref(&env, x)?,
                        *axis,
                        *reverse,
                    )?;
                    env[out.index()] = Some(Slot::Owned(r));
                }
                Step::Zeros { out, dtype } => {
                    env[out.index()] = Some(Slot::Owned(HostArray::zeros(*dtype, &[])));
                }
                Step::Split {
                    x,
                    axis,
                    sizes,
                    outs,
                } => {
                    let pieces = crate::ops::copy::split(operand_ref(&env, x)?, *axis, sizes)?;
                    bind(&mut env, outs, pieces);
                }
                Step::ArgReduce {
                    max,
                    x,
                    out,
                    axis,
                    index_dtype,
                } => {
                    let r = crate::ops::cumulative::arg_reduce(
                        *max,
                        operand_ref(&env, x)?,
                        *axis,
                        *index_dtype,
                    )?;
                    env[out.index()] = Some(Slot::Owned(r));
                }
                Step::Pad {
                    x,
                    value,
                    out,
                    config,
                    out_shape,
                } => {
                    let r = crate::ops::copy::pad(
                        operand_ref(&env, x)?,
                        operand_ref(&env, value)?,
                        config,
                        out_shape,
                    )?;
                    env[out.index()] = Some(Slot::Owned(r));
                }
                Step::Concat {
                    xs,
                    out,
                    dim,
                    out_shape,
                } => {
                    let arrays = xs
                        .iter()
                        .map(|o| operand_ref(&env, o))
                        .collect::<Result<Vec<_>, _>>()?;
                    let r = crate::ops::copy::concatenate(&arrays, *dim, out_shape)?;
                    env[out.index()] = Some(Slot::Owned(r));
                }
                Step::Native { op, inputs, outs } => {
                    let args = inputs
                        .iter()
                        .map(|o| operand_ref(&env, o))
                        .collect::<Result<Vec<_>, _>>()?;
                    let res = op.run(&args, threads)?;
                    bind(&mut env, outs, res);
                }
                Step::Dot {
                    lhs,
                    rhs,
                    out,
                    plan,
                } => {
                    let get = |o: &Operand| -> Result<HostArray, IrError> {
                        Ok(match o {
                            Operand::Const(a) => a.clone(),
                            Operand::Var(v) => env
                                .get(v.index())
                                .and_then(|s| s.as_ref())
                                .map(|s| s.get().clone())
                                .ok_or_else(|| run_error("operand not computed"))?,
                        })
                    };
                    let r = plan.run(&get(lhs)?, &get(rhs)?, threads)?;
                    env[out.index()] = Some(Slot::Owned(r));
                }
            }
        }
        Ok(env)
    }
}

/// Runs a step on copies of its operands (`ins`, in `call.ins` order) and
/// returns its results (in `call.outs` order).
pub(crate) fn run_step_call(
    call: &StepCall,
    ins: Vec<HostArray>,
    threads: usize,
) -> Result<Vec<HostArray>, IrError> {
    if let Step::Zeros { .. } = call.step {
        return call
            .outs
            .iter()
            .map(|(_, dt, shape)| {
                let s = jaxon_ir::memory::try_zeros("cpu backend: zeros", *dt, shape)?;
                HostArray::new(shape.clone(), s)
            })
            .collect();
    }
    let mut env: Vec<Option<Slot>> = (0..call.n_vars).map(|_| None).collect();
    for ((v, _, _), a) in call.ins.iter().zip(ins) {
        let slot = env
            .get_mut(v.index())
            .ok_or_else(|| run_error("step operand out of range"))?;
        *slot = Some(Slot::Owned(a));
    }
    let mut env = run_step(&call.step, env, threads)?;
    call.outs
        .iter()
        .map(
            |(v, _, _)| match env.get_mut(v.index()).and_then(Option::take) {
                Some(Slot::Owned(a)) => Ok(a),
                None => Err(run_error(format!("step did not compute variable {}", v.0))),
            },
        )
        .collect()
}

/// An equation operand as a step operand (literals become arrays).
pub(crate) fn operand(a: &Atom) -> Result<Operand, IrError> {
    Ok(match a {
        Atom::Var(v) => Operand::Var(*v),
        Atom::Lit(l) => Operand::Const(literal_array(l)?),
    })
}
