//! `lax`: the primitives as functions. Each binds exactly one primitive
//! (no promotion, no broadcasting beyond what the primitive itself allows);
//! the NumPy layer builds JAX's `jnp` semantics on top.
//!
//! Invariant: these functions return `Result`; the infallible `Array`
//! methods and operators raise their errors (see `error::raise`).

mod assoc_scan;
mod complex;
mod conv;
mod in_dim;
pub mod linalg;
mod markers;
mod rng;
mod window;

pub use assoc_scan::associative_scan;
pub use complex::{complex, conj, fft, imag, real};
pub use conv::{
    conv, conv_dimension_numbers, conv_general_dilated, conv_transpose, ConvOptions, Padding,
};
pub use in_dim::{
    broadcast_shapes, dtype, dynamic_index_in_dim, dynamic_slice_in_dim,
    dynamic_update_index_in_dim, dynamic_update_slice_in_dim, select,
};
pub use markers::{checkpoint_name, optimization_barrier};
pub use rng::{rng_bit_generator, RandomAlgorithm};
pub use window::{
    reduce_window, reduce_window_max, reduce_window_min, reduce_window_sum, reduce_window_with,
};

use crate::array::Array;
use crate::core::{bind, bind1};
use crate::error::{Error, Result};
use crate::eval::apply_eagerly;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::primitive::{ArgOp, BinaryOp, CumulativeOp, ReduceOp, UnaryOp};
use jaxon_ir::primitive::{
    ArgReduceParams, BitcastConvertTypeParams, BroadcastInDimParams, ConcatenateParams,
    ConvertElementTypeParams, CumulativeParams, DotGeneralParams, DynamicSliceParams, Elementwise,
    Indexing, IntegerPowParams, IotaParams, PadParams, ReduceParams, ReshapeParams, RevParams,
    SliceParams, SortParams, SplitParams, SqueezeParams, TopKParams, TransposeParams,
};
use jaxon_ir::primitive::{DotDimensionNumbers, Ints};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Backend, DType, Primitive};
use std::sync::{Arc, OnceLock};

/// Applies an elementwise unary primitive.
pub fn unary(op: UnaryOp, x: &Array) -> Result<Array> {
    bind1(&Primitive::from(op), std::slice::from_ref(x))
}

/// Applies an elementwise binary primitive (operands of one dtype; rank-0
/// and size-1 dimensions broadcast).
pub fn binary(op: BinaryOp, x: &Array, y: &Array) -> Result<Array> {
    bind1(&Primitive::from(op), &[x.clone(), y.clone()])
}

macro_rules! unary_fns {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`lax.", stringify!($name), "`.")]
        pub fn $name(x: &Array) -> Result<Array> {
            unary(UnaryOp::$op, x)
        }
    )*};
}

unary_fns! {
    neg => Neg, sign => Sign, floor => Floor, ceil => Ceil, is_finite => IsFinite,
    exp => Exp, exp2 => Exp2, log => Log, log1p => Log1p, expm1 => Expm1,
    tanh => Tanh, logistic => Logistic, sin => Sin, cos => Cos, tan => Tan,
    asin => Asin, acos => Acos, atan => Atan, sinh => Sinh, cosh => Cosh,
    asinh => Asinh, acosh => Acosh, atanh => Atanh, sqrt => Sqrt, rsqrt => Rsqrt,
    cbrt => Cbrt, abs => Abs, not => Not, erf => Erf, erfc => Erfc,
    erf_inv => ErfInv, square => Square, stop_gradient => StopGradient,
    lgamma => Lgamma, digamma => Digamma, bessel_i0e => BesselI0e, bessel_i1e => BesselI1e,
    population_count => PopulationCount, clz => Clz,
}

macro_rules! binary_fns {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`lax.", stringify!($name), "`.")]
        pub fn $name(x: &Array, y: &Array) -> Result<Array> {
            binary(BinaryOp::$op, x, y)
        }
    )*};
}

binary_fns! {
    add => Add, sub => Sub, mul => Mul, div => Div, rem => Rem, pow => Pow,
    max => Max, min => Min, atan2 => Atan2, nextafter => Nextafter,
    bitwise_and => And, bitwise_or => Or, bitwise_xor => Xor,
    shift_left => ShiftLeft, shift_right_arithmetic => ShiftRightArithmetic,
    shift_right_logical => ShiftRightLogical,
    eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge,
    lt_to => LtTo, le_to => LeTo,
    igamma => Igamma, igammac => Igammac, igamma_grad_a => IgammaGradA,
    random_gamma_grad => RandomGammaGrad, polygamma => Polygamma, zeta => Zeta,
}

