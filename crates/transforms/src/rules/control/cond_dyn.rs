//! `cond` with dynamic shapes: its jvp under `linearize` and its
//! transpose (the static rules are `cond.rs`).
//!
//! Jvp: the static split returns every branch's residuals from
//! the known cond, zeros in the other branches' slots; with dynamic
//! shapes a residual may have a size that exists only inside its branch,
//! so there is no type for those slots. Instead (per-branch
//! rematerialisation): the known cond is the original cond, and the
//! linear cond takes the primal operands as residuals and recomputes the
//! taken branch's primal next to its linearization. Each tangent result
//! is reshaped to its primal result's dimensions (operands of the linear
//! cond), so tangents and primals share dimension variables outside.
//!
//! Transpose: each branch's backward pass, staged from an input type (the
//! non-linear operands, then the results' cotangents, whose dimensions are
//! non-linear operands), with every cotangent reshaped to its operand's
//! dimensions so the branches agree on the results' types.

use crate::linearize::linearized_tangents;
use crate::rules::{Cts, JvpOuts};
use crate::transpose::{backward_pass, LinArg};
use crate::util::pin;
use jaxon_ir::dyntype::{in_type, out_type, DynAval, InDim, InType, OutDim};
use jaxon_ir::primitive::CondParams;
use jaxon_ir::{ClosedJaxpr, DType, Primitive};
use jaxon_trace::dynshape::{self as dyn_, same_value, Size};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{close, trace_flat_in_type, StageMode};
use jaxon_trace::{bind, Array};

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
) -> Result<JvpOuts> {
    let primals = bind(
        &Primitive::from(CondParams {
            branches: branches.to_vec(),
            branches_platforms: None,
        }),
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
        &Primitive::from(CondParams {
            branches: lin_branches,
            branches_platforms: None,
        }),
        &largs,
    )?;
    let mut it = touts.into_iter();
    let tangents = union
        .iter()
        .map(|u| if *u { it.next() } else { None })
        .collect();
    Ok((primals, tangents))
}

// ---------------------------------------------------------- transpose --

/// The transpose rule (operand 0 is the index).
pub(super) fn transpose(
    branches: &[ClosedJaxpr],
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let ops = &args[1..];
    let nops = ops.len();
    let linear: Vec<bool> = ops.iter().map(LinArg::is_linear).collect();
    let j0 = &branches[0].jaxpr;
    let old = in_type(j0, &vec![true; nops])?;
    let outs_t = out_type(j0, &vec![true; j0.outvars.len()])?;
    let mut pos = vec![usize::MAX; nops];
    let mut n_nl = 0;
    for (k, l) in linear.iter().enumerate() {
        if !*l {
            pos[k] = n_nl;
            n_nl += 1;
        }
    }
    let bad = |what: &str| {
        Error::Unsupported(format!(
            "transpose of a dynamic-shape `cond`: {what} is not a non-linear operand"
        ))
    };
    let in_dim = |d: InDim| -> Result<InDim> {
        match d {
            InDim::DBIdx(j) if !linear[j] => Ok(InDim::DBIdx(pos[j])),
            InDim::DBIdx(_) => Err(bad("a dimension")),
            c => Ok(c),
        }
    };
    let mut tt = Vec::new();
    for (k, (a, _)) in old.0.iter().enumerate() {
        if !linear[k] {
            let shape = a.shape.iter().map(|d| in_dim(*d)).collect::<Result<_>>()?;
            tt.push((
                DynAval {
                    dtype: a.dtype,
                    shape,
                },
                true,
            ));
        }
    }
    for (a, _) in &outs_t.0 {
        let shape = a
            .shape
            .iter()
            .map(|d| match *d {
                OutDim::Const(n) => Ok(InDim::Const(n)),
                OutDim::InDBIdx(j) => in_dim(InDim::DBIdx(j)),
                OutDim::OutDBIdx(_) => Err(bad("a result dimension computed in a branch")),
            })
            .collect::<Result<_>>()?;
        tt.push((
            DynAval {
                dtype: a.dtype,
                shape,
            },
            true,
        ));
    }
    let tt = InType(tt);
    // The sizes of body input `k` given the non-linear values.
    let sizes_of = |k: usize, vals: &[Array]| -> Vec<Size> {
        old.0[k]
            .0
            .shape
            .iter()
            .map(|d| match *d {
                InDim::Const(n) => Size::Const(n),
                InDim::DBIdx(j) => Size::Dyn(vals[pos[j]].clone()),
            })
            .collect()
    };
    let mut new_branches = Vec::with_capacity(branches.len());
    for b in branches {
        let consts: Vec<Array> = b.consts.iter().cloned().map(Array::from_host).collect();
        let staged = trace_flat_in_type(StageMode::Base, &tt, |ins| {
            let (vals, cts) = ins.split_at(n_nl);
            let cts: Vec<Option<Array>> = cts.iter().cloned().map(Some).collect();
            let got = backward_pass(&b.jaxpr, &consts, &linear, vals, &cts)?;
            let mut outs = Vec::new();
            let lin_idx = (0..nops).filter(|k| linear[*k]);
            for (k, c) in lin_idx.zip(got) {
                let target = sizes_of(k, vals);
                outs.push(match c {
                    Some(c) => pin(&c, &target)?,
                    None => dyn_::zeros(&target, old.0[k].0.dtype)?,
                });
            }
            Ok(outs)
        })?;
        new_branches.push(close(staged)?);
    }
    let mut operands = vec![args[0].value("cond")?.clone()];
    let mut vals = Vec::new();
    for a in ops {
        if let LinArg::Value(v) = a {
            vals.push(v.clone());
        }
    }
    operands.extend(vals.iter().cloned());
    for (c, (a, _)) in cts.iter().zip(&outs_t.0) {
        operands.push(match c {
            Some(c) => c.clone(),
            None => {
                let sizes = a
                    .shape
                    .iter()
                    .map(|d| match *d {
                        OutDim::Const(n) => Ok(Size::Const(n)),
                        OutDim::InDBIdx(j) if !linear[j] => Ok(Size::Dyn(vals[pos[j]].clone())),
                        _ => Err(bad("a result dimension")),
                    })
                    .collect::<Result<Vec<_>>>()?;
                dyn_::zeros(&sizes, a.dtype)?
            }
        });
    }
    let outs = bind(
        &Primitive::from(CondParams {
            branches: new_branches,
            branches_platforms: None,
        }),
        &operands,
    )?;
    let mut it = outs.into_iter();
    let mut result = vec![None];
    result.extend(linear.iter().map(|l| if *l { it.next() } else { None }));
    Ok(result)
}
