//! `jaxon_pallas::ops`: flash attention against attention written with
//! `jnp` (the full `seq × seq` softmax), causal and not, on seeded random
//! inputs; its argument checks.

use crate::common::{assert_arrays_close, Rng};
use jaxon_ir::DType;
use jaxon_pallas::ops::{flash_attention, FlashAttention};
use jaxon_trace::numpy as jnp;
use jaxon_trace::{nn, Array};

/// `softmax(scale · q kᵀ [+ causal mask]) v` on `[bh, t, d]`.
fn reference(q: &Array, k: &Array, v: &Array, causal: bool) -> Array {
    let t = q.shape()[1];
    let scale = 1.0 / (q.shape()[2] as f64).sqrt();
    let kt = jnp::transpose(k, Some(&[0, 2, 1])).unwrap();
    let mut logits = q.matmul(&kt) * scale;
    if causal {
        let mask = jnp::tril(&jnp::ones(&[t, t], DType::Bool).unwrap(), 0).unwrap();
        logits = jnp::where_(&mask, &logits, &Array::scalar(f32::NEG_INFINITY)).unwrap();
    }
    nn::softmax(&logits, -1).unwrap().matmul(v)
}

#[test]
fn flash_attention_matches_the_full_softmax() {
    let mut rng = Rng::new(61);
    for (bh, t, d, bq, bk, causal) in [
        (2, 32, 8, 16, 8, false),
        (2, 32, 8, 16, 8, true),
        (1, 48, 4, 16, 16, true),
        (3, 8, 2, 8, 4, false),
    ] {
        let (q, k, v) = (
            rng.array(&[bh, t, d]),
            rng.array(&[bh, t, d]),
            rng.array(&[bh, t, d]),
        );
        let p = FlashAttention {
            block_q: bq,
            block_k: bk,
            causal,
            scale: None,
        };
        let got = flash_attention(&q, &k, &v, &p).unwrap();
        assert_arrays_close(&got, &reference(&q, &k, &v, causal), 1e-5);
    }
}

#[test]
fn flash_attention_refuses_blocks_that_do_not_divide() {
    let mut rng = Rng::new(62);
    let q = rng.array(&[1, 24, 4]);
    let p = FlashAttention {
        block_q: 16,
        ..FlashAttention::default()
    };
    let e = flash_attention(&q, &q, &q, &p).unwrap_err().to_string();
    assert!(e.contains("multiple of block_q 16"), "{e}");
    let causal = FlashAttention {
        block_q: 8,
        block_k: 12,
        causal: true,
        scale: None,
    };
    let q = rng.array(&[1, 24, 4]);
    let e = flash_attention(&q, &q, &q, &causal)
        .unwrap_err()
        .to_string();
    assert!(e.contains("multiple of block_k"), "{e}");
    let k = rng.array(&[1, 16, 4]);
    let e = flash_attention(&q, &k, &q, &FlashAttention::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("q and k differ"), "{e}");
}
