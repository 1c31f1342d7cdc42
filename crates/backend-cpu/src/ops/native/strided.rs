//! Layout primitives and axis reductions as native ops, for operands no
//! fused kernel reads: `broadcast_in_dim`, `reshape` and `squeeze` (a
//! relabel), `transpose`, `slice`, `rev` (one strided copy each,
//! `crate::ops::movement`) and `reduce_*` along axes (`crate::ops::reduce`).
//!
//! Static programs fuse these into their kernels; a dynamic-shape
//! program's equation that is not in a flat run builds them for its
//! runtime types, and so does an unfused static one.

use super::NativeOp;
use crate::error::{run_error, CpuError};
use crate::ops::{movement, reduce};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{DType, HostArray, IrError};

/// The one result shape of an op, or why not.
fn out_shape(name: &str, outs: &[(DType, Vec<usize>)]) -> Result<Vec<usize>, CpuError> {
    match outs {
        [(_, s)] => Ok(s.clone()),
        _ => Err(CpuError::Operands(format!("`{name}` has one result"))),
    }
}

/// The first operand at run time (trailing operands are sizes).
fn first<'a>(name: &str, inputs: &[&'a HostArray]) -> Result<&'a HostArray, IrError> {
    inputs
        .first()
        .copied()
        .ok_or_else(|| run_error(format!("`{name}` takes an operand")))
}

/// One strided copy of the first operand.
#[derive(Debug)]
pub(crate) enum Strided {
    /// `broadcast_in_dim[broadcast_dimensions]` to `shape`.
    Broadcast { dims: Vec<usize>, shape: Vec<usize> },
    /// `reshape` without `dimensions`, `squeeze`: the elements unchanged.
    Relabel { shape: Vec<usize> },
    /// `transpose[permutation]`.
    Transpose { perm: Vec<usize> },
    /// `slice` with static starts and steps, to `shape`.
    Slice {
        starts: Vec<usize>,
        steps: Vec<usize>,
        shape: Vec<usize>,
    },
    /// `rev[dimensions]`.
    Rev { dims: Vec<usize> },
}

impl Strided {
    pub(crate) fn broadcast(
        dims: Vec<usize>,
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Strided, CpuError> {
        Ok(Strided::Broadcast {
            dims,
            shape: out_shape("broadcast_in_dim", outs)?,
        })
    }

    pub(crate) fn relabel(
        ins: &[Vec<usize>],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Strided, CpuError> {
        let shape = out_shape("reshape", outs)?;
        let n: Option<usize> = ins.first().map(|s| s.iter().product());
        if n != Some(shape.iter().product()) {
            return Err(CpuError::Operands(format!(
                "`reshape` of {:?} to {shape:?}",
                ins.first()
            )));
        }
        Ok(Strided::Relabel { shape })
    }

    pub(crate) fn slice(
        starts: Vec<usize>,
        steps: Vec<usize>,
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Strided, CpuError> {
        Ok(Strided::Slice {
            starts,
            steps,
            shape: out_shape("slice", outs)?,
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Strided::Broadcast { .. } => "broadcast_in_dim",
            Strided::Relabel { .. } => "reshape",
            Strided::Transpose { .. } => "transpose",
            Strided::Slice { .. } => "slice",
            Strided::Rev { .. } => "rev",
        }
    }
}

impl NativeOp for Strided {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let x = first(self.name(), inputs)?;
        let y = match self {
            Strided::Broadcast { dims, shape } => movement::broadcast(x, dims, shape)?,
            Strided::Relabel { shape } => x.clone().reshape(shape.clone())?,
            Strided::Transpose { perm } => movement::transpose(x, perm)?,
            Strided::Slice {
                starts,
                steps,
                shape,
            } => movement::slice(x, starts, steps, shape)?,
            Strided::Rev { dims } => movement::rev(x, dims)?,
        };
        Ok(vec![y])
    }
}

/// `reduce_*[axes]`: the operand viewed as `(outer, reduced, inner)` and
/// folded row by row, bit-identical to the interpreter.
#[derive(Debug)]
pub(crate) struct Reduce {
    pub op: ReduceOp,
    pub axes: Vec<usize>,
}

impl NativeOp for Reduce {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let x = first("reduce", inputs)?;
        Ok(vec![reduce::reduce(self.op, x, &self.axes)?])
    }
}
