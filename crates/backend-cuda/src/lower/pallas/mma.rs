//! `dot_general` inside a `pallas_call` kernel on tensor cores: `f16`/`bf16`
//! operands in block memory (shared or global scratch), `f32` accumulation
//! by `mma.sync.m16n8k16` ([`Stmt::Mma`](crate::kir::Stmt::Mma)); `f32`
//! operands into an `f32` result by `mma.sync.m16n8k8` on tf32 where the
//! program's options allow TF32 at the dot's precision (the GPU's default,
//! as JAX's Pallas on a GPU; `lower/precision.rs`), one element per
//! fragment register (`k = t` and `t + 4`), no `ldmatrix`.
//!
//! Eligible dots: both operands regions of one dtype, `f16` or `bf16`; the
//! result `f32`, `f16` or `bf16`; one contracting dimension per operand,
//! either of its last two (`a @ b`, `a @ b.T`, `a.T @ b`, `a.T @ b.T`);
//! batch dimensions, if any, the leading ones of both operands in order.
//! Anything else returns `None` and takes the FMA loop of `ops.rs`.
//!
//! The output `[B, M, N]` is cut into 16×8 `mma` tiles, grouped into warp
//! tiles of `MT × NT` of them (register blocking: an `A` fragment serves
//! `NT` tiles, a `B` fragment `MT`); warp `w` of the block's four owns the
//! warp tiles `w, w + 4, …`. Each walks `K` in steps of 16, loading its
//! fragments, and accumulates in `4 · MT · NT` `f32` registers; the result
//! is rounded to the output dtype and stored once. An operand that is a
//! whole number of tiles in shared memory loads its fragments by
//! `ldmatrix` (`.x4` per `A` tile and per pair of `B` tiles, `.trans` when
//! `k` is not the contiguous dimension); otherwise element by element in
//! PTX's lane layout (two consecutive `k` as one 2-element access where
//! they are adjacent in memory), where sizes that are not multiples of the
//! tile (`M % 16`, `N % 8`, `K % 16`) are padded: masked loads give 0 past
//! the edge and masked stores drop the padding.
//!
//! `acc + dot(x, y)` (the dot's only use, `acc` f32) is one step
//! ([`dot_add`]): the accumulators start from `acc` instead of 0, so the
//! dot's own region and the add's pass do not exist.
//!
//! Invariants:
//! - The step is `barrier; per-warp tiles; barrier` like [`Block::each`],
//!   so it reads operands written before it and its result is visible after.
//! - The tile loop's bounds are warp-uniform (its start is the warp index),
//!   so all 32 lanes of a warp reach every `mma` and `ldmatrix` together,
//!   as `.sync.aligned` requires; no barrier is inside it.
//! - Tile-local indices are `i32`; element addresses are `i32` in shared
//!   memory (smaller than 2³¹ elements) and `i64` in global scratch.
//! - Region bases are multiples of [`ALIGN`] elements (`Block::alloc`), so
//!   a pair access at an even element offset is aligned and an `ldmatrix`
//!   row (8 elements from a multiple of 8) is 16-byte aligned.
//! - Accumulation order differs from the FMA loop's (16-wide `k` chunks,
//!   each summed by the tensor core); results agree within `f32` rounding
//!   of the sum, not bit for bit.

use super::super::kernel::round_to;
use super::block::{out_type, BVal, Block, Region, THREADS};
use super::ops::{dtype_of, shape_of};
use crate::kir::{Const, Expr, KernelBuilder, MmaShape, SharedId, Space, Var};
use jaxon_ir::primitive::{BinaryOp, Elementwise, Linalg, Primitive};
use jaxon_ir::primitive::{DotDimensionNumbers, Precision};
use jaxon_ir::{Atom, Binder, Jaxpr, Var as JVar};
use jaxon_ir::{DType, IrError};
use std::collections::HashMap;

/// The element alignment of every region's base.
pub(super) const ALIGN: usize = 8;

/// Warps per block.
const WARPS: i64 = THREADS as i64 / 32;

