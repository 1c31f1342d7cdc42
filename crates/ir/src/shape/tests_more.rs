//! Unit tests of the control-flow and state shape rules and of the checker,
//! plus a proptest of the checker on random and corrupted jaxprs.

use super::tests::{ev, ev1, t};
use super::*;
use crate::aval::{AbstractRef, MemorySpace};
use crate::check::{check_closed_jaxpr, check_jaxpr};
use crate::jaxpr::{Binder, ClosedJaxpr, Eqn, Jaxpr};
use crate::literal::Literal;
use crate::primitive::*;
use crate::primitive::{
    AddUpdateParams, BroadcastInDimParams, CondParams, Control, ConvertElementTypeParams,
    Elementwise, ForLoopParams, GetParams, JitParams, LoadParams, PallasCallParams,
    ProgramIdParams, ReduceParams, Reduction, ScanParams, StoreParams, Structural, SwapParams,
    TransposeParams, WhileParams,
};
use proptest::prelude::*;
use std::sync::Arc;

const F32: DType = DType::F32;
const I32: DType = DType::I32;
const I64: DType = DType::I64;

fn eqn(p: Primitive, inputs: Vec<Atom>, outputs: Vec<Var>) -> Eqn {
    Eqn {
        primitive: p,
        inputs,
        outputs: outputs.into_iter().map(Binder::Var).collect(),
    }
}

/// `{ lambda ; x:ty. let y = op x in (y,) }` for a unary op.
fn unary_fn(op: UnaryOp, ty: Aval) -> ClosedJaxpr {
    let mut j = Jaxpr::new();
    let x = j.new_var(ty.clone());
    let y = j.new_var(ty);
    j.invars = vec![x];
    j.eqns = vec![eqn(
        Primitive::Elementwise(Elementwise::Unary(op)),
        vec![x.into()],
        vec![y],
    )];
    j.outvars = vec![y.into()];
    ClosedJaxpr::without_consts(j)
}

