//! Rules of the random family (`random_seed`, `random_wrap`,
//! `random_unwrap`, `random_bits`, `random_split`, `random_fold_in`,
//! `threefry2x32`, `random_gamma`, `rng_bit_generator`): jvp, transpose and
//! batching, side by side.
//!
//! Invariants, as JAX's: keys and bits carry no tangent (JAX's `float0`,
//! here no tangent); `random_gamma`'s tangent is `t_a * random_gamma_grad(a,
//! sample)` (divided by the sample in log space, computed from `exp` of the
//! log sample with zeros replaced by the dtype's tiny); nothing is linear.
//! Batching moves batch dimensions to the front: keys lead every shape, so
//! the batched primitive is the same primitive; the broadcasting members
//! (`random_fold_in`, `threefry2x32`) first broadcast every operand to the
//! full batched shape. `rng_bit_generator` batches as JAX's rule does:
//! one call on the first key with the batch size prepended to `shape`, the
//! new first key written back over the batch of keys (so batch member `i`
//! is not the unbatched call on key `i`: JAX's documented behaviour).

use super::{all_front, front1, BatchOuts, Cts, JvpOuts};
use crate::batch::to_front;
use crate::transpose::LinArg;
use jaxon_ir::primitive::{BinaryOp, Random, RandomGammaParams, RngBitGeneratorParams, UnaryOp};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind, bind1, lax, Array};

/// The jvp rules of the family.
pub(crate) fn jvp(r: &Random, p: &Primitive, x: &[Array], t: &[Option<Array>]) -> Result<JvpOuts> {
    match r {
        Random::Seed(_)
        | Random::Wrap(_)
        | Random::Unwrap(_)
        | Random::Bits(_)
        | Random::Split(_)
        | Random::FoldIn(_)
        | Random::Threefry2x32(_)
        | Random::RngBitGenerator(_) => super::no_tangent(p, x),
        Random::Gamma(RandomGammaParams { log_space }) => {
            let y = bind1(p, x)?;
            let dt = match t.get(1).and_then(Option::as_ref) {
                None => None,
                Some(ta) => Some(lax::binary(
                    BinaryOp::Mul,
                    ta,
                    &gamma_grad(&y, &x[1], *log_space)?,
                )?),
            };
            Ok((vec![y], vec![dt]))
        }
    }
}

/// d(sample)/d(a) of a gamma sample (of its log in log space), JAX's
/// `_gamma_grad`.
fn gamma_grad(sample: &Array, a: &Array, log_space: bool) -> Result<Array> {
    if !log_space {
        return lax::binary(BinaryOp::RandomGammaGrad, a, sample);
    }
    let s = lax::unary(UnaryOp::Exp, sample)?;
    let tiny = match s.dtype() {
        DType::F64 => Array::scalar(f64::MIN_POSITIVE),
        _ => Array::scalar(f32::MIN_POSITIVE),
    };
    let zero = crate::util::scalar_like(&s, 0.0)?;
    let is_zero = lax::binary(BinaryOp::Eq, &s, &zero)?;
    let shape = s.try_shape()?;
    let tiny = lax::broadcast_in_dim(&tiny, &shape, &[])?;
    let s = lax::select_n(&is_zero, &[s, tiny])?;
    let g = lax::binary(BinaryOp::RandomGammaGrad, a, &s)?;
    lax::binary(BinaryOp::Div, &g, &s)
}

/// The transpose rules of the family: nothing in it is linear.
pub(crate) fn transpose(
    r: &Random,
    p: &Primitive,
    _args: &[LinArg],
    _cts: &[Option<Array>],
) -> Result<Cts> {
    match r {
        Random::Seed(_)
        | Random::Wrap(_)
        | Random::Unwrap(_)
        | Random::Bits(_)
        | Random::Split(_)
        | Random::FoldIn(_)
        | Random::Threefry2x32(_)
        | Random::Gamma(_)
        | Random::RngBitGenerator(_) => super::not_linear(p),
    }
}

