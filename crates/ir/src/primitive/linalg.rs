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
    /// `fft[fft_lengths fft_type] x`: a discrete Fourier transform over the
    /// trailing `fft_lengths.len()` axes.
    Fft(FftParams),
}

impl Linalg {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Linalg::DotGeneral(_) => "dot_general",
            Linalg::ConvGeneralDilated(_) => "conv_general_dilated",
            Linalg::Fft(_) => "fft",
        }
    }
}

/// The kind of an `fft`, as JAX's `FftType` (printed as its int value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftType {
    /// `0`: complex to complex, forward.
    Fft,
    /// `1`: complex to complex, inverse (normalised by `1/n`).
    Ifft,
    /// `2`: real to the `n/2 + 1` non-negative frequencies.
    Rfft,
    /// `3`: the `n/2 + 1` non-negative frequencies to `n` reals.
    Irfft,
}

impl FftType {
    /// The int JAX prints.
    pub fn code(self) -> i64 {
        match self {
            FftType::Fft => 0,
            FftType::Ifft => 1,
            FftType::Rfft => 2,
            FftType::Irfft => 3,
        }
    }

    /// The kind printed as `code`.
    pub fn from_code(code: i64) -> Option<FftType> {
        [FftType::Fft, FftType::Ifft, FftType::Rfft, FftType::Irfft]
            .into_iter()
            .find(|t| t.code() == code)
    }
}

/// The params of `fft`.
#[derive(Clone, Debug, PartialEq)]
pub struct FftParams {
    /// The transform.
    pub fft_type: FftType,
    /// The logical lengths of the trailing axes (for IRFFT, the output's).
    pub fft_lengths: Vec<usize>,
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
