//! `checkpoint(f).policy(p)` (`jax.checkpoint(f, policy=...)`): on random
//! f64 inputs every policy gives the gradient of the function without
//! checkpoint (also under `vmap` and `jit`), and the grad jaxprs show what
//! each policy saves: the differentiated `remat2`'s body recomputes only
//! the unsaved forward values, with the counts JAX 0.10.2 shows for the
//! same function.

use jaxon_ir::parse::parse_closed_jaxpr;
use jaxon_ir::primitive::{Control, Linalg, Marker, RematParams, UnaryOp};
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{Atom, Binder, Eqn, Jaxpr, Primitive};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::numpy::{self, All};
use jaxon_trace::{jit, lax, make_jaxpr, Array};
use jaxon_transforms::checkpoint_policies::{
    checkpoint_dots, dots_saveable, dots_with_no_batch_dims_saveable, everything_saveable,
    nothing_saveable, save_any_names_but_these, save_anything_except_these_names,
    save_from_both_policies, save_only_these_names, Policy,
};
use jaxon_transforms::{checkpoint, grad, remat, vmap, Checkpoint};

fn rand(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn arr(shape: &[usize], seed: u64) -> Array {
    let n = shape.iter().product();
    Array::from_vec(rand(n, seed, -1.0, 1.0), shape)
}

fn close(a: &Array, b: &Array, tol: f64) {
    let (a, b) = (a.to_vec::<f64>(), b.to_vec::<f64>());
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "[{i}] {x} vs {y}");
    }
}

type Args = (Array, Array, Array, Array);

/// An MLP-like body: two named layers (`dot_general` + `tanh`) and a
/// batched `dot_general` (batch dims: what `dots_with_no_batch_dims`
/// does not save). `x: [4, 3]`, `w1: [3, 5]`, `w2: [5, 2]`, `b: [2, 5, 5]`.
fn mlp((x, w1, w2, b): Args) -> Array {
    let h = ok_or_raise(lax::checkpoint_name(
        &ok_or_raise(numpy::matmul(&x, &w1)).tanh(),
        "h",
    ));
    let z = ok_or_raise(lax::checkpoint_name(
        &ok_or_raise(numpy::matmul(&h, &w2)),
        "z",
    ));
    // [2, 4, 5] @ [2, 5, 5]: batch dim 0.
    let hb = ok_or_raise(numpy::stack(&[h.clone(), &h * &h], 0));
    let u = ok_or_raise(numpy::matmul(&hb, &b)).sin();
    z.tanh().sum(All) + (&u * &u).sum(All)
}

fn policies() -> Vec<(&'static str, Option<Policy>)> {
    vec![
        ("none", None),
        ("everything_saveable", Some(everything_saveable())),
        ("nothing_saveable", Some(nothing_saveable())),
        ("dots_saveable", Some(dots_saveable())),
        ("checkpoint_dots", Some(checkpoint_dots())),
        (
            "dots_with_no_batch_dims_saveable",
            Some(dots_with_no_batch_dims_saveable()),
        ),
        ("save_only_these_names", Some(save_only_these_names(["h"]))),
        (
            "save_only_these_names(h, z)",
            Some(save_only_these_names(["h", "z"])),
        ),
        (
            "save_any_names_but_these",
            Some(save_any_names_but_these(["z"])),
        ),
        (
            "save_anything_except_these_names",
            Some(save_anything_except_these_names(["h"])),
        ),
        (
            "save_from_both_policies",
            Some(save_from_both_policies(
                dots_with_no_batch_dims_saveable(),
                save_only_these_names(["z"]),
            )),
        ),
    ]
}

fn with(p: &Option<Policy>) -> Checkpoint<Args, Array> {
    let c = checkpoint(mlp);
    match p {
        Some(p) => c.policy(p.clone()),
        None => c,
    }
}

fn inputs(seed: u64) -> Args {
    (
        arr(&[4, 3], seed),
        arr(&[3, 5], seed + 1),
        arr(&[5, 2], seed + 2),
        arr(&[2, 5, 5], seed + 3),
    )
}

fn assert_grads(got: &Args, want: &Args, what: &str) {
    eprintln!("{what}");
    close(&got.0, &want.0, 1e-12);
    close(&got.1, &want.1, 1e-12);
    close(&got.2, &want.2, 1e-12);
    close(&got.3, &want.3, 1e-12);
}