/// One operand as a matrix of `rows` (the free dimension: `M` for `A`, `N`
/// for `B`) by `K`, in a region.
#[derive(Clone, Debug)]
struct Operand {
    region: Region,
    /// Elements between batch entries.
    batch_stride: i64,
    /// Elements between consecutive free-dimension indices.
    row_stride: i64,
    /// Elements between consecutive `k`.
    k_stride: i64,
}

/// A dot that runs on tensor cores.
#[derive(Clone, Debug)]
struct Plan {
    a: Operand,
    b: Operand,
    /// Batch entries (the product of the batch dimensions).
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
    /// 16-row tiles per warp tile.
    mt: usize,
    /// 8-column tiles per warp tile.
    nt: usize,
}

/// An operand of `xs` as a `rows × K` matrix, given its contracting
/// dimension (one of its last two) and `nb` leading batch dimensions.
fn operand(r: &Region, nb: usize, contract: usize) -> Option<(Operand, usize, usize)> {
    let s = &r.shape;
    if s.len() != nb + 2 || contract < nb {
        return None;
    }
    let (r0, r1) = (s[nb], s[nb + 1]);
    let (rows, k, row_stride, k_stride) = if contract == nb + 1 {
        (r0, r1, r1 as i64, 1)
    } else {
        (r1, r0, 1, r1 as i64)
    };
    Some((
        Operand {
            region: r.clone(),
            batch_stride: (r0 * r1) as i64,
            row_stride,
            k_stride,
        },
        rows,
        k,
    ))
}

/// The plan for `dot_general` of `x`, `y` into `d[shape]`, or `None` when
/// it is not eligible (see the module docs).
fn plan(
    dn: &DotDimensionNumbers,
    x: &BVal,
    y: &BVal,
    d: DType,
    shape: &[usize],
    tf32: bool,
) -> Option<Plan> {
    let (BVal::Array(xr), BVal::Array(yr)) = (x, y) else {
        return None;
    };
    let half = matches!(xr.dtype, DType::F16 | DType::BF16);
    let single = tf32 && xr.dtype == DType::F32 && d == DType::F32;
    let out_ok = matches!(d, DType::F32 | DType::F16 | DType::BF16);
    if !(half || single) || xr.dtype != yr.dtype || !out_ok {
        return None;
    }
    let nb = dn.lhs_batch.len();
    let leading: Vec<usize> = (0..nb).collect();
    if dn.lhs_batch != leading || dn.rhs_batch != leading {
        return None;
    }
    let (&[lc], &[rc]) = (dn.lhs_contracting.as_slice(), dn.rhs_contracting.as_slice()) else {
        return None;
    };
    let (a, m, ka) = operand(xr, nb, lc)?;
    let (b, n, kb) = operand(yr, nb, rc)?;
    let batch_dims = &xr.shape[..nb];
    let batch: usize = batch_dims.iter().product();
    let want: Vec<usize> = batch_dims.iter().copied().chain([m, n]).collect();
    if ka != kb || yr.shape[..nb] != *batch_dims || want != shape || m * n * ka * batch == 0 {
        return None;
    }
    let (tm, tn) = (m.div_ceil(16), n.div_ceil(8));
    let fit = |t: usize| {
        [4, 2, 1]
            .into_iter()
            .find(|&f| t.is_multiple_of(f))
            .unwrap_or(1)
    };
    let (mut mt, mut nt) = (fit(tm), fit(tn));
    // Fewer, larger warp tiles reuse fragments more; keep all warps busy.
    while batch * (tm / mt) * (tn / nt) < WARPS as usize && mt * nt > 1 {
        if mt >= nt {
            mt /= 2;
        } else {
            nt /= 2;
        }
    }
    Some(Plan {
        a,
        b,
        batch,
        m,
        n,
        k: ka,
        mt,
        nt,
    })
}

