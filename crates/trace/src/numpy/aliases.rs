//! NumPy 2 and array-API spellings of existing `jnp` functions
//! (`jnp.acos` for `jnp.arccos`, `jnp.concat`, `jnp.pow`, ...), and small
//! elementwise functions written from them, each as JAX defines it.

use super::promote::{promote_args, promote_args_inexact, promote_dtypes_inexact};
use super::wrap::lit;
use super::*;

macro_rules! alias_unary {
    ($($alias:ident => $name:ident),* $(,)?) => {$(
        #[doc = concat!("`jnp.", stringify!($alias), "`: [`", stringify!($name), "`].")]
        pub fn $alias(x: &Array) -> Result<Array> {
            $name(x)
        }
    )*};
}

alias_unary! {
    absolute => abs, acos => arccos, acosh => arccosh, asin => arcsin,
    asinh => arcsinh, atan => arctan, atanh => arctanh,
    bitwise_not => invert, bitwise_invert => invert,
}

macro_rules! alias_binary {
    ($($alias:ident => $name:ident),* $(,)?) => {$(
        #[doc = concat!("`jnp.", stringify!($alias), "`: [`", stringify!($name), "`].")]
        pub fn $alias(x: &Array, y: &Array) -> Result<Array> {
            $name(x, y)
        }
    )*};
}

alias_binary! {
    atan2 => arctan2, pow => power, true_divide => divide, r#mod => remainder,
    bitwise_left_shift => left_shift, bitwise_right_shift => right_shift,
}

/// `jnp.amax`: [`max`].
pub fn amax(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    max(x, axes, keepdims)
}

/// `jnp.amin`: [`min`].
pub fn amin(x: &Array, axes: impl IntoAxes, keepdims: bool) -> Result<Array> {
    min(x, axes, keepdims)
}

/// `jnp.around`: [`round`].
pub fn around(x: &Array, decimals: i32) -> Result<Array> {
    round(x, decimals)
}

/// `jnp.concat`: [`concatenate`].
pub fn concat(arrays: &[Array], axis: isize) -> Result<Array> {
    concatenate(arrays, axis)
}

/// `jnp.permute_dims`: [`transpose`] with explicit axes.
pub fn permute_dims(x: &Array, axes: &[usize]) -> Result<Array> {
    transpose(x, Some(axes))
}

/// `jnp.invert` (`~x`): bitwise not of integers, logical not of bools.
pub fn invert(x: &Array) -> Result<Array> {
    if x.dtype().is_float() || x.dtype().is_complex() {
        return Err(Error::DTypeMismatch {
            op: "invert".into(),
            lhs: fmt_aval(x.aval()),
            rhs: "an integer or bool".into(),
        });
    }
    lax::unary(UnaryOp::Not, x)
}

/// `jnp.fabs`: `abs` of the input made inexact.
pub fn fabs(x: &Array) -> Result<Array> {
    abs(&promote_dtypes_inexact("fabs", &[x])?.remove(0))
}

/// `jnp.positive`: `+x`.
pub fn positive(x: &Array) -> Result<Array> {
    Ok(x.clone())
}

/// `jnp.reciprocal`: `1 / x` (integers are made inexact first, as in JAX).
pub fn reciprocal(x: &Array) -> Result<Array> {
    let x = promote_dtypes_inexact("reciprocal", &[x])?.remove(0);
    lax::integer_pow(&x, -1)
}

/// `jnp.trunc`: towards zero (integers unchanged).
pub fn trunc(x: &Array) -> Result<Array> {
    if !x.dtype().is_float() {
        return Ok(x.clone());
    }
    let neg = less(x, &lit(0.0, x.dtype())?)?;
    where_(&neg, &ceil(x)?, &floor(x)?)
}

/// `jnp.rint`: to the nearest integer, halves to even, as a float
/// (integers are made inexact first, as in JAX).
pub fn rint(x: &Array) -> Result<Array> {
    round(&promote_dtypes_inexact("rint", &[x])?.remove(0), 0)
}

fn scale(op: &str, x: &Array, k: f64) -> Result<Array> {
    let x = promote_dtypes_inexact(op, &[x])?.remove(0);
    lax::binary(
        BinaryOp::Mul,
        &x,
        &lax::broadcast_in_dim(&lit(k, x.dtype())?, &x.try_shape()?, &[])?,
    )
}

/// `jnp.deg2rad`: `x · π/180`.
pub fn deg2rad(x: &Array) -> Result<Array> {
    scale("deg2rad", x, std::f64::consts::PI / 180.0)
}

