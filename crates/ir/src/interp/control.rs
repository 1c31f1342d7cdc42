//! Control flow and calls: `cond`, `while`, `scan`, Catalyst's `for_loop`,
//! and the custom-derivative calls.

use super::util::{index_axis0, scalar_i64, stack};
use super::{call_closed, Ctx, Value};
use crate::array::HostArray;
use crate::aval::static_sizes;
use crate::error::IrError;
use crate::jaxpr::ClosedJaxpr;

fn array<'a>(prim: &str, what: &str, v: &'a Value) -> Result<&'a HostArray, IrError> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Ref(_) => Err(IrError::ty(
            prim,
            format!("{what} is a Ref, expected an array"),
        )),
    }
}

fn too_few(prim: &str, need: usize, got: usize) -> IrError {
    IrError::ty(
        prim,
        format!("expected at least {need} operands, got {got}"),
    )
}

/// `cond[branches] index *ops`: the index is clamped into the branches.
pub(crate) fn cond(
    ctx: &Ctx,
    branches: &[ClosedJaxpr],
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let (index, ops) = args.split_first().ok_or_else(|| too_few("cond", 1, 0))?;
    if branches.is_empty() {
        return Err(IrError::ty("cond", "no branches"));
    }
    let i = scalar_i64(array("cond", "the index", index)?, "cond index")?;
    let i = i.clamp(0, branches.len() as i64 - 1) as usize;
    call_closed(ctx, &branches[i], ops)
}

/// `while[...] *cond_consts *body_consts *init`.
pub(crate) fn while_loop(
    ctx: &Ctx,
    cond_jaxpr: &ClosedJaxpr,
    body_jaxpr: &ClosedJaxpr,
    cond_nconsts: usize,
    body_nconsts: usize,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    if args.len() < cond_nconsts + body_nconsts {
        return Err(too_few("while", cond_nconsts + body_nconsts, args.len()));
    }
    let (cconsts, rest) = args.split_at(cond_nconsts);
    let (bconsts, init) = rest.split_at(body_nconsts);
    let mut carry = init.to_vec();
    loop {
        let mut cargs = cconsts.to_vec();
        cargs.extend(carry.iter().cloned());
        let pred = call_closed(ctx, cond_jaxpr, &cargs)?;
        let [p] = pred.as_slice() else {
            return Err(IrError::ty(
                "while",
                format!("cond_jaxpr gave {} results, expected 1", pred.len()),
            ));
        };
        if scalar_i64(array("while", "the predicate", p)?, "while predicate")? == 0 {
            return Ok(carry);
        }
        let mut bargs = bconsts.to_vec();
        bargs.extend(carry);
        carry = call_closed(ctx, body_jaxpr, &bargs)?;
    }
}