/// `lax.integer_pow`: `x ** y` for a static integer `y`.
pub fn integer_pow(x: &Array, y: i64) -> Result<Array> {
    bind1(
        &Primitive::from(IntegerPowParams { y }),
        std::slice::from_ref(x),
    )
}

fn interpreter() -> &'static Arc<dyn Backend> {
    static I: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    I.get_or_init(|| Arc::new(InterpreterBackend::new()))
}

/// `lax.round(x, rounding_method)`: to the nearest integer, halves away
/// from zero or to even.
pub fn round(x: &Array, rounding_method: jaxon_ir::primitive::RoundingMethod) -> Result<Array> {
    bind1(
        &Primitive::from(jaxon_ir::primitive::RoundParams { rounding_method }),
        std::slice::from_ref(x),
    )
}

/// `lax.convert_element_type`. A concrete scalar is converted right away
/// rather than staged, as JAX does for Python scalars, so `x * 3.0` stages a
/// literal `3.0:f32[]`, not a conversion.
pub fn convert_element_type(x: &Array, new_dtype: DType, weak_type: bool) -> Result<Array> {
    if x.dtype() == new_dtype && x.weak_type() == weak_type {
        return Ok(x.clone());
    }
    let p = Primitive::from(ConvertElementTypeParams {
        new_dtype,
        weak_type,
    });
    // Only scalars (Rust literals) are converted on the host, as JAX does
    // for Python scalars; a captured constant array's conversion is staged.
    if x.is_tracer() || x.ndim() > 0 {
        bind1(&p, std::slice::from_ref(x))
    } else if x.dtype() == new_dtype {
        Ok(x.rewrap_weak(weak_type).expect("concrete"))
    } else if let Some(v) = x.exact_float().filter(|_| new_dtype.is_float()) {
        Ok(Array::scalar_of(new_dtype, v, weak_type))
    } else {
        let mut outs = apply_eagerly(interpreter(), &p, std::slice::from_ref(x))?;
        Ok(outs.remove(0))
    }
}

/// `lax.bitcast_convert_type`.
pub fn bitcast_convert_type(x: &Array, new_dtype: DType) -> Result<Array> {
    bind1(
        &Primitive::from(BitcastConvertTypeParams { new_dtype }),
        std::slice::from_ref(x),
    )
}

/// `lax.select_n(which, *cases)`.
pub fn select_n(which: &Array, cases: &[Array]) -> Result<Array> {
    let mut args = vec![which.clone()];
    args.extend(cases.iter().cloned());
    bind1(&Primitive::Elementwise(Elementwise::SelectN), &args)
}

/// `lax.clamp(lo, x, hi)`.
pub fn clamp(lo: &Array, x: &Array, hi: &Array) -> Result<Array> {
    bind1(
        &Primitive::Elementwise(Elementwise::Clamp),
        &[lo.clone(), x.clone(), hi.clone()],
    )
}

/// `lax.regularized_incomplete_beta(a, b, x)`: `I_x(a, b)` elementwise.
pub fn regularized_incomplete_beta(a: &Array, b: &Array, x: &Array) -> Result<Array> {
    bind1(
        &Primitive::Elementwise(Elementwise::RegularizedIncompleteBeta),
        &[a.clone(), b.clone(), x.clone()],
    )
}

