//! The jaxpr printer: prints exactly what JAX 0.10 prints for
//! `str(jax.make_jaxpr(f)(...))`.
//!
//! The structure mirrors JAX's `core.pp_toplevel_jaxpr`: a document is built
//! with the same shape as JAX's (`doc`), variables are named on first
//! encounter in print order (`names`), params are Python reprs (`params`),
//! and state/Pallas equations use JAX's arrow forms (`state`).

use crate::primitive::{Control, JitParams, Pallas, PallasCallParams, WhileParams};
pub mod doc;
pub mod names;
pub(crate) mod params;
mod state;
#[cfg(test)]
mod tests;

use crate::aval::{Aval, Dim};
use crate::jaxpr::{Atom, ClosedJaxpr, Eqn, Jaxpr};
use crate::primitive::Primitive;
use doc::{DocId, Docs};
use names::{jaxpr_key, Like, Names};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

/// The line width JAX formats with.
pub const WIDTH: usize = 80;

/// Prints a jaxpr as JAX prints `str(jax.make_jaxpr(f)(...))`.
pub fn print_jaxpr(jaxpr: &Jaxpr) -> String {
    let mut p = Printer::new();
    let root = p.toplevel(jaxpr);
    p.d.format(root, WIDTH)
}

impl fmt::Display for Jaxpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_jaxpr(self))
    }
}

impl fmt::Display for ClosedJaxpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_jaxpr(&self.jaxpr))
    }
}

/// The jaxprs in a primitive's params, in JAX's param insertion order (the
/// order `core.jaxprs_in_params` walks them), and the eqn's `name` param as
/// the shared-jaxpr naming heuristic sees it.
fn params_jaxprs(p: &Primitive) -> (Vec<&Arc<Jaxpr>>, Option<&str>) {
    match p {
        Primitive::Control(Control::While(WhileParams {
            cond_jaxpr,
            body_jaxpr,
            ..
        })) => (vec![&cond_jaxpr.jaxpr, &body_jaxpr.jaxpr], None),
        Primitive::Control(Control::Jit(JitParams { name, jaxpr })) => {
            (vec![&jaxpr.jaxpr], Some(name.as_str()))
        }
        // Index maps live inside `grid_mapping`, which JAX does not walk.
        Primitive::Pallas(Pallas::PallasCall(PallasCallParams { kernel, name, .. })) => {
            (vec![kernel], name.as_deref())
        }
        // custom_jvp_call / custom_vjp_call get their `name=` only in their
        // pp rule, so the heuristic does not see it.
        other => (other.sub_jaxprs(), None),
    }
}

