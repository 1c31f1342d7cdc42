//! Phase two of parsing: turns raw jaxprs into `Jaxpr`s — resolves `let`
//! references (forward ones included), drops unread `_` binders, renumbers
//! variables in binding order and types every equation's params.
//!
//! Invariant: each raw jaxpr is built once; every reference to it gets the
//! same `Arc`, so shared jaxprs stay shared.

use super::convert::to_primitive;
use super::lexer::line_col;
use super::params::{PValue, Params, PV};
use super::syntax::{PResult, RawJaxpr};
use super::ParseError;
use crate::aval::{AbstractRef, Aval, Dim, ShapedArray};
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var};
use std::collections::HashMap;
use std::sync::Arc;

/// Deepest chain of nested jaxpr references followed.
const MAX_DEPTH: usize = 200;

/// Builds typed jaxprs out of the raw arena.
pub(crate) struct Builder<'a> {
    pub text: &'a str,
    arena: &'a [RawJaxpr],
    lets: HashMap<&'a str, usize>,
    memo: Vec<Option<ClosedJaxpr>>,
    busy: Vec<bool>,
    depth: usize,
}

impl<'a> Builder<'a> {
    pub fn new(
        text: &'a str,
        arena: &'a [RawJaxpr],
        lets: &'a [(String, usize, usize)],
    ) -> Builder<'a> {
        Builder {
            text,
            arena,
            lets: lets.iter().map(|(n, id, _)| (n.as_str(), *id)).collect(),
            memo: vec![None; arena.len()],
            busy: vec![false; arena.len()],
            depth: 0,
        }
    }

    pub fn err(&self, pos: usize, message: impl Into<String>) -> ParseError {
        let (line, column) = line_col(self.text, pos);
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }

    /// The closed jaxpr of arena entry `id` (built once, then shared).
    pub fn closed(&mut self, id: usize, pos: usize) -> PResult<ClosedJaxpr> {
        if let Some(Some(c)) = self.memo.get(id) {
            return Ok(c.clone());
        }
        let Some(raw) = self.arena.get(id) else {
            return Err(self.err(pos, "expected a jaxpr, found a dangling reference"));
        };
        if self.busy.get(id).copied().unwrap_or(false) || self.depth > MAX_DEPTH {
            return Err(self.err(pos, "expected an acyclic jaxpr reference, found a cycle"));
        }
        if let Some(b) = self.busy.get_mut(id) {
            *b = true;
        }
        self.depth += 1;
        let built = self.finish(raw);
        self.depth -= 1;
        if let Some(b) = self.busy.get_mut(id) {
            *b = false;
        }
        let closed = ClosedJaxpr::new(built?, raw.consts.clone());
        if let Some(m) = self.memo.get_mut(id) {
            *m = Some(closed.clone());
        }
        Ok(closed)
    }

    /// A param value that is a jaxpr: inline `{...}` or a `let` name.
    pub fn jaxpr_param(&mut self, p: &Params, v: &PV) -> PResult<ClosedJaxpr> {
        match &v.v {
            PValue::Jaxpr(id) => self.closed(*id, v.start),
            PValue::Word(name) => match self.lets.get(name.as_str()) {
                Some(&id) => self.closed(id, v.start),
                None => Err(self.err(
                    v.start,
                    format!("expected a jaxpr, found unknown jaxpr name `{name}`"),
                )),
            },
            _ => Err(self.err(v.start, format!("expected a jaxpr, found `{}`", p.src(v)))),
        }
    }

    /// Renumbers a raw jaxpr and types its equations.
    fn finish(&mut self, raw: &RawJaxpr) -> PResult<Jaxpr> {
        let n = raw.vars.len();
        let mut map: Vec<Option<u32>> = vec![None; n];
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut assign = |v: Var, map: &mut Vec<Option<u32>>| {
            if let Some(slot) = map.get_mut(v.index()) {
                *slot = Some(order.len() as u32);
                order.push(v.index());
            }
        };
        for &v in raw.constvars.iter().chain(raw.invars.iter()) {
            assign(v, &mut map);
        }
        for e in &raw.eqns {
            for &v in &e.outputs {
                let drop = raw.underscore.get(v.index()).copied().unwrap_or(false)
                    && !raw.referenced.get(v.index()).copied().unwrap_or(false);
                if !drop {
                    assign(v, &mut map);
                }
            }
        }
        let remap_aval = |a: &Aval| -> Aval {
            let fix = |s: &ShapedArray| ShapedArray {
                dtype: s.dtype,
                weak_type: s.weak_type,
                shape: s
                    .shape
                    .iter()
                    .map(|d| match d {
                        Dim::Var(v) => match map.get(v.index()).copied().flatten() {
                            Some(k) => Dim::Var(Var(k)),
                            None => *d,
                        },
                        Dim::Const(_) => *d,
                    })
                    .collect(),
            };
            match a {
                Aval::Array(s) => Aval::Array(fix(s)),
                Aval::Ref(r) => Aval::Ref(AbstractRef {
                    inner: fix(&r.inner),
                    memory_space: r.memory_space.clone(),
                }),
            }
        };
        let raw_aval = |v: Var| raw.vars.get(v.index()).cloned();
        let mut jaxpr = Jaxpr::new();
        for &old in &order {
            let a = raw
                .vars
                .get(old)
                .map(&remap_aval)
                .ok_or_else(|| self.err(0, "internal: bad var"))?;
            jaxpr.vars.push(a);
        }
        let var = |v: Var| -> Option<Var> { map.get(v.index()).copied().flatten().map(Var) };
        let atom = |a: &Atom| -> Option<Atom> {
            match a {
                Atom::Var(v) => var(*v).map(Atom::Var),
                Atom::Lit(l) => Some(Atom::Lit(*l)),
            }
        };
        jaxpr.constvars = raw.constvars.iter().filter_map(|&v| var(v)).collect();
        jaxpr.invars = raw.invars.iter().filter_map(|&v| var(v)).collect();
        for e in &raw.eqns {
            let inputs: Vec<Atom> = e
                .inputs
                .iter()
                .map(|a| {
                    atom(a).ok_or_else(|| {
                        self.err(e.pos, "expected a bound operand, found a dropped `_`")
                    })
                })
                .collect::<PResult<_>>()?;
            let mut outputs = Vec::with_capacity(e.outputs.len());
            let mut out_avals = Vec::with_capacity(e.outputs.len());
            for &v in &e.outputs {
                let a = raw_aval(v)
                    .map(|a| remap_aval(&a))
                    .ok_or_else(|| self.err(e.pos, "internal: bad var"))?;
                outputs.push(match var(v) {
                    Some(nv) => Binder::Var(nv),
                    None => Binder::Drop(a.clone()),
                });
                out_avals.push(a);
            }
            let in_avals: Vec<Option<Aval>> = inputs.iter().map(|a| jaxpr.atom_aval(a)).collect();
            let primitive = to_primitive(self, e, &in_avals, &out_avals)?;
            jaxpr.eqns.push(Eqn {
                primitive,
                inputs,
                outputs,
            });
        }
        jaxpr.outvars = raw
            .outvars
            .iter()
            .map(|a| {
                atom(a).ok_or_else(|| self.err(0, "expected a bound outvar, found a dropped `_`"))
            })
            .collect::<PResult<_>>()?;
        Ok(jaxpr)
    }
}

/// `Arc` of a closed jaxpr's jaxpr, for params that hold a bare jaxpr.
pub(crate) fn bare(c: ClosedJaxpr) -> Arc<Jaxpr> {
    c.jaxpr
}
