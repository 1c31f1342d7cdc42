//! The MLP workloads: `trace_mlp_grad`, `compile_mlp_grad`,
//! `mlp_train_step`, `per_example_grads`.

use super::{backend_name, ok, Settings};
use crate::measure::{emit, measure, sig, timing_details};
use jaxon::prelude::*;
use jaxon::{value_and_grad_with, vmap};
use serde_json::json;
use std::time::Duration;

/// An MLP's parameters: `(W f32[in,out], b f32[out])` per layer.
pub type Params = Vec<(Array, Array)>;

/// The MLP of `mlp_train_step`, `trace_mlp_grad` and `compile_mlp_grad`.
pub const MLP_SIZES: [usize; 4] = [784, 1024, 1024, 10];
/// Its batch.
pub const MLP_BATCH: usize = 256;

/// `W ~ N(0,1)·sqrt(2/fan_in)`, `b = 0`, from `seed`.
pub fn init_mlp(sizes: &[usize], seed: u64) -> Params {
    let keys = ok(random::split(&random::key(seed), sizes.len() - 1));
    sizes
        .windows(2)
        .enumerate()
        .map(|(i, s)| {
            let k = ok(random::key_at(&keys, &[i]));
            let w = ok(random::normal(&k, &[s[0], s[1]], DType::F32)) * (2.0 / s[0] as f64).sqrt();
            (w, ok(jnp::zeros(&[s[1]], DType::F32)))
        })
        .collect()
}

/// `x ~ N(0,1)` of `[batch, din]` (seed `sx`), labels int32 uniform in
/// `[0, classes)` (seed `sy`).
pub fn mlp_inputs(batch: usize, din: usize, classes: usize, sx: u64, sy: u64) -> (Array, Array) {
    let x = ok(random::normal(&random::key(sx), &[batch, din], DType::F32));
    let y = ok(random::randint(
        &random::key(sy),
        &[batch],
        &Array::scalar(0i32),
        &Array::scalar(classes as i32),
        DType::I32,
    ));
    (x, y)
}

/// Like `jax.nn`'s helpers, a `jit` named `name` around `f` (JAX stages
/// `relu`, `log_softmax` and `_one_hot` as named `jit` equations).
fn named(name: &str, x: &Array, f: fn(&Array) -> Result<Array>) -> Array {
    ok(jit(move |a: Array| ok(f(&a))).name(name).call(x.clone()))
}

/// `jax.nn.relu` (the inner `jit[name=relu]`; JAX also wraps it in a
/// `custom_jvp_call`, which the facade does not expose to this crate).
pub fn relu(x: &Array) -> Array {
    named("relu", x, |x| jnp::maximum(x, &Array::weak(0.0)))
}

/// `jax.nn.log_softmax` over the last axis: `x - stop_gradient(max) -
/// log(sum(exp(x - max)))`.
pub fn log_softmax(x: &Array) -> Array {
    named("log_softmax", x, |x| {
        let last = x.ndim() - 1;
        let m = jnp::max(x, [last], true)?;
        let sh = jnp::subtract(x, &lax::stop_gradient(&m)?)?;
        let s = jnp::sum(&lax::exp(&sh)?, [last], true)?;
        jnp::subtract(&sh, &lax::log(&s)?)
    })
}

/// `jax.nn.one_hot(y, classes, dtype=f32)` along a new last axis.
pub fn one_hot(y: &Array, classes: usize) -> Array {
    let nd = y.ndim();
    let mut shape = vec![1; nd];
    shape.push(classes);
    let eq = jnp::equal(
        &ok(lax::expand_dims(y, &[nd])),
        &ok(lax::broadcasted_iota(y.dtype(), &shape, nd)),
    );
    ok(lax::convert_element_type(&ok(eq), DType::F32, false))
}

/// `loss(params, x, y)`: mean softmax cross-entropy of the MLP's logits
/// (relu hidden layers, linear last layer), labels int32.
pub fn mlp_loss((params, x, y): (Params, Array, Array)) -> Array {
    let (last, hidden) = params.split_last().expect("at least one layer");
    let mut h = x;
    for (w, b) in hidden {
        h = relu(&(h.matmul(w) + b));
    }
    let logits = h.matmul(&last.0) + &last.1;
    let logp = log_softmax(&logits);
    let onehot = one_hot(&y, last.1.shape()[0]);
    -(onehot * logp).sum(-1).mean(All)
}

/// `value_and_grad(loss)` with respect to the parameters.
pub fn mlp_value_and_grad(a: (Params, Array, Array)) -> (Array, Params) {
    ok(value_and_grad_with(mlp_loss, 0)(a))
}

