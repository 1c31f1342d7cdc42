//! Numeric kernels of the reference interpreter: every primitive without a
//! nested jaxpr or mutable state, on host arrays.
//!
//! Layout: `mod.rs` dispatches and holds the shared helpers (strides, index
//! maps, the lifted compute domain); each family lives in its own file.
//!
//! Numerics follow XLA on the CPU as JAX 0.10.2 shows it: integers wrap,
//! f16/bf16 compute in f32 and round, f32 in f32, f64 in f64. Known
//! last-ulp differences: transcendental functions use Rust's libm (erf,
//! erfc and erf_inv are computed in f64), float reductions and cumulative
//! ops accumulate sequentially (XLA may reassociate).

use crate::primitive::{
    AllGatherParams, AllReduceParams, ArgReduceParams, AxisIndexParams, BitcastConvertTypeParams,
    BroadcastInDimParams, Collective, ConcatenateParams, ConvertElementTypeParams,
    CumulativeParams, DotGeneralParams, DynamicSliceParams, Elementwise, Empty2Params, FftParams,
    GatherParams, Indexing, IntegerPowParams, IotaParams, Linalg, Marker, PadParams, Platform,
    ReduceParams, ReducePrecisionParams, Reduction, ReshapeParams, RevParams, RoundParams,
    ScatterParams, SliceParams, SortParams, SplitParams, SqueezeParams, StackParams, Structural,
    TileParams, TopKParams, TransposeParams, Window,
};
mod convert;
pub mod decomp;
pub mod decomp_kernels;

/// Whole-array bit-level conversions, shared with backends that run them
/// natively.
pub use convert::{bitcast, reduce_precision};
pub mod callback;
mod complex;
/// Complex division with XLA's semantics, shared with every backend.
pub mod complex_div;
/// Complex kernels and the reference FFT, shared with backends that run them
/// natively.
pub use complex::{complex, conj, dft, fft, real_imag};
mod elementwise;
mod indexing;
mod linalg;
mod reduce;
mod sort;
mod special;
mod special_fns;

/// The scalar special functions, shared with backends that call them
/// out of line so that their results are bit-identical to this interpreter.
pub use special::{erf_f64, erf_inv_f64, erfc_f64, next_bf16, next_f16, next_f32, next_f64};
pub use special_fns::{
    bessel_i0e_f64, bessel_i1e_f64, betainc_f64, digamma_f64, igamma_f64, igamma_grad_a_f64,
    igammac_f64, lgamma_f64, polygamma_f64, random_gamma_grad_f64, zeta_f64,
};
pub mod random;
pub mod rng_bit;
pub mod schur;
mod structural;
mod window;
mod window_generic;

/// The window family's kernels, shared with backends that run them natively.
pub use window::{reduce_window, select_and_gather_add, select_and_scatter_add, window_map};
pub use window_generic::reduce_window_generic;

#[cfg(test)]
#[rustfmt::skip]
mod tests_convert;
#[cfg(test)]
#[rustfmt::skip]
mod tests_elementwise;
#[cfg(test)]
#[rustfmt::skip]
mod tests_indexing;
#[cfg(test)]
#[rustfmt::skip]
mod tests_linalg;
#[cfg(test)]
#[rustfmt::skip]
mod tests_reduce;
#[cfg(test)]
#[rustfmt::skip]
mod tests_sort;
#[cfg(test)]
#[rustfmt::skip]
mod tests_structural;
#[cfg(test)]
mod tests_decomp;
#[cfg(test)]
#[rustfmt::skip]
mod tests_window;
#[cfg(test)]
mod tests_props;
#[cfg(test)]
mod tests_total_order;
#[cfg(test)]
mod testutil;

use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::Callback;
use crate::primitive::Primitive;
use crate::primitive::Random;
use half::{bf16, f16};

/// `concatenate`, for the SPMD rules.
pub(crate) fn concatenate(args: &[HostArray], dim: usize) -> Result<HostArray, IrError> {
    structural::concatenate(args, dim)
}

