//! `sort` (several operands, lexicographic keys, NaNs last) and `top_k`.

use super::{check_axis, lift, lower, strides, take, Lifted};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use std::cmp::Ordering;

/// JAX's sort order for floats: NaNs (of either sign) last and equal, and
/// `-0 == +0`.
fn cmp_float<T: PartialOrd>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)]
    let (an, bn) = (a != a, b != b);
    match (an, bn) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn cmp_at(l: &Lifted, i: usize, j: usize) -> Ordering {
    match l {
        Lifted::B(v) => v[i].cmp(&v[j]),
        Lifted::I(v) => v[i].cmp(&v[j]),
        Lifted::U(v) => v[i].cmp(&v[j]),
        Lifted::F32(v) => cmp_float(v[i], v[j]),
        Lifted::F64(v) => cmp_float(v[i], v[j]),
        // Lexicographic, real part first, as XLA sorts complex numbers.
        Lifted::C(v) => cmp_float(v[i].re, v[j].re).then(cmp_float(v[i].im, v[j].im)),
    }
}

/// The line starts along `axis` of `shape`, its length and stride.
fn lines(shape: &[usize], axis: usize) -> (Vec<usize>, usize, usize) {
    let st = strides(shape);
    let mut other = shape.to_vec();
    other[axis] = 1;
    let sti: Vec<isize> = st.iter().map(|&s| s as isize).collect();
    (super::affine_map(&other, 0, &sti), shape[axis], st[axis])
}

/// `sort`: sorts every operand along `dimension` by the first `num_keys`
/// operands (lexicographically, stably).
pub(crate) fn sort(
    args: &[HostArray],
    dimension: usize,
    num_keys: usize,
) -> Result<Vec<HostArray>, IrError> {
    let name = "sort";
    let x0 = args
        .first()
        .ok_or_else(|| IrError::ty(name, "needs at least one operand"))?;
    check_axis(name, dimension, x0.ndim())?;
    if num_keys == 0 || num_keys > args.len() {
        return Err(IrError::ty(
            name,
            format!("num_keys {num_keys} for {} operands", args.len()),
        ));
    }
    for a in args {
        if a.shape() != x0.shape() {
            return Err(IrError::ty(
                name,
                format!("operand shapes {:?} and {:?}", x0.shape(), a.shape()),
            ));
        }
    }
    let keys: Vec<Lifted> = args[..num_keys].iter().map(|a| lift(a.data())).collect();
    let (starts, len, st) = lines(x0.shape(), dimension);
    let mut idx = vec![0usize; x0.len()];
    let mut perm: Vec<usize> = Vec::with_capacity(len);
    for &s in &starts {
        perm.clear();
        perm.extend(0..len);
        perm.sort_by(|&a, &b| {
            let (i, j) = (s + a * st, s + b * st);
            keys.iter()
                .map(|k| cmp_at(k, i, j))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        });
        for (k, &p) in perm.iter().enumerate() {
            idx[s + k * st] = s + p * st;
        }
    }
    args.iter()
        .map(|a| HostArray::new(a.shape().to_vec(), take(a.data(), &idx)))
        .collect()
}

/// A key whose integer order is the IEEE total order of the float.
fn total_key_f64(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    if b < 0 {
        b ^ i64::MAX
    } else {
        b
    }
}

fn total_key_f32(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    (if b < 0 { b ^ i32::MAX } else { b }) as i64
}

/// `top_k`: the `k` largest along `axis` (descending, ties by lower index)
/// and their i32 indices. Floats use the total order (+NaN largest).
pub(crate) fn top_k(x: &HostArray, k: usize, axis: usize) -> Result<Vec<HostArray>, IrError> {
    let name = "top_k";
    check_axis(name, axis, x.ndim())?;
    if k > x.shape()[axis] {
        return Err(IrError::ty(
            name,
            format!("k={k} larger than axis {axis} of {:?}", x.shape()),
        ));
    }
    let l = lift(x.data());
    let (starts, len, st) = lines(x.shape(), axis);
    let mut out_shape = x.shape().to_vec();
    out_shape[axis] = k;
    let ost = strides(&out_shape)[axis];
    let (ostarts, _, _) = lines(&out_shape, axis);
    let n_out: usize = out_shape.iter().product();
    let mut src = vec![0usize; n_out];
    let mut pos = vec![0i64; n_out];
    let mut perm: Vec<usize> = Vec::with_capacity(len);
    for (&s, &os) in starts.iter().zip(&ostarts) {
        perm.clear();
        perm.extend(0..len);
        perm.sort_by(|&a, &b| {
            let (i, j) = (s + a * st, s + b * st);
            // Descending.
            match &l {
                Lifted::B(v) => v[j].cmp(&v[i]),
                Lifted::I(v) => v[j].cmp(&v[i]),
                Lifted::U(v) => v[j].cmp(&v[i]),
                Lifted::F32(v) => total_key_f32(v[j]).cmp(&total_key_f32(v[i])),
                Lifted::F64(v) => total_key_f64(v[j]).cmp(&total_key_f64(v[i])),
                Lifted::C(v) => total_key_f64(v[j].re)
                    .cmp(&total_key_f64(v[i].re))
                    .then(total_key_f64(v[j].im).cmp(&total_key_f64(v[i].im))),
            }
        });
        for (q, &p) in perm.iter().take(k).enumerate() {
            src[os + q * ost] = s + p * st;
            pos[os + q * ost] = p as i64;
        }
    }
    let values = HostArray::new(out_shape.clone(), take(x.data(), &src))?;
    let indices = HostArray::new(out_shape, lower(Lifted::I(pos), DType::I32))?;
    let _: Option<Storage> = None;
    Ok(vec![values, indices])
}
