//! `lax.associative_scan`: the inclusive prefix scan of an associative
//! binary function over one axis of a pytree of arrays, by JAX's parallel
//! odd/even recursion (combine neighbouring pairs, scan the half-size
//! result, fill in the even positions, interleave), so that the depth is
//! logarithmic in the length and every step is whole-array work.

use crate::array::Array;
use crate::error::{catch, Error, Result};
use crate::pytree::{Pytree, TreeDef};

fn invalid(m: String) -> Error {
    Error::InvalidArgument(format!("associative_scan: {m}"))
}

/// `slice_in_dim(x, start, limit, stride, axis)`; `limit` counts from the
/// end when negative.
fn slice_in_dim(x: &Array, start: usize, limit: i64, stride: usize, axis: usize) -> Result<Array> {
    let shape = x.try_shape()?;
    let n = shape[axis] as i64;
    let limit = if limit < 0 { n + limit } else { limit }.max(start as i64) as usize;
    let mut lo = vec![0; shape.len()];
    let mut strides = vec![1; shape.len()];
    let mut hi = shape.clone();
    lo[axis] = start;
    hi[axis] = limit;
    strides[axis] = stride;
    super::slice(x, &lo, &hi, Some(&strides))
}

/// Interleaves `a` and `b` along `axis` (`a0 b0 a1 b1 ..`), `a` as long as
/// `b` or one longer: each padded with zeros in the other's slots and
/// summed (or-ed for bools), as JAX does.
fn interleave(a: &Array, b: &Array, axis: usize) -> Result<Array> {
    let (na, nb) = (a.try_shape()?[axis], b.try_shape()?[axis]);
    let same = na == nb;
    let mut pa = vec![(0i64, 0i64, 0i64); a.ndim()];
    let mut pb = pa.clone();
    pa[axis] = (0, if same { 1 } else { 0 }, 1);
    pb[axis] = (1, if same { 0 } else { 1 }, 1);
    let za = crate::numpy::zeros(&[], a.dtype())?;
    let zb = crate::numpy::zeros(&[], b.dtype())?;
    let (xa, xb) = (super::pad(a, &za, &pa)?, super::pad(b, &zb, &pb)?);
    if a.dtype() == jaxon_ir::DType::Bool {
        super::bitwise_or(&xa, &xb)
    } else {
        super::add(&xa, &xb)
    }
}

struct Combine<'a, T> {
    f: &'a dyn Fn(T, T) -> T,
    def: TreeDef,
}

impl<T: Pytree> Combine<'_, T> {
    fn call(&self, a: Vec<Array>, b: Vec<Array>) -> Result<Vec<Array>> {
        let (a, b) = (T::unflatten(&self.def, a)?, T::unflatten(&self.def, b)?);
        let (c, def) = catch(|| (self.f)(a, b))?.flatten();
        if def != self.def {
            return Err(invalid(format!(
                "fn must return the elements' structure {:?}, got {def:?}",
                self.def
            )));
        }
        Ok(c)
    }

    fn scan(&self, elems: Vec<Array>, axis: usize) -> Result<Vec<Array>> {
        let n = elems[0].try_shape()?[axis];
        if n < 2 {
            return Ok(elems);
        }
        let evens = |from: usize, limit: i64, es: &[Array]| -> Result<Vec<Array>> {
            es.iter()
                .map(|e| slice_in_dim(e, from, limit, 2, axis))
                .collect()
        };
        // Pairs (0,1), (2,3), ..: the scan of these is the odd positions.
        let reduced = self.call(evens(0, -1, &elems)?, evens(1, n as i64, &elems)?)?;
        let odd = self.scan(reduced, axis)?;
        let rest = evens(2, n as i64, &elems)?;
        let even = if n % 2 == 0 {
            let odd_but_last: Vec<Array> = odd
                .iter()
                .map(|e| slice_in_dim(e, 0, -1, 1, axis))
                .collect::<Result<_>>()?;
            self.call(odd_but_last, rest)?
        } else {
            self.call(odd.clone(), rest)?
        };
        elems
            .iter()
            .zip(even)
            .zip(odd)
            .map(|((e, r), o)| {
                let first = slice_in_dim(e, 0, 1, 1, axis)?;
                let even = super::concatenate(&[first, r], axis)?;
                interleave(&even, &o, axis)
            })
            .collect()
    }
}

/// `lax.associative_scan(fn, elems, reverse, axis)`: the inclusive scan
/// `[e0, f(e0, e1), f(f(e0, e1), e2), ..]` along `axis` of every leaf of
/// `elems`, for an associative `f` that combines two pytrees of
/// equal-shaped slices elementwise (it is called on whole slices, not on
/// single elements). With `reverse` the scan runs from the end.
///
/// ```
/// use jaxon_trace::{lax, Array};
///
/// let x = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]);
/// let s = lax::associative_scan(|a: Array, b: Array| &a + &b, x, false, 0)?;
/// assert_eq!(s.to_vec::<f32>(), [1.0, 3.0, 6.0, 10.0, 15.0]);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn associative_scan<T: Pytree>(
    f: impl Fn(T, T) -> T,
    elems: T,
    reverse: bool,
    axis: usize,
) -> Result<T> {
    let (leaves, def) = elems.flatten();
    let Some(first) = leaves.first() else {
        return T::unflatten(&def, leaves);
    };
    let n = {
        let s = first.try_shape()?;
        if axis >= s.len() {
            return Err(invalid(format!(
                "axis {axis} out of range for rank {}",
                s.len()
            )));
        }
        s[axis]
    };
    for l in &leaves {
        let s = l.try_shape()?;
        if axis >= s.len() || s[axis] != n {
            return Err(invalid(format!(
                "every leaf needs axis {axis} of length {n}, got shape {s:?}"
            )));
        }
    }
    let rev = |ls: Vec<Array>| -> Result<Vec<Array>> {
        if reverse {
            ls.iter().map(|l| super::rev(l, &[axis])).collect()
        } else {
            Ok(ls)
        }
    };
    let combine = Combine {
        f: &f,
        def: def.clone(),
    };
    let out = rev(combine.scan(rev(leaves)?, axis)?)?;
    T::unflatten(&def, out)
}
