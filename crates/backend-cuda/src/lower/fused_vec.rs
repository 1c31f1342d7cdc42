//! Vectorised fused loop kernels: a loop group (or one elementwise
//! equation) whose every buffer access is contiguous in the loop order runs
//! with 16-byte vector accesses, several vectors in flight per thread.
//!
//! A group qualifies when each buffer operand is *contiguous* (its flat
//! index is `base + i` at linear space index `i`, with `base` a multiple
//! of the width), a *block* operand (laid out as the space over a suffix
//! of dimensions holding a multiple of `W` elements, with `base` and the
//! other strides multiples of `W`: a bias broadcast along rows; addressed
//! from the multi-index of each vector's first element) or a *scalar*
//! (every stride zero: one element, loaded once per thread). The width `W` is `16 / s` elements for the
//! largest element size `s` of any buffer the kernel reads or writes (at
//! most 8, KIR's widest vector), so every access is at most 16 bytes; the
//! root's result is written at the identity, so stores are contiguous too.
//!
//! The kernel (a grid-stride loop over vectors, sized by `run::sized`):
//! - a main loop in which each thread issues the loads of `U` vectors
//!   `i, i + S, …, i + (U-1)·S` (`S` the grid's threads) before computing
//!   and storing any of them, while all `U` are in range;
//! - a loop over the remaining vectors one at a time;
//! - a scalar epilogue over the last `n mod W` elements.
//!
//! Invariants: vector `v` covers elements `v·W .. v·W + W`, all below
//! `n` (`v < n / W`), so no access needs a mask; every vector index is a
//! multiple of `W` because `base`, the strides outside a block and `v·W`
//! are, and a vector never crosses a block (`W` divides the block); lanes are evaluated in
//! member order exactly as the scalar path evaluates one element, so
//! results are bitwise those of the scalar kernel.

use super::fused::{apply, eval_members};
use super::kernel::{
    affine, compute, finish, i64c, lit_expr, multi_index, store, strides, Args, THREADS,
};
use super::plan::{BufId, Step};
use super::{atom_type, Ctx, Env, Value};
use crate::kir::{Expr, KernelBuilder, LaunchDims, ParamId};
use jaxon_ir::passes::{operand_map, IndexMap};
use jaxon_ir::{Atom, Binder, DType, Eqn, IrError, Jaxpr, Var};
use std::collections::HashMap;

/// Widest vector in elements (KIR's limit).
const MAX_WIDTH: usize = 8;
/// Loaded lanes per operand in flight per thread, at most (`U · W`).
const LANES_IN_FLIGHT: usize = 16;
/// The most KIR (its `Debug` text, in bytes) the lanes of one main-loop
/// trip may hold: `U · W` copies of the scalar body. A body too large for
/// `W` copies (inline special functions: compute-bound, where wide
/// accesses gain nothing) keeps the scalar kernel; a smaller one is
/// unrolled as far as this allows.
const LANE_CODE_BUDGET: usize = 32 * 1024;

/// How one operand of one member is read.
#[derive(Clone, Debug)]
enum Src {
    /// A value of an earlier member, or a literal: nothing to load.
    Value,
    /// Buffer elements `base + i` (a multiple-of-`W` `base`).
    Contig { b: BufId, base: i64 },
    /// Buffer elements `base + Σ strides[d]·idx[d]`, contiguous over
    /// blocks of the space's trailing dimensions whose element count is a
    /// multiple of `W` (a bias added along rows): `W` consecutive `i`
    /// starting at a multiple of `W` stay in one block.
    Block {
        b: BufId,
        base: i64,
        strides: Vec<i64>,
    },
    /// One element of a buffer, the same for every `i`.
    Scalar { b: BufId, index: i64 },
}

/// A group's vector plan.
pub(crate) struct Plan {
    /// Elements per vector.
    pub width: usize,
    /// Vectors in flight per thread in the main loop.
    pub unroll: usize,
    /// `srcs[m][slot]`: how operand `slot` of member `m` is read.
    srcs: Vec<Vec<Src>>,
}

