//! Rust operators and methods on `Array`: `+ - * / % neg ! & | ^` with
//! arrays and Rust scalars on either side, comparisons as methods, and
//! `PartialOrd`/`PartialEq` against scalars for Rust control flow on
//! concrete values (a concretization error on tracers).
//!
//! Invariant: operators are infallible at the type level; a user error
//! (incompatible shapes, a tracer in `if`) is raised as an `Error` payload
//! and surfaces as `Err` from the enclosing entry point.

use crate::array::{raise_concretization, Array};
use crate::error::{ok_or_raise, Result};
use crate::numpy as jnp;
use crate::numpy::IntoAxes;
use crate::{lax, numpy::promote};
use jaxon_ir::DType;
use std::cmp::Ordering;
use std::ops;

/// Something usable as an array operand: an `Array` or a Rust scalar
/// (which becomes weakly typed).
pub trait IntoArray {
    /// The operand as an array.
    fn into_array(self) -> Array;
}

impl IntoArray for Array {
    fn into_array(self) -> Array {
        self
    }
}

impl IntoArray for &Array {
    fn into_array(self) -> Array {
        self.clone()
    }
}

macro_rules! scalar_into_array {
    ($($t:ty),*) => {$(
        impl IntoArray for $t {
            fn into_array(self) -> Array {
                Array::weak(self)
            }
        }
    )*};
}

scalar_into_array!(f64, i32, bool);

macro_rules! binop {
    ($tr:ident, $m:ident, $f:path) => {
        impl ops::$tr<Array> for Array {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: Array) -> Array {
                ok_or_raise($f(&self, &rhs))
            }
        }
        impl ops::$tr<&Array> for Array {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: &Array) -> Array {
                ok_or_raise($f(&self, rhs))
            }
        }
        impl ops::$tr<Array> for &Array {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: Array) -> Array {
                ok_or_raise($f(self, &rhs))
            }
        }
        impl ops::$tr<&Array> for &Array {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: &Array) -> Array {
                ok_or_raise($f(self, rhs))
            }
        }
        binop!(@scalars $tr, $m, $f; f64, i32);
    };
    (@scalars $tr:ident, $m:ident, $f:path; $($t:ty),*) => {$(
        impl ops::$tr<$t> for Array {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: $t) -> Array {
                ok_or_raise($f(&self, &Array::weak(rhs)))
            }
        }
        impl ops::$tr<$t> for &Array {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: $t) -> Array {
                ok_or_raise($f(self, &Array::weak(rhs)))
            }
        }
        impl ops::$tr<Array> for $t {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: Array) -> Array {
                ok_or_raise($f(&Array::weak(self), &rhs))
            }
        }
        impl ops::$tr<&Array> for $t {
            type Output = Array;
            #[track_caller]
            fn $m(self, rhs: &Array) -> Array {
                ok_or_raise($f(&Array::weak(self), rhs))
            }
        }
    )*};
}

binop!(Add, add, jnp::add);
binop!(Sub, sub, jnp::subtract);
binop!(Mul, mul, jnp::multiply);
binop!(Div, div, jnp::divide);
binop!(Rem, rem, jnp::remainder);
binop!(BitAnd, bitand, jnp::bitwise_and);
binop!(BitOr, bitor, jnp::bitwise_or);
binop!(BitXor, bitxor, jnp::bitwise_xor);

impl ops::Neg for Array {
    type Output = Array;
    #[track_caller]
    fn neg(self) -> Array {
        ok_or_raise(lax::neg(&self))
    }
}

impl ops::Neg for &Array {
    type Output = Array;
    #[track_caller]
    fn neg(self) -> Array {
        ok_or_raise(lax::neg(self))
    }
}

impl ops::Not for Array {
    type Output = Array;
    #[track_caller]
    fn not(self) -> Array {
        ok_or_raise(lax::not(&self))
    }
}

