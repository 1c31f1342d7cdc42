//! Typing an equation's params: from the param syntax trees (and, for params
//! JAX elides, the equation's types; for the arrow forms, what the arrow
//! said) to a `Primitive`, through `params_text`.

use super::build::Builder;
use super::params::Params;
use super::syntax::{PResult, RawEqn};
use crate::aval::Aval;
use crate::params_text::{parse_by_name, ParseCx};
use crate::primitive::Primitive;

/// Builds the typed primitive of a raw equation.
pub(crate) fn to_primitive(
    b: &mut Builder,
    e: &RawEqn,
    in_avals: &[Option<Aval>],
    out_avals: &[Aval],
) -> PResult<Primitive> {
    let p = Params::new(b.text, &e.name, e.pos, &e.params);
    let name = e.name.as_str();
    let mut cx = ParseCx {
        name,
        p: &p,
        b,
        n_inputs: e.inputs.len(),
        in_avals,
        out_avals,
        state: e.state.as_ref(),
    };
    let prim = match parse_by_name(name, &mut cx) {
        Some(prim) => prim?,
        None => {
            return Err(p.err(
                e.pos,
                format!("expected a primitive name, found unknown primitive `{name}`"),
            ))
        }
    };
    // Every param must have been read: an unknown key (a typo, or a
    // param of another primitive) would otherwise be dropped silently.
    // `sharding=None` and `out_sharding=None` (one device, the default) are
    // read by every primitive: JAX versions differ in which ones print it.
    p.accept_none(&["sharding", "out_sharding"]);
    match p.unread() {
        Some(extra) => Err(p.err(
            extra.value.start,
            format!(
                "unknown param `{}` for `{name}` (jaxon reads no such param; \
                 a misspelling, or a param of a newer JAX?)",
                extra.key
            ),
        )),
        None => Ok(prim),
    }
}
