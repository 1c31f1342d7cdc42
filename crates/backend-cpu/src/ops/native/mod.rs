//! Native ops in safe Rust for the primitives that are neither fused loops
//! nor GEMMs: fills, copies and line scans (`iota`, `pad`, `concatenate`,
//! `split`, cumulative ops, arg-reductions), indexing (`gather`,
//! `scatter*`, dynamic slices), sorts, convolutions, bit-level
//! conversions, `tile`/`stack` and the discharged state primitives.
//!
//! [`NativeOp`] is the one step mechanism: every step of a static program
//! (`crate::run::exec::Step`) and every native step of a dynamic-shape
//! program runs one. The builders here check the resolved shapes when the
//! program compiles, so that `run` only meets the shapes it was built for.

use crate::error::run_error;
use crate::error::CpuError;
use jaxon_ir::primitive::{
    ArgOp, ArgReduceParams, BitcastConvertTypeParams, BroadcastInDimParams, ConcatenateParams,
    CumulativeParams, DotGeneralParams, DynamicSliceParams, Elementwise, GatherParams, Indexing,
    IotaParams, Linalg, PadParams, ReduceParams, ReducePrecisionParams, Reduction, ReshapeParams,
    RevParams, ScatterParams, SliceParams, SortParams, SplitParams, StackParams, Structural,
    TopKParams, TransposeParams,
};
pub(crate) mod boxdot;
mod callback;
mod conv;
mod copies;
mod decomp;
mod decomp_faer;
mod elem;
mod gather;
mod misc;
pub(crate) mod pallas;
mod random;
mod sort;
pub(crate) mod spmd;
pub(crate) mod state;
mod strided;
mod window;

pub(crate) use elem::{map_same, map_same2, Elem};
use strided::Strided;

use jaxon_ir::{DType, HostArray, IrError, Primitive};

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

/// An op whose operands must have the shapes it was compiled for (a
/// mismatch, from a jaxpr whose declared types are wrong, is an error
/// rather than an out-of-bounds index).
#[derive(Debug)]
pub(crate) struct Checked {
    pub name: &'static str,
    pub shapes: Vec<Vec<usize>>,
    pub op: Box<dyn NativeOp>,
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
        Primitive::Reduction(p) => reduction_op(p, ins, outs),
        Primitive::Linalg(p) => linalg_op(p, ins, outs),
        Primitive::Window(p) => Ok(Box::new(window::WindowOp::new(p))),
        Primitive::Random(p) => Ok(Box::new(random::RandomOp::new(p))),
        Primitive::Callback(p) => Ok(Box::new(callback::CallbackOp::new(p))),
        // Control flow runs its bodies; refs and Pallas primitives have
        // their own steps (`opaque::native_step`); collectives are unbound in a
        // compiled program; markers are removed by `simplify`.
        Primitive::Control(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_) => Err(no_native_op(primitive.name())),
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
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta => return Err(no_native_op(p.name())),
        // Complex programs take the slow path (`crate::complex`).
        Elementwise::Complex | Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_) => {
            return Err(no_native_op(p.name()))
        }
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
        Structural::Iota(IotaParams { dimension, .. }) => {
            Box::new(copies::Iota::new(*dimension, outs)?)
        }
        Structural::Empty2(_) => Box::new(copies::Zeros::new(outs)?),
        Structural::Pad(PadParams { padding_config }) => {
            let config: Option<Vec<(i64, i64, i64)>> = padding_config
                .iter()
                .map(|t| match t.values.as_slice() {
                    [lo, hi, interior] if *interior >= 0 => Some((*lo, *hi, *interior)),
                    _ => None,
                })
                .collect();
            let config = config.ok_or("`pad` has a bad padding_config")?;
            Box::new(copies::Pad::new(config, ins, outs)?)
        }
        Structural::Concatenate(ConcatenateParams { dimension }) => {
            Box::new(copies::Concat::new(*dimension, outs)?)
        }
        Structural::Split(SplitParams { axis, .. }) => Box::new(copies::Split::new(*axis, outs)?),
        // Index maps of fused kernels; strided copies outside them.
        Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        }) => Box::new(Strided::broadcast(broadcast_dimensions.to_usizes(), outs)?),
        Structural::Reshape(ReshapeParams {
            dimensions: None, ..
        })
        | Structural::Squeeze(_) => Box::new(Strided::relabel(ins, outs)?),
        Structural::Transpose(TransposeParams { permutation }) => Box::new(Strided::Transpose {
            perm: permutation.clone(),
        }),
        Structural::Rev(RevParams { dimensions }) => Box::new(Strided::Rev {
            dims: dimensions.clone(),
        }),
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
        // An index map of fused kernels; a strided copy outside them.
        Indexing::Slice(SliceParams {
            start_indices,
            strides,
            ..
        }) => Box::new(Strided::slice(
            start_indices.to_usizes(),
            strides
                .as_ref()
                .map_or_else(|| vec![1; start_indices.len()], |s| s.to_usizes()),
            outs,
        )?),
    })
}

fn reduction_op(
    p: &Reduction,
    ins: &[Vec<usize>],
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Reduction::Sort(SortParams {
            dimension,
            num_keys,
            ..
        }) => Box::new(sort::Sort::new(ins, *dimension, *num_keys)?),
        Reduction::TopK(TopKParams { k, axis }) => Box::new(sort::TopK::new(ins, *k, *axis)?),
        Reduction::Cumulative(CumulativeParams { op, axis, reverse }) => {
            Box::new(copies::Cumulative::new(*op, *axis, *reverse, outs)?)
        }
        Reduction::ArgReduce(ArgReduceParams {
            op,
            axes,
            index_dtype,
        }) => Box::new(copies::ArgReduce::new(
            *op == ArgOp::Argmax,
            axes,
            *index_dtype,
        )?),
        // Fused reduce groups; an axis fold outside them.
        Reduction::Reduce(ReduceParams { op, axes, .. }) => Box::new(strided::Reduce {
            op: *op,
            axes: axes.clone(),
        }),
    })
}

fn linalg_op(
    p: &Linalg,
    ins: &[Vec<usize>],
    outs: &[(DType, Vec<usize>)],
) -> Result<Box<dyn NativeOp>, CpuError> {
    Ok(match p {
        Linalg::ConvGeneralDilated(p) => Box::new(conv::Conv::new(ins, outs, p)?),
        Linalg::Cholesky
        | Linalg::TriangularSolve(_)
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::TridiagonalSolve(_) => Box::new(decomp::Decomp::new(p)),
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
        // Complex programs take the slow path (`crate::complex`).
        Linalg::Fft(_) => return Err(no_native_op(p.name())),
    })
}
