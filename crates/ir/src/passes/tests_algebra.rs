//! Tests of the algebraic rewrites: uncontracted `dot_general`s become
//! broadcasts and a `mul`, bit-identical to the interpreter's product for
//! every batch-dimension placement, and fuse with a following transpose.

use super::tests::{parse, random_args};
use super::*;
use crate::interp::eval_closed_jaxpr;
use crate::jaxpr::ClosedJaxpr;
use crate::primitive::Linalg;
use crate::primitive::Primitive;

fn rewritten(c: &ClosedJaxpr) -> ClosedJaxpr {
    ClosedJaxpr {
        jaxpr: outer_products_to_mul(&c.jaxpr).expect("rewrites").into(),
        consts: c.consts.clone(),
    }
}

fn has_dot(c: &ClosedJaxpr) -> bool {
    c.jaxpr
        .eqns
        .iter()
        .any(|e| matches!(e.primitive, Primitive::Linalg(Linalg::DotGeneral(_))))
}

#[test]
fn outer_products_become_exact_muls() {
    // (lhs type, rhs type, dimension numbers, result type)
    let cases = [
        ("f32[5]", "f32[7]", "(([], []), ([], []))", "f32[5,7]"),
        (
            "f32[4,5]",
            "f32[4,7]",
            "(([], []), ([0], [0]))",
            "f32[4,5,7]",
        ),
        (
            "f32[5,4]",
            "f32[7,4]",
            "(([], []), ([1], [1]))",
            "f32[4,5,7]",
        ),
        (
            "f32[5,4,3]",
            "f32[3,6,4]",
            "(([], []), ([1, 2], [2, 0]))",
            "f32[4,3,5,6]",
        ),
        ("f64[2,3]", "f64[4]", "(([], []), ([], []))", "f64[2,3,4]"),
        (
            "i32[3,2]",
            "i32[2,3]",
            "(([], []), ([0], [1]))",
            "i32[3,2,2]",
        ),
    ];
    for (seed, (lt, rt, dn, ot)) in cases.iter().enumerate() {
        let text = format!(
            "{{ lambda ; a:{lt} b:{rt}. let
    c:{ot} = dot_general[dimension_numbers={dn} preferred_element_type=None] a b
  in (c,) }}"
        );
        let c = parse(&text);
        let r = rewritten(&c);
        assert!(!has_dot(&r), "{text}");
        crate::check::check_jaxpr(&r.jaxpr).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let args = random_args(&c.jaxpr, seed as u64 + 1);
        let want = eval_closed_jaxpr(&c, &args).expect("evaluates");
        let got = eval_closed_jaxpr(&r, &args).expect("evaluates");
        assert_eq!(want, got, "{text}");
    }
}

#[test]
fn contracted_and_mixed_dtype_products_are_kept() {
    for text in [
        "{ lambda ; a:f32[4,5] b:f32[5,7]. let
    c:f32[4,7] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=None] a b
  in (c,) }",
        "{ lambda ; a:f32[4] b:f32[5]. let
    c:f64[4,5] = dot_general[dimension_numbers=(([], []), ([], [])) preferred_element_type=float64] a b
  in (c,) }",
    ] {
        assert!(has_dot(&rewritten(&parse(text))), "{text}");
    }
}

#[test]
fn per_example_outer_product_fuses_with_its_transpose() {
    let c = parse(
        "{ lambda ; a:f32[8,16] b:f32[8,4]. let
    c:f32[8,16,4] = dot_general[dimension_numbers=(([], []), ([0], [0])) preferred_element_type=float32] a b
    d:f32[8,4,16] = transpose[permutation=(0, 2, 1)] c
  in (d,) }",
    );
    let s = simplify(&c, crate::primitive::Platform::Cpu).expect("simplifies");
    let plan = plan_fusion(&s.jaxpr).expect("plans");
    assert_eq!(plan.groups.len(), 1, "{plan}");
    let args = random_args(&c.jaxpr, 9);
    assert_eq!(
        eval_closed_jaxpr(&c, &args).expect("evaluates"),
        eval_closed_jaxpr(&s, &args).expect("evaluates")
    );
}

fn count(c: &ClosedJaxpr, name: &str) -> usize {
    c.jaxpr
        .eqns
        .iter()
        .filter(|e| e.primitive.name() == name)
        .count()
}

/// Max |a - b| over the outputs, relative to the largest |b|.
fn rel_diff(a: &[crate::array::HostArray], b: &[crate::array::HostArray]) -> f64 {
    let mut worst = 0.0f64;
    let mut scale = 1e-30f64;
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.shape(), y.shape());
        for i in 0..x.len() {
            let (p, q) = (x.data().get_f64(i), y.data().get_f64(i));
            worst = worst.max((p - q).abs());
            scale = scale.max(q.abs());
        }
    }
    worst / scale
}

#[test]
fn transposed_products_become_swapped_products() {
    let cases = [
        // (program, rewritten?)
        (
            "{ lambda ; a:f32[6,5] b:f32[6,7]. let
    c:f32[5,7] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float32] a b
    d:f32[7,5] = transpose[permutation=(1, 0)] c
  in (d,) }",
            true,
        ),
        (
            "{ lambda ; a:f32[3,4,5] b:f32[3,5,2]. let
    c:f32[3,4,2] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=float32] a b
    d:f32[3,2,4] = transpose[permutation=(0, 2, 1)] c
  in (d,) }",
            true,
        ),
        // The product is read twice: kept.
        (
            "{ lambda ; a:f32[6,5] b:f32[6,7]. let
    c:f32[5,7] = dot_general[dimension_numbers=(([0], [0]), ([], [])) preferred_element_type=float32] a b
    d:f32[7,5] = transpose[permutation=(1, 0)] c
  in (d, c) }",
            false,
        ),
        // The batch dimension moves: kept.
        (
            "{ lambda ; a:f32[3,4,5] b:f32[3,5,2]. let
    c:f32[3,4,2] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=float32] a b
    d:f32[4,3,2] = transpose[permutation=(1, 0, 2)] c
  in (d,) }",
            false,
        ),
    ];
    for (seed, (text, rewrites)) in cases.iter().enumerate() {
        let c = parse(text);
        let s = simplify(&c, crate::primitive::Platform::Cpu).expect("simplifies");
        crate::check::check_jaxpr(&s.jaxpr).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(count(&s, "transpose") == 0, *rewrites, "{text}");
        assert_eq!(count(&s, "dot_general"), 1, "{text}");
        let args = random_args(&c.jaxpr, seed as u64 + 3);
        let want = eval_closed_jaxpr(&c, &args).expect("evaluates");
        let got = eval_closed_jaxpr(&s, &args).expect("evaluates");
        assert!(rel_diff(&got, &want) < 1e-6, "{text}");
    }
}
