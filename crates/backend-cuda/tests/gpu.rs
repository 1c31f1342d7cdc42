//! GPU checks: the runtime's transfers and launch checks, and every kernel of
//! the catalogue compiled by NVRTC for the device, run on the GPU and
//! compared with its host reference (and, at the small size, with the
//! simulator, bit for bit where the kernel is exact).
//!
//! Without a GPU every test prints `skipped: ...` and passes, unless
//! `JAXON_REQUIRE_GPU=1` is set (as `cargo xtask gpu-check`'s script does),
//! in which case a missing GPU fails. Lines starting `gpu-check:` are
//! collected into the GPU run's summary.

use jaxon_backend_cuda::catalog::{self, Case, CaseArg, Size};
use jaxon_backend_cuda::kir::{Const, LaunchDims};
use jaxon_backend_cuda::runtime::{Device, DeviceArg, DeviceBuffer};
use jaxon_backend_cuda::{host, nvrtc, CudaError};
use jaxon_ir::DType;
use std::sync::Arc;
use std::time::Instant;

/// The GPU, or `None` after printing why the test is skipped.
fn device() -> Option<Arc<Device>> {
    match Device::open(0) {
        Ok(d) => {
            println!(
                "gpu-check: device {} ({}, {} SMs, driver CUDA {})",
                d.info().name,
                d.info().arch(),
                d.info().sm_count,
                d.info().driver_version
            );
            Some(d)
        }
        Err(e) => {
            assert!(
                std::env::var_os("JAXON_REQUIRE_GPU").is_none(),
                "JAXON_REQUIRE_GPU is set but no GPU opened: {e}"
            );
            println!("skipped: {e}");
            None
        }
    }
}

#[test]
fn no_gpu_is_an_error_not_a_panic() {
    // On a machine without the driver or a device this must be an error; on
    // a GPU machine, asking for a device past the last one must be.
    match Device::open(1 << 20) {
        Err(CudaError::NoDevice(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected NoDevice, got {other:?}"),
    }
}

#[test]
fn transfers_round_trip_every_dtype() {
    let Some(dev) = device() else { return };
    let mut rng = catalog::Rng::new(11);
    // Complex dtypes never reach a device buffer: lowering refuses them.
    for dtype in DType::ALL.into_iter().filter(|d| !d.is_complex()) {
        for n in [0usize, 1, 7, 1000, 1 << 20] {
            let values = rng.values(n, -100.0, 100.0, dtype);
            let bytes = host::encode(dtype, &values);
            let buf = dev.upload(dtype, &bytes).expect("upload");
            assert_eq!(buf.len(), n);
            let back = dev.download(&buf).expect("download");
            assert!(
                back == bytes,
                "{dtype} x {n}: bytes differ after a round trip"
            );
        }
    }
    println!("gpu-check: transfers of every dtype round-trip");
}

#[test]
fn impossible_allocation_is_an_error() {
    let Some(dev) = device() else { return };
    let err = dev
        .alloc(DType::F64, 1 << 50)
        .expect_err("8 PiB cannot be allocated");
    assert!(err.to_string().contains("allocating"), "{err}");
    let err = dev.alloc(DType::F64, usize::MAX).expect_err("overflow");
    assert!(err.to_string().contains("overflow"), "{err}");
    // The device still works.
    let b = dev
        .upload(DType::I32, &host::encode(DType::I32, &[1.0, 2.0]))
        .unwrap();
    assert_eq!(
        host::decode(DType::I32, &dev.download(&b).unwrap()),
        vec![1.0, 2.0]
    );
}

/// Uploads a case's buffers.
fn upload(dev: &Arc<Device>, case: &Case) -> Vec<DeviceBuffer> {
    case.buffers
        .iter()
        .map(|b| {
            dev.upload(b.dtype, &host::encode(b.dtype, &b.values))
                .expect("upload")
        })
        .collect()
}

fn args<'a>(case: &Case, bufs: &'a [DeviceBuffer]) -> Vec<DeviceArg<'a>> {
    case.args
        .iter()
        .map(|a| match *a {
            CaseArg::Buffer(i) => DeviceArg::Buffer(&bufs[i]),
            CaseArg::Scalar(c) => DeviceArg::Scalar(c),
        })
        .collect()
}

