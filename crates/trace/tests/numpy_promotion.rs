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
