//! `pallas_call` on the CPU: the kernel is compiled once, with the
//! backend's own pipeline, in discharged form (each block `Ref` is an array
//! argument; the final contents of the refs the kernel writes are its
//! results), and run once per grid point in JAX's order (row-major, last
//! grid axis fastest). The index maps are evaluated when compiling, so a
//! run only copies blocks: in, with partial edge blocks padded by the
//! uninitialised value (NaN, integer minimum, false) as interpret mode
//! does, and back, the padding discarded at the end. `program_id` and
//! `num_programs` read the grid point of the running program (a
//! thread-local set around each kernel call), so they work at any nesting
//! depth of the kernel.
//!
//! When only outputs are written and every output's index map sends
//! distinct grid points to distinct blocks, programs run in parallel.

use super::{next_index, strides, Elem, NativeOp};
use crate::exec::CpuExecutable;
use jaxon_ir::primitive::{BlockDim, BlockMapping};
use jaxon_ir::{Atom, ClosedJaxpr, DType, HostArray, IrError, Jaxpr, ShapedArray, Storage};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

thread_local! {
    /// The grid point and grid sizes of the program running on this thread.
    static GRID: RefCell<(Vec<usize>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn err(m: impl std::fmt::Display) -> IrError {
    IrError::Eval(format!("cpu backend: pallas_call: {m}"))
}

/// `program_id[axis]`, or `num_programs[axis]` when `count`.
#[derive(Debug)]
pub(crate) struct ProgramId {
    pub axis: usize,
    pub count: bool,
}

impl NativeOp for ProgramId {
    fn run(&self, _: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let v = GRID.with(|g| {
            let g = g.borrow();
            if self.count {
                g.1.get(self.axis)
            } else {
                g.0.get(self.axis)
            }
            .copied()
        });
        let name = if self.count {
            "num_programs"
        } else {
            "program_id"
        };
        let v = v.ok_or_else(|| {
            IrError::Eval(format!(
                "cpu backend: {name}[axis={}] outside a pallas_call kernel or past its grid",
                self.axis
            ))
        })?;
        Ok(vec![HostArray::new(
            Vec::new(),
            Storage::I32(vec![v as i32]),
        )?])
    }
}

/// One operand's block geometry.
#[derive(Debug)]
struct Geom {
    dtype: DType,
    shape: Vec<usize>,
    padded: Vec<usize>,
    /// Block size per dim (1 for squeezed dims).
    block: Vec<usize>,
    /// The kernel's view of a block (squeezed dims removed).
    kernel_shape: Vec<usize>,
}

/// A compiled `pallas_call`.
pub(crate) struct PallasOp {
    kernel: CpuExecutable,
    grid: Vec<usize>,
    n_in: usize,
    geoms: Vec<Geom>,
    /// Block starts (element offsets into the padded operand), per grid
    /// point (row-major), per operand.
    starts: Vec<Vec<Vec<usize>>>,
    /// The kernel refs it writes (operands, then scratch): its results.
    written: Vec<usize>,
    /// Per operand: whether the kernel reads its block.
    read: Vec<bool>,
    /// Scratch buffers: (dtype, shape).
    scratch: Vec<(DType, Vec<usize>)>,
    aliases: Vec<(usize, usize)>,
    /// Programs may run in parallel.
    parallel: bool,
}

impl std::fmt::Debug for PallasOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PallasOp")
            .field("grid", &self.grid)
            .field("geoms", &self.geoms)
            .field("written", &self.written)
            .field("parallel", &self.parallel)
            .finish_non_exhaustive()
    }
}

/// The written refs of each grid point a worker ran.
type PointResults = Vec<(usize, Vec<HostArray>)>;

fn static_shape(a: &ShapedArray, what: &str) -> Result<Vec<usize>, IrError> {
    a.static_sizes()
        .ok_or_else(|| err(format!("{what} has a dynamic shape")))
}

