//! The control-flow workloads: `fori_loop_1000`, `scan_rnn_fwd`,
//! `scan_rnn_grad`.

use super::{backend_name, normal, ok, uniform, Settings};
use crate::measure::{emit, measure, sig, timing_details};
use jaxon::prelude::*;
use serde_json::json;

/// `jit(fori_loop(0, 1000, c*0.999 + 0.001*sin(c)))` on `f32[64]`.
pub fn fori_loop_1000(s: Settings) {
    let c0 = uniform(11, &[64], -1.0, 1.0);
    let f = jit(|c: Array| {
        ok(fori_loop(
            0,
            1000,
            |_, c: Array| &c * 0.999 + c.sin() * 0.001,
            c,
        ))
    });
    let y = f.call(c0.clone()).expect("runs");
    // The same recurrence in f64, as a sanity bound on the result.
    let err = c0
        .to_vec::<f32>()
        .iter()
        .zip(y.to_vec::<f32>())
        .map(|(&c, got)| {
            let mut c = c as f64;
            for _ in 0..1000 {
                c = c * 0.999 + 0.001 * c.sin();
            }
            (c - got as f64).abs()
        })
        .fold(0.0, f64::max);
    let m = measure(
        || {
            let y = f.call(c0.clone()).expect("runs");
            super::ready(&y);
        },
        s.reps,
        s.min_time,
        2,
    );
    let mut d = timing_details(&m, 1e3, "ms", 1.0);
    d.insert("iters".into(), json!(1000));
    d.insert("shape".into(), json!([64]));
    d.insert("total_us".into(), json!(sig(m.median_s * 1e6, 4)));
    d.insert("max_abs_err_vs_f64".into(), json!(err));
    d.insert("backend".into(), json!(backend_name()));
    emit(
        "fori_loop_1000",
        "time_per_iteration",
        sig(m.median_s * 1e6 / 1000.0, 4),
        "us/iter",
        d,
    );
}

const T: usize = 200;
const B: usize = 32;
const I: usize = 128;
const H: usize = 256;

type RnnParams = (Array, Array, Array);

/// `mean(hs²)` of the tanh RNN `h = tanh(x_t @ Wx + h @ Wh + b)` over `xs`.
fn rnn_loss(((wx, wh, b), xs): (RnnParams, Array)) -> Array {
    let h0 = ok(jnp::zeros(&[B, H], DType::F32));
    let (_, hs) = ok(scan(
        |h: Array, x: Array| {
            let h = (x.matmul(&wx) + h.matmul(&wh) + &b).tanh();
            (h.clone(), h)
        },
        h0,
        xs,
        None,
        false,
    ));
    (&hs * &hs).mean(All)
}

/// `scan_rnn_fwd` (`jit(loss)`) and `scan_rnn_grad`
/// (`jit(value_and_grad(loss))` with respect to `(Wx, Wh, b)`).
pub fn scan_rnn(s: Settings) {
    let wx = normal(12, &[I, H]) * (1.0 / (I as f64).sqrt());
    let wh = normal(13, &[H, H]) * (1.0 / (H as f64).sqrt());
    let b = ok(jnp::zeros(&[H], DType::F32));
    let xs = normal(14, &[T, B, I]);
    let args = ((wx, wh, b), xs);
    let fwd = jit(rnn_loss);
    let grad = jit(|a: (RnnParams, Array)| -> (Array, RnnParams) {
        ok(jaxon::value_and_grad_with(rnn_loss, 0)(a))
    });
    let l_fwd = fwd.call(args.clone()).expect("runs").item::<f32>();
    let (l_grad, _) = grad.call(args.clone()).expect("runs");
    let flops_fwd = 2 * T * B * (I * H + H * H);
    type Unit<'a> = Box<dyn Fn() + 'a>;
    let runs: [(&str, Unit); 2] = [
        (
            "scan_rnn_fwd",
            Box::new(|| {
                let l = fwd.call(args.clone()).expect("runs");
                super::ready(&l);
            }),
        ),
        (
            "scan_rnn_grad",
            Box::new(|| {
                let (l, g) = grad.call(args.clone()).expect("runs");
                super::ready(&l);
                super::ready(&g.0);
            }),
        ),
    ];
    for (name, unit) in runs {
        let m = measure(unit, s.reps, s.min_time, 1);
        let mut d = timing_details(&m, 1e3, "ms", 1.0);
        d.insert("T".into(), json!(T));
        d.insert("batch".into(), json!(B));
        d.insert("input".into(), json!(I));
        d.insert("hidden".into(), json!(H));
        d.insert("matmul_flops_fwd".into(), json!(flops_fwd));
        d.insert(
            "us_per_timestep".into(),
            json!(sig(m.median_s * 1e6 / T as f64, 4)),
        );
        d.insert("loss".into(), json!(l_fwd));
        d.insert("loss_from_grad".into(), json!(l_grad.item::<f32>()));
        d.insert("backend".into(), json!(backend_name()));
        emit(name, "time_per_call", sig(m.median_s * 1e3, 4), "ms", d);
    }
}
