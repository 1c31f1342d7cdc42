//! The user API of `shard_map` and `pmap` on the reference interpreter with
//! 4 host devices: each collective against its single-device definition
//! computed here on the host, on random inputs; grads against the
//! unsharded function's; `jit`, `vmap` and captured values; the printed
//! jaxpr parses back; and the errors a user meets (mesh too large, specs
//! that do not divide, unbound axes, bad permutations).

use jaxon_ir::DType;
use jaxon_trace::error::ok_or_raise as ok;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{jit, make_jaxpr, random, Array};
use jaxon_transforms::spmd::{all_gather_with, all_to_all, ppermute, psum_scatter};
use jaxon_transforms::{axis_index, grad, make_mesh, pmap, pmean, psum, shard_map, vmap, P};

const N: usize = 4;

fn devices() {
    jaxon_ir::devices::set_host_device_count(N).unwrap();
}

fn rand(shape: &[usize], seed: u64) -> Array {
    random::normal(&random::key(seed), shape, DType::F32).unwrap()
}

fn close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: size");
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
            "{what}[{k}]: {a} vs {b}"
        );
    }
}

#[test]
fn psum_of_shards_is_the_sum_over_the_split_axis() {
    devices();
    let mesh = make_mesh(&[N], &["x"]).unwrap();
    let x = rand(&[8, 3], 1);
    let f = shard_map(
        |s: Array| ok(psum(&ok(jnp::sum(&s, 0, false)), "x")),
        &mesh,
        P!("x"),
        P!(),
    );
    let got = f.call(x.clone()).unwrap();
    assert_eq!(got.shape(), vec![3]);
    let v = x.to_vec::<f32>();
    let want: Vec<f32> = (0..3).map(|j| (0..8).map(|i| v[i * 3 + j]).sum()).collect();
    close("psum", &got.to_vec::<f32>(), &want);
}

#[test]
fn pmean_axis_index_and_all_gather() {
    devices();
    let mesh = make_mesh(&[N], &["x"]).unwrap();
    let x = rand(&[N * 2, 3], 2);
    let f = shard_map(
        |s: Array| {
            let m = ok(pmean(&s, "x"));
            let i = ok(axis_index("x"));
            let i = ok(jnp::reshape(&i, &[1]));
            let g = ok(all_gather_with(&s, "x", 0, true));
            let st = ok(all_gather_with(&s, "x", 1, false));
            (m, i, g, st)
        },
        &mesh,
        P!("x"),
        (P!(), P!("x"), P!(), P!()),
    );
    let (m, i, g, st) = f.call(x.clone()).unwrap();
    let v = x.to_vec::<f32>();
    let mean: Vec<f32> = (0..6)
        .map(|k| (0..N).map(|d| v[d * 6 + k]).sum::<f32>() / N as f32)
        .collect();
    close("pmean", &m.to_vec::<f32>(), &mean);
    assert_eq!(i.to_vec::<i32>(), vec![0, 1, 2, 3]);
    close("all_gather tiled", &g.to_vec::<f32>(), &v);
    // Stacked along axis 1: [2, N, 3], element [r, d, c] = x[2d + r, c].
    assert_eq!(st.shape(), vec![2, N, 3]);
    let want: Vec<f32> = (0..2)
        .flat_map(|r| (0..N).flat_map(move |d| (0..3).map(move |c| (r, d, c))))
        .map(|(r, d, c)| v[(2 * d + r) * 3 + c])
        .collect();
    close("all_gather stacked", &st.to_vec::<f32>(), &want);
}

#[test]
fn ppermute_ring_is_a_roll_of_the_blocks() {
    devices();
    let mesh = make_mesh(&[N], &["x"]).unwrap();
    let x = rand(&[N * 2, 5], 3);
    let perm: Vec<(usize, usize)> = (0..N).map(|i| (i, (i + 1) % N)).collect();
    let f = shard_map(
        |s: Array| ok(ppermute(&s, "x", &perm)),
        &mesh,
        P!("x"),
        P!("x"),
    );
    let got = f.call(x.clone()).unwrap();
    let want = ok(jnp::roll(&x, 2, Some(0)));
    close("ppermute", &got.to_vec::<f32>(), &want.to_vec::<f32>());
}

