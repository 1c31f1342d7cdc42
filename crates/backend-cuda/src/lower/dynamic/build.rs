//! The compiler of dynamic-shape programs: one walk over a jaxpr (and its
//! nested bodies) that declares buffers with symbolic lengths, builds the
//! kernels once, and emits symbolic steps ([`SStep`]).
//!
//! Each (sub)jaxpr is lowered in a [`Scope`]: its values (a buffer or a
//! literal) and, for integer scalars whose value the host can know before
//! the run, their size expression ([`Sz`]): the program's integer scalar
//! inputs, literals, and size arithmetic on them (`add`, `sub`, `mul`,
//! `max`, `min`, `div`, `rem`, integer `convert_element_type`). A
//! dimension variable must have one; a dimension computed from array data
//! (or a loop counter) is an `Unsupported` error naming the equation. A
//! nested body's dimension variables are bound to the outer operands'
//! expressions; a loop carry only when the body returns it unchanged.
//!
//! Invariants: every kernel is built once, here; its sizes are `i64`
//! parameters whose arguments are size expressions ([`SArg::Size`]), so
//! nothing in a kernel depends on the sizes of a call. The dispatch
//! (`eqn`) is one exhaustive match over the primitive families.

use super::sym::{Sz, SzOp};
use super::{SArg, SStep};
use crate::kir::{Expr, Kernel, KernelBuilder, ParamId};
use crate::lower::kernel::{finish, i64c, lit_expr, load_typed, store_typed, THREADS};
use crate::lower::plan::BufId;
use crate::lower::unsupported;
use jaxon_ir::primitive::{BinaryOp, ConvertElementTypeParams, Elementwise, Primitive};
use jaxon_ir::{
    Atom, Binder, ClosedJaxpr, DType, Dim, Eqn, HostArray, IrError, Jaxpr, Literal, Scalar, Var,
};
use std::collections::HashMap;

/// A value during compilation: a buffer or a scalar literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum DV {
    Buf(BufId),
    Lit(Literal),
}

/// What a compilation builds.
#[derive(Default)]
pub(crate) struct B {
    /// The choices the program is lowered with (TF32 products).
    pub opts: crate::lower::precision::LowerOptions,
    pub kernels: Vec<Kernel>,
    pub buffers: Vec<(DType, Sz)>,
    pub consts: Vec<(BufId, HostArray)>,
    names: HashMap<String, usize>,
}

impl B {
    /// A buffer of `dt[shape]` (keys and complex values do not lower).
    pub fn alloc(&mut self, dt: DType, shape: &[Sz]) -> Result<BufId, IrError> {
        if dt == DType::KeyFry || dt.is_complex() {
            return Err(unsupported(
                "dynamic shape",
                format!("{dt} values of a dynamic-shape program do not lower yet"),
            ));
        }
        self.buffers.push((dt, Sz::prod(shape)));
        let id = u32::try_from(self.buffers.len() - 1)
            .map_err(|_| IrError::Invalid("cuda lowering: too many buffers".into()))?;
        Ok(BufId(id))
    }

    pub fn dtype(&self, b: BufId) -> Result<DType, IrError> {
        self.buffers
            .get(b.index())
            .map(|(d, _)| *d)
            .ok_or_else(|| IrError::Invalid(format!("cuda lowering: no buffer {}", b.0)))
    }

    /// A kernel name unique in the program.
    pub fn name(&mut self, base: &str) -> String {
        let clean: String = base
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let n = self.names.entry(clean.clone()).or_insert(0);
        *n += 1;
        format!("dyn_{clean}_{}", *n - 1)
    }

    pub fn kernel(&mut self, k: Kernel) -> usize {
        self.kernels.push(k);
        self.kernels.len() - 1
    }
}

/// The values of one (sub)jaxpr.
#[derive(Default)]
pub(crate) struct Scope {
    vals: HashMap<Var, DV>,
    /// Host-known integer scalars (dimension variables among them).
    sizes: HashMap<Var, Sz>,
}

impl Scope {
    pub fn bind(&mut self, v: Var, dv: DV, size: Option<Sz>) {
        self.vals.insert(v, dv);
        if let Some(s) = size {
            self.sizes.insert(v, s);
        }
    }

    pub fn atom(&self, a: &Atom) -> Result<DV, IrError> {
        match a {
            Atom::Lit(l) => Ok(DV::Lit(*l)),
            Atom::Var(v) => self.vals.get(v).copied().ok_or_else(|| {
                IrError::Invalid(format!("cuda lowering: variable {} is unbound", v.0))
            }),
        }
    }

