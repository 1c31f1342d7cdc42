//! `pallas_call` as one kernel launch: one thread block per program.
//!
//! - **Operands.** Inputs are read in place; an input the kernel writes is
//!   copied first (no step writes an input buffer). Outputs start as zeros,
//!   or as a copy of their aliased input, as in the interpreter.
//! - **Grid.** A grid axis along which some output's block does not move
//!   (its `index_map` ignores the axis) is *sequential*: programs along it
//!   revisit the block (accumulators, atomics), so they run in order inside
//!   one thread block. The other axes are *parallel*: their programs are
//!   spread over at most [`MAX_BLOCKS`] thread blocks (a block loops over
//!   its share). Row-major grid order is kept among the programs that share
//!   a block.
//! - **Blocks.** Each program evaluates every `index_map` on its ids (in the
//!   kernel, as uniform scalars), clamps the block's origin into the padded
//!   array like the interpreter, and hands the kernel windows of the
//!   operands in global memory ([`RefView`]); a window over the edge masks
//!   the part outside the array.
//! - **Memory.** The body's array values take shared memory when one
//!   program's values fit [`SHARED_BUDGET`]; else the largest dtype pools
//!   move to a slot of global scratch per thread block until the rest fits
//!   (bf16 tiles stay shared beside f32 accumulators in scratch), else all
//!   do; scratch refs (kernel inputs past the operands) are
//!   regions too, filled with the uninitialised value once per block.

use super::super::kernel::{copy_into, finish, i64c, materialize};
use super::super::plan::{BufId, KArg, Step};
use super::super::{atom_type, bind_outputs, Ctx, Env, Value};
use super::block::{uninit, ArgSlot, BVal, Block, Placement, SHARED_BUDGET, THREADS};
use super::refs::RefView;
use crate::kir::{Const, Expr, LaunchDims, Space, Stmt};
use jaxon_ir::primitive::{BlockDim, PallasCallParams, Primitive};
use jaxon_ir::{Atom, Aval, DType, Eqn, IrError, Jaxpr, Literal};
use std::collections::HashSet;

/// The most thread blocks a `pallas_call` launches; programs beyond are
/// looped over.
pub(crate) const MAX_BLOCKS: usize = 1024;

/// Lowers a `pallas_call` equation.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &PallasCallParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (n_in, n_out) = (eqn.inputs.len(), p.out_avals.len());
    let bad = |m: String| IrError::ty("pallas_call", m);
    if p.block_mappings.len() != n_in + n_out {
        return Err(bad(format!(
            "{} block mappings for {n_in} inputs and {n_out} outputs",
            p.block_mappings.len()
        )));
    }
    if !p.kernel.constvars.is_empty() || p.kernel.invars.len() < n_in + n_out {
        return Err(bad(format!(
            "the kernel takes {} refs for {n_in} inputs and {n_out} outputs",
            p.kernel.invars.len()
        )));
    }
    let written = written_invars(&p.kernel);
    let mut bufs = Vec::with_capacity(n_in + n_out);
    for (k, a) in eqn.inputs.iter().enumerate() {
        let (d, shape) = atom_type(jaxpr, a)?;
        let len: usize = shape.iter().product();
        let b = materialize(ctx, steps, env.atom(a)?, d, len)?;
        let b = if written[k] {
            let t = ctx.alloc(d, &shape)?;
            copy_into(ctx, steps, Value::Buf(b), t, len)?;
            t
        } else {
            b
        };
        bufs.push((b, d, shape));
    }
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    for (o, (buf, d, shape)) in outs.iter().enumerate() {
        let len: usize = shape.iter().product();
        let init = match p.input_output_aliases.iter().find(|(_, oo)| *oo == o) {
            Some(&(i, _)) => {
                let (src, sd, ss) = bufs
                    .get(i)
                    .cloned()
                    .ok_or_else(|| bad(format!("bad input_output_aliases pair ({i}, {o})")))?;
                if sd != *d || ss != *shape {
                    return Err(bad(format!(
                        "aliased input {i} and output {o} differ in type"
                    )));
                }
                Value::Buf(src)
            }
            None => Value::Lit(Literal::new(0.0, *d)),
        };
        copy_into(ctx, steps, init, *buf, len)?;
        bufs.push((*buf, *d, shape.clone()));
    }
    for (k, ((_, d, shape), bm)) in bufs.iter().zip(&p.block_mappings).enumerate() {
        let want = bm.array_aval.static_sizes();
        if want.as_deref() != Some(shape.as_slice()) || bm.array_aval.dtype != *d {
            return Err(bad(format!(
                "operand {k} is {d}{shape:?}, its block mapping expects {}{want:?}",
                bm.array_aval.dtype
            )));
        }
    }
    let name = ctx.name(p.name.as_deref().unwrap_or("pallas_call"));
    let mut placement = Placement::Shared;
    loop {
        match build(ctx, p, &bufs, n_in, &written, &name, placement.clone())? {
            Built::TooBig(pools) => placement = wider(&placement, pools),
            Built::Empty => return Ok(()),
            Built::Launch(step) => {
                steps.push(step);
                return Ok(());
            }
        }
    }
}

