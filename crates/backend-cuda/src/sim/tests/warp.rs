//! Tests of warp operations: shuffle reductions and every shuffle kind and
//! width against PTX's `shfl.sync` pseudo-code, and `mma` against a scalar
//! matmul of fragments laid out from the PTX ISA's formulas (typed here
//! independently of `sim::mma`), and `ldmatrix` against its lane layout.

use super::{run, Rng};
use crate::kir::{Expr, KernelBuilder, LaunchDims, MmaShape, ShuffleKind, Var};
use crate::sim::{mma::tf32_rna, Arg, SimBuffer};
use jaxon_ir::DType;

fn var(v: Var) -> Expr {
    Expr::var(v)
}

/// A warp sum with `Xor` shuffles: every lane ends with its warp's sum.
#[test]
fn warp_reduction_with_xor_shuffles() {
    let mut k = KernelBuilder::new("warp_sum", 128);
    let x = k.global("x", DType::I32, false);
    let sums = k.global("sums", DType::I32, true);
    let every = k.global("every", DType::I32, true);
    let gid = k.let_("gid", DType::U32, Expr::global_thread_id_x());
    let v = k.var("v", DType::I32);
    let o = k.var("o", DType::I32);
    k.load(&[v], x.into(), var(gid), None);
    for off in [16u32, 8, 4, 2, 1] {
        k.shuffle(o, ShuffleKind::Xor, var(v), Expr::u32(off), 32);
        k.assign(v, var(v) + var(o));
    }
    k.store(every.into(), var(gid), vec![var(v)], None);
    k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
        k.store(sums.into(), var(gid) / Expr::u32(32), vec![var(v)], None);
    });
    let kernel = k.finish().unwrap();
    let len = 4096usize;
    let mut rng = Rng::new(10);
    let xs: Vec<i32> = (0..len).map(|_| rng.next_u64() as i32).collect();
    let bits: Vec<u64> = xs.iter().map(|&v| v as i64 as u64).collect();
    let mut bufs = vec![
        SimBuffer::from_bits(DType::I32, &bits),
        SimBuffer::zeroed(DType::I32, len / 32),
        SimBuffer::zeroed(DType::I32, len),
    ];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)];
    let stats = run(&kernel, LaunchDims::linear(32, 128), &mut bufs, &args).unwrap();
    let sums = bufs[1].to_bits();
    let every = bufs[2].to_bits();
    for (w, chunk) in xs.chunks(32).enumerate() {
        let want = chunk.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        assert_eq!(sums[w] as i64, i64::from(want), "warp {w}");
        for l in 0..32 {
            assert_eq!(
                every[w * 32 + l] as i64,
                i64::from(want),
                "warp {w} lane {l}"
            );
        }
    }
    assert_eq!(stats.shuffles, 5 * len as u64 / 32);
}

/// The source lane of `shfl.sync` in the PTX ISA's pseudo-code, with the
/// `c` operand CUDA's `__shfl_*_sync(…, width)` passes.
fn ptx_source(kind: ShuffleKind, lane: u32, op: u32, width: u32) -> u32 {
    let segmask = 32 - width;
    let cval = match kind {
        ShuffleKind::Up => 0,
        ShuffleKind::Down | ShuffleKind::Xor | ShuffleKind::Idx => 0x1f,
    };
    let max_lane = (lane & segmask) | (cval & !segmask & 0x1f);
    let min_lane = lane & segmask;
    let b = op & 0x1f;
    let (j, ok) = match kind {
        ShuffleKind::Up => {
            let j = lane as i64 - b as i64;
            (j, j >= max_lane as i64)
        }
        ShuffleKind::Down => {
            let j = (lane + b) as i64;
            (j, j <= max_lane as i64)
        }
        ShuffleKind::Xor => {
            let j = (lane ^ b) as i64;
            (j, j <= max_lane as i64)
        }
        ShuffleKind::Idx => {
            let j = (min_lane | (b & !segmask & 0x1f)) as i64;
            (j, j <= max_lane as i64)
        }
    };
    if ok {
        j as u32
    } else {
        lane
    }
}

