//! Running a `shard_map` SPMD, shared by every executor of its body (the
//! interpreter, the CPU backend): operands split by `in_specs`
//! ([`split_operands`]), one instance of the body per device of the mesh,
//! each on its own scoped thread with its device context
//! ([`run_instances`]), results assembled by `out_specs` ([`assemble`]; a
//! result replicated over an axis its spec does not name is taken from the
//! devices at coordinate 0 of that axis).
//!
//! The first failing instance poisons the communicator so that no other
//! instance waits for it, and its error is returned (not the "collective
//! aborted" errors it caused elsewhere).

use super::{with_context, Communicator, DeviceContext};
use crate::array::HostArray;
use crate::error::IrError;
use crate::interp::ops::concatenate;
use crate::primitive::{Mesh, PartitionSpec};
use std::ops::Range;
use std::sync::Arc;

/// Splits `x` into device `coords`' shard under `spec`.
fn shard_of(
    mesh: &Mesh,
    spec: &PartitionSpec,
    x: &HostArray,
    coords: &[usize],
) -> Result<HostArray, IrError> {
    let sizes = mesh
        .shard_sizes(spec, x.shape())
        .map_err(|e| IrError::Eval(format!("shard_map: {e}")))?;
    let start: Vec<usize> = (0..x.ndim())
        .map(|d| mesh.shard_index(spec, d, coords) * sizes[d])
        .collect();
    copy_box(x, &start, &sizes)
}

/// The box of `sizes` at `start` of `x` (inside it), copied as runs of
/// contiguous elements.
fn copy_box(x: &HostArray, start: &[usize], sizes: &[usize]) -> Result<HostArray, IrError> {
    let shape = x.shape();
    let rank = shape.len();
    if start.len() != rank
        || sizes.len() != rank
        || (0..rank).any(|d| start[d] + sizes[d] > shape[d])
    {
        return Err(IrError::Eval(format!(
            "shard_map: a box of {sizes:?} at {start:?} is not inside {shape:?}"
        )));
    }
    // Dimensions past `k` are whole: each run is contiguous.
    let k = (0..rank).rev().find(|&d| sizes[d] != shape[d]).unwrap_or(0);
    let mut strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let run = if rank == 0 { 1 } else { sizes[k] * strides[k] };
    let outer = &sizes[..k.min(rank)];
    let count: usize = outer.iter().product();
    let mut offsets = Vec::with_capacity(count);
    let mut idx = vec![0usize; outer.len()];
    for _ in 0..count {
        let base = if rank == 0 { 0 } else { start[k] * strides[k] };
        offsets.push(
            idx.iter()
                .enumerate()
                .fold(base, |acc, (d, i)| acc + (start[d] + i) * strides[d]),
        );
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    fn runs<T: Clone>(v: &[T], offsets: &[usize], run: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(offsets.len() * run);
        for &o in offsets {
            out.extend_from_slice(&v[o..o + run]);
        }
        out
    }
    let n: usize = sizes.iter().product();
    let data = if n == 0 {
        crate::array::Storage::zeros(x.dtype(), 0)
    } else {
        use crate::array::Storage as S;
        macro_rules! each {
            ($($var:ident),*) => {
                match x.data() {
                    $(S::$var(v) => S::$var(runs(v, &offsets, run)),)*
                }
            };
        }
        each!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, C64, C128, Key)
    };
    HostArray::new(sizes.to_vec(), data)
}

/// Each device's operands (by rank): `args` split by `in_specs`. Errors
/// name a bad mesh, a count mismatch and a shape that does not divide.
pub fn split_operands(
    mesh: &Mesh,
    in_specs: &[PartitionSpec],
    args: &[&HostArray],
) -> Result<Vec<Vec<HostArray>>, IrError> {
    split_ranks(mesh, in_specs, args, 0..mesh.size())
}

/// The operands of the devices `ranks` of `mesh` (as [`split_operands`]).
pub(crate) fn split_ranks(
    mesh: &Mesh,
    in_specs: &[PartitionSpec],
    args: &[&HostArray],
    ranks: Range<usize>,
) -> Result<Vec<Vec<HostArray>>, IrError> {
    mesh.validate()
        .map_err(|e| IrError::Eval(format!("shard_map: {e}")))?;
    if args.len() != in_specs.len() {
        return Err(IrError::Eval(format!(
            "shard_map: {} operands for {} in_specs",
            args.len(),
            in_specs.len()
        )));
    }
    ranks
        .map(|rank| {
            let coords = mesh.coords(rank);
            args.iter()
                .zip(in_specs)
                .map(|(x, spec)| shard_of(mesh, spec, x, &coords))
                .collect()
        })
        .collect()
}

/// Runs `body` once per device of `mesh` on `shards[rank]`, each instance
/// on its own scoped thread inside its device context (so collectives
/// find the mesh's communicator); returns each device's results by rank,
/// or the first error that is not a consequence of another's failure.
pub fn run_instances<F>(
    mesh: &Mesh,
    shards: Vec<Vec<HostArray>>,
    body: F,
) -> Result<Vec<Vec<HostArray>>, IrError>
where
    F: Fn(Vec<HostArray>) -> Result<Vec<HostArray>, IrError> + Sync,
{
    let n = mesh.size();
    let comm = Arc::new(Communicator::new(n, super::default_timeout()));
    run_ranks(mesh, 0..n, shards, &comm, body)
}

