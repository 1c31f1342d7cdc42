//! Integer-valued samplers: `poisson` (Knuth's multiplication method below
//! rate 10, Hörmann's transformed rejection above), `geometric`,
//! `rademacher` and `choice`, each the op sequence of JAX 0.10.2's function
//! so the draws agree exactly.

use super::permutation::{permutation_along, Permutable};
use super::support::{check_int, check_real, fconst, inexact, resolve_shape};
use super::threefry::key_halves;
use crate::array::Array;
use crate::control::while_loop;
use crate::error::{ok_or_raise, Error, Result};
use crate::numpy::{self as jnp, broadcast_to};
use crate::{lax, random};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// An integer scalar of `dtype` (which must be an integer dtype).
fn iconst(dtype: DType, v: i32) -> Result<Array> {
    lax::convert_element_type(&Array::scalar(v), dtype, false)
}

/// `select(pred, on_true, on_false)`.
fn select(pred: &Array, on_true: &Array, on_false: &Array) -> Result<Array> {
    lax::select_n(pred, &[on_false.clone(), on_true.clone()])
}

/// A loop carry of four arrays.
type Carry = (Array, Array, Array, Array);

/// Whether any element of a boolean array is true (a scalar).
fn any(x: &Array) -> Result<Array> {
    let axes: Vec<usize> = (0..x.ndim()).collect();
    lax::reduce(ReduceOp::Or, x, &axes)
}

/// The loop counter's bound, JAX's `iinfo(dtype).max` for 32-bit results.
const MAX_ITERS: i32 = i32::MAX;

/// Knuth's method: count uniforms (one fresh key per round, `f32`) until
/// their product falls below `exp(-lam)`; every element runs the same
/// rounds, counting only while its product is still above.
fn poisson_knuth(key: &Array, lam: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    let neg_lam = lax::neg(lam)?;
    let init = (
        Array::scalar(0i32),
        jnp::zeros(shape, dtype)?,
        key.clone(),
        jnp::zeros(shape, DType::F32)?,
    );
    let cond_step = |(i, _k, _rng, log_prod): Carry| -> Result<Array> {
        let live = any(&lax::gt(&log_prod, &neg_lam)?)?;
        lax::bitwise_and(&live, &lax::lt(&i, &Array::scalar(MAX_ITERS))?)
    };
    let cond = |c: Carry| ok_or_raise(cond_step(c));
    let body_step = |(i, k, rng, log_prod): Carry| -> Result<Carry> {
        let (rng, sub) = random::split2(&rng)?;
        let live = lax::gt(&log_prod, &neg_lam)?;
        let k = select(&live, &lax::add(&k, &iconst(dtype, 1)?)?, &k)?;
        let u = random::uniform(
            &sub,
            shape,
            DType::F32,
            &Array::weak(0.0),
            &Array::weak(1.0),
        )?;
        let i = lax::add(&i, &Array::scalar(1i32))?;
        Ok((i, k, rng, lax::add(&log_prod, &lax::log(&u)?)?))
    };
    let body = |c: Carry| ok_or_raise(body_step(c));
    let (_, k, _, _) = while_loop(cond, body, init)?;
    lax::sub(&k, &iconst(dtype, 1)?)
}