/// `stack`, for the SPMD rules.
pub(crate) fn stack(args: &[HostArray], axis: usize) -> Result<HostArray, IrError> {
    structural::stack(args, axis)
}

/// A binary elementwise op, for the SPMD rules.
pub(crate) fn elementwise_binary(
    op: crate::primitive::BinaryOp,
    x: &HostArray,
    y: &HostArray,
) -> Result<HostArray, IrError> {
    elementwise::binary(op, x, y)
}

/// A reduction over axes, for the SPMD rules.
pub(crate) fn reduce_arrays(
    op: crate::primitive::ReduceOp,
    x: &HostArray,
    axes: &[usize],
) -> Result<HostArray, IrError> {
    reduce::reduce(op, x, axes)
}

/// The box of `sizes` at `start` of `x`.
pub(crate) fn slice_block(
    x: &HostArray,
    start: &[usize],
    sizes: &[usize],
) -> Result<HostArray, IrError> {
    let lo: Vec<i64> = start.iter().map(|&s| s as i64).collect();
    let hi: Vec<i64> = start
        .iter()
        .zip(sizes)
        .map(|(&s, &n)| (s + n) as i64)
        .collect();
    indexing::slice(
        x,
        &crate::primitive::Ints::new(lo),
        &crate::primitive::Ints::new(hi),
        None,
    )
}

