//! `vmap` composed with itself, `jit`, `grad` and control flow, pytree
//! in/out axes, collectives over named axes, `batch_jaxpr`, and the error
//! messages; every value is checked against a loop of unbatched calls.

use jaxon_ir::primitive::{Control, CustomJvpCallParams, ForLoopParams, RematParams};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{catch, control, jit, lax, make_jaxpr, Array};
use jaxon_transforms::{all_gather, axis_index, batch_jaxpr, grad, pmax, pmean, psum, vmap, Axes};

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
    Array::from_vec(rand(shape.iter().product(), seed, -1.0, 1.0), shape)
}

fn take(x: &Array, axis: usize, i: usize) -> Array {
    let shape = x.shape();
    let mut start = vec![0; shape.len()];
    let mut limit = shape.clone();
    start[axis] = i;
    limit[axis] = i + 1;
    lax::squeeze(&lax::slice(x, &start, &limit, None).unwrap(), &[axis]).unwrap()
}

fn stack(xs: &[Array], axis: isize) -> Array {
    jnp::stack(xs, axis).unwrap()
}

fn assert_close(what: &str, got: &Array, want: &Array, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let g = lax::convert_element_type(got, DType::F64, false)
        .unwrap()
        .to_vec::<f64>();
    let w = lax::convert_element_type(want, DType::F64, false)
        .unwrap()
        .to_vec::<f64>();
    for (k, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{k}]: {a} vs {b}"
        );
    }
}

#[test]
fn pytree_in_and_out_axes() {
    // f((a, (b, c))) = (a * b + c, a.sum()) with a mapped on axis 0, b not
    // mapped and c on its last axis; outputs stacked on axes 1 and 0.
    let f = |(a, (b, c)): (Array, (Array, Array))| (&a * &b + &c, a.sum(All));
    let a = arr(&[3, 2], 1);
    let b = arr(&[2], 2);
    let c = arr(&[2, 3], 3);
    let (y, s) = vmap(f)
        .in_axes((0, (None, -1)))
        .out_axes((1, 0))
        .call((a.clone(), (b.clone(), c.clone())))
        .unwrap();
    let mut ys = Vec::new();
    let mut ss = Vec::new();
    for i in 0..3 {
        let (yi, si) = f((take(&a, 0, i), (b.clone(), take(&c, 1, i))));
        ys.push(yi);
        ss.push(si);
    }
    assert_close("y", &y, &stack(&ys, 1), 1e-12);
    assert_close("s", &s, &stack(&ss, 0), 1e-12);
    // The same spec written per leaf.
    let (y2, _) = vmap(f)
        .in_axes(Axes::Leaves(vec![Some(0), None, Some(1)]))
        .out_axes(Axes::Leaves(vec![Some(-1), Some(0)]))
        .call((a.clone(), (b.clone(), c.clone())))
        .unwrap();
    assert_close("y per leaf", &y2, &stack(&ys, -1), 1e-12);
}

#[test]
fn axis_size_with_no_mapped_input_broadcasts() {
    let x = arr(&[2], 4);
    let y = vmap(|x: Array| x.sin())
        .in_axes(Axes::none())
        .axis_size(3)
        .call(x.clone())
        .unwrap();
    assert_close(
        "broadcast",
        &y,
        &stack(&[x.sin(), x.sin(), x.sin()], 0),
        0.0,
    );
}

#[test]
fn nested_vmap_matches_a_double_loop() {
    // Outer over axis 1 of x, inner over axis 0 of the slice; y shared by
    // the outer map and mapped by the inner one.
    let g = |(x, y): (Array, Array)| (x.exp() * &y).sum(All) + x.max(All);
    let x = arr(&[3, 4, 2], 5);
    let y = arr(&[3, 2], 6);
    let out = vmap(move |(x, y): (Array, Array)| ok(vmap(g).call((x, y))))
        .in_axes((1, None))
        .call((x.clone(), y.clone()))
        .unwrap();
    let mut rows = Vec::new();
    for i in 0..4 {
        let xi = take(&x, 1, i);
        let r: Vec<Array> = (0..3)
            .map(|j| g((take(&xi, 0, j), take(&y, 0, j))))
            .collect();
        rows.push(stack(&r, 0));
    }
    assert_close("nested", &out, &stack(&rows, 0), 1e-12);
}