fn geom(k: usize, bm: &BlockMapping) -> Result<Geom, IrError> {
    let shape = static_shape(&bm.array_aval, "an operand")?;
    if bm.block_shape.len() != shape.len() {
        return Err(err(format!(
            "operand {k}: block shape of rank {} for an array of shape {shape:?}",
            bm.block_shape.len()
        )));
    }
    let (mut block, mut kernel_shape) = (Vec::new(), Vec::new());
    for b in &bm.block_shape {
        match b {
            BlockDim::Blocked(0) => return Err(err(format!("operand {k}: block size 0"))),
            BlockDim::Blocked(n) => {
                block.push(*n);
                kernel_shape.push(*n);
            }
            BlockDim::Squeezed => block.push(1),
        }
    }
    let padded = shape
        .iter()
        .zip(&block)
        .map(|(&n, &b)| n.div_ceil(b) * b)
        .collect();
    Ok(Geom {
        dtype: bm.array_aval.dtype,
        shape,
        padded,
        block,
        kernel_shape,
    })
}

/// Operand `k`'s block start at grid point `idx`, clamped into the padded
/// array like `dynamic_slice` (as the interpreter does).
fn block_start(
    k: usize,
    g: &Geom,
    bm: &BlockMapping,
    idx: &[usize],
) -> Result<Vec<usize>, IrError> {
    let jaxpr = &bm.index_map.jaxpr;
    if jaxpr.invars.len() != idx.len() {
        return Err(err(format!(
            "operand {k}: index_map takes {} inputs for a grid of rank {}",
            jaxpr.invars.len(),
            idx.len()
        )));
    }
    let mut args = Vec::with_capacity(idx.len());
    for (v, &i) in jaxpr.invars.iter().zip(idx) {
        let dt = jaxpr.try_aval(*v).map_or(DType::I32, |a| a.dtype());
        args.push(HostArray::new(
            Vec::new(),
            Storage::from_f64(dt, &[i as f64]),
        )?);
    }
    let outs = jaxon_ir::eval_closed_jaxpr(&bm.index_map, &args)?;
    if outs.len() != g.block.len() {
        return Err(err(format!(
            "operand {k}: index_map gave {} indices for rank {}",
            outs.len(),
            g.block.len()
        )));
    }
    outs.iter()
        .enumerate()
        .map(|(d, v)| match v {
            a if a.len() == 1 && !a.dtype().is_float() => {
                let b = g.block[d] as i64;
                let max = g.padded[d] as i64 - b;
                Ok((a.data().get_i64(0) * b).clamp(0, Ord::max(max, 0)) as usize)
            }
            _ => Err(err(format!(
                "operand {k}: index_map must return integer scalars"
            ))),
        })
        .collect()
}

