//! The host model of a [`GemmPlan`]: what cuBLASLt computes, element by
//! element, for the simulator and for checking the library on a GPU.
//!
//! Sums are formed in f64 and rounded once to the output dtype; the
//! library sums in f32 (f64 for `Compute::F64`), so comparisons with it
//! allow for the f32 rounding of `k` terms.

use super::{Compute, Epilogue, GemmPlan};
use crate::error::Result;
use crate::kir::Const;

/// Runs `plan` on host values (`a`, `b`, `bias` as stored; `out` read when
/// accumulating, then written).
pub fn run(plan: &GemmPlan, a: &[f64], b: &[f64], bias: &[f64], out: &mut [f64]) -> Result<()> {
    plan.validate(
        a.len() as u64,
        b.len() as u64,
        out.len() as u64,
        bias.len() as u64,
    )?;
    let load = |x: f64| match plan.compute {
        Compute::Tf32 => tf32(x),
        Compute::F32 | Compute::F64 => x,
    };
    for bt in 0..plan.batch {
        for i in 0..plan.m {
            for j in 0..plan.n {
                let mut acc = 0.0;
                for p in 0..plan.k {
                    acc += load(a[plan.a.index(bt, i, p) as usize])
                        * load(b[plan.b.index(bt, p, j) as usize]);
                }
                let o = plan.out.index(bt, i, j) as usize;
                if plan.accumulate {
                    acc += out[o];
                }
                let bias_j = if plan.epilogue.has_bias() {
                    bias[j as usize]
                } else {
                    0.0
                };
                let x = epilogue(plan.epilogue, acc, bias_j);
                out[o] = Const::from_f64(plan.out_dtype, x).to_f64();
            }
        }
    }
    Ok(())
}

/// The epilogue applied to one element.
pub fn epilogue(e: Epilogue, x: f64, bias: f64) -> f64 {
    match e {
        Epilogue::None => x,
        Epilogue::Relu => x.max(0.0),
        Epilogue::Bias => x + bias,
        Epilogue::BiasRelu => (x + bias).max(0.0),
        Epilogue::Gelu => gelu_tanh(x),
        Epilogue::BiasGelu => gelu_tanh(x + bias),
    }
}

/// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
pub fn gelu_tanh(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
}

/// `x` (an f32 value) rounded to tf32 as `cvt.rna.tf32.f32` does: to
/// nearest, ties away from zero, 10 mantissa bits.
pub fn tf32(x: f64) -> f64 {
    let f = x as f32;
    if !f.is_finite() {
        return f as f64;
    }
    let bits = (f.to_bits().wrapping_add(0x1000)) & !0x1fff;
    f32::from_bits(bits) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blas::Operand;
    use jaxon_ir::DType;

    #[test]
    fn transposed_operands_and_epilogue() {
        // a = [[1, 2], [3, 4]] stored transposed; b = identity; bias [10, 20].
        let mut plan = GemmPlan::dense(1, 2, 2, 2, DType::F32, DType::F32);
        plan.a = Operand::transposed(2, 2);
        plan.epilogue = Epilogue::BiasRelu;
        let a = [1.0, 3.0, 2.0, 4.0];
        let b = [1.0, 0.0, 0.0, -1.0];
        let mut out = [f64::NAN; 4];
        run(&plan, &a, &b, &[10.0, 1.0], &mut out).unwrap();
        assert_eq!(out, [11.0, 0.0, 13.0, 0.0]);
    }

    #[test]
    fn accumulates_and_broadcasts_a_batch_stride_of_zero() {
        let mut plan = GemmPlan::dense(2, 1, 1, 2, DType::F64, DType::F64);
        plan.b.batch_stride = 0;
        plan.accumulate = true;
        let mut out = [100.0, 200.0];
        run(&plan, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0], &[], &mut out).unwrap();
        assert_eq!(out, [117.0, 239.0]);
    }

    #[test]
    fn out_of_range_plans_are_errors() {
        let plan = GemmPlan::dense(2, 4, 4, 4, DType::F32, DType::F32);
        plan.validate(32, 32, 32, 0).unwrap();
        let e = plan.validate(31, 32, 32, 0).unwrap_err().to_string();
        assert!(e.contains("operand a") && e.contains("buffer of 31"), "{e}");
        let mut p2 = plan;
        p2.a.row_stride = 2;
        p2.a.col_stride = 3;
        let e = p2.validate(1000, 1000, 1000, 0).unwrap_err().to_string();
        assert!(e.contains("one must be 1"), "{e}");
        let p3 = GemmPlan::dense(1, 2, 2, 2, DType::I32, DType::I32);
        assert!(p3.validate(4, 4, 4, 0).is_err());
    }

    #[test]
    fn tf32_rounds_ties_away() {
        let one_plus_half_ulp = 1.0 + 2f64.powi(-11);
        assert_eq!(tf32(one_plus_half_ulp), 1.0 + 2f64.powi(-10));
        assert_eq!(tf32(1.0 + 2f64.powi(-12)), 1.0);
        assert_eq!(tf32(-one_plus_half_ulp), -(1.0 + 2f64.powi(-10)));
    }
}
