//! Variants of a [`DotPlan`] that read or write inside larger arrays: an
//! operand read in place from a static slice of its array
//! (`with_operand_view`), a 2-D result written with a row stride
//! (`with_out_row_stride`), and whether the plan can accumulate into its
//! destination in one pass (`can_accumulate`). The peepholes of
//! `plan::dot_fuse` and Pallas blocks use them.

use super::{row_major_strides, DotPlan, Strided};
use jaxon_ir::DType;

impl DotPlan {
    /// This plan writing its (2-D, unbatched) result inside a wider array
    /// whose rows are `rs` elements apart, when it runs as one direct GEMM.
    pub(crate) fn with_out_row_stride(&self, rs: usize) -> Option<DotPlan> {
        let ok = self.can_accumulate()
            && !self.accumulate
            && self.b == 1
            && self.out_shape.len() == 2
            && rs >= self.n;
        ok.then(|| DotPlan {
            out_rs: Some(rs),
            ..self.clone()
        })
    }

    /// This plan reading operand `side` (0: lhs, 1: rhs) in place from the
    /// array of shape `outer` of which it is the static unit-stride slice
    /// starting at `start`, when it still runs as one strided GEMM.
    pub(crate) fn with_operand_view(
        &self,
        side: usize,
        outer: &[usize],
        start: &[usize],
    ) -> Option<DotPlan> {
        let shape = if side == 0 {
            &self.lhs_shape
        } else {
            &self.rhs_shape
        };
        let fits = outer.len() == shape.len()
            && start.len() == shape.len()
            && (0..shape.len()).all(|d| start[d] + shape[d] <= outer[d]);
        if !fits
            || !matches!(self.dtype, DType::F32 | DType::F64)
            || self.layout.views[side].is_some()
        {
            return None;
        }
        let st = row_major_strides(outer);
        let off: usize = start.iter().zip(&st).map(|(a, b)| a * b).sum();
        // The buffer is viewed only up to the slice's last element: a
        // Pallas window may extend past its array.
        let len = if shape.contains(&0) {
            off
        } else {
            off + 1
                + shape
                    .iter()
                    .zip(&st)
                    .map(|(n, t)| (n - 1) * t)
                    .sum::<usize>()
        };
        let mut p = self.clone();
        p.layout.strides[side] = st;
        p.layout.views[side] = Some((off, len));
        let (ls, rs, dn) = (&p.lhs_shape, &p.rhs_shape, &p.layout.dn);
        let free = |s: &[usize], batch: &[usize], con: &[usize]| -> Vec<usize> {
            (0..s.len())
                .filter(|d| !batch.contains(d) && !con.contains(d))
                .collect()
        };
        let lfree = free(ls, &dn.lhs_batch, &dn.lhs_contracting);
        let rfree = free(rs, &dn.rhs_batch, &dn.rhs_contracting);
        let [lst, rst] = &p.layout.strides;
        let st = Strided::new(ls, rs, dn, &lfree, &rfree, lst, rst)?;
        p.strided = Some(Box::new(st));
        Some(p)
    }

    /// Whether an accumulating copy of this plan runs as one GEMM pass
    /// (f32/f64 operands read directly or in place).
    pub(crate) fn can_accumulate(&self) -> bool {
        let identity = |p: &[usize]| p.iter().enumerate().all(|(i, &q)| i == q);
        matches!(self.dtype, DType::F32 | DType::F64)
            && (self.strided.is_some()
                || (identity(&self.lhs_perm)
                    && identity(&self.rhs_perm)
                    && self.layout.views == [None, None]))
    }
}