#[test]
fn cond_branches_agree() {
    let b0 = unary_fn(UnaryOp::Sin, t(F32, &[3]));
    let b1 = unary_fn(UnaryOp::Cos, t(F32, &[3]));
    let c = Primitive::from(CondParams {
        branches: vec![b0.clone(), b1],
        branches_platforms: None,
    });
    assert_eq!(ev1(&c, &[t(I32, &[]), t(F32, &[3])]), t(F32, &[3]));
    assert!(ev(&c, &[t(DType::Bool, &[]), t(F32, &[3])]).is_err());
    let e = ev(&c, &[t(I32, &[]), t(F32, &[4])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32[3]") && e.contains("f32[4]"), "{e}");
    let bad = Primitive::from(CondParams {
        branches: vec![b0, unary_fn(UnaryOp::Cos, t(F32, &[3])).clone()],
        branches_platforms: None,
    });
    assert!(ev(&bad, &[t(I32, &[])]).is_err());
}

#[test]
fn while_and_scan() {
    // cond: i < 10 ; body: i + 1 (no consts)
    let mut cj = Jaxpr::new();
    let i = cj.new_var(t(I32, &[]));
    let p = cj.new_var(t(DType::Bool, &[]));
    cj.invars = vec![i];
    cj.eqns = vec![eqn(
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Lt)),
        vec![i.into(), Literal::new(10.0, I32).into()],
        vec![p],
    )];
    cj.outvars = vec![p.into()];
    let body = unary_fn(UnaryOp::Neg, t(I32, &[]));
    let w = Primitive::from(WhileParams {
        cond_jaxpr: ClosedJaxpr::without_consts(cj),
        body_jaxpr: body.clone(),
        cond_nconsts: 0,
        body_nconsts: 0,
    });
    assert_eq!(ev1(&w, &[t(I32, &[])]), t(I32, &[]));
    assert!(ev(&w, &[t(F32, &[])]).is_err());
    // scan body (c:f32[], x:f32[2]) -> (c, y:f32[2])
    let mut sj = Jaxpr::new();
    let c = sj.new_var(t(F32, &[]));
    let x = sj.new_var(t(F32, &[2]));
    let y = sj.new_var(t(F32, &[2]));
    sj.invars = vec![c, x];
    sj.eqns = vec![eqn(
        Primitive::Elementwise(Elementwise::Unary(UnaryOp::Sin)),
        vec![x.into()],
        vec![y],
    )];
    sj.outvars = vec![c.into(), y.into()];
    let s = Primitive::from(ScanParams {
        jaxpr: ClosedJaxpr::without_consts(sj),
        length: 5,
        reverse: false,
        num_consts: 0,
        num_carry: 1,
        unroll: 1,
        linear: vec![],
        split_transpose: false,
    });
    assert_eq!(
        ev(&s, &[t(F32, &[]), t(F32, &[5, 2])]).unwrap(),
        vec![t(F32, &[]), t(F32, &[5, 2])]
    );
    let e = ev(&s, &[t(F32, &[]), t(F32, &[4, 2])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32[4,2]") && e.contains("length=5"), "{e}");
}

/// The seed's Catalyst for_loop:
/// `_:i64[] c:f64[a] = for_loop[body_nconsts=1 nimplicit=1] a a 0 10 1 0 b`
fn seed_for_loop() -> Jaxpr {
    let f64t = |d: Dim| Aval::Array(ShapedArray::new(DType::F64, vec![d]));
    let mut body = Jaxpr::new();
    let d = body.new_var(t(I64, &[]));
    let e = body.new_var(t(I64, &[]));
    let f = body.new_var(t(I64, &[]));
    let g = body.new_var(f64t(Dim::Var(Var(1))));
    let h = body.new_var(t(DType::F64, &[]));
    let i = body.new_var(f64t(Dim::Var(Var(1))));
    let jv = body.new_var(f64t(Dim::Var(Var(1))));
    body.invars = vec![d, e, f, g];
    body.eqns = vec![
        eqn(
            Primitive::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
                new_dtype: DType::F64,
                weak_type: false,
            })),
            vec![d.into()],
            vec![h],
        ),
        eqn(
            Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
                shape: vec![None],
                broadcast_dimensions: vec![].into(),
            })),
            vec![h.into(), e.into()],
            vec![i],
        ),
        eqn(
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)),
            vec![g.into(), i.into()],
            vec![jv],
        ),
    ];
    body.outvars = vec![e.into(), jv.into()];
    let mut m = Jaxpr::new();
    let a = m.new_var(t(I64, &[]));
    let b = m.new_var(f64t(Dim::Var(a)));
    let c = m.new_var(f64t(Dim::Var(a)));
    let k = m.new_var(f64t(Dim::Var(a)));
    m.invars = vec![a];
    let lit = |x: f64| Atom::Lit(Literal::new(x, I64));
    m.eqns = vec![
        eqn(
            Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
                shape: vec![None],
                broadcast_dimensions: vec![].into(),
            })),
            vec![Literal::new(1.0, DType::F64).into(), a.into()],
            vec![b],
        ),
        Eqn {
            primitive: Primitive::Control(Control::ForLoop(ForLoopParams {
                body_jaxpr: ClosedJaxpr::without_consts(body),
                body_nconsts: 1,
                nimplicit: 1,
                preserve_dimensions: true,
                apply_reverse_transform: false,
            })),
            inputs: vec![
                a.into(),
                a.into(),
                lit(0.0),
                lit(10.0),
                lit(1.0),
                lit(0.0),
                b.into(),
            ],
            outputs: vec![Binder::Drop(t(I64, &[])), Binder::Var(c)],
        },
        eqn(
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
            vec![b.into(), c.into()],
            vec![k],
        ),
    ];
    m.outvars = vec![k.into()];
    m
}

#[test]
fn for_loop_with_dynamic_dims_checks() {
    let m = seed_for_loop();
    check_jaxpr(&m).unwrap();
    // Declaring c:f64[3] instead of f64[a] is a type error naming both.
    let mut bad = m.clone();
    bad.vars[2] = t(DType::F64, &[3]);
    let e = check_jaxpr(&bad).unwrap_err().to_string();
    assert!(
        e.contains("equation 1 (for_loop)") && e.contains("f64[3]"),
        "{e}"
    );
    // A dimension variable that is not bound is rejected.
    let mut bad = m.clone();
    bad.invars.clear();
    assert!(check_jaxpr(&bad).is_err());
}

