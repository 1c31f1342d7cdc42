//! Printing KIR expressions as C expressions of the exact `kir_*` type of
//! their dtype: constants bit-exact, integer arithmetic wrapping at the
//! operand width without signed-overflow UB, casts as the `kir` module docs
//! define them.
//!
//! Invariant: every printed expression is fully parenthesised and has the C
//! type `c_type(dtype)` (narrow integer results are cast back), so it can be
//! dropped into any context.

use super::prelude::c_type;
use super::Printer;
use crate::kir::{BinOp, Const, Expr, MathFn, Special, UnOp};
use jaxon_ir::DType;

/// The unsigned type arithmetic on `d` is done in: at least 32 bits.
fn wide_unsigned(d: DType) -> &'static str {
    if d.size_bytes() == 8 {
        "kir_u64"
    } else {
        "kir_u32"
    }
}

/// The unsigned type of exactly `d`'s width.
fn same_width_unsigned(d: DType) -> &'static str {
    match d.size_bytes() {
        1 => "kir_u8",
        2 => "kir_u16",
        4 => "kir_u32",
        _ => "kir_u64",
    }
}

/// A constant, bit-exact (floats via their bits, so NaN, inf and -0
/// round-trip).
pub fn constant(c: Const) -> String {
    let t = c_type(c.dtype);
    match c.dtype {
        DType::Bool => format!("(({t}){})", u8::from(c.bits != 0)),
        DType::I8 | DType::I16 | DType::I32 => format!("(({t}){})", c.bits as i64),
        DType::I64 => {
            let v = c.bits as i64;
            if v == i64::MIN {
                format!("(({t})0x8000000000000000ull)")
            } else {
                format!("(({t}){v}ll)")
            }
        }
        DType::U8 | DType::U16 => format!("(({t}){}u)", c.bits),
        DType::U32 => format!("(({t}){}u)", c.bits as u32),
        DType::U64 => format!("(({t}){}ull)", c.bits),
        DType::F16 | DType::BF16 => format!("(({t})0x{:04x}u)", c.bits as u16),
        DType::F32 => format!(
            "__uint_as_float(0x{:08x}u/*{:?}*/)",
            c.bits as u32,
            f32::from_bits(c.bits as u32)
        ),
        DType::F64 => format!(
            "__longlong_as_double((kir_i64)0x{:016x}ull/*{:?}*/)",
            c.bits,
            f64::from_bits(c.bits)
        ),
        // Complex dtypes never lower (`lower::unsupported::complex`).
        DType::C64 | DType::C128 | DType::KeyFry => format!("(({t})0)"),
    }
}

impl Printer<'_> {
    /// An expression and its dtype.
    pub(crate) fn expr(&self, e: &Expr) -> (String, DType) {
        match e {
            Expr::Var(v) => (self.var(*v), self.var_dtype(*v)),
            Expr::Param(p) => self.scalar_param(*p),
            Expr::Const(c) => (constant(*c), c.dtype),
            Expr::Special(s) => (special(*s), DType::U32),
            Expr::Unary(op, a) => {
                let (a, t) = self.expr(a);
                unary(*op, &a, t)
            }
            Expr::Binary(op, a, b) => {
                let (a, t) = self.expr(a);
                let (b, _) = self.expr(b);
                binary(*op, &a, &b, t)
            }
            Expr::Select(c, a, b) => {
                let (c, _) = self.expr(c);
                let (a, t) = self.expr(a);
                let (b, _) = self.expr(b);
                (format!("(({})({c} ? {a} : {b}))", c_type(t)), t)
            }
            Expr::Cast(to, a) => {
                let (a, from) = self.expr(a);
                (cast(from, *to, &a), *to)
            }
            Expr::Bitcast(to, a) => {
                let (a, from) = self.expr(a);
                (bitcast(from, *to, &a), *to)
            }
            Expr::Math(f, args) => {
                let printed: Vec<(String, DType)> = args.iter().map(|a| self.expr(a)).collect();
                let t = printed.first().map_or(DType::F32, |p| p.1);
                let args: Vec<&str> = printed.iter().map(|p| p.0.as_str()).collect();
                let name = math_name(*f, t == DType::F64);
                (format!("{name}({})", args.join(", ")), t)
            }
        }
    }
}

