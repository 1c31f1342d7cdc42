//! Shape rules of the contractions: `dot_general` and
//! `conv_general_dilated`.

use super::{fmt_ty, Cx};
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::ConvGeneralDilatedParams;
use crate::primitive::DotDimensionNumbers;

fn distinct(cx: &Cx, what: &str, dims: &[usize], x: &ShapedArray) -> Result<(), IrError> {
    for (i, &d) in dims.iter().enumerate() {
        if d >= x.ndim() || dims[..i].contains(&d) {
            return Err(cx.err(format!(
                "{what} {dims:?} must be distinct and in range for {}",
                fmt_ty(x)
            )));
        }
    }
    Ok(())
}

fn result_dtype(
    cx: &Cx,
    lhs: &ShapedArray,
    rhs: &ShapedArray,
    preferred: Option<DType>,
) -> Result<DType, IrError> {
    if lhs.dtype != rhs.dtype && preferred.is_none() {
        return Err(cx.err(format!(
            "operand types must match, got {} and {}",
            fmt_ty(lhs),
            fmt_ty(rhs)
        )));
    }
    Ok(preferred.unwrap_or(lhs.dtype))
}

/// `dot_general lhs rhs`: batch dims, then lhs free dims, then rhs free dims.
pub(crate) fn dot_general(
    cx: &Cx,
    dn: &DotDimensionNumbers,
    preferred: Option<DType>,
) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (lhs, rhs) = (cx.arr(0)?, cx.arr(1)?);
    if dn.lhs_batch.len() != dn.rhs_batch.len()
        || dn.lhs_contracting.len() != dn.rhs_contracting.len()
    {
        return Err(cx.err(format!(
            "batch and contracting dimensions must come in pairs, got {dn:?} for {} and {}",
            fmt_ty(lhs),
            fmt_ty(rhs)
        )));
    }
    let lhs_all: Vec<usize> = dn
        .lhs_batch
        .iter()
        .chain(&dn.lhs_contracting)
        .copied()
        .collect();
    let rhs_all: Vec<usize> = dn
        .rhs_batch
        .iter()
        .chain(&dn.rhs_contracting)
        .copied()
        .collect();
    distinct(cx, "lhs batch and contracting dimensions", &lhs_all, lhs)?;
    distinct(cx, "rhs batch and contracting dimensions", &rhs_all, rhs)?;
    for (&l, &r) in lhs_all.iter().zip(&rhs_all) {
        if lhs.shape[l] != rhs.shape[r] {
            return Err(cx.err(format!(
                "batch and contracting dimension sizes must match, got lhs dimension {l} of {} and rhs dimension {r} of {}",
                fmt_ty(lhs),
                fmt_ty(rhs)
            )));
        }
    }
    let dtype = result_dtype(cx, lhs, rhs, preferred)?;
    let mut shape: Vec<Dim> = dn.lhs_batch.iter().map(|&d| lhs.shape[d]).collect();
    shape.extend(
        (0..lhs.ndim())
            .filter(|d| !lhs_all.contains(d))
            .map(|d| lhs.shape[d]),
    );
    shape.extend(
        (0..rhs.ndim())
            .filter(|d| !rhs_all.contains(d))
            .map(|d| rhs.shape[d]),
    );
    Ok(ShapedArray::new(dtype, shape))
}

/// `fft[fft_type fft_lengths] x`: the trailing `fft_lengths.len()` axes
/// are transformed; RFFT keeps `n/2 + 1` of the last, IRFFT restores `n`.
pub(crate) fn fft(cx: &Cx, p: &crate::primitive::FftParams) -> Result<ShapedArray, IrError> {
    use crate::primitive::FftType;
    cx.arity(1)?;
    let x = cx.arr(0)?;
    let nd = p.fft_lengths.len();
    if nd == 0 || nd > 3 || nd > x.ndim() {
        return Err(cx.err(format!(
            "fft_lengths {:?} must name 1 to 3 trailing axes of {}",
            p.fft_lengths,
            fmt_ty(x)
        )));
    }
    let (ok, dtype) = match p.fft_type {
        FftType::Fft | FftType::Ifft => (x.dtype.is_complex(), x.dtype),
        FftType::Rfft => (
            x.dtype.is_float() && x.dtype.complex_dtype().is_some(),
            x.dtype.complex_dtype().unwrap_or(x.dtype),
        ),
        FftType::Irfft => (x.dtype.is_complex(), x.dtype.real_dtype()),
    };
    if !ok {
        return Err(cx.err(format!("{:?} does not accept {}", p.fft_type, fmt_ty(x))));
    }
    let first = x.ndim() - nd;
    let mut shape = x.shape.clone();
    for (k, &n) in p.fft_lengths.iter().enumerate() {
        let last = k + 1 == nd;
        let want = if last && p.fft_type == FftType::Irfft {
            n / 2 + 1
        } else {
            n
        };
        if shape[first + k].as_const() != Some(want) {
            return Err(cx.err(format!(
                "fft_lengths {:?} do not match {}",
                p.fft_lengths,
                fmt_ty(x)
            )));
        }
        if last {
            shape[first + k] = Dim::Const(match p.fft_type {
                FftType::Rfft => n / 2 + 1,
                _ => n,
            });
        }
    }
    Ok(ShapedArray::new(dtype, shape))
}

