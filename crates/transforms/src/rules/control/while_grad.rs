//! `while` under `linearize`: JAX refuses reverse mode here; we split.
//!
//! A `while` that runs `n` times is a `for_loop` of `n` steps over the
//! same body. So the rule binds a counting `while` first (the original
//! loop with an `i64` counter carry; loops are pure, so running it twice
//! is safe) and then differentiates the equivalent `for_loop` from `0` to
//! `n` with the `for_loop` split (`for_loop_split.rs`), whose known loop
//! gives the primal results.

use super::for_loop_split::{split, ForParams};
use crate::rules::JvpOuts;
use jaxon_ir::dyntype::{in_type, InDim};
use jaxon_ir::primitive::BinaryOp;
use jaxon_ir::primitive::{Elementwise, WhileParams};
use jaxon_ir::{
    Atom, Binder, ClosedJaxpr, DType, Eqn, HostArray, Literal, Primitive, Scalar, ShapedArray,
    VarSpace,
};
use jaxon_trace::error::Result;
use jaxon_trace::{bind, Array};
use std::sync::Arc;

fn i64(v: f64) -> Array {
    Array::from_host(HostArray::scalar(DType::I64, v))
}

/// The rule: the trip count from a counting loop, then the `for_loop`
/// split.
pub(super) fn split_while(wp: &WhileParams, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    let WhileParams {
        cond_jaxpr,
        body_jaxpr,
        cond_nconsts: cn,
        body_nconsts: bn,
    } = wp;
    let (cn, bn) = (*cn, *bn);
    let body = &body_jaxpr.jaxpr;
    // With dynamic shapes the leading carries are the others' dimensions:
    // they become the for_loop's implicit carries.
    let ity = in_type(body, &vec![true; body.invars.len()])?;
    let mut ni = 0;
    for (a, _) in &ity.0[bn..] {
        for d in &a.shape {
            if let InDim::DBIdx(j) = *d {
                if j >= bn {
                    ni = ni.max(j - bn + 1);
                }
            }
        }
    }
    let scalar = || ShapedArray::scalar(DType::I64);

    // The counting loop: a leading i64 carry the cond ignores and the body
    // increments.
    let mut cj = (*cond_jaxpr.jaxpr).clone();
    cj.var_space = VarSpace::default();
    let c = cj.new_var(scalar());
    cj.invars.insert(cn, c);
    let mut bj = (**body).clone();
    bj.var_space = VarSpace::default();
    let c = bj.new_var(scalar());
    let c1 = bj.new_var(scalar());
    bj.invars.insert(bn, c);
    bj.eqns.push(Eqn {
        primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
        inputs: vec![
            Atom::Var(c),
            Atom::Lit(Literal {
                value: Scalar::Int(1),
                dtype: DType::I64,
            }),
        ],
        outputs: vec![Binder::Var(c1)],
    });
    bj.outvars.insert(0, Atom::Var(c1));
    let counting = Primitive::from(WhileParams {
        cond_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(cj),
            consts: cond_jaxpr.consts.clone(),
        },
        body_jaxpr: ClosedJaxpr {
            jaxpr: Arc::new(bj),
            consts: body_jaxpr.consts.clone(),
        },
        cond_nconsts: cn,
        body_nconsts: bn,
    });
    let mut ops = x[..cn + bn].to_vec();
    ops.push(i64(0.0));
    ops.extend(x[cn + bn..].iter().cloned());
    let n = bind(&counting, &ops)?.swap_remove(0);

    // The equivalent for_loop: the body with an unused index after the
    // implicit carries.
    let mut fj = (**body).clone();
    fj.var_space = VarSpace::default();
    let idx = fj.new_var(scalar());
    fj.invars.insert(bn + ni, idx);
    let fbody = ClosedJaxpr {
        jaxpr: Arc::new(fj),
        consts: body_jaxpr.consts.clone(),
    };
    let fp = ForParams {
        what: "while_loop",
        body: &fbody,
        nc: bn,
        ni,
        preserve_dimensions: true,
        apply_reverse_transform: false,
    };
    let head = cn + bn + ni;
    let mut xf = x[cn..head].to_vec();
    xf.extend([i64(0.0), n, i64(1.0), i64(0.0)]);
    xf.extend(x[head..].iter().cloned());
    let mut tf = t[cn..head].to_vec();
    tf.extend([None, None, None, None]);
    tf.extend(t[head..].iter().cloned());
    split(&fp, &xf, &tf)
}
