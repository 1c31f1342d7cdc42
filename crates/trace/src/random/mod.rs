//! `random`: JAX's counter-based PRNG (`jax.random`) with the default
//! threefry2x32 implementation, bit-for-bit as JAX 0.10.2 in its default
//! configuration (`jax_enable_x64=False`, `jax_threefry_partitionable=True`).
//!
//! Keys are raw key data: a `u32[2]` array, what `jax.random.key_data`
//! returns for a `jax.random.key` (and what the legacy `PRNGKey` is). Split
//! keys are `u32[..., 2]`; index one out with [`key_at`]. Every function is
//! written with `lax` ops, so it runs eagerly, stages under `make_jaxpr`
//! and compiles under `jit` alike; keys may be tracers.
//!
//! Not matched: JAX stages `threefry2x32` and `random_bits` as their own
//! primitives inside nested `pjit`s; here they are inlined integer ops, so
//! printed jaxprs differ while the values agree.

mod binomial;
mod continuous;
mod discrete;
mod gamma;
mod multivariate;
mod permutation;
mod samplers;
mod support;
mod threefry;
mod typed;

pub use binomial::binomial;
pub use continuous::{cauchy, double_sided_maxwell, maxwell, pareto, weibull_min};
pub use discrete::{choice, geometric, poisson, rademacher};
pub use gamma::{beta, chisquare, dirichlet, f, gamma, loggamma, t};
pub use multivariate::{ball, generalized_normal, multivariate_normal, orthogonal};

pub use permutation::{permutation, permutation_along, Permutable};
pub use samplers::{
    bernoulli, categorical, categorical_shape, exponential, gumbel, laplace, logistic, normal,
    randint, truncated_normal, uniform,
};
pub use threefry::{iota_2x32, random_bits, threefry2x32};
pub use typed::{bits_typed, fold_in_typed, key_data, split_typed, typed_key, wrap_key_data};

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;
use threefry::key_halves;

/// Runs `f(args)` as one compiled program when no trace is active, as JAX
/// jits its samplers: the dozens of integer ops of threefry then fuse into
/// a few loops instead of each streaming the whole array through memory
/// (`normal` of a million f32 on the cpu backend: 71 ms op by op, 20-25 ms
/// staged; JAX takes 9-13 ms). Under a
/// trace `f` is traced inline, so staged jaxprs are unchanged.
pub(crate) fn staged(
    name: &str,
    args: &[Array],
    f: impl Fn(&[Array]) -> Result<Array>,
) -> Result<Array> {
    if crate::core::find_top_trace(args)?.trace().name() != "eval" {
        return f(args);
    }
    crate::jit::jit(|xs: Vec<Array>| crate::error::ok_or_raise(f(&xs)))
        .name(name)
        .call(args.to_vec())
}

/// `jax.random.key(seed)` as raw key data `u32[2]`.
///
/// In JAX's default 32-bit mode a Python int seed is wrapped to 32 bits
/// before the key is made, so the key is `[0, seed mod 2**32]`; a negative
/// Python seed `s` corresponds to `seed = s as u64`.
pub fn key(seed: u64) -> Array {
    Array::from_vec(vec![0u32, seed as u32], &[2])
}

/// `jax.random.PRNGKey(seed)`: the same raw key as [`key`].
pub fn prng_key(seed: u64) -> Array {
    key(seed)
}

/// `jax.random.split(key, n)`: `n` new keys as `u32[n, 2]`.
pub fn split(key: &Array, n: usize) -> Result<Array> {
    split_shape(key, &[n])
}

/// `jax.random.split(key, shape)`: keys of `shape` as `u32[*shape, 2]`.
/// Key `i` (row-major) is threefry of the counter `i` under `key`.
pub fn split_shape(key: &Array, shape: &[usize]) -> Result<Array> {
    let (k0, k1) = key_halves(key, "split")?;
    let (hi, lo) = iota_2x32(shape)?;
    let (b0, b1) = threefry2x32(&k0, &k1, &hi, &lo)?;
    let nd = shape.len();
    let b0 = lax::expand_dims(&b0, &[nd])?;
    let b1 = lax::expand_dims(&b1, &[nd])?;
    lax::concatenate(&[b0, b1], nd)
}

/// `jax.random.split(key)` unpacked: the two new keys.
pub fn split2(key: &Array) -> Result<(Array, Array)> {
    let keys = split(key, 2)?;
    Ok((key_at(&keys, &[0])?, key_at(&keys, &[1])?))
}

/// The key at `index` of a key array `u32[*shape, 2]` (from
/// [`split_shape`]).
pub fn key_at(keys: &Array, index: &[usize]) -> Result<Array> {
    let shape = keys.try_shape()?;
    let bad = || {
        Error::InvalidArgument(format!(
            "key_at: index {index:?} does not pick one key of {}",
            fmt_aval(keys.aval())
        ))
    };
    if keys.dtype() != DType::U32
        || shape.len() != index.len() + 1
        || shape.last() != Some(&2)
        || index.iter().zip(&shape).any(|(&i, &n)| i >= n)
    {
        return Err(bad());
    }
    let start: Vec<usize> = index.iter().copied().chain([0]).collect();
    let limit: Vec<usize> = index.iter().map(|&i| i + 1).chain([2]).collect();
    lax::reshape(&lax::slice(keys, &start, &limit, None)?, &[2])
}

/// `jax.random.fold_in(key, data)`: a new key mixing the 32-bit `data`
/// into `key` (threefry of the counter pair `(0, data)`).
pub fn fold_in(key: &Array, data: u32) -> Result<Array> {
    fold_in_array(key, &Array::scalar(data))
}

/// [`fold_in`] with the data as an integer scalar array (may be a tracer);
/// it is converted to `u32` first, wrapping as JAX does.
pub fn fold_in_array(key: &Array, data: &Array) -> Result<Array> {
    if !data.dtype().is_int() || data.ndim() != 0 {
        return Err(Error::InvalidArgument(format!(
            "fold_in needs an integer scalar, got {}",
            fmt_aval(data.aval())
        )));
    }
    let (k0, k1) = key_halves(key, "fold_in")?;
    let d = lax::convert_element_type(data, DType::U32, false)?;
    let (b0, b1) = threefry2x32(&k0, &k1, &Array::scalar(0u32), &d)?;
    let b0 = lax::reshape(&b0, &[1])?;
    let b1 = lax::reshape(&b1, &[1])?;
    lax::concatenate(&[b0, b1], 0)
}

/// `jax.random.bits(key, shape)`: uniform `u32` bits.
pub fn bits(key: &Array, shape: &[usize]) -> Result<Array> {
    random_bits(key, 32, shape)
}

/// `jax.random.bits(key, shape, dtype)` for an unsigned `dtype`.
pub fn bits_of(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    if !dtype.is_unsigned_int() {
        return Err(Error::InvalidArgument(format!(
            "bits: dtype must be unsigned, got {}",
            dtype.short_name()
        )));
    }
    random_bits(key, dtype.bits(), shape)
}
