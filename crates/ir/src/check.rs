//! `check_jaxpr`: verifies scoping and types of a jaxpr, nested jaxprs and
//! dynamic dimensions included. Never panics.
//!
//! Rules: every variable index is in range of its jaxpr's table and bound
//! exactly once (constvars, then invars, then equation outputs, in order)
//! before use; dimension variables name bound scalar integer variables;
//! each equation's binder types equal its primitive's `abstract_eval`
//! (dtype and shape; weak flags are ignored as JAX does); nested jaxprs are
//! checked as their own scopes, and closed consts match their constvars.

use crate::aval::{Aval, Dim};
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Jaxpr, Var};
use crate::primitive::{NestedJaxpr, ParamJaxpr};
use crate::shape::{abstract_eval, as_out_dim, fmt_aval};
use std::collections::HashSet;
use std::sync::Arc;

/// Checks that every variable is bound once before use and every equation's
/// types follow its primitive's shape rule.
pub fn check_jaxpr(jaxpr: &Jaxpr) -> Result<(), IrError> {
    Checker::default().jaxpr(jaxpr)
}

/// Checks a closed jaxpr, including that the consts match the constvars.
pub fn check_closed_jaxpr(closed: &ClosedJaxpr) -> Result<(), IrError> {
    Checker::default().closed(closed)
}

/// Remembers nested jaxprs already checked (shared `Arc`s are checked once).
#[derive(Default)]
struct Checker {
    done: HashSet<*const Jaxpr>,
    done_closed: HashSet<(*const Jaxpr, *const u8)>,
    /// Nested jaxprs being checked (guards the stack: [`MAX_NESTING`]).
    depth: usize,
}

/// The deepest nesting of jaxprs (a call in a call in ...) that
/// [`check_jaxpr`] and the interpreter accept; deeper is an error naming
/// this limit, never a stack overflow.
pub const MAX_NESTING: usize = 256;

fn invalid(msg: impl Into<String>) -> IrError {
    IrError::Invalid(msg.into())
}

/// Prefixes an error with where it happened.
fn within(ctx: &str, e: IrError) -> IrError {
    match e {
        IrError::Type { primitive, message } => invalid(format!("{ctx}: {primitive}: {message}")),
        IrError::Invalid(m) => invalid(format!("{ctx}: {m}")),
        other => invalid(format!("{ctx}: {other}")),
    }
}

/// One jaxpr's scope: which variables are bound.
struct Scope<'j> {
    jaxpr: &'j Jaxpr,
    bound: Vec<bool>,
}

impl<'j> Scope<'j> {
    fn aval(&self, v: Var, what: &str) -> Result<&'j Aval, IrError> {
        self.jaxpr.try_aval(v).ok_or_else(|| {
            invalid(format!(
                "{what} variable #{} is out of range (the jaxpr has {} variables)",
                v.0,
                self.jaxpr.vars.len()
            ))
        })
    }

    /// Checks that the dims of `a` name bound scalar integer variables.
    fn dims_ok(&self, a: &Aval, what: &str) -> Result<(), IrError> {
        crate::memory::check_shape_size(a.array()).map_err(|e| within(what, e))?;
        for d in a.shape() {
            if let Dim::Var(v) = d {
                let t = self.aval(*v, "a dimension")?;
                if !self.bound[v.index()] {
                    return Err(invalid(format!(
                        "{what} has type {} whose dimension variable #{} is not bound",
                        fmt_aval(a),
                        v.0
                    )));
                }
                let scalar_int =
                    matches!(t, Aval::Array(x) if x.shape.is_empty() && x.dtype.is_int());
                if !scalar_int {
                    return Err(invalid(format!(
                        "{what} has type {} whose dimension variable #{} has type {} (not a scalar integer)",
                        fmt_aval(a),
                        v.0,
                        fmt_aval(t)
                    )));
                }
            }
        }
        Ok(())
    }

    fn bind(&mut self, v: Var, what: &str) -> Result<(), IrError> {
        let a = self.aval(v, what)?;
        if self.bound[v.index()] {
            return Err(invalid(format!("{what} variable #{} is bound twice", v.0)));
        }
        self.dims_ok(a, &format!("{what} variable #{}", v.0))?;
        self.bound[v.index()] = true;
        Ok(())
    }

    fn atom(&self, a: &Atom, what: &str) -> Result<Aval, IrError> {
        match a {
            Atom::Var(v) => {
                let t = self.aval(*v, what)?;
                if !self.bound[v.index()] {
                    return Err(invalid(format!(
                        "{what} variable #{} is used before it is bound",
                        v.0
                    )));
                }
                Ok(t.clone())
            }
            Atom::Lit(l) => Ok(Aval::Array(crate::aval::ShapedArray::scalar(l.dtype))),
        }
    }
}

