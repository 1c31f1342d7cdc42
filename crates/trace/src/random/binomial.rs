//! `binomial`: JAX 0.10.2's sampler (after TensorFlow's): inversion by
//! summing geometric waiting times when `n * min(p, 1 - p) <= 10`, else
//! Hörmann's BTRS transformed rejection with a Stirling-series tail.

use super::support::{check_float, check_real, fconst, inexact, resolve_shape};
use crate::array::Array;
use crate::control::while_loop;
use crate::error::{ok_or_raise, Result};
use crate::numpy::{self as jnp, broadcast_to};
use crate::{lax, random};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::DType;

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

/// `log(k!)`'s Stirling-series remainder: tabulated for `k <= 9`, else the
/// series at `k` clamped to `[0, 9]` (JAX clamps before both branches).
fn stirling_tail(k: &Array) -> Result<Array> {
    let dt = k.dtype();
    const TAIL: [f64; 10] = [
        0.0810614667953272,
        0.0413406959554092,
        0.0276779256849983,
        0.02079067210376509,
        0.0166446911898211,
        0.0138761288230707,
        0.0118967099458917,
        0.0104112652619720,
        0.00925546218271273,
        0.00833056343336287,
    ];
    let table = match dt {
        DType::F64 => Array::from_vec(TAIL.to_vec(), &[10]),
        _ => Array::from_vec(TAIL.iter().map(|&x| x as f32).collect(), &[10]),
    };
    let c = |x: f64| fconst(dt, x);
    let use_tail = lax::le(k, &c(9.0))?;
    let k = lax::clamp(&c(0.0), k, &c(9.0))?;
    let k1 = lax::add(&k, &c(1.0))?;
    let kp1sq = lax::mul(&k1, &k1)?;
    let inner = lax::sub(&c(1.0 / 360.0), &lax::div(&c(1.0 / 1260.0), &kp1sq)?)?;
    let approx = lax::div(&lax::sub(&c(1.0 / 12.0), &lax::div(&inner, &kp1sq)?)?, &k1)?;
    let idx = lax::convert_element_type(&lax::floor(&k)?, DType::I32, false)?;
    let tabulated = jnp::take(&table, &idx, Some(0))?;
    select(&use_tail, &tabulated, &approx)
}

/// Inversion: count geometric waiting times (one fresh key per round, the
/// split's first half) until their sum exceeds `count`.
fn inversion(key: &Array, count: &Array, prob: &Array, shape: &[usize]) -> Result<Array> {
    let dt = prob.dtype();
    let log_q = lax::log1p(&lax::neg(prob)?)?;
    let zeros = jnp::zeros(shape, dt)?;
    let init = (Array::scalar(0i32), zeros.clone(), zeros, key.clone());
    let cond_step = |(i, _n, sum, _k): Carry| -> Result<Array> {
        let live = any(&lax::le(&sum, count)?)?;
        lax::bitwise_and(&live, &lax::lt(&i, &Array::scalar(i32::MAX))?)
    };
    let cond = |c: Carry| ok_or_raise(cond_step(c));
    let body_step = |(i, num, sum, key): Carry| -> Result<Carry> {
        let (sub, key) = random::split2(&key)?;
        let live = lax::le(&sum, count)?;
        let num = select(&live, &lax::add(&num, &fconst(dt, 1.0))?, &num)?;
        let u = random::uniform(&sub, shape, dt, &fconst(dt, 0.0), &fconst(dt, 1.0))?;
        let geom = lax::ceil(&lax::div(&lax::log(&u)?, &log_q)?)?;
        let sum = lax::add(&sum, &geom)?;
        Ok((lax::add(&i, &Array::scalar(1i32))?, num, sum, key))
    };
    let body = |c: Carry| ok_or_raise(body_step(c));
    let (_, num, _, _) = while_loop(cond, body, init)?;
    lax::sub(&num, &fconst(dt, 1.0))
}

