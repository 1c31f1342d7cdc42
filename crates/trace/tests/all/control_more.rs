//! More control-flow goldens (texts printed by JAX 0.10.2 for the Python
//! given in each test) and the errors for ill-typed bodies.

use jaxon_trace::{cond, fori_loop, make_jaxpr, scan, switch, while_loop, Array, Error};

fn show(j: &jaxon_ir::ClosedJaxpr) -> String {
    jaxon_ir::print::print_jaxpr(&j.jaxpr)
}

fn vec3(seed: f32) -> Array {
    Array::from_vec(vec![seed, seed * 2.0 - 1.0, 0.5 - seed], &[3])
}

#[test]
fn consts_of_both_branches_are_joined_in_capture_order() {
    // c1 = jnp.arange(3.); c2 = jnp.ones(3)
    // lax.cond(p, lambda x: x + c1, lambda x: x * c2 + c1, x)  at (True, jnp.zeros(3))
    let c1 = vec3(0.25);
    let c2 = vec3(0.75);
    let f =
        |(p, x): (Array, Array)| cond(&p, |x: Array| x + &c1, |x: Array| x * &c2 + &c1, x).unwrap();
    let j = make_jaxpr(f)((Array::scalar(true), vec3(0.1))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda a:f32[3] b:f32[3]; c:bool[] d:f32[3]. let
    e:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    f:f32[3] = cond[
      branches=(
        { lambda ; g:f32[3] h:f32[3] i:f32[3]. let
            j:f32[3] = mul i h
            k:f32[3] = add j g
          in (k,) }
        { lambda ; l:f32[3] m:f32[3] n:f32[3]. let o:f32[3] = add n l in (o,) }
      )
    ] e a b d
  in (f,) }"
    );
    assert_eq!(
        j.consts[0].to_f64_vec(),
        c1.try_to_host("t").unwrap().to_f64_vec()
    );
}

#[test]
fn outputs_forwarded_by_every_branch_are_pruned_and_numeric_preds_compare_to_zero() {
    // lax.cond(p, lambda x: (x, x + 1), lambda x: (x, x * 2), x)  at (3, jnp.float32(1))
    let f = |(p, x): (Array, Array)| {
        cond(
            &p,
            |x: Array| (x.clone(), x + 1),
            |x: Array| (x.clone(), x * 2),
            x,
        )
        .unwrap()
    };
    let j = make_jaxpr(f)((Array::weak(3), Array::scalar(1.0f32))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:i32[] b:f32[]. let
    c:bool[] = ne a 0:i32[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[]. let g:f32[] = mul f 2.0:f32[] in (g,) }
        { lambda ; h:f32[]. let i:f32[] = add h 1.0:f32[] in (i,) }
      )
    ] d b
  in (b, e) }"
    );
}

