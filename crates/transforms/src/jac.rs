//! Jacobians over pytrees: `jacfwd` (one jvp per input basis vector),
//! `jacrev` (one linearization, one vjp per output basis vector) and
//! `hessian` (`jacfwd(jacrev(f))`).
//!
//! The basis loop lives in `map_basis`; when a `vmap` helper is
//! available it can push the whole basis at once without changing the
//! callers.

use crate::jvp::jvp_flat;
use crate::linearize::linearize_flat;
use jaxon_ir::{DType, HostArray};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::{lax, numpy as jnp, Array, Pytree, TreeDef};

/// A Jacobian of a pytree function: block `(i, j)` is the derivative of
/// output leaf `i` with respect to input leaf `j`, of shape
/// `out_i.shape ++ in_j.shape` (zeros for integer leaves).
#[derive(Clone, Debug)]
pub struct Jacobian {
    /// Blocks, by output leaf then input leaf.
    pub blocks: Vec<Vec<Array>>,
    /// The output structure.
    pub out_def: TreeDef,
    /// The input structure.
    pub in_def: TreeDef,
}

impl Jacobian {
    /// Block `(out_leaf, in_leaf)`.
    pub fn block(&self, out_leaf: usize, in_leaf: usize) -> Result<&Array> {
        self.blocks
            .get(out_leaf)
            .and_then(|r| r.get(in_leaf))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "jacobian block ({out_leaf}, {in_leaf}) out of range"
                ))
            })
    }

    /// The only block, for an array-to-array function.
    pub fn single(&self) -> Result<Array> {
        if self.blocks.len() != 1 || self.blocks[0].len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "jacobian has {} x {} blocks, not one",
                self.blocks.len(),
                self.blocks.first().map_or(0, Vec::len)
            )));
        }
        Ok(self.blocks[0][0].clone())
    }
}

/// Runs `f` on each basis element. The loop form of a batched map: its
/// results are stacked along a new leading axis by the caller.
fn map_basis<T>(n: usize, mut f: impl FnMut(usize) -> Result<T>) -> Result<Vec<T>> {
    (0..n).map(&mut f).collect()
}

/// The `k`-th one-hot array of `shape` and `dtype`.
fn one_hot(shape: &[usize], dtype: DType, k: usize) -> Result<Array> {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| if i == k { 1.0 } else { 0.0 }).collect();
    let h = HostArray::from_f64(dtype, shape, &v)
        .map_err(|e| Error::InvalidArgument(format!("one-hot basis: {e}")))?;
    Ok(Array::from_host(h))
}

/// Stacks `parts` (each of shape `inner`, at least one) along a new axis
/// and reshapes to `lead ++ inner` (`front`) or `inner ++ lead`.
fn stack_to(parts: &[Array], inner: &[usize], lead: &[usize], front: bool) -> Result<Array> {
    let axis = if front { 0 } else { inner.len() };
    let expanded = parts
        .iter()
        .map(|p| lax::expand_dims(p, &[axis]))
        .collect::<Result<Vec<_>>>()?;
    let stacked = lax::concatenate(&expanded, axis)?;
    let shape: Vec<usize> = if front {
        lead.iter().chain(inner).copied().collect()
    } else {
        inner.iter().chain(lead).copied().collect()
    };
    lax::reshape(&stacked, &shape)
}
fn shape_of(x: &Array) -> Result<Vec<usize>> {
    x.try_shape()
}

/// Forward-mode Jacobian of a flat function: `[out][in]` blocks.
pub fn jacfwd_flat(
    f: &dyn Fn(Vec<Array>) -> Result<Vec<Array>>,
    x: &[Array],
) -> Result<Vec<Vec<Array>>> {
    let outs = f(x.to_vec())?;
    let out_shapes = outs.iter().map(shape_of).collect::<Result<Vec<_>>>()?;
    let mut cols: Vec<Vec<Array>> = vec![Vec::new(); outs.len()];
    for (j, xj) in x.iter().enumerate() {
        let in_shape = shape_of(xj)?;
        let n: usize = in_shape.iter().product();
        if !xj.dtype().is_float() {
            for (i, o) in outs.iter().enumerate() {
                let mut s = out_shapes[i].clone();
                s.extend_from_slice(&in_shape);
                cols[i].push(jnp::zeros(&s, o.dtype())?);
            }
            continue;
        }
        let per_k = map_basis(n, |k| {
            let tangents: Vec<Option<Array>> = x
                .iter()
                .enumerate()
                .map(|(jj, _)| {
                    (jj == j)
                        .then(|| one_hot(&in_shape, xj.dtype(), k))
                        .transpose()
                })
                .collect::<Result<_>>()?;
            let (p, t) = jvp_flat(f, x, &tangents)?;
            p.iter()
                .zip(t)
                .map(|(p, t)| t.map_or_else(|| jnp::zeros_like(p), Ok))
                .collect::<Result<Vec<_>>>()
        })?;
        for (i, o) in outs.iter().enumerate() {
            let parts: Vec<Array> = per_k.iter().map(|ts| ts[i].clone()).collect();
            let block = if parts.is_empty() {
                let mut s = out_shapes[i].clone();
                s.extend_from_slice(&in_shape);
                jnp::zeros(&s, o.dtype())?
            } else {
                stack_to(&parts, &out_shapes[i], &in_shape, false)?
            };
            cols[i].push(block);
        }
    }
    Ok(cols)
}

