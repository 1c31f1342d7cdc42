//! `f32` products at the default precision on TensorFloat-32, as JAX runs
//! them on a GPU (`lower/precision.rs`): with
//! `JAXON_DEFAULT_MATMUL_PRECISION=tensorfloat32` (set by this binary's one
//! test, a process of its own), a `dot_general` with `precision=None`
//! rounds its operands to tf32 and sums in `f32` (in a dynamic-shape
//! program too), while `Precision.HIGHEST` stays full `f32`; an unknown
//! value is a compile error naming the accepted ones; and a Pallas
//! kernel's f32 `dot` runs on tf32 tensor cores (`mma.m16n8k8`) under the
//! same choice. Runs on `cuda-sim` (which models the rounding), or on the
//! GPU under `JAXON_LOWERING_BACKEND=cuda` (cuBLASLt's TF32 kernels).

mod lowering_util;

use jaxon_backend_cuda::blas::model::tf32;
use jaxon_backend_cuda::lower::precision::ENV;
use jaxon_backend_cuda::lower::CudaSimBackend;
use jaxon_ir::{Backend, DType, HostArray};
use lowering_util::{backend_name, parse, run_lowered, Rng};

const M: usize = 48;
const K: usize = 200;
const N: usize = 40;

fn product(precision: &str) -> String {
    format!(
        "{{ lambda ; a:f32[{M},{K}] b:f32[{K},{N}]. let
    c:f32[{M},{N}] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision={precision}
      preferred_element_type=float32
    ] a b
  in (c,) }}"
    )
}

/// `Σ_k f(a[i,k]) · f(b[k,j])` in `f64`, and `Σ_k |a[i,k] · b[k,j]|`.
fn reference(a: &[f64], b: &[f64], f: fn(f64) -> f64) -> (Vec<f64>, Vec<f64>) {
    let mut sum = vec![0.0; M * N];
    let mut mag = vec![0.0; M * N];
    for i in 0..M {
        for j in 0..N {
            for k in 0..K {
                let (x, y) = (a[i * K + k], b[k * N + j]);
                sum[i * N + j] += f(x) * f(y);
                mag[i * N + j] += (x * y).abs();
            }
        }
    }
    (sum, mag)
}

fn inputs() -> (HostArray, HostArray) {
    let mut rng = Rng::new(21);
    let mut draw = |n: usize| -> Vec<f64> { (0..n).map(|_| rng.unit() * 4.0 - 2.0).collect() };
    let (a, b) = (draw(M * K), draw(K * N));
    (
        HostArray::from_f64(DType::F32, &[M, K], &a).unwrap(),
        HostArray::from_f64(DType::F32, &[K, N], &b).unwrap(),
    )
}

fn run(precision: &str, a: &HostArray, b: &HostArray) -> Vec<f64> {
    let out = run_lowered(&parse(&product(precision)), &[a.clone(), b.clone()])
        .unwrap_or_else(|e| panic!("{}: {e}", backend_name()));
    out[0].to_f64_vec()
}

/// The environment variable is process-wide: this binary has one test,
/// which runs the checks one after another.
#[test]
fn tf32_follows_the_default_matmul_precision() {
    default_precision_products_are_tf32_and_highest_ones_f32();
    pallas_f32_dots_take_tf32_tensor_cores_when_allowed();
}

fn default_precision_products_are_tf32_and_highest_ones_f32() {
    std::env::set_var(ENV, "tensorfloat32");
    let (a, b) = inputs();
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let (want_tf32, mag) = reference(&av, &bv, tf32);
    let (want_f32, _) = reference(&av, &bv, |x| x);
    // The simulator models `cvt.rna.tf32.f32` exactly, so only the f32
    // summation differs; cuBLASLt may round operands differently (one tf32
    // ulp, 2^-10 relative, on each).
    let tol = if backend_name() == "cuda" {
        2f64.powi(-9)
    } else {
        1e-5
    };
    let got = run("None", &a, &b);
    let mut off_f32 = 0;
    for (i, g) in got.iter().enumerate() {
        assert!(
            (g - want_tf32[i]).abs() <= tol * mag[i],
            "{}: c[{i}] = {g}, the tf32 product is {} (exact {})",
            backend_name(),
            want_tf32[i],
            want_f32[i]
        );
        if (g - want_f32[i]).abs() > 1e-5 * mag[i] {
            off_f32 += 1;
        }
    }
    assert!(
        off_f32 > M * N / 4,
        "{}: only {off_f32} of {} elements show tf32 rounding",
        backend_name(),
        M * N
    );
    let highest = run("(Precision.HIGHEST, Precision.HIGHEST)", &a, &b);
    for (i, g) in highest.iter().enumerate() {
        assert!(
            (g - want_f32[i]).abs() <= 1e-5 * mag[i],
            "{}: HIGHEST c[{i}] = {g}, exact {}",
            backend_name(),
            want_f32[i]
        );
    }

    // A dynamic-shape program (rows as an argument) takes the same choice.
    let dynamic = format!(
        "{{ lambda ; n:i64[] a:f32[n,{K}] b:f32[{K},{N}]. let
    c:f32[n,{N}] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      precision=None
      preferred_element_type=float32
    ] a b
  in (c,) }}"
    );
    let rows = HostArray::from_f64(DType::I64, &[], &[M as f64]).unwrap();
    let got = run_lowered(&parse(&dynamic), &[rows, a.clone(), b.clone()])
        .unwrap_or_else(|e| panic!("{}: {e}", backend_name()))[0]
        .to_f64_vec();
    for (i, g) in got.iter().enumerate() {
        assert!(
            (g - want_tf32[i]).abs() <= tol * mag[i],
            "{}: dynamic c[{i}] = {g}, the tf32 product is {}",
            backend_name(),
            want_tf32[i]
        );
    }
    assert!(
        got.iter()
            .zip(&want_f32)
            .zip(&mag)
            .any(|((g, w), m)| (g - w).abs() > 1e-5 * m),
        "{}: the dynamic product shows no tf32 rounding",
        backend_name()
    );

    std::env::set_var(ENV, "float32");
    let full = run("None", &a, &b);
    for (i, g) in full.iter().enumerate() {
        assert!(
            (g - want_f32[i]).abs() <= 1e-5 * mag[i],
            "{}: float32 c[{i}] = {g}, exact {}",
            backend_name(),
            want_f32[i]
        );
    }

    std::env::set_var(ENV, "tf33");
    let err = CudaSimBackend::new()
        .compile(&parse(&product("None")))
        .err()
        .expect("an unknown precision is refused");
    let msg = err.to_string();
    assert!(
        msg.contains("tf33") && msg.contains("tensorfloat32"),
        "{msg}"
    );
    std::env::remove_var(ENV);
}

