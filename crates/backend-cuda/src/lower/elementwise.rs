//! The elementwise family: each primitive as a scalar KIR expression of its
//! operands' values at one index ([`scalar`]), which the fused loop kernels
//! ([`super::fused`]) evaluate per element; an elementwise equation the
//! fusion planner leaves alone ([`lower`]) is a loop kernel of its own.
//!
//! Semantics follow the reference interpreter (XLA's CPU semantics):
//! integer division by zero gives -1 (unsigned: all ones) and remainder by
//! zero the dividend; shifts by the width or more give 0 (arithmetic right
//! shifts the sign); `max`/`min` propagate NaN; `select_n` clamps its
//! index; 16-bit floats compute in `f32` and round once per operation.
//!
//! Invariant: values enter and leave [`scalar`] in their compute dtype
//! (`kernel::compute`); the match over the family and over each op enum is
//! exhaustive.

use super::kernel::{compute, round_to};
use super::plan::Step;
use super::{fused, unsupported, Ctx, Env};
use crate::kir::{BinOp, Expr, KernelBuilder, MathFn, UnOp};
use jaxon_ir::primitive::{
    BinaryOp, BitcastConvertTypeParams, ConvertElementTypeParams, Elementwise, IntegerPowParams,
    ReducePrecisionParams, RoundParams, RoundingMethod, UnaryOp,
};
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

/// Lowers an elementwise equation that is not part of a fused group.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &Elementwise,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    match p {
        Elementwise::Complex | Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_) => {
            super::unsupported::complex_elementwise(p.name())
        }
        Elementwise::ReducePrecision(_)
        | Elementwise::Unary(_)
        | Elementwise::Binary(_)
        | Elementwise::IntegerPow(_)
        | Elementwise::Round(_)
        | Elementwise::ConvertElementType(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::SelectN
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta => fused::single(ctx, jaxpr, eqn, env, steps),
    }
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

fn math2(f: MathFn, a: Expr, b: Expr) -> Expr {
    Expr::Math(f, vec![a, b])
}

fn bad_dtype(name: &str, d: DType) -> IrError {
    unsupported(name, format!("dtype {d} is not supported"))
}

/// The value of elementwise primitive `e` applied to `xs` (compute-dtype
/// values of operands of storage dtypes `ins`), producing `out`.
pub(crate) fn scalar(
    k: &mut KernelBuilder,
    e: &Elementwise,
    _out: DType,
    ins: &[DType],
    xs: Vec<Expr>,
) -> Result<Expr, IrError> {
    let name = e.name();
    let arity_err = || IrError::Invalid(format!("{name}: wrong number of operands"));
    let d = *ins.first().ok_or_else(arity_err)?;
    if xs.len() != ins.len() {
        return Err(arity_err());
    }
    let x = xs[0].clone();
    match e {
        Elementwise::Complex | Elementwise::Real | Elementwise::Imag | Elementwise::Conj(_) => {
            Err(unsupported(name, "complex numbers are not lowered yet"))
        }
        Elementwise::Unary(op) => match super::special::unary(k, *op, d, &x) {
            Some(r) => r,
            None => unary(*op, d, x),
        },
        Elementwise::Binary(op) => {
            let y = xs.get(1).cloned().ok_or_else(arity_err)?;
            let dy = ins[1];
            match super::special::binary(k, *op, d, &x, &y) {
                Some(r) => r,
                None => binary(k, *op, d, dy, x, y),
            }
        }
        Elementwise::IntegerPow(IntegerPowParams { y }) => integer_pow(k, d, x, *y),
        Elementwise::Round(RoundParams { rounding_method }) => {
            if !d.is_float() {
                return Err(bad_dtype(name, d));
            }
            let f = match rounding_method {
                RoundingMethod::AwayFromZero => MathFn::RoundAway,
                RoundingMethod::ToNearestEven => MathFn::RoundEven,
            };
            Ok(round_to(d, x.math(f)))
        }
        Elementwise::ReducePrecision(ReducePrecisionParams {
            exponent_bits,
            mantissa_bits,
        }) => {
            if !d.is_float() {
                return Err(bad_dtype(name, d));
            }
            Ok(reduce_precision(k, d, x, *exponent_bits, *mantissa_bits))
        }
        Elementwise::ConvertElementType(ConvertElementTypeParams { new_dtype, .. }) => {
            Ok(convert(d, *new_dtype, x))
        }
        Elementwise::BitcastConvertType(BitcastConvertTypeParams { new_dtype }) => {
            let to = *new_dtype;
            if to.size_bytes() != d.size_bytes() || to.is_bool() || d.is_bool() {
                return Err(unsupported(
                    name,
                    format!("bitcast from {d} to {to} changes the width; not lowered yet"),
                ));
            }
            let stored = if compute(d) != d { x.cast(d) } else { x };
            let bits = stored.bitcast(to);
            Ok(if compute(to) != to {
                bits.cast(compute(to))
            } else {
                bits
            })
        }
        Elementwise::SelectN => {
            let cases = &xs[1..];
            let last = cases.len().checked_sub(1).ok_or_else(arity_err)?;
            if d.is_bool() {
                return Ok(match cases {
                    [c0] => c0.clone(),
                    [c0, c1] => Expr::select(x, c1.clone(), c0.clone()),
                    _ => return Err(IrError::ty(name, "a bool predicate takes two cases")),
                });
            }
            let mut r = cases[last].clone();
            for j in (0..last).rev() {
                let hit = if j == 0 {
                    x.clone().le(Expr::int(d, 0))
                } else {
                    x.clone().eq(Expr::int(d, j as i64))
                };
                r = Expr::select(hit, cases[j].clone(), r);
            }
            Ok(r)
        }
        Elementwise::Clamp => {
            let (lo, v, hi) = match xs.as_slice() {
                [lo, v, hi] => (lo.clone(), v.clone(), hi.clone()),
                _ => return Err(arity_err()),
            };
            let dv = *ins.get(1).ok_or_else(arity_err)?;
            if dv.is_bool() {
                return Err(bad_dtype(name, dv));
            }
            Ok(v.max(lo).min(hi))
        }
        Elementwise::RegularizedIncompleteBeta => super::special::betainc_of(k, d, &xs),
    }
}

