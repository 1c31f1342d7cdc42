//! Tests of the simulator's faults (each names the kernel, the block and
//! the first offending thread) and of the launch checks.

use super::{run, u32c};
use crate::error::CudaError;
use crate::kir::{Const, Expr, KernelBuilder, LaunchDims, ShuffleKind, Var};
use crate::sim::{launch, Arg, DeviceLimits, SimBuffer};
use jaxon_ir::DType;

fn var(v: Var) -> Expr {
    Expr::var(v)
}

/// Asserts a `SimFault` of `kernel` at `block`/`thread` whose message
/// contains `needle`; returns the message.
fn expect_fault(
    r: crate::error::Result<crate::sim::SimStats>,
    kernel: &str,
    block: [u32; 3],
    thread: [u32; 3],
    needle: &str,
) -> String {
    match r {
        Err(e @ CudaError::SimFault { .. }) => {
            let shown = e.to_string();
            let CudaError::SimFault {
                kernel: k,
                block: b,
                thread: t,
                message,
            } = e
            else {
                unreachable!()
            };
            assert_eq!((k.as_str(), b, t), (kernel, block, thread), "{shown}");
            assert!(message.contains(needle), "`{message}` lacks `{needle}`");
            assert!(shown.contains(kernel) && shown.contains(&format!("{thread:?}")));
            message
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

fn expect_launch_error(r: crate::error::Result<crate::sim::SimStats>, needle: &str) {
    match r {
        Err(CudaError::Launch { kernel, message }) => {
            assert_eq!(kernel, "k");
            assert!(message.contains(needle), "`{message}` lacks `{needle}`");
        }
        other => panic!("expected a launch error, got {other:?}"),
    }
}

/// `y[gid] = x[gid]` with no bounds check.
fn copy_kernel(name: &str, width: u32) -> crate::kir::Kernel {
    let mut k = KernelBuilder::new(name, 64);
    let x = k.global("x", DType::F32, false);
    let y = k.global("y", DType::F32, true);
    let v: Vec<Var> = (0..width)
        .map(|i| k.var(&format!("v{i}"), DType::F32))
        .collect();
    let i = Expr::global_thread_id_x() * Expr::u32(2);
    k.load(&v, x.into(), i.clone(), None);
    k.store(y.into(), i, v.iter().map(|&v| var(v)).collect(), None);
    k.finish().unwrap()
}

#[test]
fn out_of_bounds_global_load() {
    let k = copy_kernel("oob_load", 1);
    let mut bufs = vec![
        SimBuffer::zeroed(DType::F32, 100),
        SimBuffer::zeroed(DType::F32, 256),
    ];
    let r = run(
        &k,
        LaunchDims::linear(2, 64),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    );
    // Thread 50 of block 0 loads x[100].
    expect_fault(
        r,
        "oob_load",
        [0, 0, 0],
        [50, 0, 0],
        "out-of-bounds load of `x`[100]: the buffer has 100 elements",
    );
}

#[test]
fn out_of_bounds_global_store() {
    let k = copy_kernel("oob_store", 1);
    let mut bufs = vec![
        SimBuffer::zeroed(DType::F32, 256),
        SimBuffer::zeroed(DType::F32, 130),
    ];
    let r = run(
        &k,
        LaunchDims::linear(2, 64),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    );
    expect_fault(
        r,
        "oob_store",
        [1, 0, 0],
        [1, 0, 0],
        "out-of-bounds store of `y`[130]",
    );
}

#[test]
fn misaligned_vector_load() {
    // Four-wide loads at 2·gid: thread 1 loads at index 2.
    let k = copy_kernel("misaligned", 4);
    let mut bufs = vec![
        SimBuffer::zeroed(DType::F32, 512),
        SimBuffer::zeroed(DType::F32, 512),
    ];
    let r = run(
        &k,
        LaunchDims::linear(1, 64),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    );
    expect_fault(
        r,
        "misaligned",
        [0, 0, 0],
        [1, 0, 0],
        "misaligned 4-wide load of `x` at index 2",
    );
}

#[test]
fn shared_out_of_bounds_and_negative_index() {
    let mut k = KernelBuilder::new("shared_oob", 32);
    let sh = k.shared("tile", DType::F32, 32);
    k.store(
        sh.into(),
        Expr::thread_x() + Expr::u32(1),
        vec![Expr::f32(1.0)],
        None,
    );
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 32), &mut [], &[]);
    expect_fault(
        r,
        "shared_oob",
        [0, 0, 0],
        [31, 0, 0],
        "out-of-bounds store of `tile`[32]: the shared array has 32 elements",
    );

    let mut k = KernelBuilder::new("negative", 32);
    let x = k.global("x", DType::F32, false);
    let v = k.var("v", DType::F32);
    let i = Expr::thread_x().cast(DType::I32) - Expr::i32(3);
    k.load(&[v], x.into(), i, None);
    let kernel = k.finish().unwrap();
    let mut bufs = vec![SimBuffer::zeroed(DType::F32, 32)];
    let r = run(
        &kernel,
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0)],
    );
    expect_fault(r, "negative", [0, 0, 0], [0, 0, 0], "`x`[-3]");
}

