//! Emission of a program function: one Cranelift function
//! `fn(io, arena, ctx)` that runs a prepared jaxpr natively. Fused kernels
//! are direct calls (or a trampoline that splits them over threads), GEMMs
//! and other native steps are trampoline calls, and `while`, `scan` and
//! `cond` are Cranelift loops and branches with their bodies emitted
//! inline: no Rust code runs per iteration unless a body holds a native
//! step.
//!
//! Every value has a fixed address: an io table entry (arguments,
//! constants, output buffers), the arena plus its planned offset, a
//! constant embedded in the program (nested consts, literals), or, inside a
//! scan body, a row of an `xs` or `ys` array. Loop carries live in two sets
//! in their loop's scratch that swap roles each iteration; results a body
//! or branch computes are written straight to their destination (the next
//! carry set, a `ys` row, a `cond` output).

use crate::prep::{array_bytes, GPrep, KPrep, LoopKind, LoopPrep, Prep};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I16, I32, I64, I8, I8X16};
use cranelift_codegen::ir::{
    AbiParam, FuncRef, Function, InstBuilder, MemFlagsData, Signature, StackSlotData,
    StackSlotKind, UserFuncName, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Module};
use jaxon_ir::{Atom, DType, HostArray, IrError, Var};
use std::collections::HashMap;

/// An address: a pointer value plus a constant byte offset.
#[derive(Clone, Copy, Debug)]
struct Addr {
    base: Value,
    off: i64,
}

impl Addr {
    fn plus(self, off: usize) -> Addr {
        Addr {
            base: self.base,
            off: self.off + off as i64,
        }
    }
}

/// Where the top-level values live in the io table.
pub(crate) struct TopIo {
    /// io index of each output buffer's variable.
    pub outputs: HashMap<Var, usize>,
}

/// Emitter state for one program function.
pub(crate) struct Emitter<'a> {
    module: &'a mut cranelift_jit::JITModule,
    cfg: TargetFrontendConfig,
    kernel_ids: Vec<Option<FuncId>>,
    frefs: HashMap<usize, FuncRef>,
    tramps: [FuncId; 3],
    trefs: [Option<FuncRef>; 3],
    /// Bytes whose addresses the code embeds.
    pub pinned: Vec<Box<[u64]>>,
    ctx: Option<Value>,
}

fn err(m: impl Into<String>) -> IrError {
    IrError::Eval(format!("cpu backend: {}", m.into()))
}

const TRAMP_PAR: usize = 0;
const TRAMP_DOT: usize = 1;
const TRAMP_STEP: usize = 2;

