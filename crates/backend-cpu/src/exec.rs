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
    /// `cond`: runs `branches[clamp(index)]` on the operands.
    Cond {
        index: Operand,
        operands: Vec<Operand>,
        branches: Vec<SubProgram>,
        outs: Vec<Option<Var>>,
    },
    /// `while`: `carry = body(bconsts, carry)` while `cond(cconsts, carry)`.
    While {
        cond: SubProgram,
        body: SubProgram,
        cond_nconsts: usize,
        body_nconsts: usize,
        operands: Vec<Operand>,
        outs: Vec<Option<Var>>,
    },
    /// `scan`: `(carry, y) = body(consts, carry, x)` over the leading axis.
    Scan {
        body: SubProgram,
        length: usize,
        reverse: bool,
        num_consts: usize,
        num_carry: usize,
        operands: Vec<Operand>,
        outs: Vec<Option<Var>>,
        /// Dtype and full (stacked) shape of each `ys` output.
        ys: Vec<(DType, Vec<usize>)>,
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
    /// A native operation (`crate::native`) on operands, binding outputs.
    Native {
        op: Box<dyn crate::native::NativeOp>,
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
            .ok_or_else(|| IrError::Eval(format!("cpu backend: variable {} not computed", v.0))),
    }
}

impl CpuExecutable {
    fn run(&self, args: &[&HostArray]) -> Result<Vec<HostArray>, IrError> {
        run_program(&self.program, &self.consts, args, self.threads)
    }
}

/// A compiled nested jaxpr (a branch, a loop body) with its constants.
#[derive(Debug)]
pub(crate) struct SubProgram {
    pub program: Arc<Program>,
    pub consts: Arc<[HostArray]>,
}

impl SubProgram {
    /// Runs the program on arguments.
    pub(crate) fn call(
        &self,
        args: &[&HostArray],
        threads: usize,
    ) -> Result<Vec<HostArray>, IrError> {
        run_program(&self.program, &self.consts, args, threads)
    }
}

/// The rows `i` of an array along its leading dimension.
fn leading_row(x: &HostArray, i: usize) -> Result<HostArray, IrError> {
    let shape = x.shape();
    let rows = *shape
        .first()
        .ok_or_else(|| IrError::Eval("cpu backend: scan over a scalar".into()))?;
    let per = x.len().checked_div(rows).unwrap_or(0);
    if (i + 1) * per > x.len() {
        return Err(IrError::Eval(format!(
            "cpu backend: row {i} of an array of {rows} rows"
        )));
    }
    macro_rules! go {
        ($($v:ident),*) => {
            match x.data() {
                $(Storage::$v(v) => Storage::$v(v[i * per..(i + 1) * per].to_vec()),)*
            }
        };
    }
    let data = go!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64);
    HostArray::new(shape[1..].to_vec(), data)
}

/// Writes `row` as row `i` of `dst` along its leading dimension.
fn set_leading_row(dst: &mut HostArray, i: usize, row: &HostArray) -> Result<(), IrError> {
    let per = row.len();
    macro_rules! go {
        ($($v:ident),*) => {
            match (dst.data_mut(), row.data()) {
                $((Storage::$v(d), Storage::$v(s)) if d.len() >= (i + 1) * per => {
                    d[i * per..(i + 1) * per].copy_from_slice(s)
                })*
                _ => return Err(IrError::Eval("cpu backend: scan output does not fit".into())),
            }
        };
    }
    go!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64);
    Ok(())
}

