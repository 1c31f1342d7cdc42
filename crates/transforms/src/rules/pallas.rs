//! Rules of the Pallas family (`pallas_call` and the kernel primitives):
//! jvp, transpose and batching, side by side, at the jaxpr level (they
//! need only `ir`).
//!
//! Jvp: `pallas_call` runs one kernel computing primals and tangents, as
//! JAX's rule builds it: the kernel's jvp (`jvp_jaxpr` over its `Ref`s)
//! takes primal refs, then tangent refs; `pallas_call` wants inputs then
//! outputs, so the jvp kernel's invars are reordered to `(primal inputs,
//! tangent inputs, primal outputs, tangent outputs)` and each tangent
//! operand reuses its primal's block mapping. The masked `load`/`store`
//! read and write the tangent ref at the same indices.
//!
//! Transpose: reverse mode is not derived (the tangent kernel would have
//! to be transposed, turning disjoint parallel writes into overlapping
//! ones). A `pallas_call` under `linearize`/`grad` fails with
//! [`NO_REVERSE`]; the way to differentiate a kernel in reverse is
//! `custom_vjp` with a backward kernel.
//!
//! Batching: the mapped axis becomes a new *leading* grid axis. Each
//! batched operand's block mapping squeezes the batch dimension out of its
//! block (block size `None` at the batch dimension) and its index map
//! returns the new grid index there; unbatched operands ignore the new
//! grid index. The kernel is unchanged except that `program_id` and
//! `num_programs` still address the user's axes (shifted by one).

use super::control::needs_split;
use super::state::value_pos;
use super::{jvp_unsupported, no_tangent, transpose_unsupported, BatchOuts, Cts, JvpOuts};
use crate::batch::to_front;
use crate::transpose::LinArg;
use crate::util::{has_tangent, zeros_like};
use jaxon_ir::primitive::{BlockDim, BlockMapping};
use jaxon_ir::primitive::{
    LoadParams, NumProgramsParams, Pallas, PallasCallParams, ProgramIdParams, StoreParams,
};
use jaxon_ir::{Atom, Aval, ClosedJaxpr, DType, Dim, Jaxpr, Primitive, ShapedArray};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, Array};
use std::sync::Arc;

/// The jvp rules of the family.
pub(crate) fn jvp(k: &Pallas, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match k {
        Pallas::Load(LoadParams { has_other, .. }) => load_jvp(p, *has_other, x, t),
        Pallas::Store(StoreParams { indexers, .. }) => store_jvp(p, indexers, x, t),
        Pallas::PallasCall(pp) => pallas_call_jvp(pp, p, x, t),
        Pallas::ProgramId(_) | Pallas::NumPrograms(_) => no_tangent(p, x),
        Pallas::AtomicRmw(_) | Pallas::AtomicCas(_) => jvp_unsupported(p),
    }
}

/// The transpose rules of the family.
pub(crate) fn transpose(
    k: &Pallas,
    p: &Primitive,
    _args: &[LinArg],
    _cts: &[Option<Array>],
) -> Result<Cts> {
    match k {
        Pallas::PallasCall(_) => Err(Error::Unsupported(NO_REVERSE.into())),
        Pallas::ProgramId(_)
        | Pallas::NumPrograms(_)
        | Pallas::Load(_)
        | Pallas::Store(_)
        | Pallas::AtomicRmw(_)
        | Pallas::AtomicCas(_) => transpose_unsupported(p),
    }
}

/// The batching rules of the family.
pub(crate) fn batch(
    k: &Pallas,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match k {
        Pallas::PallasCall(pp) => pallas_call_batch(pp, x, d, n),
        Pallas::ProgramId(_) | Pallas::NumPrograms(_) => Err(Error::Unsupported(format!(
            "vmap of `{}` with a batched dynamic size is not supported",
            p.name()
        ))),
        Pallas::Load(_) | Pallas::Store(_) | Pallas::AtomicRmw(_) | Pallas::AtomicCas(_) => {
            Err(Error::Unsupported(format!(
                "vmap of the state/Pallas primitive `{}` is not implemented yet",
                p.name()
            )))
        }
    }
}

