//! Lazy elementwise values of a kernel body: an elementwise equation whose
//! result has exactly one use, by an equation that reads each element at
//! most once (elementwise ops, reductions, writes through refs), is not
//! written to block memory; its consumer evaluates it per element, inside
//! its own loop. A chain like `exp(x - m) * s` then costs one pass and one
//! pair of barriers instead of three.
//!
//! Invariants:
//! - A lazy value reads only uniform scalars, regions and other lazy values;
//!   regions are written once per evaluation of their equation, so its
//!   value is fixed from its definition to its one use — except loop
//!   carries and stacked scan slices, which are why loop results that are
//!   lazy go through temporaries before any carry is rewritten
//!   (`control.rs`).
//! - A consumer that reads elements more than once (`dot_general`, data
//!   movement, indexing, control flow) gets its lazy operands materialized
//!   first (`Block::eqn`), so no element is recomputed.

use super::block::{BVal, Block};
use super::ops::{broadcast_at, dtype_of};
use crate::kir::Expr;
use jaxon_ir::primitive::{Elementwise, Primitive};
use jaxon_ir::{Atom, Binder, DType, IrError, Jaxpr, Var as JVar};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// An elementwise primitive applied to its operands, not evaluated yet.
#[derive(Debug)]
pub(crate) struct Lazy {
    pub prim: Elementwise,
    pub ins: Vec<BVal>,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl Lazy {
    pub fn value(prim: &Elementwise, ins: &[BVal], dtype: DType, shape: &[usize]) -> BVal {
        BVal::Lazy(Rc::new(Lazy {
            prim: prim.clone(),
            ins: ins.to_vec(),
            dtype,
            shape: shape.to_vec(),
        }))
    }

    /// The element at multi-index `idx` (of the value's shape).
    pub fn at(&self, b: &mut Block, idx: &[Expr]) -> Result<Expr, IrError> {
        let dts: Vec<DType> = self.ins.iter().map(dtype_of).collect();
        let xs = self
            .ins
            .iter()
            .map(|v| broadcast_at(b, v, idx))
            .collect::<Result<Vec<_>, _>>()?;
        super::super::elementwise::scalar(&mut b.k, &self.prim, self.dtype, &dts, xs)
    }
}

/// Whether `p` reads each element of its operands at most once per
/// result element, so a lazy operand costs nothing extra.
pub(crate) fn reads_once(p: &Primitive) -> bool {
    use jaxon_ir::primitive::Reduction;
    match p {
        Primitive::Elementwise(_) | Primitive::State(_) | Primitive::Pallas(_) => true,
        Primitive::Reduction(Reduction::Reduce(_) | Reduction::ArgReduce(_)) => true,
        Primitive::Reduction(_)
        | Primitive::Structural(_)
        | Primitive::Indexing(_)
        | Primitive::Linalg(_)
        | Primitive::Control(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => false,
    }
}

/// The variables of `jaxpr` an elementwise equation may leave lazy: used
/// exactly once, by an equation that [`reads_once`], and not a result.
pub(crate) fn lazy_vars(jaxpr: &Jaxpr) -> HashSet<JVar> {
    let mut uses: HashMap<JVar, (usize, bool)> = HashMap::new();
    for e in &jaxpr.eqns {
        let once = reads_once(&e.primitive);
        for a in &e.inputs {
            if let Atom::Var(v) = a {
                let u = uses.entry(*v).or_insert((0, true));
                u.0 += 1;
                u.1 &= once;
            }
        }
    }
    for a in &jaxpr.outvars {
        if let Atom::Var(v) = a {
            uses.insert(*v, (usize::MAX, false));
        }
    }
    jaxpr
        .eqns
        .iter()
        .filter(|e| matches!(e.primitive, Primitive::Elementwise(_)))
        .flat_map(|e| &e.outputs)
        .filter_map(|b| match b {
            Binder::Var(v) => Some(*v),
            Binder::Drop(_) => None,
        })
        .filter(|v| uses.get(v).is_some_and(|&(n, once)| n == 1 && once))
        .collect()
}