#[test]
fn vmap_under_jit_and_jit_under_vmap() {
    let inner = jit(|(w, x): (Array, Array)| (x.matmul(&w)).tanh()).name("layer");
    let x = arr(&[5, 3], 7);
    let w = arr(&[3, 2], 8);
    let want = stack(
        &(0..5)
            .map(|i| inner.call((w.clone(), take(&x, 0, i))).unwrap())
            .collect::<Vec<_>>(),
        0,
    );
    let batched = |(w, x): (Array, Array)| {
        ok(vmap(|a: (Array, Array)| ok(inner.call(a)))
            .in_axes((None, 0))
            .call((w, x)))
    };
    assert_close(
        "jit under vmap",
        &batched((w.clone(), x.clone())),
        &want,
        1e-12,
    );
    let jitted = jit(batched);
    assert_close(
        "jit(vmap(jit))",
        &jitted.call((w.clone(), x.clone())).unwrap(),
        &want,
        1e-12,
    );
    // The inner jit stays a jit equation, now on batched operands.
    let text = make_jaxpr(batched)((w, x)).unwrap().to_string();
    assert!(text.contains("jit[") && text.contains("f64[5,2]"), "{text}");
}

fn loss((w, x, y): ((Array, Array), Array, Array)) -> Array {
    let h = x.matmul(&w.0).tanh();
    let p = h.matmul(&w.1);
    ((p - y).powi(2)).sum(All)
}

#[test]
fn per_example_grads_match_a_loop() {
    let w = (arr(&[3, 4], 9), arr(&[4], 10));
    let x = arr(&[6, 3], 11);
    let y = arr(&[6], 12);
    let per_example = |args: ((Array, Array), Array, Array)| {
        ok(vmap(|a: ((Array, Array), Array, Array)| ok(grad(loss)(a)))
            .in_axes((None, 0, 0))
            .call(args))
    };
    let ((g1, g2), gx, gy) = per_example((w.clone(), x.clone(), y.clone()));
    let ((j1, j2), jx, _) = jit(per_example)
        .call((w.clone(), x.clone(), y.clone()))
        .unwrap();
    let mut want = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..6 {
        let ((a, b), c, d) = grad(loss)((w.clone(), take(&x, 0, i), take(&y, 0, i))).unwrap();
        want.0.push(a);
        want.1.push(b);
        want.2.push(c);
        want.3.push(d);
    }
    assert_close("dw1", &g1, &stack(&want.0, 0), 1e-12);
    assert_close("dw2", &g2, &stack(&want.1, 0), 1e-12);
    assert_close("dx", &gx, &stack(&want.2, 0), 1e-12);
    assert_close("dy", &gy, &stack(&want.3, 0), 1e-12);
    assert_close("jit dw1", &j1, &stack(&want.0, 0), 1e-12);
    assert_close("jit dw2", &j2, &stack(&want.1, 0), 1e-12);
    assert_close("jit dx", &jx, &stack(&want.2, 0), 1e-12);
}

/// vmap(f) over axis 0 of every leaf of a Vec against a loop, eagerly and
/// under jit.
fn check_loop(what: &str, f: fn(Vec<Array>) -> Vec<Array>, args: &[Array], axes: &[Option<isize>]) {
    let spec = Axes::Leaves(axes.to_vec());
    let got = vmap(f).in_axes(spec.clone()).call(args.to_vec()).unwrap();
    let jitted = jit(move |a: Vec<Array>| ok(vmap(f).in_axes(spec.clone()).call(a)))
        .call(args.to_vec())
        .unwrap();
    let n = args
        .iter()
        .zip(axes)
        .find_map(|(a, ax)| ax.map(|_| a.shape()[0]))
        .unwrap();
    let per: Vec<Vec<Array>> = (0..n)
        .map(|i| {
            let a = args
                .iter()
                .zip(axes)
                .map(|(x, ax)| {
                    if ax.is_some() {
                        take(x, 0, i)
                    } else {
                        x.clone()
                    }
                })
                .collect();
            catch(|| f(a)).unwrap()
        })
        .collect();
    for j in 0..got.len() {
        let want = stack(&per.iter().map(|o| o[j].clone()).collect::<Vec<_>>(), 0);
        assert_close(&format!("{what} out {j}"), &got[j], &want, 1e-12);
        assert_close(&format!("{what} jit out {j}"), &jitted[j], &want, 1e-12);
    }
}

