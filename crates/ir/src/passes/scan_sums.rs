//! Products summed over a scan leave the loop: a carry updated as
//! `c' = c + dot_general(u_t, w_t)` (or the transpose of such a product),
//! and read nowhere else, is `c_0 + Σ_t dot(u_t, w_t)`, which is one
//! product of the stacked `u` and `w` contracting the time axis too. The
//! scan then emits `u_t` and `w_t` as extra stacked outputs (an `xs`
//! operand is used as it is) and the product runs once, after it, as one
//! large GEMM instead of `length` small ones (reverse-mode weight
//! gradients of RNNs: `dW += h_tᵀ δ_t`).
//!
//! And a product of an `xs` slice with a loop-invariant operand (the input
//! projection `x_t W` of an RNN step) is one product of the whole `xs`
//! array before the scan, sliced back in as a new `xs` operand.
//!
//! Invariants: the result is the same sum of the same products; only the
//! order of the additions changes (as in any GEMM). Operands that are loop
//! invariant (body consts) are left alone by the first rewrite, as are
//! carries read anywhere but in their one update; the second needs no
//! batch dimensions, so the time axis leads the stacked product.

use super::rewrite::{rewrite_eqns, Rewriter, VarMap};
use super::simplify::dce;
use crate::aval::{Aval, Dim, ShapedArray};
use crate::error::IrError;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var};
use crate::primitive::{BinaryOp, DotDimensionNumbers, Primitive};
use crate::primitive::{
    Control, DotGeneralParams, Elementwise, Linalg, ScanParams, Structural, TransposeParams,
};

/// Moves every summed product, and every product of an `xs` slice with a
/// loop invariant, out of the top-level scans of `jaxpr`.
pub fn scan_sums_out(jaxpr: &Jaxpr) -> Result<Jaxpr, IrError> {
    let mut current = jaxpr.clone();
    // One carry per round: each round rebuilds the jaxpr.
    loop {
        let mut changed = false;
        let next = rewrite_eqns(&current, |rw, map, eqn| {
            if changed {
                return Ok(false);
            }
            let done =
                hoist_one(&current, rw, map, eqn)? || hoist_projection(&current, rw, map, eqn)?;
            changed |= done;
            Ok(done)
        })?;
        if !changed {
            return Ok(current);
        }
        current = next;
    }
}

/// A carry update found in a scan body.
struct Update {
    /// Carry index.
    carry: usize,
    /// The body's `add` equation.
    add: usize,
    /// The product's operands and dimension numbers, and its params.
    u: Atom,
    w: Atom,
    dn: DotDimensionNumbers,
    prim: Primitive,
    /// A transpose applied to the product before the add.
    perm: Option<Vec<usize>>,
}

/// How often each variable of `j` is read (equations and outputs).
fn uses(j: &Jaxpr) -> Vec<usize> {
    let mut n = vec![0; j.vars.len()];
    let atoms = j
        .eqns
        .iter()
        .flat_map(|e| e.inputs.iter())
        .chain(&j.outvars);
    for a in atoms {
        if let Atom::Var(v) = a {
            if let Some(c) = n.get_mut(v.index()) {
                *c += 1;
            }
        }
    }
    n
}

/// The equation defining `v` in `j`.
fn def(j: &Jaxpr, v: Var) -> Option<usize> {
    j.eqns.iter().position(|e| {
        e.outputs
            .iter()
            .any(|b| matches!(b, Binder::Var(w) if *w == v))
    })
}