/// `dot_general` on tensor cores when eligible: the result region, or
/// `None` for the FMA path. With `addend` (an f32 region of the result's
/// shape, the result f32) the result is `addend + x · y`, the sum
/// accumulated from the addend (`acc + dot(x, y)` in one step).
#[allow(clippy::too_many_arguments)]
pub(super) fn dot(
    blk: &mut Block,
    dn: &DotDimensionNumbers,
    precision: Option<(Precision, Precision)>,
    x: &BVal,
    y: &BVal,
    d: DType,
    shape: &[usize],
    addend: Option<&Region>,
) -> Result<Option<BVal>, IrError> {
    let tf32 = tf32_allowed(blk, precision);
    let Some(mut p) = plan(dn, x, y, d, shape, tf32) else {
        return Ok(None);
    };
    // f32 operands run `m16n8k8` on tf32 (4 `A` and 2 `B` values per lane,
    // single elements at k = t and t + 4, no `ldmatrix`); halves
    // `m16n8k16` (8 and 4, pairs of consecutive k).
    let single = p.a.region.dtype == DType::F32;
    let (shape_mma, kstep, a_regs, b_regs) = if single {
        (MmaShape::M16N8K8Tf32, 8, 4, 2)
    } else {
        (MmaShape::M16N8K16, 16, 8, 4)
    };
    if addend.is_some_and(|r| r.dtype != DType::F32 || r.shape != shape || d != DType::F32) {
        return Ok(None);
    }
    let out = blk.alloc(d, shape)?;
    // Tile-local values (lanes, tiles, rows, k) are i32 (`ix`); element
    // addresses are i32 in shared memory and i64 in global scratch, for the
    // operands (`ia`, the hot loop) and the result and addend (`io`). i64
    // address arithmetic in the unrolled `k` loop made ptxas spill.
    let shared = |r: &Region| matches!(r.space, Space::Shared(_));
    let width = |s: bool| if s { DType::I32 } else { DType::I64 };
    let ix = DType::I32;
    let ia = width(shared(&p.a.region) && shared(&p.b.region));
    let io = width(shared(&out) && addend.is_none_or(shared));
    if ia == DType::I64 {
        // 64-bit addresses take twice the registers: at most 4 tiles of
        // accumulators per warp (8 and 16 made ptxas spill on sm_80).
        while p.mt * p.nt > 4 {
            if p.mt >= p.nt {
                p.mt /= 2;
            } else {
                p.nt /= 2;
            }
        }
    }
    let tid = blk.tid.clone().cast(ix);
    let k = &mut blk.k;
    let ab = p.a.region.dtype;
    let (mp, np, kp) = (
        p.m.next_multiple_of(16),
        p.n.next_multiple_of(8),
        p.k.next_multiple_of(kstep),
    );
    let (wm, wn) = (mp / (16 * p.mt), np / (8 * p.nt));
    let tiles = (p.batch * wm * wn) as i64;
    let warp = k.let_("warp", ix, tid.clone() / ic(ix, 32));
    let lane = Expr::var(k.let_("lane", ix, tid % ic(ix, 32)));
    let g = k.let_("g", ix, lane.clone() / ic(ix, 4));
    let t = k.let_("t", ix, lane.clone() % ic(ix, 4));
    let (g, t) = (Expr::var(g), Expr::var(t));
    // ldmatrix: lane l names row l % 8 of matrix l / 8.
    let lr = Expr::var(k.let_("lr", ix, lane.clone() % ic(ix, 8)));
    let lm = lane.clone() / ic(ix, 8);
    let (m_lo, m_hi) = (
        Expr::var(k.let_("lm0", ix, lm.clone() % ic(ix, 2) * ic(ix, 8))),
        Expr::var(k.let_("lm1", ix, lm / ic(ix, 2) * ic(ix, 8))),
    );
    let (ld_a, ld_b) = if single {
        (None, None)
    } else {
        (
            ldmatrix_space(&p.a, p.m.is_multiple_of(16) && p.k.is_multiple_of(16)),
            ldmatrix_space(&p.b, p.n.is_multiple_of(8) && p.k.is_multiple_of(16)),
        )
    };
    // The lane's first `k` in a step: 2t for halves (pairs), t for tf32.
    let kfirst = if single {
        t.clone()
    } else {
        t.clone() * ic(ix, 2)
    };
    // The lane's (row, k) offsets: its own fragment elements', or the
    // ldmatrix row it names (A: matrix i at rows 8·(i & 1), k 8·(i >> 1);
    // B: k 8·(i & 1), rows 8·(i >> 1); the lane's row runs along the
    // stored rows: the free dimension when k is contiguous, else k).
    let offsets = |o: &Operand, ld: bool, a: bool| -> (Expr, Expr) {
        if !ld {
            return (g.clone(), kfirst.clone());
        }
        let (rows, ks) = if a {
            (m_lo.clone(), m_hi.clone())
        } else {
            (m_hi.clone(), m_lo.clone())
        };
        if o.k_stride == 1 {
            (rows + lr.clone(), ks)
        } else {
            (rows, ks + lr.clone())
        }
    };
    let (off_a, off_b) = (
        offsets(&p.a, ld_a.is_some(), true),
        offsets(&p.b, ld_b.is_some(), false),
    );
    let acc: Vec<Var> = (0..4 * p.mt * p.nt)
        .map(|_| k.var("acc", DType::F32))
        .collect();
    let fa: Vec<Vec<Var>> = (0..p.mt)
        .map(|_| (0..a_regs).map(|_| k.var("fa", ab)).collect())
        .collect();
    let fb: Vec<Vec<Var>> = (0..p.nt)
        .map(|_| (0..b_regs).map(|_| k.var("fb", ab)).collect())
        .collect();
    let wt = k.var("wt", ix);
    let k0 = k.var("k0", ix);
    let zero = Expr::Const(Const::from_f64(ab, 0.0));
    k.barrier();
    k.for_(wt, Expr::var(warp), ic(ix, tiles), ic(ix, WARPS), |k| {
        let w = Expr::var(wt);
        let bi = k.let_("bi", ix, w.clone() / ic(ix, (wm * wn) as i64));
        let m0 = (w.clone() / ic(ix, wn as i64)) % ic(ix, wm as i64) * ic(ix, (16 * p.mt) as i64);
        let m0 = k.let_("m0", ix, m0);
        let n0 = w % ic(ix, wn as i64) * ic(ix, (8 * p.nt) as i64);
        let n0 = k.let_("n0", ix, n0);
        let (bi, m0, n0) = (Expr::var(bi), Expr::var(m0), Expr::var(n0));
        // Per lane: the element of A at (m0, 0) + off_a and of B at
        // (n0, 0) + off_b for k0 = 0.
        let lane_base = |k: &mut KernelBuilder, o: &Operand, r0: &Expr, off: &(Expr, Expr)| {
            let e = o.region.base.clone().cast(ia)
                + bi.clone().cast(ia) * ic(ia, o.batch_stride)
                + (r0.clone() + off.0.clone()).cast(ia) * ic(ia, o.row_stride)
                + off.1.clone().cast(ia) * ic(ia, o.k_stride);
            Expr::var(k.let_("lb", ia, e))
        };
        let (la, lb) = (
            lane_base(k, &p.a, &m0, &off_a),
            lane_base(k, &p.b, &n0, &off_b),
        );
        let arow = Expr::var(k.let_("ar", ix, m0.clone() + g.clone()));
        let brow = Expr::var(k.let_("br", ix, n0.clone() + g.clone()));
        // c_i's column (2t + (i & 1)) is the same for both shapes.
        let col = Expr::var(k.let_("col", ix, t.clone() * ic(ix, 2)));
        let kc0 = Expr::var(k.let_("kc", ix, kfirst.clone()));
        // c_i: row g + 8·[i ≥ 2], column 2t + (i & 1). `each_c(k, f)` calls
        // `f(k, i, rel, w, mask)` for accumulators i..i+w at element `rel`
        // of the result (w = 2 where the pair is adjacent and aligned),
        // masked where the result is ragged.
        let each_c = |k: &mut KernelBuilder, f: &mut CVisit| {
            for mi in 0..p.mt {
                for ni in 0..p.nt {
                    for half in 0..2 {
                        let row = arow.clone() + ic(ix, (16 * mi + 8 * half) as i64);
                        let cn = n0.clone() + col.clone() + ic(ix, (8 * ni) as i64);
                        let rel = bi.clone().cast(io) * ic(io, (p.m * p.n) as i64)
                            + row.clone().cast(io) * ic(io, p.n as i64)
                            + cn.clone().cast(io);
                        let i = 4 * (mi * p.nt + ni) + 2 * half;
                        let rows_in = (!p.m.is_multiple_of(16)).then(|| row.lt(ic(ix, p.m as i64)));
                        if p.n.is_multiple_of(2) {
                            let cols_in =
                                (!p.n.is_multiple_of(8)).then(|| cn.lt(ic(ix, p.n as i64)));
                            f(k, i, rel, 2, and_opt(rows_in, cols_in));
                        } else {
                            for j in 0..2 {
                                let c = cn.clone() + ic(ix, j as i64);
                                let mask = and_opt(rows_in.clone(), Some(c.lt(ic(ix, p.n as i64))));
                                f(k, i + j, rel.clone() + ic(io, j as i64), 1, mask);
                            }
                        }
                    }
                }
            }
        };
        match addend {
            None => {
                for &v in &acc {
                    k.assign(v, Expr::f32(0.0));
                }
            }
            Some(r) => each_c(k, &mut |k, i, rel, w, mask| {
                let at = r.base.clone().cast(io) + rel;
                k.load(
                    &acc[i..i + w],
                    r.space,
                    at,
                    mask.map(|m| (m, Expr::f32(0.0))),
                );
            }),
        }
        let kk = Expr::var(k0);
        k.for_(
            k0,
            ic(ix, 0),
            ic(ix, kp as i64),
            ic(ix, kstep as i64),
            |k| {
                let kcol = kk.clone() + kc0.clone();
                // This step's lane pointers: every fragment element is a
                // constant offset from them.
                let step = |k: &mut KernelBuilder, l: &Expr, o: &Operand| {
                    let e = l.clone() + kk.clone().cast(ia) * ic(ia, o.k_stride);
                    Expr::var(k.let_("lp", ia, e))
                };
                let (pa, pb) = (step(k, &la, &p.a), step(k, &lb, &p.b));
                if let Some(sid) = ld_a {
                    for (mi, regs) in fa.iter().enumerate() {
                        let at = pa.clone() + ic(ia, 16 * mi as i64 * p.a.row_stride);
                        k.ldmatrix(regs, sid, at, p.a.k_stride != 1);
                    }
                }
                if let Some(sid) = ld_b {
                    // Two 8-column tiles per x4 where there are pairs.
                    let per = if p.nt.is_multiple_of(2) { 2 } else { 1 };
                    for (q, regs) in fb.chunks(per).enumerate() {
                        let dst: Vec<Var> = regs.concat();
                        let at = pb.clone() + ic(ia, (8 * per * q) as i64 * p.b.row_stride);
                        k.ldmatrix(&dst, sid, at, p.b.k_stride != 1);
                    }
                }
                // tf32 a_i: row g + 8·(i & 1), k t + 4·(i >> 1); b_i: k t + 4·i,
                // column g. One element each.
                let singles = [
                    (&fa, &pa, &p.a, &arow, p.m, 16usize),
                    (&fb, &pb, &p.b, &brow, p.n, 8),
                ];
                for (frags, base, op, row, rows, tile_rows) in
                    singles.into_iter().filter(|_| single)
                {
                    for (ti, regs) in frags.iter().enumerate() {
                        for (i, r) in regs.iter().enumerate() {
                            let (dr, dk) = if tile_rows == 16 {
                                (16 * ti + 8 * (i & 1), 4 * (i >> 1))
                            } else {
                                (8 * ti, 4 * i)
                            };
                            let sub = SubTile {
                                base,
                                op,
                                row,
                                rows,
                                ragged: !rows.is_multiple_of(tile_rows),
                                dr: dr as i64,
                                kcol: &kcol,
                                dk: dk as i64,
                                kmax: p.k,
                                ktile: kstep,
                                zero: &zero,
                                ix,
                                ia,
                            };
                            sub.load(k, std::slice::from_ref(r));
                        }
                    }
                }
                for (mi, regs) in fa.iter().enumerate().filter(|_| ld_a.is_none() && !single) {
                    // a_i: row g + 8·[i ∈ {2,3,6,7}], k 2t + (i & 1) + 8·[i ≥ 4].
                    for pair in 0..4 {
                        let (dr, dk) = ((16 * mi + 8 * (pair & 1)) as i64, 8 * (pair >> 1) as i64);
                        let sub = SubTile {
                            base: &pa,
                            op: &p.a,
                            row: &arow,
                            rows: p.m,
                            ragged: !p.m.is_multiple_of(16),
                            dr,
                            kcol: &kcol,
                            dk,
                            kmax: p.k,
                            ktile: kstep,
                            zero: &zero,
                            ix,
                            ia,
                        };
                        sub.load(k, &regs[2 * pair..2 * pair + 2]);
                    }
                }
                for (ni, regs) in fb.iter().enumerate().filter(|_| ld_b.is_none() && !single) {
                    // b_i: k 2t + (i & 1) + 8·[i ≥ 2], column g.
                    for pair in 0..2 {
                        let sub = SubTile {
                            base: &pb,
                            op: &p.b,
                            row: &brow,
                            rows: p.n,
                            ragged: !p.n.is_multiple_of(8),
                            dr: (8 * ni) as i64,
                            kcol: &kcol,
                            dk: 8 * pair as i64,
                            kmax: p.k,
                            ktile: kstep,
                            zero: &zero,
                            ix,
                            ia,
                        };
                        sub.load(k, &regs[2 * pair..2 * pair + 2]);
                    }
                }
                for mi in 0..p.mt {
                    for ni in 0..p.nt {
                        let c = &acc[4 * (mi * p.nt + ni)..4 * (mi * p.nt + ni) + 4];
                        k.mma(
                            shape_mma,
                            c.to_vec(),
                            fa[mi].iter().map(|&v| Expr::var(v)).collect(),
                            fb[ni].iter().map(|&v| Expr::var(v)).collect(),
                            c.iter().map(|&v| Expr::var(v)).collect(),
                        );
                    }
                }
            },
        );
        each_c(k, &mut |k, i, rel, w, mask| {
            let v = |j: usize| {
                let x = round_to(d, Expr::var(acc[i + j]));
                if d == DType::F32 {
                    x
                } else {
                    x.cast(d)
                }
            };
            let at = out.base.clone().cast(io) + rel;
            k.store(out.space, at, (0..w).map(v).collect(), mask);
        });
    });
    k.barrier();
    Ok(Some(BVal::Array(out)))
}

