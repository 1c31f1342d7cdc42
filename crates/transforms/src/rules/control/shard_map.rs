//! Rules of `shard_map`: jvp, transpose and batching, side by side; each
//! builds a `shard_map` over the same mesh around the body's jvp, transpose
//! or batched body.
//!
//! - Jvp: tangents have their primals' specs. Under `linearize` the body is
//!   split (as `jit`'s is) into a known `shard_map` that also returns the
//!   residuals and a linear one that consumes them; each device's
//!   residuals travel as one block of a leading dimension split over every
//!   mesh axis (a scalar residual is broadcast to `[1]` first).
//! - Transpose: the body's transpose, with cotangents in the out specs and
//!   input cotangents in the in specs. With `check_vma=False` (JAX's
//!   non-rewriting mode) a result replicated over axes its spec does not
//!   name has its cotangent divided by their size, and an input's
//!   cotangent is `psum`med over the axes its spec does not name.
//! - Batching: the batch dimension is moved to the front and a `None` is
//!   prepended to the specs of batched operands and results.

use super::{fronted, mask, needs_split, split_outs, spread};
use crate::batch::collectives::reduce_axes;
use crate::jvp::jvp_jaxpr;
use crate::partial_eval::linearize_jaxpr;
use crate::rules::{values, BatchOuts, Cts, JvpOuts};
use crate::transpose::{transpose_jaxpr, LinArg};
use jaxon_ir::primitive::{
    AxisRef, BroadcastInDimParams, CollectiveOp, PartitionSpec, ShardMapParams, SpecEntry,
    SqueezeParams,
};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, Eqn, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, lax, numpy as jnp, Array};
use std::sync::Arc;

fn with_body(
    sp: &ShardMapParams,
    jaxpr: ClosedJaxpr,
    ins: Vec<PartitionSpec>,
    outs: Vec<PartitionSpec>,
) -> Primitive {
    ShardMapParams {
        jaxpr,
        mesh: sp.mesh.clone(),
        in_specs: ins,
        out_specs: outs,
        newly_manual_axes: sp.newly_manual_axes.clone(),
        check_vma: sp.check_vma,
    }
    .into()
}

fn pick(specs: &[PartitionSpec], m: &[bool]) -> Vec<PartitionSpec> {
    specs
        .iter()
        .zip(m)
        .filter(|(_, k)| **k)
        .map(|(s, _)| s.clone())
        .collect()
}

/// The spec of a residual: its leading dimension split over every mesh axis.
fn residual_spec(sp: &ShardMapParams) -> PartitionSpec {
    let axes: Vec<String> = sp.mesh.axes.iter().map(|(n, _)| n.clone()).collect();
    PartitionSpec(vec![match axes.len() {
        1 => SpecEntry::Axis(axes[0].clone()),
        _ => SpecEntry::Axes(axes),
    }])
}

/// `shard_map`: the body's jvp, as a `shard_map` again.
pub(super) fn jvp(sp: &ShardMapParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let nonzero: Vec<bool> = t.iter().map(Option::is_some).collect();
    let n = sp.jaxpr.jaxpr.outvars.len();
    if needs_split(x, t)? {
        let lj = linearize_jaxpr(&sp.jaxpr, &nonzero, &[])?;
        let nres = lj.num_res;
        // Known body: scalar residuals become `[1]` blocks.
        let mut kj = Arc::unwrap_or_clone(lj.known.jaxpr);
        let mut scalar = Vec::with_capacity(nres);
        for k in n..kj.outvars.len() {
            let a = kj.outvars[k];
            let ty = kj
                .atom_aval(&a)
                .ok_or_else(|| Error::InvalidArgument("shard_map: unbound residual".into()))?
                .array()
                .clone();
            let is_scalar = ty.shape.is_empty();
            scalar.push(is_scalar);
            if is_scalar {
                let v = kj.new_var(ShapedArray::of(ty.dtype, &[1]).with_weak(ty.weak_type));
                kj.eqns.push(Eqn {
                    primitive: BroadcastInDimParams {
                        shape: vec![Some(1)],
                        broadcast_dimensions: jaxon_ir::primitive::Ints::new(Vec::new()),
                    }
                    .into(),
                    inputs: vec![a],
                    outputs: vec![Binder::Var(v)],
                });
                kj.outvars[k] = Atom::Var(v);
            }
        }
        // Linear body: squeeze them back.
        let mut linj = Arc::unwrap_or_clone(lj.linear.jaxpr);
        let mut pre = Vec::new();
        for (k, s) in scalar.iter().enumerate() {
            if !*s {
                continue;
            }
            let old = linj.invars[k];
            let ty = linj.aval(old).array().clone();
            let v = linj.new_var(ShapedArray::of(ty.dtype, &[1]).with_weak(ty.weak_type));
            linj.invars[k] = v;
            pre.push(Eqn {
                primitive: SqueezeParams {
                    dimensions: vec![0],
                }
                .into(),
                inputs: vec![Atom::Var(v)],
                outputs: vec![Binder::Var(old)],
            });
        }
        pre.append(&mut linj.eqns);
        linj.eqns = pre;
        let rspec = residual_spec(sp);
        let mut kouts = sp.out_specs.clone();
        kouts.extend(std::iter::repeat_n(rspec.clone(), nres));
        let known_p = with_body(
            sp,
            ClosedJaxpr {
                jaxpr: Arc::new(kj),
                consts: lj.known.consts,
            },
            sp.in_specs.clone(),
            kouts,
        );
        let mut known = bind(&known_p, x)?;
        let res = known.split_off(n);
        let mut largs = res;
        largs.extend(t.iter().flatten().cloned());
        let mut lins = vec![rspec; nres];
        lins.extend(pick(&sp.in_specs, &nonzero));
        let tangents = if lj.out_nonzero.iter().any(|m| *m) {
            let lin_p = with_body(
                sp,
                ClosedJaxpr {
                    jaxpr: Arc::new(linj),
                    consts: lj.linear.consts,
                },
                lins,
                pick(&sp.out_specs, &lj.out_nonzero),
            );
            bind(&lin_p, &largs)?
        } else {
            Vec::new()
        };
        return Ok((known, spread(tangents, &lj.out_nonzero)));
    }
    let (jj, out_nz) = jvp_jaxpr(&sp.jaxpr, &nonzero, &[])?;
    let mut args = x.to_vec();
    args.extend(t.iter().flatten().cloned());
    let mut ins = sp.in_specs.clone();
    ins.extend(pick(&sp.in_specs, &nonzero));
    let mut outs = sp.out_specs.clone();
    outs.extend(pick(&sp.out_specs, &out_nz));
    let res = bind(&with_body(sp, jj, ins, outs), &args)?;
    Ok(split_outs(res, n, &out_nz))
}

