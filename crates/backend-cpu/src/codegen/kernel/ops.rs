//! Cranelift rules for the elementwise primitives, scalar and SIMD.
//!
//! Semantics follow the reference interpreter exactly for every op that
//! IEEE arithmetic makes exact (integer wrap-around, the interpreter's
//! results for integer division by zero and `MIN / -1`, NaN-propagating
//! `max`/`min` with `max(-0, +0) = +0`, saturating float→int casts with
//! NaN→0, shifts past the width). Transcendentals come from [`super::math`],
//! or, under [`Math::Libm`], from the interpreter's own scalar functions
//! (`libm.rs`), which makes every elementwise op bit-identical to it.

use super::emit::{iconst, scalar_type, Em};
use super::lanes::Clif;
use super::math;
use crate::error::CpuError;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F64, I32, I64};
use cranelift_codegen::ir::{InstBuilder, Value};
use jaxon_ir::primitive::{BinaryOp, RoundingMethod, UnaryOp};
use jaxon_ir::primitive::{
    ConvertElementTypeParams, Elementwise, Indexing, IntegerPowParams, RoundParams, Structural,
};
use jaxon_ir::{DType, Primitive};

/// An operand value with its dtype.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operand {
    /// The Cranelift value.
    pub v: Value,
    /// Its dtype.
    pub dt: DType,
}

/// How the approximated float functions ([`is_approximated`], f32 `pow`
/// and `atan2`) are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) enum Math {
    /// Inline polynomials, vectorised: fast, within the ulp table's bounds.
    #[default]
    Inline,
    /// A scalar call of the interpreter's libm function per element:
    /// bit-identical to the interpreter, slow (for differential testing).
    Libm,
}

/// Whether `prim` needs a scalar helper call under [`Math::Libm`] (and so
/// keeps its group's code scalar).
pub(crate) fn calls_libm(prim: &Primitive) -> bool {
    match prim {
        Primitive::Elementwise(Elementwise::Unary(op)) => is_approximated(*op),
        Primitive::Elementwise(Elementwise::Binary(op)) => libm_binary(*op),
        _ => false,
    }
}

/// The binary ops approximated inline (f32 `pow`, `atan2`).
fn libm_binary(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Atan2 | BinaryOp::Pow)
}

/// Unary ops computed by inline polynomial or rational approximations
/// (`math.rs`, `math_inv.rs`; `erf` and `erf_inv` only in f32).
fn is_approximated(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Exp
            | UnaryOp::Expm1
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Tanh
            | UnaryOp::Logistic
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Exp2
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh
            | UnaryOp::Erf
            | UnaryOp::ErfInv
    )
}

/// How a fused kernel computes a primitive.
enum Fused<'a> {
    /// By an elementwise rule of [`emit_op`].
    Elementwise(&'a Elementwise),
    /// By reading through the index map: a layout primitive whose value
    /// passes through unchanged.
    IndexMap,
    /// Not at all: the primitive is never a member of a fused group.
    No,
}

fn fused(prim: &Primitive) -> Fused<'_> {
    match prim {
        Primitive::Elementwise(p) => Fused::Elementwise(p),
        Primitive::Structural(p) => match p {
            Structural::BroadcastInDim(_)
            | Structural::Transpose(_)
            | Structural::Rev(_)
            | Structural::Reshape(_)
            | Structural::Squeeze(_) => Fused::IndexMap,
            Structural::Pad(_)
            | Structural::Concatenate(_)
            | Structural::Iota(_)
            | Structural::Split(_)
            | Structural::Tile(_)
            | Structural::Stack(_)
            | Structural::Empty2(_) => Fused::No,
        },
        Primitive::Indexing(p) => match p {
            Indexing::Slice(_) => Fused::IndexMap,
            Indexing::DynamicSlice(_)
            | Indexing::DynamicUpdateSlice
            | Indexing::Gather(_)
            | Indexing::Scatter(_) => Fused::No,
        },
        // Reduce groups reduce in `kernel/mod.rs`, not here; the other
        // families are never fused.
        Primitive::Reduction(_)
        | Primitive::Linalg(_)
        | Primitive::Control(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => Fused::No,
    }
}

