//! The interpreter stack's guarantees: leaked tracers, concretization
//! errors, raised errors caught at entry points, jit caching per signature.

use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{catch, jit, make_jaxpr, Array, Error, Static};
use std::sync::Mutex;

fn rand_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64 * 4.0 - 2.0) as f32
        })
        .collect()
}

#[test]
fn leaked_tracer_is_an_error_not_a_crash() {
    let stash: Mutex<Option<Array>> = Mutex::new(None);
    let f = |x: Array| {
        *stash.lock().unwrap() = Some(x.clone());
        x.sin()
    };
    make_jaxpr(f)(Array::from_vec(rand_f32(4, 1), &[4])).unwrap();
    let leaked = stash.lock().unwrap().take().unwrap();
    // Using the leaked tracer eagerly...
    let err = catch(|| &leaked + 1.0).unwrap_err();
    assert!(matches!(err, Error::UnexpectedTracer(_)), "{err}");
    // ...inside another trace...
    let err =
        make_jaxpr(|y: Array| &y * &leaked)(Array::from_vec(rand_f32(4, 2), &[4])).unwrap_err();
    assert!(matches!(err, Error::UnexpectedTracer(_)), "{err}");
    // ...or reading it.
    let err = leaked.try_to_vec::<f32>().unwrap_err();
    assert!(matches!(err, Error::UnexpectedTracer(_)), "{err}");
}

#[test]
fn rust_if_on_a_tracer_is_a_concretization_error_naming_the_comparison() {
    let f = |x: Array| {
        let s = x.sum(All);
        if s > 0.0 {
            x.sin()
        } else {
            x.cos()
        }
    };
    let err = make_jaxpr(f)(Array::from_vec(rand_f32(3, 3), &[3])).unwrap_err();
    match &err {
        Error::Concretization { op, aval } => {
            assert!(op.contains('>'), "{op}");
            assert_eq!(aval, "f32[]");
        }
        other => panic!("expected a concretization error, got {other}"),
    }
    assert!(err.to_string().contains("comparison `>`"), "{err}");
    // The same function runs eagerly: the value is concrete there.
    let x = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let y = catch(|| f(x)).unwrap();
    assert_eq!(y.to_vec::<f32>(), vec![1f32.sin(), 2f32.sin(), 3f32.sin()]);
}

#[test]
fn to_vec_on_a_tracer_is_a_concretization_error() {
    let f = |x: Array| {
        let _ = x.to_vec::<f32>();
        x
    };
    let err = jit(f)
        .call(Array::from_vec(rand_f32(2, 4), &[2]))
        .unwrap_err();
    assert!(
        matches!(err, Error::Concretization { ref op, .. } if op == "to_vec"),
        "{err}"
    );
}

#[test]
fn shape_errors_name_both_shapes_and_are_returned_by_entry_points() {
    let f = |(a, b): (Array, Array)| &a + &b;
    let a = Array::from_vec(rand_f32(6, 5), &[2, 3]);
    let b = Array::from_vec(rand_f32(4, 6), &[4]);
    let err = jit(f).call((a.clone(), b.clone())).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("f32[2,3]") && msg.contains("f32[4]"), "{msg}");
    let err = catch(|| &a + &b).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
}

#[test]
fn jit_compiles_once_per_signature_weak_types_included() {
    let f = jit(|(x, y): (Array, Array)| (&x * &y).sum(All) + 1.0);
    let a = Array::from_vec(rand_f32(5, 7), &[5]);
    let b = Array::from_vec(rand_f32(5, 8), &[5]);
    for _ in 0..3 {
        f.call((a.clone(), b.clone())).unwrap();
    }
    assert_eq!((f.trace_count(), f.compile_count()), (1, 1));
    // A new shape is a new signature.
    let c = Array::from_vec(rand_f32(6, 9), &[6]);
    f.call((c.clone(), c.clone())).unwrap();
    assert_eq!((f.trace_count(), f.compile_count()), (2, 2));
    // A weakly typed scalar differs from a strong one of the same dtype.
    f.call((Array::weak(2.0), Array::scalar(3.0f32))).unwrap();
    f.call((Array::scalar(2.0f32), Array::scalar(3.0f32)))
        .unwrap();
    assert_eq!(f.trace_count(), 4);
    f.call((Array::weak(5.0), Array::scalar(1.0f32))).unwrap();
    assert_eq!(f.trace_count(), 4);
}

