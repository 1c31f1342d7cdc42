//! Jaxprs: variables, atoms, equations, `Jaxpr` and `ClosedJaxpr`.
//!
//! Invariants:
//! - A `Var` is an index into the variable table (`Jaxpr::vars`) of the jaxpr
//!   that binds it; nested jaxprs have their own tables and their own `Var`s.
//! - Every variable is bound exactly once: as a constvar, an invar, or an
//!   equation output. (The checker verifies this; builders keep it.)
//! - Nested jaxprs are shared through `Arc`; the printer hoists a jaxpr into
//!   a `let` when the same `Arc` is used twice, as JAX does with one object.
//! - Jaxprs with the same [`VarSpace`] are copies whose variables are the same
//!   objects (index for index); the printer names them alike.

use crate::array::HostArray;
use crate::aval::Aval;
use crate::literal::Literal;
use crate::primitive::Primitive;
use std::sync::Arc;

/// A variable: an index into its jaxpr's variable table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

impl Var {
    /// The index into the variable table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// An operand: a variable or a scalar literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Atom {
    /// A variable.
    Var(Var),
    /// A scalar literal.
    Lit(Literal),
}

impl From<Var> for Atom {
    fn from(v: Var) -> Atom {
        Atom::Var(v)
    }
}

impl From<Literal> for Atom {
    fn from(l: Literal) -> Atom {
        Atom::Lit(l)
    }
}

/// An equation output: a variable, or a dropped output (`_`) with its type.
#[derive(Clone, Debug, PartialEq)]
pub enum Binder {
    /// A bound variable.
    Var(Var),
    /// An output nobody reads, printed `_:f32[2]`.
    Drop(Aval),
}

/// One equation: `outputs = primitive[params] inputs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Eqn {
    /// The primitive with its params.
    pub primitive: Primitive,
    /// Operands.
    pub inputs: Vec<Atom>,
    /// Results.
    pub outputs: Vec<Binder>,
}

/// The identity of a set of variables shared by several copies of a jaxpr.
///
/// JAX can print two distinct jaxpr objects that hold the same `Var` objects
/// (a jaxpr and a copy of it); both then print with the same names. Jaxprs
/// whose `var_space` is the same space (`VarSpace::new` once, then clones)
/// have the same variable at each index their tables share, and the printer
/// gives those the same names. Like the `Arc` sharing of nested jaxprs, this
/// is identity, not structure: any two `VarSpace`s compare equal.
#[derive(Clone, Debug, Default)]
pub struct VarSpace(Option<Arc<()>>);

impl VarSpace {
    /// A fresh space, distinct from every other.
    pub fn new() -> VarSpace {
        VarSpace(Some(Arc::new(())))
    }

    /// An identity key for the space, `None` for a jaxpr's own variables.
    pub fn key(&self) -> Option<usize> {
        self.0.as_ref().map(|a| Arc::as_ptr(a) as usize)
    }
}

impl PartialEq for VarSpace {
    fn eq(&self, _: &VarSpace) -> bool {
        true
    }
}

/// A jaxpr: `{ lambda constvars ; invars . let eqns in (outvars) }`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Jaxpr {
    /// The variable table: the type of each `Var` of this jaxpr.
    pub vars: Vec<Aval>,
    /// Constant inputs, bound by the enclosing `ClosedJaxpr`.
    pub constvars: Vec<Var>,
    /// Inputs.
    pub invars: Vec<Var>,
    /// Equations, in order.
    pub eqns: Vec<Eqn>,
    /// Results.
    pub outvars: Vec<Atom>,
    /// Which copies of this jaxpr share its variables (printing only; the
    /// default is a space of its own).
    pub var_space: VarSpace,
    /// The varying manual axes JAX prints after some binders' types inside
    /// a `shard_map` with `check_vma=True` (`c:f32[2]{V:x}`), sorted;
    /// printing only: types and values do not depend on it.
    pub vma: Vec<(Var, Vec<String>)>,
}

impl Jaxpr {
    /// An empty jaxpr.
    pub fn new() -> Jaxpr {
        Jaxpr::default()
    }

    /// Adds a variable of type `aval` to the table (it still has to be bound).
    pub fn new_var(&mut self, aval: impl Into<Aval>) -> Var {
        self.vars.push(aval.into());
        Var((self.vars.len() - 1) as u32)
    }

    /// The varying manual axes printed after `v`'s type, if any.
    pub fn vma_of(&self, v: Var) -> Option<&[String]> {
        self.vma
            .iter()
            .find(|(w, _)| *w == v)
            .map(|(_, a)| a.as_slice())
    }

    /// The type of a variable of this jaxpr.
    ///
    /// # Panics
    /// If `v` is not in the table; use [`Jaxpr::try_aval`] on untrusted input.
    pub fn aval(&self, v: Var) -> &Aval {
        &self.vars[v.index()]
    }

    /// The type of a variable, or `None` if it is not in the table.
    pub fn try_aval(&self, v: Var) -> Option<&Aval> {
        self.vars.get(v.index())
    }

    /// The type of an atom (a literal's type is a weak-less scalar).
    pub fn atom_aval(&self, a: &Atom) -> Option<Aval> {
        match a {
            Atom::Var(v) => self.try_aval(*v).cloned(),
            Atom::Lit(l) => Some(Aval::Array(crate::aval::ShapedArray::scalar(l.dtype))),
        }
    }

    /// The type of a binder.
    pub fn binder_aval<'a>(&'a self, b: &'a Binder) -> Option<&'a Aval> {
        match b {
            Binder::Var(v) => self.try_aval(*v),
            Binder::Drop(a) => Some(a),
        }
    }

    /// The types of the invars.
    pub fn in_avals(&self) -> Vec<Aval> {
        self.invars.iter().map(|v| self.aval(*v).clone()).collect()
    }

    /// The types of the outvars.
    pub fn out_avals(&self) -> Vec<Aval> {
        self.outvars
            .iter()
            .map(|a| self.atom_aval(a).expect("outvar in table"))
            .collect()
    }
}

/// A jaxpr with values for its constvars.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedJaxpr {
    /// The jaxpr; shared, so that the printer can see reuse.
    pub jaxpr: Arc<Jaxpr>,
    /// One value per constvar, in order.
    pub consts: Arc<[HostArray]>,
}

impl ClosedJaxpr {
    /// Closes a jaxpr over its constant values.
    pub fn new(jaxpr: impl Into<Arc<Jaxpr>>, consts: Vec<HostArray>) -> ClosedJaxpr {
        ClosedJaxpr {
            jaxpr: jaxpr.into(),
            consts: consts.into(),
        }
    }

    /// Wraps a jaxpr that has no constvars.
    pub fn without_consts(jaxpr: impl Into<Arc<Jaxpr>>) -> ClosedJaxpr {
        ClosedJaxpr::new(jaxpr, Vec::new())
    }
}
