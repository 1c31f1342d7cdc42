//! The catalogue's kernels, each beside the host loop that defines its
//! result.

use super::{Case, CaseArg, CaseBuffer, Expected, Rng, Tolerance};
use crate::error::Result;
use crate::kir::{
    AtomicOp, Const, Expr, KernelBuilder, LaunchDims, MathFn, ParamId, ShuffleKind, Space, Var,
};
use jaxon_ir::DType::{self, *};

fn u32c(v: usize) -> CaseArg {
    CaseArg::Scalar(Const::int(U32, v as i64))
}

fn poison(dtype: DType, n: usize) -> CaseBuffer {
    let v = if dtype.is_float() { f64::NAN } else { 77.0 };
    CaseBuffer {
        dtype,
        values: vec![v; n],
    }
}

fn v(x: Var) -> Expr {
    Expr::var(x)
}

fn p(x: ParamId) -> Expr {
    Expr::param(x)
}

/// `tanh(2x + 1) · x − exp(−x)` as KIR and on the host.
fn fused(x: Expr) -> Expr {
    (Expr::f32(2.0) * x.clone() + Expr::f32(1.0)).math(MathFn::Tanh) * x.clone()
        - (-x).math(MathFn::Exp)
}

fn fused_host(x: f64) -> f64 {
    (2.0 * x + 1.0).tanh() * x - (-x).exp()
}

/// Four elements per thread through one 16-byte load and store; the last
/// partial group element by element under a mask.
pub(super) fn eltwise_fused(rng: &mut Rng, n: usize) -> Result<Case> {
    let mut k = KernelBuilder::new("eltwise_fused", 256);
    let x = k.global("x", F32, false);
    let y = k.global("y", F32, true);
    let np = k.scalar("n", U32);
    let base = k.let_("base", U32, Expr::global_thread_id_x() * Expr::u32(4));
    k.if_else(
        (v(base) + Expr::u32(4)).le(p(np)),
        |k| {
            let xs: Vec<Var> = (0..4).map(|i| k.var(&format!("x{i}"), F32)).collect();
            k.load(&xs, x.into(), v(base), None);
            k.store(
                y.into(),
                v(base),
                xs.iter().map(|&e| fused(v(e))).collect(),
                None,
            );
        },
        |k| {
            let j = k.var("j", U32);
            k.for_(j, Expr::u32(0), Expr::u32(4), Expr::u32(1), |k| {
                let i = k.let_("i", U32, v(base) + v(j));
                let xi = k.var("xi", F32);
                let inb = v(i).lt(p(np));
                k.load(&[xi], x.into(), v(i), Some((inb.clone(), Expr::f32(0.0))));
                k.store(y.into(), v(i), vec![fused(v(xi))], Some(inb));
            });
        },
    );
    let kernel = k.finish()?;
    let xs = rng.values(n, -3.0, 3.0, F32);
    let want = xs.iter().map(|&a| fused_host(a)).collect();
    Ok(Case {
        kernel,
        dims: LaunchDims::linear(n.div_ceil(4 * 256) as u32, 256),
        buffers: vec![
            CaseBuffer {
                dtype: F32,
                values: xs,
            },
            poison(F32, n),
        ],
        args: vec![CaseArg::Buffer(0), CaseArg::Buffer(1), u32c(n)],
        expected: vec![Expected {
            buffer: 1,
            values: want,
            tol: Tolerance::new(1e-5, 1e-5),
        }],
    })
}

