//! Host callbacks (`debug::print`, `debug::callback`, `pure_callback`) on
//! the CPU backend and on the interpreter: eagerly, under `jit`, `vmap`
//! (once per element, in order; `pure_callback` by its vmap method,
//! checked against a loop of unbatched calls), `jvp` and `grad` (the
//! primal is printed; gradients unchanged; `pure_callback` refuses), and
//! the errors (a wrong result type, a failing callback, a bad format).

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{DType, Dim, HostArray, ShapedArray, Storage};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::{debug, jit, make_jaxpr, pure_callback, register_backend, with_backend};
use jaxon_trace::{Array, VmapMethod};
use jaxon_transforms::{grad, jvp, vmap};
use std::sync::{Arc, Mutex};

const BACKENDS: &[&str] = &["cpu", "interpreter"];

fn on_each(f: impl Fn(&str)) {
    register_backend(Arc::new(CpuBackend::new()));
    register_backend(Arc::new(jaxon_ir::interp::InterpreterBackend));
    for b in BACKENDS {
        with_backend(b, || f(b)).unwrap();
    }
}

fn vec3() -> Array {
    Array::from_vec(vec![1.0f32, 2.5, -3.25], &[3])
}

#[test]
fn print_eagerly_and_under_jit() {
    on_each(|b| {
        let (r, out) = debug::capture_output(|| debug::print("x={} n={}", &[&vec3(), &vec3()]));
        r.unwrap();
        assert_eq!(out, "x=[ 1.    2.5  -3.25] n=[ 1.    2.5  -3.25]\n", "{b}");

        let f = jit(|x: Array| {
            let y = &x + &x;
            ok_or_raise(debug::print_with(
                "{} {y} {{}} {x}",
                &[&x],
                &[("y", &y), ("x", &x)],
                true,
            ));
            y
        });
        let (y, out) = debug::capture_output(|| f.call(vec3()));
        assert_eq!(y.unwrap().to_vec::<f32>(), vec![2.0, 5.0, -6.5], "{b}");
        assert_eq!(
            out, "[ 1.    2.5  -3.25] [ 2.   5.  -6.5] {} [ 1.    2.5  -3.25]\n",
            "{b}"
        );
        // A second call prints again (the print is not traced away).
        let (_, out) = debug::capture_output(|| f.call(vec3()));
        assert_eq!(out.lines().count(), 1, "{b}");
    });
}

#[test]
fn staged_text_is_jaxs() {
    let j = make_jaxpr(|x: Array| {
        ok_or_raise(debug::print("x={}", &[&x]));
        &x + &x
    })(Array::scalar(1.0f32))
    .unwrap();
    let want = "{ lambda ; a:f32[]. let
    debug_print[
      fmt=x={}
      has_placeholders=True
      in_tree=PyTreeDef(((*,), {}))
      logging_record=None
      np_printoptions=(('edgeitems', 3), ('threshold', 1000), ('floatmode', 'maxprec'), ('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), ('infstr', 'inf'), ('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))
      ordered=False
      partitioned=False
      static_args=()
    ] a
    b:f32[] = add a a
  in (b,) }";
    assert_eq!(j.to_string(), want);
}

#[test]
fn vmap_prints_each_element_in_order() {
    on_each(|b| {
        let f = |x: Array| {
            ok_or_raise(debug::print("row={}", &[&x]));
            &x + &x
        };
        let xs = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
        let (y, out) = debug::capture_output(|| vmap(f).call(xs.clone()));
        assert_eq!(y.unwrap().to_vec::<f32>().len(), 6, "{b}");
        assert_eq!(out, "row=[1. 2.]\nrow=[3. 4.]\nrow=[5. 6.]\n", "{b}");
        // Batched along axis 1, under jit.
        let g = jit(move |x: Array| vmap(f).in_axes(1).call(x).unwrap());
        let (_, out) = debug::capture_output(|| g.call(xs.clone()));
        assert_eq!(out, "row=[1. 3. 5.]\nrow=[2. 4. 6.]\n", "{b}");
    });
}

#[test]
fn grad_and_jvp_print_primals_and_keep_derivatives() {
    on_each(|b| {
        let f = |x: Array| {
            ok_or_raise(debug::print("x={}", &[&x]));
            let y = x.sin();
            ok_or_raise(debug::print("y={}", &[&y]));
            (&y * &y).sum(jaxon_trace::numpy::All)
        };
        let x = Array::from_vec(vec![0.5f32, -1.0], &[2]);
        let (g, out) = debug::capture_output(|| grad(f)(x.clone()));
        let g = g.unwrap().to_vec::<f32>();
        for (gi, v) in g.iter().zip([0.5f32, -1.0]) {
            assert!((gi - 2.0 * v.sin() * v.cos()).abs() < 1e-6, "{b}: {gi}");
        }
        assert_eq!(out, "x=[ 0.5 -1. ]\ny=[ 0.47942555 -0.84147096]\n", "{b}");
        let gf = grad(f);
        let (r, out) = debug::capture_output(|| jit(|x: Array| ok_or_raise(gf(x))).call(x.clone()));
        assert_eq!(r.unwrap().to_vec::<f32>(), g, "{b}");
        assert_eq!(out, "x=[ 0.5 -1. ]\ny=[ 0.47942555 -0.84147096]\n", "{b}");
        let (r, out) = debug::capture_output(|| jvp(f, x.clone(), x.clone()));
        r.unwrap();
        assert_eq!(out.lines().count(), 2, "{b}");
    });
}

