//! `jnp.take_along_axis`: the staged text JAX 0.10.2 prints for the same
//! calls, and values against a loop over the index array (negative
//! indices from the end, out-of-bounds ones the fill value, broadcasting
//! of size-1 dimensions, `axis=None`).

use crate::common;

use jaxon_ir::print::print_jaxpr;
use jaxon_trace::numpy as jnp;
use jaxon_trace::{make_jaxpr, Array};

/// The loop oracle for 2-D `x` and `i` along `axis`, with the size-1
/// broadcasting of the other dimension: NaN out of bounds.
fn oracle_2d(x: &[f32], xs: [usize; 2], i: &[i32], is: [usize; 2], axis: usize) -> Vec<f32> {
    let other = 1 - axis;
    let n_other = xs[other].max(is[other]);
    let mut os = [0; 2];
    os[axis] = is[axis];
    os[other] = n_other;
    let mut out = Vec::new();
    for r in 0..os[0] {
        for c in 0..os[1] {
            let at = |s: [usize; 2], r: usize, c: usize| (r.min(s[0] - 1)) * s[1] + c.min(s[1] - 1);
            let k = i[at(is, r, c)] as i64;
            let n = xs[axis] as i64;
            let k = if k < 0 { k + n } else { k };
            out.push(if (0..n).contains(&k) {
                let (xr, xc) = if axis == 0 {
                    (k as usize, c)
                } else {
                    (r, k as usize)
                };
                x[at(xs, xr, xc)]
            } else {
                f32::NAN
            });
        }
    }
    out
}

fn same(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
}

#[test]
fn values_match_a_loop_along_each_axis_with_broadcasting() {
    let cases: [([usize; 2], [usize; 2], usize); 6] = [
        ([3, 4], [3, 2], 1),
        ([3, 4], [2, 4], 0),
        ([3, 4], [5, 4], 0),
        ([3, 4], [1, 6], 1),
        ([1, 4], [3, 2], 1),
        ([3, 1], [2, 5], 0),
    ];
    for (k, (xs, is, axis)) in cases.into_iter().enumerate() {
        let xv = common::uniform_f32(xs[0] * xs[1], k as u64 + 1, 1.0);
        let n = xs[axis] as i32;
        // Out of range on both sides, and negative indices from the end.
        let iv = common::ints(is[0] * is[1], -n - 2, n + 1, k as u64 + 11);
        let x = Array::from_vec(xv.clone(), &xs);
        let i = Array::from_vec(iv.clone(), &is);
        let got = jnp::take_along_axis(&x, &i, Some(axis as isize)).unwrap();
        let want = oracle_2d(&xv, xs, &iv, is, axis);
        assert!(
            same(&got.to_vec::<f32>(), &want),
            "case {k}: {xs:?} {is:?} axis {axis}: {:?} vs {want:?}",
            got.to_vec::<f32>()
        );
    }
}

#[test]
fn flattened_and_integer_fill_and_errors() {
    let x = Array::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4]);
    let i = Array::from_vec(vec![0, 11, -1, 12, -13], &[5]);
    let got = jnp::take_along_axis(&x, &i, None).unwrap();
    assert_eq!(got.to_vec::<i32>(), [0, 11, 11, i32::MIN, i32::MIN]);
    // Mismatched ranks, dimensions that do not broadcast, float indices.
    let f = Array::from_vec(common::uniform_f32(12, 3, 1.0), &[3, 4]);
    let e = jnp::take_along_axis(&f, &i, Some(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("take_along_axis"), "{e}");
    let i2 = Array::from_vec(vec![0i32; 4], &[2, 2]);
    let e = jnp::take_along_axis(&f, &i2, Some(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("dimension 1"), "{e}");
    let e = jnp::take_along_axis(&f, &f, Some(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("integer"), "{e}");
    let e = jnp::take_along_axis(&f, &i2, None).unwrap_err().to_string();
    assert!(e.contains("1-D"), "{e}");
}

#[test]
fn stages_the_text_jax_prints() {
    // jax.make_jaxpr(lambda a, i: jnp.take_along_axis(a, i, axis=1))
    let x = Array::from_vec(common::uniform_f32(12, 1, 1.0), &[3, 4]);
    let i = Array::from_vec(vec![0i32; 6], &[3, 2]);
    let j = make_jaxpr(|(x, i): (Array, Array)| jnp::take_along_axis(&x, &i, Some(1)).unwrap())((
        x.clone(),
        i,
    ))
    .unwrap();
    assert_eq!(
        print_jaxpr(&j.jaxpr),
        r#"{ lambda ; a:f32[3,4] b:i32[3,2]. let
    c:f32[3,2] = jit[
      name=take_along_axis
      jaxpr={ lambda ; a:f32[3,4] b:i32[3,2]. let
          d:bool[3,2] = lt b 0:i32[]
          e:i32[3,2] = add b 4:i32[]
          f:i32[3,2] = select_n d b e
          g:i32[3,2,1] = reshape[
            dimensions=None
            new_sizes=(3, 2, 1)
            sharding=None
          ] f
          c:f32[3,2] = gather[
            dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,), start_indices_batching_dims=(0,))
            fill_value=nan
            indices_are_sorted=False
            mode=GatherScatterMode.FILL_OR_DROP
            slice_sizes=(1, 1)
            unique_indices=False
          ] a g
        in (c,) }
    ] a b
  in (c,) }"#
    );
    // axis=None flattens inside the staged function.
    let i = Array::from_vec(vec![0i32; 5], &[5]);
    let j =
        make_jaxpr(|(x, i): (Array, Array)| jnp::take_along_axis(&x, &i, None).unwrap())((x, i))
            .unwrap();
    assert_eq!(
        print_jaxpr(&j.jaxpr),
        r#"{ lambda ; a:f32[3,4] b:i32[5]. let
    c:f32[5] = jit[
      name=take_along_axis
      jaxpr={ lambda ; a:f32[3,4] b:i32[5]. let
          d:f32[12] = reshape[dimensions=None new_sizes=(12,) sharding=None] a
          e:bool[5] = lt b 0:i32[]
          f:i32[5] = add b 12:i32[]
          g:i32[5] = select_n e b f
          h:i32[5,1] = reshape[dimensions=None new_sizes=(5, 1) sharding=None] g
          c:f32[5] = gather[
            dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
            fill_value=nan
            indices_are_sorted=False
            mode=GatherScatterMode.FILL_OR_DROP
            slice_sizes=(1,)
            unique_indices=False
          ] d h
        in (c,) }
    ] a b
  in (c,) }"#
    );
}
