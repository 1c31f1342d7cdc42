//! Tests of `scan_sums_out`: products summed over a scan become one product
//! after it (fewer carries, same values up to the order of additions), and
//! carries that are not such sums are left alone.

use super::tests::{parse, random_args};
use super::*;
use crate::interp::eval_closed_jaxpr;
use crate::jaxpr::ClosedJaxpr;
use crate::primitive::Primitive;
use crate::primitive::{Control, Linalg, ScanParams};

/// The backward scan of an RNN, as reverse mode stages it: weight
/// gradients accumulated from transposed products of the step's delta `k`
/// with an `xs` slice (`g`) and with a value of the body (`h2`), a bias
/// gradient through a reduction, and the carried `dh`.
const RNN_BACKWARD: &str = "{ lambda ; a:f64[6,6] b:f64[5,6] c:f64[6,6] d:f64[6] e:f64[3,6]
    f:f64[7,3,6] g:f64[7,3,5] h:f64[7,3,6] i:f64[7,3,6]. let
    j:f64[5,6] k:f64[6,6] l:f64[6] m:f64[3,6] = scan[
      jaxpr={ lambda ; n:f64[6,6] o:f64[5,6] p:f64[6,6] q:f64[6] r:f64[3,6] s:f64[3,6]
          t:f64[3,5] u:f64[3,6] v:f64[3,6]. let
          w:f64[3,6] = add_any r s
          x:f64[3,6] = mul w v
          y:f64[6] = reduce_sum[axes=(0,) out_sharding=None] x
          h2:f64[3,6] = sin u
          z:f64[6,6] = dot_general[
            dimension_numbers=(([0], [0]), ([], []))
            preferred_element_type=float64
          ] x h2
          ba:f64[6,6] = transpose[permutation=(1, 0)] z
          bb:f64[3,6] = dot_general[
            dimension_numbers=(([1], [1]), ([], []))
            preferred_element_type=float64
          ] x n
          bc:f64[5,6] = dot_general[
            dimension_numbers=(([0], [0]), ([], []))
            preferred_element_type=float64
          ] t x
          bd:f64[5,6] = add_any o bc
          be:f64[6,6] = add_any p ba
          bf:f64[6] = add_any q y
        in (bd, be, bf, bb) }
      length=7
      num_carry=4
      num_consts=1
      reverse=True
      unroll=1
    ] a b c d e f g h i
  in (j, k, l, m) }";

fn scan_of(c: &ClosedJaxpr) -> (usize, usize) {
    c.jaxpr
        .eqns
        .iter()
        .find_map(|e| match &e.primitive {
            Primitive::Control(Control::Scan(ScanParams {
                num_carry, jaxpr, ..
            })) => Some((*num_carry, jaxpr.jaxpr.outvars.len())),
            _ => None,
        })
        .expect("a scan")
}

fn agree(a: &ClosedJaxpr, b: &ClosedJaxpr, seed: u64) {
    let args = random_args(&a.jaxpr, seed);
    let x = eval_closed_jaxpr(a, &args).expect("original runs");
    let y = eval_closed_jaxpr(b, &args).expect("rewritten runs");
    assert_eq!(x.len(), y.len());
    for (p, q) in x.iter().zip(&y) {
        assert_eq!(p.shape(), q.shape());
        for (u, v) in p.to_f64_vec().iter().zip(q.to_f64_vec()) {
            assert!((u - v).abs() <= 1e-12 * (1.0 + v.abs()), "{u} vs {v}");
        }
    }
}

fn rewritten(c: &ClosedJaxpr) -> ClosedJaxpr {
    let j = scan_sums_out(&c.jaxpr).expect("rewrites");
    let out = ClosedJaxpr {
        jaxpr: j.into(),
        consts: c.consts.clone(),
    };
    crate::check::check_closed_jaxpr(&out).expect("a well-typed result");
    out
}

