//! Lowering jaxprs to launch plans ([`plan::Program`]): the lowering table.
//!
//! A closed jaxpr is simplified (`ir::passes::simplify`: calls inlined,
//! constants folded, CSE, DCE), partitioned by the shared fusion planner
//! (`ir::passes::plan_fusion`), and each group becomes steps: a **loop**
//! group one fused elementwise kernel (`fused`), a **reduce** group one
//! warp-per-row reduction kernel with its producers fused in
//! (`reduction`), and an **opaque** group its one equation, dispatched by
//! `lower_eqn` — one exhaustive `match` over the primitive families, each
//! family's file matching exhaustively on its own enum. A primitive that
//! does not lower yet has an explicit arm returning
//! `IrError::Unsupported { backend: "cuda", .. }`; there is no catch-all.
//!
//! Invariants:
//! - Every value is a dense row-major buffer or a scalar literal
//!   (`Value`); literals are folded into kernels as constants.
//! - Only static shapes lower here; a jaxpr with dimension variables
//!   compiles through `dynamic` instead (the backends check `is_dynamic`).
//! - Lowering never panics on a malformed jaxpr: missing variables, bad
//!   arities and shape mismatches are `IrError`s.

pub mod backend;
mod bitonic;
mod callback;
mod complex;
mod complex_arc;
mod complex_div;
mod complex_fft;
mod complex_fold;
mod complex_math;
mod complex_nested;
mod complex_ops;
mod control;
mod conv;
mod cumulative;
mod decomp;
mod decomp_jacobi;
mod decomp_schur;
mod decomp_svd;
pub mod dynamic;
mod elementwise;
mod epilogue;
mod for_loop;
mod fused;
mod fused_vec;
mod gather;
pub mod gpu;
mod indexing;
mod kernel;
mod keys;
mod linalg;
mod pallas;
pub mod plan;
pub mod precision;
mod random;
mod reduction;
mod reduction_vec;
mod rng_bit;
mod rowrun;
pub mod run;
mod sort;
mod special;
mod spmd;
mod spmd_gpu;
mod state;
mod structural;
mod unsupported;
mod window;

#[cfg(test)]
mod tests;

use crate::kir::Kernel;
use jaxon_ir::primitive::Primitive;
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Eqn, HostArray, IrError, Jaxpr, Literal, Var};
use plan::{BufId, BufferDecl, Program, Step};
use std::collections::HashMap;

pub use backend::{sim_devices_from_env, CudaBackend, CudaSimBackend, SIM_DEVICES_ENV};

/// The backend name errors carry.
pub(crate) const BACKEND: &str = "cuda";

/// `primitive` does not lower (yet), because of `why`.
pub(crate) fn unsupported(primitive: &str, why: impl Into<String>) -> IrError {
    IrError::unsupported(BACKEND, primitive, why)
}

/// A value during lowering: a buffer of the program or a scalar literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    /// A buffer.
    Buf(BufId),
    /// A scalar literal.
    Lit(Literal),
}

/// The state of one lowering: the program being built.
pub(crate) struct Ctx {
    pub prog: Program,
    names: HashMap<String, usize>,
    /// The choices this program is lowered with.
    pub opts: precision::LowerOptions,
}

impl Ctx {
    fn new(opts: precision::LowerOptions) -> Ctx {
        Ctx {
            prog: Program::default(),
            names: HashMap::new(),
            opts,
        }
    }

    /// A new buffer of `dtype[shape]`, refused with
    /// `IrError::ResourceExhausted` (naming the shape and the bytes) when it
    /// could not be allocated: its size overflows, exceeds the memory limit
    /// (`jaxon_ir::memory`), or the allocator cannot provide it now. Every
    /// buffer of a program is declared here, so every device or simulator
    /// allocation of a shape-sized buffer has passed this check.
    pub fn alloc(&mut self, dtype: DType, shape: &[usize]) -> Result<BufId, IrError> {
        let bytes = jaxon_ir::memory::check_alloc("cuda buffer", dtype, shape, 0)?;
        let len = bytes.checked_div(dtype.size_bytes()).unwrap_or(0);
        // A key is two u32 words (`random.rs`).
        let (dtype, len) = match dtype {
            DType::KeyFry => (DType::U32, len * 2),
            d => (d, len),
        };
        self.prog.buffers.push(BufferDecl { dtype, len });
        let id = u32::try_from(self.prog.buffers.len() - 1)
            .map_err(|_| IrError::Invalid("cuda lowering: too many buffers".into()))?;
        Ok(BufId(id))
    }

