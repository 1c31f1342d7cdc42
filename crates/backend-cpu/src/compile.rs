//! The compile pipeline: simplify (ir passes) → fusion plan → one Cranelift
//! function per fused group, GEMM steps for `dot_general` → machine code.
//! With `JAXON_DUMP=dir` it writes the jaxpr, the plan and each function's
//! CLIF to `dir`.

use crate::dot::DotPlan;
use crate::exec::{Operand, Program, Step};
use crate::jit::CodeBuilder;
use crate::kernel::{compile_group, GenError};
use jaxon_ir::passes::{plan_fusion, FusionPlan, GroupKind};
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{Atom, Binder, ClosedJaxpr, Eqn, HostArray, IrError, Jaxpr, Primitive};
use std::fmt::Write as _;

/// Code generation options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Options {
    /// Contract `a*b + c` into fused multiply-adds (not bit-identical to
    /// the interpreter; more accurate).
    pub contract_fma: bool,
}

/// A short description of equation `i` for error messages.
pub(crate) fn describe_eqn(jaxpr: &Jaxpr, i: usize) -> String {
    let Some(eqn) = jaxpr.eqns.get(i) else {
        return format!("eqn {i}");
    };
    let ty = |a: Option<jaxon_ir::Aval>| match a {
        Some(a) => {
            let s = a.array();
            let dims: Vec<String> = s
                .shape
                .iter()
                .map(|d| match d {
                    jaxon_ir::Dim::Const(n) => n.to_string(),
                    jaxon_ir::Dim::Var(v) => format!("v{}", v.0),
                })
                .collect();
            format!("{}[{}]", s.dtype, dims.join(","))
        }
        None => "?".into(),
    };
    let outs: Vec<String> = eqn
        .outputs
        .iter()
        .map(|b| match b {
            Binder::Var(v) => format!("v{}:{}", v.0, ty(jaxpr.try_aval(*v).cloned())),
            Binder::Drop(a) => format!("_:{}", ty(Some(a.clone()))),
        })
        .collect();
    let ins: Vec<String> = eqn
        .inputs
        .iter()
        .map(|a| match a {
            Atom::Var(v) => format!("v{}", v.0),
            Atom::Lit(l) => format!("{l}"),
        })
        .collect();
    format!(
        "eqn {i}: {} = {} {}",
        outs.join(" "),
        eqn.primitive.name(),
        ins.join(" ")
    )
}

pub(crate) fn cannot(jaxpr: &Jaxpr, i: usize, why: &str) -> IrError {
    let name = jaxpr.eqns.get(i).map_or("?", |e| e.primitive.name());
    IrError::Eval(format!(
        "cpu backend: cannot compile `{name}` ({}): {why}",
        describe_eqn(jaxpr, i)
    ))
}

pub(crate) fn literal_array(l: &jaxon_ir::Literal) -> Result<HostArray, IrError> {
    use jaxon_ir::{Scalar, Storage};
    let data = match (l.value, l.dtype) {
        (Scalar::Int(i), jaxon_ir::DType::I64) => Storage::I64(vec![i]),
        (Scalar::UInt(u), jaxon_ir::DType::U64) => Storage::U64(vec![u]),
        _ => Storage::from_f64(l.dtype, &[l.as_f64()]),
    };
    HostArray::new(Vec::new(), data)
}

pub(crate) fn operand(a: &Atom) -> Result<Operand, IrError> {
    Ok(match a {
        Atom::Var(v) => Operand::Var(*v),
        Atom::Lit(l) => Operand::Const(literal_array(l)?),
    })
}

fn dump_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("JAXON_DUMP")
        .filter(|d| !d.is_empty())
        .map(Into::into)
}

