//! The rule table of the complex rewrite (`complex.rs`): one equation with
//! complex operands or results becomes real equations — the same
//! primitive on each part for data movement and the linear ops, the
//! formulas of [`complex_math`](super::complex_math) for arithmetic, four
//! real products for `dot_general`, a pairwise product tree for
//! `reduce_prod`, `complex_fold` for `reduce_max`/`min`, `cumsum`,
//! `cumprod`, `sort` and `top_k`, and `complex_fft` for `fft`. Invariant: every arm either
//! emits equations whose results have the source results' shapes, or
//! refuses by name.

use super::complex::{
    convert_prim, refuse, reshape_prim, slice_prim, transpose_prim, Pair, Rw, Val,
};
use super::complex_math::{C, CD, E};
use jaxon_ir::primitive::{
    BinaryOp, CumulativeOp, DotGeneralParams, Elementwise, FillValue, Indexing, Ints, Linalg,
    PadParams, Primitive, ReduceOp, ReduceParams, Reduction, ScatterKind, Structural, UnaryOp,
};
use jaxon_ir::{Atom, DType, Eqn, IrError, Literal};

/// A complex (or real) operand as a complex value of the compute dtype
/// and shape `sh`.
fn operand(rw: &mut Rw, a: &Atom, sh: &[usize]) -> Result<C, IrError> {
    let (d, s) = rw.src_type(a)?;
    let rdt = d.real_dtype();
    let (re, im) = match rw.val(a)? {
        Val::Cx(p) => (p.re, p.im),
        Val::Real(x) => (x, Atom::Lit(Literal::new(0.0, rdt))),
    };
    let part = |rw: &mut Rw, x: Atom| -> Atom {
        let x = rw.convert(x, rdt, CD, &s);
        let x = rw.materialize(x, CD, &s);
        if s.as_slice() != sh {
            broadcast(rw, x, CD, &s, sh)
        } else {
            x
        }
    };
    Ok(C {
        re: part(rw, re),
        im: part(rw, im),
    })
}

/// An array of shape `from` broadcast to `sh`, numpy style (trailing
/// dimensions aligned, size-1 dimensions stretched), as the interpreter
/// broadcasts the operands of binary ops.
fn broadcast(rw: &mut Rw, x: Atom, dt: DType, from: &[usize], sh: &[usize]) -> Atom {
    let lead = sh.len().saturating_sub(from.len()) as i64;
    let p = Primitive::Structural(Structural::BroadcastInDim(
        jaxon_ir::primitive::BroadcastInDimParams {
            shape: sh.iter().map(|&d| Some(d)).collect(),
            broadcast_dimensions: Ints::new((0..from.len() as i64).map(|d| d + lead).collect()),
        },
    ));
    rw.emit1(p, vec![x], dt, sh)
}

/// A compute-dtype result rounded to the component dtype `rdt`.
fn result(rw: &mut Rw, z: C, rdt: DType, sh: &[usize]) -> Pair {
    let re = rw.materialize(z.re, CD, sh);
    let im = rw.materialize(z.im, CD, sh);
    Pair {
        re: rw.convert(re, CD, rdt, sh),
        im: rw.convert(im, CD, rdt, sh),
    }
}

