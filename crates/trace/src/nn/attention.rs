//! `jax.nn.dot_product_attention` with the XLA-path semantics: `[B, T, N,
//! H]` queries against `[B, S, K, H]` keys and values (grouped-query
//! attention when `K` divides `N`), an additive `bias`, a boolean `mask`,
//! a causal mask and a `scale` (default `1/sqrt(H)`). The softmax runs in
//! `f32` (or wider), as JAX's does.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy as jnp;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::DType;

/// `-0.7 * finfo(dtype).max`: the logit masked-out positions get.
fn large_negative(dtype: DType) -> f64 {
    let max = match dtype {
        DType::F16 => 65504.0,
        DType::BF16 => half::bf16::MAX.to_f64(),
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    };
    -0.7 * max
}

fn bad_shapes(what: &str, a: &Array, b: &Array) -> Error {
    Error::ShapeMismatch {
        op: format!("dot_product_attention ({what})"),
        lhs: fmt_aval(a.aval()),
        rhs: fmt_aval(b.aval()),
    }
}

/// `jax.nn.dot_product_attention(query, key, value, bias, mask, scale,
/// is_causal)`: `softmax(scale * q k^T + bias, masked) v` per batch and
/// head. `query` is `[B, T, N, H]` (or `[T, N, H]`), `key`/`value` are
/// `[B, S, K, H]` with `N` a multiple of `K` (query head `n` uses key head
/// `n / (N / K)`). `bias` and `mask` (bool, true = keep) broadcast to
/// `[B, N, T, S]`; `is_causal` keeps only `s <= t`.
pub fn dot_product_attention(
    query: &Array,
    key: &Array,
    value: &Array,
    bias: Option<&Array>,
    mask: Option<&Array>,
    scale: Option<f64>,
    is_causal: bool,
) -> Result<Array> {
    let unbatched = query.ndim() == 3;
    let lift = |x: &Array| -> Result<Array> {
        match (unbatched, x.ndim()) {
            (true, 3) => lax::expand_dims(x, &[0]),
            (false, 4) => Ok(x.clone()),
            _ => Err(bad_shapes(
                "query and key/value must both be 3-D or 4-D",
                query,
                x,
            )),
        }
    };
    if !matches!(query.ndim(), 3 | 4) {
        return Err(Error::InvalidArgument(format!(
            "dot_product_attention: query must be [B, T, N, H] or [T, N, H], got {}",
            fmt_aval(query.aval())
        )));
    }
    let (q, k, v) = (lift(query)?, lift(key)?, lift(value)?);
    let (qs, ks, vs) = (q.try_shape()?, k.try_shape()?, v.try_shape()?);
    let (b, t, n, h) = (qs[0], qs[1], qs[2], qs[3]);
    let (s, kh) = (ks[1], ks[2]);
    if ks != vs || ks[0] != b || ks[3] != h {
        return Err(bad_shapes(
            "key and value must be [B, S, K, H] matching query",
            query,
            key,
        ));
    }
    if kh == 0 || n % kh != 0 {
        return Err(bad_shapes(
            "the number of query heads must be a multiple of the key/value heads",
            query,
            key,
        ));
    }
    let v_dtype = key.dtype();
    let group = n / kh;
    let (k, v) = if group > 1 {
        (
            jnp::repeat(&k, &[group], Some(2))?,
            jnp::repeat(&v, &[group], Some(2))?,
        )
    } else {
        (k, v)
    };
    let qk = jnp::promote::promote_dtypes("dot_product_attention", &[&q, &k])?;
    let logits_dtype =
        jnp::result_type("dot_product_attention", &[&qk[0], &Array::scalar(0f32)])?.0;
    let logits = jnp::einsum("BTNH,BSNH->BNTS", &qk)?;
    let logits = lax::convert_element_type(&logits, logits_dtype, false)?;
    let scale = scale.unwrap_or(1.0 / (h as f64).sqrt());
    let mut logits = lax::mul(
        &logits,
        &lax::convert_element_type(&Array::weak(scale), logits_dtype, false)?,
    )?;
    let full = [b, n, t, s];
    if let Some(bias) = bias {
        let bias = jnp::broadcast_to(bias, &full).map_err(|_| bad_shapes("bias", &logits, bias))?;
        logits = lax::convert_element_type(&jnp::add(&logits, &bias)?, logits_dtype, false)?;
    }
    let mut keep: Option<Array> = None;
    if let Some(mask) = mask {
        if mask.dtype() != DType::Bool {
            return Err(Error::InvalidArgument(format!(
                "dot_product_attention: mask must be bool, got {}",
                fmt_aval(mask.aval())
            )));
        }
        keep = Some(jnp::broadcast_to(mask, &full).map_err(|_| bad_shapes("mask", &logits, mask))?);
    }
    if is_causal {
        let tri = jnp::tri(t, Some(s), 0, DType::Bool)?;
        let tri = jnp::broadcast_to(&tri, &full)?;
        keep = Some(match keep {
            Some(m) => jnp::logical_and(&m, &tri)?,
            None => tri,
        });
    }
    if let Some(keep) = keep {
        let neg = lax::convert_element_type(
            &Array::weak(large_negative(logits_dtype)),
            logits_dtype,
            false,
        )?;
        logits = jnp::where_(&keep, &logits, &neg)?;
    }
    let logits = lax::convert_element_type(&logits, DType::F32, false)?;
    let probs = super::softmax(&logits, -1isize)?;
    let probs = lax::convert_element_type(&probs, v_dtype, false)?;
    let out = jnp::einsum("BNTS,BSNH->BTNH", &[probs, v])?;
    if unbatched {
        lax::squeeze(&out, &[0])
    } else {
        Ok(out)
    }
}