/// The checker enters every nested jaxpr `param_jaxprs` lists and names the
/// param an error is in.
#[test]
fn checker_names_the_param_of_a_bad_nested_jaxpr() {
    let good = unary_fn(UnaryOp::Sin, t(F32, &[3]));
    let mut bad = (*good.jaxpr).clone();
    bad.vars[1] = t(F32, &[4]);
    let bad = ClosedJaxpr::without_consts(bad);
    let caller = |p: Primitive, ins: Vec<Aval>| {
        let mut j = Jaxpr::new();
        let xs: Vec<Var> = ins.into_iter().map(|a| j.new_var(a)).collect();
        let y = j.new_var(t(F32, &[3]));
        j.invars = xs.clone();
        j.eqns = vec![eqn(p, xs.iter().map(|&x| x.into()).collect(), vec![y])];
        j.outvars = vec![y.into()];
        j
    };
    let cond = |b1: &ClosedJaxpr| {
        Primitive::Control(Control::Cond(CondParams {
            branches: vec![good.clone(), b1.clone()],
            branches_platforms: None,
        }))
    };
    let ins = vec![t(I32, &[]), t(F32, &[3])];
    check_jaxpr(&caller(cond(&good), ins.clone())).unwrap();
    let e = check_jaxpr(&caller(cond(&bad), ins))
        .unwrap_err()
        .to_string();
    assert!(e.contains("equation 0 (cond): branches: "), "{e}");
    assert!(e.contains("f32[4]"), "{e}");
    let jit = Primitive::from(JitParams {
        name: "f".into(),
        jaxpr: bad,
    });
    let e = check_jaxpr(&caller(jit, vec![t(F32, &[3])]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("equation 0 (jit): jaxpr: "), "{e}");
    let names: Vec<&str> = cond(&good).param_jaxprs().iter().map(|p| p.param).collect();
    assert_eq!(names, ["branches", "branches"]);
}

#[test]
fn jit_call_types() {
    let callee = unary_fn(UnaryOp::Exp, t(F32, &[2]));
    let p = Primitive::from(JitParams {
        name: "f".into(),
        jaxpr: callee,
    });
    assert_eq!(ev1(&p, &[t(F32, &[2])]), t(F32, &[2]));
    let e = ev(&p, &[t(F32, &[3])]).unwrap_err().to_string();
    assert!(e.contains("f32[2]") && e.contains("f32[3]"), "{e}");
    assert!(ev(&p, &[]).is_err());
}

fn rf(s: &[usize]) -> Aval {
    Aval::Ref(AbstractRef {
        inner: ShapedArray::of(F32, s),
        memory_space: MemorySpace::Default,
    })
}

#[test]
fn state_and_pallas() {
    let full = |n| IndexEntry::Slice {
        start: IndexValue::Static(0),
        size: n,
        stride: 1,
    };
    // ref[i, :] with a dynamic i at operand 1
    let ix = vec![Indexer {
        entries: vec![IndexEntry::Int(IndexValue::Dynamic(1)), full(4)],
    }];
    let g = Primitive::from(GetParams {
        indexers: ix.clone(),
    });
    assert_eq!(ev1(&g, &[rf(&[3, 4]), t(I32, &[])]), t(F32, &[4]));
    assert!(ev(&g, &[t(F32, &[3, 4]), t(I32, &[])]).is_err());
    let s = Primitive::from(SwapParams {
        indexers: ix.clone(),
    });
    assert_eq!(
        ev1(&s, &[rf(&[3, 4]), t(I32, &[]), t(F32, &[4])]),
        t(F32, &[4])
    );
    let e = ev(&s, &[rf(&[3, 4]), t(I32, &[]), t(F32, &[3])])
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32[4]") && e.contains("f32[3]"), "{e}");
    let a = Primitive::from(AddUpdateParams { indexers: vec![] });
    assert_eq!(ev(&a, &[rf(&[3]), t(F32, &[3])]).unwrap(), vec![]);
    // array index: ref[idx] with idx:i32[5] over f32[3,4] -> f32[5,4]
    let g2 = Primitive::from(GetParams {
        indexers: vec![Indexer {
            entries: vec![IndexEntry::Array(1), full(4)],
        }],
    });
    assert_eq!(ev1(&g2, &[rf(&[3, 4]), t(I32, &[5])]), t(F32, &[5, 4]));
    let ld = Primitive::from(LoadParams {
        indexers: vec![],
        has_mask: true,
        has_other: true,
    });
    assert_eq!(
        ev1(&ld, &[rf(&[8]), t(DType::Bool, &[8]), t(F32, &[])]),
        t(F32, &[8])
    );
    let st = Primitive::from(StoreParams {
        indexers: vec![],
        has_mask: true,
    });
    assert!(ev(&st, &[rf(&[8]), t(F32, &[8]), t(F32, &[8])]).is_err());
    // The old values, as JAX's `masked_swap`.
    assert_eq!(
        ev1(&st, &[rf(&[8]), t(F32, &[8]), t(DType::Bool, &[8])]),
        t(F32, &[8])
    );
    assert_eq!(
        ev1(&Primitive::from(ProgramIdParams { axis: 0 }), &[]),
        t(I32, &[])
    );
    let pc = Primitive::from(PallasCallParams {
        kernel: Arc::new(Jaxpr::new()),
        grid: vec![],
        block_mappings: vec![],
        out_avals: vec![ShapedArray::of(F32, &[8])],
        name: None,
        interpret: true,
        debug: false,
        input_output_aliases: vec![],
    });
    assert_eq!(ev1(&pc, &[t(F32, &[8])]), t(F32, &[8]));
}

/// `{ lambda ; a:f32[3] b:f32[3]. let c = add a b; d = sin c in (d,) }`
fn small() -> Jaxpr {
    let mut j = Jaxpr::new();
    let a = j.new_var(t(F32, &[3]));
    let b = j.new_var(t(F32, &[3]));
    let c = j.new_var(t(F32, &[3]));
    let d = j.new_var(t(F32, &[3]));
    j.invars = vec![a, b];
    j.eqns = vec![
        eqn(
            Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
            vec![a.into(), b.into()],
            vec![c],
        ),
        eqn(
            Primitive::Elementwise(Elementwise::Unary(UnaryOp::Sin)),
            vec![c.into()],
            vec![d],
        ),
    ];
    j.outvars = vec![d.into()];
    j
}

#[test]
fn checker_scoping_and_types() {
    check_jaxpr(&small()).unwrap();
    let mut j = small();
    j.vars[1] = t(F32, &[4]);
    let e = check_jaxpr(&j).unwrap_err().to_string();
    assert_eq!(
        e,
        "invalid jaxpr: equation 0 (add): add: operand types must match, got f32[3] and f32[4]"
    );
    let mut j = small();
    j.eqns.swap(0, 1);
    let e = check_jaxpr(&j).unwrap_err().to_string();
    assert!(
        e.contains("equation 0 (sin)") && e.contains("before it is bound"),
        "{e}"
    );
    let mut j = small();
    j.vars[3] = t(F32, &[2]);
    let e = check_jaxpr(&j).unwrap_err().to_string();
    assert!(
        e.contains("equation 1 (sin)") && e.contains("f32[2]") && e.contains("f32[3]"),
        "{e}"
    );
    let mut j = small();
    j.invars.push(Var(0));
    assert!(check_jaxpr(&j)
        .unwrap_err()
        .to_string()
        .contains("bound twice"));
    let mut j = small();
    j.outvars.push(Atom::Var(Var(99)));
    assert!(check_jaxpr(&j)
        .unwrap_err()
        .to_string()
        .contains("out of range"));
    // weak types are tolerated
    let mut j = small();
    j.vars[3] = Aval::Array(ShapedArray::of(F32, &[3]).with_weak(true));
    check_jaxpr(&j).unwrap();
}

#[test]
fn checker_nested_and_consts() {
    let mut m = Jaxpr::new();
    let x = m.new_var(t(F32, &[2]));
    let y = m.new_var(t(F32, &[2]));
    m.invars = vec![x];
    let callee = unary_fn(UnaryOp::Exp, t(F32, &[2]));
    m.eqns = vec![eqn(
        Primitive::Control(Control::Jit(JitParams {
            name: "f".into(),
            jaxpr: callee.clone(),
        })),
        vec![x.into()],
        vec![y],
    )];
    m.outvars = vec![y.into()];
    check_closed_jaxpr(&ClosedJaxpr::without_consts(m.clone())).unwrap();
    // a broken callee is reported through the caller
    let mut inner = (*callee.jaxpr).clone();
    inner.eqns[0].inputs[0] = Atom::Var(Var(1));
    let mut bad = m.clone();
    bad.eqns[0].primitive = Primitive::from(JitParams {
        name: "f".into(),
        jaxpr: ClosedJaxpr::without_consts(inner),
    });
    let e = check_jaxpr(&bad).unwrap_err().to_string();
    assert!(e.contains("equation 0 (jit)") && e.contains("jaxpr"), "{e}");
    // consts must match the constvars
    let mut cj = Jaxpr::new();
    let c = cj.new_var(t(F32, &[2]));
    cj.constvars = vec![c];
    cj.outvars = vec![c.into()];
    let ok = ClosedJaxpr::new(cj.clone(), vec![crate::array::HostArray::zeros(F32, &[2])]);
    check_closed_jaxpr(&ok).unwrap();
    let bad = ClosedJaxpr::new(cj.clone(), vec![crate::array::HostArray::zeros(F32, &[3])]);
    assert!(check_closed_jaxpr(&bad).is_err());
    assert!(check_closed_jaxpr(&ClosedJaxpr::without_consts(cj)).is_err());
}

// ---- proptest: random well-typed jaxprs and corruptions ----------------

/// A recipe for one random equation over the current variables.
#[derive(Clone, Debug)]
enum Step {
    Unary(usize),
    Binary(usize, usize),
    SumAxis0(usize),
    Jit(usize),
}

fn build(shapes: &[Vec<usize>], steps: &[Step]) -> Jaxpr {
    let mut j = Jaxpr::new();
    for s in shapes {
        let v = j.new_var(t(F32, s));
        j.invars.push(v);
    }
    let mut live: Vec<Var> = j.invars.clone();
    for st in steps {
        let pick = |i: usize| live[i % live.len()];
        let (p, ins, out_ty) = match st {
            Step::Unary(i) => {
                let x = pick(*i);
                (
                    Primitive::Elementwise(Elementwise::Unary(UnaryOp::Tanh)),
                    vec![x],
                    j.aval(x).clone(),
                )
            }
            Step::Binary(i, k) => {
                let x = pick(*i);
                // find a partner of the same type, else use x twice
                let y = live
                    .iter()
                    .cycle()
                    .skip(*k % live.len())
                    .take(live.len())
                    .find(|v| j.aval(**v) == j.aval(x))
                    .copied()
                    .unwrap_or(x);
                (
                    Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)),
                    vec![x, y],
                    j.aval(x).clone(),
                )
            }
            Step::SumAxis0(i) => {
                let x = pick(*i);
                let s = j.aval(x).shape().to_vec();
                if s.is_empty() {
                    (
                        Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg)),
                        vec![x],
                        j.aval(x).clone(),
                    )
                } else {
                    let out = Aval::Array(ShapedArray::new(F32, s[1..].to_vec()));
                    (
                        Primitive::Reduction(Reduction::Reduce(ReduceParams::new(
                            ReduceOp::Sum,
                            vec![0],
                        ))),
                        vec![x],
                        out,
                    )
                }
            }
            Step::Jit(i) => {
                let x = pick(*i);
                let ty = j.aval(x).clone();
                let callee = unary_fn(UnaryOp::Exp, ty.clone());
                (
                    Primitive::Control(Control::Jit(JitParams {
                        name: "g".into(),
                        jaxpr: callee,
                    })),
                    vec![x],
                    ty,
                )
            }
        };
        let o = j.new_var(out_ty);
        j.eqns
            .push(eqn(p, ins.into_iter().map(Atom::Var).collect(), vec![o]));
        live.push(o);
    }
    j.outvars = vec![Atom::Var(*live.last().unwrap_or(&Var(0)))];
    j
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<usize>().prop_map(Step::Unary),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Binary(a, b)),
        any::<usize>().prop_map(Step::SumAxis0),
        any::<usize>().prop_map(Step::Jit),
    ]
}

