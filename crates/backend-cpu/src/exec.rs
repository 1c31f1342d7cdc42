//! Compiled programs and their execution: a list of steps (JIT kernels and
//! GEMM calls) over an environment of host arrays indexed by variable.

use crate::dot::DotPlan;
use crate::jit::{Arg, Kernel};
use crate::kernel::identity_int;
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{
    with_storage, Buffer, DType, Executable, HostArray, IrError, ShapedArray, Storage, Var,
};
use std::sync::Arc;

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
    /// A generated loop kernel writing one fresh array.
    Kernel {
        /// The code.
        kernel: Kernel,
        /// Inputs, in kernel argument order.
        inputs: Vec<Var>,
        /// The output variable.
        out: Var,
        /// Output dtype and shape.
        out_aval: (DType, Vec<usize>),
        /// For reductions: pre-fill the output with this op's identity.
        init: Option<ReduceOp>,
    },
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
    /// A `dot_general`.
    Dot {
        lhs: Operand,
        rhs: Operand,
        out: Var,
        plan: DotPlan,
    },
}

/// A compiled jaxpr, independent of its constants (so it can be cached).
#[derive(Debug)]
pub(crate) struct Program {
    pub steps: Vec<Step>,
    pub n_vars: usize,
    pub constvars: Vec<Var>,
    pub invars: Vec<Var>,
    pub in_avals: Vec<ShapedArray>,
    pub outvars: Vec<Operand>,
}

/// A program with its constants: what `compile` returns.
pub(crate) struct CpuExecutable {
    pub program: Arc<Program>,
    pub consts: Arc<[HostArray]>,
    /// Threads a large kernel may use.
    pub threads: usize,
}

enum Slot<'a> {
    Borrowed(&'a HostArray),
    Owned(HostArray),
}

impl Slot<'_> {
    fn get(&self) -> &HostArray {
        match self {
            Slot::Borrowed(a) => a,
            Slot::Owned(a) => a,
        }
    }
}

/// The base address and byte length of an array's storage.
fn raw(a: &HostArray) -> (*mut u8, usize) {
    let d = a.data();
    let bytes = a.len() * a.dtype().size_bytes();
    // Kernels only read through input pointers; the cast to `*mut` is for
    // the uniform argument array.
    let p = with_storage!(d, v => v.as_ptr().cast::<u8>().cast_mut());
    (p, bytes)
}

