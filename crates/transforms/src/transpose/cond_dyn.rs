//! Transpose of a `cond` whose branches have dynamic shapes: each branch's
//! backward pass, staged from an input type (the non-linear operands,
//! then the results' cotangents, whose dimensions are non-linear
//! operands), with every cotangent reshaped to its operand's dimensions
//! so the branches agree on the results' types.

use super::{backward_pass, LinArg};
use crate::util::pin;
use jaxon_ir::dyntype::{in_type, out_type, DynAval, InDim, InType, OutDim};
use jaxon_ir::primitive::{CondParams, Control};
use jaxon_ir::{ClosedJaxpr, Primitive};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::stage::{close, trace_flat_in_type, StageMode};
use jaxon_trace::{bind, Array};

type Cts = Vec<Option<Array>>;

/// The transpose rule (operand 0 is the index).
pub(crate) fn cond(
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
        &Primitive::Control(Control::Cond(CondParams {
            branches: new_branches,
        })),
        &operands,
    )?;
    let mut it = outs.into_iter();
    let mut result = vec![None];
    result.extend(linear.iter().map(|l| if *l { it.next() } else { None }));
    Ok(result)
}
