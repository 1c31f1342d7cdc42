//! Shape rules of the window family: `reduce_window_*`,
//! `select_and_scatter_add` and `select_and_gather_add`.

use super::Cx;
use crate::aval::{static_shape, ShapedArray};
use crate::error::IrError;
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