/// The inputs of `trace_mlp_grad`, `mlp_train_step` and `compile_mlp_grad`.
pub fn mlp_data() -> (Params, Array, Array) {
    let params = init_mlp(&MLP_SIZES, 0);
    let (x, y) = mlp_inputs(MLP_BATCH, MLP_SIZES[0], MLP_SIZES[3], 1, 2);
    (params, x, y)
}

/// Equations of a jaxpr including those of its sub-jaxprs.
fn count_eqns(j: &jaxon::ir::Jaxpr) -> usize {
    j.eqns
        .iter()
        .map(|e| {
            1 + e
                .primitive
                .sub_jaxprs()
                .iter()
                .map(|s| count_eqns(s))
                .sum::<usize>()
        })
        .sum()
}

const MLP_MODEL: &str = "MLP 784-1024-1024-10 relu, softmax-xent, batch 256";

/// `make_jaxpr(value_and_grad(loss))(params, x, y)`, a fresh closure per
/// trace.
pub fn trace_mlp_grad(s: Settings) {
    let args = mlp_data();
    let j = make_jaxpr(mlp_value_and_grad)(args.clone()).expect("traces");
    let m = measure(
        || {
            let fresh = |a: (Params, Array, Array)| mlp_loss(a);
            let vg = |a: (Params, Array, Array)| -> (Array, Params) {
                ok(value_and_grad_with(fresh, 0)(a))
            };
            let j = make_jaxpr(vg)(args.clone()).expect("traces");
            std::hint::black_box(j);
        },
        s.reps,
        s.min_time,
        2,
    );
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("n_eqns_toplevel".into(), json!(j.jaxpr.eqns.len()));
    d.insert("n_eqns_recursive".into(), json!(count_eqns(&j.jaxpr)));
    d.insert("model".into(), json!(MLP_MODEL));
    d.insert("fresh_fn_each_trace".into(), json!(true));
    d.insert("backend".into(), json!(backend_name()));
    emit(
        "trace_mlp_grad",
        "make_jaxpr_time",
        sig(m.median_s * 1e3, 4),
        "ms",
        d,
    );
}

/// `p - lr * g` leaf by leaf.
fn sgd(p: &Params, g: &Params, lr: f64) -> Params {
    p.iter()
        .zip(g)
        .map(|((w, b), (gw, gb))| (w - gw * lr, b - gb * lr))
        .collect()
}

/// The reps of the slow workloads (interpreted big matmuls): at most 3,
/// one unit each, no warm-up beyond the first call.
fn slow_reps(s: Settings) -> usize {
    s.reps.min(if s.quick { 3 } else { 5 })
}

/// One SGD step (lr 0.01) of the MLP, each step taking the previous params.
pub fn mlp_train_step(s: Settings) {
    train_step_workload(s, "mlp_train_step", &MLP_SIZES, MLP_BATCH);
}

/// One SGD step (lr 0.01) of an MLP of `sizes` on a batch of `batch`, each
/// step taking the previous parameters, emitted as `name`.
pub fn train_step_workload(s: Settings, name: &str, sizes: &[usize], batch: usize) {
    let step = jit(|(p, x, y): (Params, Array, Array)| {
        let (l, g): (Array, Params) = ok(value_and_grad_with(mlp_loss, 0)((p.clone(), x, y)));
        (sgd(&p, &g, 0.01), l)
    });
    let params = init_mlp(sizes, 0);
    let (x, y) = mlp_inputs(batch, sizes[0], sizes[sizes.len() - 1], 1, 2);
    let (p1, l0) = step.call((params, x.clone(), y.clone())).expect("runs");
    let (p2, l1) = step.call((p1, x.clone(), y.clone())).expect("runs");
    let mut state = Some(p2);
    let m = measure(
        || {
            let p = state.take().expect("params");
            let (p, l) = step.call((p, x.clone(), y.clone())).expect("runs");
            std::hint::black_box(l.item::<f32>());
            state = Some(p);
        },
        s.reps,
        s.min_time,
        0,
    );
    let fwd: usize = sizes.windows(2).map(|w| 2 * batch * w[0] * w[1]).sum();
    let dx: usize = sizes
        .windows(2)
        .skip(1)
        .map(|w| 2 * batch * w[0] * w[1])
        .sum();
    let tot = 2 * fwd + dx;
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("steps_per_s".into(), json!(sig(1.0 / m.median_s, 4)));
    d.insert("approx_flops_per_step".into(), json!(tot));
    d.insert(
        "approx_GFLOP_per_s".into(),
        json!(sig(tot as f64 / m.median_s / 1e9, 4)),
    );
    d.insert("loss_step0".into(), json!(l0.item::<f32>()));
    d.insert("loss_step1".into(), json!(l1.item::<f32>()));
    d.insert("lr".into(), json!(0.01));
    d.insert("batch".into(), json!(batch));
    d.insert("layers".into(), json!(sizes));
    d.insert("backend".into(), json!(backend_name()));
    emit(
        name,
        "time_per_step",
        sig(m.median_s * 1e3, 4),
        "ms/step",
        d,
    );
}

