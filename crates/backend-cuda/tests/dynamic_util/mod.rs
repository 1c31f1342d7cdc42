//! Shared helpers of the dynamic-shape lowering tests: running a jaxpr
//! compiled once on `cuda-sim` for several argument lists against the
//! interpreter (asserting that no kernel is built after the compile, and
//! compiling the kernels with NVRTC), refusals by name, the seed jaxprs and
//! the one-axis programs. The tests of a binary share a process-wide kernel
//! counter, so each holds [`lock`].

#![allow(dead_code)]

use crate::lowering_util::{backend_name, nvrtc_check, random, Dist, Rng};
use jaxon_backend_cuda::lower::dynamic;
use jaxon_backend_cuda::lower::{CudaBackend, CudaSimBackend};
use jaxon_ir::{eval_closed_jaxpr, Backend, ClosedJaxpr, DType, HostArray};
use jaxon_trace::dynshape::{self as dyn_, Size};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;
use std::sync::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

pub fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

pub fn f64s(rng: &mut Rng, shape: &[usize]) -> HostArray {
    random(rng, DType::F64, shape, Dist::Uniform(1.0))
}

/// Compiles `j` once on `cuda-sim` (on the GPU under
/// `JAXON_LOWERING_BACKEND=cuda`, as `cargo xtask gpu-check` runs the
/// lowering tests), runs it for every argument list of `inputs` and
/// compares with the interpreter (relative `tol`); asserts that no kernel
/// was built after the compile, and compiles the kernels with NVRTC.
pub fn agree(label: &str, j: &ClosedJaxpr, inputs: &[Vec<HostArray>], tol: f64) {
    let backend: Box<dyn Backend> = if backend_name() == "cuda" {
        Box::new(CudaBackend::new())
    } else {
        Box::new(CudaSimBackend::new())
    };
    let exe = backend
        .compile(j)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let built = dynamic::kernels_built();
    for args in inputs {
        let shapes: Vec<_> = args.iter().map(|a| a.shape().to_vec()).collect();
        let bufs: Vec<_> = args.iter().map(|a| backend.to_device(a).unwrap()).collect();
        let got = exe
            .execute(&bufs)
            .unwrap_or_else(|e| panic!("{label} {shapes:?}: {e}"));
        let want = eval_closed_jaxpr(j, args).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            let g = g.to_host().unwrap();
            assert_eq!(
                (g.dtype(), g.shape()),
                (w.dtype(), w.shape()),
                "{label} {shapes:?}"
            );
            for (a, b) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
                assert!(
                    *a == b
                        || (a - b).abs() <= tol * b.abs().max(1.0)
                        || (a.is_nan() && b.is_nan()),
                    "{label} {shapes:?}: {a} vs {b}"
                );
            }
        }
    }
    assert_eq!(
        dynamic::kernels_built(),
        built,
        "{label}: a call built kernels"
    );
    let prog = dynamic::compile(j).unwrap();
    assert!(!prog.kernels().is_empty() || inputs.is_empty());
    nvrtc_check(&format!("dyn_{label}"), prog.kernels(), |_, _| false);
}

/// `dynamic::compile` refuses `j`, naming `what`.
pub fn refused(j: &ClosedJaxpr, what: &str) {
    let err = dynamic::compile(j).expect_err("must not lower").to_string();
    assert!(err.contains(what), "{err}");
    let err = CudaSimBackend::new()
        .compile(j)
        .err()
        .expect("must not compile")
        .to_string();
    assert!(err.contains(what), "{err}");
}

pub const SEED_000: &str = "{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      a
    _:i64[] c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:i64[] f:i64[] g:f64[e]. let
          h:f64[] = convert_element_type[new_dtype=float64 weak_type=False] d
          i:f64[e] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] h e
          j:f64[e] = mul g i
        in (e, j) }
      body_nconsts=1
      nimplicit=1
      preserve_dimensions=True
    ] a a 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    k:f64[a] = add b c
  in (k,) }";

pub const SEED_003: &str = "{ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      a
    c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]. let
          h:f64[d] = add g e
        in (h,) }
      body_nconsts=2
      nimplicit=0
      preserve_dimensions=True
    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] b
    i:f64[a] = add b c
  in (i,) }";

pub const ONES_PLUS_ONE: &str = "{ lambda ; a:i64[]. let
    b:i64[] = add a 1:i64[]
    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] b
  in (b, c) }";

pub fn ones(n: &Array) -> Array {
    ok_or_raise(dyn_::ones(&[n.into()], DType::F64))
}

pub fn iota(n: &Array) -> Array {
    ok_or_raise(dyn_::iota(DType::F64, n))
}

pub type Op = Box<dyn Fn(&Array) -> Array>;

pub fn dynamic_ops() -> Vec<(&'static str, Op)> {
    let sum = |a: Array| a.sum(jnp::All);
    vec![
        ("exp", Box::new(move |x: &Array| sum(x.exp()))),
        ("log", Box::new(move |x: &Array| sum((x * x + 1.0).log()))),
        (
            "pow",
            Box::new(move |x: &Array| {
                sum(ok_or_raise(jnp::power(
                    &(x * x + 1.0),
                    &Array::scalar(1.5f64),
                )))
            }),
        ),
        ("integer_pow", Box::new(move |x: &Array| sum(x.powi(3)))),
        ("max", Box::new(|x: &Array| x.max(jnp::All))),
        ("min", Box::new(|x: &Array| x.min(jnp::All))),
        ("mean", Box::new(|x: &Array| x.mean(jnp::All))),
        (
            "relu",
            Box::new(move |x: &Array| sum(ok_or_raise(jaxon_trace::nn::relu(x)) * x)),
        ),
        ("dot", Box::new(|x: &Array| ok_or_raise(jnp::dot(x, x)))),
        (
            "where",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::where_(&x.gt(0.0), x, &(x * 2.0))))),
        ),
        (
            "softmax",
            Box::new(move |x: &Array| {
                let e = x - x.max(jnp::All);
                sum(&e.exp() / e.exp().sum(jnp::All) * x)
            }),
        ),
        (
            "cumsum",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::cumsum(x, Some(0))).sin())),
        ),
        (
            "argmax",
            Box::new(move |x: &Array| {
                let i = ok_or_raise(jnp::argmax(&x.sin(), Some(0), false));
                sum(x * 2.0) + i.astype(DType::F64)
            }),
        ),
        (
            "sort",
            Box::new(move |x: &Array| sum(ok_or_raise(jnp::sort(&x.sin(), Some(0))) * x)),
        ),
        (
            "concatenate",
            Box::new(move |x: &Array| {
                sum(ok_or_raise(dyn_::concatenate(&[x.clone(), x * 2.0], 0)).sin())
            }),
        ),
        (
            "outer_sum_rows",
            Box::new(move |x: &Array| {
                let n: Size = ok_or_raise(dyn_::size_of(x, 0)).into();
                let m = ok_or_raise(dyn_::broadcast_in_dim(x, &[n.clone(), n], &[1]));
                let t = m.transpose(&[1, 0]);
                (&m * 2.0 - &t).max(1usize).sum(jnp::All)
            }),
        ),
    ]
}
