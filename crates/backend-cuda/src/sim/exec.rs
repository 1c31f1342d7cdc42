//! The lockstep executor: runs the blocks of a launch one after another and
//! the statements of one block for a set of active threads at once.
//!
//! Invariants: every call that executes a body gets a nonempty, sorted list
//! of distinct linear thread indices (`lanes`); variables are columns of one
//! value per thread of the block, in `Const`'s encoding; the barrier epoch
//! grows at every block start and every barrier, so shared-memory race
//! tracking never sees accesses across a barrier. Every fault names the
//! kernel, the block and the thread, with the first offending thread in
//! linear order.

use super::eval::split;
use super::memory::{Access, SharedMem, SimBuffer};
use super::{mma, value, ParamVal, SimStats, MAX_LOOP_TRIPS};
use crate::error::{CudaError, Result};
use crate::kir::{
    AtomicOp, BinOp, Expr, Kernel, LaunchDims, MmaShape, ShuffleKind, Space, Stmt, Var,
};
use jaxon_ir::DType;

/// Runs every block of a checked launch.
pub(crate) fn run(
    k: &Kernel,
    dims: LaunchDims,
    buffers: &mut [SimBuffer],
    params: Vec<ParamVal>,
) -> Result<SimStats> {
    let nthreads = dims.threads_per_block() as usize;
    let mut m = Machine {
        k,
        dims,
        block: [0; 3],
        nthreads,
        vars: k.vars.iter().map(|_| vec![0; nthreads]).collect(),
        shared: k
            .shared
            .iter()
            .map(|s| SharedMem::new(s.dtype, s.len as usize))
            .collect(),
        buffers,
        params,
        stats: SimStats::default(),
        epoch: 0,
    };
    let all: Vec<u32> = (0..nthreads as u32).collect();
    for bz in 0..dims.grid[2] {
        for by in 0..dims.grid[1] {
            for bx in 0..dims.grid[0] {
                m.start_block([bx, by, bz]);
                m.exec(&k.body, &all)?;
                m.stats.blocks += 1;
            }
        }
    }
    m.stats.threads = m.stats.blocks * nthreads as u64;
    Ok(m.stats)
}

/// The state of the running block.
pub(crate) struct Machine<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) dims: LaunchDims,
    pub(crate) block: [u32; 3],
    nthreads: usize,
    vars: Vec<Vec<u64>>,
    shared: Vec<SharedMem>,
    buffers: &'a mut [SimBuffer],
    pub(crate) params: Vec<ParamVal>,
    stats: SimStats,
    epoch: u64,
}

