//! Tests of the simulator: whole kernels on random inputs (never all zeros)
//! checked against plain Rust reference loops; faults and launch checks are
//! in `faults`, scalar semantics in `values`, warp operations in `warp`.

mod faults;
mod values;
mod warp;

use super::{launch, Arg, DeviceLimits, SimBuffer, SimStats};
use crate::error::Result;
use crate::kir::{AtomicOp, Axis, Const, Expr, Kernel, KernelBuilder, LaunchDims, Special, Var};
use jaxon_ir::DType;

/// A small deterministic generator (xorshift64*).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `[-1, 1)`.
    pub(super) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

pub(super) fn run(
    k: &Kernel,
    dims: LaunchDims,
    bufs: &mut [SimBuffer],
    args: &[Arg],
) -> Result<SimStats> {
    launch(k, dims, bufs, args, &DeviceLimits::default())
}

pub(super) fn u32c(v: u32) -> Arg {
    Arg::Scalar(Const::int(DType::U32, i64::from(v)))
}

pub(super) fn f32s(b: &SimBuffer) -> Vec<f32> {
    b.to_f64().into_iter().map(|v| v as f32).collect()
}

fn var(v: Var) -> Expr {
    Expr::var(v)
}

/// `y[i] = a·x[i] + 1`, four elements per thread with vector accesses, and
/// a masked scalar tail.
#[test]
fn elementwise_vec4_with_masked_tail() {
    let mut k = KernelBuilder::new("axpb4", 256);
    let x = k.global("x", DType::F32, false);
    let y = k.global("y", DType::F32, true);
    let n = k.scalar("n", DType::U32);
    let a = k.scalar("a", DType::F32);
    let base = k.let_(
        "base",
        DType::U32,
        Expr::global_thread_id_x() * Expr::u32(4),
    );
    let v: Vec<Var> = (0..4)
        .map(|i| k.var(&format!("v{i}"), DType::F32))
        .collect();
    let j = k.var("j", DType::U32);
    let t = k.var("t", DType::F32);
    k.if_else(
        (var(base) + Expr::u32(4)).le(Expr::param(n)),
        |k| {
            k.load(&v, x.into(), var(base), None);
            let out = v
                .iter()
                .map(|&vi| Expr::param(a) * var(vi) + Expr::f32(1.0))
                .collect();
            k.store(y.into(), var(base), out, None);
        },
        |k| {
            k.for_(j, Expr::u32(0), Expr::u32(4), Expr::u32(1), |k| {
                let i = var(base) + var(j);
                let m = i.clone().lt(Expr::param(n));
                k.load(&[t], x.into(), i.clone(), Some((m.clone(), Expr::f32(0.0))));
                let out = Expr::param(a) * var(t) + Expr::f32(1.0);
                k.store(y.into(), i, vec![out], Some(m));
            });
        },
    );
    let kernel = k.finish().unwrap();
    let len = 100_003usize;
    let mut rng = Rng::new(1);
    let xs: Vec<f64> = (0..len).map(|_| rng.unit() * 10.0).collect();
    let mut bufs = vec![
        SimBuffer::from_f64(DType::F32, &xs),
        SimBuffer::zeroed(DType::F32, len),
    ];
    let threads = len.div_ceil(4) as u32;
    let dims = LaunchDims::linear(threads.div_ceil(256), 256);
    let alpha = -1.75f32;
    let args = [
        Arg::Buffer(0),
        Arg::Buffer(1),
        u32c(len as u32),
        Arg::Scalar(Const::from_f64(DType::F32, f64::from(alpha))),
    ];
    let stats = run(&kernel, dims, &mut bufs, &args).unwrap();
    let got = f32s(&bufs[1]);
    for (i, (&g, &xv)) in got.iter().zip(&xs).enumerate() {
        assert_eq!(g, alpha * xv as f32 + 1.0, "element {i}");
    }
    assert_eq!(stats.blocks, 98);
    assert_eq!(stats.threads, 98 * 256);
    assert_eq!(stats.global_accesses, 2 * len as u64);
    assert_eq!(stats.barriers, 0);
}

