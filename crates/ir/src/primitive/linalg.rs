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
    /// `cholesky x`: the lower Cholesky factor of each trailing matrix
    /// (NaNs where a matrix is not positive definite).
    Cholesky,
    /// `triangular_solve[...] a b`.
    TriangularSolve(TriangularSolveParams),
    /// `lu x`: `(lu, pivots, permutation)`, partial pivoting.
    Lu,
    /// `qr[full_matrices pivoting use_magma] x`: `(q, r)`.
    Qr(QrParams),
    /// `eigh[...] x`: `(v, w)`, eigenvectors as columns, then eigenvalues.
    Eigh(EighParams),
    /// `svd[...] x`: `(s,)` or `(s, u, vt)`.
    Svd(SvdParams),
    /// `schur[compute_schur_vectors select_callable sort_eig_vals] x`:
    /// `(t,)` or `(t, z)`, the real Schur form and its orthogonal vectors.
    Schur(SchurParams),
    /// `tridiagonal_solve[perturb_singular] dl d du b`.
    TridiagonalSolve(TridiagonalSolveParams),
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
            Linalg::Cholesky => "cholesky",
            Linalg::TriangularSolve(_) => "triangular_solve",
            Linalg::Lu => "lu",
            Linalg::Qr(_) => "qr",
            Linalg::Eigh(_) => "eigh",
            Linalg::Svd(_) => "svd",
            Linalg::Schur(_) => "schur",
            Linalg::TridiagonalSolve(_) => "tridiagonal_solve",
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

/// The params of `triangular_solve`: solves `op(a) x = b` (`left_side`) or
/// `x op(a) = b`, `a` triangular.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriangularSolveParams {
    /// `a` on the left of the unknown.
    pub left_side: bool,
    /// `a` is lower (else upper) triangular; the other triangle is ignored.
    pub lower: bool,
    /// `op(a)` transposes `a`.
    pub transpose_a: bool,
    /// `op(a)` conjugates `a` (a no-op for real dtypes).
    pub conjugate_a: bool,
    /// The diagonal of `a` is taken as ones.
    pub unit_diagonal: bool,
}

/// The params of `qr` (`use_magma=None` is printed as a constant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QrParams {
    /// `q` is `m x m` (else `m x min(m, n)`).
    pub full_matrices: bool,
    /// Column pivoting (not supported: rejected by the shape rule).
    pub pivoting: bool,
}

/// The params of `eigh` (`algorithm=None subset_by_index=None` are
/// printed as constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EighParams {
    /// Which triangle of the input is read.
    pub lower: bool,
    /// Eigenvalues ascending.
    pub sort_eigenvalues: bool,
}

/// The params of `svd` (`algorithm=None subset_by_index=None` are printed
/// as constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SvdParams {
    /// Also return `u` and `vt`.
    pub compute_uv: bool,
    /// `u` is `m x m` and `vt` is `n x n` (else `k = min(m, n)` columns/rows).
    pub full_matrices: bool,
}

/// The params of `tridiagonal_solve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TridiagonalSolveParams {
    /// Perturb zero pivots (not supported: must be `False`).
    pub perturb_singular: bool,
}

/// The params of `schur` (`select_callable=None` is printed as a constant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchurParams {
    /// Also return the Schur vectors `z`.
    pub compute_schur_vectors: bool,
    /// Sort the eigenvalues (not supported: must be `False`).
    pub sort_eig_vals: bool,
}
