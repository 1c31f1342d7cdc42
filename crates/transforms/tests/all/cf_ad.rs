//! Differentiation through control flow and calls (`jit`, `cond`/`switch`,
//! `while_loop`, `fori_loop`, `scan`): jvp and grad against central
//! differences in f64, vjp against jvp, second order, `jit` interplay, and
//! reverse mode through `while`.

use jaxon_ir::parse::parse_closed_jaxpr;
use jaxon_ir::print::print_jaxpr;
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{catch, control, jit, lax, make_jaxpr, Array};
use jaxon_transforms::{grad, jvp, linearize, value_and_grad, vjp};

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

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_vec(v.to_vec(), shape)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// Central differences of a scalar `f` at `x` (flat, shaped `shape`).
fn fd_grad(f: &dyn Fn(Array) -> Array, x: &[f64], shape: &[usize]) -> Vec<f64> {
    let eps = 1e-6;
    (0..x.len())
        .map(|i| {
            let mut xp = x.to_vec();
            let mut xm = x.to_vec();
            xp[i] += eps;
            xm[i] -= eps;
            let fp = catch(|| f(arr(&xp, shape))).unwrap().item::<f64>();
            let fm = catch(|| f(arr(&xm, shape))).unwrap().item::<f64>();
            (fp - fm) / (2.0 * eps)
        })
        .collect()
}

/// grad(f) and value_and_grad(f) against central differences; the value
/// must be concrete and equal to `f(x)`.
fn check_grad(f: impl Fn(Array) -> Array + Clone, x: &[f64], shape: &[usize], tol: f64) {
    let (v, g) = value_and_grad(f.clone())(arr(x, shape)).unwrap();
    assert!(
        !v.is_tracer(),
        "value_and_grad leaked a tracer as its value"
    );
    let want = catch(|| f(arr(x, shape))).unwrap().item::<f64>();
    assert!(
        close(v.item::<f64>(), want, 1e-14),
        "{} vs {want}",
        v.item::<f64>()
    );
    let g = g.to_vec::<f64>();
    let fd = fd_grad(&f, x, shape);
    for (i, (a, b)) in g.iter().zip(&fd).enumerate() {
        assert!(close(*a, *b, tol), "component {i}: grad {a} vs fd {b}");
    }
    let g2 = grad(f)(arr(x, shape)).unwrap().to_vec::<f64>();
    assert_eq!(g, g2);
}

/// jvp against central differences along `t`, and the dot-product test
/// `<ct, J t> == <Jᵀ ct, t>` with vjp.
fn check_jvp_vjp(f: impl Fn(Array) -> Array + Clone, x: &[f64], shape: &[usize], seed: u64) {
    let t = rand(x.len(), seed, -1.0, 1.0);
    let (y, ty) = jvp(f.clone(), arr(x, shape), arr(&t, shape)).unwrap();
    assert!(!y.is_tracer() && !ty.is_tracer());
    let eps = 1e-6;
    let xp: Vec<f64> = x.iter().zip(&t).map(|(a, b)| a + eps * b).collect();
    let xm: Vec<f64> = x.iter().zip(&t).map(|(a, b)| a - eps * b).collect();
    let fp = catch(|| f(arr(&xp, shape))).unwrap().to_vec::<f64>();
    let fm = catch(|| f(arr(&xm, shape))).unwrap().to_vec::<f64>();
    let ty = ty.to_vec::<f64>();
    for (i, d) in ty.iter().enumerate() {
        let fd = (fp[i] - fm[i]) / (2.0 * eps);
        assert!(close(*d, fd, 1e-6), "output {i}: jvp {d} vs fd {fd}");
    }
    let ct = rand(ty.len(), seed + 1, -1.0, 1.0);
    let (y2, pull) = vjp(f.clone(), arr(x, shape)).unwrap();
    assert!(!y2.is_tracer());
    assert_eq!(y2.to_vec::<f64>(), y.to_vec::<f64>());
    let jt_ct = pull.call(arr(&ct, &y.shape())).unwrap().to_vec::<f64>();
    let lhs: f64 = ct.iter().zip(&ty).map(|(a, b)| a * b).sum();
    let rhs: f64 = jt_ct.iter().zip(&t).map(|(a, b)| a * b).sum();
    assert!(
        close(lhs, rhs, 1e-10),
        "<ct, J t> = {lhs} vs <J^T ct, t> = {rhs}"
    );
    // linearize's linear map agrees with jvp.
    let (y3, lin) = linearize(f, arr(x, shape)).unwrap();
    assert!(!y3.is_tracer());
    let ty3 = lin.jvp(&[arr(&t, shape)]).unwrap()[0].to_vec::<f64>();
    for (a, b) in ty3.iter().zip(&ty) {
        assert!(close(*a, *b, 1e-12), "linearized {a} vs jvp {b}");
    }
}