fn special(s: Special) -> String {
    use crate::kir::Axis;
    let axis = |a: Axis| match a {
        Axis::X => "x",
        Axis::Y => "y",
        Axis::Z => "z",
    };
    match s {
        Special::ThreadIdx(a) => format!("((kir_u32)threadIdx.{})", axis(a)),
        Special::BlockIdx(a) => format!("((kir_u32)blockIdx.{})", axis(a)),
        Special::BlockDim(a) => format!("((kir_u32)blockDim.{})", axis(a)),
        Special::GridDim(a) => format!("((kir_u32)gridDim.{})", axis(a)),
        Special::LaneId => "kir_lane_id()".to_string(),
    }
}

fn unary(op: UnOp, a: &str, t: DType) -> (String, DType) {
    let ct = c_type(t);
    let s = match op {
        UnOp::Neg => match t {
            DType::F32 | DType::F64 => format!("(-{a})"),
            _ => format!("(({ct})(0u - ({})({a})))", wide_unsigned(t)),
        },
        UnOp::Not => match t {
            DType::Bool => format!("(({ct})({a} ^ 1))"),
            _ => format!("(({ct})(~{a}))"),
        },
        UnOp::Abs => match t {
            DType::F32 => format!("fabsf({a})"),
            DType::F64 => format!("fabs({a})"),
            _ if t.is_unsigned_int() => a.to_string(),
            _ => {
                let u = wide_unsigned(t);
                format!("(({ct})({a} < 0 ? 0u - ({u})({a}) : ({u})({a})))")
            }
        },
        UnOp::IsNan => return (format!("((kir_bool)({a} != {a}))"), DType::Bool),
        UnOp::IsInf => {
            let s = match t {
                DType::F64 => {
                    format!("((kir_bool)(fabs({a}) == __longlong_as_double(0x7ff0000000000000ll)))")
                }
                _ => format!("((kir_bool)(fabsf({a}) == __uint_as_float(0x7f800000u)))"),
            };
            return (s, DType::Bool);
        }
        UnOp::Clz => {
            let s = match t.size_bytes() {
                8 => format!("((kir_i32)__clzll((kir_i64)({a})))"),
                4 => format!("((kir_i32)__clz((kir_i32)({a})))"),
                n => format!(
                    "((kir_i32)(__clz((kir_i32)(kir_u32)({})({a})) - {}))",
                    same_width_unsigned(t),
                    32 - 8 * n
                ),
            };
            return (s, DType::I32);
        }
        UnOp::Popc => {
            let s = match t.size_bytes() {
                8 => format!("((kir_i32)__popcll((kir_u64)({a})))"),
                _ => format!(
                    "((kir_i32)__popc((kir_u32)({})({a})))",
                    same_width_unsigned(t)
                ),
            };
            return (s, DType::I32);
        }
    };
    (s, t)
}

