//! The jvp rule of every primitive, in one exhaustive `match`. Each rule
//! reads like the math: given primals `x` and tangents `t` (`None` = zero),
//! it returns the primal outputs and their tangents.
//!
//! Invariant: rules only bind primitives (through `lax`), so they work on
//! any trace below, eager or staged.

use super::state::StateOp;
use crate::util::{broadcast_operand, has_tangent, scalar_like, zeros_like};
use jaxon_ir::primitive::{
    AddUpdateParams, Collective, CondParams, Control, ConvertElementTypeParams, CumulativeParams,
    Elementwise, GetParams, Indexing, IntegerPowParams, JitParams, Linalg, LoadParams, Pallas,
    ReduceParams, Reduction, ScatterParams, SortParams, State, StoreParams, Structural, SwapParams,
    TopKParams,
};
use jaxon_ir::primitive::{BinaryOp, CumulativeOp, ReduceOp, ScatterKind, UnaryOp};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, dynshape, lax, Array};

pub(super) type Outs = (Vec<Array>, Vec<Option<Array>>);

/// The jvp of `p` at primals `x` along tangents `t`.
pub(super) fn jvp_rule(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    use Primitive as P;
    match p {
        P::Elementwise(Elementwise::Unary(op)) => unary(*op, p, &x[0], t[0].as_ref()),
        P::Elementwise(Elementwise::Binary(op)) => binary(*op, p, x, t),
        P::Elementwise(Elementwise::IntegerPow(IntegerPowParams { y })) => {
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
        P::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
            new_dtype,
            ..
        })) => {
            let linear = has_tangent(x[0].dtype()) && has_tangent(*new_dtype);
            linear_in(p, x, t, &[linear])
        }
        P::Elementwise(Elementwise::ReducePrecision(_)) => linear_in(p, x, t, &[true]),
        P::Elementwise(Elementwise::Round(_))
        | P::Elementwise(Elementwise::BitcastConvertType(_))
        | P::Structural(Structural::Iota(_))
        | P::Reduction(Reduction::ArgReduce(_)) => no_tangent(p, x),
        P::Structural(Structural::Empty2(_))
        | P::Pallas(Pallas::ProgramId(_))
        | P::Pallas(Pallas::NumPrograms(_)) => no_tangent(p, x),
        P::Collective(Collective::AllReduce(_))
        | P::Collective(Collective::AllGather(_))
        | P::Collective(Collective::AxisIndex(_)) => super::collectives::jvp_collective(p, x, t),
        P::Elementwise(Elementwise::SelectN) => {
            let mut lin = vec![false];
            lin.extend(std::iter::repeat_n(true, x.len() - 1));
            linear_in(p, x, t, &lin)
        }
        P::Elementwise(Elementwise::Clamp) => {
            // clamp(lo, x, hi): the tangent flows from whichever operand
            // the result equals.
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
        P::Structural(Structural::BroadcastInDim(_)) | P::Structural(Structural::Reshape(_)) => {
            // Trailing operands are dynamic sizes.
            let mut lin = vec![true];
            lin.resize(x.len(), false);
            linear_in(p, x, t, &lin)
        }
        P::Structural(Structural::Transpose(_))
        | P::Structural(Structural::Squeeze(_))
        | P::Structural(Structural::Rev(_))
        | P::Indexing(Indexing::Slice(_))
        | P::Structural(Structural::Tile(_))
        | P::Structural(Structural::Split(_)) => linear_in(p, x, t, &[true]),
        P::Structural(Structural::Concatenate(_)) | P::Structural(Structural::Stack(_)) => {
            linear_in(p, x, t, &vec![true; x.len()])
        }
        P::Structural(Structural::Pad(_)) => linear_in(p, x, t, &[true, true]),
        P::Indexing(Indexing::DynamicSlice(_)) => {
            let mut lin = vec![true];
            lin.resize(x.len(), false);
            linear_in(p, x, t, &lin)
        }
        P::Indexing(Indexing::DynamicUpdateSlice) => {
            let mut lin = vec![true, true];
            lin.resize(x.len(), false);
            linear_in(p, x, t, &lin)
        }
        P::Indexing(Indexing::Gather(_)) => linear_in(p, x, t, &[true, false]),
        P::Indexing(Indexing::Scatter(ScatterParams { kind, .. })) => match kind {
            ScatterKind::Add | ScatterKind::Set => linear_in(p, x, t, &[true, false, true]),
            ScatterKind::Mul => super::scatter::mul(p, x, t),
            ScatterKind::Min | ScatterKind::Max => super::scatter::extremal(p, x, t),
        },
        P::Reduction(Reduction::Reduce(ReduceParams { op, axes })) => {
            reduce(*op, axes, p, &x[0], t[0].as_ref())
        }
        P::Reduction(Reduction::Cumulative(CumulativeParams { op, axis, reverse })) => match op {
            CumulativeOp::Cumsum => linear_in(p, x, t, &[true]),
            CumulativeOp::Cumprod
            | CumulativeOp::Cummax
            | CumulativeOp::Cummin
            | CumulativeOp::Cumlogsumexp => {
                cumulative(*op, *axis, *reverse, p, &x[0], t[0].as_ref())
            }
        },
        P::Linalg(Linalg::DotGeneral(_)) | P::Linalg(Linalg::ConvGeneralDilated(_)) => {
            bilinear(p, x, t)
        }
        P::Reduction(Reduction::Sort(SortParams {
            dimension,
            is_stable,
            num_keys,
        })) => sort(*dimension, *is_stable, *num_keys, x, t),
        P::Reduction(Reduction::TopK(TopKParams { axis, .. })) => {
            let outs = bind(p, x)?;
            let dt = t[0]
                .as_ref()
                .map(|t| take_along(t, &outs[1], *axis))
                .transpose()?;
            Ok((outs, vec![dt, None]))
        }
        P::Control(Control::Jit(JitParams { name, jaxpr })) => {
            super::control::jit(name, jaxpr, x, t)
        }
        P::Control(Control::CustomJvpCall(_)) => crate::custom::jvp_custom_jvp_call(p, x, t),
        P::Control(Control::CustomVjpCall(_)) => crate::custom::jvp_custom_vjp_call(p, x, t),
        P::Control(Control::Remat(_)) => crate::checkpoint::jvp_remat(p, x, t),
        P::Control(Control::Cond(CondParams { branches })) => super::control::cond(branches, x, t),
        P::Control(Control::While(_)) => super::control::while_loop(p, x, t),
        P::Control(Control::Scan(_)) => super::control::scan(p, x, t),
        P::Control(Control::ForLoop(_)) => super::for_loop::for_loop(p, x, t),
        P::State(State::Get(GetParams { indexers })) => {
            super::state::jvp_state(StateOp::Get, indexers, p, x, t)
        }
        P::State(State::Swap(SwapParams { indexers })) => {
            super::state::jvp_state(StateOp::Swap, indexers, p, x, t)
        }
        P::State(State::AddUpdate(AddUpdateParams { indexers })) => {
            super::state::jvp_state(StateOp::AddUpdate, indexers, p, x, t)
        }
        P::Pallas(Pallas::Load(LoadParams { has_other, .. })) => {
            super::pallas::load(p, *has_other, x, t)
        }
        P::Pallas(Pallas::Store(StoreParams { indexers, .. })) => {
            super::pallas::store(p, indexers, x, t)
        }
        P::Pallas(Pallas::PallasCall(_)) => super::pallas::pallas_call(p, x, t),
        P::Pallas(Pallas::AtomicRmw(_)) | P::Pallas(Pallas::AtomicCas(_)) => unsupported(p),
    }
}