impl ops::Not for &Array {
    type Output = Array;
    #[track_caller]
    fn not(self) -> Array {
        ok_or_raise(lax::not(self))
    }
}

macro_rules! unary_methods {
    ($($name:ident => $f:path),* $(,)?) => {$(
        #[doc = concat!("Elementwise `", stringify!($name), "`.")]
        #[track_caller]
        pub fn $name(&self) -> Array {
            ok_or_raise($f(self))
        }
    )*};
}

macro_rules! binary_methods {
    ($($name:ident => $f:path),* $(,)?) => {$(
        #[doc = concat!("Elementwise `", stringify!($name), "` with broadcasting and promotion.")]
        #[track_caller]
        pub fn $name(&self, other: impl IntoArray) -> Array {
            ok_or_raise($f(self, &other.into_array()))
        }
    )*};
}

impl Array {
    unary_methods! {
        sin => jnp::sin, cos => jnp::cos, tan => jnp::tan, tanh => jnp::tanh,
        sinh => jnp::sinh, cosh => jnp::cosh, arcsin => jnp::arcsin,
        arccos => jnp::arccos, arctan => jnp::arctan,
        exp => jnp::exp, exp2 => jnp::exp2, log => jnp::log, log1p => jnp::log1p,
        expm1 => jnp::expm1, sqrt => jnp::sqrt, cbrt => jnp::cbrt,
        abs => jnp::abs, sign => jnp::sign, square => jnp::square,
        floor => jnp::floor, ceil => jnp::ceil, logical_not => jnp::logical_not,
        rsqrt => lax::rsqrt, logistic => lax::logistic, erf => lax::erf,
        stop_gradient => lax::stop_gradient, is_finite => lax::is_finite,
    }

    binary_methods! {
        lt => jnp::less, le => jnp::less_equal, gt => jnp::greater,
        ge => jnp::greater_equal, eq => jnp::equal, ne => jnp::not_equal,
        maximum => jnp::maximum, minimum => jnp::minimum, pow => jnp::power,
        matmul => jnp::matmul, dot => jnp::dot, arctan2 => jnp::arctan2,
        logical_and => jnp::logical_and, logical_or => jnp::logical_or,
    }

    /// `x ** n` for a static integer exponent (`integer_pow`).
    #[track_caller]
    pub fn powi(&self, n: i64) -> Array {
        ok_or_raise(jnp::power_int(self, n))
    }

    /// Casts to `dtype` (`x.astype(dtype)`).
    #[track_caller]
    pub fn astype(&self, dtype: DType) -> Array {
        ok_or_raise(lax::convert_element_type(self, dtype, false))
    }