/// Runs a program on arguments (checked against its compiled types).
fn run_program(
    p: &Program,
    consts: &[HostArray],
    args: &[&HostArray],
    threads: usize,
) -> Result<Vec<HostArray>, IrError> {
    {
        if args.len() != p.invars.len() {
            return Err(IrError::Eval(format!(
                "cpu backend: expected {} arguments, got {}",
                p.invars.len(),
                args.len()
            )));
        }
        let mut env: Vec<Option<Slot>> = (0..p.n_vars).map(|_| None).collect();
        for (v, c) in p.constvars.iter().zip(consts.iter()) {
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
                        kernel.call(&cargs, threads)?;
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
                Step::Cond {
                    index,
                    operands,
                    branches,
                    outs,
                } => {
                    let idx = operand_ref(&env, index)?;
                    if idx.len() != 1 || branches.is_empty() {
                        return Err(IrError::Eval(
                            "cpu backend: cond needs a scalar index".into(),
                        ));
                    }
                    let i = idx.data().get_i64(0).clamp(0, branches.len() as i64 - 1) as usize;
                    let args = operands
                        .iter()
                        .map(|o| operand_ref(&env, o))
                        .collect::<Result<Vec<_>, _>>()?;
                    let res = branches[i].call(&args, threads)?;
                    bind(&mut env, outs, res);
                }
                Step::While {
                    cond,
                    body,
                    cond_nconsts,
                    body_nconsts,
                    operands,
                    outs,
                } => {
                    let all = operands
                        .iter()
                        .map(|o| operand_ref(&env, o))
                        .collect::<Result<Vec<_>, _>>()?;
                    let (cc, rest) = all.split_at((*cond_nconsts).min(all.len()));
                    let (bc, init) = rest.split_at((*body_nconsts).min(rest.len()));
                    let mut carry: Vec<HostArray> = init.iter().map(|a| (*a).clone()).collect();
                    loop {
                        let args: Vec<&HostArray> =
                            cc.iter().copied().chain(carry.iter()).collect();
                        let p = cond.call(&args, threads)?;
                        let go = p
                            .first()
                            .is_some_and(|a| a.len() == 1 && a.data().get_i64(0) != 0);
                        if !go {
                            break;
                        }
                        let args: Vec<&HostArray> =
                            bc.iter().copied().chain(carry.iter()).collect();
                        carry = body.call(&args, threads)?;
                    }
                    bind(&mut env, outs, carry);
                }
                Step::Scan {
                    body,
                    length,
                    reverse,
                    num_consts,
                    num_carry,
                    operands,
                    outs,
                    ys,
                } => {
                    let all = operands
                        .iter()
                        .map(|o| operand_ref(&env, o))
                        .collect::<Result<Vec<_>, _>>()?;
                    let (consts, rest) = all.split_at((*num_consts).min(all.len()));
                    let (init, xs) = rest.split_at((*num_carry).min(rest.len()));
                    let mut carry: Vec<HostArray> = init.iter().map(|a| (*a).clone()).collect();
                    let mut stacked: Vec<HostArray> =
                        ys.iter().map(|(dt, s)| HostArray::zeros(*dt, s)).collect();
                    for step in 0..*length {
                        let i = if *reverse { length - 1 - step } else { step };
                        let x_rows = xs
                            .iter()
                            .map(|x| leading_row(x, i))
                            .collect::<Result<Vec<_>, _>>()?;
                        let args: Vec<&HostArray> = consts
                            .iter()
                            .copied()
                            .chain(carry.iter())
                            .chain(x_rows.iter())
                            .collect();
                        let mut res = body.call(&args, threads)?;
                        let y_rows = res.split_off((*num_carry).min(res.len()));
                        carry = res;
                        for (dst, row) in stacked.iter_mut().zip(&y_rows) {
                            set_leading_row(dst, i, row)?;
                        }
                    }
                    carry.extend(stacked);
                    bind(&mut env, outs, carry);
                }
                Step::Cumulative {
                    op,
                    x,
                    out,
                    axis,
                    reverse,
                } => {
                    let r =
                        crate::cumulative::cumulative(*op, operand_ref(&env, x)?, *axis, *reverse)?;
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
                    let pieces = crate::copy::split(operand_ref(&env, x)?, *axis, sizes)?;
                    bind(&mut env, outs, pieces);
                }
                Step::ArgReduce {
                    max,
                    x,
                    out,
                    axis,
                    index_dtype,
                } => {
                    let r = crate::cumulative::arg_reduce(
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
                                .ok_or_else(|| {
                                    IrError::Eval("cpu backend: operand not computed".into())
                                })?,
                        })
                    };
                    let r = plan.run(&get(lhs)?, &get(rhs)?, threads)?;
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