    /// The declaration of a buffer.
    pub fn decl(&self, b: BufId) -> Result<BufferDecl, IrError> {
        self.prog
            .buffers
            .get(b.index())
            .copied()
            .ok_or_else(|| IrError::Invalid(format!("cuda lowering: no buffer {}", b.0)))
    }

    /// A kernel name unique in the program, from `base`.
    pub fn name(&mut self, base: &str) -> String {
        let clean: String = base
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let n = self.names.entry(clean.clone()).or_insert(0);
        *n += 1;
        format!("{clean}_{}", *n - 1)
    }

    /// Adds a kernel; its index.
    pub fn kernel(&mut self, k: Kernel) -> usize {
        self.prog.kernels.push(k);
        self.prog.kernels.len() - 1
    }
}

/// The variable environment of one jaxpr being lowered.
pub(crate) struct Env {
    vals: HashMap<Var, Value>,
}

impl Env {
    fn new() -> Env {
        Env {
            vals: HashMap::new(),
        }
    }

    pub fn bind(&mut self, v: Var, val: Value) {
        self.vals.insert(v, val);
    }

    /// The value of an atom.
    pub fn atom(&self, a: &Atom) -> Result<Value, IrError> {
        match a {
            Atom::Lit(l) => Ok(Value::Lit(*l)),
            Atom::Var(v) => self.vals.get(v).copied().ok_or_else(|| {
                IrError::Invalid(format!("cuda lowering: variable {} is unbound", v.0))
            }),
        }
    }
}

/// The static type of an atom: dtype and sizes.
pub(crate) fn atom_type(jaxpr: &Jaxpr, a: &Atom) -> Result<(DType, Vec<usize>), IrError> {
    let aval = jaxpr
        .atom_aval(a)
        .ok_or_else(|| IrError::Invalid("cuda lowering: operand not in the table".into()))?;
    let arr = aval
        .as_array()
        .ok_or_else(|| unsupported("ref", "Ref values do not lower yet"))?;
    let sizes = arr
        .static_sizes()
        .ok_or_else(|| unsupported("dynamic shape", "dynamic dimensions do not lower yet"))?;
    Ok((arr.dtype, sizes))
}

/// The static type of an equation output.
pub(crate) fn out_type(jaxpr: &Jaxpr, b: &Binder) -> Result<(DType, Vec<usize>), IrError> {
    let aval = jaxpr
        .binder_aval(b)
        .ok_or_else(|| IrError::Invalid("cuda lowering: output not in the table".into()))?;
    let arr = aval
        .as_array()
        .ok_or_else(|| unsupported("ref", "Ref values do not lower yet"))?;
    let sizes = arr
        .static_sizes()
        .ok_or_else(|| unsupported("dynamic shape", "dynamic dimensions do not lower yet"))?;
    Ok((arr.dtype, sizes))
}

/// Allocates a buffer for each output of `eqn` and binds it.
pub(crate) fn bind_outputs(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
) -> Result<Vec<(BufId, DType, Vec<usize>)>, IrError> {
    let mut out = Vec::new();
    for b in &eqn.outputs {
        let (dt, shape) = out_type(jaxpr, b)?;
        let buf = ctx.alloc(dt, &shape)?;
        if let Binder::Var(v) = b {
            env.bind(*v, Value::Buf(buf));
        }
        out.push((buf, dt, shape));
    }
    Ok(out)
}

/// Lowers a closed jaxpr to a program with the default options (full
/// `f32` products).
pub fn lower(closed: &ClosedJaxpr) -> Result<Program, IrError> {
    lower_with(closed, precision::LowerOptions::default())
}

/// Lowers a closed jaxpr to a program with `opts`.
pub fn lower_with(closed: &ClosedJaxpr, opts: precision::LowerOptions) -> Result<Program, IrError> {
    if complex::has_complex(&closed.jaxpr) {
        let split = complex::split(closed)?;
        return lower_real(&split.closed, &split.out_complex, opts);
    }
    lower_real(closed, &vec![None; closed.jaxpr.outvars.len()], opts)
}