/// The first carry of a scan body that is a summed product.
fn find_update(body: &Jaxpr, num_consts: usize, num_carry: usize) -> Option<Update> {
    let n = uses(body);
    let consts = &body.invars[..num_consts];
    let loop_variant = |a: &Atom| match a {
        Atom::Var(v) => !consts.contains(v) && !body.constvars.contains(v),
        Atom::Lit(_) => false,
    };
    (0..num_carry).find_map(|k| {
        let cin = *body.invars.get(num_consts + k)?;
        let Atom::Var(cout) = body.outvars.get(k)? else {
            return None;
        };
        if n[cin.index()] != 1 || n[cout.index()] != 1 {
            return None;
        }
        let add = def(body, *cout)?;
        let e = &body.eqns[add];
        if !matches!(
            e.primitive,
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add | BinaryOp::AddAny))
        ) {
            return None;
        }
        let z = match e.inputs.as_slice() {
            [Atom::Var(a), Atom::Var(b)] if *a == cin => *b,
            [Atom::Var(a), Atom::Var(b)] if *b == cin => *a,
            _ => return None,
        };
        if n[z.index()] != 1 {
            return None;
        }
        let mut at = def(body, z)?;
        let mut perm = None;
        if let Some(TransposeParams { permutation }) =
            body.eqns[at].primitive.params::<TransposeParams>()
        {
            let [Atom::Var(p)] = body.eqns[at].inputs.as_slice() else {
                return None;
            };
            if n[p.index()] != 1 {
                return None;
            }
            perm = Some(permutation.clone());
            at = def(body, *p)?;
        }
        let pe = &body.eqns[at];
        let DotGeneralParams {
            dimension_numbers, ..
        } = pe.primitive.params::<DotGeneralParams>()?;
        let [u, w] = pe.inputs.as_slice() else {
            return None;
        };
        // The time axis must join each operand's contracting dimensions as
        // one leading block, so the stacked product is a plain GEMM (no
        // operand transposed by a copy): contracting dimensions leading.
        let leading = |ds: &[usize]| {
            let mut v = ds.to_vec();
            v.sort_unstable();
            v.iter().enumerate().all(|(i, &d)| i == d)
        };
        if !leading(&dimension_numbers.lhs_contracting)
            || !leading(&dimension_numbers.rhs_contracting)
            || !dimension_numbers.lhs_batch.is_empty()
        {
            return None;
        }
        // Same-type operands and result: the sum accumulates in that type.
        let same = [u, w]
            .iter()
            .all(|a| body.atom_aval(a).map(|x| x.dtype()) == body.try_aval(*cout).map(Aval::dtype));
        (same && loop_variant(u) && loop_variant(w)).then(|| Update {
            carry: k,
            add,
            u: *u,
            w: *w,
            dn: dimension_numbers.clone(),
            prim: pe.primitive.clone(),
            perm,
        })
    })
}

/// The parts of a scan equation whose body matches its operands.
struct ScanEqn<'e> {
    closed: &'e ClosedJaxpr,
    length: usize,
    reverse: bool,
    num_consts: usize,
    num_carry: usize,
    unroll: i64,
    linear: &'e Vec<bool>,
    split_transpose: bool,
}

