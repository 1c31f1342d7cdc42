//! Issue 7's acceptance kernels in interpret mode, each checked against the
//! same computation written with `jnp` (evaluated by the reference
//! interpreter) on seeded random inputs: templated kernels, the seed's
//! fused matmul + GELU, row softmax (masked to a power-of-two block, and
//! vmapped over a batch), layer norm forward and backward (a `custom_vjp`
//! whose backward pass is a kernel) and flash attention's forward pass.

use crate::common;

use common::{assert_arrays_close, Rng};
use jaxon_ir::DType::F32;
use jaxon_pallas::*;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{nn, Array};
use jaxon_transforms::{custom_vjp, grad, vmap};

/// The seed's `make_kernel`: a kernel template with an element-wise op.
fn make_kernel(
    eltwise: impl Fn(Array) -> Array + Send + Sync + 'static,
) -> impl Fn(&[Ref]) + Send + Sync + 'static {
    move |r: &[Ref]| {
        let x = load(&r[0], ()).read();
        let y = load(&r[1], ()).read();
        store(&r[2], (), eltwise(x + y));
    }
}

#[test]
fn templated_kernels() {
    let mut rng = Rng::new(31);
    let (x, y) = (rng.array(&[5]), rng.array(&[5]));
    let k1 = pallas_call(make_kernel(|x| x * 2.0), &x)
        .grid(1)
        .interpret(true);
    let k2 = pallas_call(make_kernel(|x| x.exp()), &x)
        .grid(1)
        .interpret(true);
    let o1 = k1.call1(&[x.clone(), y.clone()]).unwrap();
    let o2 = k2.call1(&[x.clone(), y.clone()]).unwrap();
    assert_arrays_close(&o1, &((&x + &y) * 2.0), 1e-6);
    assert_arrays_close(&o2, &(&x + &y).exp(), 1e-6);
}

/// The seed's templated matmul: `(bm, K)` / `(K, bn)` blocks, a `block_k`
/// loop accumulating in f32, the activation fused in.
fn matmul_kernel(
    block_k: usize,
    activation: impl Fn(Array) -> Array + Send + Sync + 'static,
) -> impl Fn(&[Ref]) + Send + Sync + 'static {
    move |r: &[Ref]| {
        let (x_ref, y_ref, o_ref) = (&r[0], &r[1], &r[2]);
        let (bm, kk, bn) = (x_ref.shape()[0], x_ref.shape()[1], y_ref.shape()[1]);
        let acc0 = ok_or_raise(jnp::zeros(&[bm, bn], F32));
        let acc = ok_or_raise(fori_loop(
            0,
            kk / block_k,
            |k, acc: Array| {
                let start = &k * block_k as i32;
                let x = x_ref.get(ix![.., ds(&start, block_k)]);
                let y = y_ref.get(ix![ds(&start, block_k), ..]);
                acc + dot(&x, &y)
            },
            acc0,
        ));
        o_ref.set(ix![.., ..], activation(acc).astype(o_ref.dtype()));
    }
}

fn fused_matmul(x: &Array, y: &Array, block: (usize, usize, usize)) -> Array {
    let (bm, bn, bk) = block;
    let (m, k, n) = (x.shape()[0], x.shape()[1], y.shape()[1]);
    let gelu = |a: Array| ok_or_raise(nn::gelu(&a, true));
    pallas_call(matmul_kernel(bk, gelu), shape_dtype(&[m, n], F32))
        .grid([m / bm, n / bn])
        .in_specs(vec![
            BlockSpec::map2([bm, k], |i, _| (i, 0)),
            BlockSpec::map2([k, bn], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bn], |i, j| (i, j)))
        .interpret(true)
        .call1(&[x.clone(), y.clone()])
        .unwrap()
}

#[test]
fn fused_matmul_gelu_512x256x1024() {
    let mut rng = Rng::new(32);
    let x = rng.array(&[512, 256]);
    let y = rng.array(&[256, 1024]);
    let z = fused_matmul(&x, &y, (128, 256, 128));
    let want = nn::gelu(&jnp::matmul(&x, &y).unwrap(), true).unwrap();
    assert_arrays_close(&z, &want, 1e-4);
}

/// One row per program; the row of 125 is read as a block of 128 with the
/// padding masked to -inf.
fn softmax_call(rows: usize, cols: usize) -> PallasCall {
    let block = cols.next_power_of_two();
    let k = move |r: &[Ref]| {
        let col = ok_or_raise(jnp::arange(block));
        let m = col.lt(cols as i32);
        let row = load(&r[0], ..).mask(&m).other(f32::NEG_INFINITY).read();
        let e = (&row - row.max(All)).exp();
        store(&r[1], .., &e / e.sum(All)).mask(&m);
    };
    pallas_call(k, shape_dtype(&[rows, cols], F32))
        .grid(rows)
        .in_specs(vec![BlockSpec::map1([None, Some(block)], |i| (i, 0))])
        .out_spec(BlockSpec::map1([None, Some(block)], |i| (i, 0)))
        .interpret(true)
}

