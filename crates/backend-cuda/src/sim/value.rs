//! Scalar semantics of the simulator: unary and binary operators, casts,
//! bitcasts and the poison values, on values held as `u64` bits.
//!
//! Invariant: every value is in [`Const`](crate::kir::Const)'s encoding
//! (signed integers sign-extended to 64 bits, unsigned integers and floats
//! zero-extended, `bool` as 0 or 1), every function here takes and returns
//! values in that encoding, and none of them panics on any input.
//!
//! The rules are those of the `kir` module docs: integers wrap at their
//! width, division and remainder truncate toward zero (division by zero is
//! reported as `None`; `MIN / -1` wraps to `MIN`), shift counts are taken
//! modulo the width, float `Min`/`Max` propagate NaN, casts between floats
//! round to nearest even, float→int casts truncate toward zero and saturate
//! (NaN → 0), int→float casts round to nearest even, casts to `bool` are
//! `!= 0`, and int→int casts wrap. `f16`/`bf16` never compute in a verified
//! kernel; if asked, they compute in `f32` and round back.

use crate::kir::f32_round_odd;
use crate::kir::{BinOp, UnOp};
use half::{bf16, f16};
use jaxon_ir::DType;

/// How a dtype computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Num {
    /// `bool`, 0 or 1.
    Bool,
    /// A signed integer of this many bits.
    Signed(u32),
    /// An unsigned integer of this many bits.
    Unsigned(u32),
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// The computing class of a dtype.
pub(crate) fn num(d: DType) -> Num {
    match d {
        DType::Bool => Num::Bool,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => Num::Signed(d.bits()),
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => Num::Unsigned(d.bits()),
        DType::F16 => Num::F16,
        DType::BF16 => Num::BF16,
        DType::F32 => Num::F32,
        // Complex dtypes never lower (`lower::unsupported::complex`).
        DType::F64 | DType::C64 | DType::C128 | DType::KeyFry => Num::F64,
    }
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The encoding of `raw`, the low `d.bits()` bits of a value of `d` (as
/// read from memory, little-endian).
pub(crate) fn canon(d: DType, raw: u64) -> u64 {
    match num(d) {
        Num::Bool => u64::from(raw & 0xff != 0),
        Num::Signed(w) => {
            let s = 64 - w;
            (((raw << s) as i64) >> s) as u64
        }
        Num::Unsigned(w) => raw & mask(w),
        Num::F16 | Num::BF16 => raw & 0xffff,
        Num::F32 => raw & 0xffff_ffff,
        Num::F64 => raw,
    }
}

/// The low `d.bits()` bits of an encoded value (what memory holds).
pub(crate) fn raw(d: DType, bits: u64) -> u64 {
    bits & mask(d.bits())
}

/// The value as an `f64` (exact but for 64-bit integers beyond 2^53).
pub(crate) fn to_f64(d: DType, bits: u64) -> f64 {
    match num(d) {
        Num::Bool => (bits != 0) as u8 as f64,
        Num::Signed(_) => bits as i64 as f64,
        Num::Unsigned(_) => bits as f64,
        Num::F16 => f16::from_bits(bits as u16).to_f64(),
        Num::BF16 => bf16::from_bits(bits as u16).to_f64(),
        Num::F32 => f32::from_bits(bits as u32) as f64,
        Num::F64 => f64::from_bits(bits),
    }
}

/// An integer or `bool` value, exactly; `None` for floats.
pub(crate) fn to_int(d: DType, bits: u64) -> Option<i128> {
    match num(d) {
        Num::Bool | Num::Unsigned(_) => Some(i128::from(bits)),
        Num::Signed(_) => Some(i128::from(bits as i64)),
        Num::F16 | Num::BF16 | Num::F32 | Num::F64 => None,
    }
}

/// The poison a never-written shared element or never-assigned variable
/// holds: a quiet NaN with a visible payload for floats, every byte `0xAB`
/// for integers, and `true` for `bool`.
pub(crate) fn poison(d: DType) -> u64 {
    match num(d) {
        Num::Bool => 1,
        Num::Signed(_) | Num::Unsigned(_) => canon(d, 0xABAB_ABAB_ABAB_ABAB),
        Num::F16 => 0x7EAB,
        Num::BF16 => 0x7FAB,
        Num::F32 => 0x7FC0_ABAB,
        Num::F64 => 0x7FF8_ABAB_ABAB_ABAB,
    }
}

/// A unary operator (the result dtype is the operand's, `bool` for the
/// predicates, `i32` for `Clz`/`Popc`).
pub(crate) fn unary(op: UnOp, d: DType, a: u64) -> u64 {
    let n = num(d);
    let sign = 1u64 << (d.bits() - 1);
    match op {
        UnOp::Neg => match n {
            Num::Bool => a,
            Num::Signed(_) | Num::Unsigned(_) => canon(d, a.wrapping_neg()),
            Num::F16 | Num::BF16 | Num::F32 | Num::F64 => a ^ sign,
        },
        UnOp::Not => match n {
            Num::Bool => a ^ 1,
            Num::Signed(_) | Num::Unsigned(_) => canon(d, !a),
            Num::F16 | Num::BF16 | Num::F32 | Num::F64 => raw(d, !a),
        },
        UnOp::Abs => match n {
            Num::Bool | Num::Unsigned(_) => a,
            Num::Signed(_) => canon(d, (a as i64).wrapping_abs() as u64),
            Num::F16 | Num::BF16 | Num::F32 | Num::F64 => a & !sign,
        },
        UnOp::IsNan => u64::from(d.is_float() && to_f64(d, a).is_nan()),
        UnOp::IsInf => u64::from(d.is_float() && to_f64(d, a).is_infinite()),
        UnOp::Clz => u64::from(raw(d, a).leading_zeros() - (64 - d.bits())),
        UnOp::Popc => u64::from(raw(d, a).count_ones()),
    }
}

/// A binary operator on two operands of `d`; `None` for an integer
/// division or remainder by zero.
pub(crate) fn binary(op: BinOp, d: DType, a: u64, b: u64) -> Option<u64> {
    match num(d) {
        Num::Bool => int_binary(op, d, false, 8, a, b),
        Num::Signed(w) => int_binary(op, d, true, w, a, b),
        Num::Unsigned(w) => int_binary(op, d, false, w, a, b),
        Num::F32 => Some(f32_binary(op, a, b)),
        Num::F64 => Some(f64_binary(op, a, b)),
        Num::F16 | Num::BF16 => {
            let f = |x: u64| u64::from((to_f64(d, x) as f32).to_bits());
            let r = f32_binary(op, f(a), f(b));
            Some(if op.is_comparison() {
                r
            } else {
                cast(DType::F32, d, r)
            })
        }
    }
}

fn int_binary(op: BinOp, d: DType, signed: bool, w: u32, a: u64, b: u64) -> Option<u64> {
    let (sa, sb) = (a as i64, b as i64);
    let sh = (b & u64::from(w - 1)) as u32;
    let cmp = |s: bool, u: bool| Some(u64::from(if signed { s } else { u }));
    let r = match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::Div | BinOp::Rem if b == 0 => return None,
        BinOp::Div if signed => sa.wrapping_div(sb) as u64,
        BinOp::Div => a / b,
        BinOp::Rem if signed => sa.wrapping_rem(sb) as u64,
        BinOp::Rem => a % b,
        BinOp::Min if signed => sa.min(sb) as u64,
        BinOp::Min => a.min(b),
        BinOp::Max if signed => sa.max(sb) as u64,
        BinOp::Max => a.max(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a << sh,
        BinOp::Shr if signed => (sa >> sh) as u64,
        BinOp::Shr => a >> sh,
        BinOp::Eq => return Some(u64::from(a == b)),
        BinOp::Ne => return Some(u64::from(a != b)),
        BinOp::Lt => return cmp(sa < sb, a < b),
        BinOp::Le => return cmp(sa <= sb, a <= b),
        BinOp::Gt => return cmp(sa > sb, a > b),
        BinOp::Ge => return cmp(sa >= sb, a >= b),
    };
    Some(canon(d, r))
}

/// One rule table for both float widths.
macro_rules! float_binary {
    ($name:ident, $t:ty, $bits:ty) => {
        fn $name(op: BinOp, a: u64, b: u64) -> u64 {
            let (x, y) = (<$t>::from_bits(a as $bits), <$t>::from_bits(b as $bits));
            let f = |v: $t| u64::from(v.to_bits());
            let c = |v: bool| u64::from(v);
            let (xb, yb) = (x.to_bits(), y.to_bits());
            match op {
                BinOp::Add => f(x + y),
                BinOp::Sub => f(x - y),
                BinOp::Mul => f(x * y),
                BinOp::Div => f(x / y),
                BinOp::Rem => f(x % y),
                // NaN if either is; of two equal values (±0) the negative one.
                BinOp::Min if x.is_nan() || y.is_nan() => f(<$t>::NAN),
                BinOp::Min if x == y => f(<$t>::from_bits(xb | yb)),
                BinOp::Min => f(if x < y { x } else { y }),
                BinOp::Max if x.is_nan() || y.is_nan() => f(<$t>::NAN),
                BinOp::Max if x == y => f(<$t>::from_bits(xb & yb)),
                BinOp::Max => f(if x > y { x } else { y }),
                // Rejected by the verifier; bitwise on the bits.
                BinOp::And => u64::from(xb & yb),
                BinOp::Or => u64::from(xb | yb),
                BinOp::Xor => u64::from(xb ^ yb),
                BinOp::Shl | BinOp::Shr => a,
                BinOp::Eq => c(x == y),
                BinOp::Ne => c(x != y),
                BinOp::Lt => c(x < y),
                BinOp::Le => c(x <= y),
                BinOp::Gt => c(x > y),
                BinOp::Ge => c(x >= y),
            }
        }
    };
}
float_binary!(f32_binary, f32, u32);
float_binary!(f64_binary, f64, u64);

/// An integer rounded to `f32` with round-to-odd (see [`f32_round_odd`]).
fn f32_round_odd_int(v: i128) -> f32 {
    let mag = v.unsigned_abs();
    let r = if mag < (1 << 24) {
        mag as f32
    } else {
        let shift = 128 - mag.leading_zeros() - 24;
        let sticky = u128::from(mag & ((1u128 << shift) - 1) != 0);
        let m = ((mag >> shift) | sticky) as f32;
        m * (2f32).powi(shift as i32)
    };
    if v < 0 {
        -r
    } else {
        r
    }
}

/// A float value (as `f64`, exact) converted to `to`.
fn float_to(x: f64, to: DType) -> u64 {
    match to {
        DType::Bool => u64::from(x != 0.0),
        // `as` truncates toward zero, saturates, and takes NaN to 0.
        DType::I8 => x as i8 as i64 as u64,
        DType::I16 => x as i16 as i64 as u64,
        DType::I32 => x as i32 as i64 as u64,
        DType::I64 => x as i64 as u64,
        DType::U8 => u64::from(x as u8),
        DType::U16 => u64::from(x as u16),
        DType::U32 => u64::from(x as u32),
        DType::U64 => x as u64,
        DType::F16 => u64::from(f16::from_f32(f32_round_odd(x)).to_bits()),
        DType::BF16 => u64::from(bf16::from_f32(f32_round_odd(x)).to_bits()),
        DType::F32 => u64::from((x as f32).to_bits()),
        DType::F64 | DType::C64 | DType::C128 | DType::KeyFry => x.to_bits(),
    }
}

/// An integer value converted to `to`.
fn int_to(v: i128, to: DType) -> u64 {
    match to {
        DType::Bool => u64::from(v != 0),
        DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64 => canon(to, v as u64),
        // Exact below 2^24; every larger integer is past f16's range.
        DType::F16 => u64::from(f16::from_f32(v as f32).to_bits()),
        DType::BF16 => u64::from(bf16::from_f32(f32_round_odd_int(v)).to_bits()),
        DType::F32 => u64::from((v as f32).to_bits()),
        DType::F64 | DType::C64 | DType::C128 | DType::KeyFry => (v as f64).to_bits(),
    }
}

/// `Expr::Cast`: a value conversion from `from` to `to`.
pub(crate) fn cast(from: DType, to: DType, a: u64) -> u64 {
    match to_int(from, a) {
        Some(v) => int_to(v, to),
        None => float_to(to_f64(from, a), to),
    }
}

/// `Expr::Bitcast`: the same bits read as `to` (the widths are equal).
pub(crate) fn bitcast(from: DType, to: DType, a: u64) -> u64 {
    canon(to, raw(from, a))
}
