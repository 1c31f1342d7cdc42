//! Forward mode of the state primitives `get`, `swap` and `addupdate`.
//!
//! A `Ref`'s tangent is a second `Ref` of the same type (JAX's pair of
//! refs): reads of the primal ref read the tangent ref at the same
//! indices, and writes into the primal ref write the value's tangent into
//! the tangent ref. The primal outputs always come from a bind on primal
//! operands alone, so linearize keeps the primal work known.

use super::rules::Outs;
use crate::util::zeros_like;
use jaxon_ir::primitive::{IndexEntry, IndexValue, Indexer};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, Array};

/// The position of the first operand after the ref and its index operands.
pub(crate) fn value_pos(indexers: &[Indexer]) -> usize {
    let mut end = 1;
    for e in indexers.iter().flat_map(|ix| &ix.entries) {
        if let IndexEntry::Slice {
            start: IndexValue::Dynamic(k),
            ..
        }
        | IndexEntry::Int(IndexValue::Dynamic(k))
        | IndexEntry::Array(k) = e
        {
            end = end.max(k + 1);
        }
    }
    end
}

/// Which state primitive a rule is for.
#[derive(Clone, Copy)]
pub(crate) enum StateOp {
    Get,
    Swap,
    AddUpdate,
}

/// The jvp of `get`, `swap` or `addupdate` (`x[0]` is the ref).
pub(crate) fn jvp_state(
    op: StateOp,
    indexers: &[Indexer],
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<Outs> {
    let k = value_pos(indexers);
    let p_out = bind(p, x)?;
    let with_ref = |r: &Array, v: Option<Array>| -> Vec<Array> {
        let mut ops = vec![r.clone()];
        ops.extend_from_slice(&x[1..k]);
        ops.extend(v);
        ops
    };
    let ref_t = t[0].as_ref();
    let val_t = t.get(k).cloned().flatten();
    let t_out = match op {
        // Index operands are integers, so a non-zero tangent is the ref's.
        StateOp::Get => match ref_t {
            Some(r) => vec![Some(bind(p, &with_ref(r, None))?.remove(0))],
            None => vec![None],
        },
        StateOp::Swap => match (ref_t, val_t) {
            (Some(r), v) => {
                let v = match v {
                    Some(v) => v,
                    None => zeros_like(&x[k])?,
                };
                vec![Some(bind(p, &with_ref(r, Some(v)))?.remove(0))]
            }
            (None, Some(_)) => return Err(no_tangent_ref(p)),
            (None, None) => vec![None],
        },
        StateOp::AddUpdate => match (ref_t, val_t) {
            (Some(r), Some(v)) => {
                bind(p, &with_ref(r, Some(v)))?;
                Vec::new()
            }
            (None, Some(_)) => return Err(no_tangent_ref(p)),
            (_, None) => Vec::new(),
        },
    };
    Ok((p_out, t_out))
}

/// A tangent written into a ref that has none: its tangent ref would have
/// to be created by whoever allocated the ref (e.g. `run_state`), which is
/// outside this equation.
fn no_tangent_ref(p: &Primitive) -> Error {
    Error::Unsupported(format!(
        "jvp of `{}`: a value with a non-zero tangent is written into a Ref without a \
         tangent Ref; mark the Ref's tangent as non-zero (jvp_jaxpr's `nonzero`)",
        p.name()
    ))
}