#[test]
fn masked_off_accesses_never_fault() {
    let mut k = KernelBuilder::new("masked", 64);
    let x = k.global("x", DType::F32, false);
    let y = k.global("y", DType::F32, true);
    let v = k.var("v", DType::F32);
    let i = Expr::thread_x() * Expr::u32(1000) + Expr::u32(7);
    let m = Expr::thread_x().lt(Expr::u32(1));
    k.load(&[v], x.into(), i.clone(), Some((m.clone(), Expr::f32(2.5))));
    k.store(y.into(), i, vec![var(v)], Some(m));
    let kernel = k.finish().unwrap();
    let mut bufs = vec![
        SimBuffer::from_f64(DType::F32, &[3.0; 8]),
        SimBuffer::zeroed(DType::F32, 8),
    ];
    run(
        &kernel,
        LaunchDims::linear(1, 64),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    )
    .unwrap();
    assert_eq!(bufs[1].to_f64()[7], 3.0);
}

#[test]
fn divergent_barrier_in_a_branch() {
    let mut k = KernelBuilder::new("divergent", 64);
    // The condition goes through a variable, so the verifier cannot see it.
    let c = k.let_("c", DType::Bool, Expr::thread_x().lt(Expr::u32(16)));
    k.if_(var(c), |k| k.barrier());
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 64), &mut [], &[]);
    expect_fault(
        r,
        "divergent",
        [0, 0, 0],
        [0, 0, 0],
        "16 of the block's 64 threads reached it; thread [16, 0, 0] did not",
    );
}

#[test]
fn barrier_after_some_threads_left_the_loop() {
    let mut k = KernelBuilder::new("early_exit", 64);
    let e = k.let_(
        "e",
        DType::U32,
        Expr::thread_x() % Expr::u32(2) + Expr::u32(1),
    );
    let j = k.var("j", DType::U32);
    k.for_(j, Expr::u32(0), var(e), Expr::u32(1), |k| k.barrier());
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 64), &mut [], &[]);
    expect_fault(
        r,
        "early_exit",
        [0, 0, 0],
        [1, 0, 0],
        "thread [0, 0, 0] did not",
    );
}

/// Each thread stores `buf[tid]`, then reads `buf[(tid + 1) % 32]`.
fn neighbour_kernel(name: &str, barrier: bool) -> crate::kir::Kernel {
    let mut k = KernelBuilder::new(name, 32);
    let out = k.global("out", DType::F32, true);
    let sh = k.shared("buf", DType::F32, 32);
    let v = k.var("v", DType::F32);
    k.store(
        sh.into(),
        Expr::thread_x(),
        vec![Expr::thread_x().cast(DType::F32)],
        None,
    );
    if barrier {
        k.barrier();
    }
    let next = (Expr::thread_x() + Expr::u32(1)) % Expr::u32(32);
    k.load(&[v], sh.into(), next, None);
    k.store(out.into(), Expr::thread_x(), vec![var(v)], None);
    k.finish().unwrap()
}

