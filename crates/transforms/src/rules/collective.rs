//! Rules of the named-axis collectives (`psum`, `pmax`, `pmin`,
//! `all_gather`, `axis_index`): jvp, transpose and batching, side by side.
//!
//! Jvp: `psum` and `all_gather` are linear; `pmax`/`pmin` give the mean of
//! the tangents of the members that attain the extremum (as `reduce_max`
//! does over positional axes).
//!
//! Transpose: as in JAX, `psum` is treated as psum + pbroadcast, so its
//! transpose over named axes is `psum` again; positional axes transpose to
//! a broadcast. `all_gather`'s transpose (JAX's `psum_scatter`) is this
//! member's slice of the summed cotangent.
//!
//! Batching (JAX's fancy batchers: called even when no operand is
//! batched): a collective over this vmap's name reduces over the batch
//! dim; over other names it passes through, its positional axes shifted
//! past the batch dim. The trace-level collectives and the axis env are
//! `batch/collectives.rs`.

use super::{ct, not_linear, only, BatchOuts, Cts, JvpOuts};
use crate::batch::collectives::{gather_like, reduce_axes};
use crate::batch::moveaxis;
use crate::transpose::LinArg;
use jaxon_ir::primitive::{
    AllGatherParams, AllReduceParams, AllToAllParams, AxisIndexParams, Collective, PpermuteParams,
    PsumInvariantParams, PvaryParams, ReduceScatterParams,
};
use jaxon_ir::primitive::{AxisRef, CollectiveOp};
use jaxon_ir::{DType, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, bind1, lax, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(
    c: &Collective,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    match c {
        Collective::AllReduce(AllReduceParams { op, axes }) => {
            let y = reduce_axes(&x[0], *op, axes)?;
            let Some(t) = &t[0] else {
                return Ok((vec![y], vec![None]));
            };
            let dt = match op {
                CollectiveOp::Sum => reduce_axes(t, *op, axes)?,
                CollectiveOp::Max | CollectiveOp::Min => {
                    let shape = x[0].try_shape()?;
                    let pos: Vec<usize> = axes
                        .iter()
                        .filter_map(|a| match a {
                            AxisRef::Pos(p) => Some(*p),
                            AxisRef::Name(_) => None,
                        })
                        .collect();
                    let keep: Vec<usize> = (0..shape.len()).filter(|d| !pos.contains(d)).collect();
                    let yb = lax::broadcast_in_dim(&y, &shape, &keep)?;
                    let hit =
                        lax::convert_element_type(&lax::eq(&x[0], &yb)?, x[0].dtype(), false)?;
                    let count = reduce_axes(&hit, CollectiveOp::Sum, axes)?;
                    let num = reduce_axes(&lax::mul(t, &hit)?, CollectiveOp::Sum, axes)?;
                    lax::div(&num, &count)?
                }
            };
            Ok((vec![y], vec![Some(dt)]))
        }
        Collective::AllGather(gp) => {
            let y = gather_like(gp, &x[0])?;
            let dt = t[0].as_ref().map(|t| gather_like(gp, t)).transpose()?;
            Ok((vec![y], vec![dt]))
        }
        Collective::AxisIndex(AxisIndexParams { axis_name }) => Ok((
            vec![crate::batch::axis_index(axis_name).or_else(|_| {
                bind(p, &[])?
                    .pop()
                    .ok_or_else(|| Error::InvalidArgument("axis_index: no result".into()))
            })?],
            vec![None],
        )),
        // Linear in their operand.
        Collective::Ppermute(_)
        | Collective::AllToAll(_)
        | Collective::ReduceScatter(_)
        | Collective::Pvary(_)
        | Collective::PsumInvariant(_) => {
            let y = bind1(p, &x[..1])?;
            let dt = t[0]
                .as_ref()
                .map(|t| bind1(p, std::slice::from_ref(t)))
                .transpose()?;
            Ok((vec![y], vec![dt]))
        }
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    c: &Collective,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match c {
        Collective::AllReduce(AllReduceParams {
            op: CollectiveOp::Sum,
            axes,
        }) => Ok(only(
            args,
            0,
            psum_transpose(axes, args[0].ty(), &ct(cts)?)?,
        )),
        Collective::AllGather(gp) => Ok(only(
            args,
            0,
            all_gather_transpose(gp, p, args[0].ty(), &ct(cts)?)?,
        )),
        Collective::AllReduce(_) | Collective::AxisIndex(_) => not_linear(p),
        Collective::Ppermute(pp) => {
            let inverse = PpermuteParams {
                axis_name: pp.axis_name.clone(),
                perm: pp.perm.iter().map(|(s, d)| (*d, *s)).collect(),
            };
            Ok(only(args, 0, bind1(&inverse.into(), &[ct(cts)?])?))
        }
        Collective::AllToAll(ap) => {
            let back = AllToAllParams {
                split_axis: ap.concat_axis,
                concat_axis: ap.split_axis,
                ..ap.clone()
            };
            Ok(only(args, 0, bind1(&back.into(), &[ct(cts)?])?))
        }
        Collective::ReduceScatter(rp) => {
            let gather = AllGatherParams {
                axis_name: rp.axis_name.clone(),
                all_gather_dimension: rp.scatter_dimension,
                axis_size: rp.axis_size,
                tiled: rp.tiled,
            };
            Ok(only(args, 0, bind1(&gather.into(), &[ct(cts)?])?))
        }
        Collective::Pvary(vp) => {
            let sum = PsumInvariantParams {
                axes: vp.axes.clone(),
            };
            Ok(only(args, 0, bind1(&sum.into(), &[ct(cts)?])?))
        }
        Collective::PsumInvariant(sp) => {
            let vary = PvaryParams {
                axes: sp.axes.clone(),
            };
            Ok(only(args, 0, bind1(&vary.into(), &[ct(cts)?])?))
        }
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    c: &Collective,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    let here = |a: &str| name == Some(a);
    match c {
        Collective::AllReduce(ap) => all_reduce_batch(ap, p, x, d, n, name),
        Collective::AllGather(gp) => all_gather_batch(gp, p, x, d, n, name),
        Collective::AxisIndex(AxisIndexParams { axis_name }) => {
            if here(axis_name) {
                Ok((vec![lax::iota(DType::I32, n)?], vec![Some(0)]))
            } else {
                Ok((vec![bind1(p, &[])?], vec![None]))
            }
        }
        Collective::Ppermute(PpermuteParams { axis_name, .. })
        | Collective::Pvary(PvaryParams { axes: axis_name })
        | Collective::PsumInvariant(PsumInvariantParams { axes: axis_name }) => {
            if axis_name.iter().any(|a| here(a)) {
                return mesh_only(p);
            }
            // Elementwise in the operand: the batch dim stays where it is.
            let (v, d) = one(p, x, d)?;
            Ok((vec![bind1(p, &[v])?], vec![d]))
        }
        Collective::AllToAll(ap) => {
            if ap.axis_name.iter().any(|a| here(a)) {
                return mesh_only(p);
            }
            let (v, d) = one(p, x, d)?;
            let Some(d) = d else {
                return Ok((vec![bind1(p, &[v])?], vec![None]));
            };
            let q = AllToAllParams {
                split_axis: ap.split_axis + 1,
                concat_axis: ap.concat_axis + 1,
                ..ap.clone()
            };
            Ok((
                vec![bind1(&q.into(), &[moveaxis(&v, d, 0)?])?],
                vec![Some(0)],
            ))
        }
        Collective::ReduceScatter(rp) => {
            if rp.axis_name.iter().any(|a| here(a)) {
                return mesh_only(p);
            }
            let (v, d) = one(p, x, d)?;
            let Some(d) = d else {
                return Ok((vec![bind1(p, &[v])?], vec![None]));
            };
            let q = ReduceScatterParams {
                scatter_dimension: rp.scatter_dimension + 1,
                ..rp.clone()
            };
            Ok((
                vec![bind1(&q.into(), &[moveaxis(&v, d, 0)?])?],
                vec![Some(0)],
            ))
        }
    }
}

/// `psum`/`pmax`/`pmin`: over this vmap's name, a reduction over the
/// batch dim; over other names, the same collective with positional axes
/// shifted past the batch dim.
fn all_reduce_batch(
    ap: &AllReduceParams,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    let here = |a: &str| name == Some(a);
    let AllReduceParams { op, axes } = ap;
    let (v, d) = one(p, x, d)?;
    let mine = axes.iter().any(|a| a.name().is_some_and(here));
    let rest: Vec<AxisRef> = axes
        .iter()
        .filter(|a| !a.name().is_some_and(here))
        .cloned()
        .collect();
    let shifted = |mut axes: Vec<AxisRef>| {
        for a in &mut axes {
            if let AxisRef::Pos(p) = a {
                *p += 1;
            }
        }
        axes
    };
    let bind = |axes: Vec<AxisRef>, v: &Array| {
        bind1(
            &Primitive::from(AllReduceParams { op: *op, axes }),
            std::slice::from_ref(v),
        )
    };
    match (d, mine) {
        (None, false) => Ok((vec![bind(axes.clone(), &v)?], vec![None])),
        (None, true) => {
            let v = if rest.is_empty() { v } else { bind(rest, &v)? };
            let out = match op {
                CollectiveOp::Sum => lax::mul(&v, &crate::util::scalar_like(&v, n as f64)?)?,
                CollectiveOp::Max | CollectiveOp::Min => v,
            };
            Ok((vec![out], vec![None]))
        }
        (Some(d), false) if !axes.iter().any(|a| matches!(a, AxisRef::Pos(_))) => {
            Ok((vec![bind(axes.clone(), &v)?], vec![Some(d)]))
        }
        (Some(d), false) => {
            let v = moveaxis(&v, d, 0)?;
            Ok((vec![bind(shifted(axes.clone()), &v)?], vec![Some(0)]))
        }
        (Some(d), true) => {
            let v = moveaxis(&v, d, 0)?;
            let new: Vec<AxisRef> = axes
                .iter()
                .map(|a| match a {
                    AxisRef::Name(m) if here(m) => AxisRef::Pos(0),
                    AxisRef::Pos(p) => AxisRef::Pos(p + 1),
                    a => a.clone(),
                })
                .collect();
            Ok((vec![bind(new, &v)?], vec![None]))
        }
    }
}

/// `all_gather`: over this vmap's name (a single axis of its size), the
/// batch dim moved to the gather dimension; over other names, the same
/// gather with its dimension shifted past the batch dim.
fn all_gather_batch(
    gp: &AllGatherParams,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    let here = |a: &str| name == Some(a);
    let AllGatherParams {
        axis_name,
        all_gather_dimension,
        axis_size,
        tiled,
    } = gp;
    let (v, d) = one(p, x, d)?;
    let dim = *all_gather_dimension;
    if !axis_name.iter().any(|a| here(a)) {
        let (mut gd, mut od) = (dim, d);
        if let Some(bd) = d {
            if bd <= dim {
                gd += 1;
            } else if !tiled {
                od = Some(bd + 1);
            }
        }
        let q = Primitive::from(AllGatherParams {
            axis_name: axis_name.clone(),
            all_gather_dimension: gd,
            axis_size: *axis_size,
            tiled: *tiled,
        });
        return Ok((vec![bind1(&q, &[v])?], vec![od]));
    }
    if axis_name.len() > 1 || *axis_size != n {
        return Err(Error::Unsupported(format!(
            "all_gather over axes {axis_name:?} of size {axis_size} inside a vmap of \
             size {n}: only a single axis of the vmap's size is supported"
        )));
    }
    let shape = v.try_shape()?;
    let y = match d {
        None => {
            let mut out = shape.clone();
            out.insert(dim, n);
            let dims: Vec<usize> = (0..out.len()).filter(|&i| i != dim).collect();
            lax::broadcast_in_dim(&v, &out, &dims)?
        }
        Some(bd) => moveaxis(&v, bd, dim)?,
    };
    let y = if *tiled {
        let mut s = y.try_shape()?;
        let m = s.remove(dim + 1);
        s[dim] *= m;
        lax::reshape(&y, &s)?
    } else {
        y
    };
    Ok((vec![y], vec![None]))
}

// ---------------------------------------------------------- transpose --

/// The cotangent of `psum`'s operand (of type `ty`) from `ct`.
fn psum_transpose(axes: &[AxisRef], ty: &ShapedArray, ct: &Array) -> Result<Array> {
    let shape = ty.static_sizes().unwrap_or_default();
    let pos: Vec<usize> = axes
        .iter()
        .filter_map(|a| match a {
            AxisRef::Pos(p) => Some(*p),
            AxisRef::Name(_) => None,
        })
        .collect();
    let ct = if pos.is_empty() {
        ct.clone()
    } else {
        let keep: Vec<usize> = (0..shape.len()).filter(|d| !pos.contains(d)).collect();
        lax::broadcast_in_dim(ct, &shape, &keep)?
    };
    let named: Vec<AxisRef> = axes
        .iter()
        .filter(|a| a.name().is_some())
        .cloned()
        .collect();
    reduce_axes(&ct, CollectiveOp::Sum, &named)
}

/// The cotangent of `all_gather`'s operand (of type `ty`) from `ct`: an
/// untiled single-axis gather only.
fn all_gather_transpose(
    gp: &AllGatherParams,
    p: &Primitive,
    ty: &ShapedArray,
    ct: &Array,
) -> Result<Array> {
    let shape = ty.static_sizes().unwrap_or_default();
    // Over a shard_map's mesh axis (no vmap names it): JAX's psum_scatter.
    if gp
        .axis_name
        .iter()
        .all(|a| crate::batch::collectives::env_size(a).is_none())
    {
        let q = Primitive::from(ReduceScatterParams {
            axis_name: gp.axis_name.clone(),
            axis_size: gp.axis_size,
            scatter_dimension: gp.all_gather_dimension,
            tiled: gp.tiled,
        });
        return bind1(&q, std::slice::from_ref(ct));
    }
    match gp {
        AllGatherParams {
            axis_name,
            all_gather_dimension,
            tiled: false,
            ..
        } if axis_name.len() == 1 => {
            let name = &axis_name[0];
            let dim = *all_gather_dimension;
            let s = reduce_axes(ct, CollectiveOp::Sum, &[AxisRef::Name(name.clone())])?;
            let k = crate::batch::axis_index(name)?;
            let zero = lax::convert_element_type(&Array::weak(0.0), k.dtype(), false)?;
            let starts: Vec<Array> = (0..=shape.len())
                .map(|i| if i == dim { k.clone() } else { zero.clone() })
                .collect();
            let mut sizes = shape.clone();
            sizes.insert(dim, 1);
            let sl = lax::dynamic_slice_clamped(&s, &starts, &sizes)?;
            lax::reshape(&sl, &shape)
        }
        AllGatherParams { .. } => Err(Error::Unsupported(format!(
            "transposition of `{}` is not implemented (only psum and an untiled single-axis \
             all_gather are linear collectives here)",
            p.name()
        ))),
    }
}

// -------------------------------------------------------------- batch --

/// The mesh-only collectives over a vmap's own axis name.
fn mesh_only(p: &Primitive) -> Result<BatchOuts> {
    Err(Error::Unsupported(format!(
        "`{}` over a vmap's axis name: it is defined over a shard_map's mesh axes only",
        p.name()
    )))
}

fn one(p: &Primitive, x: &[Array], d: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
    match (x, d) {
        ([v], [d]) => Ok((v.clone(), *d)),
        _ => Err(Error::InvalidArgument(format!(
            "{} takes one operand, got {}",
            p.name(),
            x.len()
        ))),
    }
}
