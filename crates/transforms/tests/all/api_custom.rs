//! `custom_jvp`, `custom_vjp` and `checkpoint`: staging goldens against
//! JAX 0.10.2's text, the user's rules being used under jvp/grad (also when
//! a staged equation is differentiated later), and remat recomputation.

use jaxon_ir::parse::parse_closed_jaxpr;
use jaxon_ir::primitive::{Control, Elementwise};
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{Eqn, Jaxpr, Primitive};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy::All;
use jaxon_trace::{jit, make_jaxpr, Array};
use jaxon_transforms::{checkpoint, custom_jvp, custom_vjp, grad, jvp, jvp_jaxpr, vjp};

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

fn f32s(v: &[f64], shape: &[usize]) -> Array {
    Array::from_vec(v.iter().map(|x| *x as f32).collect::<Vec<f32>>(), shape)
}

fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "[{i}] {x} vs {y}");
    }
}

const CUSTOM_JVP_GOLDEN: &str = "{ lambda ; a:f32[] b:f32[3]. let
    c:f32[3] = custom_jvp_call[
      name=f
      call_jaxpr={ lambda ; d:f32[] e:f32[3]. let
          f:f32[] = sin d
          g:f32[3] = mul f e
        in (g,) }
      jvp=f_jvp
      symbolic_zeros=False
    ] a b
    h:f32[3] = mul c b
  in (h,) }";

#[test]
fn custom_jvp_stages_like_jax_and_uses_its_rule() {
    // The rule deliberately scales the true derivative by 3 in x, so using
    // it (rather than differentiating the body) is observable.
    let f = custom_jvp(|(x, y): (Array, Array)| x.sin() * &y)
        .name("f")
        .defjvp(|(x, y): (Array, Array), (tx, ty): (Array, Array)| {
            let out = x.sin() * &y;
            let dt = x.cos() * &y * &tx * 3.0 + x.sin() * &ty;
            (out, dt)
        });
    let f = std::sync::Arc::new(f);
    let g = {
        let f = f.clone();
        move |(x, y): (Array, Array)| f.call((x, y.clone())).unwrap() * y
    };
    let x = Array::scalar(0.5f32);
    let y = f32s(&[0.3, -1.2, 2.0], &[3]);
    let closed = make_jaxpr(g.clone())((x.clone(), y.clone())).unwrap();
    assert_eq!(print_jaxpr(&closed.jaxpr), CUSTOM_JVP_GOLDEN);

    // Eagerly it is just the function.
    let xs = rand(4, 7, -1.0, 1.0);
    let ys = rand(4, 8, 0.5, 2.0);
    let xa = Array::from_vec(xs.clone(), &[4]);
    let ya = Array::from_vec(ys.clone(), &[4]);
    let out = f.call((xa.clone(), ya.clone())).unwrap().to_vec::<f64>();
    close(
        &out,
        &xs.iter()
            .zip(&ys)
            .map(|(x, y)| x.sin() * y)
            .collect::<Vec<_>>(),
        1e-12,
    );

    // jvp, grad and jit(grad) use the rule.
    let h = {
        let f = f.clone();
        move |xy: (Array, Array)| f.call(xy).unwrap().sum(All)
    };
    let (gx, gy) = grad(h.clone())((xa.clone(), ya.clone())).unwrap();
    let want_x: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| 3.0 * x.cos() * y).collect();
    close(&gx.to_vec::<f64>(), &want_x, 1e-12);
    close(
        &gy.to_vec::<f64>(),
        &xs.iter().map(|x| x.sin()).collect::<Vec<_>>(),
        1e-12,
    );
    let jg = jit(move |xy: (Array, Array)| grad(h.clone())(xy).unwrap());
    let (jx, _) = jg.call((xa.clone(), ya.clone())).unwrap();
    close(&jx.to_vec::<f64>(), &want_x, 1e-12);
    let ones = Array::from_vec(vec![1.0f64; 4], &[4]);
    let zeros = Array::from_vec(vec![0.0f64; 4], &[4]);
    let (_, t) = jvp(
        |xy: (Array, Array)| f.call(xy).unwrap(),
        (xa.clone(), ya.clone()),
        (ones, zeros),
    )
    .unwrap();
    close(&t.to_vec::<f64>(), &want_x, 1e-12);

    // A staged equation differentiated later still finds the rule.
    let staged = make_jaxpr(g)((x, y)).unwrap();
    let (jj, nz) = jvp_jaxpr(&staged, &[true, false], &[]).unwrap();
    assert_eq!(nz, vec![true]);
    let xv = 0.5f32;
    let yv = [0.3f32, -1.2, 2.0];
    let outs = jaxon_trace::interpret::eval_closed_jaxpr(
        &jj,
        &[
            Array::scalar(xv),
            f32s(&[0.3, -1.2, 2.0], &[3]),
            Array::scalar(1.0f32),
        ],
    )
    .unwrap();
    let tv = outs[1].to_vec::<f32>();
    for i in 0..3 {
        let want = 3.0 * xv.cos() * yv[i] * yv[i];
        assert!((tv[i] - want).abs() < 1e-5, "{} vs {want}", tv[i]);
    }
}