fn jitted_body(x: Array) -> Array {
    (x.sin() * x.clone() + x.exp() * 0.5).tanh()
}

#[test]
fn value_and_grad_through_jit_is_concrete_and_matches_fd() {
    let x = rand(6, 11, -1.0, 1.0);
    let inner = std::rc::Rc::new(jit(jitted_body));
    let f = move |x: Array| {
        let y = inner.call(x.clone()).unwrap();
        (y * x.cos()).sum(All)
    };
    check_grad(f.clone(), &x, &[2, 3], 1e-6);
    check_jvp_vjp(move |x: Array| f(x).reshape(&[1]), &x, &[2, 3], 12);
    // Nested jits.
    let outer = std::rc::Rc::new(jit(|x: Array| {
        let inner = jit(jitted_body);
        inner.call(x.clone()).unwrap() * x
    }));
    check_grad(
        move |x: Array| outer.call(x).unwrap().sum(All),
        &x,
        &[6],
        1e-6,
    );
}

fn cond_fn(x: Array) -> Array {
    let s = x.sum(All);
    control::cond(
        &s.gt(0.0),
        |(x, s): (Array, Array)| x.exp() * s,
        |(x, s): (Array, Array)| x.sin() * x.clone() - s,
        (x.clone(), s),
    )
    .unwrap()
}

#[test]
fn value_and_grad_through_cond_both_branches() {
    let pos = rand(5, 21, 0.1, 1.0);
    let neg = rand(5, 22, -1.0, -0.1);
    for x in [&pos, &neg] {
        check_grad(|x: Array| cond_fn(x).sum(All), x, &[5], 1e-6);
        check_jvp_vjp(cond_fn, x, &[5], 23);
    }
}

fn switch_fn(x: Array) -> Array {
    let k = x.sum(All).floor().astype(jaxon_ir::DType::I32);
    let b0 = |(x, c): (Array, Array)| x.cos() * c;
    let b1 = |(x, _c): (Array, Array)| x.clone() * x.clone();
    let b2 = |(x, c): (Array, Array)| (x * c).exp();
    let branches: [&dyn Fn((Array, Array)) -> Array; 3] = [&b0, &b1, &b2];
    let c = x.clone().sin().sum(All);
    control::switch(&k, &branches, (x, c)).unwrap()
}

#[test]
fn switch_with_three_branches_differentiates_each_branch() {
    // Sums 0.x, 1.x and 2.x (clamped indices) pick branches 0, 1, 2.
    for (seed, target) in [(31u64, 0.5), (32, 1.5), (33, 2.5)] {
        let mut x = rand(4, seed, -0.1, 0.1);
        let s: f64 = x.iter().sum();
        x[0] += target - s;
        check_grad(|x: Array| switch_fn(x).sum(All), &x, &[4], 1e-6);
        check_jvp_vjp(switch_fn, &x, &[4], seed + 10);
    }
}