    /// The host-known value of integer scalar `a`, if any.
    pub fn size_of(&self, a: &Atom) -> Option<Sz> {
        match a {
            Atom::Lit(l) if l.dtype.is_int() => l.as_i64().map(Sz::C),
            Atom::Lit(_) => None,
            Atom::Var(v) => self.sizes.get(v).cloned(),
        }
    }
}

/// An error naming equation `eqn` of `jaxpr`.
pub(crate) fn cannot(eqn: &Eqn, why: impl Into<String>) -> IrError {
    unsupported(
        eqn.primitive.name(),
        format!("{} (dynamic-shape program)", why.into()),
    )
}

fn resolve(scope: &Scope, shape: &[Dim]) -> Result<Vec<Sz>, IrError> {
    shape
        .iter()
        .map(|d| match d {
            Dim::Const(n) => Ok(Sz::C(*n as i64)),
            Dim::Var(v) => scope.sizes.get(v).cloned().ok_or_else(|| {
                unsupported(
                    "dynamic shape",
                    format!(
                        "dimension variable {} is computed from array data or a loop \
                         counter, which a dynamic-shape program cannot size on the host",
                        v.0
                    ),
                )
            }),
        })
        .collect()
}

/// The type of an atom with its dimensions resolved.
pub(crate) fn ty(jaxpr: &Jaxpr, scope: &Scope, a: &Atom) -> Result<(DType, Vec<Sz>), IrError> {
    let aval = jaxpr
        .atom_aval(a)
        .ok_or_else(|| IrError::Invalid("cuda lowering: operand not in the table".into()))?;
    let arr = aval
        .as_array()
        .ok_or_else(|| unsupported("ref", "Ref values do not lower"))?;
    Ok((arr.dtype, resolve(scope, &arr.shape)?))
}

/// The type of a binder with its dimensions resolved.
pub(crate) fn out_ty(
    jaxpr: &Jaxpr,
    scope: &Scope,
    b: &Binder,
) -> Result<(DType, Vec<Sz>), IrError> {
    let aval = jaxpr
        .binder_aval(b)
        .ok_or_else(|| IrError::Invalid("cuda lowering: output not in the table".into()))?;
    let arr = aval
        .as_array()
        .ok_or_else(|| unsupported("ref", "Ref values do not lower"))?;
    Ok((arr.dtype, resolve(scope, &arr.shape)?))
}

/// Allocates and binds a buffer per output of `eqn`.
pub(crate) fn bind_outputs(
    b: &mut B,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    scope: &mut Scope,
) -> Result<Vec<(BufId, DType, Vec<Sz>)>, IrError> {
    let mut out = Vec::new();
    for o in &eqn.outputs {
        let (dt, shape) = out_ty(jaxpr, scope, o)?;
        let buf = b.alloc(dt, &shape)?;
        if let Binder::Var(v) = o {
            scope.bind(*v, DV::Buf(buf), None);
        }
        out.push((buf, dt, shape));
    }
    Ok(out)
}

/// The arguments of a kernel being built.
pub(crate) struct SArgs {
    pub args: Vec<SArg>,
    bufs: HashMap<BufId, ParamId>,
    sizes: Vec<(Sz, ParamId)>,
}

impl SArgs {
    pub fn new() -> SArgs {
        SArgs {
            args: Vec::new(),
            bufs: HashMap::new(),
            sizes: Vec::new(),
        }
    }

    pub fn buffer(
        &mut self,
        k: &mut KernelBuilder,
        b: &B,
        buf: BufId,
        writable: bool,
    ) -> Result<ParamId, IrError> {
        if let Some(p) = self.bufs.get(&buf) {
            return Ok(*p);
        }
        let p = k.global(&format!("b{}", buf.0), b.dtype(buf)?, writable);
        self.args.push(SArg::Buf(buf));
        self.bufs.insert(buf, p);
        Ok(p)
    }

    /// Size `s` as an `i64` expression: a constant, or a parameter whose
    /// argument is `s` evaluated at the call.
    pub fn size(&mut self, k: &mut KernelBuilder, s: &Sz) -> Expr {
        if let Sz::C(v) = s {
            return i64c(*v);
        }
        if let Some((_, p)) = self.sizes.iter().find(|(t, _)| t == s) {
            return Expr::param(*p);
        }
        let p = k.scalar(&format!("n{}", self.sizes.len()), DType::I64);
        self.args.push(SArg::Size(s.clone()));
        self.sizes.push((s.clone(), p));
        Expr::param(p)
    }
}