#[test]
fn row_softmax_masked_to_pow2_block() {
    let mut rng = Rng::new(33);
    let x = rng.array(&[1024, 125]) * 4.0;
    let y = softmax_call(1024, 125)
        .call1(std::slice::from_ref(&x))
        .unwrap();
    assert_arrays_close(&y, &nn::softmax(&x, -1).unwrap(), 1e-5);
}

#[test]
fn row_softmax_vmapped_over_batch_4() {
    let mut rng = Rng::new(34);
    let x = rng.array(&[4, 1024, 125]) * 4.0;
    let call = softmax_call(1024, 125);
    let y = vmap(move |x: Array| call.call1(&[x]).unwrap())
        .call(x.clone())
        .unwrap();
    assert_arrays_close(&y, &nn::softmax(&x, -1).unwrap(), 1e-5);
}

const EPS: f64 = 1e-5;

/// Layer norm forward over rows: y, and the mean and 1/std residuals.
fn ln_fwd(x: &Array, w: &Array, b: &Array) -> Vec<Array> {
    let (n, d) = (x.shape()[0], x.shape()[1]);
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let mean = x.mean(All);
        let xc = &x - &mean;
        let rstd = ((&xc * &xc).mean(All) + EPS).rsqrt();
        r[3].store(&xc * &rstd * r[1].load() + r[2].load());
        r[4].store(mean);
        r[5].store(rstd);
    };
    let row = BlockSpec::map1([None, Some(d)], |i| (i, 0));
    let vec = || BlockSpec::map1([d], |_| 0);
    let one = || BlockSpec::map1([None::<usize>], |i| i);
    pallas_call(
        k,
        vec![
            shape_dtype(&[n, d], F32),
            shape_dtype(&[n], F32),
            shape_dtype(&[n], F32),
        ],
    )
    .grid(n)
    .in_specs(vec![row.clone(), vec(), vec()])
    .out_specs(vec![row, one(), one()])
    .name("layer_norm_fwd")
    .interpret(true)
    .call(&[x.clone(), w.clone(), b.clone()])
    .unwrap()
}

/// Layer norm backward: dx per row; dw and db accumulated with atomics
/// (zeroed by program 0).
fn ln_bwd(x: &Array, w: &Array, mean: &Array, rstd: &Array, dy: &Array) -> Vec<Array> {
    let (n, d) = (x.shape()[0], x.shape()[1]);
    let k = move |r: &[Ref]| {
        let (x, w, mean, rstd, dy) = (
            r[0].load(),
            r[1].load(),
            r[2].load(),
            r[3].load(),
            r[4].load(),
        );
        let xhat = (&x - &mean) * &rstd;
        let g = &dy * &w;
        let c1 = (&xhat * &g).mean(All);
        let c2 = g.mean(All);
        r[5].store((&g - &xhat * &c1 - &c2) * &rstd);
        when(&program_id(0).eq(0), || {
            r[6].store(0.0);
            r[7].store(0.0);
        });
        atomic_add(&r[6], .., &dy * &xhat);
        atomic_add(&r[7], .., &dy);
    };
    let row = || BlockSpec::map1([None, Some(d)], |i| (i, 0));
    let vec = || BlockSpec::map1([d], |_| 0);
    let one = || BlockSpec::map1([None::<usize>], |i| i);
    pallas_call(
        k,
        vec![
            shape_dtype(&[n, d], F32),
            shape_dtype(&[d], F32),
            shape_dtype(&[d], F32),
        ],
    )
    .grid(n)
    .in_specs(vec![row(), vec(), one(), one(), row()])
    .out_specs(vec![row(), vec(), vec()])
    .name("layer_norm_bwd")
    .interpret(true)
    .call(&[x.clone(), w.clone(), mean.clone(), rstd.clone(), dy.clone()])
    .unwrap()
}

fn ln_reference(x: &Array, w: &Array, b: &Array) -> Array {
    let mean = x.mean(-1).reshape(&[-1, 1]);
    let xc = x - &mean;
    let var = (&xc * &xc).mean(-1).reshape(&[-1, 1]);
    xc / (var + EPS).sqrt() * w + b
}

