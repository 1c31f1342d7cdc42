//! Transpose rules of the linear collectives. As in JAX, `psum` is treated
//! as psum + pbroadcast, so its transpose over named axes is `psum` again;
//! positional axes transpose to a broadcast. `all_gather`'s transpose
//! (JAX's `psum_scatter`) is this member's slice of the summed cotangent.

use crate::batch::collectives::reduce_axes;
use jaxon_ir::primitive::{AllGatherParams, AllReduceParams, Collective};
use jaxon_ir::primitive::{AxisRef, CollectiveOp};
use jaxon_ir::{Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{lax, Array};

/// The cotangent of the operand of `p` (of type `ty`) from `ct`.
pub(super) fn transpose_collective(p: &Primitive, ty: &ShapedArray, ct: &Array) -> Result<Array> {
    let shape = ty.static_sizes().unwrap_or_default();
    match p {
        Primitive::Collective(Collective::AllReduce(AllReduceParams {
            op: CollectiveOp::Sum,
            axes,
        })) => {
            let pos: Vec<usize> = axes
                .iter()
                .filter_map(|a| match a {
                    AxisRef::Pos(p) => Some(*p),
                    AxisRef::Name(_) => None,
                })
                .collect();
            let ct = if pos.is_empty() {
                ct.clone()
            } else {
                let keep: Vec<usize> = (0..shape.len()).filter(|d| !pos.contains(d)).collect();
                lax::broadcast_in_dim(ct, &shape, &keep)?
            };
            let named: Vec<AxisRef> = axes
                .iter()
                .filter(|a| a.name().is_some())
                .cloned()
                .collect();
            reduce_axes(&ct, CollectiveOp::Sum, &named)
        }
        Primitive::Collective(Collective::AllGather(AllGatherParams {
            axis_name,
            all_gather_dimension,
            tiled: false,
            ..
        })) if axis_name.len() == 1 => {
            let name = &axis_name[0];
            let dim = *all_gather_dimension;
            let s = reduce_axes(ct, CollectiveOp::Sum, &[AxisRef::Name(name.clone())])?;
            let k = crate::batch::axis_index(name)?;
            let zero = lax::convert_element_type(&Array::weak(0.0), k.dtype(), false)?;
            let starts: Vec<Array> = (0..=shape.len())
                .map(|i| if i == dim { k.clone() } else { zero.clone() })
                .collect();
            let mut sizes = shape.clone();
            sizes.insert(dim, 1);
            let sl = lax::dynamic_slice(&s, &starts, &sizes)?;
            lax::reshape(&sl, &shape)
        }
        _ => Err(Error::Unsupported(format!(
            "transposition of `{}` is not implemented (only psum and an untiled single-axis \
             all_gather are linear collectives here)",
            p.name()
        ))),
    }
}