/// Reads `v` at `index` as a compute-dtype value.
pub(crate) fn load(
    k: &mut KernelBuilder,
    args: &mut SArgs,
    b: &B,
    v: DV,
    index: Expr,
) -> Result<Expr, IrError> {
    match v {
        DV::Lit(l) => Ok(lit_expr(&l)),
        DV::Buf(buf) => {
            let d = b.dtype(buf)?;
            let p = args.buffer(k, b, buf, false)?;
            Ok(load_typed(k, p, d, index))
        }
    }
}

/// Stores compute-dtype `x` at `index` of `buf`.
pub(crate) fn store(
    k: &mut KernelBuilder,
    args: &mut SArgs,
    b: &B,
    buf: BufId,
    index: Expr,
    x: Expr,
) -> Result<(), IrError> {
    let d = b.dtype(buf)?;
    let p = args.buffer(k, b, buf, true)?;
    store_typed(k, p, d, index, x);
    Ok(())
}

/// A grid-stride kernel over the elements of `shape` (sizes are
/// parameters); `body` gets the linear index and the multi-index.
pub(crate) fn loop_kernel(
    b: &mut B,
    steps: &mut Vec<SStep>,
    name: &str,
    shape: &[Sz],
    body: impl FnOnce(&mut KernelBuilder, &mut SArgs, &B, &Expr, &[Expr]) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let n = Sz::prod(shape);
    if n == Sz::C(0) {
        return Ok(());
    }
    let name = b.name(name);
    let mut k = KernelBuilder::new(&name, THREADS);
    let mut args = SArgs::new();
    let nexpr = args.size(&mut k, &n);
    let dims: Vec<Expr> = shape.iter().map(|d| args.size(&mut k, d)).collect();
    let lin = k.var("i", DType::I64);
    let start = Expr::global_thread_id_x().cast(DType::I64);
    let step = (Expr::grid_dim_x() * Expr::block_dim_x()).cast(DType::I64);
    let mut result = Ok(());
    let bref: &B = b;
    k.for_(lin, start, nexpr, step, |k| {
        let idx = multi_index(k, Expr::var(lin), shape, &dims);
        result = body(k, &mut args, bref, &Expr::var(lin), &idx);
    });
    result?;
    let kernel = finish(k)?;
    let id = b.kernel(kernel);
    steps.push(SStep::Launch {
        kernel: id,
        n,
        args: args.args,
    });
    Ok(())
}

/// The row-major multi-index of `lin` over `shape` (extents `dims`).
pub(crate) fn multi_index(
    k: &mut KernelBuilder,
    lin: Expr,
    shape: &[Sz],
    dims: &[Expr],
) -> Vec<Expr> {
    let mut idx = vec![i64c(0); shape.len()];
    let rem = k.let_("rem", DType::I64, lin);
    for d in (0..shape.len()).rev() {
        if shape[d] == Sz::C(1) {
            continue;
        }
        if d == 0 {
            idx[d] = Expr::var(rem);
            break;
        }
        let v = k.let_("ix", DType::I64, Expr::var(rem) % dims[d].clone());
        k.assign(rem, Expr::var(rem) / dims[d].clone());
        idx[d] = Expr::var(v);
    }
    idx
}

/// `Σ idx[d] · strides[d]` with symbolic strides.
pub(crate) fn offset(
    k: &mut KernelBuilder,
    args: &mut SArgs,
    strides: &[Sz],
    idx: &[Expr],
) -> Expr {
    let mut e: Option<Expr> = None;
    for (s, i) in strides.iter().zip(idx) {
        let term = match s {
            Sz::C(0) => continue,
            Sz::C(1) => i.clone(),
            s => i.clone() * args.size(k, s),
        };
        e = Some(match e {
            None => term,
            Some(e) => e + term,
        });
    }
    e.unwrap_or_else(|| i64c(0))
}

/// Writes `value(idx)` to every element of `out` (of `shape`).
pub(crate) fn gather(
    b: &mut B,
    steps: &mut Vec<SStep>,
    name: &str,
    out: BufId,
    shape: &[Sz],
    value: impl FnOnce(&mut KernelBuilder, &mut SArgs, &B, &[Expr]) -> Result<Expr, IrError>,
) -> Result<(), IrError> {
    loop_kernel(b, steps, name, shape, |k, args, b, lin, idx| {
        let v = value(k, args, b, idx)?;
        store(k, args, b, out, lin.clone(), v)
    })
}