#[test]
fn parsed_custom_jvp_call_is_differentiated_through_its_body() {
    // No rule named `unregistered_jvp` exists: the body is differentiated.
    let text = CUSTOM_JVP_GOLDEN.replace("jvp=f_jvp", "jvp=unregistered_jvp");
    let closed = parse_closed_jaxpr(&text, vec![]).unwrap();
    let (jj, _) = jvp_jaxpr(&closed, &[true, true], &[]).unwrap();
    let (x, y) = (0.7f32, [0.3f32, -1.2, 2.0]);
    let (tx, ty) = (0.4f32, [1.0f32, 0.5, -0.25]);
    let outs = jaxon_trace::interpret::eval_closed_jaxpr(
        &jj,
        &[
            Array::scalar(x),
            f32s(&[0.3, -1.2, 2.0], &[3]),
            Array::scalar(tx),
            f32s(&[1.0, 0.5, -0.25], &[3]),
        ],
    )
    .unwrap();
    let t = outs[1].to_vec::<f32>();
    for i in 0..3 {
        // d(sin x · y · y) = cos x · y² tx + 2 sin x · y ty
        let want = x.cos() * y[i] * y[i] * tx + 2.0 * x.sin() * y[i] * ty[i];
        assert!((t[i] - want).abs() < 1e-5, "{} vs {want}", t[i]);
    }
}

#[test]
fn custom_jvp_nondiff_argnums_get_zero_tangents() {
    let f = custom_jvp(|(x, s): (Array, Array)| x * s)
        .name("scale_nd")
        .nondiff_argnums(&[1])
        .defjvp(|(x, s): (Array, Array), (tx, ts): (Array, Array)| {
            // The tangent of the nondiff argument must be zero.
            let leak = ts.sum(All);
            (&x * &s, tx * &s + leak)
        });
    let xs = rand(3, 11, -1.0, 1.0);
    let ss = rand(3, 12, 0.5, 1.5);
    let (gx, gs) = grad(move |xs: (Array, Array)| f.call(xs).unwrap().sum(All))((
        Array::from_vec(xs, &[3]),
        Array::from_vec(ss.clone(), &[3]),
    ))
    .unwrap();
    close(&gx.to_vec::<f64>(), &ss, 1e-12);
    close(&gs.to_vec::<f64>(), &[0.0; 3], 0.0);
}

const CUSTOM_VJP_GOLDEN: &str = "{ lambda ; a:f32[3]. let
    b:f32[3] = custom_vjp_call[
      name=g
      bwd=g_bwd
      call_jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }
      fwd=g_fwd
      symbolic_zeros=False
    ] a
    e:f32[3] = mul b 2.0:f32[]
  in (e,) }";

