//! The static step of each opaque equation: one the fusion planner left
//! alone and that is not control flow (the program emitter's). A GEMM the
//! program function calls, or a step: one native op (`crate::ops::native`
//! defines the ops; the steps that run them are built here) on the
//! equation's operands. One exhaustive dispatch by family.

use crate::ops::dot::DotPlan;
use crate::ops::native::boxdot::BoxDot;
use crate::ops::native::{build_op, Checked, NativeOp};
use crate::run::exec::Step;
use crate::run::exec::{operand, Operand};
use crate::util::{cannot, out_vars};
use jaxon_ir::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicRmwParams, GetParams, Indexer, LoadParams,
    NumProgramsParams, Pallas, ProgramIdParams, State, StoreParams, SwapParams,
};
use jaxon_ir::primitive::{
    Collective, Control, DotGeneralParams, Elementwise, Indexing, Linalg, Marker, Reduction,
    Structural,
};
use jaxon_ir::{Atom, Binder, Eqn, IrError, Jaxpr, Primitive, Var};

/// What an opaque equation compiles to.
pub(crate) enum Opaque {
    /// A `dot_general` the program function calls as a GEMM (`tramp_dot`).
    Gemm {
        plan: Box<DotPlan>,
        lhs: Operand,
        rhs: Operand,
        out: Var,
    },
    /// Any other step.
    Step(Step),
}

impl Opaque {
    /// The step that runs it (a GEMM as a step: when an operand is a
    /// constant, the program function cannot pass it).
    pub(crate) fn into_step(self) -> Step {
        match self {
            Opaque::Gemm {
                plan,
                lhs,
                rhs,
                out,
            } => Step {
                op: Box::new(BoxDot {
                    plan: *plan,
                    reads: [None, None],
                    acc: false,
                }),
                inputs: vec![lhs, rhs],
                outs: vec![Some(out)],
            },
            Opaque::Step(step) => step,
        }
    }
}

