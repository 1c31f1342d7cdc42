//! Params of the named-axis collectives as JAX prints them:
//! `psum[axes=('i', 0) axis_index_groups=None]`, `all_gather[..
//! axis_name=('i',) ..]`, `axis_index[axis_name=i]`.

use super::params::{PValue, Params, PV};
use super::syntax::PResult;
use crate::primitive::{AllGatherParams, AllReduceParams, AxisIndexParams};
use crate::primitive::{AxisRef, CollectiveOp, Primitive};

/// A quoted axis name (`'i'`) without its quotes.
fn name_of(p: &Params, v: &PV) -> PResult<String> {
    let s = p.src(v);
    match &v.v {
        PValue::Str if s.len() >= 2 => Ok(s[1..s.len() - 1].to_string()),
        _ => Err(p.err(v.start, format!("expected a quoted axis name, found `{s}`"))),
    }
}

/// `axis_index_groups` must be `None`: groups are not supported by vmap.
fn no_groups(p: &Params) -> PResult<()> {
    match p.get("axis_index_groups") {
        Some(v) if !Params::is_none(v) => Err(p.err(
            v.start,
            format!(
                "expected axis_index_groups=None (groups are not supported), found `{}`",
                p.src(v)
            ),
        )),
        _ => Ok(()),
    }
}

/// `psum`, `pmax`, `pmin`.
pub(crate) fn all_reduce(p: &Params, op: CollectiveOp) -> PResult<Primitive> {
    no_groups(p)?;
    let axes = p
        .items_of(p.req("axes")?)?
        .iter()
        .map(|a| match &a.v {
            PValue::Str => name_of(p, a).map(AxisRef::Name),
            _ => p.usize_of(a).map(AxisRef::Pos),
        })
        .collect::<PResult<Vec<_>>>()?;
    Ok(Primitive::from(AllReduceParams { op, axes }))
}

/// `all_gather`; a bare `axis_name='i'` is read as the tuple `('i',)`.
pub(crate) fn all_gather(p: &Params) -> PResult<Primitive> {
    no_groups(p)?;
    let v = p.req("axis_name")?;
    let axis_name = match &v.v {
        PValue::Str => vec![name_of(p, v)?],
        _ => p
            .items_of(v)?
            .iter()
            .map(|a| name_of(p, a))
            .collect::<PResult<Vec<_>>>()?,
    };
    Ok(Primitive::from(AllGatherParams {
        axis_name,
        all_gather_dimension: p.usize("all_gather_dimension")?,
        axis_size: p.usize("axis_size")?,
        tiled: p.bool_or("tiled", false)?,
    }))
}

/// `axis_index[axis_name=i]` (the name printed with `str`, unquoted).
pub(crate) fn axis_index(p: &Params) -> PResult<Primitive> {
    let v = p.req("axis_name")?;
    let axis_name = match &v.v {
        PValue::Str => name_of(p, v)?,
        PValue::Word(w) => w.clone(),
        _ => {
            return Err(p.err(
                v.start,
                format!("expected an axis name, found `{}`", p.src(v)),
            ))
        }
    };
    Ok(Primitive::from(AxisIndexParams { axis_name }))
}
