//! Host callbacks on `cuda-sim` (`lower/callback.rs`, `Step::Host`)
//! against the interpreter: `pure_callback` results (random shapes, sizes
//! 0, 1 and odd, several dtypes, literal operands) flow back into device
//! kernels; `debug_callback` is called once per loop iteration with the
//! iteration's values, in order; `debug_print` prints what the interpreter
//! prints; a callback's failure and a result of the wrong type are errors.
//! Each host function counts its calls.

mod lowering_util;
use jaxon_ir::interp::ops::callback::capture_debug_output;
use jaxon_ir::primitive::HostFn;
use jaxon_ir::{DType, HostArray};
use lowering_util::{closed_with, compare, parse, random, run_lowered, ty, Dist, Rng, Tol};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The operands a host function saw, call by call.
type Log = Arc<Mutex<Vec<Vec<f64>>>>;

/// A host function counting its calls: `x -> (2x + 1, sum of x as i32)`.
fn doubling(calls: Arc<AtomicUsize>) -> HostFn {
    Arc::new(move |xs: &[HostArray]| {
        calls.fetch_add(1, Ordering::SeqCst);
        let x = xs.first().ok_or("no operand")?;
        let v: Vec<f64> = x.to_f64_vec().iter().map(|a| 2.0 * a + 1.0).collect();
        let y = HostArray::from_f64(x.dtype(), x.shape(), &v).map_err(|e| e.to_string())?;
        let s: f64 = xs.iter().map(|a| a.to_f64_vec().iter().sum::<f64>()).sum();
        let n = HostArray::from_f64(DType::I32, &[], &[s.round()]).map_err(|e| e.to_string())?;
        Ok(vec![y, n])
    })
}

fn pure_text(dt: &str, shape: &[usize]) -> String {
    let t = ty(dt, shape);
    let avals = format!(
        "(ShapedArray({}[{}]), ShapedArray(int32[]))",
        match dt {
            "f32" => "float32",
            "f64" => "float64",
            _ => "int32",
        },
        shape
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    format!(
        "{{ lambda ; a:{t}. let
    b:{t} = neg a
    c:{t} n:i32[] = pure_callback[
      callback=_FlatCallback(callback_func=<function f at 0xXXXXXXXXXXXX>, in_tree=PyTreeDef(((*,), {{}})))
      result_avals={avals}
      sharding=None
      vmap_method=sequential
    ] b 3:i32[]
    d:{t} = mul c c
  in (d, n) }}"
    )
}

#[test]
fn pure_callback_results_flow_back_to_the_device() {
    let mut rng = Rng::new(601);
    for dt in ["f32", "f64", "i32"] {
        for shape in [vec![], vec![0], vec![1], vec![7], vec![3, 5]] {
            let text = pure_text(dt, &shape);
            let d = DType::from_name(dt).expect("dtype");
            let a = random(&mut rng, d, &shape, Dist::Uniform(5.0));
            let (ci, cb) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let want = jaxon_ir::eval_closed_jaxpr(
                &closed_with(&text, &doubling(ci.clone())),
                std::slice::from_ref(&a),
            )
            .expect("interpreter");
            let got =
                run_lowered(&closed_with(&text, &doubling(cb.clone())), &[a]).expect("cuda-sim");
            assert_eq!(ci.load(Ordering::SeqCst), 1);
            assert_eq!(cb.load(Ordering::SeqCst), 1, "one call on the backend");
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                compare(&text, g, w, Tol::Exact);
            }
        }
    }
}

#[test]
fn debug_callback_runs_once_per_iteration_in_order() {
    let mut rng = Rng::new(602);
    for n in [0usize, 1, 5] {
        let text = format!(
            "{{ lambda ; a:f32[{n}] k:i32[]. let
    b:f32[{n}] c:i32[] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={{ lambda ; i:i32[] x:f32[{n}] m:i32[]. let
          debug_callback[
            callback=<function f at 0xXXXXXXXXXXXX>
            effect=Debug
            partitioned=False
          ] i x m
          y:f32[{n}] = sin x
          z:i32[] = add m i
        in (y, z) }}
      body_nconsts=0
      nimplicit=0
      preserve_dimensions=False
    ] 0:i32[] k 1:i32[] 0:i32[] a 7:i32[]
  in (b, c) }}"
        );
        let trips = rng.range(0, 6);
        let a = random(&mut rng, DType::F32, &[n], Dist::Uniform(2.0));
        let k = HostArray::from_f64(DType::I32, &[], &[trips as f64]).expect("k");
        let seen = |log: Log| -> HostFn {
            Arc::new(move |xs: &[HostArray]| {
                let row: Vec<f64> = xs.iter().flat_map(|x| x.to_f64_vec()).collect();
                log.lock().map_err(|e| e.to_string())?.push(row);
                Ok(Vec::new())
            })
        };
        let (li, lb): (Log, Log) = (Arc::default(), Arc::default());
        let want = jaxon_ir::eval_closed_jaxpr(
            &closed_with(&text, &seen(li.clone())),
            &[a.clone(), k.clone()],
        )
        .expect("interpreter");
        let got = run_lowered(&closed_with(&text, &seen(lb.clone())), &[a, k]).expect("cuda-sim");
        for (g, w) in got.iter().zip(&want) {
            compare(&text, g, w, Tol::Ulp(2));
        }
        let (li, lb) = (li.lock().expect("lock"), lb.lock().expect("lock"));
        assert_eq!(lb.len(), trips as usize, "one call per iteration");
        assert_eq!(lb.len(), li.len());
        for (r, (b, i)) in lb.iter().zip(li.iter()).enumerate() {
            assert_eq!(b.len(), i.len(), "call {r}");
            for (x, y) in b.iter().zip(i) {
                let close = (x - y).abs() <= 1e-6 * (1.0 + y.abs());
                assert!(close, "call {r}: {x} vs {y}");
            }
        }
    }
}

