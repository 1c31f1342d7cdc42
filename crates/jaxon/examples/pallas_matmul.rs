//! The Pallas design's fused matmul: `x (512, 256) · y (256, 1024)` in
//! `(128, K)` / `(K, 256)` blocks over a `(4, 4)` grid, a `block_k` loop
//! accumulating in f32 and a GELU fused in; run in interpret mode (on the
//! reference interpreter) and checked against `gelu(jnp.matmul(x, y))`.
//!
//! `cargo run --release -p jaxon --example pallas_matmul`

use jaxon::pallas::{dot, ds, fori_loop, ix, pallas_call, shape_dtype, BlockSpec, Ref};
use jaxon::prelude::*;
use jaxon::DType::F32;
use jaxon::{nn, ok_or_raise};
use std::time::Instant;

/// A matmul kernel template: `activation` is fused into the epilogue.
fn matmul_kernel(
    block_k: usize,
    activation: impl Fn(Array) -> Array + Send + Sync + 'static,
) -> impl Fn(&[Ref]) + Send + Sync + 'static {
    move |r: &[Ref]| {
        let (x_ref, y_ref, o_ref) = (&r[0], &r[1], &r[2]);
        let (bm, k, bn) = (x_ref.shape()[0], x_ref.shape()[1], y_ref.shape()[1]);
        let acc = ok_or_raise(jnp::zeros(&[bm, bn], F32));
        let acc = ok_or_raise(fori_loop(
            0,
            k / block_k,
            |kb, acc: Array| {
                let start = &kb * block_k as i32;
                let x = x_ref.get(ix![.., ds(&start, block_k)]);
                let y = y_ref.get(ix![ds(&start, block_k), ..]);
                acc + dot(&x, &y)
            },
            acc,
        ));
        o_ref.store(activation(acc).astype(o_ref.dtype()));
    }
}

fn matmul(x: &Array, y: &Array, (bm, bn, bk): (usize, usize, usize)) -> Array {
    let (m, k, n) = (x.shape()[0], x.shape()[1], y.shape()[1]);
    let gelu = |a: Array| ok_or_raise(nn::gelu(&a, true));
    let call = pallas_call(matmul_kernel(bk, gelu), shape_dtype(&[m, n], F32))
        .grid([m / bm, n / bn])
        .in_specs(vec![
            BlockSpec::map2([bm, k], |i, _| (i, 0)),
            BlockSpec::map2([k, bn], |_, j| (0, j)),
        ])
        .out_spec(BlockSpec::map2([bm, bn], |i, j| (i, j)))
        .name("matmul_kernel")
        .interpret(true);
    ok_or_raise(call.call1(&[x.clone(), y.clone()]))
}

fn main() -> Result<()> {
    // Interpret mode as in JAX: the whole program on the reference
    // interpreter (the facade's default backend is the native CPU one).
    jaxon::with_backend("interpreter", run)?
}

fn run() -> Result<()> {
    let block = (128, 256, 128);
    let small_x = Array::from_vec(vec![0.5f32; 512 * 256], &[512, 256]);
    let small_y = Array::from_vec(vec![0.25f32; 256 * 1024], &[256, 1024]);
    let jaxpr = make_jaxpr(move |(x, y): (Array, Array)| matmul(&x, &y, block))((
        small_x.clone(),
        small_y.clone(),
    ))?;
    println!("{jaxpr}");

    // Seeded, non-trivial inputs.
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let x = Array::from_vec((0..512 * 256).map(|_| next()).collect(), &[512, 256]);
    let y = Array::from_vec((0..256 * 1024).map(|_| next()).collect(), &[256, 1024]);

    let f = jit(move |(x, y): (Array, Array)| matmul(&x, &y, block));
    let t = Instant::now();
    let z = f.call((x.clone(), y.clone()))?;
    println!("pallas matmul+gelu (interpret): {:?}", t.elapsed());
    let t = Instant::now();
    let want = nn::gelu(&jnp::matmul(&x, &y)?, true)?;
    println!("gelu(jnp.matmul(x, y)): {:?}", t.elapsed());
    let err = z
        .to_vec::<f32>()
        .iter()
        .zip(want.to_vec::<f32>())
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    println!("max abs error vs jnp: {err:e}");
    assert!(err < 1e-4);
    Ok(())
}
