//! Rules of the window family (`reduce_window_*`, `select_and_gather_add`,
//! `select_and_scatter_add`; the generic `reduce_window`'s are in
//! `window_generic.rs`): jvp, transpose and batching, side by side.
//!
//! Invariants, as JAX's: `reduce_window_sum` is linear and transposes to a
//! pad of the cotangent (interior `stride - 1`) and a `reduce_window_sum`
//! with strides the base dilation; the jvp of `reduce_window_max`/`min` is
//! `select_and_gather_add` of the tangent, which is linear in the tangent and
//! transposes to `select_and_scatter_add` (no dilations), and back. Batching
//! moves the batch dimension to the front and gives it a window of 1.

use super::{all_front, ct, linear_in, only, BatchOuts, Cts, JvpOuts};
use crate::transpose::LinArg;
use crate::util::scalar_like;
use jaxon_ir::primitive::{
    Ints, PadParams, ReduceWindowParams, SelectAndGatherAddParams, SelectAndScatterAddParams,
    SelectPrim, Window, WindowGeometry, WindowOp,
};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(w: &Window, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match w {
        Window::ReduceWindow(ReduceWindowParams { op, window }) => {
            let select_prim = match op {
                WindowOp::Sum => return linear_in(p, x, t, &[true]),
                WindowOp::Max => SelectPrim::Ge,
                WindowOp::Min => SelectPrim::Le,
            };
            let y = bind1(p, x)?;
            let dt = t[0]
                .as_ref()
                .map(|t| {
                    let q = SelectAndGatherAddParams {
                        select_prim,
                        window: window.clone(),
                    };
                    bind1(&q.into(), &[t.clone(), x[0].clone()])
                })
                .transpose()?;
            Ok((vec![y], vec![dt]))
        }
        Window::Generic(q) => super::window_generic::jvp(q, p, x, t),
        Window::SelectAndGatherAdd(_) | Window::SelectAndScatterAdd(_) => {
            linear_in(p, x, t, &[true, false])
        }
    }
}

/// The static sizes of a transpose operand.
fn static_sizes(a: &LinArg, name: &str) -> Result<Vec<usize>> {
    a.ty().static_sizes().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "transpose of `{name}`: dynamic shapes are not supported"
        ))
    })
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    w: &Window,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let name = p.name();
    match w {
        Window::ReduceWindow(ReduceWindowParams {
            op: WindowOp::Sum,
            window,
        }) => {
            let in_shape = static_sizes(&args[0], name)?;
            let g = ct(cts)?;
            Ok(only(
                args,
                0,
                reduce_window_sum_transpose(&g, &in_shape, window)?,
            ))
        }
        Window::ReduceWindow(_) => super::not_linear(p),
        // Its jvp reduces primals and tangents together, which partial
        // evaluation cannot split into a linear part: JAX has no reverse
        // mode for it either.
        Window::Generic(_) => Err(Error::Unsupported(format!(
            "reverse-mode differentiation of the generic `{name}` (a custom combiner) is not \
             supported, as in JAX: use forward mode (jvp, jacfwd), or the sum/max/min forms"
        ))),
        Window::SelectAndGatherAdd(SelectAndGatherAddParams {
            select_prim,
            window,
        }) => {
            if window
                .base_dilation
                .iter()
                .chain(&window.window_dilation)
                .any(|&d| d != 1)
            {
                return super::transpose_unsupported(p);
            }
            let x = args[1].value(name)?;
            let q = SelectAndScatterAddParams {
                select_prim: *select_prim,
                window_dimensions: window.window_dimensions.clone(),
                window_strides: window.window_strides.clone(),
                padding: window.padding.clone(),
            };
            Ok(only(args, 0, bind1(&q.into(), &[ct(cts)?, x.clone()])?))
        }
        Window::SelectAndScatterAdd(q) => {
            let x = args[1].value(name)?;
            let g = SelectAndGatherAddParams {
                select_prim: q.select_prim,
                window: q.geometry(),
            };
            Ok(only(args, 0, bind1(&g.into(), &[ct(cts)?, x.clone()])?))
        }
    }
}

/// JAX's transpose of `reduce_window_sum`: the cotangent padded as a
/// convolution's input gradient, then summed over the same (dilated)
/// windows with strides the base dilation.
fn reduce_window_sum_transpose(g: &Array, in_shape: &[usize], w: &WindowGeometry) -> Result<Array> {
    let out_shape = g.shape();
    let dil = |n: usize, d: usize| {
        if n == 0 {
            0
        } else {
            (n as i64 - 1) * d as i64 + 1
        }
    };
    let mut config = Vec::with_capacity(in_shape.len());
    for d in 0..in_shape.len() {
        let lhs = dil(in_shape[d], w.base_dilation[d]);
        let rhs = dil(w.window_dimensions[d], w.window_dilation[d]);
        let out = dil(out_shape[d], w.window_strides[d]);
        let before = rhs - w.padding[d].0 - 1;
        let after = lhs + rhs - 1 - out - before;
        config.push(Ints {
            values: vec![before, after, w.window_strides[d] as i64 - 1],
            np_int64: vec![true, true, false],
        });
    }
    let padded = bind1(
        &PadParams {
            padding_config: config,
        }
        .into(),
        &[g.clone(), scalar_like(g, 0.0)?],
    )?;
    let n = in_shape.len();
    let q = ReduceWindowParams {
        op: WindowOp::Sum,
        window: WindowGeometry {
            window_dimensions: w.window_dimensions.clone(),
            window_strides: w.base_dilation.clone(),
            padding: vec![(0, 0); n],
            base_dilation: vec![1; n],
            window_dilation: w.window_dilation.clone(),
        },
    };
    bind1(&q.into(), &[padded])
}

/// The geometry with a leading window of 1 for the batch dimension.
pub(super) fn with_batch(w: &WindowGeometry) -> WindowGeometry {
    let pre = |v: &[usize]| std::iter::once(1).chain(v.iter().copied()).collect();
    WindowGeometry {
        window_dimensions: pre(&w.window_dimensions),
        window_strides: pre(&w.window_strides),
        padding: std::iter::once((0, 0))
            .chain(w.padding.iter().copied())
            .collect(),
        base_dilation: pre(&w.base_dilation),
        window_dilation: pre(&w.window_dilation),
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    w: &Window,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let q: Primitive = match w {
        Window::Generic(q) => return super::window_generic::batch(q, p, x, d, n),
        Window::ReduceWindow(ReduceWindowParams { op, window }) => ReduceWindowParams {
            op: *op,
            window: with_batch(window),
        }
        .into(),
        Window::SelectAndGatherAdd(SelectAndGatherAddParams {
            select_prim,
            window,
        }) => SelectAndGatherAddParams {
            select_prim: *select_prim,
            window: with_batch(window),
        }
        .into(),
        Window::SelectAndScatterAdd(s) => {
            let g = with_batch(&s.geometry());
            SelectAndScatterAddParams {
                select_prim: s.select_prim,
                window_dimensions: g.window_dimensions,
                window_strides: g.window_strides,
                padding: g.padding,
            }
            .into()
        }
    };
    all_front(x, d, n, q)
}
