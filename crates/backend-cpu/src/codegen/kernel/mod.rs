//! Code generation of fused groups: one Cranelift function per loop or
//! reduce group of the fusion plan.
//!
//! A kernel takes one argument, a pointer to an array of buffer pointers
//! (the group's inputs in order, then its output), and runs a loop nest
//! over the group's iteration space:
//!
//! - the space is first simplified: size-1 dimensions dropped, adjacent
//!   dimensions merged wherever every access is contiguous across them, so
//!   an elementwise chain over contiguous arrays becomes a single loop;
//! - each group input is read with per-dimension element strides from the
//!   plan's index maps (stride 0 broadcasts; stride-0 reads of the inner
//!   loop are hoisted out of it);
//! - the inner loop is vectorised (`F32X4`/`F64X2`) when every value is
//!   of the group's float dtype (or a boolean mask) and every inner access
//!   is contiguous or broadcast: a main loop unrolled 4×, a one-vector loop,
//!   then a scalar tail;
//! - a reduce group either accumulates in registers along a reduced inner
//!   dimension (4 vector accumulators, then a horizontal combine) or, when
//!   the inner dimension is kept, accumulates into the output, which the
//!   caller pre-fills with the reduction's identity.

use jaxon_ir::primitive::Elementwise;
mod analyse;
pub(crate) mod emit;
mod half;
mod lanes;
mod libm;
pub(crate) mod math;
mod math_inv;
pub(crate) mod ops;
mod row_blocks;
mod scalars;
mod tiled;
pub(crate) mod wide;

pub(crate) use scalars::identity_int;
use scalars::{combine, identity, lit_value};

use analyse::analyse;
use emit::{scalar_type, Em};
use ops::{emit_op, is_long_expansion, Operand};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    AbiParam, Function, InstBuilder, MemFlagsData, Signature, UserFuncName, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use jaxon_ir::passes::Group;
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{Atom, DType, Jaxpr, Literal, Primitive};

/// Where an operand of a fused equation comes from.
#[derive(Clone, Debug)]
enum Src {
    /// A group input read through leaf `i`.
    Leaf(usize),
    /// A literal.
    Lit(Literal),
    /// The result of member `i`.
    Val(usize),
}

/// A member equation of the group.
struct Node {
    eqn: usize,
    prim: Primitive,
    /// With fma contraction: this `add`/`sub` absorbs the `mul` member
    /// `.0`, which is its operand `.1`.
    fused_mul: Option<(usize, usize)>,
    /// A `mul` absorbed into a later fused multiply-add (not emitted).
    skip: bool,
    srcs: Vec<Src>,
    in_dts: Vec<DType>,
    out_dt: DType,
}

/// A read of a group input.
#[derive(Clone, Debug, PartialEq)]
struct Leaf {
    arg: usize,
    dt: DType,
    /// Element offset of the read at index 0 (slices, reversals).
    base: i64,
    strides: Vec<i64>,
}

/// Whether kernels can load and store values of `dt`.
pub(crate) fn storable(dt: DType) -> bool {
    half::storable(dt)
}

/// A group compiled to a Cranelift function (not yet machine code).
pub(crate) struct GroupCode {
    /// The function.
    pub func: Function,
    /// Buffers it takes: the group inputs, then the output.
    pub n_args: usize,
    /// For a reduce group, the reduction (its output is pre-filled with the
    /// identity).
    pub reduce: Option<(ReduceOp, DType)>,
    /// The extent of the outermost loop (the kernel's `lo..hi` range).
    pub extent: usize,
    /// Whether disjoint sub-ranges of the outermost loop write disjoint
    /// outputs, so threads may run them concurrently.
    pub splittable: bool,
    /// For small groups: the generator, to emit the loop inline.
    pub inline: Option<Inline>,
}

/// A failure to compile, with the offending member equation if known.
pub(crate) struct GenError {
    pub eqn: Option<usize>,
    pub message: String,
}

fn err(eqn: Option<usize>, message: impl Into<String>) -> GenError {
    GenError {
        eqn,
        message: message.into(),
    }
}

fn static_shape(jaxpr: &Jaxpr, a: &Atom) -> Option<Vec<usize>> {
    match a {
        Atom::Var(v) => jaxpr.try_aval(*v)?.array().static_sizes(),
        Atom::Lit(_) => Some(Vec::new()),
    }
}

