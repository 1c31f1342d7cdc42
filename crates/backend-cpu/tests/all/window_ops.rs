//! The window family on the cpu backend versus the reference interpreter,
//! on seeded random inputs: `reduce_window_*` over f32/f64/ints with
//! padding and dilations, and the selections of their derivatives.

use crate::common;
use common::{check, Dist, Tol};

#[test]
fn reduce_windows_with_padding_and_dilations() {
    let geometries = [
        (
            "(1, 1)",
            "((0, 0), (0, 0))",
            "(1, 1)",
            "(2, 2)",
            "(2, 2)",
            "2,3",
        ),
        (
            "(2, 1)",
            "((1, 0), (2, 1))",
            "(1, 2)",
            "(2, 3)",
            "(1, 2)",
            "5,3",
        ),
        (
            "(1, 1)",
            "((1, 1), (0, 2))",
            "(1, 1)",
            "(2, 3)",
            "(1, 2)",
            "5,3",
        ),
    ];
    for op in [
        "reduce_window_sum",
        "reduce_window_max",
        "reduce_window_min",
    ] {
        for dt in ["f32", "f64", "i32", "u8"] {
            for (bd, pad, wd, dims, strides, out) in geometries {
                let shape = if bd == "(2, 1)" { "3,7" } else { "4,6" };
                let text = format!(
                    "{{ lambda ; a:{dt}[{shape}]. let b:{dt}[{out}] = {op}[base_dilation={bd} padding={pad} window_dilation={wd} window_dimensions={dims} window_strides={strides}] a in (b,) }}"
                );
                check(&text, Dist::Uniform(3.0), Tol::Exact);
            }
        }
    }
}

#[test]
fn select_and_scatter_and_gather() {
    for sel in ["ge", "le"] {
        for dt in ["f32", "f64"] {
            let text = format!(
                "{{ lambda ; a:{dt}[2,3,2] b:{dt}[2,5,4]. let c:{dt}[2,5,4] = select_and_scatter_add[padding=((0, 0), (1, 1), (0, 1)) select_prim={sel} window_dimensions=(1, 3, 2) window_strides=(1, 2, 2)] a b in (c,) }}"
            );
            check(&text, Dist::Uniform(3.0), Tol::Exact);
            let text = format!(
                "{{ lambda ; a:{dt}[2,5,4] b:{dt}[2,5,4]. let c:{dt}[2,3,2] = select_and_gather_add[base_dilation=(1, 1, 1) padding=((0, 0), (1, 1), (0, 1)) select_prim={sel} window_dilation=(1, 2, 1) window_dimensions=(1, 2, 2) window_strides=(1, 2, 2)] a b in (c,) }}"
            );
            check(&text, Dist::Uniform(3.0), Tol::Exact);
        }
    }
}
