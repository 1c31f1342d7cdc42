//! Phase two of parsing: turns raw jaxprs into `Jaxpr`s — resolves `let`
//! references (forward ones included), drops unread `_` binders, renumbers
//! variables in binding order, types every equation's params, and gives
//! copies of a jaxpr that JAX printed with its names one `VarSpace`.
//!
//! Invariant: each raw jaxpr is built once; every reference to it gets the
//! same `Arc`, so shared jaxprs stay shared.

use super::convert::to_primitive;
use super::lexer::line_col;
use super::params::{PValue, Params, PV};
use super::syntax::{let_named, LetBinding, PResult, RawJaxpr};
use super::ParseError;
use crate::aval::{AbstractRef, Aval, Dim, ShapedArray};
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var, VarSpace};
use std::collections::HashMap;
use std::sync::Arc;

/// Deepest chain of nested jaxpr references followed.
const MAX_DEPTH: usize = 200;

/// Builds typed jaxprs out of the raw arena.
pub(crate) struct Builder<'a> {
    pub text: &'a str,
    arena: &'a [RawJaxpr],
    lets: &'a [LetBinding],
    documents: &'a [usize],
    /// Per top-level `let` a nested document has been matched to: how
    /// often, and when last (on `clock`).
    taken: HashMap<usize, (usize, usize)>,
    clock: usize,
    memo: Vec<Option<ClosedJaxpr>>,
    busy: Vec<bool>,
    depth: usize,
    /// Per arena entry: the variable space it shares with its copies.
    spaces: Vec<VarSpace>,
}