fn row_major(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![0i64; shape.len()];
    let mut acc = 1i64;
    for (k, n) in shape.iter().enumerate().rev() {
        s[k] = acc;
        acc *= *n as i64;
    }
    s
}

struct Gen {
    nodes: Vec<Node>,
    leaves: Vec<Leaf>,
    dims: Vec<usize>,
    out_strides: Vec<i64>,
    out_dt: DType,
    reduce: Option<ReduceOp>,
    /// The value stored or accumulated.
    result: Src,
    gdt: DType,
    lanes: u8,
    n_inputs: usize,
    /// Members run as 256-bit tile routines (`tiled.rs`), if any.
    tile: Option<tiled::TilePlan>,
    /// How approximated functions are computed.
    math: ops::Math,
}

/// Builds the Cranelift function of a loop or reduce group.
pub(crate) fn compile_group(
    jaxpr: &Jaxpr,
    group: &Group,
    cfg: TargetFrontendConfig,
    opts: crate::util::Options,
) -> Result<GroupCode, GenError> {
    let math = if opts.exact_math {
        ops::Math::Libm
    } else {
        ops::Math::Inline
    };
    let mut gen = analyse(jaxpr, group, math)?;
    if opts.contract_fma {
        gen.contract_fma();
    }
    if !opts.narrow_math && math == ops::Math::Inline {
        gen.tile = gen.plan_tiles();
    }
    let func = gen.emit(cfg)?;
    let numel: usize = group.space.iter().product();
    Ok(GroupCode {
        func,
        n_args: gen.n_inputs + 1,
        reduce: gen.reduce.map(|op| (op, gen.out_dt)),
        extent: gen.dims[0],
        // A reduce group's threads must not share output elements: the
        // outermost dimension has to be kept (nonzero output stride).
        splittable: gen.reduce.is_none() || gen.out_strides[0] != 0,
        inline: (numel <= INLINE_MAX).then(|| Inline(Box::new(gen))),
    })
}

/// Groups of at most this many elements are emitted inline in the
/// program function instead of being called (no call, no pointer table;
/// what small loop bodies are made of).
const INLINE_MAX: usize = 1024;

/// A small group's code generator, to emit its loop nest into another
/// function (the program function) with the buffers' addresses given.
pub(crate) struct Inline(Box<Gen>);

impl Inline {
    /// Emits the whole loop nest at the builder's current position;
    /// `bases` are the group inputs' addresses, then the output's.
    pub fn emit(&self, b: &mut FunctionBuilder, bases: &[Value]) -> Result<(), GenError> {
        let g = &self.0;
        if bases.len() != g.n_inputs + 1 {
            return Err(err(None, "inline kernel arity"));
        }
        let idx: Vec<Variable> = (0..g.dims.len()).map(|_| b.declare_var(I64)).collect();
        let lo = b.ins().iconst(I64, 0);
        let hi = b.ins().iconst(I64, g.dims[0] as i64);
        g.outer(b, bases, &idx, 0, (lo, hi))
    }
}

impl Gen {
    fn emit(&self, cfg: TargetFrontendConfig) -> Result<Function, GenError> {
        let mut sig = Signature::new(cfg.default_call_conv);
        // (argument pointers, first and end index of the outermost dimension)
        sig.params.push(AbiParam::new(I64));
        sig.params.push(AbiParam::new(I64));
        sig.params.push(AbiParam::new(I64));
        let mut func = Function::with_name_signature(UserFuncName::user(0, 0), sig);
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let ptrs = b.block_params(entry)[0];
        let range = (b.block_params(entry)[1], b.block_params(entry)[2]);
        let arg_flags = MemFlagsData::trusted();
        let bases: Vec<Value> = (0..=self.n_inputs)
            .map(|k| b.ins().load(I64, arg_flags, ptrs, (8 * k) as i32))
            .collect();
        let r = self.dims.len();
        let idx_vars: Vec<Variable> = (0..r).map(|_| b.declare_var(I64)).collect();
        self.outer(&mut b, &bases, &idx_vars, 0, range)?;
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(cfg);
        Ok(func)
    }