/// Hörmann's transformed rejection (PTRS) for rates of 10 and more: every
/// round draws a pair of uniforms per element from a three-way split and
/// keeps the last accepted candidate, until all elements have accepted one.
fn poisson_rejection(key: &Array, lam: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    let c = |x: f64| fconst(DType::F32, x);
    let log_lam = lax::log(lam)?;
    let b = lax::add(&c(0.931), &lax::mul(&c(2.53), &lax::sqrt(lam)?)?)?;
    let a = lax::add(&c(-0.059), &lax::mul(&c(0.02483), &b)?)?;
    let inv_alpha = lax::add(&c(1.1239), &lax::div(&c(1.1328), &lax::sub(&b, &c(3.4))?)?)?;
    let v_r = lax::sub(&c(0.9277), &lax::div(&c(3.6224), &lax::sub(&b, &c(2.0))?)?)?;
    let init = (
        Array::scalar(0i32),
        broadcast_to(&c(-1.0), shape)?,
        broadcast_to(&Array::scalar(false), shape)?,
        key.clone(),
    );
    let cond_step = |(i, _k, accepted, _key): Carry| -> Result<Array> {
        let live = any(&lax::not(&accepted)?)?;
        lax::bitwise_and(&live, &lax::lt(&i, &Array::scalar(MAX_ITERS))?)
    };
    let cond = |c: Carry| ok_or_raise(cond_step(c));
    let body_step = |(i, k_out, accepted, key): Carry| -> Result<Carry> {
        let keys = random::split(&key, 3)?;
        let key = random::key_at(&keys, &[0])?;
        let (zero, one) = (Array::weak(0.0), Array::weak(1.0));
        let u = random::uniform(
            &random::key_at(&keys, &[1])?,
            shape,
            DType::F32,
            &zero,
            &one,
        )?;
        let v = random::uniform(
            &random::key_at(&keys, &[2])?,
            shape,
            DType::F32,
            &zero,
            &one,
        )?;
        let u = lax::sub(&u, &c(0.5))?;
        let us = lax::sub(&c(0.5), &lax::abs(&u)?)?;
        let k = lax::div(&lax::mul(&c(2.0), &a)?, &us)?;
        let k = lax::mul(&lax::add(&k, &b)?, &u)?;
        let k = lax::floor(&lax::add(&lax::add(&k, lam)?, &c(0.43))?)?;
        let denom = lax::add(&lax::div(&a, &lax::mul(&us, &us)?)?, &b)?;
        let s = lax::log(&lax::div(&lax::mul(&v, &inv_alpha)?, &denom)?)?;
        let t = lax::add(&lax::neg(lam)?, &lax::mul(&k, &log_lam)?)?;
        let t = lax::sub(&t, &lax::lgamma(&lax::add(&k, &c(1.0))?)?)?;
        let accept1 = lax::bitwise_and(&lax::ge(&us, &c(0.07))?, &lax::le(&v, &v_r)?)?;
        let small = lax::bitwise_and(&lax::lt(&us, &c(0.013))?, &lax::gt(&v, &us)?)?;
        let reject = lax::bitwise_or(&lax::lt(&k, &c(0.0))?, &small)?;
        let accept2 = lax::le(&s, &t)?;
        let accept = lax::bitwise_or(&accept1, &lax::bitwise_and(&lax::not(&reject)?, &accept2)?)?;
        let k_out = select(&accept, &k, &k_out)?;
        let accepted = lax::bitwise_or(&accepted, &accept)?;
        Ok((lax::add(&i, &Array::scalar(1i32))?, k_out, accepted, key))
    };
    let body = |c: Carry| ok_or_raise(body_step(c));
    let (_, k, _, _) = while_loop(cond, body, init)?;
    lax::convert_element_type(&k, dtype, false)
}

/// `jax.random.poisson(key, lam, shape, dtype)`: Poisson samples of rate
/// `lam` (converted to `f32`, broadcast to `shape`, default its shape) of
/// integer `dtype`. Rates below 10 (or NaN) use Knuth's method, the others
/// transformed rejection; rate 0 gives 0.
pub fn poisson(key: &Array, lam: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    check_int("poisson", dtype)?;
    check_real("poisson", "lam", lam)?;
    key_halves(key, "poisson")?;
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => lam.try_shape()?,
    };
    let lam = lax::convert_element_type(&broadcast_to(lam, &shape)?, DType::F32, false)?;
    let c = |x: f64| broadcast_to(&fconst(DType::F32, x), &shape);
    let use_knuth = lax::bitwise_or(&lax::ne(&lam, &lam)?, &lax::lt(&lam, &c(10.0)?)?)?;
    let lam_knuth = select(&use_knuth, &lam, &c(0.0)?)?;
    let lam_rejection = select(&use_knuth, &c(1e5)?, &lam)?;
    let result = select(
        &use_knuth,
        &poisson_knuth(key, &lam_knuth, &shape, dtype)?,
        &poisson_rejection(key, &lam_rejection, &shape, dtype)?,
    )?;
    let zero = broadcast_to(&iconst(dtype, 0)?, &shape)?;
    select(&lax::eq(&lam, &c(0.0)?)?, &zero, &result)
}

/// `jax.random.geometric(key, p, shape, dtype)`: the number of Bernoulli
/// trials with success probability `p` up to the first success (`>= 1`),
/// `floor(log(u) / log1p(-p)) + 1` for `u` uniform in `(0, 1]`, of integer
/// `dtype`; `shape` defaults to `p`'s shape.
pub fn geometric(key: &Array, p: &Array, shape: Option<&[usize]>, dtype: DType) -> Result<Array> {
    check_int("geometric", dtype)?;
    check_real("geometric", "p", p)?;
    let fdt = inexact(p.dtype());
    let p = lax::convert_element_type(p, fdt, false)?;
    let shape = resolve_shape("geometric", shape, &[&p])?;
    let u = random::uniform(key, &shape, fdt, &fconst(fdt, 0.0), &fconst(fdt, 1.0))?;
    let one = fconst(fdt, 1.0);
    let u = select(
        &lax::eq(&u, &fconst(fdt, 0.0))?,
        &broadcast_to(&one, &shape)?,
        &u,
    )?;
    let log_u = lax::log(&u)?;
    let log_q = broadcast_to(&lax::log1p(&lax::neg(&p)?)?, &shape)?;
    let g = lax::add(&lax::floor(&lax::div(&log_u, &log_q)?)?, &one)?;
    lax::convert_element_type(&g, dtype, false)
}