/// `w = dot_general x y` (equation `i` of `jaxpr`, operands `ins`) followed
/// by `z = add r w` (or `add w r`), `w` used nowhere else, `r` an f32
/// value of the result's shape, on tensor cores: `z` and its region,
/// accumulated from `r` in one step. `None` when the pattern or the dot is
/// not eligible (the equations then lower one by one).
pub(super) fn dot_add(
    blk: &mut Block,
    jaxpr: &Jaxpr,
    i: usize,
    ins: &[BVal],
    env: &HashMap<JVar, BVal>,
) -> Result<Option<(JVar, BVal)>, IrError> {
    let eqn = &jaxpr.eqns[i];
    let Primitive::Linalg(Linalg::DotGeneral(params)) = &eqn.primitive else {
        return Ok(None);
    };
    let (Some(next), [Binder::Var(w)], [x, y]) = (jaxpr.eqns.get(i + 1), &eqn.outputs[..], ins)
    else {
        return Ok(None);
    };
    let add = Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add));
    let (true, [Binder::Var(z)]) = (next.primitive == add, &next.outputs[..]) else {
        return Ok(None);
    };
    let r = match &next.inputs[..] {
        [Atom::Var(a), Atom::Var(b)] if b == w && a != w => *a,
        [Atom::Var(a), Atom::Var(b)] if a == w && b != w => *b,
        _ => return Ok(None),
    };
    let uses = jaxpr
        .eqns
        .iter()
        .flat_map(|e| &e.inputs)
        .chain(&jaxpr.outvars)
        .filter(|a| matches!(a, Atom::Var(v) if v == w))
        .count();
    let (d, shape) = out_type(jaxpr, &eqn.outputs[0], "dot_general")?;
    let dn = &params.dimension_numbers;
    let Some(rv) = env.get(&r) else {
        return Ok(None);
    };
    let r_fits = matches!(rv, BVal::Array(_) | BVal::Lazy(_))
        && shape_of(rv) == shape
        && dtype_of(rv) == DType::F32;
    let tf32 = tf32_allowed(blk, params.precision);
    if uses != 1 || d != DType::F32 || !r_fits || plan(dn, x, y, d, &shape, tf32).is_none() {
        return Ok(None);
    }
    let BVal::Array(region) = blk.materialize(rv.clone())? else {
        return Ok(None);
    };
    Ok(dot(blk, dn, params.precision, x, y, d, &shape, Some(&region))?.map(|v| (*z, v)))
}