    /// Emits the loop over dimension `d` (recursing outward-in), or the
    /// inner loops when `d` is the last dimension.
    fn outer(
        &self,
        b: &mut FunctionBuilder,
        bases: &[Value],
        idx: &[Variable],
        d: usize,
        range: (Value, Value),
    ) -> Result<(), GenError> {
        let r = self.dims.len();
        // Dimension 0 runs over the caller's range (threads split it).
        let (start, end) = if d == 0 {
            range
        } else {
            (
                b.ins().iconst(I64, 0),
                b.ins().iconst(I64, self.dims[d] as i64),
            )
        };
        if d + 1 == r {
            return self.inner(b, bases, idx, start, end);
        }
        if self.row_block_loop(b, bases, idx, d, (start, end), range)? {
            return Ok(());
        }
        b.def_var(idx[d], start);
        let mut res = Ok(());
        counted(b, idx[d], end, 1, &mut |b, _| {
            res = self.outer(b, bases, idx, d + 1, range);
        });
        res
    }

    fn esize(dt: DType) -> i64 {
        dt.size_bytes() as i64
    }

    /// Address of the start of the current inner row for strides `s`.
    fn row_addr(
        &self,
        b: &mut FunctionBuilder,
        base: Value,
        s: &[i64],
        es: i64,
        idx: &[Variable],
    ) -> Value {
        let mut addr = base;
        for d in 0..self.dims.len() - 1 {
            if s[d] != 0 {
                let i = b.use_var(idx[d]);
                let off = b.ins().imul_imm_s(i, s[d] * es);
                addr = b.ins().iadd(addr, off);
            }
        }
        addr
    }

    /// The inner loop of one row: the group's value at every inner index,
    /// stored or accumulated.
    fn inner(
        &self,
        b: &mut FunctionBuilder,
        bases: &[Value],
        idx: &[Variable],
        start: Value,
        n: Value,
    ) -> Result<(), GenError> {
        let inner = self.dims.len() - 1;
        let ctx = self.row_ctx(b, bases, idx)?;
        let jv = idx[inner];
        if let Some(plan) = &self.tile {
            return self.inner_tiled(b, &ctx, plan, jv, start, n);
        }
        let ev = Eval::plain(&self.result);
        b.def_var(jv, start);
        // Loops that cannot run for this extent are not emitted (smaller
        // code, faster compiles for small groups).
        let extent = self.dims[inner] as i64;
        let l = if extent < self.lanes as i64 {
            1
        } else {
            self.lanes
        };
        let unroll = extent >= 4 * l as i64;
        if self.reduces_in_registers() {
            let acc = self.acc_init(b)?;
            self.acc_span(b, &ctx, &ev, &acc, jv, n, l, unroll)?;
            return self.acc_finish(b, &ctx, &acc);
        }
        // Plain stores of long bodies gain nothing from unrolling.
        let long_body = self
            .nodes
            .iter()
            .any(|n| !n.skip && is_long_expansion(&n.prim));
        self.store_span(b, &ctx, &ev, jv, n, l, unroll && !long_body)
    }

    /// The row's addresses and its hoisted inner-invariant reads.
    fn row_ctx(
        &self,
        b: &mut FunctionBuilder,
        bases: &[Value],
        idx: &[Variable],
    ) -> Result<RowCtx, GenError> {
        let inner = self.dims.len() - 1;
        let load_flags = MemFlagsData::new().with_notrap();
        let leaf_addrs: Vec<Value> = self
            .leaves
            .iter()
            .map(|l| {
                let es = Self::esize(l.dt);
                let base = if l.base != 0 {
                    b.ins().iadd_imm_s(bases[l.arg], l.base * es)
                } else {
                    bases[l.arg]
                };
                self.row_addr(b, base, &l.strides, es, idx)
            })
            .collect();
        let out_addr = self.row_addr(
            b,
            bases[self.n_inputs],
            &self.out_strides,
            Self::esize(self.out_dt),
            idx,
        );
        // Inner-invariant reads, hoisted: (scalar, splat).
        let mut hoisted: Vec<Option<(Value, Option<Value>)>> = Vec::new();
        for (l, &a) in self.leaves.iter().zip(&leaf_addrs) {
            if l.strides[inner] == 0 {
                let s = half::load(b, l.dt, load_flags, a)?;
                let v = if self.lanes > 1 {
                    let ty = Em {
                        b,
                        lanes: self.lanes,
                    }
                    .fty(self.gdt);
                    Some(b.ins().splat(ty, s))
                } else {
                    None
                };
                hoisted.push(Some((s, v)));
            } else {
                hoisted.push(None);
            }
        }
        Ok(RowCtx {
            leaf_addrs,
            out_addr,
            hoisted,
            load_flags,
        })
    }

