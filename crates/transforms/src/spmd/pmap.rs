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
//!
//! Across processes (a `jaxon::distributed` session of `P` processes with
//! `L` local devices each), `pmap` is JAX's multi-process `pmap`: the mesh
//! holds all `P·L` devices (`jax.device_count()`), each process passes
//! inputs whose mapped axis is `L` long (`jax.local_device_count()`; any
//! other size is an error naming both), and gets back its own `L` slices
//! of each mapped result; collectives over the axis span every process,
//! and process `p`'s device `d` has `axis_index` `p·L + d`. The
//! `shard_map` is the global mesh's (`jaxon_ir::spmd::shard_map_on`): its
//! operands have the global shape, and a process only reads its own
//! devices' shards of them. So each mapped input is padded with zeros to
//! the global length at this process's rows (`pad`; the zeros are never
//! read), and each mapped result is sliced back to them (`slice`). Both
//! are ordinary primitives, so `jit`, `grad` and `vmap` of a multi-process
//! `pmap` need nothing more: the transpose of the pad is the slice and
//! back, and the `shard_map`'s transpose is again this process's part of
//! the global mesh.
//!
//! Invariants: on every process the `shard_map` (mesh, specs, global
//! shapes, body) is the same; only the pad and slice around it depend on
//! the process index. A process whose mapped axis is not `L` sends the
//! global mesh's "aborted" handshake before it returns its error, so the
//! processes that called the same `pmap` correctly fail at their
//! `shard_map`'s handshake at once instead of after the timeout.

use super::shard_map_flat;
use crate::batch::Axes;
use jaxon_ir::primitive::{Mesh, PartitionSpec, SpecEntry};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::{lax, numpy as jnp, Array, Pytree};
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
        let place = global_place(n)?;
        if let Some(p) = &place {
            for (x, a) in fronted.iter_mut().zip(&axes) {
                if a.is_some() {
                    *x = p.pad(x)?;
                }
            }
        }
        let mesh = Mesh::new(&[(name, place.as_ref().map_or(n, |p| p.total))]);
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
                        let o = match &place {
                            Some(p) => p.slice(&o)?,
                            None => o,
                        };
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

/// Where this process's rows sit in a multi-process `pmap`'s global axis.
struct Place {
    /// The first global row (device) of this process: `p·L`.
    start: usize,
    /// The local rows (devices), `L`.
    local: usize,
    /// The global rows, `P·L`.
    total: usize,
}

impl Place {
    /// `x` (its mapped axis first, `L` long) at this process's rows of a
    /// zero array `P·L` long.
    fn pad(&self, x: &Array) -> Result<Array> {
        let after = self.total - self.start - self.local;
        let mut config = vec![(0i64, 0i64, 0i64); x.ndim()];
        config[0] = (to_i64(self.start)?, to_i64(after)?, 0);
        lax::pad(x, &jnp::zeros(&[], x.dtype())?, &config)
    }

    /// This process's rows of a global result (its mapped axis first).
    fn slice(&self, o: &Array) -> Result<Array> {
        let shape = o.try_shape()?;
        let mut start = vec![0; shape.len()];
        let mut limit = shape;
        start[0] = self.start;
        limit[0] = self.start + self.local;
        lax::slice(o, &start, &limit, None)
    }
}

fn to_i64(n: usize) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::InvalidArgument(format!("pmap: {n} rows")))
}

/// `None` in a program of one process; across processes (a registered
/// `jaxon_ir::spmd::ProcessGroup` of more than one), where this process's
/// `n` rows go, after checking that `n` is its local device count.
fn global_place(n: usize) -> Result<Option<Place>> {
    let procs = jaxon_ir::spmd::process_count();
    if procs <= 1 {
        return Ok(None);
    }
    let local = jaxon_trace::eval::current_backend()?.device_count();
    if n != local {
        // The other processes of this `pmap` are at the `shard_map`'s
        // handshake (or here): this one stops them there, at once, rather
        // than after the timeout; its own answer is the error below.
        if let Some(group) = jaxon_ir::spmd::process_group() {
            let _ = group.all_gather(jaxon_ir::spmd::ABORT, &[]);
        }
        return Err(Error::InvalidArgument(format!(
            "pmap across {procs} processes: the mapped axis has size {n}, but this process has \
             {local} local devices (jax.local_device_count()); on multi-process platforms each \
             process passes inputs whose mapped axis is its local device count, and the \
             {total} devices of all processes run the map",
            total = procs * local
        )));
    }
    let me = jaxon_ir::spmd::process_index();
    Ok(Some(Place {
        start: me * local,
        local,
        total: procs * local,
    }))
}
