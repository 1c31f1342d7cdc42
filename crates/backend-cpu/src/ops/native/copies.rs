//! Fills, copies and line scans as native ops: `iota`, `empty2`, `pad`,
//! `concatenate`, `split`, the cumulative ops and `argmax`/`argmin`.
//!
//! Each is built for resolved shapes (the static pipeline's compile-time
//! ones, or a dynamic-shape program's runtime ones) and checks at build
//! time what its params promise, so `run` only meets the operands it was
//! built for; the routines themselves are `crate::ops::copy` and
//! `crate::ops::cumulative`.

use super::NativeOp;
use crate::error::{run_error, CpuError};
use crate::ops::{copy, cumulative};
use jaxon_ir::primitive::CumulativeOp;
use jaxon_ir::{DType, HostArray, IrError};

/// The one result type of an op, or why not.
fn one_out<'a>(
    name: &str,
    outs: &'a [(DType, Vec<usize>)],
) -> Result<&'a (DType, Vec<usize>), CpuError> {
    match outs {
        [o] => Ok(o),
        _ => Err(CpuError::Operands(format!("`{name}` has one result"))),
    }
}

/// The one operand of an op at run time.
fn one_in<'a>(name: &str, inputs: &[&'a HostArray]) -> Result<&'a HostArray, IrError> {
    match inputs {
        [x] => Ok(x),
        _ => Err(run_error(format!("`{name}` takes one operand"))),
    }
}

/// `iota[dtype shape dimension]`: the index along `dimension`.
#[derive(Debug)]
pub(crate) struct Iota {
    dtype: DType,
    shape: Vec<usize>,
    dimension: usize,
}

impl Iota {
    pub(crate) fn new(dimension: usize, outs: &[(DType, Vec<usize>)]) -> Result<Iota, CpuError> {
        let (dtype, shape) = one_out("iota", outs)?;
        if dimension >= shape.len() {
            return Err(CpuError::Operands(format!(
                "`iota` along {dimension} of {shape:?}"
            )));
        }
        Ok(Iota {
            dtype: *dtype,
            shape: shape.clone(),
            dimension,
        })
    }
}

impl NativeOp for Iota {
    fn run(&self, _: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        Ok(vec![copy::iota(self.dtype, &self.shape, self.dimension)?])
    }
}

/// `empty2`: an uninitialised value, zeros here, allocated through the
/// checked path (its shape may be a user's).
#[derive(Debug)]
pub(crate) struct Zeros {
    dtype: DType,
    shape: Vec<usize>,
}

impl Zeros {
    pub(crate) fn new(outs: &[(DType, Vec<usize>)]) -> Result<Zeros, CpuError> {
        let (dtype, shape) = one_out("empty2", outs)?;
        Ok(Zeros {
            dtype: *dtype,
            shape: shape.clone(),
        })
    }
}

impl NativeOp for Zeros {
    fn run(&self, _: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let s = jaxon_ir::memory::try_zeros("cpu backend: empty2", self.dtype, &self.shape)?;
        Ok(vec![HostArray::new(self.shape.clone(), s)?])
    }
}

/// `pad[padding_config] x value`, `(low, high, interior)` per dimension.
#[derive(Debug)]
pub(crate) struct Pad {
    config: Vec<(i64, i64, i64)>,
    out_shape: Vec<usize>,
}

impl Pad {
    pub(crate) fn new(
        config: Vec<(i64, i64, i64)>,
        ins: &[Vec<usize>],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Pad, CpuError> {
        let (_, out_shape) = one_out("pad", outs)?;
        match ins {
            [x, v] if x.len() == config.len() && v.is_empty() && out_shape.len() == x.len() => {
                Ok(Pad {
                    config,
                    out_shape: out_shape.clone(),
                })
            }
            _ => Err(CpuError::Operands(format!(
                "`pad` of {ins:?} with {} padding triples",
                config.len()
            ))),
        }
    }
}

impl NativeOp for Pad {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x, value] = inputs else {
            return Err(run_error("`pad` takes an operand and a value"));
        };
        Ok(vec![copy::pad(x, value, &self.config, &self.out_shape)?])
    }
}

/// `concatenate[dimension] *xs`.
#[derive(Debug)]
pub(crate) struct Concat {
    dim: usize,
    out_shape: Vec<usize>,
}

impl Concat {
    pub(crate) fn new(dim: usize, outs: &[(DType, Vec<usize>)]) -> Result<Concat, CpuError> {
        let (_, out_shape) = one_out("concatenate", outs)?;
        Ok(Concat {
            dim,
            out_shape: out_shape.clone(),
        })
    }
}

impl NativeOp for Concat {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        Ok(vec![copy::concatenate(inputs, self.dim, &self.out_shape)?])
    }
}

/// `split[sizes axis] x`: consecutive pieces along `axis`, of the sizes
/// of the results.
#[derive(Debug)]
pub(crate) struct Split {
    axis: usize,
    sizes: Vec<usize>,
}

impl Split {
    pub(crate) fn new(axis: usize, outs: &[(DType, Vec<usize>)]) -> Result<Split, CpuError> {
        let sizes = outs
            .iter()
            .map(|(_, s)| s.get(axis).copied())
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| CpuError::Operands(format!("`split` along {axis}")))?;
        Ok(Split { axis, sizes })
    }
}

impl NativeOp for Split {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        copy::split(one_in("split", inputs)?, self.axis, &self.sizes)
    }
}

/// `cumsum`, `cumprod`, `cummax`, `cummin`, `cumlogsumexp` along `axis`.
#[derive(Debug)]
pub(crate) struct Cumulative {
    op: CumulativeOp,
    axis: usize,
    reverse: bool,
}

impl Cumulative {
    pub(crate) fn new(
        op: CumulativeOp,
        axis: usize,
        reverse: bool,
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Cumulative, CpuError> {
        let (dt, shape) = one_out(op.name(), outs)?;
        if op == CumulativeOp::Cumlogsumexp && !dt.is_float() {
            return Err(CpuError::Operands(format!("`cumlogsumexp` of {dt}")));
        }
        if axis >= shape.len() {
            return Err(CpuError::Operands(format!(
                "`{}` along {axis} of {shape:?}",
                op.name()
            )));
        }
        Ok(Cumulative { op, axis, reverse })
    }
}

impl NativeOp for Cumulative {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let x = one_in(self.op.name(), inputs)?;
        Ok(vec![cumulative::cumulative(
            self.op,
            x,
            self.axis,
            self.reverse,
        )?])
    }
}

/// `argmax`/`argmin` along one axis: the first index of the extremum.
#[derive(Debug)]
pub(crate) struct ArgReduce {
    max: bool,
    axis: usize,
    index_dtype: DType,
}

impl ArgReduce {
    pub(crate) fn new(max: bool, axes: &[usize], index_dtype: DType) -> Result<Self, CpuError> {
        match axes {
            [axis] => Ok(ArgReduce {
                max,
                axis: *axis,
                index_dtype,
            }),
            _ => Err(CpuError::Operands(format!(
                "`{}` takes one axis, got {axes:?}",
                if max { "argmax" } else { "argmin" }
            ))),
        }
    }
}

impl NativeOp for ArgReduce {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let x = one_in("arg reduction", inputs)?;
        Ok(vec![cumulative::arg_reduce(
            self.max,
            x,
            self.axis,
            self.index_dtype,
        )?])
    }
}