/// Rewrites one equation with complex operands or results.
pub(crate) fn rewrite(rw: &mut Rw, e: &Eqn) -> Result<(), IrError> {
    let name = e.primitive.name();
    let same = |rw: &mut Rw| rw.per_part(e, e.primitive.clone());
    match &e.primitive {
        Primitive::Elementwise(p) => elementwise(rw, e, p),
        Primitive::Structural(s) => match s {
            Structural::BroadcastInDim(_)
            | Structural::Reshape(_)
            | Structural::Transpose(_)
            | Structural::Squeeze(_)
            | Structural::Rev(_)
            | Structural::Pad(_)
            | Structural::Concatenate(_)
            | Structural::Split(_)
            | Structural::Tile(_)
            | Structural::Stack(_) => same(rw),
            Structural::Iota(_) | Structural::Empty2(_) => Err(refuse(name, "no complex lowering")),
        },
        Primitive::Indexing(i) => match i {
            Indexing::Slice(_) | Indexing::DynamicSlice(_) | Indexing::DynamicUpdateSlice => {
                same(rw)
            }
            Indexing::Gather(g) => {
                // A complex fill is `fill + 0j` (NaN + 0j by default).
                let mut gi = g.clone();
                gi.fill_value = Some(FillValue::Float(0.0));
                let im = Primitive::Indexing(Indexing::Gather(gi));
                rw.per_part2(e, e.primitive.clone(), im)
            }
            Indexing::Scatter(p) => match p.kind {
                ScatterKind::Set | ScatterKind::Add => {
                    // The combiner on the parts: `add` of the component
                    // dtype (a plain scatter has none).
                    let (od, _) = out1(rw, e)?;
                    let mut q = p.clone();
                    q.update_jaxpr = match p.kind {
                        ScatterKind::Add => Some(std::sync::Arc::new(real_add(od.real_dtype()))),
                        ScatterKind::Set
                        | ScatterKind::Mul
                        | ScatterKind::Min
                        | ScatterKind::Max => None,
                    };
                    rw.per_part(e, Primitive::Indexing(Indexing::Scatter(q)))
                }
                ScatterKind::Mul | ScatterKind::Min | ScatterKind::Max => {
                    Err(refuse(name, "only scatter and scatter-add lower"))
                }
            },
        },
        Primitive::Reduction(r) => match r {
            Reduction::Reduce(p) => match p.op {
                ReduceOp::Sum => same(rw),
                ReduceOp::Prod => reduce_prod(rw, e, p),
                ReduceOp::Max => super::complex_fold::reduce_minmax(rw, e, p, true),
                ReduceOp::Min => super::complex_fold::reduce_minmax(rw, e, p, false),
                ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                    Err(refuse(name, "no complex lowering"))
                }
            },
            Reduction::Cumulative(p) => match p.op {
                CumulativeOp::Cumsum => super::complex_fold::cumsum(rw, e),
                CumulativeOp::Cumprod => super::complex_fold::cumprod(rw, e, p),
                // The interpreter defines none of these on complex values.
                CumulativeOp::Cummax | CumulativeOp::Cummin | CumulativeOp::Cumlogsumexp => {
                    Err(refuse(name, "undefined on complex values"))
                }
            },
            Reduction::Sort(p) => super::complex_fold::sort(rw, e, p),
            Reduction::TopK(p) => super::complex_fold::top_k(rw, e, p),
            // The interpreter does not define `argmax`/`argmin` on complex values.
            Reduction::ArgReduce(_) => Err(refuse(name, "undefined on complex values")),
        },
        Primitive::Linalg(l) => match l {
            Linalg::DotGeneral(p) => dot_general(rw, e, p),
            Linalg::Fft(p) => super::complex_fft::fft(rw, e, p),
            Linalg::ConvGeneralDilated(_)
            | Linalg::Cholesky
            | Linalg::TriangularSolve(_)
            | Linalg::Lu
            | Linalg::Qr(_)
            | Linalg::Eigh(_)
            | Linalg::Svd(_)
            | Linalg::Schur(_)
            | Linalg::TridiagonalSolve(_) => Err(refuse(name, "no complex lowering")),
        },
        Primitive::Control(_)
        | Primitive::State(_)
        | Primitive::Pallas(_)
        | Primitive::Collective(_)
        | Primitive::Marker(_)
        | Primitive::Window(_)
        | Primitive::Random(_)
        | Primitive::Callback(_) => Err(refuse(name, "no complex lowering")),
    }
}

/// `{ lambda ; p:dt[] q:dt[]. let r:dt[] = add p q in (r,) }`.
fn real_add(dt: DType) -> jaxon_ir::Jaxpr {
    let mut j = jaxon_ir::Jaxpr::new();
    let scalar = || jaxon_ir::ShapedArray::new(dt, jaxon_ir::aval::static_shape(&[]));
    let (p, q, r) = (
        j.new_var(scalar()),
        j.new_var(scalar()),
        j.new_var(scalar()),
    );
    j.invars = vec![p, q];
    j.eqns.push(Eqn {
        primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
        inputs: vec![Atom::Var(p), Atom::Var(q)],
        outputs: vec![jaxon_ir::Binder::Var(r)],
    });
    j.outvars = vec![Atom::Var(r)];
    j
}

/// The one output's type.
fn out1(rw: &Rw, e: &Eqn) -> Result<(DType, Vec<usize>), IrError> {
    let b = e
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid(format!("{}: no output", e.primitive.name())))?;
    rw.src_out_type(b)
}