fn static_dim(cx: &Cx, x: &ShapedArray, i: usize) -> Result<i64, IrError> {
    x.shape[i].as_const().map(|n| n as i64).ok_or_else(|| {
        cx.err(format!(
            "dynamic dimensions are not supported, got {}",
            fmt_ty(x)
        ))
    })
}

/// `conv_general_dilated lhs rhs`.
pub(crate) fn conv(cx: &Cx, p: &ConvGeneralDilatedParams) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (lhs, rhs) = (cx.arr(0)?, cx.arr(1)?);
    let n = lhs.ndim();
    let ns = n.saturating_sub(2);
    let dn = &p.dimension_numbers;
    let spec_ok = |s: &[usize]| {
        s.len() == n && {
            let mut seen = vec![false; n];
            s.iter()
                .all(|&d| d < n && !std::mem::replace(&mut seen[d], true))
        }
    };
    if n < 2
        || rhs.ndim() != n
        || !spec_ok(&dn.lhs_spec)
        || !spec_ok(&dn.rhs_spec)
        || !spec_ok(&dn.out_spec)
    {
        return Err(cx.err(format!(
            "conv requires lhs and rhs of equal rank >= 2 and dimension numbers that are permutations of it, got {} and {}",
            fmt_ty(lhs),
            fmt_ty(rhs)
        )));
    }
    let ones = vec![1usize; ns];
    let lhs_dil = if p.lhs_dilation.is_empty() {
        &ones[..]
    } else {
        &p.lhs_dilation[..]
    };
    let rhs_dil = if p.rhs_dilation.is_empty() {
        &ones[..]
    } else {
        &p.rhs_dilation[..]
    };
    let strides = if p.window_strides.is_empty() {
        &ones[..]
    } else {
        &p.window_strides[..]
    };
    if strides.len() != ns || p.padding.len() != ns || lhs_dil.len() != ns || rhs_dil.len() != ns {
        return Err(cx.err(format!(
            "window_strides, padding, lhs_dilation and rhs_dilation must have {ns} entries (the spatial rank)"
        )));
    }
    if strides
        .iter()
        .chain(lhs_dil)
        .chain(rhs_dil)
        .any(|&s| s == 0)
    {
        return Err(cx.err("strides and dilations must be positive"));
    }
    let (fg, bg) = (p.feature_group_count, p.batch_group_count);
    if fg == 0 || bg == 0 || (fg > 1 && bg > 1) {
        return Err(cx.err(format!(
            "invalid feature_group_count {fg} / batch_group_count {bg}"
        )));
    }
    let lhs_batch = static_dim(cx, lhs, dn.lhs_spec[0])?;
    let lhs_feat = static_dim(cx, lhs, dn.lhs_spec[1])?;
    let rhs_out = static_dim(cx, rhs, dn.rhs_spec[0])?;
    let rhs_in = static_dim(cx, rhs, dn.rhs_spec[1])?;
    let bad = lhs_feat != rhs_in * fg as i64
        || rhs_out % fg as i64 != 0
        || rhs_out % bg as i64 != 0
        || lhs_batch % bg as i64 != 0;
    if bad {
        return Err(cx.err(format!(
            "feature or batch dimensions are inconsistent with feature_group_count={fg} and batch_group_count={bg}, got lhs {} and rhs {}",
            fmt_ty(lhs),
            fmt_ty(rhs)
        )));
    }
    let dtype = result_dtype(cx, lhs, rhs, p.preferred_element_type)?;
    let mut out = vec![Dim::Const(0); n];
    out[dn.out_spec[0]] = Dim::Const((lhs_batch / bg as i64) as usize);
    out[dn.out_spec[1]] = Dim::Const(rhs_out as usize);
    for i in 0..ns {
        let inp = static_dim(cx, lhs, dn.lhs_spec[2 + i])?;
        let k = static_dim(cx, rhs, dn.rhs_spec[2 + i])?;
        let inp_d = if inp == 0 {
            0
        } else {
            (inp - 1) * lhs_dil[i] as i64 + 1
        };
        let k_d = if k == 0 {
            0
        } else {
            (k - 1) * rhs_dil[i] as i64 + 1
        };
        let padded = inp_d + p.padding[i].0 + p.padding[i].1;
        let size = if padded < k_d {
            0
        } else {
            (padded - k_d) / strides[i] as i64 + 1
        };
        if padded < 0 {
            return Err(cx.err(format!(
                "negative padding {:?} exceeds spatial dimension of {}",
                p.padding[i],
                fmt_ty(lhs)
            )));
        }
        out[dn.out_spec[2 + i]] = Dim::Const(size as usize);
    }
    Ok(ShapedArray::new(dtype, out))
}
