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
    let f = custom_jvp(|a: &[Array]| vec![a[0].sin() * &a[1]])
        .name("f")
        .defjvp(|p, t| {
            let (x, y) = (&p[0], &p[1]);
            let out = x.sin() * y;
            let dt = x.cos() * y * &t[0] * 3.0 + x.sin() * &t[1];
            (vec![out], vec![dt])
        });
    let f = std::sync::Arc::new(f);
    let g = {
        let f = f.clone();
        move |(x, y): (Array, Array)| f.call(&[x, y.clone()]).unwrap()[0].clone() * y
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
    let out = f.call(&[xa.clone(), ya.clone()]).unwrap()[0].to_vec::<f64>();
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
        move |(x, y): (Array, Array)| f.call(&[x, y]).unwrap()[0].sum(All)
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
        |(x, y): (Array, Array)| f.call(&[x, y]).unwrap()[0].clone(),
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
    let f = custom_jvp(|a: &[Array]| vec![a[0].clone() * &a[1]])
        .name("scale_nd")
        .nondiff_argnums(&[1])
        .defjvp(|p, t| {
            // The tangent of the nondiff argument must be zero.
            let leak = t[1].sum(All);
            (vec![&p[0] * &p[1]], vec![&t[0] * &p[1] + leak])
        });
    let xs = rand(3, 11, -1.0, 1.0);
    let ss = rand(3, 12, 0.5, 1.5);
    let (gx, gs) = grad(move |(x, s): (Array, Array)| f.call(&[x, s]).unwrap()[0].sum(All))((
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
    let g = std::sync::Arc::new(custom_vjp(|a: &[Array]| vec![a[0].sin()]).name("g").defvjp(
        |p| (vec![p[0].sin()], vec![p[0].cos()]),
        |res, ct| vec![&res[0] * &ct[0] * 5.0],
    ));
    let g1 = g.clone();
    let closed = make_jaxpr(move |x: Array| g1.call(&[x]).unwrap()[0].clone() * 2.0)(f32s(
        &[0.1, 0.2, 0.3],
        &[3],
    ))
    .unwrap();
    assert_eq!(print_jaxpr(&closed.jaxpr), CUSTOM_VJP_GOLDEN);

    let xs = rand(5, 21, -2.0, 2.0);
    let x = Array::from_vec(xs.clone(), &[5]);
    let g2 = g.clone();
    let loss = move |x: Array| (g2.call(&[x]).unwrap()[0].clone() * 2.0).sum(All);
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
    let (_, jt) = jvp(
        move |x: Array| g3.call(&[x]).unwrap()[0].clone(),
        x.clone(),
        t.clone(),
    )
    .unwrap();
    let want_t: Vec<f64> = xs
        .iter()
        .zip(t.to_vec::<f64>())
        .map(|(x, t)| x.cos() * t)
        .collect();
    close(&jt.to_vec::<f64>(), &want_t, 1e-12);
    // vjp pullback on a random cotangent.
    let (_, pb) = vjp(move |x: Array| g.call(&[x]).unwrap()[0].clone(), x).unwrap();
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

fn sin2() -> jaxon_transforms::Checkpoint {
    checkpoint(|a: &[Array]| vec![a[0].sin().sin()])
}

#[test]
fn checkpoint_stages_remat2_like_jax() {
    let h = sin2();
    let x = f32s(&[0.1, 0.2, 0.3], &[3]);
    let closed =
        make_jaxpr(|x: Array| h.call(std::slice::from_ref(&x)).unwrap()[0].clone() * x)(x.clone())
            .unwrap();
    assert_eq!(print_jaxpr(&closed.jaxpr), REMAT_GOLDEN);
    let gj =
        make_jaxpr(|x: Array| ok_or_raise(grad(|x: Array| h.call(&[x]).unwrap()[0].sum(All))(x)))(
            x,
        )
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
    let h = checkpoint(move |a: &[Array]| vec![body(&a[0])]);
    let remat = move |x: Array| {
        let y = h.call(&[x]).unwrap()[0].clone();
        (&y * &y).sum(All)
    };
    let x = f32s(&[0.1, 0.2, 0.3], &[3]);
    let gp = make_jaxpr(move |x: Array| ok_or_raise(grad(plain)(x)))(x.clone()).unwrap();
    let gr = make_jaxpr(|x: Array| ok_or_raise(grad(remat.clone())(x)))(x).unwrap();
    // Without checkpoint: the three forward sins run once.
    assert_eq!(count(&gp.jaxpr, &is_sin, true), 3);
    assert_eq!(count(&gp.jaxpr, &is_remat, true), 0);
    // With it: no sin outside remat2 equations; the forward remat2 has
    // three, and the backward remat2 recomputes the two its cosines need.
    assert_eq!(count(&gr.jaxpr, &is_sin, false), 0);
    assert_eq!(count(&gr.jaxpr, &is_remat, false), 2);
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
