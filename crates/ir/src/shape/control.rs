//! Shape rules of control flow and calls: `cond`, `while`, `scan`,
//! Catalyst's `for_loop`, `jit`, `custom_jvp_call`, `custom_vjp_call`,
//! `remat2`.
//!
//! A callee's types live in its own variable table; binding its invars to
//! the caller's operands gives a substitution of the callee's dimension
//! variables by the caller's, applied to the callee's result types.

use super::{fmt_aval, out_dim, same_type, Cx};
use crate::aval::{Aval, Dim, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::jaxpr::{Atom, ClosedJaxpr, Jaxpr, Var};
use crate::primitive::CustomLinearSolveParams;

/// An operand passed to a callee invar: its type and, for dimension
/// binding, its atom (`None` for derived operands like scan slices).
#[derive(Clone)]
struct Operand {
    aval: Aval,
    atom: Option<Atom>,
}

/// Callee dimension variables bound to caller dimensions.
struct Subst<'j> {
    jaxpr: &'j Jaxpr,
    map: Vec<(Var, Dim)>,
}

impl Subst<'_> {
    fn dim(&self, cx: &Cx, d: Dim, allow_out: bool) -> Result<Dim, IrError> {
        let Dim::Var(v) = d else { return Ok(d) };
        if let Some((_, o)) = self.map.iter().find(|(w, _)| *w == v) {
            return Ok(*o);
        }
        if allow_out {
            if let Some(k) = self.jaxpr.outvars.iter().position(|a| *a == Atom::Var(v)) {
                return Ok(out_dim(k));
            }
        }
        Err(cx.err(format!(
            "a callee dimension (variable #{}) is not bound by its inputs",
            v.0
        )))
    }

    fn aval(&self, cx: &Cx, a: &Aval, allow_out: bool) -> Result<Aval, IrError> {
        let mut a = a.clone();
        let arr = match &mut a {
            Aval::Array(x) => x,
            Aval::Ref(r) => &mut r.inner,
        };
        for d in arr.shape.iter_mut() {
            *d = self.dim(cx, *d, allow_out)?;
        }
        Ok(a)
    }
}

fn var_aval<'j>(cx: &Cx, j: &'j Jaxpr, v: Var) -> Result<&'j Aval, IrError> {
    j.try_aval(v)
        .ok_or_else(|| cx.err(format!("callee variable #{} is out of range", v.0)))
}

/// Binds `ops` to the invars of `j`, checking types; `what` names the callee.
fn bind<'j>(cx: &Cx, j: &'j Jaxpr, ops: &[Operand], what: &str) -> Result<Subst<'j>, IrError> {
    if j.invars.len() != ops.len() {
        return Err(cx.err(format!(
            "{what} takes {} input(s) but is given {} operand(s)",
            j.invars.len(),
            ops.len()
        )));
    }
    let mut s = Subst {
        jaxpr: j,
        map: Vec::new(),
    };
    for (i, (v, op)) in j.invars.iter().zip(ops).enumerate() {
        let inner = s.aval(cx, var_aval(cx, j, *v)?, false)?;
        if !same_type(&inner, &op.aval) {
            return Err(cx.err(format!(
                "{what} input {i} has type {} but the operand has type {}",
                fmt_aval(&inner),
                fmt_aval(&op.aval)
            )));
        }
        let is_dim = matches!(&op.aval, Aval::Array(a) if a.shape.is_empty() && a.dtype.is_int());
        if is_dim {
            match op.atom {
                Some(Atom::Var(o)) => s.map.push((*v, Dim::Var(o))),
                Some(Atom::Lit(l)) => {
                    if let Some(n) = l.as_i64().filter(|n| *n >= 0) {
                        s.map.push((*v, Dim::Const(n as usize)));
                    }
                }
                None => {}
            }
        }
    }
    Ok(s)
}

/// The callee's result types in the caller's terms.
fn results(cx: &Cx, s: &Subst) -> Result<Vec<Aval>, IrError> {
    s.jaxpr
        .outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => s.aval(cx, var_aval(cx, s.jaxpr, *v)?, true),
            Atom::Lit(l) => Ok(Aval::Array(ShapedArray::scalar(l.dtype))),
        })
        .collect()
}