// ---------------------------------------------------------------- jvp --

/// The error of reverse-mode differentiation through a `pallas_call`.
pub(crate) const NO_REVERSE: &str = "reverse-mode differentiation (grad, vjp, linearize) of \
     `pallas_call` is not supported: a kernel's reads and writes do not transpose into an \
     efficient kernel. Wrap the pallas_call in `custom_vjp` and give it a backward pass (which \
     can itself be a pallas_call); forward mode (jvp) works without one";

/// The jvp of `pallas_call`.
fn pallas_call_jvp(
    pp: &PallasCallParams,
    p: &Primitive,
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        name,
        interpret,
        debug,
        input_output_aliases,
    } = pp;
    if t.iter().all(Option::is_none) {
        let outs = bind(p, x)?;
        let n = outs.len();
        return Ok((outs, vec![None; n]));
    }
    if needs_split(x, t)? {
        return Err(Error::Unsupported(NO_REVERSE.into()));
    }
    if !input_output_aliases.is_empty() {
        return Err(Error::Unsupported(
            "jvp of a pallas_call with input_output_aliases".into(),
        ));
    }
    let n_in = x.len();
    if block_mappings.len() != n_in + out_avals.len() {
        return Err(Error::InvalidArgument(format!(
            "pallas_call: {} block mappings for {n_in} inputs and {} outputs",
            block_mappings.len(),
            out_avals.len()
        )));
    }
    let nz_in: Vec<bool> = t
        .iter()
        .zip(x)
        .map(|(ti, xi)| ti.is_some() && has_tangent(xi.dtype()))
        .collect();
    let nz_out: Vec<bool> = out_avals.iter().map(|a| has_tangent(a.dtype)).collect();
    let mut nonzero = nz_in.clone();
    nonzero.extend_from_slice(&nz_out);
    let closed = ClosedJaxpr {
        jaxpr: kernel.clone(),
        consts: Arc::from(Vec::new()),
    };
    let (jvp_k, _) = crate::jvp::jvp_jaxpr(&closed, &nonzero, &[])?;
    if !jvp_k.consts.is_empty() {
        return Err(Error::Unsupported(
            "jvp of a pallas_call whose tangent kernel captures constants".into(),
        ));
    }
    let n_out = out_avals.len();
    let n_tin = nz_in.iter().filter(|b| **b).count();
    let mut k = (*jvp_k.jaxpr).clone();
    let inv = k.invars.clone();
    let (p_in, rest) = inv.split_at(n_in);
    let (p_out, rest) = rest.split_at(n_out);
    let (t_in, t_out) = rest.split_at(n_tin);
    k.invars = [p_in, t_in, p_out, t_out].concat();

    let pick = |bms: &[BlockMapping], nz: &[bool]| -> Vec<BlockMapping> {
        bms.iter()
            .zip(nz)
            .filter(|(_, z)| **z)
            .map(|(b, _)| b.clone())
            .collect()
    };
    let (in_bms, out_bms) = block_mappings.split_at(n_in);
    let mut bms = in_bms.to_vec();
    bms.extend(pick(in_bms, &nz_in));
    bms.extend_from_slice(out_bms);
    bms.extend(pick(out_bms, &nz_out));
    let mut avals: Vec<ShapedArray> = out_avals.clone();
    avals.extend(
        out_avals
            .iter()
            .zip(&nz_out)
            .filter(|(_, z)| **z)
            .map(|(a, _)| a.clone()),
    );
    let q = Primitive::from(PallasCallParams {
        kernel: Arc::new(k),
        grid: grid.clone(),
        block_mappings: bms,
        out_avals: avals,
        name: name.clone(),
        interpret: *interpret,
        debug: *debug,
        input_output_aliases: Vec::new(),
    });
    let mut args = x.to_vec();
    for (ti, z) in t.iter().zip(&nz_in) {
        if let (Some(ti), true) = (ti, z) {
            args.push(ti.clone());
        }
    }
    let mut outs = bind(&q, &args)?;
    let tangents = outs.split_off(n_out);
    let mut it = tangents.into_iter();
    let t_outs = nz_out
        .iter()
        .map(|z| if *z { it.next() } else { None })
        .collect();
    Ok((outs, t_outs))
}