impl<'a> Emitter<'a> {
    pub fn new(
        module: &'a mut cranelift_jit::JITModule,
        kernel_ids: Vec<Option<FuncId>>,
        tramps: [FuncId; 3],
    ) -> Emitter<'a> {
        let cfg = module.target_config();
        Emitter {
            module,
            cfg,
            kernel_ids,
            frefs: HashMap::new(),
            tramps,
            trefs: [None; 3],
            pinned: Vec::new(),
            ctx: None,
        }
    }

    /// Builds the program function of `top`.
    pub fn program(&mut self, top: &Prep, io: &TopIo) -> Result<Function, IrError> {
        let mut sig = Signature::new(self.cfg.default_call_conv);
        for _ in 0..3 {
            sig.params.push(AbiParam::new(I64));
        }
        let mut func = Function::with_name_signature(UserFuncName::user(1, 0), sig);
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let (io_ptr, arena) = (params[0], params[1]);
        self.ctx = Some(params[2]);
        let flags = MemFlagsData::trusted();
        let j = &top.jaxpr;
        let n_in = j.invars.len();
        let load = |b: &mut FunctionBuilder, k: usize| Addr {
            base: b.ins().load(I64, flags, io_ptr, (8 * k) as i32),
            off: 0,
        };
        let ins: Vec<Addr> = (0..n_in).map(|k| load(&mut b, k)).collect();
        let consts: Vec<Addr> = (0..j.constvars.len())
            .map(|k| load(&mut b, n_in + k))
            .collect();
        let mut fixed: HashMap<Var, Addr> = HashMap::new();
        for (v, k) in &io.outputs {
            fixed.insert(*v, load(&mut b, *k));
        }
        let base = Addr {
            base: arena,
            off: 0,
        };
        self.region(&mut b, top, &ins, &consts, base, &fixed)?;
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(self.cfg);
        Ok(func)
    }

    fn at(&self, b: &mut FunctionBuilder, a: Addr) -> Value {
        if a.off == 0 {
            a.base
        } else {
            b.ins().iadd_imm_s(a.base, a.off)
        }
    }

    /// The address of embedded constant bytes.
    fn pin(&mut self, b: &mut FunctionBuilder, bytes: &[u8]) -> Addr {
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)].into_boxed_slice();
        for (i, x) in bytes.iter().enumerate() {
            words[i / 8] |= (*x as u64) << (8 * (i % 8));
        }
        let p = words.as_ptr() as i64;
        self.pinned.push(words);
        Addr {
            base: b.ins().iconst(I64, p),
            off: 0,
        }
    }

    fn kernel_ref(&mut self, b: &mut FunctionBuilder, func: usize) -> Result<FuncRef, IrError> {
        if let Some(f) = self.frefs.get(&func) {
            return Ok(*f);
        }
        let id = self
            .kernel_ids
            .get(func)
            .copied()
            .flatten()
            .ok_or_else(|| err("missing kernel"))?;
        let f = self.module.declare_func_in_func(id, b.func);
        self.frefs.insert(func, f);
        Ok(f)
    }

    fn tramp(&mut self, b: &mut FunctionBuilder, which: usize) -> FuncRef {
        if let Some(f) = self.trefs[which] {
            return f;
        }
        let f = self.module.declare_func_in_func(self.tramps[which], b.func);
        self.trefs[which] = Some(f);
        f
    }

    /// A stack array holding `ptrs`; returns its address.
    fn ptr_table(&mut self, b: &mut FunctionBuilder, ptrs: &[Addr]) -> Value {
        let slot = b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (8 * ptrs.len().max(1)) as u32,
            3,
        ));
        let table = b.ins().stack_addr(I64, slot, 0);
        for (k, a) in ptrs.iter().enumerate() {
            let v = self.at(b, *a);
            b.ins()
                .store(MemFlagsData::trusted(), v, table, (8 * k) as i32);
        }
        table
    }

    fn call_tramp(&mut self, b: &mut FunctionBuilder, which: usize, idx: usize, table: Value) {
        let f = self.tramp(b, which);
        let ctx = self.ctx.unwrap_or(table);
        let k = b.ins().iconst(I64, idx as i64);
        b.ins().call(f, &[ctx, k, table]);
    }

    /// Copies `bytes` bytes (non-overlapping).
    fn copy(&mut self, b: &mut FunctionBuilder, dst: Addr, src: Addr, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let (d, s) = (self.at(b, dst), self.at(b, src));
        if bytes > 256 {
            let n = b.ins().iconst(I64, bytes as i64);
            b.call_memcpy(self.cfg, d, s, n);
            return;
        }
        let flags = MemFlagsData::new().with_notrap();
        let mut at = 0usize;
        for (w, ty) in [(16usize, I8X16), (8, I64), (4, I32), (2, I16), (1, I8)] {
            while bytes - at >= w {
                let v = b.ins().load(ty, flags, s, at as i32);
                b.ins().store(flags, v, d, at as i32);
                at += w;
            }
        }
    }

    /// The address of an atom (a literal is embedded).
    fn atom(
        &mut self,
        b: &mut FunctionBuilder,
        env: &[Option<Addr>],
        a: &Atom,
    ) -> Result<Addr, IrError> {
        match a {
            Atom::Var(v) => env
                .get(v.index())
                .copied()
                .flatten()
                .ok_or_else(|| err(format!("variable {} has no address", v.0))),
            Atom::Lit(l) => {
                let arr = crate::compile::literal_array(l)?;
                Ok(self.pin(b, &array_bytes(&arr)))
            }
        }
    }

    fn var(env: &[Option<Addr>], v: Var) -> Result<Addr, IrError> {
        env.get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| err(format!("variable {} has no address", v.0)))
    }

    /// Emits a prepared jaxpr whose invars and constvars live at `ins` and
    /// `consts` and whose arena starts at `arena`; `fixed` pins some of its
    /// values elsewhere. Returns the addresses of its outvars.
    fn region(
        &mut self,
        b: &mut FunctionBuilder,
        p: &Prep,
        ins: &[Addr],
        consts: &[Addr],
        arena: Addr,
        fixed: &HashMap<Var, Addr>,
    ) -> Result<Vec<Addr>, IrError> {
        let j = &p.jaxpr;
        let mut env: Vec<Option<Addr>> = vec![None; j.vars.len()];
        for (v, a) in j
            .invars
            .iter()
            .zip(ins)
            .chain(j.constvars.iter().zip(consts))
        {
            env[v.index()] = Some(*a);
        }
        for a in &p.mem.allocations {
            if let jaxon_ir::passes::Placed::Var(v) = a.value {
                env[v.index()] = Some(arena.plus(a.offset));
            }
        }
        for (v, a) in fixed {
            if let Some(slot) = env.get_mut(v.index()) {
                *slot = Some(*a);
            }
        }
        for (gi, g) in p.groups.iter().enumerate() {
            match g {
                GPrep::Kernel(k) => self.kernel(b, &env, k)?,
                GPrep::Dot { idx, lhs, rhs, out } => {
                    let ptrs = [
                        Self::var(&env, *lhs)?,
                        Self::var(&env, *rhs)?,
                        Self::var(&env, *out)?,
                    ];
                    let t = self.ptr_table(b, &ptrs);
                    self.call_tramp(b, TRAMP_DOT, *idx, t);
                }
                GPrep::Step { idx, ins, outs } => {
                    let ptrs = ins
                        .iter()
                        .chain(outs)
                        .map(|v| Self::var(&env, *v))
                        .collect::<Result<Vec<_>, _>>()?;
                    let t = self.ptr_table(b, &ptrs);
                    self.call_tramp(b, TRAMP_STEP, *idx, t);
                }
                GPrep::Loop(lp) => {
                    let scratch = arena.plus(
                        p.mem
                            .scratch(gi)
                            .ok_or_else(|| err("loop without scratch"))?,
                    );
                    self.emit_loop(b, &env, lp, scratch)?;
                }
                GPrep::Cond {
                    branches,
                    index,
                    index_dtype,
                    operands,
                    outs,
                } => {
                    let scratch = arena.plus(
                        p.mem
                            .scratch(gi)
                            .ok_or_else(|| err("cond without scratch"))?,
                    );
                    self.emit_cond(
                        b,
                        &env,
                        branches,
                        index,
                        *index_dtype,
                        operands,
                        outs,
                        scratch,
                    )?;
                }
            }
        }
        j.outvars.iter().map(|a| self.atom(b, &env, a)).collect()
    }

    fn kernel(
        &mut self,
        b: &mut FunctionBuilder,
        env: &[Option<Addr>],
        k: &KPrep,
    ) -> Result<(), IrError> {
        let out = Self::var(env, k.out)?;
        if let Some(init) = &k.init {
            self.fill(b, out, init, k.out_numel, k.esize)?;
        }
        if !k.run || k.out_numel == 0 {
            return Ok(());
        }
        let mut ptrs = k
            .inputs
            .iter()
            .map(|v| Self::var(env, *v))
            .collect::<Result<Vec<_>, _>>()?;
        ptrs.push(out);
        if let Some(inline) = &k.inline {
            let bases: Vec<Value> = ptrs.iter().map(|a| self.at(b, *a)).collect();
            return inline
                .emit(b, &bases)
                .map_err(|e| err(format!("inline kernel: {}", e.message)));
        }
        let t = self.ptr_table(b, &ptrs);
        match (k.par, k.func) {
            (Some(i), _) => self.call_tramp(b, TRAMP_PAR, i, t),
            (None, None) => return Err(err("kernel without code")),
            (None, Some(func)) => {
                let f = self.kernel_ref(b, func)?;
                let lo = b.ins().iconst(I64, 0);
                let hi = b.ins().iconst(I64, k.extent as i64);
                b.ins().call(f, &[t, lo, hi]);
            }
        }
        Ok(())
    }

    /// Stores `pattern` (one element) `n` times from `out`.
    fn fill(
        &mut self,
        b: &mut FunctionBuilder,
        out: Addr,
        pattern: &[u8],
        n: usize,
        es: usize,
    ) -> Result<(), IrError> {
        if n == 0 {
            return Ok(());
        }
        let ty = match es {
            1 => I8,
            2 => I16,
            4 => I32,
            8 => I64,
            _ => return Err(err(format!("cannot fill elements of {es} bytes"))),
        };
        let src = self.pin(b, pattern);
        let flags = MemFlagsData::new().with_notrap();
        let v = b.ins().load(ty, flags, src.base, 0);
        let base = self.at(b, out);
        let var = b.declare_var(I64);
        let zero = b.ins().iconst(I64, 0);
        b.def_var(var, zero);
        let end = b.ins().iconst(I64, (n * es) as i64);
        crate::kernel::counted(b, var, end, es as i64, &mut |b, i| {
            let a = b.ins().iadd(base, i);
            b.ins().store(flags, v, a, 0);
        });
        Ok(())
    }

    /// A `while` or `scan`. Carries are double-buffered: iteration `i`
    /// reads the current set and its body writes the next set (results
    /// computed in the body are written there directly), then the sets
    /// swap, so no carry is copied per iteration except results that are
    /// not computed in the body (constants, other carries).
    fn emit_loop(
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

    /// Loads an integer scalar of `dt` at `a`, widened to i64.
    fn load_int(&mut self, b: &mut FunctionBuilder, a: Addr, dt: DType) -> Value {
        let p = self.at(b, a);
        let flags = MemFlagsData::new().with_notrap();
        let raw = match dt.size_bytes() {
            1 => b.ins().load(I8, flags, p, 0),
            2 => b.ins().load(I16, flags, p, 0),
            4 => b.ins().load(I32, flags, p, 0),
            _ => return b.ins().load(I64, flags, p, 0),
        };
        if dt.is_signed_int() {
            b.ins().sextend(I64, raw)
        } else {
            b.ins().uextend(I64, raw)
        }
    }

    /// Addresses of a nested jaxpr's embedded consts.
    fn consts_of(&mut self, b: &mut FunctionBuilder, p: &Prep) -> Vec<Addr> {
        p.consts
            .iter()
            .map(|c: &HostArray| {
                let ptr = jaxon_ir::with_storage!(c.data(), v => v.as_ptr() as i64);
                Addr {
                    base: b.ins().iconst(I64, ptr),
                    off: 0,
                }
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_cond(
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

/// The trip count of a `for_loop`, as the interpreter computes it: with
/// the reverse transform `ceil((hi - lo) / step)` (either sign of step),
/// else `ceil((hi - lo) / step)` for a positive step, at least 0. A step
/// the interpreter rejects (0, or not positive without the transform)
/// runs no iteration.
fn for_trips(b: &mut FunctionBuilder, lo: Value, hi: Value, step: Value, reverse: bool) -> Value {
    let zero = b.ins().iconst(I64, 0);
    let one = b.ins().iconst(I64, 1);
    let bad = if reverse {
        b.ins().icmp(IntCC::Equal, step, zero)
    } else {
        b.ins().icmp(IntCC::SignedLessThanOrEqual, step, zero)
    };
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