/// The `i`th operand.
fn arg(e: &Eqn, i: usize) -> Result<&Atom, IrError> {
    e.inputs
        .get(i)
        .ok_or_else(|| IrError::Invalid(format!("{}: missing operand {i}", e.primitive.name())))
}

fn bind1(rw: &mut Rw, e: &Eqn, v: Val) -> Result<(), IrError> {
    let b = e
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid(format!("{}: no output", e.primitive.name())))?;
    rw.bind(b, v);
    Ok(())
}

/// An elementwise equation with complex operands or results.
fn elementwise(rw: &mut Rw, e: &Eqn, p: &Elementwise) -> Result<(), IrError> {
    let name = e.primitive.name();
    let (od, sh) = out1(rw, e)?;
    let rdt = od.real_dtype();
    match p {
        Elementwise::Unary(op) => match op {
            UnaryOp::Copy | UnaryOp::StopGradient => {
                let v = rw.val(arg(e, 0)?)?;
                bind1(rw, e, v)
            }
            UnaryOp::Neg => rw.per_part(e, e.primitive.clone()),
            UnaryOp::Abs | UnaryOp::IsFinite => {
                let z = operand(rw, arg(e, 0)?, &sh)?;
                let mut m = E::new(rw, sh.clone());
                let r = if *op == UnaryOp::Abs {
                    let h = m.hypot(z.re, z.im);
                    m.rw.convert(h, CD, od, &sh)
                } else {
                    let a = m.finite(z.re);
                    let b = m.finite(z.im);
                    m.and(a, b)
                };
                bind1(rw, e, Val::Real(r))
            }
            // The formulas; `cunary` refuses the rest by name.
            UnaryOp::Sign
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Exp
            | UnaryOp::Exp2
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Expm1
            | UnaryOp::Tanh
            | UnaryOp::Logistic
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh
            | UnaryOp::Sqrt
            | UnaryOp::Rsqrt
            | UnaryOp::Cbrt
            | UnaryOp::Not
            | UnaryOp::Erf
            | UnaryOp::Erfc
            | UnaryOp::ErfInv
            | UnaryOp::Square
            | UnaryOp::Lgamma
            | UnaryOp::Digamma
            | UnaryOp::BesselI0e
            | UnaryOp::BesselI1e
            | UnaryOp::PopulationCount
            | UnaryOp::Clz => {
                let z = operand(rw, arg(e, 0)?, &sh)?;
                let mut m = E::new(rw, sh.clone());
                let r = m.cunary(*op, z)?;
                let pr = result(rw, r, rdt, &sh);
                bind1(rw, e, Val::Cx(pr))
            }
        },
        Elementwise::Binary(op) => match op {
            BinaryOp::Add | BinaryOp::AddAny | BinaryOp::Sub => rw.per_part(e, e.primitive.clone()),
            BinaryOp::Mul
            | BinaryOp::Div
            | BinaryOp::Pow
            | BinaryOp::Max
            | BinaryOp::Min
            | BinaryOp::Eq
            | BinaryOp::Ne => {
                let x = operand(rw, arg(e, 0)?, &sh)?;
                let y = operand(rw, arg(e, 1)?, &sh)?;
                let mut m = E::new(rw, sh.clone());
                let r = match op {
                    BinaryOp::Mul => m.cmul(x, y),
                    BinaryOp::Div => m.cdiv(x, y, rdt),
                    BinaryOp::Pow => m.cpow(x, y),
                    BinaryOp::Max => m.cmax(x, y),
                    BinaryOp::Min => m.cmin(x, y),
                    _ => {
                        let a = m.b(BinaryOp::Eq, x.re, y.re);
                        let b = m.b(BinaryOp::Eq, x.im, y.im);
                        let eq = m.and(a, b);
                        let r = if *op == BinaryOp::Eq { eq } else { m.not(eq) };
                        return bind1(rw, e, Val::Real(r));
                    }
                };
                let pr = result(rw, r, rdt, &sh);
                bind1(rw, e, Val::Cx(pr))
            }
            BinaryOp::Rem
            | BinaryOp::Atan2
            | BinaryOp::Nextafter
            | BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Xor
            | BinaryOp::ShiftLeft
            | BinaryOp::ShiftRightArithmetic
            | BinaryOp::ShiftRightLogical
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
            | BinaryOp::Zeta => Err(refuse(name, "no complex lowering")),
        },
        Elementwise::IntegerPow(ip) => {
            let z = operand(rw, arg(e, 0)?, &sh)?;
            let mut m = E::new(rw, sh.clone());
            let r = m.cipow(z, ip.y);
            let pr = result(rw, r, rdt, &sh);
            bind1(rw, e, Val::Cx(pr))
        }
        Elementwise::SelectN => rw.per_part(e, e.primitive.clone()),
        Elementwise::ConvertElementType(cp) => {
            let a = arg(e, 0)?;
            let (id, s) = rw.src_type(a)?;
            match (rw.val(a)?, od.is_complex()) {
                (Val::Cx(q), true) => {
                    let ir = id.real_dtype();
                    let re = rw.convert(q.re, ir, rdt, &s);
                    let im = rw.convert(q.im, ir, rdt, &s);
                    bind1(rw, e, Val::Cx(Pair { re, im }))
                }
                (Val::Cx(q), false) => {
                    // The real part, as JAX converts (with a warning).
                    let re = rw.emit1(convert_prim(cp.new_dtype), vec![q.re], cp.new_dtype, &s);
                    bind1(rw, e, Val::Real(re))
                }
                (Val::Real(x), true) => {
                    let re = rw.convert(x, id, rdt, &s);
                    let re = rw.materialize(re, rdt, &s);
                    let im = rw.materialize(Atom::Lit(Literal::new(0.0, rdt)), rdt, &s);
                    bind1(rw, e, Val::Cx(Pair { re, im }))
                }
                (Val::Real(_), false) => Err(IrError::Invalid(
                    "a real convert in the complex rewrite".into(),
                )),
            }
        }
        Elementwise::Complex => {
            let mut parts = Vec::new();
            for i in 0..2 {
                let a = arg(e, i)?;
                let (d, s) = rw.src_type(a)?;
                let x = match rw.val(a)? {
                    Val::Real(x) => x,
                    Val::Cx(_) => return Err(refuse(name, "a complex operand")),
                };
                let x = rw.convert(x, d, rdt, &s);
                let x = rw.materialize(x, rdt, &s);
                parts.push(if s != sh {
                    broadcast(rw, x, rdt, &s, &sh)
                } else {
                    x
                });
            }
            bind1(
                rw,
                e,
                Val::Cx(Pair {
                    re: parts[0],
                    im: parts[1],
                }),
            )
        }
        Elementwise::Real | Elementwise::Imag => match rw.val(arg(e, 0)?)? {
            Val::Cx(q) => {
                let x = if matches!(p, Elementwise::Real) {
                    q.re
                } else {
                    q.im
                };
                bind1(rw, e, Val::Real(x))
            }
            Val::Real(_) => Err(refuse(name, "a real operand")),
        },
        Elementwise::Conj(_) => {
            let a = arg(e, 0)?;
            let (id, s) = rw.src_type(a)?;
            let (re, im) = match rw.val(a)? {
                Val::Cx(q) => {
                    let im = rw.materialize(q.im, rdt, &s);
                    let neg = Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg));
                    (
                        rw.materialize(q.re, rdt, &s),
                        rw.emit1(neg, vec![im], rdt, &s),
                    )
                }
                Val::Real(x) => {
                    let re = rw.convert(x, id, rdt, &s);
                    let re = rw.materialize(re, rdt, &s);
                    let im = rw.materialize(Atom::Lit(Literal::new(0.0, rdt)), rdt, &s);
                    (re, im)
                }
            };
            bind1(rw, e, Val::Cx(Pair { re, im }))
        }
        Elementwise::Round(_)
        | Elementwise::ReducePrecision(_)
        | Elementwise::BitcastConvertType(_)
        | Elementwise::Clamp
        | Elementwise::RegularizedIncompleteBeta => Err(refuse(name, "no complex lowering")),
    }
}