/// `scan[...] *consts *carry *xs` giving `*carry *ys`.
pub(crate) fn scan(
    ctx: &Ctx,
    jaxpr: &ClosedJaxpr,
    length: usize,
    reverse: bool,
    num_consts: usize,
    num_carry: usize,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    if args.len() < num_consts + num_carry {
        return Err(too_few("scan", num_consts + num_carry, args.len()));
    }
    let (consts, rest) = args.split_at(num_consts);
    let (init, xs) = rest.split_at(num_carry);
    let xs = xs
        .iter()
        .enumerate()
        .map(|(k, x)| {
            let a = array("scan", &format!("xs operand {k}"), x)?;
            if a.shape().first() != Some(&length) {
                return Err(IrError::ty(
                    "scan",
                    format!(
                        "xs operand {k} has shape {:?}, expected leading axis {length}",
                        a.shape()
                    ),
                ));
            }
            Ok(a)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // ys types, for stacking (and for length 0).
    let body = &jaxpr.jaxpr;
    let out_avals = body
        .outvars
        .iter()
        .map(|a| {
            body.atom_aval(a)
                .ok_or_else(|| IrError::Invalid("scan body outvar not in table".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if out_avals.len() < num_carry {
        return Err(IrError::ty(
            "scan",
            format!(
                "body has {} outputs for {num_carry} carries",
                out_avals.len()
            ),
        ));
    }
    let num_ys = out_avals.len() - num_carry;
    let mut carry = init.to_vec();
    let mut ys: Vec<Vec<Option<HostArray>>> = vec![vec![None; length]; num_ys];
    for step in 0..length {
        let i = if reverse { length - 1 - step } else { step };
        let mut bargs = consts.to_vec();
        bargs.extend(carry.iter().cloned());
        for x in &xs {
            bargs.push(Value::Array(index_axis0(x, i)?));
        }
        let mut outs = call_closed(ctx, jaxpr, &bargs)?;
        let y_vals = outs.split_off(num_carry.min(outs.len()));
        if y_vals.len() != num_ys {
            return Err(IrError::ty("scan", "body gave the wrong number of outputs"));
        }
        carry = outs;
        for (k, y) in y_vals.into_iter().enumerate() {
            ys[k][i] = Some(array("scan", "a y output", &y)?.clone());
        }
    }
    let mut results = carry;
    for (k, col) in ys.into_iter().enumerate() {
        let aval = out_avals[num_carry + k].array();
        let item: Vec<HostArray> = col.into_iter().flatten().collect();
        let shape = match item.first() {
            Some(a) => a.shape().to_vec(),
            None => static_sizes(&aval.shape).ok_or_else(|| {
                IrError::ty("scan", "a y output of a length-0 scan has a dynamic shape")
            })?,
        };
        results.push(Value::Array(stack(&item, aval.dtype, &shape)?));
    }
    Ok(results)
}

/// Catalyst's `for_loop`: operands `*consts *implicit lo hi step i0 *carry`;
/// body invars `*consts *implicit i *carry`; body results and loop results
/// `*implicit *carry`. With `apply_reverse_transform` the trip count is
/// `ceil((hi - lo) / step)` for any nonzero step (negative steps count down).
pub(crate) fn for_loop(
    ctx: &Ctx,
    body: &ClosedJaxpr,
    body_nconsts: usize,
    nimplicit: usize,
    apply_reverse_transform: bool,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let head = body_nconsts + nimplicit;
    if args.len() < head + 4 {
        return Err(too_few("for_loop", head + 4, args.len()));
    }
    let consts = &args[..body_nconsts];
    let mut carry: Vec<Value> = args[body_nconsts..head].to_vec();
    carry.extend(args[head + 4..].iter().cloned());
    let bound = |k: usize, what: &str| -> Result<i64, IrError> {
        scalar_i64(array("for_loop", what, &args[head + k])?, what)
    };
    let (lo, hi, step) = (
        bound(0, "lower bound")?,
        bound(1, "upper bound")?,
        bound(2, "step")?,
    );
    let index_dtype = array("for_loop", "the loop index", &args[head + 3])?.dtype();
    let trips = for_loop_trips(lo, hi, step, apply_reverse_transform)?;
    for k in 0..trips {
        let iv = lo + k * step;
        let mut bargs = consts.to_vec();
        bargs.extend(carry[..nimplicit].iter().cloned());
        bargs.push(Value::Array(index_scalar(index_dtype, iv)));
        bargs.extend(carry[nimplicit..].iter().cloned());
        let outs = call_closed(ctx, body, &bargs)?;
        if outs.len() != carry.len() {
            return Err(IrError::ty(
                "for_loop",
                format!(
                    "body gave {} results for {} carries",
                    outs.len(),
                    carry.len()
                ),
            ));
        }
        carry = outs;
    }
    Ok(carry)
}

/// The trip count of a `for_loop` from `lo` to `hi` by `step`. With
/// `apply_reverse_transform` it is `ceil((hi - lo) / step)` for any nonzero
/// step (negative steps count down); otherwise the step must be positive.
pub fn for_loop_trips(
    lo: i64,
    hi: i64,
    step: i64,
    apply_reverse_transform: bool,
) -> Result<i64, IrError> {
    if apply_reverse_transform {
        if step == 0 {
            return Err(IrError::Eval("for_loop: step is 0".into()));
        }
        let dist = hi - lo;
        // Ceiling division for either sign of step.
        let q = dist / step;
        let q = if dist % step != 0 && ((dist < 0) == (step < 0)) {
            q + 1
        } else {
            q
        };
        Ok(q.max(0))
    } else {
        if step <= 0 {
            return Err(IrError::Eval(format!(
                "for_loop: step {step} must be positive"
            )));
        }
        Ok(if hi > lo {
            (hi - lo + step - 1) / step
        } else {
            0
        })
    }
}

/// A scalar of an integer dtype holding `v` exactly.
pub fn index_scalar(dtype: crate::dtype::DType, v: i64) -> HostArray {
    let lit = crate::literal::Literal {
        value: crate::literal::Scalar::Int(v),
        dtype,
    };
    super::util::literal_array(&lit)
}

/// `custom_jvp_call` / `custom_vjp_call`: evaluates `call_jaxpr`. Its invars
/// normally take every operand (the leading `num_consts` included); a callee
/// that takes only the non-const operands gets those.
pub(crate) fn custom_call(
    ctx: &Ctx,
    name: &str,
    call_jaxpr: &ClosedJaxpr,
    num_consts: usize,
    args: &[Value],
) -> Result<Vec<Value>, IrError> {
    let n = call_jaxpr.jaxpr.invars.len();
    if n == args.len() {
        call_closed(ctx, call_jaxpr, args)
    } else if num_consts <= args.len() && n == args.len() - num_consts {
        call_closed(ctx, call_jaxpr, &args[num_consts..])
    } else {
        Err(IrError::ty(
            name,
            format!(
                "call_jaxpr takes {n} inputs, got {} operands (num_consts={num_consts})",
                args.len()
            ),
        ))
    }
}
