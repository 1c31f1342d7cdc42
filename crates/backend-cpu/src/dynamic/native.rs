//! Native steps of dynamic-shape programs, for the first-order equations
//! that are neither flat runs nor GEMMs. Whether an equation has one is
//! decided once, when the program compiles (`DynOp::new`, exhaustively);
//! at run time the step builds the backend's own native op
//! (`crate::ops::native::build_op`, the one step mechanism) for the
//! operand shapes and result types resolved from the dimension values,
//! keeps the last build for the next call with the same types, and runs
//! it. No step calls the interpreter: a primitive without a native op is a
//! compile-time error naming it.

use crate::error::run_error;
use crate::error::CpuError;
use crate::ops::native::{build_op, NativeOp};
use jaxon_ir::primitive::{
    Collective, Control, Elementwise, Indexing, Linalg, Marker, Pallas, Reduction, State,
    Structural,
};
use jaxon_ir::{DType, Eqn, HostArray, IrError, Primitive};
use std::sync::Mutex;

/// Resolved result types of a step.
pub(crate) type OutTypes = [(DType, Vec<usize>)];

/// The types a native op is built for: its operand shapes and result
/// types (an `iota`'s or a `split`'s results are not implied by its
/// operands).
type BuiltKey = (Vec<Vec<usize>>, Vec<(DType, Vec<usize>)>);

/// The native step of one equation: the last op built for it, with the
/// types it was built for.
#[derive(Debug)]
pub(crate) struct DynOp {
    built: Mutex<Option<(BuiltKey, Box<dyn NativeOp>)>>,
}

fn fail(m: impl std::fmt::Display) -> IrError {
    run_error(format!("{m}"))
}

impl DynOp {
    /// The native step of `eqn`, or `Err` with why it has none (the caller
    /// names the equation). `unfused` says why an elementwise equation did
    /// not compile as a flat run.
    pub(crate) fn new(eqn: &Eqn, unfused: Option<&str>) -> Result<DynOp, CpuError> {
        let none = |why: &str| {
            Err(CpuError::Operands(format!(
                "`{}` {why}",
                eqn.primitive.name()
            )))
        };
        let native = || {
            Ok(DynOp {
                built: Mutex::new(None),
            })
        };
        match &eqn.primitive {
            Primitive::Elementwise(p) => match p {
                Elementwise::BitcastConvertType(_) | Elementwise::ReducePrecision(_) => native(),
                Elementwise::Complex
                | Elementwise::Real
                | Elementwise::Imag
                | Elementwise::Conj(_) => {
                    none("(a complex-number primitive) runs on the complex slow path only")
                }
                Elementwise::Unary(_)
                | Elementwise::Binary(_)
                | Elementwise::IntegerPow(_)
                | Elementwise::Round(_)
                | Elementwise::ConvertElementType(_)
                | Elementwise::SelectN
                | Elementwise::Clamp
                | Elementwise::RegularizedIncompleteBeta => none(&format!(
                    "has no native step in a dynamic-shape program outside a fused kernel ({})",
                    unfused.unwrap_or("no kernel for its operand shapes")
                )),
            },
            Primitive::Structural(
                Structural::BroadcastInDim(_)
                | Structural::Reshape(_)
                | Structural::Squeeze(_)
                | Structural::Transpose(_)
                | Structural::Rev(_)
                | Structural::Iota(_)
                | Structural::Concatenate(_)
                | Structural::Pad(_)
                | Structural::Split(_)
                | Structural::Empty2(_)
                | Structural::Tile(_)
                | Structural::Stack(_),
            )
            | Primitive::Indexing(
                Indexing::Slice(_)
                | Indexing::DynamicSlice(_)
                | Indexing::DynamicUpdateSlice
                | Indexing::Gather(_)
                | Indexing::Scatter(_),
            )
            | Primitive::Reduction(
                Reduction::Reduce(_)
                | Reduction::ArgReduce(_)
                | Reduction::Cumulative(_)
                | Reduction::Sort(_)
                | Reduction::TopK(_),
            )
            | Primitive::Linalg(
                Linalg::ConvGeneralDilated(_)
                | Linalg::DotGeneral(_)
                | Linalg::Cholesky
                | Linalg::TriangularSolve(_)
                | Linalg::Lu
                | Linalg::Qr(_)
                | Linalg::Eigh(_)
                | Linalg::Svd(_)
                | Linalg::Schur(_)
                | Linalg::TridiagonalSolve(_),
            )
            | Primitive::Window(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => native(),
            // Complex programs never reach the dynamic-shape compiler.
            Primitive::Linalg(Linalg::Fft(_)) => {
                none("(a complex-number primitive) runs on the complex slow path only")
            }
            Primitive::Collective(
                Collective::AllReduce(_) | Collective::AllGather(_) | Collective::AxisIndex(_),
            ) => none("(a named-axis collective) is unbound in a compiled program"),
            Primitive::Collective(
                Collective::Ppermute(_)
                | Collective::AllToAll(_)
                | Collective::ReduceScatter(_)
                | Collective::Pvary(_)
                | Collective::PsumInvariant(_),
            ) => none(
                "(a mesh collective) needs a shard_map, which the cpu backend does not run yet",
            ),
            Primitive::Control(Control::ShardMap(_)) => {
                none("(shard_map) is not supported by the cpu backend yet; use the interpreter")
            }
            Primitive::Marker(
                Marker::Name(_)
                | Marker::DevicePut(_)
                | Marker::OptimizationBarrier(_)
                | Marker::PlatformIndex(_)
                | Marker::Reshard(_)
                | Marker::ShardingConstraint(_),
            ) => none("(a marker) should have been removed by `simplify`"),
            Primitive::State(State::Get(_) | State::Swap(_) | State::AddUpdate(_))
            | Primitive::Pallas(
                Pallas::Load(_)
                | Pallas::Store(_)
                | Pallas::AtomicRmw(_)
                | Pallas::AtomicCas(_)
                | Pallas::ProgramId(_)
                | Pallas::NumPrograms(_)
                | Pallas::PallasCall(_),
            ) => none("is not supported in dynamic-shape programs yet"),
            Primitive::Control(
                Control::Cond(_)
                | Control::While(_)
                | Control::Scan(_)
                | Control::ForLoop(_)
                | Control::Jit(_)
                | Control::CustomJvpCall(_)
                | Control::CustomVjpCall(_)
                | Control::Remat(_)
                | Control::CustomLinearSolve(_),
            ) => none("runs its nested bodies, not a native op"),
        }
    }

    /// Runs the step of `primitive` (its equation's) on `ins` (every
    /// operand of the equation) with result types `outs`: the native op
    /// built for these operand shapes and result types (reused while they
    /// repeat).
    pub(crate) fn run(
        &self,
        primitive: &Primitive,
        ins: &[&HostArray],
        outs: &OutTypes,
        threads: usize,
    ) -> Result<Vec<HostArray>, IrError> {
        let mut slot = self
            .built
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
}
