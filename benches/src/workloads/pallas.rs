//! The Pallas workloads: `pallas_add_interpret` and
//! `pallas_matmul_interpret`. JAX can only interpret Pallas kernels on a
//! CPU; jaxon compiles them (the CPU backend runs the kernel natively over
//! the grid), so these run `jit` of the `pallas_call` as a user would.
//! `pallas_matmul_gelu` (not in WORKLOADS.md) is issue 7's fused matmul +
//! GELU kernel against `jit(gelu(x @ y))` on the same backend.

use super::{backend_name, normal, ok, Settings};
use crate::measure::{emit, measure, sig, timing_details};
use jaxon::nn;
use jaxon::pallas::{
    dot, ds, fori_loop, ix, load, pallas_call, shape_dtype, store, BlockSpec, Ref,
};
use jaxon::prelude::*;
use serde_json::json;

fn add_kernel(r: &[Ref]) {
    let x = load(&r[0], ()).read();
    let y = load(&r[1], ()).read();
    store(&r[2], (), x + y);
}

fn matmul_kernel(r: &[Ref]) {
    let a = load(&r[0], ()).read();
    let b = load(&r[1], ()).read();
    store(&r[2], (), dot(&a, &b));
}

/// Times `f` on `args` and emits `time_per_call`, with the largest error
/// against `want`.
fn run(
    name: &str,
    f: &jaxon::Jit<impl Fn((Array, Array)) -> Array, (Array, Array), Array>,
    args: (Array, Array),
    want: &Array,
    s: Settings,
) {
    run_with(name, f, args, want, s, &[], 0.0);
}

/// [`run`] with extra details; with `flops > 0`, the throughput
/// (`gflop_per_s`) and, when `jit_matmul_ms` is among the extras, the
/// ratio of the two times (`ratio_vs_jit`).
fn run_with(
    name: &str,
    f: &jaxon::Jit<impl Fn((Array, Array)) -> Array, (Array, Array), Array>,
    args: (Array, Array),
    want: &Array,
    s: Settings,
    extra: &[(&str, serde_json::Value)],
    flops: f64,
) {
    let y = f.call(args.clone()).expect("runs");
    let err = ok(jnp::max(&(&y - want).abs(), All, false)).item::<f32>();
    let m = measure(
        || {
            let y = f.call(args.clone()).expect("runs");
            super::ready(&y);
        },
        s.reps,
        s.min_time,
        2,
    );
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("max_abs_err".into(), json!(err));
    d.insert("backend".into(), json!(backend_name()));
    d.insert("mode".into(), json!("compiled (jit of pallas_call)"));
    for (k, v) in extra {
        d.insert((*k).into(), v.clone());
    }
    if flops > 0.0 {
        d.insert(
            "gflop_per_s".into(),
            json!(sig(flops / m.median_s / 1e9, 4)),
        );
        if let Some(j) = extra
            .iter()
            .find(|(k, _)| *k == "jit_matmul_ms")
            .and_then(|(_, v)| v.as_f64())
        {
            d.insert("ratio_vs_jit".into(), json!(sig(m.median_s * 1e3 / j, 3)));
        }
    }
    emit(name, "time_per_call", sig(m.median_s * 1e3, 4), "ms", d);
}

/// `pallas_call` add of `f32[65536]`, grid (64,), blocks of 1024.
pub fn pallas_add_interpret(s: Settings) {
    let n = 65536;
    let call = pallas_call(add_kernel, shape_dtype(&[n], DType::F32))
        .grid(64)
        .in_specs(vec![
            BlockSpec::map1([Some(1024)], |i| (i,)),
            BlockSpec::map1([Some(1024)], |i| (i,)),
        ])
        .out_spec(BlockSpec::map1([Some(1024)], |i| (i,)));
    let f = jit(move |(x, y): (Array, Array)| ok(call.call1(&[x, y])));
    let (x, y) = (normal(11, &[n]), normal(12, &[n]));
    let want = &x + &y;
    run("pallas_add_interpret", &f, (x, y), &want, s);
}

