//! A catalogue of hand-written KIR kernels with inputs and host references:
//! the test bench that the simulator, the CUDA C printer and NVRTC, and a
//! real GPU are all checked against, before any jaxpr is lowered.
//!
//! Each [`Case`] is one launch: a verified kernel, its launch dimensions,
//! its buffers (inputs drawn at random from a fixed seed, never all zeros,
//! outputs poisoned so an unwritten element shows), its arguments, and for
//! each output the values a plain Rust loop computes, with a tolerance.
//!
//! Together the cases use every KIR statement kind: vector and masked
//! loads/stores, shared memory and barriers, every shuffle kind, atomics
//! (integer and float), `mma`, `If`/`For`/`While`, and casts between the
//! storage dtypes.

mod kernels;
#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::kir::{Const, Kernel, LaunchDims};
use jaxon_ir::DType;

/// A buffer of a case, as values (converted to the dtype when uploaded).
#[derive(Clone, Debug, PartialEq)]
pub struct CaseBuffer {
    /// The element type.
    pub dtype: DType,
    /// The initial values.
    pub values: Vec<f64>,
}

/// A launch argument of a case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CaseArg {
    /// Buffer `i` of the case.
    Buffer(usize),
    /// A scalar.
    Scalar(Const),
}

/// How close an output must be to its reference: `|got - want| <= abs +
/// rel * |want|`, NaN only where the reference is NaN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f64,
    /// Relative part.
    pub rel: f64,
}

impl Tolerance {
    /// Bit-exact (for integers and exactly rounded results).
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };

    /// A tolerance of `rel` relative and `abs` absolute.
    pub fn new(abs: f64, rel: f64) -> Tolerance {
        Tolerance { abs, rel }
    }

    /// True if `got` is within tolerance of `want`.
    pub fn accepts(&self, got: f64, want: f64) -> bool {
        if want.is_nan() || got.is_nan() {
            return want.is_nan() && got.is_nan();
        }
        if want.is_infinite() || got.is_infinite() {
            return got == want;
        }
        (got - want).abs() <= self.abs + self.rel * want.abs()
    }
}

/// An output to check: buffer `buffer` must equal `expected` within `tol`.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    /// The buffer's index in the case.
    pub buffer: usize,
    /// The reference values.
    pub values: Vec<f64>,
    /// The tolerance.
    pub tol: Tolerance,
}

/// One launch to test.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The kernel.
    pub kernel: Kernel,
    /// Grid and block.
    pub dims: LaunchDims,
    /// Initial buffers.
    pub buffers: Vec<CaseBuffer>,
    /// Arguments, one per kernel parameter.
    pub args: Vec<CaseArg>,
    /// The outputs and their references.
    pub expected: Vec<Expected>,
}

/// The size of the cases: `Small` for the simulator in CI, `Large` for a
/// GPU (several waves of blocks, sizes that do not divide the tiles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Thousands of elements.
    Small,
    /// Millions of elements.
    Large,
}

/// Every case of the catalogue, inputs drawn from `seed`.
pub fn cases(size: Size, seed: u64) -> Result<Vec<Case>> {
    let mut rng = Rng::new(seed);
    let big = size == Size::Large;
    Ok(vec![
        kernels::eltwise_fused(&mut rng, if big { (1 << 22) + 3 } else { 4099 })?,
        kernels::row_softmax(
            &mut rng,
            if big { 1027 } else { 5 },
            if big { 2053 } else { 300 },
        )?,
        kernels::sum_rows_warp(
            &mut rng,
            if big { 4097 } else { 37 },
            if big { 1000 } else { 45 },
        )?,
        kernels::transpose_tiled(
            &mut rng,
            if big { 1029 } else { 45 },
            if big { 2050 } else { 70 },
        )?,
        kernels::histogram_atomic(&mut rng, if big { 1 << 20 } else { 3000 }, 61)?,
        kernels::mma_bf16(
            &mut rng,
            if big { 256 } else { 32 },
            if big { 128 } else { 16 },
            if big { 512 } else { 48 },
        )?,
        kernels::mma_tf32(
            &mut rng,
            if big { 128 } else { 32 },
            if big { 64 } else { 16 },
            if big { 256 } else { 24 },
        )?,
        kernels::casts(&mut rng, if big { 1 << 16 } else { 513 })?,
        kernels::collatz_while(&mut rng, if big { 1 << 16 } else { 300 })?,
    ])
}

/// Runs a case on the simulator; returns its outputs in the order of
/// `case.expected`.
pub fn run_simulated(case: &Case) -> Result<Vec<Vec<f64>>> {
    use crate::sim::{self, Arg, DeviceLimits, SimBuffer};
    let mut bufs: Vec<SimBuffer> = case
        .buffers
        .iter()
        .map(|b| SimBuffer::from_f64(b.dtype, &b.values))
        .collect();
    let args: Vec<Arg> = case
        .args
        .iter()
        .map(|a| match *a {
            CaseArg::Buffer(i) => Arg::Buffer(i),
            CaseArg::Scalar(c) => Arg::Scalar(c),
        })
        .collect();
    sim::launch(
        &case.kernel,
        case.dims,
        &mut bufs,
        &args,
        &DeviceLimits::default(),
    )?;
    Ok(case
        .expected
        .iter()
        .map(|e| bufs[e.buffer].to_f64())
        .collect())
}

/// The `eltwise_fused` case at any size (the GPU bandwidth check's kernel).
pub fn eltwise_fused_case(rng: &mut Rng, n: usize) -> Result<Case> {
    kernels::eltwise_fused(rng, n)
}

/// A small deterministic generator of test inputs (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * x
    }

    /// `n` values uniform in `[lo, hi)`, rounded to `dtype`.
    pub fn values(&mut self, n: usize, lo: f64, hi: f64, dtype: DType) -> Vec<f64> {
        (0..n)
            .map(|_| Const::from_f64(dtype, self.uniform(lo, hi)).to_f64())
            .collect()
    }
}

/// Compares `got` with an expectation; the error names the first mismatch.
pub fn check(case: &Case, e: &Expected, got: &[f64]) -> std::result::Result<(), String> {
    if got.len() != e.values.len() {
        return Err(format!(
            "{}: output {} has {} elements, expected {}",
            case.kernel.name,
            e.buffer,
            got.len(),
            e.values.len()
        ));
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| !e.tol.accepts(got[i], e.values[i]))
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{}: output {}: {} of {} elements differ; first at {i}: got {}, expected {} (tolerance {:?})",
            case.kernel.name,
            e.buffer,
            bad.len(),
            got.len(),
            got[i],
            e.values[i],
            e.tol
        )),
    }
}
