//! `shard_map` and `pmap`: the user API that traces a per-device function
//! into the `shard_map` primitive over a [`Mesh`], and the mesh-only
//! collectives (`ppermute`, `all_to_all`, `psum_scatter`) its body may call.
//!
//! The body is traced once, on the shard types (each dimension divided by
//! the sizes of the mesh axes its spec names), with every mesh axis in the
//! axis env, so `psum`/`pmean`/`all_gather`/`axis_index` over a mesh axis
//! bind their primitives with the axis size known. Values the body closes
//! over become leading operands with spec `P()` (replicated), as in JAX.
//!
//! jaxon traces with `check_vma=False` (JAX's mode without varying-axis
//! types): a result spec that leaves an axis out promises that the result
//! is the same on every device along it, and that promise is not checked.
//! Gradients stay correct: the `shard_map` transpose rule divides the
//! cotangents of such results and `psum`s input cotangents over the axes
//! their specs leave out (`rules/control/shard_map.rs`).
//!
//! Invariants: the mesh fits the current backend's devices
//! (`Backend::device_count`); every operand's dimensions divide by their
//! spec's shard counts; the body's axis env is popped on every exit path.

mod collectives;
mod pmap;

pub use collectives::{all_gather_with, all_to_all, ppermute, psum_scatter};
pub use jaxon_ir::primitive::{Mesh, NamedSharding, PartitionSpec, SpecEntry};
pub use pmap::{pmap, Pmap};

use crate::batch::AxisEnvGuard;
use crate::prefix::Prefix;
use jaxon_ir::primitive::ShardMapParams;
use jaxon_ir::{Aval, ClosedJaxpr, ShapedArray};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{bind, Array, Pytree};
use std::marker::PhantomData;
use std::sync::Arc;

/// How each leaf of a pytree is split over a mesh: a [`PartitionSpec`] per
/// leaf, given as a pytree prefix (one spec for a whole subtree, a tuple of
/// specs for a tuple of arguments, ...), as JAX's `in_specs`/`out_specs`.
pub type Specs = Prefix<PartitionSpec>;

impl From<PartitionSpec> for Specs {
    fn from(p: PartitionSpec) -> Specs {
        Specs::All(p)
    }
}

/// A value that can stand as one entry of a [`PartitionSpec`] in
/// [`P!`](crate::P): a mesh axis name, `None` (not split), or a tuple,
/// array or `Vec` of names (split over several axes, major first).
pub trait IntoSpecEntry {
    /// The spec entry.
    fn into_spec_entry(self) -> SpecEntry;
}

impl IntoSpecEntry for &str {
    fn into_spec_entry(self) -> SpecEntry {
        SpecEntry::Axis(self.to_string())
    }
}

impl IntoSpecEntry for String {
    fn into_spec_entry(self) -> SpecEntry {
        SpecEntry::Axis(self)
    }
}

impl IntoSpecEntry for Option<&str> {
    fn into_spec_entry(self) -> SpecEntry {
        self.map_or(SpecEntry::None, IntoSpecEntry::into_spec_entry)
    }
}

impl IntoSpecEntry for SpecEntry {
    fn into_spec_entry(self) -> SpecEntry {
        self
    }
}

impl<const N: usize> IntoSpecEntry for [&str; N] {
    fn into_spec_entry(self) -> SpecEntry {
        SpecEntry::Axes(self.iter().map(|s| s.to_string()).collect())
    }
}

impl IntoSpecEntry for (&str, &str) {
    fn into_spec_entry(self) -> SpecEntry {
        SpecEntry::Axes(vec![self.0.to_string(), self.1.to_string()])
    }
}