/// The next placement to try after `placement` overflowed shared memory
/// with the pools `pools` (dtype, bytes): from all-shared, the largest
/// pools move to global scratch until the rest fits; then everything.
fn wider(placement: &Placement, mut pools: Vec<(DType, usize, bool)>) -> Placement {
    if *placement != Placement::Shared {
        return Placement::Global;
    }
    pools.sort_by_key(|&(_, bytes, _)| std::cmp::Reverse(bytes));
    let mut left: usize = pools.iter().map(|p| p.1).sum();
    let mut global = Vec::new();
    for &(d, bytes, _) in &pools {
        if left <= SHARED_BUDGET {
            break;
        }
        global.push(d);
        left -= bytes;
    }
    if global.len() == pools.len() {
        Placement::Global
    } else {
        Placement::Split(global)
    }
}

/// What [`build`] made.
enum Built {
    /// The grid has no programs: nothing to launch.
    Empty,
    /// The shared pools overflow shared memory: build again with more
    /// pools in global scratch. The pools' dtypes, bytes and placements.
    TooBig(Vec<(DType, usize, bool)>),
    /// The launch of the kernel.
    Launch(Step),
}

/// Builds the kernel with its values in `placement`.
fn build(
    ctx: &mut Ctx,
    p: &PallasCallParams,
    bufs: &[(BufId, DType, Vec<usize>)],
    n_in: usize,
    written: &[bool],
    name: &str,
    placement: Placement,
) -> Result<Built, IrError> {
    let grid = &p.grid;
    let seq = sequential_axes(p, n_in);
    let par: Vec<usize> = (0..grid.len()).filter(|a| !seq.contains(a)).collect();
    let n_par: usize = par.iter().map(|&a| grid[a]).product();
    if n_par == 0 || seq.iter().any(|&a| grid[a] == 0) {
        return Ok(Built::Empty);
    }
    let blocks = n_par.min(MAX_BLOCKS);
    let mut b = Block::new(ctx, name, placement);
    b.grid = grid.clone();
    // Scratch refs, once per thread block.
    let mut scratch = Vec::new();
    for v in &p.kernel.invars[bufs.len()..] {
        let Some(Aval::Ref(r)) = p.kernel.try_aval(*v) else {
            return Err(IrError::ty(
                "pallas_call",
                "a kernel scratch input is not a Ref",
            ));
        };
        let shape = r
            .inner
            .static_sizes()
            .ok_or_else(|| super::block::in_kernel("a dynamic scratch shape"))?;
        let d = r.inner.dtype;
        let reg = b.alloc(d, &shape)?;
        let fill = reg.clone();
        b.each(reg.len(), move |b, e| {
            b.k.store(fill.space, fill.base + e, vec![uninit(d)], None);
            Ok(())
        })?;
        scratch.push(BVal::Ref(RefView::whole(reg.space, reg.base, d, &shape)));
    }
    // for pp = blockIdx.x; pp < n_par; pp += gridDim.x
    let pp = b.k.var("pp", DType::I64);
    b.k.begin_body();
    let mut ids = vec![i64c(0); grid.len()];
    let rem = b.k.let_("rem", DType::I64, Expr::var(pp));
    for &a in par.iter().rev() {
        let g = grid[a] as i64;
        let id = b.k.let_("pid", DType::I64, Expr::var(rem) % i64c(g));
        b.k.assign(rem, Expr::var(rem) / i64c(g));
        ids[a] = Expr::var(id);
    }
    let seq_vars: Vec<_> = seq.iter().map(|_| b.k.var("sid", DType::I64)).collect();
    for (&a, v) in seq.iter().zip(&seq_vars) {
        ids[a] = Expr::var(*v);
        b.k.begin_body();
    }
    b.ids = ids.clone();
    let res = program(&mut b, p, bufs, n_in, written, &scratch);
    for (&a, v) in seq.iter().zip(&seq_vars).rev() {
        let body = b.k.end_body();
        b.k.push(Stmt::For {
            var: *v,
            start: i64c(0),
            end: i64c(grid[a] as i64),
            step: i64c(1),
            body,
        });
    }
    let body = b.k.end_body();
    res?;
    b.k.push(Stmt::For {
        var: pp,
        start: Expr::block_x().cast(DType::I64),
        end: i64c(n_par as i64),
        step: Expr::grid_dim_x().cast(DType::I64),
        body,
    });
    let pools = b.pool_bytes();
    let shared: usize = pools.iter().filter(|p| p.2).map(|p| p.1).sum();
    if shared > SHARED_BUDGET {
        return Ok(Built::TooBig(pools));
    }
    let (mut k, params, pools) = b.finish();
    for pool in &pools {
        if let Some(s) = pool.shared {
            let len = u32::try_from(pool.len.max(1))
                .map_err(|_| IrError::Invalid("pallas_call: shared pool too large".into()))?;
            k.set_shared_len(s, len);
        }
    }
    let kernel = finish(k)?;
    let mut args = Vec::with_capacity(params.len());
    for slot in params {
        args.push(match slot {
            ArgSlot::Buf(b) => KArg::Buffer(b),
            ArgSlot::Scratch(i) => {
                let pool = &pools[i];
                let len = pool.len.max(1).checked_mul(blocks).ok_or_else(|| {
                    IrError::Invalid("pallas_call: scratch size overflows".into())
                })?;
                KArg::Buffer(ctx.alloc(pool.dtype, &[len])?)
            }
            ArgSlot::Slot(i) => KArg::Scalar(Const::int(DType::I64, pools[i].len as i64)),
        });
    }
    let id = ctx.kernel(kernel);
    Ok(Built::Launch(Step::Launch {
        kernel: id,
        dims: LaunchDims::linear(blocks as u32, THREADS),
        args,
    }))
}

