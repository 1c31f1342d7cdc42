//! Collectives over a named `vmap` axis staged inside `jit` and control-flow
//! bodies: they bind `psum`/`pmax`/`pmin`/`all_gather`/`axis_index`
//! primitives, and the vmap's batching rule resolves them when it batches
//! the body. Values are checked against reductions computed by hand over a
//! loop of members, texts against JAX 0.10.2, gradients against JAX's.

use jaxon_ir::{parse_closed_jaxpr, DType, HostArray, Storage};
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{control, jit, lax, make_jaxpr, Array};
use jaxon_transforms::{all_gather, axis_index, grad, pmax, pmean, pmin, psum, vmap};

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            2.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 1.0
        })
        .collect()
}

fn arr(shape: &[usize], seed: u64) -> Array {
    Array::from_vec(rand(shape.iter().product(), seed), shape)
}

fn f64s(x: &Array) -> Vec<f64> {
    lax::convert_element_type(x, DType::F64, false)
        .unwrap()
        .to_vec::<f64>()
}

fn assert_close(what: &str, got: &Array, want: &[f64], tol: f64) {
    let g = f64s(got);
    assert_eq!(g.len(), want.len(), "{what}: size");
    for (k, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{k}]: {a} vs {b}"
        );
    }
}

/// Column-wise reductions of a `[n, m]` matrix given as rows.
fn by_column(x: &Array, f: fn(&[f64]) -> f64) -> Vec<f64> {
    let s = x.shape();
    let v = f64s(x);
    (0..s[1])
        .map(|j| f(&(0..s[0]).map(|i| v[i * s[1] + j]).collect::<Vec<_>>()))
        .collect()
}

fn sum(v: &[f64]) -> f64 {
    v.iter().sum()
}
fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}
fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

#[test]
fn collectives_inside_jit_under_vmap_match_a_loop() {
    let x = arr(&[4, 3], 1);
    let body = jit(|v: Array| {
        (
            ok(psum(&v, "i")),
            &v - &ok(pmean(&v, "i")),
            ok(pmax(&v, "i")),
            ok(pmin(&v, "i")),
            ok(all_gather(&v, "i")) * 2.0,
            ok(axis_index("i")),
            ok(psum(&Array::from_vec(vec![1.5f64], &[]), "i")),
        )
    })
    .name("body");
    let (s, c, mx, mn, g, idx, k) = vmap(|v: Array| ok(body.call(v)))
        .axis_name("i")
        .call(x.clone())
        .unwrap();
    let (cs, cmax, cmin) = (by_column(&x, sum), by_column(&x, max), by_column(&x, min));
    let xv = f64s(&x);
    let rep = |v: &[f64]| v.repeat(4);
    assert_close("psum", &s, &rep(&cs), 1e-12);
    let centered: Vec<f64> = (0..12).map(|k| xv[k] - cs[k % 3] / 4.0).collect();
    assert_close("x - pmean", &c, &centered, 1e-12);
    assert_close("pmax", &mx, &rep(&cmax), 0.0);
    assert_close("pmin", &mn, &rep(&cmin), 0.0);
    let gathered: Vec<f64> = xv.iter().map(|v| 2.0 * v).collect();
    assert_close("all_gather", &g, &rep(&gathered), 0.0);
    assert_eq!(g.shape(), vec![4, 4, 3]);
    assert_eq!(idx.to_vec::<i32>(), vec![0, 1, 2, 3]);
    assert_eq!(
        k.to_vec::<f64>(),
        vec![6.0; 4],
        "psum of a constant in the body"
    );
    // The same, staged end to end: jit(vmap(jit)).
    let whole = jit(|x: Array| ok(vmap(|v: Array| ok(body.call(v))).axis_name("i").call(x)));
    let (s2, c2, ..) = whole.call(x.clone()).unwrap();
    assert_close("jit(vmap(jit)) psum", &s2, &rep(&cs), 1e-12);
    assert_close("jit(vmap(jit)) centered", &c2, &centered, 1e-12);
}