#[test]
fn shared_memory_races() {
    let mut bufs = vec![SimBuffer::zeroed(DType::F32, 32)];
    let r = run(
        &neighbour_kernel("racy", false),
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0)],
    );
    expect_fault(
        r,
        "racy",
        [0, 0, 0],
        [0, 0, 0],
        "shared-memory race on `buf`[1]: thread [0, 0, 0] reads it and thread [1, 0, 0] wrote it",
    );
    // With a barrier between, the same exchange is correct.
    run(
        &neighbour_kernel("synced", true),
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0)],
    )
    .unwrap();
    let want: Vec<f64> = (0..32).map(|t| f64::from((t + 1) % 32)).collect();
    assert_eq!(bufs[0].to_f64(), want);

    // Write after others' reads, and write-write.
    let mut k = KernelBuilder::new("read_then_write", 32);
    let sh = k.shared("flag", DType::U32, 4);
    let v = k.var("v", DType::U32);
    k.store(
        sh.into(),
        Expr::u32(0),
        vec![Expr::u32(1)],
        Some(Expr::thread_x().eq(Expr::u32(0))),
    );
    k.barrier();
    k.load(&[v], sh.into(), Expr::u32(0), None);
    k.store(
        sh.into(),
        Expr::u32(0),
        vec![Expr::u32(2)],
        Some(Expr::thread_x().eq(Expr::u32(5))),
    );
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 32), &mut [], &[]);
    expect_fault(
        r,
        "read_then_write",
        [0, 0, 0],
        [5, 0, 0],
        "thread [5, 0, 0] writes it and thread [0, 0, 0] read it",
    );

    let mut k = KernelBuilder::new("write_write", 32);
    let sh = k.shared("slot", DType::U32, 4);
    k.store(sh.into(), Expr::u32(3), vec![Expr::thread_x()], None);
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 32), &mut [], &[]);
    expect_fault(
        r,
        "write_write",
        [0, 0, 0],
        [1, 0, 0],
        "`slot`[3]: thread [1, 0, 0] writes it and thread [0, 0, 0] wrote it",
    );

    // Atomics do not race with each other, but a plain read after another
    // thread's atomic does.
    let mut k = KernelBuilder::new("atomic_then_read", 32);
    let sh = k.shared("count", DType::U32, 1);
    let v = k.var("v", DType::U32);
    k.store(
        sh.into(),
        Expr::u32(0),
        vec![Expr::u32(0)],
        Some(Expr::thread_x().eq(Expr::u32(0))),
    );
    k.barrier();
    k.atomic(
        crate::kir::AtomicOp::Add,
        sh.into(),
        Expr::u32(0),
        Expr::u32(1),
    );
    k.load(&[v], sh.into(), Expr::u32(0), None);
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 32), &mut [], &[]);
    expect_fault(
        r,
        "atomic_then_read",
        [0, 0, 0],
        [0, 0, 0],
        "thread [0, 0, 0] reads it and thread [1, 0, 0] updated it",
    );
}

#[test]
fn shuffle_with_inactive_lanes() {
    let mut k = KernelBuilder::new("partial_shfl", 64);
    let c = k.let_("c", DType::Bool, Expr::lane().lt(Expr::u32(16)));
    let d = k.var("d", DType::U32);
    k.if_(var(c), |k| {
        k.shuffle(d, ShuffleKind::Xor, Expr::lane(), Expr::u32(1), 32)
    });
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 64), &mut [], &[]);
    expect_fault(
        r,
        "partial_shfl",
        [0, 0, 0],
        [0, 0, 0],
        "shuffle executed by 16 of the 32 lanes of warp 0; lane 16 is not active",
    );

    // A block of 48 threads leaves its second warp half empty.
    let mut k = KernelBuilder::new("short_warp", 64);
    let d = k.var("d", DType::U32);
    k.shuffle(d, ShuffleKind::Down, Expr::lane(), Expr::u32(1), 32);
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 48), &mut [], &[]);
    expect_fault(
        r,
        "short_warp",
        [0, 0, 0],
        [32, 0, 0],
        "warp 1, which has only 16 threads",
    );
}

#[test]
fn mma_with_inactive_lanes() {
    let mut k = KernelBuilder::new("partial_mma", 32);
    let c = k.let_("c", DType::Bool, Expr::lane().ge(Expr::u32(8)));
    let d: Vec<Var> = (0..4)
        .map(|i| k.var(&format!("d{i}"), DType::F32))
        .collect();
    let h = Expr::constant(DType::F16, 1.0);
    k.if_(var(c), |k| {
        k.mma(
            crate::kir::MmaShape::M16N8K16,
            d.clone(),
            vec![h.clone(); 8],
            vec![h.clone(); 4],
            vec![Expr::f32(0.0); 4],
        )
    });
    let kernel = k.finish().unwrap();
    let r = run(&kernel, LaunchDims::linear(1, 32), &mut [], &[]);
    expect_fault(
        r,
        "partial_mma",
        [0, 0, 0],
        [8, 0, 0],
        "mma executed by 24 of the 32 lanes of warp 0; lane 0 is not active",
    );
}

