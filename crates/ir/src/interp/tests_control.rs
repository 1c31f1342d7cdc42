//! Tests of control flow and calls: scan, while, cond, jit, for_loop,
//! custom calls, remat, and malformed jaxprs.

use super::testkit::*;
use super::{eval_closed_jaxpr, eval_jaxpr, Value};
use crate::aval::{Dim, ShapedArray};
use crate::dtype::DType::{self, F32, F64, I32, I64};
use crate::error::IrError;
use crate::jaxpr::{Atom, ClosedJaxpr, Jaxpr, Var};
use crate::primitive::{BinaryOp, Primitive, UnaryOp};
use crate::primitive::{
    BroadcastInDimParams, CondParams, Control, ConvertElementTypeParams, CustomJvpCallParams,
    CustomVjpCallParams, Elementwise, ForLoopParams, JitParams, RematParams, ScanParams,
    Structural, WhileParams,
};

fn scan_prim(
    body: Jaxpr,
    length: usize,
    reverse: bool,
    num_consts: usize,
    num_carry: usize,
) -> Primitive {
    Primitive::Control(Control::Scan(ScanParams {
        jaxpr: closed(body),
        length,
        reverse,
        num_consts,
        num_carry,
        unroll: 1,
        linear: Vec::new(),
        split_transpose: false,
    }))
}

/// A scan whose body shifts: `(k; c; x) -> (x; c, k)`.
fn shift_scan(reverse: bool) -> Jaxpr {
    let mut body = Builder::new();
    let k = body.arg(sa(I32, &[2]));
    let c = body.arg(sa(F32, &[3]));
    let x = body.arg(sa(F32, &[3]));
    let body = body.finish(vec![x.into(), c.into(), k.into()]);
    let mut b = Builder::new();
    let k = b.arg(sa(I32, &[2]));
    let c = b.arg(sa(F32, &[3]));
    let xs = b.arg(sa(F32, &[4, 3]));
    let outs = b.eqn(
        scan_prim(body, 4, reverse, 1, 1),
        vec![k.into(), c.into(), xs.into()],
        vec![sa(F32, &[3]), sa(F32, &[4, 3]), sa(I32, &[4, 2])],
    );
    b.finish(outs.into_iter().map(Atom::Var).collect())
}

#[test]
fn scan_consts_carry_xs_forward_and_reverse() {
    let mut rng = Rng::new(1);
    let init = rng.f32s(3, -2.0, 2.0);
    let xs = rng.f32s(12, -2.0, 2.0);
    let k = vec![7.0, -3.0];
    for reverse in [false, true] {
        let j = shift_scan(reverse);
        let outs = eval_closed_jaxpr(
            &closed(j),
            &[
                arr(I32, &[2], &k),
                arr(F32, &[3], &init),
                arr(F32, &[4, 3], &xs),
            ],
        )
        .unwrap();
        let row = |i: usize| xs[3 * i..3 * i + 3].to_vec();
        // Forward: ys[i] = carry before step i; reverse visits 3, 2, 1, 0.
        let (last, ys): (Vec<f64>, Vec<f64>) = if reverse {
            (row(0), [row(1), row(2), row(3), init.clone()].concat())
        } else {
            (row(3), [init.clone(), row(0), row(1), row(2)].concat())
        };
        assert_eq!(outs[0].to_f64_vec(), last, "reverse={reverse}");
        assert_eq!(outs[1].shape(), &[4, 3]);
        assert_eq!(outs[1].to_f64_vec(), ys, "reverse={reverse}");
        assert_eq!(outs[2].shape(), &[4, 2]);
        assert_eq!(
            outs[2].to_f64_vec(),
            [k.clone(), k.clone(), k.clone(), k.clone()].concat()
        );
    }
}