/// Every operand batched at the front and broadcast to the batched result
/// shape `[n, *shape]` (rank-0 logical operands broadcast over it).
fn broadcast_front(x: &[Array], d: &[Option<usize>], n: usize) -> Result<Vec<Array>> {
    let fronts = x
        .iter()
        .zip(d)
        .map(|(a, b)| to_front(a, *b, n))
        .collect::<Result<Vec<_>>>()?;
    let shapes = fronts
        .iter()
        .map(|a| a.try_shape())
        .collect::<Result<Vec<_>>>()?;
    let rank = shapes.iter().map(Vec::len).max().unwrap_or(1);
    let mut out = vec![1usize; rank];
    for s in shapes.iter().filter(|s| s.len() == rank) {
        for (o, &k) in out.iter_mut().zip(s) {
            if *o == 1 {
                *o = k;
            }
        }
    }
    fronts
        .into_iter()
        .zip(&shapes)
        .map(|(a, s)| {
            if *s == out {
                Ok(a)
            } else if s.len() == rank {
                let dims: Vec<usize> = (0..rank).collect();
                let squeezed: Vec<usize> = (0..rank).filter(|&i| s[i] != out[i]).collect();
                let a = lax::squeeze(&a, &squeezed)?;
                let kept: Vec<usize> = dims.into_iter().filter(|i| !squeezed.contains(i)).collect();
                lax::broadcast_in_dim(&a, &out, &kept)
            } else if s.len() == 1 {
                lax::broadcast_in_dim(&a, &out, &[0])
            } else {
                Err(Error::InvalidArgument(format!(
                    "vmap: cannot broadcast shape {s:?} to {out:?}"
                )))
            }
        })
        .collect()
}

/// The batching rules of the family.
pub(crate) fn batch(
    r: &Random,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    match r {
        Random::Seed(_)
        | Random::Wrap(_)
        | Random::Unwrap(_)
        | Random::Bits(_)
        | Random::Split(_) => front1(p, x, d, n, p.clone()),
        Random::Gamma(_) => all_front(x, d, n, p.clone()),
        Random::FoldIn(_) | Random::Threefry2x32(_) => {
            let args = broadcast_front(x, d, n)?;
            let outs = bind(p, &args)?;
            let k = outs.len();
            Ok((outs, vec![Some(0); k]))
        }
        Random::RngBitGenerator(rp) => rng_bit_generator_batch(rp, p, x, d, n),
    }
}

/// JAX's `_rng_bit_generator_batching_rule` (module header).
fn rng_bit_generator_batch(
    rp: &RngBitGeneratorParams,
    p: &Primitive,
    x: &[Array],
    d: &[Option<usize>],
    n: usize,
) -> Result<BatchOuts> {
    let [key] = x else {
        return Err(Error::InvalidArgument(format!(
            "rng_bit_generator takes one key, got {} operands",
            x.len()
        )));
    };
    let Some(b) = d.first().copied().flatten() else {
        return Ok((bind(p, x)?, vec![None, None]));
    };
    let keys = to_front(key, Some(b), n)?;
    let words = keys.try_shape()?.get(1).copied().unwrap_or(0);
    let first = lax::squeeze(&lax::slice(&keys, &[0, 0], &[1, words], None)?, &[0])?;
    let mut shape = vec![n];
    shape.extend_from_slice(&rp.shape);
    let q = Primitive::from(RngBitGeneratorParams {
        shape,
        ..rp.clone()
    });
    let mut outs = bind(&q, &[first])?;
    let bits = outs.pop().expect("rng_bit_generator has two results");
    let new_key = outs.pop().expect("rng_bit_generator has two results");
    let zero = Array::scalar(0i32);
    let row = lax::expand_dims(&new_key, &[0])?;
    let keys = lax::dynamic_update_slice(&keys, &row, &[zero.clone(), zero])?;
    Ok((vec![keys, bits], vec![Some(0), Some(0)]))
}