/// A tangent written into a ref that has none.
fn no_tangent_ref(p: &Primitive) -> Error {
    Error::Unsupported(format!(
        "jvp of `{}`: a value with a non-zero tangent is written into a Ref without a \
         tangent Ref",
        p.name()
    ))
}

/// The jvp of the masked `load` (`x[0]` is the ref).
fn load_jvp(p: &Primitive, has_other: bool, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let out = bind(p, x)?;
    let Some(tr) = &t[0] else {
        if has_other && t.last().is_some_and(Option::is_some) {
            return Err(Error::Unsupported(
                "jvp of a masked `load` whose `other` has a tangent but whose Ref has none".into(),
            ));
        }
        return Ok((out, vec![None]));
    };
    let mut ops = vec![tr.clone()];
    let last = x.len() - 1;
    for (i, xi) in x.iter().enumerate().skip(1) {
        if has_other && i == last {
            ops.push(match &t[i] {
                Some(o) => o.clone(),
                None => zeros_like(xi)?,
            });
        } else {
            ops.push(xi.clone());
        }
    }
    let dt = bind(p, &ops)?.remove(0);
    Ok((out, vec![Some(dt)]))
}

/// The jvp of the masked `store` (`x[0]` is the ref).
fn store_jvp(
    p: &Primitive,
    indexers: &[jaxon_ir::primitive::Indexer],
    x: &[Array],
    t: &[Option<Array>],
) -> Result<JvpOuts> {
    let out = bind(p, x)?;
    let k = value_pos(indexers);
    // The old values' tangents are the tangent ref's old values.
    let tangents = match (&t[0], &t[k]) {
        (Some(tr), vt) => {
            let mut ops = x.to_vec();
            ops[0] = tr.clone();
            ops[k] = match vt {
                Some(v) => v.clone(),
                None => zeros_like(&x[k])?,
            };
            bind(p, &ops)?.into_iter().map(Some).collect()
        }
        (None, Some(_)) => return Err(no_tangent_ref(p)),
        (None, None) => vec![None; out.len()],
    };
    Ok((out, tangents))
}

// -------------------------------------------------------------- batch --

/// `program_id`/`num_programs` axes shifted by `by`, in `j` and every jaxpr
/// nested in it.
fn shift_program_axes(j: &Jaxpr, by: usize) -> Jaxpr {
    let mut out = j.clone();
    for e in &mut out.eqns {
        e.primitive = match &e.primitive {
            Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis })) => {
                ProgramIdParams { axis: axis + by }.into()
            }
            Primitive::Pallas(Pallas::NumPrograms(NumProgramsParams { axis })) => {
                NumProgramsParams { axis: axis + by }.into()
            }
            // Every other equation: only its nested jaxprs can hold them.
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
fn pallas_call_batch(
    pp: &PallasCallParams,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        name,
        interpret,
        debug,
        input_output_aliases,
    } = pp;
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
    let q = Primitive::from(PallasCallParams {
        kernel: Arc::new(shift_program_axes(kernel, 1)),
        grid: new_grid,
        block_mappings: mappings,
        out_avals: new_out_avals,
        name: name.clone(),
        interpret: *interpret,
        debug: *debug,
        input_output_aliases: input_output_aliases.clone(),
    });
    let outs = bind(&q, &args)?;
    let out_dims = vec![Some(0); outs.len()];
    Ok((outs, out_dims))
}