/// Scan computing `c += s * x`, emitting the running sums.
fn cumsum_scan(reverse: bool) -> Jaxpr {
    let mut body = Builder::new();
    let s = body.arg(sa(F32, &[3]));
    let c = body.arg(sa(F32, &[3]));
    let x = body.arg(sa(F32, &[3]));
    let t = body.eqn(
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)),
        vec![s.into(), x.into()],
        vec![sa(F32, &[3])],
    )[0];
    let c2 = body.eqn(
        Primitive::Elementwise(Elementwise::Binary(BinaryOp::Add)),
        vec![c.into(), t.into()],
        vec![sa(F32, &[3])],
    )[0];
    let body = body.finish(vec![c2.into(), c2.into()]);
    let mut b = Builder::new();
    let s = b.arg(sa(F32, &[3]));
    let c = b.arg(sa(F32, &[3]));
    let xs = b.arg(sa(F32, &[5, 3]));
    let outs = b.eqn(
        scan_prim(body, 5, reverse, 1, 1),
        vec![s.into(), c.into(), xs.into()],
        vec![sa(F32, &[3]), sa(F32, &[5, 3])],
    );
    b.finish(outs.into_iter().map(Atom::Var).collect())
}

#[test]
fn scan_cumulative_sum_matches_loop() {
    let mut rng = Rng::new(2);
    let s = rng.f32s(3, -1.5, 1.5);
    let init = rng.f32s(3, -2.0, 2.0);
    let xs = rng.f32s(15, -2.0, 2.0);
    for reverse in [false, true] {
        let outs = eval_closed_jaxpr(
            &closed(cumsum_scan(reverse)),
            &[
                arr(F32, &[3], &s),
                arr(F32, &[3], &init),
                arr(F32, &[5, 3], &xs),
            ],
        )
        .unwrap();
        let mut c: Vec<f32> = init.iter().map(|&v| v as f32).collect();
        let mut ys = vec![0f64; 15];
        let order: Vec<usize> = if reverse {
            (0..5).rev().collect()
        } else {
            (0..5).collect()
        };
        for i in order {
            for d in 0..3 {
                c[d] += s[d] as f32 * xs[3 * i + d] as f32;
                ys[3 * i + d] = c[d] as f64;
            }
        }
        let c: Vec<f64> = c.iter().map(|&v| v as f64).collect();
        assert_eq!(outs[0].to_f64_vec(), c, "reverse={reverse}");
        assert_eq!(outs[1].to_f64_vec(), ys, "reverse={reverse}");
    }
}

#[test]
fn scan_length_zero_gives_empty_ys() {
    let mut body = Builder::new();
    let c = body.arg(sa(F32, &[2]));
    let body = body.finish(vec![c.into(), c.into()]);
    let mut b = Builder::new();
    let c = b.arg(sa(F32, &[2]));
    let outs = b.eqn(
        scan_prim(body, 0, false, 0, 1),
        vec![c.into()],
        vec![sa(F32, &[2]), sa(F32, &[0, 2])],
    );
    let j = b.finish(outs.into_iter().map(Atom::Var).collect());
    let outs = eval_closed_jaxpr(&closed(j), &[arr(F32, &[2], &[1.5, -2.0])]).unwrap();
    assert_eq!(outs[0].to_f64_vec(), vec![1.5, -2.0]);
    assert_eq!(outs[1].shape(), &[0, 2]);
}

fn bin(b: &mut Builder, op: BinaryOp, x: Atom, y: Atom, out: crate::aval::Aval) -> Var {
    b.eqn(
        Primitive::Elementwise(Elementwise::Binary(op)),
        vec![x, y],
        vec![out],
    )[0]
}

