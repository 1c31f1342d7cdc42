//! Typing an equation's params: from the param syntax trees (and, for params
//! JAX elides, the equation's types) to a `Primitive`.

use super::build::{bare, Builder};
use super::params::{PValue, Params, PV};
use super::syntax::{PResult, RawEqn};
use crate::aval::{Aval, Dim, ShapedArray};
use crate::params_text::{parse_by_name, ParseCx};
use crate::primitive::{BinaryOp, BlockDim, BlockMapping, Primitive, UnaryOp};
use crate::primitive::{Elementwise, Indexing, PallasCallParams};

/// Builds the typed primitive of a raw equation.
pub(crate) fn to_primitive(
    b: &mut Builder,
    e: &RawEqn,
    in_avals: &[Option<Aval>],
    out_avals: &[Aval],
) -> PResult<Primitive> {
    let p = Params {
        text: b.text,
        prim: &e.name,
        pos: e.pos,
        params: &e.params,
    };
    if let Some(form) = &e.state {
        return super::state::state_primitive(&p, e, form, in_avals);
    }
    let name = e.name.as_str();
    if let Some(op) = UnaryOp::ALL.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(*op));
    }
    if let Some(op) = BinaryOp::ALL.iter().find(|o| o.name() == name) {
        return Ok(Primitive::from(*op));
    }
    let mut cx = ParseCx {
        name,
        p: &p,
        b,
        n_inputs: e.inputs.len(),
        in_avals,
        out_avals,
    };
    if let Some(prim) = parse_by_name(name, &mut cx) {
        return prim;
    }
    let prim = match name {
        "select_n" => Primitive::Elementwise(Elementwise::SelectN),
        "clamp" => Primitive::Elementwise(Elementwise::Clamp),
        "dynamic_update_slice" => Primitive::Indexing(Indexing::DynamicUpdateSlice),
        "pallas_call" => pallas_call(b, &p, in_avals)?,
        "get" | "swap" | "addupdate" | "load" | "store" | "masked_load" | "masked_swap"
        | "atomic_rmw" | "atomic_cas" => super::state::state_primitive_plain(&p, e, in_avals)?,
        _ => {
            return Err(p.err(
                e.pos,
                format!("expected a primitive name, found unknown primitive `{name}`"),
            ))
        }
    };
    Ok(prim)
}

fn pallas_call(b: &mut Builder, p: &Params, in_avals: &[Option<Aval>]) -> PResult<Primitive> {
    let kernel = bare(b.jaxpr_param(p, p.req("jaxpr")?)?);
    let out_avals: Vec<ShapedArray> = match p.get("out_avals") {
        Some(v) => p
            .items_of(v)?
            .iter()
            .map(|x| match &x.v {
                PValue::Call(_, args) => match args.as_slice() {
                    [(
                        _,
                        PV {
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
            })
            .collect::<PResult<_>>()?,
        None => Vec::new(),
    };
    let mut grid = Vec::new();
    let mut block_mappings = Vec::new();
    if let Some(gm) = p.get("grid_mapping") {
        let args = p.kwargs_of(gm, "GridMapping")?;
        grid = p.usizes_of(p.kwarg(args, "grid", gm)?)?;
        let bms = p.kwarg(args, "block_mappings", gm)?;
        for (k, bm) in p.items_of(bms)?.iter().enumerate() {
            let bargs = p.kwargs_of(bm, "BlockMapping")?;
            let bs = p.kwarg(bargs, "block_shape", bm)?;
            let mut block_shape = Vec::new();
            for d in p.items_of(bs)? {
                block_shape.push(match &d.v {
                    PValue::Word(w) if w == "None" || w.ends_with("Squeezed") => BlockDim::Squeezed,
                    PValue::Call(n, a) if n.ends_with("Squeezed") && a.is_empty() => {
                        BlockDim::Squeezed
                    }
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
            let index_map = b.jaxpr_param(p, p.kwarg(bargs, "index_map", bm)?)?;
            let array_aval = match bargs
                .iter()
                .find(|(k, _)| k.as_deref() == Some("array_aval"))
            {
                Some((
                    _,
                    PV {
                        v: PValue::Call(_, a),
                        ..
                    },
                )) => match a.as_slice() {
                    [(
                        _,
                        PV {
                            v: PValue::Type(t), ..
                        },
                    )] => t.clone(),
                    _ => {
                        return Err(
                            p.err(bm.start, "expected `array_aval=ShapedArray(dtype[shape])`")
                        )
                    }
                },
                _ => {
                    let from_in = in_avals
                        .get(k)
                        .and_then(|a| a.as_ref())
                        .map(|a| a.array().clone());
                    let n_in = in_avals.len();
                    from_in
                        .or_else(|| out_avals.get(k.wrapping_sub(n_in)).cloned())
                        .unwrap_or_else(|| {
                            ShapedArray::new(crate::dtype::DType::F32, vec![Dim::Const(0)])
                        })
                }
            };
            block_mappings.push(BlockMapping {
                block_shape,
                index_map,
                array_aval,
            });
        }
    }
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
    Ok(Primitive::from(PallasCallParams {
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
    }))
}
