//! `while_loop` and `cond` on dynamic shapes, staged with the bind
//! algorithm of [`super::bind`] (the static paths in `loops.rs`/`cond.rs`
//! keep JAX 0.10.2's exact output and hand over here when an operand or a
//! branch result has a dynamic dimension).

use super::bind::{
    collapse, expand_inputs, kept_implicit, loop_results, promote_like, trace_body, BodyCtx,
    Expanded,
};
use super::closed;
use crate::array::Array;
use crate::core::bind;
use crate::dynshape::{same_value, sizes, Size};
use crate::error::{catch, Error, Result};
use crate::pytree::{Pytree, TreeDef};
use hashbrown::HashMap;
use jaxon_ir::primitive::{CondParams, WhileParams};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Atom, Aval, DType, Jaxpr, Literal, Primitive, Scalar, Var};

/// `while_loop(cond_fn, body_fn, init)` whose carry may have dynamic
/// shapes that change across iterations. With `preserve_dimensions` (the
/// default of [`super::while_loop`]) carries sharing a dimension must keep
/// sharing it; with `false` every dynamic dimension is its own implicit
/// carry, so e.g. an array may double its length each iteration.
pub fn while_loop_with<C: Pytree>(
    preserve_dimensions: bool,
    cond_fn: impl Fn(C) -> Array,
    body_fn: impl Fn(C) -> C,
    init: C,
) -> Result<C> {
    let (init_vals, in_def) = init.flatten();
    let expanded = expand_inputs(&init_vals, preserve_dimensions)?;
    let mut cond = trace_body(
        &expanded,
        false,
        |args| {
            let c = C::unflatten(&in_def, args)?;
            Ok(vec![catch(|| cond_fn(c))?])
        },
        |_, outs| {
            let ok = matches!(&outs[..], [p] if p.dtype() == DType::Bool && p.ndim() == 0);
            if !ok {
                let tys: Vec<String> = outs.iter().map(|o| fmt_aval(o.aval())).collect();
                return Err(Error::InvalidArgument(format!(
                    "while_loop: cond_fn must return a boolean scalar, but got output type(s) ({})",
                    tys.join(", ")
                )));
            }
            Ok((outs, 0))
        },
    )?;
    let body = trace_body(
        &expanded,
        true,
        |args| {
            let c = C::unflatten(&in_def, args)?;
            let (outs, out_def) = catch(|| body_fn(c))?.flatten();
            check_def("while_loop", &in_def, &out_def)?;
            Ok(outs)
        },
        |cx, outs| loop_results("while_loop", &expanded, 0, cx, outs),
    )?;
    // Dimensions the body shares with captured values are loop-invariant
    // consts of the cond too.
    promote_like(&mut cond, &body.kept, &expanded);
    let primitive = Primitive::from(WhileParams {
        cond_jaxpr: closed(cond.jaxpr),
        body_jaxpr: closed(body.jaxpr),
        cond_nconsts: cond.consts.len(),
        body_nconsts: body.consts.len(),
    });
    let mut args = cond.consts;
    args.extend(body.consts);
    args.extend(kept_implicit(&expanded, &body.kept));
    args.extend(init_vals);
    let outs = bind(&primitive, &args)?;
    C::unflatten(&in_def, collapse(outs, body.implicit_outs))
}

fn check_def(what: &str, in_def: &TreeDef, out_def: &TreeDef) -> Result<()> {
    if in_def != out_def {
        return Err(Error::InvalidArgument(format!(
            "{what}: the body must return its carry's structure {in_def:?}, got {out_def:?}"
        )));
    }
    Ok(())
}

/// Where a branch result's dimension comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum DimSrc {
    Const(usize),
    /// Expanded input `j` of the branch.
    In(usize),
    /// The branch's own implicit result `i`.
    Own(usize),
}

/// A traced branch with the sources of its results' dimensions.
struct Branch {
    jaxpr: Jaxpr,
    consts: Vec<Array>,
    own: usize,
    srcs: Vec<Vec<DimSrc>>,
    out_def: TreeDef,
}

/// Describes the explicit results' dimensions; the branch's own dimensions
/// (computed in the branch) become its leading results.
fn branch_results(cx: &BodyCtx, outs: Vec<Array>) -> Result<(Vec<Array>, usize, Vec<Vec<DimSrc>>)> {
    let mut own: Vec<Array> = Vec::new();
    let mut srcs = Vec::with_capacity(outs.len());
    for o in &outs {
        let mut v = Vec::new();
        for s in sizes(o)? {
            v.push(match s {
                Size::Const(n) => DimSrc::Const(n),
                Size::Dyn(t) => match cx.args.iter().position(|a| same_value(a, &t)) {
                    Some(j) => DimSrc::In(j),
                    None => DimSrc::Own(own.iter().position(|a| same_value(a, &t)).unwrap_or_else(
                        || {
                            own.push(t.clone());
                            own.len() - 1
                        },
                    )),
                },
            });
        }
        srcs.push(v);
    }
    let n = own.len();
    own.extend(outs);
    Ok((own, n, srcs))
}

