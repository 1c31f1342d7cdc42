//! Tiled inner loops: a group whose members include float transcendental
//! functions or divisions by a scalar runs them as tile routines
//! (`wide/`: 512-bit where the ISA level is AVX-512, else 256-bit) instead
//! of inline 128-bit code, and its row reductions too.
//!
//! The inner loop walks tiles of [`TILE`] indices. For each tile, every
//! such member ("wide member", in order) first has its argument computed
//! by inline code into a stack slot, then its routine maps the slot in
//! place; last, the group's result is computed from the leaves and the
//! slots and stored or accumulated as usual. Slots hold 2 KiB each (64-byte
//! aligned, for `zmm` loads) and stay in L1, so the group still reads each
//! input and writes its output once.
//!
//! Invariants: a wide member's argument depends only on leaves, literals,
//! and members before it (which are either inline or already in their
//! slots); the routines compute the same bits as the inline code, so a
//! tiled kernel's results do not depend on whether it was tiled.

use super::emit::{scalar_type, Em};
use super::ops::is_long_expansion;
use super::{counted, wide, Acc, Eval, Gen, GenError, RowCtx, Src, INLINE_MAX};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{
    AbiParam, InstBuilder, MemFlagsData, SigRef, Signature, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use jaxon_ir::passes::moves_data;
use jaxon_ir::primitive::BinaryOp;
use jaxon_ir::primitive::Elementwise;
use jaxon_ir::{DType, Primitive};

/// Inner indices per tile.
const TILE: i64 = 512;

/// Inner extents below this stay untiled (a routine call per short row
/// would cost more than it saves).
const MIN_EXTENT: usize = 64;

/// Which members run as tile routines, and what each phase computes.
pub(super) struct TilePlan {
    /// The wide members, in order: (member, routine address).
    wide: Vec<(usize, usize)>,
    /// Per wide member: the scalar operand of a binary routine (a divisor).
    operands: Vec<Option<Scalar>>,
    /// Per wide member: how the routine gets its argument.
    args: Vec<Arg>,
    /// Per wide member: the members its argument needs (computed inline).
    arg_needs: Vec<Vec<bool>>,
    /// The members the group's result needs, wide members read from slots.
    result_needs: Vec<bool>,
    /// The result is the last wide member's value, stored contiguously: its
    /// routine writes the output directly and nothing else runs.
    direct: bool,
    /// A reduction along the inner dimension run by a row routine (on a
    /// wide member's slot or a contiguous leaf): its source and the
    /// addresses of its one-row and block-of-rows routines.
    row: Option<(RowSrc, usize, usize)>,
}

/// Where a row reduction reads its values.
#[derive(Clone, Copy)]
enum RowSrc {
    /// A wide member's slot.
    Slot(usize),
    /// A contiguous leaf.
    Leaf(usize),
}

/// The current tile: inner indices `t..tend`, `len` of them.
struct Tile {
    t: Value,
    tend: Value,
    len: Value,
}

/// The accumulator state of a row reduction: four 16-byte vectors (the
/// inline code's accumulators) and a scalar at byte 64.
const ROW_STATE: u32 = wide::STATE_BYTES as u32;

/// How a wide member's routine gets its argument.
enum Arg {
    /// Inline code computes it into the member's slot.
    Slot,
    /// The routine reads `leaf` (contiguous along the inner dimension)
    /// and scales and offsets it itself: `leaf * scale + offset`.
    Affine {
        leaf: usize,
        scale: Option<Scalar>,
        /// The offset, and whether it is subtracted (`x - c == x + -c`).
        offset: Option<(Scalar, bool)>,
    },
}

/// A value that is the same at every inner index.
#[derive(Clone, Copy)]
enum Scalar {
    Const(f64),
    /// A hoisted (inner stride 0) leaf.
    Hoisted(usize),
}

impl Gen {
    /// The tile plan, when the group is f32 or f64 vector code over long rows
    /// with at least one member that has a tile routine.
    pub(super) fn plan_tiles(&self) -> Option<TilePlan> {
        let extent = *self.dims.last()?;
        let numel: usize = self.dims.iter().product();
        // Small groups are emitted inline in program functions.
        let float_vectors = matches!((self.gdt, self.lanes), (DType::F32, 4) | (DType::F64, 2));
        if !float_vectors || extent < MIN_EXTENT || numel <= INLINE_MAX {
            return None;
        }
        let last = self.nodes.len() - usize::from(self.reduce.is_some());
        let mut is_wide = vec![false; self.nodes.len()];
        let mut wide = Vec::new();
        let mut operands = Vec::new();
        for (p, n) in self.nodes[..last].iter().enumerate() {
            if n.skip || n.fused_mul.is_some() || n.out_dt != self.gdt {
                continue;
            }
            let found = match (&n.prim, n.srcs.as_slice()) {
                (Primitive::Elementwise(Elementwise::Unary(op)), [_]) if n.in_dts == [self.gdt] => {
                    wide::routine(*op, self.gdt).map(|a| (a, None))
                }
                // Division by a scalar (softmax's and norms' `x / sum`):
                // the divide is the costly part, 8 lanes halve it.
                (Primitive::Elementwise(Elementwise::Binary(BinaryOp::Div)), [_, d])
                    if n.in_dts == [self.gdt; 2] =>
                {
                    match (wide::divide(self.gdt), self.scalar_of(d)) {
                        (Some(a), Some(c)) => Some((a, Some(c))),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some((addr, c)) = found {
                is_wide[p] = true;
                wide.push((p, addr));
                operands.push(c);
            }
        }
        let row = self.row_reduction(&is_wide);
        if wide.is_empty() && row.is_none() {
            return None;
        }
        let args = wide
            .iter()
            .map(|&(p, _)| self.affine(&self.nodes[p].srcs[0]).unwrap_or(Arg::Slot))
            .collect();
        let arg_needs = wide
            .iter()
            .map(|&(p, _)| self.needs(&self.nodes[p].srcs[0], &is_wide))
            .collect();
        let result_needs = self.needs(&self.result, &is_wide);
        let inner = self.dims.len() - 1;
        let direct = self.reduce.is_none()
            && self.out_dt == self.gdt
            && self.out_strides[inner] == 1
            && matches!((wide.last(), &self.result), (Some(&(p, _)), Src::Val(q)) if p == *q);
        Some(TilePlan {
            wide,
            operands,
            args,
            arg_needs,
            result_needs,
            direct,
            row,
        })
    }

    /// The row routine for a reduction along the inner dimension of a
    /// wide member or of a contiguous leaf of the group's float type.
    fn row_reduction(&self, is_wide: &[bool]) -> Option<(RowSrc, usize, usize)> {
        if !self.reduces_in_registers() || self.out_dt != self.gdt {
            return None;
        }
        let inner = self.dims.len() - 1;
        let src = match self.through(&self.result) {
            Src::Val(p) if is_wide[*p] => RowSrc::Slot(*p),
            Src::Leaf(i)
                if self.leaves[*i].dt == self.gdt && self.leaves[*i].strides[inner] == 1 =>
            {
                RowSrc::Leaf(*i)
            }
            _ => return None,
        };
        let (one, block) = wide::reduction(self.reduce?, self.gdt)?;
        Some((src, one, block))
    }

    /// `s`, looking through members that only move data (broadcasts,
    /// reshapes, ...): their index maps already moved the reads, so their
    /// value is their operand's.
    fn through<'s>(&'s self, mut s: &'s Src) -> &'s Src {
        while let Src::Val(q) = s {
            let n = &self.nodes[*q];
            if !moves_data(&n.prim) || n.skip || n.in_dts.first() != Some(&n.out_dt) {
                break;
            }
            s = &n.srcs[0];
        }
        s
    }

    /// `s` as a value the same at every inner index: a float literal or a
    /// hoisted leaf.
    fn scalar_of(&self, s: &Src) -> Option<Scalar> {
        let inner = self.dims.len() - 1;
        match self.through(s) {
            Src::Lit(l) if l.dtype == self.gdt => Some(Scalar::Const(l.as_f64())),
            Src::Leaf(i) => {
                let l = &self.leaves[*i];
                (l.dt == self.gdt && l.strides[inner] == 0).then_some(Scalar::Hoisted(*i))
            }
            _ => None,
        }
    }

    /// `src` as an affine function of one contiguous leaf, if it is one
    /// the routines compute themselves: `x`, `-x`, `x * s`, `s * x`, and
    /// those `+ c`, `c +` or `- c`, for scalars `s` and `c`.
    fn affine(&self, src: &Src) -> Option<Arg> {
        use jaxon_ir::primitive::{BinaryOp, UnaryOp};
        let inner = self.dims.len() - 1;
        let leaf = |s: &Src| match self.through(s) {
            Src::Leaf(i) => {
                let l = &self.leaves[*i];
                (l.dt == self.gdt && l.strides[inner] == 1).then_some(*i)
            }
            _ => None,
        };
        let scalar = |s: &Src| self.scalar_of(s);
        let member = |s: &Src| match self.through(s) {
            Src::Val(q) => {
                let n = &self.nodes[*q];
                (!n.skip && n.fused_mul.is_none() && n.out_dt == self.gdt).then_some(n)
            }
            _ => None,
        };
        // `x`, `-x`, `x * s` or `s * x`.
        let scaled = |s: &Src| -> Option<(usize, Option<Scalar>)> {
            if let Some(i) = leaf(s) {
                return Some((i, None));
            }
            let n = member(s)?;
            match (&n.prim, n.srcs.as_slice()) {
                (Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg)), [x]) => {
                    Some((leaf(x)?, Some(Scalar::Const(-1.0))))
                }
                (Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)), [a, b]) => {
                    match (leaf(a), leaf(b)) {
                        (Some(i), _) => Some((i, Some(scalar(b)?))),
                        (None, Some(i)) => Some((i, Some(scalar(a)?))),
                        (None, None) => None,
                    }
                }
                _ => None,
            }
        };
        if let Some((leaf, scale)) = scaled(src) {
            return Some(Arg::Affine {
                leaf,
                scale,
                offset: None,
            });
        }
        let n = member(src)?;
        let (x, c, negated) = match (&n.prim, n.srcs.as_slice()) {
            (Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)), [a, b]) => match scalar(b)
            {
                Some(c) => (a, c, false),
                None => (b, scalar(a)?, false),
            },
            (Primitive::Elementwise(Elementwise::Binary(BinaryOp::Sub)), [a, b]) => {
                (a, scalar(b)?, true)
            }
            _ => return None,
        };
        let (leaf, scale) = scaled(x)?;
        Some(Arg::Affine {
            leaf,
            scale,
            offset: Some((c, negated)),
        })
    }

    /// The members computing `target`, stopping at wide members (read
    /// from their slots). Operands always precede their users, so one
    /// backward pass finds them all.
    fn needs(&self, target: &Src, is_wide: &[bool]) -> Vec<bool> {
        let mut need = vec![false; self.nodes.len()];
        if let Src::Val(q) = target {
            need[*q] = true;
        }
        for p in (0..self.nodes.len()).rev() {
            if !need[p] || is_wide[p] {
                continue;
            }
            let n = &self.nodes[p];
            let fused = n.fused_mul.map(|(q, _)| &self.nodes[q].srcs);
            for s in n.srcs.iter().chain(fused.into_iter().flatten()) {
                if let Src::Val(q) = s {
                    need[*q] = true;
                }
            }
        }
        need
    }

    /// The inner loop over `start..n` in tiles (see the module docs).
    pub(super) fn inner_tiled(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
        plan: &TilePlan,
        jv: Variable,
        start: Value,
        n: Value,
    ) -> Result<(), GenError> {
        let es = self.gdt.size_bytes() as i64;
        let mut slots: Vec<Option<Value>> = vec![None; self.nodes.len()];
        for &(p, _) in &plan.wide {
            let data = StackSlotData::new(StackSlotKind::ExplicitSlot, (TILE * es) as u32, 6);
            let ss = b.create_sized_stack_slot(data);
            slots[p] = Some(b.ins().stack_addr(I64, ss, 0));
        }
        let mut sig = Signature::new(b.func.signature.call_conv);
        sig.params.extend([AbiParam::new(I64); 3]);
        let ft = scalar_type(self.gdt).ok_or_else(|| super::err(None, "tile dtype"))?;
        sig.params
            .extend([AbiParam::new(ft), AbiParam::new(ft), AbiParam::new(I32)]);
        sig.params.push(AbiParam::new(ft));
        let sig = b.import_signature(sig);
        let acc: Option<Acc> = if self.reduces_in_registers() {
            Some(self.acc_init(b)?)
        } else {
            None
        };
        let row_state = match (&plan.row, &acc) {
            (Some(_), Some(acc)) => Some(self.row_state_init(b, acc)?),
            _ => None,
        };
        let inner = self.dims.len() - 1;
        let tv = b.declare_var(I64);
        b.def_var(tv, start);
        let header = b.create_block();
        let body = b.create_block();
        let exit = b.create_block();
        b.ins().jump(header, &[]);
        b.switch_to_block(header);
        let t = b.use_var(tv);
        let more = b.ins().icmp(IntCC::SignedLessThan, t, n);
        b.ins().brif(more, body, &[], exit, &[]);
        b.switch_to_block(body);
        b.seal_block(body);
        let t = b.use_var(tv);
        // A row reduction of a leaf alone needs no slots: one call per row.
        let tend = if plan.wide.is_empty() {
            n
        } else {
            let full = b.ins().iadd_imm_s(t, TILE);
            let short = b.ins().icmp(IntCC::SignedLessThan, n, full);
            b.ins().select(short, n, full)
        };
        let len = b.ins().isub(tend, t);
        let tile = Tile { t, tend, len };
        for k in 0..plan.wide.len() {
            self.call_wide(b, ctx, plan, k, &slots, sig, jv, &tile)?;
        }
        let ev = Eval {
            target: &self.result,
            need: Some(&plan.result_needs),
            slots: &slots,
            tile_start: Some(t),
        };
        b.def_var(jv, t);
        if let (Some((src, addr, _)), Some(state)) = (plan.row, row_state) {
            let src = match src {
                RowSrc::Slot(p) => slots[p].ok_or_else(|| super::err(None, "tile slot"))?,
                RowSrc::Leaf(i) => {
                    let off = b.ins().imul_imm_s(t, es);
                    b.ins().iadd(ctx.leaf_addrs[i], off)
                }
            };
            let mut rsig = Signature::new(b.func.signature.call_conv);
            rsig.params.extend([AbiParam::new(I64); 3]);
            let rsig = b.import_signature(rsig);
            let callee = b.ins().iconst(I64, addr as i64);
            b.ins().call_indirect(rsig, callee, &[src, len, state]);
        }
        match &acc {
            _ if plan.direct || plan.row.is_some() => {}
            Some(acc) => self.acc_span(b, ctx, &ev, acc, jv, tend, self.lanes, true)?,
            None => {
                let long_body = self.nodes.iter().enumerate().any(|(p, n)| {
                    plan.result_needs[p] && slots[p].is_none() && is_long_expansion(&n.prim)
                });
                let unroll = !long_body && self.dims[inner] as i64 >= 4 * self.lanes as i64;
                self.store_span(b, ctx, &ev, jv, tend, self.lanes, unroll)?
            }
        }
        b.def_var(tv, tend);
        b.ins().jump(header, &[]);
        b.seal_block(header);
        b.switch_to_block(exit);
        b.seal_block(exit);
        if let (Some(acc), Some(state)) = (&acc, row_state) {
            self.row_state_load(b, acc, state)?;
        }
        match &acc {
            Some(acc) => self.acc_finish(b, ctx, acc),
            None => Ok(()),
        }
    }

    /// A stack slot holding a row reduction's accumulators, at the
    /// identity; returns its address.
    fn row_state_init(&self, b: &mut FunctionBuilder, acc: &Acc) -> Result<Value, GenError> {
        let data = StackSlotData::new(StackSlotKind::ExplicitSlot, ROW_STATE, 5);
        let ss = b.create_sized_stack_slot(data);
        let state = b.ins().stack_addr(I64, ss, 0);
        self.row_state_store(b, acc, state)?;
        Ok(state)
    }

    /// The leaf and block routine of a row reduction of a contiguous leaf
    /// alone (nothing else in the group runs per element): such a group
    /// can reduce [`wide::ROW_BLOCK`] rows per call.
    pub(super) fn leaf_row_block(&self) -> Option<(usize, usize)> {
        let plan = self.tile.as_ref()?;
        match plan.row {
            Some((RowSrc::Leaf(i), _, block)) if plan.wide.is_empty() => Some((i, block)),
            _ => None,
        }
    }

    /// Stores a row reduction's accumulators to the state at `state`.
    pub(super) fn row_state_store(
        &self,
        b: &mut FunctionBuilder,
        acc: &Acc,
        state: Value,
    ) -> Result<(), GenError> {
        let vectors = acc
            .vectors
            .as_ref()
            .ok_or_else(|| super::err(None, "row state"))?;
        let flags = MemFlagsData::trusted();
        for (k, &v) in vectors.iter().enumerate() {
            let id = b.use_var(v);
            b.ins().store(flags, id, state, 16 * k as i32);
        }
        let id = b.use_var(acc.scalar);
        b.ins().store(flags, id, state, 64);
        Ok(())
    }

    /// Moves a row reduction's accumulators from memory back into the
    /// inline code's variables.
    pub(super) fn row_state_load(
        &self,
        b: &mut FunctionBuilder,
        acc: &Acc,
        state: Value,
    ) -> Result<(), GenError> {
        let vectors = acc
            .vectors
            .as_ref()
            .ok_or_else(|| super::err(None, "row state"))?;
        let flags = MemFlagsData::trusted();
        for (k, &v) in vectors.iter().enumerate() {
            let vty = Em {
                b,
                lanes: self.lanes,
            }
            .fty(self.gdt);
            let x = b.ins().load(vty, flags, state, 16 * k as i32);
            b.def_var(v, x);
        }
        let sty = scalar_type(self.gdt).ok_or_else(|| super::err(None, "tile dtype"))?;
        let x = b.ins().load(sty, flags, state, 64);
        b.def_var(acc.scalar, x);
        Ok(())
    }

    /// Calls wide member `k`'s routine on the current tile: its argument
    /// read by the routine (affine) or first computed into its slot, its
    /// result into its slot or, for a direct result, the output.
    #[allow(clippy::too_many_arguments)]
    fn call_wide(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
        plan: &TilePlan,
        k: usize,
        slots: &[Option<Value>],
        sig: SigRef,
        jv: Variable,
        tile: &Tile,
    ) -> Result<(), GenError> {
        let es = self.gdt.size_bytes() as i64;
        let (p, addr) = plan.wide[k];
        let slot = slots[p].ok_or_else(|| super::err(None, "tile slot"))?;
        let dst = if plan.direct && k + 1 == plan.wide.len() {
            let off = b.ins().imul_imm_s(tile.t, es);
            b.ins().iadd(ctx.out_addr, off)
        } else {
            slot
        };
        let zero = self.scalar(b, ctx, Scalar::Const(0.0))?;
        let (src, scale, offset, mode) = match &plan.args[k] {
            Arg::Affine {
                leaf,
                scale,
                offset,
            } => {
                let off = b.ins().imul_imm_s(tile.t, es);
                let src = b.ins().iadd(ctx.leaf_addrs[*leaf], off);
                let mut mode = 0;
                let s = match scale {
                    Some(s) => {
                        mode |= wide::MUL;
                        self.scalar(b, ctx, *s)?
                    }
                    None => zero,
                };
                let o = match offset {
                    Some((c, negated)) => {
                        mode |= wide::ADD;
                        let c = self.scalar(b, ctx, *c)?;
                        if *negated {
                            b.ins().fneg(c)
                        } else {
                            c
                        }
                    }
                    None => zero,
                };
                (src, s, o, mode)
            }
            Arg::Slot => {
                let ev = Eval {
                    target: &self.nodes[p].srcs[0],
                    need: Some(&plan.arg_needs[k]),
                    slots,
                    tile_start: Some(tile.t),
                };
                self.fill_slot(b, ctx, &ev, slot, jv, tile.t, tile.tend)?;
                (slot, zero, zero, 0)
            }
        };
        let c = match plan.operands[k] {
            Some(c) => self.scalar(b, ctx, c)?,
            None => zero,
        };
        let callee = b.ins().iconst(I64, addr as i64);
        let mode = b.ins().iconst(I32, mode as i64);
        b.ins()
            .call_indirect(sig, callee, &[src, dst, tile.len, scale, offset, mode, c]);
        Ok(())
    }

    /// A scalar operand's value in this row.
    fn scalar(&self, b: &mut FunctionBuilder, ctx: &RowCtx, s: Scalar) -> Result<Value, GenError> {
        match s {
            Scalar::Const(c) if self.gdt == DType::F64 => Ok(b.ins().f64const(c)),
            Scalar::Const(c) => Ok(b.ins().f32const(c as f32)),
            Scalar::Hoisted(i) => ctx.hoisted[i]
                .map(|(v, _)| v)
                .ok_or_else(|| super::err(None, "scalar operand is not hoisted")),
        }
    }

    /// Stores `ev.target` for inner indices `t..tend` into `slot`.
    #[allow(clippy::too_many_arguments)]
    fn fill_slot(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
        ev: &Eval,
        slot: Value,
        jv: Variable,
        t: Value,
        tend: Value,
    ) -> Result<(), GenError> {
        let es = self.gdt.size_bytes() as i64;
        let mut res = Ok(());
        let mut put =
            |b: &mut FunctionBuilder, j: Value, lanes: u8| match self.value(b, ctx, ev, j, lanes) {
                Ok(v) => {
                    let rel = b.ins().isub(j, t);
                    let off = b.ins().imul_imm_s(rel, es);
                    let addr = b.ins().iadd(slot, off);
                    b.ins().store(MemFlagsData::trusted(), v, addr, 0);
                }
                Err(e) => res = Err(e),
            };
        b.def_var(jv, t);
        let step = self.lanes as i64;
        counted(b, jv, tend, 4 * step, &mut |b, j| {
            for u in 0..4 {
                let ju = b.ins().iadd_imm_s(j, u * step);
                put(b, ju, self.lanes);
            }
        });
        counted(b, jv, tend, step, &mut |b, j| put(b, j, self.lanes));
        counted(b, jv, tend, 1, &mut |b, j| put(b, j, 1));
        res
    }
}