#[test]
fn summed_products_leave_the_scan() {
    let c = parse(RNN_BACKWARD);
    let r = rewritten(&c);
    // Both weight gradients leave; the bias gradient (a reduction) and
    // the carried delta stay. `x` is emitted once per product that reads
    // it, `h2` once; `g` is an `xs` operand and is used as it is.
    let (carry, outs) = scan_of(&r);
    assert_eq!(carry, 2, "{}", crate::print::print_jaxpr(&r.jaxpr));
    assert_eq!(outs, 2 + 3);
    let dots_outside = r
        .jaxpr
        .eqns
        .iter()
        .filter(|e| matches!(e.primitive, Primitive::Linalg(Linalg::DotGeneral(_))))
        .count();
    assert_eq!(dots_outside, 2);
    for seed in 0..4 {
        agree(&c, &r, seed);
    }
    // The pipeline runs it (and swaps the transposed product).
    let s = simplify(&c, crate::primitive::Platform::Cpu).expect("simplifies");
    assert_eq!(scan_of(&s).0, 2);
    agree(&c, &s, 9);
}

#[test]
fn carries_that_are_not_summed_products_stay() {
    // A product with a loop-invariant operand, a carry also read by the
    // body, and a product contracting a trailing dimension (the stacked
    // product would need a transposed copy) are left alone.
    let text = "{ lambda ; a:f64[4,4] b:f64[4,4] c:f64[4,4] p:f64[4,3] d:f64[5,2,4] q:f64[5,4,2]
    r:f64[5,2,3]. let
    e:f64[4,4] f:f64[4,4] s:f64[4,3] = scan[
      jaxpr={ lambda ; g:f64[4,4] h:f64[4,4] i:f64[4,4] t:f64[4,3] j:f64[2,4] u:f64[4,2]
          v:f64[2,3]. let
          k:f64[4,4] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float64
          ] g g
          l:f64[4,4] = add h k
          m:f64[4,4] = dot_general[
            dimension_numbers=(([0], [0]), ([], []))
            preferred_element_type=float64
          ] j j
          n:f64[4,4] = add i m
          o:f64[4,4] = mul n i
          w:f64[4,3] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float64
          ] u v
          x:f64[4,3] = add t w
        in (l, o, x) }
      length=5
      num_carry=3
      num_consts=1
      reverse=False
      unroll=1
    ] a b c p d q r
  in (e, f, s) }";
    let c = parse(text);
    let r = rewritten(&c);
    assert_eq!(scan_of(&r).0, 3, "{}", crate::print::print_jaxpr(&r.jaxpr));
    agree(&c, &r, 3);
}

#[test]
fn a_plain_product_of_two_xs_slices_is_one_gemm_over_time() {
    let text = "{ lambda ; a:f64[3,5] b:f64[6,4,3] c:f64[6,4,5]. let
    d:f64[3,5] = scan[
      jaxpr={ lambda ; e:f64[3,5] f:f64[4,3] g:f64[4,5]. let
          h:f64[3,5] = dot_general[
            dimension_numbers=(([0], [0]), ([], []))
            preferred_element_type=float64
          ] f g
          i:f64[3,5] = add e h
        in (i,) }
      length=6
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a b c
  in (d,) }";
    let c = parse(text);
    let r = rewritten(&c);
    assert_eq!(
        scan_of(&r),
        (0, 0),
        "{}",
        crate::print::print_jaxpr(&r.jaxpr)
    );
    agree(&c, &r, 5);
}

#[test]
fn input_projections_are_one_product_before_the_scan() {
    // h' = tanh(x_t W + h U): x_t W is computed for every step at once.
    let text = "{ lambda ; a:f64[5,6] b:f64[6,6] c:f64[3,6] d:f64[8,3,5]. let
    e:f64[3,6] f:f64[8,3,6] = scan[
      jaxpr={ lambda ; g:f64[5,6] h:f64[6,6] i:f64[3,6] j:f64[3,5]. let
          k:f64[3,6] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float64
          ] j g
          l:f64[3,6] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float64
          ] i h
          m:f64[3,6] = add k l
          n:f64[3,6] = tanh m
        in (n, n) }
      length=8
      num_carry=1
      num_consts=2
      reverse=False
      unroll=1
    ] a b c d
  in (e, f) }";
    let c = parse(text);
    let r = rewritten(&c);
    let printed = crate::print::print_jaxpr(&r.jaxpr);
    assert!(
        printed.starts_with("{ lambda ; a:f64[5,6] b:f64[6,6] c:f64[3,6] d:f64[8,3,5]. let\n    e:f64[8,3,6] = dot_general"),
        "{printed}"
    );
    for seed in 0..3 {
        agree(&c, &r, seed);
    }
}