/// Applies a first-order primitive to host arrays.
///
/// Higher-order and stateful primitives (control flow, calls, state, Pallas)
/// are rejected: the interpreter core evaluates them.
pub fn eval_op(primitive: &Primitive, args: &[HostArray]) -> Result<Vec<HostArray>, IrError> {
    let name = primitive.name();
    let one = |r: Result<HostArray, IrError>| r.map(|a| vec![a]);
    match primitive {
        Primitive::Elementwise(f) => match f {
            Elementwise::Unary(op) => one(elementwise::unary(*op, arg(name, args, 1, 0)?)),
            Elementwise::Binary(op) => one(elementwise::binary(
                *op,
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
            )),
            Elementwise::IntegerPow(IntegerPowParams { y }) => {
                one(elementwise::integer_pow(arg(name, args, 1, 0)?, *y))
            }
            Elementwise::Round(RoundParams { rounding_method }) => {
                one(elementwise::round(arg(name, args, 1, 0)?, *rounding_method))
            }
            Elementwise::ReducePrecision(ReducePrecisionParams {
                exponent_bits,
                mantissa_bits,
            }) => one(convert::reduce_precision(
                arg(name, args, 1, 0)?,
                *exponent_bits,
                *mantissa_bits,
            )),
            Elementwise::ConvertElementType(ConvertElementTypeParams { new_dtype, .. }) => {
                let x = arg(name, args, 1, 0)?;
                one(HostArray::new(
                    x.shape().to_vec(),
                    convert::convert_storage(x.data(), *new_dtype),
                ))
            }
            Elementwise::BitcastConvertType(BitcastConvertTypeParams { new_dtype }) => {
                one(convert::bitcast(arg(name, args, 1, 0)?, *new_dtype))
            }
            Elementwise::SelectN => one(elementwise::select_n(args)),
            Elementwise::Clamp => one(elementwise::clamp(
                arg(name, args, 3, 0)?,
                arg(name, args, 3, 1)?,
                arg(name, args, 3, 2)?,
            )),
            Elementwise::RegularizedIncompleteBeta => one(special::betainc(
                arg(name, args, 3, 0)?,
                arg(name, args, 3, 1)?,
                arg(name, args, 3, 2)?,
            )),
            Elementwise::Complex => one(complex::complex(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
            )),
            Elementwise::Real => one(complex::real_imag(arg(name, args, 1, 0)?, false)),
            Elementwise::Imag => one(complex::real_imag(arg(name, args, 1, 0)?, true)),
            Elementwise::Conj(_) => one(complex::conj(arg(name, args, 1, 0)?)),
        },
        Primitive::Structural(f) => match f {
            Structural::BroadcastInDim(BroadcastInDimParams {
                shape,
                broadcast_dimensions,
            }) => one(structural::broadcast_in_dim(
                args,
                shape,
                &broadcast_dimensions.to_usizes(),
            )),
            Structural::Reshape(ReshapeParams {
                new_sizes,
                dimensions,
            }) => one(structural::reshape(args, new_sizes, dimensions.as_deref())),
            Structural::Transpose(TransposeParams { permutation }) => {
                one(structural::transpose(arg(name, args, 1, 0)?, permutation))
            }
            Structural::Squeeze(SqueezeParams { dimensions }) => {
                one(structural::squeeze(arg(name, args, 1, 0)?, dimensions))
            }
            Structural::Rev(RevParams { dimensions }) => {
                one(structural::rev(arg(name, args, 1, 0)?, dimensions))
            }
            Structural::Pad(PadParams { padding_config }) => one(structural::pad(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                padding_config,
            )),
            Structural::Concatenate(ConcatenateParams { dimension }) => {
                one(structural::concatenate(args, *dimension))
            }
            Structural::Iota(IotaParams {
                dtype,
                shape,
                dimension,
            }) => one(structural::iota(args, *dtype, shape, *dimension)),
            Structural::Split(SplitParams { sizes, axis }) => {
                structural::split(arg(name, args, 1, 0)?, sizes, *axis)
            }
            Structural::Tile(TileParams { reps }) => {
                one(structural::tile(arg(name, args, 1, 0)?, reps))
            }
            Structural::Stack(StackParams { axis }) => one(structural::stack(args, *axis)),
            Structural::Empty2(Empty2Params { dtype }) => Ok(vec![HostArray::zeros(*dtype, &[])]),
        },
        Primitive::Indexing(f) => match f {
            Indexing::Slice(SliceParams {
                start_indices,
                limit_indices,
                strides,
            }) => one(indexing::slice(
                arg(name, args, 1, 0)?,
                start_indices,
                limit_indices,
                strides.as_deref(),
            )),
            Indexing::DynamicSlice(DynamicSliceParams { slice_sizes }) => {
                one(indexing::dynamic_slice(args, slice_sizes))
            }
            Indexing::DynamicUpdateSlice => one(indexing::dynamic_update_slice(args)),
            Indexing::Gather(GatherParams {
                dimension_numbers,
                fill_value,
                mode,
                slice_sizes,
                ..
            }) => one(indexing::gather(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                dimension_numbers,
                *fill_value,
                *mode,
                slice_sizes,
            )),
            Indexing::Scatter(ScatterParams {
                kind,
                dimension_numbers,
                mode,
                ..
            }) => one(indexing::scatter(
                arg(name, args, 3, 0)?,
                arg(name, args, 3, 1)?,
                arg(name, args, 3, 2)?,
                *kind,
                dimension_numbers,
                *mode,
            )),
        },
        Primitive::Reduction(f) => match f {
            Reduction::Reduce(ReduceParams { op, axes, .. }) => {
                one(reduce::reduce(*op, arg(name, args, 1, 0)?, axes))
            }
            Reduction::ArgReduce(ArgReduceParams {
                op,
                axes,
                index_dtype,
            }) => one(reduce::arg_reduce(
                *op,
                arg(name, args, 1, 0)?,
                axes,
                *index_dtype,
            )),
            Reduction::Cumulative(CumulativeParams { op, axis, reverse }) => one(
                reduce::cumulative(*op, arg(name, args, 1, 0)?, *axis, *reverse),
            ),
            Reduction::Sort(SortParams {
                dimension,
                num_keys,
                ..
            }) => sort::sort(args, *dimension, *num_keys),
            Reduction::TopK(TopKParams { k, axis }) => {
                sort::top_k(arg(name, args, 1, 0)?, *k, *axis)
            }
        },
        Primitive::Linalg(f) => match f {
            Linalg::DotGeneral(DotGeneralParams {
                dimension_numbers,
                preferred_element_type,
                ..
            }) => one(linalg::dot_general(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                dimension_numbers,
                *preferred_element_type,
            )),
            Linalg::ConvGeneralDilated(x) => one(linalg::conv(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                x,
            )),
            Linalg::Cholesky => one(decomp::cholesky(arg(name, args, 1, 0)?, &decomp::Reference)),
            Linalg::TriangularSolve(p) => one(decomp::triangular_solve(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                p,
                &decomp::Reference,
            )),
            Linalg::Lu => decomp::lu(arg(name, args, 1, 0)?, &decomp::Reference),
            Linalg::Qr(p) => decomp::qr(arg(name, args, 1, 0)?, p, &decomp::Reference),
            Linalg::Eigh(p) => decomp::eigh(
                arg(name, args, 1, 0)?,
                p.lower,
                p.sort_eigenvalues,
                &decomp::Reference,
            ),
            Linalg::Svd(p) => decomp::svd(arg(name, args, 1, 0)?, p, &decomp::Reference),
            Linalg::Schur(p) => decomp::schur(arg(name, args, 1, 0)?, p, &decomp::Reference),
            Linalg::TridiagonalSolve(_) => one(decomp::tridiagonal_solve([
                arg(name, args, 4, 0)?,
                arg(name, args, 4, 1)?,
                arg(name, args, 4, 2)?,
                arg(name, args, 4, 3)?,
            ])),
            Linalg::Fft(FftParams {
                fft_type,
                fft_lengths,
            }) => one(complex::fft(arg(name, args, 1, 0)?, *fft_type, fft_lengths)),
        },
        // Inside a `shard_map` naming its axes, a collective communicates.
        Primitive::Collective(f) => match crate::spmd::collective(f, args) {
            Some(r) => r,
            None => match f {
                Collective::AllReduce(AllReduceParams { op, axes }) => {
                    let (rop, pos) = positional_reduce(name, *op, axes)?;
                    one(reduce::reduce(rop, arg(name, args, 1, 0)?, &pos))
                }
                Collective::AllGather(AllGatherParams { axis_name, .. }) => {
                    Err(unbound(name, &axis_name.join(", ")))
                }
                Collective::AxisIndex(AxisIndexParams { axis_name }) => {
                    Err(unbound(name, axis_name))
                }
                Collective::Ppermute(p) => Err(unbound(name, &p.axis_name.join(", "))),
                Collective::AllToAll(p) => Err(unbound(name, &p.axis_name.join(", "))),
                Collective::ReduceScatter(p) => Err(unbound(name, &p.axis_name.join(", "))),
                Collective::Pvary(p) => Err(unbound(name, &p.axes.join(", "))),
                Collective::PsumInvariant(p) => Err(unbound(name, &p.axes.join(", "))),
            },
        },
        Primitive::Marker(f) => match f {
            Marker::Name(_)
            | Marker::DevicePut(_)
            | Marker::OptimizationBarrier(_)
            | Marker::Reshard(_)
            | Marker::ShardingConstraint(_) => Ok(args.to_vec()),
            // The interpreter is the reference for the CPU.
            Marker::PlatformIndex(p) => {
                let i = p.index_for(Platform::Cpu).ok_or_else(|| {
                    IrError::Eval(format!(
                        "{name}: no entry of {:?} serves the cpu",
                        p.platforms
                    ))
                })?;
                let i = i32::try_from(i)
                    .map_err(|_| IrError::Eval(format!("{name}: index {i} overflows i32")))?;
                Ok(vec![HostArray::new(Vec::new(), Storage::I32(vec![i]))?])
            }
        },
        Primitive::Window(f) => match f {
            Window::ReduceWindow(x) => one(window::reduce_window(
                x.op,
                arg(name, args, 1, 0)?,
                &x.window,
            )),
            Window::Generic(x) => {
                let args: Vec<&HostArray> = args.iter().collect();
                window_generic::reduce_window_generic(&x.jaxpr, &x.window, &args)
            }
            Window::SelectAndGatherAdd(x) => one(window::select_and_gather_add(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                x.select_prim,
                &x.window,
            )),
            Window::SelectAndScatterAdd(x) => one(window::select_and_scatter_add(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                x.select_prim,
                &x.geometry(),
            )),
        },
        Primitive::Callback(f) => match f {
            Callback::DebugPrint(p) => callback::debug_print(p, args).map(|()| Vec::new()),
            Callback::DebugCallback(p) => {
                callback::call_for_effect(&p.callback, args).map(|()| Vec::new())
            }
            Callback::PureCallback(p) => callback::pure_callback(p, args),
        },
        Primitive::Random(f) => match f {
            Random::Seed(_) => one(random::seed(arg(name, args, 1, 0)?)),
            Random::Wrap(_) => one(random::wrap(arg(name, args, 1, 0)?)),
            Random::Unwrap(_) => one(random::unwrap(arg(name, args, 1, 0)?)),
            Random::Bits(x) => one(random::bits(arg(name, args, 1, 0)?, x.bit_width, &x.shape)),
            Random::Split(x) => one(random::split(arg(name, args, 1, 0)?, &x.shape)),
            Random::FoldIn(_) => one(random::fold_in(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
            )),
            Random::Threefry2x32(_) => {
                arg(name, args, 4, 0)?;
                random::threefry2x32(&args.iter().collect::<Vec<_>>())
            }
            Random::Gamma(x) => one(random::gamma(
                arg(name, args, 2, 0)?,
                arg(name, args, 2, 1)?,
                x.log_space,
            )),
            Random::RngBitGenerator(x) => {
                rng_bit::rng_bit_generator(arg(name, args, 1, 0)?, x.algorithm, x.dtype, &x.shape)
            }
        },
        Primitive::Control(_) | Primitive::State(_) | Primitive::Pallas(_) => Err(IrError::Eval(
            format!("{name} is handled by the interpreter core, not by eval_op"),
        )),
    }
}

