//! Params text of `pallas_call`: the kernel jaxpr, the grid mapping with
//! one `BlockMapping(...)` per operand and result, the result types, and
//! the constant params JAX prints (`compiler_params=None`, ...).
//!
//! JAX prints `grid_mapping` without the index maps; ours adds
//! `array_aval=` and `index_map={ lambda ... }` to each `BlockMapping(...)`
//! so that the text parses back:
//! `BlockMapping(block_shape=(Blocked(block_size=2),),
//! array_aval=ShapedArray(float32[4]), index_map={ lambda ; a:i32[]. let  in (a,) })`.
//! Read back without `array_aval=`, a mapping takes its operand's (or
//! result's) type.

use super::codec::{py_bool, tuple, usizes};
use super::{ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType;
use crate::parse::build::bare;
use crate::parse::params::{PValue, Params};
use crate::parse::syntax::PResult;
use crate::primitive::{BlockDim, BlockMapping, PallasCallParams};
use crate::print::{Part, PV};

fn text(s: impl Into<String>) -> PV<'static> {
    PV::Text(s.into())
}

/// `ShapedArray(float32[4,4])`, as `str(ShapedArray)` prints.
pub(super) fn shaped_array(a: &ShapedArray) -> String {
    let dims: Vec<String> = a
        .shape
        .iter()
        .map(|d| match d {
            Dim::Const(n) => n.to_string(),
            Dim::Var(v) => format!("v{}", v.0),
        })
        .collect();
    let weak = if a.weak_type { ", weak_type=True" } else { "" };
    format!(
        "ShapedArray({}[{}]{weak})",
        a.dtype.numpy_name(),
        dims.join(",")
    )
}

/// One `BlockMapping(block_shape=.., array_aval=.., index_map={ .. })`.
fn block_mapping<'a>(b: &'a BlockMapping, parts: &mut Vec<Part<'a>>) {
    let dims: Vec<String> = b
        .block_shape
        .iter()
        .map(|d| match d {
            BlockDim::Blocked(n) => format!("Blocked(block_size={n})"),
            BlockDim::Squeezed => "Squeezed()".to_string(),
        })
        .collect();
    parts.push(Part::Text(format!(
        "BlockMapping(block_shape={}, array_aval={}, index_map=",
        tuple(dims),
        shaped_array(&b.array_aval)
    )));
    parts.push(Part::Jaxpr(&b.index_map.jaxpr));
    parts.push(Part::Text(")".to_string()));
}

impl ParamsText for PallasCallParams {
    fn print<'a>(&'a self, _: &PrintCx<'_>, out: &mut Printed<'a>) {
        out.push(("compiler_params", text("None")));
        out.push(("cost_estimate", text("None")));
        out.push(("debug", text(py_bool(self.debug))));
        let mut parts = vec![Part::Text(format!(
            "GridMapping(grid={}, block_mappings=(",
            usizes(&self.grid)
        ))];
        for (i, b) in self.block_mappings.iter().enumerate() {
            if i > 0 {
                parts.push(Part::Text(", ".into()));
            }
            block_mapping(b, &mut parts);
        }
        let close = if self.block_mappings.len() == 1 {
            ",))"
        } else {
            "))"
        };
        parts.push(Part::Text(close.to_string()));
        out.push(("grid_mapping", PV::Parts(parts)));
        let aliases = self
            .input_output_aliases
            .iter()
            .map(|(a, b)| format!("({a}, {b})"))
            .collect();
        out.push(("input_output_aliases", text(tuple(aliases))));
        out.push(("interpret", text(py_bool(self.interpret))));
        out.push(("jaxpr", PV::Jaxpr(&self.kernel)));
        out.push(("mesh", text("None")));
        out.push(("metadata", text("None")));
        let name = self.name.clone().unwrap_or_else(|| "None".into());
        out.push(("name", text(name)));
        let avals = self.out_avals.iter().map(shaped_array).collect();
        out.push(("out_avals", text(tuple(avals))));
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
        // Hints to XLA's kernel compilers, which jaxon's backends do not
        // take; they change nothing that the kernel computes.
        cx.ignored(&["compiler_params", "cost_estimate", "metadata"]);
        cx.constant("mesh", "None")?;
        let p = cx.p;
        let kernel = bare(cx.b.jaxpr_param(p, p.req("jaxpr")?)?);
        let out_avals: Vec<ShapedArray> = match p.get("out_avals") {
            Some(v) => p
                .items_of(v)?
                .iter()
                .map(|x| shaped_array_of(p, x))
                .collect::<PResult<_>>()?,
            None => Vec::new(),
        };
        let (grid, block_mappings) = match p.get("grid_mapping") {
            Some(gm) => grid_mapping(cx, gm, &out_avals)?,
            None => (Vec::new(), Vec::new()),
        };
        let input_output_aliases = match p.get("input_output_aliases") {
            None => Vec::new(),
            Some(v) => p
                .items_of(v)?
                .iter()
                .map(|x| {
                    let pr = p.usizes_of(x)?;
                    match pr.as_slice() {
                        [a, o] => Ok((*a, *o)),
                        _ => Err(p.err(
                            x.start,
                            format!("expected `(input, output)`, found `{}`", p.src(x)),
                        )),
                    }
                })
                .collect::<PResult<_>>()?,
        };
        Ok(PallasCallParams {
            kernel,
            grid,
            block_mappings,
            out_avals,
            name: match p.get("name") {
                None => None,
                Some(v) if Params::is_none(v) => None,
                Some(v) => Some(p.src(v)),
            },
            interpret: p.bool_or("interpret", false)?,
            debug: p.bool_or("debug", false)?,
            input_output_aliases,
        })
    }
}

