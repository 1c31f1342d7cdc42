//! `sort` (several operands, lexicographic keys, NaNs last, stable) and
//! `top_k` (descending in IEEE total order, ties to the lower index).

use super::{map_same, strides, Elem, NativeOp};
use crate::error::run_error;
use crate::error::CpuError;
use jaxon_ir::{with_storage, HostArray, IrError, Storage};
use std::cmp::Ordering;

type Cmp<'a> = Box<dyn Fn(usize, usize) -> Ordering + 'a>;

fn sort_key(s: &Storage) -> Cmp<'_> {
    with_storage!(s, v => Box::new(move |i: usize, j: usize| Elem::sort_cmp(v[i], v[j])) as Cmp<'_>)
}

fn desc_key(s: &Storage) -> Cmp<'_> {
    with_storage!(s, v => Box::new(move |i: usize, j: usize| Elem::total_cmp(v[j], v[i])) as Cmp<'_>)
}

/// The start offsets of the lines along `axis`, their length and stride.
fn lines(shape: &[usize], axis: usize) -> (Vec<usize>, usize, usize) {
    let st = strides(shape);
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut starts = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            starts.push(o * len * inner + i);
        }
    }
    (starts, len, st[axis])
}

fn take(s: &Storage, idx: &[usize]) -> Storage {
    map_same!(s, v => idx.iter().map(|&i| v[i]).collect())
}

/// `sort[dimension num_keys]`.
#[derive(Debug)]
pub(crate) struct Sort {
    shape: Vec<usize>,
    dimension: usize,
    num_keys: usize,
}

impl Sort {
    pub(crate) fn new(
        ins: &[Vec<usize>],
        dimension: usize,
        num_keys: usize,
    ) -> Result<Sort, CpuError> {
        let shape = ins.first().ok_or("needs an operand")?;
        if dimension >= shape.len() || num_keys == 0 || num_keys > ins.len() {
            return Err(format!("dimension {dimension}, num_keys {num_keys}").into());
        }
        if ins.iter().any(|s| s != shape) {
            return Err("operand shapes differ".into());
        }
        Ok(Sort {
            shape: shape.clone(),
            dimension,
            num_keys,
        })
    }
}

impl NativeOp for Sort {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let keys: Vec<Cmp> = inputs[..self.num_keys.min(inputs.len())]
            .iter()
            .map(|a| sort_key(a.data()))
            .collect();
        let (starts, len, st) = lines(&self.shape, self.dimension);
        let n: usize = self.shape.iter().product();
        let mut idx = vec![0usize; n];
        let mut perm: Vec<usize> = Vec::with_capacity(len);
        for &s in &starts {
            perm.clear();
            perm.extend((0..len).map(|k| s + k * st));
            perm.sort_by(|&i, &j| {
                keys.iter()
                    .map(|k| k(i, j))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            });
            for (k, &p) in perm.iter().enumerate() {
                idx[s + k * st] = p;
            }
        }
        inputs
            .iter()
            .map(|a| HostArray::new(self.shape.clone(), take(a.data(), &idx)))
            .collect()
    }
}

/// `top_k[k axis]`: values and i32 indices.
#[derive(Debug)]
pub(crate) struct TopK {
    shape: Vec<usize>,
    k: usize,
    axis: usize,
}

impl TopK {
    pub(crate) fn new(ins: &[Vec<usize>], k: usize, axis: usize) -> Result<TopK, CpuError> {
        let [shape] = ins else {
            return Err("takes one operand".into());
        };
        if axis >= shape.len() || k > shape[axis] {
            return Err(format!("k={k} along axis {axis} of {shape:?}").into());
        }
        Ok(TopK {
            shape: shape.clone(),
            k,
            axis,
        })
    }
}

impl NativeOp for TopK {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(run_error("top_k takes one operand"));
        };
        let key = desc_key(x.data());
        let (starts, len, st) = lines(&self.shape, self.axis);
        let mut out_shape = self.shape.clone();
        out_shape[self.axis] = self.k;
        let (ostarts, _, ost) = lines(&out_shape, self.axis);
        let n: usize = out_shape.iter().product();
        let mut src = vec![0usize; n];
        let mut pos = vec![0i32; n];
        let mut perm: Vec<usize> = Vec::with_capacity(len);
        for (&s, &os) in starts.iter().zip(&ostarts) {
            perm.clear();
            perm.extend(0..len);
            perm.sort_by(|&a, &b| key(s + a * st, s + b * st));
            for (q, &p) in perm.iter().take(self.k).enumerate() {
                src[os + q * ost] = s + p * st;
                pos[os + q * ost] = p as i32;
            }
        }
        Ok(vec![
            HostArray::new(out_shape.clone(), take(x.data(), &src))?,
            HostArray::new(out_shape, Storage::I32(pos))?,
        ])
    }
}