/// A collective outside any `vmap` of its axis name.
fn unbound(name: &str, axis: &str) -> IrError {
    IrError::Eval(format!(
        "{name}: unbound axis name '{axis}': collectives over a named axis are resolved by \
         the vmap of that axis_name or run inside a shard_map whose mesh has it, and none \
         encloses this equation"
    ))
}

/// An all-reduce over positional axes only (JAX's batched form) is the
/// plain reduction over those dims.
fn positional_reduce(
    name: &str,
    op: crate::primitive::CollectiveOp,
    axes: &[crate::primitive::AxisRef],
) -> Result<(crate::primitive::ReduceOp, Vec<usize>), IrError> {
    use crate::primitive::{AxisRef, CollectiveOp, ReduceOp};
    let mut pos = Vec::with_capacity(axes.len());
    for a in axes {
        match a {
            AxisRef::Pos(p) => pos.push(*p),
            AxisRef::Name(n) => return Err(unbound(name, n)),
        }
    }
    let rop = match op {
        CollectiveOp::Sum => ReduceOp::Sum,
        CollectiveOp::Max => ReduceOp::Max,
        CollectiveOp::Min => ReduceOp::Min,
    };
    Ok((rop, pos))
}

/// Checks the operand count and returns operand `i`.
fn arg<'a>(
    name: &str,
    args: &'a [HostArray],
    n: usize,
    i: usize,
) -> Result<&'a HostArray, IrError> {
    if args.len() != n {
        return Err(IrError::ty(
            name,
            format!("expected {n} operands, got {}", args.len()),
        ));
    }
    Ok(&args[i])
}