/// One program: the operands' windows, then the kernel body.
fn program(
    b: &mut Block,
    p: &PallasCallParams,
    bufs: &[(BufId, DType, Vec<usize>)],
    n_in: usize,
    written: &[bool],
    scratch: &[BVal],
) -> Result<(), IrError> {
    let ids: Vec<BVal> = b
        .ids
        .clone()
        .into_iter()
        .map(|e| BVal::Scalar(e.cast(DType::I32), DType::I32))
        .collect();
    let mut refs = Vec::with_capacity(bufs.len() + scratch.len());
    for (k, ((buf, d, shape), bm)) in bufs.iter().zip(&p.block_mappings).enumerate() {
        if bm.block_shape.len() != shape.len() {
            return Err(IrError::ty(
                "pallas_call",
                format!(
                    "operand {k}: block shape of rank {} for shape {shape:?}",
                    bm.block_shape.len()
                ),
            ));
        }
        let idx = b.run(&bm.index_map.jaxpr, &bm.index_map.consts, ids.clone())?;
        if idx.len() != shape.len() {
            return Err(IrError::ty(
                "pallas_call",
                format!(
                    "operand {k}: index_map gave {} indices for rank {}",
                    idx.len(),
                    shape.len()
                ),
            ));
        }
        let mut origin = Vec::new();
        let mut dims = Vec::new();
        let mut kshape = Vec::new();
        let mut check = Vec::new();
        for (dd, (bd, i)) in bm.block_shape.iter().zip(&idx).enumerate() {
            let blk = match bd {
                BlockDim::Blocked(0) => {
                    return Err(IrError::ty(
                        "pallas_call",
                        format!("operand {k}: block size 0"),
                    ))
                }
                BlockDim::Blocked(n) => {
                    dims.push(dd);
                    kshape.push(*n);
                    *n
                }
                BlockDim::Squeezed => 1,
            };
            let BVal::Scalar(bi, _) = i else {
                return Err(IrError::ty(
                    "pallas_call",
                    "index_map returned a non-scalar",
                ));
            };
            let n = shape[dd];
            let padded = n.div_ceil(blk) * blk;
            let hi = padded.saturating_sub(blk) as i64;
            let start = (bi.clone().cast(DType::I64) * i64c(blk as i64))
                .max(i64c(0))
                .min(i64c(hi));
            origin.push(Expr::var(b.k.let_("origin", DType::I64, start)));
            check.push(n % blk != 0);
        }
        let writable = k >= n_in || written[k];
        let param = b.buffer(*buf, writable)?;
        refs.push(BVal::Ref(RefView {
            space: Space::Global(param),
            base: i64c(0),
            dtype: *d,
            shape: kshape,
            dims,
            origin,
            array: shape.clone(),
            check,
        }));
    }
    refs.extend(scratch.iter().cloned());
    b.run(&p.kernel, &[], refs)?;
    b.k.barrier();
    Ok(())
}

