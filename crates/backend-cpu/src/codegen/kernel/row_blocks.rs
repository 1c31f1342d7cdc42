//! Row reductions of a contiguous leaf, [`ROW_BLOCK`] rows per routine
//! call: `sum(x, axis=-1)` and its max/min streams from several rows at
//! once, which keeps more of a core's memory requests in flight (one row
//! at a time: about 24 GB/s on two cores here; four: about 30).
//!
//! The loop over the rows' dimension steps by [`ROW_BLOCK`]: each step
//! sets the rows' states to the identity, calls the block routine, then
//! combines each row's state into its output element exactly as the
//! one-row path does; the rows left over run that path. Invariant: the
//! block routine reduces each row in the one-row routine's order, so the
//! results do not depend on the blocking.

use super::wide::{ROW_BLOCK, STATE_BYTES};
use super::{counted, Gen, GenError};
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    AbiParam, InstBuilder, SigRef, Signature, StackSlot, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};

impl Gen {
    /// The loop over dimension `d`, the one just outside the inner rows,
    /// in blocks of rows when the group is a leaf's row reduction; `false`
    /// (nothing emitted) otherwise.
    pub(super) fn row_block_loop(
        &self,
        b: &mut FunctionBuilder,
        bases: &[Value],
        idx: &[Variable],
        d: usize,
        (start, end): (Value, Value),
        range: (Value, Value),
    ) -> Result<bool, GenError> {
        let Some((leaf, routine)) = self.leaf_row_block() else {
            return Ok(false);
        };
        if d + 2 != self.dims.len() || self.dims[d] < ROW_BLOCK {
            return Ok(false);
        }
        let data = StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (ROW_BLOCK * STATE_BYTES) as u32,
            5,
        );
        let ss = b.create_sized_stack_slot(data);
        let mut sig = Signature::new(b.func.signature.call_conv);
        sig.params.extend([AbiParam::new(I64); 4]);
        let call = BlockCall {
            sig: b.import_signature(sig),
            routine,
            leaf,
            ss,
        };
        b.def_var(idx[d], start);
        let mut res = Ok(());
        counted(b, idx[d], end, ROW_BLOCK as i64, &mut |b, i| {
            if res.is_ok() {
                res = self.row_block(b, bases, idx, d, i, &call);
            }
        });
        res?;
        // The rows left over, one at a time.
        let mut res = Ok(());
        counted(b, idx[d], end, 1, &mut |b, _| {
            if res.is_ok() {
                res = self.outer(b, bases, idx, d + 1, range);
            }
        });
        res.map(|()| true)
    }

    /// One block: rows `i..i + ROW_BLOCK` of dimension `d`.
    fn row_block(
        &self,
        b: &mut FunctionBuilder,
        bases: &[Value],
        idx: &[Variable],
        d: usize,
        i: Value,
        call: &BlockCall,
    ) -> Result<(), GenError> {
        let states = b.ins().stack_addr(I64, call.ss, 0);
        let state = |b: &mut FunctionBuilder, q: usize| {
            b.ins().iadd_imm_s(states, (q * STATE_BYTES) as i64)
        };
        let identity = self.acc_init(b)?;
        for q in 0..ROW_BLOCK {
            let at = state(b, q);
            self.row_state_store(b, &identity, at)?;
        }
        let first = self.row_ctx(b, bases, idx)?;
        let n = b.ins().iconst(I64, self.dims[d + 1] as i64);
        let stride = b.ins().iconst(I64, self.leaves[call.leaf].strides[d]);
        let callee = b.ins().iconst(I64, call.routine as i64);
        let src = first.leaf_addrs[call.leaf];
        b.ins()
            .call_indirect(call.sig, callee, &[src, n, states, stride]);
        for q in 0..ROW_BLOCK {
            let row = b.ins().iadd_imm_s(i, q as i64);
            b.def_var(idx[d], row);
            let ctx = self.row_ctx(b, bases, idx)?;
            let acc = self.acc_init(b)?;
            let at = state(b, q);
            self.row_state_load(b, &acc, at)?;
            self.acc_finish(b, &ctx, &acc)?;
        }
        Ok(())
    }
}

/// What every block's call needs: the routine's signature and address,
/// the leaf it reads and the stack slot of the rows' states.
struct BlockCall {
    sig: SigRef,
    routine: usize,
    leaf: usize,
    ss: StackSlot,
}