/// Row-major strides of `shape` (in elements).
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Advances a row-major multi-index over `shape`; false after the last one.
pub(crate) fn next_index(idx: &mut [usize], shape: &[usize]) -> bool {
    for d in (0..shape.len()).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// For every multi-index of `shape` (row-major), `base + Σ idx[d]*strides[d]`.
pub(crate) fn affine_map(shape: &[usize], base: isize, strides: &[isize]) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        let mut off = base;
        for d in 0..shape.len() {
            off += idx[d] as isize * strides[d];
        }
        out.push(off as usize);
        if !next_index(&mut idx, shape) {
            break;
        }
    }
    out
}

/// Applies `$body` to the vector in any storage variant, rewrapping the
/// result in the same variant.
macro_rules! map_storage {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            Storage::Bool($v) => Storage::Bool($body),
            Storage::I8($v) => Storage::I8($body),
            Storage::I16($v) => Storage::I16($body),
            Storage::I32($v) => Storage::I32($body),
            Storage::I64($v) => Storage::I64($body),
            Storage::U8($v) => Storage::U8($body),
            Storage::U16($v) => Storage::U16($body),
            Storage::U32($v) => Storage::U32($body),
            Storage::U64($v) => Storage::U64($body),
            Storage::F16($v) => Storage::F16($body),
            Storage::BF16($v) => Storage::BF16($body),
            Storage::F32($v) => Storage::F32($body),
            Storage::F64($v) => Storage::F64($body),
            Storage::C64($v) => Storage::C64($body),
            Storage::C128($v) => Storage::C128($body),
            Storage::Key($v) => Storage::Key($body),
        }
    };
}
pub(crate) use map_storage;

