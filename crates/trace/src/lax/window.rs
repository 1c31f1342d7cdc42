//! Windowed reductions: `lax.reduce_window` for the sum, max and min
//! monoids, with padding as `SAME`/`VALID` or explicit pairs, and base and
//! window dilations.

use super::conv::{pads, Padding};
use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use jaxon_ir::primitive::{ReduceWindowParams, WindowGeometry, WindowOp};
use jaxon_ir::Primitive;

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
    let shape = x.try_shape()?;
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
            "{}: window_dimensions, window_strides and dilations need {n} entries (the operand's rank)",
            op.name()
        )));
    }
    if let Padding::Explicit(p) = &padding {
        if p.len() != n {
            return Err(Error::InvalidArgument(format!(
                "{}: padding {p:?} must have {n} (low, high) pairs",
                op.name()
            )));
        }
    }
    let dil = |s: usize, d: usize| if s == 0 { 0 } else { (s - 1) * d + 1 };
    let input: Vec<usize> = (0..n).map(|k| dil(shape[k], base[k])).collect();
    let window: Vec<usize> = (0..n).map(|k| dil(window_dimensions[k], wdil[k])).collect();
    let padding = pads(&padding, &input, &window, window_strides);
    bind1(
        &Primitive::from(ReduceWindowParams {
            op,
            window: WindowGeometry {
                window_dimensions: window_dimensions.to_vec(),
                window_strides: window_strides.to_vec(),
                padding,
                base_dilation: base,
                window_dilation: wdil,
            },
        }),
        std::slice::from_ref(x),
    )
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