fn binary(op: BinOp, a: &str, b: &str, t: DType) -> (String, DType) {
    let ct = c_type(t);
    let float = matches!(t, DType::F32 | DType::F64);
    let f64 = t == DType::F64;
    let u = wide_unsigned(t);
    let bits = 8 * t.size_bytes();
    let cmp = |o: &str| (format!("((kir_bool)({a} {o} {b}))"), DType::Bool);
    let s = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul => {
            let o = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                _ => "*",
            };
            if float {
                format!("({a} {o} {b})")
            } else {
                format!("(({ct})(({u})({a}) {o} ({u})({b})))")
            }
        }
        BinOp::Div | BinOp::Rem => {
            let div = op == BinOp::Div;
            if float {
                if div {
                    format!("({a} / {b})")
                } else {
                    format!("{}({a}, {b})", if f64 { "fmod" } else { "fmodf" })
                }
            } else if t.is_signed_int() {
                let name = if div { "div" } else { "rem" };
                match t {
                    DType::I64 => format!("kir_{name}_i64({a}, {b})"),
                    DType::I32 => format!("kir_{name}_i32({a}, {b})"),
                    _ => format!("(({ct})kir_{name}_i32((kir_i32)({a}), (kir_i32)({b})))"),
                }
            } else {
                let o = if div { "/" } else { "%" };
                format!("(({ct})({a} {o} {b}))")
            }
        }
        BinOp::Min | BinOp::Max => {
            let min = op == BinOp::Min;
            if float {
                let name = if min { "min" } else { "max" };
                format!("kir_{name}_{}({a}, {b})", if f64 { "f64" } else { "f32" })
            } else {
                let o = if min { "<" } else { ">" };
                format!("(({ct})({a} {o} {b} ? {a} : {b}))")
            }
        }
        BinOp::And => format!("(({ct})({a} & {b}))"),
        BinOp::Or => format!("(({ct})({a} | {b}))"),
        BinOp::Xor => format!("(({ct})({a} ^ {b}))"),
        BinOp::Shl => format!("(({ct})(({u})({a}) << (({u})({b}) & {}u)))", bits - 1),
        BinOp::Shr => {
            let count = format!("(({u})({b}) & {}u)", bits - 1);
            if t.is_signed_int() {
                format!("(({ct})({a} >> {count}))")
            } else {
                format!("(({ct})(({u})({a}) >> {count}))")
            }
        }
        BinOp::Eq => return cmp("=="),
        BinOp::Ne => return cmp("!="),
        BinOp::Lt => return cmp("<"),
        BinOp::Le => return cmp("<="),
        BinOp::Gt => return cmp(">"),
        BinOp::Ge => return cmp(">="),
    };
    (s, t)
}

/// `x` (of `from`) as an exact `f32`, or, where `f32` cannot hold it, as
/// `f32` rounded to odd (so that rounding on to 16 bits is correct).
fn to_f32_odd(from: DType, x: &str) -> String {
    match from {
        DType::Bool | DType::I8 | DType::I16 | DType::U8 | DType::U16 => {
            format!("((kir_f32)({x}))")
        }
        DType::I32 => format!("kir_i32_to_f32_odd({x})"),
        DType::U32 => format!("kir_u32_to_f32_odd({x})"),
        DType::I64 => format!("kir_i64_to_f32_odd({x})"),
        DType::U64 => format!("kir_u64_to_f32_odd({x})"),
        DType::F16 => format!("kir_f16_to_f32({x})"),
        DType::BF16 => format!("kir_bf16_to_f32({x})"),
        DType::F32 => x.to_string(),
        DType::F64 => format!("kir_f64_to_f32_odd({x})"),
        DType::C64 | DType::C128 | DType::KeyFry => format!("((kir_f32)({x}))"),
    }
}

/// A float (`f32` or `f64`) to an integer: truncated, saturated, NaN → 0.
fn float_to_int(src: &str, x: &str, to: DType) -> String {
    let ct = c_type(to);
    match to {
        DType::I32 => format!("kir_{src}_to_i32({x})"),
        DType::U32 => format!("kir_{src}_to_u32({x})"),
        DType::I64 => format!("kir_{src}_to_i64({x})"),
        DType::U64 => format!("kir_{src}_to_u64({x})"),
        DType::I8 => format!("(({ct})kir_clamp_i32(kir_{src}_to_i32({x}), -128, 127))"),
        DType::I16 => format!("(({ct})kir_clamp_i32(kir_{src}_to_i32({x}), -32768, 32767))"),
        DType::U8 => format!("(({ct})kir_clamp_u32(kir_{src}_to_u32({x}), 255u))"),
        DType::U16 => format!("(({ct})kir_clamp_u32(kir_{src}_to_u32({x}), 65535u))"),
        DType::Bool
        | DType::F16
        | DType::BF16
        | DType::F32
        | DType::F64
        | DType::C64
        | DType::C128
        | DType::KeyFry => format!("(({ct})({x}))"),
    }
}

