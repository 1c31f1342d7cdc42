//! `scipy::special`: JAX's `jax.scipy.special` functions over `Array`s,
//! built from the special-function primitives of `lax` as JAX 0.10
//! lowers them (arguments promoted to inexact dtypes first): `gammaln`,
//! `digamma`, `polygamma`, `gammainc`, `gammaincc`, `betainc`, `betaln`
//! (JAX's `algdiv` correction for large arguments), `i0e`, `i1e`, `i0`,
//! `i1`, `zeta`, `xlogy` and `xlog1py` (JAX's `custom_jvp_call`s, whose
//! derivative wrt `x` is `log(y)` even at `x == 0`), `erf`, `erfc`,
//! `erfinv`, `logit`, `expit`, `logsumexp`, `entr`, `multigammaln`,
//! `ndtr`, `ndtri`, `log_ndtr` (for `scipy::stats::norm`).

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

/// A float `x` (`f32` or `f64`), else JAX's `TypeError` for `ndtr`,
/// `ndtri` and `log_ndtr`, which do not promote.
fn require_float(name: &str, x: &Array) -> Result<()> {
    match x.dtype() {
        jaxon_ir::DType::F32 | jaxon_ir::DType::F64 => Ok(()),
        d => Err(Error::InvalidArgument(format!(
            "{name}: x.dtype={d:?} is not supported (f32 or f64 only)"
        ))),
    }
}

/// `jax.scipy.special.ndtr(x)`: the standard normal CDF, through `erf`
/// near 0 and `erfc` in the tails (as JAX computes it). `x` must be `f32`
/// or `f64`.
pub fn ndtr(x: &Array) -> Result<Array> {
    require_float("ndtr", x)?;
    ndtr_body(x)
}

fn ndtr_body(x: &Array) -> Result<Array> {
    let half_sqrt_2 = c(x, 0.5 * std::f64::consts::SQRT_2)?;
    let w = lax::mul(x, &half_sqrt_2)?;
    let z = lax::abs(&w)?;
    let near = lax::add(&c(x, 1.0)?, &lax::erf(&w)?)?;
    let erfc_z = lax::erfc(&z)?;
    let upper = lax::sub(&c(x, 2.0)?, &erfc_z)?;
    let tails = lax::select_n(&lax::gt(&w, &c(x, 0.0)?)?, &[erfc_z, upper])?;
    let y = lax::select_n(&lax::lt(&z, &half_sqrt_2)?, &[tails, near])?;
    lax::mul(&c(x, 0.5)?, &y)
}

/// `jnp.polyval(coeffs, x)` with constant coefficients (Horner from 0).
fn polyval_const(coeffs: &[f64], x: &Array) -> Result<Array> {
    let mut y = jnp::zeros_like(x)?;
    for &k in coeffs {
        y = lax::add(&lax::mul(&y, x)?, &c(x, k)?)?;
    }
    Ok(y)
}

