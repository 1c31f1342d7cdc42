//! Native steps of dynamic-shape programs for the first-order primitives
//! that are neither flat runs nor GEMMs. Each equation's kind is chosen
//! once, when the program compiles (`DynOp::new`); at run time it meets
//! the operands and the result types resolved from the dimension values.
//!
//! Layout primitives are strided copies with runtime strides
//! (`movement.rs`), reductions along axes fold `(outer, reduced, inner)`
//! views (`reduce.rs`), and the rest run the static backend's own native
//! ops (`crate::ops::native::build_op`, the one step mechanism) built for
//! the runtime types, the last build kept for the next call with the same
//! types. No step calls the interpreter: a primitive without a native
//! routine is a compile-time error naming it.

use super::{movement, reduce};
use crate::error::run_error;
use crate::error::CpuError;
use crate::ops::native::{build_op, NativeOp};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::primitive::{
    BroadcastInDimParams, Collective, Control, Elementwise, Indexing, Linalg, Pallas, ReduceParams,
    Reduction, ReshapeParams, RevParams, SliceParams, State, Structural, TransposeParams,
};
use jaxon_ir::{DType, Eqn, HostArray, IrError, Primitive};
use std::sync::Mutex;

/// Resolved result types of a step.
pub(crate) type OutTypes = [(DType, Vec<usize>)];

/// The types a native op is built for: its operand shapes and result
/// types (an `iota`'s or a `split`'s results are not implied by its
/// operands).
type BuiltKey = (Vec<Vec<usize>>, Vec<(DType, Vec<usize>)>);

/// The last native op built by a [`DynOp::Built`] step, with its key.
type BuiltCache = Mutex<Option<(BuiltKey, Box<dyn NativeOp>)>>;

/// How one equation runs natively.
#[derive(Debug)]
pub(crate) enum DynOp {
    /// `broadcast_in_dim` of operand 0 (trailing operands are sizes).
    Broadcast { dims: Vec<usize> },
    /// `reshape` without `dimensions`, `squeeze`: the elements unchanged.
    Reshape,
    /// `reshape` with `dimensions`: transpose by `perm`, then reshape.
    TransposeReshape { perm: Vec<usize> },
    /// `transpose`.
    Transpose { perm: Vec<usize> },
    /// `slice` with static starts and steps.
    Slice {
        /// Starts.
        starts: Vec<usize>,
        /// Steps.
        steps: Vec<usize>,
    },
    /// `rev`.
    Rev { dims: Vec<usize> },
    /// `dynamic_update_slice` (a box write into a copy).
    UpdateSlice,
    /// `reduce_*` along axes.
    Reduce { op: ReduceOp, axes: Vec<usize> },
    /// A `crate::ops::native` op built for the runtime types (fills,
    /// pads, concatenations, splits, line scans, gather, scatter,
    /// dynamic_slice, sort, top_k, conv, bitcast, reduce_precision, tile,
    /// stack, mixed-dtype `dot_general`).
    Built(BuiltCache),
}

fn fail(m: impl std::fmt::Display) -> IrError {
    run_error(format!("{m}"))
}

impl DynOp {
    /// The native kind of `eqn`, or `Err` with why it has none (the
    /// caller names the equation). `unfused` says why an elementwise
    /// equation did not compile as a flat run.
    pub(crate) fn new(eqn: &Eqn, unfused: Option<&str>) -> Result<DynOp, CpuError> {
        let none = |why: &str| {
            Err(CpuError::Operands(format!(
                "`{}` {why}",
                eqn.primitive.name()
            )))
        };
        let built = || Ok(DynOp::Built(Mutex::new(None)));
        Ok(match &eqn.primitive {
            Primitive::Elementwise(p) => match p {
                Elementwise::BitcastConvertType(_) | Elementwise::ReducePrecision(_) => {
                    return built()
                }
                Elementwise::Unary(_)
                | Elementwise::Binary(_)
                | Elementwise::IntegerPow(_)
                | Elementwise::Round(_)
                | Elementwise::ConvertElementType(_)
                | Elementwise::SelectN
                | Elementwise::Clamp => {
                    return none(&format!(
                        "has no native step in a dynamic-shape program outside a fused kernel ({})",
                        unfused.unwrap_or("no kernel for its operand shapes")
                    ))
                }
            },
            Primitive::Structural(p) => Self::structural(p),
            Primitive::Indexing(p) => match p {
                Indexing::Slice(SliceParams {
                    start_indices,
                    strides,
                    ..
                }) => DynOp::Slice {
                    starts: start_indices.to_usizes(),
                    steps: strides
                        .as_ref()
                        .map_or_else(|| vec![1; start_indices.len()], |s| s.to_usizes()),
                },
                Indexing::DynamicUpdateSlice => DynOp::UpdateSlice,
                Indexing::DynamicSlice(_) | Indexing::Gather(_) | Indexing::Scatter(_) => {
                    return built()
                }
            },
            Primitive::Reduction(p) => match p {
                Reduction::Reduce(ReduceParams { op, axes }) => DynOp::Reduce {
                    op: *op,
                    axes: axes.clone(),
                },
                Reduction::ArgReduce(_)
                | Reduction::Cumulative(_)
                | Reduction::Sort(_)
                | Reduction::TopK(_) => return built(),
            },
            Primitive::Linalg(Linalg::ConvGeneralDilated(_) | Linalg::DotGeneral(_)) => {
                return built()
            }
            Primitive::Collective(
                Collective::AllReduce(_) | Collective::AllGather(_) | Collective::AxisIndex(_),
            ) => return none("(a named-axis collective) is unbound in a compiled program"),
            Primitive::State(State::Get(_) | State::Swap(_) | State::AddUpdate(_))
            | Primitive::Pallas(
                Pallas::Load(_)
                | Pallas::Store(_)
                | Pallas::AtomicRmw(_)
                | Pallas::AtomicCas(_)
                | Pallas::ProgramId(_)
                | Pallas::NumPrograms(_)
                | Pallas::PallasCall(_),
            ) => return none("is not supported in dynamic-shape programs yet"),
            Primitive::Control(
                Control::Cond(_)
                | Control::While(_)
                | Control::Scan(_)
                | Control::ForLoop(_)
                | Control::Jit(_)
                | Control::CustomJvpCall(_)
                | Control::CustomVjpCall(_)
                | Control::Remat(_),
            ) => return none("runs its nested bodies, not a native op"),
        })
    }