impl Plan {
    /// The plan of a kernel that reads buffer `b` (at the identity of its
    /// space) and nothing else, or `None` when its elements are not 1, 2,
    /// 4 or 8 bytes.
    pub fn one_buffer(ctx: &Ctx, b: BufId) -> Result<Option<Plan>, IrError> {
        let size = ctx.decl(b)?.dtype.size_bytes();
        if !matches!(size, 1 | 2 | 4 | 8) {
            return Ok(None);
        }
        Ok(Some(Plan {
            width: (16 / size).min(MAX_WIDTH),
            unroll: 1,
            srcs: vec![vec![Src::Contig { b, base: 0 }]],
        }))
    }
}

/// The vector plan of `members` over `space`, with `size` the element size
/// of what else the kernel accesses (its result), or `None` when some
/// access is neither contiguous nor scalar, or the space is too small to
/// fill one vector.
pub(crate) fn plan(
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    members: &[(&Eqn, IndexMap)],
    space: &[usize],
    size: usize,
) -> Result<Option<Plan>, IrError> {
    let n: usize = space.iter().product();
    let row_major = strides(space);
    let mut size = size;
    let mut srcs = Vec::with_capacity(members.len());
    let mut made: Vec<Var> = Vec::new();
    let mut bases = Vec::new();
    // Per block operand: the block's elements, and the strides outside it.
    let mut blocks: Vec<(usize, Vec<i64>)> = Vec::new();
    for (eqn, map) in members {
        let mut row = Vec::with_capacity(eqn.inputs.len());
        for (slot, a) in eqn.inputs.iter().enumerate() {
            if let Atom::Var(v) = a {
                if made.contains(v) {
                    row.push(Src::Value);
                    continue;
                }
            }
            let b = match env.atom(a)? {
                Value::Lit(_) => {
                    row.push(Src::Value);
                    continue;
                }
                Value::Buf(b) => b,
            };
            let (_, shape) = atom_type(jaxpr, a)?;
            let Some(m) = operand_map(jaxpr, eqn, map, slot) else {
                return Ok(None);
            };
            let (base, st) = (m.base(&shape), m.strides(&shape));
            if st.len() != space.len() {
                return Ok(None);
            }
            let live = |d: usize| space[d] > 1;
            size = size.max(ctx.decl(b)?.dtype.size_bytes());
            if (0..space.len()).all(|d| !live(d) || st[d] == 0) {
                row.push(Src::Scalar { b, index: base });
            } else if (0..space.len()).all(|d| !live(d) || st[d] == row_major[d]) {
                bases.push(base);
                row.push(Src::Contig { b, base });
            } else {
                // The longest suffix of dimensions laid out as the space's.
                let mut k0 = space.len();
                while k0 > 0 && (!live(k0 - 1) || st[k0 - 1] == row_major[k0 - 1]) {
                    k0 -= 1;
                }
                let block: usize = space[k0..].iter().product();
                let outer = (0..k0).filter(|&d| live(d)).map(|d| st[d]).collect();
                bases.push(base);
                blocks.push((block, outer));
                row.push(Src::Block {
                    b,
                    base,
                    strides: st,
                });
            }
        }
        for o in &eqn.outputs {
            if let Binder::Var(v) = o {
                made.push(*v);
            }
        }
        srcs.push(row);
    }
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Ok(None);
    }
    let width = (16 / size).min(MAX_WIDTH);
    let w = width as i64;
    let misaligned = bases.iter().any(|&b| b.rem_euclid(w) != 0)
        || blocks
            .iter()
            .any(|(block, outer)| block % width != 0 || outer.iter().any(|s| s.rem_euclid(w) != 0));
    if n < width || misaligned {
        return Ok(None);
    }
    let (cost, calls) = body_size(ctx, jaxpr, env, members, space)?;
    // 8-byte elements with math functions or divisions: NVRTC calls the
    // f64 slow paths, and the lanes' values live across those calls spill
    // (seen on the complex kernels for sm_80); compute-bound anyway.
    if cost.saturating_mul(width) > LANE_CODE_BUDGET || (size == 8 && calls) {
        return Ok(None);
    }
    let unroll = (LANES_IN_FLIGHT / width)
        .clamp(1, 4)
        .min(LANE_CODE_BUDGET / cost.saturating_mul(width).max(1))
        .max(1);
    Ok(Some(Plan {
        width,
        unroll,
        srcs,
    }))
}

