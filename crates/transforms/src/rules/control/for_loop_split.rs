//! `for_loop` under `linearize`: the split into a primal loop and a linear
//! loop, so the loop can be transposed (`transpose/for_loop.rs`).
//!
//! Design (per-iteration rematerialisation, as a `checkpoint`ed scan
//! body): the *known* loop is the original loop that also writes each
//! iteration's input carry into a stack whose leading dimension is the
//! trip count (a runtime value computed from lower/upper/step). The
//! *linear* loop carries only the tangents; its body reads the primal
//! carry of iteration `k = (i - lower) / step` from the stacks and runs
//! the jvp of the original body on it. Stacking the carries rather than
//! the body's residuals keeps every stack's type the carry's type (a
//! dynamic body may compute residuals of sizes that exist only inside
//! it), at the price of recomputing the body's primal in the backward
//! pass (`backward_pass` evaluates the non-linear equations forward).
//!
//! Requirement: the carry's dynamic dimensions are loop-invariant (the
//! body returns its implicit dimension inputs unchanged), so every
//! iteration's carry has the same type and the stack is rectangular.

use crate::linearize::linearized_tangents;
use crate::rules::JvpOuts;
use crate::util::{for_trip_count, has_tangent, zeros_like};
use jaxon_ir::dyntype::{in_type, DynAval, InDim, InType};
use jaxon_ir::primitive::ForLoopParams;
use jaxon_ir::{Atom, ClosedJaxpr, DType, Jaxpr, Primitive};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::stage::{trace_flat_in_type, StageMode};
use jaxon_trace::{bind, lax, Array};

/// The static parameters of the `for_loop` being split.
pub(super) struct ForParams<'a> {
    /// The user-facing loop, for errors (`for_loop` or `while_loop`).
    pub what: &'static str,
    pub body: &'a ClosedJaxpr,
    pub nc: usize,
    pub ni: usize,
    pub preserve_dimensions: bool,
    pub apply_reverse_transform: bool,
}

/// An entry of an input type: `src`'s type with its dimensions remapped.
fn remapped(src: &DynAval<InDim>, map: &dyn Fn(usize) -> usize) -> (DynAval<InDim>, bool) {
    let shape = src
        .shape
        .iter()
        .map(|d| match *d {
            InDim::DBIdx(j) => InDim::DBIdx(map(j)),
            c => c,
        })
        .collect();
    (
        DynAval {
            dtype: src.dtype,
            shape,
        },
        true,
    )
}

fn i64_scalar() -> (DynAval<InDim>, bool) {
    (
        DynAval {
            dtype: DType::I64,
            shape: Vec::new(),
        },
        true,
    )
}

/// `src`'s type with a leading dimension `lead`.
fn stacked(
    src: &DynAval<InDim>,
    lead: InDim,
    map: &dyn Fn(usize) -> usize,
) -> (DynAval<InDim>, bool) {
    let (mut t, e) = remapped(src, map);
    t.shape.insert(0, lead);
    (t, e)
}

/// The stacks' leading dimension: static when the trip count is known,
/// else input `pos` (the trip count).
fn lead_dim(trips: &Size, pos: usize) -> InDim {
    match trips {
        Size::Const(n) => InDim::Const(*n),
        Size::Dyn(_) => InDim::DBIdx(pos),
    }
}

/// A staged body as a loop body: its hoisted constvars become leading
/// invars; returns the jaxpr and the hoisted values.
fn as_body(staged: jaxon_trace::staging::Staged) -> (Jaxpr, Vec<Array>) {
    let mut j = staged.jaxpr;
    let mut invars = std::mem::take(&mut j.constvars);
    invars.append(&mut j.invars);
    j.invars = invars;
    (j, staged.consts)
}

/// The iteration number of loop index `i`: `(i - lower) / step`.
fn iteration(i: &Array, lower: &Array, step: &Array) -> Result<Array> {
    let i = lax::convert_element_type(i, DType::I64, false)?;
    lax::div(&lax::sub(&i, lower)?, step)
}

/// Row `k` of `stack` (its leading axis dropped).
pub(crate) fn row(stack: &Array, k: &Array) -> Result<Array> {
    let full = dyn_::sizes(stack)?;
    let zero = Array::from_host(jaxon_ir::HostArray::scalar(DType::I64, 0.0));
    let mut starts = vec![k.clone()];
    starts.extend(std::iter::repeat_n(zero, full.len() - 1));
    let mut sizes = vec![Size::Const(1)];
    sizes.extend(full[1..].iter().cloned());
    let r = dyn_::dynamic_slice(stack, &starts, &sizes)?;
    dyn_::reshape(&r, &full[1..])
}