impl PallasOp {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        kernel: &Arc<Jaxpr>,
        grid: &[usize],
        block_mappings: &[BlockMapping],
        n_in: usize,
        out_avals: &[ShapedArray],
        aliases: &[(usize, usize)],
    ) -> Result<PallasOp, String> {
        Self::build(kernel, grid, block_mappings, n_in, out_avals, aliases)
            .map_err(|e| e.to_string())
    }

    fn build(
        kernel: &Arc<Jaxpr>,
        grid: &[usize],
        block_mappings: &[BlockMapping],
        n_in: usize,
        out_avals: &[ShapedArray],
        aliases: &[(usize, usize)],
    ) -> Result<PallasOp, IrError> {
        let n_ops = n_in + out_avals.len();
        if block_mappings.len() != n_ops {
            return Err(err(format!(
                "{} block mappings for {n_in} inputs and {} outputs",
                block_mappings.len(),
                out_avals.len()
            )));
        }
        if !kernel.constvars.is_empty() || kernel.invars.len() < n_ops || !kernel.outvars.is_empty()
        {
            return Err(err(format!(
                "the kernel takes {} refs for {n_ops} operands and must return nothing",
                kernel.invars.len()
            )));
        }
        for &(i, o) in aliases {
            let ok = i < n_in
                && o < out_avals.len()
                && block_mappings[i].array_aval.dtype == out_avals[o].dtype
                && block_mappings[i].array_aval.shape == out_avals[o].shape;
            if !ok {
                return Err(err(format!("bad input_output_aliases pair ({i}, {o})")));
            }
        }
        let geoms: Vec<Geom> = block_mappings
            .iter()
            .enumerate()
            .map(|(k, bm)| geom(k, bm))
            .collect::<Result<_, _>>()?;
        let mut scratch = Vec::new();
        for v in &kernel.invars[n_ops..] {
            match kernel.try_aval(*v) {
                Some(jaxon_ir::Aval::Ref(r)) => {
                    scratch.push((r.inner.dtype, static_shape(&r.inner, "a scratch buffer")?))
                }
                _ => return Err(err("a kernel scratch input is not a Ref")),
            }
        }
        let total: usize = grid.iter().product();
        let mut starts = Vec::with_capacity(total);
        let mut idx = vec![0usize; grid.len()];
        for _ in 0..total {
            starts.push(
                geoms
                    .iter()
                    .zip(block_mappings)
                    .enumerate()
                    .map(|(k, (g, bm))| block_start(k, g, bm, &idx))
                    .collect::<Result<Vec<_>, _>>()?,
            );
            next_index(&mut idx, grid);
        }
        // Compile the kernel: simplified with its refs (effects are kept),
        // then discharged; only the refs it writes come back.
        let simple = jaxon_ir::passes::simplify(&ClosedJaxpr::without_consts(kernel.clone()))?;
        let d = crate::discharge::discharge_refs(&simple)?
            .ok_or_else(|| err("the kernel takes no refs"))?;
        let mut j: Jaxpr = (*d.jaxpr).clone();
        let written: Vec<usize> = (0..j.invars.len())
            .filter(|&k| j.outvars.get(k) != Some(&Atom::Var(j.invars[k])))
            .collect();
        j.outvars = written.iter().map(|&k| j.outvars[k]).collect();
        let closed = ClosedJaxpr {
            jaxpr: Arc::new(j),
            consts: d.consts.clone(),
        };
        let used: HashSet<jaxon_ir::Var> = closed
            .jaxpr
            .eqns
            .iter()
            .flat_map(|e| e.inputs.iter())
            .chain(closed.jaxpr.outvars.iter())
            .filter_map(|a| match a {
                Atom::Var(v) => Some(*v),
                Atom::Lit(_) => None,
            })
            .collect();
        let read = closed.jaxpr.invars[..n_ops]
            .iter()
            .map(|v| used.contains(v))
            .collect();
        let key = crate::compile::fingerprint(&closed.jaxpr);
        let program = crate::compile::compile_program(&closed, &key, Default::default())?;
        let kernel = CpuExecutable {
            program: Arc::new(program),
            consts: closed.consts.clone(),
            threads: 1,
            pool: Arc::new(crate::pool::Pool::default()),
        };
        // Parallel when only outputs are written, each to blocks of its own.
        let parallel = scratch.is_empty()
            && written.iter().all(|&k| k >= n_in && k < n_ops)
            && (n_in..n_ops).all(|k| {
                let mut seen = HashSet::new();
                starts.iter().all(|s| seen.insert(&s[k]))
            });
        Ok(PallasOp {
            kernel,
            grid: grid.to_vec(),
            n_in,
            geoms,
            starts,
            written,
            read,
            scratch,
            aliases: aliases.to_vec(),
            parallel,
        })
    }
}

/// The rows (offset in the padded array, offset in the block, length) of
/// the box at `start` of size `size`, along the last dimension.
pub(super) fn box_rows(
    shape: &[usize],
    start: &[usize],
    size: &[usize],
) -> Vec<(usize, usize, usize)> {
    let nd = shape.len();
    if nd == 0 {
        return vec![(0, 0, 1)];
    }
    if size.contains(&0) {
        return Vec::new();
    }
    let st = strides(shape);
    let row = size[nd - 1];
    let outer = &size[..nd - 1];
    let mut o = vec![0usize; nd - 1];
    let mut rows = Vec::with_capacity(outer.iter().product());
    let mut b = 0;
    loop {
        let off = o
            .iter()
            .enumerate()
            .map(|(d, &i)| (start[d] + i) * st[d])
            .sum::<usize>()
            + start[nd - 1];
        rows.push((off, b, row));
        b += row;
        if !next_index(&mut o, outer) {
            return rows;
        }
    }
}

