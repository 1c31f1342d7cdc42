//! Rules of the linalg family (`dot_general`, `conv_general_dilated`):
//! jvp, transpose and batching, side by side.
//!
//! Invariants: both primitives are bilinear, so the jvp is the sum of the
//! primitive with each operand replaced by its tangent, and exactly one
//! operand may be linear in a transpose. A dot's cotangent is a dot with
//! the result's cotangent, axes put back in order. A convolution's
//! cotangents are convolutions again: for the input, the output cotangent
//! convolved with the spatially reversed kernel, its in/out feature roles
//! swapped, where the forward strides become input dilation and the
//! forward input dilation becomes the stride; for the kernel, the input
//! convolved with the output cotangent used as a kernel, with the batch
//! dimension playing the role of the contracted feature dimension
//! (feature groups and batch groups trade places in the kernel case and
//! are folded into the feature dimensions in the input case). Batching
//! moves nothing for `dot_general` (a batch dim becomes a dot batch dim or
//! a free dim) and folds it into the image batch, the output features or
//! the feature groups of a convolution.

use super::{bilinear, ct, not_linear, only, BatchOuts, Cts, JvpOuts};
use crate::batch::{moveaxis, to_front};
use crate::transpose::LinArg;
use jaxon_ir::primitive::{
    ConvDimensionNumbers, ConvGeneralDilatedParams, DotDimensionNumbers, DotGeneralParams,
    FftParams, FftType, Linalg, Precision,
};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, numpy as jnp, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(l: &Linalg, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match l {
        Linalg::DotGeneral(_) | Linalg::ConvGeneralDilated(_) => bilinear(p, x, t),
        Linalg::Cholesky
        | Linalg::TriangularSolve(_)
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::TridiagonalSolve(_) => super::decomp::jvp(l, p, x, t),
        Linalg::Fft(_) => super::linear_in(p, x, t, &[true]),
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    l: &Linalg,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match l {
        Linalg::DotGeneral(dp) => dot_general_transpose(dp, p, args, cts),
        Linalg::ConvGeneralDilated(cp) => conv_transpose(cp, p, args, &ct(cts)?),
        Linalg::Cholesky
        | Linalg::TriangularSolve(_)
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::TridiagonalSolve(_) => super::decomp::transpose(l, p, args, cts),
        Linalg::Fft(fp) => Ok(only(args, 0, fft_transpose(fp, &ct(cts)?)?)),
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    l: &Linalg,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match l {
        Linalg::DotGeneral(dp) => dot_general_batch(dp, x, d),
        Linalg::ConvGeneralDilated(cp) => conv_batch(cp, p, x, d, n),
        Linalg::Cholesky
        | Linalg::TriangularSolve(_)
        | Linalg::Lu
        | Linalg::Qr(_)
        | Linalg::Eigh(_)
        | Linalg::Svd(_)
        | Linalg::Schur(_)
        | Linalg::TridiagonalSolve(_) => super::decomp::batch(p, x, d, n),
        // The transform acts on trailing axes: a leading batch dim is free.
        Linalg::Fft(_) => {
            let out = jaxon_trace::bind1(p, &[to_front(&x[0], d[0], n)?])?;
            Ok((vec![out], vec![Some(0)]))
        }
    }
}

/// JAX's `_fft_transpose_rule`: FFT and IFFT are symmetric (their own
/// transposes); RFFT's transpose zero-pads the cotangent to the full length,
/// applies FFT and keeps the real part (the transpose of a naive RFFT);
/// IRFFT's is the RFFT of the cotangent, the interior frequencies doubled,
/// scaled by `1/prod(fft_lengths)` and conjugated (JAX's convention for
/// complex gradients).
fn fft_transpose(fp: &FftParams, c: &Array) -> Result<Array> {
    let lengths = &fp.fft_lengths;
    match fp.fft_type {
        FftType::Fft | FftType::Ifft => lax::fft(c, fp.fft_type, lengths),
        FftType::Rfft => {
            let n = lengths.last().copied().unwrap_or(0);
            let have = c.try_shape()?.last().copied().unwrap_or(0);
            let mut config = vec![(0i64, 0i64, 0i64); c.ndim()];
            if let Some(last) = config.last_mut() {
                last.1 = n as i64 - have as i64;
            }
            let zero = jaxon_trace::numpy::zeros(&[], c.dtype())?;
            let full = lax::pad(c, &zero, &config)?;
            lax::real(&lax::fft(&full, FftType::Fft, lengths)?)
        }
        FftType::Irfft => {
            let x = lax::fft(c, FftType::Rfft, lengths)?;
            let xs = x.try_shape()?;
            let m = xs.last().copied().unwrap_or(0);
            let odd = !lengths.last().copied().unwrap_or(0).is_multiple_of(2);
            let scale = 1.0 / lengths.iter().product::<usize>() as f64;
            let mask: Vec<f64> = (0..m)
                .map(|k| {
                    let edge = k == 0 || (!odd && k + 1 == m);
                    scale * if edge { 1.0 } else { 2.0 }
                })
                .collect();
            let mask = jaxon_ir::HostArray::from_f64(x.dtype(), &[m], &mask)
                .map_err(|e| Error::InvalidArgument(e.to_string()))?;
            let mask =
                lax::broadcast_in_dim(&jaxon_trace::Array::from_host(mask), &xs, &[xs.len() - 1])?;
            lax::conj(&lax::mul(&mask, &x)?)
        }
    }
}

// ---------------------------------------------------------- transpose --

/// The cotangent of whichever operand is linear.
fn dot_general_transpose(
    dp: &DotGeneralParams,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let DotGeneralParams {
        dimension_numbers,
        preferred_element_type,
        ..
    } = dp;
    let name = p.name();
    let lin = |i: usize| args[i].is_linear();
    let c = ct(cts)?;
    match (lin(0), lin(1)) {
        (true, false) => {
            let y = args[1].value(name)?;
            let xt = dot_transpose_lhs(
                &c,
                args[0].ty().ndim(),
                y,
                dimension_numbers,
                *preferred_element_type,
                false,
            )?;
            Ok(only(
                args,
                0,
                lax::convert_element_type(&xt, args[0].ty().dtype, false)?,
            ))
        }
        (false, true) => {
            let x = args[0].value(name)?;
            let d = dimension_numbers;
            let swapped = DotDimensionNumbers {
                lhs_contracting: d.rhs_contracting.clone(),
                rhs_contracting: d.lhs_contracting.clone(),
                lhs_batch: d.rhs_batch.clone(),
                rhs_batch: d.lhs_batch.clone(),
            };
            let yt = dot_transpose_lhs(
                &c,
                args[1].ty().ndim(),
                x,
                &swapped,
                *preferred_element_type,
                true,
            )?;
            Ok(only(
                args,
                1,
                lax::convert_element_type(&yt, args[1].ty().dtype, false)?,
            ))
        }
        _ => not_linear(p),
    }
}

fn ranges_like(lens: &[usize]) -> Vec<Vec<usize>> {
    let mut start = 0;
    lens.iter()
        .map(|&n| {
            let r = (start..start + n).collect();
            start += n;
            r
        })
        .collect()
}

fn remaining(n: usize, a: &[usize], b: &[usize]) -> Vec<usize> {
    (0..n)
        .filter(|i| !a.contains(i) && !b.contains(i))
        .collect()
}

/// The cotangent of a dot_general's left operand: contract the result's
/// cotangent with the right operand, then put the axes back in order.
fn dot_transpose_lhs(
    g: &Array,
    x_ndim: usize,
    y: &Array,
    d: &DotDimensionNumbers,
    preferred: Option<jaxon_ir::DType>,
    swap_ans: bool,
) -> Result<Array> {
    let (xc, yc, xb, yb) = (
        &d.lhs_contracting,
        &d.rhs_contracting,
        &d.lhs_batch,
        &d.rhs_batch,
    );
    let x_kept = remaining(x_ndim, xc, xb);
    let y_kept = remaining(y.ndim(), yc, yb);
    let (ans_batch, ans_y) = if swap_ans {
        let r = ranges_like(&[xb.len(), y_kept.len(), x_kept.len()]);
        (r[0].clone(), r[1].clone())
    } else {
        let r = ranges_like(&[xb.len(), x_kept.len(), y_kept.len()]);
        (r[0].clone(), r[2].clone())
    };
    let dims = DotDimensionNumbers {
        lhs_contracting: ans_y,
        rhs_contracting: y_kept,
        lhs_batch: ans_batch,
        rhs_batch: yb.clone(),
    };
    let mut order: Vec<usize> = (0..yc.len()).collect();
    order.sort_by_key(|&i| yc[i]);
    let xc_sorted_by_y: Vec<usize> = order.iter().map(|&i| xc[i]).collect();
    let pre: Vec<usize> = xb
        .iter()
        .chain(&x_kept)
        .chain(&xc_sorted_by_y)
        .copied()
        .collect();
    let mut out_axes: Vec<usize> = (0..pre.len()).collect();
    out_axes.sort_by_key(|&i| pre[i]);
    let prod = lax::dot_general(g, y, dims, preferred)?;
    lax::transpose(&prod, &out_axes)
}

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
        let p = Primitive::from(ConvGeneralDilatedParams {
            window_strides: strides.to_vec(),
            padding,
            lhs_dilation: lhs_dilation.to_vec(),
            rhs_dilation: rhs_dilation.to_vec(),
            dimension_numbers: dn,
            feature_group_count: groups.0,
            batch_group_count: groups.1,
            precision: self.precision,
            preferred_element_type: self.preferred_element_type,
        });
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
fn conv_transpose(
    cp: &ConvGeneralDilatedParams,
    p: &Primitive,
    args: &[LinArg],
    g: &Array,
) -> Result<Cts> {
    let ConvGeneralDilatedParams {
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dimension_numbers,
        feature_group_count,
        batch_group_count,
        precision,
        preferred_element_type,
    } = cp;
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

// -------------------------------------------------------------- batch --

/// Logical dims mapped to value dims around a batch dim at `bd`.
fn around_opt(dims: &[usize], bd: Option<usize>) -> Vec<usize> {
    match bd {
        Some(bd) => dims
            .iter()
            .map(|&a| if a >= bd { a + 1 } else { a })
            .collect(),
        None => dims.to_vec(),
    }
}

/// The number of free (not contracted, not batch) value dims before `bd`.
fn free_before(bd: usize, contracting: &[usize], batch: &[usize]) -> usize {
    (0..bd)
        .filter(|a| !contracting.contains(a) && !batch.contains(a))
        .count()
}

/// `dot_general` without moving anything: a batch dim on both sides
/// becomes a leading dot batch dim; on one side it is a free dim, found
/// in the output after the batch dims (and the lhs free dims for rhs).
fn dot_general_batch(dp: &DotGeneralParams, x: &[Array], d: &[Option<usize>]) -> Result<BatchOuts> {
    let DotGeneralParams {
        dimension_numbers: dn,
        precision,
        preferred_element_type,
    } = dp;
    let mut new_dn = DotDimensionNumbers {
        lhs_contracting: around_opt(&dn.lhs_contracting, d[0]),
        rhs_contracting: around_opt(&dn.rhs_contracting, d[1]),
        lhs_batch: around_opt(&dn.lhs_batch, d[0]),
        rhs_batch: around_opt(&dn.rhs_batch, d[1]),
    };
    let nb = dn.lhs_batch.len();
    let out_dim = match (d[0], d[1]) {
        (Some(l), Some(r)) => {
            new_dn.lhs_batch.insert(0, l);
            new_dn.rhs_batch.insert(0, r);
            0
        }
        (Some(l), None) => nb + free_before(l, &new_dn.lhs_contracting, &new_dn.lhs_batch),
        (None, Some(r)) => {
            let lhs_free = x[0].ndim() - dn.lhs_contracting.len() - nb;
            nb + lhs_free + free_before(r, &new_dn.rhs_contracting, &new_dn.rhs_batch)
        }
        (None, None) => {
            return Err(Error::InvalidArgument(
                "dot_general batching rule without a batched operand".into(),
            ))
        }
    };
    let q = Primitive::from(DotGeneralParams {
        dimension_numbers: new_dn,
        precision: *precision,
        preferred_element_type: *preferred_element_type,
    });
    Ok((vec![bind1(&q, x)?], vec![Some(out_dim)]))
}

/// Merges the leading (batch) dim of `x` into its dim `pos + 1`, batch
/// index major: the result has the logical rank with dim `pos` scaled by n.
fn merge_into(x: &Array, pos: usize) -> Result<Array> {
    let moved = moveaxis(x, 0, pos)?;
    let mut shape = moved.try_shape()?;
    let n = shape.remove(pos);
    shape[pos] *= n;
    lax::reshape(&moved, &shape)
}

/// Splits dim `pos` of `y` (of size n·m, batch index major) into `[n, m]`.
fn split_out(y: &Array, pos: usize, n: usize) -> Result<Array> {
    let mut shape = y.try_shape()?;
    let m = shape[pos] / n;
    shape[pos] = m;
    shape.insert(pos, n);
    lax::reshape(y, &shape)
}

/// `conv_general_dilated`. With `G = feature_group_count`:
/// - batched images join the image batch;
/// - batched kernels become more output features, laid out `(group,
///   member, feature)` so that each group still sees its own inputs;
/// - both batched: member `b`'s group `g` becomes group `b·G + g` of a conv
///   with `n·G` groups (member-major merges of the image features and the
///   kernel output features line up exactly so).
///
/// With `B = batch_group_count > 1` (JAX's rule, grouping outermost):
/// - batched images: the image batch `N` splits into `(B, N/B)` and the
///   members join each group's part, `(B, n, N/B)`;
/// - batched kernels: as feature groups, with `B` for `G`;
/// - both batched: member-major batch groups, `n·B` of them.
fn conv_batch(
    cp: &ConvGeneralDilatedParams,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let ConvGeneralDilatedParams {
        dimension_numbers: dn,
        feature_group_count,
        batch_group_count,
        ..
    } = cp;
    let bg = *batch_group_count;
    // The groups the kernel's output features are split into.
    let g = if bg > 1 { bg } else { *feature_group_count };
    let (lb, lf) = (dn.lhs_spec[0], dn.lhs_spec[1]);
    let ro = dn.rhs_spec[0];
    let (ob, of) = (dn.out_spec[0], dn.out_spec[1]);
    match (d[0], d[1]) {
        (Some(_), None) if bg > 1 => {
            // [n, .., N, ..] -> [n, .., B, N/B, ..] -> [.., B, n·N/B, ..]
            // -> [.., B·n·N/B, ..].
            let split = split_out(&to_front(&x[0], d[0], n)?, lb + 1, bg)?;
            let joined = merge_into(&split, lb + 1)?;
            let mut shape = joined.try_shape()?;
            let inner = shape.remove(lb + 1);
            shape[lb] *= inner;
            let lhs = lax::reshape(&joined, &shape)?;
            let out = bind1(p, &[lhs, x[1].clone()])?;
            Ok((vec![split_out(&out, ob, n)?], vec![Some(ob)]))
        }
        (Some(_), Some(_)) if bg > 1 => {
            let lhs = merge_into(&to_front(&x[0], d[0], n)?, lb)?;
            let rhs = merge_into(&to_front(&x[1], d[1], n)?, ro)?;
            let q: Primitive = ConvGeneralDilatedParams {
                batch_group_count: n * bg,
                ..cp.clone()
            }
            .into();
            let out = bind1(&q, &[lhs, rhs])?;
            Ok((vec![split_out(&out, of, n)?], vec![Some(of)]))
        }
        (Some(_), None) => {
            let lhs = merge_into(&to_front(&x[0], d[0], n)?, lb)?;
            let out = bind1(p, &[lhs, x[1].clone()])?;
            Ok((vec![split_out(&out, ob, n)?], vec![Some(ob)]))
        }
        (None, Some(_)) => {
            // rhs [n, .., O, ..] -> [.., n, G, O/G, ..] -> [.., G, n, O/G, ..]
            // -> [.., G·n·O/G, ..].
            let moved = moveaxis(&to_front(&x[1], d[1], n)?, 0, ro)?;
            let mut shape = moved.try_shape()?;
            let o = shape[ro + 1];
            shape.splice(ro + 1..ro + 2, [g, o / g]);
            let split = lax::reshape(&moved, &shape)?;
            let swapped = moveaxis(&split, ro, ro + 1)?;
            shape.splice(ro..ro + 3, [n * o]);
            let rhs = lax::reshape(&swapped, &shape)?;
            let out = bind1(p, &[x[0].clone(), rhs])?;
            // out features (G, n, O/G) -> (n, G, O/G) -> [n, O].
            let mut oshape = out.try_shape()?;
            oshape.splice(of..of + 1, [g, n, o / g]);
            let out = moveaxis(&lax::reshape(&out, &oshape)?, of + 1, of)?;
            oshape.splice(of..of + 3, [n, o]);
            Ok((vec![lax::reshape(&out, &oshape)?], vec![Some(of)]))
        }
        _ => {
            let lhs = merge_into(&to_front(&x[0], d[0], n)?, lf)?;
            let rhs = merge_into(&to_front(&x[1], d[1], n)?, ro)?;
            let q: Primitive = ConvGeneralDilatedParams {
                feature_group_count: n * g,
                ..cp.clone()
            }
            .into();
            let out = bind1(&q, &[lhs, rhs])?;
            Ok((vec![split_out(&out, of, n)?], vec![Some(of)]))
        }
    }
}
