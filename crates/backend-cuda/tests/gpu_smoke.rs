//! On a GPU: every suite module's CUBIN loads and
//! its kernel resolves, and a kernel of edge-case casts and float max gives
//! exactly what KIR's rules (Rust's own `as`, `half`'s rounding) give.
//! Skips when there is no NVRTC or no device, unless `JAXON_REQUIRE_GPU`
//! is set.

#[path = "common/suite.rs"]
mod suite;

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use jaxon_backend_cuda::kir::{Const, Expr, KernelBuilder};
use jaxon_backend_cuda::nvrtc::{Arch, Compiler};
use jaxon_ir::DType;

#[test]
fn suite_loads_and_casts_are_exact_on_the_gpu() {
    if let Err(e) = jaxon_backend_cuda::runtime::Device::open(0) {
        assert!(
            std::env::var_os("JAXON_REQUIRE_GPU").is_none(),
            "JAXON_REQUIRE_GPU is set but no GPU opened: {e}"
        );
        println!("skipped: {e}");
        return;
    }
    if jaxon_backend_cuda::nvrtc::nvrtc_version().is_err() {
        println!("skipped: no NVRTC");
        return;
    }
    let ctx = match std::panic::catch_unwind(|| CudaContext::new(0)) {
        Ok(Ok(c)) => c,
        _ => {
            println!("skipped: no CUDA device");
            return;
        }
    };
    let arch = Arch::SM90;
    let compiler = Compiler::new(None);
    for k in suite::all() {
        let c = compiler.compile_kernels(&[&k], arch).expect("compiles");
        let m = ctx
            .load_module(Ptx::from_binary(c.cubin))
            .unwrap_or_else(|e| panic!("{}: {e:?}", k.name));
        m.load_function(&k.name)
            .unwrap_or_else(|e| panic!("{}: {e:?}", k.name));
    }

    let mut k = KernelBuilder::new("edge", 32);
    let xf = k.global("xf", DType::F32, false);
    let xd = k.global("xd", DType::F64, false);
    let outs: Vec<_> = [
        DType::I32,
        DType::U8,
        DType::I8,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F16,
        DType::F32,
    ]
    .iter()
    .enumerate()
    .map(|(i, d)| (k.global(&format!("o{i}"), *d, true), *d))
    .collect();
    let x = k.var("x", DType::F32);
    let y = k.var("y", DType::F32);
    let d = k.var("d", DType::F64);
    let t = Expr::thread_x();
    k.load(&[x], xf.into(), t.clone(), None);
    k.load(&[y], xf.into(), Expr::u32(7) - t.clone(), None);
    k.load(&[d], xd.into(), t.clone(), None);
    let vals = [
        Expr::var(x).cast(DType::I32),
        Expr::var(x).cast(DType::U8),
        Expr::var(x).cast(DType::I8),
        Expr::var(x).cast(DType::U64),
        Expr::var(x).cast(DType::F16),
        Expr::var(d).cast(DType::BF16),
        Expr::var(d).cast(DType::F16),
        Expr::var(x).max(Expr::var(y)),
    ];
    for ((p, _), v) in outs.iter().zip(vals) {
        k.store((*p).into(), t.clone(), vec![v], None);
    }
    let kernel = k.finish().expect("verifies");
    let c = compiler
        .compile_kernels(&[&kernel], arch)
        .expect("compiles");
    let m = ctx.load_module(Ptx::from_binary(c.cubin)).expect("loads");
    let f = m.load_function("edge").expect("resolves");
    let s = ctx.default_stream();
    let hx: Vec<f32> = vec![f32::NAN, 1e10, -1e10, 300.7, -5.5, -0.0, 2.5, f32::INFINITY];
    let hd: Vec<f64> = vec![
        1.0 + 2f64.powi(-8) + 2f64.powi(-40),
        1.0 + 2f64.powi(-11) + 2f64.powi(-45),
        -(1.0 + 2f64.powi(-8)),
        1e300,
        -1e-300,
        f64::NAN,
        65519.99,
        3.0,
    ];
    let dx = s.clone_htod(&hx).expect("htod");
    let dd = s.clone_htod(&hd).expect("htod");
    let o0 = s.alloc_zeros::<i32>(8).expect("alloc");
    let o1 = s.alloc_zeros::<u8>(8).expect("alloc");
    let o2 = s.alloc_zeros::<i8>(8).expect("alloc");
    let o3 = s.alloc_zeros::<u64>(8).expect("alloc");
    let o4 = s.alloc_zeros::<u16>(8).expect("alloc");
    let o5 = s.alloc_zeros::<u16>(8).expect("alloc");
    let o6 = s.alloc_zeros::<u16>(8).expect("alloc");
    let o7 = s.alloc_zeros::<f32>(8).expect("alloc");
    let mut b = s.launch_builder(&f);
    b.arg(&dx)
        .arg(&dd)
        .arg(&o0)
        .arg(&o1)
        .arg(&o2)
        .arg(&o3)
        .arg(&o4)
        .arg(&o5)
        .arg(&o6)
        .arg(&o7);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (8, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: arguments match the kernel's parameters; 8 threads, 8 elements.
    unsafe { b.launch(cfg) }.expect("launch");
    let want_i32: Vec<i32> = hx.iter().map(|&v| v as i32).collect();
    let want_u8: Vec<u8> = hx.iter().map(|&v| v as u8).collect();
    let want_i8: Vec<i8> = hx.iter().map(|&v| v as i8).collect();
    let want_u64: Vec<u64> = hx.iter().map(|&v| v as u64).collect();
    let want_f16: Vec<u16> = hx
        .iter()
        .map(|&v| half::f16::from_f32(v).to_bits())
        .collect();
    let want_bf16: Vec<u16> = hd
        .iter()
        .map(|&v| Const::from_f64(DType::BF16, v).bits as u16)
        .collect();
    let want_f16d: Vec<u16> = hd
        .iter()
        .map(|&v| Const::from_f64(DType::F16, v).bits as u16)
        .collect();
    assert_eq!(s.clone_dtoh(&o0).expect("dtoh"), want_i32);
    assert_eq!(s.clone_dtoh(&o1).expect("dtoh"), want_u8);
    assert_eq!(s.clone_dtoh(&o2).expect("dtoh"), want_i8);
    assert_eq!(s.clone_dtoh(&o3).expect("dtoh"), want_u64);
    let nan16 = |v: &Vec<u16>, exp: u16, mant: u16| -> Vec<u16> {
        v.iter()
            .map(|&b| {
                if b & exp == exp && b & mant != 0 {
                    0x7fff
                } else {
                    b
                }
            })
            .collect()
    };
    let got4 = s.clone_dtoh(&o4).expect("dtoh");
    assert_eq!(nan16(&got4, 0x7c00, 0x3ff), nan16(&want_f16, 0x7c00, 0x3ff));
    let got5 = s.clone_dtoh(&o5).expect("dtoh");
    assert_eq!(
        nan16(&got5, 0x7f80, 0x7f),
        nan16(&want_bf16, 0x7f80, 0x7f),
        "f64->bf16"
    );
    let got6 = s.clone_dtoh(&o6).expect("dtoh");
    assert_eq!(
        nan16(&got6, 0x7c00, 0x3ff),
        nan16(&want_f16d, 0x7c00, 0x3ff),
        "f64->f16"
    );
    let got7 = s.clone_dtoh(&o7).expect("dtoh");
    for i in 0..8 {
        let (a, b) = (hx[i], hx[7 - i]);
        let want = if a.is_nan() || b.is_nan() {
            f32::NAN
        } else {
            a.max(b)
        };
        assert!(
            got7[i] == want || (got7[i].is_nan() && want.is_nan()),
            "max {a} {b}: {}",
            got7[i]
        );
    }
    println!("gpu_smoke: all suite modules load; edge casts exact");
}
