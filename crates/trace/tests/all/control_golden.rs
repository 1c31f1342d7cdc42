//! Golden tests for control flow: Rust transcriptions of the seed's examples
//! (issue 3) print exactly what JAX 0.10.2 prints for the originals.

use jaxon_trace::numpy as jnp;
use jaxon_trace::{cond, fori_loop, jit, make_jaxpr, scan, switch, Array};

fn show(j: &jaxon_ir::ClosedJaxpr) -> String {
    jaxon_ir::print::print_jaxpr(&j.jaxpr)
}

fn f32s(n: usize, seed: u32) -> Array {
    let v: Vec<f32> = (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
        })
        .collect();
    Array::from_vec(v, &[n])
}

#[test]
fn one_of_three_switch() {
    // def one_of_three(index, arg):
    //     return lax.switch(index, [lambda x: x + 1., lambda x: x - 2., lambda x: x + 3.], arg)
    // make_jaxpr(one_of_three)(1, 5.): both arguments are Python scalars (weak).
    let one_of_three = |(index, arg): (Array, Array)| {
        switch(
            &index,
            &[&|x: Array| x + 1.0, &|x: Array| x - 2.0, &|x: Array| {
                x + 3.0
            }],
            arg,
        )
        .unwrap()
    };
    let j = make_jaxpr(one_of_three)((Array::weak(1), Array::weak(5.0))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:i32[] b:f32[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:i32[] = clamp 0:i32[] c 2:i32[]
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[]. let g:f32[] = add f 1.0:f32[] in (g,) }
        { lambda ; h:f32[]. let i:f32[] = sub h 2.0:f32[] in (i,) }
        { lambda ; j:f32[]. let k:f32[] = add j 3.0:f32[] in (k,) }
      )
    ] d b
  in (e,) }"
    );
}

#[test]
fn func7_cond() {
    // def func7(arg):
    //     return lax.cond(arg >= 0., lambda xtrue: xtrue + 3., lambda xfalse: xfalse - 3., arg)
    // make_jaxpr(func7)(5.)
    let func7 = |arg: Array| {
        cond(
            &arg.ge(0.0),
            |x: Array| x + 3.0,
            |x: Array| x - 3.0,
            arg.clone(),
        )
        .unwrap()
    };
    let j = make_jaxpr(func7)(Array::weak(5.0)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[]. let
    b:bool[] = ge a 0.0:f32[]
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    d:f32[] = cond[
      branches=(
        { lambda ; e:f32[]. let f:f32[] = sub e 3.0:f32[] in (f,) }
        { lambda ; g:f32[]. let h:f32[] = add g 3.0:f32[] in (h,) }
      )
    ] c a
  in (d,) }"
    );
}

#[test]
fn func8_cond_with_captured_constant_and_pytree_operand() {
    // def func8(arg1, arg2):  # arg2 is a pair
    //     return lax.cond(arg1 >= 0.,
    //                     lambda xtrue: xtrue[0],
    //                     lambda xfalse: jnp.array([1]) + xfalse[1],
    //                     arg2)
    // make_jaxpr(func8)(5., (jnp.zeros(1), 2.))
    let func8 = |(arg1, arg2): (Array, (Array, Array))| {
        cond(
            &arg1.ge(0.0),
            |x: (Array, Array)| x.0,
            |x: (Array, Array)| jnp::array(vec![1i32], &[1]).unwrap() + x.1,
            arg2,
        )
        .unwrap()
    };
    let zeros = jnp::zeros(&[1], jaxon_ir::DType::F32).unwrap();
    let j = make_jaxpr(func8)((Array::weak(5.0), (zeros, Array::weak(2.0)))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda a:i32[1]; b:f32[] c:f32[1] d:f32[]. let
    e:bool[] = ge b 0.0:f32[]
    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e
    g:f32[1] = cond[
      branches=(
        { lambda ; h:i32[1] i:f32[1] j:f32[]. let
            k:f32[1] = convert_element_type[new_dtype=float32 weak_type=True] h
            l:f32[1] = add k j
          in (l,) }
        { lambda ; m:i32[1] n:f32[1] o:f32[]. let  in (n,) }
      )
    ] f a c d
  in (g,) }"
    );
    assert_eq!(j.consts[0].data().get_i64(0), 1);
}