#[test]
fn collectives_in_cond_branches_with_shared_and_batched_predicates() {
    let x = arr(&[5, 3], 2);
    let xv = f64s(&x);
    let cs = by_column(&x, sum);
    let cmax = by_column(&x, max);
    let branch = |p: &Array, v: Array| {
        ok(control::cond(
            p,
            |v: Array| ok(psum(&v, "i")) * &v,
            |v: Array| &v - &ok(pmax(&v, "i")) + ok(axis_index("i")).astype(DType::F64),
            v,
        ))
    };
    let t: Vec<f64> = (0..15).map(|k| cs[k % 3] * xv[k]).collect();
    let f: Vec<f64> = (0..15)
        .map(|k| xv[k] - cmax[k % 3] + (k / 3) as f64)
        .collect();
    // A shared predicate: one branch for every member.
    for (p, want) in [(true, &t), (false, &f)] {
        let got = vmap(move |v: Array| branch(&Array::from_vec(vec![p], &[]), v))
            .axis_name("i")
            .call(x.clone())
            .unwrap();
        assert_close(&format!("cond shared {p}"), &got, want, 1e-12);
    }
    // A batched predicate: member k takes the branch of pred[k]; each
    // branch's collective still ranges over every member.
    let pred = Array::from_vec(vec![true, false, false, true, false], &[5]);
    let got = vmap(|(p, v): (Array, Array)| branch(&p, v))
        .axis_name("i")
        .call((pred, x.clone()))
        .unwrap();
    let pk = [true, false, false, true, false];
    let want: Vec<f64> = (0..15)
        .map(|k| if pk[k / 3] { t[k] } else { f[k] })
        .collect();
    assert_close("cond batched", &got, &want, 1e-12);
}

#[test]
fn collectives_in_scan_and_fori_loop_bodies() {
    let x = arr(&[4, 3], 3);
    // fori_loop: c <- c * 0.5 + pmean(c) + axis_index, three times.
    let got = vmap(|v: Array| {
        ok(control::fori_loop(
            0,
            3,
            |_i, c: Array| {
                c.clone() * 0.5 + ok(pmean(&c, "i")) + ok(axis_index("i")).astype(DType::F64)
            },
            v,
        ))
    })
    .axis_name("i")
    .call(x.clone())
    .unwrap();
    let mut c = f64s(&x);
    for _ in 0..3 {
        let m: Vec<f64> = (0..3)
            .map(|j| (0..4).map(|i| c[i * 3 + j]).sum::<f64>() / 4.0)
            .collect();
        c = (0..12)
            .map(|k| c[k] * 0.5 + m[k % 3] + (k / 3) as f64)
            .collect();
    }
    assert_close("fori_loop", &got, &c, 1e-12);
    // scan over xs [4 members, 6 steps, 3]: h <- tanh(h + psum(x_t)),
    // ys = pmax(h).
    let xs = arr(&[4, 6, 3], 4);
    let h0 = arr(&[4, 3], 5);
    let (h, ys) = vmap(|(h0, xs): (Array, Array)| {
        ok(control::scan(
            |h: Array, xt: Array| {
                let h2 = (h + ok(psum(&xt, "i"))).tanh();
                (h2.clone(), ok(pmax(&h2, "i")))
            },
            h0,
            xs,
            None,
            false,
        ))
    })
    .axis_name("i")
    .call((h0.clone(), xs.clone()))
    .unwrap();
    let xsv = f64s(&xs);
    let mut hv = f64s(&h0);
    let mut ysv = vec![0.0; 4 * 6 * 3];
    for t in 0..6 {
        let s: Vec<f64> = (0..3)
            .map(|j| (0..4).map(|i| xsv[(i * 6 + t) * 3 + j]).sum())
            .collect();
        hv = (0..12).map(|k| (hv[k] + s[k % 3]).tanh()).collect();
        for i in 0..4 {
            for j in 0..3 {
                ysv[(i * 6 + t) * 3 + j] = (0..4).map(|m| hv[m * 3 + j]).fold(f64::MIN, f64::max);
            }
        }
    }
    assert_close("scan carry", &h, &hv, 1e-12);
    assert_close("scan ys", &ys, &ysv, 1e-12);
}