#[test]
fn static_leaves_are_part_of_the_cache_key() {
    let f = jit(|(x, n): (Array, Static<i32>)| x.powi(n.0 as i64));
    let x = Array::from_vec(rand_f32(3, 10), &[3]);
    let y2 = f.call((x.clone(), Static(2))).unwrap();
    let y3 = f.call((x.clone(), Static(3))).unwrap();
    f.call((x.clone(), Static(2))).unwrap();
    assert_eq!(f.trace_count(), 2);
    let xs = x.to_vec::<f32>();
    assert_eq!(
        y2.to_vec::<f32>(),
        xs.iter().map(|v| v * v).collect::<Vec<_>>()
    );
    assert_eq!(
        y3.to_vec::<f32>(),
        xs.iter().map(|v| v * v * v).collect::<Vec<_>>()
    );
}

#[test]
fn eager_and_jitted_results_agree() {
    let f = |(x, w): (Array, Array)| {
        let h = jnp::matmul(&x, &w).unwrap().tanh();
        (&h * 2.0 - h.exp() / 3.0).mean(1)
    };
    let x = Array::from_vec(rand_f32(12, 11), &[3, 4]);
    let w = Array::from_vec(rand_f32(20, 12), &[4, 5]);
    let eager = catch(|| f((x.clone(), w.clone()))).unwrap();
    let jitted = jit(f).call((x.clone(), w.clone())).unwrap();
    assert_eq!(eager.shape(), vec![3]);
    assert_eq!(eager.to_vec::<f32>(), jitted.to_vec::<f32>());
    // Against f64 math.
    let (xs, ws) = (x.to_vec::<f32>(), w.to_vec::<f32>());
    for i in 0..3 {
        let mut acc = 0.0f64;
        for j in 0..5 {
            let h: f64 = (0..4)
                .map(|k| xs[i * 4 + k] as f64 * ws[k * 5 + j] as f64)
                .sum::<f64>()
                .tanh();
            acc += h * 2.0 - h.exp() / 3.0;
        }
        let got = eager.to_vec::<f32>()[i] as f64;
        assert!((got - acc / 5.0).abs() < 1e-5, "{got} vs {}", acc / 5.0);
    }
}

#[test]
fn nested_jit_becomes_a_jit_equation() {
    let inner = jit(|x: Array| x.sin() * 2.0).name("inner");
    let outer = |x: Array| inner.call(x.clone()).unwrap() + &x;
    let j = make_jaxpr(outer)(Array::from_vec(rand_f32(3, 13), &[3])).unwrap();
    assert_eq!(
        format!("{}", j.jaxpr),
        "{ lambda ; a:f32[3]. let
    b:f32[3] = jit[
      name=inner
      jaxpr={ lambda ; a:f32[3]. let
          c:f32[3] = sin a
          b:f32[3] = mul c 2.0:f32[]
        in (b,) }
    ] a
    d:f32[3] = add b a
  in (d,) }"
    );
}

#[test]
fn jit_closing_over_an_outer_tracer_hoists_it_to_a_leading_operand() {
    // def outer(x):
    //   @jax.jit
    //   def g(y): return y * x
    //   return g(x)
    let outer = |x: Array| {
        let xc = x.clone();
        let g = jit(move |y: Array| &y * &xc).name("g");
        g.call(x).unwrap()
    };
    let j = make_jaxpr(outer)(Array::from_vec(rand_f32(3, 14), &[3])).unwrap();
    assert_eq!(
        format!("{}", j.jaxpr),
        "{ lambda ; a:f32[3]. let
    b:f32[3] = jit[
      name=g
      jaxpr={ lambda ; a:f32[3] c:f32[3]. let b:f32[3] = mul c a in (b,) }
    ] a a
  in (b,) }"
    );
}

#[test]
fn weak_scalar_promotion_follows_jax() {
    // jnp.ones((3,4), int32) * 2.5 → f32, weakly typed.
    let f = |x: Array| &x * 2.5;
    let x = Array::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4]);
    let j = make_jaxpr(f)(x.clone()).unwrap();
    assert_eq!(
        format!("{}", j.jaxpr),
        "{ lambda ; a:i32[3,4]. let
    b:f32[3,4] = convert_element_type[new_dtype=float32 weak_type=True] a
    c:f32[3,4] = mul b 2.5:f32[]
  in (c,) }"
    );
    let y = catch(|| f(x)).unwrap();
    assert!(y.weak_type());
    assert_eq!(y.to_vec::<f32>()[5], 12.5);
    // f64 arrays keep their width against weak scalars.
    let z = catch(|| Array::from_vec(vec![1.5f64, 2.0], &[2]) * 2.0).unwrap();
    assert_eq!(z.to_vec::<f64>(), vec![3.0, 4.0]);
}