/// The corpus case `while_newton_sqrt`, built by hand.
fn newton_sqrt() -> Jaxpr {
    let f = || sa(F32, &[]);
    let mut body = Builder::new();
    let d = body.arg(f());
    let e = body.arg(f());
    let fi = body.arg(sa(I32, &[]));
    let g = bin(&mut body, BinaryOp::Div, d.into(), e.into(), f());
    let h = bin(&mut body, BinaryOp::Add, e.into(), g.into(), f());
    let i = bin(&mut body, BinaryOp::Mul, lit(0.5, F32), h.into(), f());
    let jj = bin(
        &mut body,
        BinaryOp::Add,
        fi.into(),
        lit(1.0, I32),
        sa(I32, &[]),
    );
    let body = body.finish(vec![i.into(), jj.into()]);
    let mut cond = Builder::new();
    let k = cond.arg(f());
    let l = cond.arg(f());
    let m = cond.arg(sa(I32, &[]));
    let n = bin(
        &mut cond,
        BinaryOp::Lt,
        m.into(),
        lit(30.0, I32),
        sa(DType::Bool, &[]),
    );
    let o = bin(&mut cond, BinaryOp::Mul, l.into(), l.into(), f());
    let p = bin(&mut cond, BinaryOp::Sub, o.into(), k.into(), f());
    let q = cond.eqn(
        Primitive::Elementwise(Elementwise::Unary(UnaryOp::Abs)),
        vec![p.into()],
        vec![f()],
    )[0];
    let r = bin(
        &mut cond,
        BinaryOp::Gt,
        q.into(),
        lit(9.999999747378752e-05, F32),
        sa(DType::Bool, &[]),
    );
    let s = cond.eqn(
        Primitive::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
            new_dtype: DType::Bool,
            weak_type: false,
        })),
        vec![n.into()],
        vec![sa(DType::Bool, &[])],
    )[0];
    let t = bin(
        &mut cond,
        BinaryOp::And,
        s.into(),
        r.into(),
        sa(DType::Bool, &[]),
    );
    let cond = cond.finish(vec![t.into()]);
    let mut b = Builder::new();
    let a = b.arg(f());
    let outs = b.eqn(
        Primitive::Control(Control::While(WhileParams {
            cond_jaxpr: closed(cond),
            body_jaxpr: closed(body),
            cond_nconsts: 1,
            body_nconsts: 1,
        })),
        vec![a.into(), a.into(), a.into(), lit(0.0, I32)],
        vec![f(), sa(I32, &[])],
    );
    b.finish(outs.into_iter().map(Atom::Var).collect())
}

#[test]
fn while_newton_sqrt_matches_corpus_and_f64() {
    let j = closed(newton_sqrt());
    // The corpus case: JAX's own output.
    let outs = eval_closed_jaxpr(&j, &[arr(F32, &[], &[1.7084553241729736])]).unwrap();
    assert_eq!(outs[0].to_f64_vec(), vec![1.3070791959762573]);
    assert_eq!(outs[1].to_f64_vec(), vec![3.0]);
    // More inputs against an f64 square root.
    let mut rng = Rng::new(3);
    for x in rng.f32s(6, 0.5, 9.0) {
        let outs = eval_closed_jaxpr(&j, &[arr(F32, &[], &[x])]).unwrap();
        let got = outs[0].to_f64_vec()[0];
        assert!((got - x.sqrt()).abs() < 1e-4, "sqrt({x}) = {got}");
        assert!(outs[1].to_f64_vec()[0] < 30.0);
    }
}

fn const_branch(v: f64) -> ClosedJaxpr {
    let mut b = Builder::new();
    let x = b.arg(sa(F32, &[2]));
    closed(b.finish(vec![lit(v, F32), x.into()]))
}

#[test]
fn cond_clamps_the_index() {
    let branches = vec![const_branch(10.0), const_branch(20.0), const_branch(30.0)];
    let mut b = Builder::new();
    let i = b.arg(sa(I32, &[]));
    let x = b.arg(sa(F32, &[2]));
    let outs = b.eqn(
        Primitive::Control(Control::Cond(CondParams {
            branches,
            branches_platforms: None,
        })),
        vec![i.into(), x.into()],
        vec![sa(F32, &[]), sa(F32, &[2])],
    );
    let j = closed(b.finish(outs.into_iter().map(Atom::Var).collect()));
    let x = arr(F32, &[2], &[0.25, -4.5]);
    for (idx, want) in [
        (-5.0, 10.0),
        (0.0, 10.0),
        (1.0, 20.0),
        (2.0, 30.0),
        (7.0, 30.0),
    ] {
        let outs = eval_closed_jaxpr(&j, &[arr(I32, &[], &[idx]), x.clone()]).unwrap();
        assert_eq!(outs[0].to_f64_vec(), vec![want], "index {idx}");
        assert_eq!(outs[1], x);
    }
}