/// XLA's `reduce_precision` of the compute-dtype float `x` (of storage
/// dtype `d`) to `exp` exponent and `mant` mantissa bits, on the bits of
/// its compute dtype as the interpreter does (f16/bf16 through f32, then
/// rounded back): round the mantissa to nearest even, then flush
/// exponents out of range to ±inf or ±0. NaN stays NaN.
fn reduce_precision(k: &mut KernelBuilder, d: DType, x: Expr, exp: u32, mant: u32) -> Expr {
    let c = compute(d);
    let (ut, nbits, src_exp, src_mant) = if c == DType::F64 {
        (DType::U64, 64u32, 11u32, 52u32)
    } else {
        (DType::U32, 32, 8, 23)
    };
    let u = |v: u64| Expr::Const(crate::kir::Const::int(ut, v as i64));
    let xv = k.let_("rp_x", c, x);
    let bits = k.let_("rp_bits", ut, Expr::var(xv).bitcast(ut));
    if mant < src_mant {
        let shift = src_mant - mant;
        let last_bit_mask = 1u64 << shift;
        let base_bias = (last_bit_mask >> 1) - 1;
        let last_bit = (Expr::var(bits) & u(last_bit_mask)) >> u(u64::from(shift));
        let trunc_mask = !(last_bit_mask - 1);
        let rounded = (Expr::var(bits) + last_bit + u(base_bias)) & u(trunc_mask);
        k.assign(bits, rounded);
    }
    if exp < src_exp {
        let sign_mask = 1u64 << (nbits - 1);
        let exp_mask = ((1u64 << src_exp) - 1) << src_mant;
        let bias = (1i64 << (src_exp - 1)) - 1;
        let reduced_bias = (1i64 << (exp.max(1) - 1)) - 1;
        let max_exp = (bias + reduced_bias) as u64;
        let min_exp = (bias - reduced_bias) as u64;
        let x_exp = k.let_("rp_exp", ut, Expr::var(bits) & u(exp_mask));
        let signed_zero = k.let_("rp_sign", ut, Expr::var(bits) & u(sign_mask));
        let flushed = Expr::select(
            Expr::var(x_exp).gt(u(max_exp << src_mant)),
            Expr::var(signed_zero) | u(exp_mask),
            Expr::select(
                Expr::var(x_exp).le(u(min_exp << src_mant)),
                Expr::var(signed_zero),
                Expr::var(bits),
            ),
        );
        k.assign(bits, flushed);
    }
    let r = Expr::select(
        Expr::var(xv).unary(UnOp::IsNan),
        Expr::var(xv),
        Expr::var(bits).bitcast(c),
    );
    round_to(d, r)
}

/// A value conversion between storage dtypes `from` and `to`.
fn convert(from: DType, to: DType, x: Expr) -> Expr {
    let (cf, ct) = (compute(from), compute(to));
    if to == from || (cf == ct && compute(to) == to) {
        return x;
    }
    match to {
        // Round straight from the source (no double rounding through f32).
        DType::F16 | DType::BF16 => x.cast(to).cast(DType::F32),
        _ => x.cast(to),
    }
}

