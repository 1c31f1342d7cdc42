//! What `Precision.DEFAULT` means for an `f32` product on the GPU, as in
//! JAX: on a GPU, XLA multiplies `f32` operands at the default precision
//! on tensor cores in TensorFloat-32 (operands rounded to 10 mantissa
//! bits, products summed in `f32`); `Precision.HIGHEST` multiplies in full
//! `f32`. JAX's `jax_default_matmul_precision` config changes the default;
//! jaxon reads the same choice from `JAXON_DEFAULT_MATMUL_PRECISION`.
//!
//! | `JAXON_DEFAULT_MATMUL_PRECISION` | DEFAULT/HIGH `f32` products |
//! |---|---|
//! | unset | `cuda`: TF32; `cuda-sim`: full `f32` |
//! | `tensorfloat32`, `high`, `default`, `bfloat16` | TF32 on both |
//! | `float32`, `highest` | full `f32` on both |
//!
//! The simulator runs full `f32` unless asked, because it checks programs
//! against exact `f32` oracles (the interpreter, JAX's CPU outputs); with
//! the variable set to `tensorfloat32` it runs the GPU's plan and models
//! the rounding (`blas::model`). An equation's explicit `HIGHEST` is
//! always full `f32`.
//!
//! Invariant: the choice is made when a program is lowered; a lowered
//! program keeps it.

use crate::blas::Compute;
use jaxon_ir::primitive::Precision;
use jaxon_ir::IrError;

/// The environment variable naming the default `f32` matmul precision.
pub const ENV: &str = "JAXON_DEFAULT_MATMUL_PRECISION";

/// How `f32` products at the default precision are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum F32Matmul {
    /// TensorFloat-32 tensor-core products (JAX's GPU default).
    Tf32,
    /// Full `f32` products.
    F32,
}

impl F32Matmul {
    /// The choice for a backend whose own default is `fallback`, from
    /// [`ENV`]; an unknown value is an error naming the accepted ones.
    pub fn from_env(fallback: F32Matmul) -> Result<F32Matmul, IrError> {
        match std::env::var(ENV) {
            Err(_) => Ok(fallback),
            Ok(v) => F32Matmul::parse(&v).ok_or_else(|| {
                IrError::Invalid(format!(
                    "{ENV}={v:?}: expected one of tensorfloat32, high, default, bfloat16, \
                     float32, highest"
                ))
            }),
        }
    }

    /// A JAX `jax_default_matmul_precision` name.
    pub fn parse(name: &str) -> Option<F32Matmul> {
        match name.to_ascii_lowercase().as_str() {
            "tensorfloat32" | "high" | "default" | "bfloat16" => Some(F32Matmul::Tf32),
            "float32" | "highest" => Some(F32Matmul::F32),
            _ => None,
        }
    }

    /// The GEMM arithmetic of an `f32` product with `precision`.
    pub fn compute(self, precision: Option<(Precision, Precision)>) -> Compute {
        let highest = |p: Precision| match p {
            Precision::Highest => true,
            Precision::Default | Precision::High => false,
        };
        match (self, precision) {
            (F32Matmul::F32, _) => Compute::F32,
            (F32Matmul::Tf32, Some((l, r))) if highest(l) || highest(r) => Compute::F32,
            (F32Matmul::Tf32, _) => Compute::Tf32,
        }
    }
}

/// What a lowering may choose; one per program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LowerOptions {
    /// `f32` products at the default precision.
    pub f32_matmul: F32Matmul,
    /// The devices a `shard_map` mesh may use (the backend's
    /// `device_count`; a larger mesh is a compile error).
    pub devices: usize,
}

impl LowerOptions {
    /// The simulator's default: full `f32` unless [`ENV`] asks for TF32.
    pub fn simulator() -> Result<LowerOptions, IrError> {
        Ok(LowerOptions {
            f32_matmul: F32Matmul::from_env(F32Matmul::F32)?,
            devices: 1,
        })
    }

    /// A GPU's default: TF32 unless [`ENV`] asks for full `f32`.
    pub fn gpu() -> Result<LowerOptions, IrError> {
        Ok(LowerOptions {
            f32_matmul: F32Matmul::from_env(F32Matmul::Tf32)?,
            devices: 1,
        })
    }
}

impl Default for LowerOptions {
    /// Full `f32` products.
    fn default() -> Self {
        LowerOptions {
            f32_matmul: F32Matmul::F32,
            devices: 1,
        }
    }
}