#[test]
fn while_loop_over_a_tuple_carry_with_a_weak_counter() {
    // lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    // at jnp.float32(1.0)
    let f = |x: Array| {
        while_loop(
            |(i, _): (Array, Array)| i.lt(10),
            |(i, y): (Array, Array)| (i + 1, y * 2.0),
            (Array::weak(0), x),
        )
        .unwrap()
    };
    let j = make_jaxpr(f)(Array::scalar(1.0f32)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[]. let
    b:i32[] c:f32[] = while[
      body_jaxpr={ lambda ; d:i32[] e:f32[]. let
          f:i32[] = add d 1:i32[]
          g:f32[] = mul e 2.0:f32[]
        in (f, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; h:i32[] i:f32[]. let
          j:bool[] = lt h 10:i32[]
        in (j,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (b, c) }"
    );
}

#[test]
fn weak_initial_carry_is_promoted_to_the_body_dtype() {
    // lax.while_loop(lambda c: c[1] < 10., lambda c: (c[0] + 1.5, c[1] + 1), (0, x))
    // at jnp.float32(1): the weak int 0 becomes 0.0:f32[].
    let f = |x: Array| {
        while_loop(
            |(_, y): (Array, Array)| y.lt(10.0),
            |(i, y): (Array, Array)| (i + 1.5, y + 1),
            (Array::weak(0), x),
        )
        .unwrap()
    };
    let j = make_jaxpr(f)(Array::scalar(1.0f32)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[]. let
    b:f32[] c:f32[] = while[
      body_jaxpr={ lambda ; d:f32[] e:f32[]. let
          f:f32[] = add d 1.5:f32[]
          g:f32[] = add e 1.0:f32[]
        in (f, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; h:f32[] i:f32[]. let
          j:bool[] = lt i 10.0:f32[]
        in (j,) }
      cond_nconsts=0
    ] 0.0:f32[] a
  in (b, c) }"
    );
}

#[test]
fn fori_loop_with_traced_bounds_and_static_bounds() {
    // lax.fori_loop(lo, hi, lambda i, c: c + i, x) at (jnp.float32(1.0), 1, 5)
    let f =
        |(x, lo, hi): (Array, Array, Array)| fori_loop(&lo, &hi, |i, c: Array| c + i, x).unwrap();
    let j = make_jaxpr(f)((Array::scalar(1.0f32), Array::weak(1), Array::weak(5))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[] b:i32[] c:i32[]. let
    _:i32[] _:i32[] d:f32[] = while[
      body_jaxpr={ lambda ; e:i32[] f:i32[] g:f32[]. let
          h:i32[] = add e 1:i32[]
          i:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
          j:f32[] = add g i
        in (h, f, j) }
      body_nconsts=0
      cond_jaxpr={ lambda ; k:i32[] l:i32[] m:f32[]. let
          n:bool[] = lt k l
        in (n,) }
      cond_nconsts=0
    ] b c a
  in (d,) }"
    );
    // lax.fori_loop(2, 7, lambda i, c: c * i, x) at jnp.float32(1.0)
    let g = |x: Array| fori_loop(2, 7, |i, c: Array| c * i, x).unwrap();
    let j = make_jaxpr(g)(Array::scalar(1.0f32)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[]. let
    _:i32[] b:f32[] = scan[
      jaxpr={ lambda ; c:i32[] d:f32[]. let
          e:i32[] = add c 1:i32[]
          f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c
          g:f32[] = mul d f
        in (e, g) }
      length=5
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] 2:i32[] a
  in (b,) }"
    );
}

#[test]
fn reverse_scan_and_scan_without_xs() {
    // lax.scan(lambda c, a: (c + a, c * a), x, xs, reverse=True) at (jnp.float32(1.0), jnp.ones(4))
    let f = |(x, xs): (Array, Array)| {
        scan(|c: Array, a: Array| (&c + &a, c * a), x, xs, None, true).unwrap()
    };
    let xs = Array::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], &[4]);
    let j = make_jaxpr(f)((Array::scalar(1.0f32), xs)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[] b:f32[4]. let
    c:f32[] d:f32[4] = scan[
      jaxpr={ lambda ; e:f32[] f:f32[]. let
          g:f32[] = add e f
          h:f32[] = mul e f
        in (g, h) }
      length=4
      num_carry=1
      num_consts=0
      reverse=True
      unroll=1
    ] a b
  in (c, d) }"
    );
    // lax.scan(lambda c, _: (c * 2, None), x, None, length=3) at jnp.float32(1.0)
    let g = |x: Array| {
        scan(|c: Array, (): ()| (c * 2, ()), x, (), Some(3), false)
            .unwrap()
            .0
    };
    let j = make_jaxpr(g)(Array::scalar(1.0f32)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[]. let
    b:f32[] = scan[
      jaxpr={ lambda ; c:f32[]. let d:f32[] = mul c 2.0:f32[] in (d,) }
      length=3
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a
  in (b,) }"
    );
}

fn msg(e: Error) -> String {
    e.to_string()
}

#[test]
fn branch_output_types_must_agree() {
    let f = |(p, x): (Array, Array)| {
        jaxon_trace::error::ok_or_raise(cond(
            &p,
            |x: Array| x.astype(jaxon_ir::DType::I32),
            |x: Array| x * 2.0,
            x,
        ))
    };
    let e = make_jaxpr(f)((Array::scalar(true), vec3(0.3))).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    let m = msg(e);
    assert!(m.contains("f32[3]") && m.contains("i32[3]"), "{m}");
    // Eager switch with shapes that differ: still checked when staged.
    let g = |i: Array| {
        jaxon_trace::error::ok_or_raise(switch(
            &i,
            &[&|(): ()| vec3(0.1), &|(): ()| {
                Array::from_vec(vec![1.0f32; 2], &[2])
            }],
            (),
        ))
    };
    let e = make_jaxpr(g)(Array::weak(1)).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    let m = msg(e);
    assert!(m.contains("f32[3]") && m.contains("f32[2]"), "{m}");
}

