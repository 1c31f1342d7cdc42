//! Which primitives hold jaxprs in their params, and where.

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

impl Primitive {
    /// The jaxprs held in this primitive's params, in param order, with
    /// the param each is in. (The one list of which primitives hold jaxprs.)
    pub fn param_jaxprs(&self) -> Vec<ParamJaxpr<'_>> {
        use NestedJaxpr::{Closed, Open};
        fn at<'a>(param: &'static str, jaxpr: NestedJaxpr<'a>) -> ParamJaxpr<'a> {
            ParamJaxpr { param, jaxpr }
        }
        match self {
            Primitive::Cond { branches } => {
                branches.iter().map(|b| at("branches", Closed(b))).collect()
            }
            Primitive::While {
                cond_jaxpr,
                body_jaxpr,
                ..
            } => vec![
                at("body_jaxpr", Closed(body_jaxpr)),
                at("cond_jaxpr", Closed(cond_jaxpr)),
            ],
            Primitive::Scan { jaxpr, .. } | Primitive::Jit { jaxpr, .. } => {
                vec![at("jaxpr", Closed(jaxpr))]
            }
            Primitive::ForLoop { body_jaxpr, .. } => vec![at("body_jaxpr", Closed(body_jaxpr))],
            Primitive::CustomJvpCall { call_jaxpr, .. }
            | Primitive::CustomVjpCall { call_jaxpr, .. } => {
                vec![at("call_jaxpr", Closed(call_jaxpr))]
            }
            Primitive::Remat { jaxpr, .. } => vec![at("jaxpr", Open(jaxpr))],
            Primitive::Scatter { update_jaxpr, .. } => update_jaxpr
                .iter()
                .map(|j| at("update_jaxpr", Open(j)))
                .collect(),
            Primitive::PallasCall {
                kernel,
                block_mappings,
                ..
            } => {
                let mut v = vec![at("kernel", Open(kernel))];
                v.extend(
                    block_mappings
                        .iter()
                        .map(|b| at("index_map", Closed(&b.index_map))),
                );
                v
            }
            Primitive::Unary(_)
            | Primitive::Binary(_)
            | Primitive::IntegerPow { .. }
            | Primitive::Round { .. }
            | Primitive::ReducePrecision { .. }
            | Primitive::ConvertElementType { .. }
            | Primitive::BitcastConvertType { .. }
            | Primitive::SelectN
            | Primitive::Clamp
            | Primitive::BroadcastInDim { .. }
            | Primitive::Reshape { .. }
            | Primitive::Transpose { .. }
            | Primitive::Squeeze { .. }
            | Primitive::Rev { .. }
            | Primitive::Pad { .. }
            | Primitive::Concatenate { .. }
            | Primitive::Slice { .. }
            | Primitive::DynamicSlice { .. }
            | Primitive::DynamicUpdateSlice
            | Primitive::Gather { .. }
            | Primitive::Iota { .. }
            | Primitive::Split { .. }
            | Primitive::Tile { .. }
            | Primitive::Stack { .. }
            | Primitive::Reduce { .. }
            | Primitive::ArgReduce { .. }
            | Primitive::Cumulative { .. }
            | Primitive::DotGeneral { .. }
            | Primitive::ConvGeneralDilated { .. }
            | Primitive::Sort { .. }
            | Primitive::TopK { .. }
            | Primitive::Empty2 { .. }
            | Primitive::AllReduce { .. }
            | Primitive::AllGather { .. }
            | Primitive::AxisIndex { .. }
            | Primitive::Get { .. }
            | Primitive::Swap { .. }
            | Primitive::AddUpdate { .. }
            | Primitive::ProgramId { .. }
            | Primitive::NumPrograms { .. }
            | Primitive::Load { .. }
            | Primitive::Store { .. }
            | Primitive::AtomicRmw { .. }
            | Primitive::AtomicCas { .. } => Vec::new(),
        }
    }

    /// This primitive with every jaxpr in its params replaced by `f` of it
    /// (closed jaxprs keep their constants). The same list as
    /// [`Primitive::param_jaxprs`].
    pub fn map_sub_jaxprs(&self, f: &mut dyn FnMut(&Jaxpr) -> Jaxpr) -> Primitive {
        fn closed(c: &mut ClosedJaxpr, f: &mut dyn FnMut(&Jaxpr) -> Jaxpr) {
            c.jaxpr = Arc::new(f(&c.jaxpr));
        }
        let mut p = self.clone();
        match &mut p {
            Primitive::Cond { branches } => branches.iter_mut().for_each(|b| closed(b, f)),
            Primitive::While {
                cond_jaxpr,
                body_jaxpr,
                ..
            } => {
                closed(body_jaxpr, f);
                closed(cond_jaxpr, f);
            }
            Primitive::Scan { jaxpr, .. } | Primitive::Jit { jaxpr, .. } => closed(jaxpr, f),
            Primitive::ForLoop { body_jaxpr, .. } => closed(body_jaxpr, f),
            Primitive::CustomJvpCall { call_jaxpr, .. }
            | Primitive::CustomVjpCall { call_jaxpr, .. } => closed(call_jaxpr, f),
            Primitive::Remat { jaxpr, .. } => *jaxpr = Arc::new(f(jaxpr)),
            Primitive::Scatter { update_jaxpr, .. } => {
                if let Some(j) = update_jaxpr {
                    *j = Arc::new(f(j));
                }
            }
            Primitive::PallasCall {
                kernel,
                block_mappings,
                ..
            } => {
                *kernel = Arc::new(f(kernel));
                block_mappings
                    .iter_mut()
                    .for_each(|b| closed(&mut b.index_map, f));
            }
            Primitive::Unary(_)
            | Primitive::Binary(_)
            | Primitive::IntegerPow { .. }
            | Primitive::Round { .. }
            | Primitive::ReducePrecision { .. }
            | Primitive::ConvertElementType { .. }
            | Primitive::BitcastConvertType { .. }
            | Primitive::SelectN
            | Primitive::Clamp
            | Primitive::BroadcastInDim { .. }
            | Primitive::Reshape { .. }
            | Primitive::Transpose { .. }
            | Primitive::Squeeze { .. }
            | Primitive::Rev { .. }
            | Primitive::Pad { .. }
            | Primitive::Concatenate { .. }
            | Primitive::Slice { .. }
            | Primitive::DynamicSlice { .. }
            | Primitive::DynamicUpdateSlice
            | Primitive::Gather { .. }
            | Primitive::Iota { .. }
            | Primitive::Split { .. }
            | Primitive::Tile { .. }
            | Primitive::Stack { .. }
            | Primitive::Reduce { .. }
            | Primitive::ArgReduce { .. }
            | Primitive::Cumulative { .. }
            | Primitive::DotGeneral { .. }
            | Primitive::ConvGeneralDilated { .. }
            | Primitive::Sort { .. }
            | Primitive::TopK { .. }
            | Primitive::Empty2 { .. }
            | Primitive::AllReduce { .. }
            | Primitive::AllGather { .. }
            | Primitive::AxisIndex { .. }
            | Primitive::Get { .. }
            | Primitive::Swap { .. }
            | Primitive::AddUpdate { .. }
            | Primitive::ProgramId { .. }
            | Primitive::NumPrograms { .. }
            | Primitive::Load { .. }
            | Primitive::Store { .. }
            | Primitive::AtomicRmw { .. }
            | Primitive::AtomicCas { .. } => {}
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
}

impl Primitive {
    /// Whether the primitive itself writes through a `Ref` (`swap`,
    /// `addupdate`, `store`, atomics): such an equation is kept even when
    /// nobody reads its results.
    pub fn writes_refs(&self) -> bool {
        match self {
            Primitive::Swap { .. }
            | Primitive::AddUpdate { .. }
            | Primitive::Store { .. }
            | Primitive::AtomicRmw { .. }
            | Primitive::AtomicCas { .. } => true,
            Primitive::Unary(_)
            | Primitive::Binary(_)
            | Primitive::IntegerPow { .. }
            | Primitive::Round { .. }
            | Primitive::ReducePrecision { .. }
            | Primitive::ConvertElementType { .. }
            | Primitive::BitcastConvertType { .. }
            | Primitive::SelectN
            | Primitive::Clamp
            | Primitive::BroadcastInDim { .. }
            | Primitive::Reshape { .. }
            | Primitive::Transpose { .. }
            | Primitive::Squeeze { .. }
            | Primitive::Rev { .. }
            | Primitive::Pad { .. }
            | Primitive::Concatenate { .. }
            | Primitive::Slice { .. }
            | Primitive::DynamicSlice { .. }
            | Primitive::DynamicUpdateSlice
            | Primitive::Gather { .. }
            | Primitive::Scatter { .. }
            | Primitive::Iota { .. }
            | Primitive::Split { .. }
            | Primitive::Tile { .. }
            | Primitive::Stack { .. }
            | Primitive::Reduce { .. }
            | Primitive::ArgReduce { .. }
            | Primitive::Cumulative { .. }
            | Primitive::DotGeneral { .. }
            | Primitive::ConvGeneralDilated { .. }
            | Primitive::Sort { .. }
            | Primitive::TopK { .. }
            | Primitive::Empty2 { .. }
            | Primitive::AllReduce { .. }
            | Primitive::AllGather { .. }
            | Primitive::AxisIndex { .. }
            | Primitive::Cond { .. }
            | Primitive::While { .. }
            | Primitive::Scan { .. }
            | Primitive::ForLoop { .. }
            | Primitive::Jit { .. }
            | Primitive::CustomJvpCall { .. }
            | Primitive::CustomVjpCall { .. }
            | Primitive::Remat { .. }
            | Primitive::Get { .. }
            | Primitive::ProgramId { .. }
            | Primitive::NumPrograms { .. }
            | Primitive::Load { .. }
            | Primitive::PallasCall { .. } => false,
        }
    }
}
