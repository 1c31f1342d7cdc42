//! Complex dtypes on CUDA: a jaxpr-to-jaxpr rewrite that splits every
//! `c64`/`c128` value into a pair of real arrays (real part, imaginary
//! part) of its component dtype (`f32`/`f64`), run before the ordinary
//! lowering, so that KIR, the verifier, the simulator and the CUDA C
//! printer never see a complex dtype.
//!
//! Representation:
//! - **In memory** (program inputs and outputs, host transfers) a complex
//!   array of shape `S` is a buffer of its component dtype holding `S x 2`
//!   elements, real and imaginary parts interleaved — the byte layout of
//!   `HostArray`'s `c64`/`c128`, so a transfer is a byte copy. In the
//!   rewritten jaxpr such a boundary value is a real array of shape
//!   `S ++ [2]`, split with `slice`/`reshape` on the way in and joined with
//!   `reshape`/`concatenate` on the way out.
//! - **Inside the program** a complex value is two real arrays of shape `S`
//!   (or two real literals). Data movement (structural, indexing, scatter
//!   with `set`/`add`, `select_n`) and `reduce_sum` apply the same
//!   primitive to each part (rules in `complex_ops.rs`); the
//!   order-dependent reductions (`reduce_max`/`min`, `cumsum`, `cumprod`,
//!   `sort`, `top_k`) are [`complex_fold`](super::complex_fold)'s; arithmetic
//!   expands into real equations ([`complex_math`](super::complex_math)), computed in `f64` for both
//!   dtypes — the interpreter computes in `Complex64` and rounds, so `c64`
//!   results agree with it to an ulp or so — with the formulas of
//!   `num_complex`, which the interpreter uses; `dot_general` becomes four
//!   real products, `reduce_prod` a pairwise tree of complex products,
//!   and `fft` dense DFT products ([`complex_fft`](super::complex_fft)).
//!
//! Invariants: the rewritten jaxpr has no complex value anywhere; complex
//! values inside `cond`, `while` and `scan` bodies are rewritten with them
//! (`complex_nested.rs`), inside other nested jaxprs refused with
//! `Unsupported`; every primitive on complex values that has no rule here
//! is refused by name, never lowered as if it were real.

use super::complex_ops as cm;
use jaxon_ir::aval::static_shape;
use jaxon_ir::primitive::{
    BroadcastInDimParams, ConcatenateParams, ConvertElementTypeParams, Elementwise, Ints,
    Primitive, ReshapeParams, SliceParams, Structural, TransposeParams,
};
use jaxon_ir::{
    Atom, Binder, ClosedJaxpr, DType, Eqn, HostArray, IrError, Jaxpr, Literal, Scalar, ShapedArray,
    Var,
};
use std::collections::HashMap;

/// A complex value inside the rewrite: its two real parts, in the
/// component dtype.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pair {
    pub re: Atom,
    pub im: Atom,
}

/// The value of a source variable in the rewritten jaxpr.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val {
    Real(Atom),
    Cx(Pair),
}

/// The rewrite's state: the jaxpr being built and the source-to-target
/// variable map.
pub(crate) struct Rw<'a> {
    pub src: &'a Jaxpr,
    pub out: Jaxpr,
    pub consts: Vec<HostArray>,
    pub(crate) map: HashMap<Var, Val>,
}

/// Whether `jaxpr` (nested jaxprs included) has a complex value.
pub(crate) fn has_complex(jaxpr: &Jaxpr) -> bool {
    super::unsupported::complex(jaxpr).is_err()
}

/// The result of [`split`]: a real jaxpr, and for each of its outputs
/// the complex dtype it holds interleaved (`None`: a real output).
pub(crate) struct Split {
    pub closed: ClosedJaxpr,
    pub out_complex: Vec<Option<DType>>,
}

/// Rewrites a closed jaxpr with complex values into a real one (see the
/// module docs); the jaxpr is simplified first, so calls are inlined.
pub(crate) fn split(closed: &ClosedJaxpr) -> Result<Split, IrError> {
    let simple = jaxon_ir::passes::simplify(closed, jaxon_ir::primitive::Platform::Cuda)?;
    split_inner(&simple)
}