    /// The structural family: relabels and strided copies; fills, pads,
    /// concatenations, splits, `tile` and `stack` built natively.
    fn structural(p: &Structural) -> DynOp {
        match p {
            Structural::BroadcastInDim(BroadcastInDimParams {
                broadcast_dimensions,
                ..
            }) => DynOp::Broadcast {
                dims: broadcast_dimensions.to_usizes(),
            },
            Structural::Reshape(ReshapeParams {
                dimensions: None, ..
            })
            | Structural::Squeeze(_) => DynOp::Reshape,
            Structural::Reshape(ReshapeParams {
                dimensions: Some(perm),
                ..
            }) => DynOp::TransposeReshape { perm: perm.clone() },
            Structural::Transpose(TransposeParams { permutation }) => DynOp::Transpose {
                perm: permutation.clone(),
            },
            Structural::Rev(RevParams { dimensions }) => DynOp::Rev {
                dims: dimensions.clone(),
            },
            Structural::Iota(_)
            | Structural::Concatenate(_)
            | Structural::Pad(_)
            | Structural::Split(_)
            | Structural::Empty2(_)
            | Structural::Tile(_)
            | Structural::Stack(_) => DynOp::Built(Mutex::new(None)),
        }
    }

    /// A short name for plans.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            DynOp::Broadcast { .. }
            | DynOp::TransposeReshape { .. }
            | DynOp::Transpose { .. }
            | DynOp::Slice { .. }
            | DynOp::Rev { .. } => "strided copy",
            DynOp::Reshape => "relabel",
            DynOp::UpdateSlice => "copy",
            DynOp::Reduce { .. } => "axis fold",
            DynOp::Built(_) => "native op",
        }
    }

    /// Runs the step of `primitive` (its equation's) on `ins` (every
    /// operand of the equation) with result types `outs`.
    pub(crate) fn run(
        &self,
        primitive: &Primitive,
        ins: &[&HostArray],
        outs: &OutTypes,
        threads: usize,
    ) -> Result<Vec<HostArray>, IrError> {
        let x = || ins.first().copied().ok_or_else(|| fail("missing operand"));
        let out = || outs.first().ok_or_else(|| fail("missing result type"));
        let one = |r: Result<HostArray, IrError>| r.map(|a| vec![a]);
        match self {
            DynOp::Broadcast { dims } => one(movement::broadcast(x()?, dims, &out()?.1)),
            DynOp::Reshape => {
                let shape = out()?.1.clone();
                one(x()?.clone().reshape(shape))
            }
            DynOp::TransposeReshape { perm } => {
                let t = movement::transpose(x()?, perm)?;
                one(t.reshape(out()?.1.clone()))
            }
            DynOp::Transpose { perm } => one(movement::transpose(x()?, perm)),
            DynOp::Slice { starts, steps } => one(movement::slice(x()?, starts, steps, &out()?.1)),
            DynOp::Rev { dims } => one(movement::rev(x()?, dims)),
            DynOp::UpdateSlice => {
                let [x, u, starts @ ..] = ins else {
                    return Err(fail("dynamic_update_slice takes an operand and an update"));
                };
                let starts = starts
                    .iter()
                    .map(|s| match s.len() {
                        1 => Ok(s.data().get_i64(0)),
                        _ => Err(fail("dynamic_update_slice: start indices must be scalars")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                one(movement::update_box(x, u, &starts))
            }
            DynOp::Reduce { op, axes } => one(reduce::reduce(*op, x()?, axes)),
            DynOp::Built(cache) => run_built(cache, primitive, ins, outs, threads),
        }
    }
}

/// Runs a [`DynOp::Built`] step of `primitive`: the native op built for
/// these operand shapes and result types (reused while they repeat).
fn run_built(
    cache: &BuiltCache,
    primitive: &Primitive,
    ins: &[&HostArray],
    outs: &OutTypes,
    threads: usize,
) -> Result<Vec<HostArray>, IrError> {
    let mut slot = cache
        .lock()
        .map_err(|_| fail("a native step's cache is poisoned"))?;
    let hit = matches!(&*slot, Some(((s, o), _))
        if s.len() == ins.len()
            && s.iter().zip(ins).all(|(s, a)| s.as_slice() == a.shape())
            && o.as_slice() == outs);
    if !hit {
        let shapes: Vec<Vec<usize>> = ins.iter().map(|a| a.shape().to_vec()).collect();
        let op = build_op(primitive, &shapes, outs)
            .map_err(|m| fail(format!("`{}`: {m}", primitive.name())))?;
        *slot = Some(((shapes, outs.to_vec()), op));
    }
    match &*slot {
        Some((_, op)) => op.run(ins, threads),
        None => Err(fail("a native step was not built")),
    }
}
