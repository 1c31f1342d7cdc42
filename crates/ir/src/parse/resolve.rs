//! Name resolution that needs more than the current scope: which `_`
//! binder a `_` operand reads (decided once every `let` is read), and which
//! binders reuse a name bound outside every enclosing scope (a copy of an
//! earlier jaxpr that shares its variables).

use super::params::PValue;
use super::syntax::{let_named, RawEqn, RawJaxpr, Reader, PENDING_BASE};
use crate::aval::{Aval, Dim};
use crate::jaxpr::{Atom, Var};

/// Primitives whose operands are the invars of their `jaxpr=` /
/// `call_jaxpr=` param, one for one and of the same types.
const CALLS: [&str; 4] = ["jit", "remat2", "custom_jvp_call", "custom_vjp_call"];

impl Reader<'_> {
    /// Records a binder's name: whether it is foreign (bound before, but in
    /// no enclosing scope), and that it is now visible.
    pub(super) fn note_binder(&mut self, jx: &mut RawJaxpr, name: &str) {
        let foreign = name != "_"
            && !self.visible.contains_key(name)
            && self.first_bound.get(name).is_some_and(|&at| at < jx.span.0);
        jx.names.push(name.to_string());
        jx.foreign.push(foreign);
        if name != "_" {
            if !self.first_bound.contains_key(name) {
                self.first_bound.insert(name.to_string(), jx.span.0);
            }
            self.show([name]);
        }
    }

    /// Makes names visible to the scopes about to be read.
    pub(super) fn show<'n>(&mut self, names: impl IntoIterator<Item = &'n str>) {
        for n in names {
            match self.visible.get_mut(n) {
                Some(c) => *c += 1,
                None => {
                    self.visible.insert(n.to_string(), 1);
                }
            }
        }
    }

    /// Undoes one [`Reader::show`] of each name.
    pub(super) fn hide<S: AsRef<str>>(&mut self, names: impl IntoIterator<Item = S>) {
        for n in names {
            if let Some(c) = self.visible.get_mut(n.as_ref()) {
                *c -= 1;
                if *c == 0 {
                    self.visible.remove(n.as_ref());
                }
            }
        }
    }

    /// The type a call's callee gives operand `i`, when the text says it.
    fn callee_invar_type(&self, e: &RawEqn, i: usize) -> Option<Aval> {
        if !CALLS.contains(&e.name.as_str()) {
            return None;
        }
        let pv = e
            .params
            .iter()
            .find(|p| p.key == "jaxpr" || p.key == "call_jaxpr")?;
        let id = match &pv.value.v {
            PValue::Jaxpr(id) => *id,
            PValue::Word(name) => let_named(&self.lets, name, pv.value.start)?,
            _ => return None,
        };
        let callee = self.arena.get(id)?;
        if callee.invars.len() != e.inputs.len() {
            return None;
        }
        let a = callee.vars.get(callee.invars.get(i)?.index())?;
        // A dimension variable names a var of the callee, not of the caller.
        let concrete = a.array().shape.iter().all(|d| matches!(d, Dim::Const(_)));
        concrete.then(|| a.clone())
    }

    /// Resolves the `_` operands of arena jaxpr `id`. Each reads an earlier
    /// `_` binder. JAX prints `_` only for variables a jit body names after
    /// its caller's dropped outputs or `_` operands, so the readable ones
    /// are invars named `_` and binders matched by `_` outvars. Among those
    /// the latest of the operand's type when a callee's invar gives it, else
    /// the latest readable, else the latest.
    pub(super) fn resolve_pending(&mut self, id: usize) {
        let Some(jx) = self.arena.get(id) else {
            return;
        };
        if jx.pending.is_empty() {
            return;
        }
        let mut want: Vec<Option<Aval>> = vec![None; jx.pending.len()];
        // Per pending operand without a type: (its rank among the equation's
        // untyped `_` operands, how many there are).
        let mut rank: Vec<(usize, usize)> = vec![(0, 1); jx.pending.len()];
        for e in &jx.eqns {
            let mut untyped = Vec::new();
            for (i, a) in e.inputs.iter().enumerate() {
                if let Atom::Var(v) = a {
                    if v.0 >= PENDING_BASE {
                        let k = (v.0 - PENDING_BASE) as usize;
                        if let Some(w) = want.get_mut(k) {
                            *w = self.callee_invar_type(e, i);
                            if w.is_none() {
                                untyped.push(k);
                            }
                        }
                    }
                }
            }
            for (r, &k) in untyped.iter().enumerate() {
                if let Some(slot) = rank.get_mut(k) {
                    *slot = (r, untyped.len());
                }
            }
        }
        let Some(jx) = self.arena.get_mut(id) else {
            return;
        };
        let mut readable = vec![false; jx.vars.len()];
        for v in jx
            .constvars
            .iter()
            .chain(jx.invars.iter())
            .chain(jx.matched.iter())
        {
            if let Some(r) = readable.get_mut(v.index()) {
                *r = true;
            }
        }
        let is_readable = |v: &Var| readable.get(v.index()).copied().unwrap_or(false);
        // Without types, an equation's `k` `_` operands read the last `k`
        // readable `_` binders, in order (`conv _ _` after `_ = ..` twice).
        let resolved: Vec<Option<Var>> = jx
            .pending
            .iter()
            .zip(&want)
            .zip(&rank)
            .map(|((&count, want), &(r, k))| {
                let before = jx.underscores.get(..count).unwrap_or(&jx.underscores);
                let typed = want.as_ref().and_then(|w| {
                    before
                        .iter()
                        .rev()
                        .find(|v| is_readable(v) && jx.vars.get(v.index()) == Some(w))
                });
                let readable: Vec<&Var> = before.iter().filter(|v| is_readable(v)).collect();
                let in_order = (k > 1 && readable.len() >= k)
                    .then(|| readable.get(readable.len() - k + r).copied())
                    .flatten();
                typed
                    .or(in_order)
                    .or_else(|| readable.last().copied())
                    .or(before.last())
                    .copied()
            })
            .collect();
        for v in resolved.iter().flatten() {
            if let Some(r) = jx.referenced.get_mut(v.index()) {
                *r = true;
            }
        }
        let fix = |a: &mut Atom| {
            if let Atom::Var(v) = a {
                if v.0 >= PENDING_BASE {
                    if let Some(Some(r)) = resolved.get((v.0 - PENDING_BASE) as usize) {
                        *v = *r;
                    }
                }
            }
        };
        for e in &mut jx.eqns {
            e.inputs.iter_mut().for_each(fix);
        }
        jx.outvars.iter_mut().for_each(fix);
    }
}
