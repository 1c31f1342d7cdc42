//! Transposition of `conv_general_dilated` with respect to either operand.
//!
//! Both cotangents are convolutions again. For the input: the output
//! cotangent convolved with the spatially reversed kernel, its in/out
//! feature roles swapped, where the forward strides become input dilation
//! and the forward input dilation becomes the stride. For the kernel: the
//! input convolved with the output cotangent used as a kernel, with the
//! batch dimension playing the role of the contracted feature dimension.
//! Feature groups and batch groups trade places in the kernel case and are
//! folded into the feature dimensions in the input case.

use super::LinArg;
use jaxon_ir::primitive::{ConvDimensionNumbers, Precision};
use jaxon_ir::primitive::{ConvGeneralDilatedParams, Linalg};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, numpy as jnp, Array};

/// The parameters of one `conv_general_dilated` equation.
struct Conv<'a> {
    window_strides: &'a [usize],
    padding: &'a [(i64, i64)],
    lhs_dilation: &'a [usize],
    rhs_dilation: &'a [usize],
    dn: &'a ConvDimensionNumbers,
    feature_group_count: usize,
    batch_group_count: usize,
    precision: Option<(Precision, Precision)>,
    preferred_element_type: Option<DType>,
}

/// The extent of a dimension of size `d` after inserting `k - 1` holes
/// between neighbouring elements.
fn dilate(d: usize, k: usize) -> i64 {
    if d == 0 {
        0
    } else {
        1 + (k as i64) * (d as i64 - 1)
    }
}

/// The spec with its first two entries (batch/feature roles) swapped.
fn swap_roles(spec: &[usize]) -> Vec<usize> {
    let mut s = spec.to_vec();
    s.swap(0, 1);
    s
}

/// Splits axis `src` of `x` into `(size1, n / size1)`, major part first.
fn split_axis(x: &Array, src: usize, size1: usize) -> Result<Array> {
    let mut shape = x.try_shape()?;
    let n = shape[src];
    if size1 == 0 || n % size1 != 0 {
        return Err(Error::InvalidArgument(format!(
            "conv_general_dilated transpose: axis of size {n} does not split into {size1} groups"
        )));
    }
    shape.splice(src..=src, [size1, n / size1]);
    lax::reshape(x, &shape)
}

/// Removes axis `src` of `x` and merges it, as the major part, into the
/// axis that is at position `dst` once `src` is gone.
fn merge_axis(x: &Array, src: usize, dst: usize) -> Result<Array> {
    let shape = x.try_shape()?;
    let mut perm: Vec<usize> = (0..shape.len()).filter(|&d| d != src).collect();
    perm.insert(dst, src);
    let mut new_shape: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
    let major = new_shape.remove(dst);
    new_shape[dst] *= major;
    lax::reshape(&lax::transpose(x, &perm)?, &new_shape)
}

