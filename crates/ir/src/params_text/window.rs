//! Params text of the window family: `reduce_window_*` (the op comes from
//! the printed name), the generic `reduce_window` (its combiner printed
//! inline, `consts=()`), `select_and_scatter_add` and `select_and_gather_add`.

use super::arrays::{op_named, Padding};
use super::codec::{Axes, Word};
use super::{Codec, ParamsText, ParseCx, PrintCx, Printed};
use crate::parse::build::bare;
use crate::parse::syntax::PResult;
use crate::primitive::*;
use crate::print::PV;

/// Pushes the geometry's params, in JAX's (sorted) order.
fn print_geometry<'a>(w: &'a WindowGeometry, out: &mut Printed<'a>) {
    out.push(("base_dilation", Axes::print(&w.base_dilation)));
    out.push(("padding", Padding::print(&w.padding)));
    out.push(("window_dilation", Axes::print(&w.window_dilation)));
    out.push(("window_dimensions", Axes::print(&w.window_dimensions)));
    out.push(("window_strides", Axes::print(&w.window_strides)));
}

fn parse_geometry(cx: &mut ParseCx<'_, '_, '_>) -> PResult<WindowGeometry> {
    Ok(WindowGeometry {
        window_dimensions: cx.field::<Axes, _>("window_dimensions", None)?,
        window_strides: cx.field::<Axes, _>("window_strides", None)?,
        padding: cx.field::<Padding, _>("padding", None)?,
        base_dilation: cx.field::<Axes, _>("base_dilation", None)?,
        window_dilation: cx.field::<Axes, _>("window_dilation", None)?,
    })
}

fn parse_select(cx: &mut ParseCx<'_, '_, '_>) -> PResult<SelectPrim> {
    let w: String = cx.field::<Word, _>("select_prim", None)?;
    match w.as_str() {
        "ge" => Ok(SelectPrim::Ge),
        "le" => Ok(SelectPrim::Le),
        _ => Err(cx.p.err(
            cx.p.pos,
            format!("select_prim `{w}`: expected `ge` or `le`"),
        )),
    }
}

impl ParamsText for ReduceWindowParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        print_geometry(&self.window, out);
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(ReduceWindowParams {
            op: op_named(cx, &WindowOp::ALL, WindowOp::name)?,
            window: parse_geometry(cx)?,
        })
    }
}

/// JAX prints `consts` (values the combiner closes over) before `jaxpr`;
/// jaxon's combiners close over nothing, so only `()` is read.
impl ParamsText for GenericReduceWindowParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("base_dilation", Axes::print(&self.window.base_dilation)));
        out.push(("consts", PV::Text("()".to_string())));
        out.push(("jaxpr", PV::Jaxpr(&self.jaxpr)));
        out.push(("padding", Padding::print(&self.window.padding)));
        out.push(("window_dilation", Axes::print(&self.window.window_dilation)));
        out.push((
            "window_dimensions",
            Axes::print(&self.window.window_dimensions),
        ));
        out.push(("window_strides", Axes::print(&self.window.window_strides)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        let p = cx.p;
        if let Some(v) = p.get("consts") {
            if !p.items_of(v)?.is_empty() {
                return Err(p.bad(
                    v,
                    "`()`: a combiner closing over constants is not supported",
                ));
            }
        }
        let jaxpr = match p.get("jaxpr") {
            Some(v) => bare(cx.b.jaxpr_param(p, v)?),
            None => {
                return Err(cx
                    .p
                    .err(cx.p.pos, "reduce_window: missing param `jaxpr`".to_string()))
            }
        };
        Ok(GenericReduceWindowParams {
            jaxpr,
            window: parse_geometry(cx)?,
        })
    }
}

impl ParamsText for SelectAndScatterAddParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("padding", Padding::print(&self.padding)));
        out.push(("select_prim", PV::Text(self.select_prim.name().to_string())));
        out.push(("window_dimensions", Axes::print(&self.window_dimensions)));
        out.push(("window_strides", Axes::print(&self.window_strides)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(SelectAndScatterAddParams {
            select_prim: parse_select(cx)?,
            window_dimensions: cx.field::<Axes, _>("window_dimensions", None)?,
            window_strides: cx.field::<Axes, _>("window_strides", None)?,
            padding: cx.field::<Padding, _>("padding", None)?,
        })
    }
}

impl ParamsText for SelectAndGatherAddParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("base_dilation", Axes::print(&self.window.base_dilation)));
        out.push(("padding", Padding::print(&self.window.padding)));
        out.push(("select_prim", PV::Text(self.select_prim.name().to_string())));
        out.push(("window_dilation", Axes::print(&self.window.window_dilation)));
        out.push((
            "window_dimensions",
            Axes::print(&self.window.window_dimensions),
        ));
        out.push(("window_strides", Axes::print(&self.window.window_strides)));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        Ok(SelectAndGatherAddParams {
            select_prim: parse_select(cx)?,
            window: parse_geometry(cx)?,
        })
    }
}