/// Reverse-mode Jacobian of a flat function: `[out][in]` blocks.
pub fn jacrev_flat(
    f: &dyn Fn(Vec<Array>) -> Result<Vec<Array>>,
    x: &[Array],
) -> Result<Vec<Vec<Array>>> {
    let lin = linearize_flat(f, x)?;
    let outs = lin.primals_out.clone();
    let in_shapes = x.iter().map(shape_of).collect::<Result<Vec<_>>>()?;
    let mut rows = Vec::with_capacity(outs.len());
    for (i, oi) in outs.iter().enumerate() {
        let out_shape = shape_of(oi)?;
        let n: usize = out_shape.iter().product();
        if !oi.dtype().is_float() {
            return Err(Error::InvalidArgument(format!(
                "jacrev requires real outputs, output {i} is {}",
                jaxon_ir::shape::fmt_aval(oi.aval())
            )));
        }
        let per_k = map_basis(n, |k| {
            let cts = outs
                .iter()
                .enumerate()
                .map(|(ii, o)| {
                    if ii == i {
                        one_hot(&out_shape, o.dtype(), k)
                    } else {
                        jnp::zeros_like(o)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            lin.vjp(&cts)
        })?;
        let mut row = Vec::with_capacity(x.len());
        for (j, xj) in x.iter().enumerate() {
            let parts: Vec<Array> = per_k.iter().map(|g| g[j].clone()).collect();
            let block = if parts.is_empty() {
                let mut s = out_shape.clone();
                s.extend_from_slice(&in_shapes[j]);
                jnp::zeros(&s, xj.dtype())?
            } else {
                stack_to(&parts, &in_shapes[j], &out_shape, true)?
            };
            row.push(block);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// A flat Jacobian routine (`jacfwd_flat` or `jacrev_flat`).
type JacFlat = for<'a> fn(&'a FlatFn<'a>, &[Array]) -> Result<Vec<Vec<Array>>>;
/// A flat function of arrays.
type FlatFn<'a> = dyn Fn(Vec<Array>) -> Result<Vec<Array>> + 'a;

fn jacobian_of<I: Pytree, O: Pytree>(f: impl Fn(I) -> O, x: I, flat: JacFlat) -> Result<Jacobian> {
    let (leaves, in_def) = x.flatten();
    catch_flat(|| {
        let out_def = std::cell::RefCell::new(None);
        let g = |ins: Vec<Array>| -> Result<Vec<Array>> {
            let (l, d) = f(I::unflatten(&in_def, ins)?).flatten();
            *out_def.borrow_mut() = Some(d);
            Ok(l)
        };
        let blocks = flat(&g, &leaves)?;
        let out_def = out_def.into_inner().expect("traced");
        Ok(Jacobian {
            blocks,
            out_def,
            in_def: in_def.clone(),
        })
    })
}

/// `jacfwd(f)(x)`: the Jacobian by forward mode (one jvp per input
/// element).
pub fn jacfwd<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> impl Fn(I) -> Result<Jacobian> {
    move |x| jacobian_of(&f, x, jacfwd_flat)
}

/// `jacrev(f)(x)`: the Jacobian by reverse mode (one linearization, one
/// vjp per output element).
pub fn jacrev<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> impl Fn(I) -> Result<Jacobian> {
    move |x| jacobian_of(&f, x, jacrev_flat)
}

/// `jax.jacobian(f)`: JAX's alias of [`jacrev`] (reverse mode).
pub fn jacobian<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> impl Fn(I) -> Result<Jacobian> {
    jacrev(f)
}

/// `hessian(f)(x)` of a scalar function: `jacfwd(jacrev(f))`. Block
/// `(j, l)` has shape `in_j.shape ++ in_l.shape`.
pub fn hessian<I: Pytree, F: Fn(I) -> Array>(f: F) -> impl Fn(I) -> Result<Jacobian> {
    move |x: I| {
        let (leaves, in_def) = x.flatten();
        catch_flat(|| {
            let grad_flat = |ins: Vec<Array>| -> Result<Vec<Array>> {
                let g = |v: Vec<Array>| -> Result<Vec<Array>> {
                    Ok(vec![f(I::unflatten(&in_def, v)?)])
                };
                let rows = jacrev_flat(&g, &ins)?;
                Ok(rows.into_iter().next().unwrap_or_default())
            };
            let blocks = jacfwd_flat(&grad_flat, &leaves)?;
            Ok(Jacobian {
                blocks,
                out_def: in_def.clone(),
                in_def: in_def.clone(),
            })
        })
    }
}