/// One sum per block through a shared-memory tree with barriers.
#[test]
fn block_sum_reduction_in_shared_memory() {
    let mut k = KernelBuilder::new("block_sum", 256);
    let x = k.global("x", DType::F32, false);
    let out = k.global("out", DType::F32, true);
    let n = k.scalar("n", DType::U32);
    let sh = k.shared("partial", DType::F32, 256);
    let tid = k.let_("tid", DType::U32, Expr::thread_x());
    let gid = k.let_("gid", DType::U32, Expr::global_thread_id_x());
    let v = k.var("v", DType::F32);
    let (a, b) = (k.var("a", DType::F32), k.var("b", DType::F32));
    let m = var(gid).lt(Expr::param(n));
    k.load(&[v], x.into(), var(gid), Some((m, Expr::f32(0.0))));
    k.store(sh.into(), var(tid), vec![var(v)], None);
    k.barrier();
    let s = k.let_("s", DType::U32, Expr::block_dim_x() / Expr::u32(2));
    k.while_(var(s).gt(Expr::u32(0)), |k| {
        k.if_(var(tid).lt(var(s)), |k| {
            k.load(&[a], sh.into(), var(tid), None);
            k.load(&[b], sh.into(), var(tid) + var(s), None);
            k.store(sh.into(), var(tid), vec![var(a) + var(b)], None);
        });
        k.barrier();
        k.assign(s, var(s) >> Expr::u32(1));
    });
    k.if_(var(tid).eq(Expr::u32(0)), |k| {
        k.load(&[a], sh.into(), Expr::u32(0), None);
        k.store(out.into(), Expr::block_x(), vec![var(a)], None);
    });
    let kernel = k.finish().unwrap();
    let len = 10_000usize;
    let blocks = len.div_ceil(256);
    let mut rng = Rng::new(2);
    let xs: Vec<f64> = (0..len).map(|_| f64::from(rng.unit() as f32)).collect();
    let mut bufs = vec![
        SimBuffer::from_f64(DType::F32, &xs),
        SimBuffer::zeroed(DType::F32, blocks),
    ];
    let dims = LaunchDims::linear(blocks as u32, 256);
    let args = [Arg::Buffer(0), Arg::Buffer(1), u32c(len as u32)];
    let stats = run(&kernel, dims, &mut bufs, &args).unwrap();
    let got = bufs[1].to_f64();
    for (blk, chunk) in xs.chunks(256).enumerate() {
        let want: f64 = chunk.iter().sum();
        assert!(
            (got[blk] - want).abs() < 1e-4,
            "block {blk}: {} vs {want}",
            got[blk]
        );
    }
    assert_eq!(stats.barriers, blocks as u64 * 9);
}