/// Whether an equation expands to a long inline polynomial or rational
/// evaluation (dozens of instructions per vector): loops made of such
/// bodies are not unrolled, since the out-of-order core already overlaps
/// iterations and unrolling only spills registers.
pub(crate) fn is_long_expansion(prim: &Primitive) -> bool {
    let Fused::Elementwise(p) = fused(prim) else {
        return false;
    };
    match p {
        Elementwise::Unary(op) => is_approximated(*op),
        Elementwise::Binary(op) => matches!(op, BinaryOp::Pow | BinaryOp::Atan2),
        Elementwise::IntegerPow(_)
        | Elementwise::Round(_)
        | Elementwise::ReducePrecision(_)
        | Elementwise::ConvertElementType(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::SelectN
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta
        | Elementwise::Complex
        | Elementwise::Real
        | Elementwise::Imag
        | Elementwise::Conj(_) => false,
    }
}

/// Whether an equation can be emitted in vector code where the group's
/// float dtype is `gdt` (all floats are `gdt`, booleans are masks).
pub(crate) fn vector_ok(prim: &Primitive, ins: &[DType], out: DType, gdt: DType) -> bool {
    let is_g = |d: &DType| *d == gdt;
    let floats_in = ins.iter().all(is_g);
    let p = match fused(prim) {
        Fused::Elementwise(p) => p,
        Fused::IndexMap => return ins.iter().all(is_g) && is_g(&out),
        Fused::No => return false,
    };
    match p {
        Elementwise::Unary(op) => {
            let f32_only = matches!(op, UnaryOp::Erf | UnaryOp::ErfInv);
            floats_in
                && is_g(&out)
                && (matches!(
                    op,
                    UnaryOp::Neg
                        | UnaryOp::Abs
                        | UnaryOp::Sqrt
                        | UnaryOp::Rsqrt
                        | UnaryOp::Square
                        | UnaryOp::Copy
                        | UnaryOp::StopGradient
                        | UnaryOp::Sign
                ) || (is_approximated(*op) && (!f32_only || gdt == DType::F32)))
        }
        Elementwise::Binary(op) => {
            floats_in
                && if op.is_comparison() {
                    out == DType::Bool
                } else {
                    is_g(&out)
                        && (matches!(
                            op,
                            BinaryOp::Add
                                | BinaryOp::AddAny
                                | BinaryOp::Sub
                                | BinaryOp::Mul
                                | BinaryOp::Div
                                | BinaryOp::Max
                                | BinaryOp::Min
                                | BinaryOp::Atan2
                        ) || (*op == BinaryOp::Pow && gdt == DType::F32))
                }
        }
        Elementwise::IntegerPow(_) => floats_in && is_g(&out),
        Elementwise::SelectN => {
            ins.len() == 3 && ins[0] == DType::Bool && ins[1..].iter().all(is_g) && is_g(&out)
        }
        Elementwise::Clamp => floats_in && is_g(&out),
        Elementwise::ConvertElementType(ConvertElementTypeParams { new_dtype, .. }) => {
            floats_in && *new_dtype == gdt
        }
        Elementwise::Round(_)
        | Elementwise::ReducePrecision(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::RegularizedIncompleteBeta
        | Elementwise::Complex
        | Elementwise::Real
        | Elementwise::Imag
        | Elementwise::Conj(_) => false,
    }
}

fn unsupported(op: &'static str, dtype: DType) -> CpuError {
    CpuError::DType { op, dtype }
}

/// Emits one elementwise equation. `gdt` is the group's float dtype (the
/// shape of boolean masks in vector code).
pub(crate) fn emit_op(
    em: &mut Em,
    gdt: DType,
    math: Math,
    prim: &Primitive,
    args: &[Operand],
    out: DType,
) -> Result<Value, CpuError> {
    let arg = |i: usize| {
        args.get(i)
            .copied()
            .ok_or_else(|| format!("missing operand {i}"))
    };
    let p = match fused(prim) {
        Fused::Elementwise(p) => p,
        Fused::IndexMap => {
            // The index map already moved the read; the value passes through.
            let a = arg(0)?;
            if a.dt != out {
                return Err(format!("{} changes dtype {} to {out}", prim.name(), a.dt).into());
            }
            return Ok(a.v);
        }
        Fused::No => {
            return Err(CpuError::NotElementwise {
                primitive: prim.name(),
            })
        }
    };
    match p {
        Elementwise::Unary(op) => unary(em, math, *op, arg(0)?),
        Elementwise::Binary(op) => binary(em, gdt, math, *op, arg(0)?, arg(1)?),
        Elementwise::IntegerPow(IntegerPowParams { y }) => integer_pow(em, arg(0)?, *y),
        Elementwise::Round(RoundParams { rounding_method }) => round(em, arg(0)?, *rounding_method),
        Elementwise::SelectN => select_n(em, args),
        Elementwise::Clamp => {
            let (lo, x, hi) = (arg(0)?, arg(1)?, arg(2)?);
            let m = minmax(em, BinaryOp::Max, x, lo)?;
            minmax(em, BinaryOp::Min, Operand { v: m, dt: x.dt }, hi)
        }
        Elementwise::RegularizedIncompleteBeta => {
            let (a, b, x) = (arg(0)?, arg(1)?, arg(2)?);
            if !x.dt.is_float() || a.dt != x.dt || b.dt != x.dt {
                return Err(unsupported(p.name(), x.dt));
            }
            Ok(super::libm::betainc(em, x.dt, a.v, b.v, x.v))
        }
        Elementwise::ConvertElementType(ConvertElementTypeParams { new_dtype, .. }) => {
            convert(em, arg(0)?, *new_dtype)
        }
        // Native steps compute these; complex programs take the slow path.
        Elementwise::ReducePrecision(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::Complex
        | Elementwise::Real
        | Elementwise::Imag
        | Elementwise::Conj(_) => Err(CpuError::NotElementwise {
            primitive: prim.name(),
        }),
    }
}

fn unary(em: &mut Em, math: Math, op: UnaryOp, x: Operand) -> Result<Value, CpuError> {
    let dt = x.dt;
    let v = x.v;
    if dt.is_float() && math == Math::Libm && is_approximated(op) {
        return super::libm::unary(em, op, dt, v).ok_or_else(|| unsupported(op.name(), dt));
    }
    if dt.is_float() {
        let b = &mut em.b;
        return Ok(match op {
            UnaryOp::Neg => b.ins().fneg(v),
            UnaryOp::Abs => b.ins().fabs(v),
            UnaryOp::Sqrt => b.ins().sqrt(v),
            UnaryOp::Rsqrt => {
                let s = b.ins().sqrt(v);
                let one = em.fconst(dt, 1.0);
                em.b.ins().fdiv(one, s)
            }
            UnaryOp::Square => b.ins().fmul(v, v),
            UnaryOp::Copy | UnaryOp::StopGradient => v,
            UnaryOp::Floor => b.ins().floor(v),
            UnaryOp::Ceil => b.ins().ceil(v),
            UnaryOp::Sign => {
                // sign(x) = copysign(1, x), but 0 and NaN map to themselves.
                let one = em.fconst(dt, 1.0);
                let s = em.copysign(dt, one, v);
                let zero = em.fconst(dt, 0.0);
                let is_zero = em.fcmp(FloatCC::Equal, v, zero);
                let is_nan = em.fcmp(FloatCC::NotEqual, v, v);
                let keep = em.b.ins().bor(is_zero, is_nan);
                em.sel(keep, v, s)
            }
            UnaryOp::IsFinite => {
                let a = b.ins().fabs(v);
                let inf = em.fconst(dt, f64::INFINITY);
                em.fcmp(FloatCC::LessThan, a, inf)
            }
            UnaryOp::Exp => math::exp(&mut Clif::new(em, dt), v),
            UnaryOp::Expm1 => math::expm1(&mut Clif::new(em, dt), v),
            UnaryOp::Log => math::log(&mut Clif::new(em, dt), v),
            UnaryOp::Log1p => math::log1p(&mut Clif::new(em, dt), v),
            UnaryOp::Tanh => math::tanh(&mut Clif::new(em, dt), v),
            UnaryOp::Logistic => math::logistic(&mut Clif::new(em, dt), v),
            UnaryOp::Sin => math::sin(&mut Clif::new(em, dt), v),
            UnaryOp::Cos => math::cos(&mut Clif::new(em, dt), v),
            UnaryOp::Exp2 => math::exp2(&mut Clif::new(em, dt), v),
            UnaryOp::Tan => math::tan(&mut Clif::new(em, dt), v),
            UnaryOp::Sinh => math::sinh(&mut Clif::new(em, dt), v),
            UnaryOp::Cosh => math::cosh(&mut Clif::new(em, dt), v),
            UnaryOp::Asin => super::math_inv::asin(em, dt, v),
            UnaryOp::Acos => super::math_inv::acos(em, dt, v),
            UnaryOp::Atan => super::math_inv::atan(em, dt, v),
            UnaryOp::Asinh => super::math_inv::asinh(em, dt, v),
            UnaryOp::Acosh => super::math_inv::acosh(em, dt, v),
            UnaryOp::Atanh => super::math_inv::atanh(em, dt, v),
            UnaryOp::Erf if dt == DType::F32 => super::math_inv::erf_f32(em, v),
            UnaryOp::ErfInv if dt == DType::F32 => super::math_inv::erf_inv_f32(em, v),
            UnaryOp::Cbrt
            | UnaryOp::Erf
            | UnaryOp::Erfc
            | UnaryOp::ErfInv
            | UnaryOp::Lgamma
            | UnaryOp::Digamma
            | UnaryOp::BesselI0e
            | UnaryOp::BesselI1e => {
                super::libm::unary(em, op, dt, v).ok_or_else(|| unsupported(op.name(), dt))?
            }
            UnaryOp::Not | UnaryOp::PopulationCount | UnaryOp::Clz => {
                return Err(unsupported(op.name(), dt))
            }
        });
    }
    let b = &mut em.b;
    let ty = b.func.dfg.value_type(v);
    if dt == DType::Bool {
        return Ok(match op {
            UnaryOp::Not => b.ins().bxor_imm_s(v, 1),
            UnaryOp::Copy | UnaryOp::StopGradient | UnaryOp::Abs => v,
            _ => return Err(unsupported(op.name(), dt)),
        });
    }
    let signed = dt.is_signed_int();
    Ok(match op {
        UnaryOp::Neg => b.ins().ineg(v),
        UnaryOp::Abs if signed => b.ins().iabs(v),
        UnaryOp::Abs => v,
        UnaryOp::Not => b.ins().bnot(v),
        UnaryOp::PopulationCount => b.ins().popcnt(v),
        UnaryOp::Clz => b.ins().clz(v),
        UnaryOp::Square => b.ins().imul(v, v),
        UnaryOp::Copy | UnaryOp::StopGradient => v,
        UnaryOp::Sign if signed => {
            let lo = iconst(b, ty, -1);
            let hi = iconst(b, ty, 1);
            let m = b.ins().smax(v, lo);
            b.ins().smin(m, hi)
        }
        UnaryOp::Sign => {
            let nz = b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
            if ty == nz_type() {
                nz
            } else {
                b.ins().uextend(ty, nz)
            }
        }
        _ => return Err(unsupported(op.name(), dt)),
    })
}

fn minmax(em: &mut Em, op: BinaryOp, x: Operand, y: Operand) -> Result<Value, CpuError> {
    let b = &mut em.b;
    let max = op == BinaryOp::Max;
    Ok(if x.dt.is_float() {
        if max {
            b.ins().fmax(x.v, y.v)
        } else {
            b.ins().fmin(x.v, y.v)
        }
    } else if x.dt.is_signed_int() {
        if max {
            b.ins().smax(x.v, y.v)
        } else {
            b.ins().smin(x.v, y.v)
        }
    } else if max {
        b.ins().umax(x.v, y.v)
    } else {
        b.ins().umin(x.v, y.v)
    })
}

fn binary(
    em: &mut Em,
    gdt: DType,
    math: Math,
    op: BinaryOp,
    x: Operand,
    y: Operand,
) -> Result<Value, CpuError> {
    let dt = x.dt;
    // `pow` of a float by an integer converts the exponent first.
    let y = if op == BinaryOp::Pow && dt.is_float() && !y.dt.is_float() {
        Operand {
            v: convert(em, y, dt)?,
            dt,
        }
    } else {
        y
    };
    if op.is_comparison() {
        return compare(em, op, x, y);
    }
    if matches!(op, BinaryOp::Max | BinaryOp::Min) {
        return minmax(em, op, x, y);
    }
    let (a, c) = (x.v, y.v);
    if dt.is_float() && math == Math::Libm && libm_binary(op) {
        return super::libm::binary(em, op, dt, a, c).ok_or_else(|| unsupported(op.name(), dt));
    }
    if dt.is_float() {
        let b = &mut em.b;
        return Ok(match op {
            BinaryOp::Add | BinaryOp::AddAny => b.ins().fadd(a, c),
            BinaryOp::Sub => b.ins().fsub(a, c),
            BinaryOp::Mul => b.ins().fmul(a, c),
            BinaryOp::Div => b.ins().fdiv(a, c),
            BinaryOp::Atan2 => super::math_inv::atan2(em, dt, a, c),
            BinaryOp::Pow if dt == DType::F32 => super::math_inv::pow_f32(em, a, c),
            _ => super::libm::binary(em, op, dt, a, c).ok_or_else(|| unsupported(op.name(), dt))?,
        });
    }
    let _ = gdt;
    let b = &mut em.b;
    let ty = b.func.dfg.value_type(a);
    let bits = ty.bits() as i64;
    if dt == DType::Bool {
        return Ok(match op {
            BinaryOp::And | BinaryOp::Mul => b.ins().band(a, c),
            BinaryOp::Or | BinaryOp::Add | BinaryOp::AddAny => b.ins().bor(a, c),
            BinaryOp::Xor => b.ins().bxor(a, c),
            _ => return Err(unsupported(op.name(), dt)),
        });
    }
    let signed = dt.is_signed_int();
    Ok(match op {
        BinaryOp::Add | BinaryOp::AddAny => b.ins().iadd(a, c),
        BinaryOp::Sub => b.ins().isub(a, c),
        BinaryOp::Mul => b.ins().imul(a, c),
        BinaryOp::And => b.ins().band(a, c),
        BinaryOp::Or => b.ins().bor(a, c),
        BinaryOp::Xor => b.ins().bxor(a, c),
        BinaryOp::Div | BinaryOp::Rem => {
            // Division never traps: a zero divisor (and -1 for signed, whose
            // MIN / -1 overflows) is replaced by 1 and fixed up afterwards.
            let zero = b.ins().icmp_imm_s(IntCC::Equal, c, 0);
            let one = iconst(b, ty, 1);
            let m1 = b.ins().icmp_imm_s(IntCC::Equal, c, -1);
            let bad = if signed { b.ins().bor(zero, m1) } else { zero };
            let safe = b.ins().select(bad, one, c);
            if op == BinaryOp::Div {
                let q = if signed {
                    b.ins().sdiv(a, safe)
                } else {
                    b.ins().udiv(a, safe)
                };
                let q = if signed {
                    let na = b.ins().ineg(a);
                    b.ins().select(m1, na, q)
                } else {
                    q
                };
                let all = iconst(b, ty, -1);
                b.ins().select(zero, all, q)
            } else {
                let r = if signed {
                    b.ins().srem(a, safe)
                } else {
                    b.ins().urem(a, safe)
                };
                b.ins().select(zero, a, r)
            }
        }
        BinaryOp::ShiftLeft | BinaryOp::ShiftRightLogical => {
            let big = b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, c, bits);
            let s = if op == BinaryOp::ShiftLeft {
                b.ins().ishl(a, c)
            } else {
                b.ins().ushr(a, c)
            };
            let z = iconst(b, ty, 0);
            b.ins().select(big, z, s)
        }
        BinaryOp::ShiftRightArithmetic => {
            let lim = iconst(b, ty, bits - 1);
            let s = b.ins().umin(c, lim);
            b.ins().sshr(a, s)
        }
        _ => return Err(unsupported(op.name(), dt)),
    })
}

/// The total-order key of a float value (scalar or vector): its bits as a
/// signed integer, the magnitude bits flipped when the sign is set, so that
/// -NaN < -inf < .. < -0.0 < 0.0 < .. < inf < NaN compare as integers.
fn total_order_key(em: &mut Em, dt: DType, v: Value) -> Value {
    let k = em.as_int_bits(dt, v);
    let bits = if dt == DType::F64 { 64 } else { 32 };
    let s = em.b.ins().sshr_imm_u(k, bits - 1);
    let m = em.b.ins().ushr_imm_u(s, 1);
    em.b.ins().bxor(k, m)
}

fn compare(em: &mut Em, op: BinaryOp, x: Operand, y: Operand) -> Result<Value, CpuError> {
    let (a, c) = (x.v, y.v);
    if x.dt.is_float() && matches!(op, BinaryOp::LtTo | BinaryOp::LeTo) {
        let cc = if op == BinaryOp::LtTo {
            IntCC::SignedLessThan
        } else {
            IntCC::SignedLessThanOrEqual
        };
        let (ka, kc) = (total_order_key(em, x.dt, a), total_order_key(em, x.dt, c));
        return Ok(em.b.ins().icmp(cc, ka, kc));
    }
    // On integers and bools the total order is the usual one.
    let op = match op {
        BinaryOp::LtTo => BinaryOp::Lt,
        BinaryOp::LeTo => BinaryOp::Le,
        op => op,
    };
    if x.dt.is_float() {
        let cc = match op {
            BinaryOp::Eq => FloatCC::Equal,
            BinaryOp::Ne => FloatCC::NotEqual,
            BinaryOp::Lt => FloatCC::LessThan,
            BinaryOp::Le => FloatCC::LessThanOrEqual,
            BinaryOp::Gt => FloatCC::GreaterThan,
            BinaryOp::Ge => FloatCC::GreaterThanOrEqual,
            _ => return Err(unsupported(op.name(), x.dt)),
        };
        return Ok(em.fcmp(cc, a, c));
    }
    let signed = x.dt.is_signed_int();
    let cc = match (op, signed) {
        (BinaryOp::Eq, _) => IntCC::Equal,
        (BinaryOp::Ne, _) => IntCC::NotEqual,
        (BinaryOp::Lt, true) => IntCC::SignedLessThan,
        (BinaryOp::Le, true) => IntCC::SignedLessThanOrEqual,
        (BinaryOp::Gt, true) => IntCC::SignedGreaterThan,
        (BinaryOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (BinaryOp::Lt, false) => IntCC::UnsignedLessThan,
        (BinaryOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (BinaryOp::Gt, false) => IntCC::UnsignedGreaterThan,
        (BinaryOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        _ => return Err(unsupported(op.name(), x.dt)),
    };
    Ok(em.b.ins().icmp(cc, a, c))
}

/// `x ** y` by repeated squaring, in the interpreter's multiplication order.
fn integer_pow(em: &mut Em, x: Operand, y: i64) -> Result<Value, CpuError> {
    let dt = x.dt;
    if dt.is_float() {
        let mut acc: Option<Value> = None;
        let mut base = x.v;
        let mut e = y.unsigned_abs();
        while e > 0 {
            if e & 1 == 1 {
                acc = Some(match acc {
                    None => base,
                    Some(a) => em.b.ins().fmul(a, base),
                });
            }
            e >>= 1;
            if e > 0 {
                base = em.b.ins().fmul(base, base);
            }
        }
        let r = match acc {
            Some(r) => r,
            None => em.fconst(dt, 1.0),
        };
        return Ok(if y < 0 {
            let one = em.fconst(dt, 1.0);
            em.b.ins().fdiv(one, r)
        } else {
            r
        });
    }
    if dt == DType::Bool || (y < 0 && !dt.is_signed_int()) {
        return Err(unsupported("integer_pow", dt));
    }
    let b = &mut em.b;
    let ty = b.func.dfg.value_type(x.v);
    if y < 0 {
        // Only 1 and -1 have integer reciprocals.
        let one = iconst(b, ty, 1);
        let zero = iconst(b, ty, 0);
        let is1 = b.ins().icmp_imm_s(IntCC::Equal, x.v, 1);
        let ism1 = b.ins().icmp_imm_s(IntCC::Equal, x.v, -1);
        let m1val = if y % 2 == 0 { one } else { iconst(b, ty, -1) };
        let r = b.ins().select(ism1, m1val, zero);
        return Ok(b.ins().select(is1, one, r));
    }
    let mut acc = iconst(b, ty, 1);
    let mut base = x.v;
    let mut e = y as u64;
    while e > 0 {
        if e & 1 == 1 {
            acc = b.ins().imul(acc, base);
        }
        base = b.ins().imul(base, base);
        e >>= 1;
    }
    Ok(acc)
}

fn round(em: &mut Em, x: Operand, method: RoundingMethod) -> Result<Value, CpuError> {
    if !x.dt.is_float() {
        return Err(unsupported("round", x.dt));
    }
    let v = x.v;
    Ok(match method {
        RoundingMethod::ToNearestEven => em.b.ins().nearest(v),
        RoundingMethod::AwayFromZero => {
            // trunc(x) + copysign(1, x) when the dropped fraction is >= 1/2
            // (x - trunc(x) is exact).
            let t = em.b.ins().trunc(v);
            let d = em.b.ins().fsub(v, t);
            let d = em.b.ins().fabs(d);
            let half = em.fconst(x.dt, 0.5);
            let up = em.fcmp(FloatCC::GreaterThanOrEqual, d, half);
            let one = em.fconst(x.dt, 1.0);
            let s = em.copysign(x.dt, one, v);
            let r = em.b.ins().fadd(t, s);
            em.sel(up, r, t)
        }
    })
}

fn select_n(em: &mut Em, args: &[Operand]) -> Result<Value, CpuError> {
    let (which, cases) = args
        .split_first()
        .ok_or_else(|| "select_n without operands".to_string())?;
    let first = cases
        .first()
        .ok_or_else(|| "select_n without cases".to_string())?;
    if which.dt == DType::Bool {
        return match cases {
            [c0] => Ok(c0.v),
            [c0, c1] => Ok(em.sel(which.v, c1.v, c0.v)),
            _ => Err("select_n with a bool predicate takes one or two cases".into()),
        };
    }
    if em.lanes > 1 {
        return Err("select_n with an integer predicate in vector code".into());
    }
    // cases[clamp(which, 0, n - 1)]
    let mut r = first.v;
    for (k, c) in cases.iter().enumerate().skip(1) {
        let cc = if which.dt.is_signed_int() {
            IntCC::SignedGreaterThanOrEqual
        } else {
            IntCC::UnsignedGreaterThanOrEqual
        };
        let ge = em.b.ins().icmp_imm_s(cc, which.v, k as i64);
        r = em.b.ins().select(ge, c.v, r);
    }
    Ok(r)
}

/// `convert_element_type` with the interpreter's cast semantics.
fn convert(em: &mut Em, x: Operand, to: DType) -> Result<Value, CpuError> {
    let from = x.dt;
    if from == to {
        return Ok(x.v);
    }
    if em.lanes > 1 {
        return Err(format!("convert {from} to {to} in vector code").into());
    }
    let to_ty = scalar_type(to).ok_or_else(|| unsupported("convert_element_type", to))?;
    let from_ty = scalar_type(from).ok_or_else(|| unsupported("convert_element_type", from))?;
    let b = &mut em.b;
    let v = x.v;
    if to == DType::Bool {
        return Ok(if from.is_float() {
            let z = if from == DType::F64 {
                b.ins().f64const(0.0)
            } else {
                b.ins().f32const(0.0)
            };
            b.ins().fcmp(FloatCC::NotEqual, v, z)
        } else {
            b.ins().icmp_imm_s(IntCC::NotEqual, v, 0)
        });
    }
    // Booleans convert as the unsigned integers 0 and 1.
    let from = if from == DType::Bool { DType::U8 } else { from };
    Ok(match (from.is_float(), to.is_float()) {
        (true, true) => {
            if to == DType::F64 {
                b.ins().fpromote(F64, v)
            } else {
                b.ins().fdemote(F32, v)
            }
        }
        (false, true) => {
            // Widen to 64 bits first so one conversion rounds once.
            let w = widen(b, v, from_ty, from.is_signed_int());
            if from.is_signed_int() {
                b.ins().fcvt_from_sint(to_ty, w)
            } else {
                b.ins().fcvt_from_uint(to_ty, w)
            }
        }
        (true, false) => {
            // Saturate into the target range (NaN -> 0), then narrow.
            let signed = to.is_signed_int();
            let wide_ty = if to_ty.bits() == 64 { I64 } else { I32 };
            let c = if signed {
                b.ins().fcvt_to_sint_sat(wide_ty, v)
            } else {
                b.ins().fcvt_to_uint_sat(wide_ty, v)
            };
            if to_ty.bits() < 32 {
                let bits = to_ty.bits() as i64;
                let (lo, hi) = if signed {
                    (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
                } else {
                    (0, (1i64 << bits) - 1)
                };
                let lo = iconst(b, I32, lo);
                let hi = iconst(b, I32, hi);
                let c = if signed {
                    let m = b.ins().smax(c, lo);
                    b.ins().smin(m, hi)
                } else {
                    b.ins().umin(c, hi)
                };
                let _ = lo;
                b.ins().ireduce(to_ty, c)
            } else {
                c
            }
        }
        (false, false) => {
            let (fb, tb) = (from_ty.bits(), to_ty.bits());
            if fb == tb {
                v
            } else if fb > tb {
                b.ins().ireduce(to_ty, v)
            } else if from.is_signed_int() {
                b.ins().sextend(to_ty, v)
            } else {
                b.ins().uextend(to_ty, v)
            }
        }
    })
}

fn widen(
    b: &mut cranelift_frontend::FunctionBuilder<'_>,
    v: Value,
    ty: cranelift_codegen::ir::Type,
    signed: bool,
) -> Value {
    if ty == I64 {
        v
    } else if signed {
        b.ins().sextend(I64, v)
    } else {
        b.ins().uextend(I64, v)
    }
}

/// The type of a scalar comparison result.
fn nz_type() -> cranelift_codegen::ir::Type {
    cranelift_codegen::ir::types::I8
}