#[test]
fn cond_and_switch_with_batched_or_shared_predicates() {
    let f: fn(Vec<Array>) -> Vec<Array> = |a| {
        let p = a[0].sum(All).gt(0.0);
        let c = ok(control::cond(
            &p,
            |(x, y): (Array, Array)| (x.sin() * &y, y.clone()),
            |(x, y): (Array, Array)| (x.cos(), &y * 2.0),
            (a[1].clone(), a[2].clone()),
        ));
        let idx = (a[0].sum(All) * 3.0).astype(DType::I32);
        let b0 = |x: Array| x.exp();
        let b1 = |x: Array| -x;
        let b2 = |x: Array| x.powi(2);
        let s = ok(control::switch(&idx, &[&b0, &b1, &b2], a[1].clone()));
        vec![c.0, c.1, s]
    };
    let p = arr(&[8, 2], 13);
    let x = arr(&[8, 3], 14);
    let y = arr(&[8, 3], 15);
    check_loop(
        "cond batched pred",
        f,
        &[p.clone(), x.clone(), y.clone()],
        &[Some(0); 3],
    );
    check_loop(
        "cond shared pred",
        f,
        &[take(&p, 0, 1), x.clone(), y],
        &[None, Some(0), Some(0)],
    );
    check_loop(
        "cond only y",
        f,
        &[take(&p, 0, 2), take(&x, 0, 0), arr(&[8, 3], 16)],
        &[None, None, Some(0)],
    );
}

#[test]
fn while_loop_with_batched_and_shared_predicates() {
    // Doubles x until it exceeds a per-member limit, counting the steps.
    let f: fn(Vec<Array>) -> Vec<Array> = |a| {
        let limit = a[1].clone();
        let (x, k) = ok(control::while_loop(
            move |(x, _k): (Array, Array)| x.lt(&limit),
            |(x, k): (Array, Array)| (&x * 2.0 + 0.1, k + 1),
            (a[0].abs() + 0.01, Array::scalar(0i32)),
        ));
        vec![x, k]
    };
    let x = Array::from_vec(rand(6, 17, 0.01, 1.0), &[6]);
    let limit = Array::from_vec(rand(6, 18, 1.0, 60.0), &[6]);
    check_loop(
        "while batched",
        f,
        &[x.clone(), limit.clone()],
        &[Some(0), Some(0)],
    );
    check_loop(
        "while shared limit",
        f,
        &[x, take(&limit, 0, 3)],
        &[Some(0), None],
    );
}

#[test]
fn scan_and_fori_loop_with_batched_consts_carries_and_xs() {
    let f: fn(Vec<Array>) -> Vec<Array> = |a| {
        let w = a[0].clone();
        let (h, ys) = ok(control::scan(
            move |h: Array, x: Array| {
                let h2 = (h.clone() * &w + x).tanh();
                (h2.clone(), h2.sum(All))
            },
            a[1].clone(),
            a[2].clone(),
            None,
            false,
        ));
        let acc = ok(control::fori_loop(
            0,
            3,
            |i, c: Array| c * 0.5 + i.astype(DType::F64),
            a[1].clone(),
        ));
        vec![h, ys, acc]
    };
    let w = arr(&[5, 3], 19);
    let h0 = arr(&[5, 3], 20);
    let xs = arr(&[5, 4, 3], 21);
    check_loop(
        "scan all batched",
        f,
        &[w.clone(), h0.clone(), xs.clone()],
        &[Some(0); 3],
    );
    check_loop(
        "scan batched w",
        f,
        &[w.clone(), take(&h0, 0, 0), take(&xs, 0, 0)],
        &[Some(0), None, None],
    );
    check_loop(
        "scan batched xs",
        f,
        &[take(&w, 0, 1), take(&h0, 0, 1), xs],
        &[None, None, Some(0)],
    );
}

