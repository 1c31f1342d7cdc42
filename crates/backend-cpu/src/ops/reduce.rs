//! Reductions along axes with runtime extents: the operand is viewed as
//! `(outer, reduced, inner)` (after a strided copy that moves the reduced
//! axes last when they are not adjacent) and folded row by row.
//!
//! Invariant: each result accumulates its elements in row-major order of
//! the reduced axes, in the interpreter's accumulator type (f16/bf16 in
//! f32, rounded once at the end; integers wrapping in their own width), so
//! results are bit-identical to `jaxon_ir::interp`'s `reduce`.

use crate::error::run_error;
use crate::ops::movement::{strided, strides};
use crate::ops::typed::{elems, Typed};
use half::{bf16, f16};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{DType, HostArray, IrError};

fn fail(m: impl std::fmt::Display) -> IrError {
    run_error(format!("{m}"))
}

/// Folds `x` viewed as `(outer, red, inner)` over its middle axis.
#[allow(clippy::too_many_arguments)]
fn fold3<T: Copy, A: Copy>(
    x: &[T],
    outer: usize,
    red: usize,
    inner: usize,
    init: A,
    lift: impl Fn(T) -> A,
    f: impl Fn(A, A) -> A,
    lower: impl Fn(A) -> T,
) -> Vec<T> {
    let mut out = Vec::with_capacity(outer * inner);
    if inner == 1 {
        for o in 0..outer {
            let row = &x[o * red..(o + 1) * red];
            out.push(lower(row.iter().fold(init, |a, &v| f(a, lift(v)))));
        }
        return out;
    }
    let mut acc = vec![init; inner];
    for o in 0..outer {
        acc.fill(init);
        for r in 0..red {
            let base = (o * red + r) * inner;
            for (a, &v) in acc.iter_mut().zip(&x[base..base + inner]) {
                *a = f(*a, lift(v));
            }
        }
        out.extend(acc.iter().map(|&a| lower(a)));
    }
    out
}

/// NaN-propagating maximum, `max(-0, +0) = +0` (the interpreter's).
fn fmax<F: Copy + PartialOrd>(a: F, b: F, neg: impl Fn(F) -> bool) -> F {
    #[allow(clippy::eq_op)]
    let (an, bn) = (a != a, b != b);
    if an {
        a
    } else if bn || !(a > b || (a == b && !neg(a))) {
        b
    } else {
        a
    }
}

/// NaN-propagating minimum, `min(-0, +0) = -0` (the interpreter's).
fn fmin<F: Copy + PartialOrd>(a: F, b: F, neg: impl Fn(F) -> bool) -> F {
    #[allow(clippy::eq_op)]
    let (an, bn) = (a != a, b != b);
    if an {
        a
    } else if bn || !(a < b || (a == b && neg(a))) {
        b
    } else {
        a
    }
}

/// A float reduction in accumulator type `A` (`f32` or `f64`).
macro_rules! float_fold {
    ($x:expr, $o:expr, $r:expr, $i:expr, $op:expr, $a:ty, $lift:expr, $lower:expr, $name:expr, $dt:expr) => {{
        let neg = |v: $a| v.is_sign_negative();
        match $op {
            ReduceOp::Sum => fold3($x, $o, $r, $i, 0.0 as $a, $lift, |a, b| a + b, $lower),
            ReduceOp::Prod => fold3($x, $o, $r, $i, 1.0 as $a, $lift, |a, b| a * b, $lower),
            ReduceOp::Max => fold3(
                $x,
                $o,
                $r,
                $i,
                <$a>::NEG_INFINITY,
                $lift,
                |a, b| fmax(a, b, neg),
                $lower,
            ),
            ReduceOp::Min => fold3(
                $x,
                $o,
                $r,
                $i,
                <$a>::INFINITY,
                $lift,
                |a, b| fmin(a, b, neg),
                $lower,
            ),
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                return Err(IrError::UnsupportedDType {
                    primitive: $name.into(),
                    dtype: $dt,
                })
            }
        }
    }};
}