#[test]
fn layer_norm_forward_and_backward_kernels() {
    let mut rng = Rng::new(35);
    let (n, d) = (16, 32);
    let x = rng.array(&[n, d]) * 3.0;
    let w = rng.array(&[d]) + 1.0;
    let b = rng.array(&[d]);
    let c = rng.array(&[n, d]);
    type Xwb = (Array, Array, Array);
    let ln = custom_vjp(|(x, w, b): Xwb| ln_fwd(&x, &w, &b).remove(0))
        .name("layer_norm")
        .defvjp(
            |(x, w, b): Xwb| {
                let mut o = ln_fwd(&x, &w, &b);
                let y = o.remove(0);
                let (mean, rstd) = (o.remove(0), o.remove(0));
                (y, (x, w, mean, rstd))
            },
            |(x, w, mean, rstd): (Array, Array, Array, Array), ct: Array| {
                let mut g = ln_bwd(&x, &w, &mean, &rstd, &ct);
                let (gx, gw, gb) = (g.remove(0), g.remove(0), g.remove(0));
                (gx, gw, gb)
            },
        );
    let y = ln.call((x.clone(), w.clone(), b.clone())).unwrap();
    assert_arrays_close(&y, &ln_reference(&x, &w, &b), 1e-5);
    let c2 = c.clone();
    let loss = move |xwb: Xwb| (ok_or_raise(ln.call(xwb)) * &c2).sum(All);
    let loss_ref = move |(x, w, b): (Array, Array, Array)| (ln_reference(&x, &w, &b) * &c).sum(All);
    let (gx, gw, gb) = grad(loss)((x.clone(), w.clone(), b.clone())).unwrap();
    let (rx, rw, rb) = grad(loss_ref)((x, w, b)).unwrap();
    assert_arrays_close(&gx, &rx, 1e-4);
    assert_arrays_close(&gw, &rw, 1e-4);
    assert_arrays_close(&gb, &rb, 1e-4);
}

/// Flash attention forward: one program per (batch-head, query block); an
/// online softmax over key blocks.
fn flash_attention(q: &Array, k: &Array, v: &Array, block_q: usize, block_k: usize) -> Array {
    let (bh, s, d) = (q.shape()[0], q.shape()[1], q.shape()[2]);
    let scale = 1.0 / (d as f64).sqrt();
    let kernel = move |r: &[Ref]| {
        let q = r[0].load() * scale;
        let m0 = ok_or_raise(jnp::full(
            &[block_q],
            &Array::weak(f32::NEG_INFINITY),
            Some(F32),
        ));
        let l0 = ok_or_raise(jnp::zeros(&[block_q], F32));
        let a0 = ok_or_raise(jnp::zeros(&[block_q, d], F32));
        let (_, l, acc) = ok_or_raise(fori_loop(
            0,
            s / block_k,
            |j, (m, l, acc): (Array, Array, Array)| {
                let start = &j * block_k as i32;
                let kb = r[1].get(ix![ds(&start, block_k), ..]);
                let vb = r[2].get(ix![ds(&start, block_k), ..]);
                let sc = dot_t(&q, &kb, false, true);
                let m_new = ok_or_raise(jnp::maximum(&m, &sc.max(1)));
                let p = (&sc - m_new.reshape(&[-1, 1])).exp();
                let alpha = (&m - &m_new).exp();
                let l = l * &alpha + p.sum(1);
                let acc = acc * alpha.reshape(&[-1, 1]) + dot(&p, &vb);
                (m_new, l, acc)
            },
            (m0, l0, a0),
        ));
        r[3].store(acc / l.reshape(&[-1, 1]));
    };
    let qspec = || BlockSpec::map2([None, Some(block_q), Some(d)], |b, i| (b, i, 0));
    let kvspec = || BlockSpec::map2([None, Some(s), Some(d)], |b, _| (b, 0, 0));
    pallas_call(kernel, shape_dtype(&[bh, s, d], F32))
        .grid([bh, s / block_q])
        .in_specs(vec![qspec(), kvspec(), kvspec()])
        .out_spec(qspec())
        .name("flash_attention_fwd")
        .interpret(true)
        .call1(&[q.clone(), k.clone(), v.clone()])
        .unwrap()
}

#[test]
fn flash_attention_forward() {
    let mut rng = Rng::new(36);
    let (bh, s, d) = (2, 128, 32);
    let q = rng.array(&[bh, s, d]) * 2.0;
    let k = rng.array(&[bh, s, d]) * 2.0;
    let v = rng.array(&[bh, s, d]);
    let o = flash_attention(&q, &k, &v, 32, 32);
    let scores = jnp::matmul(&q, &k.transpose(&[0, 2, 1])).unwrap() * (1.0 / (d as f64).sqrt());
    let want = jnp::matmul(&nn::softmax(&scores, -1).unwrap(), &v).unwrap();
    assert_arrays_close(&o, &want, 1e-5);
}
