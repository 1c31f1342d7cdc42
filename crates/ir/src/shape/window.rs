//! Shape rules of the window family: `reduce_window_*`, the generic
//! `reduce_window`, `select_and_scatter_add` and `select_and_gather_add`.

use super::Cx;
use crate::aval::{static_shape, ShapedArray};
use crate::error::IrError;
use crate::jaxpr::Jaxpr;
use crate::primitive::WindowGeometry;

/// The static sizes of operand `i`.
fn sizes(cx: &Cx, i: usize) -> Result<(ShapedArray, Vec<usize>), IrError> {
    let a = cx.arr(i)?;
    let s = a
        .static_sizes()
        .ok_or_else(|| cx.err("window ops need static shapes"))?;
    Ok((a.clone(), s))
}

/// The windowed result's sizes for an operand of `sizes`.
pub(crate) fn out_sizes(
    cx: &Cx,
    w: &WindowGeometry,
    sizes: &[usize],
) -> Result<Vec<usize>, IrError> {
    w.check(cx.name, sizes.len()).map_err(|m| cx.err(m))?;
    (0..sizes.len())
        .map(|d| {
            w.out_dim(d, sizes[d]).ok_or_else(|| {
                cx.err(format!(
                    "padding {:?} makes dimension {d} negative",
                    w.padding[d]
                ))
            })
        })
        .collect()
}

/// `reduce_window_*`: one operand, the windowed shape.
pub(crate) fn reduce_window(cx: &Cx, w: &WindowGeometry) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let (a, s) = sizes(cx, 0)?;
    Ok(ShapedArray::new(
        a.dtype,
        static_shape(&out_sizes(cx, w, &s)?),
    ))
}

/// The generic `reduce_window x1 .. xn init1 .. initn`: operands of one
/// shape, scalar inits of their dtypes, and a combiner from `2n` such
/// scalars to `n`; the results have the operands' dtypes and the windowed
/// shape.
pub(crate) fn generic(
    cx: &Cx,
    jaxpr: &Jaxpr,
    w: &WindowGeometry,
) -> Result<Vec<ShapedArray>, IrError> {
    let k = cx.avals.len();
    if k == 0 || !k.is_multiple_of(2) {
        return Err(cx.err(format!(
            "expected operands then as many init values, got {k} operand(s)"
        )));
    }
    let n = k / 2;
    let (first, s0) = sizes(cx, 0)?;
    let mut dtypes = Vec::with_capacity(n);
    for i in 0..n {
        let (a, s) = sizes(cx, i)?;
        if s != s0 {
            return Err(cx.err(format!(
                "operand {i} has shape {:?}, operand 0 has {:?}",
                a.shape, first.shape
            )));
        }
        let init = cx.arr(n + i)?;
        if !init.shape.is_empty() || init.dtype != a.dtype {
            return Err(cx.err(format!(
                "init value {i} is {}{:?}, expected a {} scalar like operand {i}",
                init.dtype, init.shape, a.dtype
            )));
        }
        dtypes.push(a.dtype);
    }
    let scalar = |d| crate::aval::Aval::Array(ShapedArray::scalar(d));
    let want_in: Vec<_> = dtypes.iter().chain(&dtypes).map(|&d| scalar(d)).collect();
    let want_out: Vec<_> = dtypes.iter().map(|&d| scalar(d)).collect();
    if jaxpr.in_avals() != want_in || jaxpr.out_avals() != want_out {
        return Err(cx.err(format!(
            "the combiner must map {} scalars (accumulators, then elements) of dtypes {dtypes:?} to {n}; \
             it takes {} and returns {}",
            2 * n,
            jaxpr.in_avals().len(),
            jaxpr.out_avals().len()
        )));
    }
    let out = static_shape(&out_sizes(cx, w, &s0)?);
    Ok(dtypes
        .into_iter()
        .map(|d| ShapedArray::new(d, out.clone()))
        .collect())
}

/// `select_and_gather_add tangents operand`: both of one type, the windowed shape.
pub(crate) fn select_and_gather(cx: &Cx, w: &WindowGeometry) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (t, ts) = sizes(cx, 0)?;
    let (o, os) = sizes(cx, 1)?;
    if ts != os || t.dtype != o.dtype {
        return Err(cx.err("tangents and operand must have the same type"));
    }
    Ok(ShapedArray::new(
        t.dtype,
        static_shape(&out_sizes(cx, w, &os)?),
    ))
}

/// `select_and_scatter_add source operand`: the source has the windowed
/// shape of the operand; the result the operand's.
pub(crate) fn select_and_scatter(cx: &Cx, w: &WindowGeometry) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (src, ss) = sizes(cx, 0)?;
    let (_, os) = sizes(cx, 1)?;
    let want = out_sizes(cx, w, &os)?;
    if ss != want {
        return Err(cx.err(format!(
            "source has sizes {ss:?}, the windows of the operand give {want:?}"
        )));
    }
    Ok(ShapedArray::new(src.dtype, static_shape(&os)))
}