/// `a @ b` of f32 blocks inside a `pallas_call`, run by the lowering
/// backend, and whether its kernel holds a tf32 `mma`.
fn pallas_matmul(m: usize, n: usize, a: &HostArray, b: &HostArray) -> (Vec<f64>, bool) {
    use jaxon_backend_cuda::kir::{MmaShape, Stmt};
    use jaxon_pallas::{dot, pallas_call, shape_dtype, Ref};
    use jaxon_trace::Array;
    let call = pallas_call(
        |r: &[Ref]| r[2].store(dot(&r[0].load(), &r[1].load())),
        shape_dtype(&[m, n], DType::F32),
    );
    let arrays = vec![Array::from_host(a.clone()), Array::from_host(b.clone())];
    let closed =
        jaxon_trace::make_jaxpr(move |xs: Vec<Array>| call.call1(&xs).unwrap())(arrays).unwrap();
    let opts = jaxon_backend_cuda::lower::precision::LowerOptions::simulator().unwrap();
    let prog = jaxon_backend_cuda::lower::lower_with(&closed, opts).expect("lowers");
    let tf32_mma = prog.kernels.iter().any(|kr| {
        lowering_util::holds(&kr.body, &|s| {
            matches!(
                s,
                Stmt::Mma {
                    shape: MmaShape::M16N8K8Tf32,
                    ..
                }
            )
        })
    });
    // The kernels compile for sm_80 and sm_90 (a skip line without NVRTC).
    lowering_util::nvrtc_check(&format!("tf32_pallas_{m}x{n}"), &prog.kernels, |_, _| false);
    let out = run_lowered(&closed, &[a.clone(), b.clone()])
        .unwrap_or_else(|e| panic!("{}: {e}", backend_name()));
    (out[0].to_f64_vec(), tf32_mma)
}

/// `dot` of f32 blocks inside a `pallas_call`: on tf32 tensor cores
/// (`mma.m16n8k8`) when the options allow TF32, else the exact FMA loop;
/// blocks in shared memory (small) and in global scratch (large), with a
/// `K` that is not a multiple of the 8-deep tile.
fn pallas_f32_dots_take_tf32_tensor_cores_when_allowed() {
    let mut rng = Rng::new(5);
    for (m, k, n) in [(16, 40, 24), (48, 100, 40)] {
        let mut draw =
            |len: usize| -> Vec<f64> { (0..len).map(|_| rng.unit() * 4.0 - 2.0).collect() };
        let (av, bv) = (draw(m * k), draw(k * n));
        let a = HostArray::from_f64(DType::F32, &[m, k], &av).unwrap();
        let b = HostArray::from_f64(DType::F32, &[k, n], &bv).unwrap();
        let refs = |f: fn(f64) -> f64| -> (Vec<f64>, Vec<f64>) {
            let mut sum = vec![0.0; m * n];
            let mut mag = vec![0.0; m * n];
            for i in 0..m {
                for j in 0..n {
                    for kk in 0..k {
                        let (x, y) = (av[i * k + kk], bv[kk * n + j]);
                        sum[i * n + j] += f(x) * f(y);
                        mag[i * n + j] += (x * y).abs();
                    }
                }
            }
            (sum, mag)
        };
        let ((want_tf32, mag), (want_f32, _)) = (refs(tf32), refs(|x| x));
        let tol = if backend_name() == "cuda" {
            2f64.powi(-9)
        } else {
            1e-5
        };

        std::env::set_var(ENV, "tensorfloat32");
        let (got, mma) = pallas_matmul(m, n, &a, &b);
        assert!(mma, "{m}x{k}x{n}: no tf32 mma in the kernel");
        let mut off = 0;
        for (i, g) in got.iter().enumerate() {
            assert!(
                (g - want_tf32[i]).abs() <= tol * mag[i],
                "{m}x{k}x{n} tf32: c[{i}] = {g}, the tf32 product is {}",
                want_tf32[i]
            );
            off += usize::from((g - want_f32[i]).abs() > 1e-5 * mag[i]);
        }
        assert!(
            off > m * n / 4,
            "{m}x{k}x{n}: only {off} elements show tf32 rounding"
        );

        std::env::set_var(ENV, "float32");
        let (got, mma) = pallas_matmul(m, n, &a, &b);
        assert!(!mma, "{m}x{k}x{n}: a tf32 mma under float32");
        for (i, g) in got.iter().enumerate() {
            assert!(
                (g - want_f32[i]).abs() <= 1e-5 * mag[i],
                "{m}x{k}x{n} f32: c[{i}] = {g}, exact {}",
                want_f32[i]
            );
        }
    }
    std::env::remove_var(ENV);
}