    /// Whether the group reduces along the inner dimension, accumulating
    /// in registers (otherwise it stores, or accumulates into its output).
    fn reduces_in_registers(&self) -> bool {
        self.reduce.is_some() && self.out_strides[self.dims.len() - 1] == 0
    }

    /// Fresh accumulators at the reduction's identity: four vectors (for
    /// latency) when the group is vectorised, and a scalar.
    fn acc_init(&self, b: &mut FunctionBuilder) -> Result<Acc, GenError> {
        let op = self.reduce.unwrap_or(ReduceOp::Sum);
        let sty = scalar_type(self.out_dt).ok_or_else(|| err(None, "dtype"))?;
        let scalar = b.declare_var(sty);
        let mut em = Em { b, lanes: 1 };
        let id = identity(&mut em, op, self.out_dt);
        em.b.def_var(scalar, id);
        let vectors = if self.lanes > 1 {
            let mut em = Em {
                b,
                lanes: self.lanes,
            };
            let vty = em.fty(self.gdt);
            let id = identity(&mut em, op, self.out_dt);
            let accs: Vec<Variable> = (0..4).map(|_| b.declare_var(vty)).collect();
            for &a in &accs {
                b.def_var(a, id);
            }
            Some(accs)
        } else {
            None
        };
        Ok(Acc { vectors, scalar })
    }

    /// Accumulates the values at inner indices `jv..end` (`l` lanes at a
    /// time, unrolled 4× when `unroll`, then one at a time).
    #[allow(clippy::too_many_arguments)]
    fn acc_span(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
        ev: &Eval,
        acc: &Acc,
        jv: Variable,
        end: Value,
        l: u8,
        unroll: bool,
    ) -> Result<(), GenError> {
        let op = self.reduce.unwrap_or(ReduceOp::Sum);
        let mut res = Ok(());
        let mut add = |b: &mut FunctionBuilder, a: Variable, j: Value, lanes: u8| match self
            .value(b, ctx, ev, j, lanes)
        {
            Ok(v) => {
                let cur = b.use_var(a);
                let mut em = Em { b, lanes };
                let nv = combine(&mut em, op, self.out_dt, cur, v);
                em.b.def_var(a, nv);
            }
            Err(e) => res = Err(e),
        };
        if let (Some(accs), true) = (&acc.vectors, l > 1) {
            let step = l as i64;
            if unroll {
                counted(b, jv, end, 4 * step, &mut |b, j| {
                    for (u, &a) in accs.iter().enumerate() {
                        let ju = b.ins().iadd_imm_s(j, u as i64 * step);
                        add(b, a, ju, l);
                    }
                });
            }
            counted(b, jv, end, step, &mut |b, j| add(b, accs[0], j, l));
        }
        counted(b, jv, end, 1, &mut |b, j| add(b, acc.scalar, j, 1));
        res
    }

    /// Combines the accumulators into the row's output element.
    fn acc_finish(&self, b: &mut FunctionBuilder, ctx: &RowCtx, acc: &Acc) -> Result<(), GenError> {
        let op = self.reduce.unwrap_or(ReduceOp::Sum);
        let sty = scalar_type(self.out_dt).ok_or_else(|| err(None, "dtype"))?;
        let mut total = b.use_var(acc.scalar);
        if let Some(accs) = &acc.vectors {
            let vals: Vec<Value> = accs.iter().map(|&a| b.use_var(a)).collect();
            let mut em = Em {
                b,
                lanes: self.lanes,
            };
            let s01 = combine(&mut em, op, self.out_dt, vals[0], vals[1]);
            let s23 = combine(&mut em, op, self.out_dt, vals[2], vals[3]);
            let v = combine(&mut em, op, self.out_dt, s01, s23);
            let mut h = em.b.ins().extractlane(v, 0u8);
            let mut sem = Em { b: em.b, lanes: 1 };
            for k in 1..self.lanes {
                let x = sem.b.ins().extractlane(v, k);
                h = combine(&mut sem, op, self.out_dt, h, x);
            }
            total = combine(&mut sem, op, self.out_dt, h, total);
        }
        let old = b.ins().load(sty, ctx.load_flags, ctx.out_addr, 0);
        let mut em = Em { b, lanes: 1 };
        let nv = combine(&mut em, op, self.out_dt, old, total);
        em.b.ins().store(ctx.load_flags, nv, ctx.out_addr, 0);
        Ok(())
    }

