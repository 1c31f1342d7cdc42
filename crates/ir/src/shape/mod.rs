//! Shape rules: the symbolic `abstract_eval` of every primitive.

use crate::aval::Aval;
use crate::error::IrError;
use crate::jaxpr::Atom;
use crate::primitive::Primitive;

/// The output types of applying `primitive` to operands of types `in_avals`.
///
/// `in_atoms` are the operands themselves, so that dynamic-size operands can
/// name the dimensions they define (`Dim::Var`).
pub fn abstract_eval(
    primitive: &Primitive,
    in_avals: &[Aval],
    in_atoms: &[Atom],
) -> Result<Vec<Aval>, IrError> {
    let _ = (in_avals, in_atoms);
    Err(IrError::ty(primitive.name(), "shape rule not implemented"))
}