/// Builds what opaque equation `e` compiles to, or an error naming it
/// (`opts`: the backend's, for a `shard_map` body compiled here).
pub(crate) fn opaque_step(
    jaxpr: &Jaxpr,
    e: usize,
    eqn: &Eqn,
    opts: crate::util::Options,
) -> Result<Opaque, IrError> {
    // Elementwise ops reach here only when the planner could not fuse
    // them (dynamic shapes, `Ref` operands).
    let unfused = || Err(cannot(jaxpr, e, "only static shapes are supported yet"));
    let unsupported = || Err(cannot(jaxpr, e, "not supported by the cpu backend yet"));
    let native = || native_step(jaxpr, e, eqn).map(Opaque::Step);
    match &eqn.primitive {
        Primitive::Elementwise(p) => match p {
            Elementwise::ReducePrecision(_) | Elementwise::BitcastConvertType(_) => native(),
            Elementwise::Unary(_)
            | Elementwise::Binary(_)
            | Elementwise::IntegerPow(_)
            | Elementwise::Round(_)
            | Elementwise::ConvertElementType(_)
            | Elementwise::SelectN
            | Elementwise::Clamp
            | Elementwise::RegularizedIncompleteBeta => unfused(),
            // Complex programs take the slow path (`crate::complex`).
            Elementwise::Complex | Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_) => {
                unsupported()
            }
        },
        // Index maps of fused kernels, fills and copies: native ops when
        // no kernel took them.
        Primitive::Structural(
            Structural::Iota(_)
            | Structural::Pad(_)
            | Structural::Concatenate(_)
            | Structural::Empty2(_)
            | Structural::Split(_)
            | Structural::Tile(_)
            | Structural::Stack(_)
            | Structural::Reshape(_)
            | Structural::BroadcastInDim(_)
            | Structural::Transpose(_)
            | Structural::Rev(_)
            | Structural::Squeeze(_),
        ) => native(),
        Primitive::Indexing(
            Indexing::Slice(_)
            | Indexing::DynamicSlice(_)
            | Indexing::DynamicUpdateSlice
            | Indexing::Gather(_)
            | Indexing::Scatter(_),
        ) => native(),
        // Line scans, sorts, and reductions no fused group took.
        Primitive::Reduction(
            Reduction::Cumulative(_)
            | Reduction::ArgReduce(_)
            | Reduction::Sort(_)
            | Reduction::TopK(_)
            | Reduction::Reduce(_),
        ) => native(),
        Primitive::Linalg(Linalg::DotGeneral(p)) => dot_step(jaxpr, e, eqn, p),
        Primitive::Linalg(Linalg::ConvGeneralDilated(_)) => native(),
        Primitive::Linalg(
            Linalg::Cholesky
            | Linalg::TriangularSolve(_)
            | Linalg::Lu
            | Linalg::Qr(_)
            | Linalg::Eigh(_)
            | Linalg::Svd(_)
            | Linalg::Schur(_)
            | Linalg::TridiagonalSolve(_),
        ) => native(),
        Primitive::Linalg(Linalg::Fft(_)) => unsupported(),
        Primitive::Window(_) | Primitive::Random(_) => native(),
        // `native_step` has a rule for every state and Pallas primitive.
        Primitive::State(_) | Primitive::Pallas(_) => native(),
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
            | Control::Remat(_)
            | Control::CustomLinearSolve(_) => unsupported(),
            // SPMD over a mesh: the body compiled once, one instance per
            // device (`plan::spmd`).
            Control::ShardMap(p) => {
                let op = crate::plan::spmd::shard_map_op(p, opts)
                    .map_err(|m| cannot_run(jaxpr, e, &m))?;
                step(eqn, Box::new(op)).map(Opaque::Step)
            }
        },
        // Exchanges through the running `shard_map` instance's
        // communicator (`ops::native::spmd`).
        Primitive::Collective(
            c @ (Collective::AllReduce(_)
            | Collective::AllGather(_)
            | Collective::AxisIndex(_)
            | Collective::Ppermute(_)
            | Collective::AllToAll(_)
            | Collective::ReduceScatter(_)
            | Collective::Pvary(_)
            | Collective::PsumInvariant(_)),
        ) => {
            let ins = in_shapes(jaxpr, e, eqn)?;
            let op = crate::ops::native::spmd::MeshCollective::new(c, &ins);
            step(eqn, Box::new(op)).map(Opaque::Step)
        }
        // Removed by `simplify`.
        Primitive::Marker(
            Marker::Name(_)
            | Marker::DevicePut(_)
            | Marker::OptimizationBarrier(_)
            | Marker::PlatformIndex(_)
            | Marker::Reshard(_)
            | Marker::ShardingConstraint(_),
        ) => unsupported(),
        // Host callbacks: a step that calls back into Rust.
        Primitive::Callback(_) => native(),
    }
}

/// A compile error of equation `e` that is not "unsupported": bad input
/// (a mesh larger than the devices, a body that does not compile).
fn cannot_run(jaxpr: &Jaxpr, e: usize, why: &IrError) -> IrError {
    match why {
        IrError::Invalid(m) => {
            IrError::Invalid(format!("{m} ({})", crate::util::describe_eqn(jaxpr, e)))
        }
        _ => why.clone(),
    }
}

/// `dot_general`: a GEMM, or (mixed, half-precision and boolean products)
/// the native op that casts first.
fn dot_step(jaxpr: &Jaxpr, e: usize, eqn: &Eqn, p: &DotGeneralParams) -> Result<Opaque, IrError> {
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
        return native_step(jaxpr, e, eqn).map(Opaque::Step);
    }
    let plan = DotPlan::new(&ls, &rs, dimension_numbers, dt).map_err(|m| cannot(jaxpr, e, &m))?;
    Ok(Opaque::Gemm {
        plan: Box::new(plan),
        lhs: operand(l)?,
        rhs: operand(r)?,
        out: *out,
    })
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
    Ok(Step {
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
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_) => built_step(jaxpr, e, eqn),
        Primitive::Callback(_) => built_step(jaxpr, e, eqn),
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
        Pallas::PallasCall(p) => {
            let op = crate::plan::pallas::pallas_op(p, eqn.inputs.len())
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