fn unary(op: UnaryOp, d: DType, x: Expr) -> Result<Expr, IrError> {
    use UnaryOp as U;
    let name = op.name();
    if d.is_float() {
        let c = compute(d);
        let one = Expr::constant(c, 1.0);
        let r = match op {
            U::Lgamma | U::Digamma | U::BesselI0e | U::BesselI1e => {
                return Err(super::special::misrouted(name))
            }
            U::Neg => -x,
            U::Sign => Expr::select(
                x.clone()
                    .unary(UnOp::IsNan)
                    .or(x.clone().eq(Expr::constant(c, 0.0))),
                x.clone(),
                math2(MathFn::CopySign, one, x),
            ),
            U::Floor => x.math(MathFn::Floor),
            U::Ceil => x.math(MathFn::Ceil),
            U::IsFinite => {
                return Ok(x
                    .clone()
                    .unary(UnOp::IsNan)
                    .or(x.unary(UnOp::IsInf))
                    .unary(UnOp::Not))
            }
            U::Exp => x.math(MathFn::Exp),
            U::Exp2 => x.math(MathFn::Exp2),
            U::Log => x.math(MathFn::Log),
            U::Log1p => x.math(MathFn::Log1p),
            U::Expm1 => x.math(MathFn::Expm1),
            U::Tanh => x.math(MathFn::Tanh),
            U::Logistic => one.clone() / (one + (-x).math(MathFn::Exp)),
            U::Sin => x.math(MathFn::Sin),
            U::Cos => x.math(MathFn::Cos),
            U::Tan => x.math(MathFn::Tan),
            U::Asin => x.math(MathFn::Asin),
            U::Acos => x.math(MathFn::Acos),
            U::Atan => x.math(MathFn::Atan),
            U::Sinh => x.math(MathFn::Sinh),
            U::Cosh => x.math(MathFn::Cosh),
            U::Asinh => x.math(MathFn::Asinh),
            U::Acosh => x.math(MathFn::Acosh),
            U::Atanh => x.math(MathFn::Atanh),
            U::Sqrt => x.math(MathFn::Sqrt),
            U::Rsqrt => one / x.math(MathFn::Sqrt),
            U::Cbrt => x.math(MathFn::Cbrt),
            U::Abs => x.unary(UnOp::Abs),
            U::Erf => x.math(MathFn::Erf),
            U::Erfc => x.math(MathFn::Erfc),
            U::ErfInv => x.math(MathFn::ErfInv),
            U::Square => x.clone() * x,
            U::Copy | U::StopGradient => x,
            U::Not | U::PopulationCount | U::Clz => return Err(bad_dtype(name, d)),
        };
        return Ok(round_to(d, r));
    }
    if d.is_bool() {
        return match op {
            U::Not => Ok(x.unary(UnOp::Not)),
            U::Copy | U::StopGradient | U::Abs => Ok(x),
            _ => Err(bad_dtype(name, d)),
        };
    }
    let zero = Expr::int(d, 0);
    let signed = d.is_signed_int();
    match op {
        U::Neg => Ok(zero - x),
        U::Sign if signed => Ok(Expr::select(
            x.clone().gt(zero.clone()),
            Expr::int(d, 1),
            Expr::select(x.lt(zero.clone()), Expr::int(d, -1), zero),
        )),
        U::Sign => Ok(x.ne(zero).cast(d)),
        U::Abs if signed => Ok(x.unary(UnOp::Abs)),
        U::Abs | U::Copy | U::StopGradient => Ok(x),
        U::Not => Ok(x.unary(UnOp::Not)),
        U::PopulationCount => Ok(x.unary(UnOp::Popc).cast(d)),
        U::Clz => Ok(x.unary(UnOp::Clz).cast(d)),
        U::Square => Ok(x.clone() * x),
        _ => Err(bad_dtype(name, d)),
    }
}

/// The unsigned dtype of the same width as `d`.
fn unsigned_of(d: DType) -> DType {
    match d.bits() {
        8 => DType::U8,
        16 => DType::U16,
        32 => DType::U32,
        _ => DType::U64,
    }
}

/// The signed dtype of the same width as `d`.
fn signed_of(d: DType) -> DType {
    match d.bits() {
        8 => DType::I8,
        16 => DType::I16,
        32 => DType::I32,
        _ => DType::I64,
    }
}

