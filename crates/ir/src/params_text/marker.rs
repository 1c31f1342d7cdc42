//! Params text of the marker primitives as JAX prints them:
//! `device_put[copy_semantics=(ArrayCopySemantics.REUSE_INPUT,) devices=(None,)
//! srcs=(None,)]` and `platform_index[platforms=(('mosaic',), None)]`.
//! (`name[name=..]` is a table row.)

use super::codec::tuple;
use super::{bad, ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::{DevicePutParams, OptimizationBarrierParams, PlatformIndexParams};
use crate::print::PV;

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// A tuple of values kept as written (`(None, None)`).
fn words(cx: &ParseCx<'_, '_, '_>, key: &str) -> PResult<Vec<String>> {
    let p = cx.p;
    Ok(p.items_of(p.req(key)?)?.iter().map(|v| p.src(v)).collect())
}

impl ParamsText for DevicePutParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("copy_semantics", text(tuple(self.copy_semantics.clone()))));
        out.push(("devices", text(tuple(self.devices.clone()))));
        out.push(("srcs", text(tuple(self.srcs.clone()))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(DevicePutParams {
            copy_semantics: words(cx, "copy_semantics")?,
            devices: words(cx, "devices")?,
            srcs: words(cx, "srcs")?,
        })
    }
}

/// A quoted platform name (`'cuda'`) without its quotes.
fn quoted(cx: &ParseCx<'_, '_, '_>, v: &Src) -> PResult<String> {
    let s = cx.p.src(v);
    match &v.v {
        PValue::Str if s.len() >= 2 => Ok(s[1..s.len() - 1].to_string()),
        _ => Err(bad(cx, v, "a quoted platform name")),
    }
}

/// `(('mosaic',), None)`: per branch, its platforms or `None`.
pub(crate) fn print_platforms(platforms: &[Option<Vec<String>>]) -> PV<'static> {
    let entries = platforms
        .iter()
        .map(|e| match e {
            None => "None".to_string(),
            Some(names) => tuple(names.iter().map(|n| format!("'{n}'")).collect()),
        })
        .collect();
    text(tuple(entries))
}

/// Reads [`print_platforms`]' form.
pub(crate) fn parse_platforms(
    cx: &ParseCx<'_, '_, '_>,
    v: &Src,
) -> PResult<Vec<Option<Vec<String>>>> {
    let p = cx.p;
    p.items_of(v)?
        .iter()
        .map(|e| {
            if Params::is_none(e) {
                return Ok(None);
            }
            p.items_of(e)?
                .iter()
                .map(|n| quoted(cx, n))
                .collect::<PResult<Vec<_>>>()
                .map(Some)
        })
        .collect()
}

impl ParamsText for PlatformIndexParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("platforms", print_platforms(&self.platforms)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let v = cx.p.req("platforms")?;
        Ok(PlatformIndexParams {
            platforms: parse_platforms(cx, v)?,
        })
    }
}

/// `optimization_barrier` prints no params.
impl ParamsText for OptimizationBarrierParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
    fn parse(_: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(OptimizationBarrierParams)
    }
}
