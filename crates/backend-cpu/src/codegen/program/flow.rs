//! Control flow of the program function: `while`, `scan` and `for_loop`
//! as Cranelift loops with double-buffered carries, `cond` as a branch
//! chain, and the `for_loop` trip count.

use super::{err, Addr, Emitter};
use crate::plan::groups::{LoopKind, LoopPrep, Prep};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I16, I32, I64, I8};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use jaxon_ir::{Atom, DType, IrError, Var};
use std::collections::HashMap;

impl Emitter<'_> {
    /// A `while` or `scan`. Carries are double-buffered: iteration `i`
    /// reads the current set and its body writes the next set (results
    /// computed in the body are written there directly), then the sets
    /// swap, so no carry is copied per iteration except results that are
    /// not computed in the body (constants, other carries).
    pub(super) fn emit_loop(
        &mut self,
        b: &mut FunctionBuilder,
        env: &[Option<Addr>],
        lp: &LoopPrep,
        scratch: Addr,
    ) -> Result<(), IrError> {
        let set_a = self.at(b, scratch);
        let set_b = self.at(b, scratch.plus(lp.second_set));
        let sub = scratch.plus(lp.sub_off);
        let ops = lp
            .operands
            .iter()
            .map(|a| self.atom(b, env, a))
            .collect::<Result<Vec<_>, _>>()?;
        let nc = lp.carry_bytes.len();
        // (body, its const operands, the carries' initial values, the body
        // invar position of each carry)
        let (body, body_consts, init, carry_pos): (
            &Prep,
            std::ops::Range<usize>,
            Vec<Addr>,
            Vec<usize>,
        ) = match &lp.kind {
            LoopKind::While {
                body,
                cond_nconsts,
                body_nconsts,
                ..
            } => {
                let n = cond_nconsts + body_nconsts;
                (
                    body,
                    *cond_nconsts..n,
                    ops.get(n..n + nc).map(<[Addr]>::to_vec).unwrap_or_default(),
                    (0..nc).map(|k| body_nconsts + k).collect(),
                )
            }
            LoopKind::Scan {
                body, num_consts, ..
            } => (
                body,
                0..*num_consts,
                ops.get(*num_consts..num_consts + nc)
                    .map(<[Addr]>::to_vec)
                    .unwrap_or_default(),
                (0..nc).map(|k| num_consts + k).collect(),
            ),
            LoopKind::For {
                body,
                body_nconsts,
                nimplicit,
                ..
            } => {
                let head = body_nconsts + nimplicit;
                let mut init: Vec<Addr> = ops
                    .get(*body_nconsts..head)
                    .map(<[Addr]>::to_vec)
                    .unwrap_or_default();
                init.extend(ops.get(head + 4..).unwrap_or_default());
                (
                    body,
                    0..*body_nconsts,
                    init,
                    (0..nc)
                        .map(|k| body_nconsts + k + usize::from(k >= *nimplicit))
                        .collect(),
                )
            }
        };
        if init.len() != nc {
            return Err(err("loop operands do not match its carries"));
        }
        let carry_at = |set: Value, k: usize| Addr {
            base: set,
            off: lp.carry_off[k] as i64,
        };
        let outs = &body.jaxpr.outvars;
        // Carries the body returns unchanged keep their value in both sets.
        let same: Vec<bool> = (0..nc)
            .map(|k| matches!(outs.get(k), Some(Atom::Var(v)) if body.jaxpr.invars.get(carry_pos[k]) == Some(v)))
            .collect();
        for k in 0..nc {
            self.copy(b, carry_at(set_a, k), init[k], lp.carry_bytes[k]);
            if same[k] {
                self.copy(b, carry_at(set_b, k), init[k], lp.carry_bytes[k]);
            }
        }
        // A for_loop's trip count, from its runtime bounds.
        let mut for_bounds = None;
        if let LoopKind::For {
            body_nconsts,
            nimplicit,
            reverse_transform,
            bound_dts,
            ..
        } = &lp.kind
        {
            let head = body_nconsts + nimplicit;
            let mut v = [None; 3];
            for (k, slot) in v.iter_mut().enumerate() {
                let a = *ops.get(head + k).ok_or_else(|| err("for_loop bounds"))?;
                *slot = Some(self.load_int(b, a, bound_dts[k]));
            }
            let (lo, hi, step) = match v {
                [Some(lo), Some(hi), Some(step)] => (lo, hi, step),
                _ => return Err(err("for_loop bounds")),
            };
            self.check_for_step(b, step, *reverse_transform);
            let trips = for_trips(b, lo, hi, step, *reverse_transform);
            for_bounds = Some((lo, step, trips));
        }
        let cur_v = b.declare_var(I64);
        let nxt_v = b.declare_var(I64);
        b.def_var(cur_v, set_a);
        b.def_var(nxt_v, set_b);
        let header = b.create_block();
        let body_blk = b.create_block();
        let exit = b.create_block();
        let counter = b.declare_var(I64);
        let zero = b.ins().iconst(I64, 0);
        b.def_var(counter, zero);
        b.ins().jump(header, &[]);
        b.switch_to_block(header);
        match &lp.kind {
            LoopKind::While {
                cond, cond_nconsts, ..
            } => {
                let cur = b.use_var(cur_v);
                let mut cins: Vec<Addr> = ops[..*cond_nconsts].to_vec();
                cins.extend((0..nc).map(|k| carry_at(cur, k)));
                let cconsts = self.consts_of(b, cond);
                let r = self.region(b, cond, &cins, &cconsts, sub, &HashMap::new())?;
                let pred = r
                    .first()
                    .ok_or_else(|| err("while cond without a result"))?;
                let pv = self.at(b, *pred);
                let x = b.ins().load(I8, MemFlagsData::new().with_notrap(), pv, 0);
                b.ins().brif(x, body_blk, &[], exit, &[]);
            }
            LoopKind::Scan { length, .. } => {
                let i = b.use_var(counter);
                let c = b.ins().icmp_imm_s(IntCC::SignedLessThan, i, *length as i64);
                b.ins().brif(c, body_blk, &[], exit, &[]);
            }
            LoopKind::For { .. } => {
                let (_, _, trips) = for_bounds.ok_or_else(|| err("for_loop bounds"))?;
                let i = b.use_var(counter);
                let c = b.ins().icmp(IntCC::SignedLessThan, i, trips);
                b.ins().brif(c, body_blk, &[], exit, &[]);
            }
        }
        b.switch_to_block(body_blk);
        let cur = b.use_var(cur_v);
        let nxt = b.use_var(nxt_v);
        let mut bins: Vec<Addr> = ops[body_consts.clone()].to_vec();
        bins.extend((0..nc).map(|k| carry_at(cur, k)));
        if let (
            LoopKind::For {
                nimplicit,
                bound_dts,
                ..
            },
            Some((lo, step, _)),
        ) = (&lp.kind, for_bounds)
        {
            // The index value `lo + k step`, stored in the index dtype.
            let i = b.use_var(counter);
            let off = b.ins().imul(i, step);
            let iv = b.ins().iadd(lo, off);
            let at = scratch.plus(lp.index_off);
            let p = self.at(b, at);
            let flags = MemFlagsData::new().with_notrap();
            let v = match bound_dts[3].size_bytes() {
                8 => iv,
                1 => b.ins().ireduce(I8, iv),
                2 => b.ins().ireduce(I16, iv),
                _ => b.ins().ireduce(I32, iv),
            };
            b.ins().store(flags, v, p, 0);
            bins.insert(body_consts.len() + nimplicit, at);
        }
        let mut fixed: HashMap<Var, Addr> = HashMap::new();
        let mut y_dst: Vec<Option<Addr>> = Vec::new();
        if let LoopKind::Scan {
            length,
            reverse,
            x_rows,
            y_rows,
            ..
        } = &lp.kind
        {
            let i = b.use_var(counter);
            let idx = if *reverse {
                let last = b.ins().iconst(I64, *length as i64 - 1);
                b.ins().isub(last, i)
            } else {
                i
            };
            for (x, rb) in ops[body_consts.end + nc..].iter().zip(x_rows) {
                let base = self.at(b, *x);
                let off = b.ins().imul_imm_s(idx, *rb as i64);
                bins.push(Addr {
                    base: b.ins().iadd(base, off),
                    off: 0,
                });
            }
            for (out, rb) in lp.outs[nc.min(lp.outs.len())..].iter().zip(y_rows) {
                y_dst.push(match out {
                    Some(v) => {
                        let dst = Self::var(env, *v)?;
                        let base = self.at(b, dst);
                        let off = b.ins().imul_imm_s(idx, *rb as i64);
                        Some(Addr {
                            base: b.ins().iadd(base, off),
                            off: 0,
                        })
                    }
                    None => None,
                });
            }
        }
        for (p, a) in outs.iter().enumerate() {
            if let (Some(true), Atom::Var(v)) = (body.direct.get(p), a) {
                let dst = if p < nc {
                    Some(carry_at(nxt, p))
                } else {
                    y_dst.get(p - nc).copied().flatten()
                };
                let dst = dst.ok_or_else(|| err("direct loop result without a destination"))?;
                fixed.insert(*v, dst);
            }
        }
        let bconsts = self.consts_of(b, body);
        let res = self.region(b, body, &bins, &bconsts, sub, &fixed)?;
        if res.len() < nc {
            return Err(err("loop body returns fewer values than its carries"));
        }
        for k in 0..nc {
            if !same[k] && !body.direct.get(k).copied().unwrap_or(false) {
                self.copy(b, carry_at(nxt, k), res[k], lp.carry_bytes[k]);
            }
        }
        if let LoopKind::Scan { y_rows, .. } = &lp.kind {
            for (j, (y, rb)) in res[nc..].iter().zip(y_rows).enumerate() {
                if let (Some(d), false) = (
                    y_dst.get(j).copied().flatten(),
                    body.direct.get(nc + j).copied().unwrap_or(false),
                ) {
                    self.copy(b, d, *y, *rb);
                }
            }
        }
        b.def_var(cur_v, nxt);
        b.def_var(nxt_v, cur);
        let i = b.use_var(counter);
        let next = b.ins().iadd_imm_s(i, 1);
        b.def_var(counter, next);
        b.ins().jump(header, &[]);
        b.switch_to_block(exit);
        let cur = b.use_var(cur_v);
        for (k, (out, bytes)) in lp.outs.iter().zip(&lp.carry_bytes).enumerate() {
            if let Some(v) = out {
                let dst = Self::var(env, *v)?;
                self.copy(b, dst, carry_at(cur, k), *bytes);
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_cond(
        &mut self,
        b: &mut FunctionBuilder,
        env: &[Option<Addr>],
        branches: &[Prep],
        index: &Atom,
        idx_dt: DType,
        operands: &[Atom],
        outs: &[Option<Var>],
        scratch: Addr,
    ) -> Result<(), IrError> {
        let ia = self.atom(b, env, index)?;
        let ops = operands
            .iter()
            .map(|a| self.atom(b, env, a))
            .collect::<Result<Vec<_>, _>>()?;
        let flags = MemFlagsData::new().with_notrap();
        let p = self.at(b, ia);
        let raw = match idx_dt.size_bytes() {
            1 => b.ins().load(I8, flags, p, 0),
            2 => b.ins().load(I16, flags, p, 0),
            4 => b.ins().load(I32, flags, p, 0),
            _ => b.ins().load(I64, flags, p, 0),
        };
        let wide = if idx_dt.size_bytes() == 8 {
            raw
        } else if idx_dt.is_signed_int() {
            b.ins().sextend(I64, raw)
        } else {
            b.ins().uextend(I64, raw)
        };
        let merge = b.create_block();
        let n = branches.len();
        let blocks: Vec<_> = (0..n).map(|_| b.create_block()).collect();
        // Clamp: below 0 takes branch 0, at or above n the last branch.
        for (k, blk) in blocks.iter().enumerate().take(n - 1) {
            let cc = if k == 0 {
                IntCC::SignedLessThanOrEqual
            } else {
                IntCC::Equal
            };
            let c = b.ins().icmp_imm_s(cc, wide, k as i64);
            let next = b.create_block();
            b.ins().brif(c, *blk, &[], next, &[]);
            b.switch_to_block(next);
        }
        b.ins().jump(blocks[n - 1], &[]);
        for (br, blk) in branches.iter().zip(&blocks) {
            b.switch_to_block(*blk);
            let consts = self.consts_of(b, br);
            let mut fixed = HashMap::new();
            for ((a, o), d) in br.jaxpr.outvars.iter().zip(outs).zip(&br.direct) {
                if let (Atom::Var(v), Some(w), true) = (a, o, d) {
                    fixed.insert(*v, Self::var(env, *w)?);
                }
            }
            let res = self.region(b, br, &ops, &consts, scratch, &fixed)?;
            for (((r, o), a), d) in res.iter().zip(outs).zip(&br.jaxpr.outvars).zip(&br.direct) {
                if let (Some(v), false) = (o, d) {
                    let dst = Self::var(env, *v)?;
                    let bytes = br
                        .jaxpr
                        .atom_aval(a)
                        .and_then(|av| jaxon_ir::passes::value_bytes(&av))
                        .ok_or_else(|| err("cond result of unknown size"))?;
                    self.copy(b, dst, *r, bytes);
                }
            }
            b.ins().jump(merge, &[]);
        }
        b.switch_to_block(merge);
        Ok(())
    }
}

/// Whether the interpreter refuses a `for_loop` step (an `i64`): 0, or not
/// positive without the reverse transform.
pub(super) fn refused_step(b: &mut FunctionBuilder, step: Value, reverse: bool) -> Value {
    let zero = b.ins().iconst(I64, 0);
    let cc = if reverse {
        IntCC::Equal
    } else {
        IntCC::SignedLessThanOrEqual
    };
    b.ins().icmp(cc, step, zero)
}

/// The trip count of a `for_loop`, as the interpreter computes it: with
/// the reverse transform `ceil((hi - lo) / step)` (either sign of step),
/// else `ceil((hi - lo) / step)` for a positive step, at least 0. A step
/// the interpreter rejects (0, or not positive without the transform)
/// runs no iteration (and `check_for_step` has recorded its error).
fn for_trips(b: &mut FunctionBuilder, lo: Value, hi: Value, step: Value, reverse: bool) -> Value {
    let zero = b.ins().iconst(I64, 0);
    let one = b.ins().iconst(I64, 1);
    let bad = refused_step(b, step, reverse);
    let safe = b.ins().select(bad, one, step);
    let dist = b.ins().isub(hi, lo);
    let q = b.ins().sdiv(dist, safe);
    let r = b.ins().srem(dist, safe);
    // Round the quotient up when there is a remainder and dist, step have
    // the same sign (then q >= 0).
    let has_rem = b.ins().icmp(IntCC::NotEqual, r, zero);
    let dneg = b.ins().icmp(IntCC::SignedLessThan, dist, zero);
    let sneg = b.ins().icmp(IntCC::SignedLessThan, safe, zero);
    let same_sign = b.ins().icmp(IntCC::Equal, dneg, sneg);
    let up = b.ins().band(has_rem, same_sign);
    let up = b.ins().uextend(I64, up);
    let q = b.ins().iadd(q, up);
    let q = b.ins().smax(q, zero);
    b.ins().select(bad, zero, q)
}
