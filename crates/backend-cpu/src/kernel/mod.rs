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

pub(crate) mod emit;
mod half;
mod libm;
pub(crate) mod math;
mod math_inv;
pub(crate) mod ops;
mod scalars;

pub(crate) use scalars::identity_int;
use scalars::{combine, identity, lit_value};

use emit::{scalar_type, Em};
use ops::{emit_op, is_long_expansion, vector_ok, Operand};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    AbiParam, Function, InstBuilder, MemFlagsData, Signature, UserFuncName, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use jaxon_ir::passes::{operand_map, Group, GroupKind};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{Atom, Binder, DType, Jaxpr, Literal, Primitive};

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
}

/// Builds the Cranelift function of a loop or reduce group.
pub(crate) fn compile_group(
    jaxpr: &Jaxpr,
    group: &Group,
    cfg: TargetFrontendConfig,
    contract_fma: bool,
) -> Result<GroupCode, GenError> {
    let mut gen = analyse(jaxpr, group)?;
    if contract_fma {
        gen.contract_fma();
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

fn analyse(jaxpr: &Jaxpr, group: &Group) -> Result<Gen, GenError> {
    let rank = group.space.len();
    let reduce = match &group.kind {
        GroupKind::Loop => None,
        GroupKind::Reduce { op, .. } => Some(*op),
        GroupKind::Opaque => return Err(err(None, "opaque group has no loop kernel")),
    };
    let mut nodes: Vec<Node> = Vec::new();
    let mut leaves: Vec<Leaf> = Vec::new();
    let mut result = None;
    for (p, &e) in group.eqns.iter().enumerate() {
        let eqn = jaxpr
            .eqns
            .get(e)
            .ok_or_else(|| err(Some(e), "equation out of range"))?;
        let map = group
            .maps
            .get(p)
            .ok_or_else(|| err(Some(e), "missing index map"))?;
        let mut srcs = Vec::new();
        let mut in_dts = Vec::new();
        for (slot, a) in eqn.inputs.iter().enumerate() {
            let dt = jaxpr
                .atom_aval(a)
                .ok_or_else(|| err(Some(e), "operand out of range"))?
                .dtype();
            in_dts.push(dt);
            let src = match a {
                Atom::Lit(l) => Src::Lit(*l),
                Atom::Var(v) => {
                    if let Some(q) = group.eqns[..p].iter().position(|&f| {
                        jaxpr.eqns[f]
                            .outputs
                            .iter()
                            .any(|o| matches!(o, Binder::Var(w) if w == v))
                    }) {
                        Src::Val(q)
                    } else {
                        let arg = group
                            .inputs
                            .iter()
                            .position(|w| w == v)
                            .ok_or_else(|| err(Some(e), "operand is not a group input"))?;
                        let shape = static_shape(jaxpr, a)
                            .ok_or_else(|| err(Some(e), "dynamic operand shape"))?;
                        let m = operand_map(jaxpr, eqn, map, slot)
                            .ok_or_else(|| err(Some(e), "operand cannot be indexed"))?;
                        let leaf = Leaf {
                            arg,
                            dt,
                            base: m.base(&shape),
                            strides: m.strides(&shape),
                        };
                        let i = match leaves.iter().position(|l| *l == leaf) {
                            Some(i) => i,
                            None => {
                                leaves.push(leaf);
                                leaves.len() - 1
                            }
                        };
                        Src::Leaf(i)
                    }
                }
            };
            srcs.push(src);
        }
        let out_dt = match eqn.outputs.as_slice() {
            [b] => jaxpr
                .binder_aval(b)
                .ok_or_else(|| err(Some(e), "output out of range"))?
                .dtype(),
            _ => return Err(err(Some(e), "fused equations have one output")),
        };
        if !half::storable(out_dt) {
            return Err(err(Some(e), format!("dtype {out_dt} is not supported yet")));
        }
        if let Some(d) = in_dts.iter().find(|d| !half::storable(**d)) {
            return Err(err(Some(e), format!("dtype {d} is not supported yet")));
        }
        let is_root = p + 1 == group.eqns.len();
        if is_root && reduce.is_some() {
            if !matches!(eqn.primitive, Primitive::Reduce { .. }) {
                return Err(err(Some(e), "reduce group without a reduction root"));
            }
            result = Some(srcs[0].clone());
        } else {
            if let Primitive::Reduce { .. } = eqn.primitive {
                return Err(err(Some(e), "reduction inside a loop group"));
            }
            if is_root {
                result = Some(Src::Val(p));
            }
        }
        nodes.push(Node {
            eqn: e,
            prim: eqn.primitive.clone(),
            fused_mul: None,
            skip: false,
            srcs,
            in_dts,
            out_dt,
        });
    }
    let result = result.ok_or_else(|| err(None, "empty group"))?;
    let root = nodes.last().ok_or_else(|| err(None, "empty group"))?;
    // Half-precision reductions are widened to f32 ones before planning
    // (`rewrite::widen_half_reductions`): the output buffer is sized for
    // the declared dtype, so the kernel must not accumulate in a wider one.
    let out_dt = root.out_dt;
    if reduce.is_some() && half::is_half(out_dt) {
        return Err(err(
            None,
            format!("internal error: {out_dt} reduction was not widened to f32"),
        ));
    }
    let out_strides: Vec<i64> = match &group.kind {
        GroupKind::Reduce { axes, .. } => {
            let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).collect();
            let kept_shape: Vec<usize> = kept.iter().map(|&d| group.space[d]).collect();
            let ks = row_major(&kept_shape);
            (0..rank)
                .map(|d| kept.iter().position(|&k| k == d).map_or(0, |i| ks[i]))
                .collect()
        }
        _ => row_major(&group.space),
    };
    // Simplify the space: drop size-1 dims, merge contiguous neighbours.
    let mut dims: Vec<usize> = Vec::new();
    let mut all: Vec<Vec<i64>> = leaves.iter().map(|l| l.strides.clone()).collect();
    all.push(out_strides);
    let mut merged: Vec<Vec<i64>> = vec![Vec::new(); all.len()];
    for d in 0..rank {
        let n = group.space[d];
        if n == 1 {
            continue;
        }
        let can_merge = !dims.is_empty()
            && all.iter().zip(&merged).all(|(s, m)| {
                let last = *m.last().unwrap_or(&0);
                last == s[d] * n as i64
            });
        if can_merge {
            let last = dims.len() - 1;
            dims[last] *= n;
            for (s, m) in all.iter().zip(merged.iter_mut()) {
                let k = m.len() - 1;
                m[k] = s[d];
            }
        } else {
            dims.push(n);
            for (s, m) in all.iter().zip(merged.iter_mut()) {
                m.push(s[d]);
            }
        }
    }
    if dims.is_empty() {
        dims.push(1);
        for m in merged.iter_mut() {
            m.push(0);
        }
    }
    let out_strides = merged.pop().unwrap_or_default();
    for (l, m) in leaves.iter_mut().zip(merged) {
        l.strides = m;
    }
    let mut gen = Gen {
        nodes,
        leaves,
        dims,
        out_strides,
        out_dt,
        reduce,
        result,
        gdt: out_dt,
        lanes: 1,
        n_inputs: group.inputs.len(),
    };
    gen.lanes = gen.vector_lanes();
    Ok(gen)
}

impl Gen {
    /// Marks `a*b + c`, `a*b - c` and `c - a*b` (float, the product used
    /// only there) to be emitted as one fused multiply-add.
    fn contract_fma(&mut self) {
        use jaxon_ir::primitive::BinaryOp;
        let mut uses = vec![0usize; self.nodes.len()];
        let srcs = self.nodes.iter().flat_map(|n| n.srcs.iter());
        for s in srcs.chain(std::iter::once(&self.result)) {
            if let Src::Val(q) = s {
                uses[*q] += 1;
            }
        }
        let last = if self.reduce.is_some() {
            self.nodes.len().saturating_sub(1)
        } else {
            self.nodes.len()
        };
        for p in 0..last {
            let n = &self.nodes[p];
            let add_like = matches!(
                n.prim,
                Primitive::Binary(BinaryOp::Add | BinaryOp::AddAny | BinaryOp::Sub)
            );
            if !add_like || !matches!(n.out_dt, DType::F32 | DType::F64) || n.srcs.len() != 2 {
                continue;
            }
            let found = (0..2).find_map(|slot| match n.srcs[slot] {
                Src::Val(q)
                    if uses[q] == 1
                        && !self.nodes[q].skip
                        && self.nodes[q].prim == Primitive::Binary(BinaryOp::Mul)
                        && self.nodes[q].out_dt == n.out_dt =>
                {
                    Some((q, slot))
                }
                _ => None,
            });
            if let Some((q, slot)) = found {
                self.nodes[q].skip = true;
                self.nodes[p].fused_mul = Some((q, slot));
            }
        }
    }

    /// The SIMD width for this group, or 1 for scalar code.
    fn vector_lanes(&self) -> u8 {
        let lanes = match self.gdt {
            DType::F32 => 4,
            DType::F64 => 2,
            _ => return 1,
        };
        let inner = self.dims.len() - 1;
        let contiguous = |s: &[i64]| s[inner] == 0 || s[inner] == 1;
        let leaves_ok = self
            .leaves
            .iter()
            .all(|l| l.dt == self.gdt && contiguous(&l.strides));
        let nodes_ok = self.nodes.iter().enumerate().all(|(p, n)| {
            let is_reduce_root = self.reduce.is_some() && p + 1 == self.nodes.len();
            is_reduce_root
                || (vector_ok(&n.prim, &n.in_dts, n.out_dt, self.gdt)
                    && n.srcs.iter().all(|s| match s {
                        Src::Lit(l) => l.dtype == self.gdt || l.dtype == DType::Bool,
                        _ => true,
                    }))
        });
        let reduce_ok = match self.reduce {
            None => true,
            Some(op) => matches!(
                op,
                ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod
            ),
        };
        let result_ok = match &self.result {
            Src::Val(p) => self.nodes[*p].out_dt == self.gdt,
            Src::Leaf(_) => true,
            Src::Lit(_) => false,
        };
        if leaves_ok && nodes_ok && reduce_ok && result_ok && contiguous(&self.out_strides) {
            lanes
        } else {
            1
        }
    }

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

    fn inner(
        &self,
        b: &mut FunctionBuilder,
        bases: &[Value],
        idx: &[Variable],
        start: Value,
        n: Value,
    ) -> Result<(), GenError> {
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
        let ctx = RowCtx {
            leaf_addrs,
            out_addr,
            hoisted,
            load_flags,
        };
        let jv = idx[inner];
        b.def_var(jv, start);
        let out_inner = self.out_strides[inner];
        // Loops that cannot run for this extent are not emitted (smaller
        // code, faster compiles for small groups).
        let extent = self.dims[inner] as i64;
        let l = if extent < self.lanes as i64 {
            1
        } else {
            self.lanes as i64
        };
        let long_body = self
            .nodes
            .iter()
            .any(|n| !n.skip && is_long_expansion(&n.prim));
        let unroll = extent >= 4 * l;
        // Reductions keep four accumulators (latency); plain stores of long
        // bodies gain nothing from unrolling.
        let unroll_stores = unroll && !long_body;
        let mut res: Result<(), GenError> = Ok(());
        if self.reduce.is_some() && out_inner == 0 {
            // Accumulate along the reduced inner dimension in registers.
            let op = self.reduce.unwrap_or(ReduceOp::Sum);
            let sty = scalar_type(self.out_dt).ok_or_else(|| err(None, "dtype"))?;
            let sacc = b.declare_var(sty);
            if l > 1 {
                let vty = Em {
                    b,
                    lanes: self.lanes,
                }
                .fty(self.gdt);
                let accs: Vec<Variable> = (0..4).map(|_| b.declare_var(vty)).collect();
                for &a in &accs {
                    let mut em = Em {
                        b,
                        lanes: self.lanes,
                    };
                    let id = identity(&mut em, op, self.out_dt);
                    em.b.def_var(a, id);
                }
                if unroll {
                    counted(b, jv, n, 4 * l, &mut |b, j| {
                        for (u, &a) in accs.iter().enumerate() {
                            let ju = b.ins().iadd_imm_s(j, u as i64 * l);
                            match self.value(b, &ctx, ju, self.lanes) {
                                Ok(v) => {
                                    let cur = b.use_var(a);
                                    let mut em = Em {
                                        b,
                                        lanes: self.lanes,
                                    };
                                    let nv = combine(&mut em, op, self.out_dt, cur, v);
                                    em.b.def_var(a, nv);
                                }
                                Err(e) => res = Err(e),
                            }
                        }
                    });
                }
                counted(
                    b,
                    jv,
                    n,
                    l,
                    &mut |b, j| match self.value(b, &ctx, j, self.lanes) {
                        Ok(v) => {
                            let cur = b.use_var(accs[0]);
                            let mut em = Em {
                                b,
                                lanes: self.lanes,
                            };
                            let nv = combine(&mut em, op, self.out_dt, cur, v);
                            em.b.def_var(accs[0], nv);
                        }
                        Err(e) => res = Err(e),
                    },
                );
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
                sem.b.def_var(sacc, h);
            } else {
                let mut em = Em { b, lanes: 1 };
                let id = identity(&mut em, op, self.out_dt);
                em.b.def_var(sacc, id);
            }
            counted(b, jv, n, 1, &mut |b, j| match self.value(b, &ctx, j, 1) {
                Ok(v) => {
                    let cur = b.use_var(sacc);
                    let mut em = Em { b, lanes: 1 };
                    let nv = combine(&mut em, op, self.out_dt, cur, v);
                    em.b.def_var(sacc, nv);
                }
                Err(e) => res = Err(e),
            });
            let acc = b.use_var(sacc);
            let old = b.ins().load(sty, load_flags, ctx.out_addr, 0);
            let mut em = Em { b, lanes: 1 };
            let nv = combine(&mut em, op, self.out_dt, old, acc);
            em.b.ins().store(load_flags, nv, ctx.out_addr, 0);
            return res;
        }
        let body = |b: &mut FunctionBuilder, j: Value, lanes: u8| -> Result<(), GenError> {
            let v = self.value(b, &ctx, j, lanes)?;
            let off = b.ins().imul_imm_s(j, out_inner * Self::esize(self.out_dt));
            let addr = b.ins().iadd(ctx.out_addr, off);
            let v = match self.reduce {
                Some(op) => {
                    let ty = if lanes > 1 {
                        Em { b, lanes }.fty(self.gdt)
                    } else {
                        scalar_type(self.out_dt).ok_or_else(|| err(None, "dtype"))?
                    };
                    let old = b.ins().load(ty, load_flags, addr, 0);
                    let mut em = Em { b, lanes };
                    combine(&mut em, op, self.out_dt, old, v)
                }
                None if half::is_half(self.out_dt) => {
                    half::store_bits(&mut Em { b, lanes: 1 }, self.out_dt, v)
                }
                None => v,
            };
            b.ins().store(load_flags, v, addr, 0);
            Ok(())
        };
        if l > 1 {
            if unroll_stores {
                counted(b, jv, n, 4 * l, &mut |b, j| {
                    for u in 0..4 {
                        let ju = b.ins().iadd_imm_s(j, u * l);
                        if let Err(e) = body(b, ju, self.lanes) {
                            res = Err(e);
                        }
                    }
                });
            }
            counted(b, jv, n, l, &mut |b, j| {
                if let Err(e) = body(b, j, self.lanes) {
                    res = Err(e);
                }
            });
        }
        counted(b, jv, n, 1, &mut |b, j| {
            if let Err(e) = body(b, j, 1) {
                res = Err(e);
            }
        });
        res
    }

    /// The group's result at inner index `j` (`lanes` elements from `j`).
    fn value(
        &self,
        b: &mut FunctionBuilder,
        ctx: &RowCtx,
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
        for node in &self.nodes[..last] {
            if node.skip {
                // Emitted inside the fused multiply-add that consumes it;
                // the placeholder is never read.
                vals.push(j);
                continue;
            }
            if let Some((q, slot)) = node.fused_mul {
                let m = &self.nodes[q];
                let a0 = src_val(b, &m.srcs[0], &vals)?;
                let a1 = src_val(b, &m.srcs[1], &vals)?;
                let c = src_val(b, &node.srcs[1 - slot], &vals)?;
                let sub = node.prim == Primitive::Binary(jaxon_ir::primitive::BinaryOp::Sub);
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
                    half::emit_op(&mut em, self.gdt, &node.prim, &args, node.out_dt)
                } else {
                    emit_op(&mut em, self.gdt, &node.prim, &args, node.out_dt)
                }
                .map_err(|m| err(Some(node.eqn), m))?;
            vals.push(v);
        }
        src_val(b, &self.result, &vals)
    }
}

struct RowCtx {
    leaf_addrs: Vec<Value>,
    out_addr: Value,
    hoisted: Vec<Option<(Value, Option<Value>)>>,
    load_flags: MemFlagsData,
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
