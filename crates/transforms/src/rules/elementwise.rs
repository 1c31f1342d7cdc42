//! Rules of the elementwise family (arithmetic, comparisons, casts,
//! `select_n`, `clamp`): jvp, transpose and batching, side by side.
//!
//! Invariants: the jvp rules read like the math (`d sin x = cos x · ẋ`);
//! only `neg`, `copy`, `add`/`sub`/`add_any`, `mul` and `div` (by a known
//! divisor), casts, `reduce_precision` and `select_n` (in its cases) are
//! linear; batching keeps the batch dim in place when every operand
//! agrees and otherwise moves it to the front.

use super::broadcast_np;
use super::{
    bilinear, ct, front1, jvp_unsupported, like_result, linear_in, logical_shape, no_tangent,
    not_linear, only, sum_tangents, tmul, BatchOuts, Cts, JvpOuts,
};
use crate::batch::to_front;
use crate::transpose::LinArg;
use crate::util::{has_tangent, scalar_like, unbroadcast_to, zeros_like};
use jaxon_ir::primitive::{
    BinaryOp, ConvertElementTypeParams, Elementwise, IntegerPowParams, UnaryOp,
};
use jaxon_ir::Primitive;
use jaxon_trace::error::Result;
use jaxon_trace::{bind1, lax, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(
    e: &Elementwise,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    match e {
        Elementwise::Unary(op) => unary(*op, p, &x[0], t[0].as_ref()),
        Elementwise::Binary(op) => binary(*op, p, x, t),
        Elementwise::IntegerPow(IntegerPowParams { y }) => {
            let out = lax::integer_pow(&x[0], *y)?;
            let d = match *y {
                0 => None,
                1 => t[0].clone(),
                n => {
                    let dx = lax::mul(
                        &scalar_like(&x[0], n as f64)?,
                        &lax::integer_pow(&x[0], n - 1)?,
                    )?;
                    tmul(t[0].as_ref(), &dx)?
                }
            };
            Ok((vec![out], vec![d]))
        }
        Elementwise::ConvertElementType(ConvertElementTypeParams { new_dtype, .. }) => {
            let linear = has_tangent(x[0].dtype()) && has_tangent(*new_dtype);
            linear_in(p, x, t, &[linear])
        }
        Elementwise::ReducePrecision(_) => linear_in(p, x, t, &[true]),
        Elementwise::Round(_) | Elementwise::BitcastConvertType(_) => no_tangent(p, x),
        Elementwise::SelectN => {
            let mut lin = vec![false];
            lin.extend(std::iter::repeat_n(true, x.len() - 1));
            linear_in(p, x, t, &lin)
        }
        Elementwise::Clamp => clamp_jvp(p, x, t),
        Elementwise::RegularizedIncompleteBeta => super::special::betainc_jvp(p, x, t),
        Elementwise::Complex => linear_in(p, x, t, &[true, true]),
        Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_) => linear_in(p, x, t, &[true]),
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    e: &Elementwise,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match e {
        Elementwise::Unary(op) => match op {
            UnaryOp::Neg => Ok(only(args, 0, lax::neg(&ct(cts)?)?)),
            UnaryOp::Copy => Ok(only(args, 0, ct(cts)?)),
            UnaryOp::Sign
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::IsFinite
            | UnaryOp::Exp
            | UnaryOp::Exp2
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Expm1
            | UnaryOp::Tanh
            | UnaryOp::Logistic
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Cbrt
            | UnaryOp::Abs
            | UnaryOp::Not
            | UnaryOp::Erf
            | UnaryOp::Erfc
            | UnaryOp::ErfInv
            | UnaryOp::Square
            | UnaryOp::StopGradient
            | UnaryOp::Lgamma
            | UnaryOp::Digamma
            | UnaryOp::BesselI0e
            | UnaryOp::BesselI1e
            | UnaryOp::PopulationCount
            | UnaryOp::Clz => not_linear(p),
        },
        Elementwise::Binary(op) => binary_transpose(*op, p, args, cts),
        Elementwise::ConvertElementType(_) => {
            let t = args[0].ty();
            Ok(only(
                args,
                0,
                lax::convert_element_type(&ct(cts)?, t.dtype, t.weak_type)?,
            ))
        }
        Elementwise::ReducePrecision(_) => Ok(only(args, 0, bind1(p, &[ct(cts)?])?)),
        Elementwise::SelectN => {
            let c = ct(cts)?;
            let which = args[0].value(p.name())?;
            let z = jaxon_trace::numpy::zeros_like(&c)?;
            let n = args.len() - 1;
            let mut out = vec![None];
            for i in 0..n {
                if args[i + 1].is_linear() {
                    let mut cases = vec![z.clone(); n];
                    cases[i] = c.clone();
                    out.push(Some(lax::select_n(which, &cases)?));
                } else {
                    out.push(None);
                }
            }
            Ok(out)
        }
        Elementwise::IntegerPow(_)
        | Elementwise::Round(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta => not_linear(p),
        Elementwise::Complex => complex_transpose(args, cts),
        Elementwise::Real | Elementwise::Imag => {
            // JAX's rules: real^T c = complex(c, 0), imag^T c = complex(0, -c).
            let c = ct(cts)?;
            let zero = scalar_like(&c, 0.0)?;
            let z = if matches!(e, Elementwise::Real) {
                lax::complex(&c, &zero)?
            } else {
                lax::complex(&zero, &lax::neg(&c)?)?
            };
            Ok(only(args, 0, z))
        }
        Elementwise::Conj(_) => {
            // A complex input gets the conjugate, a real one the real part.
            let c = ct(cts)?;
            let z = if args[0].ty().dtype.is_complex() {
                lax::conj(&c)?
            } else {
                lax::real(&c)?
            };
            Ok(only(args, 0, z))
        }
    }
}

/// `complex(x, y)`: JAX's rule gives `x` the real part of the cotangent
/// and `y` minus its imaginary part.
fn complex_transpose(args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let c = ct(cts)?;
    let mut out = vec![None, None];
    if args[0].is_linear() {
        out[0] = Some(unbroadcast_to(&lax::real(&c)?, args[0].ty())?);
    }
    if args[1].is_linear() {
        out[1] = Some(unbroadcast_to(&lax::neg(&lax::imag(&c)?)?, args[1].ty())?);
    }
    Ok(out)
}

/// The batching rules of the family.
pub(crate) fn batch(
    e: &Elementwise,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match e {
        Elementwise::Unary(_)
        | Elementwise::IntegerPow(_)
        | Elementwise::Round(_)
        | Elementwise::ReducePrecision(_)
        | Elementwise::ConvertElementType(_)
        | Elementwise::Real
        | Elementwise::Imag
        | Elementwise::Conj(_) => {
            let out = bind1(p, &x[..1])?;
            Ok((vec![out], vec![d[0]]))
        }
        Elementwise::BitcastConvertType(_) => front1(p, x, d, n, p.clone()),
        Elementwise::Binary(_)
        | Elementwise::SelectN
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta
        | Elementwise::Complex => elementwise(e, p, x, d, n),
    }
}

// ---------------------------------------------------------------- jvp --

/// `clamp(lo, x, hi)`: the tangent flows from whichever operand the result
/// equals.
fn clamp_jvp(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let out = bind1(p, x)?;
    let (lo, v, hi) = (&x[0], &x[1], &x[2]);
    let pick = |ti: Option<&Array>, mask: Array| -> Result<Option<Array>> {
        let Some(ti) = ti else { return Ok(None) };
        let ti = like_result(ti, &out)?;
        Ok(Some(lax::select_n(&mask, &[zeros_like(&ti)?, ti])?))
    };
    let below = lax::lt(v, lo)?;
    let above = lax::gt(v, hi)?;
    let inside = lax::bitwise_and(&lax::not(&below)?, &lax::not(&above)?)?;
    let parts = [
        pick(t[0].as_ref(), below)?,
        pick(t[1].as_ref(), inside)?,
        pick(t[2].as_ref(), above)?,
    ];
    Ok((vec![out], vec![sum_tangents(parts.into_iter().flatten())?]))
}

fn unary(op: UnaryOp, p: &Primitive, x: &Array, t: Option<&Array>) -> Result<JvpOuts> {
    use UnaryOp as U;
    let y = bind1(p, std::slice::from_ref(x))?;
    let c = |v: f64| scalar_like(x, v);
    let d: Option<Array> = match op {
        U::Neg => t.map(lax::neg).transpose()?,
        U::Copy => t.cloned(),
        U::Sign
        | U::Floor
        | U::Ceil
        | U::IsFinite
        | U::Not
        | U::StopGradient
        | U::PopulationCount
        | U::Clz => None,
        U::Exp => tmul(t, &y)?,
        U::Exp2 => tmul(t, &lax::mul(&y, &c(std::f64::consts::LN_2)?)?)?,
        U::Log => t.map(|t| lax::div(t, x)).transpose()?,
        U::Log1p => t
            .map(|t| lax::div(t, &lax::add(x, &c(1.0)?)?))
            .transpose()?,
        U::Expm1 => tmul(t, &lax::add(&y, &c(1.0)?)?)?,
        U::Tanh => tmul(t, &lax::sub(&c(1.0)?, &lax::mul(&y, &y)?)?)?,
        U::Logistic => tmul(t, &lax::mul(&y, &lax::sub(&c(1.0)?, &y)?)?)?,
        U::Sin => tmul(t, &lax::cos(x)?)?,
        U::Cos => tmul(t, &lax::neg(&lax::sin(x)?)?)?,
        U::Tan => tmul(t, &lax::add(&c(1.0)?, &lax::mul(&y, &y)?)?)?,
        U::Asin => tmul(t, &lax::rsqrt(&lax::sub(&c(1.0)?, &lax::mul(x, x)?)?)?)?,
        U::Acos => tmul(
            t,
            &lax::neg(&lax::rsqrt(&lax::sub(&c(1.0)?, &lax::mul(x, x)?)?)?)?,
        )?,
        U::Atan => t
            .map(|t| lax::div(t, &lax::add(&c(1.0)?, &lax::mul(x, x)?)?))
            .transpose()?,
        U::Sinh => tmul(t, &lax::cosh(x)?)?,
        U::Cosh => tmul(t, &lax::sinh(x)?)?,
        U::Asinh => tmul(t, &lax::rsqrt(&lax::add(&lax::mul(x, x)?, &c(1.0)?)?)?)?,
        U::Acosh => tmul(
            t,
            &lax::rsqrt(&lax::mul(&lax::sub(x, &c(1.0)?)?, &lax::add(x, &c(1.0)?)?)?)?,
        )?,
        U::Atanh => t
            .map(|t| lax::div(t, &lax::sub(&c(1.0)?, &lax::mul(x, x)?)?))
            .transpose()?,
        U::Sqrt => t
            .map(|t| lax::div(t, &lax::mul(&c(2.0)?, &y)?))
            .transpose()?,
        U::Rsqrt => tmul(t, &lax::mul(&c(-0.5)?, &lax::div(&y, x)?)?)?,
        U::Cbrt => tmul(t, &lax::mul(&c(1.0 / 3.0)?, &lax::integer_pow(&y, -2)?)?)?,
        U::Abs if x.dtype().is_complex() => match t {
            // JAX's rule: d|x| = re(ẋ · conj(x) / |x|), with |x| = 0 read as 1.
            Some(t) => {
                let r = lax::convert_element_type(&y, x.dtype(), false)?;
                let r_zero = lax::eq(&r, &scalar_like(&r, 0.0)?)?;
                let ones = like_result(&scalar_like(&r, 1.0)?, &r)?;
                let safe = lax::select_n(&r_zero, &[r.clone(), ones])?;
                Some(lax::real(&lax::mul(t, &lax::div(&lax::conj(x)?, &safe)?)?)?)
            }
            None => None,
        },
        // JAX's rule: ẋ where x ≥ 0 (0 included), else −ẋ.
        U::Abs => match t {
            Some(t) => {
                let nonneg = lax::ge(x, &scalar_like(x, 0.0)?)?;
                Some(lax::select_n(&nonneg, &[lax::neg(t)?, t.clone()])?)
            }
            None => None,
        },
        U::Square => tmul(t, &lax::mul(&c(2.0)?, x)?)?,
        U::Erf => tmul(
            t,
            &lax::mul(
                &c(2.0 / std::f64::consts::PI.sqrt())?,
                &lax::exp(&lax::neg(&lax::mul(x, x)?)?)?,
            )?,
        )?,
        U::Erfc => tmul(
            t,
            &lax::mul(
                &c(-2.0 / std::f64::consts::PI.sqrt())?,
                &lax::exp(&lax::neg(&lax::mul(x, x)?)?)?,
            )?,
        )?,
        U::ErfInv => tmul(
            t,
            &lax::mul(
                &c(std::f64::consts::PI.sqrt() / 2.0)?,
                &lax::exp(&lax::mul(&y, &y)?)?,
            )?,
        )?,
        U::Lgamma | U::Digamma | U::BesselI0e | U::BesselI1e => {
            match super::special::unary_factor(op, x, &y)? {
                Some(f) => tmul(t, &f)?,
                None => return jvp_unsupported(p),
            }
        }
    };
    Ok((vec![y], vec![d]))
}

fn binary(op: BinaryOp, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    use BinaryOp as B;
    let (a, b) = (&x[0], &x[1]);
    match op {
        B::Igamma | B::Igammac | B::IgammaGradA | B::RandomGammaGrad | B::Polygamma | B::Zeta => {
            match super::special::binary_jvp(op, p, x, t)? {
                Some(out) => Ok(out),
                None => jvp_unsupported(p),
            }
        }
        B::Add | B::Sub | B::AddAny => linear_in(p, x, t, &[true, true]),
        B::Mul => bilinear(p, x, t),
        B::And
        | B::Or
        | B::Xor
        | B::ShiftLeft
        | B::ShiftRightArithmetic
        | B::ShiftRightLogical
        | B::Eq
        | B::Ne
        | B::Lt
        | B::Le
        | B::Gt
        | B::Ge
        | B::LtTo
        | B::LeTo
        | B::Nextafter => no_tangent(p, x),
        B::Div | B::Max | B::Min | B::Pow | B::Atan2 | B::Rem => {
            let y = bind1(p, x)?;
            let bt = |i: usize| -> Result<Option<Array>> {
                t[i].as_ref().map(|ti| like_result(ti, &y)).transpose()
            };
            let (ta, tb) = (bt(0)?, bt(1)?);
            let c = |v: f64| scalar_like(&y, v);
            // Operands at the result's shape, so the formulas need no
            // broadcasting rules of their own.
            let (a, b) = (&like_result(a, &y)?, &like_result(b, &y)?);
            let parts: Vec<Option<Array>> = match op {
                B::Div => vec![
                    ta.map(|ta| lax::div(&ta, b)).transpose()?,
                    tb.map(|tb| lax::neg(&lax::div(&lax::mul(&tb, &y)?, b)?))
                        .transpose()?,
                ],
                B::Max | B::Min => {
                    // Ties split the derivative evenly, as JAX's does.
                    let pick_a = if op == B::Max {
                        lax::gt(a, b)?
                    } else {
                        lax::lt(a, b)?
                    };
                    let tie = lax::eq(a, b)?;
                    let fa = lax::add(
                        &lax::convert_element_type(&pick_a, y.dtype(), false)?,
                        &lax::mul(
                            &c(0.5)?,
                            &lax::convert_element_type(&tie, y.dtype(), false)?,
                        )?,
                    )?;
                    let fb = lax::sub(&c(1.0)?, &fa)?;
                    vec![tmul(ta.as_ref(), &fa)?, tmul(tb.as_ref(), &fb)?]
                }
                B::Pow => {
                    // d(a^b) = b a^(b-1) da + log(a) a^b db, with 0·log 0 = 0.
                    // An integer exponent (pow(f32, i32)) has no tangent;
                    // its value enters the derivative as a float.
                    let bf = lax::convert_element_type(b, y.dtype(), false)?;
                    let da = lax::mul(&bf, &lax::pow(a, &lax::sub(&bf, &c(1.0)?)?)?)?;
                    let zero = c(0.0)?;
                    let a_zero = lax::eq(a, &zero)?;
                    let ones = like_result(&c(1.0)?, &y)?;
                    let safe_log = lax::log(&lax::select_n(&a_zero, &[a.clone(), ones])?)?;
                    let db = lax::mul(&safe_log, &y)?;
                    vec![tmul(ta.as_ref(), &da)?, tmul(tb.as_ref(), &db)?]
                }
                B::Atan2 => {
                    // atan2(a, b): (b da - a db) / (a² + b²).
                    let den = lax::add(&lax::mul(a, a)?, &lax::mul(b, b)?)?;
                    vec![
                        tmul(ta.as_ref(), &lax::div(b, &den)?)?,
                        tmul(tb.as_ref(), &lax::neg(&lax::div(a, &den)?)?)?,
                    ]
                }
                B::Rem => {
                    // rem(a, b) = a - b·trunc(a/b).
                    let q = lax::div(a, b)?;
                    let trunc = lax::mul(&lax::sign(&q)?, &lax::floor(&lax::abs(&q)?)?)?;
                    vec![ta, tmul(tb.as_ref(), &lax::neg(&trunc)?)?]
                }
                B::Add
                | B::Sub
                | B::AddAny
                | B::Mul
                | B::And
                | B::Or
                | B::Xor
                | B::ShiftLeft
                | B::ShiftRightArithmetic
                | B::ShiftRightLogical
                | B::Eq
                | B::Ne
                | B::Lt
                | B::Le
                | B::Gt
                | B::Ge
                | B::LtTo
                | B::LeTo
                | B::Nextafter
                | B::Igamma
                | B::Igammac
                | B::IgammaGradA
                | B::RandomGammaGrad
                | B::Polygamma
                | B::Zeta => return jvp_unsupported(p),
            };
            Ok((vec![y], vec![sum_tangents(parts.into_iter().flatten())?]))
        }
    }
}

// ---------------------------------------------------------- transpose --

fn binary_transpose(
    op: BinaryOp,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let name = p.name();
    let lin = |i: usize| args[i].is_linear();
    match op {
        BinaryOp::Add | BinaryOp::AddAny | BinaryOp::Sub => {
            let c = ct(cts)?;
            let mut out = vec![None, None];
            if lin(0) {
                out[0] = Some(unbroadcast_to(&c, args[0].ty())?);
            }
            if lin(1) {
                let c1 = unbroadcast_to(&c, args[1].ty())?;
                out[1] = Some(if op == BinaryOp::Sub {
                    lax::neg(&c1)?
                } else {
                    c1
                });
            }
            Ok(out)
        }
        BinaryOp::Mul => {
            let c = ct(cts)?;
            match (lin(0), lin(1)) {
                (true, false) => Ok(only(
                    args,
                    0,
                    unbroadcast_to(&lax::mul(&c, args[1].value(name)?)?, args[0].ty())?,
                )),
                (false, true) => Ok(only(
                    args,
                    1,
                    unbroadcast_to(&lax::mul(args[0].value(name)?, &c)?, args[1].ty())?,
                )),
                _ => not_linear(p),
            }
        }
        BinaryOp::Div if lin(0) && !lin(1) => Ok(only(
            args,
            0,
            unbroadcast_to(&lax::div(&ct(cts)?, args[1].value(name)?)?, args[0].ty())?,
        )),
        // Division is linear only in its numerator (guarded above);
        // the rest are not linear in any operand.
        BinaryOp::Div
        | BinaryOp::Rem
        | BinaryOp::Pow
        | BinaryOp::Max
        | BinaryOp::Min
        | BinaryOp::Atan2
        | BinaryOp::Nextafter
        | BinaryOp::And
        | BinaryOp::Or
        | BinaryOp::Xor
        | BinaryOp::ShiftLeft
        | BinaryOp::ShiftRightArithmetic
        | BinaryOp::ShiftRightLogical
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::LtTo
        | BinaryOp::LeTo
        | BinaryOp::Igamma
        | BinaryOp::Igammac
        | BinaryOp::IgammaGradA
        | BinaryOp::RandomGammaGrad
        | BinaryOp::Polygamma
        | BinaryOp::Zeta => not_linear(p),
    }
}

// -------------------------------------------------------------- batch --

/// n-ary elementwise ops: operands are rank 0 or share a rank (dims equal
/// or 1). When every batched operand has its batch dim at one position
/// and the others are scalars, nothing moves;
/// otherwise batched operands move to the front, unbatched scalars stay
/// scalars, and the rest get a leading batch dim as JAX does: size 1 for
/// the binary ops (they broadcast size-1 dims), full for `select_n` and
/// `clamp` (they do not).
fn elementwise(
    e: &Elementwise,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    // Ranks only, so the fast path also serves dynamic shapes.
    let ranks: Vec<usize> = x
        .iter()
        .zip(d)
        .map(|(a, b)| a.ndim() - usize::from(b.is_some()))
        .collect();
    let rank = ranks.iter().copied().max().unwrap_or(0);
    let first = d.iter().flatten().next().copied();
    // Which operands may stay rank 0 next to arrays: any operand of a
    // binary op, `select_n`'s predicate, `clamp`'s bounds. The cases of
    // `select_n` and `clamp`'s operand must have the result's shape.
    let may_be_scalar = |i: usize| {
        !(matches!(e, Elementwise::SelectN) && i != 0 || matches!(e, Elementwise::Clamp) && i == 1)
    };
    if d.iter().zip(&ranks).enumerate().all(|(i, (b, r))| match b {
        Some(_) => *b == first && *r == rank,
        None => *r == 0 && may_be_scalar(i),
    }) {
        let out = jaxon_trace::bind1(p, x)?;
        return Ok((vec![out], vec![first]));
    }
    if x.iter().any(jaxon_trace::dynshape::is_dynamic) {
        return elementwise_dynamic(p, x, d, n, rank, &may_be_scalar);
    }
    let shapes = x
        .iter()
        .zip(d)
        .map(|(a, b)| logical_shape(a, *b))
        .collect::<Result<Vec<_>>>()?;
    let size_one = matches!(e, Elementwise::Binary(_));
    let mut out_shape = vec![1; rank];
    for s in shapes.iter().filter(|s| s.len() == rank) {
        for (o, v) in out_shape.iter_mut().zip(s) {
            *o = (*o).max(*v);
        }
    }
    let args = x
        .iter()
        .zip(d)
        .zip(&shapes)
        .enumerate()
        .map(|(i, ((a, b), s))| match b {
            None if s.is_empty() && may_be_scalar(i) => Ok(a.clone()),
            Some(_) if s.len() == rank => to_front(a, *b, n),
            Some(_) => {
                // A batched scalar among arrays.
                let mut shape = vec![n];
                shape.extend(out_shape.iter().map(|&m| if size_one { 1 } else { m }));
                lax::broadcast_in_dim(a, &shape, &[0])
            }
            None if s.is_empty() => {
                // An unbatched scalar case: every member sees it everywhere.
                let mut shape = vec![n];
                shape.extend_from_slice(&out_shape);
                broadcast_np(a, &shape, &[])
            }
            None => {
                let lead = if size_one { 1 } else { n };
                let mut shape = vec![lead];
                shape.extend_from_slice(s);
                broadcast_np(a, &shape, &(1..shape.len()).collect::<Vec<_>>())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let out = jaxon_trace::bind1(p, &args)?;
    Ok((vec![out], vec![Some(0)]))
}

/// [`elementwise`] when some sizes are traced: every operand except the
/// scalars that may stay scalars is broadcast to the full batched sizes
/// (a static 1 broadcasts; dynamic sizes are never size 1).
fn elementwise_dynamic(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    rank: usize,
    may_be_scalar: &dyn Fn(usize) -> bool,
) -> Result<BatchOuts> {
    use jaxon_trace::dynshape::{self as dyn_, Size};
    let logical = x
        .iter()
        .zip(d)
        .map(|(a, b)| {
            let mut s = dyn_::sizes(a)?;
            if let Some(b) = b {
                s.remove(*b);
            }
            Ok(s)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut full = vec![Size::Const(n)];
    full.extend(std::iter::repeat_n(Size::Const(1), rank));
    for s in logical.iter().filter(|s| s.len() == rank) {
        for (o, v) in full[1..].iter_mut().zip(s) {
            if matches!(o, Size::Const(1)) {
                *o = v.clone();
            }
        }
    }
    let args = x
        .iter()
        .zip(d)
        .zip(&logical)
        .enumerate()
        .map(|(i, ((a, b), s))| {
            if b.is_none() && s.is_empty() && may_be_scalar(i) {
                return Ok(a.clone());
            }
            // The operand's axes and where they go in the full sizes.
            let (a, mut dims) = match b {
                Some(_) => (to_front(a, *b, n)?, vec![0]),
                None => (a.clone(), Vec::new()),
            };
            if s.len() == rank {
                dims.extend(1..=rank);
            }
            let sizes = dyn_::sizes(&a)?;
            let squeeze: Vec<usize> = (0..sizes.len())
                .filter(|&k| !sizes[k].same(&full[dims[k]]))
                .collect();
            let a = if squeeze.is_empty() {
                a
            } else {
                lax::squeeze(&a, &squeeze)?
            };
            let dims: Vec<usize> = (0..dims.len())
                .filter(|k| !squeeze.contains(k))
                .map(|k| dims[k])
                .collect();
            dyn_::broadcast_in_dim(&a, &full, &dims)
        })
        .collect::<Result<Vec<_>>>()?;
    let out = jaxon_trace::bind1(p, &args)?;
    Ok((vec![out], vec![Some(0)]))
}