/// `P(...)`, JAX's `PartitionSpec`: `P!()` (replicated), `P!("x")`,
/// `P!(None, "x")`, `P!(("x", "y"))` (one dimension over two axes).
///
/// ```
/// use jaxon_transforms::P;
/// assert_eq!(P!("rows", None).to_string(), "P('rows', None)");
/// assert_eq!(P!().to_string(), "P()");
/// ```
#[macro_export]
macro_rules! P {
    () => {
        $crate::spmd::PartitionSpec(::std::vec::Vec::new())
    };
    ($($e:expr),+ $(,)?) => {
        $crate::spmd::PartitionSpec(::std::vec![
            $($crate::spmd::IntoSpecEntry::into_spec_entry($e)),+
        ])
    };
}

/// `jax.make_mesh(shape, names)`: a mesh of `Auto` axes over the first
/// `prod(shape)` devices of the current backend; an error when there are
/// not that many, or the names repeat or do not match the shape.
pub fn make_mesh(shape: &[usize], names: &[&str]) -> Result<Mesh> {
    if shape.len() != names.len() {
        return Err(Error::InvalidArgument(format!(
            "make_mesh: a mesh shape of {} axes {shape:?} with {} names {names:?}",
            shape.len(),
            names.len()
        )));
    }
    let axes: Vec<(&str, usize)> = names.iter().copied().zip(shape.iter().copied()).collect();
    let mesh = Mesh::new(&axes);
    check_mesh(&mesh, "make_mesh")?;
    Ok(mesh)
}

/// Checks the mesh's invariant and that the current backend has its
/// devices; `what` names the caller in the error.
pub fn check_mesh(mesh: &Mesh, what: &str) -> Result<()> {
    mesh.validate()
        .map_err(|e| Error::InvalidArgument(format!("{what}: {e}")))?;
    let backend = jaxon_trace::eval::current_backend()?;
    let local = backend.device_count();
    // Under `jaxon::distributed`, every process's devices form the global
    // mesh (`jaxon_ir::spmd::shard_map_on`).
    let procs = jaxon_ir::spmd::process_count();
    let have = local * procs;
    if mesh.size() > have {
        let whose = if procs > 1 {
            format!(
                "the {procs} processes have {have} ({procs} × {local} {} devices)",
                backend.name()
            )
        } else {
            format!("the {} backend has {have}", backend.name())
        };
        return Err(Error::InvalidArgument(format!(
            "{what}: {mesh} needs {} devices, but {whose} (set \
             JAXON_CPU_DEVICES or call jaxon::set_cpu_device_count for more host devices)",
            mesh.size(),
        )));
    }
    Ok(())
}

/// `shard_map(f, mesh, in_specs, out_specs)`: runs `f` once per device of
/// `mesh`, on that device's shard of each input, and assembles the results
/// by `out_specs`. See the [module docs](self).
pub struct ShardMap<F, I, O> {
    f: F,
    mesh: Mesh,
    in_specs: Specs,
    out_specs: Specs,
    _types: PhantomData<fn(I) -> O>,
}

/// `jax.shard_map(f, mesh=mesh, in_specs=.., out_specs=..)`, applied with
/// [`ShardMap::call`]. Inside `f`, collectives over the mesh's axis names
/// (`psum`, `pmean`, `all_gather`, `axis_index`, [`ppermute`], ...)
/// communicate between the devices.
pub fn shard_map<I: Pytree, O: Pytree, F: Fn(I) -> O>(
    f: F,
    mesh: &Mesh,
    in_specs: impl Into<Specs>,
    out_specs: impl Into<Specs>,
) -> ShardMap<F, I, O> {
    ShardMap {
        f,
        mesh: mesh.clone(),
        in_specs: in_specs.into(),
        out_specs: out_specs.into(),
        _types: PhantomData,
    }
}