#[test]
fn custom_vjp_stages_like_jax_and_uses_bwd_in_reverse_mode() {
    // bwd deliberately returns 5·cos(x)·ct.
    let g = std::sync::Arc::new(custom_vjp(|x: Array| x.sin()).name("g").defvjp(
        |x: Array| (x.sin(), x.cos()),
        |cos_x: Array, ct: Array| cos_x * ct * 5.0,
    ));
    let g1 = g.clone();
    let closed =
        make_jaxpr(move |x: Array| g1.call(x).unwrap() * 2.0)(f32s(&[0.1, 0.2, 0.3], &[3]))
            .unwrap();
    assert_eq!(print_jaxpr(&closed.jaxpr), CUSTOM_VJP_GOLDEN);

    let xs = rand(5, 21, -2.0, 2.0);
    let x = Array::from_vec(xs.clone(), &[5]);
    let g2 = g.clone();
    let loss = move |x: Array| (g2.call(x).unwrap() * 2.0).sum(All);
    let want: Vec<f64> = xs.iter().map(|x| 10.0 * x.cos()).collect();
    close(
        &grad(loss.clone())(x.clone()).unwrap().to_vec::<f64>(),
        &want,
        1e-12,
    );
    let jg = jit(move |x: Array| grad(loss.clone())(x).unwrap());
    close(&jg.call(x.clone()).unwrap().to_vec::<f64>(), &want, 1e-12);
    // Second order through the linear equation: grad of (grad . sum).
    // Forward mode has no custom rule here: the body's derivative is used.
    let g3 = g.clone();
    let t = Array::from_vec(rand(5, 22, -1.0, 1.0), &[5]);
    let (_, jt) = jvp(move |x: Array| g3.call(x).unwrap(), x.clone(), t.clone()).unwrap();
    let want_t: Vec<f64> = xs
        .iter()
        .zip(t.to_vec::<f64>())
        .map(|(x, t)| x.cos() * t)
        .collect();
    close(&jt.to_vec::<f64>(), &want_t, 1e-12);
    // vjp pullback on a random cotangent.
    let (_, pb) = vjp(move |x: Array| g.call(x).unwrap(), x).unwrap();
    let ct: Array = pb.call(t.clone()).unwrap();
    let want_ct: Vec<f64> = xs
        .iter()
        .zip(t.to_vec::<f64>())
        .map(|(x, t)| 5.0 * x.cos() * t)
        .collect();
    close(&ct.to_vec::<f64>(), &want_ct, 1e-12);
}

const REMAT_GOLDEN: &str = "{ lambda ; a:f32[3]. let
    b:f32[3] = remat2[
      differentiated=False
      jaxpr={ lambda ; c:f32[3]. let
          d:f32[3] = sin c
          e:f32[3] = sin d
        in (e,) }
      policy=None
      prevent_cse=True
    ] a
    f:f32[3] = mul b a
  in (f,) }";

/// JAX's `make_jaxpr(grad(lambda x: h(x).sum()))` with its dead forward
/// equations (`b = sin a; c = sin b; _ = reduce_sum c`) removed: our staging
/// drops dead equations.
const REMAT_GRAD_GOLDEN: &str = "{ lambda ; a:f32[3]. let
    b:f32[3] = broadcast_in_dim 1.0:f32[]
    c:f32[3] = remat2[
      differentiated=True
      jaxpr={ lambda ; d:f32[3] e:f32[3]. let
          f:f32[3] = sin d
          g:f32[3] = cos d
          h:f32[3] = cos f
          i:f32[3] = mul e h
          j:f32[3] = mul i g
        in (j,) }
      policy=None
      prevent_cse=True
    ] a b
  in (c,) }";

fn sin2() -> jaxon_transforms::Checkpoint<Array, Array> {
    checkpoint(|x: Array| x.sin().sin())
}

#[test]
fn checkpoint_stages_remat2_like_jax() {
    let h = sin2();
    let x = f32s(&[0.1, 0.2, 0.3], &[3]);
    let closed = make_jaxpr(|x: Array| h.call(x.clone()).unwrap() * x)(x.clone()).unwrap();
    assert_eq!(print_jaxpr(&closed.jaxpr), REMAT_GOLDEN);
    let gj = make_jaxpr(|x: Array| ok_or_raise(grad(|x: Array| h.call(x).unwrap().sum(All))(x)))(x)
        .unwrap();
    assert_eq!(print_jaxpr(&gj.jaxpr), REMAT_GRAD_GOLDEN);
}

fn count(j: &Jaxpr, pred: &dyn Fn(&Eqn) -> bool, nested: bool) -> usize {
    j.eqns
        .iter()
        .map(|e| {
            let inner: usize = if nested {
                e.primitive
                    .sub_jaxprs()
                    .iter()
                    .map(|s| count(s, pred, true))
                    .sum()
            } else {
                0
            };
            usize::from(pred(e)) + inner
        })
        .sum()
}

