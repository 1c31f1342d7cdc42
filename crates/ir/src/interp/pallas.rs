//! Pallas: `program_id`, `num_programs` and `pallas_call`, run the way JAX's
//! interpret mode runs them.
//!
//! `pallas_call` pads every operand (inputs and outputs) up to a whole number
//! of blocks with the uninitialised value (NaN, integer minimum, false), then
//! visits the grid in row-major order. At each grid point every operand's
//! `index_map` gives block indices; the block is copied into a fresh `Ref`
//! (squeezed dimensions removed), the kernel runs on the `Ref`s, and every
//! block is copied back. Outputs start as zeros (JAX leaves them
//! uninitialised), or as their aliased input. The padding is cut off at the end,
//! so only the in-bounds part of an output block is ever returned.

use super::util::{gather, literal_array, next_index, same_storage, strides, uninit_storage};
use super::{call_closed, eval_with, Ctx, Value};
use crate::array::HostArray;
use crate::aval::{static_sizes, Aval, ShapedArray};
use crate::error::IrError;
use crate::jaxpr::Jaxpr;
use crate::literal::{Literal, Scalar};
use crate::primitive::{BlockDim, BlockMapping};
use std::sync::{Arc, Mutex};

/// `program_id[axis]` (or `num_programs[axis]` when `count`).
pub(crate) fn program_id(
    ctx: &Ctx,
    axis: usize,
    count: bool,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let name = if count { "num_programs" } else { "program_id" };
    if !args.is_empty() {
        return Err(IrError::ty(
            name,
            format!("takes no operands, got {}", args.len()),
        ));
    }
    let Some((ids, sizes)) = &ctx.grid else {
        return Err(IrError::Eval(format!(
            "{name} used outside a pallas_call kernel"
        )));
    };
    let v = if count {
        sizes.get(axis)
    } else {
        ids.get(axis)
    };
    let v = v.ok_or_else(|| {
        IrError::ty(
            name,
            format!(
                "axis {axis} is out of range for a grid of rank {}",
                sizes.len()
            ),
        )
    })?;
    let lit = Literal {
        value: Scalar::Int(*v as i64),
        dtype: crate::dtype::DType::I32,
    };
    Ok(vec![Value::Array(literal_array(&lit))])
}

/// Positions (in an array of `shape`) of the box at `start` of size `size`.
fn box_positions(shape: &[usize], start: &[usize], size: &[usize]) -> Vec<usize> {
    let st = strides(shape);
    let n: usize = size.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut o = vec![0; size.len()];
    loop {
        out.push(
            o.iter()
                .enumerate()
                .map(|(d, &i)| (start[d] + i) * st[d])
                .sum(),
        );
        if !next_index(&mut o, size) {
            return out;
        }
    }
}

/// Writes `src` (of shape `size`, any equal-size shape) into `dst` at `start`.
fn write_box(
    dst: &mut HostArray,
    start: &[usize],
    size: &[usize],
    src: &HostArray,
) -> Result<(), IrError> {
    let pos = box_positions(dst.shape(), start, size);
    if pos.len() != src.len() {
        return Err(IrError::Eval("pallas_call: a block changed size".into()));
    }
    same_storage!(dst.data_mut(), src.data(), (d, s) => {
        for (k, p) in pos.iter().enumerate() {
            d[*p] = s[k];
        }
    }, else return Err(IrError::Eval("pallas_call: a block changed dtype".into())));
    Ok(())
}

/// Reads the box at `start` of size `size` with shape `shape`.
fn read_box(
    src: &HostArray,
    start: &[usize],
    size: &[usize],
    shape: Vec<usize>,
) -> Result<HostArray, IrError> {
    let pos = box_positions(src.shape(), start, size);
    HostArray::new(shape, gather(src.data(), &pos))
}

/// One operand: its padded array and block geometry.
struct Operand {
    padded: HostArray,
    /// Block size per dim (1 for squeezed dims).
    block: Vec<usize>,
    /// The kernel's view of a block (squeezed dims removed).
    kernel_shape: Vec<usize>,
}

