//! The op enums that key the elementwise, reduction and cumulative
//! primitives sharing one variant per family: `UnaryOp`, `BinaryOp`,
//! `ReduceOp`, `ArgOp`, `CumulativeOp`, with JAX's names.

use super::ScatterKind;

/// Elementwise unary operations without params.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Neg,
    Sign,
    Floor,
    Ceil,
    IsFinite,
    Exp,
    Exp2,
    Log,
    Log1p,
    Expm1,
    Tanh,
    Logistic,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Sqrt,
    Rsqrt,
    Cbrt,
    Abs,
    Not,
    Erf,
    Erfc,
    ErfInv,
    Square,
    Copy,
    StopGradient,
    Lgamma,
    Digamma,
    BesselI0e,
    BesselI1e,
    /// The number of set bits of an integer (`lax.population_count`).
    PopulationCount,
    /// The number of leading zero bits of an integer (`lax.clz`).
    Clz,
}

/// Elementwise binary operations without params (comparisons included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
    Max,
    Min,
    Atan2,
    Nextafter,
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRightArithmetic,
    ShiftRightLogical,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `x < y` in the total order (`lax.lt_to`): on floats
    /// -NaN < -inf < .. < -0.0 < 0.0 < .. < inf < NaN.
    LtTo,
    /// `x <= y` in the total order (`lax.le_to`).
    LeTo,
    /// The sum of two cotangents, emitted by transposition.
    AddAny,
    Igamma,
    Igammac,
    IgammaGradA,
    RandomGammaGrad,
    /// `polygamma m x` (the order first).
    Polygamma,
    /// `zeta x q`: the Hurwitz zeta function.
    Zeta,
}

/// Reductions over axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    Prod,
    And,
    Or,
    Xor,
}

/// Index-of-extremum reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ArgOp {
    Argmax,
    Argmin,
}

/// Cumulative (scan-like) reductions along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CumulativeOp {
    Cumsum,
    Cumprod,
    Cummax,
    Cummin,
    Cumlogsumexp,
}

impl UnaryOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Sign => "sign",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::IsFinite => "is_finite",
            UnaryOp::Exp => "exp",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Log => "log",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Logistic => "logistic",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Asinh => "asinh",
            UnaryOp::Acosh => "acosh",
            UnaryOp::Atanh => "atanh",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Cbrt => "cbrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Not => "not",
            UnaryOp::Erf => "erf",
            UnaryOp::Erfc => "erfc",
            UnaryOp::ErfInv => "erf_inv",
            UnaryOp::Square => "square",
            UnaryOp::Copy => "copy",
            UnaryOp::StopGradient => "stop_gradient",
            UnaryOp::Lgamma => "lgamma",
            UnaryOp::Digamma => "digamma",
            UnaryOp::BesselI0e => "bessel_i0e",
            UnaryOp::BesselI1e => "bessel_i1e",
            UnaryOp::PopulationCount => "population_count",
            UnaryOp::Clz => "clz",
        }
    }

    /// Every unary op.
    pub const ALL: [UnaryOp; 40] = [
        UnaryOp::Neg,
        UnaryOp::Sign,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::IsFinite,
        UnaryOp::Exp,
        UnaryOp::Exp2,
        UnaryOp::Log,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Tanh,
        UnaryOp::Logistic,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Cbrt,
        UnaryOp::Abs,
        UnaryOp::Not,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::ErfInv,
        UnaryOp::Square,
        UnaryOp::Copy,
        UnaryOp::StopGradient,
        UnaryOp::Lgamma,
        UnaryOp::Digamma,
        UnaryOp::BesselI0e,
        UnaryOp::BesselI1e,
        UnaryOp::PopulationCount,
        UnaryOp::Clz,
    ];
}

impl BinaryOp {
    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Rem => "rem",
            BinaryOp::Pow => "pow",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::Nextafter => "nextafter",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
            BinaryOp::ShiftLeft => "shift_left",
            BinaryOp::ShiftRightArithmetic => "shift_right_arithmetic",
            BinaryOp::ShiftRightLogical => "shift_right_logical",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::LtTo => "lt_to",
            BinaryOp::LeTo => "le_to",
            BinaryOp::AddAny => "add_any",
            BinaryOp::Igamma => "igamma",
            BinaryOp::Igammac => "igammac",
            BinaryOp::IgammaGradA => "igamma_grad_a",
            BinaryOp::RandomGammaGrad => "random_gamma_grad",
            BinaryOp::Polygamma => "polygamma",
            BinaryOp::Zeta => "zeta",
        }
    }

    /// Every binary op.
    pub const ALL: [BinaryOp; 31] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::Pow,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Atan2,
        BinaryOp::Nextafter,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::ShiftLeft,
        BinaryOp::ShiftRightArithmetic,
        BinaryOp::ShiftRightLogical,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::LtTo,
        BinaryOp::LeTo,
        BinaryOp::AddAny,
        BinaryOp::Igamma,
        BinaryOp::Igammac,
        BinaryOp::IgammaGradA,
        BinaryOp::RandomGammaGrad,
        BinaryOp::Polygamma,
        BinaryOp::Zeta,
    ];

    /// True for the comparisons, whose result is bool.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::Ne
                | BinaryOp::Lt
                | BinaryOp::Le
                | BinaryOp::Gt
                | BinaryOp::Ge
                | BinaryOp::LtTo
                | BinaryOp::LeTo
        )
    }
}

impl ReduceOp {
    /// Every op, once.
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::Sum,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
    ];

    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "reduce_sum",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
            ReduceOp::Prod => "reduce_prod",
            ReduceOp::And => "reduce_and",
            ReduceOp::Or => "reduce_or",
            ReduceOp::Xor => "reduce_xor",
        }
    }
}

impl ArgOp {
    /// Every op, once.
    pub const ALL: [ArgOp; 2] = [ArgOp::Argmax, ArgOp::Argmin];

    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            ArgOp::Argmax => "argmax",
            ArgOp::Argmin => "argmin",
        }
    }
}

impl CumulativeOp {
    /// Every op, once.
    pub const ALL: [CumulativeOp; 5] = [
        CumulativeOp::Cumsum,
        CumulativeOp::Cumprod,
        CumulativeOp::Cummax,
        CumulativeOp::Cummin,
        CumulativeOp::Cumlogsumexp,
    ];

    /// JAX's name.
    pub fn name(self) -> &'static str {
        match self {
            CumulativeOp::Cumsum => "cumsum",
            CumulativeOp::Cumprod => "cumprod",
            CumulativeOp::Cummax => "cummax",
            CumulativeOp::Cummin => "cummin",
            CumulativeOp::Cumlogsumexp => "cumlogsumexp",
        }
    }
}

impl ScatterKind {
    /// Every kind, once.
    pub const ALL: [ScatterKind; 5] = [
        ScatterKind::Set,
        ScatterKind::Add,
        ScatterKind::Mul,
        ScatterKind::Min,
        ScatterKind::Max,
    ];

    /// JAX's name of the scatter primitive.
    pub fn name(self) -> &'static str {
        match self {
            ScatterKind::Set => "scatter",
            ScatterKind::Add => "scatter-add",
            ScatterKind::Mul => "scatter-mul",
            ScatterKind::Min => "scatter-min",
            ScatterKind::Max => "scatter-max",
        }
    }
}