/// Elements of `s` at positions `idx`.
pub(crate) fn take(s: &Storage, idx: &[usize]) -> Storage {
    map_storage!(s, v => idx.iter().map(|&i| v[i]).collect())
}

/// Marks an index-map entry that takes the fill value.
pub(crate) const FILL: usize = usize::MAX;

/// Elements of `s` at positions `idx`, or `fill[0]` where `idx` is [`FILL`].
pub(crate) fn take_or_fill(s: &Storage, idx: &[usize], fill: &Storage) -> Result<Storage, IrError> {
    if s.dtype() != fill.dtype() || fill.is_empty() {
        return Err(IrError::Eval(format!(
            "fill value of dtype {} for an array of dtype {}",
            fill.dtype(),
            s.dtype()
        )));
    }
    let f = take(fill, &[0]);
    Ok(match (s, &f) {
        (Storage::Bool(v), Storage::Bool(f)) => Storage::Bool(pick(v, idx, f[0])),
        (Storage::I8(v), Storage::I8(f)) => Storage::I8(pick(v, idx, f[0])),
        (Storage::I16(v), Storage::I16(f)) => Storage::I16(pick(v, idx, f[0])),
        (Storage::I32(v), Storage::I32(f)) => Storage::I32(pick(v, idx, f[0])),
        (Storage::I64(v), Storage::I64(f)) => Storage::I64(pick(v, idx, f[0])),
        (Storage::U8(v), Storage::U8(f)) => Storage::U8(pick(v, idx, f[0])),
        (Storage::U16(v), Storage::U16(f)) => Storage::U16(pick(v, idx, f[0])),
        (Storage::U32(v), Storage::U32(f)) => Storage::U32(pick(v, idx, f[0])),
        (Storage::U64(v), Storage::U64(f)) => Storage::U64(pick(v, idx, f[0])),
        (Storage::F16(v), Storage::F16(f)) => Storage::F16(pick(v, idx, f[0])),
        (Storage::BF16(v), Storage::BF16(f)) => Storage::BF16(pick(v, idx, f[0])),
        (Storage::F32(v), Storage::F32(f)) => Storage::F32(pick(v, idx, f[0])),
        (Storage::F64(v), Storage::F64(f)) => Storage::F64(pick(v, idx, f[0])),
        (Storage::C64(v), Storage::C64(f)) => Storage::C64(pick(v, idx, f[0])),
        (Storage::C128(v), Storage::C128(f)) => Storage::C128(pick(v, idx, f[0])),
        _ => return Err(IrError::Eval("fill value dtype mismatch".into())),
    })
}

fn pick<T: Copy>(v: &[T], idx: &[usize], fill: T) -> Vec<T> {
    idx.iter()
        .map(|&i| if i == FILL { fill } else { v[i] })
        .collect()
}

