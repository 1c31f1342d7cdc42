//! Regression tests for the fusion planner's operand maps: a reordering
//! (`rev`, a square `transpose`) below a `reshape` must not be read through
//! the reshape's flat map, which would drop the reordering.

use crate::common;
use common::{check, Dist, Tol};

#[test]
fn rev_below_reshape() {
    check(
        "{ lambda ; a:f32[4,6]. let
    b:f32[4,6] = rev[dimensions=(1,)] a
    c:f32[24] = reshape[dimensions=None new_sizes=(24,) sharding=None] b
    d:f32[24] = mul c 2.0:f32[]
  in (d,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

#[test]
fn square_transpose_below_reshape() {
    check(
        "{ lambda ; a:f32[5,5]. let
    b:f32[5,5] = transpose[permutation=(1, 0)] a
    c:f32[25] = reshape[dimensions=None new_sizes=(25,) sharding=None] b
    d:f32[25] = neg c
  in (d,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}

#[test]
fn rev_reshape_slice_chain() {
    check(
        "{ lambda ; a:f32[3,8]. let
    b:f32[3,8] = rev[dimensions=(0, 1)] a
    c:f32[24] = reshape[dimensions=None new_sizes=(24,) sharding=None] b
    d:f32[10] = slice[limit_indices=(15,) start_indices=(5,) strides=None] c
    e:f32[10] = add d 1.0:f32[]
  in (e,) }",
        Dist::Uniform(2.0),
        Tol::Exact,
    );
}