/// An array of `shape` filled with the identity of `op`.
fn identity_array(op: ReduceOp, dt: DType, shape: &[usize]) -> Result<HostArray, IrError> {
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

/// The array an operand refers to.
fn operand_ref<'e>(env: &'e [Option<Slot>], o: &'e Operand) -> Result<&'e HostArray, IrError> {
    match o {
        Operand::Const(a) => Ok(a),
        Operand::Var(v) => env
            .get(v.index())
            .and_then(|s| s.as_ref())
            .map(|s| s.get())
            .ok_or_else(|| IrError::Eval(format!("cpu backend: variable {} not computed", v.0))),
    }
}

impl CpuExecutable {
    fn run(&self, args: &[&HostArray]) -> Result<Vec<HostArray>, IrError> {
        let p = &self.program;
        if args.len() != p.invars.len() {
            return Err(IrError::Eval(format!(
                "cpu backend: expected {} arguments, got {}",
                p.invars.len(),
                args.len()
            )));
        }
        let mut env: Vec<Option<Slot>> = (0..p.n_vars).map(|_| None).collect();
        for (v, c) in p.constvars.iter().zip(self.consts.iter()) {
            env[v.index()] = Some(Slot::Borrowed(c));
        }
        for ((v, a), want) in p.invars.iter().zip(args).zip(&p.in_avals) {
            let got = a.aval();
            if got.dtype != want.dtype || got.shape != want.shape {
                return Err(IrError::Eval(format!(
                    "cpu backend: argument of type {got:?} where {want:?} was compiled"
                )));
            }
            env[v.index()] = Some(Slot::Borrowed(a));
        }
        let fetch = |env: &[Option<Slot>], v: Var| -> Result<(*mut u8, usize), IrError> {
            env.get(v.index())
                .and_then(|s| s.as_ref())
                .map(|s| raw(s.get()))
                .ok_or_else(|| IrError::Eval(format!("cpu backend: variable {} not computed", v.0)))
        };
        for step in &p.steps {
            match step {
                Step::Kernel {
                    kernel,
                    inputs,
                    out,
                    out_aval,
                    init,
                } => {
                    let (dt, shape) = out_aval;
                    let mut result = match init {
                        Some(op) => identity_array(*op, *dt, shape)?,
                        None => HostArray::zeros(*dt, shape),
                    };
                    let numel: usize = shape.iter().product();
                    let space_empty = inputs
                        .iter()
                        .any(|v| env[v.index()].as_ref().is_some_and(|s| s.get().is_empty()));
                    if numel > 0 && !space_empty {
                        let mut cargs = Vec::with_capacity(inputs.len() + 1);
                        for v in inputs {
                            let (ptr, len) = fetch(&env, *v)?;
                            cargs.push(Arg {
                                ptr,
                                len_bytes: len,
                                need_bytes: len,
                            });
                        }
                        let bytes = numel * dt.size_bytes();
                        let optr =
                            with_storage!(result.data_mut(), v => v.as_mut_ptr().cast::<u8>());
                        cargs.push(Arg {
                            ptr: optr,
                            len_bytes: bytes,
                            need_bytes: bytes,
                        });
                        kernel.call(&cargs, self.threads)?;
                    }
                    env[out.index()] = Some(Slot::Owned(result));
                }
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
                Step::Pad {
                    x,
                    value,
                    out,
                    config,
                    out_shape,
                } => {
                    let r = crate::copy::pad(
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
                    let r = crate::copy::concatenate(&arrays, *dim, out_shape)?;
                    env[out.index()] = Some(Slot::Owned(r));
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
                                .ok_or_else(|| {
                                    IrError::Eval("cpu backend: operand not computed".into())
                                })?,
                        })
                    };
                    let r = plan.run(&get(lhs)?, &get(rhs)?, self.threads)?;
                    env[out.index()] = Some(Slot::Owned(r));
                }
            }
        }
        // Results computed here move out (no copy) unless returned twice.
        let mut outs = Vec::with_capacity(p.outvars.len());
        for (k, o) in p.outvars.iter().enumerate() {
            outs.push(match o {
                Operand::Const(a) => a.clone(),
                Operand::Var(v) => {
                    let again = p.outvars[k + 1..]
                        .iter()
                        .any(|w| matches!(w, Operand::Var(w) if w == v));
                    let slot = env.get_mut(v.index()).ok_or_else(|| {
                        IrError::Eval(format!("cpu backend: output {} out of range", v.0))
                    })?;
                    match slot.take() {
                        Some(Slot::Owned(a)) if !again => a,
                        Some(s) => {
                            let a = s.get().clone();
                            *slot = Some(s);
                            a
                        }
                        None => {
                            return Err(IrError::Eval(format!(
                                "cpu backend: output {} not computed",
                                v.0
                            )))
                        }
                    }
                }
            });
        }
        Ok(outs)
    }
}

impl Executable for CpuExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let mut owned: Vec<HostArray> = Vec::new();
        let mut idx: Vec<Option<usize>> = Vec::with_capacity(args.len());
        for b in args {
            if b.as_any().downcast_ref::<HostBuffer>().is_some() {
                idx.push(None);
            } else {
                owned.push(b.to_host()?);
                idx.push(Some(owned.len() - 1));
            }
        }
        let arrays: Vec<&HostArray> = args
            .iter()
            .zip(&idx)
            .map(|(b, i)| match i {
                Some(i) => &owned[*i],
                None => match b.as_any().downcast_ref::<HostBuffer>() {
                    Some(h) => &h.array,
                    None => &owned[0],
                },
            })
            .collect();
        Ok(self
            .run(&arrays)?
            .into_iter()
            .map(|array| Arc::new(HostBuffer { array }) as Arc<dyn Buffer>)
            .collect())
    }
}
