//! Which primitives hold jaxprs in their params, and where.

use super::Primitive;
use super::{
    Collective, CondParams, Control, CustomJvpCallParams, CustomVjpCallParams, Elementwise,
    ForLoopParams, Indexing, JitParams, Linalg, Pallas, PallasCallParams, Reduction, RematParams,
    ScanParams, ScatterParams, State, Structural, WhileParams,
};
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
            Primitive::Control(Control::Cond(CondParams { branches })) => {
                branches.iter().map(|b| at("branches", Closed(b))).collect()
            }
            Primitive::Control(Control::While(WhileParams {
                cond_jaxpr,
                body_jaxpr,
                ..
            })) => vec![
                at("body_jaxpr", Closed(body_jaxpr)),
                at("cond_jaxpr", Closed(cond_jaxpr)),
            ],
            Primitive::Control(Control::Scan(ScanParams { jaxpr, .. }))
            | Primitive::Control(Control::Jit(JitParams { jaxpr, .. })) => {
                vec![at("jaxpr", Closed(jaxpr))]
            }
            Primitive::Control(Control::ForLoop(ForLoopParams { body_jaxpr, .. })) => {
                vec![at("body_jaxpr", Closed(body_jaxpr))]
            }
            Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
                call_jaxpr, ..
            }))
            | Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
                call_jaxpr, ..
            })) => {
                vec![at("call_jaxpr", Closed(call_jaxpr))]
            }
            Primitive::Control(Control::Remat(RematParams { jaxpr, .. })) => {
                vec![at("jaxpr", Open(jaxpr))]
            }
            Primitive::Indexing(Indexing::Scatter(ScatterParams { update_jaxpr, .. })) => {
                update_jaxpr
                    .iter()
                    .map(|j| at("update_jaxpr", Open(j)))
                    .collect()
            }
            Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
                kernel,
                block_mappings,
                ..
            })) => {
                let mut v = vec![at("kernel", Open(kernel))];
                v.extend(
                    block_mappings
                        .iter()
                        .map(|b| at("index_map", Closed(&b.index_map))),
                );
                v
            }
            Primitive::Elementwise(Elementwise::Unary(_))
            | Primitive::Elementwise(Elementwise::Binary(_))
            | Primitive::Elementwise(Elementwise::IntegerPow(_))
            | Primitive::Elementwise(Elementwise::Round(_))
            | Primitive::Elementwise(Elementwise::ReducePrecision(_))
            | Primitive::Elementwise(Elementwise::ConvertElementType(_))
            | Primitive::Elementwise(Elementwise::BitcastConvertType(_))
            | Primitive::Elementwise(Elementwise::SelectN)
            | Primitive::Elementwise(Elementwise::Clamp)
            | Primitive::Structural(Structural::BroadcastInDim(_))
            | Primitive::Structural(Structural::Reshape(_))
            | Primitive::Structural(Structural::Transpose(_))
            | Primitive::Structural(Structural::Squeeze(_))
            | Primitive::Structural(Structural::Rev(_))
            | Primitive::Structural(Structural::Pad(_))
            | Primitive::Structural(Structural::Concatenate(_))
            | Primitive::Indexing(Indexing::Slice(_))
            | Primitive::Indexing(Indexing::DynamicSlice(_))
            | Primitive::Indexing(Indexing::DynamicUpdateSlice)
            | Primitive::Indexing(Indexing::Gather(_))
            | Primitive::Structural(Structural::Iota(_))
            | Primitive::Structural(Structural::Split(_))
            | Primitive::Structural(Structural::Tile(_))
            | Primitive::Structural(Structural::Stack(_))
            | Primitive::Reduction(Reduction::Reduce(_))
            | Primitive::Reduction(Reduction::ArgReduce(_))
            | Primitive::Reduction(Reduction::Cumulative(_))
            | Primitive::Linalg(Linalg::DotGeneral(_))
            | Primitive::Linalg(Linalg::ConvGeneralDilated(_))
            | Primitive::Reduction(Reduction::Sort(_))
            | Primitive::Reduction(Reduction::TopK(_))
            | Primitive::Structural(Structural::Empty2(_))
            | Primitive::Collective(Collective::AllReduce(_))
            | Primitive::Collective(Collective::AllGather(_))
            | Primitive::Collective(Collective::AxisIndex(_))
            | Primitive::State(State::Get(_))
            | Primitive::State(State::Swap(_))
            | Primitive::State(State::AddUpdate(_))
            | Primitive::Pallas(Pallas::ProgramId(_))
            | Primitive::Pallas(Pallas::NumPrograms(_))
            | Primitive::Pallas(Pallas::Load(_))
            | Primitive::Pallas(Pallas::Store(_))
            | Primitive::Pallas(Pallas::AtomicRmw(_))
            | Primitive::Pallas(Pallas::AtomicCas(_)) => Vec::new(),
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
            Primitive::Control(Control::Cond(CondParams { branches })) => {
                branches.iter_mut().for_each(|b| closed(b, f))
            }
            Primitive::Control(Control::While(WhileParams {
                cond_jaxpr,
                body_jaxpr,
                ..
            })) => {
                closed(body_jaxpr, f);
                closed(cond_jaxpr, f);
            }
            Primitive::Control(Control::Scan(ScanParams { jaxpr, .. }))
            | Primitive::Control(Control::Jit(JitParams { jaxpr, .. })) => closed(jaxpr, f),
            Primitive::Control(Control::ForLoop(ForLoopParams { body_jaxpr, .. })) => {
                closed(body_jaxpr, f)
            }
            Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
                call_jaxpr, ..
            }))
            | Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
                call_jaxpr, ..
            })) => closed(call_jaxpr, f),
            Primitive::Control(Control::Remat(RematParams { jaxpr, .. })) => {
                *jaxpr = Arc::new(f(jaxpr))
            }
            Primitive::Indexing(Indexing::Scatter(ScatterParams { update_jaxpr, .. })) => {
                if let Some(j) = update_jaxpr {
                    *j = Arc::new(f(j));
                }
            }
            Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
                kernel,
                block_mappings,
                ..
            })) => {
                *kernel = Arc::new(f(kernel));
                block_mappings
                    .iter_mut()
                    .for_each(|b| closed(&mut b.index_map, f));
            }
            Primitive::Elementwise(Elementwise::Unary(_))
            | Primitive::Elementwise(Elementwise::Binary(_))
            | Primitive::Elementwise(Elementwise::IntegerPow(_))
            | Primitive::Elementwise(Elementwise::Round(_))
            | Primitive::Elementwise(Elementwise::ReducePrecision(_))
            | Primitive::Elementwise(Elementwise::ConvertElementType(_))
            | Primitive::Elementwise(Elementwise::BitcastConvertType(_))
            | Primitive::Elementwise(Elementwise::SelectN)
            | Primitive::Elementwise(Elementwise::Clamp)
            | Primitive::Structural(Structural::BroadcastInDim(_))
            | Primitive::Structural(Structural::Reshape(_))
            | Primitive::Structural(Structural::Transpose(_))
            | Primitive::Structural(Structural::Squeeze(_))
            | Primitive::Structural(Structural::Rev(_))
            | Primitive::Structural(Structural::Pad(_))
            | Primitive::Structural(Structural::Concatenate(_))
            | Primitive::Indexing(Indexing::Slice(_))
            | Primitive::Indexing(Indexing::DynamicSlice(_))
            | Primitive::Indexing(Indexing::DynamicUpdateSlice)
            | Primitive::Indexing(Indexing::Gather(_))
            | Primitive::Structural(Structural::Iota(_))
            | Primitive::Structural(Structural::Split(_))
            | Primitive::Structural(Structural::Tile(_))
            | Primitive::Structural(Structural::Stack(_))
            | Primitive::Reduction(Reduction::Reduce(_))
            | Primitive::Reduction(Reduction::ArgReduce(_))
            | Primitive::Reduction(Reduction::Cumulative(_))
            | Primitive::Linalg(Linalg::DotGeneral(_))
            | Primitive::Linalg(Linalg::ConvGeneralDilated(_))
            | Primitive::Reduction(Reduction::Sort(_))
            | Primitive::Reduction(Reduction::TopK(_))
            | Primitive::Structural(Structural::Empty2(_))
            | Primitive::Collective(Collective::AllReduce(_))
            | Primitive::Collective(Collective::AllGather(_))
            | Primitive::Collective(Collective::AxisIndex(_))
            | Primitive::State(State::Get(_))
            | Primitive::State(State::Swap(_))
            | Primitive::State(State::AddUpdate(_))
            | Primitive::Pallas(Pallas::ProgramId(_))
            | Primitive::Pallas(Pallas::NumPrograms(_))
            | Primitive::Pallas(Pallas::Load(_))
            | Primitive::Pallas(Pallas::Store(_))
            | Primitive::Pallas(Pallas::AtomicRmw(_))
            | Primitive::Pallas(Pallas::AtomicCas(_)) => {}
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
            Primitive::State(State::Swap(_))
            | Primitive::State(State::AddUpdate(_))
            | Primitive::Pallas(Pallas::Store(_))
            | Primitive::Pallas(Pallas::AtomicRmw(_))
            | Primitive::Pallas(Pallas::AtomicCas(_)) => true,
            Primitive::Elementwise(Elementwise::Unary(_))
            | Primitive::Elementwise(Elementwise::Binary(_))
            | Primitive::Elementwise(Elementwise::IntegerPow(_))
            | Primitive::Elementwise(Elementwise::Round(_))
            | Primitive::Elementwise(Elementwise::ReducePrecision(_))
            | Primitive::Elementwise(Elementwise::ConvertElementType(_))
            | Primitive::Elementwise(Elementwise::BitcastConvertType(_))
            | Primitive::Elementwise(Elementwise::SelectN)
            | Primitive::Elementwise(Elementwise::Clamp)
            | Primitive::Structural(Structural::BroadcastInDim(_))
            | Primitive::Structural(Structural::Reshape(_))
            | Primitive::Structural(Structural::Transpose(_))
            | Primitive::Structural(Structural::Squeeze(_))
            | Primitive::Structural(Structural::Rev(_))
            | Primitive::Structural(Structural::Pad(_))
            | Primitive::Structural(Structural::Concatenate(_))
            | Primitive::Indexing(Indexing::Slice(_))
            | Primitive::Indexing(Indexing::DynamicSlice(_))
            | Primitive::Indexing(Indexing::DynamicUpdateSlice)
            | Primitive::Indexing(Indexing::Gather(_))
            | Primitive::Indexing(Indexing::Scatter(_))
            | Primitive::Structural(Structural::Iota(_))
            | Primitive::Structural(Structural::Split(_))
            | Primitive::Structural(Structural::Tile(_))
            | Primitive::Structural(Structural::Stack(_))
            | Primitive::Reduction(Reduction::Reduce(_))
            | Primitive::Reduction(Reduction::ArgReduce(_))
            | Primitive::Reduction(Reduction::Cumulative(_))
            | Primitive::Linalg(Linalg::DotGeneral(_))
            | Primitive::Linalg(Linalg::ConvGeneralDilated(_))
            | Primitive::Reduction(Reduction::Sort(_))
            | Primitive::Reduction(Reduction::TopK(_))
            | Primitive::Structural(Structural::Empty2(_))
            | Primitive::Collective(Collective::AllReduce(_))
            | Primitive::Collective(Collective::AllGather(_))
            | Primitive::Collective(Collective::AxisIndex(_))
            | Primitive::Control(Control::Cond(_))
            | Primitive::Control(Control::While(_))
            | Primitive::Control(Control::Scan(_))
            | Primitive::Control(Control::ForLoop(_))
            | Primitive::Control(Control::Jit(_))
            | Primitive::Control(Control::CustomJvpCall(_))
            | Primitive::Control(Control::CustomVjpCall(_))
            | Primitive::Control(Control::Remat(_))
            | Primitive::State(State::Get(_))
            | Primitive::Pallas(Pallas::ProgramId(_))
            | Primitive::Pallas(Pallas::NumPrograms(_))
            | Primitive::Pallas(Pallas::Load(_))
            | Primitive::Pallas(Pallas::PallasCall(_)) => false,
        }
    }
}
