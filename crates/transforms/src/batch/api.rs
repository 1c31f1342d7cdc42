//! The `vmap` builder and `Axes`, the pytree-shaped spec of where the mapped
//! axis sits in each input or output leaf.

use super::{batch_flat, move_bdim};
use crate::prefix::Prefix;
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::{Array, Pytree};
use std::marker::PhantomData;

/// Where the mapped axis sits in the leaves of a pytree. `None` means the
/// leaf is not mapped (the same for every member of the batch); negative
/// axes count from the end.
///
/// Conversions make JAX's spellings work: `0`, `-1`, `None`,
/// `(None, 0, 0)` for a tuple of three arguments, nested tuples, and
/// `vec![...]` for lists.
pub type Axes = Prefix<Option<isize>>;

impl Axes {
    /// Not mapped: `None` in JAX.
    pub fn none() -> Axes {
        Axes::All(None)
    }
}

impl From<isize> for Axes {
    fn from(a: isize) -> Axes {
        Axes::All(Some(a))
    }
}

impl From<i32> for Axes {
    fn from(a: i32) -> Axes {
        Axes::All(Some(a as isize))
    }
}

impl From<Option<i32>> for Axes {
    fn from(a: Option<i32>) -> Axes {
        Axes::All(a.map(|a| a as isize))
    }
}

/// `vmap(f)`: a vectorized version of `f`, configured by the builder
/// methods and applied with [`Vmap::call`].
pub struct Vmap<F, I, O> {
    f: F,
    in_axes: Axes,
    out_axes: Axes,
    axis_name: Option<String>,
    axis_size: Option<usize>,
    _types: PhantomData<fn(I) -> O>,
}

/// `vmap(f)`: maps `f` over axis 0 of every input leaf and stacks the
/// outputs along axis 0, unless `in_axes`/`out_axes` say otherwise.
pub fn vmap<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> Vmap<F, I, O> {
    Vmap {
        f,
        in_axes: Axes::All(Some(0)),
        out_axes: Axes::All(Some(0)),
        axis_name: None,
        axis_size: None,
        _types: PhantomData,
    }
}

impl<I: Pytree, O: Pytree, F: Fn(I) -> O> Vmap<F, I, O> {
    /// Where the mapped axis sits in each input leaf (`None`: not mapped).
    pub fn in_axes(mut self, axes: impl Into<Axes>) -> Self {
        self.in_axes = axes.into();
        self
    }

    /// Where the mapped axis goes in each output leaf (`None`: the output
    /// must not depend on the mapped axis).
    pub fn out_axes(mut self, axes: impl Into<Axes>) -> Self {
        self.out_axes = axes.into();
        self
    }

    /// Names the mapped axis, for collectives such as [`super::psum`].
    pub fn axis_name(mut self, name: &str) -> Self {
        self.axis_name = Some(name.to_string());
        self
    }

    /// The size of the mapped axis; required when no input is mapped.
    pub fn axis_size(mut self, n: usize) -> Self {
        self.axis_size = Some(n);
        self
    }

    /// Applies the vectorized function.
    pub fn call(&self, args: I) -> Result<O> {
        let (leaves, in_def) = args.flatten();
        let axes = self.in_axes.resolve(&in_def, "vmap in_axes")?;
        let mut in_dims = Vec::with_capacity(leaves.len());
        let mut size: Option<(usize, String)> = self.axis_size.map(|n| (n, "axis_size".into()));
        for (i, (leaf, axis)) in leaves.iter().zip(&axes).enumerate() {
            let Some(axis) = *axis else {
                in_dims.push(None);
                continue;
            };
            // Other axes may be dynamic; the mapped one must be static.
            let dims = &leaf.ty().shape;
            let d = crate::util::normalize_axis(
                axis,
                dims.len(),
                &format!("vmap in_axes (input leaf {i})"),
            )?;
            let mut shape = vec![0; dims.len()];
            shape[d] = dims[d]
                .as_const()
                .ok_or_else(|| leaf.concretization_error("vmap over a dynamic axis"))?;
            let here = format!("input leaf {i} (axis {axis} of {})", fmt_ty(leaf));
            match &size {
                Some((n, from)) if *n != shape[d] => {
                    return Err(Error::InvalidArgument(format!(
                        "vmap got inconsistent sizes for the mapped axis: {from} has size {n}, \
                         but {here} has size {}",
                        shape[d]
                    )))
                }
                Some(_) => {}
                None => size = Some((shape[d], here)),
            }
            in_dims.push(Some(d));
        }
        let Some((n, _)) = size else {
            return Err(Error::InvalidArgument(
                "vmap needs at least one mapped input (in_axes not all None) or an explicit \
                 axis_size"
                    .into(),
            ));
        };
        catch_flat(|| {
            let mut out_def = None;
            let outs = batch_flat(
                |ins| {
                    let (l, d) = (self.f)(I::unflatten(&in_def, ins)?).flatten();
                    out_def = Some(d);
                    Ok(l)
                },
                &leaves,
                &in_dims,
                n,
                self.axis_name.as_deref(),
            )?;
            let out_def = out_def.expect("set by the traced function");
            let out_axes = self.out_axes.resolve(&out_def, "vmap out_axes")?;
            let mut res = Vec::with_capacity(outs.len());
            for (i, ((v, d), axis)) in outs.into_iter().zip(out_axes).enumerate() {
                match (d, axis) {
                    (Some(_), None) => {
                        return Err(Error::InvalidArgument(format!(
                            "vmap has out_axes None for output leaf {i}, but that output \
                             depends on the mapped axis"
                        )))
                    }
                    (None, None) => res.push(v),
                    (d, Some(axis)) => {
                        let rank = v.ndim() + usize::from(d.is_none());
                        let to = crate::util::normalize_axis(
                            axis,
                            rank,
                            &format!("vmap out_axes (output leaf {i})"),
                        )?;
                        res.push(move_bdim(&v, d, to, n)?);
                    }
                }
            }
            O::unflatten(&out_def, res)
        })
    }
}

fn fmt_ty(x: &Array) -> String {
    jaxon_ir::shape::fmt_aval(x.aval())
}
