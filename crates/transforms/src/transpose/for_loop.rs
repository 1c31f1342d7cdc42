//! Transpose of Catalyst's `for_loop`: a `for_loop` over the same
//! iterations in reverse order, whose body is the backward pass of the
//! original body at the iteration's index.
//!
//! The transposed loop counts `k = 0 .. trips` and runs original
//! iteration `trips - 1 - k` (index `lower + (trips - 1 - k) * step`), so
//! it needs no negative step. Its carries are the accumulated cotangents
//! of the linear consts and the carries' cotangents. Requirements (met by
//! the linear loops `jvp/for_loop_split.rs` builds): no implicit carries
//! (the carries' dynamic dimensions are consts) and only float carries.

use super::{backward_pass, LinArg};
use crate::util::{for_trip_count, zeros_like};
use jaxon_ir::dyntype::{in_type, DynAval, InDim, InType};
use jaxon_ir::primitive::BinaryOp;
use jaxon_ir::primitive::{Control, ForLoopParams};
use jaxon_ir::{Aval, ClosedJaxpr, DType, HostArray, Primitive};
use jaxon_trace::dynshape as dyn_;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::stage::{trace_flat_in_type, StageMode};
use jaxon_trace::{bind, lax, Array};

type Cts = Vec<Option<Array>>;

fn i64(v: f64) -> Array {
    Array::from_host(HostArray::scalar(DType::I64, v))
}

fn i64_entry() -> (DynAval<InDim>, bool) {
    (
        DynAval {
            dtype: DType::I64,
            shape: Vec::new(),
        },
        true,
    )
}

/// Zeros with the type of a linear operand.
fn zeros_of(a: &LinArg) -> Result<Array> {
    dyn_::zeros(&a.sizes()?, a.ty().dtype)
}

/// The transpose rule of `for_loop`.
pub(crate) fn for_loop(p: &Primitive, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
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
    let nc = *nc;
    if *ni != 0 {
        return Err(Error::Unsupported(
            "transpose of `for_loop` with implicit carries (dimensions that change across \
             iterations)"
                .into(),
        ));
    }
    let nk = args.len() - nc - 4;
    let bounds = (0..3)
        .map(|k| args[nc + k].value("for_loop"))
        .collect::<Result<Vec<_>>>()?;
    let wide = |a: &Array| lax::convert_element_type(a, DType::I64, false);
    let (lower, upper, step) = (&wide(bounds[0])?, &wide(bounds[1])?, &wide(bounds[2])?);
    let index_dtype = {
        let b = &body_jaxpr.jaxpr;
        b.aval(b.invars[nc]).array().dtype
    };
    if let Some(a) = args[nc + 4..].iter().find(|a| !a.ty().dtype.is_float()) {
        return Err(Error::Unsupported(format!(
            "transpose of `for_loop`: the carry of type {} is not linear",
            jaxon_ir::shape::fmt_aval(&Aval::Array(a.ty().clone()))
        )));
    }
    let lin_c: Vec<bool> = args[..nc].iter().map(LinArg::is_linear).collect();
    let nlc = lin_c.iter().filter(|l| **l).count();
    let body = &body_jaxpr.jaxpr;
    let old = in_type(body, &vec![true; body.invars.len()])?;
    // New positions: non-linear consts, trips, lower, step, index, const
    // cotangents, carry cotangents.
    let mut pos = vec![usize::MAX; nc];
    let mut n_nl = 0;
    for k in 0..nc {
        if !lin_c[k] {
            pos[k] = n_nl;
            n_nl += 1;
        }
    }
    let remap = |a: &DynAval<InDim>| -> Result<(DynAval<InDim>, bool)> {
        let shape = a
            .shape
            .iter()
            .map(|d| match *d {
                InDim::DBIdx(j) if j < nc && !lin_c[j] => Ok(InDim::DBIdx(pos[j])),
                InDim::DBIdx(j) => Err(Error::Unsupported(format!(
                    "transpose of `for_loop`: a dimension is body input {j}, which is not a \
                     non-linear const"
                ))),
                c => Ok(c),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((
            DynAval {
                dtype: a.dtype,
                shape,
            },
            true,
        ))
    };
    let mut tt = Vec::new();
    for want_linear in [false, true] {
        for ((a, _), l) in old.0[..nc].iter().zip(&lin_c) {
            if *l == want_linear {
                tt.push(remap(a)?);
            }
        }
        if !want_linear {
            tt.extend([i64_entry(), i64_entry(), i64_entry(), i64_entry()]);
        }
    }
    for (a, _) in &old.0[nc + 1..] {
        tt.push(remap(a)?);
    }
    let body_consts: Vec<Array> = body_jaxpr
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    let staged = trace_flat_in_type(StageMode::Base, &InType(tt), |ins| {
        let (vals, rest) = ins.split_at(n_nl);
        let (tr, lo, st, k) = (&rest[0], &rest[1], &rest[2], &rest[3]);
        let (acc, ct) = rest[4..].split_at(nlc);
        // Original iteration trips - 1 - k.
        let back = lax::sub(&lax::sub(tr, &i64(1.0))?, k)?;
        let i = lax::add(lo, &lax::mul(&back, st)?)?;
        let i = lax::convert_element_type(&i, index_dtype, false)?;
        let mut values = vals.to_vec();
        values.push(i);
        let mut mask = lin_c.clone();
        mask.push(false);
        mask.extend(std::iter::repeat_n(true, nk));
        let cts_out: Vec<Option<Array>> = ct.iter().cloned().map(Some).collect();
        let cts_in = backward_pass(body, &body_consts, &mask, &values, &cts_out)?;
        let (c_c, c_k) = cts_in.split_at(nlc);
        let mut outs = Vec::with_capacity(nlc + nk);
        for (a, c) in acc.iter().zip(c_c) {
            outs.push(match c {
                Some(c) => lax::binary(BinaryOp::AddAny, a, c)?,
                None => a.clone(),
            });
        }
        for (prev, c) in ct.iter().zip(c_k) {
            outs.push(match c {
                Some(c) => c.clone(),
                None => zeros_like(prev)?,
            });
        }
        Ok(outs)
    })?;
    let mut tj = staged.jaxpr;
    let hoisted = staged.consts;
    let mut invars = std::mem::take(&mut tj.constvars);
    invars.append(&mut tj.invars);
    tj.invars = invars;
    let trips = for_trip_count(lower, upper, step, *apply_reverse_transform)?;
    let transposed = Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr: ClosedJaxpr::without_consts(tj),
        body_nconsts: hoisted.len() + n_nl + 3,
        nimplicit: 0,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: false,
    }));
    let mut ops = hoisted;
    for a in &args[..nc] {
        if let LinArg::Value(v) = a {
            ops.push(v.clone());
        }
    }
    ops.extend([trips.clone(), lower.clone(), step.clone()]);
    ops.extend([i64(0.0), trips, i64(1.0), i64(0.0)]);
    for a in &args[..nc] {
        if a.is_linear() {
            ops.push(zeros_of(a)?);
        }
    }
    for (a, c) in args[nc + 4..].iter().zip(cts) {
        ops.push(match c {
            Some(c) => c.clone(),
            None => zeros_of(a)?,
        });
    }
    let outs = bind(&transposed, &ops)?;
    let mut it = outs.into_iter();
    let mut result: Cts = Vec::with_capacity(args.len());
    for l in &lin_c {
        result.push(if *l { it.next() } else { None });
    }
    result.extend([None, None, None, None]);
    for a in &args[nc + 4..] {
        let c = it.next();
        result.push(if a.is_linear() { c } else { None });
    }
    Ok(result)
}
