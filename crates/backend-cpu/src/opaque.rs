//! The static step of each opaque equation: one the fusion planner left
//! alone and that is not control flow (the program emitter's). A GEMM, a
//! fill, a copy, a line scan, or a native op (`crate::native`). One
//! exhaustive dispatch by family; each family's rules take typed params.

use crate::compile::{cannot, operand, out_vars};
use crate::dot::DotPlan;
use crate::exec::Step;
use crate::native::native_step;
use jaxon_ir::primitive::{
    ArgReduceParams, Collective, ConcatenateParams, Control, CumulativeParams, DotGeneralParams,
    Elementwise, Empty2Params, Indexing, IotaParams, Linalg, PadParams, Reduction, ReshapeParams,
    SplitParams, Structural,
};
use jaxon_ir::{Atom, Binder, Eqn, IrError, Jaxpr, Primitive};

/// Builds the step of opaque equation `e`, or an error naming it.
pub(crate) fn opaque_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn) -> Result<Step, IrError> {
    // Elementwise and shape ops reach here only when the planner could
    // not fuse them (dynamic shapes, `Ref` operands).
    let unfused = || Err(cannot(jaxpr, e, "only static shapes are supported yet"));
    let unsupported = || Err(cannot(jaxpr, e, "not supported by the cpu backend yet"));
    match &eqn.primitive {
        Primitive::Elementwise(p) => match p {
            Elementwise::ReducePrecision(_) | Elementwise::BitcastConvertType(_) => {
                native_step(jaxpr, e, eqn)
            }
            Elementwise::Unary(_)
            | Elementwise::Binary(_)
            | Elementwise::IntegerPow(_)
            | Elementwise::Round(_)
            | Elementwise::ConvertElementType(_)
            | Elementwise::SelectN
            | Elementwise::Clamp => unfused(),
        },
        Primitive::Structural(p) => structural_step(jaxpr, e, eqn, p),
        Primitive::Indexing(p) => match p {
            Indexing::Slice(_) => unfused(),
            Indexing::DynamicSlice(_)
            | Indexing::DynamicUpdateSlice
            | Indexing::Gather(_)
            | Indexing::Scatter(_) => native_step(jaxpr, e, eqn),
        },
        Primitive::Reduction(p) => reduction_step(jaxpr, e, eqn, p),
        Primitive::Linalg(Linalg::DotGeneral(p)) => dot_step(jaxpr, e, eqn, p),
        Primitive::Linalg(Linalg::ConvGeneralDilated(_)) => native_step(jaxpr, e, eqn),
        // `native_step` has a rule for every state and Pallas primitive.
        Primitive::State(_) | Primitive::Pallas(_) => native_step(jaxpr, e, eqn),
        Primitive::Control(p) => match p {
            Control::Cond(_) | Control::While(_) | Control::Scan(_) | Control::ForLoop(_) => {
                Err(cannot(
                    jaxpr,
                    e,
                    "internal error: control flow is handled by the program emitter",
                ))
            }
            Control::Jit(_)
            | Control::CustomJvpCall(_)
            | Control::CustomVjpCall(_)
            | Control::Remat(_) => unsupported(),
        },
        Primitive::Collective(
            Collective::AllReduce(_) | Collective::AllGather(_) | Collective::AxisIndex(_),
        ) => unsupported(),
    }
}

/// `dot_general`: a GEMM step, or (mixed, half-precision and boolean
/// products) the native op that casts first.
fn dot_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn, p: &DotGeneralParams) -> Result<Step, IrError> {
    let DotGeneralParams {
        dimension_numbers,
        preferred_element_type,
        ..
    } = p;

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
        return native_step(jaxpr, e, eqn);
    }
    let plan = DotPlan::new(&ls, &rs, dimension_numbers, dt).map_err(|m| cannot(jaxpr, e, &m))?;
    Ok(Step::Dot {
        lhs: operand(l)?,
        rhs: operand(r)?,
        out: *out,
        plan,
    })
}

/// The structural family: fills and copies; reshapes that transpose are
/// native ops; the rest are index maps of fused kernels.
fn structural_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn, p: &Structural) -> Result<Step, IrError> {
    match p {
        Structural::Iota(IotaParams {
            dtype,
            shape,
            dimension,
        }) => {
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
        Structural::Reshape(ReshapeParams {
            dimensions: Some(_),
            ..
        })
        | Structural::Tile(_)
        | Structural::Stack(_) => native_step(jaxpr, e, eqn),
        Structural::Reshape(ReshapeParams {
            dimensions: None, ..
        })
        | Structural::BroadcastInDim(_)
        | Structural::Transpose(_)
        | Structural::Rev(_)
        | Structural::Squeeze(_) => Err(cannot(jaxpr, e, "only static shapes are supported yet")),
        Structural::Pad(PadParams { padding_config }) => {
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
        Structural::Concatenate(ConcatenateParams { dimension }) => {
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
        Structural::Empty2(Empty2Params { dtype }) => match eqn.outputs.as_slice() {
            [Binder::Var(out)] => Ok(Step::Zeros {
                out: *out,
                dtype: *dtype,
            }),
            _ => Err(cannot(jaxpr, e, "empty2 has one output")),
        },
        Structural::Split(SplitParams { sizes, axis }) => {
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
    }
}

/// The reduction family: line scans; sorts are native ops; reductions
/// reach here only unfused.
fn reduction_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn, p: &Reduction) -> Result<Step, IrError> {
    match p {
        Reduction::Cumulative(CumulativeParams { op, axis, reverse }) => {
            let ([x], [Binder::Var(out)]) = (eqn.inputs.as_slice(), eqn.outputs.as_slice()) else {
                return Err(cannot(jaxpr, e, "takes one operand and has one output"));
            };
            let dt = jaxpr
                .atom_aval(x)
                .map(|a| a.dtype())
                .ok_or_else(|| cannot(jaxpr, e, "operand out of range"))?;
            if *op == jaxon_ir::primitive::CumulativeOp::Cumlogsumexp && !dt.is_float() {
                return Err(cannot(jaxpr, e, format!("cumlogsumexp of {dt}")));
            }
            Ok(Step::Cumulative {
                op: *op,
                x: operand(x)?,
                out: *out,
                axis: *axis,
                reverse: *reverse,
            })
        }
        Reduction::ArgReduce(ArgReduceParams {
            op,
            axes,
            index_dtype,
        }) => {
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
        Reduction::Sort(_) | Reduction::TopK(_) => native_step(jaxpr, e, eqn),
        Reduction::Reduce(_) => Err(cannot(jaxpr, e, "only static shapes are supported yet")),
    }
}

/// The static shape of output `v` of equation `e`.
fn static_out(jaxpr: &Jaxpr, e: usize, v: jaxon_ir::Var) -> Result<Vec<usize>, IrError> {
    jaxpr
        .try_aval(v)
        .and_then(|a| a.as_array())
        .and_then(|a| a.static_sizes())
        .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))
}