/// Compiles a simplified closed jaxpr into a program. `key` is its printed
/// text (used to name dump files).
pub(crate) fn compile_program(
    closed: &ClosedJaxpr,
    key: &str,
    opts: Options,
) -> Result<Program, IrError> {
    let jaxpr: &Jaxpr = &closed.jaxpr;
    let mut in_avals = Vec::new();
    // `Ref` arguments are discharged: passed as arrays, final values
    // returned after the outputs.
    let mut ref_outs = Vec::new();
    for v in &jaxpr.invars {
        let a = jaxpr
            .try_aval(*v)
            .ok_or_else(|| IrError::Invalid("invar out of range".into()))?;
        let sa = match a {
            jaxon_ir::Aval::Array(sa) => sa,
            jaxon_ir::Aval::Ref(r) => {
                ref_outs.push(Operand::Var(*v));
                &r.inner
            }
        };
        if sa.static_sizes().is_none() {
            return Err(IrError::Eval(
                "cpu backend: dynamic shapes are not supported yet".into(),
            ));
        }
        in_avals.push(sa.clone());
    }
    let plan = plan_fusion(jaxpr)?;
    let dump = dump_dir();
    let mut clif = String::new();
    let mut cb = CodeBuilder::new()?;
    let cfg = cranelift_module::Module::target_config(cb.module());
    // Kernel steps hold a kernel index until the module is finalised.
    let mut pending: Vec<Result<Step, (usize, KernelStep)>> = Vec::new();
    for (gi, g) in plan.groups.iter().enumerate() {
        match &g.kind {
            GroupKind::Loop | GroupKind::Reduce { .. } => {
                let code = compile_group(jaxpr, g, cfg, opts.contract_fma).map_err(
                    |GenError { eqn, message }| cannot(jaxpr, eqn.unwrap_or(g.root()), &message),
                )?;
                if dump.is_some() {
                    let _ = writeln!(clif, "; group {gi}\n{}", code.func.display());
                }
                let out = *g
                    .outputs
                    .first()
                    .ok_or_else(|| cannot(jaxpr, g.root(), "fused group without output"))?;
                let aval = jaxpr
                    .try_aval(out)
                    .and_then(|a| a.as_array())
                    .ok_or_else(|| cannot(jaxpr, g.root(), "output is not an array"))?;
                let shape = aval
                    .static_sizes()
                    .ok_or_else(|| cannot(jaxpr, g.root(), "dynamic output shape"))?;
                let numel: usize = g.space.iter().product();
                let k = cb.define(
                    &format!("g{gi}"),
                    code.func,
                    crate::jit::Shape {
                        n_args: code.n_args,
                        extent: code.extent,
                        splittable: code.splittable,
                        work_per_step: numel / code.extent.max(1),
                    },
                )?;
                // Half-precision reductions accumulate in f32, then round.
                let acc_dt = code.reduce.map_or(aval.dtype, |(_, d)| d);
                pending.push(Err((
                    k,
                    KernelStep {
                        inputs: g.inputs.clone(),
                        out,
                        out_aval: (acc_dt, shape),
                        init: code.reduce.map(|(op, _)| op),
                    },
                )));
                if acc_dt != aval.dtype {
                    pending.push(Ok(crate::native::cast_step(out, aval.dtype)));
                }
            }
            GroupKind::Opaque => {
                let e = g.root();
                pending.push(Ok(opaque_step(jaxpr, e, &jaxpr.eqns[e], opts)?));
            }
        }
    }
    let kernels = cb.finish()?;
    let mut steps = Vec::with_capacity(pending.len());
    for p in pending {
        steps.push(match p {
            Ok(s) => s,
            Err((k, ks)) => Step::Kernel {
                kernel: kernels
                    .get(k)
                    .cloned()
                    .ok_or_else(|| IrError::Eval("cpu backend: missing kernel".into()))?,
                inputs: ks.inputs,
                out: ks.out,
                out_aval: ks.out_aval,
                init: ks.init,
            },
        });
    }
    if let Some(dir) = dump {
        write_dump(&dir, key, &plan, &clif);
    }
    Ok(Program {
        steps,
        n_vars: jaxpr.vars.len(),
        constvars: jaxpr.constvars.clone(),
        invars: jaxpr.invars.clone(),
        in_avals,
        outvars: jaxpr
            .outvars
            .iter()
            .map(operand)
            .chain(ref_outs.into_iter().map(Ok))
            .collect::<Result<_, _>>()?,
    })
}