#[test]
fn nested_jit_binds_consts_and_args() {
    // inner: sin(y); middle (const k): inner(y) * k and k itself.
    let mut inner = Builder::new();
    let y = inner.arg(sa(F32, &[4]));
    let s = inner.eqn(
        Primitive::Elementwise(Elementwise::Unary(UnaryOp::Sin)),
        vec![y.into()],
        vec![sa(F32, &[4])],
    )[0];
    let inner = closed(inner.finish(vec![s.into()]));
    let mut mid = Builder::new();
    let k = mid.constvar(sa(F32, &[4]));
    let y = mid.arg(sa(F32, &[4]));
    let z = mid.eqn(
        Primitive::Control(Control::Jit(JitParams {
            name: "inner".into(),
            jaxpr: inner,
        })),
        vec![y.into()],
        vec![sa(F32, &[4])],
    )[0];
    let w = bin(&mut mid, BinaryOp::Mul, z.into(), k.into(), sa(F32, &[4]));
    let mut rng = Rng::new(4);
    let kv = rng.f32s(4, -2.0, 2.0);
    let mid = ClosedJaxpr::new(
        mid.finish(vec![w.into(), k.into()]),
        vec![arr(F32, &[4], &kv)],
    );
    let mut b = Builder::new();
    let x = b.arg(sa(F32, &[4]));
    let outs = b.eqn(
        Primitive::Control(Control::Jit(JitParams {
            name: "mid".into(),
            jaxpr: mid,
        })),
        vec![x.into()],
        vec![sa(F32, &[4]), sa(F32, &[4])],
    );
    let j = closed(b.finish(outs.into_iter().map(Atom::Var).collect()));
    let xv = rng.f32s(4, -3.0, 3.0);
    let outs = eval_closed_jaxpr(&j, &[arr(F32, &[4], &xv)]).unwrap();
    assert_eq!(outs[1].to_f64_vec(), kv);
    for i in 0..4 {
        let want = ((xv[i].sin() as f32) * kv[i] as f32) as f64;
        let got = outs[0].to_f64_vec()[i];
        assert!(
            (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{got} vs {want}"
        );
    }
}

fn for_prim(body: Jaxpr, body_nconsts: usize, nimplicit: usize, reverse: bool) -> Primitive {
    Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr: closed(body),
        body_nconsts,
        nimplicit,
        preserve_dimensions: true,
        apply_reverse_transform: reverse,
    }))
}

/// The first example of the Catalyst seed: `a * sz` ten times, plus `b`.
#[test]
fn for_loop_seed_example() {
    let mut body = Builder::new();
    let d = body.arg(sa(I64, &[]));
    let e = body.arg(sa(I64, &[]));
    let _f = body.arg(sa(I64, &[]));
    let ge = || crate::aval::Aval::Array(ShapedArray::new(F64, vec![Dim::Var(e)]));
    let g = body.arg(ge());
    let h = body.eqn(
        Primitive::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
            new_dtype: F64,
            weak_type: false,
        })),
        vec![d.into()],
        vec![sa(F64, &[])],
    )[0];
    let i = body.eqn(
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![None],
            broadcast_dimensions: vec![].into(),
        })),
        vec![h.into(), e.into()],
        vec![ge()],
    )[0];
    let jv = bin(&mut body, BinaryOp::Mul, g.into(), i.into(), ge());
    let body = body.finish(vec![e.into(), jv.into()]);
    let mut b = Builder::new();
    let a = b.arg(sa(I64, &[]));
    let fa = || crate::aval::Aval::Array(ShapedArray::new(F64, vec![Dim::Var(a)]));
    let bv = b.arg(fa());
    let outs = b.eqn(
        for_prim(body, 1, 1, false),
        vec![
            a.into(),
            a.into(),
            lit(0.0, I64),
            lit(10.0, I64),
            lit(1.0, I64),
            lit(0.0, I64),
            bv.into(),
        ],
        vec![sa(I64, &[]), fa()],
    );
    let k = bin(&mut b, BinaryOp::Add, bv.into(), outs[1].into(), fa());
    let j = b.finish(vec![k.into(), outs[0].into()]);
    let mut rng = Rng::new(5);
    let xs = rng.f32s(3, -1.0, 1.0);
    let outs = eval_jaxpr(&j, &[], &[val(I64, &[], &[3.0]), val(F64, &[3], &xs)]).unwrap();
    let got = unwrap(&outs[0]).to_f64_vec();
    for (g, x) in got.iter().zip(&xs) {
        let want = x + x * 3f64.powi(10);
        assert!((g - want).abs() <= 1e-12 * want.abs(), "{g} vs {want}");
    }
    assert_eq!(unwrap(&outs[1]).to_f64_vec(), vec![3.0]);
}