/// Reduces `value` over the block's 256 threads with `op`: xor shuffles in
/// each warp, then one value per warp through `scratch` and a barrier.
fn block_reduce(
    k: &mut KernelBuilder,
    value: Var,
    scratch: Space,
    combine: fn(Expr, Expr) -> Expr,
) -> Var {
    let other = k.var("other", F32);
    for s in [16, 8, 4, 2, 1] {
        k.shuffle(other, ShuffleKind::Xor, v(value), Expr::u32(s), 32);
        k.assign(value, combine(v(value), v(other)));
    }
    let warp = Expr::thread_x() / Expr::u32(32);
    k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
        k.store(scratch, warp, vec![v(value)], None);
    });
    k.barrier();
    let total = k.var("total", F32);
    k.load(&[total], scratch, Expr::u32(0), None);
    let w = k.var("w", U32);
    k.for_(w, Expr::u32(1), Expr::u32(8), Expr::u32(1), |k| {
        let t = k.var("t", F32);
        k.load(&[t], scratch, v(w), None);
        k.assign(total, combine(v(total), v(t)));
    });
    total
}

/// One block of 256 threads per row: the row's max and sum of exponentials
/// reduced with shuffles and shared memory.
pub(super) fn row_softmax(rng: &mut Rng, rows: usize, cols: usize) -> Result<Case> {
    let mut k = KernelBuilder::new("row_softmax", 256);
    let x = k.global("x", F32, false);
    let y = k.global("y", F32, true);
    let cp = k.scalar("cols", U32);
    let smax = k.shared("smax", F32, 8);
    let ssum = k.shared("ssum", F32, 8);
    let row0 = k.let_("row0", U32, Expr::block_x() * p(cp));
    let c = k.var("c", U32);
    let m = k.let_("m", F32, Expr::f32(f32::NEG_INFINITY));
    k.for_(c, Expr::thread_x(), p(cp), Expr::u32(256), |k| {
        let xi = k.var("xi", F32);
        k.load(&[xi], x.into(), v(row0) + v(c), None);
        k.assign(m, v(m).max(v(xi)));
    });
    let mx = block_reduce(&mut k, m, smax.into(), Expr::max);
    let s = k.let_("s", F32, Expr::f32(0.0));
    k.for_(c, Expr::thread_x(), p(cp), Expr::u32(256), |k| {
        let xi = k.var("xi", F32);
        k.load(&[xi], x.into(), v(row0) + v(c), None);
        k.assign(s, v(s) + (v(xi) - v(mx)).math(MathFn::Exp));
    });
    let total = block_reduce(&mut k, s, ssum.into(), |a, b| a + b);
    k.for_(c, Expr::thread_x(), p(cp), Expr::u32(256), |k| {
        let xi = k.var("xi", F32);
        k.load(&[xi], x.into(), v(row0) + v(c), None);
        k.store(
            y.into(),
            v(row0) + v(c),
            vec![(v(xi) - v(mx)).math(MathFn::Exp) / v(total)],
            None,
        );
    });
    let kernel = k.finish()?;
    let xs = rng.values(rows * cols, -4.0, 4.0, F32);
    let mut want = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &xs[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|a| (a - m).exp()).sum();
        for (j, a) in row.iter().enumerate() {
            want[r * cols + j] = (a - m).exp() / s;
        }
    }
    Ok(Case {
        kernel,
        dims: LaunchDims::linear(rows as u32, 256),
        buffers: vec![
            CaseBuffer {
                dtype: F32,
                values: xs,
            },
            poison(F32, rows * cols),
        ],
        args: vec![CaseArg::Buffer(0), CaseArg::Buffer(1), u32c(cols)],
        expected: vec![Expected {
            buffer: 1,
            values: want,
            tol: Tolerance::new(1e-7, 2e-5),
        }],
    })
}

