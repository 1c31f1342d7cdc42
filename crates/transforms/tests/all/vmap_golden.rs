//! `make_jaxpr(vmap(f))` against JAX 0.10.2's printed text, byte for byte
//! (goldens from `jax.make_jaxpr(jax.vmap(f, in_axes, out_axes))`).

use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{make_jaxpr, Array};
use jaxon_transforms::vmap;

fn ones(shape: &[usize]) -> Array {
    jnp::ones(shape, DType::F32).unwrap()
}

fn f(x: Array, w: Array) -> Array {
    x.sin() * w + 1.0
}

#[test]
fn elementwise_with_an_unbatched_operand() {
    // jax.vmap(lambda x, w: jnp.sin(x) * w + 1.0, in_axes=(0, None))
    let text = make_jaxpr(|(x, w): (Array, Array)| {
        ok(vmap(|(x, w)| f(x, w)).in_axes((0, None)).call((x, w)))
    })((ones(&[5, 3]), ones(&[3])))
    .unwrap()
    .to_string();
    let want = "\
{ lambda ; a:f32[5,3] b:f32[3]. let
    c:f32[5,3] = sin a
    d:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] b
    e:f32[5,3] = mul c d
    f:f32[5,3] = add e 1.0:f32[]
  in (f,) }";
    assert_eq!(text, want);
}

#[test]
fn batch_dim_moved_to_the_front_when_operands_disagree() {
    // Same function, in_axes=(1, None).
    let text = make_jaxpr(|(x, w): (Array, Array)| {
        ok(vmap(|(x, w)| f(x, w)).in_axes((1, None)).call((x, w)))
    })((ones(&[3, 5]), ones(&[3])))
    .unwrap()
    .to_string();
    let want = "\
{ lambda ; a:f32[3,5] b:f32[3]. let
    c:f32[3,5] = sin a
    d:f32[5,3] = transpose[permutation=(1, 0)] c
    e:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] b
    f:f32[5,3] = mul d e
    g:f32[5,3] = add f 1.0:f32[]
  in (g,) }";
    assert_eq!(text, want);
}

#[test]
fn dot_general_keeps_a_free_batch_dim_in_place() {
    // jax.vmap(lambda x, w: jnp.tanh(x @ w), in_axes=(None, 1), out_axes=1)
    let text = make_jaxpr(|(x, w): (Array, Array)| {
        ok(vmap(|(x, w): (Array, Array)| x.matmul(&w).tanh())
            .in_axes((None, 1))
            .out_axes(1)
            .call((x, w)))
    })((ones(&[2, 3]), ones(&[3, 5, 4])))
    .unwrap()
    .to_string();
    let want = "\
{ lambda ; a:f32[2,3] b:f32[3,5,4]. let
    c:f32[2,5,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
    d:f32[2,5,4] = tanh c
  in (d,) }";
    assert_eq!(text, want);
}

#[test]
fn reductions_keep_the_batch_dim_in_place() {
    // jax.vmap(lambda x: (jnp.exp(x).sum(0), jnp.argmax(x, axis=1)), in_axes=1)
    let text = make_jaxpr(|x: Array| {
        ok(
            vmap(|x: Array| (x.exp().sum(0), ok(jnp::argmax(&x, Some(1), false))))
                .in_axes(1)
                .call(x),
        )
    })(ones(&[2, 5, 3]))
    .unwrap()
    .to_string();
    let want = "\
{ lambda ; a:f32[2,5,3]. let
    b:f32[2,5,3] = exp a
    c:f32[5,3] = reduce_sum[axes=(np.int64(0),) out_sharding=None] b
    d:i32[2,5] = argmax[axes=(np.int64(2),) index_dtype=int32] a
    e:i32[5,2] = transpose[permutation=(1, 0)] d
  in (c, e) }";
    // JAX's batching rule stores the shifted axes as NumPy ints; the ir's
    // `Reduce`/`ArgReduce` axes are plain `usize`s and cannot remember that
    // spelling, so the texts are compared with `np.int64(k)` read as `k`.
    assert_eq!(text, plain_ints(want));
}

/// `np.int64(k)` spelled `k`.
fn plain_ints(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("np.int64(") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + "np.int64(".len()..];
        let close = tail.find(')').expect("closing paren");
        out.push_str(&tail[..close]);
        rest = &tail[close + 1..];
    }
    out.push_str(rest);
    out
}