/// A param value: text, or nested jaxprs printed in place.
pub(crate) enum PV<'a> {
    /// A Python repr.
    Text(String),
    /// One jaxpr (`jaxpr=`, `call_jaxpr=`, ...).
    Jaxpr(&'a Jaxpr),
    /// A tuple of jaxprs (`branches=( .. )`).
    Jaxprs(Vec<&'a Jaxpr>),
    /// A value built from text and jaxprs (Pallas grid mappings).
    Parts(Vec<Part<'a>>),
}

/// A piece of a [`PV::Parts`] value.
pub(crate) enum Part<'a> {
    /// Text.
    Text(String),
    /// A jaxpr.
    Jaxpr(&'a Jaxpr),
}

pub(crate) struct Printer {
    pub(crate) d: Docs,
    pub(crate) names: Names,
    shared: HashMap<usize, String>,
    top: usize,
}

impl Printer {
    fn new() -> Printer {
        Printer {
            d: Docs::new(),
            names: Names::default(),
            shared: HashMap::new(),
            top: 0,
        }
    }

    fn toplevel(&mut self, root: &Jaxpr) -> DocId {
        self.top = jaxpr_key(root);
        self.names.name_top_level_dropvars(root);
        // Count uses breadth-first as JAX does. A jaxpr expanded twice has
        // given each child two uses already, so later expansions are skipped:
        // they can neither change which counts exceed 1 nor the first-visit
        // order.
        let mut order: Vec<(usize, &Jaxpr)> = Vec::new();
        let mut counts: HashMap<usize, (usize, usize)> = HashMap::new(); // key -> (count, expansions)
        let mut names: HashMap<usize, String> = HashMap::new();
        let mut queue: VecDeque<&Jaxpr> = VecDeque::from([root]);
        while let Some(j) = queue.pop_front() {
            let key = jaxpr_key(j);
            let entry = counts.entry(key).or_insert_with(|| {
                order.push((key, j));
                (0, 0)
            });
            entry.0 += 1;
            if key != self.top && j.eqns.len() > 10 {
                entry.0 += 1;
            }
            if entry.1 >= 2 {
                continue;
            }
            entry.1 += 1;
            for eqn in &j.eqns {
                let (subs, name) = params_jaxprs(&eqn.primitive);
                for s in subs {
                    queue.push_back(s);
                    if let Some(n) = name {
                        names.entry(Arc::as_ptr(s) as usize).or_insert_with(|| {
                            n.trim_matches(|c| c == '<' || c == '>').to_string()
                        });
                    }
                }
            }
        }
        let mut name_counts: HashMap<String, usize> = HashMap::new();
        let mut shared: Vec<(String, &Jaxpr)> = Vec::new();
        for (key, j) in order {
            if counts[&key].0 == 1 {
                continue;
            }
            let mut name = names
                .get(&key)
                .cloned()
                .unwrap_or_else(|| "jaxpr".to_string());
            let count = name_counts.get(&name).copied().unwrap_or(0);
            *name_counts.entry(name.clone()).or_insert(0) += 1;
            if count > 0 {
                name = format!("{name}{count}");
                *name_counts.entry(name.clone()).or_insert(0) += 1;
            }
            self.names.shared_names.insert(name.clone());
            self.shared.insert(key, name.clone());
            shared.push((name, j));
        }
        let mut docs = Vec::new();
        for (name, j) in shared {
            let a = self.d.text(format!("let {name} = "));
            let sk = self.skeleton(j);
            let b = self.d.text(" in");
            let brk = self.d.brk(" ");
            docs.push(self.d.concat(vec![a, sk, b, brk]));
        }
        let main = self.jaxpr(root);
        docs.push(main);
        self.d.concat(docs)
    }

    /// `pp_jaxpr`: a reference to a shared jaxpr, or the jaxpr itself.
    pub(crate) fn jaxpr(&mut self, j: &Jaxpr) -> DocId {
        if let Some(n) = self.shared.get(&jaxpr_key(j)) {
            let n = n.clone();
            return self.d.text(n);
        }
        self.skeleton(j)
    }

    fn is_shared(&self, j: &Jaxpr) -> bool {
        self.shared.contains_key(&jaxpr_key(j))
    }

    fn is_top(&self, j: &Jaxpr) -> bool {
        jaxpr_key(j) == self.top
    }

    /// `pp_jaxprs`: `( {..} {..} )`.
    fn jaxprs(&mut self, js: &[&Jaxpr]) -> DocId {
        let open = self.d.text("(");
        let b0 = self.d.brk("");
        let items: Vec<DocId> = js.iter().map(|j| self.jaxpr(j)).collect();
        let sep = self.d.brk(" ");
        let body = self.d.join(sep, items);
        let inner = self.d.concat(vec![open, b0, body]);
        let nested = self.d.nest(2, inner);
        let b1 = self.d.brk("");
        let close = self.d.text(")");
        let all = self.d.concat(vec![nested, b1, close]);
        self.d.group(all)
    }

    /// The short type of a variable: `f32[3,b]`, `Ref<default>{i32[2]}`.
    pub(crate) fn aval_str(&mut self, j: &Jaxpr, a: &Aval) -> String {
        let arr = a.array();
        let mut s = String::new();
        s.push_str(arr.dtype.short_name());
        s.push('[');
        for (i, d) in arr.shape.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            match d {
                Dim::Const(n) => s.push_str(&n.to_string()),
                Dim::Var(v) => s.push_str(&self.names.var(j, *v)),
            }
        }
        s.push(']');
        match a {
            Aval::Array(_) => s,
            Aval::Ref(r) => format!("Ref<{}>{{{s}}}", r.memory_space),
        }
    }

    /// `pp_vars`: a nested group of items separated by `sep` + breakable space.
    pub(crate) fn vars(&mut self, items: Vec<String>, sep: &str) -> DocId {
        let docs: Vec<DocId> = items.into_iter().map(|s| self.d.text(s)).collect();
        let b = self.d.brk(" ");
        let gb = self.d.group(b);
        let sepd = if sep.is_empty() {
            gb
        } else {
            let t = self.d.text(sep.to_string());
            self.d.concat(vec![t, gb])
        };
        let joined = self.d.join(sepd, docs);
        let g = self.d.group(joined);
        self.d.nest(2, g)
    }

    /// Binders with types: `a:f32[] _:i32[2]`.
    pub(crate) fn binders(&mut self, j: &Jaxpr, bs: &[crate::jaxpr::Binder]) -> DocId {
        let items: Vec<String> = bs
            .iter()
            .map(|b| {
                let n = self.names.binder(j, b);
                let mut ty = match j.binder_aval(b) {
                    Some(a) => self.aval_str(j, &a.clone()),
                    None => "?".to_string(),
                };
                if let crate::jaxpr::Binder::Var(v) = b {
                    if let Some(axes) = j.vma_of(*v).filter(|a| !a.is_empty()) {
                        ty.push_str(&vma_text(axes));
                    }
                }
                format!("{n}:{ty}")
            })
            .collect();
        self.vars(items, "")
    }

    fn var_binders(&mut self, j: &Jaxpr, vs: &[crate::jaxpr::Var]) -> DocId {
        let bs: Vec<crate::jaxpr::Binder> =
            vs.iter().map(|v| crate::jaxpr::Binder::Var(*v)).collect();
        self.binders(j, &bs)
    }

    /// Operands without types.
    pub(crate) fn atoms(&mut self, j: &Jaxpr, xs: &[Atom], sep: &str) -> DocId {
        let items: Vec<String> = xs.iter().map(|a| self.names.atom(j, a)).collect();
        self.vars(items, sep)
    }

    /// `pp_jaxpr_skeleton`.
    fn skeleton(&mut self, j: &Jaxpr) -> DocId {
        let constvars = self.var_binders(j, &j.constvars);
        let invars = self.var_binders(j, &j.invars);
        let eqn_docs: Vec<DocId> = j.eqns.iter().map(|e| self.eqn(j, e)).collect();
        let sep = self.d.brk("; ");
        let eqns = self.d.join(sep, eqn_docs);
        let open = self.d.text("(");
        let outs = self.atoms(j, &j.outvars, ",");
        let close = self.d.text(if j.outvars.len() == 1 { ",)" } else { ")" });
        let outvars = self.d.concat(vec![open, outs, close]);
        let t_lambda = self.d.text("{ lambda ");
        let t_semi = self.d.text("; ");
        let t_let = self.d.text(". let");
        let b = self.d.brk(" ");
        let body = self.d.concat(vec![b, eqns]);
        let body = self.d.nest(2, body);
        let b2 = self.d.brk(" ");
        let t_in = self.d.text("in ");
        let inner = self.d.concat(vec![
            t_lambda, constvars, t_semi, invars, t_let, body, b2, t_in, outvars,
        ]);
        let nested = self.d.nest(2, inner);
        let close = self.d.text(" }");
        let all = self.d.concat(vec![nested, close]);
        self.d.group(all)
    }

    /// `pp_eqn` with JAX's custom rules.
    fn eqn(&mut self, j: &Jaxpr, e: &Eqn) -> DocId {
        if let Some(d) = self.state_eqn(j, e) {
            return d;
        }
        if let Some(JitParams { jaxpr, .. }) = e.primitive.params::<JitParams>() {
            let inner: &Jaxpr = &jaxpr.jaxpr;
            if !self.is_shared(inner) {
                let ins: Vec<Atom> = inner.invars.iter().map(|v| Atom::Var(*v)).collect();
                let like: Vec<Like> = e.inputs.iter().map(Like::atom).collect();
                self.names.suggest(inner, &ins, j, &like);
                let like: Vec<Like> = e.outputs.iter().map(Like::binder).collect();
                self.names.suggest(inner, &inner.outvars, j, &like);
            }
        }
        let lhs = self.binders(j, &e.outputs);
        let name = self.d.text(e.primitive.name());
        let kv = self.kv_pairs(j, e);
        let sp = self.d.text(" ");
        let ins = self.atoms(j, &e.inputs, "");
        let rhs_ins = self.d.concat(vec![sp, ins]);
        if e.outputs.is_empty() {
            self.d.concat(vec![name, kv, rhs_ins])
        } else {
            let eq = self.d.text(" = ");
            self.d.concat(vec![lhs, eq, name, kv, rhs_ins])
        }
    }

    /// `pp_kv_pairs`.
    fn kv_pairs(&mut self, j: &Jaxpr, e: &Eqn) -> DocId {
        let pairs = params::params(j, e);
        if pairs.is_empty() {
            return self.d.nil();
        }
        let mut docs = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let key = self.d.text(format!("{k}="));
            let val = match v {
                PV::Text(s) => self.d.text(s),
                PV::Jaxpr(j) => self.jaxpr(j),
                PV::Jaxprs(js) => self.jaxprs(&js),
                PV::Parts(parts) => {
                    let ds: Vec<DocId> = parts
                        .into_iter()
                        .map(|part| match part {
                            Part::Text(s) => self.d.text(s),
                            Part::Jaxpr(j) => self.jaxpr(j),
                        })
                        .collect();
                    self.d.concat(ds)
                }
            };
            docs.push(self.d.concat(vec![key, val]));
        }
        let open = self.d.text("[");
        let b0 = self.d.brk("");
        let sep = self.d.brk(" ");
        let body = self.d.join(sep, docs);
        let inner = self.d.concat(vec![open, b0, body]);
        let nested = self.d.nest(2, inner);
        let b1 = self.d.brk("");
        let close = self.d.text("]");
        let all = self.d.concat(vec![nested, b1, close]);
        self.d.group(all)
    }
}

/// JAX's varying-axes suffix: `{V:x}`, `{V:(a,b)}`.
pub(crate) fn vma_text(axes: &[String]) -> String {
    if axes.len() == 1 {
        format!("{{V:{}}}", axes[0])
    } else {
        format!("{{V:({})}}", axes.join(","))
    }
}