impl<'e> ScanEqn<'e> {
    fn of(eqn: &'e Eqn) -> Option<ScanEqn<'e>> {
        let ScanParams {
            jaxpr,
            length,
            reverse,
            num_consts,
            num_carry,
            unroll,
            linear,
            split_transpose,
        } = eqn.primitive.params::<ScanParams>()?;
        let body = &jaxpr.jaxpr;
        (body.invars.len() == eqn.inputs.len() && body.outvars.len() == eqn.outputs.len())
            .then_some(ScanEqn {
                closed: jaxpr,
                length: *length,
                reverse: *reverse,
                num_consts: *num_consts,
                num_carry: *num_carry,
                unroll: *unroll,
                linear,
                split_transpose: *split_transpose,
            })
    }

    /// Emits this scan with a new body, carry count, `linear` flags,
    /// operands and results.
    fn emit(
        &self,
        rw: &mut Rewriter,
        body: Jaxpr,
        num_carry: usize,
        linear: Vec<bool>,
        inputs: Vec<Atom>,
        outputs: Vec<Binder>,
    ) {
        rw.out.eqns.push(Eqn {
            primitive: Primitive::Control(Control::Scan(ScanParams {
                jaxpr: ClosedJaxpr {
                    jaxpr: body.into(),
                    consts: self.closed.consts.clone(),
                },
                length: self.length,
                reverse: self.reverse,
                num_consts: self.num_consts,
                num_carry,
                unroll: self.unroll,
                linear,
                split_transpose: self.split_transpose,
            })),
            inputs,
            outputs,
        });
    }
}

/// Fresh binders for `eqn`'s results, skipping result `skip`.
fn fresh_outputs(
    jaxpr: &Jaxpr,
    rw: &mut Rewriter,
    map: &mut VarMap,
    eqn: &Eqn,
    skip: Option<usize>,
) -> Result<Vec<Binder>, IrError> {
    let mut outputs = Vec::with_capacity(eqn.outputs.len());
    for (k, b) in eqn.outputs.iter().enumerate() {
        if Some(k) == skip {
            continue;
        }
        outputs.push(match b {
            Binder::Var(v) => Binder::Var(rw.fresh(jaxpr, map, *v)?),
            Binder::Drop(a) => Binder::Drop(map.aval(a)),
        });
    }
    Ok(outputs)
}

fn stacked(length: usize, a: &Aval) -> Option<Aval> {
    let s = a.as_array()?;
    let mut shape = vec![Dim::Const(length)];
    shape.extend(s.shape.iter().copied());
    Some(Aval::Array(ShapedArray {
        dtype: s.dtype,
        shape,
        weak_type: s.weak_type,
    }))
}

/// Rewrites `eqn` when it is a scan with a summed product; returns whether
/// it did.
fn hoist_one(
    jaxpr: &Jaxpr,
    rw: &mut Rewriter,
    map: &mut VarMap,
    eqn: &Eqn,
) -> Result<bool, IrError> {
    let Some(scan) = ScanEqn::of(eqn) else {
        return Ok(false);
    };
    let (closed, length, linear) = (scan.closed, &scan.length, scan.linear);
    let body = &closed.jaxpr;
    let (nc, nk) = (scan.num_consts, scan.num_carry);
    let Some(up) = find_update(body, nc, nk) else {
        return Ok(false);
    };
    let Binder::Var(c_final) = &eqn.outputs[up.carry] else {
        // An unused result: the update is dead anyway.
        return Ok(false);
    };
    let n_xs_start = nc + nk;
    // Each product operand as a stacked outer value: an `xs` operand as it
    // is, anything else as a new `ys` output of the body.
    let mut new_body = (**body).clone();
    let mut extra_ys: Vec<Aval> = Vec::new();
    let mut operand = |a: &Atom, new_body: &mut Jaxpr| -> Result<Result<Atom, usize>, IrError> {
        if let Atom::Var(v) = a {
            if let Some(i) = body.invars[n_xs_start..].iter().position(|w| w == v) {
                return Ok(Ok(eqn.inputs[n_xs_start + i]));
            }
        }
        let aval = body
            .atom_aval(a)
            .and_then(|av| stacked(*length, &av))
            .ok_or_else(|| IrError::Invalid("scan_sums: operand type".into()))?;
        new_body.outvars.push(*a);
        extra_ys.push(aval);
        Ok(Err(extra_ys.len() - 1))
    };
    let u_src = operand(&up.u, &mut new_body)?;
    let w_src = operand(&up.w, &mut new_body)?;
    // Drop the carry: its update, its invar and its output.
    new_body.eqns.remove(up.add);
    new_body.invars.remove(nc + up.carry);
    new_body.outvars.remove(up.carry);
    let new_body = dce(&new_body)?;
    let mut inputs: Vec<Atom> = eqn
        .inputs
        .iter()
        .map(|a| map.atom(a))
        .collect::<Result<_, _>>()?;
    let c_init = inputs.remove(nc + up.carry);
    let mut linear = linear.clone();
    if linear.len() == eqn.inputs.len() {
        linear.remove(nc + up.carry);
    }
    // Outputs: the old ones less the carry, then the stacked operands.
    let mut outputs = fresh_outputs(jaxpr, rw, map, eqn, Some(up.carry))?;
    let ys_vars: Vec<Var> = extra_ys
        .iter()
        .map(|a| rw.out.new_var(map.aval(a)))
        .collect();
    outputs.extend(ys_vars.iter().map(|v| Binder::Var(*v)));
    scan.emit(rw, new_body, nk - 1, linear, inputs, outputs);
    let src = |s: Result<Atom, usize>| -> Result<Atom, IrError> {
        match s {
            Ok(a) => map.atom(&a),
            Err(i) => Ok(Atom::Var(ys_vars[i])),
        }
    };
    let (us, ws) = (src(u_src)?, src(w_src)?);
    // The product over time and the original contraction.
    let shift = |d: &[usize]| d.iter().map(|x| x + 1).collect::<Vec<_>>();
    let dn = DotDimensionNumbers {
        lhs_contracting: std::iter::once(0)
            .chain(shift(&up.dn.lhs_contracting))
            .collect(),
        rhs_contracting: std::iter::once(0)
            .chain(shift(&up.dn.rhs_contracting))
            .collect(),
        lhs_batch: shift(&up.dn.lhs_batch),
        rhs_batch: shift(&up.dn.rhs_batch),
    };
    let Some(&DotGeneralParams {
        precision,
        preferred_element_type,
        ..
    }) = up.prim.params::<DotGeneralParams>()
    else {
        return Err(IrError::Invalid("scan_sums: not a product".into()));
    };
    let final_aval = map.aval(
        jaxpr
            .try_aval(*c_final)
            .ok_or_else(|| IrError::Invalid("scan_sums: result type".into()))?,
    );
    let prod_aval = match &up.perm {
        None => final_aval.clone(),
        Some(perm) => {
            let s = final_aval.array();
            let mut shape = vec![Dim::Const(0); perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                shape[p] = s.shape[i];
            }
            Aval::Array(ShapedArray {
                dtype: s.dtype,
                shape,
                weak_type: s.weak_type,
            })
        }
    };
    let prod = rw.out.new_var(prod_aval);
    rw.out.eqns.push(Eqn {
        primitive: Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers: dn,
            precision,
            preferred_element_type,
        })),
        inputs: vec![us, ws],
        outputs: vec![Binder::Var(prod)],
    });
    let summed = match up.perm {
        None => prod,
        Some(perm) => {
            let t = rw.out.new_var(final_aval.clone());
            rw.out.eqns.push(Eqn {
                primitive: Primitive::Structural(Structural::Transpose(TransposeParams {
                    permutation: perm,
                })),
                inputs: vec![Atom::Var(prod)],
                outputs: vec![Binder::Var(t)],
            });
            t
        }
    };
    let result = rw.fresh(jaxpr, map, *c_final)?;
    rw.out.eqns.push(Eqn {
        primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::AddAny)),
        inputs: vec![c_init, Atom::Var(summed)],
        outputs: vec![Binder::Var(result)],
    });
    Ok(true)
}