/// `ShapedArray(float32[4])` (or a bare `float32[4]`).
pub(super) fn shaped_array_of(p: &Params, x: &Src) -> PResult<ShapedArray> {
    match &x.v {
        PValue::Call(_, args) => match args.as_slice() {
            [(
                _,
                Src {
                    v: PValue::Type(t), ..
                },
            )] => Ok(t.clone()),
            _ => Err(p.err(
                x.start,
                format!("expected `ShapedArray(dtype[shape])`, found `{}`", p.src(x)),
            )),
        },
        PValue::Type(t) => Ok(t.clone()),
        _ => Err(p.err(
            x.start,
            format!("expected `ShapedArray(dtype[shape])`, found `{}`", p.src(x)),
        )),
    }
}

/// `GridMapping(grid=(..), block_mappings=(BlockMapping(..), ..))`.
fn grid_mapping(
    cx: &mut ParseCx<'_, '_, '_>,
    gm: &Src,
    out_avals: &[ShapedArray],
) -> PResult<(Vec<usize>, Vec<BlockMapping>)> {
    let p = cx.p;
    let args = p.kwargs_of(gm, "GridMapping")?;
    let grid = p.usizes_of(p.kwarg(args, "grid", gm)?)?;
    let bms = p.kwarg(args, "block_mappings", gm)?;
    let mut block_mappings = Vec::new();
    for (k, bm) in p.items_of(bms)?.iter().enumerate() {
        let bargs = p.kwargs_of(bm, "BlockMapping")?;
        let bs = p.kwarg(bargs, "block_shape", bm)?;
        let mut block_shape = Vec::new();
        for d in p.items_of(bs)? {
            block_shape.push(match &d.v {
                PValue::Word(w) if w == "None" || w.ends_with("Squeezed") => BlockDim::Squeezed,
                PValue::Call(n, a) if n.ends_with("Squeezed") && a.is_empty() => BlockDim::Squeezed,
                PValue::Call(_, a) => match a.as_slice() {
                    [(_, x)] => BlockDim::Blocked(p.usize_of(x)?),
                    _ => {
                        return Err(p.err(
                            d.start,
                            format!("expected `Blocked(block_size=n)`, found `{}`", p.src(d)),
                        ))
                    }
                },
                _ => BlockDim::Blocked(p.usize_of(d)?),
            });
        }
        let index_map = cx.b.jaxpr_param(p, p.kwarg(bargs, "index_map", bm)?)?;
        let array_aval = match bargs
            .iter()
            .find(|(k, _)| k.as_deref() == Some("array_aval"))
        {
            Some((
                _,
                Src {
                    v: PValue::Call(_, a),
                    ..
                },
            )) => match a.as_slice() {
                [(
                    _,
                    Src {
                        v: PValue::Type(t), ..
                    },
                )] => t.clone(),
                _ => return Err(p.err(bm.start, "expected `array_aval=ShapedArray(dtype[shape])`")),
            },
            _ => {
                let from_in = cx
                    .in_avals
                    .get(k)
                    .and_then(|a| a.as_ref())
                    .map(|a| a.array().clone());
                let n_in = cx.in_avals.len();
                from_in
                    .or_else(|| out_avals.get(k.wrapping_sub(n_in)).cloned())
                    .unwrap_or_else(|| ShapedArray::new(DType::F32, vec![Dim::Const(0)]))
            }
        };
        block_mappings.push(BlockMapping {
            block_shape,
            index_map,
            array_aval,
        });
    }
    Ok((grid, block_mappings))
}