/// Whether a binder's declared type agrees with the rule's result, where
/// [`as_out_dim`] dims of the result name the equation's other binders.
fn binder_matches(got: &Aval, want: &Aval, binders: &[Binder]) -> bool {
    let (g, w) = match (got, want) {
        (Aval::Array(g), Aval::Array(w)) => (g, w),
        (Aval::Ref(g), Aval::Ref(w)) => (&g.inner, &w.inner),
        _ => return false,
    };
    g.dtype == w.dtype
        && g.shape.len() == w.shape.len()
        && g.shape
            .iter()
            .zip(&w.shape)
            .all(|(gd, wd)| match as_out_dim(*wd) {
                Some(k) => match binders.get(k) {
                    Some(Binder::Var(v)) => *gd == Dim::Var(*v),
                    Some(Binder::Drop(_)) => true,
                    None => false,
                },
                None => gd == wd,
            })
}

impl Checker {
    fn closed(&mut self, c: &ClosedJaxpr) -> Result<(), IrError> {
        let key = (Arc::as_ptr(&c.jaxpr), c.consts.as_ptr() as *const u8);
        if self.done_closed.contains(&key) {
            return Ok(());
        }
        let j = &c.jaxpr;
        if c.consts.len() != j.constvars.len() {
            return Err(invalid(format!(
                "{} const value(s) for {} constvar(s)",
                c.consts.len(),
                j.constvars.len()
            )));
        }
        for (i, (v, x)) in j.constvars.iter().zip(c.consts.iter()).enumerate() {
            let want = j.try_aval(*v).ok_or_else(|| {
                invalid(format!("constvar {i} (variable #{}) is out of range", v.0))
            })?;
            let ok = match want {
                Aval::Array(a) => {
                    a.dtype == x.dtype()
                        && a.shape.len() == x.ndim()
                        && a.shape
                            .iter()
                            .zip(x.shape())
                            .all(|(d, &n)| *d == Dim::Const(n))
                }
                Aval::Ref(_) => false,
            };
            if !ok {
                return Err(invalid(format!(
                    "const {i} has type {}{:?} but its constvar has type {}",
                    x.dtype(),
                    x.shape(),
                    fmt_aval(want)
                )));
            }
        }
        self.jaxpr_arc(j)?;
        self.done_closed.insert(key);
        Ok(())
    }

    fn jaxpr_arc(&mut self, j: &Arc<Jaxpr>) -> Result<(), IrError> {
        let key = Arc::as_ptr(j);
        if self.done.contains(&key) {
            return Ok(());
        }
        if self.depth >= MAX_NESTING {
            return Err(invalid(format!(
                "jaxprs nested over the nesting limit of {MAX_NESTING}"
            )));
        }
        self.depth += 1;
        let r = self.jaxpr(j);
        self.depth -= 1;
        r?;
        self.done.insert(key);
        Ok(())
    }

    fn jaxpr(&mut self, j: &Jaxpr) -> Result<(), IrError> {
        let mut s = Scope {
            jaxpr: j,
            bound: vec![false; j.vars.len()],
        };
        for v in &j.constvars {
            s.bind(*v, "constvar")?;
        }
        for v in &j.invars {
            s.bind(*v, "invar")?;
        }
        for (i, eqn) in j.eqns.iter().enumerate() {
            let name = eqn.primitive.name();
            let ctx = format!("equation {i} ({name})");
            self.eqn(&mut s, eqn, &ctx).map_err(|e| within(&ctx, e))?;
        }
        for (k, a) in j.outvars.iter().enumerate() {
            s.atom(a, &format!("outvar {k}"))?;
        }
        Ok(())
    }

    fn eqn(&mut self, s: &mut Scope, eqn: &crate::jaxpr::Eqn, _ctx: &str) -> Result<(), IrError> {
        let in_avals = eqn
            .inputs
            .iter()
            .enumerate()
            .map(|(k, a)| s.atom(a, &format!("operand {k}")))
            .collect::<Result<Vec<_>, _>>()?;
        for ParamJaxpr { param, jaxpr } in eqn.primitive.param_jaxprs() {
            match jaxpr {
                NestedJaxpr::Closed(c) => self.closed(c).map_err(|e| within(param, e))?,
                NestedJaxpr::Open(j) => self.jaxpr_arc(j).map_err(|e| within(param, e))?,
            }
        }
        let want = abstract_eval(&eqn.primitive, &in_avals, &eqn.inputs)?;
        if want.len() != eqn.outputs.len() {
            return Err(invalid(format!(
                "{} binder(s) for {} result(s)",
                eqn.outputs.len(),
                want.len()
            )));
        }
        for (k, (b, w)) in eqn.outputs.iter().zip(&want).enumerate() {
            let got = match b {
                Binder::Var(v) => s.aval(*v, "binder")?.clone(),
                Binder::Drop(a) => a.clone(),
            };
            if !binder_matches(&got, w, &eqn.outputs) {
                let ins: Vec<String> = in_avals.iter().map(fmt_aval).collect();
                return Err(invalid(format!(
                    "result {k} is declared {} but the rule gives {} for operands ({})",
                    fmt_aval(&got),
                    fmt_aval(w),
                    ins.join(", ")
                )));
            }
            match b {
                Binder::Var(v) => s.bind(*v, &format!("result {k}"))?,
                Binder::Drop(a) => s.dims_ok(a, &format!("result {k}"))?,
            }
        }
        Ok(())
    }
}
