//! `pmap`: JAX 0.10's `pmap`, built on `shard_map` over a one-axis mesh.
//!
//! `pmap(f).axis_name("i").call(xs)` moves each mapped input's `in_axes`
//! dimension to the front, splits it over a mesh `Mesh('i': n)` (`n` its
//! size, at most the backend's device count) with spec `P('i')`, and gives
//! `f` each device's slice with that dimension removed (the `squeeze` JAX
//! prints); unmapped inputs (`None`) are replicated (`P()`). Each result
//! gets the dimension back (`P('i')`) at its `out_axes`; a result with
//! `out_axes` `None` must be the same on every device (unchecked, as with
//! `check_vma=False`), and device 0's is returned.

use super::shard_map_flat;
use crate::batch::Axes;
use jaxon_ir::primitive::{Mesh, PartitionSpec, SpecEntry};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::{lax, numpy as jnp, Pytree};
use std::marker::PhantomData;

/// The `pmap` builder; apply it with [`Pmap::call`].
pub struct Pmap<F, I, O> {
    f: F,
    axis_name: String,
    in_axes: Axes,
    out_axes: Axes,
    _types: PhantomData<fn(I) -> O>,
}

/// `jax.pmap(f)`: runs `f` in parallel on as many devices as the mapped
/// axis (axis 0 of every input unless `in_axes` says otherwise) is long,
/// one slice per device. Name the axis with [`Pmap::axis_name`] to use
/// collectives (`psum`, `pmean`, `all_gather`, `axis_index`, ...) in `f`.
pub fn pmap<I: Pytree, O: Pytree, F: Fn(I) -> O>(f: F) -> Pmap<F, I, O> {
    Pmap {
        f,
        axis_name: "_pmap".to_string(),
        in_axes: Axes::All(Some(0)),
        out_axes: Axes::All(Some(0)),
        _types: PhantomData,
    }
}

impl<I: Pytree, O: Pytree, F: Fn(I) -> O> Pmap<F, I, O> {
    /// Names the mapped axis, for the collectives in `f`.
    pub fn axis_name(mut self, name: &str) -> Self {
        self.axis_name = name.to_string();
        self
    }

    /// Where the mapped axis sits in each input leaf (`None`: replicated).
    pub fn in_axes(mut self, axes: impl Into<Axes>) -> Self {
        self.in_axes = axes.into();
        self
    }

    /// Where the mapped axis goes in each result leaf (`None`: the result
    /// is the same on every device, and is returned once).
    pub fn out_axes(mut self, axes: impl Into<Axes>) -> Self {
        self.out_axes = axes.into();
        self
    }

    /// Applies the parallel function.
    pub fn call(&self, args: I) -> Result<O> {
        let (leaves, in_def) = args.flatten();
        let axes = self.in_axes.resolve(&in_def, "pmap in_axes")?;
        let name = self.axis_name.as_str();
        let mut n: Option<(usize, usize)> = None;
        let mut fronted = Vec::with_capacity(leaves.len());
        let mut specs = Vec::with_capacity(leaves.len());
        for (i, (x, a)) in leaves.iter().zip(&axes).enumerate() {
            let Some(a) = a else {
                fronted.push(x.clone());
                specs.push(PartitionSpec::default());
                continue;
            };
            let d = crate::util::normalize_axis(
                *a,
                x.ndim(),
                &format!("pmap in_axes (input leaf {i})"),
            )?;
            let size = x.try_shape()?[d];
            match n {
                Some((m, j)) if m != size => {
                    return Err(Error::InvalidArgument(format!(
                        "pmap got inconsistent sizes for the mapped axis: input leaf {j} has \
                         size {m}, but input leaf {i} has size {size}"
                    )))
                }
                _ => n = Some((size, i)),
            }
            fronted.push(jnp::moveaxis(x, &[d as isize], &[0])?);
            specs.push(PartitionSpec(vec![SpecEntry::Axis(name.to_string())]));
        }
        let Some((n, _)) = n else {
            return Err(Error::InvalidArgument(
                "pmap needs at least one mapped input (in_axes not all None)".into(),
            ));
        };
        let mesh = Mesh::new(&[(name, n)]);
        let mapped: Vec<bool> = axes.iter().map(Option::is_some).collect();
        catch_flat(|| {
            let mut out_def = None;
            let mut out_axes = Vec::new();
            let outs = shard_map_flat(&mesh, &fronted, &specs, |xs| {
                let xs = xs
                    .iter()
                    .zip(&mapped)
                    .map(|(x, m)| {
                        if *m {
                            lax::squeeze(x, &[0])
                        } else {
                            Ok(x.clone())
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                let (outs, d) = (self.f)(I::unflatten(&in_def, xs)?).flatten();
                out_axes = self.out_axes.resolve(&d, "pmap out_axes")?;
                out_def = Some(d);
                let mut res = Vec::with_capacity(outs.len());
                let mut out_specs = Vec::with_capacity(outs.len());
                for (o, a) in outs.iter().zip(&out_axes) {
                    match a {
                        Some(_) => {
                            res.push(lax::expand_dims(o, &[0])?);
                            out_specs.push(PartitionSpec(vec![SpecEntry::Axis(name.to_string())]));
                        }
                        None => {
                            res.push(o.clone());
                            out_specs.push(PartitionSpec::default());
                        }
                    }
                }
                Ok((res, out_specs))
            })?;
            let def = out_def.ok_or_else(|| {
                Error::InvalidArgument("pmap: the function was not traced".into())
            })?;
            let res = outs
                .into_iter()
                .zip(&out_axes)
                .enumerate()
                .map(|(i, (o, a))| match a {
                    Some(a) => {
                        let to = crate::util::normalize_axis(
                            *a,
                            o.ndim(),
                            &format!("pmap out_axes (result leaf {i})"),
                        )?;
                        jnp::moveaxis(&o, &[0], &[to as isize])
                    }
                    None => Ok(o),
                })
                .collect::<Result<Vec<_>>>()?;
            O::unflatten(&def, res)
        })
    }
}