impl Machine<'_> {
    fn start_block(&mut self, block: [u32; 3]) {
        self.block = block;
        for (col, decl) in self.vars.iter_mut().zip(&self.k.vars) {
            let p = value::poison(decl.dtype);
            col.iter_mut().for_each(|v| *v = p);
        }
        self.shared.iter_mut().for_each(SharedMem::reset);
        self.epoch += 1;
    }

    /// The 3-D index in the block of linear thread `t`.
    pub(crate) fn tid(&self, t: u32) -> [u32; 3] {
        let [bx, by, _] = self.dims.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    /// A fault of thread `t` of the running block.
    pub(crate) fn fault(&self, t: u32, message: String) -> CudaError {
        CudaError::SimFault {
            kernel: self.k.name.clone(),
            block: self.block,
            thread: self.tid(t),
            message,
        }
    }

    /// A kernel the verifier should have rejected.
    pub(crate) fn invalid(&self, message: String) -> CudaError {
        CudaError::InvalidKir {
            kernel: self.k.name.clone(),
            message,
        }
    }

    pub(crate) fn var_dtype(&self, v: Var) -> Result<DType> {
        self.k
            .vars
            .get(v.0 as usize)
            .map(|d| d.dtype)
            .ok_or_else(|| self.invalid(format!("no variable {}", v.0)))
    }

    pub(crate) fn col(&self, v: Var) -> Result<&[u64]> {
        self.vars
            .get(v.0 as usize)
            .map(Vec::as_slice)
            .ok_or_else(|| self.invalid(format!("no variable {}", v.0)))
    }

    /// Sets `v` in each thread of `lanes` to the matching entry of `vals`.
    fn set(&mut self, v: Var, lanes: &[u32], vals: &[u64]) -> Result<()> {
        let Some(col) = self.vars.get_mut(v.0 as usize) else {
            return Err(self.invalid(format!("no variable {}", v.0)));
        };
        for (&t, &x) in lanes.iter().zip(vals) {
            col[t as usize] = x;
        }
        Ok(())
    }

    fn exec(&mut self, body: &[Stmt], lanes: &[u32]) -> Result<()> {
        body.iter().try_for_each(|s| self.stmt(s, lanes))
    }

    fn stmt(&mut self, s: &Stmt, lanes: &[u32]) -> Result<()> {
        self.stats.instructions += lanes.len() as u64;
        match s {
            Stmt::Assign(v, e) => {
                let (_, vals) = self.eval(e, lanes)?;
                self.set(*v, lanes, &vals)
            }
            Stmt::Load {
                dst,
                space,
                index,
                mask,
            } => self.load(dst, *space, index, mask.as_ref(), lanes),
            Stmt::Store {
                space,
                index,
                values,
                mask,
            } => self.store(*space, index, values, mask.as_ref(), lanes),
            Stmt::Atomic {
                op,
                space,
                index,
                value,
                dst,
            } => self.atomic(*op, *space, index, value, *dst, lanes),
            Stmt::Barrier => self.barrier(lanes),
            Stmt::Shuffle {
                dst,
                kind,
                value,
                lane,
                width,
            } => self.shuffle(*dst, *kind, value, lane, *width, lanes),
            Stmt::Mma { shape, d, a, b, c } => self.mma(*shape, d, a, b, c, lanes),
            Stmt::LdMatrix {
                dst,
                shared,
                index,
                trans,
            } => self.ldmatrix(dst, Space::Shared(*shared), index, *trans, lanes),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let (_, c) = self.eval(cond, lanes)?;
                let (on, off) = split(lanes, &c);
                if !on.is_empty() {
                    self.exec(then, &on)?;
                }
                if !off.is_empty() {
                    self.exec(otherwise, &off)?;
                }
                Ok(())
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let (d, first) = self.eval(start, lanes)?;
                self.set(*var, lanes, &first)?;
                let mut live = lanes.to_vec();
                for trip in 0.. {
                    let (_, cur) = self.eval(&Expr::Var(*var), &live)?;
                    let (_, ends) = self.eval(end, &live)?;
                    let go: Vec<u64> = cur
                        .iter()
                        .zip(&ends)
                        .map(|(&c, &e)| value::binary(BinOp::Lt, d, c, e).unwrap_or(0))
                        .collect();
                    live = split(&live, &go).0;
                    if live.is_empty() {
                        break;
                    }
                    self.check_trips(trip, &live)?;
                    self.exec(body, &live)?;
                    let (_, steps) = self.eval(step, &live)?;
                    let (_, cur) = self.eval(&Expr::Var(*var), &live)?;
                    let next: Vec<u64> = cur
                        .iter()
                        .zip(&steps)
                        .map(|(&c, &s)| value::binary(BinOp::Add, d, c, s).unwrap_or(c))
                        .collect();
                    self.set(*var, &live, &next)?;
                }
                Ok(())
            }
            Stmt::While { cond, body } => {
                let mut live = lanes.to_vec();
                for trip in 0.. {
                    let (_, c) = self.eval(cond, &live)?;
                    live = split(&live, &c).0;
                    if live.is_empty() {
                        break;
                    }
                    self.check_trips(trip, &live)?;
                    self.exec(body, &live)?;
                }
                Ok(())
            }
        }
    }

    fn check_trips(&self, trip: u64, live: &[u32]) -> Result<()> {
        if trip >= MAX_LOOP_TRIPS {
            return Err(self.fault(
                live[0],
                format!("a loop ran {MAX_LOOP_TRIPS} iterations in one block (an infinite loop?)"),
            ));
        }
        Ok(())
    }

    fn space_name(&self, space: Space) -> String {
        match space {
            Space::Global(p) => self.k.params.get(p.0 as usize).map(|p| p.name.clone()),
            Space::Shared(s) => self.k.shared.get(s.0 as usize).map(|s| s.name.clone()),
        }
        .unwrap_or_else(|| "?".into())
    }

    /// The buffer a global parameter names.
    fn buffer(&self, space: Space) -> Result<Option<usize>> {
        match space {
            Space::Global(p) => match self.params.get(p.0 as usize) {
                Some(ParamVal::Buffer(b)) if *b < self.buffers.len() => Ok(Some(*b)),
                _ => Err(self.invalid(format!("parameter {} is not a buffer", p.0))),
            },
            Space::Shared(s) if (s.0 as usize) < self.shared.len() => Ok(None),
            Space::Shared(s) => Err(self.invalid(format!("no shared array {}", s.0))),
        }
    }

    /// Checks a `w`-wide access by thread `t` at index value `bits` of
    /// `idt`, and returns the first element's index.
    fn check_access(
        &self,
        t: u32,
        what: &str,
        space: Space,
        idt: DType,
        bits: u64,
        w: usize,
    ) -> Result<usize> {
        let Some(i) = value::to_int(idt, bits) else {
            return Err(self.invalid(format!("a {what} index of {idt}")));
        };
        let len = match self.buffer(space)? {
            Some(b) => self.buffers[b].len(),
            None => match space {
                Space::Shared(s) => self.shared[s.0 as usize].data.len(),
                Space::Global(_) => 0,
            },
        };
        let name = self.space_name(space);
        let kind = match space {
            Space::Global(_) => "buffer",
            Space::Shared(_) => "shared array",
        };
        if w > 1 && i % w as i128 != 0 {
            return Err(self.fault(
                t,
                format!(
                    "misaligned {w}-wide {what} of `{name}` at index {i} (not a multiple of {w})"
                ),
            ));
        }
        if i < 0 || i + w as i128 > len as i128 {
            let range = if w == 1 {
                format!("[{i}]")
            } else {
                format!("[{i}..{}]", i + w as i128)
            };
            return Err(self.fault(
                t,
                format!("out-of-bounds {what} of `{name}`{range}: the {kind} has {len} elements"),
            ));
        }
        Ok(i as usize)
    }

    /// Thread `t` touches element `i` (checked) of `space`: counts it, and
    /// on shared memory records it for race detection.
    fn touch(&mut self, space: Space, t: u32, i: usize, how: Access) -> Result<()> {
        match space {
            Space::Global(_) => self.stats.global_accesses += 1,
            Space::Shared(s) => {
                self.stats.shared_accesses += 1;
                let epoch = self.epoch;
                let arr = &mut self.shared[s.0 as usize];
                if let Err(r) = arr.touch(i, t, how, epoch) {
                    return Err(self.fault(
                        t,
                        format!(
                            "shared-memory race on `{}`[{i}]: thread {:?} {} it and thread {:?} {} it since the last barrier",
                            self.space_name(space),
                            self.tid(t),
                            r.this_does,
                            self.tid(r.other),
                            r.other_did,
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Element `i` (checked) of `space`.
    fn get(&self, space: Space, i: usize) -> Result<u64> {
        let v = match (space, self.buffer(space)?) {
            (Space::Global(_), Some(b)) => self.buffers[b].get(i),
            (Space::Shared(s), _) => self.shared[s.0 as usize].data.get(i).copied(),
            (Space::Global(_), None) => None,
        };
        v.ok_or_else(|| self.invalid(format!("element {i} of `{}`", self.space_name(space))))
    }

    /// Sets element `i` (checked) of `space`.
    fn put(&mut self, space: Space, i: usize, bits: u64) -> Result<()> {
        let ok = match (space, self.buffer(space)?) {
            (Space::Global(_), Some(b)) => self.buffers[b].set(i, bits),
            (Space::Shared(s), _) => match self.shared[s.0 as usize].data.get_mut(i) {
                Some(slot) => {
                    *slot = bits;
                    true
                }
                None => false,
            },
            (Space::Global(_), None) => false,
        };
        if !ok {
            return Err(self.invalid(format!("element {i} of `{}`", self.space_name(space))));
        }
        Ok(())
    }

    fn load(
        &mut self,
        dst: &[Var],
        space: Space,
        index: &Expr,
        mask: Option<&(Expr, Expr)>,
        lanes: &[u32],
    ) -> Result<()> {
        let w = dst.len();
        let on = match mask {
            Some((m, other)) => {
                let (_, mv) = self.eval(m, lanes)?;
                let (on, off) = split(lanes, &mv);
                let (_, ov) = self.eval(other, &off)?;
                for &v in dst {
                    self.set(v, &off, &ov)?;
                }
                on
            }
            None => lanes.to_vec(),
        };
        let (idt, iv) = self.eval(index, &on)?;
        let mut out = vec![Vec::with_capacity(on.len()); w];
        for (&t, &bits) in on.iter().zip(&iv) {
            let base = self.check_access(t, "load", space, idt, bits, w)?;
            for (e, col) in out.iter_mut().enumerate() {
                self.touch(space, t, base + e, Access::Read)?;
                col.push(self.get(space, base + e)?);
            }
        }
        for (&v, col) in dst.iter().zip(&out) {
            self.set(v, &on, col)?;
        }
        Ok(())
    }

    fn store(
        &mut self,
        space: Space,
        index: &Expr,
        values: &[Expr],
        mask: Option<&Expr>,
        lanes: &[u32],
    ) -> Result<()> {
        let on = match mask {
            Some(m) => split(lanes, &self.eval(m, lanes)?.1).0,
            None => lanes.to_vec(),
        };
        let (idt, iv) = self.eval(index, &on)?;
        let vals = values
            .iter()
            .map(|e| Ok(self.eval(e, &on)?.1))
            .collect::<Result<Vec<_>>>()?;
        for (j, (&t, &bits)) in on.iter().zip(&iv).enumerate() {
            let base = self.check_access(t, "store", space, idt, bits, values.len())?;
            for (e, col) in vals.iter().enumerate() {
                self.touch(space, t, base + e, Access::Write)?;
                self.put(space, base + e, col[j])?;
            }
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        op: AtomicOp,
        space: Space,
        index: &Expr,
        value: &Expr,
        dst: Option<Var>,
        lanes: &[u32],
    ) -> Result<()> {
        let (idt, iv) = self.eval(index, lanes)?;
        let (d, vv) = self.eval(value, lanes)?;
        let mut olds = Vec::with_capacity(lanes.len());
        for ((&t, &bits), &v) in lanes.iter().zip(&iv).zip(&vv) {
            let i = self.check_access(t, "atomic", space, idt, bits, 1)?;
            self.touch(space, t, i, Access::Atomic)?;
            let old = self.get(space, i)?;
            let new = match op {
                AtomicOp::Add => value::binary(BinOp::Add, d, old, v),
                AtomicOp::Min => value::binary(BinOp::Min, d, old, v),
                AtomicOp::Max => value::binary(BinOp::Max, d, old, v),
                AtomicOp::Exch => Some(v),
            };
            self.put(space, i, new.unwrap_or(old))?;
            olds.push(old);
        }
        self.stats.atomics += lanes.len() as u64;
        match dst {
            Some(v) => self.set(v, lanes, &olds),
            None => Ok(()),
        }
    }

    fn barrier(&mut self, lanes: &[u32]) -> Result<()> {
        if lanes.len() != self.nthreads {
            let missing = (0u32..)
                .zip(lanes)
                .find(|(i, &t)| *i != t)
                .map_or(lanes.len() as u32, |(i, _)| i);
            return Err(self.fault(
                lanes.first().copied().unwrap_or(0),
                format!(
                    "divergent barrier: {} of the block's {} threads reached it; thread {:?} did not \
                     (it took another branch or left the loop)",
                    lanes.len(),
                    self.nthreads,
                    self.tid(missing)
                ),
            ));
        }
        self.stats.barriers += 1;
        self.epoch += 1;
        Ok(())
    }

    /// Checks that `lanes` is made of whole warps of 32 active lanes.
    fn check_warps(&self, lanes: &[u32], what: &str) -> Result<()> {
        let mut j = 0;
        while let Some(&first) = lanes.get(j) {
            let warp = first / 32;
            let in_block = (self.nthreads - warp as usize * 32).min(32);
            let count = lanes[j..].iter().take_while(|&&t| t / 32 == warp).count();
            if in_block < 32 {
                return Err(self.fault(
                    first,
                    format!(
                        "{what} in warp {warp}, which has only {in_block} threads (the block's {} \
                         threads do not fill it); a {what} needs all 32 lanes",
                        self.nthreads
                    ),
                ));
            }
            if count < 32 {
                let missing = (warp * 32..)
                    .zip(&lanes[j..j + count])
                    .find(|(i, &t)| *i != t)
                    .map_or(warp * 32 + count as u32, |(i, _)| i);
                return Err(self.fault(
                    first,
                    format!(
                        "{what} executed by {count} of the 32 lanes of warp {warp}; lane {} is not \
                         active, and every lane must execute it",
                        missing % 32
                    ),
                ));
            }
            j += count;
        }
        Ok(())
    }

    fn shuffle(
        &mut self,
        dst: Var,
        kind: ShuffleKind,
        value: &Expr,
        lane: &Expr,
        width: u32,
        lanes: &[u32],
    ) -> Result<()> {
        if !width.is_power_of_two() || width > 32 {
            return Err(self.invalid(format!("shuffle width {width}")));
        }
        self.check_warps(lanes, "shuffle")?;
        let (_, vals) = self.eval(value, lanes)?;
        let (_, ops) = self.eval(lane, lanes)?;
        // `lanes` is whole warps in order: entry `j - l` is lane 0 of the
        // warp of entry `j`, whose lane is `l`. As PTX's `shfl.sync`, the
        // operand counts modulo 32 and `maxLane` is the segment's last lane.
        let out: Vec<u64> = (0..lanes.len())
            .map(|j| {
                let l = lanes[j] % 32;
                let b = (ops[j] & 31) as u32;
                let seg = l & !(width - 1);
                let last = seg + width - 1;
                let src = match kind {
                    ShuffleKind::Xor if l ^ b <= last => l ^ b,
                    ShuffleKind::Down if l + b <= last => l + b,
                    ShuffleKind::Up if l >= seg + b => l - b,
                    ShuffleKind::Idx => seg + (b & (width - 1)),
                    ShuffleKind::Xor | ShuffleKind::Down | ShuffleKind::Up => l,
                };
                vals[j - l as usize + src as usize]
            })
            .collect();
        self.stats.shuffles += lanes.len() as u64 / 32;
        self.set(dst, lanes, &out)
    }

    /// `ldmatrix`: per warp, lane `8i + r` names row `r` of matrix `i`
    /// (8 aligned elements); each lane takes its fragment elements.
    fn ldmatrix(
        &mut self,
        dst: &[Var],
        space: Space,
        index: &Expr,
        trans: bool,
        lanes: &[u32],
    ) -> Result<()> {
        let n = dst.len() / 2;
        if !matches!(n, 1 | 2 | 4) || !dst.len().is_multiple_of(2) {
            return Err(self.invalid(format!("ldmatrix into {} variables", dst.len())));
        }
        self.check_warps(lanes, "ldmatrix")?;
        let (idt, iv) = self.eval(index, lanes)?;
        let mut out = vec![vec![0u64; lanes.len()]; dst.len()];
        for w0 in (0..lanes.len()).step_by(32) {
            let mut rows = [[0u64; 8]; 32];
            for (row, lane) in rows.iter_mut().zip(w0..).take(8 * n) {
                let t = lanes[lane];
                let base = self.check_access(t, "ldmatrix", space, idt, iv[lane], 8)?;
                for (e, x) in row.iter_mut().enumerate() {
                    self.touch(space, t, base + e, Access::Read)?;
                    *x = self.get(space, base + e)?;
                }
            }
            for l in 0..32 {
                for (j, col) in out.iter_mut().enumerate() {
                    let (r, c) = mma::ldmatrix_coord(l, j % 2, trans);
                    col[w0 + l] = rows[8 * (j / 2) + r][c];
                }
            }
        }
        for (&v, col) in dst.iter().zip(&out) {
            self.set(v, lanes, col)?;
        }
        Ok(())
    }

    fn mma(
        &mut self,
        shape: MmaShape,
        d: &[Var],
        a: &[Expr],
        b: &[Expr],
        c: &[Expr],
        lanes: &[u32],
    ) -> Result<()> {
        let k = mma::k_of(shape);
        if a.len() != k / 2 || b.len() != k / 4 || c.len() != 4 || d.len() != 4 {
            return Err(self.invalid(format!("{shape:?} with wrong fragment sizes")));
        }
        self.check_warps(lanes, "mma")?;
        let frag = |es: &[Expr]| -> Result<(DType, Vec<Vec<u64>>)> {
            let mut dt = DType::F32;
            let mut cols = Vec::with_capacity(es.len());
            for e in es {
                let (d, v) = self.eval(e, lanes)?;
                dt = d;
                cols.push(v);
            }
            Ok((dt, cols))
        };
        let (dt, av) = frag(a)?;
        let (_, bv) = frag(b)?;
        let (_, cv) = frag(c)?;
        let mut out = vec![vec![0u64; lanes.len()]; 4];
        for w0 in (0..lanes.len()).step_by(32) {
            let r = mma::mma_warp(shape, dt, |which, i, lane| {
                let cols = match which {
                    0 => &av,
                    1 => &bv,
                    _ => &cv,
                };
                cols[i][w0 + lane]
            });
            for (lane, vals) in r.iter().enumerate() {
                for (col, &v) in out.iter_mut().zip(vals) {
                    col[w0 + lane] = v;
                }
            }
        }
        self.stats.mmas += lanes.len() as u64 / 32;
        for (&v, col) in d.iter().zip(&out) {
            self.set(v, lanes, col)?;
        }
        Ok(())
    }
}
