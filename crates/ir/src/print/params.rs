//! Equation params as JAX 0.10.2 prints them: which params each primitive
//! shows (after its pp rule's elisions), in printed order, as Python reprs.
//! Every primitive's params text is defined in `params_text`; this sorts
//! what it prints.

use super::PV;
use crate::jaxpr::{Eqn, Jaxpr};
use crate::params_text::{text_of, PrintCx};

type Params<'a> = Vec<(&'static str, PV<'a>)>;

/// The printed params of equation `e` of `j`, in printed order: sorted by
/// key, after `name` for the calls that print it first.
pub(crate) fn params<'a>(j: &Jaxpr, e: &'a Eqn) -> Params<'a> {
    let mut v: Params<'a> = Vec::new();
    let Some(x) = text_of(&e.primitive) else {
        return v;
    };
    x.print(&PrintCx::new(j, e), &mut v);
    if x.name_first() {
        v[1..].sort_by(|a, b| a.0.cmp(b.0));
    } else {
        v.sort_by(|a, b| a.0.cmp(b.0));
    }
    v
}