#[test]
fn integer_division_by_zero() {
    let mut k = KernelBuilder::new("div0", 32);
    let x = k.global("x", DType::I32, false);
    let y = k.global("y", DType::I32, true);
    let v = k.var("v", DType::I32);
    k.load(&[v], x.into(), Expr::thread_x(), None);
    k.store(
        y.into(),
        Expr::thread_x(),
        vec![Expr::i32(100) / var(v)],
        None,
    );
    let kernel = k.finish().unwrap();
    let mut xs = vec![3.0; 32];
    xs[9] = 0.0;
    let mut bufs = vec![
        SimBuffer::from_f64(DType::I32, &xs),
        SimBuffer::zeroed(DType::I32, 32),
    ];
    let r = run(
        &kernel,
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    );
    expect_fault(
        r,
        "div0",
        [0, 0, 0],
        [9, 0, 0],
        "integer division by zero (100 / 0, i32)",
    );

    // A `Select` evaluates only the branch each thread takes.
    let mut k = KernelBuilder::new("guarded_div", 32);
    let x = k.global("x", DType::I32, false);
    let y = k.global("y", DType::I32, true);
    let v = k.var("v", DType::I32);
    k.load(&[v], x.into(), Expr::thread_x(), None);
    let safe = Expr::select(
        var(v).ne(Expr::i32(0)),
        Expr::i32(100) % var(v),
        Expr::i32(-1),
    );
    k.store(y.into(), Expr::thread_x(), vec![safe], None);
    let kernel = k.finish().unwrap();
    run(
        &kernel,
        LaunchDims::linear(1, 32),
        &mut bufs,
        &[Arg::Buffer(0), Arg::Buffer(1)],
    )
    .unwrap();
    assert_eq!(bufs[1].to_f64()[9], -1.0);
    assert_eq!(bufs[1].to_f64()[0], 1.0);
}

fn launch_kernel() -> crate::kir::Kernel {
    let mut k = KernelBuilder::new("k", 128);
    let x = k.global("x", DType::F32, true);
    let n = k.scalar("n", DType::U32);
    let _ = k.shared("s", DType::F32, 1024);
    k.store(
        x.into(),
        Expr::u32(0),
        vec![Expr::f32(1.0)],
        Some(Expr::param(n).gt(Expr::u32(0))),
    );
    k.finish().unwrap()
}

#[test]
fn launch_checks() {
    let k = launch_kernel();
    let lim = DeviceLimits::default();
    let mut bufs = vec![
        SimBuffer::zeroed(DType::F32, 4),
        SimBuffer::zeroed(DType::I32, 4),
    ];
    let ok = [Arg::Buffer(0), u32c(1)];
    let one = LaunchDims::linear(1, 32);
    launch(&k, one, &mut bufs, &ok, &lim).unwrap();
    expect_launch_error(
        launch(&k, one, &mut bufs, &ok[..1], &lim),
        "1 arguments for 2 parameters",
    );
    expect_launch_error(
        launch(&k, one, &mut bufs, &[Arg::Buffer(1), u32c(1)], &lim),
        "argument 0 (`x`) is a buffer of i32, the parameter wants f32",
    );
    expect_launch_error(
        launch(&k, one, &mut bufs, &[Arg::Buffer(7), u32c(1)], &lim),
        "names buffer 7, but there are 2 buffers",
    );
    expect_launch_error(
        launch(&k, one, &mut bufs, &[u32c(1), u32c(1)], &lim),
        "argument 0 (`x`) is a scalar of u32, the parameter wants a buffer of f32",
    );
    expect_launch_error(
        launch(&k, one, &mut bufs, &[Arg::Buffer(0), Arg::Buffer(0)], &lim),
        "argument 1 (`n`) is a buffer",
    );
    let i32arg = Arg::Scalar(Const::int(DType::I32, 1));
    expect_launch_error(
        launch(&k, one, &mut bufs, &[Arg::Buffer(0), i32arg], &lim),
        "is a scalar of i32, the parameter wants u32",
    );
    expect_launch_error(
        launch(&k, LaunchDims::linear(1, 256), &mut bufs, &ok, &lim),
        "more than the kernel's max_threads 128",
    );
    expect_launch_error(
        launch(&k, LaunchDims::linear(0, 32), &mut bufs, &ok, &lim),
        "no zero dimension",
    );
    let big_z = LaunchDims {
        grid: [1, 1, 1],
        block: [1, 1, 65],
    };
    expect_launch_error(launch(&k, big_z, &mut bufs, &ok, &lim), "block limits");
    let big_grid = LaunchDims {
        grid: [1, 65536, 1],
        block: [32, 1, 1],
    };
    expect_launch_error(launch(&k, big_grid, &mut bufs, &ok, &lim), "grid limits");
    let small = DeviceLimits {
        max_shared_bytes_per_block: 1024,
        ..lim
    };
    expect_launch_error(
        launch(&k, one, &mut bufs, &ok, &small),
        "uses 4096 bytes of shared memory",
    );
    let few = DeviceLimits {
        max_threads_per_block: 16,
        ..lim
    };
    expect_launch_error(
        launch(&k, one, &mut bufs, &ok, &few),
        "the device allows 16",
    );
    // An invalid kernel is refused by the verifier first.
    let mut bad = launch_kernel();
    bad.name = "not an identifier".into();
    assert!(matches!(
        launch(&bad, one, &mut bufs, &ok, &lim),
        Err(CudaError::InvalidKir { .. })
    ));
}