/// Like [`results`], but a dimension that is itself a result is that
/// result (`OutDBIdx`) before it is an input's.
fn results_out_first(cx: &Cx, s: &Subst) -> Result<Vec<Aval>, IrError> {
    let j = s.jaxpr;
    j.outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => {
                let mut o = var_aval(cx, j, *v)?.clone();
                let arr = match &mut o {
                    Aval::Array(x) => x,
                    Aval::Ref(r) => &mut r.inner,
                };
                for d in arr.shape.iter_mut() {
                    let Dim::Var(w) = *d else { continue };
                    *d = match j.outvars.iter().position(|a| *a == Atom::Var(w)) {
                        Some(k) => out_dim(k),
                        None => s.dim(cx, *d, false)?,
                    };
                }
                Ok(o)
            }
            Atom::Lit(l) => Ok(Aval::Array(ShapedArray::scalar(l.dtype))),
        })
        .collect()
}

fn operands(cx: &Cx, range: std::ops::Range<usize>) -> Vec<Operand> {
    range
        .map(|i| Operand {
            aval: cx.avals[i].clone(),
            atom: cx.atoms.get(i).copied(),
        })
        .collect()
}

fn same_list(cx: &Cx, what: &str, a: &[Aval], b: &[Aval]) -> Result<(), IrError> {
    let fmt = |l: &[Aval]| l.iter().map(fmt_aval).collect::<Vec<_>>().join(", ");
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| !same_type(x, y)) {
        return Err(cx.err(format!("{what}: got ({}) and ({})", fmt(a), fmt(b))));
    }
    Ok(())
}

/// `jit`, `custom_jvp_call`, `custom_vjp_call`, `remat2`: the callee's
/// results.
pub(crate) fn call(cx: &Cx, j: &Jaxpr) -> Result<Vec<Aval>, IrError> {
    let s = bind(cx, j, &operands(cx, 0..cx.avals.len()), "the callee")?;
    results(cx, &s)
}

/// `custom_linear_solve *consts *b`: each present function maps its consts
/// and a value of `b`'s types to `b`'s types; the results are `b`'s.
pub(crate) fn linear_solve(cx: &Cx, p: &CustomLinearSolveParams) -> Result<Vec<Aval>, IrError> {
    let nc = p.num_consts();
    cx.min_arity(nc)?;
    let b: Vec<Aval> = cx.avals[nc..].to_vec();
    let names = ["matvec", "vecmat", "solve", "transpose_solve"];
    for (k, (j, what)) in p.jaxprs.as_array().into_iter().zip(names).enumerate() {
        let Some(j) = j else { continue };
        let range = p.consts_range(k);
        let ops: Vec<Operand> = operands(cx, range)
            .into_iter()
            .chain(operands(cx, nc..cx.avals.len()))
            .collect();
        let s = bind(cx, &j.jaxpr, &ops, what)?;
        let r = results(cx, &s)?;
        same_list(
            cx,
            &format!("{what} must map b's types to themselves"),
            &b,
            &r,
        )?;
    }
    Ok(b)
}

/// `cond index *operands`.
pub(crate) fn cond(cx: &Cx, branches: &[ClosedJaxpr]) -> Result<Vec<Aval>, IrError> {
    cx.min_arity(1)?;
    let idx = cx.arr(0)?;
    if !idx.shape.is_empty() || idx.dtype != DType::I32 {
        return Err(cx.err(format!(
            "the index operand must be a scalar int32, got {}",
            fmt_aval(&cx.avals[0])
        )));
    }
    if branches.is_empty() {
        return Err(cx.err("cond needs at least one branch"));
    }
    let ops = operands(cx, 1..cx.avals.len());
    let dynamic = branches.iter().any(|b| is_dynamic(&b.jaxpr));
    let mut out: Option<Vec<Aval>> = None;
    for (b, br) in branches.iter().enumerate() {
        let s = bind(cx, &br.jaxpr, &ops, &format!("branch {b}"))?;
        // With dynamic shapes, a dimension every branch returns as a result
        // is that result (`OutDBIdx`) even where a branch computes it from
        // an input, so the branches' types agree.
        let r = if dynamic {
            results_out_first(cx, &s)?
        } else {
            results(cx, &s)?
        };
        match &out {
            None => out = Some(r),
            Some(first) => same_list(
                cx,
                &format!("branch 0 and branch {b} outputs must have equal types"),
                first,
                &r,
            )?,
        }
    }
    Ok(out.unwrap_or_default())
}

