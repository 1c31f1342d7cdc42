//! A `dot_general` whose operands are box reads of refs (the `get`s of a
//! Pallas kernel's `block_k` loop, `x_ref[:, ds(k, bk)]`): one native step
//! that finds each box from the index operands and has the GEMM read it in
//! place, with the ref's strides, instead of copying it out first.

use super::{NativeOp, RawArg};
use crate::error::run_error;
use crate::ops::dot::DotPlan;
use jaxon_ir::{HostArray, IrError, Storage};
use std::borrow::Cow;

/// An operand read from a box of a ref.
#[derive(Debug)]
pub(crate) struct BoxRead {
    /// The `get` (it names the box; when the box is not one, it copies).
    pub get: Box<dyn NativeOp>,
    /// Number of its index operands (after the ref).
    pub n_idx: usize,
}

/// `[x +] l · r` with `l` and/or `r` box reads. Operands: per side, the ref
/// and its index operands or the operand itself; then `x` when `acc`.
#[derive(Debug)]
pub(crate) struct BoxDot {
    /// The product of the operands as values (accumulating when `acc`).
    pub plan: DotPlan,
    pub reads: [Option<BoxRead>; 2],
    pub acc: bool,
}

impl NativeOp for BoxDot {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        let bad = || run_error("dot_general of box reads: bad operands");
        let mut at = 0;
        let mut ops = Vec::with_capacity(2);
        for r in &self.reads {
            match r {
                None => {
                    ops.push(Cow::Borrowed(*inputs.get(at).ok_or_else(bad)?));
                    at += 1;
                }
                Some(r) => {
                    let args = inputs.get(at..at + 1 + r.n_idx).ok_or_else(bad)?;
                    let read = r.get.run(args, 1)?.into_iter().next().ok_or_else(bad)?;
                    ops.push(Cow::Owned(read));
                    at += 1 + r.n_idx;
                }
            }
        }
        let prod = self.plan.run(&ops[0], &ops[1], threads)?;
        if !self.acc {
            return Ok(vec![prod]);
        }
        let x = inputs.get(at).ok_or_else(bad)?;
        let data = match (x.data(), prod.data()) {
            (Storage::F32(a), Storage::F32(b)) => {
                Storage::F32(a.iter().zip(b).map(|(a, b)| a + b).collect())
            }
            (Storage::F64(a), Storage::F64(b)) => {
                Storage::F64(a.iter().zip(b).map(|(a, b)| a + b).collect())
            }
            _ => return Err(bad()),
        };
        Ok(vec![HostArray::new(prod.shape().to_vec(), data)?])
    }

    unsafe fn run_raw_threads(
        &self,
        ins: &[RawArg<'_>],
        outs: &[RawArg<'_>],
        threads: usize,
    ) -> Option<Result<(), IrError>> {
        let [out] = outs else {
            return None;
        };
        let mut plan = Cow::Borrowed(&self.plan);
        let mut ptrs = [std::ptr::null::<u8>(); 2];
        let mut at = 0;
        for (side, r) in self.reads.iter().enumerate() {
            let Some(r) = r else {
                ptrs[side] = ins.get(at)?.ptr;
                at += 1;
                continue;
            };
            let rf = ins.get(at)?;
            let mut scalars = vec![HostArray::zeros(rf.dtype, &[])];
            for a in ins.get(at + 1..at + 1 + r.n_idx)? {
                if !a.shape.is_empty() || a.dtype.is_float() {
                    return None;
                }
                // SAFETY: the caller's contract: a scalar of this dtype.
                scalars.push(unsafe { crate::run::raw::read_array(a.ptr, a.dtype, &[]) }.ok()?);
            }
            at += 1 + r.n_idx;
            let args: Vec<&HostArray> = scalars.iter().collect();
            let start = match r.get.read_box(rf.shape, &args)? {
                Ok(Some((start, _, _))) => start,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            // `None` unless the box has the operand's shape inside the ref.
            plan = Cow::Owned(plan.with_operand_view(side, rf.shape, &start)?);
            ptrs[side] = rf.ptr;
        }
        if self.acc {
            let x = ins.get(at)?;
            let bytes = x.dtype.size_bytes() * x.shape.iter().product::<usize>();
            if x.dtype != out.dtype || x.shape != out.shape {
                return None;
            }
            // SAFETY: both hold a value of this type; the result does not
            // alias an operand (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(x.ptr, out.ptr, bytes) };
        }
        Some(plan.run_raw(ptrs[0], ptrs[1], out.ptr, std::ptr::null(), threads))
    }
}
