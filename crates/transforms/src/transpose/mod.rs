//! Transposition: the backward pass over a linear jaxpr, and the dispatch
//! to the transpose rules (`crate::rules`, one module per primitive
//! family).
//!
//! Invariants: the linear inputs are "undefined primals": a rule never
//! reads their values, only their types. Cotangents start as symbolic
//! zeros (absent), are summed with `add_any` when a variable is read more
//! than once, and are instantiated as zeros only at the API boundary.
//! Equations with no linear input are evaluated forward first: they
//! compute values the linear ones use (JAX's backward pass does the same).

use crate::rules::{self, Cts};
use hashbrown::HashMap;
use jaxon_ir::{Atom, Binder, ClosedJaxpr, Jaxpr, Primitive, ShapedArray, Var};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::literal_array;
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::{bind, lax, Array};

/// An operand as a transpose rule sees it: a linear input (whose value is
/// unknown, only its type) or a known value.
#[derive(Clone, Debug)]
pub enum LinArg {
    /// A linear input of this type.
    Linear(ShapedArray),
    /// A linear input of a dynamic-shape type: the type (whose dimension
    /// variables are the linear jaxpr's) and the values of its dynamic
    /// dimensions in the trace running the backward pass.
    LinearDyn(ShapedArray, Vec<Array>),
    /// A known (non-linear) value.
    Value(Array),
}

impl LinArg {
    /// The array type.
    pub fn ty(&self) -> &ShapedArray {
        match self {
            LinArg::Linear(t) | LinArg::LinearDyn(t, _) => t,
            LinArg::Value(v) => v.ty(),
        }
    }

    /// The trace-level dimensions (dynamic ones as their values).
    pub fn sizes(&self) -> Result<Vec<jaxon_trace::dynshape::Size>> {
        use jaxon_trace::dynshape::Size;
        match self {
            LinArg::Value(v) => jaxon_trace::dynshape::sizes(v),
            LinArg::Linear(t) | LinArg::LinearDyn(t, _) => {
                let dims: &[Array] = match self {
                    LinArg::LinearDyn(_, d) => d,
                    _ => &[],
                };
                let mut it = dims.iter();
                t.shape
                    .iter()
                    .map(|d| match d.as_const() {
                        Some(n) => Ok(Size::Const(n)),
                        None => it.next().cloned().map(Size::Dyn).ok_or_else(|| {
                            Error::InvalidArgument(
                                "transpose: a dynamic dimension without its value".into(),
                            )
                        }),
                    })
                    .collect()
            }
        }
    }

    /// Whether this operand is linear.
    pub fn is_linear(&self) -> bool {
        matches!(self, LinArg::Linear(_) | LinArg::LinearDyn(..))
    }

    /// The known value, or an error naming the primitive.
    pub fn value(&self, prim: &str) -> Result<&Array> {
        match self {
            LinArg::Value(v) => Ok(v),
            LinArg::Linear(_) | LinArg::LinearDyn(..) => Err(Error::InvalidArgument(format!(
                "transpose of `{prim}`: the operation is not linear in this operand"
            ))),
        }
    }
}

/// Cotangents of the linear operands of `p` (`None` for the others): one
/// exhaustive match on the families, each family's rules matching its
/// enum exhaustively.
pub(crate) fn transpose_rule(p: &Primitive, args: &[LinArg], cts: &[Option<Array>]) -> Result<Cts> {
    match p {
        Primitive::Elementwise(e) => rules::elementwise::transpose(e, p, args, cts),
        Primitive::Structural(s) => rules::structural::transpose(s, p, args, cts),
        Primitive::Indexing(i) => rules::indexing::transpose(i, p, args, cts),
        Primitive::Reduction(r) => rules::reduction::transpose(r, p, args, cts),
        Primitive::Linalg(l) => rules::linalg::transpose(l, p, args, cts),
        Primitive::Control(c) => rules::control::transpose(c, args, cts),
        Primitive::State(s) => rules::state::transpose(s, p, args, cts),
        Primitive::Pallas(k) => rules::pallas::transpose(k, p, args, cts),
        Primitive::Collective(c) => rules::collective::transpose(c, p, args, cts),
        Primitive::Marker(m) => rules::marker::transpose(m, p, args, cts),
        Primitive::Window(w) => rules::window::transpose(w, p, args, cts),
        Primitive::Random(r) => rules::random::transpose(r, p, args, cts),
        Primitive::Callback(c) => rules::callback::transpose(c, p, args, cts),
    }
}