    /// Sum over `axes` (`All` for every axis).
    #[track_caller]
    pub fn sum(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::sum(self, axes, false))
    }

    /// Product over `axes`.
    #[track_caller]
    pub fn prod(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::prod(self, axes, false))
    }

    /// Maximum over `axes`.
    #[track_caller]
    pub fn max(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::max(self, axes, false))
    }

    /// Minimum over `axes`.
    #[track_caller]
    pub fn min(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::min(self, axes, false))
    }

    /// Mean over `axes`.
    #[track_caller]
    pub fn mean(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::mean(self, axes, false))
    }

    /// Variance over `axes` (`ddof = 0`).
    #[track_caller]
    pub fn var(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::var(self, axes, 0, false))
    }

    /// Standard deviation over `axes` (`ddof = 0`).
    #[track_caller]
    pub fn std(&self, axes: impl IntoAxes) -> Array {
        ok_or_raise(jnp::std(self, axes, 0, false))
    }

    /// Running sum along `axis` (`None`: over the flattened array).
    #[track_caller]
    pub fn cumsum(&self, axis: Option<isize>) -> Array {
        ok_or_raise(jnp::cumsum(self, axis))
    }

    /// Sorted along `axis` (`None`: the flattened array).
    #[track_caller]
    pub fn sort(&self, axis: Option<isize>) -> Array {
        ok_or_raise(jnp::sort(self, axis))
    }

    /// Indices that sort along `axis`.
    #[track_caller]
    pub fn argsort(&self, axis: Option<isize>) -> Array {
        ok_or_raise(jnp::argsort(self, axis))
    }

    /// Index of the maximum along `axis` (`None`: flattened).
    #[track_caller]
    pub fn argmax(&self, axis: Option<isize>) -> Array {
        ok_or_raise(jnp::argmax(self, axis, false))
    }

    /// Index of the minimum along `axis` (`None`: flattened).
    #[track_caller]
    pub fn argmin(&self, axis: Option<isize>) -> Array {
        ok_or_raise(jnp::argmin(self, axis, false))
    }

    /// Clamped to `[lo, hi]` (`jnp.clip`).
    #[track_caller]
    pub fn clip(&self, lo: impl IntoArray, hi: impl IntoArray) -> Array {
        let (lo, hi) = (lo.into_array(), hi.into_array());
        ok_or_raise(jnp::clip(self, Some(&lo), Some(&hi)))
    }

    /// Elements at `indices` along `axis` (`jnp.take`).
    #[track_caller]
    pub fn take(&self, indices: &Array, axis: Option<isize>) -> Array {
        ok_or_raise(jnp::take(self, indices, axis))
    }

    /// Reshapes; one `-1` entry is inferred.
    #[track_caller]
    pub fn reshape(&self, shape: &[isize]) -> Array {
        ok_or_raise(jnp::reshape(self, shape))
    }

    /// Permutes axes.
    #[track_caller]
    pub fn transpose(&self, axes: &[usize]) -> Array {
        ok_or_raise(jnp::transpose(self, Some(axes)))
    }

    /// Reverses the axes (`x.T`).
    #[track_caller]
    pub fn t(&self) -> Array {
        ok_or_raise(jnp::transpose(self, None))
    }

    /// Broadcasts to `shape`.
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[usize]) -> Array {
        ok_or_raise(promote::broadcast_to(self, shape))
    }

    /// The concrete truth value of a size-1 array, for Rust control flow;
    /// a concretization error naming `op` on a tracer.
    pub fn try_to_bool(&self, op: &str) -> Result<bool> {
        Ok(self.try_scalar_f64(op)? != 0.0)
    }

    #[track_caller]
    fn compare(&self, other: Array, op: &str) -> Option<Ordering> {
        for x in [self, &other] {
            if x.is_tracer() {
                raise_concretization(x, &format!("the comparison `{op}` in Rust control flow"));
            }
        }
        let a = ok_or_raise(self.try_scalar_f64(op));
        let b = ok_or_raise(other.try_scalar_f64(op));
        a.partial_cmp(&b)
    }
}

macro_rules! rust_comparisons {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for Array {
            #[track_caller]
            fn eq(&self, other: &$t) -> bool {
                self.compare(other.clone().into_array(), "==") == Some(Ordering::Equal)
            }
        }
        impl PartialOrd<$t> for Array {
            #[track_caller]
            fn partial_cmp(&self, other: &$t) -> Option<Ordering> {
                self.compare(other.clone().into_array(), "partial_cmp")
            }
            #[track_caller]
            fn lt(&self, other: &$t) -> bool {
                self.compare(other.clone().into_array(), "<") == Some(Ordering::Less)
            }
            #[track_caller]
            fn le(&self, other: &$t) -> bool {
                matches!(self.compare(other.clone().into_array(), "<="), Some(Ordering::Less | Ordering::Equal))
            }
            #[track_caller]
            fn gt(&self, other: &$t) -> bool {
                self.compare(other.clone().into_array(), ">") == Some(Ordering::Greater)
            }
            #[track_caller]
            fn ge(&self, other: &$t) -> bool {
                matches!(self.compare(other.clone().into_array(), ">="), Some(Ordering::Greater | Ordering::Equal))
            }
        }
    )*};
}

rust_comparisons!(f64, i32, Array);
