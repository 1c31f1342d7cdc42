//! `pallas_call` on the CPU: the kernel is compiled once (by
//! `plan::pallas`, with the backend's own pipeline, from the program
//! [`Blocks::kernel_program`] lays out here), in discharged form (each block `Ref` is an array
//! argument; the final contents of the refs the kernel writes are its
//! results), and run once per grid point in JAX's order (row-major, last
//! grid axis fastest). The index maps are evaluated when compiling.
//!
//! Block windows are pointer offsets: the kernel program receives each
//! operand as a window `(b0, s1, .., sn)` starting at the block's first
//! element, with the array's strides, and takes the block as its static
//! slice, so a block inside the array is read in place by the generated
//! code. Only partial edge blocks are copied, into a buffer of the window's
//! layout padded with the uninitialised value (NaN, integer minimum,
//! false) as interpret mode pads them. Results are written straight into
//! the output when the block lies inside it: as one run of memory, or, for
//! a strided 2-D block, by the program itself with the array's row stride
//! (the GEMM's destination stride, or a kernel called row by row: see
//! `compile::compile_program_strided`). Partial edge blocks (and results
//! the program cannot write so) go through a per-worker buffer copied
//! back, the padding discarded.
//! `program_id` and `num_programs` read the grid point of the running
//! program (a thread-local set around each kernel call), so they work at
//! any nesting depth of the kernel.
//!
//! Programs run in parallel over the grid axes on which the out specs make
//! their writes disjoint (every written output's block differs between
//! programs that differ on those axes); programs that differ only on the
//! other axes run in order on one worker. Workers are rayon's pool threads
//! (and the calling thread), which live on between calls. Called from a
//! compiled program, the call works on the program's buffers directly
//! (`run_raw_threads`): no copy of the operands in or the results out.

mod blocks;
mod grid;
mod plan;

use super::{next_index, strides, Elem, NativeOp};
use crate::error::run_error;
use crate::run::exec::{Program, ResultSrc};
use crate::run::executable::CpuExecutable;
use blocks::{addr, addr_mut, copy_box, fill_box, words, Ptr};
use jaxon_ir::primitive::BlockMapping;
use jaxon_ir::{Atom, Aval, ClosedJaxpr, DType, HostArray, IrError, Jaxpr, ShapedArray, Storage};
use plan::{block_start, geom, partition, static_shape, windowed};
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
thread_local! {
    /// The grid point and grid sizes of the program running on this thread.
    static GRID: RefCell<(Vec<usize>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

fn err(m: impl std::fmt::Display) -> IrError {
    run_error(format!("pallas_call: {m}"))
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
            run_error(format!(
                "{name}[axis={}] outside a pallas_call kernel or past its grid",
                self.axis
            ))
        })?;
        Ok(vec![HostArray::new(
            Vec::new(),
            Storage::I32(vec![v as i32]),
        )?])
    }
}

/// How the kernel program receives an operand's block.
#[derive(Clone, Debug, PartialEq)]
enum Layout {
    /// A window of this shape, `(b0, s1, .., sn)`, at the block's first
    /// element (so with the array's strides); the block is its slice
    /// `[0:b0, .., 0:bn]`.
    Window(Vec<usize>),
    /// A contiguous block, always copied in: a block dimension past the
    /// first is larger than the array's, so every block is partial.
    Block,
}

/// One operand's block geometry.
#[derive(Debug)]
struct Geom {
    dtype: DType,
    /// Element size in bytes.
    es: usize,
    shape: Vec<usize>,
    /// Row-major element strides of the array.
    strides: Vec<usize>,
    /// Block size per dim (1 for squeezed dims).
    block: Vec<usize>,
    /// Row-major strides of a contiguous block.
    block_strides: Vec<usize>,
    /// The kernel's view of a block (squeezed dims removed).
    kernel_shape: Vec<usize>,
    /// Per dim: squeezed out of the kernel's view.
    squeezed: Vec<bool>,
    layout: Layout,
    /// Elements of the program input (the window or the block).
    in_len: usize,
    /// An inner block is one run of memory in the array.
    contiguous: bool,
    /// One uninitialised element.
    uninit: Vec<u8>,
    /// For a strided 2-D block view (`Window` layout, columns along the
    /// array's last dimension, not one run of memory): the array's stride
    /// between the view's rows, so a result can be written in place.
    row_stride: Option<usize>,
}