/// Rewrites `eqn` when it is a scan whose body multiplies an `xs` slice by
/// a loop-invariant operand; returns whether it did.
fn hoist_projection(
    jaxpr: &Jaxpr,
    rw: &mut Rewriter,
    map: &mut VarMap,
    eqn: &Eqn,
) -> Result<bool, IrError> {
    let Some(scan) = ScanEqn::of(eqn) else {
        return Ok(false);
    };
    let (closed, length, linear) = (scan.closed, &scan.length, scan.linear);
    let body = &closed.jaxpr;
    let (nc, nk) = (scan.num_consts, scan.num_carry);
    let xs = &body.invars[nc + nk..];
    let consts = &body.invars[..nc];
    // (equation, xs position, const position)
    let found = body.eqns.iter().enumerate().find_map(|(at, e)| {
        let DotGeneralParams {
            dimension_numbers: dn,
            ..
        } = e.primitive.params::<DotGeneralParams>()?;
        if !dn.lhs_batch.is_empty() || !matches!(e.outputs.as_slice(), [Binder::Var(_)]) {
            return None;
        }
        let [Atom::Var(l), Atom::Var(r)] = e.inputs.as_slice() else {
            return None;
        };
        let x = xs.iter().position(|v| v == l)?;
        let c = consts.iter().position(|v| v == r)?;
        Some((at, x, c))
    });
    let Some((at, xi, ci)) = found else {
        return Ok(false);
    };
    let pe = &body.eqns[at];
    let (
        Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers: dn,
            precision,
            preferred_element_type,
        })),
        [Binder::Var(z)],
    ) = (&pe.primitive, pe.outputs.as_slice())
    else {
        return Ok(false);
    };
    let z_aval = body
        .try_aval(*z)
        .and_then(|a| stacked(*length, a))
        .ok_or_else(|| IrError::Invalid("scan_sums: product type".into()))?;
    // The product of the whole `xs` array, before the scan.
    let x_all = map.atom(&eqn.inputs[nc + nk + xi])?;
    let w = map.atom(&eqn.inputs[ci])?;
    let z_all = rw.out.new_var(map.aval(&z_aval));
    rw.out.eqns.push(Eqn {
        primitive: Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers: DotDimensionNumbers {
                lhs_contracting: dn.lhs_contracting.iter().map(|d| d + 1).collect(),
                rhs_contracting: dn.rhs_contracting.clone(),
                lhs_batch: Vec::new(),
                rhs_batch: Vec::new(),
            },
            precision: *precision,
            preferred_element_type: *preferred_element_type,
        })),
        inputs: vec![x_all, w],
        outputs: vec![Binder::Var(z_all)],
    });
    // The body reads its row as a new `xs` invar instead.
    let mut new_body = (**body).clone();
    new_body.eqns.remove(at);
    new_body.invars.push(*z);
    let mut inputs: Vec<Atom> = eqn
        .inputs
        .iter()
        .map(|a| map.atom(a))
        .collect::<Result<_, _>>()?;
    inputs.push(Atom::Var(z_all));
    let mut linear = linear.clone();
    if linear.len() + 1 == inputs.len() {
        linear.push(false);
    }
    let outputs = fresh_outputs(jaxpr, rw, map, eqn, None)?;
    scan.emit(rw, new_body, nk, linear, inputs, outputs);
    Ok(true)
}
