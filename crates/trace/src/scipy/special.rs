//! `scipy::special`: JAX's `jax.scipy.special` functions over `Array`s,
//! built from the special-function primitives of `lax` as JAX 0.10
//! lowers them (arguments promoted to inexact dtypes first): `gammaln`,
//! `digamma`, `polygamma`, `gammainc`, `gammaincc`, `betainc`, `betaln`
//! (JAX's `algdiv` correction for large arguments), `i0e`, `i1e`, `i0`,
//! `i1`, `zeta`, `xlogy` and `xlog1py` (JAX's `custom_jvp_call`s, whose
//! derivative wrt `x` is `log(y)` even at `x == 0`), `erf`, `erfc`,
//! `erfinv`, `logit`, `expit`, `logsumexp`, `entr`, `multigammaln`.

use crate::array::Array;
use crate::core::bind1;
use crate::error::{Error, Result};
use crate::lax;
use crate::numpy::{self as jnp, promote::promote_args_inexact};
use crate::stage::{close, trace_flat, StageMode};
use jaxon_ir::primitive::CustomJvpCallParams;
use jaxon_ir::Primitive;

pub use crate::numpy::logsumexp;

fn inexact1(name: &str, x: &Array) -> Result<Array> {
    Ok(promote_args_inexact(name, &[x])?.remove(0))
}

fn inexact2(name: &str, x: &Array, y: &Array) -> Result<(Array, Array)> {
    let mut v = promote_args_inexact(name, &[x, y])?;
    let b = v.remove(1);
    Ok((v.remove(0), b))
}

/// A scalar of `x`'s dtype.
fn c(x: &Array, v: f64) -> Result<Array> {
    lax::convert_element_type(&Array::weak(v), x.dtype(), false)
}

macro_rules! unary_special {
    ($($name:ident => $lax:ident: $doc:literal),* $(,)?) => {$(
        #[doc = $doc]
        pub fn $name(x: &Array) -> Result<Array> {
            lax::$lax(&inexact1(stringify!($name), x)?)
        }
    )*};
}

unary_special! {
    gammaln => lgamma: "`jax.scipy.special.gammaln`: `log|Gamma(x)|` (`lgamma`).",
    digamma => digamma: "`jax.scipy.special.digamma`: `psi(x)`.",
    i0e => bessel_i0e: "`jax.scipy.special.i0e`: `exp(-|x|) I0(x)`.",
    i1e => bessel_i1e: "`jax.scipy.special.i1e`: `exp(-|x|) I1(x)`.",
    erf => erf: "`jax.scipy.special.erf`.",
    erfc => erfc: "`jax.scipy.special.erfc`.",
    erfinv => erf_inv: "`jax.scipy.special.erfinv`.",
    expit => logistic: "`jax.scipy.special.expit`: `1 / (1 + exp(-x))` (`logistic`).",
}

macro_rules! binary_special {
    ($($name:ident => $lax:ident: $doc:literal),* $(,)?) => {$(
        #[doc = $doc]
        pub fn $name(a: &Array, x: &Array) -> Result<Array> {
            let (a, x) = inexact2(stringify!($name), a, x)?;
            lax::$lax(&a, &x)
        }
    )*};
}

binary_special! {
    gammainc => igamma: "`jax.scipy.special.gammainc(a, x)`: the regularized lower incomplete gamma function.",
    gammaincc => igammac: "`jax.scipy.special.gammaincc(a, x)`: the regularized upper incomplete gamma function.",
    polygamma => polygamma: "`jax.scipy.special.polygamma(n, x)`: the `n`-th derivative of `digamma` (NaN unless `n` is a non-negative integer).",
    zeta => zeta: "`jax.scipy.special.zeta(x, q)`: the Hurwitz zeta function.",
}

/// `jax.scipy.special.betainc(a, b, x)`: the regularized incomplete beta
/// function `I_x(a, b)`.
pub fn betainc(a: &Array, b: &Array, x: &Array) -> Result<Array> {
    let v = promote_args_inexact("betainc", &[a, b, x])?;
    lax::regularized_incomplete_beta(&v[0], &v[1], &v[2])
}

