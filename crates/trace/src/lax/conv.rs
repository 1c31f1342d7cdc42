//! `lax.conv_general_dilated` and `lax.conv`: the convolution primitive
//! with JAX's argument conventions, padding given as `SAME`/`VALID` or
//! explicit `(low, high)` pairs, and layouts as strings (`"NHWC"`,
//! `"HWIO"`, `"NHWC"`).
//!
//! Padding strings resolve as JAX's `padtype_to_pads` does: from the
//! input's spatial sizes, the kernel's dilated window and the strides
//! (input dilation is not taken into account, as in JAX).

use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use jaxon_ir::primitive::{ConvDimensionNumbers, ConvGeneralDilatedParams};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{DType, Primitive};

/// How a convolution pads its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Padding {
    /// `"SAME"`: the output has `ceil(in / stride)` positions; an odd total
    /// pad puts the extra element at the end.
    Same,
    /// `"SAME_LOWER"`: as `Same`, the extra element at the start.
    SameLower,
    /// `"VALID"`: no padding.
    Valid,
    /// `(low, high)` per spatial dimension; negative values crop.
    Explicit(Vec<(i64, i64)>),
}

/// The options of [`conv_general_dilated`] past strides and padding, with
/// JAX's defaults (no dilation, `NCHW`/`OIHW`/`NCHW` order, one group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvOptions {
    /// Input (transposed-convolution) dilation per spatial dimension.
    pub lhs_dilation: Option<Vec<usize>>,
    /// Kernel (atrous) dilation per spatial dimension.
    pub rhs_dilation: Option<Vec<usize>>,
    /// The layouts of input, kernel and output, as JAX's strings: the
    /// input and output use `N`, `C` and a letter per spatial dimension,
    /// the kernel `O`, `I` and the same spatial letters.
    pub dimension_numbers: Option<(String, String, String)>,
    /// Groups of input features (depthwise: the number of input features).
    pub feature_group_count: usize,
    /// Groups of the batch (for the kernel gradient of grouped convs).
    pub batch_group_count: usize,
    /// The result dtype, when not the operands'.
    pub preferred_element_type: Option<DType>,
}

impl Default for ConvOptions {
    fn default() -> ConvOptions {
        ConvOptions {
            lhs_dilation: None,
            rhs_dilation: None,
            dimension_numbers: None,
            feature_group_count: 1,
            batch_group_count: 1,
            preferred_element_type: None,
        }
    }
}

fn invalid(m: String) -> Error {
    Error::InvalidArgument(format!("conv_general_dilated: {m}"))
}

/// The dimension numbers of layout strings (JAX's
/// `conv_general_permutations`): batch and feature first, then the
/// spatial dimensions in the kernel layout's order.
pub fn conv_dimension_numbers(lhs: &str, rhs: &str, out: &str) -> Result<ConvDimensionNumbers> {
    let (l, r, o): (Vec<char>, Vec<char>, Vec<char>) = (
        lhs.chars().collect(),
        rhs.chars().collect(),
        out.chars().collect(),
    );
    if l.len() != r.len() || l.len() != o.len() || l.len() < 2 {
        return Err(invalid(format!(
            "layouts {lhs:?}, {rhs:?} and {out:?} must have one rank, at least 2"
        )));
    }
    let spatial_of_rhs: Vec<char> = r.iter().copied().filter(|c| !"OI".contains(*c)).collect();
    let perm = |spec: &[char], name: &str, pair: [char; 2]| -> Result<Vec<usize>> {
        let pos = |c: char| spec.iter().position(|&x| x == c);
        let (Some(a), Some(b)) = (pos(pair[0]), pos(pair[1])) else {
            return Err(invalid(format!(
                "layout {name:?} lacks {} or {}",
                pair[0], pair[1]
            )));
        };
        let mut p = vec![a, b];
        for c in &spatial_of_rhs {
            match pos(*c) {
                Some(i) if !pair.contains(c) => p.push(i),
                _ => {
                    return Err(invalid(format!(
                        "layout {name:?} lacks the kernel's spatial dimension {c}"
                    )))
                }
            }
        }
        let mut seen = p.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != spec.len() {
            return Err(invalid(format!(
                "layout {name:?} does not name each dimension once"
            )));
        }
        Ok(p)
    };
    Ok(ConvDimensionNumbers {
        lhs_spec: perm(&l, lhs, ['N', 'C'])?,
        rhs_spec: perm(&r, rhs, ['O', 'I'])?,
        out_spec: perm(&o, out, ['N', 'C'])?,
    })
}

