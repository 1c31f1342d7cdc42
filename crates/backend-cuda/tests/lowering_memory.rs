//! Issue 23 on `cuda-sim`: a program whose buffers cannot be had — a huge
//! broadcast, a huge iota, a scan item of a huge shape — is refused with
//! `IrError::ResourceExhausted` naming the shape and the bytes, at compile
//! time, instead of aborting the process; a huge broadcast that is only
//! reduced (fused into the reduction, never materialised) still runs.

mod lowering_util;
use jaxon_backend_cuda::lower::CudaSimBackend;
use jaxon_ir::{Backend, DType, IrError};
use lowering_util::parse;

fn compile_err(text: &str) -> IrError {
    match CudaSimBackend::new().compile(&parse(text)) {
        Ok(_) => panic!("compiled:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn a_huge_broadcast_is_resource_exhausted() {
    // 4e13 bytes: more than any machine's memory limit.
    let e = compile_err(
        "{ lambda ; a:f32[]. let b:f32[1000000,1000000,10] = broadcast_in_dim[broadcast_dimensions=() shape=(1000000, 1000000, 10) sharding=None] a in (b,) }",
    );
    match &e {
        IrError::ResourceExhausted {
            dtype,
            shape,
            bytes,
            ..
        } => {
            assert_eq!(*dtype, DType::F32);
            assert_eq!(shape, &[1_000_000, 1_000_000, 10]);
            assert_eq!(*bytes, 40_000_000_000_000);
        }
        other => panic!("expected ResourceExhausted, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("RESOURCE_EXHAUSTED"), "{msg}");
    assert!(msg.contains("1000000, 1000000, 10"), "{msg}");
}

#[test]
fn a_shape_whose_size_overflows_is_resource_exhausted() {
    let e = compile_err(
        "{ lambda ; . let b:i64[4294967296,4294967296,16] = iota[dimension=0 dtype=int64 shape=(4294967296, 4294967296, 16) sharding=None] in (b,) }",
    );
    assert!(
        matches!(&e, IrError::ResourceExhausted { shape, .. } if shape == &[1 << 32, 1 << 32, 16]),
        "{e:?}"
    );
}

#[test]
fn a_huge_input_is_refused_before_anything_runs() {
    let e = compile_err(
        "{ lambda ; a:f64[100000,100000,1000]. let b:f64[100000,100000,1000] = neg a in (b,) }",
    );
    assert!(
        matches!(
            &e,
            IrError::ResourceExhausted {
                dtype: DType::F64,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_huge_broadcast_fused_into_a_reduction_still_runs() {
    let text = "{ lambda ; a:f32[]. let
    b:f32[3,1000000000000] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 1000000000000) sharding=None] a
    c:f32[3] = reduce_max[axes=(1,)] b
  in (c,) }";
    let closed = parse(text);
    let b = CudaSimBackend::new();
    // It compiles: the 12 TB broadcast is never a buffer. (Running it
    // would simulate 3e12 loads; compiling is the check.)
    b.compile(&closed).expect("the fused reduction compiles");
}
