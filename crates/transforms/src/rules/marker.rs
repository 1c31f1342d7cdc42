//! Rules of the marker primitives (`name`, `device_put`,
//! `optimization_barrier`, `platform_index`): jvp, transpose and batching,
//! side by side.
//!
//! The three identities keep marking the primal values and pass tangents,
//! cotangents and batch dimensions through: as in JAX, `name` marks the
//! primal only (a remat policy saves the named primal), `device_put` with
//! one device moves nothing, and `optimization_barrier` puts the non-zero
//! tangents behind a barrier of their own (JAX binds primals and tangents
//! together; the jvp contract here keeps primal outputs primal-only).
//! `platform_index` reads no operand, so no rule ever sees a tangent or a
//! batched operand of it; it is not linear.

use super::{not_linear, BatchOuts, Cts, JvpOuts};
use crate::transpose::LinArg;
use jaxon_ir::primitive::Marker;
use jaxon_ir::Primitive;
use jaxon_trace::error::Result;
use jaxon_trace::{bind, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(m: &Marker, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match m {
        Marker::Name(_)
        | Marker::DevicePut(_)
        | Marker::Reshard(_)
        | Marker::ShardingConstraint(_) => Ok((bind(p, x)?, t.to_vec())),
        Marker::OptimizationBarrier(_) => {
            // Primal outputs come from primals alone (the jvp contract),
            // so the non-zero tangents go behind a barrier of their own.
            let primals = bind(p, x)?;
            let live: Vec<Array> = t.iter().flatten().cloned().collect();
            let mut outs = if live.is_empty() {
                Vec::new()
            } else {
                bind(p, &live)?
            }
            .into_iter();
            let tangents = t
                .iter()
                .map(|ti| ti.as_ref().and_then(|_| outs.next()))
                .collect();
            Ok((primals, tangents))
        }
        Marker::PlatformIndex(_) => Ok((bind(p, x)?, vec![None])),
    }
}

/// The transpose rules of the family: identities pass each cotangent to
/// its operand.
pub(crate) fn transpose(
    m: &Marker,
    p: &Primitive,
    args: &[LinArg],
    cts: &[Option<Array>],
) -> Result<Cts> {
    match m {
        Marker::Name(_)
        | Marker::DevicePut(_)
        | Marker::OptimizationBarrier(_)
        | Marker::Reshard(_)
        | Marker::ShardingConstraint(_) => Ok(args
            .iter()
            .zip(cts)
            .map(|(a, c)| match a {
                LinArg::Linear(_) | LinArg::LinearDyn(..) => c.clone(),
                LinArg::Value(_) => None,
            })
            .collect()),
        Marker::PlatformIndex(_) => not_linear(p),
    }
}

/// The batching rules of the family: each result keeps its operand's
/// batch dimension.
pub(crate) fn batch(
    m: &Marker,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
) -> Result<BatchOuts> {
    match m {
        Marker::Name(_)
        | Marker::DevicePut(_)
        | Marker::OptimizationBarrier(_)
        | Marker::Reshard(_)
        | Marker::ShardingConstraint(_) => Ok((bind(p, x)?, d.to_vec())),
        Marker::PlatformIndex(_) => Ok((bind(p, x)?, vec![None])),
    }
}