/// Copies `v` into `dst` (`len` elements; a literal is broadcast).
pub(crate) fn copy_into(
    b: &mut B,
    steps: &mut Vec<SStep>,
    v: DV,
    dst: BufId,
    len: &Sz,
) -> Result<(), IrError> {
    match v {
        DV::Buf(src) if src == dst => Ok(()),
        DV::Buf(src) => {
            steps.push(SStep::Copy {
                src,
                src_off: Sz::C(0),
                dst,
                dst_off: Sz::C(0),
                len: len.clone(),
            });
            Ok(())
        }
        DV::Lit(l) => gather(
            b,
            steps,
            "fill",
            dst,
            std::slice::from_ref(len),
            |_, _, _, _| Ok(lit_expr(&l)),
        ),
    }
}

/// A buffer holding `v` (a literal filled into a new buffer).
pub(crate) fn materialize(
    b: &mut B,
    steps: &mut Vec<SStep>,
    v: DV,
    dt: DType,
    shape: &[Sz],
) -> Result<BufId, IrError> {
    match v {
        DV::Buf(buf) => Ok(buf),
        DV::Lit(_) => {
            let buf = b.alloc(dt, shape)?;
            copy_into(b, steps, v, buf, &Sz::prod(shape))?;
            Ok(buf)
        }
    }
}

/// A result of a lowered body.
pub(crate) struct Out {
    /// Its value.
    pub dv: DV,
    /// Its host-known value, for an integer scalar that has one.
    pub size: Option<Sz>,
    /// Its resolved shape.
    pub shape: Vec<Sz>,
}

/// Lowers `closed` applied to `args` (with the host-known sizes of the
/// integer scalar ones); its results.
pub(crate) fn body(
    b: &mut B,
    closed: &ClosedJaxpr,
    args: &[(DV, Option<Sz>)],
    steps: &mut Vec<SStep>,
) -> Result<Vec<Out>, IrError> {
    let jaxpr = &closed.jaxpr;
    if jaxpr.invars.len() != args.len() || jaxpr.constvars.len() != closed.consts.len() {
        return Err(IrError::Invalid(format!(
            "cuda lowering: {} arguments for {} inputs",
            args.len(),
            jaxpr.invars.len()
        )));
    }
    let mut scope = Scope::default();
    for (v, c) in jaxpr.constvars.iter().zip(closed.consts.iter()) {
        let buf = b.alloc(
            c.dtype(),
            &c.shape()
                .iter()
                .map(|&n| Sz::C(n as i64))
                .collect::<Vec<_>>(),
        )?;
        b.consts.push((buf, c.clone()));
        scope.bind(*v, DV::Buf(buf), None);
    }
    for (v, (dv, s)) in jaxpr.invars.iter().zip(args) {
        scope.bind(*v, *dv, s.clone());
    }
    let mut e = 0;
    while e < jaxpr.eqns.len() {
        let end = super::fuse::run_end(jaxpr, &scope, e);
        if end > e {
            let reduced = super::fuse::lower(b, jaxpr, &mut scope, e, end, steps)
                .map_err(|err| at_eqn(err, &jaxpr.eqns[e], e))?;
            let last = if reduced { end + 1 } else { end };
            for q in &jaxpr.eqns[e..last] {
                host_size(&mut scope, q);
            }
            e = last;
            continue;
        }
        let q = &jaxpr.eqns[e];
        eqn(b, jaxpr, q, &mut scope, steps).map_err(|err| at_eqn(err, q, e))?;
        host_size(&mut scope, q);
        e += 1;
    }
    jaxpr
        .outvars
        .iter()
        .map(|a| {
            Ok(Out {
                dv: scope.atom(a)?,
                size: scope.size_of(a),
                shape: ty(jaxpr, &scope, a)?.1,
            })
        })
        .collect()
}

/// `err` with the equation it arose in named: the equation itself when
/// the error names none, else the enclosing loop, branch or call.
fn at_eqn(err: IrError, q: &Eqn, e: usize) -> IrError {
    let name = q.primitive.name();
    match err {
        IrError::Unsupported { primitive, why, .. } if primitive == "dynamic shape" => {
            unsupported(name, format!("equation {e} ({name}): {why}"))
        }
        IrError::Unsupported { primitive, why, .. }
            if matches!(q.primitive, Primitive::Control(_)) && primitive != name =>
        {
            unsupported(&primitive, format!("{why}; inside `{name}` (equation {e})"))
        }
        err => err,
    }
}

