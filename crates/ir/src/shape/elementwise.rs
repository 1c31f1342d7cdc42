//! Shape rules of the elementwise primitives: unary and binary ops,
//! conversions, `select_n` and `clamp`.

use super::{fmt_shape, fmt_ty, Cx};
use crate::aval::{Dim, Shape, ShapedArray};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{BinaryOp, UnaryOp};

/// Which dtypes an operand position accepts.
#[derive(Clone, Copy)]
enum Accept {
    /// Integers and floats (not bool).
    Num,
    /// Every dtype.
    Any,
    /// Floats.
    Float,
    /// Integers (not bool).
    Int,
    /// Bools and integers.
    BoolOrInt,
    /// Floats and complex numbers.
    Inexact,
    /// Signed integers, floats and complex numbers.
    SignedOrInexact,
}

impl Accept {
    fn ok(self, d: DType) -> bool {
        match self {
            Accept::Num => !d.is_bool(),
            Accept::Any => true,
            Accept::Float => d.is_float(),
            Accept::Int => d.is_int(),
            Accept::BoolOrInt => d.is_int() || d.is_bool(),
            Accept::Inexact => d.is_inexact(),
            Accept::SignedOrInexact => d.is_signed_int() || d.is_inexact(),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Accept::Num => "number",
            Accept::Any => "any",
            Accept::Float => "floating",
            Accept::Int => "integer",
            Accept::BoolOrInt => "integer, bool",
            Accept::Inexact => "inexact",
            Accept::SignedOrInexact => "signedinteger, inexact",
        }
    }
}

fn accept_at(cx: &Cx, i: usize, a: &ShapedArray, acc: Accept) -> Result<(), IrError> {
    if !acc.ok(a.dtype) {
        return Err(cx.err(format!(
            "does not accept dtype {} at position {i}; accepted dtypes at position {i} are subtypes of {}",
            a.dtype.numpy_name(),
            acc.describe()
        )));
    }
    Ok(())
}

/// JAX's broadcasting rule for n-ary ops: rank-0 operands broadcast; the
/// others must have one rank, and each dim is equal across them or 1.
pub(crate) fn broadcast_shapes(cx: &Cx, arrays: &[&ShapedArray]) -> Result<Shape, IrError> {
    let shaped: Vec<&ShapedArray> = arrays
        .iter()
        .copied()
        .filter(|a| !a.shape.is_empty())
        .collect();
    let Some(first) = shaped.first() else {
        return Ok(Vec::new());
    };
    let all_shapes = || {
        arrays
            .iter()
            .map(|a| fmt_ty(a))
            .collect::<Vec<_>>()
            .join(" and ")
    };
    if shaped.iter().any(|a| a.ndim() != first.ndim()) {
        return Err(cx.err(format!(
            "arrays must have the same number of dimensions, got {}",
            all_shapes()
        )));
    }
    let mut out = Vec::with_capacity(first.ndim());
    for i in 0..first.ndim() {
        let mut d: Option<Dim> = None;
        for a in &shaped {
            let e = a.shape[i];
            match d {
                None => d = Some(e),
                Some(prev) if prev == e => {}
                Some(Dim::Const(1)) => d = Some(e),
                Some(_) if e == Dim::Const(1) => {}
                Some(_) => {
                    return Err(cx.err(format!("operand types must match, got {}", all_shapes())))
                }
            }
        }
        out.push(d.unwrap_or(Dim::Const(1)));
    }
    Ok(out)
}

fn same_dtypes(cx: &Cx, arrays: &[&ShapedArray]) -> Result<DType, IrError> {
    let d = arrays[0].dtype;
    if arrays.iter().any(|a| a.dtype != d) {
        let tys: Vec<String> = arrays.iter().map(|a| fmt_ty(a)).collect();
        return Err(cx.err(format!(
            "operand types must match, got {}",
            tys.join(" and ")
        )));
    }
    Ok(d)
}

fn all_weak(arrays: &[&ShapedArray]) -> bool {
    arrays.iter().all(|a| a.weak_type)
}

fn unary_accept(op: UnaryOp) -> Accept {
    match op {
        UnaryOp::Neg | UnaryOp::Sign | UnaryOp::Square => Accept::Num,
        UnaryOp::Exp
        | UnaryOp::Exp2
        | UnaryOp::Log
        | UnaryOp::Log1p
        | UnaryOp::Expm1
        | UnaryOp::Tanh
        | UnaryOp::Logistic
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Tan
        | UnaryOp::Asin
        | UnaryOp::Acos
        | UnaryOp::Atan
        | UnaryOp::Sinh
        | UnaryOp::Cosh
        | UnaryOp::Asinh
        | UnaryOp::Acosh
        | UnaryOp::Atanh
        | UnaryOp::Sqrt
        | UnaryOp::Rsqrt => Accept::Inexact,
        UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::IsFinite
        | UnaryOp::Cbrt
        | UnaryOp::Erf
        | UnaryOp::Erfc
        | UnaryOp::ErfInv
        | UnaryOp::Lgamma
        | UnaryOp::Digamma
        | UnaryOp::BesselI0e
        | UnaryOp::BesselI1e => Accept::Float,
        UnaryOp::Abs => Accept::SignedOrInexact,
        UnaryOp::Not => Accept::BoolOrInt,
        UnaryOp::PopulationCount | UnaryOp::Clz => Accept::Int,
        UnaryOp::Copy | UnaryOp::StopGradient => Accept::Any,
    }
}