/// Every kind and width, with per-lane operands (some past the width and
/// past 32), on `u32`, `f64` (64-bit) and `f16` (16-bit) values.
#[test]
fn shuffle_kinds_and_widths_match_ptx() {
    let kinds = [
        ShuffleKind::Xor,
        ShuffleKind::Down,
        ShuffleKind::Up,
        ShuffleKind::Idx,
    ];
    let mut rng = Rng::new(11);
    for dtype in [DType::U32, DType::F64, DType::F16] {
        for kind in kinds {
            for width in [1u32, 2, 4, 8, 16, 32] {
                let mut k = KernelBuilder::new("shfl", 64);
                let x = k.global("x", dtype, false);
                let ops = k.global("ops", DType::U32, false);
                let out = k.global("out", dtype, true);
                let (v, o, d) = (k.var("v", dtype), k.var("o", DType::U32), k.var("d", dtype));
                k.load(&[v], x.into(), Expr::thread_x(), None);
                k.load(&[o], ops.into(), Expr::thread_x(), None);
                k.shuffle(d, kind, var(v), var(o), width);
                k.store(out.into(), Expr::thread_x(), vec![var(d)], None);
                let kernel = k.finish().unwrap();
                let xs: Vec<f64> = (0..64).map(|i| f64::from(i * 3 + 1)).collect();
                let opv: Vec<u64> = (0..64).map(|_| rng.below(40)).collect();
                let mut bufs = vec![
                    SimBuffer::from_f64(dtype, &xs),
                    SimBuffer::from_bits(DType::U32, &opv),
                    SimBuffer::zeroed(dtype, 64),
                ];
                let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)];
                run(&kernel, LaunchDims::linear(1, 64), &mut bufs, &args).unwrap();
                let got = bufs[2].to_f64();
                for t in 0..64u32 {
                    let src = ptx_source(kind, t % 32, opv[t as usize] as u32, width);
                    let want = xs[(t / 32 * 32 + src) as usize];
                    assert_eq!(
                        got[t as usize], want,
                        "{dtype} {kind:?} width {width} thread {t} op {}",
                        opv[t as usize]
                    );
                }
            }
        }
    }
}

/// Fragment coordinates from the PTX ISA's formulas (m16n8k16 with
/// f16/bf16, m16n8k8 with tf32), written as tables.
fn frag_a(shape: MmaShape, lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    match shape {
        MmaShape::M16N8K16 => (g + 8 * ((i / 2) % 2), t * 2 + i % 2 + 8 * (i / 4)),
        MmaShape::M16N8K8Tf32 => (g + 8 * (i % 2), t + 4 * (i / 2)),
    }
}

fn frag_b(shape: MmaShape, lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane / 4, lane % 4);
    match shape {
        MmaShape::M16N8K16 => (t * 2 + i % 2 + 8 * (i / 2), g),
        MmaShape::M16N8K8Tf32 => (t + 4 * i, g),
    }
}

fn frag_c(lane: usize, i: usize) -> (usize, usize) {
    (lane / 4 + 8 * (i / 2), (lane % 4) * 2 + i % 2)
}

