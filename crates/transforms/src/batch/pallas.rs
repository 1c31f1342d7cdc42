//! vmap of `pallas_call`: the mapped axis becomes a new *leading* grid
//! axis. Each batched operand's block mapping squeezes the batch dimension
//! out of its block (block size `None` at the batch dimension) and its
//! index map returns the new grid index there; unbatched operands ignore
//! the new grid index. The kernel is unchanged except that `program_id` and
//! `num_programs` still address the user's axes (shifted by one).

use super::rules::Outs;
use super::to_front;
use jaxon_ir::primitive::{BlockDim, BlockMapping};
use jaxon_ir::primitive::{NumProgramsParams, Pallas, PallasCallParams, ProgramIdParams};
use jaxon_ir::{Atom, Aval, ClosedJaxpr, DType, Dim, Jaxpr, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, Array};
use std::sync::Arc;

/// `program_id`/`num_programs` axes shifted by `by`, in `j` and every jaxpr
/// nested in it.
pub(crate) fn shift_program_axes(j: &Jaxpr, by: usize) -> Jaxpr {
    let mut out = j.clone();
    for e in &mut out.eqns {
        e.primitive = match &e.primitive {
            Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis })) => {
                Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: axis + by }))
            }
            Primitive::Pallas(Pallas::NumPrograms(NumProgramsParams { axis })) => {
                Primitive::Pallas(Pallas::NumPrograms(NumProgramsParams { axis: axis + by }))
            }
            p => p.map_sub_jaxprs(&mut |sub| shift_program_axes(sub, by)),
        };
    }
    out
}

/// The index map taking a new leading grid index; with `dim`, the new
/// index is the block index of dimension `dim`.
fn batched_index_map(m: &ClosedJaxpr, dim: Option<usize>) -> ClosedJaxpr {
    let mut j = (*m.jaxpr).clone();
    let v = j.new_var(Aval::Array(ShapedArray::scalar(DType::I32)));
    j.invars.insert(0, v);
    if let Some(d) = dim {
        j.outvars.insert(d, Atom::Var(v));
    }
    ClosedJaxpr {
        jaxpr: Arc::new(j),
        consts: m.consts.clone(),
    }
}

fn batched_mapping(bm: &BlockMapping, dim: Option<usize>, n: usize) -> BlockMapping {
    let mut out = BlockMapping {
        block_shape: bm.block_shape.clone(),
        index_map: batched_index_map(&bm.index_map, dim),
        array_aval: bm.array_aval.clone(),
    };
    if let Some(d) = dim {
        out.block_shape.insert(d, BlockDim::Squeezed);
        out.array_aval.shape.insert(d, Dim::Const(n));
    }
    out
}

/// The batching rule of `pallas_call`.
pub(crate) fn pallas_call(
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<Outs> {
    let Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        name,
        interpret,
        debug,
        input_output_aliases,
    })) = p
    else {
        return Err(Error::InvalidArgument(format!(
            "pallas_call batching rule applied to `{}`",
            p.name()
        )));
    };
    let n_in = x.len();
    if block_mappings.len() != n_in + out_avals.len() {
        return Err(Error::InvalidArgument(format!(
            "pallas_call: {} block mappings for {n_in} inputs and {} outputs",
            block_mappings.len(),
            out_avals.len()
        )));
    }
    let mut args = x.to_vec();
    let mut dims = d.to_vec();
    // An aliased input becomes its (batched, leading) output, so it must be
    // batched at the front too.
    for &(i, _) in input_output_aliases {
        if i < n_in && dims[i] != Some(0) {
            args[i] = to_front(&args[i], dims[i], n)?;
            dims[i] = Some(0);
        }
    }
    let mut mappings: Vec<BlockMapping> = block_mappings[..n_in]
        .iter()
        .zip(&dims)
        .map(|(bm, dim)| batched_mapping(bm, *dim, n))
        .collect();
    mappings.extend(
        block_mappings[n_in..]
            .iter()
            .map(|bm| batched_mapping(bm, Some(0), n)),
    );
    let new_out_avals: Vec<ShapedArray> = out_avals
        .iter()
        .map(|a| {
            let mut a = a.clone();
            a.shape.insert(0, Dim::Const(n));
            a
        })
        .collect();
    let mut new_grid = vec![n];
    new_grid.extend_from_slice(grid);
    let q = Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
        kernel: Arc::new(shift_program_axes(kernel, 1)),
        grid: new_grid,
        block_mappings: mappings,
        out_avals: new_out_avals,
        name: name.clone(),
        interpret: *interpret,
        debug: *debug,
        input_output_aliases: input_output_aliases.clone(),
    }));
    let outs = bind(&q, &args)?;
    let out_dims = vec![Some(0); outs.len()];
    Ok((outs, out_dims))
}