fn accumulate(env: &mut HashMap<Var, Array>, v: Var, ct: Array) -> Result<()> {
    let ct = match env.remove(&v) {
        Some(prev) => lax::binary(jaxon_ir::primitive::BinaryOp::AddAny, &prev, &ct)?,
        None => ct,
    };
    env.insert(v, ct);
    Ok(())
}

/// Runs `jaxpr` backwards. `linear[i]` says whether invar `i` is linear;
/// `values` are the non-linear invars in order; `cts_out` has one cotangent
/// per outvar (`None` = zero). Returns one cotangent per linear invar.
pub fn backward_pass(
    jaxpr: &Jaxpr,
    consts: &[Array],
    linear: &[bool],
    values: &[Array],
    cts_out: &[Option<Array>],
) -> Result<Vec<Option<Array>>> {
    let n = jaxpr.vars.len();
    let mut known: Vec<Option<Array>> = vec![None; n];
    let mut is_lin = vec![false; n];
    for (v, c) in jaxpr.constvars.iter().zip(consts) {
        known[v.index()] = Some(c.clone());
    }
    let mut vals = values.iter();
    for (v, l) in jaxpr.invars.iter().zip(linear) {
        if *l {
            is_lin[v.index()] = true;
        } else {
            known[v.index()] =
                Some(vals.next().cloned().ok_or_else(|| {
                    Error::InvalidArgument("backward_pass: too few values".into())
                })?);
        }
    }
    let lin_atom = |is_lin: &[bool], a: &Atom| matches!(a, Atom::Var(v) if is_lin[v.index()]);
    // Forward: evaluate non-linear equations, mark linear outputs.
    let mut linear_eqns = Vec::new();
    for (i, eqn) in jaxpr.eqns.iter().enumerate() {
        if eqn.inputs.iter().any(|a| lin_atom(&is_lin, a)) {
            for b in &eqn.outputs {
                if let Binder::Var(v) = b {
                    is_lin[v.index()] = true;
                }
            }
            linear_eqns.push(i);
        } else {
            let ins = eqn
                .inputs
                .iter()
                .map(|a| read(&known, a))
                .collect::<Result<Vec<_>>>()?;
            let outs = bind(&eqn.primitive, &ins)?;
            for (b, x) in eqn.outputs.iter().zip(outs) {
                if let Binder::Var(v) = b {
                    known[v.index()] = Some(x);
                }
            }
        }
    }
    // Backward.
    let mut ct_env: HashMap<Var, Array> = HashMap::new();
    for (a, ct) in jaxpr.outvars.iter().zip(cts_out) {
        if let (Atom::Var(v), Some(ct)) = (a, ct) {
            if is_lin[v.index()] {
                accumulate(&mut ct_env, *v, ct.clone())?;
            }
        }
    }
    for &i in linear_eqns.iter().rev() {
        let eqn = &jaxpr.eqns[i];
        let cts: Vec<Option<Array>> = eqn
            .outputs
            .iter()
            .map(|b| match b {
                Binder::Var(v) => ct_env.remove(v),
                Binder::Drop(_) => None,
            })
            .collect();
        if cts.iter().all(Option::is_none) {
            continue;
        }
        let args = eqn
            .inputs
            .iter()
            .map(|a| {
                if lin_atom(&is_lin, a) {
                    let Atom::Var(v) = a else {
                        unreachable!("linear atoms are vars")
                    };
                    let t = jaxpr.aval(*v).array().clone();
                    if t.static_sizes().is_some() {
                        return Ok(LinArg::Linear(t));
                    }
                    // The dimension variables are non-linear values of the
                    // jaxpr (residuals or inputs), known here.
                    let dims = t
                        .shape
                        .iter()
                        .filter_map(|d| match d {
                            jaxon_ir::Dim::Var(w) => Some(read(&known, &Atom::Var(*w))),
                            jaxon_ir::Dim::Const(_) => None,
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(LinArg::LinearDyn(t, dims))
                } else {
                    read(&known, a).map(LinArg::Value)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let cts_in = transpose_rule(&eqn.primitive, &args, &cts)?;
        for (a, ct) in eqn.inputs.iter().zip(cts_in) {
            if let (Atom::Var(v), Some(ct)) = (a, ct) {
                if is_lin[v.index()] {
                    accumulate(&mut ct_env, *v, ct)?;
                }
            }
        }
    }
    Ok(jaxpr
        .invars
        .iter()
        .zip(linear)
        .filter(|(_, l)| **l)
        .map(|(v, _)| ct_env.remove(v))
        .collect())
}

fn read(known: &[Option<Array>], a: &Atom) -> Result<Array> {
    match a {
        Atom::Lit(l) => Ok(literal_array(l)),
        Atom::Var(v) => known[v.index()]
            .clone()
            .ok_or_else(|| Error::InvalidArgument(format!("backward_pass: {v:?} is not known"))),
    }
}

/// The transpose of a closed jaxpr as a jaxpr: from `(non-linear inputs,
/// output cotangents)` to the cotangents of the linear inputs, zeros
/// instantiated.
pub fn transpose_jaxpr(closed: &ClosedJaxpr, linear: &[bool]) -> Result<ClosedJaxpr> {
    let j = &closed.jaxpr;
    let mut avals = Vec::new();
    for (v, l) in j.invars.iter().zip(linear) {
        if !*l {
            avals.push(j.aval(*v).clone());
        }
    }
    let n_values = avals.len();
    for a in &j.outvars {
        avals.push(
            j.atom_aval(a)
                .ok_or_else(|| Error::InvalidArgument("outvar".into()))?,
        );
    }
    let staged = trace_flat(StageMode::Base, &avals, |args| {
        let (values, cts) = args.split_at(n_values);
        let consts: Vec<Array> = closed
            .consts
            .iter()
            .cloned()
            .map(Array::from_host)
            .collect();
        let cts: Vec<Option<Array>> = cts.iter().cloned().map(Some).collect();
        let out = backward_pass(j, &consts, linear, values, &cts)?;
        j.invars
            .iter()
            .zip(linear)
            .filter(|(_, l)| **l)
            .zip(out)
            .map(|((v, _), ct)| match ct {
                Some(ct) => Ok(ct),
                None => {
                    let t = j.aval(*v).array();
                    jaxon_trace::numpy::zeros(&t.static_sizes().unwrap_or_default(), t.dtype)
                }
            })
            .collect()
    })?;
    close(staged)
}

/// `linear_transpose(f, primals)`: the transpose of a linear function, as
/// a function from output cotangents to input cotangents.
pub fn linear_transpose(
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    primals: &[Array],
) -> Result<impl Fn(&[Array]) -> Result<Vec<Array>>> {
    let avals: Vec<_> = primals.iter().map(|p| p.aval().clone()).collect();
    let staged = trace_flat(StageMode::Base, &avals, f)?;
    let primals = primals.to_vec();
    Ok(move |cts: &[Array]| {
        let lin = vec![true; staged.jaxpr.invars.len()];
        let cts: Vec<Option<Array>> = cts.iter().cloned().map(Some).collect();
        let out = backward_pass(&staged.jaxpr, &staged.consts, &lin, &[], &cts)?;
        out.into_iter()
            .zip(&primals)
            .map(|(ct, p)| ct.map_or_else(|| crate::util::zeros_like(p), Ok))
            .collect()
    })
}