/// Runs `mma` for two warps, each with its own random A, B, C, fragments
/// loaded with vector loads from fragment-ordered buffers, and checks D
/// against a scalar matmul.
fn check_mma(shape: MmaShape, dtype: DType, seed: u64) {
    let kk = match shape {
        MmaShape::M16N8K16 => 16,
        MmaShape::M16N8K8Tf32 => 8,
    };
    let (na, nb) = (kk / 2, kk / 4);
    let mut k = KernelBuilder::new("mma_tile", 64);
    let af = k.global("af", dtype, false);
    let bf = k.global("bf", dtype, false);
    let cf = k.global("cf", DType::F32, false);
    let df = k.global("df", DType::F32, true);
    let gid = k.let_("gid", DType::U32, Expr::thread_x());
    let a: Vec<Var> = (0..na).map(|i| k.var(&format!("a{i}"), dtype)).collect();
    let b: Vec<Var> = (0..nb).map(|i| k.var(&format!("b{i}"), dtype)).collect();
    let c: Vec<Var> = (0..4)
        .map(|i| k.var(&format!("c{i}"), DType::F32))
        .collect();
    let d: Vec<Var> = (0..4)
        .map(|i| k.var(&format!("d{i}"), DType::F32))
        .collect();
    k.load(&a, af.into(), var(gid) * Expr::u32(na as u32), None);
    k.load(&b, bf.into(), var(gid) * Expr::u32(nb as u32), None);
    k.load(&c, cf.into(), var(gid) * Expr::u32(4), None);
    let ev = |vs: &[Var]| vs.iter().map(|&v| var(v)).collect::<Vec<_>>();
    k.mma(shape, d.clone(), ev(&a), ev(&b), ev(&c));
    k.store(df.into(), var(gid) * Expr::u32(4), ev(&d), None);
    let kernel = k.finish().unwrap();

    let mut rng = Rng::new(seed);
    // Operands exact in their dtype (tf32: 10 mantissa bits).
    let operand = |rng: &mut Rng| -> f64 {
        let x = rng.unit() * 4.0;
        match dtype {
            DType::F16 => half::f16::from_f64(x).to_f64(),
            DType::BF16 => half::bf16::from_f64(x).to_f64(),
            _ => (x * 256.0).round() / 256.0,
        }
    };
    let (mut afv, mut bfv, mut cfv) = (vec![0.0; 64 * na], vec![0.0; 64 * nb], vec![0.0; 256]);
    let mut want = vec![0.0; 256];
    for w in 0..2 {
        let am: Vec<Vec<f64>> = (0..16)
            .map(|_| (0..kk).map(|_| operand(&mut rng)).collect())
            .collect();
        let bm: Vec<Vec<f64>> = (0..kk)
            .map(|_| (0..8).map(|_| operand(&mut rng)).collect())
            .collect();
        let cm: Vec<Vec<f64>> = (0..16)
            .map(|_| (0..8).map(|_| f64::from(rng.unit() as f32)).collect())
            .collect();
        for lane in 0..32 {
            let t = w * 32 + lane;
            for i in 0..na {
                let (r, col) = frag_a(shape, lane, i);
                afv[t * na + i] = am[r][col];
            }
            for i in 0..nb {
                let (r, col) = frag_b(shape, lane, i);
                bfv[t * nb + i] = bm[r][col];
            }
            for i in 0..4 {
                let (r, col) = frag_c(lane, i);
                cfv[t * 4 + i] = cm[r][col];
                want[t * 4 + i] = cm[r][col] + (0..kk).map(|q| am[r][q] * bm[q][col]).sum::<f64>();
            }
        }
    }
    let mut bufs = vec![
        SimBuffer::from_f64(dtype, &afv),
        SimBuffer::from_f64(dtype, &bfv),
        SimBuffer::from_f64(DType::F32, &cfv),
        SimBuffer::zeroed(DType::F32, 256),
    ];
    let args = [
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::Buffer(2),
        Arg::Buffer(3),
    ];
    let stats = run(&kernel, LaunchDims::linear(1, 64), &mut bufs, &args).unwrap();
    assert_eq!(stats.mmas, 2);
    let got = bufs[3].to_f64();
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{shape:?} {dtype} element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn mma_m16n8k16_f16_matches_scalar_matmul() {
    check_mma(MmaShape::M16N8K16, DType::F16, 20);
}

#[test]
fn mma_m16n8k16_bf16_matches_scalar_matmul() {
    check_mma(MmaShape::M16N8K16, DType::BF16, 21);
}

#[test]
fn mma_m16n8k8_tf32_matches_scalar_matmul() {
    check_mma(MmaShape::M16N8K8Tf32, DType::F32, 22);
}

/// tf32 operands round to nearest with ties away from zero.
#[test]
fn tf32_rounding_is_rna() {
    let one = 1f32.to_bits();
    // Exactly halfway between 1 and 1 + 2^-10: rounds away, up.
    assert_eq!(tf32_rna(one + 0x1000), one + 0x2000);
    assert_eq!(tf32_rna(one + 0xfff), one);
    // Negative halfway rounds away from zero too.
    let m = (-1f32).to_bits();
    assert_eq!(tf32_rna(m + 0x1000), m + 0x2000);
    assert_eq!(tf32_rna(f32::INFINITY.to_bits()), f32::INFINITY.to_bits());
    assert!(f32::from_bits(tf32_rna(f32::NAN.to_bits())).is_nan());
    // The largest finite f32 rounds to infinity.
    assert_eq!(tf32_rna(f32::MAX.to_bits()), f32::INFINITY.to_bits());
}

/// `ldmatrix` for two warps: a shared array filled with distinct values,
/// lane `l` naming a row at a random 8-aligned index; every lane's
/// elements checked against PTX's layout (lane `l` holds row `l / 4`,
/// columns `2·(l % 4)`, `+1` of each matrix, transposed with `.trans`).
fn check_ldmatrix(n: usize, trans: bool, seed: u64) {
    let rows = 64usize;
    let mut k = KernelBuilder::new("ldm", 64);
    let src = k.global("src", DType::U16, false);
    let at = k.global("at", DType::U32, false);
    let out = k.global("out", DType::U16, true);
    let sh = k.shared("sh", DType::U16, (rows * 8) as u32);
    let tid = k.let_("tid", DType::U32, Expr::thread_x());
    let x = k.var("x", DType::U16);
    let e = k.var("e", DType::U32);
    k.for_(
        e,
        var(tid),
        Expr::u32((rows * 8) as u32),
        Expr::u32(64),
        |k| {
            k.load(&[x], src.into(), var(e), None);
            k.store(sh.into(), var(e), vec![var(x)], None);
        },
    );
    k.barrier();
    let row = k.var("row", DType::U32);
    k.load(&[row], at.into(), var(tid), None);
    let dst: Vec<Var> = (0..2 * n).map(|_| k.var("d", DType::U16)).collect();
    k.ldmatrix(&dst, sh, var(row) * Expr::u32(8), trans);
    for (j, &d) in dst.iter().enumerate() {
        let i = var(tid) * Expr::u32((2 * n) as u32) + Expr::u32(j as u32);
        k.store(out.into(), i, vec![var(d)], None);
    }
    let kernel = k.finish().unwrap();
    let mut rng = Rng::new(seed);
    let vals: Vec<u64> = (0..rows * 8).map(|i| i as u64).collect();
    let at_rows: Vec<u64> = (0..64).map(|_| rng.next_u64() % rows as u64).collect();
    let mut bufs = vec![
        SimBuffer::from_bits(DType::U16, &vals),
        SimBuffer::from_bits(DType::U32, &at_rows),
        SimBuffer::zeroed(DType::U16, 64 * 2 * n),
    ];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)];
    run(&kernel, LaunchDims::linear(1, 64), &mut bufs, &args).unwrap();
    let got = bufs[2].to_bits();
    for w in 0..2 {
        for l in 0..32 {
            for m in 0..n {
                for j in 0..2 {
                    let (r, c) = if trans {
                        ((l % 4) * 2 + j, l / 4)
                    } else {
                        (l / 4, (l % 4) * 2 + j)
                    };
                    let want = at_rows[w * 32 + 8 * m + r] * 8 + c as u64;
                    let t = w * 32 + l;
                    assert_eq!(
                        got[t * 2 * n + 2 * m + j],
                        want,
                        "x{n} trans={trans} lane {t}"
                    );
                }
            }
        }
    }
}

#[test]
fn ldmatrix_matches_the_ptx_layout() {
    for (n, trans, seed) in [(1, false, 30), (2, true, 31), (4, false, 32), (4, true, 33)] {
        check_ldmatrix(n, trans, seed);
    }
}
