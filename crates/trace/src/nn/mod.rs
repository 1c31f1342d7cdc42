//! `nn`: JAX's `jax.nn` activations and helpers — `relu`, `gelu`,
//! `sigmoid`, `silu`, `softmax`, `log_softmax`, `one_hot`, `logsumexp` —
//! in the primitive sequences JAX 0.10 emits; the other activations
//! (`activations.rs`) and `initializers` (`jax.nn.initializers`).

mod activations;
mod attention;
pub mod initializers;
mod more;

pub use activations::{
    celu, elu, glu, hard_sigmoid, hard_silu, hard_tanh, leaky_relu, log_sigmoid, mish, relu6, selu,
    soft_sign, softplus, standardize,
};
pub use attention::dot_product_attention;
pub use more::{
    hard_swish, identity, log1mexp, logmeanexp, sparse_plus, sparse_sigmoid, squareplus, swish,
    tanh,
};

use crate::array::Array;
use crate::core::bind1;
use crate::error::Result;
use crate::lax;
use crate::numpy::{self as jnp, IntoAxes};
use crate::stage::{close, trace_flat, StageMode};
use jaxon_ir::primitive::CustomJvpCallParams;
use jaxon_ir::primitive::{ReduceOp, UnaryOp};
use jaxon_ir::{DType, Primitive};

pub use crate::numpy::logsumexp;

fn lit(v: f64, dtype: DType) -> Result<Array> {
    lax::convert_element_type(&Array::weak(v), dtype, false)
}

fn to_float(x: &Array) -> Result<Array> {
    lax::convert_element_type(x, jnp::promote::float_dtype_of(x.dtype()), x.weak_type())
}

fn named(name: &str, x: &Array, f: impl Fn(&Array) -> Result<Array>) -> Result<Array> {
    crate::numpy::jitted(name, vec![x.clone()], move |a| f(&a[0]))
}

/// `jax.nn.relu`: `max(x, 0)`. Staged as JAX's `custom_jvp_call[name=relu]`
/// around `jit[name=relu]`; the JVP rule itself is not in the text.
/// Eagerly it is just the `max`.
pub fn relu(x: &Array) -> Result<Array> {
    let top = crate::core::find_top_trace(std::slice::from_ref(x))?;
    if top.trace().as_any().is::<crate::eval::EvalTrace>() {
        return jnp::maximum(x, &Array::weak(0.0));
    }
    if crate::dynshape::is_dynamic(x) {
        // A dynamic shape cannot be staged from its aval alone: the same
        // function with the custom rule's derivative (1 where x > 0, else 0,
        // also at 0) inlined.
        let zero = jnp::zeros_like(x)?;
        return jnp::where_(&lax::gt(x, &zero)?, x, &zero);
    }
    let staged = trace_flat(StageMode::Dynamic, std::slice::from_ref(x.aval()), |t| {
        let y = named("relu", &t[0], |x| jnp::maximum(x, &Array::weak(0.0)))?;
        Ok(vec![y])
    })?;
    let call_jaxpr = close(staged)?;
    bind1(
        &Primitive::from(CustomJvpCallParams {
            name: "relu".into(),
            call_jaxpr,
            jvp: "jvp".into(),
            num_consts: 0,
            symbolic_zeros: false,
        }),
        std::slice::from_ref(x),
    )
}

/// `jax.nn.gelu(x, approximate)`: the tanh approximation (JAX's default)
/// or the exact form through `erfc`.
pub fn gelu(x: &Array, approximate: bool) -> Result<Array> {
    let x = to_float(x)?;
    let dt = x.dtype();
    if approximate {
        let cube = lax::integer_pow(&x, 3)?;
        let inner = lax::add(&x, &lax::mul(&lit(0.044715, dt)?, &cube)?)?;
        let scaled = lax::mul(&lit((2.0 / std::f64::consts::PI).sqrt(), dt)?, &inner)?;
        let t = lax::add(&lit(1.0, dt)?, &lax::tanh(&scaled)?)?;
        lax::mul(&x, &lax::mul(&lit(0.5, dt)?, &t)?)
    } else {
        let half = lax::mul(&lit(0.5, dt)?, &x)?;
        let arg = lax::mul(&lax::neg(&x)?, &lit(std::f64::consts::FRAC_1_SQRT_2, dt)?)?;
        let out = lax::mul(&half, &lax::erfc(&arg)?)?;
        lax::unary(UnaryOp::Copy, &out)
    }
}

/// `jax.nn.sigmoid`: `logistic`.
pub fn sigmoid(x: &Array) -> Result<Array> {
    lax::logistic(&to_float(x)?)
}

/// `jax.nn.silu` (swish): `x * sigmoid(x)`, as JAX's `jit[name=silu]`.
pub fn silu(x: &Array) -> Result<Array> {
    let x = to_float(x)?;
    named("silu", &x, |x| lax::mul(x, &lax::logistic(x)?))
}

/// The max-shifted input of softmax: `x - stop_gradient(max(x))`.
fn shifted(x: &Array, axes: &[usize]) -> Result<Array> {
    let m = lax::reduce(ReduceOp::Max, x, axes)?;
    let m = lax::max(&lit(f64::NEG_INFINITY, x.dtype())?, &m)?;
    let m = lax::stop_gradient(&lax::expand_dims(&m, axes)?)?;
    jnp::subtract(x, &m)
}

/// `jax.nn.softmax(x, axis)`.
pub fn softmax(x: &Array, axes: impl IntoAxes) -> Result<Array> {
    let x = to_float(x)?;
    let axes = axes.into_axes(x.ndim())?;
    let e = lax::exp(&shifted(&x, &axes)?)?;
    let s = jnp::sum(&e, axes.as_slice(), true)?;
    jnp::divide(&e, &s)
}

/// `jax.nn.log_softmax(x, axis)`, as JAX's `jit[name=log_softmax]`.
pub fn log_softmax(x: &Array, axes: impl IntoAxes) -> Result<Array> {
    let x = to_float(x)?;
    let axes = axes.into_axes(x.ndim())?;
    named("log_softmax", &x, move |x| {
        let sh = shifted(x, &axes)?;
        let s = jnp::sum(&lax::exp(&sh)?, axes.as_slice(), true)?;
        jnp::subtract(&sh, &lax::log(&s)?)
    })
}

/// `jax.nn.one_hot(x, num_classes, dtype)` along a new last axis, as
/// JAX's `jit[name=_one_hot]`.
pub fn one_hot(x: &Array, num_classes: usize, dtype: DType) -> Result<Array> {
    named("_one_hot", x, move |x| {
        let nd = x.ndim();
        let lhs = lax::expand_dims(x, &[nd])?;
        let mut shape = vec![1; nd];
        shape.push(num_classes);
        let rhs = lax::broadcasted_iota(x.dtype(), &shape, nd)?;
        let eq = jnp::equal(&lhs, &rhs)?;
        lax::convert_element_type(&eq, dtype, false)
    })
}