/// `jax.scipy.special.i0`: `exp(|x|) i0e(x)`.
pub fn i0(x: &Array) -> Result<Array> {
    let x = inexact1("i0", x)?;
    lax::mul(&lax::exp(&lax::abs(&x)?)?, &lax::bessel_i0e(&x)?)
}

/// `jax.scipy.special.i1`: `exp(|x|) i1e(x)`.
pub fn i1(x: &Array) -> Result<Array> {
    let x = inexact1("i1", x)?;
    lax::mul(&lax::exp(&lax::abs(&x)?)?, &lax::bessel_i1e(&x)?)
}

/// `jax.scipy.special.logit`: `log(x / (1 - x))`.
pub fn logit(x: &Array) -> Result<Array> {
    let x = inexact1("logit", x)?;
    lax::log(&lax::div(&x, &lax::sub(&c(&x, 1.0)?, &x)?)?)
}

/// JAX's `algdiv(a, b) = lgamma(b) - lgamma(a + b)` for `b >= 8`
/// (DCDFLIB's series in `1/b`, as `jax.scipy.special.betaln` computes it).
fn algdiv(a: &Array, b: &Array) -> Result<Array> {
    const C: [f64; 6] = [
        0.833_333_333_333_333e-01,
        -0.277_777_777_760_991e-02,
        0.793_650_666_825_390e-03,
        -0.595_202_931_351_870e-03,
        0.837_308_034_031_215e-03,
        -0.165_322_962_780_713e-02,
    ];
    let one = c(a, 1.0)?;
    let h = lax::div(a, b)?;
    let cc = lax::div(&h, &lax::add(&one, &h)?)?;
    let x = lax::div(&h, &lax::add(&one, &h)?)?;
    let d = lax::add(b, &lax::sub(a, &c(a, 0.5)?)?)?;
    let x2 = lax::mul(&x, &x)?;
    // s_{2k+1} = 1 + x + x^2 + ... + x^(2k), built as JAX does.
    let mut s = Vec::new();
    let mut prev = lax::add(&one, &lax::add(&x, &x2)?)?;
    s.push(prev.clone());
    for _ in 0..4 {
        prev = lax::add(&one, &lax::add(&x, &lax::mul(&x2, &prev)?)?)?;
        s.push(prev.clone());
    }
    let t = lax::integer_pow(&lax::div(&one, b)?, 2)?;
    let mut w = lax::mul(&lax::mul(&c(a, C[5])?, &s[4])?, &t)?;
    for k in (1..5).rev() {
        w = lax::add(&w, &lax::mul(&c(a, C[k])?, &s[k - 1])?)?;
        w = lax::mul(&w, &t)?;
    }
    let w = lax::add(&w, &c(a, C[0])?)?;
    let w = lax::mul(&w, &lax::div(&cc, b)?)?;
    let u = lax::mul(&d, &lax::log1p(&lax::div(a, b)?)?)?;
    let v = lax::mul(a, &lax::sub(&lax::log(b)?, &one)?)?;
    let first = lax::sub(&lax::sub(&w, &v)?, &u)?;
    let second = lax::sub(&lax::sub(&w, &u)?, &v)?;
    jnp::where_(&lax::le(&u, &v)?, &first, &second)
}

/// `jax.scipy.special.betaln(a, b)`: `log|B(a, b)|`, with JAX's
/// `algdiv` correction where the larger argument is at least 8.
pub fn betaln(a: &Array, b: &Array) -> Result<Array> {
    let (x, y) = inexact2("betaln", a, b)?;
    let a = lax::min(&x, &y)?;
    let b = lax::max(&x, &y)?;
    let small_b = lax::add(
        &lax::lgamma(&a)?,
        &lax::sub(&lax::lgamma(&b)?, &lax::lgamma(&lax::add(&a, &b)?)?)?,
    )?;
    let large_b = lax::add(&lax::lgamma(&a)?, &algdiv(&a, &b)?)?;
    jnp::where_(&lax::lt(&b, &c(&b, 8.0)?)?, &small_b, &large_b)
}

