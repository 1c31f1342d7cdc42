//! The facade registers the CUDA backends: `with_backend("cuda-sim", ..)` runs
//! jitted and eager code on the kernel simulator and agrees with the CPU
//! backend; primitives the lowering lacks are `Unsupported` errors; `cuda`
//! is registered but never the default, and `JAXON_BACKEND=cuda-sim` selects
//! the simulator for the whole process.

use jaxon::ir::IrError;
use jaxon::prelude::*;

/// A seeded xorshift64* stream of floats in `[-2, 2)`.
fn random_f32(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
            4.0 * u - 2.0
        })
        .collect()
}

/// Elementwise + matmul + reductions: a dense layer with `tanh`, its row
/// sums and its maximum.
fn layer((x, w, b): (Array, Array, Array)) -> (Array, Array, Array) {
    let h = (x.matmul(&w) + &b).tanh() * 2.0 - (-x.abs().sum(-1)).exp().reshape(&[-1, 1]);
    let rows = h.sum(-1);
    let top = h.max(All);
    (h, rows, top)
}

fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}[{i}]: cuda-sim {g} vs cpu {w}"
        );
    }
}

#[test]
fn jitted_layer_on_cuda_sim_matches_cpu() {
    for (seed, (m, k, n)) in [(1u64, (4, 3, 5)), (2, (7, 16, 9)), (3, (33, 5, 1))] {
        let x = Array::from_vec(random_f32(seed, m * k), &[m, k]);
        let w = Array::from_vec(random_f32(seed + 100, k * n), &[k, n]);
        let b = Array::from_vec(random_f32(seed + 200, n), &[n]);
        let args = (x, w, b);
        let f = jit(layer);
        let (h0, r0, t0) = jaxon::with_backend("cpu", || f.call(args.clone()))
            .expect("cpu is registered")
            .expect("cpu runs the layer");
        let (h1, r1, t1) = jaxon::with_backend("cuda-sim", || f.call(args.clone()))
            .expect("cuda-sim is registered")
            .expect("cuda-sim runs the layer");
        assert_eq!(h1.shape(), vec![m, n]);
        assert_eq!(r1.shape(), vec![m]);
        assert_eq!(t1.shape(), Vec::<usize>::new());
        let tol = 1e-5 * k as f32;
        assert_close("h", &h1.to_vec::<f32>(), &h0.to_vec::<f32>(), tol);
        assert_close(
            "rows",
            &r1.to_vec::<f32>(),
            &r0.to_vec::<f32>(),
            tol * n as f32,
        );
        assert_close("max", &t1.to_vec::<f32>(), &t0.to_vec::<f32>(), tol);
    }
}

#[test]
fn eager_ops_run_on_cuda_sim() {
    let x = Array::from_vec(random_f32(7, 37), &[37]);
    let on_cpu = (x.sin() * 2.5 + &x).sum(All).item::<f32>();
    let on_sim = jaxon::with_backend("cuda-sim", || {
        assert_eq!(jaxon::eval_backend().unwrap().name(), "cuda-sim");
        (x.sin() * 2.5 + &x).sum(All).item::<f32>()
    })
    .expect("cuda-sim is registered");
    assert!(
        (on_cpu - on_sim).abs() <= 1e-5 * on_cpu.abs().max(1.0),
        "{on_sim} vs {on_cpu}"
    );
}

#[test]
fn unsupported_primitive_is_an_error_not_a_panic() {
    let x = Array::from_vec(random_f32(9, 12), &[3, 4]);
    // A width-changing `bitcast_convert_type` has no CUDA lowering yet.
    let to_bytes = |x: &Array| jaxon::lax::bitcast_convert_type(x, DType::U8);
    let got = jaxon::with_backend("cuda-sim", || {
        jit(|x: Array| jaxon::ok_or_raise(to_bytes(&(x * 2.0)))).call(x.clone())
    })
    .expect("cuda-sim is registered");
    match got {
        Err(Error::Ir(IrError::Unsupported { primitive, .. })) => {
            assert_eq!(primitive, "bitcast_convert_type")
        }
        Err(e) => panic!("expected an Unsupported error, got {e}"),
        Ok(_) => {
            panic!("bitcast_convert_type lowered: pick another not-yet primitive for this test")
        }
    }
    // The same on an eager operation.
    let eager = jaxon::with_backend("cuda-sim", || to_bytes(&x)).expect("cuda-sim is registered");
    match eager {
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("`bitcast_convert_type`") && msg.contains("cannot compile"),
                "{msg}"
            );
        }
        Ok(_) => {
            panic!("bitcast_convert_type lowered: pick another not-yet primitive for this test")
        }
    }
    // The CPU backend still runs it afterwards.
    let y = jit(|x: Array| jaxon::ok_or_raise(to_bytes(&x)))
        .call(x)
        .expect("cpu runs bitcast_convert_type");
    assert_eq!(y.shape(), vec![3, 4, 4]);
}

#[test]
fn cuda_is_registered_but_never_the_default() {
    if std::env::var("JAXON_BACKEND").is_ok() {
        eprintln!("skipped: JAXON_BACKEND overrides the default");
        return;
    }
    assert_eq!(jaxon::eval_backend().unwrap().name(), "cpu");
    // Selecting `cuda` never panics: without a GPU (or driver, or NVRTC) the
    // call is an error naming what is missing; with one it computes.
    let x = Array::from_vec(random_f32(11, 8), &[8]);
    let want = (x.sin() + 1.0).to_vec::<f32>();
    let got = jaxon::with_backend("cuda", || jit(|x: Array| x.sin() + 1.0).call(x.clone()))
        .expect("cuda is registered");
    match got {
        Ok(y) => assert_close("cuda", &y.to_vec::<f32>(), &want, 1e-5),
        Err(e) => eprintln!("cuda backend unavailable here (expected without a GPU): {e}"),
    }
}

/// Run with `JAXON_BACKEND=cuda-sim`, the simulator is the default; run
/// without it, this test runs itself in a child process with it set.
#[test]
fn jaxon_backend_env_selects_cuda_sim() {
    match std::env::var("JAXON_BACKEND").as_deref() {
        Ok("cuda-sim") => {
            assert_eq!(jaxon::eval_backend().unwrap().name(), "cuda-sim");
            let x = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
            let y = jit(|x: Array| (x.clone() * &x).sum(All)).call(x).unwrap();
            assert_eq!(y.item::<f32>(), 14.0);
        }
        Ok(_) => eprintln!("skipped: JAXON_BACKEND names another backend"),
        Err(_) => {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "cuda_sim_backend::jaxon_backend_env_selects_cuda_sim",
                    "--nocapture",
                ])
                .env("JAXON_BACKEND", "cuda-sim")
                .output()
                .expect("the test binary runs");
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "child failed:\n{text}");
            assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
        }
    }
}