/// The size of one element's scalar body (the `Debug` text of its KIR, a
/// proxy for the code one lane adds), built in a throwaway kernel, and
/// whether it has math functions, divisions or remainders (what NVRTC may
/// turn into calls).
fn body_size(
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    members: &[(&Eqn, IndexMap)],
    space: &[usize],
) -> Result<(usize, bool), IrError> {
    let mut k = KernelBuilder::new("probe", THREADS);
    let mut args = Args::new();
    let i = k.var("i", DType::I64);
    let idx = multi_index(&mut k, Expr::var(i), space);
    k.begin_body();
    eval_members(&mut k, &mut args, ctx, jaxpr, env, members, &idx)?;
    let text = format!("{:?}", k.end_body());
    let calls = ["Math(", "Binary(Div", "Binary(Rem"]
        .iter()
        .any(|c| text.contains(c));
    Ok((text.len(), calls))
}

/// One buffer's parameter and dtype.
fn param(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    b: BufId,
) -> Result<(ParamId, DType), IrError> {
    Ok((args.buffer(k, ctx, b, false)?, ctx.decl(b)?.dtype))
}

/// `x` (a variable of storage dtype `d`) in `d`'s compute dtype.
fn widen(x: Expr, d: DType) -> Expr {
    if compute(d) != d {
        x.cast(compute(d))
    } else {
        x
    }
}

/// The vectorised kernel of a fused group whose root writes `out` at the
/// identity of `space`; `None` when the group does not qualify (the caller
/// then builds the scalar kernel). The launch step is pushed on `steps`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn kernel(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    members: &[(&Eqn, IndexMap)],
    space: &[usize],
    out: BufId,
    root: Var,
    steps: &mut Vec<Step>,
) -> Result<bool, IrError> {
    let size = ctx.decl(out)?.dtype.size_bytes();
    let Some(p) = plan(ctx, jaxpr, env, members, space, size)? else {
        return Ok(false);
    };
    let n: usize = space.iter().product();
    let (w, u) = (p.width, p.unroll);
    let nvec = (n / w) as i64;
    let root_name = members.last().map_or("loop", |(e, _)| e.primitive.name());
    let name = ctx.name(&format!("fused_{root_name}_v{w}"));
    let mut k = KernelBuilder::new(&name, THREADS);
    k.grid_stride();
    let mut args = Args::new();
    let c: &Ctx = ctx;

    let scalars = load_scalars(&mut k, &mut args, c, &p)?;
    let tid = k.let_(
        "tid",
        DType::I64,
        Expr::global_thread_id_x().cast(DType::I64),
    );
    let stride = k.let_(
        "stride",
        DType::I64,
        (Expr::grid_dim_x() * Expr::block_dim_x()).cast(DType::I64),
    );
    let vi = k.var("vi", DType::I64);
    k.assign(vi, Expr::var(tid));
    let body = Body {
        p: &p,
        jaxpr,
        env,
        members,
        space,
        root: Root::Var(root),
        scalars: &scalars,
    };
    if u > 1 {
        // Main loop: `u` vectors per trip, all in range.
        let end = i64c(nvec) - Expr::var(stride) * i64c(u as i64 - 1);
        let step = Expr::var(stride) * i64c(u as i64);
        let mut res = Ok(());
        k.for_(vi, Expr::var(vi), end, step, |k| {
            let firsts: Vec<Expr> = (0..u)
                .map(|j| (Expr::var(vi) + Expr::var(stride) * i64c(j as i64)) * i64c(w as i64))
                .collect();
            res = body.vectors(k, &mut args, c, out, &firsts);
        });
        res?;
    }
    // The remaining vectors, one per trip.
    let mut res = Ok(());
    k.for_(vi, Expr::var(vi), i64c(nvec), Expr::var(stride), |k| {
        res = body.vectors(k, &mut args, c, out, &[Expr::var(vi) * i64c(w as i64)]);
    });
    res?;
    // The scalar tail.
    let tail = nvec * w as i64;
    if (tail as usize) < n {
        let t = k.var("t", DType::I64);
        let mut res = Ok(());
        k.for_(
            t,
            i64c(tail) + Expr::var(tid),
            i64c(n as i64),
            Expr::var(stride),
            |k| {
                let idx = multi_index(k, Expr::var(t), space);
                res = eval_members(k, &mut args, c, jaxpr, env, members, &idx).and_then(|vals| {
                    let v = vals.get(&root).cloned().ok_or_else(|| {
                        IrError::Invalid("cuda lowering: the root was not evaluated".into())
                    })?;
                    store(k, &mut args, c, out, Expr::var(t), v)
                });
            },
        );
        res?;
    }
    let kernel = finish(k)?;
    let id = ctx.kernel(kernel);
    // Blocks for one main trip per thread; `run::sized` caps them at the
    // device's resident blocks.
    let per_block = (THREADS as u64) * u as u64;
    let blocks = (nvec as u64)
        .div_ceil(per_block)
        .clamp(1, u64::from(u32::MAX >> 1));
    steps.push(Step::Launch {
        kernel: id,
        dims: LaunchDims::linear(blocks as u32, THREADS),
        args: args.args,
    });
    Ok(true)
}