/// `jnp.radians`: [`deg2rad`].
pub fn radians(x: &Array) -> Result<Array> {
    deg2rad(x)
}

/// `jnp.rad2deg`: `x · 180/π`.
pub fn rad2deg(x: &Array) -> Result<Array> {
    scale("rad2deg", x, 180.0 / std::f64::consts::PI)
}

/// `jnp.degrees`: [`rad2deg`].
pub fn degrees(x: &Array) -> Result<Array> {
    rad2deg(x)
}

/// `jnp.log2`: `log(x) / log(2)`, as JAX computes it.
pub fn log2(x: &Array) -> Result<Array> {
    let x = promote_dtypes_inexact("log2", &[x])?.remove(0);
    divide(&log(&x)?, &log(&lit(2.0, x.dtype())?)?)
}

/// `jnp.log10`: `log(x) / log(10)`, as JAX computes it.
pub fn log10(x: &Array) -> Result<Array> {
    let x = promote_dtypes_inexact("log10", &[x])?.remove(0);
    divide(&log(&x)?, &log(&lit(10.0, x.dtype())?)?)
}

/// `jnp.signbit`: whether the sign bit is set (`-0.0` and `-nan` too).
pub fn signbit(x: &Array) -> Result<Array> {
    let d = x.dtype();
    if d.is_float() {
        let int = match d.size_bytes() {
            2 => DType::I16,
            4 => DType::I32,
            _ => DType::I64,
        };
        let bits = lax::bitcast_convert_type(x, int)?;
        less(&bits, &lit(0.0, int)?)
    } else if d.is_bool() || d.is_unsigned_int() {
        // Never set.
        all_false(x)
    } else {
        less(x, &lit(0.0, d)?)
    }
}

/// `jnp.copysign(x1, x2)`: `|x1|` with the sign bit of `x2`.
pub fn copysign(x1: &Array, x2: &Array) -> Result<Array> {
    let a = promote_args_inexact("copysign", &[x1, x2])?;
    let m = abs(&a[0])?;
    where_(&signbit(&a[1])?, &negative(&m)?, &m)
}

/// `jnp.hypot`: `√(x² + y²)` without overflow, `inf` if either is.
pub fn hypot(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args_inexact("hypot", &[x, y])?;
    let (x, y) = (abs(&a[0])?, abs(&a[1])?);
    let d = x.dtype();
    let inf = lit(f64::INFINITY, d)?;
    let any_inf = logical_or(&equal(&x, &inf)?, &equal(&y, &inf)?)?;
    let (big, small) = (maximum(&x, &y)?, minimum(&x, &y)?);
    let zero = equal(&big, &lit(0.0, d)?)?;
    let safe = where_(&zero, &lit(1.0, d)?, &big)?;
    let r = divide(&small, &safe)?;
    let h = multiply(&big, &sqrt(&add(&lit(1.0, d)?, &square(&r)?)?)?)?;
    where_(&any_inf, &inf, &h)
}

/// `jnp.logaddexp`: `log(exp(x) + exp(y))` without overflow.
pub fn logaddexp(x: &Array, y: &Array) -> Result<Array> {
    logaddexp_base("logaddexp", x, y, false)
}

/// `jnp.logaddexp2`: `log2(2^x + 2^y)` without overflow.
pub fn logaddexp2(x: &Array, y: &Array) -> Result<Array> {
    logaddexp_base("logaddexp2", x, y, true)
}

fn logaddexp_base(op: &str, x: &Array, y: &Array, base2: bool) -> Result<Array> {
    let a = promote_args_inexact(op, &[x, y])?;
    let (x, y) = (&a[0], &a[1]);
    let d = x.dtype();
    let amax = maximum(x, y)?;
    let delta = subtract(x, y)?;
    let tail = if base2 {
        let ln2 = lit(std::f64::consts::LN_2, d)?;
        divide(&log1p(&exp2(&negative(&abs(&delta)?)?)?)?, &ln2)?
    } else {
        log1p(&exp(&negative(&abs(&delta)?)?)?)?
    };
    where_(&isnan(&delta)?, &add(x, y)?, &add(&amax, &tail)?)
}

/// `jnp.fmax`: the larger, ignoring a NaN when the other is not NaN.
pub fn fmax(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("fmax", &[x, y])?;
    let pick = logical_or(&greater(&a[0], &a[1])?, &isnan(&a[1])?)?;
    where_(&pick, &a[0], &a[1])
}

/// `jnp.fmin`: the smaller, ignoring a NaN when the other is not NaN.
pub fn fmin(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args("fmin", &[x, y])?;
    let pick = logical_or(&less(&a[0], &a[1])?, &isnan(&a[1])?)?;
    where_(&pick, &a[0], &a[1])
}

