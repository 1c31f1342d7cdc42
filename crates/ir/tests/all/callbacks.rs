//! The callback family in the IR: JAX's printed `debug_print`,
//! `debug_callback` and `pure_callback` equations parse and print back
//! byte for byte; `debug_print` evaluates from text, formatting as JAX
//! does (the expected lines are JAX 0.10.2's output); a callback read from
//! text errors clearly when run; DCE keeps effects.

use jaxon_ir::interp::ops::callback::{capture_debug_output, format_array};
use jaxon_ir::parse::parse_closed_jaxpr;
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{eval_closed_jaxpr, passes, HostArray, Storage};

fn text(name: &str) -> String {
    let path = format!(
        "{}/tests/data/callbacks/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("test data")
}

const NAMES: &[&str] = &[
    "print1",
    "print_kw",
    "print_plain",
    "print_two",
    "vmap_print",
    "callback",
    "callback_ordered",
    "pure",
    "pure_none",
];

#[test]
fn jax_texts_round_trip() {
    for name in NAMES {
        let t = text(name);
        let closed = parse_closed_jaxpr(&t, Vec::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
        jaxon_ir::check_closed_jaxpr(&closed).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(print_jaxpr(&closed.jaxpr), t, "{name}");
    }
}

fn f32s(v: &[f32], shape: &[usize]) -> HostArray {
    HostArray::new(shape.to_vec(), Storage::F32(v.to_vec())).unwrap()
}

fn i32s(v: &[i32], shape: &[usize]) -> HostArray {
    HostArray::new(shape.to_vec(), Storage::I32(v.to_vec())).unwrap()
}

#[test]
fn debug_print_from_text_runs_and_formats_as_jax() {
    let t = parse_closed_jaxpr(&text("print_two"), Vec::new()).unwrap();
    let args = [f32s(&[1.0], &[]), i32s(&[0, 1, 2], &[3])];
    let (r, out) = capture_debug_output(|| eval_closed_jaxpr(&t, &args));
    r.unwrap();
    assert_eq!(out, "[0 1 2] and 1.0 {}\n");

    let t = parse_closed_jaxpr(&text("print_kw"), Vec::new()).unwrap();
    let (r, out) = capture_debug_output(|| eval_closed_jaxpr(&t, &[f32s(&[1.0; 3], &[3])]));
    assert_eq!(r.unwrap()[0], f32s(&[2.0; 3], &[3]));
    assert_eq!(out, "x=[1. 1. 1.] [2. 2. 2.]\n");

    // vmap's jaxpr prints once per element, in order.
    let t = parse_closed_jaxpr(&text("vmap_print"), Vec::new()).unwrap();
    let (r, out) = capture_debug_output(|| eval_closed_jaxpr(&t, &[f32s(&[1.0, 2.0, 3.5], &[3])]));
    r.unwrap();
    assert_eq!(out, "x=1.0\nx=2.0\nx=3.5\n");
}

#[test]
fn numpy_formatting_matches_jax() {
    let long: Vec<f32> = (0..30).map(|i| i as f32 * 1.5).collect();
    let cases: Vec<(HostArray, &str)> = vec![
        (f32s(&[1.0, 2.5, -3.25], &[3]), "[ 1.    2.5  -3.25]"),
        (
            f32s(&[1.0, 2.5, 3.0, 4.0], &[2, 2]),
            "[[1.  2.5]\n [3.  4. ]]",
        ),
        (f32s(&[0.1], &[]), "0.10000000149011612"),
        (
            f32s(&[1.0 / 3.0, 2.0 / 3.0], &[2]),
            "[0.33333334 0.6666667 ]",
        ),
        (
            HostArray::new(vec![3], Storage::F64(vec![0.1, 1e-5, 3.0])).unwrap(),
            "[1.e-01 1.e-05 3.e+00]",
        ),
        (i32s(&[1, -20, 300], &[3]), "[  1 -20 300]"),
        (
            HostArray::new(vec![2], Storage::Bool(vec![true, false])).unwrap(),
            "[ True False]",
        ),
        (
            f32s(&long, &[30]),
            "[ 0.   1.5  3.   4.5  6.   7.5  9.  10.5 12.  13.5 15.  16.5 18.  19.5\n \
             21.  22.5 24.  25.5 27.  28.5 30.  31.5 33.  34.5 36.  37.5 39.  40.5\n 42.  43.5]",
        ),
        (
            i32s(&[0, 1, 2, 3, 4, 5, 6, 7], &[2, 2, 2]),
            "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]",
        ),
        (f32s(&[1e9, 2.0], &[2]), "[1.e+09 2.e+00]"),
        (f32s(&[f32::NAN, f32::INFINITY, 1.0], &[3]), "[nan inf  1.]"),
        (i32s(&[7], &[]), "7"),
    ];
    for (a, want) in cases {
        assert_eq!(format_array(&a), want);
    }
}

#[test]
fn callbacks_read_from_text_error_when_run() {
    for name in ["callback", "pure"] {
        let t = parse_closed_jaxpr(&text(name), Vec::new()).unwrap();
        let arg = if name == "pure" {
            f32s(&[1.0; 3], &[3])
        } else {
            f32s(&[1.0], &[])
        };
        let err = eval_closed_jaxpr(&t, &[arg]).unwrap_err().to_string();
        assert!(err.contains("not available"), "{name}: {err}");
    }
}

#[test]
fn dce_keeps_debug_prints_and_bad_format_is_an_error() {
    let t = parse_closed_jaxpr(&text("print1"), Vec::new()).unwrap();
    let j = passes::dce(&t.jaxpr).unwrap();
    assert_eq!(j.eqns.len(), 2);
    let simplified = passes::simplify(&t, jaxon_ir::primitive::Platform::Cpu).unwrap();
    assert!(simplified
        .jaxpr
        .eqns
        .iter()
        .any(|e| e.primitive.name() == "debug_print"));

    let bad = text("print1").replace("fmt=x={}", "fmt=x={} {}");
    let t = parse_closed_jaxpr(&bad, Vec::new()).unwrap();
    let err = eval_closed_jaxpr(&t, &[f32s(&[1.0], &[])])
        .unwrap_err()
        .to_string();
    assert!(err.contains("no positional argument 1"), "{err}");

    // An operand tree that does not match the operands is a parse error.
    let bad = text("print1").replace("((*,), {})", "((*, *), {})");
    assert!(parse_closed_jaxpr(&bad, Vec::new()).is_err());
}