/// `dot_general` on complex operands: four real products.
fn dot_general(rw: &mut Rw, e: &Eqn, p: &DotGeneralParams) -> Result<(), IrError> {
    let (od, sh) = out1(rw, e)?;
    let rdt = od.real_dtype();
    let mut q = p.clone();
    q.preferred_element_type = p.preferred_element_type.map(|t| t.real_dtype());
    let prim = Primitive::Linalg(Linalg::DotGeneral(q));
    let parts = |rw: &mut Rw, a: &Atom| -> Result<(Atom, Option<Atom>), IrError> {
        let (d, s) = rw.src_type(a)?;
        let (re, im) = match rw.val(a)? {
            Val::Cx(x) => (x.re, Some(x.im)),
            Val::Real(x) => (x, None),
        };
        let re = rw.convert(re, d.real_dtype(), rdt, &s);
        let im = im.map(|im| rw.convert(im, d.real_dtype(), rdt, &s));
        Ok((re, im))
    };
    let (lr, li) = parts(rw, arg(e, 0)?)?;
    let (rr, ri) = parts(rw, arg(e, 1)?)?;
    let dot = |rw: &mut Rw, x: Atom, y: Atom| rw.emit1(prim.clone(), vec![x, y], rdt, &sh);
    let add = Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add));
    let sub = Primitive::Elementwise(Elementwise::Binary(BinaryOp::Sub));
    let rere = dot(rw, lr, rr);
    let re = match (li, ri) {
        (Some(a), Some(b)) => {
            let ii = dot(rw, a, b);
            rw.emit1(sub, vec![rere, ii], rdt, &sh)
        }
        _ => rere,
    };
    let t1 = ri.map(|b| dot(rw, lr, b));
    let t2 = li.map(|a| dot(rw, a, rr));
    let im = match (t1, t2) {
        (Some(a), Some(b)) => rw.emit1(add, vec![a, b], rdt, &sh),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => rw.materialize(Atom::Lit(Literal::new(0.0, rdt)), rdt, &sh),
    };
    bind1(rw, e, Val::Cx(Pair { re, im }))
}