/// A kernel step before its code is finalised.
struct KernelStep {
    inputs: Vec<jaxon_ir::Var>,
    out: jaxon_ir::Var,
    out_aval: (jaxon_ir::DType, Vec<usize>),
    init: Option<jaxon_ir::primitive::ReduceOp>,
}

fn opaque_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn, opts: Options) -> Result<Step, IrError> {
    match &eqn.primitive {
        Primitive::DotGeneral {
            dimension_numbers,
            preferred_element_type,
            ..
        } => {
            let [l, r] = eqn.inputs.as_slice() else {
                return Err(cannot(jaxpr, e, "dot_general takes two operands"));
            };
            let [Binder::Var(out)] = eqn.outputs.as_slice() else {
                return Err(cannot(jaxpr, e, "dot_general has one output"));
            };
            let shape = |a: &Atom| -> Result<(jaxon_ir::DType, Vec<usize>), IrError> {
                let av = jaxpr
                    .atom_aval(a)
                    .ok_or_else(|| cannot(jaxpr, e, "operand out of range"))?;
                let s = av
                    .as_array()
                    .and_then(|s| s.static_sizes())
                    .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))?;
                Ok((av.dtype(), s))
            };
            let (ldt, ls) = shape(l)?;
            let (rdt, rs) = shape(r)?;
            let dt = preferred_element_type.unwrap_or(ldt);
            if ldt != rdt || dt != ldt || !crate::dot::gemm_dtype(dt) {
                // Mixed, half-precision and boolean products cast first.
                return crate::native::native_step(jaxpr, e, eqn, opts);
            }
            let plan =
                DotPlan::new(&ls, &rs, dimension_numbers, dt).map_err(|m| cannot(jaxpr, e, &m))?;
            Ok(Step::Dot {
                lhs: operand(l)?,
                rhs: operand(r)?,
                out: *out,
                plan,
            })
        }
        Primitive::Iota {
            dtype,
            shape,
            dimension,
        } => {
            let [Binder::Var(out)] = eqn.outputs.as_slice() else {
                return Err(cannot(jaxpr, e, "iota has one output"));
            };
            let shape: Option<Vec<usize>> = shape.iter().copied().collect();
            match shape {
                Some(shape) if eqn.inputs.is_empty() && *dimension < shape.len() => {
                    Ok(Step::Iota {
                        out: *out,
                        dtype: *dtype,
                        shape,
                        dimension: *dimension,
                    })
                }
                _ => Err(cannot(jaxpr, e, "dynamic shapes are not supported yet")),
            }
        }
        Primitive::Reshape {
            dimensions: Some(_),
            ..
        } => crate::native::native_step(jaxpr, e, eqn, opts),
        // Elementwise and shape ops reach here only when the planner could
        // not fuse them (dynamic shapes, `Ref` operands).
        Primitive::Unary(_)
        | Primitive::Binary(_)
        | Primitive::IntegerPow { .. }
        | Primitive::Round { .. }
        | Primitive::ConvertElementType { .. }
        | Primitive::SelectN
        | Primitive::Clamp
        | Primitive::BroadcastInDim { .. }
        | Primitive::Reshape { .. }
        | Primitive::Transpose { .. }
        | Primitive::Slice { .. }
        | Primitive::Rev { .. }
        | Primitive::Squeeze { .. }
        | Primitive::Reduce { .. } => Err(cannot(jaxpr, e, "only static shapes are supported yet")),
        Primitive::Pad { padding_config } => {
            let ([x, value], [Binder::Var(out)]) = (eqn.inputs.as_slice(), eqn.outputs.as_slice())
            else {
                return Err(cannot(jaxpr, e, "pad takes an operand and a value"));
            };
            let config: Option<Vec<(i64, i64, i64)>> = padding_config
                .iter()
                .map(|t| match t.values.as_slice() {
                    [lo, hi, interior] if *interior >= 0 => Some((*lo, *hi, *interior)),
                    _ => None,
                })
                .collect();
            let config = config.ok_or_else(|| cannot(jaxpr, e, "bad padding_config"))?;
            Ok(Step::Pad {
                x: operand(x)?,
                value: operand(value)?,
                out: *out,
                config,
                out_shape: static_out(jaxpr, e, *out)?,
            })
        }
        Primitive::Concatenate { dimension } => {
            let [Binder::Var(out)] = eqn.outputs.as_slice() else {
                return Err(cannot(jaxpr, e, "concatenate has one output"));
            };
            Ok(Step::Concat {
                xs: eqn.inputs.iter().map(operand).collect::<Result<_, _>>()?,
                out: *out,
                dim: *dimension,
                out_shape: static_out(jaxpr, e, *out)?,
            })
        }
        Primitive::Cond { branches } => {
            let (index, operands) = eqn
                .inputs
                .split_first()
                .ok_or_else(|| cannot(jaxpr, e, "cond without an index"))?;
            Ok(Step::Cond {
                index: operand(index)?,
                operands: operands.iter().map(operand).collect::<Result<_, _>>()?,
                branches: branches
                    .iter()
                    .map(|b| compile_sub(b, opts).map_err(|m| cannot(jaxpr, e, &m)))
                    .collect::<Result<_, _>>()?,
                outs: out_vars(eqn),
            })
        }
        Primitive::While {
            cond_jaxpr,
            body_jaxpr,
            cond_nconsts,
            body_nconsts,
        } => Ok(Step::While {
            cond: compile_sub(cond_jaxpr, opts).map_err(|m| cannot(jaxpr, e, &m))?,
            body: compile_sub(body_jaxpr, opts).map_err(|m| cannot(jaxpr, e, &m))?,
            cond_nconsts: *cond_nconsts,
            body_nconsts: *body_nconsts,
            operands: eqn.inputs.iter().map(operand).collect::<Result<_, _>>()?,
            outs: out_vars(eqn),
        }),
        Primitive::Scan {
            jaxpr: body,
            length,
            reverse,
            num_consts,
            num_carry,
            ..
        } => {
            let ys = eqn
                .outputs
                .iter()
                .skip(*num_carry)
                .map(|b| {
                    let a = jaxpr.binder_aval(b).and_then(|a| a.as_array())?;
                    Some((a.dtype, a.static_sizes()?))
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))?;
            Ok(Step::Scan {
                body: compile_sub(body, opts).map_err(|m| cannot(jaxpr, e, &m))?,
                length: *length,
                reverse: *reverse,
                num_consts: *num_consts,
                num_carry: *num_carry,
                operands: eqn.inputs.iter().map(operand).collect::<Result<_, _>>()?,
                outs: out_vars(eqn),
                ys,
            })
        }
        Primitive::Cumulative { op, axis, reverse } => {
            let ([x], [Binder::Var(out)]) = (eqn.inputs.as_slice(), eqn.outputs.as_slice()) else {
                return Err(cannot(jaxpr, e, "takes one operand and has one output"));
            };
            let dt = jaxpr
                .atom_aval(x)
                .map(|a| a.dtype())
                .ok_or_else(|| cannot(jaxpr, e, "operand out of range"))?;
            if *op == jaxon_ir::primitive::CumulativeOp::Cumlogsumexp && !dt.is_float() {
                return Err(cannot(jaxpr, e, &format!("cumlogsumexp of {dt}")));
            }
            Ok(Step::Cumulative {
                op: *op,
                x: operand(x)?,
                out: *out,
                axis: *axis,
                reverse: *reverse,
            })
        }
        Primitive::Empty2 { dtype } => match eqn.outputs.as_slice() {
            [Binder::Var(out)] => Ok(Step::Zeros {
                out: *out,
                dtype: *dtype,
            }),
            _ => Err(cannot(jaxpr, e, "empty2 has one output")),
        },
        Primitive::Split { sizes, axis } => {
            let [x] = eqn.inputs.as_slice() else {
                return Err(cannot(jaxpr, e, "split takes one operand"));
            };
            Ok(Step::Split {
                x: operand(x)?,
                axis: *axis,
                sizes: sizes.to_usizes(),
                outs: out_vars(eqn),
            })
        }
        Primitive::ArgReduce {
            op,
            axes,
            index_dtype,
        } => {
            let ([x], [Binder::Var(out)], [axis]) = (
                eqn.inputs.as_slice(),
                eqn.outputs.as_slice(),
                axes.as_slice(),
            ) else {
                return Err(cannot(jaxpr, e, "takes one operand and one axis"));
            };
            Ok(Step::ArgReduce {
                max: *op == jaxon_ir::primitive::ArgOp::Argmax,
                x: operand(x)?,
                out: *out,
                axis: *axis,
                index_dtype: *index_dtype,
            })
        }
        Primitive::ReducePrecision { .. }
        | Primitive::BitcastConvertType { .. }
        | Primitive::DynamicSlice { .. }
        | Primitive::DynamicUpdateSlice
        | Primitive::Gather { .. }
        | Primitive::Scatter { .. }
        | Primitive::Tile { .. }
        | Primitive::Stack { .. }
        | Primitive::ConvGeneralDilated { .. }
        | Primitive::Sort { .. }
        | Primitive::TopK { .. }
        | Primitive::ForLoop { .. }
        | Primitive::Get { .. }
        | Primitive::Swap { .. }
        | Primitive::AddUpdate { .. } => crate::native::native_step(jaxpr, e, eqn, opts),
        Primitive::Jit { .. }
        | Primitive::CustomJvpCall { .. }
        | Primitive::CustomVjpCall { .. }
        | Primitive::Remat { .. }
        | Primitive::ProgramId { .. }
        | Primitive::NumPrograms { .. }
        | Primitive::Load { .. }
        | Primitive::Store { .. }
        | Primitive::AtomicRmw { .. }
        | Primitive::AtomicCas { .. }
        | Primitive::PallasCall { .. }
        | Primitive::AllReduce { .. }
        | Primitive::AllGather { .. }
        | Primitive::AxisIndex { .. } => {
            Err(cannot(jaxpr, e, "not supported by the cpu backend yet"))
        }
    }
}

