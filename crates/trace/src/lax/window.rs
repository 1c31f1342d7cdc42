//! Windowed reductions: `lax.reduce_window` for the sum, max and min
//! monoids and for any combiner over several operands
//! (`reduce_window_with`), with padding as `SAME`/`VALID` or explicit
//! pairs, and base and window dilations.

use super::conv::{pads, Padding};
use crate::array::Array;
use crate::core::{bind, bind1};
use crate::error::{Error, Result};
use crate::stage::{trace_flat, StageMode};
use jaxon_ir::primitive::{
    GenericReduceWindowParams, ReduceWindowParams, WindowGeometry, WindowOp,
};
use jaxon_ir::{Aval, Primitive, ShapedArray};
use std::sync::Arc;

/// `lax.reduce_window(x, init, op, window_dimensions, window_strides,
/// padding, base_dilation, window_dilation)` for the monoid `op` (its
/// identity is the init value: 0, -inf or +inf); dilations default to 1.
pub fn reduce_window(
    op: WindowOp,
    x: &Array,
    window_dimensions: &[usize],
    window_strides: &[usize],
    padding: Padding,
    base_dilation: Option<&[usize]>,
    window_dilation: Option<&[usize]>,
) -> Result<Array> {
    let window = geometry(
        op.name(),
        &x.try_shape()?,
        window_dimensions,
        window_strides,
        padding,
        base_dilation,
        window_dilation,
    )?;
    bind1(
        &Primitive::from(ReduceWindowParams { op, window }),
        std::slice::from_ref(x),
    )
}

/// `lax.reduce_window(operands, init_values, computation, ...)` for any
/// combiner: every window of the operands (all of one shape) folded from
/// `init_values` (scalars of the operands' dtypes) by
/// `computation(accumulators, elements)`, which maps scalars to as many
/// scalars. Padding reads the init values. Staged as the generic
/// `reduce_window` primitive; `computation` may not capture traced values.
#[allow(clippy::too_many_arguments)]
pub fn reduce_window_with(
    operands: &[Array],
    init_values: &[Array],
    computation: impl FnOnce(&[Array], &[Array]) -> Result<Vec<Array>>,
    window_dimensions: &[usize],
    window_strides: &[usize],
    padding: Padding,
    base_dilation: Option<&[usize]>,
    window_dilation: Option<&[usize]>,
) -> Result<Vec<Array>> {
    const NAME: &str = "reduce_window";
    let Some(first) = operands.first() else {
        return Err(Error::InvalidArgument(format!("{NAME}: no operands")));
    };
    if init_values.len() != operands.len() {
        return Err(Error::InvalidArgument(format!(
            "{NAME}: {} operands but {} init values",
            operands.len(),
            init_values.len()
        )));
    }
    let window = geometry(
        NAME,
        &first.try_shape()?,
        window_dimensions,
        window_strides,
        padding,
        base_dilation,
        window_dilation,
    )?;
    let n = operands.len();
    let scalar = |a: &Array| Aval::Array(ShapedArray::scalar(a.dtype()));
    let avals: Vec<Aval> = operands.iter().chain(operands).map(scalar).collect();
    let staged = trace_flat(StageMode::Base, &avals, |t| {
        let (acc, x) = t.split_at(n);
        computation(acc, x)
    })?;
    if !staged.consts.is_empty() || staged.implicit_outs != 0 {
        return Err(Error::InvalidArgument(format!(
            "{NAME}: the computation captures {} value(s) from outside; pass them as operands",
            staged.consts.len()
        )));
    }
    let mut jaxpr = staged.jaxpr;
    jaxpr.constvars.clear();
    let args: Vec<Array> = operands.iter().chain(init_values).cloned().collect();
    bind(
        &Primitive::from(GenericReduceWindowParams {
            jaxpr: Arc::new(jaxpr),
            window,
        }),
        &args,
    )
}

/// The window of `name` over an operand of `shape`: checks ranks, fills
/// the dilations' defaults and resolves `SAME`/`VALID` padding.
fn geometry(
    name: &str,
    shape: &[usize],
    window_dimensions: &[usize],
    window_strides: &[usize],
    padding: Padding,
    base_dilation: Option<&[usize]>,
    window_dilation: Option<&[usize]>,
) -> Result<WindowGeometry> {
    let n = shape.len();
    let ones = vec![1usize; n];
    let base = base_dilation.unwrap_or(&ones).to_vec();
    let wdil = window_dilation.unwrap_or(&ones).to_vec();
    if [
        window_dimensions.len(),
        window_strides.len(),
        base.len(),
        wdil.len(),
    ]
    .iter()
    .any(|&l| l != n)
    {
        return Err(Error::InvalidArgument(format!(
            "{name}: window_dimensions, window_strides and dilations need {n} entries (the operand's rank)"
        )));
    }
    if let Padding::Explicit(p) = &padding {
        if p.len() != n {
            return Err(Error::InvalidArgument(format!(
                "{name}: padding {p:?} must have {n} (low, high) pairs"
            )));
        }
    }
    let dil = |s: usize, d: usize| if s == 0 { 0 } else { (s - 1) * d + 1 };
    let input: Vec<usize> = (0..n).map(|k| dil(shape[k], base[k])).collect();
    let window: Vec<usize> = (0..n).map(|k| dil(window_dimensions[k], wdil[k])).collect();
    let padding = pads(&padding, &input, &window, window_strides);
    Ok(WindowGeometry {
        window_dimensions: window_dimensions.to_vec(),
        window_strides: window_strides.to_vec(),
        padding,
        base_dilation: base,
        window_dilation: wdil,
    })
}

/// `reduce_window` with the sum monoid, no dilation (sum pooling).
pub fn reduce_window_sum(
    x: &Array,
    window_dimensions: &[usize],
    window_strides: &[usize],
    padding: Padding,
) -> Result<Array> {
    reduce_window(
        WindowOp::Sum,
        x,
        window_dimensions,
        window_strides,
        padding,
        None,
        None,
    )
}

/// `reduce_window` with the max monoid, no dilation (max pooling).
pub fn reduce_window_max(
    x: &Array,
    window_dimensions: &[usize],
    window_strides: &[usize],
    padding: Padding,
) -> Result<Array> {
    reduce_window(
        WindowOp::Max,
        x,
        window_dimensions,
        window_strides,
        padding,
        None,
        None,
    )
}

/// `reduce_window` with the min monoid, no dilation (min pooling).
pub fn reduce_window_min(
    x: &Array,
    window_dimensions: &[usize],
    window_strides: &[usize],
    padding: Padding,
) -> Result<Array> {
    reduce_window(
        WindowOp::Min,
        x,
        window_dimensions,
        window_strides,
        padding,
        None,
        None,
    )
}