#[test]
fn nested_vmaps_with_two_names_around_a_jit() {
    // Outer "i" over rows, inner "j" over columns, a jit body reducing
    // over both and taking both indices.
    let x = arr(&[3, 5], 6);
    let body = jit(|v: Array| {
        let col = ok(psum(&v, "i"));
        let rowmax = ok(pmax(&v, "j"));
        let ij = ok(axis_index("i")) * 10 + ok(axis_index("j"));
        let g = ok(all_gather(&v, "i"));
        (col, rowmax, ij, g)
    });
    let (c, r, ij, g) =
        vmap(|row: Array| ok(vmap(|v: Array| ok(body.call(v))).axis_name("j").call(row)))
            .axis_name("i")
            .call(x.clone())
            .unwrap();
    let xv = f64s(&x);
    let cols = by_column(&x, sum);
    let rows: Vec<f64> = (0..3).map(|i| max(&xv[i * 5..i * 5 + 5])).collect();
    let ijv = ij.to_vec::<i32>();
    let (cv, rv, gv) = (f64s(&c), f64s(&r), f64s(&g));
    assert_eq!(g.shape(), vec![3, 5, 3]);
    for (i, rowmax) in rows.iter().enumerate() {
        for j in 0..5 {
            let k = i * 5 + j;
            assert!((cv[k] - cols[j]).abs() < 1e-12, "psum i at {i},{j}");
            assert_eq!(rv[k], *rowmax, "pmax j at {i},{j}");
            assert_eq!(ijv[k], (10 * i + j) as i32);
            for m in 0..3 {
                assert_eq!(gv[k * 3 + m], xv[m * 5 + j], "all_gather i at {i},{j},{m}");
            }
        }
    }
}

#[test]
fn grad_through_collectives_inside_jit_under_vmap_matches_jax() {
    // x[k, j] = sin(1.3 k + 0.7 j + 0.1); per member
    // L(v) = jit(sum(psum(v) * sin(v))) and jit(sum(pmean(v) * v)); JAX
    // 0.10.2 (x64) gives these gradients (psum transposes to psum).
    let xv: Vec<f64> = (0..12)
        .map(|k| (1.3 * (k / 3) as f64 + 0.7 * (k % 3) as f64 + 0.1).sin())
        .collect();
    let x = Array::from_vec(xv, &[4, 3]);
    let l1 = jit(|v: Array| (ok(psum(&v, "i")) * v.sin()).sum(All));
    let g1 = vmap(|v: Array| ok(grad(|v: Array| ok(l1.call(v)))(v)))
        .axis_name("i")
        .call(x.clone())
        .unwrap();
    let want1 = [
        1.413172761018474,
        0.5681075157305552,
        -0.399458033275317,
        1.07867993228984,
        0.5344450737283224,
        -0.5034000089589886,
        1.34895038898775,
        0.6376727172490791,
        -0.4359332304028929,
        1.2106129844869318,
        0.4988026028830602,
        -0.44433730977373803,
    ];
    assert_close("grad psum", &g1, &want1, 1e-12);
    let l2 = jit(|v: Array| (ok(pmean(&v, "i")) * &v).sum(All));
    let g2 = vmap(|v: Array| ok(grad(|v: Array| ok(l2.call(v)))(v)))
        .axis_name("i")
        .call(x)
        .unwrap();
    let want2 = [
        0.37793026578059497,
        0.16255054897873222,
        -0.1292792309302191,
    ];
    assert_close("grad pmean", &g2, &want2.repeat(4), 1e-12);
}

fn ones(shape: &[usize]) -> Array {
    jnp::ones(shape, DType::F32).unwrap()
}

// The binding outlives the temporaries that borrow `j`.
#[allow(clippy::let_and_return)]
fn batched_text(f: impl Fn(Array) -> Array + Copy, name: &str) -> String {
    let j = jit(f).name(name);
    let text =
        make_jaxpr(|x: Array| ok(vmap(|v: Array| ok(j.call(v))).axis_name("i").call(x)))(ones(&[
            4, 3,
        ]))
        .unwrap()
        .to_string();
    text
}