#[test]
fn psum_scatter_and_all_to_all() {
    devices();
    let mesh = make_mesh(&[N], &["x"]).unwrap();
    let x = rand(&[N * 2, 3], 4);
    let f = shard_map(
        |s: Array| ok(psum_scatter(&s, "x", 0, true)),
        &mesh,
        P!(),
        P!("x"),
    );
    let got = f.call(x.clone()).unwrap();
    let want: Vec<f32> = x.to_vec::<f32>().iter().map(|v| v * N as f32).collect();
    close(
        "psum_scatter of a replicated value",
        &got.to_vec::<f32>(),
        &want,
    );
    // Rows split in, columns split out: the same global array.
    let y = rand(&[N * 2, N * 3], 5);
    let g = shard_map(
        |s: Array| ok(all_to_all(&s, "x", 1, 0)),
        &mesh,
        P!("x"),
        P!(None, "x"),
    );
    let got = g.call(y.clone()).unwrap();
    close("all_to_all", &got.to_vec::<f32>(), &y.to_vec::<f32>());
}

#[test]
fn pmap_func13_matches_its_definition() {
    devices();
    let x = rand(&[2, 3], 6);
    let y = Array::from_vec(vec![1.39f32], &[]);
    let f = pmap(|(a, b): (Array, Array)| {
        let s = ok(psum(&a, "rows"));
        (&(&a + &b) + 1.0) / &s
    })
    .axis_name("rows")
    .in_axes((0, None::<i32>));
    let got = f.call((x.clone(), y)).unwrap();
    let v = x.to_vec::<f32>();
    let want: Vec<f32> = (0..6)
        .map(|k| (v[k] + 1.39 + 1.0) / (v[k % 3] + v[3 + k % 3]))
        .collect();
    close("pmap func13", &got.to_vec::<f32>(), &want);
}

#[test]
fn grads_match_the_unsharded_function() {
    devices();
    let mesh = make_mesh(&[N], &["x"]).unwrap();
    let x = rand(&[N, 3], 7);
    let w = rand(&[3], 8);
    let sharded = |(x, w): (Array, Array)| {
        shard_map(
            |(s, w): (Array, Array)| {
                let l = ok(jnp::sum(&ok(jnp::tanh(&(&s * &w))), All, false));
                ok(psum(&l, "x"))
            },
            &mesh,
            (P!("x"), P!()),
            P!(),
        )
        .call((x, w))
        .unwrap()
    };
    let plain = |(x, w): (Array, Array)| ok(jnp::sum(&ok(jnp::tanh(&(&x * &w))), All, false));
    close(
        "loss",
        &sharded((x.clone(), w.clone())).to_vec::<f32>(),
        &plain((x.clone(), w.clone())).to_vec::<f32>(),
    );
    let (gx, gw) = grad(sharded)((x.clone(), w.clone())).unwrap();
    let (px, pw) = grad(plain)((x, w)).unwrap();
    close("d/dx", &gx.to_vec::<f32>(), &px.to_vec::<f32>());
    close("d/dw", &gw.to_vec::<f32>(), &pw.to_vec::<f32>());
}

#[test]
fn pmap_pmean_grads_are_data_parallel_grads() {
    devices();
    // Per-device loss on a slice, gradient pmean'ed: the full-batch mean.
    let x = rand(&[N, 5], 9);
    let w = rand(&[5], 10);
    let loss = |x: Array| move |w: Array| ok(jnp::sum(&ok(jnp::sin(&(&x * &w))), All, false));
    let per_device = pmap(|(x, w): (Array, Array)| {
        let g = ok(grad(loss(x))(w));
        ok(pmean(&g, "d"))
    })
    .axis_name("d")
    .in_axes((0, None::<i32>))
    .out_axes(None::<i32>);
    let got = per_device.call((x.clone(), w.clone())).unwrap();
    let full = grad(loss(x))(w).unwrap();
    let want: Vec<f32> = full.to_vec::<f32>().iter().map(|g| g / N as f32).collect();
    close("pmean of grads", &got.to_vec::<f32>(), &want);
}