#[test]
fn grad_jaxpr_with_jit_and_cond_prints_parses_and_evaluates() {
    let x = rand(4, 41, 0.1, 0.9);
    let f = |x: Array| {
        let inner = jit(jitted_body);
        (cond_fn(inner.call(x).unwrap()) * 2.0).sum(All)
    };
    let g = |x: Array| grad(f)(x).unwrap();
    let closed = make_jaxpr(g)(arr(&x, &[4])).unwrap();
    let text = print_jaxpr(&closed.jaxpr);
    // The primal cond and call are staged in the outer jaxpr; their
    // transposes are a cond and a jit again.
    assert!(text.contains("cond["), "{text}");
    // JAX keeps the callee's name on the primal and transposed calls.
    assert_eq!(text.matches("name=jitted_body").count(), 2, "{text}");
    // The linear call reads residuals instead of recomputing the primal.
    assert_eq!(text.matches("tanh").count(), 1, "{text}");
    let direct = eval_closed_jaxpr(&closed, &[arr(&x, &[4])]).unwrap()[0].to_vec::<f64>();
    let reparsed = parse_closed_jaxpr(&text, closed.consts.to_vec()).unwrap();
    let via_text = eval_closed_jaxpr(&reparsed, &[arr(&x, &[4])]).unwrap()[0].to_vec::<f64>();
    let eager = g(arr(&x, &[4])).to_vec::<f64>();
    let fd = fd_grad(&f, &x, &[4]);
    for i in 0..4 {
        assert!(
            close(direct[i], eager[i], 1e-13),
            "{} vs {}",
            direct[i],
            eager[i]
        );
        assert_eq!(direct[i], via_text[i]);
        assert!(
            close(direct[i], fd[i], 1e-6),
            "{} vs fd {}",
            direct[i],
            fd[i]
        );
    }
    // Under jit too.
    let jg = jit(g).call(arr(&x, &[4])).unwrap().to_vec::<f64>();
    for (a, b) in jg.iter().zip(&eager) {
        assert!(close(*a, *b, 1e-13));
    }
}

/// `x ← sin(x)·c + x·0.5` while the step counter is below a traced bound.
fn while_fn(x: Array, c: Array, n: Array) -> Array {
    let (_, y) = control::while_loop(
        |(i, _x): (Array, Array)| i.lt(&n),
        |(i, x): (Array, Array)| (i + 1, x.sin() * c.clone() + x * 0.5),
        (Array::scalar(0i32), x),
    )
    .unwrap();
    y
}

#[test]
fn while_loop_jvp_matches_fd_in_operand_and_body_const() {
    let x = rand(3, 51, -1.0, 1.0);
    let c = rand(3, 52, 0.5, 1.5);
    let n = Array::scalar(4i32);
    // Tangent in the carry only.
    let cc = arr(&c, &[3]);
    let nn = n.clone();
    let f = move |x: Array| while_fn(x, cc.clone(), nn.clone());
    let t = rand(3, 53, -1.0, 1.0);
    let (y, ty) = jvp(f.clone(), arr(&x, &[3]), arr(&t, &[3])).unwrap();
    let eps = 1e-6;
    let shift = |s: f64| x.iter().zip(&t).map(|(a, b)| a + s * b).collect::<Vec<_>>();
    let fp = catch(|| f(arr(&shift(eps), &[3]))).unwrap().to_vec::<f64>();
    let fm = catch(|| f(arr(&shift(-eps), &[3])))
        .unwrap()
        .to_vec::<f64>();
    for i in 0..3 {
        let fd = (fp[i] - fm[i]) / (2.0 * eps);
        assert!(close(ty.to_vec::<f64>()[i], fd, 1e-6));
    }
    assert_eq!(
        y.to_vec::<f64>(),
        catch(|| f(arr(&x, &[3]))).unwrap().to_vec::<f64>()
    );
    // Tangent in the body const only: the carry's tangent becomes
    // non-zero inside the loop (the fixpoint).
    let xx = arr(&x, &[3]);
    let g = move |c: Array| while_fn(xx.clone(), c, n.clone());
    let (_, tc) = jvp(g.clone(), arr(&c, &[3]), arr(&t, &[3])).unwrap();
    let shiftc = |s: f64| c.iter().zip(&t).map(|(a, b)| a + s * b).collect::<Vec<_>>();
    let gp = catch(|| g(arr(&shiftc(eps), &[3])))
        .unwrap()
        .to_vec::<f64>();
    let gm = catch(|| g(arr(&shiftc(-eps), &[3])))
        .unwrap()
        .to_vec::<f64>();
    for i in 0..3 {
        let fd = (gp[i] - gm[i]) / (2.0 * eps);
        assert!(close(tc.to_vec::<f64>()[i], fd, 1e-6));
    }
    // Under jit, with the bound traced.
    let jf = jit(|(x, c, n): (Array, Array, Array)| {
        jvp(
            |x: Array| while_fn(x, c.clone(), n.clone()),
            x,
            Array::from_vec(vec![1.0f64, -0.5, 0.25], &[3]),
        )
        .unwrap()
        .1
    });
    let jt = jf
        .call((arr(&x, &[3]), arr(&c, &[3]), Array::scalar(4i32)))
        .unwrap()
        .to_vec::<f64>();
    let (_, et) = jvp(
        |x: Array| while_fn(x, arr(&c, &[3]), Array::scalar(4i32)),
        arr(&x, &[3]),
        Array::from_vec(vec![1.0f64, -0.5, 0.25], &[3]),
    )
    .unwrap();
    for (a, b) in jt.iter().zip(et.to_vec::<f64>()) {
        assert!(close(*a, b, 1e-13));
    }
}

