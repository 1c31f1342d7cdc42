//! Scalar constants of kernels: literals at the group's width, and each
//! reduction's identity and combiner.
//!
//! Invariant: an identity combined with any value gives that value (NaNs
//! included), so pre-filled outputs and register accumulators agree.

use super::emit::{iconst, scalar_type, Em};
use super::{err, GenError};
use cranelift_codegen::ir::types::I8;
use cranelift_codegen::ir::{InstBuilder, Value};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{DType, Literal, Scalar};

/// A literal as a value of this width.
pub(super) fn lit_value(em: &mut Em, gdt: DType, l: &Literal) -> Result<Value, GenError> {
    let dt = l.dtype;
    if dt.is_float() {
        if em.lanes > 1 && dt != gdt {
            return Err(err(None, format!("literal of {dt} in {gdt} vector code")));
        }
        let v = l.as_f64();
        return Ok(if em.lanes > 1 {
            em.fconst(gdt, v)
        } else if dt == DType::F64 {
            em.b.ins().f64const(v)
        } else if matches!(dt, DType::F32 | DType::F16 | DType::BF16) {
            em.b.ins().f32const(v as f32)
        } else {
            return Err(err(None, format!("dtype {dt} is not supported yet")));
        });
    }
    let bits: i64 = match l.value {
        Scalar::Bool(x) => x as i64,
        Scalar::Int(i) => i,
        Scalar::UInt(u) => u as i64,
        Scalar::Float(f) => f as i64,
        Scalar::Complex(..) => return Err(err(None, format!("dtype {dt} is not supported"))),
    };
    if em.lanes > 1 {
        if dt == DType::Bool {
            return Ok(em.bconst(gdt, bits != 0));
        }
        return Err(err(None, format!("literal of {dt} in vector code")));
    }
    let ty =
        scalar_type(dt).ok_or_else(|| err(None, format!("dtype {dt} is not supported yet")))?;
    Ok(iconst(em.b, ty, bits))
}

/// The identity of a reduction, as a value of this width.
pub(super) fn identity(em: &mut Em, op: ReduceOp, dt: DType) -> Value {
    if dt.is_float() {
        let v = match op {
            ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => 0.0,
            ReduceOp::Prod | ReduceOp::And => 1.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        };
        if em.lanes > 1 {
            return em.fconst(dt, v);
        }
        return if dt == DType::F64 {
            em.b.ins().f64const(v)
        } else {
            em.b.ins().f32const(v as f32)
        };
    }
    let ty = scalar_type(dt).unwrap_or(I8);
    let bits = ty.bits();
    let v = identity_int(op, dt, bits);
    iconst(em.b, ty, v)
}

/// The identity of an integer or boolean reduction, as raw bits.
pub(crate) fn identity_int(op: ReduceOp, dt: DType, bits: u32) -> i64 {
    let signed = dt.is_signed_int();
    let (min, max) = if dt == DType::Bool {
        (0, 1)
    } else if signed {
        (i64::MIN >> (64 - bits), i64::MAX >> (64 - bits))
    } else {
        (0, -1)
    };
    match op {
        ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => 0,
        ReduceOp::Prod => 1,
        ReduceOp::And => {
            if dt == DType::Bool {
                1
            } else {
                -1
            }
        }
        ReduceOp::Max => min,
        ReduceOp::Min => max,
    }
}

/// `a op b` for a reduction.
pub(super) fn combine(em: &mut Em, op: ReduceOp, dt: DType, a: Value, b: Value) -> Value {
    let ins = em.b.ins();
    if dt.is_float() {
        return match op {
            ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => ins.fadd(a, b),
            ReduceOp::Prod | ReduceOp::And => ins.fmul(a, b),
            ReduceOp::Max => ins.fmax(a, b),
            ReduceOp::Min => ins.fmin(a, b),
        };
    }
    let signed = dt.is_signed_int();
    let boolean = dt == DType::Bool;
    match op {
        ReduceOp::Sum if boolean => ins.bor(a, b),
        ReduceOp::Prod if boolean => ins.band(a, b),
        ReduceOp::Sum => ins.iadd(a, b),
        ReduceOp::Prod => ins.imul(a, b),
        ReduceOp::Max if signed => ins.smax(a, b),
        ReduceOp::Min if signed => ins.smin(a, b),
        ReduceOp::Max => ins.umax(a, b),
        ReduceOp::Min => ins.umin(a, b),
        ReduceOp::And => ins.band(a, b),
        ReduceOp::Or => ins.bor(a, b),
        ReduceOp::Xor => ins.bxor(a, b),
    }
}