/// `jax.random.rademacher(key, shape, dtype)`: `-1` or `1` with equal
/// probability (`2 * bernoulli(0.5) - 1`), of any numeric `dtype`.
///
/// JAX's `p = 0.5` is a Python float, so its uniform draw is `f32` in the
/// default 32-bit mode and `f64` under `jax_enable_x64`; a 64-bit `dtype`
/// (which exists only in x64 mode) draws as x64 mode does, any other as
/// 32-bit mode does.
pub fn rademacher(key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
    if !(dtype.is_int() || dtype.is_float()) {
        return Err(Error::InvalidArgument(format!(
            "rademacher: dtype must be an integer or float dtype, got {}",
            dtype.short_name()
        )));
    }
    let half = if dtype.bits() == 64 {
        Array::scalar(0.5f64)
    } else {
        Array::scalar(0.5f32)
    };
    let b = random::bernoulli(key, &half, Some(shape))?;
    let b = lax::convert_element_type(&b, dtype, false)?;
    let two = lax::convert_element_type(&Array::scalar(2i32), dtype, false)?;
    let one = lax::convert_element_type(&Array::scalar(1i32), dtype, false)?;
    lax::sub(&lax::mul(&two, &b)?, &one)
}

/// `jax.random.choice(key, a, shape, replace, p, axis)`: `shape` draws
/// from `a` (a length `n`, meaning `arange(n)`, or an array whose slices
/// along `axis` are drawn), with or without replacement, uniformly or
/// with probabilities `p` (1-D, one per slice). The result's shape is
/// `a`'s with `axis` replaced by `shape`. Without `p`: `randint` indices
/// (with replacement) or the head of a `permutation` (without); with `p`:
/// inverse-CDF search of `cumsum(p)` (with) or the Gumbel top-k trick
/// (without).
pub fn choice(
    key: &Array,
    a: impl Permutable,
    shape: &[usize],
    replace: bool,
    p: Option<&Array>,
    axis: isize,
) -> Result<Array> {
    key_halves(key, "choice")?;
    let arr = a.to_array()?;
    let ashape = arr.try_shape()?;
    let ax = jnp::normalize_axis(axis, ashape.len(), "choice")?;
    let n_inputs = ashape[ax];
    let n_draws: usize = shape.iter().product();
    if n_draws == 0 {
        return jnp::zeros(shape, arr.dtype());
    }
    if n_inputs == 0 {
        return Err(Error::InvalidArgument(
            "choice: a must be greater than 0 unless no samples are taken".into(),
        ));
    }
    if !replace && n_draws > n_inputs {
        return Err(Error::InvalidArgument(format!(
            "choice: cannot take a larger sample (size {n_draws}) than population \
             (size {n_inputs}) when replace=false"
        )));
    }
    let out_shape: Vec<usize> = ashape[..ax]
        .iter()
        .chain(shape)
        .chain(&ashape[ax + 1..])
        .copied()
        .collect();
    let axis = Some(ax as isize);
    let result = match p {
        None if replace => {
            let hi = i32::try_from(n_inputs).map_err(|_| {
                Error::InvalidArgument(format!("choice: population {n_inputs} too large"))
            })?;
            let ind = random::randint(
                key,
                shape,
                &Array::scalar(0i32),
                &Array::scalar(hi),
                DType::I32,
            )?;
            jnp::take(&arr, &ind, axis)?
        }
        None => {
            let perm = permutation_along(key, &arr, ax as isize, false)?;
            let mut limit = ashape.clone();
            limit[ax] = n_draws;
            lax::slice(&perm, &vec![0; ashape.len()], &limit, None)?
        }
        Some(p) => {
            check_real("choice", "p", p)?;
            let fdt = inexact(p.dtype());
            let p = lax::convert_element_type(p, fdt, false)?;
            if p.try_shape()? != [n_inputs] {
                return Err(Error::InvalidArgument(format!(
                    "choice: p must be None or a 1D vector with the same size as \
                     a.shape[axis] = {n_inputs}, got {}",
                    fmt_aval(p.aval())
                )));
            }
            let ind = if replace {
                let cum = jnp::cumsum(&p, None)?;
                let total =
                    lax::reshape(&lax::slice(&cum, &[n_inputs - 1], &[n_inputs], None)?, &[])?;
                let u = random::uniform(key, shape, fdt, &fconst(fdt, 0.0), &fconst(fdt, 1.0))?;
                let r = lax::mul(&total, &lax::sub(&fconst(fdt, 1.0), &u)?)?;
                jnp::searchsorted(&cum, &r, "left")?
            } else {
                let g = lax::add(&random::gumbel(key, &[n_inputs], fdt)?, &lax::log(&p)?)?;
                lax::top_k(&g, n_draws)?.1
            };
            let ind = lax::convert_element_type(&ind, DType::I32, false)?;
            jnp::take(&arr, &ind, axis)?
        }
    };
    lax::reshape(&result, &out_shape)
}
