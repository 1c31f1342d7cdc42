//! `Rewriter`: rebuilds a jaxpr equation by equation, renaming variables
//! into a fresh table and substituting atoms for eliminated variables.
//!
//! Invariant: a variable of the old jaxpr is either mapped (to a new
//! variable or a literal) before any equation that reads it is emitted, or
//! reading it is an error. Dimension variables inside avals are renamed with
//! the same map; a dimension whose variable became a literal becomes a
//! constant.

use crate::aval::{AbstractRef, Aval, Dim, ShapedArray};
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, Eqn, Jaxpr, Var};
use crate::literal::Scalar;

/// Builds a new jaxpr from parts of an old one (or several old ones).
pub(crate) struct Rewriter {
    /// The jaxpr under construction.
    pub out: Jaxpr,
}

/// Old variable -> new atom, for one source jaxpr.
pub(crate) struct VarMap {
    map: Vec<Option<Atom>>,
}

impl VarMap {
    /// An empty map for a jaxpr with `n` variables.
    pub fn new(n: usize) -> VarMap {
        VarMap { map: vec![None; n] }
    }

    /// Maps `v` to `a`.
    pub fn set(&mut self, v: Var, a: Atom) -> Result<(), IrError> {
        match self.map.get_mut(v.index()) {
            Some(slot) => {
                *slot = Some(a);
                Ok(())
            }
            None => Err(IrError::Invalid(format!("variable {} out of range", v.0))),
        }
    }

    /// The atom an old atom becomes.
    pub fn atom(&self, a: &Atom) -> Result<Atom, IrError> {
        match a {
            Atom::Lit(l) => Ok(Atom::Lit(*l)),
            Atom::Var(v) => self
                .map
                .get(v.index())
                .copied()
                .flatten()
                .ok_or_else(|| IrError::Invalid(format!("variable {} read before bound", v.0))),
        }
    }

    fn dim(&self, d: Dim) -> Dim {
        match d {
            Dim::Const(_) => d,
            Dim::Var(v) => match self.map.get(v.index()).copied().flatten() {
                Some(Atom::Var(w)) => Dim::Var(w),
                Some(Atom::Lit(l)) => match l.value {
                    Scalar::Int(i) if i >= 0 => Dim::Const(i as usize),
                    Scalar::UInt(u) => Dim::Const(u as usize),
                    // A dimension bound to something that is not a size is
                    // left as is; the checker reports it.
                    _ => d,
                },
                None => d,
            },
        }
    }

    /// Renames the dimension variables of an aval.
    pub fn aval(&self, a: &Aval) -> Aval {
        let sa = |s: &ShapedArray| ShapedArray {
            dtype: s.dtype,
            shape: s.shape.iter().map(|d| self.dim(*d)).collect(),
            weak_type: s.weak_type,
        };
        match a {
            Aval::Array(s) => Aval::Array(sa(s)),
            Aval::Ref(r) => Aval::Ref(AbstractRef {
                inner: sa(&r.inner),
                memory_space: r.memory_space.clone(),
            }),
        }
    }
}

impl Rewriter {
    pub fn new() -> Rewriter {
        Rewriter { out: Jaxpr::new() }
    }

    /// A fresh variable of the new jaxpr standing for old variable `v` of
    /// `old` (its aval renamed through `map`); records the mapping.
    pub fn fresh(&mut self, old: &Jaxpr, map: &mut VarMap, v: Var) -> Result<Var, IrError> {
        let aval = old
            .try_aval(v)
            .ok_or_else(|| IrError::Invalid(format!("variable {} out of range", v.0)))?;
        let nv = self.out.new_var(map.aval(aval));
        map.set(v, Atom::Var(nv))?;
        Ok(nv)
    }

    /// Emits `eqn` of `old` with renamed inputs and fresh outputs.
    pub fn copy_eqn(&mut self, old: &Jaxpr, map: &mut VarMap, eqn: &Eqn) -> Result<(), IrError> {
        let inputs = eqn
            .inputs
            .iter()
            .map(|a| map.atom(a))
            .collect::<Result<Vec<_>, _>>()?;
        let mut outputs = Vec::with_capacity(eqn.outputs.len());
        for b in &eqn.outputs {
            outputs.push(match b {
                Binder::Var(v) => Binder::Var(self.fresh(old, map, *v)?),
                Binder::Drop(a) => Binder::Drop(map.aval(a)),
            });
        }
        self.out.eqns.push(Eqn {
            primitive: eqn.primitive.clone(),
            inputs,
            outputs,
        });
        Ok(())
    }
}

/// Rebuilds `jaxpr` equation by equation: `rule` may emit a replacement for
/// an equation (binding its outputs in the map) and return `true`; else the
/// equation is copied. Constvars, invars and outvars are carried over.
pub(crate) fn rewrite_eqns(
    jaxpr: &Jaxpr,
    mut rule: impl FnMut(&mut Rewriter, &mut VarMap, &Eqn) -> Result<bool, IrError>,
) -> Result<Jaxpr, IrError> {
    let mut rw = Rewriter::new();
    let mut map = VarMap::new(jaxpr.vars.len());
    for v in &jaxpr.constvars {
        let nv = rw.fresh(jaxpr, &mut map, *v)?;
        rw.out.constvars.push(nv);
    }
    for v in &jaxpr.invars {
        let nv = rw.fresh(jaxpr, &mut map, *v)?;
        rw.out.invars.push(nv);
    }
    for eqn in &jaxpr.eqns {
        if !rule(&mut rw, &mut map, eqn)? {
            rw.copy_eqn(jaxpr, &mut map, eqn)?;
        }
    }
    rw.out.outvars = jaxpr
        .outvars
        .iter()
        .map(|a| map.atom(a))
        .collect::<Result<_, _>>()?;
    Ok(rw.out)
}
