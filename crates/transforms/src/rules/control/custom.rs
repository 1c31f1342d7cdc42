//! Rules of `custom_jvp_call` and `custom_vjp_call` (the user's rules
//! live in `crate::custom`'s registry, keyed by the printed `jvp=` /
//! `fwd=` name): jvp, transpose and batching, side by side.
//!
//! - jvp: the registered rule; an equation whose name is not registered
//!   (parsed from JAX's text) is differentiated through its `call_jaxpr`.
//!   A `custom_vjp_call`'s jvp runs `fwd` on the primals and emits a
//!   linear `custom_vjp_call` named `custom_lin[..]` whose operands are
//!   `(residuals, primals, tangents)`; its `call_jaxpr` is the true jvp of
//!   the primal function (so forward evaluation works).
//! - transpose: a `custom_lin` equation calls the user's `bwd` on the
//!   residuals; other calls are transposed through their body.
//! - batch: the same call around the batched body.

use crate::custom::{lookup, open, Rule};
use crate::jvp::jvp_flat;
use crate::rules::{transpose_unsupported, values, BatchOuts, Cts, JvpOuts};
use crate::transpose::{backward_pass, LinArg};
use crate::util::{has_tangent, zeros_like};
use jaxon_ir::primitive::{CustomJvpCallParams, CustomVjpCallParams};
use jaxon_ir::{Aval, ClosedJaxpr, Jaxpr, Primitive};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{bind, lax, Array};
use std::sync::Arc;

const LIN_PREFIX: &str = "custom_lin";

fn check_outs(what: &str, call_jaxpr: &ClosedJaxpr, outs: &[Array]) -> Result<()> {
    let j = &call_jaxpr.jaxpr;
    if outs.len() != j.outvars.len() {
        return Err(Error::InvalidArgument(format!(
            "{what}: the rule returned {} outputs where the function has {}",
            outs.len(),
            j.outvars.len()
        )));
    }
    for (o, a) in outs.iter().zip(&j.outvars) {
        let want = j
            .atom_aval(a)
            .ok_or_else(|| Error::InvalidArgument("unbound outvar".into()))?;
        if o.ty().shape != want.array().shape {
            return Err(Error::ShapeMismatch {
                op: format!("{what} (rule output vs function output)"),
                lhs: jaxon_ir::shape::fmt_aval(o.aval()),
                rhs: jaxon_ir::shape::fmt_aval(&want),
            });
        }
    }
    Ok(())
}

/// The jvp of a `custom_jvp_call` equation: the registered rule, or the
/// derivative of `call_jaxpr` when none is registered.
pub(super) fn jvp_custom_jvp_call(
    cp: &CustomJvpCallParams,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let CustomJvpCallParams {
        name,
        call_jaxpr,
        jvp,
        num_consts,
        ..
    } = cp;
    if let Some((arity, tangent)) = jax_rule(name, jvp) {
        if x.len() == num_consts + arity && call_jaxpr.jaxpr.outvars.len() == 1 {
            // The primal is the call itself, as in JAX's rule.
            let po = bind(&Primitive::from(cp.clone()), x)?;
            let primals = &x[*num_consts..];
            let tangents = primals
                .iter()
                .zip(&t[*num_consts..])
                .map(|(p, t)| t.clone().map_or_else(|| zeros_like(p), Ok))
                .collect::<Result<Vec<_>>>()?;
            let to = tangent(primals, &tangents)?;
            return Ok((po, vec![Some(to)]));
        }
    }
    let Some(Rule::Jvp { rule, nondiff }) = lookup(jvp) else {
        return inline_jvp(call_jaxpr, x, t);
    };
    let primals = &x[*num_consts..];
    let tangents = primals
        .iter()
        .zip(&t[*num_consts..])
        .enumerate()
        .map(|(i, (p, t))| match t {
            Some(t) if !nondiff.contains(&i) => Ok(t.clone()),
            _ => zeros_like(p),
        })
        .collect::<Result<Vec<_>>>()?;
    let (po, to) = catch_flat(|| rule(primals, &tangents))?;
    check_outs("custom_jvp", call_jaxpr, &po)?;
    check_outs("custom_jvp (tangents)", call_jaxpr, &to)?;
    Ok((po, to.into_iter().map(Some).collect()))
}

/// `(primals, tangents) -> output tangent`.
type TangentRule = fn(&[Array], &[Array]) -> Result<Array>;