fn operand(k: usize, array: &HostArray, bm: &BlockMapping) -> Result<Operand, IrError> {
    let shape = array.shape();
    if bm.block_shape.len() != shape.len() {
        return Err(IrError::ty(
            "pallas_call",
            format!(
                "operand {k}: block shape of rank {} for an array of shape {shape:?}",
                bm.block_shape.len()
            ),
        ));
    }
    let mut block = Vec::new();
    let mut kernel_shape = Vec::new();
    for b in &bm.block_shape {
        match b {
            BlockDim::Blocked(0) => {
                return Err(IrError::ty(
                    "pallas_call",
                    format!("operand {k}: block size 0"),
                ))
            }
            BlockDim::Blocked(n) => {
                block.push(*n);
                kernel_shape.push(*n);
            }
            BlockDim::Squeezed => block.push(1),
        }
    }
    let padded_shape: Vec<usize> = shape
        .iter()
        .zip(&block)
        .map(|(&n, &b)| n.div_ceil(b) * b)
        .collect();
    let padded = if padded_shape == shape {
        array.clone()
    } else {
        let n = padded_shape.iter().product();
        let mut p = HostArray::new(padded_shape, uninit_storage(array.dtype(), n))?;
        write_box(&mut p, &vec![0; shape.len()], shape, array)?;
        p
    };
    Ok(Operand {
        padded,
        block,
        kernel_shape,
    })
}

fn static_shape_of(aval: &ShapedArray, what: &str) -> Result<Vec<usize>, IrError> {
    static_sizes(&aval.shape)
        .ok_or_else(|| IrError::ty("pallas_call", format!("{what} has a dynamic shape")))
}

/// Runs a `pallas_call` over its grid.
pub(crate) fn pallas_call(
    kernel: &Jaxpr,
    grid: &[usize],
    block_mappings: &[BlockMapping],
    out_avals: &[ShapedArray],
    input_output_aliases: &[(usize, usize)],
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let (n_in, n_out) = (args.len(), out_avals.len());
    if block_mappings.len() != n_in + n_out {
        return Err(IrError::ty(
            "pallas_call",
            format!(
                "{} block mappings for {n_in} inputs and {n_out} outputs",
                block_mappings.len()
            ),
        ));
    }
    if !kernel.constvars.is_empty() || kernel.invars.len() < n_in + n_out {
        return Err(IrError::ty(
            "pallas_call",
            format!(
                "the kernel takes {} refs for {n_in} inputs and {n_out} outputs",
                kernel.invars.len()
            ),
        ));
    }
    let mut arrays: Vec<HostArray> = Vec::with_capacity(n_in + n_out);
    for (k, v) in args.iter().enumerate() {
        match v {
            Value::Array(a) => arrays.push(a.clone()),
            Value::Ref(_) => return Err(IrError::ty("pallas_call", format!("input {k} is a Ref"))),
        }
    }
    for (k, aval) in out_avals.iter().enumerate() {
        arrays.push(HostArray::zeros(
            aval.dtype,
            &static_shape_of(aval, &format!("output {k}"))?,
        ));
    }
    for &(i, o) in input_output_aliases {
        let (Some(src), true) = (arrays.get(i).filter(|_| i < n_in).cloned(), o < n_out) else {
            return Err(IrError::ty(
                "pallas_call",
                format!("bad input_output_aliases pair ({i}, {o})"),
            ));
        };
        if src.aval() != arrays[n_in + o].aval() {
            return Err(IrError::ty(
                "pallas_call",
                format!("aliased input {i} and output {o} differ in type"),
            ));
        }
        arrays[n_in + o] = src;
    }
    for (k, (a, bm)) in arrays.iter().zip(block_mappings).enumerate() {
        let want = static_shape_of(&bm.array_aval, "a block mapping's array")?;
        if a.shape() != want.as_slice() || a.dtype() != bm.array_aval.dtype {
            return Err(IrError::ty(
                "pallas_call",
                format!(
                    "operand {k} is {}{:?}, its block mapping expects {}{want:?}",
                    a.dtype(),
                    a.shape(),
                    bm.array_aval.dtype
                ),
            ));
        }
    }
    let mut ops: Vec<Operand> = arrays
        .iter()
        .zip(block_mappings)
        .enumerate()
        .map(|(k, (a, bm))| operand(k, a, bm))
        .collect::<Result<_, _>>()?;
    // Scratch buffers: kernel refs beyond the operands, live for the whole grid.
    let mut scratch = Vec::new();
    for v in &kernel.invars[n_in + n_out..] {
        let aval = kernel
            .try_aval(*v)
            .ok_or_else(|| IrError::Invalid("kernel invar not in table".into()))?;
        let Aval::Ref(r) = aval else {
            return Err(IrError::ty(
                "pallas_call",
                "a kernel scratch input is not a Ref",
            ));
        };
        let shape = static_shape_of(&r.inner, "a scratch buffer")?;
        let n = shape.iter().product();
        scratch.push(Value::new_ref(HostArray::new(
            shape,
            uninit_storage(r.inner.dtype, n),
        )?));
    }
    let total: usize = grid.iter().product();
    let mut idx = vec![0usize; grid.len()];
    for _ in 0..total {
        let ctx = Ctx {
            grid: Some((idx.clone(), grid.to_vec())),
        };
        let mut starts = Vec::with_capacity(ops.len());
        let mut refs = Vec::with_capacity(ops.len() + scratch.len());
        for (k, (op, bm)) in ops.iter().zip(block_mappings).enumerate() {
            let start = block_start(k, op, bm, &idx)?;
            let block = read_box(&op.padded, &start, &op.block, op.kernel_shape.clone())?;
            refs.push(Arc::new(Mutex::new(block)));
            starts.push(start);
        }
        let mut kargs: Vec<Value> = refs.iter().cloned().map(Value::Ref).collect();
        kargs.extend(scratch.iter().cloned());
        eval_with(&ctx, kernel, &[], &kargs)?;
        for ((op, start), r) in ops.iter_mut().zip(&starts).zip(&refs) {
            let block = r
                .lock()
                .map_err(|_| IrError::Eval("pallas_call: a Ref's lock is poisoned".into()))?;
            write_box(&mut op.padded, start, &op.block, &block)?;
        }
        next_index(&mut idx, grid);
    }
    ops.drain(..n_in);
    ops.into_iter()
        .zip(&arrays[n_in..])
        .map(|(op, a)| {
            read_box(
                &op.padded,
                &vec![0; a.ndim()],
                a.shape(),
                a.shape().to_vec(),
            )
            .map(Value::Array)
        })
        .collect()
}