#[test]
fn golden_vmap_of_jit_bodies_with_collectives() {
    // jax.make_jaxpr(jax.vmap(jax.jit(g), axis_name='i'))(jnp.ones((4, 3)))
    let g = |a: Array| ok(psum(&a, "i")) * a;
    assert_eq!(
        batched_text(g, "g"),
        "\
{ lambda ; a:f32[4,3]. let
    b:f32[4,3] = jit[
      name=g
      jaxpr={ lambda ; a:f32[4,3]. let
          c:f32[3] = psum[axes=(0,) axis_index_groups=None] a
          d:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] c
          b:f32[4,3] = mul d a
        in (b,) }
    ] a
  in (b,) }"
    );
    let h = |a: Array| &a - &ok(pmean(&a, "i")) + ok(axis_index("i")).astype(DType::F32);
    assert_eq!(
        batched_text(h, "h"),
        "\
{ lambda ; a:f32[4,3]. let
    b:f32[4,3] = jit[
      name=h
      jaxpr={ lambda ; a:f32[4,3]. let
          c:f32[3] = psum[axes=(0,) axis_index_groups=None] a
          d:f32[3] = div c 4.0:f32[]
          e:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] d
          f:f32[4,3] = sub a e
          g:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
          h:f32[4] = convert_element_type[new_dtype=float32 weak_type=False] g
          i:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] h
          b:f32[4,3] = add f i
        in (b,) }
    ] a
  in (b,) }"
    );
    let mx = |a: Array| ok(pmax(&a, "i")) - a;
    assert_eq!(
        batched_text(mx, "mx"),
        "\
{ lambda ; a:f32[4,3]. let
    b:f32[4,3] = jit[
      name=mx
      jaxpr={ lambda ; a:f32[4,3]. let
          c:f32[3] = pmax[axes=(0,) axis_index_groups=None] a
          d:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] c
          b:f32[4,3] = sub d a
        in (b,) }
    ] a
  in (b,) }"
    );
}

/// JAX 0.10.2: `jax.make_jaxpr(f, axis_env=[('i', 4)])(jnp.ones(3))`.
const AXIS_ENV_TEXT: &str = "\
{ lambda ; a:f32[3]. let
    b:f32[3] = pmax[axes=('i',) axis_index_groups=None] a
    c:f32[3] = psum[axes=('i',) axis_index_groups=None] a
    d:f32[3] = psum[axes=('i',) axis_index_groups=None] a
    e:f32[3] = div d 4.0:f32[]
    f:i32[] = axis_index[axis_name=i] 
    g:f32[4,3] = all_gather[
      all_gather_dimension=0
      axis_index_groups=None
      axis_name=('i',)
      axis_size=4
      tiled=False
    ] a
    h:f32[3] = pmin[axes=('i',) axis_index_groups=None] a
    i:f32[3] = add b c
    j:f32[3] = add i e
    k:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f
    l:f32[3] = add j k
    m:f32[3] = reduce_sum[axes=(0,) out_sharding=None] g
    n:f32[3] = add l m
    o:f32[3] = add n h
  in (o,) }";

#[test]
fn jax_text_with_named_collectives_round_trips_and_batches() {
    let closed = parse_closed_jaxpr(AXIS_ENV_TEXT, vec![]).unwrap();
    jaxon_ir::check_closed_jaxpr(&closed).unwrap();
    assert_eq!(closed.jaxpr.to_string(), AXIS_ENV_TEXT);
    // Outside any vmap the interpreter names the unbound axis.
    let x = HostArray::new(vec![3], Storage::F32(vec![1.0, 2.0, 3.0])).unwrap();
    let e = jaxon_ir::eval_closed_jaxpr(&closed, &[x])
        .unwrap_err()
        .to_string();
    assert!(e.contains("unbound axis name 'i'"), "{e}");
    // Batched by the vmap of axis 'i': member k of x gives
    // max + 2 sum + mean + k + sum + min over the members.
    let (bj, out_b) =
        jaxon_transforms::batch_jaxpr_named(&closed, &[true], 4, Some("i"), &[]).unwrap();
    assert_eq!(out_b, vec![true]);
    let x = arr(&[4, 3], 7).astype(DType::F32);
    let out = jaxon_trace::interpret::eval_closed_jaxpr(&bj, std::slice::from_ref(&x)).unwrap();
    let (s, mx, mn) = (by_column(&x, sum), by_column(&x, max), by_column(&x, min));
    let want: Vec<f64> = (0..12)
        .map(|k| {
            let j = k % 3;
            mx[j] + 2.0 * s[j] + s[j] / 4.0 + (k / 3) as f64 + mn[j]
        })
        .collect();
    assert_close("batched axis_env jaxpr", &out[0], &want, 1e-5);
    // The batched text uses positional axes and an iota, as JAX's does.
    let text = bj.jaxpr.to_string();
    assert!(
        text.contains("psum[axes=(0,) axis_index_groups=None]"),
        "{text}"
    );
    assert!(
        text.contains("pmin[axes=(0,)") && text.contains("iota["),
        "{text}"
    );
    assert!(!text.contains("'i'"), "{text}");
}