/// `reduce_prod` of a complex array: the reduced axes moved last and
/// flattened, padded with ones to a power of two, halved by complex
/// products.
fn reduce_prod(rw: &mut Rw, e: &Eqn, p: &ReduceParams) -> Result<(), IrError> {
    let (od, osh) = out1(rw, e)?;
    let rdt = od.real_dtype();
    let a = arg(e, 0)?;
    let (_, s) = rw.src_type(a)?;
    let kept: Vec<usize> = (0..s.len()).filter(|d| !p.axes.contains(d)).collect();
    let mut perm = kept.clone();
    perm.extend(p.axes.iter().copied());
    let r: usize = kept.iter().map(|&d| s[d]).product();
    let n: usize = p
        .axes
        .iter()
        .map(|&d| s.get(d).copied().unwrap_or(1))
        .product();
    let z = operand(rw, a, &s)?;
    let ts: Vec<usize> = perm.iter().map(|&d| s[d]).collect();
    let part = |rw: &mut Rw, x: Atom| -> Atom {
        let x = rw.emit1(transpose_prim(perm.clone()), vec![x], CD, &ts);
        rw.emit1(reshape_prim(&[r, n]), vec![x], CD, &[r, n])
    };
    let (xr, xi) = (part(rw, z.re), part(rw, z.im));
    let pw = n.next_power_of_two();
    let pad = |rw: &mut Rw, x: Atom, v: f64| -> Atom {
        let prim = Primitive::Structural(Structural::Pad(PadParams {
            padding_config: vec![
                Ints::new(vec![0, 0, 0]),
                Ints::new(vec![0, (pw - n) as i64, 0]),
            ],
        }));
        rw.emit1(prim, vec![x, Atom::Lit(Literal::new(v, CD))], CD, &[r, pw])
    };
    let mut cur = C {
        re: pad(rw, xr, 1.0),
        im: pad(rw, xi, 0.0),
    };
    let mut len = pw;
    while len > 1 {
        let h = len / 2;
        let lo = slice_prim(vec![0, 0], vec![r as i64, h as i64]);
        let hi = slice_prim(vec![0, h as i64], vec![r as i64, len as i64]);
        let half = [r, h];
        let a = C {
            re: rw.emit1(lo.clone(), vec![cur.re], CD, &half),
            im: rw.emit1(lo, vec![cur.im], CD, &half),
        };
        let b = C {
            re: rw.emit1(hi.clone(), vec![cur.re], CD, &half),
            im: rw.emit1(hi, vec![cur.im], CD, &half),
        };
        let mut m = E::new(rw, half.to_vec());
        cur = m.cmul(a, b);
        len = h;
    }
    let re = rw.emit1(reshape_prim(&osh), vec![cur.re], CD, &osh);
    let im = rw.emit1(reshape_prim(&osh), vec![cur.im], CD, &osh);
    let pr = result(rw, C { re, im }, rdt, &osh);
    bind1(rw, e, Val::Cx(pr))
}