/// `jnp.logical_xor`: on the truth values of `x` and `y`.
pub fn logical_xor(x: &Array, y: &Array) -> Result<Array> {
    bitwise_xor(&x.astype(DType::Bool), &y.astype(DType::Bool))
}

/// `jnp.heaviside(x1, x2)`: 0 below zero, 1 above, `x2` at zero, NaN at
/// NaN.
pub fn heaviside(x1: &Array, x2: &Array) -> Result<Array> {
    let a = promote_args_inexact("heaviside", &[x1, x2])?;
    let d = a[0].dtype();
    let (zero, one) = (lit(0.0, d)?, lit(1.0, d)?);
    let at_zero = where_(&isnan(&a[0])?, &a[0], &a[1])?;
    let above = where_(&greater(&a[0], &zero)?, &one, &at_zero)?;
    where_(&less(&a[0], &zero)?, &zero, &above)
}

/// `jnp.sinc`: `sin(πx)/(πx)`, 1 at 0 (with derivative 0 there).
pub fn sinc(x: &Array) -> Result<Array> {
    let x = promote_dtypes_inexact("sinc", &[x])?.remove(0);
    let d = x.dtype();
    let zero = equal(&x, &lit(0.0, d)?)?;
    let pix = multiply(&lit(std::f64::consts::PI, d)?, &x)?;
    let safe = where_(&zero, &lit(1.0, d)?, &pix)?;
    where_(&zero, &lit(1.0, d)?, &divide(&sin(&safe)?, &safe)?)
}

/// `jnp.fmod`: the remainder with the dividend's sign (C's `fmod`); an
/// integer division by zero divides by 1 instead, as in JAX.
pub fn fmod(x1: &Array, x2: &Array) -> Result<Array> {
    let a = promote_args("fmod", &[x1, x2])?;
    let d = a[0].dtype();
    let y = if d.is_float() || d.is_complex() {
        a[1].clone()
    } else {
        let zero = equal(&a[1], &lit(0.0, d)?)?;
        where_(&zero, &lit(1.0, d)?, &a[1])?
    };
    lax::binary(BinaryOp::Rem, &a[0], &y)
}

/// `jnp.divmod`: `(floor_divide(x1, x2), remainder(x1, x2))`.
pub fn divmod(x1: &Array, x2: &Array) -> Result<(Array, Array)> {
    Ok((floor_divide(x1, x2)?, remainder(x1, x2)?))
}

/// `jnp.modf`: the fractional and whole parts, both with `x`'s sign.
pub fn modf(x: &Array) -> Result<(Array, Array)> {
    let x = promote_dtypes_inexact("modf", &[x])?.remove(0);
    let nonneg = greater_equal(&x, &lit(0.0, x.dtype())?)?;
    let whole = where_(&nonneg, &floor(&x)?, &ceil(&x)?)?;
    Ok((subtract(&x, &whole)?, whole))
}

/// `jnp.float_power`: `x ** y` in an inexact dtype.
pub fn float_power(x: &Array, y: &Array) -> Result<Array> {
    let a = promote_args_inexact("float_power", &[x, y])?;
    power(&a[0], &a[1])
}

/// `false` in `x`'s shape (the answer of the sign and class tests for
/// dtypes that cannot have the property).
fn all_false(x: &Array) -> Result<Array> {
    lax::broadcast_in_dim(&lit(0.0, DType::Bool)?, &x.try_shape()?, &[])
}

fn is_inf_of_sign(x: &Array, positive: bool) -> Result<Array> {
    let d = x.dtype();
    if !d.is_float() {
        return all_false(x);
    }
    let inf = if positive {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    };
    equal(x, &lit(inf, d)?)
}

/// `jnp.isposinf`.
pub fn isposinf(x: &Array) -> Result<Array> {
    is_inf_of_sign(x, true)
}

/// `jnp.isneginf`.
pub fn isneginf(x: &Array) -> Result<Array> {
    is_inf_of_sign(x, false)
}

/// `jnp.iscomplex`: a nonzero imaginary part (false for real dtypes).
pub fn iscomplex(x: &Array) -> Result<Array> {
    if x.dtype().is_complex() {
        let im = imag(x)?;
        not_equal(&im, &lit(0.0, im.dtype())?)
    } else {
        all_false(x)
    }
}

/// `jnp.isreal`: a zero imaginary part (true for real dtypes).
pub fn isreal(x: &Array) -> Result<Array> {
    logical_not(&iscomplex(x)?)
}
