//! Native steps in safe Rust for the primitives that are neither fused
//! loops nor GEMMs: indexing (`gather`, `scatter*`, dynamic slices), sorts,
//! convolutions, bit-level conversions, `tile`/`stack` and the discharged
//! state primitives.
//!
//! Each is a [`NativeOp`] run by one `Step::Native` of the program; the
//! builders here check static shapes at compile time so that `run` only
//! meets the shapes it was compiled for.

use crate::error::run_error;
use crate::error::CpuError;
use jaxon_ir::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicRmwParams, BitcastConvertTypeParams,
    ConvGeneralDilatedParams, DotGeneralParams, DynamicSliceParams, Elementwise, GatherParams,
    GetParams, Indexing, Linalg, LoadParams, NumProgramsParams, Pallas, PallasCallParams,
    ProgramIdParams, ReducePrecisionParams, Reduction, ReshapeParams, ScatterParams, SortParams,
    StackParams, State, StoreParams, Structural, SwapParams, TopKParams,
};
mod conv;
mod elem;
mod gather;
mod misc;
mod pallas;
mod sort;
mod state;

pub(crate) use elem::{map_same, map_same2, Elem};

use crate::compile::{cannot, operand, out_vars};
use crate::exec::Step;
use jaxon_ir::primitive::Indexer;
use jaxon_ir::{Atom, DType, Eqn, HostArray, IrError, Jaxpr, Primitive};

/// A native operation: maps its input arrays to its outputs.
pub(crate) trait NativeOp: Send + Sync + std::fmt::Debug {
    /// Runs the operation (`threads` bounds any parallelism it uses).
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError>;