#[test]
fn every_policy_gives_the_gradient_without_checkpoint() {
    for seed in [3, 17] {
        let xs = inputs(seed);
        let want = grad(mlp)(xs.clone()).unwrap();
        for (name, p) in policies() {
            let f = with(&p);
            let got = grad(move |a: Args| f.call(a).unwrap())(xs.clone()).unwrap();
            assert_grads(&got, &want, name);
            // The values too.
            close(&with(&p).call(xs.clone()).unwrap(), &mlp(xs.clone()), 1e-15);
        }
        // `remat` is `checkpoint`.
        let f = remat(mlp).policy(dots_saveable());
        let got = grad(move |a: Args| f.call(a).unwrap())(xs.clone()).unwrap();
        assert_grads(&got, &want, "remat");
    }
}

#[test]
fn policies_under_jit_give_the_gradient_without_checkpoint() {
    let xs = inputs(41);
    let want = grad(mlp)(xs.clone()).unwrap();
    for (name, p) in policies() {
        // jit(grad(checkpoint f)).
        let f = with(&p);
        let g = jit(move |a: Args| ok_or_raise(grad(|a: Args| f.call(a).unwrap())(a)));
        assert_grads(&g.call(xs.clone()).unwrap(), &want, name);
        // grad(jit(checkpoint f)): the remat2 is staged first.
        let f = with(&p);
        let j = jit(move |a: Args| f.call(a).unwrap());
        let got = grad(move |a: Args| j.call(a).unwrap())(xs.clone()).unwrap();
        assert_grads(&got, &want, name);
    }
}

#[test]
fn policies_under_vmap_give_the_per_example_gradient() {
    // vmap over a leading batch of x (the weights shared).
    let (_, w1, w2, b) = inputs(7);
    let rows: Vec<Array> = (0..3).map(|i| arr(&[4, 3], 70 + i)).collect();
    let xb = numpy::stack(&rows, 0).unwrap();
    let mut want = Vec::new();
    for xi in rows {
        let g = grad(mlp)((xi, w1.clone(), w2.clone(), b.clone())).unwrap();
        want.push(g.0);
    }
    let want = numpy::stack(&want, 0).unwrap();
    for (name, p) in policies() {
        eprintln!("{name}");
        let (w1c, w2c, bc) = (w1.clone(), w2.clone(), b.clone());
        let f = with(&p);
        // vmap(grad(checkpoint f)).
        let per = vmap(move |x: Array| {
            let g = grad(|a: Args| f.call(a).unwrap())((x, w1c.clone(), w2c.clone(), bc.clone()));
            ok_or_raise(g).0
        });
        close(&per.call(xb.clone()).unwrap(), &want, 1e-12);
        // grad(sum of vmap(checkpoint f)): the remat2 is batched first.
        let f = with(&p);
        let (w1c, w2c, bc) = (w1.clone(), w2.clone(), b.clone());
        let batched =
            vmap(move |x: Array| f.call((x, w1c.clone(), w2c.clone(), bc.clone())).unwrap());
        let g = grad(move |x: Array| batched.call(x).unwrap().sum(All))(xb.clone()).unwrap();
        close(&g, &want, 1e-12);
    }
}

fn is_dot(e: &Eqn) -> bool {
    matches!(e.primitive, Primitive::Linalg(Linalg::DotGeneral(_)))
}

fn is_tanh(e: &Eqn) -> bool {
    matches!(
        e.primitive,
        Primitive::Elementwise(jaxon_ir::primitive::Elementwise::Unary(UnaryOp::Tanh))
    )
}

fn count(j: &Jaxpr, pred: &dyn Fn(&Eqn) -> bool) -> usize {
    j.eqns
        .iter()
        .map(|e| {
            let inner: usize = e
                .primitive
                .sub_jaxprs()
                .iter()
                .map(|s| count(s, pred))
                .sum();
            usize::from(pred(e)) + inner
        })
        .sum()
}