    /// Stores (or, for a reduction kept along the inner dimension,
    /// accumulates into the output) the values at inner indices `jv..end`.
    #[allow(clippy::too_many_arguments)]
    fn store_span(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
        ev: &Eval,
        jv: Variable,
        end: Value,
        l: u8,
        unroll: bool,
    ) -> Result<(), GenError> {
        let out_inner = self.out_strides[self.dims.len() - 1];
        let body = |b: &mut FunctionBuilder, j: Value, lanes: u8| -> Result<(), GenError> {
            let v = self.value(b, ctx, ev, j, lanes)?;
            let off = b.ins().imul_imm_s(j, out_inner * Self::esize(self.out_dt));
            let addr = b.ins().iadd(ctx.out_addr, off);
            let v = match self.reduce {
                Some(op) => {
                    let ty = if lanes > 1 {
                        Em { b, lanes }.fty(self.gdt)
                    } else {
                        scalar_type(self.out_dt).ok_or_else(|| err(None, "dtype"))?
                    };
                    let old = b.ins().load(ty, ctx.load_flags, addr, 0);
                    let mut em = Em { b, lanes };
                    combine(&mut em, op, self.out_dt, old, v)
                }
                None if half::is_half(self.out_dt) => {
                    half::store_bits(&mut Em { b, lanes: 1 }, self.out_dt, v)
                }
                None => v,
            };
            b.ins().store(ctx.load_flags, v, addr, 0);
            Ok(())
        };
        let mut res: Result<(), GenError> = Ok(());
        if l > 1 {
            let step = l as i64;
            if unroll {
                counted(b, jv, end, 4 * step, &mut |b, j| {
                    for u in 0..4 {
                        let ju = b.ins().iadd_imm_s(j, u * step);
                        if let Err(e) = body(b, ju, l) {
                            res = Err(e);
                        }
                    }
                });
            }
            counted(b, jv, end, step, &mut |b, j| {
                if let Err(e) = body(b, j, l) {
                    res = Err(e);
                }
            });
        }
        counted(b, jv, end, 1, &mut |b, j| {
            if let Err(e) = body(b, j, 1) {
                res = Err(e);
            }
        });
        res
    }

    /// `ev.target` at inner index `j` (`lanes` elements from `j`).
    fn value(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
        ev: &Eval,
        j: Value,
        lanes: u8,
    ) -> Result<Value, GenError> {
        let mut vals: Vec<Value> = Vec::with_capacity(self.nodes.len());
        let inner = self.dims.len() - 1;
        let last = if self.reduce.is_some() {
            self.nodes.len() - 1
        } else {
            self.nodes.len()
        };
        let src_val =
            |b: &mut FunctionBuilder, s: &Src, vals: &[Value]| -> Result<Value, GenError> {
                Ok(match s {
                    Src::Val(q) => vals[*q],
                    Src::Lit(l) => {
                        let mut em = Em { b, lanes };
                        lit_value(&mut em, self.gdt, l)?
                    }
                    Src::Leaf(i) => {
                        let leaf = &self.leaves[*i];
                        match ctx.hoisted[*i] {
                            Some((s, v)) => {
                                if lanes > 1 {
                                    v.ok_or_else(|| err(None, "missing splat"))?
                                } else {
                                    s
                                }
                            }
                            None => {
                                let es = Self::esize(leaf.dt);
                                let off = b.ins().imul_imm_s(j, leaf.strides[inner] * es);
                                let addr = b.ins().iadd(ctx.leaf_addrs[*i], off);
                                if lanes > 1 {
                                    let ty = Em { b, lanes }.fty(leaf.dt);
                                    b.ins().load(ty, ctx.load_flags, addr, 0)
                                } else {
                                    half::load(b, leaf.dt, ctx.load_flags, addr)?
                                }
                            }
                        }
                    }
                })
            };
        for (p, node) in self.nodes[..last].iter().enumerate() {
            if node.skip || ev.need.is_some_and(|need| !need[p]) {
                // Emitted inside the fused multiply-add that consumes it,
                // or not needed here; the placeholder is never read.
                vals.push(j);
                continue;
            }
            if let Some(v) = ev.tile_load(b, p, j, lanes, self.gdt) {
                vals.push(v);
                continue;
            }
            if let Some((q, slot)) = node.fused_mul {
                let m = &self.nodes[q];
                let a0 = src_val(b, &m.srcs[0], &vals)?;
                let a1 = src_val(b, &m.srcs[1], &vals)?;
                let c = src_val(b, &node.srcs[1 - slot], &vals)?;
                let sub = node.prim
                    == Primitive::Elementwise(Elementwise::Binary(
                        jaxon_ir::primitive::BinaryOp::Sub,
                    ));
                let v = match (sub, slot) {
                    (false, _) => b.ins().fma(a0, a1, c),
                    (true, 0) => {
                        let nc = b.ins().fneg(c);
                        b.ins().fma(a0, a1, nc)
                    }
                    (true, _) => {
                        let na = b.ins().fneg(a0);
                        b.ins().fma(na, a1, c)
                    }
                };
                vals.push(v);
                continue;
            }
            let mut args = Vec::with_capacity(node.srcs.len());
            for (s, dt) in node.srcs.iter().zip(&node.in_dts) {
                args.push(Operand {
                    v: src_val(b, s, &vals)?,
                    dt: *dt,
                });
            }
            let mut em = Em { b, lanes };
            let v =
                if node.in_dts.iter().any(|d| half::is_half(*d)) || half::is_half(node.out_dt) {
                    half::emit_op(&mut em, self.gdt, self.math, &node.prim, &args, node.out_dt)
                } else {
                    emit_op(&mut em, self.gdt, self.math, &node.prim, &args, node.out_dt)
                }
                .map_err(|m| err(Some(node.eqn), m.to_string()))?;
            vals.push(v);
        }
        src_val(b, ev.target, &vals)
    }
}

