//! Jvp of Catalyst's `for_loop`, dynamic shapes included: every float loop
//! argument gets a tangent carry (zeros where the tangent is symbolic) and
//! float consts with tangents get tangent consts. The new body is the jvp
//! of the old one, re-staged from the old body's input type (so tangent
//! carries share the primal carries' implicit dimensions).
//!
//! Under `linearize` the loop splits into a primal loop that stacks its
//! carries and a linear loop (`for_loop_split.rs`).

use super::control::needs_split;
use super::jvp_flat;
use crate::util::{has_tangent, zeros_like};
use jaxon_ir::dyntype::{in_type, DynAval, InDim, InType};
use jaxon_ir::primitive::{Control, ForLoopParams};
use jaxon_ir::{ClosedJaxpr, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{trace_flat_in_type, StageMode};
use jaxon_trace::{bind, Array};

type Outs = (Vec<Array>, Vec<Option<Array>>);

/// The jvp rule of `for_loop`.
pub(super) fn for_loop(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    let Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr,
        body_nconsts: nc,
        nimplicit: ni,
        preserve_dimensions,
        apply_reverse_transform,
    })) = p
    else {
        return Err(Error::InvalidArgument(format!(
            "the for_loop rule applied to `{}`",
            p.name()
        )));
    };
    let (nc, ni) = (*nc, *ni);
    if needs_split(x, t)? {
        let fp = super::for_loop_split::ForParams {
            what: "for_loop",
            body: body_jaxpr,
            nc,
            ni,
            preserve_dimensions: *preserve_dimensions,
            apply_reverse_transform: *apply_reverse_transform,
        };
        return super::for_loop_split::split(&fp, x, t);
    }
    let head = nc + ni;
    let na = x.len() - head - 4;
    let consts = &x[..nc];
    let args = &x[head + 4..];
    // Which consts carry tangents, which loop arguments get tangent carries.
    let ct: Vec<bool> = (0..nc).map(|k| t[k].is_some()).collect();
    let at: Vec<bool> = args.iter().map(|a| has_tangent(a.dtype())).collect();
    let nct = ct.iter().filter(|b| **b).count();
    let body = &body_jaxpr.jaxpr;
    let old = in_type(body, &vec![true; body.invars.len()])?;
    // New invars: consts, const tangents, implicit, index, args, arg tangents.
    let mut order: Vec<usize> = (0..nc).collect();
    order.extend((0..nc).filter(|&k| ct[k]));
    order.extend(nc..nc + ni + 1 + na);
    order.extend((0..na).filter(|&k| at[k]).map(|k| head + 1 + k));
    let new_pos = |p: usize| if p < nc { p } else { p + nct };
    let remap = |d: &InDim| match *d {
        InDim::DBIdx(j) => InDim::DBIdx(new_pos(j)),
        c => c,
    };
    let new_type = InType(
        order
            .iter()
            .map(|&p| {
                let (a, _) = &old.0[p];
                (
                    DynAval {
                        dtype: a.dtype,
                        shape: a.shape.iter().map(remap).collect(),
                    },
                    true,
                )
            })
            .collect(),
    );
    let body_consts: Vec<Array> = body_jaxpr
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    let staged = trace_flat_in_type(StageMode::Base, &new_type, |ins| {
        let n_old = body.invars.len();
        let primals = ins[..nc]
            .iter()
            .chain(&ins[nc + nct..nc + nct + n_old - nc])
            .cloned()
            .collect::<Vec<_>>();
        let mut tangents: Vec<Option<Array>> = vec![None; n_old];
        let mut it = ins[nc..nc + nct].iter();
        for k in 0..nc {
            if ct[k] {
                tangents[k] = it.next().cloned();
            }
        }
        let mut it = ins[nc + nct + n_old - nc..].iter();
        for k in 0..na {
            if at[k] {
                tangents[head + 1 + k] = it.next().cloned();
            }
        }
        let (p_out, t_out) = jvp_flat(|v| eval_jaxpr(body, &body_consts, &v), &primals, &tangents)?;
        let mut outs = p_out.clone();
        for k in 0..na {
            if at[k] {
                outs.push(match &t_out[ni + k] {
                    Some(tk) => tk.clone(),
                    None => zeros_like(&p_out[ni + k])?,
                });
            }
        }
        Ok(outs)
    })?;
    let mut j = staged.jaxpr;
    let hoisted = staged.consts;
    let mut invars = std::mem::take(&mut j.constvars);
    invars.append(&mut j.invars);
    j.invars = invars;
    let q = Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr: ClosedJaxpr::without_consts(j),
        body_nconsts: hoisted.len() + nc + nct,
        nimplicit: ni,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: *apply_reverse_transform,
    }));
    let mut ops = hoisted;
    ops.extend(consts.iter().cloned());
    for k in 0..nc {
        if let (true, Some(tk)) = (ct[k], &t[k]) {
            ops.push(tk.clone());
        }
    }
    ops.extend(x[nc..head + 4].iter().cloned());
    ops.extend(args.iter().cloned());
    for k in 0..na {
        if at[k] {
            ops.push(match &t[head + 4 + k] {
                Some(tk) => tk.clone(),
                None => zeros_like(&args[k])?,
            });
        }
    }
    let outs = bind(&q, &ops)?;
    let mut tangents: Vec<Option<Array>> = vec![None; ni + na];
    let mut it = outs[ni + na..].iter();
    for k in 0..na {
        if at[k] {
            tangents[ni + k] = it.next().cloned();
        }
    }
    Ok((outs[..ni + na].to_vec(), tangents))
}