/// BTRS: transformed rejection with a pair of uniforms per round from a
/// three-way split, keeping the last accepted candidate.
fn btrs(key: &Array, count: &Array, prob: &Array, shape: &[usize]) -> Result<Array> {
    let dt = prob.dtype();
    let c = |x: f64| fconst(dt, x);
    let one_m_p = lax::sub(&c(1.0), prob)?;
    let stddev = lax::sqrt(&lax::mul(&lax::mul(count, prob)?, &one_m_p)?)?;
    let b = lax::add(&c(1.15), &lax::mul(&c(2.53), &stddev)?)?;
    let a = lax::add(&c(-0.0873), &lax::mul(&c(0.0248), &b)?)?;
    let a = lax::add(&a, &lax::mul(&c(0.01), prob)?)?;
    let cc = lax::add(&lax::mul(count, prob)?, &c(0.5))?;
    let v_r = lax::sub(&c(0.92), &lax::div(&c(4.2), &b)?)?;
    let r = lax::div(prob, &one_m_p)?;
    let alpha = lax::mul(&lax::add(&c(2.83), &lax::div(&c(5.1), &b)?)?, &stddev)?;
    let m = lax::floor(&lax::mul(&lax::add(count, &c(1.0))?, prob)?)?;
    // The candidate-independent part of the acceptance bound.
    let n_m1 = lax::add(&lax::sub(count, &m)?, &c(1.0))?;
    let t1 = lax::log(&lax::div(&lax::add(&m, &c(1.0))?, &lax::mul(&r, &n_m1)?)?)?;
    let t1 = lax::mul(&lax::add(&m, &c(0.5))?, &t1)?;
    let st_m = stirling_tail(&m)?;
    let st_nm = stirling_tail(&lax::sub(count, &m)?)?;
    let init = (
        Array::scalar(0i32),
        broadcast_to(&c(-1.0), shape)?,
        broadcast_to(&Array::scalar(false), shape)?,
        key.clone(),
    );
    let cond_step = |(i, _k, accepted, _key): Carry| -> Result<Array> {
        let live = any(&lax::not(&accepted)?)?;
        lax::bitwise_and(&live, &lax::lt(&i, &Array::scalar(i32::MAX))?)
    };
    let cond = |c: Carry| ok_or_raise(cond_step(c));
    let body_step = |(i, k_out, accepted, key): Carry| -> Result<Carry> {
        let keys = random::split(&key, 3)?;
        let key = random::key_at(&keys, &[0])?;
        let (lo, hi) = (c(0.0), c(1.0));
        let u = random::uniform(&random::key_at(&keys, &[1])?, shape, dt, &lo, &hi)?;
        let v = random::uniform(&random::key_at(&keys, &[2])?, shape, dt, &lo, &hi)?;
        let u = lax::sub(&u, &c(0.5))?;
        let us = lax::sub(&c(0.5), &lax::abs(&u)?)?;
        let accept1 = lax::bitwise_and(&lax::ge(&us, &c(0.07))?, &lax::le(&v, &v_r)?)?;
        let k = lax::div(&lax::mul(&c(2.0), &a)?, &us)?;
        let k = lax::add(&lax::mul(&lax::add(&k, &b)?, &u)?, &cc)?;
        let k = lax::floor(&k)?;
        let reject = lax::bitwise_or(&lax::lt(&k, &c(0.0))?, &lax::gt(&k, count)?)?;
        let denom = lax::add(&lax::div(&a, &lax::mul(&us, &us)?)?, &b)?;
        let v = lax::log(&lax::div(&lax::mul(&v, &alpha)?, &denom)?)?;
        let n_k1 = lax::add(&lax::sub(count, &k)?, &c(1.0))?;
        let t2 = lax::log(&lax::div(&n_m1, &n_k1)?)?;
        let t2 = lax::mul(&lax::add(count, &c(1.0))?, &t2)?;
        let k1 = lax::add(&k, &c(1.0))?;
        let t3 = lax::log(&lax::div(&lax::mul(&r, &n_k1)?, &k1)?)?;
        let t3 = lax::mul(&lax::add(&k, &c(0.5))?, &t3)?;
        let ub = lax::add(&lax::add(&t1, &t2)?, &t3)?;
        let ub = lax::add(&lax::add(&ub, &st_m)?, &st_nm)?;
        let ub = lax::sub(&ub, &stirling_tail(&k)?)?;
        let ub = lax::sub(&ub, &stirling_tail(&lax::sub(count, &k)?)?)?;
        let accept2 = lax::le(&v, &ub)?;
        let accept = lax::bitwise_or(&accept1, &lax::bitwise_and(&lax::not(&reject)?, &accept2)?)?;
        let k_out = select(&accept, &k, &k_out)?;
        let accepted = lax::bitwise_or(&accepted, &accept)?;
        Ok((lax::add(&i, &Array::scalar(1i32))?, k_out, accepted, key))
    };
    let body = |c: Carry| ok_or_raise(body_step(c));
    let (_, k, _, _) = while_loop(cond, body, init)?;
    Ok(k)
}