/// The grid axes (of size > 1) along which some output's block index does
/// not change: programs along them revisit that block.
fn sequential_axes(p: &PallasCallParams, n_in: usize) -> Vec<usize> {
    let mut seq = Vec::new();
    for bm in p.block_mappings.iter().skip(n_in) {
        let used = used_inputs(&bm.index_map.jaxpr);
        for (a, &g) in p.grid.iter().enumerate() {
            if g > 1 && !used.get(a).copied().unwrap_or(false) && !seq.contains(&a) {
                seq.push(a);
            }
        }
    }
    seq.sort_unstable();
    seq
}

/// Per input of `j`: whether some output depends on it.
fn used_inputs(j: &Jaxpr) -> Vec<bool> {
    let mut live: HashSet<jaxon_ir::Var> = j
        .outvars
        .iter()
        .filter_map(|a| match a {
            Atom::Var(v) => Some(*v),
            Atom::Lit(_) => None,
        })
        .collect();
    for e in j.eqns.iter().rev() {
        let needed = e.outputs.iter().any(|b| match b {
            jaxon_ir::Binder::Var(v) => live.contains(v),
            jaxon_ir::Binder::Drop(_) => false,
        });
        if needed {
            for a in &e.inputs {
                if let Atom::Var(v) = a {
                    live.insert(*v);
                }
            }
        }
    }
    j.invars.iter().map(|v| live.contains(v)).collect()
}

/// Per input of the kernel: whether it may be written (directly, or passed
/// to a nested jaxpr that writes some ref).
fn written_invars(j: &Jaxpr) -> Vec<bool> {
    fn writes(j: &Jaxpr) -> bool {
        j.eqns.iter().any(|e| {
            e.primitive.writes_refs() || e.primitive.sub_jaxprs().iter().any(|s| writes(s))
        })
    }
    let mut w: HashSet<jaxon_ir::Var> = HashSet::new();
    for e in &j.eqns {
        let direct = e.primitive.writes_refs();
        let nested = !matches!(e.primitive, Primitive::Pallas(_))
            && e.primitive.sub_jaxprs().iter().any(|s| writes(s));
        let targets: Vec<&Atom> = if direct {
            e.inputs.iter().take(1).collect()
        } else if nested {
            e.inputs.iter().collect()
        } else {
            Vec::new()
        };
        for a in targets {
            if let Atom::Var(v) = a {
                w.insert(*v);
            }
        }
    }
    j.invars.iter().map(|v| w.contains(v)).collect()
}