#[test]
fn collectives_over_named_axes() {
    let x = arr(&[4, 3], 22);
    let xs: Vec<Array> = (0..4).map(|i| take(&x, 0, i)).collect();
    let mean = x.mean(0);
    let centered = vmap(|v: Array| &v - &ok(pmean(&v, "i")))
        .axis_name("i")
        .call(x.clone())
        .unwrap();
    assert_close(
        "pmean",
        &centered,
        &stack(&xs.iter().map(|v| v - &mean).collect::<Vec<_>>(), 0),
        1e-12,
    );
    let (s, m, g, idx) = vmap(|v: Array| {
        (
            ok(psum(&v, "i")),
            ok(pmax(&v, "i")),
            ok(all_gather(&v, "i")),
            ok(axis_index("i")),
        )
    })
    .axis_name("i")
    .call(x.clone())
    .unwrap();
    let sum = x.sum(0);
    let max = x.max(0);
    assert_close(
        "psum",
        &s,
        &stack(&[sum.clone(), sum.clone(), sum.clone(), sum], 0),
        1e-12,
    );
    assert_close(
        "pmax",
        &m,
        &stack(&[max.clone(), max.clone(), max.clone(), max], 0),
        0.0,
    );
    assert_close(
        "all_gather",
        &g,
        &stack(&[x.clone(), x.clone(), x.clone(), x.clone()], 0),
        0.0,
    );
    assert_eq!(idx.to_vec::<i32>(), vec![0, 1, 2, 3]);
    // psum of a value that does not depend on the axis: size times it.
    let c = Array::from_vec(vec![1.5f64], &[]);
    let r = vmap(move |_v: Array| ok(psum(&c, "i")))
        .axis_name("i")
        .call(x.clone())
        .unwrap();
    assert_eq!(r.to_vec::<f64>(), vec![6.0; 4]);
}

#[test]
fn nested_vmaps_with_different_axis_names() {
    // Outer axis "i" over rows, inner axis "j" over columns: psum over "i"
    // inside the inner map gives column sums; over "j" row sums;
    // axis_index of each axis gives the coordinates.
    let x = arr(&[3, 5], 23);
    let out = vmap(|row: Array| {
        ok(vmap(|v: Array| {
            let col = ok(psum(&v, "i"));
            let rowsum = ok(psum(&v, "j"));
            let ij = ok(axis_index("i")) * 10 + ok(axis_index("j"));
            (col, rowsum, ij)
        })
        .axis_name("j")
        .call(row))
    })
    .axis_name("i")
    .call(x.clone())
    .unwrap();
    let cols = x.sum(0);
    let rows = x.sum(1);
    let xv = x.to_vec::<f64>();
    let (c, r, ij) = (
        out.0.to_vec::<f64>(),
        out.1.to_vec::<f64>(),
        out.2.to_vec::<i32>(),
    );
    for i in 0..3 {
        for j in 0..5 {
            let k = i * 5 + j;
            assert!(
                (c[k] - cols.to_vec::<f64>()[j]).abs() < 1e-12,
                "col sum at {i},{j}"
            );
            assert!(
                (r[k] - rows.to_vec::<f64>()[i]).abs() < 1e-12,
                "row sum at {i},{j}"
            );
            assert_eq!(ij[k], (10 * i + j) as i32);
        }
    }
    assert_eq!(xv.len(), 15);
}

#[test]
fn batch_jaxpr_of_calls_and_remat() {
    let f = |(x, y): (Array, Array)| (x.sin() * &y, y.sum(All));
    let x = arr(&[3], 24);
    let y = arr(&[3], 25);
    let closed = make_jaxpr(f)((x.clone(), y.clone())).unwrap();
    let (bj, out_b) = batch_jaxpr(&closed, &[true, false], 4, &[]).unwrap();
    assert_eq!(out_b, vec![true, false]);
    let xs = arr(&[4, 3], 26);
    let outs = jaxon_trace::interpret::eval_closed_jaxpr(&bj, &[xs.clone(), y.clone()]).unwrap();
    let want: Vec<Array> = (0..4).map(|i| f((take(&xs, 0, i), y.clone())).0).collect();
    assert_close("batch_jaxpr", &outs[0], &stack(&want, 0), 1e-12);
    assert_close("batch_jaxpr unbatched", &outs[1], &y.sum(All), 1e-12);
    // remat2 and custom_jvp_call equations batch their bodies.
    let remat = Primitive::Control(Control::Remat(RematParams {
        jaxpr: closed.jaxpr.clone(),
        prevent_cse: true,
        differentiated: false,
        policy: None,
    }));
    let custom = Primitive::Control(Control::CustomJvpCall(CustomJvpCallParams {
        name: "f".into(),
        call_jaxpr: closed.clone(),
        jvp: "f_jvp".into(),
        num_consts: 0,
        symbolic_zeros: false,
    }));
    for p in [remat, custom] {
        let g = move |(x, y): (Array, Array)| ok(jaxon_trace::bind(&p, &[x, y])).remove(0);
        let got = vmap(g)
            .in_axes((0, None))
            .call((xs.clone(), y.clone()))
            .unwrap();
        assert_close("call", &got, &stack(&want, 0), 1e-12);
    }
}