/// Whether an f32 dot at `precision` may run on tf32 tensor cores: the
/// program's options say so (`lower/precision.rs`: the GPU's default, or
/// `JAXON_DEFAULT_MATMUL_PRECISION=tensorfloat32`), and neither operand
/// asks for `HIGHEST`.
fn tf32_allowed(blk: &Block, precision: Option<(Precision, Precision)>) -> bool {
    blk.ctx.opts.f32_matmul.compute(precision) == crate::blas::Compute::Tf32
}

/// The shared array an operand's fragments come from by `ldmatrix`: its
/// region is in shared memory and `whole` (no dimension is padded, so no
/// load needs a mask); row addresses are then multiples of 8 elements
/// (16 bytes), as the region base ([`ALIGN`]) and the stored row length
/// (a multiple of 8) are.
fn ldmatrix_space(o: &Operand, whole: bool) -> Option<SharedId> {
    match o.region.space {
        Space::Shared(s) if whole => Some(s),
        Space::Shared(_) | Space::Global(_) => None,
    }
}

/// A visitor of result elements: builder, first accumulator, element
/// offset, width, mask (see `each_c` in [`dot`]).
type CVisit<'f> = dyn FnMut(&mut KernelBuilder, usize, Expr, usize, Option<Expr>) + 'f;

