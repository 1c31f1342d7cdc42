//! jvp rules of the special-function elementwise primitives (`lgamma`,
//! `digamma`, `bessel_i0e`/`bessel_i1e`, `igamma`/`igammac`, `polygamma`,
//! `zeta`, `regularized_incomplete_beta`) as JAX defines them; none is
//! linear, and they batch like the other elementwise ops
//! (`elementwise.rs`). `igamma_grad_a` and `random_gamma_grad` have no
//! derivative in JAX, nor do `polygamma` wrt its order, `zeta` wrt `x`,
//! and `regularized_incomplete_beta` wrt `a` and `b`.

use super::{like_result, sum_tangents, tmul, JvpOuts};
use crate::util::scalar_like;
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, Array};

fn no_derivative(p: &Primitive, wrt: &str) -> Error {
    Error::Unsupported(format!(
        "`{}` has no derivative with respect to {wrt} (as in JAX)",
        p.name()
    ))
}

/// The machine epsilon of a float dtype.
fn eps(dt: DType) -> f64 {
    match dt {
        DType::F64 => f64::EPSILON,
        DType::F16 => 0.000_976_562_5,
        DType::BF16 => 0.007_812_5,
        _ => f32::EPSILON as f64,
    }
}

/// The derivative factor `dy/dx` of a special unary op at `x` (`y` its
/// value), or `None` for the ops this file does not define.
pub(super) fn unary_factor(op: UnaryOp, x: &Array, y: &Array) -> Result<Option<Array>> {
    let c = |v: f64| scalar_like(x, v);
    Ok(Some(match op {
        UnaryOp::Lgamma => lax::digamma(x)?,
        UnaryOp::Digamma => lax::polygamma(&c(1.0)?, x)?,
        UnaryOp::BesselI0e => {
            // i0e' = i1e - sign(x) i0e
            lax::sub(&lax::bessel_i1e(x)?, &lax::mul(&lax::sign(x)?, y)?)?
        }
        UnaryOp::BesselI1e => {
            // i1e' = i0e - i1e (sign(x) + 1/x), 1/2 where |x| <= eps.
            let e = c(eps(x.dtype()))?;
            let not_tiny = lax::gt(&lax::abs(x)?, &e)?;
            let e_full = like_result(&e, x)?;
            let safe = lax::select_n(&not_tiny, &[e_full, x.clone()])?;
            let inner = lax::add(&lax::sign(&safe)?, &lax::integer_pow(&safe, -1)?)?;
            let d = lax::sub(&lax::bessel_i0e(&safe)?, &lax::mul(y, &inner)?)?;
            let half = like_result(&c(0.5)?, x)?;
            lax::select_n(&not_tiny, &[half, d])?
        }
        _ => return Ok(None),
    }))
}

/// The jvp of a special binary op (`None` for the ops this file does
/// not define).
pub(super) fn binary_jvp(
    op: BinaryOp,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<Option<JvpOuts>> {
    use BinaryOp as B;
    if !matches!(
        op,
        B::Igamma | B::Igammac | B::IgammaGradA | B::RandomGammaGrad | B::Polygamma | B::Zeta
    ) {
        return Ok(None);
    }
    let y = bind1(p, x)?;
    let bt = |i: usize| -> Result<Option<Array>> {
        t[i].as_ref().map(|ti| like_result(ti, &y)).transpose()
    };
    let (ta, tb) = (bt(0)?, bt(1)?);
    let (a, b) = (&like_result(&x[0], &y)?, &like_result(&x[1], &y)?);
    let c = |v: f64| scalar_like(&y, v);
    let parts: Vec<Option<Array>> = match op {
        B::Igamma | B::Igammac => {
            // d/dx P(a, x) = exp(-x + (a - 1) log x - lgamma a)
            let log_pdf = lax::sub(
                &lax::add(
                    &lax::neg(b)?,
                    &lax::mul(&lax::sub(a, &c(1.0)?)?, &lax::log(b)?)?,
                )?,
                &lax::lgamma(a)?,
            )?;
            let mut dx = lax::exp(&log_pdf)?;
            let mut da = if ta.is_some() {
                Some(lax::igamma_grad_a(a, b)?)
            } else {
                None
            };
            if op == B::Igammac {
                dx = lax::neg(&dx)?;
                da = da.map(|d| lax::neg(&d)).transpose()?;
            }
            vec![
                match (ta.as_ref(), da) {
                    (Some(ta), Some(da)) => Some(lax::mul(ta, &da)?),
                    _ => None,
                },
                tmul(tb.as_ref(), &dx)?,
            ]
        }
        B::Polygamma => {
            if ta.is_some() {
                return Err(no_derivative(p, "its order m"));
            }
            let next = lax::add(a, &c(1.0)?)?;
            vec![tmul(tb.as_ref(), &lax::polygamma(&next, b)?)?]
        }
        B::Zeta => {
            if ta.is_some() {
                return Err(no_derivative(p, "x"));
            }
            // d/dq zeta(x, q) = -x zeta(x + 1, q)
            let d = lax::mul(&lax::neg(a)?, &lax::zeta(&lax::add(a, &c(1.0)?)?, b)?)?;
            vec![tmul(tb.as_ref(), &d)?]
        }
        _ => {
            if ta.is_some() || tb.is_some() {
                return Err(no_derivative(p, "its operands"));
            }
            vec![]
        }
    };
    Ok(Some((
        vec![y],
        vec![sum_tangents(parts.into_iter().flatten())?],
    )))
}

/// The jvp of `regularized_incomplete_beta a b x`: only `x` has a
/// tangent, `x^(a-1) (1-x)^(b-1) / B(a, b)`.
pub(super) fn betainc_jvp(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let y = bind1(p, x)?;
    if t[0].is_some() || t[1].is_some() {
        return Err(no_derivative(p, "a and b"));
    }
    let Some(tx) = t[2].as_ref() else {
        return Ok((vec![y], vec![None]));
    };
    let a = like_result(&x[0], &y)?;
    let b = like_result(&x[1], &y)?;
    let v = like_result(&x[2], &y)?;
    let c = |v: f64| scalar_like(&y, v);
    let lbeta = lax::sub(
        &lax::add(&lax::lgamma(&a)?, &lax::lgamma(&b)?)?,
        &lax::lgamma(&lax::add(&a, &b)?)?,
    )?;
    let log_d = lax::sub(
        &lax::add(
            &lax::mul(&lax::sub(&b, &c(1.0)?)?, &lax::log1p(&lax::neg(&v)?)?)?,
            &lax::mul(&lax::sub(&a, &c(1.0)?)?, &lax::log(&v)?)?,
        )?,
        &lbeta,
    )?;
    let d = lax::mul(&like_result(tx, &y)?, &lax::exp(&log_d)?)?;
    Ok((vec![y], vec![Some(d)]))
}