/// `while *cconsts *bconsts *init`.
pub(crate) fn while_loop(
    cx: &Cx,
    cond_j: &ClosedJaxpr,
    body_j: &ClosedJaxpr,
    cond_nconsts: usize,
    body_nconsts: usize,
) -> Result<Vec<Aval>, IrError> {
    let n = cx.avals.len();
    cx.min_arity(cond_nconsts.saturating_add(body_nconsts))?;
    let carry = operands(cx, cond_nconsts + body_nconsts..n);
    let mut cond_ops = operands(cx, 0..cond_nconsts);
    cond_ops.extend(carry.iter().cloned());
    let cs = bind(cx, &cond_j.jaxpr, &cond_ops, "cond_jaxpr")?;
    let pred = results(cx, &cs)?;
    let pred_ok =
        matches!(&pred[..], [Aval::Array(a)] if a.dtype == DType::Bool && a.shape.is_empty());
    if !pred_ok {
        let tys: Vec<String> = pred.iter().map(fmt_aval).collect();
        return Err(cx.err(format!(
            "cond_jaxpr must return a single bool scalar, got ({})",
            tys.join(", ")
        )));
    }
    let mut body_ops = operands(cx, cond_nconsts..cond_nconsts + body_nconsts);
    body_ops.extend(carry.iter().cloned());
    let bs = bind(cx, &body_j.jaxpr, &body_ops, "body_jaxpr")?;
    let carry_avals: Vec<Aval> = carry.iter().map(|o| o.aval.clone()).collect();
    if is_dynamic(&body_j.jaxpr) {
        let slot = |p: usize| {
            if p < body_nconsts {
                Slot::Const
            } else {
                Slot::Carry(p - body_nconsts)
            }
        };
        return loop_results(cx, &bs, &slot, "body_jaxpr");
    }
    let outs = results(cx, &bs)?;
    same_list(
        cx,
        "body_jaxpr output types must equal the carry types",
        &outs,
        &carry_avals,
    )?;
    Ok(outs)
}

/// Whether any variable of `j` has a dynamic dimension.
fn is_dynamic(j: &Jaxpr) -> bool {
    j.vars
        .iter()
        .any(|a| a.shape().iter().any(|d| matches!(d, Dim::Var(_))))
}

/// What a loop body's invar is across iterations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The same value every iteration (a const).
    Const,
    /// Carry `j`: the next iteration gets the body's result `j`.
    Carry(usize),
    /// Changes every iteration without being a result (the loop index).
    Varying,
}

/// Result types of a loop with dynamic shapes, in the caller's terms. A
/// carry's dimension may change across iterations, so a result dimension is
/// an input's only when that input is loop-invariant (a const, or a carry
/// the body returns unchanged in its own slot); otherwise it must itself be
/// a result (`OutDBIdx`). Each carry's result type must be its input type
/// with every carried dimension replaced by that dimension's next value.
fn loop_results(
    cx: &Cx,
    s: &Subst,
    slot: &dyn Fn(usize) -> Slot,
    what: &str,
) -> Result<Vec<Aval>, IrError> {
    let j = s.jaxpr;
    let pos = |v: Var| j.invars.iter().position(|&w| w == v);
    let next = |k: usize| match j.outvars.get(k) {
        Some(Atom::Var(v)) => Some(Dim::Var(*v)),
        Some(Atom::Lit(l)) => l.as_i64().map(|n| Dim::Const(n.max(0) as usize)),
        None => None,
    };
    let carried: Vec<usize> = (0..j.invars.len())
        .filter(|&p| matches!(slot(p), Slot::Carry(_)))
        .collect();
    if carried.len() != j.outvars.len() {
        return Err(cx.err(format!(
            "{what} returns {} value(s) for {} carried input(s)",
            j.outvars.len(),
            carried.len()
        )));
    }
    let mut out = Vec::with_capacity(j.outvars.len());
    for (k, &p) in carried.iter().enumerate() {
        let inner_in = var_aval(cx, j, j.invars[p])?;
        let inner_out = match &j.outvars[k] {
            Atom::Var(v) => var_aval(cx, j, *v)?.clone(),
            Atom::Lit(l) => Aval::Array(ShapedArray::scalar(l.dtype)),
        };
        let (a, b) = (inner_in.array(), inner_out.array());
        let dims_ok = a.shape.len() == b.shape.len()
            && a.shape.iter().zip(&b.shape).all(|(din, dout)| {
                din == dout
                    || match din {
                        Dim::Var(w) => match pos(*w).map(slot) {
                            Some(Slot::Carry(c)) => next(c) == Some(*dout),
                            _ => false,
                        },
                        Dim::Const(_) => false,
                    }
            });
        if a.dtype != b.dtype || !dims_ok {
            return Err(cx.err(format!(
                "{what} result {k} has type {} but its carried input has type {}; \
                 a result must keep the input's dimensions or return their new values",
                fmt_aval(&inner_out),
                fmt_aval(inner_in)
            )));
        }
        let mut o = inner_out.clone();
        let arr = match &mut o {
            Aval::Array(x) => x,
            Aval::Ref(r) => &mut r.inner,
        };
        for d in arr.shape.iter_mut() {
            let Dim::Var(v) = *d else { continue };
            let invariant = match pos(v).map(slot) {
                Some(Slot::Const) => true,
                Some(Slot::Carry(c)) => next(c) == Some(Dim::Var(v)),
                Some(Slot::Varying) | None => false,
            };
            *d = if invariant {
                s.dim(cx, Dim::Var(v), false)?
            } else if let Some(r) = j.outvars.iter().position(|a| *a == Atom::Var(v)) {
                out_dim(r)
            } else {
                return Err(cx.err(format!(
                    "{what} result {k} has type {} whose dimension variable #{} changes \
                     across iterations but is not a result",
                    fmt_aval(&inner_out),
                    v.0
                )));
            };
        }
        out.push(o);
    }
    Ok(out)
}