/// Records the host-known value of an integer scalar result of size
/// arithmetic.
fn host_size(scope: &mut Scope, q: &Eqn) {
    let [Binder::Var(out)] = q.outputs.as_slice() else {
        return;
    };
    let Primitive::Elementwise(e) = &q.primitive else {
        return;
    };
    let ins: Option<Vec<Sz>> = q.inputs.iter().map(|a| scope.size_of(a)).collect();
    let Some(ins) = ins else { return };
    let s = match (e, ins.as_slice()) {
        (Elementwise::ConvertElementType(ConvertElementTypeParams { new_dtype, .. }), [x])
            if new_dtype.is_int() && !new_dtype.is_bool() =>
        {
            x.clone()
        }
        (Elementwise::Binary(op), [x, y]) => {
            let op = match op {
                BinaryOp::Add => SzOp::Add,
                BinaryOp::Sub => SzOp::Sub,
                BinaryOp::Mul => SzOp::Mul,
                BinaryOp::Div => SzOp::Div,
                BinaryOp::Rem => SzOp::Rem,
                BinaryOp::Max => SzOp::Max,
                BinaryOp::Min => SzOp::Min,
                BinaryOp::AddAny => SzOp::Add,
                // Not size arithmetic: the result sizes nothing.
                BinaryOp::Pow
                | BinaryOp::Atan2
                | BinaryOp::Nextafter
                | BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Xor
                | BinaryOp::ShiftLeft
                | BinaryOp::ShiftRightArithmetic
                | BinaryOp::ShiftRightLogical
                | BinaryOp::Eq
                | BinaryOp::Ne
                | BinaryOp::Lt
                | BinaryOp::Le
                | BinaryOp::Gt
                | BinaryOp::Ge
                | BinaryOp::LtTo
                | BinaryOp::LeTo
                | BinaryOp::Igamma
                | BinaryOp::Igammac
                | BinaryOp::IgammaGradA
                | BinaryOp::RandomGammaGrad
                | BinaryOp::Polygamma
                | BinaryOp::Zeta => return,
            };
            Sz::bin(op, x.clone(), y.clone())
        }
        _ => return,
    };
    scope.sizes.insert(*out, s);
}

/// Lowers one equation: the one match over the primitive families.
fn eqn(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    match &q.primitive {
        // An elementwise equation outside a run (operands of other shapes).
        Primitive::Elementwise(_) => {
            for o in &q.outputs {
                out_ty(jaxpr, scope, o)?;
            }
            Err(cannot(
                q,
                "no dynamic-shape lowering for this elementwise equation (bitcasts, \
                 complex values, keys, or operands neither its shape nor scalars)",
            ))
        }
        Primitive::Structural(p) => super::ops::structural(b, jaxpr, q, p, scope, steps),
        Primitive::Indexing(p) => super::ops::indexing(b, jaxpr, q, p, scope, steps),
        Primitive::Reduction(p) => super::reduce::lower(b, jaxpr, q, p, scope, steps),
        Primitive::Linalg(p) => super::ops::linalg(b, jaxpr, q, p, scope, steps),
        Primitive::Control(p) => super::control::lower(b, jaxpr, q, p, scope, steps),
        Primitive::Callback(c) => callback(b, jaxpr, q, c, scope, steps),
        Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_) => Err(cannot(q, "no dynamic-shape lowering yet")),
    }
}

/// A host callback: its operands (literals materialised) read back, the
/// host function called, its results written (`run.rs`'s `Step::Host`),
/// with the shapes of the call.
fn callback(
    b: &mut B,
    jaxpr: &Jaxpr,
    q: &Eqn,
    c: &jaxon_ir::primitive::Callback,
    scope: &mut Scope,
    steps: &mut Vec<SStep>,
) -> Result<(), IrError> {
    let mut args = Vec::with_capacity(q.inputs.len());
    for a in &q.inputs {
        let (dt, shape) = ty(jaxpr, scope, a)?;
        let buf = materialize(b, steps, scope.atom(a)?, dt, &shape)?;
        args.push((buf, shape));
    }
    let outs = bind_outputs(b, jaxpr, q, scope)?
        .into_iter()
        .map(|(buf, _, shape)| (buf, shape))
        .collect();
    steps.push(SStep::Host {
        call: c.clone(),
        args,
        outs,
    });
    Ok(())
}

/// A `DType::I64` literal.
pub(crate) fn i64_lit(v: i64) -> Literal {
    Literal {
        value: Scalar::Int(v),
        dtype: DType::I64,
    }
}