/// Loads every scalar operand of `p` (once per thread, where called).
pub(crate) fn load_scalars(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    p: &Plan,
) -> Result<Scalars, IrError> {
    let mut scalars: Scalars = HashMap::new();
    for row in &p.srcs {
        for s in row {
            if let Src::Scalar { b, index } = s {
                if let std::collections::hash_map::Entry::Vacant(slot) = scalars.entry((*b, *index))
                {
                    let (pid, d) = param(k, args, ctx, *b)?;
                    let x = k.var("s", d);
                    k.load(&[x], pid.into(), i64c(*index), None);
                    slot.insert(widen(Expr::var(x), d));
                }
            }
        }
    }
    Ok(scalars)
}

/// Loaded scalar operands, by buffer and element.
pub(crate) type Scalars = HashMap<(BufId, i64), Expr>;
/// Which elements an operand load reads: the buffer, the base, and the
/// strides of a block operand (empty for a contiguous one).
type Key = (BufId, i64, Vec<i64>);
/// One vector's loaded lanes (compute dtype), by operand.
pub(crate) type Lanes = HashMap<Key, Vec<Expr>>;

/// The key of a loaded operand (`None` for values and scalars).
fn key(s: &Src) -> Option<Key> {
    match s {
        Src::Contig { b, base } => Some((*b, *base, Vec::new())),
        Src::Block { b, base, strides } => Some((*b, *base, strides.clone())),
        Src::Value | Src::Scalar { .. } => None,
    }
}

/// The value a vector body computes per lane.
pub(crate) enum Root {
    /// A member's result.
    Var(Var),
    /// The elements of a buffer at the identity (no members).
    Buf(BufId),
}

/// What the vector body of a kernel reads.
pub(crate) struct Body<'a> {
    pub p: &'a Plan,
    pub jaxpr: &'a Jaxpr,
    pub env: &'a Env,
    pub members: &'a [(&'a Eqn, IndexMap)],
    /// The loop space (block operands index it).
    pub space: &'a [usize],
    pub root: Root,
    pub scalars: &'a Scalars,
}