impl Geom {
    /// The block's extent inside the array at `start` (0 past the end).
    fn clipped(&self, start: &[usize]) -> Vec<usize> {
        self.block
            .iter()
            .zip(start)
            .zip(&self.shape)
            .map(|((&b, &s), &n)| b.min(n.saturating_sub(s)))
            .collect()
    }

    /// Strides of the program input's layout.
    fn in_strides(&self) -> &[usize] {
        match self.layout {
            Layout::Window(_) => &self.strides,
            Layout::Block => &self.block_strides,
        }
    }
}

/// An operand's block at one grid point.
#[derive(Debug)]
struct At {
    start: Vec<usize>,
    /// Element offset of `start` (meaningful when `inside`).
    flat: usize,
    /// The whole block lies inside the array.
    inside: bool,
}

/// Buffers one worker reuses from program to program.
#[derive(Default)]
struct Worker {
    arena: Vec<u64>,
    /// Per operand: the padded copy of an edge block (or a `Block`).
    ins: Vec<Vec<u64>>,
    /// Per program output buffer.
    outs: Vec<Vec<u64>>,
}

/// A compiled `pallas_call`.
pub(crate) struct PallasOp {
    kernel: CpuExecutable,
    grid: Vec<usize>,
    n_in: usize,
    geoms: Vec<Geom>,
    /// Per grid point (row-major), per operand.
    points: Vec<Vec<At>>,
    /// The kernel refs it writes (operands, then scratch): its results.
    written: Vec<usize>,
    /// Per result: the program writes it with the output array's strides
    /// (an output block written in place; an edge block goes through a
    /// buffer of the window's layout).
    strided: Vec<bool>,
    /// Bytes of each program output buffer a worker holds.
    out_buf_bytes: Vec<usize>,
    /// Per output: the programs write all of it (its blocks tile the array
    /// and each program writes its whole block), so it needs no zeros.
    covered: Vec<bool>,
    /// Per operand: whether the kernel reads its block.
    read: Vec<bool>,
    /// Scratch buffers: (dtype, shape).
    scratch: Vec<(DType, Vec<usize>)>,
    aliases: Vec<(usize, usize)>,
    /// The grid axes programs may run in parallel over.
    par_axes: Vec<bool>,
    /// Grid points by their coordinates on `par_axes`, each group in
    /// row-major order (one group, all points, when none is parallel).
    groups: Vec<Vec<usize>>,
    /// Workers' buffers, kept between runs.
    pool: Mutex<Vec<Worker>>,
}

impl std::fmt::Debug for PallasOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PallasOp")
            .field("grid", &self.grid)
            .field("geoms", &self.geoms)
            .field("written", &self.written)
            .field("par_axes", &self.par_axes)
            .finish_non_exhaustive()
    }
}

/// A `pallas_call`'s blocks, checked against its params: each operand's
/// geometry, each grid point's block positions and the scratch buffers.
/// What compiling the kernel needs ([`Blocks::kernel_program`]) and, with
/// the compiled kernel, what [`PallasOp::new`] runs.
#[derive(Debug)]
pub(crate) struct Blocks {
    grid: Vec<usize>,
    n_in: usize,
    geoms: Vec<Geom>,
    /// Per grid point (row-major), per operand.
    points: Vec<Vec<At>>,
    scratch: Vec<(DType, Vec<usize>)>,
    aliases: Vec<(usize, usize)>,
}

/// The kernel as the program to compile: discharged, its written refs as
/// results, and each operand taken as a window of its array.
#[derive(Debug)]
pub(crate) struct KernelProgram {
    /// The program.
    pub closed: ClosedJaxpr,
    /// The kernel refs it writes (operands, then scratch): its results.
    pub written: Vec<usize>,
    /// Per operand: whether the kernel reads its block.
    pub read: Vec<bool>,
    /// Per result: the array row stride it may be written with in place
    /// (`compile::compile_program_strided`).
    pub want: Vec<Option<usize>>,
}