#[test]
fn jit_vmap_and_captured_values() {
    devices();
    let mesh = make_mesh(&[2, 2], &["a", "b"]).unwrap();
    let x = rand(&[4, 6], 11);
    let w = rand(&[3], 12);
    // `w` is a jit argument the body closes over: a replicated operand.
    let f = |(x, w): (Array, Array)| {
        shard_map(
            |s: Array| ok(psum(&(&s * &w), "b")),
            &mesh,
            P!("a", "b"),
            P!("a"),
        )
        .call(x)
        .unwrap()
    };
    let got = jit(f).call((x.clone(), w.clone())).unwrap();
    // Rows split over a, columns over b: psum over b sums the column blocks.
    let (xv, wv) = (x.to_vec::<f32>(), w.to_vec::<f32>());
    let want: Vec<f32> = (0..4)
        .flat_map(|r| (0..3).map(move |c| (r, c)))
        .map(|(r, c)| (xv[r * 6 + c] + xv[r * 6 + c + 3]) * wv[c])
        .collect();
    close(
        "jit(shard_map) over a 2x2 mesh",
        &got.to_vec::<f32>(),
        &want,
    );
    // vmap over a leading batch: the same as a loop of calls.
    let xs = rand(&[3, 4, 6], 13);
    let batched = vmap(|x: Array| f((x, w.clone()))).call(xs.clone()).unwrap();
    for b in 0..3i32 {
        let one = f((
            ok(jnp::take(&xs, &Array::from_vec(vec![b], &[]), Some(0))),
            w.clone(),
        ));
        let got = ok(jnp::take(&batched, &Array::from_vec(vec![b], &[]), Some(0)));
        close(
            "vmap(shard_map)",
            &got.to_vec::<f32>(),
            &one.to_vec::<f32>(),
        );
    }
}

#[test]
fn the_printed_jaxpr_is_jax_text_and_parses_back() {
    devices();
    let mesh = make_mesh(&[2], &["rows"]).unwrap();
    let f = |x: Array| {
        shard_map(|s: Array| ok(psum(&s, "rows")), &mesh, P!("rows"), P!())
            .call(x)
            .unwrap()
    };
    let j = make_jaxpr(f)(rand(&[4, 3], 14)).unwrap();
    let text = j.to_string();
    for part in [
        "shard_map[",
        "check_vma=False",
        "in_specs=(P('rows',),)",
        "mesh=Mesh('rows': 2, axis_types=(Auto,))",
        "newly_manual_axes=frozenset({'rows'})",
        "out_specs=(P(),)",
        "psum[axes=('rows',) axis_index_groups=None]",
        "f32[2,3]",
    ] {
        assert!(text.contains(part), "{part} missing from\n{text}");
    }
    let back = jaxon_ir::parse_closed_jaxpr(&text, Vec::new()).unwrap();
    assert_eq!(back.to_string(), text);
}

#[test]
fn user_errors_name_the_problem() {
    devices();
    let e = make_mesh(&[8], &["x"]).unwrap_err().to_string();
    assert!(e.contains("needs 8 devices") && e.contains("has 4"), "{e}");
    let e = make_mesh(&[2, 2], &["x", "x"]).unwrap_err().to_string();
    assert!(e.contains("named twice"), "{e}");
    let mesh = make_mesh(&[N], &["x"]).unwrap();
    let e = shard_map(|s: Array| s, &mesh, P!("x"), P!("x"))
        .call(rand(&[6, 2], 15))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("[6, 2]") && e.contains("not divisible by 4"),
        "{e}"
    );
    let e = shard_map(|s: Array| s, &mesh, P!("y"), P!("x"))
        .call(rand(&[8], 16))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'y'"), "{e}");
    let e = shard_map(|s: Array| ok(psum(&s, "z")), &mesh, P!("x"), P!())
        .call(rand(&[8], 17))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unbound axis name 'z'"), "{e}");
    let e = shard_map(
        |s: Array| ok(ppermute(&s, "x", &[(0, 1), (2, 1)])),
        &mesh,
        P!("x"),
        P!("x"),
    )
    .call(rand(&[8], 18))
    .unwrap_err()
    .to_string();
    assert!(e.contains("twice"), "{e}");
    let e = psum(&rand(&[2], 19), "x").unwrap_err().to_string();
    assert!(e.contains("unbound axis name 'x'"), "{e}");
    let e = pmap(|x: Array| x)
        .call(rand(&[8, 2], 20))
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs 8 devices"), "{e}");
}