/// `lax.broadcast_in_dim(x, shape, broadcast_dimensions)`.
pub fn broadcast_in_dim(
    x: &Array,
    shape: &[usize],
    broadcast_dimensions: &[usize],
) -> Result<Array> {
    if x.ty().static_sizes().as_deref() == Some(shape)
        && broadcast_dimensions.iter().copied().eq(0..shape.len())
    {
        return Ok(x.clone());
    }
    bind1(
        &Primitive::from(BroadcastInDimParams {
            shape: shape.iter().map(|&n| Some(n)).collect(),
            broadcast_dimensions: Ints::from(broadcast_dimensions),
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.broadcast(x, sizes)`: adds leading dimensions.
pub fn broadcast(x: &Array, sizes: &[usize]) -> Result<Array> {
    let shape = x.try_shape()?;
    let full: Vec<usize> = sizes.iter().chain(&shape).copied().collect();
    let dims: Vec<usize> = (sizes.len()..full.len()).collect();
    broadcast_in_dim(x, &full, &dims)
}

/// `lax.reshape(x, new_sizes)`.
pub fn reshape(x: &Array, new_sizes: &[usize]) -> Result<Array> {
    if x.ty().static_sizes().as_deref() == Some(new_sizes) {
        return Ok(x.clone());
    }
    bind1(
        &Primitive::from(ReshapeParams {
            new_sizes: new_sizes.iter().map(|&n| Some(n)).collect(),
            dimensions: None,
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.transpose(x, permutation)`.
pub fn transpose(x: &Array, permutation: &[usize]) -> Result<Array> {
    if permutation.iter().copied().eq(0..permutation.len()) && permutation.len() == x.ndim() {
        return Ok(x.clone());
    }
    bind1(
        &Primitive::from(TransposeParams {
            permutation: permutation.to_vec(),
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.squeeze(x, dimensions)`.
pub fn squeeze(x: &Array, dimensions: &[usize]) -> Result<Array> {
    if dimensions.is_empty() {
        return Ok(x.clone());
    }
    bind1(
        &Primitive::from(SqueezeParams {
            dimensions: dimensions.to_vec(),
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.expand_dims(x, dimensions)`, as a `broadcast_in_dim`.
pub fn expand_dims(x: &Array, dimensions: &[usize]) -> Result<Array> {
    let shape = x.try_shape()?;
    let ndim = shape.len() + dimensions.len();
    let mut out = Vec::with_capacity(ndim);
    let mut kept = Vec::with_capacity(shape.len());
    let mut src = shape.iter();
    for i in 0..ndim {
        if dimensions.contains(&i) {
            out.push(1);
        } else {
            kept.push(i);
            out.push(*src.next().ok_or_else(|| {
                Error::InvalidArgument(format!("expand_dims: bad dimensions {dimensions:?}"))
            })?);
        }
    }
    broadcast_in_dim(x, &out, &kept)
}

/// `lax.rev(x, dimensions)`.
pub fn rev(x: &Array, dimensions: &[usize]) -> Result<Array> {
    bind1(
        &Primitive::from(RevParams {
            dimensions: dimensions.to_vec(),
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.pad(x, padding_value, [(lo, hi, interior)])`.
pub fn pad(x: &Array, padding_value: &Array, config: &[(i64, i64, i64)]) -> Result<Array> {
    bind1(
        &Primitive::from(PadParams {
            padding_config: config
                .iter()
                .map(|&(l, h, i)| Ints::new(vec![l, h, i]))
                .collect(),
        }),
        &[x.clone(), padding_value.clone()],
    )
}

/// `lax.concatenate(operands, dimension)`.
pub fn concatenate(operands: &[Array], dimension: usize) -> Result<Array> {
    if operands.len() == 1 {
        return Ok(operands[0].clone());
    }
    bind1(&Primitive::from(ConcatenateParams { dimension }), operands)
}

/// `lax.slice(x, start, limit, strides)`.
pub fn slice(
    x: &Array,
    start: &[usize],
    limit: &[usize],
    strides: Option<&[usize]>,
) -> Result<Array> {
    bind1(
        &Primitive::from(SliceParams {
            start_indices: Ints::from(start),
            limit_indices: Ints::from(limit),
            strides: strides.map(Ints::from),
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.dynamic_slice(x, starts, sizes)`: a negative start counts from the
/// end of its axis (JAX's `allow_negative_indices=True`), then every start
/// clamps into bounds.
pub fn dynamic_slice(x: &Array, starts: &[Array], sizes: &[usize]) -> Result<Array> {
    let starts = in_dim::wrap_starts("dynamic_slice", x, starts)?;
    dynamic_slice_clamped(x, &starts, sizes)
}

/// The `dynamic_slice` primitive alone (JAX's `dynamic_slice_p.bind`):
/// starts clamp into bounds, negative ones to 0. The transformation rules
/// and the indexing code, which wrap or bound their starts themselves,
/// stage this.
pub fn dynamic_slice_clamped(x: &Array, starts: &[Array], sizes: &[usize]) -> Result<Array> {
    let mut args = vec![x.clone()];
    args.extend(starts.iter().cloned());
    bind1(
        &Primitive::from(DynamicSliceParams {
            slice_sizes: Ints::from(sizes),
        }),
        &args,
    )
}

/// `lax.dynamic_update_slice(x, update, starts)`: a negative start counts
/// from the end of its axis, then every start clamps so that `update`
/// fits.
pub fn dynamic_update_slice(x: &Array, update: &Array, starts: &[Array]) -> Result<Array> {
    let starts = in_dim::wrap_starts("dynamic_update_slice", x, starts)?;
    dynamic_update_slice_clamped(x, update, &starts)
}

/// The `dynamic_update_slice` primitive alone (see
/// [`dynamic_slice_clamped`]).
pub fn dynamic_update_slice_clamped(x: &Array, update: &Array, starts: &[Array]) -> Result<Array> {
    let mut args = vec![x.clone(), update.clone()];
    args.extend(starts.iter().cloned());
    bind1(&Primitive::Indexing(Indexing::DynamicUpdateSlice), &args)
}

/// `lax.iota(dtype, size)`.
pub fn iota(dtype: DType, size: usize) -> Result<Array> {
    broadcasted_iota(dtype, &[size], 0)
}

/// `lax.broadcasted_iota(dtype, shape, dimension)`.
pub fn broadcasted_iota(dtype: DType, shape: &[usize], dimension: usize) -> Result<Array> {
    bind1(
        &Primitive::from(IotaParams {
            dtype,
            shape: shape.iter().map(|&n| Some(n)).collect(),
            dimension,
        }),
        &[],
    )
}

/// `lax.reduce_*` over `axes`.
pub fn reduce(op: ReduceOp, x: &Array, axes: &[usize]) -> Result<Array> {
    bind1(
        &Primitive::from(ReduceParams::new(op, axes.to_vec())),
        std::slice::from_ref(x),
    )
}

/// `lax.argmax` / `lax.argmin` along one axis.
pub fn arg_reduce(op: ArgOp, x: &Array, axis: usize, index_dtype: DType) -> Result<Array> {
    bind1(
        &Primitive::from(ArgReduceParams {
            op,
            axes: vec![axis],
            index_dtype,
        }),
        std::slice::from_ref(x),
    )
}

/// `lax.cumsum` and friends.
pub fn cumulative(op: CumulativeOp, x: &Array, axis: usize, reverse: bool) -> Result<Array> {
    bind1(
        &Primitive::from(CumulativeParams { op, axis, reverse }),
        std::slice::from_ref(x),
    )
}

/// `lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type)`.
pub fn dot_general(
    lhs: &Array,
    rhs: &Array,
    dimension_numbers: DotDimensionNumbers,
    preferred_element_type: Option<DType>,
) -> Result<Array> {
    bind1(
        &Primitive::from(DotGeneralParams {
            dimension_numbers,
            precision: None,
            preferred_element_type,
        }),
        &[lhs.clone(), rhs.clone()],
    )
}

/// `lax.sort` of several operands along `dimension` by the first
/// `num_keys`.
pub fn sort(
    operands: &[Array],
    dimension: usize,
    is_stable: bool,
    num_keys: usize,
) -> Result<Vec<Array>> {
    bind(
        &Primitive::from(SortParams {
            dimension,
            is_stable,
            num_keys,
        }),
        operands,
    )
}

/// `lax.top_k(x, k)` along the last axis: values and `i32` indices.
pub fn top_k(x: &Array, k: usize) -> Result<(Array, Array)> {
    let axis = x.ndim().checked_sub(1).ok_or_else(|| {
        Error::InvalidArgument(format!("top_k needs an array, got {}", fmt_aval(x.aval())))
    })?;
    let mut outs = bind(
        &Primitive::from(TopKParams { k, axis }),
        std::slice::from_ref(x),
    )?;
    let idx = outs.pop().expect("two results");
    let vals = outs.pop().expect("two results");
    Ok((vals, idx))
}

/// `lax.split(x, sizes, axis)`.
pub fn split(x: &Array, sizes: &[usize], axis: usize) -> Result<Vec<Array>> {
    bind(
        &Primitive::from(SplitParams {
            sizes: Ints::from(sizes),
            axis,
        }),
        std::slice::from_ref(x),
    )
}