/// Concatenates storages of one dtype end to end.
pub(crate) fn concat_storage(parts: &[&Storage], name: &str) -> Result<Storage, IrError> {
    let Some(first) = parts.first() else {
        return Err(IrError::ty(name, "needs at least one operand"));
    };
    let mut out = (*first).clone();
    for p in &parts[1..] {
        match (&mut out, *p) {
            (Storage::Bool(o), Storage::Bool(v)) => o.extend_from_slice(v),
            (Storage::I8(o), Storage::I8(v)) => o.extend_from_slice(v),
            (Storage::I16(o), Storage::I16(v)) => o.extend_from_slice(v),
            (Storage::I32(o), Storage::I32(v)) => o.extend_from_slice(v),
            (Storage::I64(o), Storage::I64(v)) => o.extend_from_slice(v),
            (Storage::U8(o), Storage::U8(v)) => o.extend_from_slice(v),
            (Storage::U16(o), Storage::U16(v)) => o.extend_from_slice(v),
            (Storage::U32(o), Storage::U32(v)) => o.extend_from_slice(v),
            (Storage::U64(o), Storage::U64(v)) => o.extend_from_slice(v),
            (Storage::F16(o), Storage::F16(v)) => o.extend_from_slice(v),
            (Storage::BF16(o), Storage::BF16(v)) => o.extend_from_slice(v),
            (Storage::F32(o), Storage::F32(v)) => o.extend_from_slice(v),
            (Storage::F64(o), Storage::F64(v)) => o.extend_from_slice(v),
            (Storage::C64(o), Storage::C64(v)) => o.extend_from_slice(v),
            (Storage::C128(o), Storage::C128(v)) => o.extend_from_slice(v),
            (o, v) => {
                return Err(IrError::ty(
                    name,
                    format!("operands of dtypes {} and {}", o.dtype(), v.dtype()),
                ))
            }
        }
    }
    Ok(out)
}

/// The compute domain of an array: bool, integers widened to 64 bits (they
/// wrap back on lowering), f16/bf16/f32 as f32, f64 as f64.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Lifted {
    /// bool
    B(Vec<bool>),
    /// signed integers
    I(Vec<i64>),
    /// unsigned integers
    U(Vec<u64>),
    /// f16, bf16, f32
    F32(Vec<f32>),
    /// f64
    F64(Vec<f64>),
    /// c64 and c128, computed in `Complex64`
    C(Vec<num_complex::Complex64>),
}

/// Lifts storage into its compute domain.
pub(crate) fn lift(s: &Storage) -> Lifted {
    match s {
        Storage::Bool(v) => Lifted::B(v.clone()),
        Storage::I8(v) => Lifted::I(v.iter().map(|&x| x as i64).collect()),
        Storage::I16(v) => Lifted::I(v.iter().map(|&x| x as i64).collect()),
        Storage::I32(v) => Lifted::I(v.iter().map(|&x| x as i64).collect()),
        Storage::I64(v) => Lifted::I(v.clone()),
        Storage::U8(v) => Lifted::U(v.iter().map(|&x| x as u64).collect()),
        Storage::U16(v) => Lifted::U(v.iter().map(|&x| x as u64).collect()),
        Storage::U32(v) => Lifted::U(v.iter().map(|&x| x as u64).collect()),
        Storage::U64(v) => Lifted::U(v.clone()),
        Storage::F16(v) => Lifted::F32(v.iter().map(|x| x.to_f32()).collect()),
        Storage::BF16(v) => Lifted::F32(v.iter().map(|x| x.to_f32()).collect()),
        Storage::F32(v) => Lifted::F32(v.clone()),
        Storage::F64(v) => Lifted::F64(v.clone()),
        Storage::C64(v) => Lifted::C(
            v.iter()
                .map(|z| num_complex::Complex64::new(z.re as f64, z.im as f64))
                .collect(),
        ),
        Storage::C128(v) => Lifted::C(v.clone()),
        // Keys never reach arithmetic (the shape rules reject them); their
        // second word stands in.
        Storage::Key(v) => Lifted::U(v.iter().map(|k| k[1] as u64).collect()),
    }
}

