//! GEMM epilogues: a fused loop group that only adds a bias along the
//! last axis to a product and/or applies relu to it becomes part of the
//! GEMM, which applies both as it stores each register tile of the result
//! (`ops::dot`'s `Epi`), so the product is never written out and read
//! back by a separate pass.
//!
//! The groups taken, each of one `f32` or `f64` value `d` computed by a
//! [`GPrep::Dot`] and read by nothing else, exactly these members:
//! - `bb = broadcast_in_dim[broadcast_dimensions=(r-1,)] b` of a rank-1
//!   `b: [n]` onto the result's rank `r` (every other dimension of `bb`
//!   size 1 or the result's), then `z = add(d, bb)` (either order): bias;
//! - `max(x, 0.0)` (either order, the literal `+0.0`) as the root, of `d`
//!   or of such a `z`: relu.
//!
//! Invariant: the result is the unfused program's bit for bit (NaN
//! payloads aside): the bias is added to the finished sum (after any
//! accumulation) and relu is the interpreter's NaN-propagating `max`.
//! The product's group becomes [`GPrep::Nop`]; its span to the epilogue's
//! group keeps the operands live until the GEMM runs there.

use crate::ops::dot::{DotPlan, Epilogue};
use crate::plan::dot_fuse::Accumulated;
use crate::plan::groups::GPrep;
use jaxon_ir::literal::Scalar;
use jaxon_ir::primitive::{BinaryOp, Elementwise, Structural};
use jaxon_ir::{Atom, Binder, DType, Jaxpr, Primitive, Var};

/// Fuses every epilogue group it recognises into its product's GEMM (see
/// the module docs); returns the spans and temporaries, and a line per
/// fused epilogue for the plan dump.
pub(crate) fn fuse_epilogues(
    jaxpr: &Jaxpr,
    plan: &jaxon_ir::passes::FusionPlan,
    groups: &mut [GPrep],
    dots: &mut Vec<DotPlan>,
) -> (Accumulated, Vec<String>) {
    let mut done = Accumulated::default();
    let mut lines = Vec::new();
    if switched_off() {
        return (done, lines);
    }
    let uses = crate::plan::dot_fuse::use_counts(jaxpr, plan);
    let mut dot_of = std::collections::HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        if let GPrep::Dot {
            out, bias: None, ..
        } = g
        {
            dot_of.insert(*out, gi);
        }
    }
    for gi in 0..groups.len() {
        let pg = &plan.groups[gi];
        if !matches!(pg.kind, jaxon_ir::passes::GroupKind::Loop)
            || !matches!(&groups[gi], GPrep::Kernel(k) if k.row_run.is_none())
        {
            continue;
        }
        let Some(m) = recognise(jaxpr, &pg.eqns) else {
            continue;
        };
        let Some(&gd) = dot_of.get(&m.product) else {
            continue;
        };
        if gd >= gi || uses.get(m.product.index()) != Some(&1) {
            continue;
        }
        let GPrep::Dot {
            idx,
            lhs,
            rhs,
            acc,
            bias: None,
            ..
        } = groups[gd]
        else {
            continue;
        };
        let epilogue = Epilogue {
            bias: m.bias.is_some(),
            relu: m.relu,
        };
        let Some(p) = dots[idx].with_epilogue(epilogue, m.bias.map(|(_, n)| n)) else {
            continue;
        };
        dots.push(p);
        groups[gi] = GPrep::Dot {
            idx: dots.len() - 1,
            lhs,
            rhs,
            out: m.out,
            acc,
            bias: m.bias.map(|(b, _)| b),
        };
        groups[gd] = GPrep::Nop;
        done.spans.push((gd, gi));
        done.temps.push(m.product);
        lines.push(format!(
            "  g{gd} dot_general + g{gi} epilogue: bias {:?}, relu {} -> v{}",
            m.bias.map(|(b, _)| b.0),
            m.relu,
            m.out.0
        ));
    }
    (done, lines)
}