macro_rules! pair {
    ($a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr, $err:expr) => {
        match ($a, $b) {
            (Storage::Bool($x), Storage::Bool($y)) => $body,
            (Storage::I8($x), Storage::I8($y)) => $body,
            (Storage::I16($x), Storage::I16($y)) => $body,
            (Storage::I32($x), Storage::I32($y)) => $body,
            (Storage::I64($x), Storage::I64($y)) => $body,
            (Storage::U8($x), Storage::U8($y)) => $body,
            (Storage::U16($x), Storage::U16($y)) => $body,
            (Storage::U32($x), Storage::U32($y)) => $body,
            (Storage::U64($x), Storage::U64($y)) => $body,
            (Storage::F16($x), Storage::F16($y)) => $body,
            (Storage::BF16($x), Storage::BF16($y)) => $body,
            (Storage::F32($x), Storage::F32($y)) => $body,
            (Storage::F64($x), Storage::F64($y)) => $body,
            _ => return Err($err),
        }
    };
}

fn uninit(dtype: DType, n: usize) -> Storage {
    super::map_same!(&Storage::zeros(dtype, 0), v => {
        let _ = v;
        vec![Elem::uninit(); n]
    })
}

/// Copies `src` (of shape `size`) into `dst` at `start`.
fn write_box(
    dst: &mut HostArray,
    start: &[usize],
    size: &[usize],
    src: &HostArray,
) -> Result<(), IrError> {
    let rows = box_rows(dst.shape(), start, size);
    pair!(dst.data_mut(), src.data(), (d, s) => {
        for (o, b, n) in rows {
            d[o..o + n].copy_from_slice(&s[b..b + n]);
        }
    }, err("a block changed dtype"));
    Ok(())
}

/// Reads the box at `start` of size `size`, with shape `shape`.
fn read_box(
    src: &HostArray,
    start: &[usize],
    size: &[usize],
    shape: Vec<usize>,
) -> Result<HostArray, IrError> {
    let rows = box_rows(src.shape(), start, size);
    let data = super::map_same!(src.data(), s => {
        let mut v = Vec::with_capacity(size.iter().product());
        for (o, _, n) in rows {
            v.extend_from_slice(&s[o..o + n]);
        }
        v
    });
    HostArray::new(shape, data)
}