/// The arity and tangent rule of a JAX library function whose
/// `custom_jvp_call` names it (`name=` or `jvp=`), where differentiating
/// through `call_jaxpr` would differ from JAX:
/// - `jax.scipy.special.xlogy` and `xlog1py`, whose derivative wrt `x` is
///   `log(y)` (`log1p(y)`) even where `x == 0`;
/// - `jax.nn.relu`, whose derivative is 1 where `x > 0` and 0 elsewhere,
///   0 included (through its `max`, 0 would get ½).
fn jax_rule(name: &str, jvp: &str) -> Option<(usize, TangentRule)> {
    if name == "relu" {
        return Some((1, |p, t| {
            let positive = lax::gt(&p[0], &zeros_like(&p[0])?)?;
            lax::select_n(&positive, &[zeros_like(&t[0])?, t[0].clone()])
        }));
    }
    Some(match jvp {
        "_xlogy_jvp" => (2, |p, t| {
            let dx = lax::mul(&t[0], &lax::log(&p[1])?)?;
            let dy = lax::div(&lax::mul(&t[1], &p[0])?, &p[1])?;
            lax::add(&dx, &dy)
        }),
        "_xlog1py_jvp" => (2, |p, t| {
            let dx = lax::mul(&t[0], &lax::log1p(&p[1])?)?;
            let one = crate::util::scalar_like(&p[1], 1.0)?;
            let dy = lax::div(&lax::mul(&t[1], &p[0])?, &lax::add(&one, &p[1])?)?;
            lax::add(&dx, &dy)
        }),
        _ => return None,
    })
}

/// The jvp of a `custom_vjp_call`: `fwd` on the primals and a linear
/// `custom_lin` equation for the tangents (see the module doc).
pub(super) fn jvp_custom_vjp_call(
    cp: &CustomVjpCallParams,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let CustomVjpCallParams {
        name,
        call_jaxpr,
        fwd,
        bwd,
        num_consts,
        ..
    } = cp;
    let rule = if name.starts_with(LIN_PREFIX) {
        None
    } else {
        lookup(fwd)
    };
    let Some(Rule::Vjp { fwd: fwd_rule, .. }) = rule else {
        return inline_jvp(call_jaxpr, x, t);
    };
    let primals = &x[*num_consts..];
    let (po, res, rid) = catch_flat(|| fwd_rule(primals))?;
    check_outs("custom_vjp fwd", call_jaxpr, &po)?;
    // The linear map's forward form: the jvp of the primal function.
    let float: Vec<bool> = primals.iter().map(|p| has_tangent(p.dtype())).collect();
    let mut avals: Vec<Aval> = res.iter().map(|r| r.aval().clone()).collect();
    avals.extend(primals.iter().map(|p| p.aval().clone()));
    avals.extend(
        primals
            .iter()
            .filter(|p| has_tangent(p.dtype()))
            .map(|p| p.aval().clone()),
    );
    let (nres, nargs) = (res.len(), primals.len());
    let consts: Vec<Array> = x[..*num_consts].to_vec();
    let body = trace_flat(StageMode::Base, &avals, |args| {
        let ps = &args[nres..nres + nargs];
        let mut it = args[nres + nargs..].iter().cloned();
        let mut ins = consts.clone();
        ins.extend_from_slice(ps);
        let mut ts: Vec<Option<Array>> = vec![None; consts.len()];
        ts.extend(float.iter().map(|f| if *f { it.next() } else { None }));
        let (pout, tout) = jvp_flat(|i| eval_closed_jaxpr(call_jaxpr, &i), &ins, &ts)?;
        pout.iter()
            .zip(tout)
            .map(|(p, t)| t.map_or_else(|| zeros_like(p), Ok))
            .collect()
    })?;
    let (jaxpr, body_consts) = open(body.jaxpr, body.consts);
    let lin = Primitive::from(CustomVjpCallParams {
        name: format!("{LIN_PREFIX}[{nres},{nargs},{rid}]({name})"),
        call_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(jaxpr),
            consts: Arc::from(Vec::new()),
        },
        fwd: fwd.clone(),
        bwd: bwd.clone(),
        num_consts: body_consts.len(),
        symbolic_zeros: false,
    });
    let mut operands = body_consts;
    operands.extend(res);
    operands.extend_from_slice(primals);
    for (p, ti) in primals.iter().zip(&t[*num_consts..]) {
        if has_tangent(p.dtype()) {
            operands.push(match ti {
                Some(ti) => ti.clone(),
                None => zeros_like(p)?,
            });
        }
    }
    let touts = bind(&lin, &operands)?;
    Ok((po, touts.into_iter().map(Some).collect()))
}

/// `custom_lin[nres,nargs,rid](name)`: the number of residuals, of
/// primal arguments, and the residual structure id handed to `bwd`.
fn parse_lin_name(name: &str) -> Option<(usize, usize, usize)> {
    let rest = name.strip_prefix(LIN_PREFIX)?.strip_prefix('[')?;
    let (nums, _) = rest.split_once(']')?;
    let mut it = nums.split(',').map(|n| n.parse().ok());
    let (a, b, c) = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some((a, b, c))
}

