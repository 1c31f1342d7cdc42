//! The block program: a `pallas_call` kernel's jaxpr evaluated by one
//! thread block, for one program at a time.
//!
//! Values of the kernel body ([`BVal`]):
//! - a rank-0 array is a **uniform scalar**: a local that every thread of
//!   the block computes alike (program ids, loop counters, reductions to a
//!   scalar, index arithmetic);
//! - any other array lives in a **region** of block memory (one pool per
//!   dtype, in shared memory when it fits, else a per-block slot of global
//!   scratch; [`Pools`], [`Placement`]), its elements spread over the threads cyclically
//!   (`e = tid + k · THREADS`);
//! - a `Ref` is a view of a global operand window or of a scratch region
//!   (`refs.rs`).
//!
//! Invariants:
//! - Every array-producing step is `barrier; for e = tid.. { out[e] = … };
//!   barrier` ([`Block::each`]), so a step may read any element written
//!   before it, and no later step writes what an earlier one still reads.
//! - Regions are written once per evaluation of their equation (loop bodies
//!   rewrite theirs on every iteration, after a barrier).
//! - `w = dot_general x y; z = add r w` with `w` used once runs as one
//!   tensor-core step when `mma.rs` takes it (`mma::dot_add`): `z`'s region
//!   is accumulated from `r`, `w` never exists.
//! - Control flow branches only on uniform scalars, so every barrier is
//!   reached by the whole block.
//! - No catch-all arm: the family `match` in [`Block::eqn`] is exhaustive,
//!   and each family's lowering in `ops.rs`/`refs.rs` matches its own enum.

use super::super::kernel::{compute, i64c, lit_expr, multi_index};
use super::super::plan::BufId;
use super::super::{unsupported, Ctx};
use super::mma::ALIGN;
use super::{control, lazy, mma, ops, refs};
use crate::kir::{Expr, KernelBuilder, ParamId, SharedId, Space, Stmt};
use jaxon_ir::primitive::Primitive;
use jaxon_ir::{Atom, Aval, Binder, DType, Eqn, HostArray, IrError, Jaxpr, Var as JVar};
use std::collections::HashMap;

/// Threads per block of a `pallas_call` kernel.
pub(crate) const THREADS: u32 = 128;

/// Shared memory a program's values may take before they move to global
/// scratch (the static limit is 48 KiB; a margin stays for the printer).
pub(super) const SHARED_BUDGET: usize = 40 * 1024;

/// An array value in block memory: `dtype[shape]` at `space[base ..]`.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    pub space: Space,
    /// The first element's index (`i64`).
    pub base: Expr,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Region {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A value of the kernel body.
#[derive(Clone, Debug)]
pub(crate) enum BVal {
    /// A uniform rank-0 value: a compute-dtype expression (a local or a
    /// constant) of the storage dtype given.
    Scalar(Expr, DType),
    /// An array in block memory.
    Array(Region),
    /// A mutable reference.
    Ref(refs::RefView),
    /// An elementwise value evaluated where it is used (`lazy.rs`).
    Lazy(std::rc::Rc<lazy::Lazy>),
}

/// Where the values of a program live: each dtype's pool is one
/// shared-memory array, or one global scratch buffer with a slot per
/// launched block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Placement {
    /// Every pool in shared memory.
    Shared,
    /// The pools of these dtypes in global scratch, the others shared (the
    /// large f32 values of a kernel in scratch, its bf16 tiles shared).
    Split(Vec<DType>),
    /// Every pool in global scratch.
    Global,
}

impl Placement {
    fn global(&self, d: DType) -> bool {
        match self {
            Placement::Shared => false,
            Placement::Split(g) => g.contains(&d),
            Placement::Global => true,
        }
    }
}

/// One dtype's pool of block memory.
struct Pool {
    dtype: DType,
    space: Space,
    /// The shared array (shared placement).
    shared: Option<SharedId>,
    /// The scalar parameter holding the slot length (global placement).
    slot: Option<ParamId>,
    /// Elements handed out so far.
    len: usize,
}

/// The pools of block memory, one per dtype.
pub(super) struct Pools {
    placement: Placement,
    pools: Vec<Pool>,
}

/// What a kernel parameter is bound to at launch.
#[derive(Clone, Copy, Debug)]
pub(super) enum ArgSlot {
    /// A buffer of the program.
    Buf(BufId),
    /// The global scratch of pool `i`.
    Scratch(usize),
    /// The slot length of pool `i`.
    Slot(usize),
}

/// A pool's final size, for the launcher.
pub(super) struct PoolSize {
    pub dtype: DType,
    pub len: usize,
    pub shared: Option<SharedId>,
}