/// `for_loop` operand order and trip counts, without numeric ops: the body
/// returns `(implicit, index, const)`, so the results are the implicit, the
/// last index, and the const.
#[test]
fn for_loop_operand_order_and_bounds() {
    let mut body = Builder::new();
    let d = body.arg(sa(F32, &[2]));
    let e = body.arg(sa(I64, &[]));
    let idx = body.arg(sa(I64, &[]));
    let _c = body.arg(sa(I64, &[]));
    let _g = body.arg(sa(F32, &[2]));
    let body = body.finish(vec![e.into(), idx.into(), d.into()]);
    let cases = [
        (false, 2, 11, 3, 8.0, true),
        (false, 5, 5, 1, -1.0, false),
        (false, 7, 3, 1, -1.0, false),
        (true, 10, 0, -3, 1.0, true),
        (true, 0, 10, 4, 8.0, true),
        (true, 0, -10, 4, -1.0, false),
    ];
    for (reverse, lo, hi, step, last, ran) in cases {
        let mut b = Builder::new();
        let k = b.arg(sa(F32, &[2]));
        let outs = b.eqn(
            for_prim(body.clone(), 1, 1, reverse),
            vec![
                k.into(),
                lit(42.0, I64),
                lit(lo as f64, I64),
                lit(hi as f64, I64),
                lit(step as f64, I64),
                lit(lo as f64, I64),
                lit(-1.0, I64),
                lit(0.0, F32),
            ],
            vec![sa(I64, &[]), sa(I64, &[]), sa(F32, &[2])],
        );
        // The init carry `0.0:f32[]` is the wrong type for the loop carry
        // f32[2]; only zero-trip loops return it, so give a matching one.
        let j = b.finish(outs.iter().map(|v| Atom::Var(*v)).collect());
        let mut j = j;
        let init = j.new_var(sa(F32, &[2]));
        j.invars.push(init);
        j.eqns[0].inputs[7] = init.into();
        let kv = arr(F32, &[2], &[1.25, -0.5]);
        let iv = arr(F32, &[2], &[9.0, 8.0]);
        let outs = eval_jaxpr(
            &j,
            &[],
            &[Value::Array(kv.clone()), Value::Array(iv.clone())],
        )
        .unwrap_or_else(|e| panic!("{lo} {hi} {step}: {e}"));
        assert_eq!(unwrap(&outs[0]).to_f64_vec(), vec![42.0]);
        assert_eq!(
            unwrap(&outs[1]).to_f64_vec(),
            vec![last],
            "{lo} {hi} {step} {reverse}"
        );
        assert_eq!(unwrap(&outs[2]), if ran { kv } else { iv });
    }
}

#[test]
fn for_loop_sums_indices() {
    let mut body = Builder::new();
    let idx = body.arg(sa(I64, &[]));
    let s = body.arg(sa(I64, &[]));
    let s2 = bin(&mut body, BinaryOp::Add, s.into(), idx.into(), sa(I64, &[]));
    let body = body.finish(vec![s2.into()]);
    let mut b = Builder::new();
    let lo = b.arg(sa(I64, &[]));
    let hi = b.arg(sa(I64, &[]));
    let out = b.eqn(
        for_prim(body, 0, 0, false),
        vec![
            lo.into(),
            hi.into(),
            lit(3.0, I64),
            lo.into(),
            lit(100.0, I64),
        ],
        vec![sa(I64, &[])],
    )[0];
    let j = b.finish(vec![out.into()]);
    let outs = eval_jaxpr(&j, &[], &[val(I64, &[], &[-4.0]), val(I64, &[], &[9.0])]).unwrap();
    // -4 + -1 + 2 + 5 + 8 = 10
    assert_eq!(unwrap(&outs[0]).to_f64_vec(), vec![110.0]);
}