/// The transpose of a `custom_lin` equation: the user's `bwd` on the
/// residuals.
pub(super) fn transpose_custom_vjp_call(
    cp: &CustomVjpCallParams,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let CustomVjpCallParams {
        name,
        call_jaxpr,
        fwd,
        num_consts,
        ..
    } = cp;
    let (Some((nres, nargs, rid)), Some(Rule::Vjp { bwd, .. })) =
        (parse_lin_name(name), lookup(fwd))
    else {
        return transpose_call(&call_jaxpr.jaxpr, args, cts);
    };
    let res = args[*num_consts..*num_consts + nres]
        .iter()
        .map(|a| a.value("custom_vjp_call").cloned())
        .collect::<Result<Vec<_>>>()?;
    let primal_args = &args[*num_consts + nres..*num_consts + nres + nargs];
    let j = &call_jaxpr.jaxpr;
    let cts = cts
        .iter()
        .zip(&j.outvars)
        .map(|(c, o)| match c {
            Some(c) => Ok(c.clone()),
            None => {
                let a = j
                    .atom_aval(o)
                    .ok_or_else(|| Error::InvalidArgument("unbound outvar".into()))?;
                let t = a.array();
                jaxon_trace::numpy::zeros(&t.static_sizes().unwrap_or_default(), t.dtype)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let cts_in = catch_flat(|| bwd(rid, &res, &cts))?;
    if cts_in.len() != nargs {
        return Err(Error::InvalidArgument(format!(
            "custom_vjp bwd returned {} cotangents for {nargs} arguments",
            cts_in.len()
        )));
    }
    let mut out = vec![None; *num_consts + nres + nargs];
    for (a, c) in primal_args.iter().zip(cts_in) {
        if has_tangent(a.ty().dtype) {
            if c.ty().shape != a.ty().shape {
                return Err(Error::ShapeMismatch {
                    op: "custom_vjp bwd (cotangent vs argument)".into(),
                    lhs: jaxon_ir::shape::fmt_aval(c.aval()),
                    rhs: format!("{:?}", a.ty().shape),
                });
            }
            out.push(Some(jaxon_trace::lax::convert_element_type(
                &c,
                a.ty().dtype,
                false,
            )?));
        }
    }
    Ok(out)
}

/// Differentiates through a jaxpr by evaluating it under a jvp trace of
/// its own. Each equation meets its own jvp rule, so a nested `jit` or
/// `cond` splits its primal from its tangent work and no primal value
/// becomes part of a linear jaxpr.
fn inline_jvp(closed: &ClosedJaxpr, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    jvp_flat(|ins| eval_closed_jaxpr(closed, &ins), x, t)
}

/// Transposes a call of an open jaxpr (no consts) through a backward pass
/// over its body.
fn transpose_call(
    jaxpr: &Jaxpr,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Vec<Option<Array>>> {
    let linear: Vec<bool> = args.iter().map(LinArg::is_linear).collect();
    let values = values(args);
    let lin_cts = backward_pass(jaxpr, &[], &linear, &values, cts)?;
    let mut it = lin_cts.into_iter();
    Ok(linear
        .iter()
        .map(|l| if *l { it.next().flatten() } else { None })
        .collect())
}

/// The transpose of a `custom_jvp_call`: its body's, when it closes over
/// no constants.
pub(super) fn transpose_custom_jvp_call(
    cp: &CustomJvpCallParams,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    let CustomJvpCallParams { call_jaxpr, .. } = cp;
    let consts: Vec<Array> = call_jaxpr
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    if consts.is_empty() {
        transpose_call(&call_jaxpr.jaxpr, args, cts)
    } else {
        transpose_unsupported(&cp.clone().into())
    }
}

/// `custom_jvp_call`: the same call around the batched body.
pub(super) fn batch_custom_jvp_call(
    cp: &CustomJvpCallParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    super::batch_call(&cp.call_jaxpr, x, d, n, axis, |call_jaxpr| {
        CustomJvpCallParams {
            call_jaxpr,
            ..cp.clone()
        }
        .into()
    })
}

/// `custom_vjp_call`: the same call around the batched body.
pub(super) fn batch_custom_vjp_call(
    cp: &CustomVjpCallParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
    axis: Option<&str>,
) -> Result<BatchOuts> {
    super::batch_call(&cp.call_jaxpr, x, d, n, axis, |call_jaxpr| {
        CustomVjpCallParams {
            call_jaxpr,
            ..cp.clone()
        }
        .into()
    })
}
