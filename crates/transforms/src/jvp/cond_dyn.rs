//! `cond` with dynamic shapes under `linearize`.
//!
//! The static split (`control.rs`) returns every branch's residuals from
//! the known cond, zeros in the other branches' slots; with dynamic
//! shapes a residual may have a size that exists only inside its branch,
//! so there is no type for those slots. Instead (per-branch
//! rematerialisation): the known cond is the original cond, and the
//! linear cond takes the primal operands as residuals and recomputes the
//! taken branch's primal next to its linearization. Each tangent result
//! is reshaped to its primal result's dimensions (operands of the linear
//! cond), so tangents and primals share dimension variables outside.

use crate::linearize::linearized_tangents;
use crate::util::pin;
use jaxon_ir::dyntype::{in_type, DynAval, InType};
use jaxon_ir::primitive::{CondParams, Control};
use jaxon_ir::{ClosedJaxpr, DType, Primitive};
use jaxon_trace::dynshape::{self as dyn_, same_value, Size};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{close, trace_flat_in_type, StageMode};
use jaxon_trace::{bind, Array};

type Outs = (Vec<Array>, Vec<Option<Array>>);

/// Where a dimension of a primal result comes from, seen from the linear
/// cond's operands.
#[derive(Clone, Debug)]
enum Src {
    Const(usize),
    /// Operand `j` of the cond (after the index).
    Operand(usize),
    /// Extra operand `e` (a dimension result of the known cond).
    Extra(usize),
}

/// The rule. `union[k]`: whether result `k` gets a tangent.
pub(super) fn cond_split_dyn(
    branches: &[ClosedJaxpr],
    x: &[Array],
    t: &[Option<Array>],
    union: &[bool],
) -> Result<Outs> {
    let primals = bind(
        &Primitive::Control(Control::Cond(CondParams {
            branches: branches.to_vec(),
        })),
        x,
    )?;
    let n_out = primals.len();
    if !union.iter().any(|m| *m) {
        return Ok((primals, vec![None; n_out]));
    }
    let ops = &x[1..];
    let nops = ops.len();
    // The dimensions of the results with tangents, in terms of operands.
    let mut extra: Vec<Array> = Vec::new();
    let mut srcs: Vec<Vec<Src>> = Vec::new();
    for (p, u) in primals.iter().zip(union) {
        if !*u {
            continue;
        }
        let mut v = Vec::new();
        for s in dyn_::sizes(p)? {
            v.push(match s {
                Size::Const(n) => Src::Const(n),
                Size::Dyn(d) => match ops.iter().position(|o| same_value(o, &d)) {
                    Some(j) => Src::Operand(j),
                    None => {
                        Src::Extra(extra.iter().position(|e| same_value(e, &d)).unwrap_or_else(
                            || {
                                extra.push(d.clone());
                                extra.len() - 1
                            },
                        ))
                    }
                },
            });
        }
        srcs.push(v);
    }
    let ne = extra.len();
    let nz: Vec<bool> = t[1..].iter().map(Option::is_some).collect();
    let old = in_type(&branches[0].jaxpr, &vec![true; nops])?;
    let mut lt = old.0.clone();
    lt.extend((0..ne).map(|_| {
        (
            DynAval {
                dtype: DType::I64,
                shape: Vec::new(),
            },
            true,
        )
    }));
    lt.extend(
        old.0
            .iter()
            .zip(&nz)
            .filter(|(_, m)| **m)
            .map(|(e, _)| e.clone()),
    );
    let lt = InType(lt);
    let mut lin_branches = Vec::with_capacity(branches.len());
    for b in branches {
        let consts: Vec<Array> = b.consts.iter().cloned().map(Array::from_host).collect();
        let staged = trace_flat_in_type(StageMode::Base, &lt, |ins| {
            let (p, rest) = ins.split_at(nops);
            let (dims, ts) = rest.split_at(ne);
            let mut it = ts.iter();
            let tangents: Vec<Option<Array>> = nz
                .iter()
                .map(|m| if *m { it.next().cloned() } else { None })
                .collect();
            let t_out = linearized_tangents(|v| eval_jaxpr(&b.jaxpr, &consts, &v), p, &tangents)?;
            let mut outs = Vec::new();
            let mut s = srcs.iter();
            for (k, u) in union.iter().enumerate() {
                if !*u {
                    continue;
                }
                let target: Vec<Size> = s
                    .next()
                    .ok_or_else(|| Error::InvalidArgument("cond: result dimensions".into()))?
                    .iter()
                    .map(|d| match d {
                        Src::Const(n) => Size::Const(*n),
                        Src::Operand(j) => Size::Dyn(p[*j].clone()),
                        Src::Extra(e) => Size::Dyn(dims[*e].clone()),
                    })
                    .collect();
                outs.push(pin(&t_out[k], &target)?);
            }
            Ok(outs)
        })?;
        lin_branches.push(close(staged)?);
    }
    let mut largs = vec![x[0].clone()];
    largs.extend(ops.iter().cloned());
    largs.extend(extra);
    largs.extend(t[1..].iter().flatten().cloned());
    let touts = bind(
        &Primitive::Control(Control::Cond(CondParams {
            branches: lin_branches,
        })),
        &largs,
    )?;
    let mut it = touts.into_iter();
    let tangents = union
        .iter()
        .map(|u| if *u { it.next() } else { None })
        .collect();
    Ok((primals, tangents))
}