#[test]
fn checkpoint_recomputes_the_forward_pass_in_the_backward_pass() {
    let is_sin = |e: &Eqn| {
        matches!(
            e.primitive,
            Primitive::Elementwise(Elementwise::Unary(jaxon_ir::primitive::UnaryOp::Sin))
        )
    };
    let is_remat = |e: &Eqn| matches!(e.primitive, Primitive::Control(Control::Remat(_)));
    let body = |x: &Array| x.sin().sin().sin();
    let plain = move |x: Array| {
        let y = body(&x);
        (&y * &y).sum(All)
    };
    let h = checkpoint(move |x: Array| body(&x));
    let remat = move |x: Array| {
        let y = h.call(x).unwrap();
        (&y * &y).sum(All)
    };
    let x = f32s(&[0.1, 0.2, 0.3], &[3]);
    let gp = make_jaxpr(move |x: Array| ok_or_raise(grad(plain)(x)))(x.clone()).unwrap();
    let gr = make_jaxpr(|x: Array| ok_or_raise(grad(remat.clone())(x)))(x).unwrap();
    // Without checkpoint: the three forward sins run once.
    assert_eq!(count(&gp.jaxpr, &is_sin, true), 3);
    assert_eq!(count(&gp.jaxpr, &is_remat, true), 0);
    // With it, as in JAX 0.10.2's grad jaxpr: the forward pass runs inline
    // (three sins outside any remat2, JAX's partial evaluation of remat2
    // evaluates its known half inline), and the one backward remat2
    // recomputes the two sins its cosines need from the input.
    assert_eq!(count(&gr.jaxpr, &is_sin, false), 3);
    assert_eq!(count(&gr.jaxpr, &is_remat, false), 1);
    assert_eq!(count(&gr.jaxpr, &is_sin, true), 5);
    // And the gradients agree, in f64.
    let xs = rand(4, 31, -1.5, 1.5);
    let xa = Array::from_vec(xs.clone(), &[4]);
    let a = grad(plain)(xa.clone()).unwrap().to_vec::<f64>();
    let b = grad(remat.clone())(xa.clone()).unwrap().to_vec::<f64>();
    close(&b, &a, 1e-12);
    let want: Vec<f64> = xs
        .iter()
        .map(|x| {
            let (s1, s2) = (x.sin(), x.sin().sin());
            2.0 * s2.sin() * s2.cos() * s1.cos() * x.cos()
        })
        .collect();
    close(&b, &want, 1e-12);
    let jb = jit(move |x: Array| grad(remat.clone())(x).unwrap());
    close(&jb.call(xa).unwrap().to_vec::<f64>(), &want, 1e-12);
}

fn arr(v: &[f64]) -> Array {
    Array::from_vec(v.to_vec(), &[v.len()])
}