/// `(low, high)` padding of each spatial dimension for a padding string
/// (JAX's `padtype_to_pads`).
pub(super) fn pads(
    padding: &Padding,
    input: &[usize],
    window: &[usize],
    strides: &[usize],
) -> Vec<(i64, i64)> {
    let total = |k: usize| -> i64 {
        let out = input[k].div_ceil(strides[k]) as i64;
        ((out - 1) * strides[k] as i64 + window[k] as i64 - input[k] as i64).max(0)
    };
    let n = input.len();
    match padding {
        Padding::Explicit(p) => p.clone(),
        Padding::Valid => vec![(0, 0); n],
        Padding::Same => (0..n)
            .map(|k| (total(k) / 2, total(k) - total(k) / 2))
            .collect(),
        Padding::SameLower => (0..n)
            .map(|k| (total(k) - total(k) / 2, total(k) / 2))
            .collect(),
    }
}

/// `lax.conv_general_dilated(lhs, rhs, window_strides, padding, ...)`.
pub fn conv_general_dilated(
    lhs: &Array,
    rhs: &Array,
    window_strides: &[usize],
    padding: Padding,
    options: ConvOptions,
) -> Result<Array> {
    let (ls, rs) = (lhs.try_shape()?, rhs.try_shape()?);
    let dn = match &options.dimension_numbers {
        Some((l, r, o)) => conv_dimension_numbers(l, r, o)?,
        None => {
            let id: Vec<usize> = (0..ls.len()).collect();
            ConvDimensionNumbers {
                lhs_spec: id.clone(),
                rhs_spec: id.clone(),
                out_spec: id,
            }
        }
    };
    if ls.len() != rs.len() || ls.len() != dn.lhs_spec.len() || ls.len() < 2 {
        return Err(Error::ShapeMismatch {
            op: "conv_general_dilated (ranks)".into(),
            lhs: fmt_aval(lhs.aval()),
            rhs: fmt_aval(rhs.aval()),
        });
    }
    let nsp = ls.len() - 2;
    let ones = vec![1; nsp];
    let lhs_dilation = options.lhs_dilation.unwrap_or_else(|| ones.clone());
    let rhs_dilation = options.rhs_dilation.unwrap_or_else(|| ones.clone());
    for (name, v) in [
        ("window_strides", window_strides),
        ("lhs_dilation", &lhs_dilation[..]),
        ("rhs_dilation", &rhs_dilation[..]),
    ] {
        if v.len() != nsp || v.contains(&0) {
            return Err(invalid(format!(
                "{name} {v:?} must have {nsp} positive entries, one per spatial dimension"
            )));
        }
    }
    if let Padding::Explicit(p) = &padding {
        if p.len() != nsp {
            return Err(invalid(format!(
                "padding {p:?} must have {nsp} (low, high) pairs"
            )));
        }
    }
    let input: Vec<usize> = dn.lhs_spec[2..].iter().map(|&d| ls[d]).collect();
    let window: Vec<usize> = dn.rhs_spec[2..]
        .iter()
        .zip(&rhs_dilation)
        .map(|(&d, &r)| if rs[d] == 0 { 0 } else { 1 + r * (rs[d] - 1) })
        .collect();
    let padding = pads(&padding, &input, &window, window_strides);
    bind1(
        &Primitive::from(ConvGeneralDilatedParams {
            window_strides: window_strides.to_vec(),
            padding,
            lhs_dilation,
            rhs_dilation,
            dimension_numbers: dn,
            feature_group_count: options.feature_group_count,
            batch_group_count: options.batch_group_count,
            precision: None,
            preferred_element_type: options.preferred_element_type,
        }),
        &[lhs.clone(), rhs.clone()],
    )
}

/// `lax.conv(lhs, rhs, window_strides, padding)`: `NCHW` input, `OIHW`
/// kernel, no dilation, one group.
pub fn conv(lhs: &Array, rhs: &Array, window_strides: &[usize], padding: Padding) -> Result<Array> {
    conv_general_dilated(lhs, rhs, window_strides, padding, ConvOptions::default())
}