/// `jax.random.binomial(key, n, p, shape, dtype)`: the number of successes
/// in `n` trials of probability `p` (both broadcast to `shape`, default
/// their broadcast shape), as floats of `dtype`. Samples with `p > 1/2`
/// are drawn for `1 - p` and reflected; a NaN or negative `n`, or a NaN or
/// out-of-range `p`, gives NaN; an infinite `n` gives infinity.
pub fn binomial(
    key: &Array,
    n: &Array,
    p: &Array,
    shape: Option<&[usize]>,
    dtype: DType,
) -> Result<Array> {
    check_float("binomial", dtype)?;
    check_real("binomial", "n", n)?;
    check_real("binomial", "p", p)?;
    super::threefry::key_halves(key, "binomial")?;
    let shape = resolve_shape("binomial", shape, &[n, p])?;
    let pdt = inexact(p.dtype());
    let c = |x: f64| broadcast_to(&fconst(pdt, x), &shape);
    let prob = broadcast_to(&lax::convert_element_type(p, pdt, false)?, &shape)?;
    let count = broadcast_to(&lax::convert_element_type(n, pdt, false)?, &shape)?;
    let p_lt_half = lax::lt(&prob, &c(0.5)?)?;
    let q = select(&p_lt_half, &prob, &lax::sub(&c(1.0)?, &prob)?)?;
    let count_nan_or_neg = lax::bitwise_or(&lax::ne(&count, &count)?, &lax::lt(&count, &c(0.0)?)?)?;
    let count_inf = jnp::isinf(&count)?;
    let q_is_nan = lax::ne(&q, &q)?;
    let q_l_0 = lax::lt(&q, &c(0.0)?)?;
    let q = select(&lax::bitwise_or(&q_is_nan, &q_l_0)?, &c(0.01)?, &q)?;
    let small = lax::le(&lax::mul(&count, &q)?, &c(10.0)?)?;
    let use_inversion = lax::bitwise_or(&count_nan_or_neg, &small)?;
    let count = lax::floor(&count)?;
    let count_inv = select(&use_inversion, &count, &c(0.0)?)?;
    let count_btrs = select(&use_inversion, &c(1e4)?, &count)?;
    let q_btrs = select(&use_inversion, &c(0.5)?, &q)?;
    let inv = lax::convert_element_type(&inversion(key, &count_inv, &q, &shape)?, dtype, false)?;
    let rej = lax::convert_element_type(&btrs(key, &count_btrs, &q_btrs, &shape)?, dtype, false)?;
    let samples = select(&use_inversion, &inv, &rej)?;
    let full = |x: f64| broadcast_to(&fconst(dtype, x), &shape);
    let invalid = lax::bitwise_or(&lax::bitwise_or(&q_l_0, &q_is_nan)?, &count_nan_or_neg)?;
    let samples = select(&invalid, &full(f64::NAN)?, &samples)?;
    let inf = lax::bitwise_and(&count_inf, &lax::not(&invalid)?)?;
    let samples = select(&inf, &full(f64::INFINITY)?, &samples)?;
    let keep = lax::bitwise_or(&lax::bitwise_or(&p_lt_half, &count_nan_or_neg)?, &q_is_nan)?;
    let keep = lax::bitwise_or(&keep, &count_inf)?;
    let reflected = lax::sub(&lax::convert_element_type(&count, dtype, false)?, &samples)?;
    select(&keep, &samples, &reflected)
}
