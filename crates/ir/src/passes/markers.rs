//! `resolve_markers`: removes the marker primitives before a backend plans
//! a program, in the program and in every jaxpr nested in it.
//!
//! Invariant: the result holds no `Primitive::Marker` equation. `name`,
//! `device_put` and `optimization_barrier` results become their operands;
//! `platform_index` becomes the `i32` literal of the platform compiling
//! the program, so that folding picks the `cond` branch of that platform.
//! Backends run it first (it is the start of [`super::simplify`]) and may
//! treat a marker that reaches them as an internal error.

use super::rewrite::rewrite_eqns;
use crate::dtype::DType;
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Jaxpr};
use crate::literal::{Literal, Scalar};
use crate::primitive::{Marker, Platform, Primitive};
use std::sync::Arc;

/// `closed` without marker primitives, for a program compiled for
/// `platform`.
pub fn resolve_markers(closed: &ClosedJaxpr, platform: Platform) -> Result<ClosedJaxpr, IrError> {
    Ok(ClosedJaxpr {
        jaxpr: Arc::new(resolve(&closed.jaxpr, platform)?),
        consts: closed.consts.clone(),
    })
}

fn has_markers(j: &Jaxpr) -> bool {
    j.eqns.iter().any(|e| {
        matches!(e.primitive, Primitive::Marker(_))
            || e.primitive.sub_jaxprs().iter().any(|s| has_markers(s))
    })
}

fn resolve(jaxpr: &Jaxpr, platform: Platform) -> Result<Jaxpr, IrError> {
    if !has_markers(jaxpr) {
        return Ok(jaxpr.clone());
    }
    rewrite_eqns(jaxpr, |rw, map, eqn| {
        let Primitive::Marker(m) = &eqn.primitive else {
            if eqn.primitive.sub_jaxprs().iter().any(|s| has_markers(s)) {
                let mut err = None;
                let primitive = eqn.primitive.map_sub_jaxprs(&mut |j| {
                    resolve(j, platform).unwrap_or_else(|e| {
                        err.get_or_insert(e);
                        j.clone()
                    })
                });
                if let Some(e) = err {
                    return Err(e);
                }
                let mut copy = eqn.clone();
                copy.primitive = primitive;
                rw.copy_eqn(jaxpr, map, &copy)?;
                return Ok(true);
            }
            return Ok(false);
        };
        let results: Vec<Atom> = match m {
            Marker::Name(_)
            | Marker::DevicePut(_)
            | Marker::OptimizationBarrier(_)
            | Marker::Reshard(_)
            | Marker::ShardingConstraint(_) => eqn
                .inputs
                .iter()
                .map(|a| map.atom(a))
                .collect::<Result<_, _>>()?,
            Marker::PlatformIndex(p) => {
                let i = p.index_for(platform).ok_or_else(|| {
                    IrError::Invalid(format!(
                        "platform_index: no entry of {:?} serves the {platform:?} platform",
                        p.platforms
                    ))
                })?;
                vec![Atom::Lit(Literal {
                    value: Scalar::Int(i as i64),
                    dtype: DType::I32,
                })]
            }
        };
        if results.len() != eqn.outputs.len() {
            return Err(IrError::Invalid(format!(
                "{}: {} results for {} outputs",
                m.name(),
                results.len(),
                eqn.outputs.len()
            )));
        }
        for (b, r) in eqn.outputs.iter().zip(results) {
            if let Binder::Var(v) = b {
                map.set(*v, r)?;
            }
        }
        Ok(true)
    })
}