#[test]
fn unbound_names_are_errors_naming_the_axis() {
    let f = jit(|v: Array| ok(psum(&v, "i")));
    let e = f.call(arr(&[3], 8)).unwrap_err().to_string();
    assert!(e.contains("unbound axis name 'i'"), "{e}");
    let e = vmap(|v: Array| ok(f.call(v)))
        .axis_name("j")
        .call(arr(&[2, 3], 9))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unbound axis name 'i'"), "{e}");
}

#[test]
fn unbatched_operands_of_a_jit_with_collectives_still_see_the_axis() {
    // `c` is not mapped: the jit equation has no batched operand, but its
    // body names the axis, so the vmap still batches it (psum of a value
    // shared by 3 members is 3 times it; axis_index is per member).
    let body = jit(|c: Array| {
        (
            ok(psum(&c, "i")),
            ok(axis_index("i")).astype(DType::F64) + &c,
        )
    });
    let c = arr(&[2], 10);
    let (s, ic, _) = vmap(|(v, c): (Array, Array)| {
        let (s, ic) = ok(body.call(c));
        (s, ic, v * 2.0)
    })
    .in_axes((0, None))
    .axis_name("i")
    .call((arr(&[3], 11), c.clone()))
    .unwrap();
    let cv = f64s(&c);
    let rep: Vec<f64> = (0..3).flat_map(|_| cv.iter().map(|v| 3.0 * v)).collect();
    assert_close("psum of a shared input", &s, &rep, 1e-12);
    let idx: Vec<f64> = (0..3)
        .flat_map(|k| cv.iter().map(move |v| k as f64 + v))
        .collect();
    assert_close("axis_index + shared", &ic, &idx, 1e-12);
}

#[test]
fn grad_of_a_vmap_whose_jit_body_uses_psum() {
    // f(x) = sum_k sum_j psum(x)_j * x_kj = sum_j S_j^2, so
    // df/dx_kj = 2 S_j for every member k.
    let x = arr(&[4, 3], 12);
    let body = jit(|v: Array| ok(psum(&v, "i")) * v);
    let f = |x: Array| ok(vmap(|v: Array| ok(body.call(v))).axis_name("i").call(x)).sum(All);
    let g = grad(f)(x.clone()).unwrap();
    let s = by_column(&x, sum);
    let want: Vec<f64> = (0..12).map(|k| 2.0 * s[k % 3]).collect();
    assert_close("grad(vmap(jit(psum)))", &g, &want, 1e-12);
}

#[test]
fn grad_through_all_gather_inside_jit_under_vmap_matches_jax() {
    // Per member L(v) = sum(all_gather(v) * w * v) with x, w as below; JAX
    // transposes all_gather to psum_scatter (this member's slice of the
    // summed cotangent).
    let xv: Vec<f64> = (0..12)
        .map(|k| (1.3 * (k / 3) as f64 + 0.7 * (k % 3) as f64 + 0.1).sin())
        .collect();
    let wv: Vec<f64> = (0..12)
        .map(|k| (0.9 * (k / 3) as f64 - 0.4 * (k % 3) as f64).cos())
        .collect();
    let x = Array::from_vec(xv, &[4, 3]);
    let w = Array::from_vec(wv, &[4, 3]);
    let l = jit(move |v: Array| (ok(all_gather(&v, "i")) * &w * &v).sum(All));
    let g = vmap(|v: Array| ok(grad(|v: Array| ok(l.call(v)))(v)))
        .axis_name("i")
        .call(x)
        .unwrap();
    let want = [
        2.0553617725965685,
        2.340495440635445,
        0.6558463258167128,
        1.7693516820761772,
        2.326360554618198,
        0.5787189944343476,
        1.1277681449688457,
        2.096314004972875,
        0.6962860078084491,
        0.6161487912006989,
        1.8244504341385117,
        0.9195749940971181,
    ];
    assert_close("grad all_gather", &g, &want, 1e-12);
}
