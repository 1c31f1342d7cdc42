//! Promotion: `jnp.add` of every pair from a table of strong dtypes and
//! weak Rust scalars gives the dtype and weak flag JAX 0.10.2 gives
//! (default x32 mode), both from `result_type` and from the computed sum.

use half::{bf16, f16};
use jaxon_ir::DType;
use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;

/// `(lhs, rhs, dtype, weak)` as printed by JAX for `jnp.add(lhs, rhs)`.
fn table() -> Vec<(Array, Array, DType, bool)> {
    vec![
        (Array::scalar(true), Array::scalar(true), DType::Bool, false),
        (Array::scalar(true), Array::scalar(1i8), DType::I8, false),
        (Array::scalar(true), Array::scalar(1u8), DType::U8, false),
        (Array::scalar(true), Array::scalar(1i16), DType::I16, false),
        (Array::scalar(true), Array::scalar(1i32), DType::I32, false),
        (Array::scalar(true), Array::scalar(1u32), DType::U32, false),
        (
            Array::scalar(true),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(true),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::scalar(true), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(true), Array::weak(1), DType::I32, true),
        (Array::scalar(true), Array::weak(1.0), DType::F32, true),
        (Array::scalar(1i8), Array::scalar(true), DType::I8, false),
        (Array::scalar(1i8), Array::scalar(1i8), DType::I8, false),
        (Array::scalar(1i8), Array::scalar(1u8), DType::I16, false),
        (Array::scalar(1i8), Array::scalar(1i16), DType::I16, false),
        (Array::scalar(1i8), Array::scalar(1i32), DType::I32, false),
        (Array::scalar(1i8), Array::scalar(1u32), DType::I32, false),
        (
            Array::scalar(1i8),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(1i8),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::scalar(1i8), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(1i8), Array::weak(1), DType::I8, false),
        (Array::scalar(1i8), Array::weak(1.0), DType::F32, true),
        (Array::scalar(1u8), Array::scalar(true), DType::U8, false),
        (Array::scalar(1u8), Array::scalar(1i8), DType::I16, false),
        (Array::scalar(1u8), Array::scalar(1u8), DType::U8, false),
        (Array::scalar(1u8), Array::scalar(1i16), DType::I16, false),
        (Array::scalar(1u8), Array::scalar(1i32), DType::I32, false),
        (Array::scalar(1u8), Array::scalar(1u32), DType::U32, false),
        (
            Array::scalar(1u8),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(1u8),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::scalar(1u8), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(1u8), Array::weak(1), DType::U8, false),
        (Array::scalar(1u8), Array::weak(1.0), DType::F32, true),
        (Array::scalar(1i16), Array::scalar(true), DType::I16, false),
        (Array::scalar(1i16), Array::scalar(1i8), DType::I16, false),
        (Array::scalar(1i16), Array::scalar(1u8), DType::I16, false),
        (Array::scalar(1i16), Array::scalar(1i16), DType::I16, false),
        (Array::scalar(1i16), Array::scalar(1i32), DType::I32, false),
        (Array::scalar(1i16), Array::scalar(1u32), DType::I32, false),
        (
            Array::scalar(1i16),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(1i16),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::scalar(1i16), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(1i16), Array::weak(1), DType::I16, false),
        (Array::scalar(1i16), Array::weak(1.0), DType::F32, true),
        (Array::scalar(1i32), Array::scalar(true), DType::I32, false),
        (Array::scalar(1i32), Array::scalar(1i8), DType::I32, false),
        (Array::scalar(1i32), Array::scalar(1u8), DType::I32, false),
        (Array::scalar(1i32), Array::scalar(1i16), DType::I32, false),
        (Array::scalar(1i32), Array::scalar(1i32), DType::I32, false),
        (Array::scalar(1i32), Array::scalar(1u32), DType::I32, false),
        (
            Array::scalar(1i32),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(1i32),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::scalar(1i32), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(1i32), Array::weak(1), DType::I32, false),
        (Array::scalar(1i32), Array::weak(1.0), DType::F32, true),
        (Array::scalar(1u32), Array::scalar(true), DType::U32, false),
        (Array::scalar(1u32), Array::scalar(1i8), DType::I32, false),
        (Array::scalar(1u32), Array::scalar(1u8), DType::U32, false),
        (Array::scalar(1u32), Array::scalar(1i16), DType::I32, false),
        (Array::scalar(1u32), Array::scalar(1i32), DType::I32, false),
        (Array::scalar(1u32), Array::scalar(1u32), DType::U32, false),
        (
            Array::scalar(1u32),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(1u32),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::scalar(1u32), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(1u32), Array::weak(1), DType::U32, false),
        (Array::scalar(1u32), Array::weak(1.0), DType::F32, true),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(true),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(1i8),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(1u8),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(1i16),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(1i32),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(1u32),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(bf16::from_f32(1.0)),
            DType::F32,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::scalar(1f32),
            DType::F32,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::weak(1),
            DType::F16,
            false,
        ),
        (
            Array::scalar(f16::from_f32(1.0)),
            Array::weak(1.0),
            DType::F16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(true),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(1i8),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(1u8),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(1i16),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(1i32),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(1u32),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(f16::from_f32(1.0)),
            DType::F32,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::scalar(1f32),
            DType::F32,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::weak(1),
            DType::BF16,
            false,
        ),
        (
            Array::scalar(bf16::from_f32(1.0)),
            Array::weak(1.0),
            DType::BF16,
            false,
        ),
        (Array::scalar(1f32), Array::scalar(true), DType::F32, false),
        (Array::scalar(1f32), Array::scalar(1i8), DType::F32, false),
        (Array::scalar(1f32), Array::scalar(1u8), DType::F32, false),
        (Array::scalar(1f32), Array::scalar(1i16), DType::F32, false),
        (Array::scalar(1f32), Array::scalar(1i32), DType::F32, false),
        (Array::scalar(1f32), Array::scalar(1u32), DType::F32, false),
        (
            Array::scalar(1f32),
            Array::scalar(f16::from_f32(1.0)),
            DType::F32,
            false,
        ),
        (
            Array::scalar(1f32),
            Array::scalar(bf16::from_f32(1.0)),
            DType::F32,
            false,
        ),
        (Array::scalar(1f32), Array::scalar(1f32), DType::F32, false),
        (Array::scalar(1f32), Array::weak(1), DType::F32, false),
        (Array::scalar(1f32), Array::weak(1.0), DType::F32, false),
        (Array::weak(1), Array::scalar(true), DType::I32, true),
        (Array::weak(1), Array::scalar(1i8), DType::I8, false),
        (Array::weak(1), Array::scalar(1u8), DType::U8, false),
        (Array::weak(1), Array::scalar(1i16), DType::I16, false),
        (Array::weak(1), Array::scalar(1i32), DType::I32, false),
        (Array::weak(1), Array::scalar(1u32), DType::U32, false),
        (
            Array::weak(1),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::weak(1),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::weak(1), Array::scalar(1f32), DType::F32, false),
        (Array::weak(1), Array::weak(1), DType::I32, true),
        (Array::weak(1), Array::weak(1.0), DType::F32, true),
        (Array::weak(1.0), Array::scalar(true), DType::F32, true),
        (Array::weak(1.0), Array::scalar(1i8), DType::F32, true),
        (Array::weak(1.0), Array::scalar(1u8), DType::F32, true),
        (Array::weak(1.0), Array::scalar(1i16), DType::F32, true),
        (Array::weak(1.0), Array::scalar(1i32), DType::F32, true),
        (Array::weak(1.0), Array::scalar(1u32), DType::F32, true),
        (
            Array::weak(1.0),
            Array::scalar(f16::from_f32(1.0)),
            DType::F16,
            false,
        ),
        (
            Array::weak(1.0),
            Array::scalar(bf16::from_f32(1.0)),
            DType::BF16,
            false,
        ),
        (Array::weak(1.0), Array::scalar(1f32), DType::F32, false),
        (Array::weak(1.0), Array::weak(1), DType::F32, true),
        (Array::weak(1.0), Array::weak(1.0), DType::F32, true),
    ]
}

