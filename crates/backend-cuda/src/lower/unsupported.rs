//! The families that do not lower — the markers that simplify
//! removes — each with one
//! explicit arm per primitive, so that a new primitive breaks the build
//! here until someone decides about it; complex values in nested jaxprs
//! (top-level ones are rewritten to real pairs by `complex.rs`) and the
//! complex arms the rewrite makes unreachable; and the
//! check that keeps `key<fry>` values inside the random family and data
//! movement ([`keys`]).

use super::unsupported;
use jaxon_ir::primitive::{FftParams, Marker, Primitive, Random};
use jaxon_ir::{Atom, Aval, Binder, DType, IrError, Jaxpr};

/// Complex dtypes: an `Unsupported` error naming the first equation (or
/// input) with a complex value, nested jaxprs included. `lower` rewrites a
/// jaxpr that fails this check (`complex.rs`); the rewrite calls it on
/// nested jaxprs.
pub(crate) fn complex(jaxpr: &Jaxpr) -> Result<(), IrError> {
    let why = "complex dtypes (c64, c128) lower only outside nested jaxprs (control flow)";
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

/// Key values outside the random family: an `Unsupported` error naming the
/// first equation of the (simplified) jaxpr that takes or gives a
/// `key<fry>` value and is not a key primitive. Keys are `u32` buffers of
/// two words per key (`random.rs`); the other lowerings would move one
/// word per key. Nested jaxprs are checked when they are lowered.
pub(crate) fn keys(jaxpr: &Jaxpr) -> Result<(), IrError> {
    let is_key = |a: &Aval| a.as_array().is_some_and(|x| x.dtype == DType::KeyFry);
    for e in &jaxpr.eqns {
        let key_primitive = matches!(
            &e.primitive,
            Primitive::Random(
                Random::Seed(_)
                    | Random::Wrap(_)
                    | Random::Unwrap(_)
                    | Random::Bits(_)
                    | Random::Split(_)
                    | Random::FoldIn(_)
                    | Random::Gamma(_)
            )
        );
        if key_primitive || super::keys::is_key_movement(&e.primitive) {
            continue;
        }
        let key_in = e.inputs.iter().any(|a| match a {
            Atom::Lit(_) => false,
            Atom::Var(v) => jaxpr.try_aval(*v).is_some_and(is_key),
        });
        let key_out = e.outputs.iter().any(|b| match b {
            Binder::Var(v) => jaxpr.try_aval(*v).is_some_and(is_key),
            Binder::Drop(a) => is_key(a),
        });
        if key_in || key_out {
            return Err(unsupported(
                e.primitive.name(),
                "key<fry> values lower only through the random primitives and data movement yet",
            ));
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
