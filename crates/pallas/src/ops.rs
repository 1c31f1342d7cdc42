//! Ready-made kernels, as JAX's `jax.experimental.pallas.ops`: flash
//! attention's forward pass.

use crate::{
    dot, dot_t, ds, fori_loop, pallas_call, program_id, shape_dtype, BlockSpec, PallasCall, Ref,
};
use jaxon_ir::DType;
use jaxon_trace::error::{ok_or_raise, Error, Result};
use jaxon_trace::numpy as jnp;
use jaxon_trace::Array;

/// The blocking and masking of [`flash_attention`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlashAttention {
    /// Query rows per program.
    pub block_q: usize,
    /// Key rows per step of the loop over the keys.
    pub block_k: usize,
    /// Mask out keys after the query (`k > q`), skipping the blocks past
    /// the diagonal.
    pub causal: bool,
    /// The logits' scale; `1/sqrt(head_dim)` when `None`.
    pub scale: Option<f64>,
}

impl Default for FlashAttention {
    fn default() -> FlashAttention {
        FlashAttention {
            block_q: 64,
            block_k: 64,
            causal: false,
            scale: None,
        }
    }
}

/// The `pallas_call` of [`flash_attention`] for `q`, `k`, `v` of shape
/// `[batch·heads, seq, head_dim]` and dtype `dtype`: grid
/// `(batch·heads, seq / block_q)`; each program keeps its query block and
/// walks the key blocks with an online softmax (running max `m`, sum `l`
/// and accumulator in f32), then writes `acc / l` in `dtype`. As JAX's
/// `mha`, both products take their operands in `dtype` and accumulate in
/// f32 (`pl.dot(q, k.T)`, then `pl.dot(p.astype(dtype), v)`), so bf16 and
/// f16 attention runs on tensor cores on CUDA.
///
/// An error when `seq` is not a multiple of both blocks, or (causal) when
/// `block_q` is not a multiple of `block_k`.
pub fn flash_attention_call(
    shape: [usize; 3],
    dtype: DType,
    p: &FlashAttention,
) -> Result<PallasCall> {
    let [bh, t, d] = shape;
    let FlashAttention {
        block_q: bq,
        block_k: bk,
        causal,
        scale,
    } = *p;
    if bq == 0 || bk == 0 || t % bq != 0 || t % bk != 0 {
        return Err(Error::InvalidArgument(format!(
            "flash_attention: the sequence length {t} must be a multiple of block_q {bq} and block_k {bk}"
        )));
    }
    if causal && bq % bk != 0 {
        return Err(Error::InvalidArgument(format!(
            "flash_attention: a causal kernel needs block_q ({bq}) to be a multiple of block_k ({bk})"
        )));
    }
    let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
    let kernel = move |r: &[Ref]| {
        let q = r[0].load();
        let qi = program_id(1);
        let m0 = ok_or_raise(jnp::full(
            &[bq],
            &Array::weak(f32::NEG_INFINITY),
            Some(DType::F32),
        ));
        let l0 = ok_or_raise(jnp::zeros(&[bq], DType::F32));
        let a0 = ok_or_raise(jnp::zeros(&[bq, d], DType::F32));
        let rows = ok_or_raise(jnp::arange(bq)).reshape(&[-1, 1]) + &qi * bq as i32;
        let step = |j: Array, (m, l, acc): (Array, Array, Array)| {
            let start = &j * bk as i32;
            let kb = r[1].get(crate::ix![ds(&start, bk), ..]);
            let vb = r[2].get(crate::ix![ds(&start, bk), ..]);
            let mut s = dot_t(&q, &kb, false, true) * scale;
            if causal {
                let cols = ok_or_raise(jnp::arange(bk)).reshape(&[1, -1]) + &start;
                let keep = cols.le(&rows);
                s = ok_or_raise(jnp::where_(&keep, &s, &Array::scalar(f32::NEG_INFINITY)));
            }
            let m_new = ok_or_raise(jnp::maximum(&m, &s.max(1)));
            let pexp = (&s - m_new.reshape(&[-1, 1])).exp();
            let alpha = (&m - &m_new).exp();
            let l = l * &alpha + pexp.sum(1);
            let acc = acc * alpha.reshape(&[-1, 1]) + dot(&pexp.astype(dtype), &vb);
            (m_new, l, acc)
        };
        let (_, l, acc) = if causal {
            // The key blocks up to the diagonal: (qi + 1) · bq / bk of them.
            let upper = (&qi + 1) * (bq / bk) as i32;
            ok_or_raise(fori_loop(0, upper, step, (m0, l0, a0)))
        } else {
            ok_or_raise(fori_loop(0, t / bk, step, (m0, l0, a0)))
        };
        r[3].store((acc / l.reshape(&[-1, 1])).astype(dtype));
    };
    let qspec = || BlockSpec::map2([None, Some(bq), Some(d)], |b, i| (b, i, 0));
    let kvspec = || BlockSpec::map2([None, Some(t), Some(d)], |b, _| (b, 0, 0));
    Ok(pallas_call(kernel, shape_dtype(&[bh, t, d], dtype))
        .grid([bh, t / bq])
        .in_specs(vec![qspec(), kvspec(), kvspec()])
        .out_spec(qspec())
        .name(if causal {
            "flash_attention_causal"
        } else {
            "flash_attention"
        }))
}

/// Flash attention's forward pass (JAX's `pallas.ops.gpu.attention.mha`
/// on heads-first operands): `softmax(scale · q kᵀ) v` for `q`, `k`, `v`
/// of one shape `[batch·heads, seq, head_dim]` and dtype, without ever
/// forming the `seq × seq` logits. See [`flash_attention_call`].
pub fn flash_attention(q: &Array, k: &Array, v: &Array, p: &FlashAttention) -> Result<Array> {
    let shape = q.try_shape()?;
    let [bh, t, d] = shape[..] else {
        return Err(Error::InvalidArgument(format!(
            "flash_attention: q must be [batch·heads, seq, head_dim], got {shape:?}"
        )));
    };
    for (name, x) in [("k", k), ("v", v)] {
        let s = x.try_shape()?;
        if s != shape || x.dtype() != q.dtype() {
            return Err(Error::ShapeMismatch {
                op: format!("flash_attention: q and {name} differ"),
                lhs: format!("{}{shape:?}", q.dtype()),
                rhs: format!("{}{s:?}", x.dtype()),
            });
        }
    }
    flash_attention_call([bh, t, d], q.dtype(), p)?.call1(&[q.clone(), k.clone(), v.clone()])
}