/// The kernel being built for one `pallas_call`.
pub(crate) struct Block<'a> {
    pub k: KernelBuilder,
    pub ctx: &'a mut Ctx,
    params: Vec<ArgSlot>,
    bufs: HashMap<(BufId, bool), ParamId>,
    pools: Pools,
    /// `threadIdx.x` as `i64`.
    pub tid: Expr,
    /// The program's index along each grid axis (`i64` locals).
    pub ids: Vec<Expr>,
    /// The grid.
    pub grid: Vec<usize>,
    /// The variables of the jaxpr being run that may stay lazy.
    lazy: std::collections::HashSet<JVar>,
}

impl<'a> Block<'a> {
    pub(super) fn new(ctx: &'a mut Ctx, name: &str, placement: Placement) -> Block<'a> {
        let mut k = KernelBuilder::new(name, THREADS);
        let tid = k.let_("tid", DType::I64, Expr::thread_x().cast(DType::I64));
        Block {
            k,
            ctx,
            params: Vec::new(),
            bufs: HashMap::new(),
            pools: Pools {
                placement,
                pools: Vec::new(),
            },
            tid: Expr::var(tid),
            ids: Vec::new(),
            grid: Vec::new(),
            lazy: Default::default(),
        }
    }

    /// The parameter of buffer `b` (added on first use).
    pub fn buffer(&mut self, b: BufId, writable: bool) -> Result<ParamId, IrError> {
        if let Some(p) = self.bufs.get(&(b, writable)) {
            return Ok(*p);
        }
        let d = self.ctx.decl(b)?.dtype;
        let p = self.k.global(&format!("b{}", b.0), d, writable);
        self.params.push(ArgSlot::Buf(b));
        self.bufs.insert((b, writable), p);
        Ok(p)
    }

    /// A fresh region of `dtype[shape]` in block memory.
    pub fn alloc(&mut self, dtype: DType, shape: &[usize]) -> Result<Region, IrError> {
        let n: usize = shape.iter().product();
        let i = match self.pools.pools.iter().position(|p| p.dtype == dtype) {
            Some(i) => i,
            None => {
                let i = self.pools.pools.len();
                let pool = match self.pools.placement.global(dtype) {
                    false => {
                        let s = self.k.shared(&format!("pool_{dtype}"), dtype, 0);
                        Pool {
                            dtype,
                            space: Space::Shared(s),
                            shared: Some(s),
                            slot: None,
                            len: 0,
                        }
                    }
                    true => {
                        let g = self.k.global(&format!("scratch_{dtype}"), dtype, true);
                        self.params.push(ArgSlot::Scratch(i));
                        let s = self.k.scalar(&format!("slot_{dtype}"), DType::I64);
                        self.params.push(ArgSlot::Slot(i));
                        Pool {
                            dtype,
                            space: Space::Global(g),
                            shared: None,
                            slot: Some(s),
                            len: 0,
                        }
                    }
                };
                self.pools.pools.push(pool);
                i
            }
        };
        let pool = &mut self.pools.pools[i];
        // Every region starts at a multiple of ALIGN elements (and so does
        // every slot of global scratch), for aligned vector accesses.
        let overflow = || IrError::Invalid("pallas_call: block memory overflows".into());
        let start = pool
            .len
            .checked_next_multiple_of(ALIGN)
            .ok_or_else(overflow)?;
        let off = start as i64;
        pool.len = start
            .checked_add(n)
            .and_then(|e| e.checked_next_multiple_of(ALIGN))
            .ok_or_else(overflow)?;
        let base = match pool.slot {
            Some(s) => Expr::block_x().cast(DType::I64) * Expr::param(s) + i64c(off),
            None => i64c(off),
        };
        Ok(Region {
            space: pool.space,
            base,
            shape: shape.to_vec(),
            dtype,
        })
    }

    /// The bytes each dtype's pool takes per program, and whether it is
    /// in shared memory.
    pub(super) fn pool_bytes(&self) -> Vec<(DType, usize, bool)> {
        self.pools
            .pools
            .iter()
            .map(|p| {
                let bytes = p.len.saturating_mul(p.dtype.size_bytes());
                (p.dtype, bytes, p.shared.is_some())
            })
            .collect()
    }

    /// The parameters and pool sizes, once the body is built.
    pub(super) fn finish(self) -> (KernelBuilder, Vec<ArgSlot>, Vec<PoolSize>) {
        let sizes = self
            .pools
            .pools
            .iter()
            .map(|p| PoolSize {
                dtype: p.dtype,
                len: p.len,
                shared: p.shared,
            })
            .collect();
        (self.k, self.params, sizes)
    }

    /// Loads element `index` of `space` (of storage dtype `d`) as a
    /// compute-dtype value; `mask` gives the storage-dtype value where it is
    /// false.
    pub fn ld(&mut self, space: Space, d: DType, index: Expr, mask: Option<(Expr, Expr)>) -> Expr {
        let x = self.k.var("x", d);
        self.k.load(&[x], space, index, mask);
        if compute(d) != d {
            Expr::var(x).cast(compute(d))
        } else {
            Expr::var(x)
        }
    }

    /// Stores the compute-dtype value `v` to element `index` of `space`.
    pub fn st(&mut self, space: Space, d: DType, index: Expr, v: Expr, mask: Option<Expr>) {
        let v = if compute(d) != d { v.cast(d) } else { v };
        self.k.store(space, index, vec![v], mask);
    }

    /// Element `e` (linear) of a value: a scalar's own value, a region's
    /// element.
    pub fn elem(&mut self, v: &BVal, e: Expr) -> Result<Expr, IrError> {
        match v {
            BVal::Scalar(x, _) => Ok(x.clone()),
            BVal::Array(r) => {
                let r = r.clone();
                Ok(self.ld(r.space, r.dtype, r.base + e, None))
            }
            BVal::Ref(_) => Err(IrError::ty("pallas_call", "a Ref used as an array")),
            BVal::Lazy(l) => {
                let l = l.clone();
                let idx = multi_index(&mut self.k, e, &l.shape);
                l.at(self, &idx)
            }
        }
    }

    /// `v` in block memory if it is lazy, else `v`.
    pub fn materialize(&mut self, v: BVal) -> Result<BVal, IrError> {
        match v {
            BVal::Lazy(l) => self.produce(l.dtype, &l.shape.clone(), |b, idx| l.at(b, idx)),
            BVal::Scalar(..) | BVal::Array(_) | BVal::Ref(_) => Ok(v),
        }
    }

    /// Emits `barrier; for e in tid..n step THREADS { body(e) }; barrier`.
    pub fn each(
        &mut self,
        n: usize,
        body: impl FnOnce(&mut Block<'a>, Expr) -> Result<(), IrError>,
    ) -> Result<(), IrError> {
        if n == 0 {
            return Ok(());
        }
        let e = self.k.var("e", DType::I64);
        self.k.barrier();
        self.k.begin_body();
        let r = body(self, Expr::var(e));
        let b = self.k.end_body();
        r?;
        self.k.push(Stmt::For {
            var: e,
            start: self.tid.clone(),
            end: i64c(n as i64),
            step: i64c(i64::from(THREADS)),
            body: b,
        });
        self.k.barrier();
        Ok(())
    }

    /// Emits `barrier; if tid == 0 { body }; barrier`: work done once per
    /// program, in order (atomics).
    pub fn once(
        &mut self,
        body: impl FnOnce(&mut Block<'a>) -> Result<(), IrError>,
    ) -> Result<(), IrError> {
        self.k.barrier();
        self.k.begin_body();
        let r = body(self);
        let b = self.k.end_body();
        r?;
        self.k.push(Stmt::If {
            cond: self.tid.clone().eq(i64c(0)),
            then: b,
            otherwise: Vec::new(),
        });
        self.k.barrier();
        Ok(())
    }

    /// A value of `dtype[shape]` whose element at multi-index `idx` is
    /// `f(idx)`: a uniform scalar for rank 0 (computed by every thread), else
    /// a fresh region filled by [`Block::each`].
    pub fn produce(
        &mut self,
        dtype: DType,
        shape: &[usize],
        f: impl FnOnce(&mut Block<'a>, &[Expr]) -> Result<Expr, IrError>,
    ) -> Result<BVal, IrError> {
        if shape.is_empty() {
            let v = f(self, &[])?;
            let x = self.k.let_("s", compute(dtype), v);
            return Ok(BVal::Scalar(Expr::var(x), dtype));
        }
        let r = self.alloc(dtype, shape)?;
        let n = r.len();
        let out = r.clone();
        let shape = shape.to_vec();
        self.each(n, move |b, e| {
            let idx = multi_index(&mut b.k, e.clone(), &shape);
            let v = f(b, &idx)?;
            b.st(out.space, out.dtype, out.base.clone() + e, v, None);
            Ok(())
        })?;
        Ok(BVal::Array(r))
    }

    /// Copies `src` into the storage `dst` (a scalar local or a region of
    /// the same type).
    pub fn assign(&mut self, dst: &BVal, src: &BVal) -> Result<(), IrError> {
        match (dst, src) {
            (BVal::Scalar(Expr::Var(v), _), BVal::Scalar(x, _)) => {
                self.k.assign(*v, x.clone());
                Ok(())
            }
            (BVal::Array(d), s @ (BVal::Array(_) | BVal::Scalar(..) | BVal::Lazy(_))) => {
                let d = d.clone();
                let s = s.clone();
                self.each(d.len(), move |b, e| {
                    let x = b.elem(&s, e.clone())?;
                    b.st(d.space, d.dtype, d.base + e, x, None);
                    Ok(())
                })
            }
            (BVal::Ref(_), BVal::Ref(_)) => Ok(()),
            _ => Err(IrError::Invalid(
                "pallas_call: a carry changed kind in the kernel".into(),
            )),
        }
    }

    /// Fresh storage for a value of the type of `v`, holding a copy of it.
    pub fn storage_like(&mut self, v: &BVal) -> Result<BVal, IrError> {
        let s = match v {
            BVal::Scalar(_, d) => {
                let x = self.k.var("c", compute(*d));
                BVal::Scalar(Expr::var(x), *d)
            }
            BVal::Array(r) => BVal::Array(self.alloc(r.dtype, &r.shape)?),
            BVal::Lazy(l) => BVal::Array(self.alloc(l.dtype, &l.shape)?),
            BVal::Ref(r) => return Ok(BVal::Ref(r.clone())),
        };
        self.assign(&s, v)?;
        Ok(s)
    }

    /// The value of an atom.
    pub fn atom(&self, env: &HashMap<JVar, BVal>, a: &Atom) -> Result<BVal, IrError> {
        match a {
            Atom::Lit(l) => Ok(BVal::Scalar(lit_expr(l), l.dtype)),
            Atom::Var(v) => env.get(v).cloned().ok_or_else(|| {
                IrError::Invalid(format!("pallas_call: kernel variable {} is unbound", v.0))
            }),
        }
    }

    /// A constant of a closed jaxpr: rank 0 as a scalar, else a program
    /// constant read through a global region.
    pub fn constant(&mut self, c: &HostArray) -> Result<BVal, IrError> {
        let d = c.dtype();
        if c.ndim() == 0 && c.len() == 1 {
            let x = c.data();
            let e = if d.is_float() {
                Expr::constant(compute(d), x.get_f64(0))
            } else {
                Expr::int(d, x.get_i64(0))
            };
            return Ok(BVal::Scalar(e, d));
        }
        let b = self.ctx.alloc(d, c.shape())?;
        self.ctx.prog.consts.push((b, c.clone()));
        let p = self.buffer(b, false)?;
        Ok(BVal::Array(Region {
            space: Space::Global(p),
            base: i64c(0),
            shape: c.shape().to_vec(),
            dtype: d,
        }))
    }

    /// Evaluates `jaxpr` (with `consts` for its constvars) on `args`.
    pub fn run(
        &mut self,
        jaxpr: &Jaxpr,
        consts: &[HostArray],
        args: Vec<BVal>,
    ) -> Result<Vec<BVal>, IrError> {
        if jaxpr.invars.len() != args.len() || jaxpr.constvars.len() != consts.len() {
            return Err(IrError::Invalid(format!(
                "pallas_call: a kernel jaxpr takes {} inputs, given {}",
                jaxpr.invars.len(),
                args.len()
            )));
        }
        let mut env = HashMap::new();
        for (v, c) in jaxpr.constvars.iter().zip(consts) {
            let c = self.constant(c)?;
            env.insert(*v, c);
        }
        for (v, a) in jaxpr.invars.iter().zip(args) {
            env.insert(*v, a);
        }
        let outer = std::mem::replace(&mut self.lazy, lazy::lazy_vars(jaxpr));
        let res = self.eqns(jaxpr, &mut env);
        self.lazy = outer;
        res?;
        jaxpr.outvars.iter().map(|a| self.atom(&env, a)).collect()
    }

    fn eqns(&mut self, jaxpr: &Jaxpr, env: &mut HashMap<JVar, BVal>) -> Result<(), IrError> {
        let mut fused = false;
        for (i, eqn) in jaxpr.eqns.iter().enumerate() {
            // The `add` that `mma::dot_add` folded into the dot before it.
            if std::mem::take(&mut fused) {
                continue;
            }
            let mut ins = eqn
                .inputs
                .iter()
                .map(|a| self.atom(env, a))
                .collect::<Result<Vec<_>, _>>()?;
            if !lazy::reads_once(&eqn.primitive) {
                ins = ins
                    .into_iter()
                    .map(|v| self.materialize(v))
                    .collect::<Result<_, _>>()?;
            }
            if let Some((z, v)) = mma::dot_add(self, jaxpr, i, &ins, env)? {
                env.insert(z, v);
                fused = true;
                continue;
            }
            let outs = self.eqn(jaxpr, eqn, ins)?;
            if outs.len() != eqn.outputs.len() {
                return Err(IrError::Invalid(format!(
                    "pallas_call: {} gave {} results for {} outputs",
                    eqn.primitive.name(),
                    outs.len(),
                    eqn.outputs.len()
                )));
            }
            for (b, v) in eqn.outputs.iter().zip(outs) {
                if let Binder::Var(x) = b {
                    env.insert(*x, v);
                }
            }
        }
        Ok(())
    }

    /// Whether the result `b` of an elementwise equation may stay lazy.
    pub fn may_defer(&self, b: &Binder) -> bool {
        matches!(b, Binder::Var(v) if self.lazy.contains(v))
    }

    /// One equation: the family `match`.
    fn eqn(&mut self, jaxpr: &Jaxpr, eqn: &Eqn, ins: Vec<BVal>) -> Result<Vec<BVal>, IrError> {
        let name = eqn.primitive.name();
        let outs: Vec<(DType, Vec<usize>)> = eqn
            .outputs
            .iter()
            .map(|b| out_type(jaxpr, b, name))
            .collect::<Result<_, _>>()?;
        match &eqn.primitive {
            Primitive::Elementwise(p) => match (eqn.outputs.as_slice(), outs.as_slice()) {
                ([b], [(d, shape)]) if !shape.is_empty() && self.may_defer(b) => {
                    Ok(vec![lazy::Lazy::value(p, &ins, *d, shape)])
                }
                _ => ops::elementwise(self, p, &ins, &outs),
            },
            Primitive::Structural(p) => ops::structural(self, p, &ins, &outs),
            Primitive::Indexing(p) => ops::indexing(self, p, &ins, &outs),
            Primitive::Reduction(p) => ops::reduction(self, p, &ins, &outs),
            Primitive::Linalg(p) => ops::linalg(self, p, &ins, &outs),
            Primitive::Control(p) => control::lower(self, eqn, p, ins),
            Primitive::State(p) => {
                let used = eqn.outputs.iter().any(|b| matches!(b, Binder::Var(_)));
                refs::state(self, p, &ins, &outs, used)
            }
            Primitive::Pallas(p) => refs::pallas(self, p, &ins, &outs),
            Primitive::Collective(_)
            | Primitive::Marker(_)
            | Primitive::Window(_)
            | Primitive::Random(_)
            | Primitive::Callback(_) => Err(in_kernel(name)),
        }
    }
}

/// `primitive` does not lower inside a `pallas_call` kernel.
pub(crate) fn in_kernel(primitive: &str) -> IrError {
    unsupported(
        primitive,
        "not lowered inside a pallas_call kernel on cuda yet",
    )
}

/// The type of an output binder: dtype and static shape (a `Ref`'s inner
/// type for a `Ref`).
pub(super) fn out_type(
    jaxpr: &Jaxpr,
    b: &Binder,
    name: &str,
) -> Result<(DType, Vec<usize>), IrError> {
    let aval = jaxpr
        .binder_aval(b)
        .ok_or_else(|| IrError::Invalid(format!("pallas_call: {name}'s output has no type")))?;
    let arr = match aval {
        Aval::Array(a) => a,
        Aval::Ref(r) => &r.inner,
    };
    let sizes = arr
        .static_sizes()
        .ok_or_else(|| unsupported(name, "dynamic shapes inside a pallas_call kernel"))?;
    Ok((arr.dtype, sizes))
}

/// The uninitialised value of storage dtype `d` (NaN, integer minimum,
/// false), as JAX's interpret mode fills padding and fresh scratch.
pub(crate) fn uninit(d: DType) -> Expr {
    use crate::kir::Const;
    if d.is_float() {
        return Expr::Const(Const::from_f64(d, f64::NAN));
    }
    if d.is_signed_int() {
        return Expr::int(d, i64::MIN >> (64 - d.bits()));
    }
    Expr::int(d, 0)
}

/// [`uninit`] as a compute-dtype value.
pub(crate) fn uninit_c(d: DType) -> Expr {
    if d.is_float() {
        Expr::constant(compute(d), f64::NAN)
    } else {
        uninit(d)
    }
}
