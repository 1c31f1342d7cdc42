//! The elementwise family of primitives and their params.

use super::*;

/// Elementwise primitives: each output element depends only on the operand elements at the same index (after JAX's implicit scalar broadcasting of `select_n`/`clamp` operands).
///
/// Family invariant: no member holds a jaxpr or touches a `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum Elementwise {
    /// `neg`, `sin`, `exp`, ...: one operand, same type out.
    Unary(UnaryOp),
    /// `add`, `lt`, ...: two operands of one type (comparisons give bool).
    Binary(BinaryOp),
    /// `integer_pow[y]`: `x ** y` by repeated multiplication.
    IntegerPow(IntegerPowParams),
    /// `round[rounding_method]`.
    Round(RoundParams),
    /// `reduce_precision[exponent_bits mantissa_bits]`.
    ReducePrecision(ReducePrecisionParams),
    /// `convert_element_type[new_dtype weak_type]` (`sharding` elided).
    ConvertElementType(ConvertElementTypeParams),
    /// `bitcast_convert_type[new_dtype]`.
    BitcastConvertType(BitcastConvertTypeParams),
    /// `select_n which *cases`: picks `cases[which]` elementwise.
    SelectN,
    /// `clamp lo x hi`.
    Clamp,
    /// `regularized_incomplete_beta a b x`: `I_x(a, b)` elementwise.
    RegularizedIncompleteBeta,
    /// `complex x y`: `x + i y` from two floats (`f32` -> `c64`).
    Complex,
    /// `real x`: the real part of a complex array.
    Real,
    /// `imag x`: the imaginary part of a complex array.
    Imag,
    /// `conj[input_dtype] x`: the complex conjugate (a real input becomes
    /// complex).
    Conj(ConjParams),
}

impl Elementwise {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Elementwise::Unary(op) => op.name(),
            Elementwise::Binary(op) => op.name(),
            Elementwise::IntegerPow(_) => "integer_pow",
            Elementwise::Round(_) => "round",
            Elementwise::ReducePrecision(_) => "reduce_precision",
            Elementwise::ConvertElementType(_) => "convert_element_type",
            Elementwise::BitcastConvertType(_) => "bitcast_convert_type",
            Elementwise::SelectN => "select_n",
            Elementwise::Clamp => "clamp",
            Elementwise::RegularizedIncompleteBeta => "regularized_incomplete_beta",
            Elementwise::Complex => "complex",
            Elementwise::Real => "real",
            Elementwise::Imag => "imag",
            Elementwise::Conj(_) => "conj",
        }
    }
}

/// The params of `conj`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConjParams {
    /// The operand's dtype, as JAX records it.
    pub input_dtype: DType,
}

/// The params of `integer_pow`.
#[derive(Clone, Debug, PartialEq)]
pub struct IntegerPowParams {
    /// The exponent.
    pub y: i64,
}

/// The params of `round`.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundParams {
    /// How halves round.
    pub rounding_method: RoundingMethod,
}

/// The params of `reduce_precision`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReducePrecisionParams {
    /// Exponent bits kept.
    pub exponent_bits: u32,
    /// Mantissa bits kept.
    pub mantissa_bits: u32,
}

/// The params of `convert_element_type`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertElementTypeParams {
    /// Target dtype.
    pub new_dtype: DType,
    /// Whether the result is weakly typed.
    pub weak_type: bool,
}

/// The params of `bitcast_convert_type`.
#[derive(Clone, Debug, PartialEq)]
pub struct BitcastConvertTypeParams {
    /// Target dtype.
    pub new_dtype: DType,
}