#[test]
fn func10_fori_loop_with_traced_trip_count_is_a_while() {
    // def func10(arg, n):
    //     ones = jnp.ones(arg.shape)  # A constant
    //     return lax.fori_loop(0, n, lambda i, carry: carry + ones * 3. + arg, arg + ones)
    // make_jaxpr(func10)(np.ones(16), 5)
    let func10 = |(arg, n): (Array, Array)| {
        let ones = jnp::ones(&arg.shape(), jaxon_ir::DType::F32).unwrap();
        let init = &arg + &ones;
        fori_loop(0, &n, |_i, carry: Array| carry + &ones * 3.0 + &arg, init).unwrap()
    };
    let j = make_jaxpr(func10)((f32s(16, 1), Array::weak(5))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[16] b:i32[]. let
    c:f32[16] = broadcast_in_dim 1.0:f32[]
    d:f32[16] = add a c
    _:i32[] _:i32[] e:f32[16] = while[
      body_jaxpr={ lambda ; f:f32[16] g:f32[16] h:i32[] i:i32[] j:f32[16]. let
          k:i32[] = add h 1:i32[]
          l:f32[16] = mul f 3.0:f32[]
          m:f32[16] = add j l
          n:f32[16] = add m g
        in (k, i, n) }
      body_nconsts=2
      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f32[16]. let
          r:bool[] = lt o p
        in (r,) }
      cond_nconsts=0
    ] c a 0:i32[] b d
  in (e,) }"
    );
}

#[test]
fn func10_with_static_trip_count_is_a_scan() {
    // def func10s(arg):
    //     ones = jnp.ones(arg.shape)
    //     return lax.fori_loop(0, 5, lambda i, carry: carry + ones * 3. + arg, arg + ones)
    let func10s = |arg: Array| {
        let ones = jnp::ones(&arg.shape(), jaxon_ir::DType::F32).unwrap();
        let init = &arg + &ones;
        fori_loop(0, 5, |_i, carry: Array| carry + &ones * 3.0 + &arg, init).unwrap()
    };
    let j = make_jaxpr(func10s)(f32s(16, 1)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[16]. let
    b:f32[16] = broadcast_in_dim 1.0:f32[]
    c:f32[16] = add a b
    _:i32[] d:f32[16] = scan[
      jaxpr={ lambda ; e:f32[16] f:f32[16] g:i32[] h:f32[16]. let
          i:i32[] = add g 1:i32[]
          j:f32[16] = mul e 3.0:f32[]
          k:f32[16] = add h j
          l:f32[16] = add k f
        in (i, l) }
      length=5
      num_carry=2
      num_consts=2
      reverse=False
      unroll=1
    ] b a 0:i32[] c
  in (d,) }"
    );
}

#[test]
fn func11_scan() {
    // def func11(arr, extra):
    //     ones = jnp.ones(arr.shape)  # A constant
    //     def body(carry, aelems):
    //         ae1, ae2 = aelems
    //         return (carry + ae1 * ae2 + extra, carry)
    //     return lax.scan(body, 0., (arr, ones))
    // make_jaxpr(func11)(np.ones(16), 5.): `extra` is a Python float (weak).
    let func11 = |(arr, extra): (Array, Array)| {
        let ones = jnp::ones(&arr.shape(), jaxon_ir::DType::F32).unwrap();
        let body = |carry: Array, (ae1, ae2): (Array, Array)| (&carry + ae1 * ae2 + &extra, carry);
        scan(body, Array::weak(0.0), (arr.clone(), ones), None, false).unwrap()
    };
    let j = make_jaxpr(func11)((f32s(16, 2), Array::weak(5.0))).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[16] b:f32[]. let
    c:f32[16] = broadcast_in_dim 1.0:f32[]
    d:f32[] e:f32[16] = scan[
      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[] i:f32[]. let
          j:f32[] = mul h i
          k:f32[] = convert_element_type[new_dtype=float32 weak_type=False] g
          l:f32[] = add k j
          m:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f
          n:f32[] = add l m
        in (n, g) }
      length=16
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] b 0.0:f32[] a c
  in (d, e) }"
    );
}

#[test]
fn func12_nested_jit() {
    // def func12(arg):
    //     @jit
    //     def inner(x):
    //         return x + arg * jnp.ones(1)  # Include a constant in the inner function
    //     return arg + inner(arg - 2.)
    // make_jaxpr(func12)(1.): the Python float argument is `Array::weak(1.0)`.
    let func12 = |arg: Array| {
        let a = arg.clone();
        let inner = jit(move |x: Array| &x + &a * jnp::ones(&[1], jaxon_ir::DType::F32).unwrap())
            .name("inner");
        &arg + inner.call(&arg - 2.0).unwrap()
    };
    let j = make_jaxpr(func12)(Array::weak(1.0)).unwrap();
    assert_eq!(
        show(&j),
        "{ lambda ; a:f32[]. let
    b:f32[] = sub a 2.0:f32[]
    c:f32[1] = jit[
      name=inner
      jaxpr={ lambda ; a:f32[] b:f32[]. let
          d:f32[1] = broadcast_in_dim 1.0:f32[]
          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
          f:f32[1] = mul e d
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
          c:f32[1] = add g f
        in (c,) }
    ] a b
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
    i:f32[1] = add h c
  in (i,) }"
    );
}
