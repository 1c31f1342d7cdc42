//! The linalg family of primitives and their params.

use super::*;

/// Contractions and linear algebra: `dot_general` and convolutions.
///
/// Family invariant: no member holds a jaxpr or touches a `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum Linalg {
    /// `dot_general[dimension_numbers precision preferred_element_type]`.
    DotGeneral(DotGeneralParams),
    /// `conv_general_dilated[...] lhs rhs`.
    ConvGeneralDilated(ConvGeneralDilatedParams),
}

impl Linalg {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Linalg::DotGeneral(_) => "dot_general",
            Linalg::ConvGeneralDilated(_) => "conv_general_dilated",
        }
    }
}

/// The params of `dot_general`.
#[derive(Clone, Debug, PartialEq)]
pub struct DotGeneralParams {
    /// Contracting and batch dims.
    pub dimension_numbers: DotDimensionNumbers,
    /// `(lhs, rhs)` precision, or `None`.
    pub precision: Option<(Precision, Precision)>,
    /// Accumulation/result dtype, or `None` for the operands' dtype.
    pub preferred_element_type: Option<DType>,
}

/// The params of `conv_general_dilated`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvGeneralDilatedParams {
    /// Strides.
    pub window_strides: Vec<usize>,
    /// (low, high) padding per spatial dim; may be negative.
    pub padding: Vec<(i64, i64)>,
    /// Input dilation.
    pub lhs_dilation: Vec<usize>,
    /// Kernel dilation.
    pub rhs_dilation: Vec<usize>,
    /// Layouts.
    pub dimension_numbers: ConvDimensionNumbers,
    /// Feature groups.
    pub feature_group_count: usize,
    /// Batch groups.
    pub batch_group_count: usize,
    /// `(lhs, rhs)` precision, or `None`.
    pub precision: Option<(Precision, Precision)>,
    /// Result dtype, or `None`.
    pub preferred_element_type: Option<DType>,
}