/// `JAXON_CPU_GEMM_EPILOGUE=0` leaves every epilogue to its own pass,
/// for side-by-side timing.
fn switched_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var_os("JAXON_CPU_GEMM_EPILOGUE").is_some_and(|v| v == "0"))
}

/// A recognised epilogue group.
struct Match {
    /// The product it reads.
    product: Var,
    /// The rank-1 bias and its length.
    bias: Option<(Var, usize)>,
    relu: bool,
    /// The group's result.
    out: Var,
}

/// The one output variable of an equation.
fn out_of(e: &jaxon_ir::Eqn) -> Option<Var> {
    match e.outputs.as_slice() {
        [Binder::Var(v)] => Some(*v),
        _ => None,
    }
}

/// `(dtype, static shape)` of a variable.
fn ty(jaxpr: &Jaxpr, v: Var) -> Option<(DType, Vec<usize>)> {
    let a = jaxpr.try_aval(v)?.as_array()?;
    Some((a.dtype, a.static_sizes()?))
}

/// Whether `a` is the literal `+0.0` of `dt`.
fn is_pos_zero(a: &Atom, dt: DType) -> bool {
    matches!(a, Atom::Lit(l) if l.dtype == dt
        && matches!(l.value, Scalar::Float(x) if x == 0.0 && x.is_sign_positive()))
}

/// Matches a group's members (equation indices, root last) against the
/// epilogue shapes of the module docs.
fn recognise(jaxpr: &Jaxpr, eqns: &[usize]) -> Option<Match> {
    let eq = |i: usize| jaxpr.eqns.get(i);
    let (&root, rest) = eqns.split_last()?;
    let root_eqn = eq(root)?;
    let out = out_of(root_eqn)?;
    let (dt, shape) = ty(jaxpr, out)?;
    if !matches!(dt, DType::F32 | DType::F64) || shape.is_empty() {
        return None;
    }
    // relu at the root: its operand, and the members left.
    let (x, rest, relu) = match (&root_eqn.primitive, root_eqn.inputs.as_slice()) {
        (Primitive::Elementwise(Elementwise::Binary(BinaryOp::Max)), [p, q]) => {
            let x = match (p, q) {
                (Atom::Var(v), z) | (z, Atom::Var(v)) if is_pos_zero(z, dt) => *v,
                _ => return None,
            };
            (x, rest, true)
        }
        _ => (out, eqns, false),
    };
    let (product, bias) = match rest {
        [] if relu => (x, None),
        [e1, e2] => {
            let (bc, add) = (eq(*e1)?, eq(*e2)?);
            if out_of(add)? != x {
                return None;
            }
            let Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)) = add.primitive else {
                return None;
            };
            let Primitive::Structural(Structural::BroadcastInDim(params)) = &bc.primitive else {
                return None;
            };
            let (Some(bb), [Atom::Var(b)]) = (out_of(bc), bc.inputs.as_slice()) else {
                return None;
            };
            let d = match add.inputs.as_slice() {
                [Atom::Var(p), Atom::Var(q)] if *q == bb && *p != bb => *p,
                [Atom::Var(p), Atom::Var(q)] if *p == bb && *q != bb => *q,
                _ => return None,
            };
            let (bdt, bshape) = ty(jaxpr, *b)?;
            let (bbdt, bbshape) = ty(jaxpr, bb)?;
            let r = shape.len();
            let last = shape[r - 1];
            let fits = bdt == dt
                && bbdt == dt
                && bshape == [last]
                && bbshape.len() == r
                && bbshape[r - 1] == last
                && params.broadcast_dimensions.values == [r as i64 - 1]
                && bbshape[..r - 1]
                    .iter()
                    .zip(&shape)
                    .all(|(&s, &o)| s == 1 || s == o);
            if !fits || *b == d {
                return None;
            }
            (d, Some((*b, last)))
        }
        _ => return None,
    };
    if ty(jaxpr, product)? != (dt, shape) {
        return None;
    }
    Some(Match {
        product,
        bias,
        relu,
        out,
    })
}
