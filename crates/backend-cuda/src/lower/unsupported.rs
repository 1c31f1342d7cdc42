//! The families that do not lower yet — state, Pallas and named-axis
//! collectives, windowed reductions, the random family, and the markers that simplify removes — each with one
//! explicit arm per primitive, so that a new primitive breaks the build
//! here until someone decides about it; and the special functions (gamma
//! family, `zeta`, Bessel, incomplete beta), which have no CUDA kernel yet.

use super::unsupported;
use jaxon_ir::primitive::{Collective, FftParams, Marker, Pallas, Random, State, Window};
use jaxon_ir::{Atom, Aval, Binder, IrError, Jaxpr};

/// Complex dtypes: an `Unsupported` error naming the first equation (or
/// input) with a complex value, nested jaxprs included.
pub(crate) fn complex(jaxpr: &Jaxpr) -> Result<(), IrError> {
    let why = "complex dtypes (c64, c128) are not lowered yet";
    let is_c = |a: &Aval| a.array().dtype.is_complex();
    for v in jaxpr.invars.iter().chain(&jaxpr.constvars) {
        if jaxpr.try_aval(*v).is_some_and(is_c) {
            return Err(unsupported("complex", why));
        }
    }
    for e in &jaxpr.eqns {
        let complex_in = e.inputs.iter().any(|a| match a {
            Atom::Lit(l) => l.dtype.is_complex(),
            Atom::Var(v) => jaxpr.try_aval(*v).is_some_and(is_c),
        });
        let complex_out = e.outputs.iter().any(|b| match b {
            Binder::Var(v) => jaxpr.try_aval(*v).is_some_and(is_c),
            Binder::Drop(a) => is_c(a),
        });
        if complex_in || complex_out {
            return Err(unsupported(e.primitive.name(), why));
        }
        for j in e.primitive.sub_jaxprs() {
            complex(j)?;
        }
    }
    Ok(())
}

/// The complex-number elementwise primitives (`complex`, `real`, `imag`,
/// `conj`), by name.
pub(crate) fn complex_elementwise(name: &str) -> Result<(), IrError> {
    Err(unsupported(name, "complex numbers are not lowered yet"))
}

/// `fft`.
pub(crate) fn fft(_: &FftParams) -> Result<(), IrError> {
    Err(unsupported("fft", "FFTs are not lowered yet"))
}

/// State primitives (`get`, `swap`, `addupdate`).
pub(crate) fn state(p: &State) -> Result<(), IrError> {
    let why = match p {
        State::Get(_) | State::Swap(_) | State::AddUpdate(_) => {
            "Ref state is not lowered yet (discharge it first)"
        }
    };
    Err(unsupported(p.name(), why))
}

/// The special-function elementwise primitives (`lgamma`, `digamma`,
/// `igamma`, `igammac`, `igamma_grad_a`, `random_gamma_grad`,
/// `polygamma`, `zeta`, `bessel_i0e`, `bessel_i1e`,
/// `regularized_incomplete_beta`).
pub(crate) fn special(name: &str) -> IrError {
    unsupported(name, "special functions have no CUDA kernel yet")
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
        Collective::Ppermute(_)
        | Collective::AllToAll(_)
        | Collective::ReduceScatter(_)
        | Collective::Pvary(_)
        | Collective::PsumInvariant(_) => {
            "mesh collectives need shard_map, which has no CUDA lowering yet (no NCCL)"
        }
    };
    Err(unsupported(p.name(), why))
}

/// `shard_map`: SPMD over a mesh of GPUs needs NCCL, not there yet.
pub(crate) fn shard_map() -> Result<(), IrError> {
    Err(unsupported(
        "shard_map",
        "SPMD over a device mesh has no CUDA lowering yet (no NCCL)",
    ))
}

/// Markers are removed by `simplify` (for the cuda platform) before
/// lowering; one reaching the lowering is a bug upstream.
pub(crate) fn marker(p: &Marker) -> Result<(), IrError> {
    match p {
        Marker::Name(_)
        | Marker::DevicePut(_)
        | Marker::OptimizationBarrier(_)
        | Marker::PlatformIndex(_)
        | Marker::Reshard(_)
        | Marker::ShardingConstraint(_) => Err(IrError::Invalid(format!(
            "cuda lowering: {} should have been removed by simplify",
            p.name()
        ))),
    }
}

/// Windowed reductions and their derivatives' selections.
pub(crate) fn window(p: &Window) -> Result<(), IrError> {
    let why = match p {
        Window::ReduceWindow(_)
        | Window::Generic(_)
        | Window::SelectAndGatherAdd(_)
        | Window::SelectAndScatterAdd(_) => "windowed reductions have no CUDA kernel yet",
    };
    Err(unsupported(p.name(), why))
}

/// The random family: no CUDA kernel yet (the threefry hash and the key
/// primitives run on the interpreter and the CPU backend).
pub(crate) fn random(p: &Random) -> Result<(), IrError> {
    let why = match p {
        Random::Seed(_)
        | Random::Wrap(_)
        | Random::Unwrap(_)
        | Random::Bits(_)
        | Random::Split(_)
        | Random::FoldIn(_)
        | Random::Threefry2x32(_) => "typed PRNG keys and threefry2x32 have no CUDA kernel yet",
        Random::Gamma(_) => "random_gamma has no CUDA kernel yet",
    };
    Err(unsupported(p.name(), why))
}