/// A value conversion, as the `kir` module docs define it.
pub fn cast(from: DType, to: DType, x: &str) -> String {
    if from == to {
        return x.to_string();
    }
    let ct = c_type(to);
    match to {
        DType::Bool => match from {
            DType::F16 | DType::BF16 => format!("((kir_bool)((({x}) & 0x7fffu) != 0))"),
            _ => format!("((kir_bool)({x} != 0))"),
        },
        DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64 => match from {
            DType::F16 | DType::BF16 => float_to_int("f32", &to_f32_odd(from, x), to),
            DType::F32 => float_to_int("f32", x, to),
            DType::F64 => float_to_int("f64", x, to),
            _ => format!("(({ct})({x}))"),
        },
        DType::F32 => match from {
            DType::F16 | DType::BF16 => to_f32_odd(from, x),
            _ => format!("(({ct})({x}))"),
        },
        DType::F64 => match from {
            DType::F16 | DType::BF16 => format!("((kir_f64){})", to_f32_odd(from, x)),
            _ => format!("(({ct})({x}))"),
        },
        DType::F16 => format!("kir_f32_to_f16({})", to_f32_odd(from, x)),
        DType::BF16 => format!("kir_f32_to_bf16({})", to_f32_odd(from, x)),
        DType::C64 | DType::C128 | DType::KeyFry => format!("(({ct})({x}))"),
    }
}

/// A reinterpretation of the bits (widths equal, neither is `bool`).
fn bitcast(from: DType, to: DType, x: &str) -> String {
    if from == to {
        return x.to_string();
    }
    let bits = match from {
        DType::F32 => format!("__float_as_uint({x})"),
        DType::F64 => format!("((kir_u64)__double_as_longlong({x}))"),
        _ => format!("(({})({x}))", same_width_unsigned(from)),
    };
    match to {
        DType::F32 => format!("__uint_as_float((kir_u32){bits})"),
        DType::F64 => format!("__longlong_as_double((kir_i64){bits})"),
        _ => format!("(({})({bits}))", c_type(to)),
    }
}

/// The CUDA math library's name of a function for `f32` (or `f64`).
fn math_name(f: MathFn, f64: bool) -> String {
    let base = match f {
        MathFn::Exp => "exp",
        MathFn::Exp2 => "exp2",
        MathFn::Expm1 => "expm1",
        MathFn::Log => "log",
        MathFn::Log2 => "log2",
        MathFn::Log1p => "log1p",
        MathFn::Sqrt => "sqrt",
        MathFn::Rsqrt => "rsqrt",
        MathFn::Cbrt => "cbrt",
        MathFn::Sin => "sin",
        MathFn::Cos => "cos",
        MathFn::Tan => "tan",
        MathFn::Asin => "asin",
        MathFn::Acos => "acos",
        MathFn::Atan => "atan",
        MathFn::Sinh => "sinh",
        MathFn::Cosh => "cosh",
        MathFn::Tanh => "tanh",
        MathFn::Asinh => "asinh",
        MathFn::Acosh => "acosh",
        MathFn::Atanh => "atanh",
        MathFn::Erf => "erf",
        MathFn::Erfc => "erfc",
        MathFn::ErfInv => "erfinv",
        MathFn::Lgamma => "lgamma",
        MathFn::Floor => "floor",
        MathFn::Ceil => "ceil",
        MathFn::RoundEven => "rint",
        MathFn::RoundAway => "round",
        MathFn::Trunc => "trunc",
        MathFn::Pow => "pow",
        MathFn::Atan2 => "atan2",
        MathFn::CopySign => "copysign",
        MathFn::NextAfter => "nextafter",
        MathFn::Fma => "fma",
    };
    if f64 {
        base.to_string()
    } else {
        format!("{base}f")
    }
}