#[test]
fn errors_name_sizes_axes_and_axis_names() {
    let f = |(a, b): (Array, Array)| a + b;
    let e = vmap(f)
        .call((arr(&[3, 2], 1), arr(&[4, 2], 2)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("size 3") && e.contains("size 4"), "{e}");
    let e = vmap(f)
        .in_axes((0, 1))
        .call((arr(&[3, 2], 1), arr(&[2, 4], 2)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("size 3") && e.contains("size 4") && e.contains("axis 1"),
        "{e}"
    );
    let e = vmap(f)
        .in_axes((2, 0))
        .call((arr(&[3, 2], 1), arr(&[3, 2], 2)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("axis 2 is out of bounds") && e.contains("rank 2"),
        "{e}"
    );
    let e = vmap(|x: Array| x.sin())
        .axis_size(5)
        .call(arr(&[3], 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("axis_size has size 5") && e.contains("size 3"),
        "{e}"
    );
    let e = vmap(|x: Array| ok(psum(&x, "batch")))
        .axis_name("data")
        .call(arr(&[3], 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'batch'"), "{e}");
    let e = vmap(|x: Array| x.sin())
        .out_axes(Axes::none())
        .call(arr(&[3], 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("out_axes None"), "{e}");
    let e = vmap(|x: Array| x)
        .in_axes(Axes::none())
        .call(arr(&[3], 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("axis_size"), "{e}");
    let e = vmap(f)
        .in_axes((0, 0, 0))
        .call((arr(&[3], 1), arr(&[3], 2)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 entries"), "{e}");
    // Outside any vmap.
    let e = psum(&arr(&[3], 1), "i").unwrap_err().to_string();
    assert!(e.contains("unbound axis name 'i'"), "{e}");
}

#[test]
fn vmap_of_jvp_and_jvp_of_vmap() {
    let f = |x: Array| (x.sin() * x.exp()).sum(All);
    let x = arr(&[4, 3], 27);
    let t = arr(&[4, 3], 28);
    // Per-row directional derivatives, both ways round, against a loop.
    let (vp, vt) = vmap(|(x, t): (Array, Array)| {
        let (p, d) = ok(jaxon_transforms::jvp(f, x, t));
        (p, d)
    })
    .call((x.clone(), t.clone()))
    .unwrap();
    let (jp, jt) =
        jaxon_transforms::jvp(|x: Array| ok(vmap(f).call(x)), x.clone(), t.clone()).unwrap();
    let mut want = (Vec::new(), Vec::new());
    for i in 0..4 {
        let (p, d) = jaxon_transforms::jvp(f, take(&x, 0, i), take(&t, 0, i)).unwrap();
        want.0.push(p);
        want.1.push(d);
    }
    for (what, got, w) in [
        ("vmap(jvp) primal", &vp, &want.0),
        ("vmap(jvp) tangent", &vt, &want.1),
        ("jvp(vmap) primal", &jp, &want.0),
        ("jvp(vmap) tangent", &jt, &want.1),
    ] {
        assert_close(what, got, &stack(w, 0), 1e-12);
    }
}

#[test]
fn list_and_option_specs() {
    // A Vec of three leaves with per-child axes, and an Option leaf.
    let f = |(v, o): (Vec<Array>, Option<Array>)| &v[0] * &v[1] + &v[2] + o.unwrap();
    let a = arr(&[2, 3], 29);
    let b = arr(&[3], 30);
    let c = arr(&[3, 2], 31);
    let o = arr(&[2, 3], 32);
    let got = vmap(f)
        .in_axes(Axes::Tree(vec![
            Axes::Tree(vec![0.into(), None.into(), (-1).into()]),
            0.into(),
        ]))
        .out_axes(-1)
        .call((vec![a.clone(), b.clone(), c.clone()], Some(o.clone())))
        .unwrap();
    let rows: Vec<Array> = (0..2)
        .map(|i| {
            f((
                vec![take(&a, 0, i), b.clone(), take(&c, 1, i)],
                Some(take(&o, 0, i)),
            ))
        })
        .collect();
    assert_close("list/option", &got, &stack(&rows, -1), 1e-12);
}

#[test]
fn while_loop_with_an_unbatched_predicate_and_batched_carry() {
    // The predicate depends only on the counter, so it stays unbatched and
    // the loop stays a plain while over batched carries.
    let f: fn(Vec<Array>) -> Vec<Array> = |a| {
        let (k, x) = ok(control::while_loop(
            |(k, _x): (Array, Array)| k.lt(3),
            |(k, x): (Array, Array)| (k + 1, x.sin() * 2.0 + 0.5),
            (Array::scalar(0i32), a[0].clone()),
        ));
        vec![k, x]
    };
    let x = arr(&[5, 2], 33);
    check_loop(
        "while unbatched pred",
        f,
        std::slice::from_ref(&x),
        &[Some(0)],
    );
    let text = make_jaxpr(move |x: Array| ok(vmap(|x: Array| f(vec![x]).remove(1)).call(x)))(x)
        .unwrap()
        .to_string();
    assert!(!text.contains("reduce_or"), "{text}");
}

#[test]
fn catalyst_for_loop_with_batched_consts_and_carries() {
    // Body (c, i, x) -> x * c + i, run for i = 1, 3, 5.
    let body = make_jaxpr(|(c, i, x): (Array, Array, Array)| &x * &c + i.astype(DType::F64))((
        arr(&[3], 1),
        Array::scalar(0i64),
        arr(&[3], 2),
    ))
    .unwrap();
    let prim = Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr: body,
        body_nconsts: 1,
        nimplicit: 0,
        preserve_dimensions: true,
        apply_reverse_transform: false,
    }));
    let f = move |(c, x): (Array, Array)| {
        let b = |v: i64| Array::scalar(v);
        ok(jaxon_trace::bind1(&prim, &[c, b(1), b(6), b(2), b(1), x]))
    };
    let c = arr(&[4, 3], 34);
    let x = arr(&[4, 3], 35);
    for (what, axes, args) in [
        ("both", (Some(0), Some(0)), (c.clone(), x.clone())),
        ("const", (Some(0), None), (c.clone(), take(&x, 0, 1))),
        ("carry", (None, Some(0)), (take(&c, 0, 2), x.clone())),
    ] {
        let got = vmap(f.clone())
            .in_axes(Axes::Leaves(vec![
                axes.0.map(|a: isize| a),
                axes.1.map(|a: isize| a),
            ]))
            .call(args.clone())
            .unwrap();
        let rows: Vec<Array> = (0..4)
            .map(|i| {
                let ci = if axes.0.is_some() {
                    take(&args.0, 0, i)
                } else {
                    args.0.clone()
                };
                let xi = if axes.1.is_some() {
                    take(&args.1, 0, i)
                } else {
                    args.1.clone()
                };
                // The loop in Rust: x = x * c + i for i in 1, 3, 5.
                let (cv, mut xv) = (ci.to_vec::<f64>(), xi.to_vec::<f64>());
                for k in [1.0, 3.0, 5.0] {
                    for (xe, ce) in xv.iter_mut().zip(&cv) {
                        *xe = *xe * ce + k;
                    }
                }
                Array::from_vec(xv, &[3])
            })
            .collect();
        assert_close(&format!("for_loop {what}"), &got, &stack(&rows, 0), 1e-12);
    }
}

#[test]
fn grad_of_vmap_matches_grad_of_a_loop() {
    // d/dw sum_i f(w, x_i), with the batched program differentiated.
    let f = |(w, x): (Array, Array)| (x.matmul(&w).tanh() * x.sum(All).sin()).sum(All);
    let w = arr(&[3, 2], 36);
    let x = arr(&[5, 3], 37);
    let xb = x.clone();
    let g = grad(move |w: Array| ok(vmap(f).in_axes((None, 0)).call((w, xb.clone()))).sum(All))(
        w.clone(),
    )
    .unwrap();
    let xl = x.clone();
    let want = grad(move |w: Array| {
        let mut acc = f((w.clone(), take(&xl, 0, 0)));
        for i in 1..5 {
            acc = acc + f((w.clone(), take(&xl, 0, i)));
        }
        acc
    })(w)
    .unwrap();
    assert_close("grad(vmap)", &g, &want, 1e-12);
}