/// `x * f(y)`, 0 where `x == 0` (unless `y` is NaN): the body of
/// `xlogy`/`xlog1py`.
fn x_times(x: &Array, y: &Array, f: fn(&Array) -> Result<Array>) -> Result<Array> {
    let keep = lax::bitwise_or(&lax::ne(x, &c(x, 0.0)?)?, &lax::ne(y, y)?)?;
    let prod = lax::mul(x, &f(y)?)?;
    let zeros = jnp::zeros_like(&prod)?;
    jnp::where_(&keep, &prod, &zeros)
}

/// `x * f(y)` as JAX's `custom_jvp_call[name=.. jvp=..]` under a trace
/// (the transforms crate knows JAX's rule by its `jvp` name).
fn custom_x_times(
    name: &str,
    jvp: &str,
    x: &Array,
    y: &Array,
    f: fn(&Array) -> Result<Array>,
) -> Result<Array> {
    let (x, y) = inexact2(name, x, y)?;
    let args = [x, y];
    let top = crate::core::find_top_trace(&args)?;
    if top.trace().as_any().is::<crate::eval::EvalTrace>()
        || args.iter().any(crate::dynshape::is_dynamic)
    {
        return x_times(&args[0], &args[1], f);
    }
    let avals = [args[0].aval().clone(), args[1].aval().clone()];
    let staged = trace_flat(StageMode::Dynamic, &avals, |t| {
        Ok(vec![x_times(&t[0], &t[1], f)?])
    })?;
    bind1(
        &Primitive::from(CustomJvpCallParams {
            name: name.into(),
            call_jaxpr: close(staged)?,
            jvp: jvp.into(),
            num_consts: 0,
            symbolic_zeros: false,
        }),
        &args,
    )
}

/// `jax.scipy.special.xlogy(x, y)`: `x * log(y)`, 0 where `x == 0`; its
/// derivative wrt `x` is `log(y)` everywhere, as in JAX.
pub fn xlogy(x: &Array, y: &Array) -> Result<Array> {
    custom_x_times("xlogy", "_xlogy_jvp", x, y, lax::log)
}

/// `jax.scipy.special.xlog1py(x, y)`: `x * log1p(y)`, 0 where `x == 0`.
pub fn xlog1py(x: &Array, y: &Array) -> Result<Array> {
    custom_x_times("xlog1py", "_xlog1py_jvp", x, y, lax::log1p)
}

/// `jax.scipy.special.entr(x)`: `-x log x` for `x > 0`, 0 at 0, `-inf`
/// below.
pub fn entr(x: &Array) -> Result<Array> {
    let x = inexact1("entr", x)?;
    let neg_inf = jnp::full_like(&x, &Array::weak(f64::NEG_INFINITY))?;
    let v = lax::neg(&xlogy(&x, &x)?)?;
    lax::select_n(&lax::lt(&x, &c(&x, 0.0)?)?, &[v, neg_inf])
}

/// `jax.scipy.special.multigammaln(a, d)`: the log of the multivariate
/// gamma function, `d (d-1)/4 log(pi) + sum_{j<d} gammaln(a - j/2)`.
pub fn multigammaln(a: &Array, d: usize) -> Result<Array> {
    if d == 0 {
        return Err(Error::InvalidArgument(
            "multigammaln: d must be at least 1".into(),
        ));
    }
    let a = inexact1("multigammaln", a)?;
    let df = d as f64;
    let constant = c(&a, df * (df - 1.0) * 0.25 * std::f64::consts::PI.ln())?;
    let mut acc = lax::lgamma(&a)?;
    for j in 1..d {
        acc = lax::add(&acc, &lax::lgamma(&lax::sub(&a, &c(&a, j as f64 / 2.0)?)?)?)?;
    }
    lax::add(&acc, &constant)
}