/// [`split`] without the simplification: complex invars and outvars
/// become real `S ++ [2]` arrays, complex constants pairs of real ones.
pub(crate) fn split_inner(closed: &ClosedJaxpr) -> Result<Split, IrError> {
    let src = &closed.jaxpr;
    let mut rw = Rw {
        src,
        out: Jaxpr::new(),
        consts: Vec::new(),
        map: HashMap::new(),
    };
    for (v, c) in src.constvars.iter().zip(closed.consts.iter()) {
        let val = if c.dtype().is_complex() {
            let rdt = c.dtype().real_dtype();
            let z = c.to_c128_vec();
            let re: Vec<f64> = z.iter().map(|z| z.re).collect();
            let im: Vec<f64> = z.iter().map(|z| z.im).collect();
            let re = rw.constant(HostArray::from_f64(rdt, c.shape(), &re)?)?;
            let im = rw.constant(HostArray::from_f64(rdt, c.shape(), &im)?)?;
            Val::Cx(Pair { re, im })
        } else {
            Val::Real(rw.constant(c.clone())?)
        };
        rw.map.insert(*v, val);
    }
    for v in &src.invars {
        let (dt, shape) = rw.src_type(&Atom::Var(*v))?;
        let val = if dt.is_complex() {
            let w = rw.out.new_var(ShapedArray::new(
                dt.real_dtype(),
                static_shape(&interleaved(&shape)),
            ));
            rw.out.invars.push(w);
            Val::Cx(rw.unpack(Atom::Var(w), dt, &shape))
        } else {
            let w = rw.out.new_var(ShapedArray::new(dt, static_shape(&shape)));
            rw.out.invars.push(w);
            Val::Real(Atom::Var(w))
        };
        rw.map.insert(*v, val);
    }
    for e in &src.eqns {
        if super::complex_nested::applies(&rw, e)? {
            super::complex_nested::rewrite(&mut rw, e)?;
            continue;
        }
        // A scatter's combiner is a scalar jaxpr the rule replaces.
        let combiner = matches!(
            e.primitive,
            Primitive::Indexing(jaxon_ir::primitive::Indexing::Scatter(_))
        );
        for j in e.primitive.sub_jaxprs() {
            if !combiner {
                super::unsupported::complex(j)?;
            }
        }
        rw.eqn(e)?;
    }
    let mut out_complex = Vec::new();
    for a in &src.outvars {
        let (dt, shape) = rw.src_type(a)?;
        match rw.val(a)? {
            Val::Real(x) => {
                rw.out.outvars.push(x);
                out_complex.push(None);
            }
            Val::Cx(p) => {
                let w = rw.pack(p, dt, &shape);
                rw.out.outvars.push(w);
                out_complex.push(Some(dt));
            }
        }
    }
    Ok(Split {
        closed: ClosedJaxpr::new(rw.out, rw.consts),
        out_complex,
    })
}

/// `shape ++ [2]`: the real shape of a complex array in memory.
pub(crate) fn interleaved(shape: &[usize]) -> Vec<usize> {
    let mut s = shape.to_vec();
    s.push(2);
    s
}

/// `slice` of `start..limit` (unit strides).
pub(crate) fn slice_prim(start: Vec<i64>, limit: Vec<i64>) -> Primitive {
    Primitive::Indexing(jaxon_ir::primitive::Indexing::Slice(SliceParams {
        start_indices: Ints::new(start),
        limit_indices: Ints::new(limit),
        strides: None,
    }))
}

/// `reshape` to `shape`.
pub(crate) fn reshape_prim(shape: &[usize]) -> Primitive {
    Primitive::Structural(Structural::Reshape(ReshapeParams {
        new_sizes: shape.iter().map(|&d| Some(d)).collect(),
        dimensions: None,
    }))
}

/// `transpose` by `perm`.
pub(crate) fn transpose_prim(perm: Vec<usize>) -> Primitive {
    Primitive::Structural(Structural::Transpose(TransposeParams { permutation: perm }))
}

/// `convert_element_type` to `dt`.
pub(crate) fn convert_prim(dt: DType) -> Primitive {
    Primitive::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
        new_dtype: dt,
        weak_type: false,
    }))
}