/// A row's addresses and hoisted reads.
struct RowCtx {
    leaf_addrs: Vec<Value>,
    out_addr: Value,
    hoisted: Vec<Option<(Value, Option<Value>)>>,
    load_flags: MemFlagsData,
}

/// A reduction's accumulators along the inner dimension.
struct Acc {
    vectors: Option<Vec<Variable>>,
    scalar: Variable,
}

/// What [`Gen::value`] computes: `target`, from the members in `need`
/// (all when `None`), reading the members held in tile slots from there.
struct Eval<'a> {
    target: &'a Src,
    need: Option<&'a [bool]>,
    /// Per member, the tile slot holding its values for the current tile,
    /// which starts at inner index `tile_start`.
    slots: &'a [Option<Value>],
    tile_start: Option<Value>,
}

impl<'a> Eval<'a> {
    fn plain(target: &'a Src) -> Eval<'a> {
        Eval {
            target,
            need: None,
            slots: &[],
            tile_start: None,
        }
    }

    /// Member `p`'s values at inner index `j` from its tile slot, if it
    /// has one.
    fn tile_load(
        &self,
        b: &mut FunctionBuilder,
        p: usize,
        j: Value,
        lanes: u8,
        gdt: DType,
    ) -> Option<Value> {
        let slot = (*self.slots.get(p)?)?;
        let t0 = self.tile_start?;
        let rel = b.ins().isub(j, t0);
        let off = b.ins().imul_imm_s(rel, gdt.size_bytes() as i64);
        let addr = b.ins().iadd(slot, off);
        let ty = Em { b, lanes }.fty(gdt);
        Some(b.ins().load(ty, MemFlagsData::trusted(), addr, 0))
    }
}

/// A counted loop: runs `body(i)` while `var + step <= end`, stepping `var`.
/// `var` must be defined before; it holds the first unprocessed index after.
pub(crate) fn counted(
    b: &mut FunctionBuilder,
    var: Variable,
    end: Value,
    step: i64,
    body: &mut dyn FnMut(&mut FunctionBuilder, Value),
) {
    let header = b.create_block();
    let body_blk = b.create_block();
    let exit = b.create_block();
    b.ins().jump(header, &[]);
    b.switch_to_block(header);
    let i = b.use_var(var);
    let next = b.ins().iadd_imm_s(i, step);
    let c = b.ins().icmp(IntCC::SignedLessThanOrEqual, next, end);
    b.ins().brif(c, body_blk, &[], exit, &[]);
    b.switch_to_block(body_blk);
    b.seal_block(body_blk);
    body(b, i);
    b.def_var(var, next);
    b.ins().jump(header, &[]);
    b.seal_block(header);
    b.switch_to_block(exit);
    b.seal_block(exit);
}
