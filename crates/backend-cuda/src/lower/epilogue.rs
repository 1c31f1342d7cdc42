//! GEMM epilogues: a `dot_general` whose product only feeds the next
//! group, when that group is `product + bias` (a bias vector broadcast
//! along the rows), `max(product, 0)`, or `max(product + bias, 0)`, runs
//! that group inside the GEMM (cuBLASLt's `BIAS`, `RELU` and `RELU_BIAS`
//! epilogues; the simulator's model applies the same), as XLA's GEMM
//! rewriter does for JAX's `relu(x @ w + b)`. The product is then written
//! once, already biased and rectified, instead of written, read and
//! written again by a separate kernel.
//!
//! A fused ReLU maps a NaN product to 0 (cuBLASLt's `RELU`, and the
//! simulator's model of it), where the unfused `max(x, 0)` propagates the
//! NaN; XLA's fused GEMMs on a GPU behave the same way. A bias alone is
//! exact: the product is rounded to the result's dtype after the bias is
//! added, where the separate `add` rounded it before (the same for f32).
//!
//! Invariants: the product is read by nothing but the fused group (not an
//! output of the jaxpr); the group's result has the product's shape and
//! dtype; the bias is a rank-1 value of the product's dtype whose length
//! is the product's last dimension, broadcast with
//! `broadcast_dimensions=(rank - 1,)` and as long as the GEMM's columns
//! (all the right operand's free dimensions); the fusion happens only when
//! the product's last step is the GEMM that writes it (the KIR fallback for
//! integer products keeps the group).

use super::plan::{BufId, Step};
use super::{atom_type, Ctx, Env, Value};
use crate::blas::Epilogue;
use jaxon_ir::passes::{FusionPlan, GroupKind};
use jaxon_ir::primitive::{
    BinaryOp, BroadcastInDimParams, Elementwise, Linalg, Primitive, Structural,
};
use jaxon_ir::{Atom, Binder, DType, Eqn, IrError, Jaxpr, Literal, Scalar, Var};

/// A group fused into the GEMM of the group before it.
pub(crate) struct Fused {
    /// The epilogue.
    pub epilogue: Epilogue,
    /// The bias vector, for the epilogues that read one.
    pub bias: Option<Atom>,
    /// The fused group's result.
    pub result: Var,
}

fn one_output(e: &Eqn) -> Option<Var> {
    match e.outputs.as_slice() {
        [Binder::Var(v)] => Some(*v),
        _ => None,
    }
}

fn is_zero(a: &Atom) -> bool {
    matches!(a, Atom::Lit(Literal { value: Scalar::Float(z), .. }) if *z == 0.0)
        || matches!(
            a,
            Atom::Lit(Literal {
                value: Scalar::Int(0),
                ..
            })
        )
}

/// The other operand of a binary `e` whose operands are `x` and something
/// else, in either order.
fn other_operand(e: &Eqn, x: Var) -> Option<&Atom> {
    match e.inputs.as_slice() {
        [Atom::Var(a), b] if *a == x => Some(b),
        [a, Atom::Var(b)] if *b == x => Some(a),
        _ => None,
    }
}

fn binary(e: &Eqn) -> Option<BinaryOp> {
    match &e.primitive {
        Primitive::Elementwise(Elementwise::Binary(op)) => Some(*op),
        _ => None,
    }
}

/// How many times each variable is read (equation operands and outvars).
fn reads(jaxpr: &Jaxpr, v: Var) -> usize {
    let eqns = jaxpr
        .eqns
        .iter()
        .flat_map(|e| e.inputs.iter())
        .filter(|a| matches!(a, Atom::Var(x) if *x == v))
        .count();
    let outs = jaxpr
        .outvars
        .iter()
        .filter(|a| matches!(a, Atom::Var(x) if *x == v))
        .count();
    eqns + outs
}

