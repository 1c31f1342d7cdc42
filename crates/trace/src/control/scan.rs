//! `scan`: a loop over the leading axis of `xs` with a carry, giving the
//! final carry and the stacked per-step outputs.
//!
//! As in JAX 0.10.2: the body is traced on the carry's types and one slice
//! of each `xs` leaf; captured values are the leading operands
//! (`num_consts`); a weakly typed initial carry whose dtype differs from the
//! body's is promoted and the body re-traced; a carry the body returns
//! unchanged becomes a const; an output that is an `xs` slice unchanged is
//! not computed by the loop but is that `xs` leaf.

use super::{
    check_carry, closed, forwarding, move_invars_to_front, promote_weak_inputs, prune_outvars, Body,
};
use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
use crate::pytree::{NodeKind, Pytree, TreeDef};
use crate::stage::leaf_avals;
use jaxon_ir::primitive::ScanParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Aval, Dim, Primitive};

/// `lax.scan(f, init, xs, length, reverse)`: `(carry, y) = f(carry, x)` for
/// each slice `x` of `xs` along its leading axis (from the end if
/// `reverse`); returns the final carry and the `y`s stacked.
///
/// `length` is required when `xs` has no leaves (pass `()`), and must agree
/// with the leading dimension of every `xs` leaf otherwise. `f` must return
/// a carry of the same structure and types as `init`.
pub fn scan<C: Pytree, X: Pytree, Y: Pytree>(
    f: impl Fn(C, X) -> (C, Y),
    init: C,
    xs: X,
    length: Option<usize>,
    reverse: bool,
) -> Result<(C, Y)> {
    let (mut init_vals, carry_def) = init.flatten();
    let (xs_vals, xs_def) = xs.flatten();
    let length = scan_length(&xs_vals, length)?;
    let x_avals: Vec<Aval> = xs_vals
        .iter()
        .map(|x| {
            let mut a = x.ty().clone();
            a.shape.remove(0);
            Aval::Array(a)
        })
        .collect();
    let in_def = TreeDef::Node(NodeKind::Tuple, vec![carry_def.clone(), xs_def.clone()]);
    let trace = |carry_avals: &[Aval]| -> Result<(Body, TreeDef, TreeDef)> {
        let mut avals = carry_avals.to_vec();
        avals.extend(x_avals.iter().cloned());
        let body = Body::trace::<(C, X), (C, Y)>(|(c, x)| f(c, x), &in_def, &avals)?;
        let [c_def, y_def] = body
            .out_def
            .children_of(&NodeKind::Tuple, Some(2))?
            .to_vec()
            .try_into()
            .map_err(|_| Error::InvalidArgument("scan body output must be a pair".into()))?;
        Ok((body, c_def, y_def))
    };

    let mut init_avals = leaf_avals(&init_vals);
    let (mut body, mut c_def, mut y_def) = trace(&init_avals)?;
    check_carry("scan body", &carry_def, &c_def, &init_avals, &init_avals)?;
    let n_carry = init_vals.len();
    if promote_weak_inputs(&mut init_vals, &body.out_avals()[..n_carry])? {
        init_avals = leaf_avals(&init_vals);
        (body, c_def, y_def) = trace(&init_avals)?;
    }
    let out_avals = body.out_avals();
    check_carry(
        "scan body",
        &carry_def,
        &c_def,
        &init_avals,
        &out_avals[..n_carry],
    )?;

    let (mut j, mut consts) = body.open();
    let n_xs = xs_vals.len();
    let n_ys = j.outvars.len() - n_carry;

    // A carry the body returns unchanged is a const.
    let nc = consts.len();
    let fwd = forwarding(&j);
    let to_const: Vec<bool> = (0..n_carry).map(|k| fwd[k] == Some(nc + k)).collect();
    let mut moved = Vec::new();
    let mut carry_vals = init_vals;
    if to_const.iter().any(|m| *m) {
        let mut keep: Vec<bool> = to_const.iter().map(|m| !m).collect();
        keep.extend(std::iter::repeat_n(true, n_ys));
        prune_outvars(&mut j, &keep);
        let mut mask = vec![false; nc];
        mask.extend(&to_const);
        mask.extend(std::iter::repeat_n(false, n_xs));
        move_invars_to_front(&mut j, &mask);
        let (m, rest): (Vec<_>, Vec<_>) = carry_vals
            .into_iter()
            .zip(&to_const)
            .partition(|(_, m)| **m);
        moved = m.into_iter().map(|(x, _)| x).collect();
        carry_vals = rest.into_iter().map(|(x, _)| x).collect();
        let mut all = moved.clone();
        all.append(&mut consts);
        consts = all;
    }
    let num_consts = consts.len();
    let num_carry = carry_vals.len();

    // An output that is an `xs` slice unchanged is that `xs` leaf.
    let fwd = forwarding(&j);
    let y_fwd: Vec<Option<usize>> = fwd[num_carry..]
        .iter()
        .map(|f| f.and_then(|i| i.checked_sub(num_consts + num_carry)))
        .collect();
    let mut keep = vec![true; num_carry];
    keep.extend(y_fwd.iter().map(Option::is_none));
    prune_outvars(&mut j, &keep);

    let n_ops = num_consts + num_carry + n_xs;
    let primitive = Primitive::from(ScanParams {
        jaxpr: closed(j),
        length,
        reverse,
        num_consts,
        num_carry,
        unroll: 1,
        linear: vec![false; n_ops],
        split_transpose: false,
    });
    let mut args = consts;
    args.extend(carry_vals);
    args.extend(xs_vals.iter().cloned());
    let mut outs = bind(&primitive, &args)?.into_iter();
    let mut moved = moved.into_iter();
    let carry: Vec<Array> = to_const
        .iter()
        .map(|m| {
            if *m {
                moved.next().expect("a moved carry")
            } else {
                outs.next().expect("a carry result")
            }
        })
        .collect();
    let ys: Vec<Array> = y_fwd
        .iter()
        .map(|f| match f {
            None => outs.next().expect("a stacked result"),
            Some(i) => xs_vals[*i].clone(),
        })
        .collect();
    Ok((C::unflatten(&carry_def, carry)?, Y::unflatten(&y_def, ys)?))
}

/// The number of iterations: the common leading dimension of the `xs`
/// leaves, which `length` (required without leaves) must agree with.
fn scan_length(xs: &[Array], length: Option<usize>) -> Result<usize> {
    let mut found: Option<(usize, &Array)> = None;
    for x in xs {
        let n = match x.ty().shape.first() {
            Some(Dim::Const(n)) => *n,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "scan: every xs leaf needs a static leading axis to scan over, got {}",
                    fmt_aval(x.aval())
                )))
            }
        };
        match found {
            Some((m, y)) if m != n => {
                return Err(Error::ShapeMismatch {
                    op: "scan: xs leaves must have equal leading axis sizes".into(),
                    lhs: fmt_aval(y.aval()),
                    rhs: fmt_aval(x.aval()),
                })
            }
            _ => found = Some((n, x)),
        }
    }
    match (found, length) {
        (Some((n, _)), Some(l)) if n != l => Err(Error::InvalidArgument(format!(
            "scan: length={l} disagrees with the leading axis size {n} of xs"
        ))),
        (Some((n, _)), _) => Ok(n),
        (None, Some(l)) => Ok(l),
        (None, None) => Err(Error::InvalidArgument(
            "scan: length must be given when xs has no arrays".into(),
        )),
    }
}
