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

mod flow;

use crate::error::run_error;
use crate::plan::groups::{array_bytes, GPrep, KPrep, Prep, RowRole};
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
    tramps: [FuncId; 4],
    trefs: [Option<FuncRef>; 4],
    /// Bytes whose addresses the code embeds.
    pub pinned: Vec<Box<[u64]>>,
    ctx: Option<Value>,
}

fn err(m: impl Into<String>) -> IrError {
    run_error(m)
}

const TRAMP_PAR: usize = 0;
const TRAMP_DOT: usize = 1;
const TRAMP_STEP: usize = 2;
const TRAMP_FOR_STEP: usize = 3;

impl<'a> Emitter<'a> {
    pub fn new(
        module: &'a mut cranelift_jit::JITModule,
        kernel_ids: Vec<Option<FuncId>>,
        tramps: [FuncId; 4],
    ) -> Emitter<'a> {
        let cfg = module.target_config();
        Emitter {
            module,
            cfg,
            kernel_ids,
            frefs: HashMap::new(),
            tramps,
            trefs: [None; 4],
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

    /// Fails the run with the interpreter's error when a `for_loop`'s
    /// runtime `step` (an `i64`) is one it refuses: a cold call into the
    /// runtime, after which the loop runs no iteration and the program
    /// returns the error.
    fn check_for_step(&mut self, b: &mut FunctionBuilder, step: Value, reverse: bool) {
        let bad = flow::refused_step(b, step, reverse);
        let (fail, join) = (b.create_block(), b.create_block());
        b.ins().brif(bad, fail, &[], join, &[]);
        b.set_cold_block(fail);
        b.switch_to_block(fail);
        let f = self.tramp(b, TRAMP_FOR_STEP);
        let ctx = self.ctx.unwrap_or(step);
        let r = b.ins().iconst(I64, i64::from(reverse));
        b.ins().call(f, &[ctx, r, step]);
        b.ins().jump(join, &[]);
        b.switch_to_block(join);
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
                let arr = crate::util::literal_array(l)?;
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
                GPrep::Kernel(k) => match &k.row_run {
                    None => self.kernel(b, &env, k)?,
                    Some(RowRole::Member) => {}
                    Some(RowRole::Head {
                        members,
                        func,
                        par,
                        rows,
                    }) => self.row_run(b, &env, p, members, *func, *par, *rows)?,
                },
                GPrep::Nop => {}
                GPrep::Dot {
                    idx,
                    lhs,
                    rhs,
                    out,
                    acc,
                    bias,
                } => {
                    let o = Self::var(&env, *out)?;
                    if let Some((x, bytes)) = acc {
                        // The GEMM adds its product to `x` in place.
                        let xa = Self::var(&env, *x)?;
                        self.copy(b, o, xa, *bytes);
                    }
                    let mut ptrs = vec![Self::var(&env, *lhs)?, Self::var(&env, *rhs)?, o];
                    if let Some(v) = bias {
                        ptrs.push(Self::var(&env, *v)?);
                    }
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
        if let (Some(s), Some(func)) = (k.strided_out, k.func) {
            return self.kernel_rows(b, env, k, func, s);
        }
        let ptrs = Self::kernel_args(env, k)?;
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

    /// A kernel whose 2-D output `(rows, cols)` lies inside a wider array
    /// (row stride `rs` elements): called on the outer-loop range of one
    /// output row at a time, with the output pointer moved so that the
    /// row's elements land at `out + r·rs` (the kernel addresses its
    /// output by absolute loop index).
    fn kernel_rows(
        &mut self,
        b: &mut FunctionBuilder,
        env: &[Option<Addr>],
        k: &KPrep,
        func: usize,
        (rs, rows, cols): (usize, usize, usize),
    ) -> Result<(), IrError> {
        let ptrs = Self::kernel_args(env, k)?;
        let per = k.extent / rows;
        if per == 0 || !k.extent.is_multiple_of(rows) {
            return Err(err("strided kernel output does not split by rows"));
        }
        let t = self.ptr_table(b, &ptrs);
        let out = self.at(b, ptrs[ptrs.len() - 1]);
        let f = self.kernel_ref(b, func)?;
        let slot = (8 * (ptrs.len() - 1)) as i32;
        let shift = ((rs - cols) * k.esize) as i64;
        let var = b.declare_var(I64);
        let zero = b.ins().iconst(I64, 0);
        b.def_var(var, zero);
        let end = b.ins().iconst(I64, rows as i64);
        crate::codegen::kernel::counted(b, var, end, 1, &mut |b, r| {
            let off = b.ins().imul_imm_s(r, shift);
            let p = b.ins().iadd(out, off);
            b.ins().store(MemFlagsData::trusted(), p, t, slot);
            let lo = b.ins().imul_imm_s(r, per as i64);
            let hi = b.ins().iadd_imm_s(lo, per as i64);
            b.ins().call(f, &[t, lo, hi]);
        });
        Ok(())
    }

    /// A kernel's argument addresses: its inputs, then its output.
    fn kernel_args(env: &[Option<Addr>], k: &KPrep) -> Result<Vec<Addr>, IrError> {
        k.inputs
            .iter()
            .chain(std::iter::once(&k.out))
            .map(|v| Self::var(env, *v))
            .collect()
    }

    /// A row run (`crate::plan::rows`): the members' outputs are initialised,
    /// then the driver runs every member a block of rows at a time.
    #[allow(clippy::too_many_arguments)]
    fn row_run(
        &mut self,
        b: &mut FunctionBuilder,
        env: &[Option<Addr>],
        p: &Prep,
        members: &[usize],
        func: usize,
        par: Option<usize>,
        rows: usize,
    ) -> Result<(), IrError> {
        let mut tables = Vec::with_capacity(members.len());
        for &m in members {
            let Some(GPrep::Kernel(k)) = p.groups.get(m) else {
                return Err(err("row run member is not a kernel"));
            };
            if let Some(init) = &k.init {
                let out = Self::var(env, k.out)?;
                self.fill(b, out, init, k.out_numel, k.esize)?;
            }
            let ptrs = Self::kernel_args(env, k)?;
            let t = self.ptr_table(b, &ptrs);
            tables.push(Addr { base: t, off: 0 });
        }
        let t = self.ptr_table(b, &tables);
        match par {
            Some(i) => self.call_tramp(b, TRAMP_PAR, i, t),
            None => {
                let f = self.kernel_ref(b, func)?;
                let lo = b.ins().iconst(I64, 0);
                let hi = b.ins().iconst(I64, rows as i64);
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
        crate::codegen::kernel::counted(b, var, end, es as i64, &mut |b, i| {
            let a = b.ins().iadd(base, i);
            b.ins().store(flags, v, a, 0);
        });
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
}