/// `neg`, `exp`, `is_finite`, ...
pub(crate) fn unary(cx: &Cx, op: UnaryOp) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    accept_at(cx, 0, x, unary_accept(op))?;
    if op == UnaryOp::IsFinite {
        return Ok(ShapedArray::new(DType::Bool, x.shape.clone()));
    }
    if op == UnaryOp::Abs && x.dtype.is_complex() {
        return Ok(ShapedArray {
            dtype: x.dtype.real_dtype(),
            ..x.clone()
        });
    }
    Ok(x.clone())
}

/// `complex x y`: two floats of one dtype (`f32` or `f64`), broadcast
/// shapes; the complex dtype of that precision.
pub(crate) fn complex(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let (x, y) = (cx.arr(0)?, cx.arr(1)?);
    let d = same_dtypes(cx, &[x, y])?;
    let dtype = d
        .complex_dtype()
        .filter(|_| d.is_float())
        .ok_or_else(|| cx.err(format!("operands must be f32 or f64, got {}", fmt_ty(x))))?;
    Ok(ShapedArray {
        dtype,
        shape: broadcast_shapes(cx, &[x, y])?,
        weak_type: all_weak(&[x, y]),
    })
}

/// `real x`, `imag x`: a complex operand, its real dtype out.
pub(crate) fn real_imag(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    if !x.dtype.is_complex() {
        return Err(cx.err(format!("operand must be complex, got {}", fmt_ty(x))));
    }
    Ok(ShapedArray {
        dtype: x.dtype.real_dtype(),
        ..x.clone()
    })
}

/// `conj x`: a float or complex operand, the complex dtype of its precision
/// out.
pub(crate) fn conj(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    let dtype = x.dtype.complex_dtype().ok_or_else(|| {
        cx.err(format!(
            "operand must be f32, f64 or complex, got {}",
            fmt_ty(x)
        ))
    })?;
    Ok(ShapedArray { dtype, ..x.clone() })
}

/// `round`: float in, same type out.
pub(crate) fn float_unary(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    accept_at(cx, 0, x, Accept::Float)?;
    Ok(x.clone())
}

/// `integer_pow`: numbers in, same type out.
pub(crate) fn integer_pow(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    accept_at(cx, 0, x, Accept::Num)?;
    Ok(x.clone())
}

/// `reduce_precision`: float in, same type out.
pub(crate) fn reduce_precision(
    cx: &Cx,
    exponent_bits: u32,
    _mantissa_bits: u32,
) -> Result<ShapedArray, IrError> {
    if exponent_bits < 1 {
        return Err(cx.err("exponent_bits must be at least 1"));
    }
    float_unary(cx)
}

fn binary_accept(op: BinaryOp) -> (Accept, Accept) {
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
            (Accept::Num, Accept::Num)
        }
        BinaryOp::Pow => (Accept::Inexact, Accept::Num),
        BinaryOp::Max
        | BinaryOp::Min
        | BinaryOp::Eq
        | BinaryOp::Ne
        | BinaryOp::Lt
        | BinaryOp::Le
        | BinaryOp::Gt
        | BinaryOp::Ge
        | BinaryOp::LtTo
        | BinaryOp::LeTo
        | BinaryOp::AddAny => (Accept::Any, Accept::Any),
        BinaryOp::Atan2
        | BinaryOp::Nextafter
        | BinaryOp::Igamma
        | BinaryOp::Igammac
        | BinaryOp::IgammaGradA
        | BinaryOp::RandomGammaGrad
        | BinaryOp::Polygamma
        | BinaryOp::Zeta => (Accept::Float, Accept::Float),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => (Accept::BoolOrInt, Accept::BoolOrInt),
        BinaryOp::ShiftLeft | BinaryOp::ShiftRightArithmetic | BinaryOp::ShiftRightLogical => {
            (Accept::Int, Accept::Int)
        }
    }
}