/// The element offset of operand `k`'s block at grid point `idx`, clamped
/// into the padded array like `dynamic_slice`.
fn block_start(
    k: usize,
    op: &Operand,
    bm: &BlockMapping,
    idx: &[usize],
) -> Result<Vec<usize>, IrError> {
    let jaxpr = &bm.index_map.jaxpr;
    if jaxpr.invars.len() != idx.len() {
        return Err(IrError::ty(
            "pallas_call",
            format!(
                "operand {k}: index_map takes {} inputs for a grid of rank {}",
                jaxpr.invars.len(),
                idx.len()
            ),
        ));
    }
    let mut iargs = Vec::with_capacity(idx.len());
    for (v, &i) in jaxpr.invars.iter().zip(idx) {
        let dtype = jaxpr
            .try_aval(*v)
            .map_or(crate::dtype::DType::I32, |a| a.dtype());
        let lit = Literal {
            value: Scalar::Int(i as i64),
            dtype,
        };
        iargs.push(Value::Array(literal_array(&lit)));
    }
    let outs = call_closed(&Ctx::default(), &bm.index_map, &iargs)?;
    if outs.len() != op.block.len() {
        return Err(IrError::ty(
            "pallas_call",
            format!(
                "operand {k}: index_map gave {} indices for rank {}",
                outs.len(),
                op.block.len()
            ),
        ));
    }
    let mut start = Vec::with_capacity(outs.len());
    for (d, v) in outs.iter().enumerate() {
        let Value::Array(a) = v else {
            return Err(IrError::ty("pallas_call", "index_map returned a Ref"));
        };
        let bi = super::util::scalar_i64(a, "pallas_call block index")?;
        let b = op.block[d] as i64;
        let max = op.padded.shape()[d] as i64 - b;
        start.push((bi * b).clamp(0, max.max(0)) as usize);
    }
    Ok(start)
}
