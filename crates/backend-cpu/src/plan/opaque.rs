//! The static step of each opaque equation: one the fusion planner left
//! alone and that is not control flow (the program emitter's). A GEMM, a
//! fill, a copy, a line scan, or a native op (`crate::ops::native`, which only
//! defines ops: the steps that run them are built here). One exhaustive
//! dispatch by family; each family's rules take typed params.

use crate::ops::dot::DotPlan;
use crate::ops::native::{build_op, Checked, NativeOp};
use crate::run::exec::operand;
use crate::run::exec::Step;
use crate::util::{cannot, out_vars};
use jaxon_ir::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicRmwParams, GetParams, Indexer, LoadParams,
    NumProgramsParams, Pallas, PallasCallParams, ProgramIdParams, State, StoreParams, SwapParams,
};
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
    if ldt != rdt || dt != ldt || !crate::ops::dot::gemm_dtype(dt) {
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

/// The static shapes of an equation's operands (`Err` names the equation).
fn in_shapes(jaxpr: &Jaxpr, e: usize, eqn: &Eqn) -> Result<Vec<Vec<usize>>, IrError> {
    eqn.inputs
        .iter()
        .map(|a| {
            let sa = jaxpr
                .atom_aval(a)
                .and_then(|a| a.as_array().cloned())
                .ok_or_else(|| cannot(jaxpr, e, "operand is not an array"))?;
            sa.static_sizes()
                .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))
        })
        .collect()
}

/// The static (dtype, shape) of every output.
fn out_types(
    jaxpr: &Jaxpr,
    e: usize,
    eqn: &Eqn,
) -> Result<Vec<(jaxon_ir::DType, Vec<usize>)>, IrError> {
    eqn.outputs
        .iter()
        .map(|b| {
            let sa = jaxpr
                .binder_aval(b)
                .and_then(|a| a.as_array().cloned())
                .ok_or_else(|| cannot(jaxpr, e, "output is not an array"))?;
            let s = sa
                .static_sizes()
                .ok_or_else(|| cannot(jaxpr, e, "dynamic shapes are not supported yet"))?;
            Ok((sa.dtype, s))
        })
        .collect()
}

fn step(eqn: &Eqn, op: Box<dyn NativeOp>) -> Result<Step, IrError> {
    Ok(Step::Native {
        op,
        inputs: eqn.inputs.iter().map(operand).collect::<Result<_, _>>()?,
        outs: out_vars(eqn),
    })
}

/// Builds the native step of equation `e`, or an error naming it: refs
/// and Pallas primitives have their own steps, every other primitive the op
/// [`build_op`] builds for its static shapes (which says when it has none).
pub(crate) fn native_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn) -> Result<Step, IrError> {
    match &eqn.primitive {
        Primitive::State(p) => {
            let (kind, indexers) = match p {
                State::Get(GetParams { indexers }) => {
                    (crate::ops::native::state::Kind::Get, indexers)
                }
                State::Swap(SwapParams { indexers }) => {
                    (crate::ops::native::state::Kind::Swap, indexers)
                }
                State::AddUpdate(AddUpdateParams { indexers }) => {
                    (crate::ops::native::state::Kind::AddUpdate, indexers)
                }
            };
            ref_step(jaxpr, e, eqn, kind, indexers)
        }
        Primitive::Pallas(p) => pallas_step(jaxpr, e, eqn, p),
        Primitive::Elementwise(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Control(_)
        | Primitive::Collective(_) => built_step(jaxpr, e, eqn),
    }
}

/// The step of a Pallas primitive: masked loads/stores and atomics are ref
/// steps, `program_id`/`num_programs` read the grid point, `pallas_call`
/// compiles its kernel.
fn pallas_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn, p: &Pallas) -> Result<Step, IrError> {
    let (kind, indexers) = match p {
        Pallas::ProgramId(ProgramIdParams { axis }) => {
            return step(
                eqn,
                Box::new(crate::ops::native::pallas::ProgramId {
                    axis: *axis,
                    count: false,
                }),
            );
        }
        Pallas::NumPrograms(NumProgramsParams { axis }) => {
            return step(
                eqn,
                Box::new(crate::ops::native::pallas::ProgramId {
                    axis: *axis,
                    count: true,
                }),
            );
        }
        Pallas::PallasCall(PallasCallParams {
            kernel,
            grid,
            block_mappings,
            out_avals,
            input_output_aliases,
            ..
        }) => {
            let op = crate::ops::native::pallas::PallasOp::new(
                kernel,
                grid,
                block_mappings,
                eqn.inputs.len(),
                out_avals,
                input_output_aliases,
            )
            .map_err(|m| cannot(jaxpr, e, &m))?;
            return step(eqn, Box::new(op));
        }
        Pallas::Load(LoadParams {
            indexers,
            has_mask,
            has_other,
        }) => (
            crate::ops::native::state::Kind::Load {
                has_mask: *has_mask,
                has_other: *has_other,
            },
            indexers,
        ),
        Pallas::Store(StoreParams { indexers, has_mask }) => (
            crate::ops::native::state::Kind::Store {
                has_mask: *has_mask,
            },
            indexers,
        ),
        Pallas::AtomicRmw(AtomicRmwParams { op, indexers }) => {
            (crate::ops::native::state::Kind::Atomic(*op), indexers)
        }
        Pallas::AtomicCas(AtomicCasParams { indexers }) => {
            (crate::ops::native::state::Kind::Cas, indexers)
        }
    };
    ref_step(jaxpr, e, eqn, kind, indexers)
}

/// The step of a state primitive (`kind`) on a discharged ref.
fn ref_step(
    jaxpr: &Jaxpr,
    e: usize,
    eqn: &Eqn,
    kind: crate::ops::native::state::Kind,
    indexers: &[Indexer],
) -> Result<Step, IrError> {
    if !matches!(eqn.inputs.first(), Some(Atom::Var(_))) {
        return Err(cannot(jaxpr, e, "the first operand must be a Ref variable"));
    }
    // `prep::discharge_refs` gave each write an extra output: the
    // ref's updated value, a new variable.
    let n_outs = match kind {
        crate::ops::native::state::Kind::Get
        | crate::ops::native::state::Kind::AddUpdate
        | crate::ops::native::state::Kind::Load { .. }
        | crate::ops::native::state::Kind::Store { .. } => 1,
        crate::ops::native::state::Kind::Swap
        | crate::ops::native::state::Kind::Atomic(_)
        | crate::ops::native::state::Kind::Cas => 2,
    };
    if eqn.outputs.len() != n_outs {
        return Err(cannot(
            jaxpr,
            e,
            "`Ref`s are supported only as arguments of the compiled jaxpr",
        ));
    }
    step(
        eqn,
        Box::new(crate::ops::native::state::StateOp {
            kind,
            indexers: indexers.to_vec(),
        }),
    )
}

/// The step running [`build_op`]'s op for the equation's static shapes.
fn built_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn) -> Result<Step, IrError> {
    let ins = in_shapes(jaxpr, e, eqn)?;
    let outs = out_types(jaxpr, e, eqn)?;
    let op = build_op(&eqn.primitive, &ins, &outs).map_err(|m| cannot(jaxpr, e, &m))?;
    step(
        eqn,
        Box::new(Checked {
            name: eqn.primitive.name(),
            shapes: ins,
            op,
        }),
    )
}