/// `stack` with row `k` set to `x`.
fn set_row(stack: &Array, k: &Array, x: &Array) -> Result<Array> {
    let mut sizes = vec![Size::Const(1)];
    sizes.extend(dyn_::sizes(x)?);
    let dims: Vec<usize> = (1..sizes.len()).collect();
    let x1 = dyn_::broadcast_in_dim(x, &sizes, &dims)?;
    let zero = Array::from_host(jaxon_ir::HostArray::scalar(DType::I64, 0.0));
    let mut starts = vec![k.clone()];
    starts.extend(std::iter::repeat_n(zero, x.ndim()));
    lax::dynamic_update_slice_clamped(stack, &x1, &starts)
}

/// The rule: a known loop (primal results and carry stacks) and a linear
/// loop (tangents). `x`/`t` are the `for_loop` operands and tangents.
pub(super) fn split(fp: &ForParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let (nc, ni) = (fp.nc, fp.ni);
    let head = nc + ni;
    let na = x.len() - head - 4;
    let body = &fp.body.jaxpr;
    for j in 0..ni {
        if body.outvars[j] != Atom::Var(body.invars[nc + j]) {
            return Err(Error::Unsupported(format!(
                "reverse-mode differentiation of {}: the carry's dynamic dimension {j} may \
                 change across iterations (the body does not return it unchanged); reverse \
                 mode needs carries whose sizes are loop-invariant",
                fp.what
            )));
        }
    }
    let consts = &x[..nc];
    let dims = &x[nc..head];
    // Bounds of a parsed jaxpr may be narrower integers.
    let wide = |a: &Array| lax::convert_element_type(a, DType::I64, false);
    let (lower, upper, step) = (&wide(&x[head])?, &wide(&x[head + 1])?, &wide(&x[head + 2])?);
    let args = &x[head + 4..];
    let ct: Vec<bool> = (0..nc).map(|k| t[k].is_some()).collect();
    let at: Vec<bool> = args.iter().map(|a| has_tangent(a.dtype())).collect();
    let nct = ct.iter().filter(|b| **b).count();
    let trips = for_trip_count(lower, upper, step, fp.apply_reverse_transform)?;
    let tsize = Size::from(&trips).normalize()?;
    let old = in_type(body, &vec![true; body.invars.len()])?;
    let body_consts: Vec<Array> = fp
        .body
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();

    // Known loop. Invars: consts, trips, lower, step, implicit, index,
    // args, stacks.
    let k_pos = |p: usize| if p < nc { p } else { p + 3 };
    let mut kt: Vec<(DynAval<InDim>, bool)> = old.0[..nc]
        .iter()
        .map(|(a, _)| remapped(a, &k_pos))
        .collect();
    kt.extend([i64_scalar(), i64_scalar(), i64_scalar()]);
    kt.extend(old.0[nc..].iter().map(|(a, _)| remapped(a, &k_pos)));
    kt.extend(
        old.0[head + 1..]
            .iter()
            .map(|(a, _)| stacked(a, lead_dim(&tsize, nc), &k_pos)),
    );
    let staged = trace_flat_in_type(StageMode::Base, &InType(kt), |ins| {
        let (c, rest) = ins.split_at(nc);
        let (lo, st) = (&rest[1], &rest[2]);
        let rest = &rest[3..];
        let (d_i, rest) = rest.split_at(ni + 1);
        let (a, s) = rest.split_at(na);
        let mut bargs = c.to_vec();
        bargs.extend(d_i.iter().cloned());
        bargs.extend(a.iter().cloned());
        let mut outs = eval_jaxpr(body, &body_consts, &bargs)?;
        let k = iteration(&d_i[ni], lo, st)?;
        for (sm, am) in s.iter().zip(a) {
            outs.push(set_row(sm, &k, am)?);
        }
        Ok(outs)
    })?;
    let (kj, hoisted) = as_body(staged);
    let known = Primitive::from(ForLoopParams {
        body_jaxpr: ClosedJaxpr::without_consts(kj),
        body_nconsts: hoisted.len() + nc + 3,
        nimplicit: ni,
        preserve_dimensions: fp.preserve_dimensions,
        apply_reverse_transform: fp.apply_reverse_transform,
    });
    let mut ops = hoisted;
    ops.extend(consts.iter().cloned());
    ops.extend([trips.clone(), lower.clone(), step.clone()]);
    ops.extend(x[nc..head + 4].iter().cloned());
    ops.extend(args.iter().cloned());
    for a in args {
        let mut sizes = vec![tsize.clone()];
        sizes.extend(dyn_::sizes(a)?);
        ops.push(dyn_::zeros(&sizes, a.dtype())?);
    }
    let mut outs = bind(&known, &ops)?;
    let stacks = outs.split_off(ni + na);
    let primals = outs;
    if !ct.iter().any(|b| *b) && !t[head + 4..].iter().any(Option::is_some) {
        return Ok((primals, vec![None; ni + na]));
    }

    // Linear loop. Invars: implicit dims (as consts), consts, const
    // tangents, trips, lower, step, stacks, index, arg tangents.
    let l_pos = |p: usize| {
        if p < nc {
            ni + p
        } else if p < head {
            p - nc
        } else {
            unreachable!("dimensions are consts or implicit inputs")
        }
    };
    let mut lt: Vec<(DynAval<InDim>, bool)> = old.0[nc..head]
        .iter()
        .map(|(a, _)| remapped(a, &l_pos))
        .collect();
    lt.extend(old.0[..nc].iter().map(|(a, _)| remapped(a, &l_pos)));
    lt.extend(
        (0..nc)
            .filter(|&k| ct[k])
            .map(|k| remapped(&old.0[k].0, &l_pos)),
    );
    let trips_pos = lt.len();
    lt.extend([i64_scalar(), i64_scalar(), i64_scalar()]);
    lt.extend(
        old.0[head + 1..]
            .iter()
            .map(|(a, _)| stacked(a, lead_dim(&tsize, trips_pos), &l_pos)),
    );
    lt.push(remapped(&old.0[head].0, &l_pos));
    lt.extend(
        (0..na)
            .filter(|&k| at[k])
            .map(|k| remapped(&old.0[head + 1 + k].0, &l_pos)),
    );
    let staged = trace_flat_in_type(StageMode::Base, &InType(lt), |ins| {
        let (d, rest) = ins.split_at(ni);
        let (c, rest) = rest.split_at(nc);
        let (tc, rest) = rest.split_at(nct);
        let (lo, st) = (&rest[1], &rest[2]);
        let rest = &rest[3..];
        let (s, rest) = rest.split_at(na);
        let (i, ta) = rest.split_at(1);
        let k = iteration(&i[0], lo, st)?;
        let mut primals = c.to_vec();
        primals.extend(d.iter().cloned());
        primals.push(i[0].clone());
        for sm in s {
            primals.push(row(sm, &k)?);
        }
        let mut tangents: Vec<Option<Array>> = vec![None; primals.len()];
        let mut it = tc.iter();
        for (kk, slot) in tangents.iter_mut().enumerate().take(nc) {
            if ct[kk] {
                *slot = it.next().cloned();
            }
        }
        let mut it = ta.iter();
        for kk in 0..na {
            if at[kk] {
                tangents[head + 1 + kk] = it.next().cloned();
            }
        }
        let t_out =
            linearized_tangents(|v| eval_jaxpr(body, &body_consts, &v), &primals, &tangents)?;
        Ok((0..na)
            .filter(|&kk| at[kk])
            .map(|kk| t_out[ni + kk].clone())
            .collect())
    })?;
    let (lj, hoisted) = as_body(staged);
    let nh = hoisted.len();
    let linear = Primitive::from(ForLoopParams {
        body_jaxpr: ClosedJaxpr::without_consts(lj),
        body_nconsts: nh + ni + nc + nct + 3 + na,
        nimplicit: 0,
        preserve_dimensions: fp.preserve_dimensions,
        apply_reverse_transform: fp.apply_reverse_transform,
    });
    let mut ops = hoisted;
    ops.extend(dims.iter().cloned());
    ops.extend(consts.iter().cloned());
    ops.extend(t[..nc].iter().flatten().cloned());
    ops.extend([trips, lower.clone(), step.clone()]);
    ops.extend(stacks);
    ops.extend(x[head..head + 4].iter().cloned());
    for k in 0..na {
        if at[k] {
            ops.push(match &t[head + 4 + k] {
                Some(tk) => tk.clone(),
                None => zeros_like(&args[k])?,
            });
        }
    }
    let touts = bind(&linear, &ops)?;
    let mut tangents: Vec<Option<Array>> = vec![None; ni + na];
    let mut it = touts.into_iter();
    for k in 0..na {
        if at[k] {
            tangents[ni + k] = it.next();
        }
    }
    Ok((primals, tangents))
}