/// The total-order key of a float `x` of dtype `d` (in its compute dtype):
/// its bits as a signed integer with the magnitude bits flipped when the
/// sign is set, so -NaN < -inf < .. < -0.0 < 0.0 < .. < inf < NaN compare
/// as integers.
fn total_order_key(d: DType, x: Expr) -> Expr {
    let c = compute(d);
    let (s, u) = (signed_of(c), unsigned_of(c));
    let bits = i64::from(c.bits());
    let xi = x.bitcast(s);
    let sign = (xi.clone() >> Expr::int(s, bits - 1)).bitcast(u);
    xi ^ (sign >> Expr::int(u, 1)).bitcast(s)
}

/// The KIR comparison of a comparison op (`lt_to`/`le_to` compare the
/// operands' total-order keys), `None` for the other ops.
fn comparison(op: BinaryOp) -> Option<BinOp> {
    use BinaryOp as B;
    match op {
        B::Eq => Some(BinOp::Eq),
        B::Ne => Some(BinOp::Ne),
        B::Lt | B::LtTo => Some(BinOp::Lt),
        B::Le | B::LeTo => Some(BinOp::Le),
        B::Gt => Some(BinOp::Gt),
        B::Ge => Some(BinOp::Ge),
        B::Add
        | B::Sub
        | B::Mul
        | B::Div
        | B::Rem
        | B::Pow
        | B::Max
        | B::Min
        | B::Atan2
        | B::Nextafter
        | B::And
        | B::Or
        | B::Xor
        | B::ShiftLeft
        | B::ShiftRightArithmetic
        | B::ShiftRightLogical
        | B::AddAny
        | B::Igamma
        | B::Igammac
        | B::IgammaGradA
        | B::RandomGammaGrad
        | B::Polygamma
        | B::Zeta => None,
    }
}

fn binary(
    k: &mut KernelBuilder,
    op: BinaryOp,
    d: DType,
    dy: DType,
    x: Expr,
    y: Expr,
) -> Result<Expr, IrError> {
    use BinaryOp as B;
    let name = op.name();
    if let Some(o) = comparison(op) {
        let (x, y) = if d.is_bool() {
            (x.cast(DType::U8), y.cast(DType::U8))
        } else if d.is_float() && matches!(op, B::LtTo | B::LeTo) {
            (total_order_key(d, x), total_order_key(d, y))
        } else {
            (x, y)
        };
        return Ok(bin(o, x, y));
    }
    if d.is_float() {
        let c = compute(d);
        let r = match op {
            B::Add | B::AddAny => x + y,
            B::Sub => x - y,
            B::Mul => x * y,
            B::Div => x / y,
            B::Rem => x % y,
            B::Pow => {
                let y = if dy.is_float() { y } else { y.cast(c) };
                math2(MathFn::Pow, x, y)
            }
            B::Max => x.max(y),
            B::Min => x.min(y),
            B::Atan2 => math2(MathFn::Atan2, x, y),
            B::Nextafter => math2(MathFn::NextAfter, x, y),
            B::Igamma
            | B::Igammac
            | B::IgammaGradA
            | B::RandomGammaGrad
            | B::Polygamma
            | B::Zeta => return Err(super::special::misrouted(name)),
            B::And
            | B::Or
            | B::Xor
            | B::ShiftLeft
            | B::ShiftRightArithmetic
            | B::ShiftRightLogical
            | B::Eq
            | B::Ne
            | B::Lt
            | B::Le
            | B::Gt
            | B::Ge
            | B::LtTo
            | B::LeTo => return Err(bad_dtype(name, d)),
        };
        return Ok(round_to(d, r));
    }
    if d.is_bool() {
        return match op {
            B::And | B::Min | B::Mul => Ok(x.and(y)),
            B::Or | B::Max | B::Add | B::AddAny => Ok(x.or(y)),
            B::Xor => Ok(x ^ y),
            _ => Err(bad_dtype(name, d)),
        };
    }
    let signed = d.is_signed_int();
    let bits = i64::from(d.bits());
    let zero = Expr::int(d, 0);
    let one = Expr::int(d, 1);
    let y_is_zero = y.clone().eq(zero.clone());
    let safe_y = Expr::select(y_is_zero.clone(), one.clone(), y.clone());
    // The shift count as an unsigned value of the operand width.
    let uy = if signed {
        y.clone().bitcast(unsigned_of(d))
    } else {
        y.clone()
    };
    let too_far = uy.clone().ge(Expr::int(unsigned_of(d), bits));
    Ok(match op {
        B::Add | B::AddAny => x + y,
        B::Sub => x - y,
        B::Mul => x * y,
        B::Div => Expr::select(y_is_zero, Expr::int(d, -1), x / safe_y),
        B::Rem => Expr::select(y_is_zero, x.clone(), x % safe_y),
        B::Pow => return int_pow_dynamic(k, d, x, y),
        B::Max => x.max(y),
        B::Min => x.min(y),
        B::And => x.and(y),
        B::Or => x.or(y),
        B::Xor => x ^ y,
        B::ShiftLeft => Expr::select(too_far, zero, x << y),
        B::ShiftRightArithmetic => {
            let s = signed_of(d);
            let (xs, ys) = if signed {
                (x, y)
            } else {
                (x.bitcast(s), y.bitcast(s))
            };
            let r = Expr::select(too_far, xs.clone() >> Expr::int(s, bits - 1), xs >> ys);
            if signed {
                r
            } else {
                r.bitcast(d)
            }
        }
        B::ShiftRightLogical => {
            let u = unsigned_of(d);
            let (xu, yu) = if signed {
                (x.bitcast(u), y.bitcast(u))
            } else {
                (x, y)
            };
            let r = Expr::select(too_far, Expr::int(u, 0), xu >> yu);
            if signed {
                r.bitcast(d)
            } else {
                r
            }
        }
        B::Atan2
        | B::Nextafter
        | B::Igamma
        | B::Igammac
        | B::IgammaGradA
        | B::RandomGammaGrad
        | B::Polygamma
        | B::Zeta
        | B::Eq
        | B::Ne
        | B::Lt
        | B::Le
        | B::Gt
        | B::Ge
        | B::LtTo
        | B::LeTo => return Err(bad_dtype(name, d)),
    })
}

