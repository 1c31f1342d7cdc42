//! Warp matrix-multiply cases: one warp per 16×8 tile of `c = a · b`, its
//! fragments loaded straight from global memory in the lane layout of PTX's
//! `mma.sync` (group `g = lane / 4`, thread in group `t = lane % 4`).

use super::{p, poison, u32c, v};
use crate::catalog::{Case, CaseArg, CaseBuffer, Expected, Rng, Tolerance};
use crate::error::Result;
use crate::kir::{Expr, KernelBuilder, LaunchDims, MmaShape, Var};
use jaxon_ir::DType::{self, *};

/// Per-lane element coordinates of one shape's fragments, as functions of
/// `(g, t, i)`: `a` gives (row, k), `b` gives (k, col), `c` gives (row, col).
struct Layout {
    shape: MmaShape,
    operand: DType,
    k_step: u32,
    a: fn(u32, u32, u32) -> (u32, u32),
    b: fn(u32, u32, u32) -> (u32, u32),
    na: u32,
    nb: u32,
}

fn c_at(g: u32, t: u32, i: u32) -> (u32, u32) {
    (g + 8 * (i >> 1), t * 2 + (i & 1))
}

const BF16_M16N8K16: Layout = Layout {
    shape: MmaShape::M16N8K16,
    operand: BF16,
    k_step: 16,
    a: |g, t, i| (g + 8 * ((i >> 1) & 1), t * 2 + (i & 1) + 8 * (i >> 2)),
    b: |g, t, i| (t * 2 + (i & 1) + 8 * (i >> 1), g),
    na: 8,
    nb: 4,
};

const TF32_M16N8K8: Layout = Layout {
    shape: MmaShape::M16N8K8Tf32,
    operand: F32,
    k_step: 8,
    a: |g, t, i| (g + 8 * (i & 1), t + 4 * (i >> 1)),
    b: |g, t, i| (t + 4 * i, g),
    na: 4,
    nb: 2,
};

/// The index expression `row * stride + col` of a fragment element whose
/// coordinates are `at(g, t, i)`, built from the lane's `g` and `t` vars.
fn coord(at: fn(u32, u32, u32) -> (u32, u32), g: Var, t: Var, i: u32) -> (Expr, Expr) {
    // The layouts are affine in g and t: evaluate the offsets at 0 and the
    // slopes from unit steps.
    let (r0, c0) = at(0, 0, i);
    let (rg, cg) = at(1, 0, i);
    let (rt, ct) = at(0, 1, i);
    let row = Expr::u32(r0) + v(g) * Expr::u32(rg - r0) + v(t) * Expr::u32(rt - r0);
    let col = Expr::u32(c0) + v(g) * Expr::u32(cg - c0) + v(t) * Expr::u32(ct - c0);
    (row, col)
}

fn mma_case(rng: &mut Rng, l: &Layout, name: &str, m: usize, n: usize, k: usize) -> Result<Case> {
    let mut kb = KernelBuilder::new(name, 32);
    let a = kb.global("a", l.operand, false);
    let b = kb.global("b", l.operand, false);
    let c = kb.global("c", F32, true);
    let np = kb.scalar("n", U32);
    let kp = kb.scalar("k", U32);
    let g = kb.let_("g", U32, Expr::lane() / Expr::u32(4));
    let t = kb.let_("t", U32, Expr::lane() % Expr::u32(4));
    let m0 = kb.let_(
        "m0",
        U32,
        Expr::Special(crate::kir::Special::BlockIdx(crate::kir::Axis::Y)) * Expr::u32(16),
    );
    let n0 = kb.let_("n0", U32, Expr::block_x() * Expr::u32(8));
    let acc: Vec<Var> = (0..4)
        .map(|i| kb.let_(&format!("acc{i}"), F32, Expr::f32(0.0)))
        .collect();
    let k0 = kb.var("k0", U32);
    kb.for_(k0, Expr::u32(0), p(kp), Expr::u32(l.k_step), |kb| {
        let fa: Vec<Var> = (0..l.na)
            .map(|i| {
                let x = kb.var(&format!("a{i}"), l.operand);
                let (r, cc) = coord(l.a, g, t, i);
                kb.load(&[x], a.into(), (v(m0) + r) * p(kp) + v(k0) + cc, None);
                x
            })
            .collect();
        let fb: Vec<Var> = (0..l.nb)
            .map(|i| {
                let x = kb.var(&format!("b{i}"), l.operand);
                let (r, cc) = coord(l.b, g, t, i);
                kb.load(&[x], b.into(), (v(k0) + r) * p(np) + v(n0) + cc, None);
                x
            })
            .collect();
        kb.mma(
            l.shape,
            acc.clone(),
            fa.iter().map(|&x| v(x)).collect(),
            fb.iter().map(|&x| v(x)).collect(),
            acc.iter().map(|&x| v(x)).collect(),
        );
    });
    for (i, &x) in acc.iter().enumerate() {
        let (r, cc) = coord(c_at, g, t, i as u32);
        kb.store(c.into(), (v(m0) + r) * p(np) + v(n0) + cc, vec![v(x)], None);
    }
    let kernel = kb.finish()?;
    // Operands with few mantissa bits, so that tf32 and bf16 hold them
    // exactly and only the f32 accumulation rounds.
    let mut draw = |len: usize| -> Vec<f64> {
        (0..len)
            .map(|_| (rng.uniform(-64.0, 64.0).round()) / 64.0)
            .collect()
    };
    let av = draw(m * k);
    let bv = draw(k * n);
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|q| av[i * k + q] * bv[q * n + j]).sum();
        }
    }
    Ok(Case {
        kernel,
        dims: LaunchDims {
            grid: [(n / 8) as u32, (m / 16) as u32, 1],
            block: [32, 1, 1],
        },
        buffers: vec![
            CaseBuffer {
                dtype: l.operand,
                values: av,
            },
            CaseBuffer {
                dtype: l.operand,
                values: bv,
            },
            poison(F32, m * n),
        ],
        args: vec![
            CaseArg::Buffer(0),
            CaseArg::Buffer(1),
            CaseArg::Buffer(2),
            u32c(n),
            u32c(k),
        ],
        expected: vec![Expected {
            buffer: 2,
            values: want,
            tol: Tolerance::new(1e-5 * k as f64, 1e-6),
        }],
    })
}

/// `c = a · b` with `bf16` operands on `mma.m16n8k16`.
pub(in crate::catalog) fn mma_bf16(rng: &mut Rng, m: usize, n: usize, k: usize) -> Result<Case> {
    mma_case(rng, &BF16_M16N8K16, "mma_bf16", m, n, k)
}

/// `c = a · b` with `tf32` operands on `mma.m16n8k8`.
pub(in crate::catalog) fn mma_tf32(rng: &mut Rng, m: usize, n: usize, k: usize) -> Result<Case> {
    mma_case(rng, &TF32_M16N8K8, "mma_tf32", m, n, k)
}
