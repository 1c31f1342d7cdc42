//! Params text of the callback family as JAX prints it:
//! `debug_print[fmt=x={} has_placeholders=True in_tree=PyTreeDef(((*,), {}))
//! ..]`, `debug_callback[callback=<function ..> effect=Debug ..]` and
//! `pure_callback[callback=_FlatCallback(..) result_avals=(..) ..]`. The
//! format string, the trees and the callbacks are read as raw text to the
//! end of their line (`parse::params`), since they are not Python reprs.

use super::codec::{py_bool, tuple};
use super::pallas::{shaped_array, shaped_array_of};
use super::{bad, ParamsText, ParseCx, PrintCx, Printed};
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::{DebugCallbackParams, DebugPrintParams, HostCallback, PureCallbackParams};
use crate::print::PV;

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// The source text of param `key`.
fn src(cx: &ParseCx<'_, '_, '_>, key: &str) -> PResult<String> {
    Ok(cx.p.src(cx.p.req(key)?))
}

fn boolean(cx: &ParseCx<'_, '_, '_>, key: &str) -> PResult<bool> {
    cx.p.bool_of(cx.p.req(key)?)
}

impl ParamsText for DebugPrintParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("fmt", text(self.fmt.clone())));
        out.push(("has_placeholders", text(py_bool(self.has_placeholders))));
        out.push(("in_tree", text(self.in_tree.clone())));
        out.push(("logging_record", text(self.logging_record.clone())));
        out.push(("np_printoptions", text(self.np_printoptions.clone())));
        out.push(("ordered", text(py_bool(self.ordered))));
        out.push(("partitioned", text(py_bool(self.partitioned))));
        out.push(("static_args", text(self.static_args.clone())));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let params = DebugPrintParams {
            fmt: src(cx, "fmt")?,
            has_placeholders: boolean(cx, "has_placeholders")?,
            in_tree: src(cx, "in_tree")?,
            logging_record: src(cx, "logging_record")?,
            np_printoptions: src(cx, "np_printoptions")?,
            ordered: boolean(cx, "ordered")?,
            partitioned: boolean(cx, "partitioned")?,
            static_args: src(cx, "static_args")?,
        };
        let v = cx.p.req("in_tree")?;
        match params.arg_names() {
            Ok((n, names)) if n + names.len() == cx.n_inputs => Ok(params),
            _ => Err(bad(
                cx,
                v,
                &format!("a tree of {} leaves, one per operand", cx.n_inputs),
            )),
        }
    }
}

impl ParamsText for DebugCallbackParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("callback", text(self.callback.text.clone())));
        out.push(("effect", text(self.effect.clone())));
        out.push(("partitioned", text(py_bool(self.partitioned))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let effect = src(cx, "effect")?;
        if effect != "Debug" && effect != "OrderedDebug" {
            return Err(bad(cx, cx.p.req("effect")?, "`Debug` or `OrderedDebug`"));
        }
        Ok(DebugCallbackParams {
            callback: HostCallback::parsed(src(cx, "callback")?),
            effect,
            partitioned: boolean(cx, "partitioned")?,
        })
    }
}

impl ParamsText for PureCallbackParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("callback", text(self.callback.text.clone())));
        let avals = self.result_avals.iter().map(shaped_array).collect();
        out.push(("result_avals", text(tuple(avals))));
        out.push(("sharding", text(self.sharding.clone())));
        let method = self.vmap_method.clone().unwrap_or_else(|| "None".into());
        out.push(("vmap_method", text(method)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        let avals = p.req("result_avals")?;
        let result_avals = p
            .items_of(avals)?
            .iter()
            .map(|a| shaped_array_of(p, a))
            .collect::<PResult<Vec<_>>>()?;
        let method = p.req("vmap_method")?;
        let vmap_method = match &method.v {
            _ if Params::is_none(method) => None,
            PValue::Word(w) => Some(w.clone()),
            _ => return Err(bad(cx, method, "a vmap method name or `None`")),
        };
        Ok(PureCallbackParams {
            callback: HostCallback::parsed(src(cx, "callback")?),
            result_avals,
            sharding: src(cx, "sharding")?,
            vmap_method,
        })
    }
}