/// A histogram with shared-memory atomics, merged into global memory with
/// global atomics; plus tickets from `atomicAdd`'s old values, which follow
/// linear thread order.
#[test]
fn histogram_with_atomics() {
    const BINS: u32 = 16;
    let mut k = KernelBuilder::new("histogram", 128);
    let x = k.global("x", DType::U32, false);
    let hist = k.global("hist", DType::U32, true);
    let counter = k.global("counter", DType::U32, true);
    let tickets = k.global("tickets", DType::U32, true);
    let n = k.scalar("n", DType::U32);
    let sh = k.shared("bins", DType::U32, BINS);
    let tid = k.let_("tid", DType::U32, Expr::thread_x());
    let gid = k.let_("gid", DType::U32, Expr::global_thread_id_x());
    let v = k.var("v", DType::U32);
    let old = k.var("old", DType::U32);
    k.if_(var(tid).lt(Expr::u32(BINS)), |k| {
        k.store(sh.into(), var(tid), vec![Expr::u32(0)], None);
    });
    k.barrier();
    k.if_(var(gid).lt(Expr::param(n)), |k| {
        k.load(&[v], x.into(), var(gid), None);
        k.atomic(
            AtomicOp::Add,
            sh.into(),
            var(v) % Expr::u32(BINS),
            Expr::u32(1),
        );
        k.push(crate::kir::Stmt::Atomic {
            op: AtomicOp::Add,
            space: counter.into(),
            index: Expr::u32(0),
            value: Expr::u32(1),
            dst: Some(old),
        });
        k.store(tickets.into(), var(gid), vec![var(old)], None);
    });
    k.barrier();
    k.if_(var(tid).lt(Expr::u32(BINS)), |k| {
        k.load(&[v], sh.into(), var(tid), None);
        k.atomic(AtomicOp::Add, hist.into(), var(tid), var(v));
    });
    let kernel = k.finish().unwrap();
    let len = 5_000usize;
    let mut rng = Rng::new(3);
    let xs: Vec<u64> = (0..len).map(|_| rng.below(1000)).collect();
    let mut bufs = vec![
        SimBuffer::from_bits(DType::U32, &xs),
        SimBuffer::zeroed(DType::U32, BINS as usize),
        SimBuffer::zeroed(DType::U32, 1),
        SimBuffer::zeroed(DType::U32, len),
    ];
    let dims = LaunchDims::linear(len.div_ceil(128) as u32, 128);
    let args = [
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::Buffer(2),
        Arg::Buffer(3),
        u32c(len as u32),
    ];
    let stats = run(&kernel, dims, &mut bufs, &args).unwrap();
    let mut want = vec![0u64; BINS as usize];
    for &v in &xs {
        want[(v % u64::from(BINS)) as usize] += 1;
    }
    assert_eq!(bufs[1].to_bits(), want);
    assert_eq!(bufs[2].to_bits(), vec![len as u64]);
    let tickets: Vec<u64> = bufs[3].to_bits();
    assert_eq!(tickets, (0..len as u64).collect::<Vec<_>>());
    assert!(stats.atomics >= 2 * len as u64);
}

/// Atomic `Min`/`Max`/`Exch` on `i32` and `Add` on `f32`, with old values.
#[test]
fn atomic_min_max_exch_and_float_add() {
    let mut k = KernelBuilder::new("atomics", 64);
    let x = k.global("x", DType::I32, false);
    let acc = k.global("acc", DType::I32, true);
    let fsum = k.global("fsum", DType::F32, true);
    let olds = k.global("olds", DType::I32, true);
    let gid = k.let_("gid", DType::U32, Expr::global_thread_id_x());
    let v = k.var("v", DType::I32);
    let old = k.var("old", DType::I32);
    k.load(&[v], x.into(), var(gid), None);
    k.atomic(AtomicOp::Min, acc.into(), Expr::u32(0), var(v));
    k.atomic(AtomicOp::Max, acc.into(), Expr::u32(1), var(v));
    k.push(crate::kir::Stmt::Atomic {
        op: AtomicOp::Exch,
        space: acc.into(),
        index: Expr::u32(2),
        value: var(v),
        dst: Some(old),
    });
    k.store(olds.into(), var(gid), vec![var(old)], None);
    k.atomic(
        AtomicOp::Add,
        fsum.into(),
        Expr::u32(0),
        var(v).cast(DType::F32),
    );
    let kernel = k.finish().unwrap();
    let mut rng = Rng::new(4);
    let xs: Vec<i64> = (0..256).map(|_| rng.below(2001) as i64 - 1000).collect();
    let bits: Vec<u64> = xs.iter().map(|&v| v as u64).collect();
    let mut bufs = vec![
        SimBuffer::from_bits(DType::I32, &bits),
        SimBuffer::from_f64(DType::I32, &[1e6, -1e6, 7.0]),
        SimBuffer::zeroed(DType::F32, 1),
        SimBuffer::zeroed(DType::I32, 256),
    ];
    let args = [
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::Buffer(2),
        Arg::Buffer(3),
    ];
    run(&kernel, LaunchDims::linear(4, 64), &mut bufs, &args).unwrap();
    let acc = bufs[1].to_f64();
    assert_eq!(acc[0], *xs.iter().min().unwrap() as f64);
    assert_eq!(acc[1], *xs.iter().max().unwrap() as f64);
    assert_eq!(acc[2], xs[255] as f64);
    let olds = bufs[3].to_f64();
    assert_eq!(olds[0], 7.0);
    for i in 1..256 {
        assert_eq!(olds[i], xs[i - 1] as f64, "exchange {i}");
    }
    let mut s = 0f32;
    for &v in &xs {
        s += v as f32;
    }
    assert_eq!(bufs[2].to_f64()[0], f64::from(s));
}

