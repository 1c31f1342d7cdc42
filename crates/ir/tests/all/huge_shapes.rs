//! Shapes too large to allocate, or to address, are errors and never
//! aborts (issue 23): the checker rejects a type whose byte size overflows,
//! and the interpreter refuses an intermediate over the memory limit with
//! `RESOURCE_EXHAUSTED` naming the shape and the bytes.

use jaxon_ir::{
    check_jaxpr, eval_closed_jaxpr, parse_jaxpr, ClosedJaxpr, DType, HostArray, IrError,
};

const HUGE: &str = "{ lambda ; a:f32[]. let
    b:f32[100000,100000,10] = broadcast_in_dim[broadcast_dimensions=() sharding=None shape=(100000, 100000, 10)] a
    c:f32[] = reduce_sum[axes=(0, 1, 2) out_sharding=None] b
  in (c,) }";

#[test]
fn huge_intermediate_is_resource_exhausted_in_the_interpreter() {
    let j = parse_jaxpr(HUGE).unwrap();
    check_jaxpr(&j).unwrap();
    let x = HostArray::from_f64(DType::F32, &[], &[1.5]).unwrap();
    let e = eval_closed_jaxpr(&ClosedJaxpr::without_consts(j), &[x]).unwrap_err();
    match &e {
        IrError::ResourceExhausted {
            shape,
            bytes,
            dtype,
            what,
            ..
        } => {
            assert_eq!(shape, &[100000, 100000, 10]);
            assert_eq!(*bytes, 400_000_000_000);
            assert_eq!(*dtype, DType::F32);
            assert!(what.contains("broadcast_in_dim"), "{what}");
        }
        other => panic!("expected RESOURCE_EXHAUSTED, got {other}"),
    }
    assert!(e.to_string().starts_with("RESOURCE_EXHAUSTED"), "{e}");
}

/// The same program at a small size still evaluates (the guard refuses
/// only what cannot be had): 1.5 * 6000 = 9000.
#[test]
fn same_program_small_still_runs() {
    let text = HUGE
        .replace("100000, 100000, 10", "20, 30, 10")
        .replace("100000,100000,10", "20,30,10");
    let j = parse_jaxpr(&text).unwrap();
    check_jaxpr(&j).unwrap();
    let x = HostArray::from_f64(DType::F32, &[], &[1.5]).unwrap();
    let out = eval_closed_jaxpr(&ClosedJaxpr::without_consts(j), &[x]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![9000.0]);
}

#[test]
fn shape_whose_bytes_overflow_is_a_checker_error() {
    let text = "{ lambda ; a:f32[]. let
    b:f32[4294967296,4294967296,16] = broadcast_in_dim[broadcast_dimensions=() sharding=None shape=(4294967296, 4294967296, 16)] a
  in (b,) }";
    let j = parse_jaxpr(text).unwrap();
    let e = check_jaxpr(&j).unwrap_err().to_string();
    assert!(
        e.contains("f32[4294967296,4294967296,16]") && e.contains("more than any buffer"),
        "{e}"
    );
}