#[test]
fn reverse_mode_through_while_matches_fd() {
    // JAX refuses this; we differentiate the loop as a for_loop of its
    // trip count (crates/transforms/src/rules/control/while_grad.rs).
    let x = rand(3, 61, -1.0, 1.0);
    let c = arr(&rand(3, 62, 0.5, 1.5), &[3]);
    let f = move |x: Array| while_fn(x, c.clone(), Array::scalar(3i32)).sum(All);
    let g = grad(f.clone())(arr(&x, &[3])).unwrap().to_vec::<f64>();
    let fd = fd_grad(&f, &x, &[3]);
    for (a, b) in g.iter().zip(&fd) {
        assert!(close(*a, *b, 1e-6), "{g:?} vs {fd:?}");
    }
    // Forward evaluation of the linearization still works.
    let (y, lin) = linearize(f.clone(), arr(&x, &[3])).unwrap();
    assert!(!y.is_tracer());
    assert!(close(
        y.item::<f64>(),
        catch(|| f(arr(&x, &[3]))).unwrap().item::<f64>(),
        1e-15
    ));
    let t = lin.jvp(&[arr(&[1.0, 0.0, 0.0], &[3])]).unwrap()[0].item::<f64>();
    let fd = fd_grad(&f, &x, &[3])[0];
    assert!(close(t, fd, 1e-6), "{t} vs {fd}");
}

/// A scan with a const, two carries (one int), xs and ys.
fn scan_fn(x: Array, reverse: bool) -> Array {
    let w = x.clone().slice_first(3);
    let xs = x.slice_from(3).reshape(&[4, 2]);
    let init = (
        Array::scalar(0i32),
        Array::from_vec(vec![0.3f64, -0.2], &[2]),
    );
    let ((_, h), ys) = control::scan(
        |(i, h): (Array, Array), xt: Array| {
            let h2 = (h.clone() * w.clone().slice_first(2) + xt.clone() * h.sin()).tanh()
                + xt.clone() * w.clone().slice_from(2);
            let y = h2.clone() * h2.clone() + i.astype(jaxon_ir::DType::F64);
            ((i + 1, h2), y)
        },
        init,
        xs,
        None,
        reverse,
    )
    .unwrap();
    jnp::concatenate(&[h, ys.reshape(&[8])], 0).unwrap()
}

trait Slicing {
    fn slice_first(self, n: usize) -> Array;
    fn slice_from(self, n: usize) -> Array;
}

impl Slicing for Array {
    fn slice_first(self, n: usize) -> Array {
        lax::slice(&self, &[0], &[n], None).unwrap()
    }
    fn slice_from(self, n: usize) -> Array {
        let len = self.shape()[0];
        lax::slice(&self, &[n], &[len], None).unwrap()
    }
}

#[test]
fn scan_jvp_vjp_and_grad_match_fd_both_directions() {
    let x = rand(11, 71, -1.0, 1.0);
    for reverse in [false, true] {
        check_jvp_vjp(move |x| scan_fn(x, reverse), &x, &[11], 72);
        check_grad(
            move |x: Array| (scan_fn(x, reverse).sin()).sum(All),
            &x,
            &[11],
            1e-6,
        );
    }
}

/// `h = tanh(x_t @ Wx + h @ Wh + b)`, loss = mean(hs²): the `scan_rnn`
/// workload at small sizes.
const T: usize = 5;
const B: usize = 2;
const D: usize = 3;
const H: usize = 4;

