//! Which primitives hold jaxprs in their params, and where, and which write
//! through `Ref`s.
//!
//! Each family that can hold jaxprs (`Control`, `Indexing`'s scatter
//! combiner, `Pallas`'s `pallas_call`, `Window`'s generic `reduce_window`) lists its slots once, in its own file,
//! by `param_jaxprs`/`param_jaxprs_mut`; the other families hold none, as
//! their documented invariants say.

use super::Primitive;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use std::sync::Arc;

/// A jaxpr held in a primitive's params.
#[derive(Clone, Copy, Debug)]
pub enum NestedJaxpr<'a> {
    /// A jaxpr with values for its constvars (cond branches, loop and call
    /// bodies, Pallas index maps).
    Closed(&'a ClosedJaxpr),
    /// A bare jaxpr (remat2's body, a scatter combiner, a Pallas kernel).
    Open(&'a Arc<Jaxpr>),
}

impl<'a> NestedJaxpr<'a> {
    /// The jaxpr itself.
    pub fn jaxpr(self) -> &'a Arc<Jaxpr> {
        match self {
            NestedJaxpr::Closed(c) => &c.jaxpr,
            NestedJaxpr::Open(j) => j,
        }
    }
}

/// A nested jaxpr and the param (as JAX prints it) that holds it.
#[derive(Clone, Copy, Debug)]
pub struct ParamJaxpr<'a> {
    /// The param's name: `branches`, `body_jaxpr`, `call_jaxpr`, `kernel`, ...
    pub param: &'static str,
    /// The jaxpr.
    pub jaxpr: NestedJaxpr<'a>,
}

/// A mutable view of a jaxpr held in a primitive's params.
#[derive(Debug)]
pub enum NestedJaxprMut<'a> {
    /// A closed jaxpr (its constants are kept when the jaxpr is replaced).
    Closed(&'a mut ClosedJaxpr),
    /// A bare jaxpr.
    Open(&'a mut Arc<Jaxpr>),
}

impl Primitive {
    /// The jaxprs held in this primitive's params, in param order, with
    /// the param each is in.
    pub fn param_jaxprs(&self) -> Vec<ParamJaxpr<'_>> {
        match self {
            Primitive::Control(c) => c.param_jaxprs(),
            Primitive::Indexing(i) => i.param_jaxprs(),
            Primitive::Pallas(p) => p.param_jaxprs(),
            Primitive::Window(w) => w.param_jaxprs(),
            // Family invariants: these hold no jaxprs.
            Primitive::Elementwise(_)
            | Primitive::Structural(_)
            | Primitive::Reduction(_)
            | Primitive::Linalg(_)
            | Primitive::State(_)
            | Primitive::Collective(_)
            | Primitive::Marker(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => Vec::new(),
        }
    }

    /// The same slots as [`Primitive::param_jaxprs`], mutably.
    pub fn param_jaxprs_mut(&mut self) -> Vec<NestedJaxprMut<'_>> {
        match self {
            Primitive::Control(c) => c.param_jaxprs_mut(),
            Primitive::Indexing(i) => i.param_jaxprs_mut(),
            Primitive::Pallas(p) => p.param_jaxprs_mut(),
            Primitive::Window(w) => w.param_jaxprs_mut(),
            Primitive::Elementwise(_)
            | Primitive::Structural(_)
            | Primitive::Reduction(_)
            | Primitive::Linalg(_)
            | Primitive::State(_)
            | Primitive::Collective(_)
            | Primitive::Marker(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => Vec::new(),
        }
    }

    /// This primitive with every jaxpr in its params replaced by `f` of it
    /// (closed jaxprs keep their constants).
    pub fn map_sub_jaxprs(&self, f: &mut dyn FnMut(&Jaxpr) -> Jaxpr) -> Primitive {
        let mut p = self.clone();
        for slot in p.param_jaxprs_mut() {
            match slot {
                NestedJaxprMut::Closed(c) => c.jaxpr = Arc::new(f(&c.jaxpr)),
                NestedJaxprMut::Open(j) => *j = Arc::new(f(j)),
            }
        }
        p
    }

    /// The nested jaxprs held in this primitive's params, in param order.
    pub fn sub_jaxprs(&self) -> Vec<&Arc<Jaxpr>> {
        self.param_jaxprs()
            .into_iter()
            .map(|p| p.jaxpr.jaxpr())
            .collect()
    }

    /// Whether the primitive itself writes through a `Ref` (`swap`,
    /// `addupdate`, `store`, atomics): such an equation is kept even when
    /// nobody reads its results.
    pub fn writes_refs(&self) -> bool {
        match self {
            Primitive::State(s) => s.writes_refs(),
            Primitive::Pallas(p) => p.writes_refs(),
            // Family invariants: these touch no `Ref`; calls and loops
            // that write refs do so through the equations they hold.
            Primitive::Elementwise(_)
            | Primitive::Structural(_)
            | Primitive::Indexing(_)
            | Primitive::Reduction(_)
            | Primitive::Linalg(_)
            | Primitive::Control(_)
            | Primitive::Collective(_)
            | Primitive::Marker(_)
            | Primitive::Window(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => false,
        }
    }

    /// Whether running the primitive calls into the host for an effect
    /// (`debug_print`, `debug_callback`), itself or in a jaxpr it holds:
    /// such an equation is kept even when nobody reads its results.
    pub fn has_host_effect(&self) -> bool {
        match self {
            Primitive::Callback(c) => c.has_effect(),
            _ => self
                .sub_jaxprs()
                .iter()
                .any(|j| j.eqns.iter().any(|e| e.primitive.has_host_effect())),
        }
    }
}

/// `ParamJaxpr` constructor shorthand for the family files.
pub(super) fn at<'a>(param: &'static str, jaxpr: NestedJaxpr<'a>) -> ParamJaxpr<'a> {
    ParamJaxpr { param, jaxpr }
}
