//! Bit-level and structural native steps: `bitcast_convert_type`,
//! `reduce_precision`, `tile`, `stack` and transposing reshapes.

use super::{map_same, next_index, strides, NativeOp};
use crate::error::run_error;
use crate::error::CpuError;
use jaxon_ir::{DType, HostArray, IrError};

/// `bitcast_convert_type[new_dtype]` (little-endian lanes when widths
/// differ, as XLA on x86).
#[derive(Debug)]
pub(crate) struct Bitcast {
    to: DType,
    shape: Vec<usize>,
}

impl Bitcast {
    pub(crate) fn new(to: DType, outs: &[(DType, Vec<usize>)]) -> Result<Bitcast, CpuError> {
        match outs {
            [(d, s)] if *d == to => Ok(Bitcast {
                to,
                shape: s.clone(),
            }),
            _ => Err("bitcast_convert_type has one result of the new dtype".into()),
        }
    }
}

impl NativeOp for Bitcast {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(run_error("bitcast takes one operand"));
        };
        let y = jaxon_ir::interp::ops::bitcast(x, self.to)?;
        if y.shape() != self.shape.as_slice() {
            return Err(run_error(format!(
                "bitcast gave shape {:?}, compiled for {:?}",
                y.shape(),
                self.shape
            )));
        }
        Ok(vec![y])
    }
}

/// `reduce_precision[exponent_bits mantissa_bits]`: the interpreter's own
/// bit-level rounding (f16/bf16 through f32).
#[derive(Debug)]
pub(crate) struct ReducePrecision {
    exp: u32,
    mant: u32,
}

impl ReducePrecision {
    pub(crate) fn new(exp: u32, mant: u32) -> ReducePrecision {
        ReducePrecision { exp, mant }
    }
}

impl NativeOp for ReducePrecision {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(run_error("reduce_precision operand"));
        };
        Ok(vec![jaxon_ir::interp::ops::reduce_precision(
            x, self.exp, self.mant,
        )?])
    }
}

/// `tile`, and `reshape` with a `dimensions` transpose: every output
/// element reads the input at a flat index fixed at compile time.
#[derive(Debug)]
pub(crate) struct Take {
    src: Vec<usize>,
    shape: Vec<usize>,
}

impl Take {
    /// `reshape[dimensions=perm]`: transpose by `perm`, then reshape.
    pub(crate) fn transpose_reshape(
        ins: &[Vec<usize>],
        perm: &[usize],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Take, CpuError> {
        let (Some(x), [(_, shape)]) = (ins.first(), outs) else {
            return Err("reshape takes one operand".into());
        };
        let mut seen = vec![false; x.len()];
        if perm.len() != x.len()
            || perm
                .iter()
                .any(|&p| p >= x.len() || std::mem::replace(&mut seen[p], true))
            || x.iter().product::<usize>() != shape.iter().product::<usize>()
        {
            return Err(format!("reshape of {x:?} by {perm:?} to {shape:?}").into());
        }
        let xs = strides(x);
        let tshape: Vec<usize> = perm.iter().map(|&p| x[p]).collect();
        let n: usize = tshape.iter().product();
        let mut o = vec![0usize; tshape.len()];
        let mut src = Vec::with_capacity(n);
        for _ in 0..n {
            src.push(perm.iter().zip(&o).map(|(&p, &i)| i * xs[p]).sum());
            next_index(&mut o, &tshape);
        }
        Ok(Take {
            src,
            shape: shape.clone(),
        })
    }

    /// `tile[reps]`.
    pub(crate) fn tile(ins: &[Vec<usize>], outs: &[(DType, Vec<usize>)]) -> Result<Take, CpuError> {
        let ([x], [(_, shape)]) = (ins, outs) else {
            return Err("tile takes one operand".into());
        };
        if x.len() != shape.len() || x.iter().zip(shape).any(|(a, b)| *a == 0 && *b != 0) {
            return Err(format!("tile of {x:?} to {shape:?}").into());
        }
        let n: usize = shape.iter().product();
        let xs = strides(x);
        let mut o = vec![0usize; shape.len()];
        let mut src = Vec::with_capacity(n);
        for _ in 0..n {
            src.push((0..shape.len()).map(|d| (o[d] % x[d]) * xs[d]).sum());
            next_index(&mut o, shape);
        }
        Ok(Take {
            src,
            shape: shape.clone(),
        })
    }
}

impl NativeOp for Take {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x] = inputs else {
            return Err(run_error("takes one operand"));
        };
        let data = map_same!(x.data(), v => self.src.iter().map(|&i| v[i]).collect());
        Ok(vec![HostArray::new(self.shape.clone(), data)?])
    }
}

/// `stack[axis]`: a concatenation along a new unit axis.
#[derive(Debug)]
pub(crate) struct Stack {
    axis: usize,
    shape: Vec<usize>,
}

impl Stack {
    pub(crate) fn new(
        axis: usize,
        ins: &[Vec<usize>],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Stack, CpuError> {
        let (Some(x), [(_, shape)]) = (ins.first(), outs) else {
            return Err("stack needs operands".into());
        };
        if axis > x.len() || ins.iter().any(|s| s != x) || shape.len() != x.len() + 1 {
            return Err("stack of unequal shapes".into());
        }
        Ok(Stack {
            axis,
            shape: shape.clone(),
        })
    }
}

impl NativeOp for Stack {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let expanded = inputs
            .iter()
            .map(|a| {
                let mut s = a.shape().to_vec();
                s.insert(self.axis.min(s.len()), 1);
                (*a).clone().reshape(s)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&HostArray> = expanded.iter().collect();
        Ok(vec![crate::ops::copy::concatenate(
            &refs,
            self.axis,
            &self.shape,
        )?])
    }
}