/// Compiles a nested closed jaxpr (a branch or loop body) on its own.
pub(crate) fn compile_sub(
    closed: &ClosedJaxpr,
    opts: Options,
) -> Result<crate::exec::SubProgram, String> {
    let simple = jaxon_ir::passes::simplify(closed).map_err(|e| e.to_string())?;
    if simple
        .jaxpr
        .in_avals()
        .iter()
        .any(|a| a.as_array().is_none())
    {
        return Err("`Ref` operands of nested jaxprs are not supported yet".into());
    }
    let key = fingerprint(&simple.jaxpr);
    let program = compile_program(&simple, &key, opts).map_err(|e| format!("in its body: {e}"))?;
    Ok(crate::exec::SubProgram {
        program: std::sync::Arc::new(program),
        consts: simple.consts,
    })
}

/// The variables bound by an equation's outputs (`None` for `_`).
pub(crate) fn out_vars(eqn: &Eqn) -> Vec<Option<jaxon_ir::Var>> {
    eqn.outputs
        .iter()
        .map(|b| match b {
            Binder::Var(v) => Some(*v),
            Binder::Drop(_) => None,
        })
        .collect()
}

/// The static shape of output `v` of equation `e`.
fn static_out(jaxpr: &Jaxpr, e: usize, v: jaxon_ir::Var) -> Result<Vec<usize>, IrError> {
    jaxpr
        .try_aval(v)
        .and_then(|a| a.as_array())
        .and_then(|a| a.static_sizes())
        .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))
}

fn write_dump(dir: &std::path::Path, key: &str, plan: &FusionPlan, clif: &str) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    let stem = format!("{:016x}", h.finish());
    // Dumps are best-effort debugging output: failures are logged, not fatal.
    let res = std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(dir.join(format!("{stem}.jaxpr.txt")), key))
        .and_then(|_| std::fs::write(dir.join(format!("{stem}.plan.txt")), plan.to_string()))
        .and_then(|_| std::fs::write(dir.join(format!("{stem}.clif")), clif));
    if let Err(e) = res {
        tracing::warn!("JAXON_DUMP: cannot write to {}: {e}", dir.display());
    }
}

/// The printed text of a jaxpr: the cache key (types are part of the text).
pub(crate) fn fingerprint(jaxpr: &Jaxpr) -> String {
    print_jaxpr(jaxpr)
}