#[test]
fn custom_calls_and_remat_run_their_jaxprs() {
    let mut body = Builder::new();
    let k = body.arg(sa(F32, &[]));
    let x = body.arg(sa(F32, &[3]));
    let body = body.finish(vec![x.into(), k.into()]);
    let prims = vec![
        Primitive::from(CustomJvpCallParams {
            name: "f".into(),
            call_jaxpr: closed(body.clone()),
            jvp: "f_jvp".into(),
            num_consts: 1,
            symbolic_zeros: false,
        }),
        Primitive::Control(Control::CustomVjpCall(CustomVjpCallParams {
            name: "f".into(),
            call_jaxpr: closed(body.clone()),
            fwd: "fwd".into(),
            bwd: "bwd".into(),
            num_consts: 0,
            symbolic_zeros: false,
        })),
        Primitive::Control(Control::Remat(RematParams {
            jaxpr: body.into(),
            prevent_cse: true,
            differentiated: false,
            policy: None,
        })),
    ];
    for p in prims {
        let mut b = Builder::new();
        let k = b.arg(sa(F32, &[]));
        let x = b.arg(sa(F32, &[3]));
        let outs = b.eqn(
            p,
            vec![k.into(), x.into()],
            vec![sa(F32, &[3]), sa(F32, &[])],
        );
        let j = closed(b.finish(outs.into_iter().map(Atom::Var).collect()));
        let outs = eval_closed_jaxpr(
            &j,
            &[arr(F32, &[], &[2.5]), arr(F32, &[3], &[1.0, 2.0, -3.0])],
        )
        .unwrap();
        assert_eq!(outs[0].to_f64_vec(), vec![1.0, 2.0, -3.0]);
        assert_eq!(outs[1].to_f64_vec(), vec![2.5]);
    }
}

#[test]
fn malformed_jaxprs_give_errors() {
    // Wrong argument count and type.
    let mut b = Builder::new();
    let x = b.arg(sa(F32, &[2]));
    let j = b.finish(vec![x.into()]);
    assert!(eval_jaxpr(&j, &[], &[]).is_err());
    assert!(eval_jaxpr(&j, &[], &[val(I32, &[2], &[1.0, 2.0])]).is_err());
    assert!(eval_jaxpr(&j, &[], &[val(F32, &[3], &[1.0, 2.0, 3.0])]).is_err());
    assert!(eval_jaxpr(&j, &[], &[Value::new_ref(arr(F32, &[2], &[1.0, 2.0]))]).is_err());
    // A variable read before it is bound, and one outside the table.
    let mut j2 = j.clone();
    let y = j2.new_var(sa(F32, &[2]));
    j2.outvars = vec![y.into()];
    assert!(matches!(
        eval_jaxpr(&j2, &[], &[val(F32, &[2], &[1.0, 2.0])]),
        Err(IrError::Invalid(_))
    ));
    j2.outvars = vec![Atom::Var(Var(99))];
    assert!(eval_jaxpr(&j2, &[], &[val(F32, &[2], &[1.0, 2.0])]).is_err());
    // Control flow with wrong operand counts.
    let mut b = Builder::new();
    let x = b.arg(sa(F32, &[3]));
    let outs = b.eqn(
        Primitive::Control(Control::Cond(CondParams {
            branches: vec![],
            branches_platforms: None,
        })),
        vec![lit(0.0, I32), x.into()],
        vec![sa(F32, &[3])],
    );
    let j3 = b.finish(vec![outs[0].into()]);
    assert!(eval_jaxpr(&j3, &[], &[val(F32, &[3], &[1.0, 2.0, 3.0])]).is_err());
    let bad_scan = shift_scan(false);
    let r = eval_closed_jaxpr(
        &closed(bad_scan),
        &[
            arr(I32, &[2], &[1.0, 2.0]),
            arr(F32, &[3], &[0.0; 3]),
            arr(F32, &[5, 3], &[0.0; 15]),
        ],
    );
    assert!(r.is_err());
    let mut b = Builder::new();
    let outs = b.eqn(
        for_prim(Jaxpr::new(), 2, 0, false),
        vec![lit(0.0, I64)],
        vec![],
    );
    let _ = outs;
    assert!(eval_jaxpr(&b.finish(vec![]), &[], &[]).is_err());
}

#[test]
fn dimension_variables_are_checked() {
    let mut b = Builder::new();
    let a = b.arg(sa(I64, &[]));
    let x = b.arg(crate::aval::Aval::Array(ShapedArray::new(
        F64,
        vec![Dim::Var(a)],
    )));
    let j = b.finish(vec![x.into()]);
    let xs = [0.5, 1.5, -2.0];
    let ok = eval_jaxpr(&j, &[], &[val(I64, &[], &[3.0]), val(F64, &[3], &xs)]).unwrap();
    assert_eq!(unwrap(&ok[0]).to_f64_vec(), xs.to_vec());
    assert!(eval_jaxpr(&j, &[], &[val(I64, &[], &[4.0]), val(F64, &[3], &xs)]).is_err());
}