/// A 2-D launch: a transpose through a padded shared tile, on a matrix
/// whose sides are not multiples of the tile.
#[test]
fn transpose_2d_through_shared_tile() {
    const T: u32 = 16;
    let mut k = KernelBuilder::new("transpose", 256);
    let input = k.global("input", DType::F32, false);
    let out = k.global("out", DType::F32, true);
    let w = k.scalar("w", DType::U32);
    let h = k.scalar("h", DType::U32);
    let tile = k.shared("tile", DType::F32, T * (T + 1));
    let tx = Expr::Special(Special::ThreadIdx(Axis::X));
    let ty = Expr::Special(Special::ThreadIdx(Axis::Y));
    let bx = Expr::Special(Special::BlockIdx(Axis::X));
    let by = Expr::Special(Special::BlockIdx(Axis::Y));
    let c = k.let_("c", DType::U32, bx.clone() * Expr::u32(T) + tx.clone());
    let r = k.let_("r", DType::U32, by.clone() * Expr::u32(T) + ty.clone());
    let v = k.var("v", DType::F32);
    let inside = var(c).lt(Expr::param(w)).and(var(r).lt(Expr::param(h)));
    let idx = var(r) * Expr::param(w) + var(c);
    k.load(&[v], input.into(), idx, Some((inside, Expr::f32(0.0))));
    let tidx = ty.clone() * Expr::u32(T + 1) + tx.clone();
    k.store(tile.into(), tidx, vec![var(v)], None);
    k.barrier();
    // out is w × h: out[oc][orow] with oc = bx·T + ty, orow = by·T + tx.
    let orow = k.let_("orow", DType::U32, by * Expr::u32(T) + tx.clone());
    let oc = k.let_("oc", DType::U32, bx * Expr::u32(T) + ty.clone());
    k.load(&[v], tile.into(), tx * Expr::u32(T + 1) + ty, None);
    let inside = var(oc).lt(Expr::param(w)).and(var(orow).lt(Expr::param(h)));
    let oidx = var(oc) * Expr::param(h) + var(orow);
    k.store(out.into(), oidx, vec![var(v)], Some(inside));
    let kernel = k.finish().unwrap();
    let (wd, ht) = (100u32, 70u32);
    let mut rng = Rng::new(5);
    let xs: Vec<f64> = (0..wd * ht).map(|_| f64::from(rng.unit() as f32)).collect();
    let mut bufs = vec![
        SimBuffer::from_f64(DType::F32, &xs),
        SimBuffer::zeroed(DType::F32, (wd * ht) as usize),
    ];
    let dims = LaunchDims {
        grid: [wd.div_ceil(T), ht.div_ceil(T), 1],
        block: [T, T, 1],
    };
    let args = [Arg::Buffer(0), Arg::Buffer(1), u32c(wd), u32c(ht)];
    run(&kernel, dims, &mut bufs, &args).unwrap();
    let got = bufs[1].to_f64();
    for r in 0..ht as usize {
        for c in 0..wd as usize {
            assert_eq!(
                got[c * ht as usize + r],
                xs[r * wd as usize + c],
                "({r}, {c})"
            );
        }
    }
}