#[test]
fn debug_print_prints_what_the_interpreter_prints() {
    let mut rng = Rng::new(603);
    for shape in [vec![], vec![0], vec![1], vec![5], vec![2, 3]] {
        let t = ty("f32", &shape);
        let text = format!(
            "{{ lambda ; a:{t} b:i32[]. let
    c:{t} = mul a 2.0:f32[]
    debug_print[
      fmt=c={{}} b={{b}} lit={{}}
      has_placeholders=True
      in_tree=PyTreeDef(((*, *), {{'b': *}}))
      logging_record=None
      np_printoptions=(('edgeitems', 3), ('threshold', 1000), ('floatmode', 'maxprec'), ('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), ('infstr', 'inf'), ('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))
      ordered=True
      partitioned=False
      static_args=()
    ] c 4:i32[] b
    d:{t} = add c 1.0:f32[]
    debug_print[
      fmt=d={{}}
      has_placeholders=True
      in_tree=PyTreeDef(((*,), {{}}))
      logging_record=None
      np_printoptions=(('edgeitems', 3), ('threshold', 1000), ('floatmode', 'maxprec'), ('precision', 8), ('suppress', False), ('linewidth', 75), ('nanstr', 'nan'), ('infstr', 'inf'), ('sign', '-'), ('formatter', None), ('legacy', False), ('override_repr', None))
      ordered=True
      partitioned=False
      static_args=()
    ] d
  in (d,) }}"
        );
        let closed = parse(&text);
        let a = random(&mut rng, DType::F32, &shape, Dist::Uniform(3.0));
        let b = HostArray::from_f64(DType::I32, &[], &[rng.range(-9, 9) as f64]).expect("b");
        let args = [a, b];
        let (want, wout) = capture_debug_output(|| {
            jaxon_ir::eval_closed_jaxpr(&closed, &args).expect("interpreter")
        });
        let (got, gout) = capture_debug_output(|| run_lowered(&closed, &args).expect("cuda-sim"));
        assert!(
            wout.starts_with("c=") && wout.matches("lit=4").count() == 1 && wout.contains("\nd="),
            "{wout}"
        );
        assert_eq!(gout, wout);
        compare(&text, &got[0], &want[0], Tol::Exact);
    }
}

#[test]
fn failing_and_mistyped_callbacks_are_errors() {
    let text = pure_text("f32", &[4]);
    let a = HostArray::from_f64(DType::F32, &[4], &[1.0, 2.0, 3.0, 4.0]).expect("a");
    let failing: HostFn = Arc::new(|_: &[HostArray]| Err("boom".to_string()));
    let e =
        run_lowered(&closed_with(&text, &failing), std::slice::from_ref(&a)).expect_err("fails");
    assert!(e.to_string().contains("boom"), "{e}");
    let wrong: HostFn = Arc::new(|_: &[HostArray]| {
        let y = HostArray::from_f64(DType::F32, &[3], &[0.0; 3]).map_err(|e| e.to_string())?;
        let n = HostArray::from_f64(DType::I32, &[], &[0.0]).map_err(|e| e.to_string())?;
        Ok(vec![y, n])
    });
    let e =
        run_lowered(&closed_with(&text, &wrong), std::slice::from_ref(&a)).expect_err("mistyped");
    assert!(e.to_string().contains("pure_callback"), "{e}");
    // A callback read from text has no host function.
    let e = run_lowered(&parse(&text), &[a]).expect_err("no function");
    assert!(e.to_string().contains("not available"), "{e}");
}