/// Lowers a closed jaxpr without complex values; output `i` with
/// `out_complex[i] = Some(c)` is a `[..., 2]` real array that the host
/// sees as a complex array of dtype `c` (`complex.rs`).
fn lower_real(
    closed: &ClosedJaxpr,
    out_complex: &[Option<DType>],
    opts: precision::LowerOptions,
) -> Result<Program, IrError> {
    unsupported::complex(&closed.jaxpr)?;
    let mut ctx = Ctx::new(opts);
    let mut inputs = Vec::new();
    let mut in_vals = Vec::new();
    let mut steps = Vec::new();
    // `Ref` arguments: a buffer of their own, updated in place and
    // returned after the results (`state.rs`).
    let mut refs = Vec::new();
    for v in &closed.jaxpr.invars {
        if let Some(jaxon_ir::Aval::Ref(r)) = closed.jaxpr.try_aval(*v) {
            let (dt, shape) = (r.inner.dtype, r.inner.static_sizes());
            let shape = shape.ok_or_else(|| unsupported("ref", "dynamic Ref shapes"))?;
            if dt == DType::KeyFry {
                return Err(unsupported("ref", "Refs of keys do not lower yet"));
            }
            let b = ctx.alloc(dt, &shape)?;
            let own = ctx.alloc(dt, &shape)?;
            kernel::copy_into(
                &mut ctx,
                &mut steps,
                Value::Buf(b),
                own,
                shape.iter().product(),
            )?;
            inputs.push(b);
            in_vals.push(Value::Buf(own));
            refs.push((own, dt, shape));
            continue;
        }
        let (dt, shape) = atom_type(&closed.jaxpr, &Atom::Var(*v))?;
        let b = ctx.alloc(dt, &shape)?;
        inputs.push(b);
        in_vals.push(Value::Buf(b));
    }
    let outs = lower_closed(&mut ctx, closed, &in_vals, &mut steps)?;
    let mut outputs = Vec::new();
    let mut output_dtypes = Vec::new();
    for (o, a) in outs.iter().zip(&closed.jaxpr.outvars) {
        let (dt, shape) = atom_type(&closed.jaxpr, a)?;
        let n: usize = shape.iter().product();
        let (bdt, len) = match dt {
            DType::KeyFry => (DType::U32, n * 2),
            d => (d, n),
        };
        let buf = kernel::materialize(&mut ctx, &mut steps, *o, bdt, len)?;
        match out_complex.get(outputs.len()).copied().flatten() {
            Some(c) => {
                outputs.push((buf, shape[..shape.len().saturating_sub(1)].to_vec()));
                output_dtypes.push(c);
            }
            None => {
                outputs.push((buf, shape));
                output_dtypes.push(dt);
            }
        }
    }
    for (own, dt, shape) in refs {
        outputs.push((own, shape));
        output_dtypes.push(dt);
    }
    ctx.prog.inputs = inputs;
    ctx.prog.steps = steps;
    ctx.prog.outputs = outputs;
    ctx.prog.output_dtypes = output_dtypes;
    Ok(ctx.prog)
}

/// Simplifies and lowers a closed jaxpr applied to `args`, appending its
/// steps; returns its results.
pub(crate) fn lower_closed(
    ctx: &mut Ctx,
    closed: &ClosedJaxpr,
    args: &[Value],
    steps: &mut Vec<Step>,
) -> Result<Vec<Value>, IrError> {
    if closed.jaxpr.invars.len() != args.len() {
        return Err(IrError::Invalid(format!(
            "cuda lowering: {} arguments for {} inputs",
            args.len(),
            closed.jaxpr.invars.len()
        )));
    }
    let simple = jaxon_ir::passes::simplify(closed, jaxon_ir::primitive::Platform::Cuda)?;
    let jaxpr = &simple.jaxpr;
    unsupported::keys(jaxpr)?;
    if jaxpr.constvars.len() != simple.consts.len() {
        return Err(IrError::Invalid(
            "cuda lowering: constvars and consts differ in number".into(),
        ));
    }
    let mut env = Env::new();
    for (v, c) in jaxpr.constvars.iter().zip(simple.consts.iter()) {
        env.bind(*v, constant(ctx, c)?);
    }
    for (v, a) in jaxpr.invars.iter().zip(args) {
        env.bind(*v, *a);
    }
    lower_body(ctx, jaxpr, &mut env, steps)?;
    jaxpr.outvars.iter().map(|a| env.atom(a)).collect()
}