    /// Runs straight on the step's buffers, without copying operands into
    /// host arrays and results back; `None` when the op has no such path
    /// for these operands (then `run` is used).
    ///
    /// # Safety
    /// `ins[k].ptr` points to a value of operand `k`'s dtype and shape and
    /// `outs[k].ptr` to room for result `k`'s, not aliasing any operand.
    unsafe fn run_raw(
        &self,
        _ins: &[RawArg<'_>],
        _outs: &[RawArg<'_>],
    ) -> Option<Result<(), IrError>> {
        None
    }

    /// For a read of a box of the first operand (`get`, an unmasked
    /// `load`): the box's start, size and the result's shape, given the
    /// ref's shape and the operands (`args[0]` a placeholder for the ref);
    /// `Ok(None)` when the indices name no box inside the ref, `None` when
    /// the op is no such read.
    #[allow(clippy::type_complexity)]
    fn read_box(
        &self,
        _shape: &[usize],
        _args: &[&HostArray],
    ) -> Option<Result<Option<(Vec<usize>, Vec<usize>, Vec<usize>)>, IrError>> {
        None
    }

    /// [`NativeOp::run_raw`] for an op that may use up to `threads`
    /// threads (by default, `run_raw`).
    ///
    /// # Safety
    /// As [`NativeOp::run_raw`].
    unsafe fn run_raw_threads(
        &self,
        ins: &[RawArg<'_>],
        outs: &[RawArg<'_>],
        _threads: usize,
    ) -> Option<Result<(), IrError>> {
        // SAFETY: the caller's contract.
        unsafe { self.run_raw(ins, outs) }
    }
}

/// A buffer of a native step called from generated code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawArg<'a> {
    /// The first element.
    pub ptr: *mut u8,
    /// Its dtype.
    pub dtype: jaxon_ir::DType,
    /// Its shape.
    pub shape: &'a [usize],
}

/// Runs a `Step::Native` of a step call on its pointer table (operands in
/// `call.ins` order, then results) through [`NativeOp::run_raw`], when the
/// op has a raw path; `None` otherwise.
///
/// # Safety
/// `table` holds one pointer per variable of `call.ins` and `call.outs`,
/// each to a value (or room for one) of the listed type, results not
/// aliasing operands.
pub(crate) unsafe fn run_step_raw(
    call: &crate::exec::StepCall,
    table: &[*mut u8],
    threads: usize,
) -> Option<Result<(), IrError>> {
    let Step::Native { op, inputs, outs } = &call.step else {
        return None;
    };
    let n_in = call.ins.len();
    let mut ins = Vec::with_capacity(inputs.len());
    for o in inputs {
        ins.push(match o {
            crate::exec::Operand::Var(v) => {
                let k = call.ins.iter().position(|(w, _, _)| w == v)?;
                let (_, dtype, shape) = &call.ins[k];
                RawArg {
                    ptr: *table.get(k)?,
                    dtype: *dtype,
                    shape,
                }
            }
            crate::exec::Operand::Const(a) => RawArg {
                // Only read through.
                ptr: jaxon_ir::with_storage!(a.data(), v => v.as_ptr().cast::<u8>().cast_mut()),
                dtype: a.dtype(),
                shape: a.shape(),
            },
        });
    }
    let mut res = Vec::with_capacity(outs.len());
    for o in outs {
        let v = (*o)?;
        let k = call.outs.iter().position(|(w, _, _)| *w == v)?;
        let (_, dtype, shape) = &call.outs[k];
        res.push(RawArg {
            ptr: *table.get(n_in + k)?,
            dtype: *dtype,
            shape,
        });
    }
    // SAFETY: the caller's contract, per operand and result.
    unsafe { op.run_raw_threads(&ins, &res, threads) }
}

/// Row-major element strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Advances a row-major multi-index; false after the last one.
pub(crate) fn next_index(idx: &mut [usize], shape: &[usize]) -> bool {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
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

/// An op whose operands must have the shapes it was compiled for (a
/// mismatch, from a jaxpr whose declared types are wrong, is an error
/// rather than an out-of-bounds index).
#[derive(Debug)]
struct Checked {
    name: &'static str,
    shapes: Vec<Vec<usize>>,
    op: Box<dyn NativeOp>,
}

impl NativeOp for Checked {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        let ok = inputs.len() == self.shapes.len()
            && inputs
                .iter()
                .zip(&self.shapes)
                .all(|(a, s)| a.shape() == s.as_slice());
        if !ok {
            let got: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
            return Err(run_error(format!(
                "`{}` compiled for operand shapes {:?}, got {got:?}",
                self.name, self.shapes
            )));
        }
        self.op.run(inputs, threads)
    }
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
                State::Get(GetParams { indexers }) => (state::Kind::Get, indexers),
                State::Swap(SwapParams { indexers }) => (state::Kind::Swap, indexers),
                State::AddUpdate(AddUpdateParams { indexers }) => {
                    (state::Kind::AddUpdate, indexers)
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
                Box::new(pallas::ProgramId {
                    axis: *axis,
                    count: false,
                }),
            );
        }
        Pallas::NumPrograms(NumProgramsParams { axis }) => {
            return step(
                eqn,
                Box::new(pallas::ProgramId {
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
            let op = pallas::PallasOp::new(
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
            state::Kind::Load {
                has_mask: *has_mask,
                has_other: *has_other,
            },
            indexers,
        ),
        Pallas::Store(StoreParams { indexers, has_mask }) => (
            state::Kind::Store {
                has_mask: *has_mask,
            },
            indexers,
        ),
        Pallas::AtomicRmw(AtomicRmwParams { op, indexers }) => (state::Kind::Atomic(*op), indexers),
        Pallas::AtomicCas(AtomicCasParams { indexers }) => (state::Kind::Cas, indexers),
    };
    ref_step(jaxpr, e, eqn, kind, indexers)
}

/// The step of a state primitive (`kind`) on a discharged ref.
fn ref_step(
    jaxpr: &Jaxpr,
    e: usize,
    eqn: &Eqn,
    kind: state::Kind,
    indexers: &[Indexer],
) -> Result<Step, IrError> {
    if !matches!(eqn.inputs.first(), Some(Atom::Var(_))) {
        return Err(cannot(jaxpr, e, "the first operand must be a Ref variable"));
    }
    // `prep::discharge_refs` gave each write an extra output: the
    // ref's updated value, a new variable.
    let n_outs = match kind {
        state::Kind::Get
        | state::Kind::AddUpdate
        | state::Kind::Load { .. }
        | state::Kind::Store { .. } => 1,
        state::Kind::Swap | state::Kind::Atomic(_) | state::Kind::Cas => 2,
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
        Box::new(state::StateOp {
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

/// The native op of `primitive` for operands of shapes `ins` and results
/// of types `outs` (all resolved: the static pipeline's compile-time
/// shapes, or a dynamic-shape program's runtime ones); `Err` says why not.
pub(crate) fn build_op(
    primitive: &Primitive,
    ins: &[Vec<usize>],
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    match primitive {
        Primitive::Elementwise(p) => elementwise_op(p, outs),
        Primitive::Structural(p) => structural_op(p, ins, outs),
        Primitive::Indexing(p) => indexing_op(p, ins, outs),
        Primitive::Reduction(p) => reduction_op(p, ins),
        Primitive::Linalg(p) => linalg_op(p, ins, outs),
        // Control flow runs its bodies; refs and Pallas primitives have
        // their own steps (`native_step`); collectives are unbound in a
        // compiled program.
        Primitive::Control(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_) => Err(no_native_op(primitive.name())),
    }
}

fn no_native_op(primitive: &'static str) -> CpuError {
    CpuError::NoNativeStep { primitive }
}

fn elementwise_op(
    p: &Elementwise,
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Elementwise::BitcastConvertType(BitcastConvertTypeParams { new_dtype }) => {
            Box::new(misc::Bitcast::new(*new_dtype, outs)?)
        }
        Elementwise::ReducePrecision(ReducePrecisionParams {
            exponent_bits,
            mantissa_bits,
        }) => Box::new(misc::ReducePrecision::new(*exponent_bits, *mantissa_bits)),
        // Fused kernels compute these.
        Elementwise::Unary(_)
        | Elementwise::Binary(_)
        | Elementwise::IntegerPow(_)
        | Elementwise::Round(_)
        | Elementwise::ConvertElementType(_)
        | Elementwise::SelectN
        | Elementwise::Clamp => return Err(no_native_op(p.name())),
    })
}

fn structural_op(
    p: &Structural,
    ins: &[Vec<usize>],
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Structural::Tile(_) => Box::new(misc::Take::tile(ins, outs)?),
        Structural::Reshape(ReshapeParams {
            dimensions: Some(perm),
            ..
        }) => Box::new(misc::Take::transpose_reshape(ins, perm, outs)?),
        Structural::Stack(StackParams { axis }) => Box::new(misc::Stack::new(*axis, ins, outs)?),
        // Index maps of fused kernels, or the static steps' copies.
        Structural::Reshape(ReshapeParams {
            dimensions: None, ..
        })
        | Structural::BroadcastInDim(_)
        | Structural::Transpose(_)
        | Structural::Squeeze(_)
        | Structural::Rev(_)
        | Structural::Pad(_)
        | Structural::Concatenate(_)
        | Structural::Iota(_)
        | Structural::Split(_)
        | Structural::Empty2(_) => return Err(no_native_op(p.name())),
    })
}

fn indexing_op(
    p: &Indexing,
    ins: &[Vec<usize>],
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
            Box::new(gather::DynamicSlice::new(ins, &slice_sizes.to_usizes())?)
        }
        Indexing::DynamicUpdateSlice => Box::new(gather::DynamicUpdateSlice::new(ins)?),
        Indexing::Gather(GatherParams {
            dimension_numbers,
            fill_value,
            mode,
            slice_sizes,
            ..
        }) => Box::new(gather::Gather::new(
            ins,
            dimension_numbers,
            *fill_value,
            *mode,
            &slice_sizes.to_usizes(),
            outs,
        )?),
        Indexing::Scatter(ScatterParams {
            kind,
            dimension_numbers,
            mode,
            ..
        }) => Box::new(gather::Scatter::new(ins, *kind, dimension_numbers, *mode)?),
        // An index map of fused kernels.
        Indexing::Slice(_) => return Err(no_native_op(p.name())),
    })
}

fn reduction_op(p: &Reduction, ins: &[Vec<usize>]) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Reduction::Sort(SortParams {
            dimension,
            num_keys,
            ..
        }) => Box::new(sort::Sort::new(ins, *dimension, *num_keys)?),
        Reduction::TopK(TopKParams { k, axis }) => Box::new(sort::TopK::new(ins, *k, *axis)?),
        // Fused reduce groups, or the static steps' line scans.
        Reduction::Reduce(_) | Reduction::ArgReduce(_) | Reduction::Cumulative(_) => {
            return Err(no_native_op(p.name()))
        }
    })
}

fn linalg_op(
    p: &Linalg,
    ins: &[Vec<usize>],
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
            window_strides,
            padding,
            lhs_dilation,
            rhs_dilation,
            dimension_numbers,
            feature_group_count,
            batch_group_count,
            ..
        }) => Box::new(conv::Conv::new(
            ins,
            outs,
            conv::ConvParams {
                window_strides,
                padding,
                lhs_dilation,
                rhs_dilation,
                dn: dimension_numbers,
                feature_group_count: *feature_group_count,
                batch_group_count: *batch_group_count,
            },
        )?),
        Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers,
            preferred_element_type,
            ..
        }) => {
            let dt = match (preferred_element_type, outs.first()) {
                (Some(d), _) => *d,
                (None, Some((d, _))) => *d,
                (None, None) => return Err("dot_general without a result".into()),
            };
            Box::new(conv::CastDot::new(ins, dimension_numbers, dt)?)
        }
    })
}