/// `cond` with dynamic shapes: operands are expanded with implicit
/// dimensions; a result dimension the branches give differently (different
/// dynamic sizes, or one computed in a branch) becomes a fresh implicit
/// result (`OutDBIdx`).
pub(crate) fn cond_dynamic<I: Pytree, O: Pytree>(
    api: &str,
    index: &Array,
    branches: &[&dyn Fn(I) -> O],
    trace_order: &[usize],
    leaves: Vec<Array>,
    in_def: &TreeDef,
) -> Result<O> {
    let expanded: Expanded = expand_inputs(&leaves, true)?;
    let mut traced: Vec<Option<Branch>> = (0..branches.len()).map(|_| None).collect();
    for &b in trace_order {
        let f = branches[b];
        let mut out_def = None;
        let mut info = None;
        let t = trace_body(
            &expanded,
            false,
            |args| {
                let x = I::unflatten(in_def, args)?;
                let (outs, def) = catch(|| f(x))?.flatten();
                out_def = Some(def);
                Ok(outs)
            },
            |cx, outs| {
                let (all, n, srcs) = branch_results(cx, outs)?;
                info = Some(srcs);
                Ok((all, n))
            },
        )?;
        traced[b] = Some(Branch {
            jaxpr: t.jaxpr,
            consts: t.consts,
            own: t.implicit_outs,
            srcs: info.expect("set when tracing succeeds"),
            out_def: out_def.expect("set when tracing succeeds"),
        });
    }
    let traced: Vec<Branch> = traced.into_iter().map(|b| b.expect("traced")).collect();
    let first = &traced[0];
    for (b, br) in traced.iter().enumerate().skip(1) {
        if br.out_def != first.out_def {
            return Err(Error::InvalidArgument(format!(
                "{api} branch outputs must have the same pytree structure, but branch 0 \
                 returns {:?} and branch {b} returns {:?}",
                first.out_def, br.out_def
            )));
        }
        for (k, (x, y)) in first.srcs.iter().zip(&br.srcs).enumerate() {
            let (xa, ya) = (out_aval(first, k), out_aval(br, k));
            if x.len() != y.len() || xa.dtype() != ya.dtype() {
                return Err(Error::DTypeMismatch {
                    op: format!(
                        "{api} branch outputs must have equal dtypes and ranks, but output {k} \
                         of branch 0 and of branch {b} differ"
                    ),
                    lhs: fmt_aval(&xa),
                    rhs: fmt_aval(&ya),
                });
            }
        }
    }
    let out_def = first.out_def.clone();
    // The joint implicit results: one per distinct tuple of per-branch
    // sources among the dimensions the branches do not agree on.
    let mut joint: Vec<Vec<DimSrc>> = Vec::new();
    let mut joint_ids: HashMap<Vec<DimSrc>, usize> = HashMap::new();
    for (k, dims) in first.srcs.iter().enumerate() {
        for axis in 0..dims.len() {
            let per: Vec<DimSrc> = traced.iter().map(|br| br.srcs[k][axis]).collect();
            let agreed = matches!(per[0], DimSrc::Const(_) | DimSrc::In(_))
                && per.iter().all(|d| *d == per[0]);
            if !agreed {
                joint_ids.entry(per.clone()).or_insert_with(|| {
                    joint.push(per);
                    joint.len() - 1
                });
            }
        }
    }
    // Join the captured values in order of first capture.
    let mut consts: Vec<Array> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    for &b in trace_order {
        for c in &traced[b].consts {
            slot.entry(c.identity()).or_insert_with(|| {
                consts.push(c.clone());
                consts.len() - 1
            });
        }
    }
    let mut jaxprs = Vec::with_capacity(traced.len());
    for (b, br) in traced.into_iter().enumerate() {
        let mut j = br.jaxpr;
        let nc = br.consts.len();
        let rest = j.invars.split_off(nc);
        let mut const_invars: Vec<Option<Var>> = vec![None; consts.len()];
        for (v, c) in j.invars.iter().zip(&br.consts) {
            const_invars[slot[&c.identity()]] = Some(*v);
        }
        let mut invars: Vec<Var> = const_invars
            .into_iter()
            .zip(&consts)
            .map(|(v, c)| v.unwrap_or_else(|| j.new_var(c.aval().clone())))
            .collect();
        invars.extend(rest.iter().copied());
        let implicit: Vec<Atom> = joint
            .iter()
            .map(|per| match per[b] {
                DimSrc::Const(n) => Atom::Lit(Literal {
                    value: Scalar::Int(n as i64),
                    dtype: DType::I64,
                }),
                DimSrc::In(i) => Atom::Var(rest[i]),
                DimSrc::Own(i) => j.outvars[i],
            })
            .collect();
        let explicit = j.outvars.split_off(br.own);
        j.outvars = implicit;
        j.outvars.extend(explicit);
        j.invars = invars;
        jaxprs.push(j);
    }
    let mut args = vec![index.clone()];
    args.extend(consts);
    args.extend(expanded.implicit.iter().cloned());
    args.extend(leaves);
    let primitive = Primitive::from(CondParams {
        branches: jaxprs.into_iter().map(closed).collect(),
        branches_platforms: None,
    });
    let outs = bind(&primitive, &args)?;
    O::unflatten(&out_def, collapse(outs, joint.len()))
}

fn out_aval(br: &Branch, k: usize) -> Aval {
    let a = br.jaxpr.outvars[br.own + k];
    br.jaxpr
        .atom_aval(&a)
        .unwrap_or_else(|| Aval::Array(jaxon_ir::ShapedArray::scalar(DType::Bool)))
}