#[test]
fn predicate_must_be_a_scalar() {
    let e = cond(&vec3(0.2).gt(0.0), |x: Array| x, |x: Array| x, vec3(0.4)).unwrap_err();
    let m = msg(e);
    assert!(m.contains("scalar") && m.contains("bool[3]"), "{m}");
    let e = switch(&vec3(0.2), &[&|x: Array| x, &|x: Array| x], vec3(0.4)).unwrap_err();
    assert!(msg(e).contains("f32[3]"));
}

#[test]
fn carry_type_must_not_change() {
    // JAX: "the input carry c has type float32[] but the corresponding output
    // carry component has type int32[]"
    let e = while_loop(
        |c: Array| c.lt(10.0),
        |c: Array| (c + 1).astype(jaxon_ir::DType::I32),
        Array::scalar(1.0f32),
    )
    .unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e:?}");
    let m = msg(e);
    assert!(m.contains("f32[]") && m.contains("i32[]"), "{m}");
    let e = scan(
        |c: Array, x: Array| (jaxon_trace::numpy::stack(&[c.clone(), c], 0).unwrap(), x),
        Array::scalar(1.0f32),
        vec3(0.5),
        None,
        false,
    )
    .unwrap_err();
    let m = msg(e);
    assert!(m.contains("f32[]") && m.contains("f32[2]"), "{m}");
    // A weak carry whose dtype differs from the body's is promoted, not an error.
    let (c, _) = scan(
        |c: Array, x: Array| (&c + &x, c),
        Array::weak(0),
        vec3(0.5),
        None,
        false,
    )
    .unwrap();
    assert_eq!(c.dtype(), jaxon_ir::DType::F32);
    // A predicate that is not a bool scalar.
    let e = while_loop(
        |c: Array| c.clone(),
        |c: Array| c + 1.0,
        Array::scalar(1.0f32),
    )
    .unwrap_err();
    assert!(msg(e).contains("f32[]"));
}

#[test]
fn loop_invariant_carries_become_consts_and_forwarded_xs_are_not_stacked() {
    // lax.while_loop(lambda c: c[0] < 10., lambda c: (c[0] * c[1], c[1]), (x, k))
    let f = |(x, k): (Array, Array)| {
        while_loop(
            |(a, _): (Array, Array)| a.lt(10.0),
            |(a, b): (Array, Array)| (&a * &b, b),
            (x, k),
        )
        .unwrap()
    };
    let j = make_jaxpr(f)((Array::scalar(1.0f32), Array::scalar(2.0f32))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = while[
      body_jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = mul e d in (f,) }
      body_nconsts=1
      cond_jaxpr={ lambda ; g:f32[]. let h:bool[] = lt g 10.0:f32[] in (h,) }
      cond_nconsts=0
    ] b a
  in (c, b) }"
    );
    // lax.scan(lambda c, a: ((c[0] + a * c[1], c[1]), a), (x, k), xs)
    let g = |(x, k, xs): (Array, Array, Array)| {
        scan(
            |(c0, c1): (Array, Array), a: Array| ((c0 + &a * &c1, c1), a),
            (x, k),
            xs,
            None,
            false,
        )
        .unwrap()
    };
    let xs = Array::from_vec(vec![0.5f32, -1.5, 2.0], &[3]);
    let j = make_jaxpr(g)((Array::scalar(1.0f32), Array::scalar(2.0f32), xs)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[] b:f32[] c:f32[3]. let
    d:f32[] = scan[
      jaxpr={ lambda ; e:f32[] f:f32[] g:f32[]. let
          h:f32[] = mul g e
          i:f32[] = add f h
        in (i,) }
      length=3
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] b a c
  in (d, b, c) }"
    );
}
