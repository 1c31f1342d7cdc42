//! Rules of the reduction family (reductions, arg-reductions, cumulative
//! ops, `sort`, `top_k`): jvp, transpose and batching, side by side.
//!
//! Invariants: only `reduce_sum` and `cumsum` are linear. The jvps of
//! `reduce_max`/`min` and `cummax`/`min` give ties the mean (resp. the
//! last) tangent, as JAX's do; `reduce_prod` and `cumprod` are exact where
//! the operand has zeros; `sort` and `top_k` gather the tangents with the
//! permutation they learn. Batching keeps the batch dim in place for
//! reductions and cumulative ops, and moves it to the front for `sort` and
//! `top_k`.

use super::{
    all_front, around, ct, front1, linear_in, no_tangent, not_linear, only, rest_unbatched,
    transpose_unsupported, BatchOuts, Cts, JvpOuts,
};
use crate::transpose::LinArg;
use crate::util::scalar_like;
use jaxon_ir::primitive::{
    ArgReduceParams, CumulativeOp, CumulativeParams, ReduceOp, ReduceParams, Reduction, SortParams,
    TopKParams,
};
use jaxon_ir::Primitive;
use jaxon_trace::error::Result;
use jaxon_trace::{bind, bind1, dynshape, lax, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(
    r: &Reduction,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    match r {
        Reduction::Reduce(ReduceParams { op, axes, .. }) => {
            reduce(*op, axes, p, &x[0], t[0].as_ref())
        }
        Reduction::ArgReduce(_) => no_tangent(p, x),
        Reduction::Cumulative(CumulativeParams { op, axis, reverse }) => match op {
            CumulativeOp::Cumsum => linear_in(p, x, t, &[true]),
            CumulativeOp::Cumprod
            | CumulativeOp::Cummax
            | CumulativeOp::Cummin
            | CumulativeOp::Cumlogsumexp => {
                cumulative(*op, *axis, *reverse, p, &x[0], t[0].as_ref())
            }
        },
        Reduction::Sort(SortParams {
            dimension,
            is_stable,
            num_keys,
        }) => sort(*dimension, *is_stable, *num_keys, x, t),
        Reduction::TopK(TopKParams { axis, .. }) => {
            let outs = bind(p, x)?;
            let dt = t[0]
                .as_ref()
                .map(|t| take_along(t, &outs[1], *axis))
                .transpose()?;
            Ok((outs, vec![dt, None]))
        }
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    r: &Reduction,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match r {
        Reduction::Reduce(ReduceParams {
            op: ReduceOp::Sum,
            axes,
            ..
        }) => {
            let shape = args[0].sizes()?;
            let keep: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
            Ok(only(
                args,
                0,
                dynshape::broadcast_in_dim(&ct(cts)?, &shape, &keep)?,
            ))
        }
        Reduction::Cumulative(CumulativeParams {
            op: CumulativeOp::Cumsum,
            axis,
            reverse,
        }) => Ok(only(
            args,
            0,
            lax::cumulative(CumulativeOp::Cumsum, &ct(cts)?, *axis, !reverse)?,
        )),
        Reduction::Cumulative(_) => transpose_unsupported(p),
        Reduction::Reduce(_)
        | Reduction::ArgReduce(_)
        | Reduction::Sort(_)
        | Reduction::TopK(_) => not_linear(p),
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    r: &Reduction,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match r {
        Reduction::Reduce(ReduceParams { op, axes, .. }) => {
            reduce_in_place(p, x, d, axes, |axes| ReduceParams::new(*op, axes).into())
        }
        Reduction::ArgReduce(ArgReduceParams {
            op,
            axes,
            index_dtype,
        }) => reduce_in_place(p, x, d, axes, |axes| {
            ArgReduceParams {
                op: *op,
                axes,
                index_dtype: *index_dtype,
            }
            .into()
        }),
        Reduction::Cumulative(CumulativeParams { op, axis, reverse }) => {
            let bd = d[0].unwrap_or(0);
            let q = CumulativeParams {
                op: *op,
                axis: around(&[*axis], bd)[0],
                reverse: *reverse,
            };
            Ok((vec![bind1(&q.into(), &x[..1])?], vec![Some(bd)]))
        }
        Reduction::Sort(SortParams {
            dimension,
            is_stable,
            num_keys,
        }) => {
            let q = SortParams {
                dimension: dimension + 1,
                is_stable: *is_stable,
                num_keys: *num_keys,
            };
            all_front(x, d, n, q.into())
        }
        Reduction::TopK(TopKParams { k, axis }) => {
            let q = TopKParams {
                k: *k,
                axis: axis + 1,
            };
            front1(p, x, d, n, q.into())
        }
    }
}

// ---------------------------------------------------------------- jvp --

fn reduce(
    op: ReduceOp,
    axes: &[usize],
    p: &Primitive,
    x: &Array,
    t: Option<&Array>,
) -> Result<JvpOuts> {
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
) -> Result<JvpOuts> {
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
) -> Result<JvpOuts> {
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

// -------------------------------------------------------------- batch --

/// Reductions keep the batch dim where it is (no transpose): the value
/// axes skip it, and it moves left by the reduced axes before it.
fn reduce_in_place(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    axes: &[usize],
    make: impl FnOnce(Vec<usize>) -> Primitive,
) -> Result<BatchOuts> {
    rest_unbatched(p, d)?;
    let bd = d[0].unwrap_or(0);
    let vaxes = around(axes, bd);
    let out_bd = bd - vaxes.iter().filter(|&&a| a < bd).count();
    let out = bind1(&make(vaxes), &x[..1])?;
    Ok((vec![out], vec![Some(out_bd)]))
}
