//! The state family of primitives and their params.

use super::*;

/// Stateful primitives over `Ref`s: `get`, `swap` and `addupdate`, each with a chain of indexers.
///
/// Family invariant: operand 0 is the `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// `get`: `y <- ref[idx]`.
    Get(GetParams),
    /// `swap`: `old, ref[idx] <- ref[idx], new`.
    Swap(SwapParams),
    /// `addupdate`: `ref[idx] += x`.
    AddUpdate(AddUpdateParams),
}

impl State {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            State::Get(_) => "get",
            State::Swap(_) => "swap",
            State::AddUpdate(_) => "addupdate",
        }
    }
}

/// The params of `get`.
#[derive(Clone, Debug, PartialEq)]
pub struct GetParams {
    /// Indexers applied in order; empty means `[...]`.
    pub indexers: Vec<Indexer>,
}

/// The params of `swap`.
#[derive(Clone, Debug, PartialEq)]
pub struct SwapParams {
    /// Indexers.
    pub indexers: Vec<Indexer>,
}

/// The params of `addupdate`.
#[derive(Clone, Debug, PartialEq)]
pub struct AddUpdateParams {
    /// Indexers.
    pub indexers: Vec<Indexer>,
}

impl State {
    /// Whether the primitive writes through its `Ref` operand.
    pub fn writes_refs(&self) -> bool {
        match self {
            State::Swap(_) | State::AddUpdate(_) => true,
            State::Get(_) => false,
        }
    }
}
