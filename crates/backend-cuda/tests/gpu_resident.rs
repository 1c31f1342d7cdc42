//! Resident arrays on the GPU: a `cuda` program's results stay on the
//! device ([`CudaArray`]), the next program binds them without a copy, and
//! only `to_host` reads them back; the values equal the interpreter's.
//!
//! Without a GPU every test prints `skipped: ...` and passes, unless
//! `JAXON_REQUIRE_GPU=1` is set (as `cargo xtask gpu-check`'s script does).

mod lowering_util;

use jaxon_backend_cuda::lower::backend::CudaArray;
use jaxon_backend_cuda::lower::CudaBackend;
use jaxon_backend_cuda::runtime::Device;
use jaxon_ir::interp::eval_closed_jaxpr;
use jaxon_ir::{Backend, Buffer, DType, HostArray};
use lowering_util::{compare, parse, random, Dist, Rng, Tol};
use std::sync::Arc;

fn gpu() -> bool {
    match Device::open(0) {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("JAXON_REQUIRE_GPU").is_none(),
                "JAXON_REQUIRE_GPU is set but no GPU opened: {e}"
            );
            println!("skipped: {e}");
            false
        }
    }
}

fn resident(b: &Arc<dyn Buffer>) -> &CudaArray {
    b.as_any()
        .downcast_ref::<CudaArray>()
        .unwrap_or_else(|| panic!("a cuda result stays on the device, got {b:?}"))
}

#[test]
fn results_stay_on_the_device_and_chain_without_copies() {
    if !gpu() {
        return;
    }
    let f = parse("{ lambda ; a:f32[37,5] b:f32[37,5]. let c:f32[37,5] = sin a; d:f32[37,5] = mul c b; e:f32[37,5] = add d 1.0:f32[] in (e,) }");
    let g = parse("{ lambda ; a:f32[37,5]. let b:f32[37,5] = mul a 2.0:f32[]; c:f32[5] = reduce_sum[axes=(0,) out_sharding=None] b in (b, c) }");
    let cuda = CudaBackend::new();
    let (fx, gx) = (cuda.compile(&f).unwrap(), cuda.compile(&g).unwrap());
    let mut rng = Rng::new(5);
    let x = random(&mut rng, DType::F32, &[37, 5], Dist::Uniform(3.0));
    let y = random(&mut rng, DType::F32, &[37, 5], Dist::Uniform(3.0));
    let args = [cuda.to_device(&x).unwrap(), cuda.to_device(&y).unwrap()];
    let out = fx.execute(&args).unwrap();
    resident(&out[0]);
    let out2 = gx.execute(&out).unwrap();
    let want1 = eval_closed_jaxpr(&f, &[x, y]).unwrap();
    let want2 = eval_closed_jaxpr(&g, &want1).unwrap();
    // `sin(a)·b + 1` cancels near -1, and the GPU's `sinf` is within 2 ulp
    // of the host's (NVRTC may also contract the FMA): relative to the
    // result's scale, not in ulps of each element (H100, 2026-11-27).
    compare("f", &out[0].to_host().unwrap(), &want1[0], Tol::Rel(2e-6));
    for (i, (o, w)) in out2.iter().zip(&want2).enumerate() {
        resident(o);
        compare(
            &format!("g output {i}"),
            &o.to_host().unwrap(),
            w,
            Tol::Rel(1e-5),
        );
    }
    println!("gpu-check: resident arrays chain two programs without a host copy");
}

#[test]
fn an_identity_program_returns_its_argument_buffer() {
    if !gpu() {
        return;
    }
    let id = parse("{ lambda ; a:f32[8]. let  in (a,) }");
    let cuda = CudaBackend::new();
    let exe = cuda.compile(&id).unwrap();
    let x = HostArray::from_f64(
        DType::F32,
        &[8],
        &[1.0, -2.0, 3.5, 0.0, 7.0, 8.0, -9.0, 1e-3],
    )
    .unwrap();
    let arg = cuda.to_device(&x).unwrap();
    let out = exe.execute(std::slice::from_ref(&arg)).unwrap();
    assert!(
        Arc::ptr_eq(&resident(&arg).0.buffer, &resident(&out[0]).0.buffer),
        "the input was bound, not copied"
    );
    assert_eq!(out[0].to_host().unwrap(), x);
}

#[test]
fn a_device_argument_of_the_wrong_type_is_an_error() {
    if !gpu() {
        return;
    }
    let f = parse("{ lambda ; a:f32[4]. let b:f32[4] = neg a in (b,) }");
    let cuda = CudaBackend::new();
    let exe = cuda.compile(&f).unwrap();
    let wrong = HostArray::from_f64(DType::I32, &[4], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let arg = cuda.to_device(&wrong).unwrap();
    let err = match exe.execute(&[arg]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("an i32 device buffer bound to an f32 input"),
    };
    assert!(err.contains("device argument"), "{err}");
}

#[test]
fn every_dtype_round_trips_through_to_device() {
    if !gpu() {
        return;
    }
    let cuda = CudaBackend::new();
    let mut rng = Rng::new(9);
    for dtype in DType::ALL.into_iter().filter(|d| !d.is_complex()) {
        let x = random(&mut rng, dtype, &[3, 7], Dist::Uniform(50.0));
        let b = cuda.to_device(&x).unwrap();
        assert_eq!(b.aval(), x.aval(), "{dtype}");
        assert_eq!(b.to_host().unwrap(), x, "{dtype}");
    }
}

#[test]
fn the_plan_of_an_identity_returns_its_input_buffer() {
    // What the GPU test above relies on, checked without a GPU.
    let prog =
        jaxon_backend_cuda::lower::lower(&parse("{ lambda ; a:f32[8]. let  in (a,) }")).unwrap();
    assert_eq!(prog.outputs[0].0, prog.inputs[0]);
}