/// The loss of one example for `per_example_grads`: `-log_softmax(logits)[y]`
/// (as a one-hot contraction, which is what indexing differentiates to).
pub fn loss1((params, x, y): (Params, Array, Array)) -> Array {
    let (w1, b1) = &params[0];
    let (w2, b2) = &params[1];
    let h = relu(&(x.matmul(w1) + b1));
    let logits = h.matmul(w2) + b2;
    -(one_hot(&y, b2.shape()[0]) * log_softmax(&logits)).sum(All)
}

/// `jit(vmap(grad(loss1), in_axes=(None, 0, 0)))`, MLP 64-128-10, batch 128.
pub fn per_example_grads(s: Settings) {
    let params = init_mlp(&[64, 128, 10], 10);
    let (x, y) = mlp_inputs(128, 64, 10, 8, 9);
    let f = jit(|a: (Params, Array, Array)| {
        ok(
            vmap(|a: (Params, Array, Array)| -> Params { ok(jaxon::grad_with(loss1, 0)(a)) })
                .in_axes((None, 0, 0))
                .call(a),
        )
    });
    let g = f
        .call((params.clone(), x.clone(), y.clone()))
        .expect("runs");
    assert_eq!(g[0].0.shape(), vec![128, 64, 128]);
    let m = measure(
        || {
            let g = f
                .call((params.clone(), x.clone(), y.clone()))
                .expect("runs");
            super::ready(&g[0].0);
        },
        s.reps,
        if s.quick { Duration::ZERO } else { s.min_time },
        1,
    );
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("batch".into(), json!(128));
    d.insert("layers".into(), json!([64, 128, 10]));
    d.insert("us".into(), json!(sig(m.median_s * 1e6, 4)));
    d.insert("backend".into(), json!(backend_name()));
    emit(
        "per_example_grads",
        "time_per_call",
        sig(m.median_s * 1e3, 4),
        "ms",
        d,
    );
}

/// A fresh `jit(value_and_grad(loss))` to its first ready result.
pub fn compile_mlp_grad(s: Settings) {
    let args = mlp_data();
    let e2e = || {
        // JAX compiles a fresh `jit` afresh; so do we: no executable cached
        // by fingerprint from an earlier repetition may serve it.
        ok(jaxon::clear_caches());
        let fresh = |a: (Params, Array, Array)| mlp_loss(a);
        let f = jit(move |a: (Params, Array, Array)| -> (Array, Params) {
            ok(value_and_grad_with(fresh, 0)(a))
        });
        let (l, _) = f.call(args.clone()).expect("runs");
        std::hint::black_box(l.item::<f32>());
    };
    let m = measure(e2e, slow_reps(s), Duration::ZERO, 0);
    // The split: trace (lower) and compile, then the first execution.
    let f = jit(|a: (Params, Array, Array)| -> (Array, Params) {
        ok(value_and_grad_with(mlp_loss, 0)(a))
    });
    ok(jaxon::clear_caches());
    let t0 = std::time::Instant::now();
    let lowered = f.lower(args.clone()).expect("lowers");
    let t1 = std::time::Instant::now();
    let backend = jaxon::eval_backend().expect("a backend");
    let exe = backend.compile(&lowered).expect("compiles");
    let t2 = std::time::Instant::now();
    let (leaves, _) = jaxon::pytree::Pytree::flatten(&args);
    let buffers: Vec<_> = leaves
        .iter()
        .map(|a| a.buffer().expect("concrete").clone())
        .collect();
    std::hint::black_box(exe.execute(&buffers).expect("runs"));
    let t3 = std::time::Instant::now();
    let ms = |a: std::time::Instant, b: std::time::Instant| sig((b - a).as_secs_f64() * 1e3, 4);
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("split_lower_incl_trace_ms".into(), json!(ms(t0, t1)));
    d.insert("split_compile_ms".into(), json!(ms(t1, t2)));
    d.insert("split_first_execute_ms".into(), json!(ms(t2, t3)));
    d.insert("model".into(), json!(MLP_MODEL));
    d.insert("backend".into(), json!(backend_name()));
    emit(
        "compile_mlp_grad",
        "jit_to_first_result",
        sig(m.median_s * 1e3, 4),
        "ms",
        d,
    );
}
