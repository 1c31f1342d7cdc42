//! Shape rules of the random family: keys are `key<fry>` arrays; bits and
//! splits append their `shape` to the keys' shape; `random_fold_in` and
//! `threefry2x32` broadcast (rank-0 operands, or equal ranks with size-1
//! dims); `random_gamma` keeps `a`'s type, whose shape starts with the keys'.
//! `rng_bit_generator` takes a raw `u32[4]` or `u64[2]` key (the only
//! states JAX lowers) and returns it typed as given, with unsigned bits.

use super::Cx;
use crate::aval::{Dim, Shape, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{PrngImpl, Random};

/// Operand `i`, which must be a key array.
fn key_operand<'a>(cx: &'a Cx, i: usize) -> Result<&'a ShapedArray, IrError> {
    let a = cx.arr(i)?;
    if !a.dtype.is_key() {
        return Err(cx.err(format!("operand {i} must be a key array, got {}", a.dtype)));
    }
    Ok(a)
}

/// Appends static sizes to a shape.
fn extended(shape: &[Dim], more: &[usize]) -> Shape {
    shape
        .iter()
        .copied()
        .chain(more.iter().map(|&n| Dim::Const(n)))
        .collect()
}

/// The broadcast shape of `shapes` (rank 0, or one rank with sizes equal or 1).
fn broadcast(cx: &Cx, shapes: &[&Shape]) -> Result<Shape, IrError> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![Dim::Const(1); rank];
    for s in shapes.iter().filter(|s| !s.is_empty()) {
        if s.len() != rank {
            return Err(cx.err(format!("operand shapes differ in rank: {shapes:?}")));
        }
        for (o, &d) in out.iter_mut().zip(s.iter()) {
            if *o == Dim::Const(1) {
                *o = d;
            } else if d != Dim::Const(1) && d != *o {
                return Err(cx.err(format!("incompatible operand shapes {shapes:?}")));
            }
        }
    }
    Ok(out)
}

/// The result types of a random-family primitive.
pub(crate) fn random(cx: &Cx, p: &Random) -> Result<Vec<ShapedArray>, IrError> {
    let impl_dtype = |i: PrngImpl| i.key_dtype();
    Ok(match p {
        Random::Seed(x) => {
            cx.arity(1)?;
            let s = cx.arr(0)?;
            if !s.dtype.is_int() {
                return Err(cx.err(format!("seeds must be integers, got {}", s.dtype)));
            }
            vec![ShapedArray::new(impl_dtype(x.impl_), s.shape.clone())]
        }
        Random::Wrap(x) => {
            cx.arity(1)?;
            let d = cx.arr(0)?;
            let words = Dim::Const(x.impl_.key_words());
            match d.shape.split_last() {
                Some((last, lead)) if d.dtype == DType::U32 && *last == words => {
                    vec![ShapedArray::new(impl_dtype(x.impl_), lead.to_vec())]
                }
                _ => {
                    return Err(cx.err(format!(
                        "key data must be u32[..., {}], got {}[{:?}]",
                        x.impl_.key_words(),
                        d.dtype,
                        d.shape
                    )))
                }
            }
        }
        Random::Unwrap(_) => {
            cx.arity(1)?;
            let k = key_operand(cx, 0)?;
            vec![ShapedArray::new(DType::U32, extended(&k.shape, &[2]))]
        }
        Random::Bits(x) => {
            cx.arity(1)?;
            let k = key_operand(cx, 0)?;
            let dtype = match x.bit_width {
                8 => DType::U8,
                16 => DType::U16,
                32 => DType::U32,
                64 => DType::U64,
                w => return Err(cx.err(format!("bit_width must be 8, 16, 32 or 64, got {w}"))),
            };
            vec![ShapedArray::new(dtype, extended(&k.shape, &x.shape))]
        }
        Random::Split(x) => {
            cx.arity(1)?;
            let k = key_operand(cx, 0)?;
            vec![ShapedArray::new(k.dtype, extended(&k.shape, &x.shape))]
        }
        Random::FoldIn(_) => {
            cx.arity(2)?;
            let k = key_operand(cx, 0)?;
            let m = cx.arr(1)?;
            if m.dtype != DType::U32 {
                return Err(cx.err(format!("msgs must be u32, got {}", m.dtype)));
            }
            vec![ShapedArray::new(
                k.dtype,
                broadcast(cx, &[&k.shape, &m.shape])?,
            )]
        }
        Random::Threefry2x32(_) => {
            cx.arity(4)?;
            let mut shapes = Vec::with_capacity(4);
            for i in 0..4 {
                let a = cx.arr(i)?;
                if a.dtype != DType::U32 {
                    return Err(cx.err(format!("operand {i} must be u32, got {}", a.dtype)));
                }
                shapes.push(&a.shape);
            }
            let s = broadcast(cx, &shapes)?;
            vec![
                ShapedArray::new(DType::U32, s.clone()),
                ShapedArray::new(DType::U32, s),
            ]
        }
        Random::RngBitGenerator(x) => {
            cx.arity(1)?;
            let k = cx.arr(0)?;
            let ok = matches!(
                (k.dtype, k.shape.as_slice()),
                (DType::U32, [Dim::Const(4)]) | (DType::U64, [Dim::Const(2)])
            );
            if !ok {
                return Err(cx.err(format!(
                    "the key must be u32[4] or u64[2], got {}",
                    super::fmt_aval(&crate::aval::Aval::Array(k.clone()))
                )));
            }
            if !matches!(x.dtype, DType::U8 | DType::U16 | DType::U32 | DType::U64) {
                return Err(cx.err(format!(
                    "dtype must be uint8, uint16, uint32 or uint64, got {}",
                    x.dtype
                )));
            }
            vec![
                k.clone(),
                ShapedArray::new(x.dtype, extended(&[], &x.shape)),
            ]
        }
        Random::Gamma(_) => {
            cx.arity(2)?;
            let k = key_operand(cx, 0)?;
            let a = cx.arr(1)?;
            if !matches!(a.dtype, DType::F32 | DType::F64) {
                return Err(cx.err(format!("a must be f32 or f64, got {}", a.dtype)));
            }
            if !a.shape.starts_with(&k.shape) {
                return Err(cx.err("the keys' shape must be a prefix of a's shape"));
            }
            vec![a.clone().with_weak(false)]
        }
    })
}