/// Every special register in a 3-D launch.
#[test]
fn specials_in_a_3d_launch() {
    let mut k = KernelBuilder::new("specials", 64);
    let out = k.global("out", DType::U32, true);
    let sp = |s| Expr::Special(s);
    let axes = [Axis::X, Axis::Y, Axis::Z];
    let lin_t = sp(Special::ThreadIdx(Axis::X))
        + sp(Special::ThreadIdx(Axis::Y)) * sp(Special::BlockDim(Axis::X))
        + sp(Special::ThreadIdx(Axis::Z))
            * sp(Special::BlockDim(Axis::X))
            * sp(Special::BlockDim(Axis::Y));
    let lin_b = sp(Special::BlockIdx(Axis::X))
        + sp(Special::BlockIdx(Axis::Y)) * sp(Special::GridDim(Axis::X))
        + sp(Special::BlockIdx(Axis::Z))
            * sp(Special::GridDim(Axis::X))
            * sp(Special::GridDim(Axis::Y));
    let slot = k.let_(
        "slot",
        DType::U32,
        (lin_b * Expr::u32(60) + lin_t) * Expr::u32(13),
    );
    let mut vals: Vec<Expr> = Vec::new();
    for a in axes {
        vals.push(sp(Special::ThreadIdx(a)));
        vals.push(sp(Special::BlockIdx(a)));
        vals.push(sp(Special::BlockDim(a)));
        vals.push(sp(Special::GridDim(a)));
    }
    vals.push(sp(Special::LaneId));
    for (i, v) in vals.into_iter().enumerate() {
        k.store(out.into(), var(slot) + Expr::u32(i as u32), vec![v], None);
    }
    let kernel = k.finish().unwrap();
    let dims = LaunchDims {
        grid: [2, 3, 2],
        block: [5, 4, 3],
    };
    let mut bufs = vec![SimBuffer::zeroed(DType::U32, 12 * 60 * 13)];
    run(&kernel, dims, &mut bufs, &[Arg::Buffer(0)]).unwrap();
    let got = bufs[0].to_bits();
    for b in 0..12u64 {
        let bidx = [b % 2, (b / 2) % 3, b / 6];
        for t in 0..60u64 {
            let tidx = [t % 5, (t / 5) % 4, t / 20];
            let base = ((b * 60 + t) * 13) as usize;
            for a in 0..3 {
                let want = [tidx[a], bidx[a], [5, 4, 3][a], [2, 3, 2][a]];
                assert_eq!(
                    got[base + 4 * a..base + 4 * a + 4],
                    want,
                    "block {b} thread {t}"
                );
            }
            assert_eq!(got[base + 12], t % 32);
        }
    }
}

/// Two parameters may name one buffer: `y = 2·x` in place.
#[test]
fn aliased_buffers_in_place() {
    let mut k = KernelBuilder::new("scale_in_place", 32);
    let x = k.global("x", DType::F64, false);
    let y = k.global("y", DType::F64, true);
    let v = k.var("v", DType::F64);
    k.load(&[v], x.into(), Expr::thread_x(), None);
    k.store(
        y.into(),
        Expr::thread_x(),
        vec![Expr::constant(DType::F64, 2.0) * var(v)],
        None,
    );
    let kernel = k.finish().unwrap();
    let mut rng = Rng::new(6);
    let xs: Vec<f64> = (0..32).map(|_| rng.unit()).collect();
    let mut bufs = vec![SimBuffer::from_f64(DType::F64, &xs)];
    run(
        &kernel,
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(0)],
    )
    .unwrap();
    let want: Vec<f64> = xs.iter().map(|v| 2.0 * v).collect();
    assert_eq!(bufs[0].to_f64(), want);
}

/// A shared element never written reads as poison (a NaN with payload).
#[test]
fn unwritten_shared_memory_reads_as_poison() {
    let mut k = KernelBuilder::new("poison", 32);
    let out = k.global("out", DType::F32, true);
    let outi = k.global("outi", DType::I32, true);
    let sh = k.shared("scratch", DType::F32, 32);
    let shi = k.shared("scratch_i", DType::I32, 32);
    let v = k.var("v", DType::F32);
    let vi = k.var("vi", DType::I32);
    k.load(&[v], sh.into(), Expr::thread_x(), None);
    k.store(out.into(), Expr::thread_x(), vec![var(v)], None);
    k.load(&[vi], shi.into(), Expr::thread_x(), None);
    k.store(outi.into(), Expr::thread_x(), vec![var(vi)], None);
    let kernel = k.finish().unwrap();
    let mut bufs = vec![
        SimBuffer::zeroed(DType::F32, 32),
        SimBuffer::zeroed(DType::I32, 32),
    ];
    run(
        &kernel,
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    )
    .unwrap();
    assert!(bufs[0].to_bits().iter().all(|&b| b == 0x7FC0_ABAB));
    assert!(bufs[1]
        .to_bits()
        .iter()
        .all(|&b| b as i64 == 0xABAB_ABABu32 as i32 as i64));
}