impl Blocks {
    /// Checks the params of a `pallas_call` with `n_in` inputs and lays
    /// out its blocks.
    pub(crate) fn new(
        kernel: &Jaxpr,
        grid: &[usize],
        block_mappings: &[BlockMapping],
        n_in: usize,
        out_avals: &[ShapedArray],
        aliases: &[(usize, usize)],
    ) -> Result<Blocks, IrError> {
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
                Some(Aval::Ref(r)) => {
                    scratch.push((r.inner.dtype, static_shape(&r.inner, "a scratch buffer")?))
                }
                _ => return Err(err("a kernel scratch input is not a Ref")),
            }
        }
        let total: usize = grid.iter().product();
        let mut points = Vec::with_capacity(total);
        let mut idx = vec![0usize; grid.len()];
        for _ in 0..total {
            let mut at = Vec::with_capacity(n_ops);
            for (k, (g, bm)) in geoms.iter().zip(block_mappings).enumerate() {
                let start = block_start(k, g, bm, &idx)?;
                let inside = start
                    .iter()
                    .zip(&g.block)
                    .zip(&g.shape)
                    .all(|((&s, &b), &n)| s + b <= n);
                let flat = if inside {
                    start.iter().zip(&g.strides).map(|(s, t)| s * t).sum()
                } else {
                    0
                };
                at.push(At {
                    start,
                    flat,
                    inside,
                });
            }
            points.push(at);
            next_index(&mut idx, grid);
        }
        Ok(Blocks {
            grid: grid.to_vec(),
            n_in,
            geoms,
            points,
            scratch,
            aliases: aliases.to_vec(),
        })
    }

    /// The program to compile from the discharged kernel (`discharged`:
    /// one result per kernel ref, its final contents): only the refs it
    /// writes come back, and operands arrive as windows.
    pub(crate) fn kernel_program(&self, discharged: &ClosedJaxpr) -> KernelProgram {
        let n_ops = self.geoms.len();
        let mut j: Jaxpr = (*discharged.jaxpr).clone();
        let written: Vec<usize> = (0..j.invars.len())
            .filter(|&k| j.outvars.get(k) != Some(&Atom::Var(j.invars[k])))
            .collect();
        j.outvars = written.iter().map(|&k| j.outvars[k]).collect();
        let used: HashSet<jaxon_ir::Var> = j
            .eqns
            .iter()
            .flat_map(|e| e.inputs.iter())
            .chain(j.outvars.iter())
            .filter_map(|a| match a {
                Atom::Var(v) => Some(*v),
                Atom::Lit(_) => None,
            })
            .collect();
        let read: Vec<bool> = j.invars[..n_ops].iter().map(|v| used.contains(v)).collect();
        for (k, g) in self.geoms.iter().enumerate() {
            windowed(&mut j, k, g, read[k]);
        }
        // Output blocks that are not one run of memory are written in
        // place by the program (with the array's row stride).
        let want: Vec<Option<usize>> = written
            .iter()
            .map(|&k| {
                let g = &self.geoms.get(k)?;
                (k >= self.n_in && k < n_ops && !read[k]).then_some(g.row_stride)?
            })
            .collect();
        KernelProgram {
            closed: ClosedJaxpr {
                jaxpr: Arc::new(j),
                consts: discharged.consts.clone(),
            },
            written,
            read,
            want,
        }
    }
}