impl<I: Pytree, O: Pytree, F: Fn(I) -> O> ShardMap<F, I, O> {
    /// Applies the sharded function to global inputs; returns global results.
    pub fn call(&self, args: I) -> Result<O> {
        let (leaves, in_def) = args.flatten();
        let in_specs = self.in_specs.resolve(&in_def, "shard_map in_specs")?;
        catch_flat(|| {
            let mut out_def = None;
            let outs = shard_map_flat(&self.mesh, &leaves, &in_specs, |xs| {
                let (l, d) = (self.f)(I::unflatten(&in_def, xs)?).flatten();
                let specs = self.out_specs.resolve(&d, "shard_map out_specs")?;
                out_def = Some(d);
                Ok((l, specs))
            })?;
            let def = out_def.ok_or_else(|| {
                Error::InvalidArgument("shard_map: the function was not traced".into())
            })?;
            O::unflatten(&def, outs)
        })
    }
}

/// The shard type of `x` under `spec` on `mesh`.
fn shard_aval(mesh: &Mesh, spec: &PartitionSpec, x: &Array, i: usize) -> Result<Aval> {
    let ty = x.ty();
    let sizes = ty.static_sizes().ok_or_else(|| {
        Error::Unsupported(format!(
            "shard_map: input {i} has a dynamic shape ({})",
            jaxon_ir::shape::fmt_aval(x.aval())
        ))
    })?;
    let shard = mesh
        .shard_sizes(spec, &sizes)
        .map_err(|e| Error::InvalidArgument(format!("shard_map in_specs (input {i}): {e}")))?;
    Ok(Aval::Array(
        ShapedArray::of(ty.dtype, &shard).with_weak(ty.weak_type),
    ))
}

/// `shard_map` on flat operands: traces `body` on the shard types (it
/// returns its results and their out specs) and binds the primitive.
pub(crate) fn shard_map_flat(
    mesh: &Mesh,
    leaves: &[Array],
    in_specs: &[PartitionSpec],
    body: impl FnOnce(Vec<Array>) -> Result<(Vec<Array>, Vec<PartitionSpec>)>,
) -> Result<Vec<Array>> {
    check_mesh(mesh, "shard_map")?;
    if in_specs.len() != leaves.len() {
        return Err(Error::InvalidArgument(format!(
            "shard_map: {} in_specs for {} input leaves",
            in_specs.len(),
            leaves.len()
        )));
    }
    let avals = leaves
        .iter()
        .zip(in_specs)
        .enumerate()
        .map(|(i, (x, s))| shard_aval(mesh, s, x, i))
        .collect::<Result<Vec<_>>>()?;
    let mut out_specs = Vec::new();
    let staged = {
        // The mesh axes are in scope for the body's collectives.
        let _env: Vec<AxisEnvGuard> = mesh
            .axes
            .iter()
            .map(|(n, s)| AxisEnvGuard::push(Some(n), *s))
            .collect();
        trace_flat(StageMode::Dynamic, &avals, |xs| {
            let (outs, specs) = body(xs)?;
            out_specs = specs;
            Ok(outs)
        })?
    };
    let mut jaxpr = staged.jaxpr;
    for (k, (o, spec)) in jaxpr.outvars.iter().zip(&out_specs).enumerate() {
        let rank = jaxpr
            .atom_aval(o)
            .ok_or_else(|| {
                Error::InvalidArgument("shard_map: a result the body does not bind".into())
            })?
            .array()
            .ndim();
        mesh.check_spec(spec, rank).map_err(|e| {
            Error::InvalidArgument(format!("shard_map out_specs (result {k}): {e}"))
        })?;
    }
    // Captured values are replicated leading operands.
    let nconst = staged.consts.len();
    let mut invars = std::mem::take(&mut jaxpr.constvars);
    invars.append(&mut jaxpr.invars);
    jaxpr.invars = invars;
    let mut specs = vec![PartitionSpec::default(); nconst];
    specs.extend(in_specs.iter().cloned());
    let mut args = staged.consts;
    args.extend(leaves.iter().cloned());
    let params = ShardMapParams {
        jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(jaxpr),
            consts: Arc::from(Vec::new()),
        },
        newly_manual_axes: mesh.axes.iter().map(|(n, _)| n.clone()).collect(),
        mesh: mesh.clone(),
        in_specs: specs,
        out_specs,
        check_vma: false,
    };
    bind(&params.into(), &args)
}