impl PallasOp {
    /// Runs grid points `points` on the (padded) operands; returns each
    /// point's written refs.
    fn run_points(
        &self,
        ops: &[Cow<'_, HostArray>],
        scratch: &[HostArray],
        unread: &[HostArray],
        points: std::ops::Range<usize>,
        mut sink: impl FnMut(usize, Vec<HostArray>) -> Result<(), IrError>,
    ) -> Result<(), IrError> {
        let mut idx = vec![0usize; self.grid.len()];
        {
            let mut rem = points.start;
            for d in (0..self.grid.len()).rev() {
                idx[d] = rem % self.grid[d];
                rem /= self.grid[d];
            }
        }
        for p in points {
            let mut blocks = Vec::with_capacity(ops.len() + scratch.len());
            for (k, ((g, op), start)) in self.geoms.iter().zip(ops).zip(&self.starts[p]).enumerate()
            {
                if self.read[k] {
                    blocks.push(Some(read_box(op, start, &g.block, g.kernel_shape.clone())?));
                } else {
                    blocks.push(None);
                }
            }
            let mut args: Vec<&HostArray> = blocks
                .iter()
                .zip(unread)
                .map(|(b, u)| b.as_ref().unwrap_or(u))
                .collect();
            args.extend(scratch.iter());
            GRID.with(|g| *g.borrow_mut() = (idx.clone(), self.grid.clone()));
            let outs = self.kernel.run_host(&args);
            GRID.with(|g| *g.borrow_mut() = (Vec::new(), Vec::new()));
            let outs = outs?.into_iter().map(|(a, _)| a).collect();
            sink(p, outs)?;
            next_index(&mut idx, &self.grid);
        }
        Ok(())
    }
}

impl NativeOp for PallasOp {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        if inputs.len() != self.n_in {
            return Err(err(format!(
                "expected {} inputs, got {}",
                self.n_in,
                inputs.len()
            )));
        }
        let n_ops = self.geoms.len();
        let is_written = |k: usize| self.written.contains(&k);
        // Padded operands: copies where padding is needed or the kernel
        // writes them, else the argument itself.
        let mut ops: Vec<Cow<'_, HostArray>> = Vec::with_capacity(n_ops);
        for (k, g) in self.geoms.iter().enumerate() {
            let base: Cow<'_, HostArray> = if k < self.n_in {
                Cow::Borrowed(inputs[k])
            } else if let Some(&(i, _)) = self.aliases.iter().find(|(_, o)| *o == k - self.n_in) {
                Cow::Borrowed(inputs[i])
            } else {
                Cow::Owned(HostArray::zeros(g.dtype, &g.shape))
            };
            if base.shape() != g.shape.as_slice() || base.dtype() != g.dtype {
                return Err(err(format!(
                    "operand {k} is {}{:?}, compiled for {}{:?}",
                    base.dtype(),
                    base.shape(),
                    g.dtype,
                    g.shape
                )));
            }
            let op = if g.padded != g.shape {
                let n = g.padded.iter().product();
                let mut p = HostArray::new(g.padded.clone(), uninit(g.dtype, n))?;
                write_box(&mut p, &vec![0; g.shape.len()], &g.shape, &base)?;
                Cow::Owned(p)
            } else if is_written(k) || k >= self.n_in {
                Cow::Owned(base.into_owned())
            } else {
                base
            };
            ops.push(op);
        }
        let mut scratch: Vec<HostArray> = self
            .scratch
            .iter()
            .map(|(dt, s)| HostArray::new(s.clone(), uninit(*dt, s.iter().product())))
            .collect::<Result<_, _>>()?;
        // Blocks the kernel never reads are not copied in: it gets a
        // placeholder of the block's type.
        let unread: Vec<HostArray> = self
            .geoms
            .iter()
            .map(|g| HostArray::zeros(g.dtype, &g.kernel_shape))
            .collect();
        let total = self.starts.len();
        // Spawning threads costs tens of microseconds: small grids run on
        // the calling thread.
        let work: usize = total
            * self
                .geoms
                .iter()
                .map(|g| g.block.iter().product::<usize>())
                .sum::<usize>();
        let workers = if work >= crate::runtime::PARALLEL_MIN_WORK {
            threads.min(total).max(1)
        } else {
            1
        };
        if self.parallel && workers > 1 {
            let chunk = total.div_ceil(workers);
            let results: Vec<Result<PointResults, IrError>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..workers)
                    .map(|w| {
                        let ops = &ops;
                        let unread = &unread;
                        s.spawn(move || {
                            let mut got = Vec::new();
                            let lo = w * chunk;
                            let hi = (lo + chunk).min(total);
                            self.run_points(ops, &[], unread, lo..hi, |p, o| {
                                got.push((p, o));
                                Ok(())
                            })?;
                            Ok(got)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(err("a program panicked"))))
                    .collect()
            });
            for r in results {
                for (p, outs) in r? {
                    for (&k, blk) in self.written.iter().zip(&outs) {
                        let g = &self.geoms[k];
                        write_box(ops[k].to_mut(), &self.starts[p][k], &g.block, blk)?;
                    }
                }
            }
        } else {
            for p in 0..total {
                let mut outs = Vec::new();
                self.run_points(&ops, &scratch, &unread, p..p + 1, |_, o| {
                    outs = o;
                    Ok(())
                })?;
                for (&k, blk) in self.written.iter().zip(outs) {
                    if k < n_ops {
                        let g = &self.geoms[k];
                        write_box(ops[k].to_mut(), &self.starts[p][k], &g.block, &blk)?;
                    } else {
                        scratch[k - n_ops] = blk;
                    }
                }
            }
        }
        ops.drain(..self.n_in);
        ops.into_iter()
            .zip(&self.geoms[self.n_in..])
            .map(|(op, g)| {
                if g.padded == g.shape {
                    Ok(op.into_owned())
                } else {
                    read_box(&op, &vec![0; g.shape.len()], &g.shape, g.shape.clone())
                }
            })
            .collect()
    }
}
