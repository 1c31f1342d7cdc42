//! The families that do not lower yet — state, Pallas, named-axis
//! collectives and windowed reductions — each with one explicit arm per primitive, so that a new
//! primitive breaks the build here until someone decides about it.

use super::unsupported;
use jaxon_ir::primitive::{Collective, Pallas, State, Window};
use jaxon_ir::IrError;

/// State primitives (`get`, `swap`, `addupdate`).
pub(crate) fn state(p: &State) -> Result<(), IrError> {
    let why = match p {
        State::Get(_) | State::Swap(_) | State::AddUpdate(_) => {
            "Ref state is not lowered yet (discharge it first)"
        }
    };
    Err(unsupported(p.name(), why))
}

/// Pallas primitives.
pub(crate) fn pallas(p: &Pallas) -> Result<(), IrError> {
    let why = match p {
        Pallas::PallasCall(_) => "pallas_call is not lowered yet",
        Pallas::ProgramId(_)
        | Pallas::NumPrograms(_)
        | Pallas::Load(_)
        | Pallas::Store(_)
        | Pallas::AtomicRmw(_)
        | Pallas::AtomicCas(_) => "Pallas kernel primitives lower only inside pallas_call",
    };
    Err(unsupported(p.name(), why))
}

/// Named-axis collectives (positional all-reduces become reductions in
/// `ir::passes::simplify` before lowering).
pub(crate) fn collective(p: &Collective) -> Result<(), IrError> {
    let why = match p {
        Collective::AllReduce(_) => "named-axis all-reduces have a value only under vmap",
        Collective::AllGather(_) | Collective::AxisIndex(_) => {
            "named-axis collectives have a value only under vmap"
        }
    };
    Err(unsupported(p.name(), why))
}

/// Windowed reductions and their derivatives' selections.
pub(crate) fn window(p: &Window) -> Result<(), IrError> {
    let why = match p {
        Window::ReduceWindow(_)
        | Window::SelectAndGatherAdd(_)
        | Window::SelectAndScatterAdd(_) => "windowed reductions have no CUDA kernel yet",
    };
    Err(unsupported(p.name(), why))
}