/// One warp per row: a strided partial sum per lane, `Down` shuffles to
/// lane 0, and an `Idx` shuffle that hands lane 0's total to every lane.
pub(super) fn sum_rows_warp(rng: &mut Rng, rows: usize, cols: usize) -> Result<Case> {
    let mut k = KernelBuilder::new("sum_rows_warp", 128);
    let x = k.global("x", F32, false);
    let y = k.global("y", F32, true);
    let rp = k.scalar("rows", U32);
    let cp = k.scalar("cols", U32);
    let row = k.let_(
        "row",
        U32,
        Expr::block_x() * Expr::u32(4) + Expr::thread_x() / Expr::u32(32),
    );
    let live = k.let_("live", DType::Bool, v(row).lt(p(rp)));
    // Rows past the end still shuffle (every lane must), reading nothing.
    let s = k.let_("s", F32, Expr::f32(0.0));
    let c = k.var("c", U32);
    k.for_(c, Expr::lane(), p(cp), Expr::u32(32), |k| {
        let xi = k.var("xi", F32);
        k.load(
            &[xi],
            x.into(),
            v(row) * p(cp) + v(c),
            Some((v(live), Expr::f32(0.0))),
        );
        k.assign(s, v(s) + v(xi));
    });
    let other = k.var("other", F32);
    for d in [16, 8, 4, 2, 1] {
        k.shuffle(other, ShuffleKind::Down, v(s), Expr::u32(d), 32);
        k.assign(s, v(s) + v(other));
    }
    let total = k.var("total", F32);
    k.shuffle(total, ShuffleKind::Idx, v(s), Expr::u32(0), 32);
    k.store(
        y.into(),
        v(row),
        vec![v(total)],
        Some(v(live).and(Expr::lane().eq(Expr::u32(31)))),
    );
    let kernel = k.finish()?;
    let xs = rng.values(rows * cols, -1.0, 1.0, F32);
    let want = (0..rows)
        .map(|r| xs[r * cols..(r + 1) * cols].iter().sum())
        .collect();
    Ok(Case {
        kernel,
        dims: LaunchDims::linear(rows.div_ceil(4) as u32, 128),
        buffers: vec![
            CaseBuffer {
                dtype: F32,
                values: xs,
            },
            poison(F32, rows),
        ],
        args: vec![
            CaseArg::Buffer(0),
            CaseArg::Buffer(1),
            u32c(rows),
            u32c(cols),
        ],
        expected: vec![Expected {
            buffer: 1,
            values: want,
            tol: Tolerance::new(1e-4, 1e-5),
        }],
    })
}

/// `y = xᵀ` through a 32×33 shared tile (padded against bank conflicts),
/// blocks of 32×8 threads on a 2-D grid.
pub(super) fn transpose_tiled(rng: &mut Rng, rows: usize, cols: usize) -> Result<Case> {
    use crate::kir::{Axis, Special};
    let mut k = KernelBuilder::new("transpose_tiled", 256);
    let x = k.global("x", F32, false);
    let y = k.global("y", F32, true);
    let rp = k.scalar("rows", U32);
    let cp = k.scalar("cols", U32);
    let tile = k.shared("tile", F32, 32 * 33);
    let tx = Expr::thread_x();
    let ty = Expr::Special(Special::ThreadIdx(Axis::Y));
    let bx = Expr::block_x() * Expr::u32(32);
    let by = Expr::Special(Special::BlockIdx(Axis::Y)) * Expr::u32(32);
    let j = k.var("j", U32);
    k.for_(j, Expr::u32(0), Expr::u32(32), Expr::u32(8), |k| {
        let r = k.let_("r", U32, by.clone() + ty.clone() + v(j));
        let c = k.let_("c", U32, bx.clone() + tx.clone());
        let inb = v(r).lt(p(rp)).and(v(c).lt(p(cp)));
        let xi = k.var("xi", F32);
        k.load(
            &[xi],
            x.into(),
            v(r) * p(cp) + v(c),
            Some((inb, Expr::f32(0.0))),
        );
        k.store(
            tile.into(),
            (ty.clone() + v(j)) * Expr::u32(33) + tx.clone(),
            vec![v(xi)],
            None,
        );
    });
    k.barrier();
    k.for_(j, Expr::u32(0), Expr::u32(32), Expr::u32(8), |k| {
        // Output row = input column.
        let r = k.let_("r", U32, bx.clone() + ty.clone() + v(j));
        let c = k.let_("c", U32, by.clone() + tx.clone());
        let t = k.var("t", F32);
        k.load(
            &[t],
            tile.into(),
            tx.clone() * Expr::u32(33) + ty.clone() + v(j),
            None,
        );
        let inb = v(r).lt(p(cp)).and(v(c).lt(p(rp)));
        k.store(y.into(), v(r) * p(rp) + v(c), vec![v(t)], Some(inb));
    });
    let kernel = k.finish()?;
    let xs = rng.values(rows * cols, -10.0, 10.0, F32);
    let mut want = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            want[c * rows + r] = xs[r * cols + c];
        }
    }
    Ok(Case {
        kernel,
        dims: LaunchDims {
            grid: [cols.div_ceil(32) as u32, rows.div_ceil(32) as u32, 1],
            block: [32, 8, 1],
        },
        buffers: vec![
            CaseBuffer {
                dtype: F32,
                values: xs,
            },
            poison(F32, rows * cols),
        ],
        args: vec![
            CaseArg::Buffer(0),
            CaseArg::Buffer(1),
            u32c(rows),
            u32c(cols),
        ],
        expected: vec![Expected {
            buffer: 1,
            values: want,
            tol: Tolerance::EXACT,
        }],
    })
}