impl Conv<'_> {
    fn bind(
        &self,
        lhs: &Array,
        rhs: &Array,
        // Window strides, lhs dilation, rhs dilation.
        [strides, lhs_dilation, rhs_dilation]: [&[usize]; 3],
        padding: Vec<(i64, i64)>,
        dn: ConvDimensionNumbers,
        groups: (usize, usize),
    ) -> Result<Array> {
        let p = Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
            window_strides: strides.to_vec(),
            padding,
            lhs_dilation: lhs_dilation.to_vec(),
            rhs_dilation: rhs_dilation.to_vec(),
            dimension_numbers: dn,
            feature_group_count: groups.0,
            batch_group_count: groups.1,
            precision: self.precision,
            preferred_element_type: self.preferred_element_type,
        }));
        bind1(&p, &[lhs.clone(), rhs.clone()])
    }

    /// The cotangent of the input, of shape `lhs_shape`.
    fn transpose_lhs(
        &self,
        g: &Array,
        lhs_shape: &[usize],
        lhs_dtype: DType,
        rhs: &Array,
    ) -> Result<Array> {
        let dn = self.dn;
        let (lhs_sd, rhs_sd, out_sd) = (&dn.lhs_spec[2..], &dn.rhs_spec[2..], &dn.out_spec[2..]);
        let rhs_shape = rhs.try_shape()?;
        let g_shape = g.try_shape()?;
        let (fg, bg) = (self.feature_group_count, self.batch_group_count);
        // Groups: move the group factor of the kernel's output features into
        // its input features, which become the output features here.
        let (kernel, groups) = if fg > 1 || bg > 1 {
            let n = fg.max(bg);
            let split = split_axis(rhs, dn.rhs_spec[0], n)?;
            (merge_axis(&split, dn.rhs_spec[0], dn.rhs_spec[1])?, n)
        } else {
            (rhs.clone(), 1)
        };
        let padding: Vec<(i64, i64)> = (0..lhs_sd.len())
            .map(|i| {
                let l = dilate(lhs_shape[lhs_sd[i]], self.lhs_dilation[i]);
                let r = dilate(rhs_shape[rhs_sd[i]], self.rhs_dilation[i]);
                let o = dilate(g_shape[out_sd[i]], self.window_strides[i]);
                let before = r - self.padding[i].0 - 1;
                (before, l + r - 1 - o - before)
            })
            .collect();
        let mut kernel = lax::rev(&kernel, rhs_sd)?;
        if kernel.dtype() != g.dtype() {
            kernel = lax::convert_element_type(&kernel, g.dtype(), false)?;
        }
        let tdn = ConvDimensionNumbers {
            lhs_spec: dn.out_spec.clone(),
            rhs_spec: swap_roles(&dn.rhs_spec),
            out_spec: dn.lhs_spec.clone(),
        };
        let mut out = self.bind(
            g,
            &kernel,
            [self.lhs_dilation, self.window_strides, self.rhs_dilation],
            padding,
            tdn,
            (groups, 1),
        )?;
        if out.dtype() != lhs_dtype {
            out = lax::convert_element_type(&out, lhs_dtype, false)?;
        }
        if bg > 1 {
            // The batch groups came out as feature groups: move them back.
            let split = split_axis(&out, dn.lhs_spec[1], bg)?;
            out = merge_axis(&split, dn.lhs_spec[1], dn.lhs_spec[0])?;
        }
        Ok(out)
    }

    /// The cotangent of the kernel, of shape `rhs_shape`.
    fn transpose_rhs(
        &self,
        g: &Array,
        lhs: &Array,
        rhs_shape: &[usize],
        rhs_dtype: DType,
    ) -> Result<Array> {
        let dn = self.dn;
        let (lhs_sd, rhs_sd, out_sd) = (&dn.lhs_spec[2..], &dn.rhs_spec[2..], &dn.out_spec[2..]);
        let g_shape = g.try_shape()?;
        if g_shape.iter().product::<usize>() == 0 {
            return jnp::zeros(rhs_shape, rhs_dtype);
        }
        let lhs_shape = lhs.try_shape()?;
        let (fg, bg) = (self.feature_group_count, self.batch_group_count);
        let groups = if bg > 1 { (bg, 1) } else { (1, fg) };
        let padding: Vec<(i64, i64)> = (0..lhs_sd.len())
            .map(|i| {
                let l = dilate(lhs_shape[lhs_sd[i]], self.lhs_dilation[i]);
                let r = dilate(rhs_shape[rhs_sd[i]], self.rhs_dilation[i]);
                let o = dilate(g_shape[out_sd[i]], self.window_strides[i]);
                let lo = self.padding[i].0;
                (lo, (o - l) + (r - lo - 1))
            })
            .collect();
        let lhs = if lhs.dtype() != g.dtype() {
            lax::convert_element_type(lhs, g.dtype(), false)?
        } else {
            lhs.clone()
        };
        let tdn = ConvDimensionNumbers {
            lhs_spec: swap_roles(&dn.lhs_spec),
            rhs_spec: swap_roles(&dn.out_spec),
            out_spec: swap_roles(&dn.rhs_spec),
        };
        let mut out = self.bind(
            &lhs,
            g,
            [self.rhs_dilation, self.lhs_dilation, self.window_strides],
            padding,
            tdn,
            groups,
        )?;
        if out.dtype() != rhs_dtype {
            out = lax::convert_element_type(&out, rhs_dtype, false)?;
        }
        Ok(out)
    }
}

/// Cotangents of a `conv_general_dilated` equation: exactly one of its two
/// operands is linear (it is bilinear).
pub(super) fn transpose_conv(
    p: &Primitive,
    args: &[LinArg],
    g: &Array,
) -> Result<Vec<Option<Array>>> {
    let Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dimension_numbers,
        feature_group_count,
        batch_group_count,
        precision,
        preferred_element_type,
    })) = p
    else {
        return Err(Error::InvalidArgument(format!(
            "transpose_conv: expected conv_general_dilated, got `{}`",
            p.name()
        )));
    };
    let conv = Conv {
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn: dimension_numbers,
        feature_group_count: *feature_group_count,
        batch_group_count: *batch_group_count,
        precision: *precision,
        preferred_element_type: *preferred_element_type,
    };
    let name = p.name();
    match (&args[0], &args[1]) {
        (LinArg::Linear(t), LinArg::Value(rhs)) => {
            let shape = t.static_sizes().unwrap_or_default();
            Ok(vec![
                Some(conv.transpose_lhs(g, &shape, t.dtype, rhs)?),
                None,
            ])
        }
        (LinArg::Value(lhs), LinArg::Linear(t)) => {
            let shape = t.static_sizes().unwrap_or_default();
            Ok(vec![
                None,
                Some(conv.transpose_rhs(g, lhs, &shape, t.dtype)?),
            ])
        }
        _ => Err(Error::InvalidArgument(format!(
            "transpose: `{name}` is linear in exactly one of its operands"
        ))),
    }
}