/// An integer constant of the index dtype.
fn ic(ix: DType, v: i64) -> Expr {
    Expr::int(ix, v)
}

/// `a && b` of optional conditions.
fn and_opt(a: Option<Expr>, b: Option<Expr>) -> Option<Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.and(b)),
        (x, None) | (None, x) => x,
    }
}

/// Two fragment elements of one lane at consecutive `k`: free-dimension
/// index `row + dr`, `k` index `kcol + dk` and one past it.
struct SubTile<'e> {
    /// The lane's element at `(row, kcol)` in this `k` step.
    base: &'e Expr,
    op: &'e Operand,
    row: &'e Expr,
    rows: usize,
    /// Whether the free dimension is not a multiple of the tile.
    ragged: bool,
    dr: i64,
    kcol: &'e Expr,
    dk: i64,
    kmax: usize,
    /// The `k` extent of one `mma` (16, or 8 for tf32): `K` is padded to it.
    ktile: usize,
    zero: &'e Expr,
    /// The dtype of tile-local indices.
    ix: DType,
    /// The dtype of element addresses.
    ia: DType,
}

impl SubTile<'_> {
    fn load(&self, k: &mut KernelBuilder, dst: &[Var]) {
        let o = self.op;
        let at = self.base.clone() + ic(self.ia, self.dr * o.row_stride + self.dk * o.k_stride);
        let space = o.region.space;
        let row_in = self
            .ragged
            .then(|| (self.row.clone() + ic(self.ix, self.dr)).lt(ic(self.ix, self.rows as i64)));
        let kc = self.kcol.clone() + ic(self.ix, self.dk);
        let ragged_k = !self.kmax.is_multiple_of(self.ktile);
        if o.k_stride == 1 && self.kmax.is_multiple_of(2) {
            // Even k and even K: both elements are in or out together, and
            // the pair is adjacent and aligned.
            let mask = and_opt(
                row_in,
                ragged_k.then(|| kc.lt(ic(self.ix, self.kmax as i64))),
            );
            k.load(dst, space, at, mask.map(|m| (m, self.zero.clone())));
        } else {
            for (j, &v) in dst.iter().enumerate() {
                let kin = ragged_k.then(|| {
                    (kc.clone() + ic(self.ix, j as i64)).lt(ic(self.ix, self.kmax as i64))
                });
                let mask = and_opt(row_in.clone(), kin);
                let idx = at.clone() + ic(self.ia, j as i64 * o.k_stride);
                k.load(&[v], space, idx, mask.map(|m| (m, self.zero.clone())));
            }
        }
    }
}