#[test]
fn debug_callback_sees_values() {
    on_each(|b| {
        let seen: Arc<Mutex<Vec<Vec<f32>>>> = Arc::default();
        let s = seen.clone();
        let f = jit(move |x: Array| {
            let s = s.clone();
            let y = x.exp();
            ok_or_raise(debug::callback(
                move |xs: &[HostArray]| {
                    let v: Vec<f32> = (0..xs[0].len())
                        .map(|i| xs[0].data().get_f64(i) as f32)
                        .collect();
                    s.lock().map_err(|e| e.to_string())?.push(v);
                    Ok(())
                },
                &[&y],
            ));
            y
        });
        f.call(Array::from_vec(vec![0.0f32, 1.0], &[2])).unwrap();
        vmap(|x: Array| f.call(x).unwrap())
            .call(Array::from_vec(vec![0.0f32, 1.0], &[2, 1]))
            .unwrap();
        let got = seen.lock().unwrap().clone();
        let e = 1.0f32.exp();
        assert_eq!(got, vec![vec![1.0, e], vec![1.0], vec![e]], "{b}");
        // A failing callback fails the program with its message.
        let bad = jit(|x: Array| {
            ok_or_raise(debug::callback(|_: &[HostArray]| Err("boom".into()), &[&x]));
            x
        });
        let err = bad.call(Array::scalar(1.0f32)).unwrap_err().to_string();
        assert!(err.contains("boom"), "{b}: {err}");
    });
}

fn host_sin(xs: &[HostArray]) -> Result<Vec<HostArray>, String> {
    let a = &xs[0];
    let v: Vec<f32> = (0..a.len())
        .map(|i| (a.data().get_f64(i) as f32).sin())
        .collect();
    Ok(vec![
        HostArray::new(a.shape().to_vec(), Storage::F32(v)).map_err(|e| e.to_string())?
    ])
}

fn f32_aval(shape: &[usize]) -> ShapedArray {
    ShapedArray::new(DType::F32, shape.iter().map(|&n| Dim::Const(n)).collect())
}

#[test]
fn pure_callback_runs_and_batches() {
    on_each(|b| {
        let x = vec3();
        let want: Vec<f32> = x.to_vec::<f32>().iter().map(|v| v.sin()).collect();
        let f = |m: VmapMethod| {
            move |x: Array| {
                let shape = x.try_shape().unwrap();
                let y = ok_or_raise(pure_callback(host_sin, &[f32_aval(&shape)], &[&x], m));
                &y[0] + &x
            }
        };
        let eager = f(VmapMethod::Sequential)(x.clone()).to_vec::<f32>();
        let jitted = jit(f(VmapMethod::Sequential)).call(x.clone()).unwrap();
        for ((e, j), (w, v)) in eager
            .iter()
            .zip(jitted.to_vec::<f32>())
            .zip(want.iter().zip(x.to_vec::<f32>()))
        {
            assert_eq!(*e, w + v, "{b}");
            assert_eq!(j, w + v, "{b}");
        }
        // vmap against a loop of unbatched calls, for each method.
        let xs = Array::from_vec(
            (0..6).map(|i| i as f32 * 0.7 - 2.0).collect::<Vec<_>>(),
            &[2, 3],
        );
        let rows: Vec<f32> = (0..2)
            .flat_map(|i| {
                let row = Array::from_vec(xs.to_vec::<f32>()[i * 3..i * 3 + 3].to_vec(), &[3]);
                f(VmapMethod::Sequential)(row).to_vec::<f32>()
            })
            .collect();
        for m in [
            VmapMethod::Sequential,
            VmapMethod::ExpandDims,
            VmapMethod::BroadcastAll,
        ] {
            let got = vmap(f(m)).call(xs.clone()).unwrap().to_vec::<f32>();
            assert_eq!(got, rows, "{b} {m:?}");
            let got = jit(move |x: Array| vmap(f(m)).call(x).unwrap())
                .call(xs.clone())
                .unwrap()
                .to_vec::<f32>();
            assert_eq!(got, rows, "{b} {m:?} under jit");
        }
        let err = vmap(f(VmapMethod::Unbatchable))
            .call(xs.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("vmap_method"), "{b}: {err}");
        // Not differentiable, as in JAX.
        let loss = |x: Array| f(VmapMethod::Sequential)(x).sum(jaxon_trace::numpy::All);
        let err = grad(loss)(x.clone()).unwrap_err().to_string();
        assert!(
            err.contains("pure_callback does not support differentiation"),
            "{b}: {err}"
        );
        // A result of the wrong type is an error naming it.
        let wrong = jit(|x: Array| {
            let y = ok_or_raise(pure_callback(
                host_sin,
                &[f32_aval(&[4])],
                &[&x],
                VmapMethod::Sequential,
            ));
            y[0].clone()
        });
        let err = wrong.call(vec3()).unwrap_err().to_string();
        assert!(err.contains("declared"), "{b}: {err}");
    });
}

#[test]
fn bad_format_strings_are_errors() {
    on_each(|b| {
        let err = debug::print("{} {}", &[&vec3()]).unwrap_err().to_string();
        assert!(err.contains("no positional argument 1"), "{b}: {err}");
        let err = debug::print("{nope}", &[&vec3()]).unwrap_err().to_string();
        assert!(err.contains("nope"), "{b}: {err}");
        let err = debug::print("{", &[]).unwrap_err().to_string();
        assert!(err.contains("unmatched"), "{b}: {err}");
    });
}