/// A `custom_jvp` over a nested pytree input `(Vec<Array>, Array)` with a
/// tuple output: grad (and jit of grad) is the rule's, not the body's.
#[test]
fn custom_jvp_pytree_input_and_output_use_the_rule() {
    // f((xs, w)) = (sum_i xs[i] * w, sin w); the rule scales xs[i]'s
    // tangent by (i + 2) and w's second-output tangent by 4.
    let f = custom_jvp(|(xs, w): (Vec<Array>, Array)| {
        let s = xs.iter().fold(&w * 0.0, |acc, x| acc + x * &w);
        (s, w.sin())
    })
    .name("tree_jvp")
    .defjvp(
        |(xs, w): (Vec<Array>, Array), (txs, tw): (Vec<Array>, Array)| {
            let s = xs.iter().fold(&w * 0.0, |acc, x| acc + x * &w);
            let mut ts = &tw * 0.0;
            for (i, (x, tx)) in xs.iter().zip(&txs).enumerate() {
                ts = ts + tx * &w * (i as f64 + 2.0) + x * &tw;
            }
            ((s, w.sin()), (ts, w.cos() * &tw * 4.0))
        },
    );
    let n = 5;
    let xs: Vec<Vec<f64>> = (0..3).map(|i| rand(n, 40 + i, -1.0, 1.0)).collect();
    let w = rand(n, 50, -2.0, 2.0);
    let input = (xs.iter().map(|x| arr(x)).collect::<Vec<_>>(), arr(&w));
    let f1 = f.clone();
    let loss = move |xw: (Vec<Array>, Array)| {
        let (a, b) = ok_or_raise(f1.call(xw));
        (a + b).sum(All)
    };
    // Eagerly: the function's values.
    let (a, b) = f.call(input.clone()).unwrap();
    let want_a: Vec<f64> = (0..n)
        .map(|j| xs.iter().map(|x| x[j] * w[j]).sum())
        .collect();
    close(&a.to_vec::<f64>(), &want_a, 1e-12);
    close(
        &b.to_vec::<f64>(),
        &w.iter().map(|w| w.sin()).collect::<Vec<_>>(),
        1e-12,
    );
    let check = |(gxs, gw): (Vec<Array>, Array)| {
        assert_eq!(gxs.len(), 3);
        for (i, g) in gxs.iter().enumerate() {
            let want: Vec<f64> = w.iter().map(|w| w * (i as f64 + 2.0)).collect();
            close(&g.to_vec::<f64>(), &want, 1e-12);
        }
        let want_w: Vec<f64> = (0..n)
            .map(|j| xs.iter().map(|x| x[j]).sum::<f64>() + 4.0 * w[j].cos())
            .collect();
        close(&gw.to_vec::<f64>(), &want_w, 1e-12);
    };
    check(grad(loss.clone())(input.clone()).unwrap());
    let jg = jit(move |xw: (Vec<Array>, Array)| ok_or_raise(grad(loss.clone())(xw)));
    check(jg.call(input.clone()).unwrap());
    // The staged equation takes the flattened leaves and prints as before.
    let text = print_jaxpr(
        &make_jaxpr(move |xw| f.call(xw).unwrap())(input)
            .unwrap()
            .jaxpr,
    );
    assert!(text.contains("custom_jvp_call["), "{text}");
    assert!(text.contains("jvp=tree_jvp_jvp\n"), "{text}");
    assert!(text.contains("] a b c d\n"), "{text}");
}

/// `nondiff_argnums` of a tuple input names top-level elements (all of
/// their leaves); of any other input, leaves.
#[test]
fn custom_jvp_nondiff_argnums_index_tuple_elements_or_leaves() {
    let xs: Vec<Vec<f64>> = (0..2).map(|i| rand(4, 60 + i, -1.0, 1.0)).collect();
    let w = rand(4, 62, 0.5, 1.5);
    let xa: Vec<Array> = xs.iter().map(|x| arr(x)).collect();
    // Tuple input: argument 0 is the whole Vec.
    let f = custom_jvp(|(xs, w): (Vec<Array>, Array)| (&xs[0] + &xs[1]) * w)
        .name("nd_tuple")
        .nondiff_argnums(&[0])
        .defjvp(
            |(xs, w): (Vec<Array>, Array), (txs, tw): (Vec<Array>, Array)| {
                let leak = (&txs[0] + &txs[1]).sum(All) * 100.0;
                ((&xs[0] + &xs[1]) * &w, (&xs[0] + &xs[1]) * tw + leak)
            },
        );
    let (gxs, gw) =
        grad(move |xw| ok_or_raise(f.call(xw)).sum(All))((xa.clone(), arr(&w))).unwrap();
    close(&gxs[0].to_vec::<f64>(), &[0.0; 4], 0.0);
    close(&gxs[1].to_vec::<f64>(), &[0.0; 4], 0.0);
    let want: Vec<f64> = (0..4).map(|j| xs[0][j] + xs[1][j]).collect();
    close(&gw.to_vec::<f64>(), &want, 1e-12);

    // Vec input: argument 1 is leaf 1.
    let g = custom_jvp(|v: Vec<Array>| &v[0] * &v[1])
        .name("nd_leaves")
        .nondiff_argnums(&[1])
        .defjvp(|v: Vec<Array>, t: Vec<Array>| {
            let leak = t[1].sum(All) * 100.0;
            (&v[0] * &v[1], &t[0] * &v[1] * 2.0 + leak)
        });
    let g2 = g.clone();
    let gv = grad(move |v| ok_or_raise(g2.call(v)).sum(All))(xa.clone()).unwrap();
    let want: Vec<f64> = xs[1].iter().map(|x| 2.0 * x).collect();
    close(&gv[0].to_vec::<f64>(), &want, 1e-12);
    close(&gv[1].to_vec::<f64>(), &[0.0; 4], 0.0);

    // Out of range: an error, not a panic.
    let bad = g.nondiff_argnums(&[2]);
    let err = bad.call(xa.clone()).unwrap_err();
    assert!(err.to_string().contains("nondiff_argnums 2"), "{err}");
    let err = grad(move |v| ok_or_raise(bad.call(v)).sum(All))(xa).unwrap_err();
    assert!(err.to_string().contains("nondiff_argnums 2"), "{err}");
}