/// `jax.scipy.special.ndtri(p)`: the inverse of [`ndtr`] (Cephes'
/// rational approximations, as JAX uses them); `-inf` at 0, `inf` at 1,
/// NaN outside `[0, 1]`. `p` must be `f32` or `f64`.
pub fn ndtri(p: &Array) -> Result<Array> {
    require_float("ndtri", p)?;
    const P0: [f64; 5] = [
        -59.963_350_101_410_79,
        98.001_075_418_599_97,
        -56.676_285_746_907_03,
        13.931_260_938_727_968,
        -1.239_165_838_673_812_5,
    ];
    const Q0: [f64; 9] = [
        1.0,
        1.954_488_583_381_417_6,
        4.676_279_128_988_815,
        86.360_242_139_089_05,
        -225.462_687_854_119_37,
        200.260_212_380_060_66,
        -82.037_225_616_833_34,
        15.905_622_512_621_17,
        -1.183_316_211_213_3,
    ];
    const P1: [f64; 9] = [
        4.055_448_923_059_624_5,
        31.525_109_459_989_388,
        57.162_819_224_642_13,
        44.080_507_389_320_08,
        14.684_956_192_885_803,
        2.186_633_068_507_902_5,
        -0.140_256_079_171_354_5,
        -0.035_042_462_682_784_82,
        -0.000_857_456_785_154_685_4,
    ];
    const Q1: [f64; 9] = [
        1.0,
        15.779_988_325_646_675,
        45.390_763_512_887_92,
        41.317_203_825_467_2,
        15.042_538_569_290_75,
        2.504_649_462_083_094,
        -0.142_182_922_854_787_79,
        -0.038_080_640_769_157_83,
        -0.000_933_259_480_895_457_4,
    ];
    const P2: [f64; 9] = [
        3.237_748_917_769_460_3,
        6.915_228_890_689_842,
        3.938_810_252_924_744_4,
        1.333_034_608_158_075_5,
        0.201_485_389_549_179_08,
        0.012_371_663_481_782_003,
        0.000_301_581_553_508_235_43,
        2.658_069_746_867_375_5e-6,
        6.239_745_391_849_833e-9,
    ];
    const Q2: [f64; 9] = [
        1.0,
        6.024_270_393_647_42,
        3.679_835_638_561_608_7,
        1.377_020_994_890_813_2,
        0.216_236_993_594_496_63,
        0.013_420_400_608_854_318,
        0.000_328_014_464_682_127_74,
        2.892_478_647_453_806_8e-6,
        6.790_194_080_099_813e-9,
    ];
    let one = c(p, 1.0)?;
    let half = c(p, 0.5)?;
    let big = c(p, -(-2.0f64).exp_m1())?;
    let mcp = jnp::where_(&lax::gt(p, &big)?, &lax::sub(&one, p)?, p)?;
    let sanitized = jnp::where_(
        &lax::eq(&mcp, &c(p, 0.0)?)?,
        &jnp::full_like(&mcp, &half)?,
        &mcp,
    )?;
    let w = lax::sub(&sanitized, &half)?;
    let ww = lax::square(&w)?;
    let ratio0 = lax::div(&polyval_const(&P0, &ww)?, &polyval_const(&Q0, &ww)?)?;
    let x_big = lax::add(&w, &lax::mul(&lax::mul(&w, &ww)?, &ratio0)?)?;
    let x_big = lax::mul(
        &x_big,
        &lax::neg(&c(p, (2.0 * std::f64::consts::PI).sqrt())?)?,
    )?;
    let z = lax::sqrt(&lax::mul(&c(p, -2.0)?, &lax::log(&sanitized)?)?)?;
    let first = lax::sub(&z, &lax::div(&lax::log(&z)?, &z)?)?;
    let rz = lax::div(&one, &z)?;
    let second_small = lax::div(
        &lax::div(&polyval_const(&P2, &rz)?, &polyval_const(&Q2, &rz)?)?,
        &z,
    )?;
    let second_other = lax::div(
        &lax::div(&polyval_const(&P1, &rz)?, &polyval_const(&Q1, &rz)?)?,
        &z,
    )?;
    let x_small = lax::sub(&first, &second_small)?;
    let x_other = lax::sub(&first, &second_other)?;
    let tail = jnp::where_(&lax::ge(&z, &c(p, 8.0)?)?, &x_small, &x_other)?;
    let x = jnp::where_(
        &lax::gt(&sanitized, &c(p, (-2.0f64).exp())?)?,
        &x_big,
        &tail,
    )?;
    let x = jnp::where_(
        &lax::gt(p, &c(p, 1.0 - (-2.0f64).exp())?)?,
        &x,
        &lax::neg(&x)?,
    )?;
    let inf = jnp::full_like(p, &Array::weak(f64::INFINITY))?;
    let at_one = jnp::where_(&lax::eq(p, &one)?, &inf, &x)?;
    jnp::where_(&lax::eq(p, &c(p, 0.0)?)?, &lax::neg(&inf)?, &at_one)
}

/// `jax.scipy.special.log_ndtr(x)` with JAX's default `series_order=3`:
/// `log(ndtr(x))` accurate in both tails (`-ndtr(-x)` above 5 (`f32`) or
/// 8 (`f64`), an asymptotic series below -10 or -20). JAX's `custom_jvp`
/// (`exp(norm.logpdf(x) - log_ndtr(x))`) is not staged: the derivative of
/// this body agrees with it to the accuracy of the series. `x` must be
/// `f32` or `f64`.
pub fn log_ndtr(x: &Array) -> Result<Array> {
    require_float("log_ndtr", x)?;
    let (lower, upper) = if x.dtype() == jaxon_ir::DType::F64 {
        (-20.0, 8.0)
    } else {
        (-10.0, 5.0)
    };
    let (lo, hi) = (c(x, lower)?, c(x, upper)?);
    let above = lax::gt(x, &hi)?;
    let arg = jnp::where_(&above, &lax::neg(x)?, &lax::max(x, &lo)?)?;
    let res = ndtr_body(&arg)?;
    let neg = lax::neg(&res)?;
    let xl = lax::min(x, &lo)?;
    // The lower tail: log(pdf(x) / -x) + log(1 - 1/x^2 + 3/x^4 - 15/x^6).
    let x2 = lax::square(&xl)?;
    let log_scale = lax::sub(
        &lax::sub(&lax::mul(&c(x, -0.5)?, &x2)?, &lax::log(&lax::neg(&xl)?)?)?,
        &c(x, 0.5 * (2.0 * std::f64::consts::PI).ln())?,
    )?;
    let mut even = jnp::zeros_like(&xl)?;
    let mut odd = jnp::zeros_like(&xl)?;
    let x2s = lax::square(&xl)?;
    let mut x2n = x2s.clone();
    for (n, dfact) in [(1, 1.0), (2, 3.0), (3, 15.0)] {
        let y = lax::div(&c(x, dfact)?, &x2n)?;
        if n % 2 == 1 {
            odd = lax::add(&odd, &y)?;
        } else {
            even = lax::add(&even, &y)?;
        }
        x2n = lax::mul(&x2n, &x2s)?;
    }
    let series = lax::sub(&lax::add(&c(x, 1.0)?, &even)?, &odd)?;
    let low = lax::add(&log_scale, &lax::log(&series)?)?;
    let mid = jnp::where_(&lax::gt(x, &lo)?, &lax::log(&res)?, &low)?;
    jnp::where_(&above, &neg, &mid)
}