impl Body<'_> {
    /// Issues the loads of one vector's contiguous operands starting at
    /// element `first` (a multiple of the width).
    pub fn load(
        &self,
        k: &mut KernelBuilder,
        args: &mut Args,
        ctx: &Ctx,
        first: &Expr,
    ) -> Result<Lanes, IrError> {
        let w = self.p.width;
        let mut here: Lanes = HashMap::new();
        let mut idx: Option<Vec<Expr>> = None;
        for row in &self.p.srcs {
            for s in row {
                let Some(key) = key(s) else { continue };
                if here.contains_key(&key) {
                    continue;
                }
                let (b, base, strides) = &key;
                let (pid, d) = param(k, args, ctx, *b)?;
                let index = if !strides.is_empty() {
                    let idx = idx.get_or_insert_with(|| multi_index(k, first.clone(), self.space));
                    affine(*base, strides, idx)
                } else if *base == 0 {
                    first.clone()
                } else {
                    first.clone() + i64c(*base)
                };
                let xs: Vec<_> = (0..w).map(|_| k.var("x", d)).collect();
                k.load(&xs, pid.into(), index, None);
                let lanes = xs.iter().map(|x| widen(Expr::var(*x), d)).collect();
                here.insert(key, lanes);
            }
        }
        Ok(here)
    }

    /// Loads, evaluates and stores (to `out`) the vectors starting at the
    /// elements `firsts` (each a multiple of the width): every load is
    /// issued before any lane is computed.
    fn vectors(
        &self,
        k: &mut KernelBuilder,
        args: &mut Args,
        ctx: &Ctx,
        out: BufId,
        firsts: &[Expr],
    ) -> Result<(), IrError> {
        let w = self.p.width;
        let mut loaded: Vec<Lanes> = Vec::new();
        for first in firsts {
            loaded.push(self.load(k, args, ctx, first)?);
        }
        let od = ctx.decl(out)?.dtype;
        let op = args.buffer(k, ctx, out, true)?;
        for (first, here) in firsts.iter().zip(&loaded) {
            let mut outs = Vec::with_capacity(w);
            for lane in 0..w {
                let v = self.lane(k, here, lane)?;
                outs.push(if compute(od) != od { v.cast(od) } else { v });
            }
            k.store(op.into(), first.clone(), outs, None);
        }
        Ok(())
    }

    /// The root's value at lane `lane` of one vector (compute dtype).
    pub fn lane(&self, k: &mut KernelBuilder, here: &Lanes, lane: usize) -> Result<Expr, IrError> {
        let lost = || IrError::Invalid("cuda lowering: a vector lane lost an operand".into());
        let root = match self.root {
            Root::Var(v) => v,
            Root::Buf(b) => {
                return here
                    .get(&(b, 0, Vec::new()))
                    .and_then(|l| l.get(lane))
                    .cloned()
                    .ok_or_else(lost)
            }
        };
        let mut vals: HashMap<Var, Expr> = HashMap::new();
        for ((eqn, _), row) in self.members.iter().zip(&self.p.srcs) {
            let mut xs = Vec::with_capacity(row.len());
            let mut dts = Vec::with_capacity(row.len());
            for (a, s) in eqn.inputs.iter().zip(row) {
                let (dt, _) = atom_type(self.jaxpr, a)?;
                dts.push(dt);
                let x = match s {
                    Src::Contig { .. } | Src::Block { .. } => key(s)
                        .and_then(|q| here.get(&q))
                        .and_then(|l| l.get(lane))
                        .cloned(),
                    Src::Scalar { b, index } => self.scalars.get(&(*b, *index)).cloned(),
                    Src::Value => match a {
                        Atom::Var(v) if vals.contains_key(v) => vals.get(v).cloned(),
                        _ => match self.env.atom(a)? {
                            Value::Lit(l) => Some(lit_expr(&l)),
                            Value::Buf(_) => None,
                        },
                    },
                };
                xs.push(x.ok_or_else(lost)?);
            }
            let (b, out_dt, r) = apply(k, self.jaxpr, eqn, &dts, xs)?;
            let v = k.let_("v", compute(out_dt), r);
            if let Binder::Var(var) = b {
                vals.insert(*var, Expr::var(v));
            }
        }
        vals.get(&root)
            .cloned()
            .ok_or_else(|| IrError::Invalid("cuda lowering: the root was not evaluated".into()))
    }
}