/// `pallas_call` matmul 256³, grid (4,4), `(64,256)↦(i,0)`,
/// `(256,64)↦(0,j)`, out `(64,64)↦(i,j)`, kernel `o = dot(a, b)`.
pub fn pallas_matmul_interpret(s: Settings) {
    let n = 256;
    let call = pallas_call(matmul_kernel, shape_dtype(&[n, n], DType::F32))
        .grid([4, 4])
        .in_specs(vec![
            BlockSpec::map2([64, 256], |i, _| (i, 0)),
            BlockSpec::map2([256, 64], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([64, 64], |i, j| (i, j)));
    let f = jit(move |(a, b): (Array, Array)| ok(call.call1(&[a, b])));
    let (a, b) = (normal(13, &[n, n]), normal(14, &[n, n]));
    let want = ok(jnp::matmul(&a, &b));
    // The ceiling: `jit(a @ b)` on the same backend.
    let plain = jit(|(a, b): (Array, Array)| ok(jnp::matmul(&a, &b)));
    let mp = measure(
        || {
            let y = plain.call((a.clone(), b.clone())).expect("runs");
            super::ready(&y);
        },
        s.reps,
        s.min_time,
        2,
    );
    let extra = [("jit_matmul_ms", json!(sig(mp.median_s * 1e3, 4)))];
    run_with(
        "pallas_matmul_interpret",
        &f,
        (a, b),
        &want,
        s,
        &extra,
        2.0 * (n * n * n) as f64,
    );
}

/// Issue 7's fused matmul: `x (512, 256) · y (256, 1024)`, blocks
/// `(128, K)` / `(K, 256)` over a `(4, 4)` grid, a `block_k` loop of 128
/// accumulating `acc += x @ y`, GELU (tanh) fused; against
/// `jit(gelu(x @ y))`, both on the default backend. Emits the kernel's time
/// with the plain version's and their ratio.
pub fn pallas_matmul_gelu(s: Settings) {
    let (m, k, n) = (512, 256, 1024);
    let (bm, bn, bk) = (128, 256, 128);
    let kernel = move |r: &[Ref]| {
        let (x_ref, y_ref, o_ref) = (&r[0], &r[1], &r[2]);
        let acc = ok(jnp::zeros(&[bm, bn], DType::F32));
        let acc = ok(fori_loop(
            0,
            k / bk,
            |kb, acc: Array| {
                let start = &kb * bk as i32;
                let x = x_ref.get(ix![.., ds(&start, bk)]);
                let y = y_ref.get(ix![ds(&start, bk), ..]);
                acc + dot(&x, &y)
            },
            acc,
        ));
        o_ref.store(ok(nn::gelu(&acc, true)));
    };
    let call = pallas_call(kernel, shape_dtype(&[m, n], DType::F32))
        .grid([m / bm, n / bn])
        .in_specs(vec![
            BlockSpec::map2([bm, k], |i, _| (i, 0)),
            BlockSpec::map2([k, bn], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bn], |i, j| (i, j)));
    let fused = jit(move |(x, y): (Array, Array)| ok(call.call1(&[x, y])));
    let plain = jit(|(x, y): (Array, Array)| ok(nn::gelu(&ok(jnp::matmul(&x, &y)), true)));
    let (x, y) = (normal(15, &[m, k]), normal(16, &[k, n]));
    let want = plain.call((x.clone(), y.clone())).expect("runs");
    let got = fused.call((x.clone(), y.clone())).expect("runs");
    let err = ok(jnp::max(&(&got - &want).abs(), All, false)).item::<f32>();
    let time = |f: &dyn Fn() -> Array| {
        measure(
            || {
                std::hint::black_box(f().buffer());
            },
            s.reps,
            s.min_time,
            2,
        )
    };
    let mf = time(&|| fused.call((x.clone(), y.clone())).expect("runs"));
    let mp = time(&|| plain.call((x.clone(), y.clone())).expect("runs"));
    let mut d = timing_details(&mf, 1e3, "ms", 1.0);
    d.insert("max_abs_err_vs_jit".into(), json!(err));
    d.insert(
        "jit_gelu_matmul_ms".into(),
        json!(sig(mp.median_s * 1e3, 4)),
    );
    d.insert(
        "ratio_vs_jit".into(),
        json!(sig(mf.median_s / mp.median_s, 3)),
    );
    d.insert("backend".into(), json!(backend_name()));
    d.insert("grid".into(), json!([m / bm, n / bn]));
    d.insert("blocks".into(), json!([bm, bn, bk]));
    emit(
        "pallas_matmul_gelu",
        "time_per_call",
        sig(mf.median_s * 1e3, 4),
        "ms",
        d,
    );
}