/// A histogram of `i32` values with `atomicAdd`, and their float maximum
/// with an `f32` atomic max.
pub(super) fn histogram_atomic(rng: &mut Rng, n: usize, bins: usize) -> Result<Case> {
    let mut k = KernelBuilder::new("histogram_atomic", 256);
    let x = k.global("x", I32, false);
    let w = k.global("w", F32, false);
    let h = k.global("hist", U32, true);
    let mx = k.global("max", F32, true);
    let np = k.scalar("n", U32);
    let i = k.let_("i", U32, Expr::global_thread_id_x());
    k.if_(v(i).lt(p(np)), |k| {
        let b = k.var("b", I32);
        k.load(&[b], x.into(), v(i), None);
        k.atomic(AtomicOp::Add, h.into(), v(b), Expr::u32(1));
        let wi = k.var("wi", F32);
        k.load(&[wi], w.into(), v(i), None);
        k.atomic(AtomicOp::Max, mx.into(), Expr::u32(0), v(wi));
    });
    let kernel = k.finish()?;
    let xs: Vec<f64> = (0..n)
        .map(|_| (rng.uniform(0.0, bins as f64) as usize).min(bins - 1) as f64)
        .collect();
    let ws = rng.values(n, -100.0, 100.0, F32);
    let mut hist = vec![0.0; bins];
    for &b in &xs {
        hist[b as usize] += 1.0;
    }
    let wmax = ws.iter().cloned().fold(-1e30, f64::max);
    Ok(Case {
        kernel,
        dims: LaunchDims::linear(n.div_ceil(256) as u32, 256),
        buffers: vec![
            CaseBuffer {
                dtype: I32,
                values: xs,
            },
            CaseBuffer {
                dtype: F32,
                values: ws,
            },
            CaseBuffer {
                dtype: U32,
                values: vec![0.0; bins],
            },
            CaseBuffer {
                dtype: F32,
                values: vec![-1e30],
            },
        ],
        args: vec![
            CaseArg::Buffer(0),
            CaseArg::Buffer(1),
            CaseArg::Buffer(2),
            CaseArg::Buffer(3),
            u32c(n),
        ],
        expected: vec![
            Expected {
                buffer: 2,
                values: hist,
                tol: Tolerance::EXACT,
            },
            Expected {
                buffer: 3,
                values: vec![wmax],
                tol: Tolerance::EXACT,
            },
        ],
    })
}

mod mma;
pub(super) use mma::{mma_bf16, mma_tf32};

mod scalar;
pub(super) use scalar::{casts, collatz_while};