/// An integer reduction of type `$t`, wrapping.
macro_rules! int_fold {
    ($x:expr, $o:expr, $r:expr, $i:expr, $op:expr, $t:ty) => {{
        let id = |v: $t| v;
        match $op {
            ReduceOp::Sum => fold3($x, $o, $r, $i, 0, id, <$t>::wrapping_add, id),
            ReduceOp::Prod => fold3($x, $o, $r, $i, 1, id, <$t>::wrapping_mul, id),
            ReduceOp::Max => fold3($x, $o, $r, $i, <$t>::MIN, id, |a, b| a.max(b), id),
            ReduceOp::Min => fold3($x, $o, $r, $i, <$t>::MAX, id, |a, b| a.min(b), id),
            ReduceOp::And => fold3($x, $o, $r, $i, !0, id, |a, b| a & b, id),
            ReduceOp::Or => fold3($x, $o, $r, $i, 0, id, |a, b| a | b, id),
            ReduceOp::Xor => fold3($x, $o, $r, $i, 0, id, |a, b| a ^ b, id),
        }
    }};
}

/// `reduce_<op>[axes]` of `x`.
pub(crate) fn reduce(op: ReduceOp, x: &HostArray, axes: &[usize]) -> Result<HostArray, IrError> {
    let name = op.name();
    let shape = x.shape();
    let mut axes = axes.to_vec();
    axes.sort_unstable();
    axes.dedup();
    if axes.iter().any(|&a| a >= shape.len()) {
        return Err(fail(format!("{name} of {shape:?} along {axes:?}")));
    }
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !axes.contains(d)).collect();
    let out_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let contiguous = axes.windows(2).all(|w| w[1] == w[0] + 1);
    let moved;
    let (src, outer, red, inner) = match (axes.first(), axes.last()) {
        (Some(&a), Some(&b)) if contiguous => (
            x,
            shape[..a].iter().product::<usize>(),
            shape[a..=b].iter().product::<usize>(),
            shape[b + 1..].iter().product::<usize>(),
        ),
        (None, _) | (_, None) => (x, x.len(), 1, 1),
        _ => {
            // Kept axes first, then the reduced ones in their order.
            let order: Vec<usize> = kept.iter().chain(&axes).copied().collect();
            let xs = strides(shape);
            let tshape: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
            let st: Vec<isize> = order.iter().map(|&d| xs[d]).collect();
            moved = strided(name, x, &tshape, 0, &st)?;
            let red: usize = axes.iter().map(|&d| shape[d]).product();
            (&moved, out_shape.iter().product(), red, 1)
        }
    };
    let dt = x.dtype();
    let data = src.data();
    let (o, r, i) = (outer, red, inner);
    macro_rules! ints {
        ($($d:ident => $t:ty),*) => {
            match dt {
                $(DType::$d => <$t>::wrap(int_fold!(elems::<$t>(data, dt, name)?, o, r, i, op, $t)),)*
                DType::F32 => {
                    let v = elems::<f32>(data, dt, name)?;
                    f32::wrap(float_fold!(v, o, r, i, op, f32, |v| v, |a| a, name, dt))
                }
                DType::F64 => {
                    let v = elems::<f64>(data, dt, name)?;
                    f64::wrap(float_fold!(v, o, r, i, op, f64, |v| v, |a| a, name, dt))
                }
                DType::F16 => {
                    let v = elems::<f16>(data, dt, name)?;
                    f16::wrap(float_fold!(v, o, r, i, op, f32, f16::to_f32, f16::from_f32, name, dt))
                }
                DType::BF16 => {
                    let v = elems::<bf16>(data, dt, name)?;
                    bf16::wrap(float_fold!(v, o, r, i, op, f32, bf16::to_f32, bf16::from_f32, name, dt))
                }
                DType::Bool => {
                    let v = elems::<bool>(data, dt, name)?;
                    let id = |v: bool| v;
                    bool::wrap(match op {
                        ReduceOp::Sum | ReduceOp::Or | ReduceOp::Max => fold3(v, o, r, i, false, id, |a, b| a | b, id),
                        ReduceOp::Prod | ReduceOp::And | ReduceOp::Min => fold3(v, o, r, i, true, id, |a, b| a & b, id),
                        ReduceOp::Xor => fold3(v, o, r, i, false, id, |a, b| a ^ b, id),
                    })
                }
                // Complex programs take the slow path (`crate::complex`).
                DType::C64 | DType::C128 => {
                    return Err(run_error(format!("{name} of {dt} runs on the complex slow path")))
                }
                DType::KeyFry => return Err(run_error(format!("{name} of keys"))),
            }
        };
    }
    let out = ints!(I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64);
    HostArray::new(out_shape, out)
}