/// The mesh axes a spec does not name.
fn unmentioned(sp: &ShardMapParams, spec: &PartitionSpec) -> Vec<String> {
    let named = spec.all_axes();
    sp.mesh
        .axes
        .iter()
        .filter(|(a, _)| !named.contains(&a.as_str()))
        .map(|(a, _)| a.clone())
        .collect()
}

/// `shard_map`: the body's transpose, inside a `shard_map` again.
pub(super) fn transpose(
    sp: &ShardMapParams,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let body = &sp.jaxpr;
    let linear: Vec<bool> = args.iter().map(LinArg::is_linear).collect();
    let tj = transpose_jaxpr(body, &linear)?;
    let rewrite = sp.check_vma;
    let mut operands = values(args);
    let nvals = operands.len();
    for (c, o) in cts.iter().zip(body.jaxpr.outvars.iter()) {
        let aval = body
            .jaxpr
            .atom_aval(o)
            .ok_or_else(|| Error::InvalidArgument("shard_map: unbound outvar".into()))?;
        let sizes = aval
            .array()
            .static_sizes()
            .ok_or_else(|| Error::Unsupported("shard_map of a dynamic shape".into()))?;
        operands.push(match c {
            Some(c) => c.clone(),
            None => {
                let spec = &sp.out_specs[operands.len() - nvals];
                let global = sp
                    .mesh
                    .global_sizes(spec, &sizes)
                    .map_err(Error::InvalidArgument)?;
                jnp::zeros(&global, aval.dtype())?
            }
        });
    }
    let mut ins = pick(&sp.in_specs, &linear.iter().map(|l| !l).collect::<Vec<_>>());
    ins.extend(sp.out_specs.iter().cloned());
    let outs_specs = pick(&sp.in_specs, &linear);
    // The per-device program: scale replicated cotangents, run the body's
    // transpose, sum input cotangents over the axes their specs do not name.
    let tin: Vec<jaxon_ir::Aval> = tj.jaxpr.in_avals();
    let out_div: Vec<usize> = sp
        .out_specs
        .iter()
        .map(|s| {
            unmentioned(sp, s)
                .iter()
                .map(|a| sp.mesh.axis_size(a).unwrap_or(1))
                .product()
        })
        .collect();
    let in_sum: Vec<Vec<String>> = outs_specs.iter().map(|s| unmentioned(sp, s)).collect();
    let staged = trace_flat(StageMode::Base, &tin, |mut xs| {
        if !rewrite {
            for (k, div) in out_div.iter().enumerate() {
                let i = nvals + k;
                if *div > 1 && xs[i].dtype().is_inexact() {
                    let d = crate::util::scalar_like(&xs[i], *div as f64)?;
                    xs[i] = lax::div(&xs[i], &d)?;
                }
            }
        }
        let mut outs = jaxon_trace::interpret::eval_closed_jaxpr(&tj, &xs)?;
        if !rewrite {
            for (o, axes) in outs.iter_mut().zip(&in_sum) {
                if !axes.is_empty() {
                    let refs: Vec<AxisRef> =
                        axes.iter().map(|a| AxisRef::Name(a.clone())).collect();
                    *o = reduce_axes(o, CollectiveOp::Sum, &refs)?;
                }
            }
        }
        Ok(outs)
    })?;
    let wrapped = close(staged)?;
    let outs = bind(&with_body(sp, wrapped, ins, outs_specs), &operands)?;
    let mut it = outs.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next() } else { None })
        .collect())
}

/// `shard_map`: the same mesh around the batched body, the batch dimension
/// leading and unsplit.
pub(super) fn batch(
    sp: &ShardMapParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    if let Some(a) = axis {
        if sp.mesh.axis_pos(a).is_some() {
            return Err(Error::Unsupported(format!(
                "vmap with axis_name '{a}' of a shard_map whose mesh has an axis of that name"
            )));
        }
    }
    let args = fronted(x, d, n)?;
    let m = mask(d);
    let (bj, ob) = crate::batch::batch_jaxpr_named(&sp.jaxpr, &m, n, axis, &[])?;
    let lead = |s: &PartitionSpec| {
        let mut e = vec![SpecEntry::None];
        e.extend(s.0.iter().cloned());
        PartitionSpec(e)
    };
    let ins = sp
        .in_specs
        .iter()
        .zip(&m)
        .map(|(s, b)| if *b { lead(s) } else { s.clone() })
        .collect();
    let outs = sp
        .out_specs
        .iter()
        .zip(&ob)
        .map(|(s, b)| if *b { lead(s) } else { s.clone() })
        .collect();
    let res = bind(&with_body(sp, bj, ins, outs), &args)?;
    Ok((res, super::dims_of(&ob)))
}