impl PallasOp {
    /// The op running `program`, the compiled [`KernelProgram`] of
    /// `blocks`, whose results `strided` are written with the arrays'
    /// strides.
    pub(crate) fn new(
        blocks: Blocks,
        kernel: KernelProgram,
        program: Program,
        strided: Vec<bool>,
    ) -> Result<PallasOp, IrError> {
        let Blocks {
            grid,
            n_in,
            geoms,
            points,
            scratch,
            aliases,
        } = blocks;
        let KernelProgram {
            closed,
            written,
            read,
            ..
        } = kernel;
        let n_ops = geoms.len();
        if program.results.len() != written.len() {
            return Err(err("the compiled kernel's results do not match its refs"));
        }
        let mut out_buf_bytes: Vec<usize> = program
            .out_bufs
            .iter()
            .map(|(dt, s)| dt.size_bytes() * s.iter().product::<usize>())
            .collect();
        for ((&k, r), &s) in written.iter().zip(&program.results).zip(&strided) {
            if let (true, ResultSrc::Buffer(j)) = (s, r) {
                let g = &geoms[k];
                out_buf_bytes[*j] = out_buf_bytes[*j].max(g.in_len * g.es);
            }
        }
        let kernel = CpuExecutable {
            program: Arc::new(program),
            consts: closed.consts.clone(),
            threads: 1,
            pool: Arc::new(crate::run::pool::Pool::default()),
        };
        // Parallel only when outputs alone are written (inputs and scratch
        // carry state from program to program).
        let allowed = scratch.is_empty() && written.iter().all(|&k| k >= n_in && k < n_ops);
        let (par_axes, groups) = partition(&grid, &points, &written, allowed);
        let covered = (n_in..n_ops)
            .map(|k| {
                let g = &geoms[k];
                let starts: HashSet<&[usize]> =
                    points.iter().map(|at| at[k].start.as_slice()).collect();
                let tiles: usize = g
                    .shape
                    .iter()
                    .zip(&g.block)
                    .map(|(&n, &b)| n.div_ceil(b))
                    .product();
                written.contains(&k) && !read[k] && starts.len() == tiles
            })
            .collect();
        Ok(PallasOp {
            covered,
            kernel,
            grid,
            n_in,
            geoms,
            points,
            written,
            strided,
            out_buf_bytes,
            read,
            scratch,
            aliases,
            par_axes,
            groups,
            pool: Mutex::new(Vec::new()),
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

fn uninit(dtype: DType, n: usize) -> Storage {
    super::map_same!(&Storage::zeros(dtype, 0), v => {
        let _ = v;
        vec![Elem::uninit(); n]
    })
}

/// Where a run's operands live and its scratch buffers.
struct Frame<'a> {
    /// Per operand: its array's first element.
    bases: &'a [Ptr],
    /// Scratch refs (serial runs only).
    scratch: Vec<Vec<u64>>,
    /// Threads the kernel program may use.
    threads: usize,
}

impl PallasOp {
    fn worker(&self) -> Worker {
        let w = self.pool.lock().ok().and_then(|mut p| p.pop());
        w.unwrap_or_else(|| {
            let p = &*self.kernel.program;
            Worker {
                arena: vec![0u64; p.arena_bytes.div_ceil(8)],
                ins: vec![Vec::new(); self.geoms.len()],
                outs: self.out_buf_bytes.iter().map(|&n| words(n)).collect(),
            }
        })
    }

    fn give_back(&self, w: Worker) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(w);
        }
    }

    /// Runs grid point `p` on worker `w`.
    ///
    /// # Safety
    /// `f.bases` point at live operand arrays of the compiled shapes, and no
    /// other thread writes the blocks this point reads or writes.
    unsafe fn run_point(&self, w: &mut Worker, p: usize, f: &mut Frame<'_>) -> Result<(), IrError> {
        let prog = &*self.kernel.program;
        let at = &self.points[p];
        let n_ops = self.geoms.len();
        let mut io: Vec<*mut u8> = Vec::with_capacity(prog.io_len());
        for (k, g) in self.geoms.iter().enumerate() {
            let a = &at[k];
            let base = f.bases[k].0;
            let ptr = if !self.read[k] {
                base
            } else if a.inside && g.layout != Layout::Block {
                // SAFETY: the block lies inside the array.
                unsafe { base.add(a.flat * g.es) }
            } else {
                let buf = &mut w.ins[k];
                if buf.len() * 8 < g.in_len * g.es {
                    *buf = words(g.in_len * g.es);
                }
                let dst = buf.as_mut_ptr().cast::<u8>();
                // Only the block's elements are read: pad those.
                // SAFETY: the block lies inside the input layout of
                // `in_len` elements that `buf` holds.
                unsafe { fill_box(dst, g.in_strides(), &g.block, &g.uninit) };
                let ext = g.clipped(&a.start);
                if !ext.contains(&0) {
                    let off: usize = a.start.iter().zip(&g.strides).map(|(s, t)| s * t).sum();
                    // SAFETY: the clipped box lies inside the array from
                    // `start` and inside the input layout from 0.
                    unsafe {
                        copy_box(
                            base.add(off * g.es),
                            &g.strides,
                            dst,
                            g.in_strides(),
                            &ext,
                            g.es,
                        )
                    };
                }
                dst
            };
            io.push(ptr);
        }
        for s in f.scratch.iter_mut() {
            io.push(s.as_mut_ptr().cast());
        }
        for c in self.kernel.consts.iter() {
            io.push(addr(c));
        }
        let out0 = io.len();
        for o in w.outs.iter_mut() {
            io.push(o.as_mut_ptr().cast());
        }
        // Results whose block lies inside the output go there directly
        // when it is one run of memory or the program writes it with the
        // array's strides (unless the kernel also reads that block).
        let mut direct: Vec<Option<*mut u8>> = Vec::with_capacity(self.written.len());
        for ((&k, r), &s) in self.written.iter().zip(&prog.results).zip(&self.strided) {
            let d = (k < n_ops && !self.read[k] && at[k].inside && (self.geoms[k].contiguous || s))
                // SAFETY: the block lies inside the array.
                .then(|| unsafe { f.bases[k].0.add(at[k].flat * self.geoms[k].es) });
            if let (Some(d), ResultSrc::Buffer(j)) = (d, r) {
                io[out0 + j] = d;
            }
            direct.push(d);
        }
        let ctx = crate::run::runtime::RunCtx {
            program: prog,
            threads: f.threads,
            error: Mutex::new(None),
        };
        GRID.with(|g| {
            let mut g = g.borrow_mut();
            g.0.clear();
            let mut rem = p;
            g.0.resize(self.grid.len(), 0);
            for d in (0..self.grid.len()).rev() {
                g.0[d] = rem % self.grid[d];
                rem /= self.grid[d];
            }
            g.1.clone_from(&self.grid);
        });
        let res = crate::run::runtime::call_program(prog.entry, &io, &mut w.arena, &ctx);
        GRID.with(|g| {
            let mut g = g.borrow_mut();
            g.0.clear();
            g.1.clear();
        });
        res?;
        let mut srcs: Vec<*const u8> = Vec::with_capacity(self.written.len());
        for (i, (&k, r)) in self.written.iter().zip(&prog.results).enumerate() {
            let src: *const u8 = match r {
                ResultSrc::Buffer(j) => io[out0 + j],
                ResultSrc::Input(x) => io[*x],
                ResultSrc::Const(c) => addr(&self.kernel.consts[*c]),
                ResultSrc::Literal(a) => addr(a),
                ResultSrc::Again(e) => srcs[*e],
            };
            srcs.push(src);
            if k >= n_ops {
                let s = &mut f.scratch[k - n_ops];
                let (dt, shape) = &self.scratch[k - n_ops];
                let n = dt.size_bytes() * shape.iter().product::<usize>();
                if src != s.as_ptr().cast() {
                    // SAFETY: both hold the scratch ref's `n` bytes; a
                    // program never writes its inputs.
                    unsafe { std::ptr::copy(src, s.as_mut_ptr().cast(), n) };
                }
                continue;
            }
            let g = &self.geoms[k];
            if let Some(d) = direct[i] {
                if src != d.cast_const() {
                    let n = g.es * g.kernel_shape.iter().product::<usize>();
                    // SAFETY: the block is `n` contiguous bytes at `d`.
                    unsafe { std::ptr::copy(src, d, n) };
                }
                continue;
            }
            let ext = g.clipped(&at[k].start);
            if !ext.contains(&0) {
                let off: usize = at[k].start.iter().zip(&g.strides).map(|(s, t)| s * t).sum();
                let ss = if self.strided[i] {
                    &g.strides
                } else {
                    &g.block_strides
                };
                // SAFETY: the result is a contiguous block, or a strided
                // one in a buffer of the window's layout; the clipped box
                // lies inside the array from `start`.
                unsafe {
                    copy_box(
                        src,
                        ss,
                        f.bases[k].0.add(off * g.es),
                        &g.strides,
                        &ext,
                        g.es,
                    )
                };
            }
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
        for (k, (a, g)) in inputs.iter().zip(&self.geoms).enumerate() {
            if a.shape() != g.shape.as_slice() || a.dtype() != g.dtype {
                return Err(err(format!(
                    "operand {k} is {}{:?}, compiled for {}{:?}",
                    a.dtype(),
                    a.shape(),
                    g.dtype,
                    g.shape
                )));
            }
        }
        // Outputs start as their aliased inputs or zeros; inputs the kernel
        // writes are private copies.
        let mut outs: Vec<HostArray> = self.geoms[self.n_in..]
            .iter()
            .enumerate()
            .map(|(o, g)| match self.aliases.iter().find(|(_, x)| *x == o) {
                Some(&(i, _)) => inputs[i].clone(),
                None => HostArray::zeros(g.dtype, &g.shape),
            })
            .collect();
        let mut owned: Vec<Option<HostArray>> = (0..self.n_in)
            .map(|k| self.written.contains(&k).then(|| inputs[k].clone()))
            .collect();
        let mut bases: Vec<Ptr> = Vec::with_capacity(self.geoms.len());
        for (k, o) in owned.iter_mut().enumerate() {
            bases.push(Ptr(match o {
                Some(a) => addr_mut(a),
                None => addr(inputs[k]),
            }));
        }
        for o in outs.iter_mut() {
            bases.push(Ptr(addr_mut(o)));
        }
        // SAFETY: `bases` are the live operands (checked above) and
        // outputs, private to this call.
        unsafe { self.run_grid(&bases, threads) }?;
        drop(owned);
        Ok(outs)
    }

    unsafe fn run_raw_threads(
        &self,
        ins: &[super::RawArg<'_>],
        outs: &[super::RawArg<'_>],
        threads: usize,
    ) -> Option<Result<(), IrError>> {
        // Straight on the program's buffers (no copy of the operands in
        // and the results out), unless an input is written (it needs a
        // private copy): `run` then.
        let fits = |a: &super::RawArg<'_>, g: &Geom| a.dtype == g.dtype && a.shape == g.shape;
        let ok = ins.len() == self.n_in
            && outs.len() == self.geoms.len() - self.n_in
            && ins.iter().zip(&self.geoms).all(|(a, g)| fits(a, g))
            && outs
                .iter()
                .zip(&self.geoms[self.n_in..])
                .all(|(a, g)| fits(a, g))
            && self.written.iter().all(|&k| k >= self.n_in);
        if !ok {
            return None;
        }
        // Outputs start as their aliased inputs or zeros (unless the
        // programs write every element).
        for (o, (out, g)) in outs.iter().zip(&self.geoms[self.n_in..]).enumerate() {
            let bytes = g.es * g.shape.iter().product::<usize>();
            match self.aliases.iter().find(|(_, x)| *x == o) {
                // SAFETY: both hold the array's `bytes` bytes; a result
                // does not alias an operand (the caller's contract).
                Some(&(i, _)) => unsafe {
                    std::ptr::copy_nonoverlapping(ins[i].ptr, out.ptr, bytes)
                },
                // SAFETY: `out` has room for the array's `bytes` bytes.
                None if !self.covered[o] => unsafe { std::ptr::write_bytes(out.ptr, 0, bytes) },
                None => {}
            }
        }
        let bases: Vec<Ptr> = ins.iter().chain(outs).map(|a| Ptr(a.ptr)).collect();
        // SAFETY: the caller's contract: live operands of the compiled
        // types (checked above), results private to this call; the kernel
        // writes no input.
        Some(unsafe { self.run_grid(&bases, threads) })
    }
}