/// `scan *consts *carry *xs` giving `*carry *ys`.
pub(crate) fn scan(
    cx: &Cx,
    j: &ClosedJaxpr,
    length: usize,
    num_consts: usize,
    num_carry: usize,
    linear: &[bool],
) -> Result<Vec<Aval>, IrError> {
    let n = cx.avals.len();
    cx.min_arity(num_consts.saturating_add(num_carry))?;
    if !linear.is_empty() && linear.len() != n {
        return Err(cx.err(format!(
            "linear has {} entries for {n} operands",
            linear.len()
        )));
    }
    let mut ops = operands(cx, 0..num_consts + num_carry);
    for i in num_consts + num_carry..n {
        let x = cx.arr(i)?;
        if x.shape.first() != Some(&Dim::Const(length)) {
            return Err(cx.err(format!(
                "scanned operand {} must have a leading dimension of size length={length}",
                fmt_aval(&cx.avals[i])
            )));
        }
        let mut sl = x.clone();
        sl.shape.remove(0);
        ops.push(Operand {
            aval: Aval::Array(sl),
            atom: None,
        });
    }
    let s = bind(cx, &j.jaxpr, &ops, "the scan body")?;
    let outs = results(cx, &s)?;
    if outs.len() < num_carry {
        return Err(cx.err(format!(
            "the scan body returns {} value(s), fewer than num_carry={num_carry}",
            outs.len()
        )));
    }
    let carry_in: Vec<Aval> = cx.avals[num_consts..num_consts + num_carry].to_vec();
    same_list(
        cx,
        "the scan body's carry outputs must equal the carry inputs",
        &outs[..num_carry],
        &carry_in,
    )?;
    let mut result = outs[..num_carry].to_vec();
    for y in &outs[num_carry..] {
        let Aval::Array(y) = y else {
            return Err(cx.err(format!("scan outputs must be arrays, got {}", fmt_aval(y))));
        };
        let mut y = y.clone();
        y.shape.insert(0, Dim::Const(length));
        result.push(Aval::Array(y));
    }
    Ok(result)
}

/// Catalyst's `for_loop *consts *implicit lo hi step *loop_args`, where
/// `loop_args` is the initial index followed by the carry; the body takes
/// `*consts *implicit *loop_args` and returns the (implicit dims and) carry.
pub(crate) fn for_loop(
    cx: &Cx,
    body: &ClosedJaxpr,
    body_nconsts: usize,
    nimplicit: usize,
) -> Result<Vec<Aval>, IrError> {
    let n = cx.avals.len();
    let head = body_nconsts.saturating_add(nimplicit);
    cx.min_arity(head.saturating_add(3))?;
    for (k, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
        cx.int_scalar(head + k, what)?;
    }
    let mut ops = operands(cx, 0..head);
    ops.extend(operands(cx, head + 3..n));
    let s = bind(cx, &body.jaxpr, &ops, "body_jaxpr")?;
    if !is_dynamic(&body.jaxpr) {
        return results(cx, &s);
    }
    let slot = |p: usize| {
        if p < body_nconsts {
            Slot::Const
        } else if p < head {
            Slot::Carry(p - body_nconsts)
        } else if p == head {
            Slot::Varying
        } else {
            Slot::Carry(p - body_nconsts - 1)
        }
    };
    loop_results(cx, &s, &slot, "body_jaxpr")
}