/// The structural body (the one JAX's counts below come from):
/// `h = name(x @ w1, "h"); z = tanh(h) @ w2; sum(sin(z))`, x: [2, 3],
/// w1: [3, 4], w2: [4, 5].
fn small((x, w1, w2): (Array, Array, Array)) -> Array {
    let h = ok_or_raise(lax::checkpoint_name(
        &ok_or_raise(numpy::matmul(&x, &w1)),
        "h",
    ));
    ok_or_raise(numpy::matmul(&h.tanh(), &w2)).sin().sum(All)
}

/// The grad jaxpr's differentiated `remat2` equation.
fn backward(j: &Jaxpr) -> (&Eqn, &RematParams) {
    let mut it = j.eqns.iter().filter_map(|e| match &e.primitive {
        Primitive::Control(Control::Remat(rp)) if rp.differentiated => Some((e, rp)),
        _ => None,
    });
    let found = it.next().expect("a differentiated remat2");
    assert!(it.next().is_none(), "one differentiated remat2");
    found
}

#[test]
fn the_backward_remat2_recomputes_only_what_the_policy_does_not_save() {
    let xs = (arr(&[2, 3], 5), arr(&[3, 4], 6), arr(&[4, 5], 7));
    let want = grad(small)(xs.clone()).unwrap();
    // (policy, dot_generals and tanhs in the backward body, its operand
    // count): JAX 0.10.2's make_jaxpr(grad(checkpoint(small, policy)))
    // shows 6/1/4, 4/1/6, 5/1/5, 4/0/7, 4/1/6, 6/1/4 (its forward pass
    // is inline, outside the remat2, as ours).
    // The last column is the forward pass's dot_generals outside the
    // remat2 that our staging keeps (it drops dead equations; JAX's
    // jaxprs keep its two dead forward dots).
    let cases: Vec<(Option<Policy>, usize, usize, usize, usize)> = vec![
        (None, 6, 1, 4, 0),
        (Some(nothing_saveable()), 6, 1, 4, 0),
        (Some(dots_saveable()), 4, 1, 6, 2),
        (Some(save_only_these_names(["h"])), 5, 1, 5, 1),
        (Some(everything_saveable()), 4, 0, 7, 2),
        (Some(dots_with_no_batch_dims_saveable()), 4, 1, 6, 2),
        (Some(save_any_names_but_these(["h"])), 6, 1, 4, 0),
        (Some(save_any_names_but_these(["g"])), 5, 1, 5, 1),
    ];
    for (p, dots, tanhs, operands, fwd_dots) in cases {
        let text = p.as_ref().map(Policy::to_string);
        let c = checkpoint(small);
        let c = match &p {
            Some(p) => c.policy(p.clone()),
            None => c,
        };
        let c2 = c.clone();
        let gj = make_jaxpr(move |a: (Array, Array, Array)| {
            let g = grad(|a: (Array, Array, Array)| c2.call(a).unwrap())(a);
            let (a, b, c) = ok_or_raise(g);
            vec![a, b, c]
        })(xs.clone())
        .unwrap();
        let (eqn, rp) = backward(&gj.jaxpr);
        let body = &rp.jaxpr;
        let shown = print_jaxpr(&gj.jaxpr);
        assert_eq!(rp.policy, text, "{shown}");
        assert_eq!(count(body, &is_dot), dots, "{text:?}\n{shown}");
        assert_eq!(count(body, &is_tanh), tanhs, "{text:?}\n{shown}");
        assert_eq!(eqn.inputs.len(), operands, "{text:?}\n{shown}");
        // The forward pass is inline (no other remat2), computing only
        // what the backward pass reads.
        let remats = count(&gj.jaxpr, &|e| {
            matches!(e.primitive, Primitive::Control(Control::Remat(_)))
        });
        assert_eq!(remats, 1, "{shown}");
        assert_eq!(count(&gj.jaxpr, &is_dot) - dots, fwd_dots, "{shown}");
        if p == Some(save_only_these_names(["h"])) {
            // The value named "h" is an operand of the backward remat2
            // (a residual), so the dot producing it is not recomputed:
            // of the body's five dots, four are transposes and one is
            // the recomputed `tanh(h) @ w2`.
            let named: Vec<Atom> = gj
                .jaxpr
                .eqns
                .iter()
                .filter(
                    |e| matches!(&e.primitive, Primitive::Marker(Marker::Name(n)) if n.name == "h"),
                )
                .flat_map(|e| e.outputs.iter())
                .filter_map(|b| match b {
                    Binder::Var(v) => Some(Atom::Var(*v)),
                    Binder::Drop(_) => None,
                })
                .collect();
            assert_eq!(named.len(), 1, "{shown}");
            assert!(eqn.inputs.contains(&named[0]), "{shown}");
            assert!(shown.contains("policy=SaveOnlyTheseNames(saveable_names=frozenset({'h'}))"));
        }
        // And the gradient is right, in f64.
        let g = grad(move |a: (Array, Array, Array)| c.call(a).unwrap())(xs.clone()).unwrap();
        close(&g.0, &want.0, 1e-12);
        close(&g.1, &want.1, 1e-12);
        close(&g.2, &want.2, 1e-12);
    }
}

