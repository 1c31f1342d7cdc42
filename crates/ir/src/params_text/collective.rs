//! Params text of the named-axis collectives as JAX prints them:
//! `psum[axes=('i', 0) axis_index_groups=None]`, `all_gather[..
//! axis_name=('i',) ..]`, `axis_index[axis_name=i]`.

use super::codec::{tuple, Bool, Num};
use super::{bad, Codec, ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::{AllGatherParams, AllReduceParams, AxisIndexParams, AxisRef, CollectiveOp};
use crate::print::PV;

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// A quoted axis name (`'i'`) without its quotes.
fn name_of(cx: &ParseCx<'_, '_, '_>, v: &Src) -> PResult<String> {
    let s = cx.p.src(v);
    match &v.v {
        PValue::Str if s.len() >= 2 => Ok(s[1..s.len() - 1].to_string()),
        _ => Err(bad(cx, v, "a quoted axis name")),
    }
}

/// `axis_index_groups` must be `None`: groups are not supported (by
/// `vmap` or by `shard_map`).
pub(super) fn no_groups(cx: &ParseCx<'_, '_, '_>) -> PResult<()> {
    match cx.p.get("axis_index_groups") {
        Some(v) if !Params::is_none(v) => Err(bad(
            cx,
            v,
            "axis_index_groups=None (groups are not supported)",
        )),
        _ => Ok(()),
    }
}

/// `psum`, `pmax`, `pmin`: the op comes from the name.
impl ParamsText for AllReduceParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push((
            "axes",
            text(tuple(self.axes.iter().map(|a| a.repr()).collect())),
        ));
        out.push(("axis_index_groups", text("None")));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        no_groups(cx)?;
        let op = CollectiveOp::ALL
            .into_iter()
            .find(|o| o.name() == cx.name)
            .ok_or_else(|| {
                cx.p.err(cx.p.pos, format!("unknown collective `{}`", cx.name))
            })?;
        let p = cx.p;
        let axes = p
            .items_of(p.req("axes")?)?
            .iter()
            .map(|a| match &a.v {
                PValue::Str => name_of(cx, a).map(AxisRef::Name),
                _ => p.usize_of(a).map(AxisRef::Pos),
            })
            .collect::<PResult<Vec<_>>>()?;
        Ok(AllReduceParams { op, axes })
    }
}

/// A bare `axis_name='i'` is read as the tuple `('i',)`.
impl ParamsText for AllGatherParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push((
            "all_gather_dimension",
            Num::print(&self.all_gather_dimension),
        ));
        out.push(("axis_index_groups", text("None")));
        let names = self.axis_name.iter().map(|n| format!("'{n}'")).collect();
        out.push(("axis_name", text(tuple(names))));
        out.push(("axis_size", Num::print(&self.axis_size)));
        out.push(("tiled", Bool::print(&self.tiled)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        no_groups(cx)?;
        let p = cx.p;
        let v = p.req("axis_name")?;
        let axis_name = match &v.v {
            PValue::Str => vec![name_of(cx, v)?],
            _ => p
                .items_of(v)?
                .iter()
                .map(|a| name_of(cx, a))
                .collect::<PResult<Vec<_>>>()?,
        };
        Ok(AllGatherParams {
            axis_name,
            all_gather_dimension: cx.field::<Num, _>("all_gather_dimension", None)?,
            axis_size: cx.field::<Num, _>("axis_size", None)?,
            tiled: cx.field::<Bool, _>("tiled", Some(false))?,
        })
    }
}

/// The name is printed with `str`, unquoted.
impl ParamsText for AxisIndexParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("axis_name", text(self.axis_name.clone())));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let v = cx.p.req("axis_name")?;
        let axis_name = match &v.v {
            PValue::Str => name_of(cx, v)?,
            PValue::Word(w) => w.clone(),
            _ => return Err(bad(cx, v, "an axis name")),
        };
        Ok(AxisIndexParams { axis_name })
    }
}