/// A constant array as a value (rank 0: a literal).
fn constant(ctx: &mut Ctx, c: &HostArray) -> Result<Value, IrError> {
    if c.ndim() == 0 && !c.is_empty() && c.dtype() != DType::KeyFry {
        let x = c.data();
        let lit = match c.dtype() {
            d if d.is_float() => Literal::new(x.get_f64(0), d),
            d => Literal {
                value: if d.is_bool() {
                    jaxon_ir::Scalar::Bool(x.get_i64(0) != 0)
                } else if d.is_unsigned_int() {
                    jaxon_ir::Scalar::UInt(x.get_i64(0) as u64)
                } else {
                    jaxon_ir::Scalar::Int(x.get_i64(0))
                },
                dtype: d,
            },
        };
        return Ok(Value::Lit(lit));
    }
    let b = ctx.alloc(c.dtype(), c.shape())?;
    ctx.prog.consts.push((b, c.clone()));
    Ok(Value::Buf(b))
}

/// Lowers the equations of an already simplified jaxpr whose inputs are
/// bound in `env`.
fn lower_body(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    use jaxon_ir::passes::{plan_fusion, GroupKind};
    let plan = plan_fusion(jaxpr)?;
    let mut gi = 0;
    while let Some(group) = plan.groups.get(gi) {
        if let Some(last) = rowrun::find(jaxpr, &plan, gi) {
            rowrun::lower(ctx, jaxpr, &plan, (gi, last), env, steps)?;
            gi = last + 1;
            continue;
        }
        if let Some(fused) = epilogue::find(jaxpr, &plan, gi) {
            let eqn = jaxpr.eqns.get(group.root()).ok_or_else(|| {
                IrError::Invalid(format!("cuda lowering: no equation {}", group.root()))
            })?;
            lower_eqn(ctx, jaxpr, eqn, env, steps)?;
            let product = match eqn.outputs.first() {
                Some(Binder::Var(v)) => Some(*v),
                _ => None,
            };
            let applied = match product {
                Some(d) => epilogue::apply(&fused, d, ctx, env, steps)?,
                None => false,
            };
            // Fused: the next group is done; else it lowers as usual.
            gi += if applied { 2 } else { 1 };
            continue;
        }
        gi += 1;
        match &group.kind {
            GroupKind::Loop => fused::loop_group(ctx, jaxpr, group, env, steps)?,
            GroupKind::Reduce { op, axes } => {
                reduction::reduce_group(ctx, jaxpr, group, *op, axes, env, steps)?
            }
            GroupKind::Opaque => {
                let eqn = jaxpr.eqns.get(group.root()).ok_or_else(|| {
                    IrError::Invalid(format!("cuda lowering: no equation {}", group.root()))
                })?;
                lower_eqn(ctx, jaxpr, eqn, env, steps)?;
            }
        }
    }
    Ok(())
}

/// Lowers one equation on its own: the lowering table's one `match` over
/// the families.
pub(crate) fn lower_eqn(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    if keys::is_key_movement(&eqn.primitive) && keys::gives_keys(jaxpr, eqn) {
        return keys::lower(ctx, jaxpr, eqn, env, steps);
    }
    match &eqn.primitive {
        Primitive::Elementwise(p) => elementwise::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Structural(p) => structural::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Indexing(p) => indexing::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Reduction(p) => reduction::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Linalg(p) => linalg::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Control(p) => control::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::State(p) => state::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Pallas(p) => pallas::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Collective(p) => spmd::collective(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Marker(p) => unsupported::marker(p),
        Primitive::Window(p) => window::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Random(p) => random::lower(ctx, jaxpr, eqn, p, env, steps),
        Primitive::Callback(p) => callback::lower(ctx, jaxpr, eqn, p, env, steps),
    }
}