/// The epilogue group `gi + 1` of `plan` makes of the product of group
/// `gi`, if group `gi` is a `dot_general` the module header's rules let
/// fuse.
pub(crate) fn find(jaxpr: &Jaxpr, plan: &FusionPlan, gi: usize) -> Option<Fused> {
    let (g, next) = (plan.groups.get(gi)?, plan.groups.get(gi + 1)?);
    if !matches!(g.kind, GroupKind::Opaque) || !matches!(next.kind, GroupKind::Loop) {
        return None;
    }
    let dot = jaxpr.eqns.get(g.root())?;
    if !matches!(dot.primitive, Primitive::Linalg(Linalg::DotGeneral(_))) {
        return None;
    }
    let d = one_output(dot)?;
    let (dt, shape) = atom_type(jaxpr, &Atom::Var(d)).ok()?;
    if !matches!(dt, DType::F32 | DType::F16 | DType::BF16) || shape.len() < 2 {
        return None;
    }
    let members: Vec<&Eqn> = next
        .eqns
        .iter()
        .map(|&e| jaxpr.eqns.get(e))
        .collect::<Option<_>>()?;
    // Every read of the product is in the fused group, by its `add` or
    // `max`, once.
    if reads(jaxpr, d) != 1 {
        return None;
    }
    let rank = shape.len();
    let n = *shape.last()?;
    // `bb = broadcast_in_dim[(rank-1,)] bias`, `s = add d bb`.
    let bias_of = |bcast: &Eqn, add: &Eqn| -> Option<Atom> {
        let Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            broadcast_dimensions,
            ..
        })) = &bcast.primitive
        else {
            return None;
        };
        let bb = one_output(bcast)?;
        if binary(add)? != BinaryOp::Add
            || broadcast_dimensions.values != [(rank - 1) as i64]
            || other_operand(add, d)? != &Atom::Var(bb)
            || reads(jaxpr, bb) != 1
        {
            return None;
        }
        let bias = *bcast.inputs.first()?;
        let (bdt, bshape) = atom_type(jaxpr, &bias).ok()?;
        (bdt == dt && bshape == [n] && matches!(bias, Atom::Var(_))).then_some(bias)
    };
    let relu_of = |max: &Eqn, x: Var| -> bool {
        binary(max) == Some(BinaryOp::Max) && other_operand(max, x).is_some_and(is_zero)
    };
    let (epilogue, bias, result) = match members.as_slice() {
        [max] if relu_of(max, d) => (Epilogue::Relu, None, one_output(max)?),
        [bcast, add] => (Epilogue::Bias, Some(bias_of(bcast, add)?), one_output(add)?),
        [bcast, add, max] => {
            let s = one_output(add)?;
            if !relu_of(max, s) || reads(jaxpr, s) != 1 {
                return None;
            }
            (
                Epilogue::BiasRelu,
                Some(bias_of(bcast, add)?),
                one_output(max)?,
            )
        }
        _ => return None,
    };
    let (rdt, rshape) = atom_type(jaxpr, &Atom::Var(result)).ok()?;
    (rdt == dt && rshape == shape).then_some(Fused {
        epilogue,
        bias,
        result,
    })
}

/// Applies `f` to the GEMM that group `gi`'s lowering ended with (the last
/// of `steps`, writing the product `d`): sets its epilogue and bias and
/// binds the fused group's result to the product's buffer. False when the
/// product was not written by a GEMM (nothing is changed then).
pub(crate) fn apply(
    f: &Fused,
    d: Var,
    ctx: &Ctx,
    env: &mut Env,
    steps: &mut [Step],
) -> Result<bool, IrError> {
    let Ok(Value::Buf(dbuf)) = env.atom(&Atom::Var(d)) else {
        return Ok(false);
    };
    let Some(Step::Gemm {
        plan,
        a,
        b,
        out,
        bias,
    }) = steps.last_mut()
    else {
        return Ok(false);
    };
    if *out != dbuf || plan.accumulate || plan.epilogue != Epilogue::None {
        return Ok(false);
    }
    let bias_buf = match &f.bias {
        None => None,
        Some(a) => match env.atom(a)? {
            Value::Buf(b) => Some(b),
            Value::Lit(_) => return Ok(false),
        },
    };
    let len = |x: BufId| ctx.decl(x).map(|d| d.len as u64);
    // The GEMM's columns are all the right operand's free dimensions; a
    // bias along only the last of several does not fit.
    if let Some(b) = bias_buf {
        if len(b)? != plan.n {
            return Ok(false);
        }
    }
    let mut fused = *plan;
    fused.epilogue = f.epilogue;
    fused
        .validate(
            len(*a)?,
            len(*b)?,
            len(*out)?,
            bias_buf.map(len).transpose()?.unwrap_or(0),
        )
        .map_err(|e| IrError::Invalid(format!("cuda lowering: gemm epilogue: {e}")))?;
    *plan = fused;
    *bias = bias_buf;
    env.bind(f.result, Value::Buf(dbuf));
    Ok(true)
}