/// `x ** y` for integers with `y` a runtime value: square-and-multiply in
/// a loop; a negative `y` gives `1` for `x == 1`, `±1` for `x == -1`, else 0.
fn int_pow_dynamic(k: &mut KernelBuilder, d: DType, x: Expr, y: Expr) -> Result<Expr, IrError> {
    let acc = k.let_("acc", d, Expr::int(d, 1));
    let base = k.let_("base", d, x.clone());
    let e = k.let_("e", d, y.clone());
    k.while_(Expr::var(e).gt(Expr::int(d, 0)), |k| {
        k.if_((Expr::var(e) & Expr::int(d, 1)).eq(Expr::int(d, 1)), |k| {
            k.assign(acc, Expr::var(acc) * Expr::var(base))
        });
        k.assign(base, Expr::var(base) * Expr::var(base));
        k.assign(e, Expr::var(e) >> Expr::int(d, 1));
    });
    if !d.is_signed_int() {
        return Ok(Expr::var(acc));
    }
    let odd = (y.clone() & Expr::int(d, 1)).eq(Expr::int(d, 1));
    let neg = Expr::select(
        x.clone().eq(Expr::int(d, 1)),
        Expr::int(d, 1),
        Expr::select(
            x.eq(Expr::int(d, -1)),
            Expr::select(odd, Expr::int(d, -1), Expr::int(d, 1)),
            Expr::int(d, 0),
        ),
    );
    Ok(Expr::select(y.lt(Expr::int(d, 0)), neg, Expr::var(acc)))
}

/// `integer_pow[y]`: square-and-multiply unrolled (JAX's order), `1/x^|y|`
/// for floats with negative `y`.
fn integer_pow(k: &mut KernelBuilder, d: DType, x: Expr, y: i64) -> Result<Expr, IrError> {
    if d.is_bool() || (d.is_unsigned_int() && y < 0) {
        return Err(bad_dtype("integer_pow", d));
    }
    let c = compute(d);
    if !d.is_float() && y < 0 {
        let r = if y % 2 == 0 { 1 } else { -1 };
        return Ok(Expr::select(
            x.clone().eq(Expr::int(d, 1)),
            Expr::int(d, 1),
            Expr::select(x.eq(Expr::int(d, -1)), Expr::int(d, r), Expr::int(d, 0)),
        ));
    }
    let mut acc: Option<Expr> = None;
    let mut b = k.let_("pb", c, x);
    let mut e = y.unsigned_abs();
    while e > 0 {
        if e & 1 == 1 {
            let next = match acc {
                None => Expr::var(b),
                Some(a) => a * Expr::var(b),
            };
            acc = Some(Expr::var(k.let_("pa", c, next)));
        }
        e >>= 1;
        if e > 0 {
            b = k.let_("pb", c, Expr::var(b) * Expr::var(b));
        }
    }
    let one = if d.is_float() {
        Expr::constant(c, 1.0)
    } else {
        Expr::int(c, 1)
    };
    let r = acc.unwrap_or_else(|| one.clone());
    let r = if y < 0 { one / r } else { r };
    Ok(round_to(d, r))
}