#[test]
fn bad_launches_are_errors() {
    let Some(dev) = device() else { return };
    let case = catalog::cases(Size::Small, 1).unwrap().remove(0);
    let f = load(&dev, &case);
    let bufs = upload(&dev, &case);
    let mut a = args(&case, &bufs);
    let too_big = LaunchDims::linear(1, 1024);
    let e = dev.launch(&f, too_big, &a).unwrap_err().to_string();
    assert!(e.contains("at most 256"), "{e}");
    a.pop();
    let e = dev.launch(&f, case.dims, &a).unwrap_err().to_string();
    assert!(e.contains("arguments for"), "{e}");
    a.push(DeviceArg::Scalar(Const::int(DType::I32, 3)));
    let e = dev.launch(&f, case.dims, &a).unwrap_err().to_string();
    assert!(e.contains("parameter wants u32"), "{e}");
}

/// Prints, compiles and loads a case's kernel for the device.
fn load(dev: &Arc<Device>, case: &Case) -> jaxon_backend_cuda::runtime::Function {
    let (major, minor) = dev.info().compute_capability;
    let arch = nvrtc::Arch::from_compute_capability(major as u32, minor as u32);
    let compiled = nvrtc::compile_kernels(&[&case.kernel], arch)
        .unwrap_or_else(|e| panic!("{}: {e}", case.kernel.name));
    let module = dev.load_module(&compiled.cubin).expect("load the CUBIN");
    module.function(&case.kernel).expect("find the kernel")
}

fn run_case(dev: &Arc<Device>, case: &Case) -> Vec<Vec<f64>> {
    let f = load(dev, case);
    let bufs = upload(dev, case);
    dev.launch(&f, case.dims, &args(case, &bufs))
        .unwrap_or_else(|e| panic!("{e}"));
    case.expected
        .iter()
        .map(|e| {
            let b = &bufs[e.buffer];
            host::decode(b.dtype(), &dev.download(b).expect("download"))
        })
        .collect()
}

