//! Jvp rules of the named-axis collectives: `psum` and `all_gather` are
//! linear; `pmax`/`pmin` give the mean of the tangents of the members that
//! attain the extremum (as `reduce_max` does over positional axes).

use super::rules::Outs;
use crate::batch::collectives::{gather_like, reduce_axes};
use jaxon_ir::primitive::{AllReduceParams, AxisIndexParams, Collective};
use jaxon_ir::primitive::{AxisRef, CollectiveOp};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, lax, Array};

pub(super) fn jvp_collective(p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<Outs> {
    match p {
        Primitive::Collective(Collective::AllReduce(AllReduceParams { op, axes })) => {
            let y = reduce_axes(&x[0], *op, axes)?;
            let Some(t) = &t[0] else {
                return Ok((vec![y], vec![None]));
            };
            let dt = match op {
                CollectiveOp::Sum => reduce_axes(t, *op, axes)?,
                CollectiveOp::Max | CollectiveOp::Min => {
                    let shape = x[0].try_shape()?;
                    let pos: Vec<usize> = axes
                        .iter()
                        .filter_map(|a| match a {
                            AxisRef::Pos(p) => Some(*p),
                            AxisRef::Name(_) => None,
                        })
                        .collect();
                    let keep: Vec<usize> = (0..shape.len()).filter(|d| !pos.contains(d)).collect();
                    let yb = lax::broadcast_in_dim(&y, &shape, &keep)?;
                    let hit =
                        lax::convert_element_type(&lax::eq(&x[0], &yb)?, x[0].dtype(), false)?;
                    let count = reduce_axes(&hit, CollectiveOp::Sum, axes)?;
                    let num = reduce_axes(&lax::mul(t, &hit)?, CollectiveOp::Sum, axes)?;
                    lax::div(&num, &count)?
                }
            };
            Ok((vec![y], vec![Some(dt)]))
        }
        Primitive::Collective(Collective::AllGather(_)) => {
            let y = gather_like(p, &x[0])?;
            let dt = t[0].as_ref().map(|t| gather_like(p, t)).transpose()?;
            Ok((vec![y], vec![dt]))
        }
        Primitive::Collective(Collective::AxisIndex(AxisIndexParams { axis_name })) => Ok((
            vec![crate::batch::axis_index(axis_name).or_else(|_| {
                bind(p, &[])?
                    .pop()
                    .ok_or_else(|| Error::InvalidArgument("axis_index: no result".into()))
            })?],
            vec![None],
        )),
        _ => Err(Error::InvalidArgument(format!(
            "the collective jvp rule got `{}`",
            p.name()
        ))),
    }
}
