//! f16/bf16 in kernels: values live in f32 registers (always exactly
//! representable in their half type), loads widen the 16-bit storage,
//! every rounding operation re-rounds its f32 result to the half type, and
//! stores narrow; as the interpreter, which computes halves in f32 and
//! rounds after each operation. Conversions are inline integer code in
//! [`super::libm`]; half groups run scalar code.

use super::emit::{scalar_type, Em};
use super::libm;
use super::ops::{emit_op as emit_plain, Math, Operand};
use super::{err, GenError};
use crate::error::CpuError;
use cranelift_codegen::ir::types::I16;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use jaxon_ir::primitive::{BinaryOp, UnaryOp};
use jaxon_ir::primitive::{ConvertElementTypeParams, Elementwise};
use jaxon_ir::{DType, Primitive};

/// f16 or bf16.
pub(super) fn is_half(dt: DType) -> bool {
    matches!(dt, DType::F16 | DType::BF16)
}

/// Whether kernels can read and write `dt`.
pub(super) fn storable(dt: DType) -> bool {
    is_half(dt) || scalar_type(dt).is_some()
}

/// The dtype a value of `dt` is computed in.
fn compute(dt: DType) -> DType {
    if is_half(dt) {
        DType::F32
    } else {
        dt
    }
}

/// Loads one scalar of `dt` (halves as their f32 value).
pub(super) fn load(
    b: &mut FunctionBuilder,
    dt: DType,
    flags: MemFlagsData,
    addr: Value,
) -> Result<Value, GenError> {
    if is_half(dt) {
        let bits = b.ins().load(I16, flags, addr, 0);
        return Ok(libm::load_half(&mut Em { b, lanes: 1 }, dt, bits));
    }
    let ty = scalar_type(dt).ok_or_else(|| err(None, format!("dtype {dt}")))?;
    Ok(b.ins().load(ty, flags, addr, 0))
}

/// The 16-bit storage of an f32 value of half type `dt`.
pub(super) fn store_bits(em: &mut Em, dt: DType, v: Value) -> Value {
    libm::store_half(em, dt, v)
}

/// Whether an op's f32 result can need rounding to the half type.
fn rounds(p: &Primitive) -> bool {
    !jaxon_ir::passes::moves_data(p)
        && !matches!(
            p,
            Primitive::Elementwise(Elementwise::SelectN)
                | Primitive::Elementwise(Elementwise::Clamp)
                | Primitive::Elementwise(Elementwise::Unary(
                    UnaryOp::Neg
                        | UnaryOp::Abs
                        | UnaryOp::Copy
                        | UnaryOp::StopGradient
                        | UnaryOp::Floor
                        | UnaryOp::Ceil
                        | UnaryOp::Sign
                ))
                | Primitive::Elementwise(Elementwise::Binary(BinaryOp::Max | BinaryOp::Min))
        )
}

/// Emits an elementwise op some of whose operands or result are halves.
pub(super) fn emit_op(
    em: &mut Em,
    gdt: DType,
    math: Math,
    prim: &Primitive,
    args: &[Operand],
    out: DType,
) -> Result<Value, CpuError> {
    let cargs: Vec<Operand> = args
        .iter()
        .map(|a| Operand {
            v: a.v,
            dt: compute(a.dt),
        })
        .collect();
    let from = args.first().map(|a| a.dt);
    match prim {
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Nextafter)) if is_half(out) => {
            let [x, y] = cargs.as_slice() else {
                return Err("nextafter takes two operands".into());
            };
            return Ok(libm::nextafter_half(em, out, x.v, y.v));
        }
        Primitive::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
            new_dtype,
            ..
        })) if is_half(*new_dtype) => {
            let x = cargs.first().copied().ok_or("convert takes one operand")?;
            let from = from.unwrap_or(DType::F32);
            if from.is_float() && from != DType::F64 {
                // f32 (or a half in f32): one rounding.
                return Ok(libm::round_half(em, *new_dtype, x.v));
            }
            // f64 and integers round once from f64, as the interpreter.
            let wide = emit_plain(
                em,
                gdt,
                math,
                &Primitive::Elementwise(Elementwise::ConvertElementType(
                    ConvertElementTypeParams {
                        new_dtype: DType::F64,
                        weak_type: false,
                    },
                )),
                &[x],
                DType::F64,
            )?;
            return Ok(libm::f64_to_half(em, *new_dtype, wide));
        }
        _ => {}
    }
    let v = emit_plain(em, gdt, math, prim, &cargs, compute(out))?;
    Ok(if is_half(out) && rounds(prim) {
        libm::round_half(em, out, v)
    } else {
        v
    })
}
