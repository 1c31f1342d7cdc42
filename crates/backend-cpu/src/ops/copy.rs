//! Fills and data movement that are not affine reads of one operand, so
//! the loop kernels cannot fuse them: `iota`, `pad` (with negative and
//! interior padding), `concatenate` and `split`. Each writes a fresh
//! output in one pass; no interpreter is involved.

use crate::error::run_error;
use crate::ops::typed::{elems, with_type, Typed};
use jaxon_ir::{DType, HostArray, IrError, Storage};

/// Copies every element of `src` to `dst[offset(i)]` where `i` is its
/// multi-index; elements whose offset is `None` are dropped.
fn place(
    src: &HostArray,
    dst: &mut HostArray,
    offset: &dyn Fn(&[usize]) -> Option<usize>,
) -> Result<(), IrError> {
    let shape = src.shape().to_vec();
    let n = src.len();
    let mut idx = vec![0usize; shape.len()];
    let mut targets = Vec::with_capacity(n);
    for _ in 0..n {
        targets.push(offset(&idx));
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    macro_rules! go {
        ($($v:ident),*) => {
            match (src.data(), dst.data_mut()) {
                $((Storage::$v(s), Storage::$v(d)) => {
                    for (x, t) in s.iter().zip(&targets) {
                        if let Some(t) = t {
                            if let Some(slot) = d.get_mut(*t) {
                                *slot = *x;
                            }
                        }
                    }
                })*
                _ => {
                    return Err(run_error(format!(
                        "copy from {} into {}",
                        src.dtype(),
                        dst.dtype()
                    )))
                }
            }
        };
    }
    go!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, C64, C128);
    Ok(())
}

/// An array of `shape` filled with the single element of `value`.
fn filled(value: &HostArray, shape: &[usize]) -> Result<HostArray, IrError> {
    let n: usize = shape.iter().product();
    macro_rules! fill {
        ($($v:ident),*) => {
            match value.data() {
                $(Storage::$v(s) => Storage::$v(vec![
                    *s.first().ok_or_else(|| run_error("empty pad value"))?;
                    n
                ]),)*
            }
        };
    }
    let data =
        fill!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, C64, C128, Key);
    HostArray::new(shape.to_vec(), data)
}

/// `pad[padding_config] x value`: `(low, high, interior)` per dimension.
pub(crate) fn pad(
    x: &HostArray,
    value: &HostArray,
    config: &[(i64, i64, i64)],
    out_shape: &[usize],
) -> Result<HostArray, IrError> {
    let mut out = filled(value, out_shape)?;
    let mut st = vec![1usize; out_shape.len()];
    for d in (0..out_shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * out_shape[d + 1];
    }
    place(x, &mut out, &|i| {
        let mut off = 0usize;
        for (d, &k) in i.iter().enumerate() {
            let (lo, _, interior) = config[d];
            let t = lo + k as i64 * (interior + 1);
            if t < 0 || t >= out_shape[d] as i64 {
                return None;
            }
            off += t as usize * st[d];
        }
        Some(off)
    })?;
    Ok(out)
}

/// `concatenate[dimension=dim]` into `out_shape`: per outer index, one
/// contiguous chunk of each operand in turn.
pub(crate) fn concatenate(
    xs: &[&HostArray],
    dim: usize,
    out_shape: &[usize],
) -> Result<HostArray, IrError> {
    let first = xs
        .first()
        .ok_or_else(|| run_error("concatenate of nothing"))?;
    let dt = first.dtype();
    let inner: usize = out_shape.get(dim + 1..).map_or(0, |s| s.iter().product());
    let outer: usize = out_shape[..dim.min(out_shape.len())].iter().product();
    let mut total = 0;
    for x in xs {
        let same = x.ndim() == out_shape.len()
            && x.dtype() == dt
            && (0..x.ndim()).all(|d| d == dim || x.shape()[d] == out_shape[d]);
        if !same || dim >= out_shape.len() {
            return Err(run_error(format!(
                "concatenate of {}{:?} into {out_shape:?} along {dim}",
                x.dtype(),
                x.shape()
            )));
        }
        total += x.shape()[dim];
    }
    if total != out_shape[dim] {
        return Err(run_error(format!(
            "concatenate: sizes along {dim} sum to {total}, not {}",
            out_shape[dim]
        )));
    }
    let data = with_type!(dt, T => {
        let parts = xs
            .iter()
            .map(|x| Ok((elems::<T>(x.data(), dt, "concatenate")?, x.shape()[dim] * inner)))
            .collect::<Result<Vec<_>, IrError>>()?;
        let mut out: Vec<T> = Vec::with_capacity(outer * out_shape[dim] * inner);
        for o in 0..outer {
            for (v, c) in &parts {
                out.extend_from_slice(&v[o * c..(o + 1) * c]);
            }
        }
        T::wrap(out)
    });
    HostArray::new(out_shape.to_vec(), data)
}

/// `split[axis sizes] x`: consecutive pieces of `x` along `axis`.
pub(crate) fn split(
    x: &HostArray,
    axis: usize,
    sizes: &[usize],
) -> Result<Vec<HostArray>, IrError> {
    if axis >= x.ndim() || sizes.iter().sum::<usize>() != x.shape()[axis] {
        return Err(run_error(format!(
            "split of {:?} into {sizes:?} along {axis}",
            x.shape()
        )));
    }
    let mut outs = Vec::with_capacity(sizes.len());
    let mut start = 0usize;
    for &size in sizes {
        let mut shape = x.shape().to_vec();
        shape[axis] = size;
        let mut out = HostArray::zeros(x.dtype(), &shape);
        let mut st = vec![1usize; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            st[d] = st[d + 1] * shape[d + 1];
        }
        place(x, &mut out, &|i| {
            let k = i[axis];
            if k < start || k >= start + size {
                return None;
            }
            Some(
                i.iter()
                    .enumerate()
                    .map(|(d, &j)| (if d == axis { j - start } else { j }) * st[d])
                    .sum(),
            )
        })?;
        outs.push(out);
        start += size;
    }
    Ok(outs)
}

/// `iota[dtype, dimension]` of `shape`.
pub(crate) fn iota(dtype: DType, shape: &[usize], dimension: usize) -> Result<HostArray, IrError> {
    let size = *shape
        .get(dimension)
        .ok_or_else(|| run_error(format!("iota of {shape:?} along {dimension}")))?;
    let inner: usize = shape[dimension + 1..].iter().product();
    let n: usize = shape.iter().product();
    let data = with_type!(dtype, T => {
        T::wrap((0..n).map(|i| T::of_index((i / inner.max(1)) % size.max(1))).collect())
    });
    HostArray::new(shape.to_vec(), data)
}