fn unsupported(p: &Primitive) -> Result<Outs> {
    Err(Error::Unsupported(format!(
        "differentiation of `{}` is not implemented yet",
        p.name()
    )))
}

fn bind1(p: &Primitive, x: &[Array]) -> Result<Array> {
    jaxon_trace::bind1(p, x)
}

/// Primal outputs with zero tangents.
fn no_tangent(p: &Primitive, x: &[Array]) -> Result<Outs> {
    let outs = bind(p, x)?;
    let n = outs.len();
    Ok((outs, vec![None; n]))
}

/// Multiplies a tangent by a factor (`None` stays zero).
fn tmul(t: Option<&Array>, factor: &Array) -> Result<Option<Array>> {
    t.map(|t| lax::mul(t, factor)).transpose()
}

fn sum_tangents(ts: impl Iterator<Item = Array>) -> Result<Option<Array>> {
    let mut acc: Option<Array> = None;
    for t in ts {
        acc = Some(match acc {
            None => t,
            Some(a) => lax::add(&a, &t)?,
        });
    }
    Ok(acc)
}

/// `p` is linear in the operands marked `linear` (the others are fixed):
/// its tangent is `p` applied to the tangents, zeros instantiated.
fn linear_in(p: &Primitive, x: &[Array], t: &[Option<Array>], linear: &[bool]) -> Result<Outs> {
    let outs = bind(p, x)?;
    let any = x
        .iter()
        .zip(t)
        .zip(linear)
        .any(|((_, t), l)| *l && t.is_some());
    if !any {
        let n = outs.len();
        return Ok((outs, vec![None; n]));
    }
    let args = x
        .iter()
        .zip(t)
        .zip(linear)
        .map(|((xi, ti), l)| match (l, ti) {
            (true, Some(ti)) => Ok(ti.clone()),
            (true, None) => zeros_like(xi),
            (false, _) => Ok(xi.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    let touts = bind(p, &args)?;
    Ok((outs, touts.into_iter().map(Some).collect()))
}

/// `p` is linear in each operand separately: the tangent is the sum over
/// operands of `p` with that operand replaced by its tangent.
fn bilinear(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let out = bind1(p, x)?;
    let mut parts = Vec::new();
    for (i, ti) in t.iter().enumerate() {
        if let Some(ti) = ti {
            let mut args = x.to_vec();
            args[i] = ti.clone();
            parts.push(bind1(p, &args)?);
        }
    }
    Ok((vec![out], vec![sum_tangents(parts.into_iter())?]))
}

/// `v` (an operand or tangent of an elementwise op) at the shape of the
/// op's result `y`: the same shape, or a scalar broadcast (static or
/// dynamic shapes).
fn like_result(v: &Array, y: &Array) -> Result<Array> {
    if let Ok(shape) = y.try_shape() {
        return broadcast_operand(v, &shape);
    }
    let (vs, ys) = (dynshape::sizes(v)?, dynshape::sizes(y)?);
    if vs.len() == ys.len() {
        // Equal ranks of one elementwise op's operands are equal shapes.
        return Ok(v.clone());
    }
    dynshape::broadcast_in_dim(v, &ys, &[])
}

fn reduce(
    op: ReduceOp,
    axes: &[usize],
    p: &Primitive,
    x: &Array,
    t: Option<&Array>,
) -> Result<Outs> {
    match op {
        ReduceOp::Sum => linear_in(p, std::slice::from_ref(x), &[t.cloned()], &[true]),
        ReduceOp::Max | ReduceOp::Min => {
            // The tangent is the mean of the tangents at the extremal
            // locations (JAX's rule: ties share the derivative).
            let y = bind1(p, std::slice::from_ref(x))?;
            let Some(t) = t else {
                return Ok((vec![y], vec![None]));
            };
            // Sizes, not a static shape: the rule holds for dynamic shapes.
            let shape = dynshape::sizes(x)?;
            let keep: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
            let yb = dynshape::broadcast_in_dim(&y, &shape, &keep)?;
            let hit = lax::convert_element_type(&lax::eq(x, &yb)?, x.dtype(), false)?;
            let count = lax::reduce(ReduceOp::Sum, &hit, axes)?;
            let num = lax::reduce(ReduceOp::Sum, &lax::mul(t, &hit)?, axes)?;
            Ok((vec![y], vec![Some(lax::div(&num, &count)?)]))
        }
        ReduceOp::Prod => {
            // d prod = sum_i t_i * prod_{j != i} x_j, with the product of
            // the others from exclusive prefix and suffix products (exact
            // when some x_j are zero).
            let y = bind1(p, std::slice::from_ref(x))?;
            let Some(t) = t else {
                return Ok((vec![y], vec![None]));
            };
            let shape = x.try_shape()?;
            let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
            let perm: Vec<usize> = kept.iter().chain(axes).copied().collect();
            let n: usize = axes.iter().map(|&a| shape[a]).product();
            let mut flat: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
            flat.push(n);
            let last = flat.len() - 1;
            let xf = lax::reshape(&lax::transpose(x, &perm)?, &flat)?;
            let tf = lax::reshape(&lax::transpose(t, &perm)?, &flat)?;
            let one = scalar_like(x, 1.0)?;
            let mut pad_lo = vec![(0, 0, 0); flat.len()];
            pad_lo[last] = (1, -1, 0);
            let mut pad_hi = vec![(0, 0, 0); flat.len()];
            pad_hi[last] = (-1, 1, 0);
            let prefix = lax::pad(
                &lax::cumulative(CumulativeOp::Cumprod, &xf, last, false)?,
                &one,
                &pad_lo,
            )?;
            let suffix = lax::pad(
                &lax::cumulative(CumulativeOp::Cumprod, &xf, last, true)?,
                &one,
                &pad_hi,
            )?;
            let others = lax::mul(&prefix, &suffix)?;
            let dt = lax::reduce(ReduceOp::Sum, &lax::mul(&tf, &others)?, &[last])?;
            Ok((vec![y], vec![Some(dt)]))
        }
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => no_tangent(p, std::slice::from_ref(x)),
    }
}

fn unary(op: UnaryOp, p: &Primitive, x: &Array, t: Option<&Array>) -> Result<Outs> {
    use UnaryOp as U;
    let y = bind1(p, std::slice::from_ref(x))?;
    let c = |v: f64| scalar_like(x, v);
    let d: Option<Array> = match op {
        U::Neg => t.map(lax::neg).transpose()?,
        U::Copy => t.cloned(),
        U::Sign | U::Floor | U::Ceil | U::IsFinite | U::Not | U::StopGradient => None,
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
        U::Abs => tmul(t, &lax::sign(x)?)?,
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
    };
    Ok((vec![y], vec![d]))
}

fn binary(op: BinaryOp, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    use BinaryOp as B;
    let (a, b) = (&x[0], &x[1]);
    match op {
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
                | B::Nextafter => return unsupported(p),
            };
            Ok((vec![y], vec![sum_tangents(parts.into_iter().flatten())?]))
        }
    }
}

/// Moves `axis` last.
fn axis_last(x: &Array, axis: usize) -> Result<(Array, Vec<usize>)> {
    let n = x.ndim();
    let perm: Vec<usize> = (0..n).filter(|&d| d != axis).chain([axis]).collect();
    let mut inv = vec![0; n];
    for (i, &d) in perm.iter().enumerate() {
        inv[d] = i;
    }
    Ok((lax::transpose(x, &perm)?, inv))
}

/// `out[.., i, ..] = t[.., idx[.., i, ..], ..]` along `axis`, as a
/// one-hot contraction (linear in `t`; `idx` is integer, from primals).
fn take_along(t: &Array, idx: &Array, axis: usize) -> Result<Array> {
    let (tl, inv) = axis_last(t, axis)?;
    let (il, _) = axis_last(idx, axis)?;
    let ts = tl.try_shape()?;
    let is = il.try_shape()?;
    let r = ts.len();
    let (n, m) = (ts[r - 1], is[r - 1]);
    let mut full = is.clone();
    full.push(n);
    let keep: Vec<usize> = (0..r).collect();
    let ib = lax::broadcast_in_dim(
        &lax::convert_element_type(&il, jaxon_ir::DType::I32, false)?,
        &full,
        &keep,
    )?;
    let iota = lax::broadcasted_iota(jaxon_ir::DType::I32, &full, r)?;
    let hit = lax::convert_element_type(&lax::eq(&ib, &iota)?, t.dtype(), false)?;
    let mut tkeep: Vec<usize> = (0..r - 1).collect();
    tkeep.push(r);
    let tb = lax::broadcast_in_dim(&tl, &full, &tkeep)?;
    let out = lax::reduce(ReduceOp::Sum, &lax::mul(&hit, &tb)?, &[r])?;
    let _ = m;
    lax::transpose(&out, &inv)
}

/// Sort: sort an extra iota operand along with the others to learn the
/// permutation, then gather the tangents with it.
fn sort(
    dimension: usize,
    is_stable: bool,
    num_keys: usize,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<Outs> {
    let shape = x[0].try_shape()?;
    let iota = lax::broadcasted_iota(jaxon_ir::DType::I32, &shape, dimension)?;
    let mut ops = x.to_vec();
    ops.push(iota);
    let mut outs = lax::sort(&ops, dimension, is_stable, num_keys)?;
    let perm = outs.pop().expect("the iota operand");
    let tangents = t
        .iter()
        .map(|ti| {
            ti.as_ref()
                .map(|ti| take_along(ti, &perm, dimension))
                .transpose()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((outs, tangents))
}

/// The tangent of a cumulative product, exact where `x` has zeros (the
/// shortcut `y Σ t/x` is not). A prefix scan over pairs `(a, da)` with the
/// product rule `(a, da)·(b, db) = (ab, da b + a db)`, which is
/// associative: log2(n) doubling steps of shifted products.
fn cumprod_tangent(x: &Array, t: &Array, axis: usize, reverse: bool) -> Result<Array> {
    let n = x.try_shape()?[axis];
    let flip = |v: &Array| -> Result<Array> {
        if reverse {
            lax::rev(v, &[axis])
        } else {
            Ok(v.clone())
        }
    };
    let (mut a, mut da) = (flip(x)?, flip(t)?);
    let (one, zero) = (scalar_like(x, 1.0)?, scalar_like(t, 0.0)?);
    let mut shift = 1;
    while shift < n {
        // Element i combines with element i - shift (the identity before
        // the start).
        let mut cfg = vec![(0, 0, 0); x.ndim()];
        cfg[axis] = (shift as i64, -(shift as i64), 0);
        let a_prev = lax::pad(&a, &one, &cfg)?;
        let da_prev = lax::pad(&da, &zero, &cfg)?;
        da = lax::add(&lax::mul(&da_prev, &a)?, &lax::mul(&a_prev, &da)?)?;
        a = lax::mul(&a_prev, &a)?;
        shift *= 2;
    }
    flip(&da)
}

/// Cumulative products, extrema and log-sum-exp.
fn cumulative(
    op: CumulativeOp,
    axis: usize,
    reverse: bool,
    p: &Primitive,
    x: &Array,
    t: Option<&Array>,
) -> Result<Outs> {
    let y = bind1(p, std::slice::from_ref(x))?;
    let Some(t) = t else {
        return Ok((vec![y], vec![None]));
    };
    let cumsum = |v: &Array| lax::cumulative(CumulativeOp::Cumsum, v, axis, reverse);
    let dt = match op {
        CumulativeOp::Cumprod => cumprod_tangent(x, t, axis, reverse)?,
        CumulativeOp::Cumlogsumexp => {
            // Σ_{j≤i} exp(x_j - y_i) t_j, shifted by the axis max for range.
            let shape = x.try_shape()?;
            let keep: Vec<usize> = (0..shape.len()).filter(|&d| d != axis).collect();
            let m = lax::broadcast_in_dim(&lax::reduce(ReduceOp::Max, x, &[axis])?, &shape, &keep)?;
            let e = lax::exp(&lax::sub(x, &m)?)?;
            let num = cumsum(&lax::mul(&e, t)?)?;
            lax::mul(&num, &lax::exp(&lax::sub(&m, &y)?)?)?
        }
        CumulativeOp::Cummax | CumulativeOp::Cummin => {
            // The tangent of the element that set the running extremum:
            // the last position so far where x equals it.
            let shape = x.try_shape()?;
            let n = shape[axis] as f64;
            let iota = lax::broadcasted_iota(jaxon_ir::DType::I32, &shape, axis)?;
            let pos = if reverse {
                lax::sub(&scalar_like(&iota, n - 1.0)?, &iota)?
            } else {
                iota
            };
            let minus = lax::broadcast_in_dim(&scalar_like(&pos, -1.0)?, &shape, &[])?;
            let at = lax::select_n(&lax::eq(x, &y)?, &[minus, pos])?;
            let last = lax::cumulative(CumulativeOp::Cummax, &at, axis, reverse)?;
            let idx = if reverse {
                lax::sub(&scalar_like(&last, n - 1.0)?, &last)?
            } else {
                last
            };
            take_along(t, &idx, axis)?
        }
        CumulativeOp::Cumsum => {
            return linear_in(p, std::slice::from_ref(x), &[Some(t.clone())], &[true])
        }
    };
    Ok((vec![y], vec![Some(dt)]))
}