#[test]
fn add_promotes_as_jax() {
    let mut bad = Vec::new();
    for (a, b, dtype, weak) in table() {
        let rt = jnp::result_type("add", &[&a, &b]);
        let sum = jnp::add(&a, &b);
        let ok = rt.as_ref().is_ok_and(|&r| r == (dtype, weak))
            && sum
                .as_ref()
                .is_ok_and(|s| s.dtype() == dtype && s.weak_type() == weak);
        if !ok {
            bad.push(format!(
                "{:?}{} + {:?}{}: want {dtype:?} weak={weak}, result_type {rt:?}, add {:?}",
                a.dtype(),
                if a.weak_type() { "(weak)" } else { "" },
                b.dtype(),
                if b.weak_type() { "(weak)" } else { "" },
                sum.map(|s| (s.dtype(), s.weak_type())),
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// A Rust float promoted against an f64 array keeps its f64 value, as a
/// Python float does in JAX (`x * 0.1` multiplies by the f64 nearest 0.1,
/// not by the f32 one), in eager code and in a traced literal; against an
/// f32 array it is the f32 value; a strongly typed f32 scalar converted
/// to f64 keeps its f32 value.
#[test]
fn rust_floats_promote_from_their_exact_value() {
    let x = Array::from_vec(vec![1.0f64, 3.0], &[2]);
    let got: Vec<f64> = jnp::multiply(&x, &Array::weak(0.1)).unwrap().to_vec();
    assert_eq!(got, vec![0.1, 3.0 * 0.1]);
    let j = jaxon_trace::make_jaxpr(|x: Array| &x * 0.1)(x.clone()).unwrap();
    assert!(j.to_string().contains("mul a 0.1:f64[]"), "{j}");
    let y = Array::from_vec(vec![1.0f32, 3.0], &[2]);
    let got: Vec<f32> = jnp::multiply(&y, &Array::weak(0.1)).unwrap().to_vec();
    assert_eq!(got, vec![0.1f32, 3.0 * 0.1f32]);
    let strong = jaxon_trace::lax::convert_element_type(&Array::weak(0.1), DType::F32, false);
    let widened: Vec<f64> = jnp::multiply(&x, &strong.unwrap()).unwrap().to_vec();
    assert_eq!(widened, vec![0.1f32 as f64, 3.0 * (0.1f32 as f64)]);
}