/// `add`, `lt`, `shift_left`, ...: same dtypes (except `pow`'s exponent),
/// broadcast-compatible shapes; comparisons give bool.
pub(crate) fn binary(cx: &Cx, op: BinaryOp) -> Result<ShapedArray, IrError> {
    cx.arity(2)?;
    let x = cx.arr(0)?;
    let y = cx.arr(1)?;
    let (ax, ay) = binary_accept(op);
    accept_at(cx, 0, x, ax)?;
    accept_at(cx, 1, y, ay)?;
    let dtype = if op == BinaryOp::Pow {
        // pow: an integer exponent is allowed; float exponents must match.
        if y.dtype.is_inexact() && y.dtype != x.dtype {
            return Err(cx.err(format!(
                "operand types must match, got {} and {}",
                fmt_ty(x),
                fmt_ty(y)
            )));
        }
        x.dtype
    } else {
        same_dtypes(cx, &[x, y])?
    };
    let shape = broadcast_shapes(cx, &[x, y])?;
    if op.is_comparison() {
        return Ok(ShapedArray::new(DType::Bool, shape));
    }
    Ok(ShapedArray {
        dtype,
        shape,
        weak_type: all_weak(&[x, y]),
    })
}

/// `convert_element_type`: new dtype and weak flag, same shape.
pub(crate) fn convert(cx: &Cx, new_dtype: DType, weak: bool) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    Ok(ShapedArray {
        dtype: new_dtype,
        shape: x.shape.clone(),
        weak_type: weak,
    })
}

/// `bitcast_convert_type`: equal widths keep the shape; a narrower target
/// adds a trailing dim, a wider one removes it.
pub(crate) fn bitcast(cx: &Cx, new_dtype: DType) -> Result<ShapedArray, IrError> {
    cx.arity(1)?;
    let x = cx.arr(0)?;
    let (old, new) = (x.dtype.size_bytes(), new_dtype.size_bytes());
    let mut shape = x.shape.clone();
    if old > new {
        shape.push(Dim::Const(old / new));
    } else if old < new {
        let want = Dim::Const(new / old);
        if shape.last() != Some(&want) {
            return Err(cx.err(format!(
                "converting {} to {new_dtype} requires a trailing dimension of size {}",
                fmt_ty(x),
                new / old
            )));
        }
        shape.pop();
    }
    Ok(ShapedArray::new(new_dtype, shape))
}

/// `select_n which *cases`.
pub(crate) fn select_n(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.min_arity(2)?;
    let which = cx.arr(0)?;
    let cases: Vec<&ShapedArray> = (1..cx.avals.len())
        .map(|i| cx.arr(i))
        .collect::<Result<_, _>>()?;
    let first = cases[0];
    for c in &cases[1..] {
        if c.dtype != first.dtype || c.shape != first.shape {
            return Err(cx.err(format!(
                "all cases must have the same type, got {} and {}",
                fmt_ty(first),
                fmt_ty(c)
            )));
        }
    }
    if which.dtype != DType::Bool && which.dtype != DType::I32 {
        return Err(cx.err(format!(
            "which must be a bool or int32, got {}",
            fmt_ty(which)
        )));
    }
    if which.dtype == DType::Bool && cases.len() > 2 {
        return Err(cx.err(format!(
            "a bool which supports at most 2 cases, got {}",
            cases.len()
        )));
    }
    if !which.shape.is_empty() && which.shape != first.shape {
        return Err(cx.err(format!(
            "which must be scalar or have the same shape as cases, got {} and {}",
            fmt_ty(which),
            fmt_ty(first)
        )));
    }
    Ok(ShapedArray {
        dtype: first.dtype,
        shape: first.shape.clone(),
        weak_type: all_weak(&cases),
    })
}

/// `clamp lo x hi`: `lo`/`hi` are scalars or shaped like `x`.
/// `regularized_incomplete_beta a b x`: floats of one dtype, equal shapes
/// (rank-0 operands broadcast).
pub(crate) fn betainc(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(3)?;
    let (a, b, x) = (cx.arr(0)?, cx.arr(1)?, cx.arr(2)?);
    for (i, v) in [a, b, x].into_iter().enumerate() {
        accept_at(cx, i, v, Accept::Float)?;
    }
    same_dtypes(cx, &[a, b, x])?;
    let out = [a, b, x]
        .into_iter()
        .find(|v| !v.shape.is_empty())
        .unwrap_or(x);
    for v in [a, b, x] {
        if !v.shape.is_empty() && v.shape != out.shape {
            return Err(cx.err(format!(
                "operand shapes must be equal, got {} and {}",
                fmt_shape(&v.shape),
                fmt_shape(&out.shape)
            )));
        }
    }
    Ok(out.clone())
}

/// `clamp lo x hi`.
pub(crate) fn clamp(cx: &Cx) -> Result<ShapedArray, IrError> {
    cx.arity(3)?;
    let (lo, x, hi) = (cx.arr(0)?, cx.arr(1)?, cx.arr(2)?);
    same_dtypes(cx, &[lo, x, hi])?;
    for (what, b) in [("min", lo), ("max", hi)] {
        if !b.shape.is_empty() && b.shape != x.shape {
            return Err(cx.err(format!(
                "{what} shape must be scalar or equal to the operand shape {}, got {}",
                fmt_shape(&x.shape),
                fmt_shape(&b.shape)
            )));
        }
    }
    Ok(x.clone())
}