impl Rw<'_> {
    /// The parts of `w`, a real `shape ++ [2]` array holding a complex
    /// array of dtype `dt` and `shape` (slices of the last axis).
    pub fn unpack(&mut self, w: Atom, dt: DType, shape: &[usize]) -> Pair {
        let rdt = dt.real_dtype();
        let mut part = |k: i64| {
            let mut start = vec![0; shape.len()];
            start.push(k);
            let mut limit: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            limit.push(k + 1);
            let mut s1 = shape.to_vec();
            s1.push(1);
            let p = self.emit1(slice_prim(start, limit), vec![w], rdt, &s1);
            self.emit1(reshape_prim(shape), vec![p], rdt, shape)
        };
        let re = part(0);
        let im = part(1);
        Pair { re, im }
    }

    /// `p` (a complex array of dtype `dt` and `shape`) as one real
    /// `shape ++ [2]` array, parts interleaved.
    pub fn pack(&mut self, p: Pair, dt: DType, shape: &[usize]) -> Atom {
        let rdt = dt.real_dtype();
        let mut s1 = shape.to_vec();
        s1.push(1);
        let re = self.materialize(p.re, rdt, shape);
        let im = self.materialize(p.im, rdt, shape);
        let re = self.emit1(reshape_prim(&s1), vec![re], rdt, &s1);
        let im = self.emit1(reshape_prim(&s1), vec![im], rdt, &s1);
        let cat = Primitive::Structural(Structural::Concatenate(ConcatenateParams {
            dimension: shape.len(),
        }));
        self.emit1(cat, vec![re, im], rdt, &interleaved(shape))
    }

    /// A new constant input of the rewritten jaxpr.
    fn constant(&mut self, c: HostArray) -> Result<Atom, IrError> {
        let v = self
            .out
            .new_var(ShapedArray::new(c.dtype(), static_shape(c.shape())));
        self.out.constvars.push(v);
        self.consts.push(c);
        Ok(Atom::Var(v))
    }

    /// A new constant (see [`Rw::constant`]) from `values` of `dt[shape]`.
    pub fn const_f64(
        &mut self,
        dt: DType,
        shape: &[usize],
        values: &[f64],
    ) -> Result<Atom, IrError> {
        self.constant(HostArray::from_f64(dt, shape, values)?)
    }

    /// The static type of a source atom.
    pub fn src_type(&self, a: &Atom) -> Result<(DType, Vec<usize>), IrError> {
        super::atom_type(self.src, a)
    }

    /// The static type of a source equation output.
    pub fn src_out_type(&self, b: &Binder) -> Result<(DType, Vec<usize>), IrError> {
        super::out_type(self.src, b)
    }

    /// The rewritten value of a source atom.
    pub fn val(&self, a: &Atom) -> Result<Val, IrError> {
        match a {
            Atom::Lit(l) => Ok(match l.value {
                Scalar::Complex(re, im) => {
                    let rdt = l.dtype.real_dtype();
                    Val::Cx(Pair {
                        re: Atom::Lit(Literal::new(re, rdt)),
                        im: Atom::Lit(Literal::new(im, rdt)),
                    })
                }
                Scalar::Bool(_) | Scalar::Int(_) | Scalar::UInt(_) | Scalar::Float(_) => {
                    Val::Real(*a)
                }
            }),
            Atom::Var(v) => self.map.get(v).copied().ok_or_else(|| {
                IrError::Invalid(format!("cuda complex rewrite: variable {} is unbound", v.0))
            }),
        }
    }

    /// Binds a source output to its rewritten value.
    pub fn bind(&mut self, b: &Binder, val: Val) {
        if let Binder::Var(v) = b {
            self.map.insert(*v, val);
        }
    }

    /// Appends `p(ins)` with outputs of the given types; their atoms.
    pub fn emit(
        &mut self,
        p: Primitive,
        ins: Vec<Atom>,
        outs: &[(DType, Vec<usize>)],
    ) -> Vec<Atom> {
        let vars: Vec<Var> = outs
            .iter()
            .map(|(d, s)| self.out.new_var(ShapedArray::new(*d, static_shape(s))))
            .collect();
        self.out.eqns.push(Eqn {
            primitive: p,
            inputs: ins,
            outputs: vars.iter().map(|v| Binder::Var(*v)).collect(),
        });
        vars.into_iter().map(Atom::Var).collect()
    }

    /// [`Rw::emit`] with one output.
    pub fn emit1(&mut self, p: Primitive, ins: Vec<Atom>, dt: DType, shape: &[usize]) -> Atom {
        let v = self.out.new_var(ShapedArray::new(dt, static_shape(shape)));
        self.out.eqns.push(Eqn {
            primitive: p,
            inputs: ins,
            outputs: vec![Binder::Var(v)],
        });
        Atom::Var(v)
    }

    /// `a` as an array of `dt[shape]`: a literal is broadcast (and given
    /// `dt`); a variable is returned as is.
    pub fn materialize(&mut self, a: Atom, dt: DType, shape: &[usize]) -> Atom {
        match a {
            Atom::Var(_) => a,
            Atom::Lit(l) => {
                let lit = Atom::Lit(Literal::new(lit_f64(&l), dt));
                if shape.is_empty() {
                    // A rank-0 array: convert the literal through an equation.
                    return self.emit1(convert_prim(dt), vec![lit], dt, shape);
                }
                let p = Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
                    shape: shape.iter().map(|&d| Some(d)).collect(),
                    broadcast_dimensions: Ints::new(Vec::new()),
                }));
                self.emit1(p, vec![lit], dt, shape)
            }
        }
    }

    /// `x` converted to `to` (unchanged if it has that dtype already; a
    /// literal is rewritten, not converted by an equation).
    pub fn convert(&mut self, x: Atom, from: DType, to: DType, shape: &[usize]) -> Atom {
        if from == to {
            return x;
        }
        match x {
            Atom::Lit(l) => Atom::Lit(Literal::new(lit_f64(&l), to)),
            Atom::Var(_) => self.emit1(convert_prim(to), vec![x], to, shape),
        }
    }

    /// Rewrites one source equation.
    fn eqn(&mut self, e: &Eqn) -> Result<(), IrError> {
        let complex_in = e
            .inputs
            .iter()
            .map(|a| self.src_type(a).map(|(d, _)| d.is_complex()))
            .collect::<Result<Vec<_>, _>>()?;
        let complex_out = e
            .outputs
            .iter()
            .map(|b| self.src_out_type(b).map(|(d, _)| d.is_complex()))
            .collect::<Result<Vec<_>, _>>()?;
        if !complex_in.iter().chain(&complex_out).any(|c| *c) {
            return self.copy(e);
        }
        cm::rewrite(self, e)
    }

    /// Copies a real equation, renaming its variables.
    fn copy(&mut self, e: &Eqn) -> Result<(), IrError> {
        let ins = e
            .inputs
            .iter()
            .map(|a| match self.val(a)? {
                Val::Real(x) => Ok(x),
                Val::Cx(_) => Err(IrError::Invalid(
                    "cuda complex rewrite: a complex operand of a real equation".into(),
                )),
            })
            .collect::<Result<Vec<_>, IrError>>()?;
        let mut outs = Vec::new();
        for b in &e.outputs {
            let nb = match b {
                Binder::Var(_) => {
                    let aval = self.src.binder_aval(b).cloned().ok_or_else(|| {
                        IrError::Invalid("cuda complex rewrite: output not in the table".into())
                    })?;
                    let v = self.out.new_var(aval);
                    self.bind(b, Val::Real(Atom::Var(v)));
                    Binder::Var(v)
                }
                Binder::Drop(a) => Binder::Drop(a.clone()),
            };
            outs.push(nb);
        }
        self.out.eqns.push(Eqn {
            primitive: e.primitive.clone(),
            inputs: ins,
            outputs: outs,
        });
        Ok(())
    }

    /// Applies `e` to each part: once on the real parts of its complex
    /// operands, once on the imaginary parts (real operands shared); every
    /// output must be complex. For data movement and the linear ops.
    pub fn per_part(&mut self, e: &Eqn, p: Primitive) -> Result<(), IrError> {
        self.per_part2(e, p.clone(), p)
    }

    /// [`Rw::per_part`] with a different primitive for each part (a
    /// gather's fill value: `NaN + 0j`, so 0 for the imaginary part).
    pub fn per_part2(&mut self, e: &Eqn, p: Primitive, p_im: Primitive) -> Result<(), IrError> {
        let mut re_in = Vec::new();
        let mut im_in = Vec::new();
        for a in &e.inputs {
            match self.val(a)? {
                Val::Real(x) => {
                    re_in.push(x);
                    im_in.push(x);
                }
                Val::Cx(q) => {
                    re_in.push(q.re);
                    im_in.push(q.im);
                }
            }
        }
        let mut outs = Vec::new();
        for b in &e.outputs {
            let (d, s) = self.src_out_type(b)?;
            if !d.is_complex() {
                return Err(refuse(
                    e.primitive.name(),
                    "a real result beside complex ones",
                ));
            }
            outs.push((d.real_dtype(), s));
        }
        let re = self.emit(p, re_in, &outs);
        let im = self.emit(p_im, im_in, &outs);
        for ((b, r), i) in e.outputs.iter().zip(re).zip(im) {
            self.bind(b, Val::Cx(Pair { re: r, im: i }));
        }
        Ok(())
    }
}

/// A real literal's value as `f64` (a complex literal: its real part).
pub(crate) fn lit_f64(l: &Literal) -> f64 {
    match l.value {
        Scalar::Bool(b) => f64::from(u8::from(b)),
        Scalar::Int(i) => i as f64,
        Scalar::UInt(u) => u as f64,
        Scalar::Float(x) => x,
        Scalar::Complex(re, _) => re,
    }
}

/// The `unsupported` error of this rewrite.
pub(crate) fn refuse(name: &str, why: &str) -> IrError {
    super::unsupported(name, format!("complex operands: {why}"))
}