fn unpack(p: &Array) -> (Array, Array, Array, Array) {
    let take = |from: usize, n: usize, shape: &[isize]| {
        lax::slice(p, &[from], &[from + n], None)
            .unwrap()
            .reshape(shape)
    };
    let wx = take(0, D * H, &[D as isize, H as isize]);
    let wh = take(D * H, H * H, &[H as isize, H as isize]);
    let b = take(D * H + H * H, H, &[H as isize]);
    let xs = take(
        D * H + H * H + H,
        T * B * D,
        &[T as isize, B as isize, D as isize],
    );
    (wx, wh, b, xs)
}

const NP: usize = D * H + H * H + H + T * B * D;

fn rnn_scan(p: Array) -> Array {
    let (wx, wh, b, xs) = unpack(&p);
    let h0 = jnp::zeros(&[B, H], jaxon_ir::DType::F64).unwrap();
    let (_, hs) = control::scan(
        |h: Array, xt: Array| {
            let h = (xt.matmul(&wx) + h.matmul(&wh) + b.clone()).tanh();
            (h.clone(), h)
        },
        h0,
        xs,
        None,
        false,
    )
    .unwrap();
    hs.square().mean(All)
}

fn rnn_fori(p: Array) -> Array {
    let (wx, wh, b, xs) = unpack(&p);
    let h0 = jnp::zeros(&[B, H], jaxon_ir::DType::F64).unwrap();
    let acc0 = Array::scalar(0.0f64);
    let (_, acc) = control::fori_loop(
        0,
        T,
        |i: Array, (h, acc): (Array, Array)| {
            let zero = Array::scalar(0i32);
            let xt = lax::dynamic_slice(&xs, &[i, zero.clone(), zero], &[1, B, D])
                .unwrap()
                .reshape(&[B as isize, D as isize]);
            let h = (xt.matmul(&wx) + h.matmul(&wh) + b.clone()).tanh();
            let acc = acc + h.square().sum(All);
            (h, acc)
        },
        (h0, acc0),
    )
    .unwrap();
    acc / (T * B * H) as f64
}

#[test]
fn grad_of_scan_rnn_and_static_fori_loop_match_fd() {
    let p = rand(NP, 81, -0.8, 0.8);
    check_grad(rnn_scan, &p, &[NP], 1e-6);
    check_grad(rnn_fori, &p, &[NP], 1e-6);
    let a = grad(rnn_scan)(arr(&p, &[NP])).unwrap().to_vec::<f64>();
    let b = grad(rnn_fori)(arr(&p, &[NP])).unwrap().to_vec::<f64>();
    for (x, y) in a.iter().zip(&b) {
        assert!(close(*x, *y, 1e-12), "{x} vs {y}");
    }
    // jit(grad) and grad(jit) agree with eager grad.
    let jg = jit(|p: Array| grad(rnn_scan)(p).unwrap())
        .call(arr(&p, &[NP]))
        .unwrap()
        .to_vec::<f64>();
    let inner = jit(rnn_scan);
    let gj = grad(move |p: Array| inner.call(p).unwrap())(arr(&p, &[NP]))
        .unwrap()
        .to_vec::<f64>();
    for ((x, y), z) in a.iter().zip(&jg).zip(&gj) {
        assert!(close(*x, *y, 1e-12) && close(*x, *z, 1e-12), "{x} {y} {z}");
    }
}

#[test]
fn grad_of_scan_keeps_weights_as_loop_invariant_residuals() {
    // The linear scan reads Wx and Wh as consts, not as `length` stacked
    // copies: no scan in the grad jaxpr has an xs operand of shape
    // [T, H, H].
    let p = rand(NP, 82, -0.8, 0.8);
    let closed = make_jaxpr(|p: Array| grad(rnn_scan)(p).unwrap())(arr(&p, &[NP])).unwrap();
    let text = print_jaxpr(&closed.jaxpr);
    assert_eq!(text.matches("scan[").count(), 2, "{text}");
    assert!(!text.contains(&format!("f64[{T},{H},{H}]")), "{text}");
    // The staged gradient evaluates to the eager one.
    let staged = eval_closed_jaxpr(&closed, &[arr(&p, &[NP])]).unwrap()[0].to_vec::<f64>();
    let eager = grad(rnn_scan)(arr(&p, &[NP])).unwrap().to_vec::<f64>();
    for (a, b) in staged.iter().zip(&eager) {
        assert!(close(*a, *b, 1e-13), "{a} vs {b}");
    }
}