/// A `custom_vjp` over `(Array, Vec<Array>)` with residuals a nested
/// pytree: grad and the pullback are the bwd rule's output.
#[test]
fn custom_vjp_pytree_grad_is_the_bwd_rule() {
    type In = (Array, Vec<Array>);
    // f((x, ys)) = (x * ys[0], x * ys[1]); bwd scales x's cotangent by 3.
    let f = custom_vjp(|(x, ys): In| (&x * &ys[0], &x * &ys[1]))
        .name("tree_vjp")
        .defvjp(
            |(x, ys): In| ((&x * &ys[0], &x * &ys[1]), (x.clone(), ys.clone())),
            |(x, ys): (Array, Vec<Array>), (c0, c1): (Array, Array)| {
                let gx = (&c0 * &ys[0] + &c1 * &ys[1]) * 3.0;
                (gx, vec![&c0 * &x, &c1 * &x])
            },
        );
    let n = 6;
    let x = rand(n, 70, -1.0, 1.0);
    let ys: Vec<Vec<f64>> = (0..2).map(|i| rand(n, 71 + i, -1.0, 1.0)).collect();
    let input: In = (arr(&x), ys.iter().map(|y| arr(y)).collect());
    let f1 = f.clone();
    let loss = move |xy: In| {
        let (a, b) = ok_or_raise(f1.call(xy));
        (a + b * 2.0).sum(All)
    };
    let (gx, gys) = grad(loss)(input.clone()).unwrap();
    let want_x: Vec<f64> = (0..n).map(|j| 3.0 * (ys[0][j] + 2.0 * ys[1][j])).collect();
    close(&gx.to_vec::<f64>(), &want_x, 1e-12);
    close(&gys[0].to_vec::<f64>(), &x, 1e-12);
    close(
        &gys[1].to_vec::<f64>(),
        &x.iter().map(|x| 2.0 * x).collect::<Vec<_>>(),
        1e-12,
    );
    // vjp on random cotangents.
    let f2 = f.clone();
    let ((a, _), pb) = vjp(move |xy: In| ok_or_raise(f2.call(xy)), input.clone()).unwrap();
    let want_a: Vec<f64> = (0..n).map(|j| x[j] * ys[0][j]).collect();
    close(&a.to_vec::<f64>(), &want_a, 1e-12);
    let (c0, c1) = (rand(n, 80, -1.0, 1.0), rand(n, 81, -1.0, 1.0));
    let (px, pys): In = pb.call((arr(&c0), arr(&c1))).unwrap();
    let want_x: Vec<f64> = (0..n)
        .map(|j| 3.0 * (c0[j] * ys[0][j] + c1[j] * ys[1][j]))
        .collect();
    close(&px.to_vec::<f64>(), &want_x, 1e-12);
    let want_y1: Vec<f64> = (0..n).map(|j| c1[j] * x[j]).collect();
    close(&pys[1].to_vec::<f64>(), &want_y1, 1e-12);
    // A second input structure (three ys, one unused) registers a second
    // rule; both keep working.
    let mut input3 = input.clone();
    input3.1.push(arr(&rand(n, 82, -1.0, 1.0)));
    let f3 = custom_vjp(|(x, ys): In| &x * &ys[0])
        .name("tree_vjp3")
        .defvjp(
            |(x, ys): In| (&x * &ys[0], ys),
            |ys: Vec<Array>, c: Array| {
                let zs = ys.iter().map(|y| y * 0.0).collect();
                (&c * &ys[0] * 3.0, zs)
            },
        );
    for inp in [input, input3] {
        let f3 = f3.clone();
        let (gx, gys) = grad(move |xy: In| ok_or_raise(f3.call(xy)).sum(All))(inp.clone()).unwrap();
        let want: Vec<f64> = inp.1[0].to_vec::<f64>().iter().map(|y| 3.0 * y).collect();
        close(&gx.to_vec::<f64>(), &want, 1e-12);
        assert_eq!(gys.len(), inp.1.len());
    }
}

