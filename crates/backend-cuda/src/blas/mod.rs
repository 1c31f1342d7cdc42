//! Matrix products as library calls: a [`GemmPlan`] describes one (batched)
//! product in the terms a lowering of `dot_general` has — row-major logical
//! operands with arbitrary strides, transposes folded into the strides, an
//! optional accumulation into the output and a fused epilogue — and is
//! executed either by cuBLASLt on a GPU ([`lt`]) or by a host model of the
//! same call ([`model`]) on the simulator.
//!
//! Invariants:
//! - A plan is validated ([`GemmPlan::validate`]) before either consumer
//!   sees it: each operand has unit stride along one of its two axes, and
//!   every element it addresses lies inside its buffer.
//! - The model reads and writes exactly the elements cuBLASLt does, so the
//!   descriptor that drives the library is what the simulator tests.

pub mod lt;
pub mod model;

use crate::error::{CudaError, Result};
use jaxon_ir::DType;

/// One operand's placement: element `(batch, row, col)` of the logical
/// matrix is at `offset + batch * batch_stride + row * row_stride + col *
/// col_stride` (in elements) of its buffer. One of `row_stride` and
/// `col_stride` is 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    /// First element.
    pub offset: u64,
    /// Distance between rows.
    pub row_stride: i64,
    /// Distance between columns.
    pub col_stride: i64,
    /// Distance between batch members (0 broadcasts one matrix).
    pub batch_stride: i64,
}

impl Operand {
    /// A dense row-major `rows × cols` matrix per batch member.
    pub fn row_major(rows: u64, cols: u64) -> Operand {
        Operand {
            offset: 0,
            row_stride: cols as i64,
            col_stride: 1,
            batch_stride: (rows * cols) as i64,
        }
    }

    /// A dense matrix stored transposed: the logical `rows × cols` matrix is
    /// the transpose of a row-major `cols × rows` one.
    pub fn transposed(rows: u64, cols: u64) -> Operand {
        Operand {
            offset: 0,
            row_stride: 1,
            col_stride: rows as i64,
            batch_stride: (rows * cols) as i64,
        }
    }

    /// Element index of `(b, r, c)`.
    pub fn index(&self, b: u64, r: u64, c: u64) -> i64 {
        self.offset as i64
            + b as i64 * self.batch_stride
            + r as i64 * self.row_stride
            + c as i64 * self.col_stride
    }
}

/// The arithmetic of a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compute {
    /// f32 products and sums (JAX's `Precision.HIGHEST`).
    F32,
    /// Operands rounded to tf32, f32 sums (JAX's default on GPUs).
    Tf32,
    /// f64 throughout.
    F64,
}

/// What is applied to `a·b (+ out)` before it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Nothing.
    None,
    /// `max(x, 0)`.
    Relu,
    /// `x + bias[col]`.
    Bias,
    /// `max(x + bias[col], 0)`.
    BiasRelu,
    /// The tanh approximation of GELU (`jax.nn.gelu(approximate=True)`).
    Gelu,
    /// GELU of `x + bias[col]`.
    BiasGelu,
}

impl Epilogue {
    /// True if the epilogue reads a bias vector.
    pub fn has_bias(self) -> bool {
        match self {
            Epilogue::Bias | Epilogue::BiasRelu | Epilogue::BiasGelu => true,
            Epilogue::None | Epilogue::Relu | Epilogue::Gelu => false,
        }
    }
}

/// `out[b] = epilogue(a[b] · b[b] (+ out[b]))` for `b < batch`, with `a`
/// logical `m × k`, `b` logical `k × n`, `out` logical `m × n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmPlan {
    /// Batch members.
    pub batch: u64,
    /// Rows of `a` and `out`.
    pub m: u64,
    /// Columns of `b` and `out`.
    pub n: u64,
    /// The contracted size.
    pub k: u64,
    /// Placement of `a`.
    pub a: Operand,
    /// Placement of `b`.
    pub b: Operand,
    /// Placement of `out`; its `col_stride` is 1.
    pub out: Operand,
    /// Element type of `a` and `b`.
    pub operand_dtype: DType,
    /// Element type of `out` (and the bias).
    pub out_dtype: DType,
    /// Arithmetic.
    pub compute: Compute,
    /// Add the product to `out`'s previous contents.
    pub accumulate: bool,
    /// Fused epilogue.
    pub epilogue: Epilogue,
}