/// The `(low, high)` padding of a transposed convolution over a kernel of
/// dilated size `k` with stride `s`, for `SAME` or `VALID` (JAX's
/// `_conv_transpose_padding`).
fn transpose_pads(k: usize, s: usize, same: bool) -> (i64, i64) {
    let (k, s) = (k as i64, s as i64);
    let (len, low) = if same {
        let len = k + s - 2;
        (len, if s > k - 1 { k - 1 } else { (len + 1) / 2 })
    } else {
        (k + s - 2 + (k - s).max(0), k - 1)
    };
    (low, len - low)
}

/// `lax.conv_transpose(lhs, rhs, strides, padding, rhs_dilation,
/// dimension_numbers, transpose_kernel)`: the transposed ("deconvolution")
/// convolution, as JAX builds it: a `conv_general_dilated` with unit
/// window strides and the input dilated by `strides`. `SAME`/`VALID`
/// padding is chosen so that the output has `in * stride` (`SAME`) or
/// `in * stride + max(k - stride, 0)` (`VALID`) positions; explicit pairs
/// pass through. The default layouts are JAX's: `NC`/`IO`/`NC`,
/// `NHC`/`HIO`/`NHC`, `NHWC`/`HWIO`/`NHWC`, `NHWDC`/`HWDIO`/`NHWDC`. With
/// `transpose_kernel` the kernel's spatial axes are flipped and its `O`/`I`
/// axes swapped, which makes the result the gradient of the forward
/// convolution with respect to its input.
pub fn conv_transpose(
    lhs: &Array,
    rhs: &Array,
    strides: &[usize],
    padding: Padding,
    rhs_dilation: Option<Vec<usize>>,
    dimension_numbers: Option<(String, String, String)>,
    transpose_kernel: bool,
) -> Result<Array> {
    let err = |m: String| Error::InvalidArgument(format!("conv_transpose: {m}"));
    let (ls, rs) = (lhs.try_shape()?, rhs.try_shape()?);
    if ls.len() != rs.len() || ls.len() < 2 {
        return Err(err(format!(
            "operands of ranks {} and {} (one rank, at least 2)",
            ls.len(),
            rs.len()
        )));
    }
    let nsp = ls.len() - 2;
    let dims = match dimension_numbers {
        Some(d) => d,
        None => {
            let (l, r) = match nsp {
                0 => ("NC", "IO"),
                1 => ("NHC", "HIO"),
                2 => ("NHWC", "HWIO"),
                3 => ("NHWDC", "HWDIO"),
                _ => return Err(err(format!("no default layouts for rank {}", ls.len()))),
            };
            (l.to_string(), r.to_string(), l.to_string())
        }
    };
    let dn = conv_dimension_numbers(&dims.0, &dims.1, &dims.2)?;
    if dn.rhs_spec.len() != rs.len() {
        return Err(err(format!(
            "layout {:?} does not fit rank {}",
            dims.1,
            rs.len()
        )));
    }
    let rd = rhs_dilation.clone().unwrap_or_else(|| vec![1; nsp]);
    if strides.len() != nsp || rd.len() != nsp || strides.contains(&0) || rd.contains(&0) {
        return Err(err(format!(
            "strides {strides:?} and rhs_dilation {rd:?} need {nsp} positive entries"
        )));
    }
    let pads = match padding {
        Padding::Same | Padding::Valid => (0..nsp)
            .map(|i| {
                let k = rs[dn.rhs_spec[2 + i]];
                let dilated = if k == 0 { 0 } else { 1 + rd[i] * (k - 1) };
                transpose_pads(dilated, strides[i], padding == Padding::Same)
            })
            .collect(),
        Padding::Explicit(p) => p,
        Padding::SameLower => {
            return Err(err("padding must be SAME, VALID or explicit pairs".into()))
        }
    };
    let rhs = if transpose_kernel {
        let flipped = super::rev(rhs, &dn.rhs_spec[2..])?;
        let mut perm: Vec<usize> = (0..rs.len()).collect();
        perm.swap(dn.rhs_spec[0], dn.rhs_spec[1]);
        super::transpose(&flipped, &perm)?
    } else {
        rhs.clone()
    };
    conv_general_dilated(
        lhs,
        &rhs,
        &vec![1; nsp],
        Padding::Explicit(pads),
        ConvOptions {
            lhs_dilation: Some(strides.to_vec()),
            rhs_dilation,
            dimension_numbers: Some(dims),
            ..ConvOptions::default()
        },
    )
}