#[test]
fn jvp_of_a_policy_checkpoint_matches_the_plain_jvp() {
    let xs = inputs(23);
    let ts = inputs(29);
    let (y0, t0) = jaxon_transforms::jvp(mlp, xs.clone(), ts.clone()).unwrap();
    for (name, p) in policies() {
        eprintln!("{name}");
        let f = with(&p);
        let (y, t) =
            jaxon_transforms::jvp(move |a: Args| f.call(a).unwrap(), xs.clone(), ts.clone())
                .unwrap();
        close(&y, &y0, 1e-15);
        close(&t, &t0, 1e-12);
    }
}

/// JAX 0.10.2's `make_jaxpr(checkpoint(small, policy=P))` on f32[2,3],
/// f32[3,4], f32[4,5], with `POLICY` standing for the printed policy.
const STAGED_GOLDEN: &str = "{ lambda ; a:f32[2,3] b:f32[3,4] c:f32[4,5]. let
    d:f32[] = remat2[
      differentiated=False
      jaxpr={ lambda ; e:f32[2,3] f:f32[3,4] g:f32[4,5]. let
          h:f32[2,4] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float32
          ] e f
          i:f32[2,4] = name[name=h] h
          j:f32[2,4] = tanh i
          k:f32[2,5] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float32
          ] j g
          l:f32[2,5] = sin k
          m:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] l
        in (m,) }
      policy=POLICY
      prevent_cse=True
    ] a b c
  in (d,) }";

#[test]
fn the_policy_prints_as_jax_prints_it_and_parses_back() {
    let f32s = |shape: &[usize], seed| {
        let n = shape.iter().product();
        let v: Vec<f32> = rand(n, seed, -1.0, 1.0).iter().map(|x| *x as f32).collect();
        Array::from_vec(v, shape)
    };
    let xs = (f32s(&[2, 3], 1), f32s(&[3, 4], 2), f32s(&[4, 5], 3));
    // The texts JAX prints for these policies.
    let jax = [
        (
            save_only_these_names(["h"]),
            "SaveOnlyTheseNames(saveable_names=frozenset({'h'}))",
        ),
        (
            save_any_names_but_these(["h"]),
            "SaveAnyNamesButThese(names=frozenset({'h'}))",
        ),
        (dots_saveable(), "DotsSaveable(only_if_no_batch_dims=False)"),
        (
            dots_with_no_batch_dims_saveable(),
            "DotsSaveable(only_if_no_batch_dims=True)",
        ),
        (
            everything_saveable(),
            "<function everything_saveable at 0xXXXXXXXXXXXX>",
        ),
        (
            nothing_saveable(),
            "<function nothing_saveable at 0xXXXXXXXXXXXX>",
        ),
        (
            save_anything_except_these_names(["h"]),
            "<function save_anything_except_these_names.<locals>.<lambda> at 0xXXXXXXXXXXXX>",
        ),
        // JAX prints an opaque closure here; ours reads back.
        (
            save_from_both_policies(dots_saveable(), save_only_these_names(["h", "g"])),
            "save_from_both_policies(DotsSaveable(only_if_no_batch_dims=False), \
             SaveOnlyTheseNames(saveable_names=frozenset({'g', 'h'})))",
        ),
        (
            save_from_both_policies(nothing_saveable(), save_only_these_names(["h"])),
            "save_from_both_policies(nothing_saveable, \
             SaveOnlyTheseNames(saveable_names=frozenset({'h'})))",
        ),
    ];
    for (p, text) in jax {
        let c = checkpoint(small).policy(p.clone());
        let closed =
            make_jaxpr(move |a: (Array, Array, Array)| c.call(a).unwrap())(xs.clone()).unwrap();
        let shown = print_jaxpr(&closed.jaxpr);
        assert_eq!(shown, STAGED_GOLDEN.replace("POLICY", text));
        // Parsed back, it prints the same and differentiates under the
        // same policy.
        let parsed = parse_closed_jaxpr(&shown, vec![]).unwrap();
        assert_eq!(print_jaxpr(&parsed.jaxpr), shown);
        let run = |a: (Array, Array, Array)| {
            let outs = eval_closed_jaxpr(&parsed, &[a.0, a.1, a.2]);
            ok_or_raise(outs).remove(0)
        };
        let g = grad(run)(xs.clone()).unwrap();
        let c = checkpoint(small).policy(p);
        let want = grad(move |a: (Array, Array, Array)| c.call(a).unwrap())(xs.clone()).unwrap();
        assert_eq!(g.0.to_vec::<f32>(), want.0.to_vec::<f32>());
        assert_eq!(g.1.to_vec::<f32>(), want.1.to_vec::<f32>());
        assert_eq!(g.2.to_vec::<f32>(), want.2.to_vec::<f32>());
    }
}