impl GemmPlan {
    /// A dense row-major product `out[m×n] = a[m×k] · b[k×n]`, batched.
    pub fn dense(batch: u64, m: u64, n: u64, k: u64, operand: DType, out: DType) -> GemmPlan {
        GemmPlan {
            batch,
            m,
            n,
            k,
            a: Operand::row_major(m, k),
            b: Operand::row_major(k, n),
            out: Operand::row_major(m, n),
            operand_dtype: operand,
            out_dtype: out,
            compute: if operand == DType::F64 {
                Compute::F64
            } else {
                Compute::F32
            },
            accumulate: false,
            epilogue: Epilogue::None,
        }
    }

    /// Checks the plan against buffers of `len_a`, `len_b`, `len_out` (and
    /// `len_bias`) elements.
    pub fn validate(&self, len_a: u64, len_b: u64, len_out: u64, len_bias: u64) -> Result<()> {
        let bad = |message: String| CudaError::Launch {
            kernel: "gemm".into(),
            message,
        };
        let types_ok = matches!(
            (self.operand_dtype, self.out_dtype, self.compute),
            (DType::F32, DType::F32, Compute::F32 | Compute::Tf32)
                | (DType::F16 | DType::BF16, DType::F32, Compute::F32)
                | (DType::F16, DType::F16, Compute::F32)
                | (DType::BF16, DType::BF16, Compute::F32)
                | (DType::F64, DType::F64, Compute::F64)
        );
        if !types_ok {
            return Err(bad(format!(
                "{} operands into {} with {:?} arithmetic is not supported",
                self.operand_dtype, self.out_dtype, self.compute
            )));
        }
        if self.batch == 0 || self.m == 0 || self.n == 0 || self.k == 0 {
            return Err(bad(format!(
                "empty product (batch {}, m {}, n {}, k {}): lower it as a fill, not a library call",
                self.batch, self.m, self.n, self.k
            )));
        }
        if self.out.col_stride != 1 {
            return Err(bad("the output's columns must be contiguous".into()));
        }
        for (name, op, rows, cols, len) in [
            ("a", &self.a, self.m, self.k, len_a),
            ("b", &self.b, self.k, self.n, len_b),
            ("out", &self.out, self.m, self.n, len_out),
        ] {
            if op.row_stride != 1 && op.col_stride != 1 {
                return Err(bad(format!(
                    "operand {name} has strides ({}, {}); one must be 1",
                    op.row_stride, op.col_stride
                )));
            }
            if rows == 0 || cols == 0 {
                continue;
            }
            // The extremes of an affine map over a box are at its corners.
            let spans = [
                op.batch_stride * (self.batch as i64 - 1),
                op.row_stride * (rows as i64 - 1),
                op.col_stride * (cols as i64 - 1),
            ];
            let lo = op.offset as i64 + spans.iter().map(|&s| s.min(0)).sum::<i64>();
            let hi = op.offset as i64 + spans.iter().map(|&s| s.max(0)).sum::<i64>();
            if lo < 0 || hi >= len as i64 {
                return Err(bad(format!(
                    "operand {name} ({rows}x{cols}, batch {}) addresses elements {lo}..={hi} of a buffer of {len}",
                    self.batch
                )));
            }
        }
        if self.epilogue.has_bias() && len_bias < self.n {
            return Err(bad(format!(
                "the bias has {len_bias} elements, the output {} columns",
                self.n
            )));
        }
        Ok(())
    }
}