fn arb_case() -> impl Strategy<Value = (Vec<Vec<usize>>, Vec<Step>)> {
    (
        prop::collection::vec(prop::collection::vec(1usize..4, 0..3), 1..4),
        prop::collection::vec(arb_step(), 1..8),
    )
}

/// Ways to break a jaxpr; each one must make the checker fail.
#[derive(Clone, Debug)]
enum Corruption {
    OutOfRangeInput(usize),
    UnboundInput(usize),
    SwapBinderType(usize),
    DropInput(usize),
    ExtraInput(usize),
    BindTwice(usize),
    CalleeArity(usize),
}

fn corrupt(j: &mut Jaxpr, c: &Corruption) -> bool {
    let n = j.eqns.len();
    match c {
        Corruption::OutOfRangeInput(i) => {
            j.eqns[i % n].inputs[0] = Atom::Var(Var(j.vars.len() as u32 + 5));
        }
        Corruption::UnboundInput(i) => {
            // a variable in the table that nothing binds
            let v = j.new_var(t(F32, &[]));
            j.eqns[i % n].inputs[0] = Atom::Var(v);
        }
        Corruption::SwapBinderType(i) => {
            let Binder::Var(o) = j.eqns[i % n].outputs[0] else {
                return false;
            };
            j.vars[o.index()] = t(DType::I8, &[7, 7, 7]);
        }
        Corruption::DropInput(i) => {
            j.eqns[i % n].inputs.clear();
        }
        Corruption::ExtraInput(i) => {
            let first = j.eqns[i % n].inputs[0];
            j.eqns[i % n].inputs.extend([first, first]);
        }
        Corruption::BindTwice(i) => {
            let e = &mut j.eqns[i % n];
            e.outputs[0] = Binder::Var(match e.inputs[0] {
                Atom::Var(v) => v,
                Atom::Lit(_) => return false,
            });
        }
        Corruption::CalleeArity(i) => {
            let e = &mut j.eqns[i % n];
            let Primitive::Control(Control::Jit(JitParams { jaxpr, .. })) = &mut e.primitive else {
                return false;
            };
            let mut inner = (*jaxpr.jaxpr).clone();
            let extra = inner.new_var(t(F32, &[]));
            inner.invars.push(extra);
            *jaxpr = ClosedJaxpr::without_consts(inner);
        }
    }
    true
}