impl<'a> Builder<'a> {
    pub fn new(
        text: &'a str,
        arena: &'a [RawJaxpr],
        lets: &'a [LetBinding],
        documents: &'a [usize],
    ) -> Builder<'a> {
        Builder {
            text,
            arena,
            lets,
            documents,
            taken: HashMap::new(),
            clock: 0,
            memo: vec![None; arena.len()],
            busy: vec![false; arena.len()],
            depth: 0,
            spaces: var_spaces(arena),
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
        if self.depth > MAX_DEPTH {
            return Err(self.err(
                pos,
                format!("nesting too deep: jaxpr references over the parser's nesting limit of {MAX_DEPTH}"),
            ));
        }
        if self.busy.get(id).copied().unwrap_or(false) {
            return Err(self.err(pos, "expected an acyclic jaxpr reference, found a cycle"));
        }
        if let Some(b) = self.busy.get_mut(id) {
            *b = true;
        }
        self.depth += 1;
        let built = self.finish(raw).map(|mut j| {
            j.var_space = self.spaces.get(id).cloned().unwrap_or_default();
            j
        });
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
            PValue::Jaxpr(id) if self.documents.contains(id) => self.document(*id, v.start),
            PValue::Jaxpr(id) => self.closed(*id, v.start),
            PValue::Word(name) => match let_named(self.lets, name, v.start) {
                Some(id) => self.closed(id, v.start),
                None => Err(self.err(
                    v.start,
                    format!("expected a jaxpr, found unknown jaxpr name `{name}`"),
                )),
            },
            _ => Err(self.err(v.start, format!("expected a jaxpr, found `{}`", p.src(v)))),
        }
    }

    /// A document nested in params. JAX prints such a jaxpr in full even
    /// when it is an object the program shares (and so also hoists into a
    /// top-level `let`): a document printing as a top-level `let`'s jaxpr
    /// printed alone is that jaxpr, so that the sharing, and the printed
    /// `let`s, survive. (Printed alone, a jaxpr's unread outputs are `_`;
    /// hoisted, they keep their names, so the texts, not the jaxprs, are
    /// compared.)
    fn document(&mut self, id: usize, pos: usize) -> PResult<ClosedJaxpr> {
        let built = self.closed(id, pos)?;
        let text = built.jaxpr.to_string();
        let lets = self.lets;
        // Equal texts are distinct objects (JAX's `solve` and
        // `transpose_solve`, hoisted as two `let`s) or one object twice
        // (`vecmat` is `matvec`): each document takes the candidate used
        // least so far, on a tie the one used last (a transposed solve
        // lists the same pair swapped), else the first.
        let mut best: Option<(usize, (usize, usize), ClosedJaxpr)> = None;
        for (k, l) in lets.iter().enumerate().filter(|(_, l)| l.scope.0 == 0) {
            let Ok(c) = self.closed(l.id, l.pos) else {
                continue;
            };
            if c.jaxpr.invars.len() != built.jaxpr.invars.len() || c.jaxpr.to_string() != text {
                continue;
            }
            let (uses, last) = self.taken.get(&k).copied().unwrap_or((0, 0));
            let better = match &best {
                None => true,
                Some((_, (bu, bl), _)) => uses < *bu || (uses == *bu && last > *bl),
            };
            if better {
                best = Some((k, (uses, last), c));
            }
        }
        let Some((k, (uses, _), c)) = best else {
            return Ok(built);
        };
        self.clock += 1;
        self.taken.insert(k, (uses + 1, self.clock));
        Ok(c)
    }

    /// Renumbers a raw jaxpr and types its equations.
    fn finish(&mut self, raw: &RawJaxpr) -> PResult<Jaxpr> {
        let (map, order) = numbering(raw);
        let remap_aval = |a: &Aval| remap(&map, a);
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
        jaxpr.vma = raw
            .vma
            .iter()
            .filter_map(|(v, a)| var(*v).map(|nv| (nv, a.clone())))
            .collect();
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

/// The final numbering of a raw jaxpr's vars: binding order, without the
/// `_` binders nothing reads. Returns raw index → new index, and the raw
/// index of each new var.
fn numbering(raw: &RawJaxpr) -> (Vec<Option<u32>>, Vec<usize>) {
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
    (map, order)
}

/// A raw type with its dimension variables renumbered.
fn remap(map: &[Option<u32>], a: &Aval) -> Aval {
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
}

/// A raw jaxpr's vars in final order: name, type, foreign.
type Signature = Vec<(String, Aval, bool)>;

fn signature(raw: &RawJaxpr) -> Signature {
    let (map, order) = numbering(raw);
    order
        .iter()
        .filter_map(|&old| {
            Some((
                raw.names.get(old)?.clone(),
                remap(&map, raw.vars.get(old)?),
                raw.foreign.get(old).copied().unwrap_or(false),
            ))
        })
        .collect()
}

/// Whether copy `b` can share `a`'s variables: the same names and types at
/// every index both have, and `a` has every foreign one of `b`.
fn aligned(b: &Signature, a: &Signature) -> bool {
    b.iter()
        .zip(a.iter())
        .all(|((nb, tb, _), (na, ta, _))| nb == na && tb == ta)
        && b.iter().skip(a.len()).all(|(_, _, foreign)| !foreign)
}

/// The variable spaces of the arena's jaxprs. A jaxpr that binds foreign
/// names (JAX printed a copy that shares another jaxpr's variables) joins
/// the space of the latest earlier jaxpr binding its first foreign name
/// whose whole space it aligns with. The rest keep a space of their own.
fn var_spaces(arena: &[RawJaxpr]) -> Vec<VarSpace> {
    let mut spaces = vec![VarSpace::default(); arena.len()];
    let mut copies: Vec<usize> = (0..arena.len())
        .filter(|&i| arena[i].foreign.iter().any(|&f| f))
        .collect();
    if copies.is_empty() {
        return spaces;
    }
    copies.sort_by_key(|&i| arena[i].span.0);
    let sigs: Vec<Signature> = arena.iter().map(signature).collect();
    // Which raws bind each name, for finding the originals.
    let mut binders: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, raw) in arena.iter().enumerate() {
        for n in &raw.names {
            if n != "_" {
                binders.entry(n.as_str()).or_default().push(i);
            }
        }
    }
    let mut group: Vec<Option<usize>> = vec![None; arena.len()];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for b in copies {
        let Some(first) = arena[b]
            .names
            .iter()
            .zip(&arena[b].foreign)
            .find_map(|(n, &f)| f.then_some(n.as_str()))
        else {
            continue;
        };
        let mut cands: Vec<usize> = binders
            .get(first)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&a| a != b && arena[a].span.1 <= arena[b].span.0)
            .collect();
        cands.sort_by_key(|&a| std::cmp::Reverse(arena[a].span.1));
        cands.dedup();
        for a in cands {
            let g = match group[a] {
                Some(g) => g,
                None => {
                    members.push(vec![a]);
                    members.len() - 1
                }
            };
            if members[g].iter().all(|&m| aligned(&sigs[b], &sigs[m])) {
                group[a] = Some(g);
                group[b] = Some(g);
                members[g].push(b);
                break;
            }
            if group[a].is_none() {
                members.pop();
            }
        }
    }
    for m in members {
        let space = VarSpace::new();
        for i in m {
            spaces[i] = space.clone();
        }
    }
    spaces
}