/// `checkpoint` of a tuple-in, tuple-out function: its gradient equals the
/// un-checkpointed function's, in f64 on random inputs.
#[test]
fn checkpoint_pytree_grad_matches_the_plain_function() {
    let body = |(x, w): (Array, Vec<Array>)| {
        let h = (&x * &w[0]).sin();
        let h = (&h * &w[1]).tanh();
        (h.clone(), (&h * &x).cos())
    };
    let c = checkpoint(body);
    let loss_plain = move |xw: (Array, Vec<Array>)| {
        let (a, b) = body(xw);
        (a * b).sum(All)
    };
    let loss_remat = move |xw: (Array, Vec<Array>)| {
        let (a, b) = ok_or_raise(c.call(xw));
        (a * b).sum(All)
    };
    let n = 7;
    let input = (
        arr(&rand(n, 90, -1.5, 1.5)),
        vec![arr(&rand(n, 91, -1.5, 1.5)), arr(&rand(n, 92, -1.5, 1.5))],
    );
    let (px, pw) = grad(loss_plain)(input.clone()).unwrap();
    let (rx, rw) = grad(loss_remat.clone())(input.clone()).unwrap();
    close(&rx.to_vec::<f64>(), &px.to_vec::<f64>(), 1e-12);
    for (r, p) in rw.iter().zip(&pw) {
        close(&r.to_vec::<f64>(), &p.to_vec::<f64>(), 1e-12);
    }
    // The values agree too, eagerly and staged (one remat2 on 3 leaves).
    let v = loss_remat(input.clone()).to_vec::<f64>();
    close(&v, &loss_plain(input.clone()).to_vec::<f64>(), 1e-12);
    let text = print_jaxpr(&make_jaxpr(loss_remat)(input).unwrap().jaxpr);
    assert!(text.contains("remat2["), "{text}");
    assert!(text.contains("] a b c\n"), "{text}");
}

/// A rule returning a tree of another structure is an error naming both
/// structures; so is calling a custom function without rules.
#[test]
fn rule_structure_mismatches_are_errors() {
    let x = vec![arr(&rand(3, 100, -1.0, 1.0)), arr(&rand(3, 101, -1.0, 1.0))];
    let f = custom_jvp(|v: Vec<Array>| v.iter().map(|a| a.sin()).collect::<Vec<_>>())
        .name("bad_jvp")
        .defjvp(|v: Vec<Array>, t: Vec<Array>| {
            let out = v.iter().map(|a| a.sin()).collect();
            (out, vec![t[0].clone()]) // one tangent for two outputs
        });
    let err = grad(move |v| ok_or_raise(f.call(v))[0].sum(All))(x.clone()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("custom_jvp `bad_jvp`"), "{msg}");
    assert!(
        msg.contains("tangent output has structure Node(List, [Leaf])"),
        "{msg}"
    );
    assert!(
        msg.contains("output has structure Node(List, [Leaf, Leaf])"),
        "{msg}"
    );

    let g = custom_vjp(|v: Vec<Array>| &v[0] * &v[1])
        .name("bad_vjp")
        .defvjp(
            |v: Vec<Array>| (&v[0] * &v[1], v),
            |v: Vec<Array>, c: Array| vec![&c * &v[1]], // one cotangent for two inputs
        );
    let err = grad(move |v| ok_or_raise(g.call(v)).sum(All))(x.clone()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("custom_vjp `bad_vjp`"), "{msg}");
    assert!(
        msg.contains("cotangent has structure Node(List, [Leaf])"),
        "{msg}"
    );
    assert!(
        msg.contains("input has structure Node(List, [Leaf, Leaf])"),
        "{msg}"
    );

    let h = custom_jvp(|v: Vec<Array>| v[0].clone()).name("no_rule");
    let err = h.call(x).unwrap_err();
    assert!(err.to_string().contains("no jvp rule"), "{err}");
}