#[test]
fn catalogue_matches_references_on_gpu() {
    let Some(dev) = device() else { return };
    let mut failures = Vec::new();
    for size in [Size::Small, Size::Large] {
        for case in catalog::cases(size, 2026).expect("catalogue") {
            let outs = run_case(&dev, &case);
            for (e, got) in case.expected.iter().zip(&outs) {
                if let Err(msg) = catalog::check(&case, e, got) {
                    failures.push(format!("{size:?}: {msg}"));
                }
            }
            println!(
                "gpu-check: {:?} {} ({} blocks) matches its reference",
                size,
                case.kernel.name,
                case.dims.blocks()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn catalogue_matches_simulator_on_gpu() {
    let Some(dev) = device() else { return };
    for case in catalog::cases(Size::Small, 7).expect("catalogue") {
        let gpu = run_case(&dev, &case);
        let sim = catalog::run_simulated(&case).unwrap_or_else(|e| panic!("{e}"));
        for ((e, g), s) in case.expected.iter().zip(&gpu).zip(&sim) {
            // Same tolerance as against the reference: the simulator's math
            // functions are the host's, not CUDA's.
            let same = g
                .iter()
                .zip(s)
                .all(|(&a, &b)| e.tol.accepts(a, b) || (a.is_nan() && b.is_nan()));
            assert!(same, "{}: GPU and simulator differ", case.kernel.name);
        }
        println!("gpu-check: {} agrees with the simulator", case.kernel.name);
    }
}

#[test]
fn eltwise_bandwidth() {
    let Some(dev) = device() else { return };
    // The eltwise_fused_gpu workload's size: f32[2^26], read once, written once.
    let n = 1usize << 26;
    let mut rng = catalog::Rng::new(3);
    let case = catalog::eltwise_fused_case(&mut rng, n).expect("case");
    let f = load(&dev, &case);
    let bufs = upload(&dev, &case);
    let a = args(&case, &bufs);
    for _ in 0..3 {
        dev.launch(&f, case.dims, &a).unwrap();
    }
    dev.synchronize().unwrap();
    let reps = 50;
    let t = Instant::now();
    for _ in 0..reps {
        dev.launch(&f, case.dims, &a).unwrap();
    }
    dev.synchronize().unwrap();
    let secs = t.elapsed().as_secs_f64() / reps as f64;
    let gbps = (8 * n) as f64 / secs / 1e9;
    println!(
        "gpu-check: eltwise_fused f32[2^26]: {:.3} ms, {gbps:.0} GB/s (read + write; first KIR kernel, untuned)",
        secs * 1e3
    );
    // As JAX's harness measures: each call waited for before the next.
    let t = Instant::now();
    for _ in 0..reps {
        dev.launch(&f, case.dims, &a).unwrap();
        dev.synchronize().unwrap();
    }
    let secs = t.elapsed().as_secs_f64() / reps as f64;
    println!(
        "gpu-check: eltwise_fused f32[2^26], synchronised per call: {:.3} ms, {:.0} GB/s",
        secs * 1e3,
        (8 * n) as f64 / secs / 1e9
    );
    let got = host::decode(DType::F32, &dev.download(&bufs[1]).unwrap());
    catalog::check(&case, &case.expected[0], &got).unwrap();
}

mod blas {
    use super::*;
    use jaxon_backend_cuda::blas::{lt::Blas, model, Compute, Epilogue, GemmPlan, Operand};

    /// A plan, its buffer sizes, and the tolerance of the GPU against the
    /// model.
    struct Check {
        name: &'static str,
        plan: GemmPlan,
        lens: [usize; 3],
        abs: f64,
        rel: f64,
    }

    fn dense_lens(p: &GemmPlan) -> [usize; 3] {
        let b = p.batch as usize;
        let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
        [b * m * k, b * k * n, b * m * n]
    }

    fn checks() -> Vec<Check> {
        use DType::*;
        let mut out = Vec::new();
        let mut add = |name, plan: GemmPlan, abs, rel| {
            let lens = dense_lens(&plan);
            out.push(Check {
                name,
                plan,
                lens,
                abs,
                rel,
            });
        };
        add(
            "f32",
            GemmPlan::dense(1, 129, 67, 200, F32, F32),
            1e-4,
            1e-5,
        );
        let mut p = GemmPlan::dense(3, 64, 96, 130, F32, F32);
        p.a = Operand::transposed(64, 130);
        p.a.batch_stride = 64 * 130;
        add("f32 batched, a transposed", p, 1e-4, 1e-5);
        let mut p = GemmPlan::dense(2, 33, 80, 48, F32, F32);
        p.b = Operand::transposed(48, 80);
        p.b.batch_stride = 0;
        p.accumulate = true;
        add("f32 b transposed, broadcast, accumulating", p, 1e-4, 1e-5);
        let mut p = GemmPlan::dense(1, 256, 128, 512, F32, F32);
        p.compute = Compute::Tf32;
        add("tf32", p, 2e-3, 1e-3);
        add(
            "bf16 -> f32",
            GemmPlan::dense(1, 128, 64, 256, BF16, F32),
            1e-4,
            1e-5,
        );
        let mut p = GemmPlan::dense(1, 64, 64, 128, BF16, BF16);
        p.epilogue = Epilogue::BiasGelu;
        add("bf16 bias+gelu", p, 1e-2, 1.6e-2);
        let mut p = GemmPlan::dense(1, 64, 40, 64, F16, F16);
        p.epilogue = Epilogue::BiasRelu;
        add("f16 bias+relu", p, 1e-3, 2e-3);
        let mut p = GemmPlan::dense(2, 31, 17, 45, F64, F64);
        p.accumulate = true;
        p.epilogue = Epilogue::Relu;
        add("f64 accumulating relu", p, 1e-12, 1e-12);
        // Operands inside larger buffers, at offsets, with padded rows.
        let mut p = GemmPlan::dense(1, 20, 24, 36, F32, F32);
        p.a = Operand {
            offset: 5,
            row_stride: 40,
            col_stride: 1,
            batch_stride: 0,
        };
        p.out = Operand {
            offset: 3,
            row_stride: 30,
            col_stride: 1,
            batch_stride: 0,
        };
        let mut c = Check {
            name: "f32 strided views",
            plan: p,
            lens: [0; 3],
            abs: 1e-4,
            rel: 1e-5,
        };
        c.lens = [5 + 20 * 40, 36 * 24, 3 + 20 * 30];
        out.push(c);
        out
    }

    #[test]
    fn cublaslt_matches_its_model() {
        let Some(dev) = device() else { return };
        let blas = Blas::new(&dev).expect("cuBLASLt");
        let mut rng = catalog::Rng::new(99);
        for c in checks() {
            let p = &c.plan;
            let a = rng.values(c.lens[0], -1.0, 1.0, p.operand_dtype);
            let b = rng.values(c.lens[1], -1.0, 1.0, p.operand_dtype);
            let o = rng.values(c.lens[2], -1.0, 1.0, p.out_dtype);
            let bias = rng.values(p.n as usize, -0.5, 0.5, p.out_dtype);
            let mut want = o.clone();
            model::run(p, &a, &b, &bias, &mut want).unwrap();
            let up = |d: DType, v: &[f64]| dev.upload(d, &host::encode(d, v)).unwrap();
            let (da, db, dout, dbias) = (
                up(p.operand_dtype, &a),
                up(p.operand_dtype, &b),
                up(p.out_dtype, &o),
                up(p.out_dtype, &bias),
            );
            blas.gemm(p, &da, &db, &dout, Some(&dbias))
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            let got = host::decode(p.out_dtype, &dev.download(&dout).unwrap());
            let mut worst = 0.0f64;
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                let err = (g - w).abs();
                assert!(
                    err <= c.abs + c.rel * w.abs(),
                    "{}: element {i}: got {g}, model {w}",
                    c.name
                );
                worst = worst.max(err / (c.abs + c.rel * w.abs()));
            }
            println!(
                "gpu-check: cuBLASLt {} matches the model (worst error {:.2} of tolerance)",
                c.name, worst
            );
        }
    }

    #[test]
    fn cublaslt_throughput() {
        let Some(dev) = device() else { return };
        let blas = Blas::new(&dev).expect("cuBLASLt");
        let mut rng = catalog::Rng::new(30);
        for (name, n, dtype, compute) in [
            (
                "matmul_bf16 8192^3 (bf16 out)",
                8192u64,
                DType::BF16,
                Compute::F32,
            ),
            ("matmul_f32 4096^3 (tf32)", 4096, DType::F32, Compute::Tf32),
        ] {
            let mut p = GemmPlan::dense(1, n, n, n, dtype, dtype);
            p.compute = compute;
            let len = (n * n) as usize;
            // Random operands (zeros run faster than real data).
            let vals = rng.values(len, -1.0, 1.0, dtype);
            let a = dev.upload(dtype, &host::encode(dtype, &vals)).unwrap();
            let b = dev.upload(dtype, &host::encode(dtype, &vals)).unwrap();
            let out = dev.alloc(dtype, len).unwrap();
            for _ in 0..3 {
                blas.gemm(&p, &a, &b, &out, None).unwrap();
            }
            dev.synchronize().unwrap();
            let reps = 20;
            let t = Instant::now();
            for _ in 0..reps {
                blas.gemm(&p, &a, &b, &out, None).unwrap();
            }
            dev.synchronize().unwrap();
            let secs = t.elapsed().as_secs_f64() / reps as f64;
            let tflops = 2.0 * (n as f64).powi(3) / secs / 1e12;
            println!(
                "gpu-check: cuBLASLt {name}: {:.3} ms, {tflops:.0} TFLOP/s",
                secs * 1e3
            );
        }
    }
}