fn arb_corruption() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        any::<usize>().prop_map(Corruption::OutOfRangeInput),
        any::<usize>().prop_map(Corruption::UnboundInput),
        any::<usize>().prop_map(Corruption::SwapBinderType),
        any::<usize>().prop_map(Corruption::DropInput),
        any::<usize>().prop_map(Corruption::ExtraInput),
        any::<usize>().prop_map(Corruption::BindTwice),
        any::<usize>().prop_map(Corruption::CalleeArity),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn well_typed_random_jaxprs_pass((shapes, steps) in arb_case()) {
        let j = build(&shapes, &steps);
        prop_assert!(check_jaxpr(&j).is_ok(), "{:?}", check_jaxpr(&j));
    }

    #[test]
    fn corrupted_jaxprs_fail((shapes, steps) in arb_case(), c in arb_corruption()) {
        let mut j = build(&shapes, &steps);
        if corrupt(&mut j, &c) {
            prop_assert!(check_jaxpr(&j).is_err(), "{c:?} accepted");
        }
    }

    #[test]
    fn arbitrary_var_soup_never_panics(
        nvars in 0usize..6,
        ins in prop::collection::vec(0u32..8, 0..4),
        outs in prop::collection::vec(0u32..8, 0..3),
        invars in prop::collection::vec(0u32..8, 0..3),
        which in 0usize..5,
    ) {
        let mut j = Jaxpr::new();
        for k in 0..nvars {
            j.new_var(t(F32, &vec![2; k % 3]));
        }
        j.invars = invars.into_iter().map(Var).collect();
        let p = match which {
            0 => Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
            1 => Primitive::Elementwise(Elementwise::Unary(UnaryOp::Sin)),
            2 => Primitive::Reduction(Reduction::Reduce(ReduceParams::new(ReduceOp::Max, vec![1]))),
            3 => Primitive::Structural(Structural::Transpose(TransposeParams { permutation: vec![1, 0] })),
            _ => Primitive::Control(Control::Jit(JitParams { name: "h".into(), jaxpr: unary_fn(UnaryOp::Exp, t(F32, &[2])) })),
        };
        j.eqns.push(Eqn {
            primitive: p,
            inputs: ins.into_iter().map(|v| Atom::Var(Var(v))).collect(),
            outputs: outs.iter().map(|&v| Binder::Var(Var(v))).collect(),
        });
        j.outvars = outs.into_iter().map(|v| Atom::Var(Var(v))).collect();
        let _ = check_jaxpr(&j);
    }
}