#[test]
fn second_order_derivatives_under_a_policy_match_the_plain_ones() {
    // Reverse over reverse (the backward remat2 is differentiated again,
    // under its policy) and forward over reverse.
    let xs = (arr(&[2, 3], 11), arr(&[3, 4], 12), arr(&[4, 5], 13));
    let vs = (arr(&[2, 3], 14), arr(&[3, 4], 15), arr(&[4, 5], 16));
    type A3 = (Array, Array, Array);
    let gsum = |f: Checkpoint<A3, Array>| {
        move |a: A3| {
            let g = ok_or_raise(grad(|a: A3| f.call(a).unwrap())(a));
            (&g.0 * &g.0).sum(All) + g.1.sin().sum(All) + (&g.2 * &g.2).sum(All)
        }
    };
    let plain = |a: A3| {
        let g = ok_or_raise(grad(small)(a));
        (&g.0 * &g.0).sum(All) + g.1.sin().sum(All) + (&g.2 * &g.2).sum(All)
    };
    let want = grad(plain)(xs.clone()).unwrap();
    let (_, want_t) = jaxon_transforms::jvp(plain, xs.clone(), vs.clone()).unwrap();
    for p in [
        nothing_saveable(),
        dots_saveable(),
        save_only_these_names(["h"]),
        everything_saveable(),
        save_from_both_policies(
            save_any_names_but_these(["x"]),
            dots_with_no_batch_dims_saveable(),
        ),
    ] {
        eprintln!("{p}");
        let got = grad(gsum(checkpoint(small).policy(p.clone())))(xs.clone()).unwrap();
        close(&got.0, &want.0, 1e-12);
        close(&got.1, &want.1, 1e-12);
        close(&got.2, &want.2, 1e-12);
        let f = gsum(checkpoint(small).policy(p));
        let (_, t) = jaxon_transforms::jvp(f, xs.clone(), vs.clone()).unwrap();
        close(&t, &want_t, 1e-12);
    }
}

#[test]
fn integer_operands_and_outputs_pass_through_a_policy() {
    // An i32 operand (no tangent) and an i32 output (no cotangent).
    let body = |(x, k): (Array, Array)| {
        let kf = ok_or_raise(lax::convert_element_type(&k, jaxon_ir::DType::F64, false));
        let y = ok_or_raise(numpy::matmul(&x, &x)).tanh() * kf;
        (y, k.clone() * k)
    };
    let x = arr(&[3, 3], 9);
    let k = Array::from_vec(vec![2i32, -1, 3], &[3]);
    let want = grad(|x: Array| {
        body((x, Array::from_vec(vec![2i32, -1, 3], &[3])))
            .0
            .sum(All)
    })(x.clone())
    .unwrap();
    for p in [dots_saveable(), everything_saveable(), nothing_saveable()] {
        let f = checkpoint(body).policy(p);
        let (_, kk) = f.call((x.clone(), k.clone())).unwrap();
        assert_eq!(kk.to_vec::<i32>(), vec![4, 1, 9]);
        let kc = k.clone();
        // The i32 output is computed (and dropped) under grad too.
        let g = grad(move |x: Array| {
            let (y, kk) = f.call((x, kc.clone())).unwrap();
            y.sum(All)
                + ok_or_raise(lax::convert_element_type(&kk, jaxon_ir::DType::F64, false)).sum(All)
        })(x.clone())
        .unwrap();
        close(&g, &want, 1e-12);
    }
}