/// [`run_instances`] for the devices `ranks` of `mesh` (the ones this
/// process hosts), through `comm`.
pub(crate) fn run_ranks<F>(
    mesh: &Mesh,
    ranks: Range<usize>,
    shards: Vec<Vec<HostArray>>,
    comm: &Arc<Communicator>,
    body: F,
) -> Result<Vec<Vec<HostArray>>, IrError>
where
    F: Fn(Vec<HostArray>) -> Result<Vec<HostArray>, IrError> + Sync,
{
    let n = ranks.len();
    if shards.len() != n {
        return Err(IrError::Eval(format!(
            "shard_map: {} shards for {n} devices of the mesh {mesh}",
            shards.len()
        )));
    }
    let first = ranks.start;
    let body = &body;
    let results: Vec<Result<Vec<HostArray>, IrError>> = std::thread::scope(|s| {
        let handles: Vec<_> = shards
            .into_iter()
            .enumerate()
            .map(|(i, mine)| {
                let rank = first + i;
                let cx = DeviceContext {
                    mesh: mesh.clone(),
                    coords: mesh.coords(rank),
                    comm: comm.clone(),
                };
                let comm = comm.clone();
                std::thread::Builder::new()
                    .name(format!("jaxon-spmd-{rank}"))
                    .stack_size(64 << 20)
                    .spawn_scoped(s, move || {
                        let r = with_context(cx, || body(mine));
                        match &r {
                            Ok(_) => comm.finish(),
                            Err(e) => comm.poison(&e.to_string()),
                        }
                        r
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    comm.poison("a device's program panicked");
                    Err(IrError::Eval(
                        "shard_map: a device's program panicked".into(),
                    ))
                }),
                Err(e) => {
                    comm.poison("a device thread could not start");
                    Err(IrError::Eval(format!(
                        "shard_map: cannot start a thread: {e}"
                    )))
                }
            })
            .collect()
    });
    let mut outs = Vec::with_capacity(n);
    let mut first_err: Option<IrError> = None;
    let aborted = |e: &IrError| e.to_string().contains("collective aborted");
    for r in results {
        match r {
            Ok(v) => outs.push(v),
            Err(e) => match &first_err {
                None => first_err = Some(e),
                Some(f) if aborted(f) && !aborted(&e) => first_err = Some(e),
                Some(_) => {}
            },
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(outs),
    }
}

/// Builds each global result from the devices' results (by rank), by
/// `out_specs`.
pub fn assemble(
    mesh: &Mesh,
    out_specs: &[PartitionSpec],
    outs: Vec<Vec<HostArray>>,
) -> Result<Vec<HostArray>, IrError> {
    let mut per_result: Vec<Vec<(Vec<usize>, HostArray)>> = vec![Vec::new(); out_specs.len()];
    for (rank, out) in outs.into_iter().enumerate() {
        if out.len() != out_specs.len() {
            return Err(IrError::Eval(format!(
                "shard_map: device {rank} gave {} results for {} out_specs",
                out.len(),
                out_specs.len()
            )));
        }
        let coords = mesh.coords(rank);
        for ((spec, v), blocks) in out_specs.iter().zip(out).zip(per_result.iter_mut()) {
            let named = spec.all_axes();
            // Replicated over the axes the spec does not name: keep one copy.
            let canonical = mesh
                .axes
                .iter()
                .enumerate()
                .all(|(i, (a, _))| named.contains(&a.as_str()) || coords[i] == 0);
            if !canonical {
                continue;
            }
            let idx: Vec<usize> = (0..v.ndim())
                .map(|d| mesh.shard_index(spec, d, &coords))
                .collect();
            blocks.push((idx, v));
        }
    }
    out_specs
        .iter()
        .zip(per_result)
        .map(|(spec, blocks)| place_blocks(mesh, spec, blocks))
        .collect()
}

/// Concatenates blocks indexed by their shard index along each dimension.
fn place_blocks(
    mesh: &Mesh,
    spec: &PartitionSpec,
    mut blocks: Vec<(Vec<usize>, HostArray)>,
) -> Result<HostArray, IrError> {
    let rank = blocks.first().map_or(0, |(_, b)| b.ndim());
    // Concatenate from the last dimension to the first: group blocks that
    // agree on every earlier index.
    for d in (0..rank).rev() {
        let parts = mesh
            .dim_parts(spec, d)
            .map_err(|e| IrError::Eval(format!("shard_map: {e}")))?;
        if parts == 1 {
            for (idx, _) in blocks.iter_mut() {
                idx.truncate(d);
            }
            continue;
        }
        blocks.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(Vec<usize>, HostArray)> = Vec::new();
        for chunk in blocks.chunks(parts) {
            let arrays: Vec<HostArray> = chunk.iter().map(|(_, a)| a.clone()).collect();
            let prefix = chunk[0].0[..d].to_vec();
            merged.push((prefix, concatenate(&arrays, d)?));
        }
        blocks = merged;
    }
    match blocks.len() {
        1 => Ok(blocks.remove(0).1),
        n => Err(IrError::Eval(format!(
            "shard_map: {n} blocks left assembling a result with spec {spec}"
        ))),
    }
}

/// A whole `shard_map` on host arrays: split, run `body` per device,
/// assemble.
pub fn shard_map<F>(
    mesh: &Mesh,
    in_specs: &[PartitionSpec],
    out_specs: &[PartitionSpec],
    args: &[&HostArray],
    body: F,
) -> Result<Vec<HostArray>, IrError>
where
    F: Fn(Vec<HostArray>) -> Result<Vec<HostArray>, IrError> + Sync,
{
    let shards = split_operands(mesh, in_specs, args)?;
    let outs = run_instances(mesh, shards, body)?;
    assemble(mesh, out_specs, outs)
}