/// Lowers a lifted value back to `dtype` with cast semantics: integers wrap,
/// floats round to nearest even, float→int truncates and saturates (NaN→0),
/// anything→bool is `x != 0`.
pub(crate) fn lower(l: Lifted, dtype: DType) -> Storage {
    macro_rules! cast_all {
        ($v:expr, $f16:expr, $bf16:expr, $bool:expr) => {
            match dtype {
                DType::Bool => Storage::Bool($v.iter().map($bool).collect()),
                DType::I8 => Storage::I8($v.iter().map(|&x| x as i8).collect()),
                DType::I16 => Storage::I16($v.iter().map(|&x| x as i16).collect()),
                DType::I32 => Storage::I32($v.iter().map(|&x| x as i32).collect()),
                DType::I64 => Storage::I64($v.iter().map(|&x| x as i64).collect()),
                DType::U8 => Storage::U8($v.iter().map(|&x| x as u8).collect()),
                DType::U16 => Storage::U16($v.iter().map(|&x| x as u16).collect()),
                DType::U32 => Storage::U32($v.iter().map(|&x| x as u32).collect()),
                DType::U64 => Storage::U64($v.iter().map(|&x| x as u64).collect()),
                DType::F16 => Storage::F16($v.iter().map($f16).collect()),
                DType::BF16 => Storage::BF16($v.iter().map($bf16).collect()),
                DType::F32 => Storage::F32($v.iter().map(|&x| x as f32).collect()),
                DType::F64 => Storage::F64($v.iter().map(|&x| x as f64).collect()),
                DType::C64 | DType::C128 | DType::KeyFry => {
                    let re: Vec<f64> = $v.iter().map(|&x| x as f64).collect();
                    Storage::from_f64(dtype, &re)
                }
            }
        };
    }
    match l {
        Lifted::B(v) => {
            let v: Vec<u8> = v.iter().map(|&b| b as u8).collect();
            cast_all!(
                v,
                |&x| f16::from_f32(x as f32),
                |&x| bf16::from_f32(x as f32),
                |&x| x != 0
            )
        }
        Lifted::I(v) => cast_all!(
            v,
            |&x| f16::from_f64(x as f64),
            |&x| bf16::from_f64(x as f64),
            |&x| x != 0
        ),
        Lifted::U(v) => cast_all!(
            v,
            |&x| f16::from_f64(x as f64),
            |&x| bf16::from_f64(x as f64),
            |&x| x != 0
        ),
        Lifted::F32(v) => cast_all!(v, |&x| f16::from_f32(x), |&x| bf16::from_f32(x), |&x| x
            != 0.0),
        Lifted::F64(v) => cast_all!(v, |&x| f16::from_f64(x), |&x| bf16::from_f64(x), |&x| x
            != 0.0),
        // Complex to real keeps the real part, as JAX's cast; to bool is
        // `z != 0`.
        Lifted::C(v) if dtype == DType::Bool => {
            Storage::Bool(v.iter().map(|z| z.re != 0.0 || z.im != 0.0).collect())
        }
        Lifted::C(v) => Storage::from_c128(dtype, &v),
    }
}

/// Shape of a rank-0 operand broadcast against `shape`, or an error when the
/// two shapes differ otherwise.
pub(crate) fn check_same_shape(name: &str, a: &HostArray, b: &HostArray) -> Result<(), IrError> {
    if a.shape() != b.shape() {
        return Err(IrError::ty(
            name,
            format!("operand shapes {:?} and {:?} differ", a.shape(), b.shape()),
        ));
    }
    Ok(())
}

/// Checks `axis < rank`.
pub(crate) fn check_axis(name: &str, axis: usize, rank: usize) -> Result<(), IrError> {
    if axis >= rank {
        return Err(IrError::ty(
            name,
            format!("axis {axis} out of range for rank {rank}"),
        ));
    }
    Ok(())
}