#[test]
fn a_policy_looks_inside_a_jit_in_the_body() {
    // h = jit(tanh(x @ w1)); sum(sin(h @ w2)). JAX 0.10.2's grad jaxpr
    // under dots_saveable saves the dot inside the jit (its backward
    // remat2 has the 4 transposed dots only and recomputes the tanh);
    // nothing_saveable recomputes both dots (6).
    let inner = std::sync::Arc::new(jit(|(x, w1): (Array, Array)| {
        ok_or_raise(numpy::matmul(&x, &w1)).tanh()
    }));
    let xs = (arr(&[2, 3], 51), arr(&[3, 4], 52), arr(&[4, 5], 53));
    let body = {
        let inner = inner.clone();
        move |(x, w1, w2): (Array, Array, Array)| {
            let h = inner.call((x, w1)).unwrap();
            ok_or_raise(numpy::matmul(&h, &w2)).sin().sum(All)
        }
    };
    let want = grad(body.clone())(xs.clone()).unwrap();
    for (p, dots, tanhs) in [(nothing_saveable(), 6, 1), (dots_saveable(), 4, 1)] {
        eprintln!("{p}");
        let c = checkpoint(body.clone()).policy(p);
        let c2 = c.clone();
        let gj = make_jaxpr(move |a: (Array, Array, Array)| {
            let (a, b, c) = ok_or_raise(grad(|a: (Array, Array, Array)| c2.call(a).unwrap())(a));
            vec![a, b, c]
        })(xs.clone())
        .unwrap();
        let (_, rp) = backward(&gj.jaxpr);
        let shown = print_jaxpr(&gj.jaxpr);
        assert_eq!(count(&rp.jaxpr, &is_dot), dots, "{shown}");
        assert_eq!(count(&rp.jaxpr, &is_tanh), tanhs, "{shown}");
        let g = grad(move |a: (Array, Array, Array)| c.call(a).unwrap())(xs.clone()).unwrap();
        close(&g.0, &want.0, 1e-12);
        close(&g.1, &want.1, 1e-12);
        close(&g.2, &want.2, 1e-12);
    }
}

/// JAX 0.10.2's `make_jaxpr(grad(lambda a, b: f(a, b).sum(), (0, 1)))`
/// for `f = checkpoint(lambda a, b: sin(a @ b),
/// policy=dots_with_no_batch_dims_saveable)` (the corpus case
/// `checkpoint_policy_dots` with `sin` for `tanh`, whose jvp rule is
/// written differently here), less what our staging does not produce:
/// the `reduce_precision` JAX puts on each saved value
/// (`_insert_reduce_precision`, against XLA's excess precision) and the
/// dead forward `sin`/`reduce_sum`.
const CORPUS_DOTS_GRAD: &str = "{ lambda ; a:f32[2,3] b:f32[3,3]. let
    c:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
    d:f32[2,3] = broadcast_in_dim 1.0:f32[]
    e:f32[2,3] f:f32[3,3] = remat2[
      differentiated=True
      jaxpr={ lambda ; g:f32[2,3] h:f32[2,3] i:f32[3,3] j:f32[2,3]. let
          k:f32[2,3] = cos g
          l:f32[2,3] = mul j k
          m:f32[3,3] = dot_general[
            dimension_numbers=(([0], [0]), ([], []))
            preferred_element_type=float32
          ] l h
          n:f32[3,3] = transpose[permutation=(1, 0)] m
          o:f32[2,3] = dot_general[
            dimension_numbers=(([1], [1]), ([], []))
            preferred_element_type=float32
          ] l i
        in (o, n) }
      policy=DotsSaveable(only_if_no_batch_dims=True)
      prevent_cse=True
    ] c a b d
  in (e, f) }";