#[test]
fn residuals_computed_from_consts_are_hoisted_out_of_the_loop() {
    // `w.T` and `exp(c)` depend only on consts: the linear scan gets them
    // as consts (no [6,3,3] or [6,3] stacked residual), and grad agrees
    // with central differences.
    let f = |p: Array| {
        let w = lax::slice(&p, &[0], &[9], None).unwrap().reshape(&[3, 3]);
        let c = lax::slice(&p, &[9], &[12], None).unwrap();
        let xs = lax::slice(&p, &[12], &[30], None).unwrap().reshape(&[6, 3]);
        let (h, _) = control::scan(
            |h: Array, x: Array| {
                let wt = lax::transpose(&w, &[1, 0]).unwrap();
                let h = h.matmul(&wt) * c.exp() + x;
                (h.sin(), ())
            },
            Array::from_vec(vec![0.1f64, 0.2, 0.3], &[3]),
            xs,
            None,
            false,
        )
        .unwrap();
        h.sum(All)
    };
    let p = rand(30, 83, -0.7, 0.7);
    check_grad(f, &p, &[30], 1e-6);
    let closed = make_jaxpr(|p: Array| grad(f)(p).unwrap())(arr(&p, &[30])).unwrap();
    let text = print_jaxpr(&closed.jaxpr);
    assert!(!text.contains("f64[6,3,3]"), "{text}");
    assert!(!text.contains("f64[6,3] = transpose"), "{text}");
    // The hoisted values are computed once, before the loops.
    let first_scan = text.find("scan[").unwrap();
    assert!(
        text[..first_scan].contains("transpose[permutation=(1, 0)]"),
        "{text}"
    );
}

#[test]
fn second_order_through_scan_and_cond() {
    // d/dx of grad: compare the Hessian-vector product from grad(grad)
    // with central differences of grad.
    let x = rand(11, 91, -1.0, 1.0);
    let f = |x: Array| (scan_fn(x, false).sin()).sum(All);
    let g = move |x: Array| grad(f)(x).unwrap();
    let v = rand(11, 92, -1.0, 1.0);
    let v2 = v.clone();
    let hv = grad(move |x: Array| (g(x) * arr(&v2, &[11])).sum(All))(arr(&x, &[11]))
        .unwrap()
        .to_vec::<f64>();
    let fd = fd_grad(&move |x: Array| (g(x) * arr(&v, &[11])).sum(All), &x, &[11]);
    for (a, b) in hv.iter().zip(&fd) {
        assert!(close(*a, *b, 1e-5), "{a} vs fd {b}");
    }
    // Through cond: d²/dx² of sum(exp(x)·s) on the positive branch.
    let xc = rand(3, 93, 0.1, 1.0);
    let gc = |x: Array| grad(|x: Array| cond_fn(x).sum(All))(x).unwrap();
    let h = grad(move |x: Array| gc(x).sum(All))(arr(&xc, &[3]))
        .unwrap()
        .to_vec::<f64>();
    let fdc = fd_grad(&move |x: Array| gc(x).sum(All), &xc, &[3]);
    for (a, b) in h.iter().zip(&fdc) {
        assert!(close(*a, *b, 1e-5), "{a} vs fd {b}");
    }
    // grad(grad) of the RNN under jit equals eager.
    let p = rand(NP, 94, -0.5, 0.5);
    let gg = |p: Array| grad(|p: Array| grad(rnn_scan)(p).unwrap().square().sum(All))(p).unwrap();
    let e = gg(arr(&p, &[NP])).to_vec::<f64>();
    let j = jit(gg).call(arr(&p, &[NP])).unwrap().to_vec::<f64>();
    for (a, b) in e.iter().zip(&j) {
        assert!(close(*a, *b, 1e-11), "{a} vs {b}");
    }
}
