//! Rules of Catalyst's `for_loop` (operands `*consts *implicit lo hi step
//! i0 *carry`, body `*consts *implicit i *carry -> *implicit *carry`):
//! jvp, transpose and batching, side by side.
//!
//! - jvp, dynamic shapes included: every float loop argument gets a
//!   tangent carry (zeros where the tangent is symbolic) and float consts
//!   with tangents get tangent consts. The new body is the jvp of the old
//!   one, re-staged from the old body's input type (so tangent carries
//!   share the primal carries' implicit dimensions). Under `linearize` the
//!   loop splits into a primal loop that stacks its carries and a linear
//!   loop (`for_loop_split.rs`).
//! - transpose: a `for_loop` over the same iterations in reverse order,
//!   whose body is the backward pass of the original body at the
//!   iteration's index. The transposed loop counts `k = 0 .. trips` and
//!   runs original iteration `trips - 1 - k` (index `lower + (trips - 1 -
//!   k) * step`), so it needs no negative step. Its carries are the
//!   accumulated cotangents of the linear consts and the carries'
//!   cotangents. Requirements (met by the linear loops `for_loop_split.rs`
//!   builds): no implicit carries (the carries' dynamic dimensions are
//!   consts) and only float carries.
//! - batch: the body is batched to a fixpoint of batched carries, like
//!   `scan`. Batched bounds or implicit (dimension) operands are not
//!   supported.

use super::{dims_of, fronted, mask, needs_split};
use crate::batch::{batch_jaxpr_named, to_front};
use crate::jvp::jvp_flat;
use crate::rules::{BatchOuts, Cts, JvpOuts};
use crate::transpose::{backward_pass, LinArg};
use crate::util::{for_trip_count, has_tangent, zeros_like};
use jaxon_ir::dyntype::{in_type, DynAval, InDim, InType};
use jaxon_ir::primitive::{BinaryOp, ForLoopParams};
use jaxon_ir::{Aval, ClosedJaxpr, DType, HostArray, Primitive};
use jaxon_trace::dynshape as dyn_;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{trace_flat_in_type, StageMode};
use jaxon_trace::{bind, lax, Array};

// ---------------------------------------------------------------- jvp --

/// The jvp rule.
pub(super) fn jvp(fl: &ForLoopParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let ForLoopParams {
        body_jaxpr,
        body_nconsts: nc,
        nimplicit: ni,
        preserve_dimensions,
        apply_reverse_transform,
    } = fl;
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
    let q = Primitive::from(ForLoopParams {
        body_jaxpr: ClosedJaxpr::without_consts(j),
        body_nconsts: hoisted.len() + nc + nct,
        nimplicit: ni,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: *apply_reverse_transform,
    });
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

// ---------------------------------------------------------- transpose --

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

/// The transpose rule.
pub(super) fn transpose(fl: &ForLoopParams, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    let ForLoopParams {
        body_jaxpr,
        body_nconsts: nc,
        nimplicit: ni,
        preserve_dimensions,
        apply_reverse_transform,
    } = fl;
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
    let transposed = Primitive::from(ForLoopParams {
        body_jaxpr: ClosedJaxpr::without_consts(tj),
        body_nconsts: hoisted.len() + n_nl + 3,
        nimplicit: 0,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: false,
    });
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

// -------------------------------------------------------------- batch --

/// The batching rule.
pub(super) fn batch(
    fl: &ForLoopParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    name: Option<&str>,
) -> Result<BatchOuts> {
    let ForLoopParams {
        body_jaxpr,
        body_nconsts,
        nimplicit,
        preserve_dimensions,
        apply_reverse_transform,
    } = fl;
    let nc = *body_nconsts;
    let head = nc + nimplicit;
    if d[nc..head + 4].iter().any(Option::is_some) {
        return Err(Error::Unsupported(
            "vmap of `for_loop` with batched bounds, step or dimension operands is not supported"
                .into(),
        ));
    }
    let const_b = mask(&d[..nc]);
    let mut carry_b = mask(&d[head + 4..]);
    let ins = |carry_b: &[bool]| -> Vec<bool> {
        let mut v = const_b.clone();
        v.extend(std::iter::repeat_n(false, nimplicit + 1));
        v.extend_from_slice(carry_b);
        v
    };
    let inst = |carry_b: &[bool]| -> Vec<bool> {
        let mut v = vec![false; *nimplicit];
        v.extend_from_slice(carry_b);
        v
    };
    loop {
        let (_, ob) = batch_jaxpr_named(body_jaxpr, &ins(&carry_b), n, name, &[])?;
        if ob[..*nimplicit].iter().any(|b| *b) {
            return Err(Error::Unsupported(
                "vmap of `for_loop` whose dimension results depend on the batch".into(),
            ));
        }
        let next: Vec<bool> = carry_b
            .iter()
            .zip(&ob[*nimplicit..])
            .map(|(a, b)| *a || *b)
            .collect();
        if next == carry_b {
            break;
        }
        carry_b = next;
    }
    let (bj, _) = batch_jaxpr_named(body_jaxpr, &ins(&carry_b), n, name, &inst(&carry_b))?;
    let mut args = fronted(&x[..nc], &d[..nc], n)?;
    args.extend(x[nc..head + 4].iter().cloned());
    for ((a, b), cb) in x[head + 4..].iter().zip(&d[head + 4..]).zip(&carry_b) {
        args.push(if *cb { to_front(a, *b, n)? } else { a.clone() });
    }
    let q = Primitive::from(ForLoopParams {
        body_jaxpr: bj,
        body_nconsts: nc,
        nimplicit: *nimplicit,
        preserve_dimensions: *preserve_dimensions,
        apply_reverse_transform: *apply_reverse_transform,
    });
    let outs = bind(&q, &args)?;
    let mut dims = vec![None; *nimplicit];
    dims.extend(dims_of(&carry_b));
    Ok((outs, dims))
}