#[test]
fn the_grad_jaxpr_is_jaxs_for_the_corpus_policy_case() {
    let a = Array::from_vec(vec![0.5f32; 6], &[2, 3]);
    let b = Array::from_vec(vec![0.25f32; 9], &[3, 3]);
    let c = checkpoint(|(a, b): (Array, Array)| ok_or_raise(numpy::matmul(&a, &b)).sin())
        .policy(dots_with_no_batch_dims_saveable());
    let gj = make_jaxpr(move |ab: (Array, Array)| {
        let (ga, gb) = ok_or_raise(grad(|ab: (Array, Array)| c.call(ab).unwrap().sum(All))(ab));
        vec![ga, gb]
    })((a, b))
    .unwrap();
    assert_eq!(print_jaxpr(&gj.jaxpr), CORPUS_DOTS_GRAD);
}

#[test]
fn a_scan_and_a_cond_inside_the_body_are_saved_or_recomputed_whole() {
    // h = x @ w1 (named), then a scan of tanh(c @ w) steps over h's rows,
    // then a cond on the sign of the sum: every policy's gradient is the
    // one without checkpoint.
    let body = |(x, w1, w): (Array, Array, Array)| {
        let h = ok_or_raise(lax::checkpoint_name(
            &ok_or_raise(numpy::matmul(&x, &w1)),
            "h",
        ));
        let c0 = ok_or_raise(numpy::zeros(&[4], jaxon_ir::DType::F64));
        let (c, ys) = ok_or_raise(jaxon_trace::scan(
            |c: Array, row: Array| {
                let c = (ok_or_raise(numpy::matmul(&c, &w)) + row).tanh();
                (c.clone(), c.sin())
            },
            c0,
            h,
            None,
            false,
        ));
        let s = ys.sum(All);
        let pos = ok_or_raise(numpy::greater(&s, &Array::weak(0.0)));
        ok_or_raise(jaxon_trace::cond(
            &pos,
            |(c, s): (Array, Array)| (&c * &c).sum(All) * s,
            |(c, s): (Array, Array)| c.exp().sum(All) + s,
            (c, s),
        ))
    };
    let xs = (arr(&[3, 2], 61), arr(&[2, 4], 62), arr(&[4, 4], 63));
    let want = grad(body)(xs.clone()).unwrap();
    for p in [
        nothing_saveable(),
        dots_saveable(),
        save_only_these_names(["h"]),
        everything_saveable(),
    ] {
        eprintln!("{p}");
        let f = checkpoint(body).policy(p);
        let got = grad(move |a: (Array, Array, Array)| f.call(a).unwrap())(xs.clone()).unwrap();
        close(&got.0, &want.0, 1e-12);
        close(&got.1, &want.1, 1e-12);
        close(&got.2, &want.2, 1e-12);
    }
}

#[test]
fn a_custom_python_policy_in_a_parsed_jaxpr_saves_nothing() {
    // JAX prints a user's policy function as an opaque repr; such a
    // jaxpr still differentiates (recomputing everything).
    let f32s = |shape: &[usize], seed| {
        let n = shape.iter().product();
        let v: Vec<f32> = rand(n, seed, -1.0, 1.0).iter().map(|x| *x as f32).collect();
        Array::from_vec(v, shape)
    };
    let xs = (f32s(&[2, 3], 1), f32s(&[3, 4], 2), f32s(&[4, 5], 3));
    let text = STAGED_GOLDEN.replace("POLICY", "<function my_policy at 0xXXXXXXXXXXXX>");
    let parsed = parse_closed_jaxpr(&text, vec![]).unwrap();
    assert_eq!(print_jaxpr(&parsed.jaxpr), text);
    let run = |a: (Array, Array, Array)| {
        ok_or_raise(eval_closed_jaxpr(&parsed, &[a.0, a.1, a.2])).remove(0)
    };
    let g = grad(run)(xs.clone()).unwrap();
    let c = checkpoint(small).policy(nothing_saveable());
    let want = grad(move |a: (Array, Array, Array)| c.call(a).unwrap())(xs.clone()).unwrap();
    assert_eq!(g.0.to_vec::<f32>(), want.0.to_vec::<f32>());
    assert_eq!(g.2.to_vec::<f32>(), want.2.to_vec::<f32>());
}
