"""Records jax.scipy.stats values and gradients for jaxon's tests.

Run with JAX 0.10.2 (``pip install jax==0.10.2 jaxlib==0.10.2``):

    python tests/data/gen_scipy_stats.py > tests/data/scipy-stats-jax.json

Every case is one function on seeded random inputs, once in float32 (with
``jax_enable_x64`` off, as jaxon's default dtypes are) and once in float64
(with it on). "interior" cases sit inside the support and also record the
gradient of ``sum(f(...))`` with respect to every argument; "edge" cases
hold points outside the support, on its boundary and non-finite ones, and
record values only. A gradient JAX refuses (``betainc`` wrt ``a``, ``b``)
is the string "error"; one JAX fails to compute (a float0 tangent inside
``gumbel_r``/``gumbel_l``) is "jax-fails". ``None`` arguments are JAX's defaults (loc=0,
scale=1). Non-finite numbers are written as the strings "nan", "inf" and
"-inf".
"""

import json
import math
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax.scipy import stats

N = 6  # elements per random argument


def num(v, dtype):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dtype == "f32":
        return float(str(np.float32(v)))
    return v


def enc(a, dtype):
    a = np.asarray(a)
    out = {"shape": list(a.shape), "data": [num(v, dtype) for v in a.ravel()]}
    if a.dtype.kind == "i":
        out["int"] = 1
    return out


# --- argument samplers: rng -> numpy f64 array (cast to the case dtype) ---
def normal(mu=0.0, sd=2.0, shape=(N,)):
    return lambda r: r.normal(mu, sd, shape)


def unif(lo, hi, shape=(N,)):
    return lambda r: r.uniform(lo, hi, shape)


def ints(lo, hi, shape=(N,)):
    return lambda r: r.integers(lo, hi, shape).astype(np.float64)


def const(v):
    return lambda r: np.asarray(v, np.float64)


DEF = None  # JAX's default argument

S = stats
# name, function, interior samplers, edge inputs (lists of arrays or None)
X_EDGE = [-np.inf, -3.0, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan]
Q_EDGE = [-0.5, 0.0, 1e-8, 0.1, 0.5, 0.9, 1.0, 1.5, np.nan]
SPECS = [
    # norm
    ("norm.logpdf", S.norm.logpdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("norm.pdf", S.norm.pdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("norm.cdf", S.norm.cdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE + [-40.0, 9.0], DEF, DEF]),
    ("norm.logcdf", S.norm.logcdf, [normal(0, 6), normal(0, 1), unif(0.5, 2)],
     [X_EDGE + [-40.0, -25.0, -15.0, -9.0, 6.0, 9.0, 30.0], DEF, DEF]),
    ("norm.sf", S.norm.sf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("norm.logsf", S.norm.logsf, [normal(0, 6), normal(0, 1), unif(0.5, 2)],
     [X_EDGE + [-9.0, 12.0, 30.0], DEF, DEF]),
    ("norm.ppf", S.norm.ppf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)],
     [Q_EDGE + [1e-30, 1e-3, 0.2, 0.95, 0.999999], DEF, DEF]),
    ("norm.isf", S.norm.isf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    # broadcasting: x (4,) against loc (3, 1)
    ("norm.logpdf", S.norm.logpdf, [normal(shape=(4,)), normal(0, 1, (3, 1)), unif(0.5, 2, ())], None),
    # uniform
    ("uniform.logpdf", S.uniform.logpdf, [unif(-1, 3), normal(0, 1), unif(1, 3)], [X_EDGE, DEF, DEF]),
    ("uniform.pdf", S.uniform.pdf, [unif(-1, 3), normal(0, 1), unif(1, 3)], [X_EDGE, DEF, DEF]),
    ("uniform.cdf", S.uniform.cdf, [unif(-1, 3), normal(0, 1), unif(1, 3)], [X_EDGE, DEF, DEF]),
    ("uniform.ppf", S.uniform.ppf, [unif(0, 1), normal(0, 1), unif(1, 3)], [Q_EDGE, DEF, DEF]),
    # expon
    ("expon.logpdf", S.expon.logpdf, [unif(0.5, 5), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("expon.pdf", S.expon.pdf, [unif(0.5, 5), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("expon.cdf", S.expon.cdf, [unif(0.5, 5), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("expon.logcdf", S.expon.logcdf, [unif(0.5, 5), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("expon.sf", S.expon.sf, [unif(0.5, 5), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("expon.logsf", S.expon.logsf, [unif(0.5, 5), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("expon.ppf", S.expon.ppf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    # laplace
    ("laplace.logpdf", S.laplace.logpdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("laplace.pdf", S.laplace.pdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("laplace.cdf", S.laplace.cdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    # logistic
    ("logistic.logpdf", S.logistic.logpdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE + [100.0, -100.0], DEF, DEF]),
    ("logistic.pdf", S.logistic.pdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("logistic.cdf", S.logistic.cdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("logistic.sf", S.logistic.sf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("logistic.ppf", S.logistic.ppf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    ("logistic.isf", S.logistic.isf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    # cauchy
    ("cauchy.logpdf", S.cauchy.logpdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("cauchy.pdf", S.cauchy.pdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("cauchy.cdf", S.cauchy.cdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("cauchy.logcdf", S.cauchy.logcdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("cauchy.sf", S.cauchy.sf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("cauchy.logsf", S.cauchy.logsf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("cauchy.ppf", S.cauchy.ppf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    ("cauchy.isf", S.cauchy.isf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    # pareto
    ("pareto.logpdf", S.pareto.logpdf, [unif(1.6, 6), unif(0.5, 3), unif(-0.3, 0.3), unif(0.5, 1.2)], [X_EDGE, [2.0], DEF, DEF]),
    ("pareto.pdf", S.pareto.pdf, [unif(1.6, 6), unif(0.5, 3), unif(-0.3, 0.3), unif(0.5, 1.2)], [X_EDGE, [2.0], DEF, DEF]),
    ("pareto.cdf", S.pareto.cdf, [unif(1.6, 6), unif(0.5, 3), unif(-0.3, 0.3), unif(0.5, 1.2)], [X_EDGE, [2.0], DEF, DEF]),
    ("pareto.logcdf", S.pareto.logcdf, [unif(1.6, 6), unif(0.5, 3), unif(-0.3, 0.3), unif(0.5, 1.2)], [X_EDGE, [2.0], DEF, DEF]),
    ("pareto.sf", S.pareto.sf, [unif(1.6, 6), unif(0.5, 3), unif(-0.3, 0.3), unif(0.5, 1.2)], [X_EDGE, [2.0], DEF, DEF]),
    ("pareto.logsf", S.pareto.logsf, [unif(1.6, 6), unif(0.5, 3), unif(-0.3, 0.3), unif(0.5, 1.2)], [X_EDGE, [2.0], DEF, DEF]),
    ("pareto.ppf", S.pareto.ppf, [unif(0.01, 0.99), unif(0.5, 3), normal(0, 1), unif(0.5, 2)], [Q_EDGE, [2.0], DEF, DEF]),
    # gamma
    ("gamma.logpdf", S.gamma.logpdf, [unif(0.6, 5), unif(0.5, 4), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [1.0], DEF, DEF]),
    ("gamma.pdf", S.gamma.pdf, [unif(0.6, 5), unif(0.5, 4), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [0.5], DEF, DEF]),
    ("gamma.cdf", S.gamma.cdf, [unif(0.6, 5), unif(0.5, 4), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [2.5], DEF, DEF]),
    ("gamma.logcdf", S.gamma.logcdf, [unif(0.6, 5), unif(0.5, 4), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [2.5], DEF, DEF]),
    ("gamma.sf", S.gamma.sf, [unif(0.6, 5), unif(0.5, 4), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [2.5], DEF, DEF]),
    ("gamma.logsf", S.gamma.logsf, [unif(0.6, 5), unif(0.5, 4), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [2.5], DEF, DEF]),
    ("gamma.logpdf", S.gamma.logpdf, [unif(0.6, 5, (2, 3)), unif(0.5, 4, (3,)), const(0.0), unif(0.5, 2, (2, 1))], None),
    # beta
    ("beta.logpdf", S.beta.logpdf, [unif(0.05, 0.95), unif(0.5, 4), unif(0.5, 4), const(0.0), const(1.0)],
     [X_EDGE, [2.0], [3.0], DEF, DEF]),
    ("beta.logpdf", S.beta.logpdf, [const([0.3, 0.5]), const([0.0, 2.0]), const([2.0, -1.0]), const(0.0), const(1.0)], None),
    ("beta.pdf", S.beta.pdf, [unif(0.05, 0.95), unif(0.5, 4), unif(0.5, 4), const(0.0), const(1.0)],
     [X_EDGE, [1.0], [1.0], DEF, DEF]),
    ("beta.cdf", S.beta.cdf, [unif(0.05, 0.95), unif(0.5, 4), unif(0.5, 4), const(0.0), const(1.0)],
     [X_EDGE, [2.0], [3.0], DEF, DEF]),
    ("beta.logcdf", S.beta.logcdf, [unif(0.05, 0.95), unif(0.5, 4), unif(0.5, 4), const(0.0), const(1.0)],
     [X_EDGE, [2.0], [3.0], DEF, DEF]),
    ("beta.sf", S.beta.sf, [unif(0.05, 0.95), unif(0.5, 4), unif(0.5, 4), const(0.0), const(1.0)],
     [X_EDGE, [2.0], [3.0], DEF, DEF]),
    ("beta.logsf", S.beta.logsf, [unif(0.05, 0.95), unif(0.5, 4), unif(0.5, 4), const(0.0), const(1.0)],
     [X_EDGE, [2.0], [3.0], DEF, DEF]),
    ("beta.logpdf", S.beta.logpdf, [unif(0.6, 2.4), unif(0.5, 4), unif(0.5, 4), unif(0.4, 0.6), unif(2, 2.2)], None),
    # chi2
    ("chi2.logpdf", S.chi2.logpdf, [unif(0.6, 8), unif(1, 6), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [2.0], DEF, DEF]),
    ("chi2.pdf", S.chi2.pdf, [unif(0.6, 8), unif(1, 6), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [3.0], DEF, DEF]),
    ("chi2.cdf", S.chi2.cdf, [unif(0.6, 8), unif(1, 6), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [3.0], DEF, DEF]),
    ("chi2.logcdf", S.chi2.logcdf, [unif(0.6, 8), unif(1, 6), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [3.0], DEF, DEF]),
    ("chi2.sf", S.chi2.sf, [unif(0.6, 8), unif(1, 6), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [3.0], DEF, DEF]),
    ("chi2.logsf", S.chi2.logsf, [unif(0.6, 8), unif(1, 6), unif(-0.4, 0.4), unif(0.5, 2)], [X_EDGE, [3.0], DEF, DEF]),
    # t
    ("t.logpdf", S.t.logpdf, [normal(), unif(1, 10), normal(0, 1), unif(0.5, 2)], [X_EDGE, [3.0], DEF, DEF]),
    ("t.pdf", S.t.pdf, [normal(), unif(1, 10), normal(0, 1), unif(0.5, 2)], [X_EDGE, [1.0], DEF, DEF]),
    # vonmises
    ("vonmises.logpdf", S.vonmises.logpdf, [unif(-3, 3), unif(0.1, 30)], [X_EDGE, [2.0]]),
    ("vonmises.logpdf", S.vonmises.logpdf, [const([0.5, 0.5, 1.0]), const([0.0, -1.0, 500.0])], None),
    ("vonmises.pdf", S.vonmises.pdf, [unif(-3, 3), unif(0.1, 30)], [X_EDGE, [0.5]]),
    # poisson
    ("poisson.logpmf", S.poisson.logpmf, [ints(0, 8), unif(0.5, 6), const(0.0)],
     [[-1.0, 0.0, 1.0, 2.5, 3.0, 10.0, np.inf, np.nan], [2.0], DEF]),
    ("poisson.pmf", S.poisson.pmf, [ints(0, 8), unif(0.5, 6), const(0.0)], [[-1.0, 0.0, 1.0, 2.5, 3.0, 10.0], [0.0], DEF]),
    ("poisson.cdf", S.poisson.cdf, [ints(0, 8), unif(0.5, 6), const(0.0)], [[-1.0, 0.0, 1.0, 2.5, 3.0, 10.0], [2.0], DEF]),
    ("poisson.logpmf", S.poisson.logpmf, [ints(2, 8), unif(0.5, 6), ints(0, 2)], None),
    # bernoulli
    ("bernoulli.logpmf", S.bernoulli.logpmf, [ints(0, 2), unif(0.05, 0.95), const(0.0)],
     [[-1.0, 0.0, 0.5, 1.0, 2.0], [0.3], DEF]),
    ("bernoulli.logpmf", S.bernoulli.logpmf, [const([0.0, 1.0, 0.0, 1.0]), const([0.0, 0.0, 1.0, 1.0]), const(0.0)], None),
    ("bernoulli.pmf", S.bernoulli.pmf, [ints(0, 2), unif(0.05, 0.95), const(0.0)], [[-1.0, 0.0, 1.0, 2.0], [0.3], DEF]),
    ("bernoulli.cdf", S.bernoulli.cdf, [unif(-1, 2), unif(0.05, 0.95)], [[-1.0, 0.0, 0.5, 1.0, 2.0, np.nan], [0.3]]),
    ("bernoulli.cdf", S.bernoulli.cdf, [const([0.5, 0.5, 0.5]), const([-0.1, 1.1, np.nan])], None),
    ("bernoulli.ppf", S.bernoulli.ppf, [unif(0, 1), unif(0.05, 0.95)], [Q_EDGE, [0.3]]),
    # binom
    ("binom.logpmf", S.binom.logpmf, [ints(0, 6), ints(6, 12), unif(0.05, 0.95), const(0.0)],
     [[-1.0, 0.0, 1.0, 3.0, 5.0, 6.0, 7.0], [5.0], [0.4], DEF]),
    ("binom.logpmf", S.binom.logpmf, [const([0.0, 0.0, 3.0, 3.0]), const([0.0, 3.0, 3.0, 3.0]), const([0.5, 0.0, 1.0, 0.5]), const(0.0)], None),
    ("binom.pmf", S.binom.pmf, [ints(0, 6), ints(6, 12), unif(0.05, 0.95), const(0.0)],
     [[-1.0, 0.0, 1.0, 3.0, 5.0, 6.0], [5.0], [0.4], DEF]),
    # geom
    ("geom.logpmf", S.geom.logpmf, [ints(1, 8), unif(0.05, 0.95), const(0.0)], [[-1.0, 0.0, 1.0, 2.0, 10.0], [0.3], DEF]),
    ("geom.pmf", S.geom.pmf, [ints(1, 8), unif(0.05, 0.95), const(0.0)], [[-1.0, 0.0, 1.0, 2.0, 10.0], [1.0], DEF]),
    # nbinom
    ("nbinom.logpmf", S.nbinom.logpmf, [ints(0, 8), unif(1, 6), unif(0.05, 0.95), const(0.0)],
     [[-1.0, 0.0, 1.0, 2.0, 10.0], [3.0], [0.3], DEF]),
    ("nbinom.pmf", S.nbinom.pmf, [ints(0, 8), unif(1, 6), unif(0.05, 0.95), const(0.0)],
     [[-1.0, 0.0, 1.0, 2.0, 10.0], [3.0], [1.0], DEF]),
    # gumbel_r, gumbel_l
    ("gumbel_r.logpdf", S.gumbel_r.logpdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_r.logpdf", S.gumbel_r.logpdf, [const([0.5, 0.5]), const(0.0), const([0.0, -1.0])], None),
    ("gumbel_r.pdf", S.gumbel_r.pdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_r.logcdf", S.gumbel_r.logcdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_r.cdf", S.gumbel_r.cdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_r.sf", S.gumbel_r.sf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_r.logsf", S.gumbel_r.logsf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE + [-0.5, 0.3], DEF, DEF]),
    ("gumbel_r.ppf", S.gumbel_r.ppf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    ("gumbel_l.logpdf", S.gumbel_l.logpdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_l.pdf", S.gumbel_l.pdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_l.logcdf", S.gumbel_l.logcdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_l.cdf", S.gumbel_l.cdf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_l.sf", S.gumbel_l.sf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_l.logsf", S.gumbel_l.logsf, [normal(), normal(0, 1), unif(0.5, 2)], [X_EDGE, DEF, DEF]),
    ("gumbel_l.ppf", S.gumbel_l.ppf, [unif(0.01, 0.99), normal(0, 1), unif(0.5, 2)], [Q_EDGE, DEF, DEF]),
    # wrapcauchy, gennorm
    ("wrapcauchy.logpdf", S.wrapcauchy.logpdf, [unif(0.1, 6.2), unif(0.05, 0.95)], [X_EDGE + [6.3], [0.5]]),
    ("wrapcauchy.logpdf", S.wrapcauchy.logpdf, [const([1.0, 1.0, 1.0]), const([0.0, 1.0, -0.5])], None),
    ("wrapcauchy.pdf", S.wrapcauchy.pdf, [unif(0.1, 6.2), unif(0.05, 0.95)], [X_EDGE, [0.3]]),
    ("gennorm.logpdf", S.gennorm.logpdf, [normal(), unif(0.5, 4)], [X_EDGE, [2.0]]),
    ("gennorm.pdf", S.gennorm.pdf, [normal(), unif(0.5, 4)], [X_EDGE, [1.0]]),
    ("gennorm.cdf", S.gennorm.cdf, [normal(), unif(0.5, 4)], [X_EDGE, [1.5]]),
    # betabinom
    ("betabinom.logpmf", S.betabinom.logpmf, [ints(0, 6), ints(6, 12), unif(0.5, 4), unif(0.5, 4), const(0.0)],
     [[-1.0, 0.0, 1.0, 2.5, 5.0, 6.0], [5.0], [2.0], [3.0], DEF]),
    ("betabinom.logpmf", S.betabinom.logpmf, [const([0.0, 1.0, 1.0, 1.0]), const([0.0, -1.0, 3.0, 3.0]), const([1.0, 1.0, 0.0, 1.0]), const([1.0, 1.0, 1.0, -1.0]), const(0.0)], None),
    ("betabinom.pmf", S.betabinom.pmf, [ints(0, 6), ints(6, 12), unif(0.5, 4), unif(0.5, 4), const(0.0)],
     [[-1.0, 0.0, 1.0, 5.0, 6.0], [5.0], [2.0], [3.0], DEF]),
    # truncnorm
    ("truncnorm.logpdf", S.truncnorm.logpdf, [unif(-0.9, 0.9), unif(-3, -1), unif(1, 3), normal(0, 0.1), unif(0.8, 1.2)],
     [X_EDGE, [-1.0], [1.5], DEF, DEF]),
    ("truncnorm.logpdf", S.truncnorm.logpdf, [const([3.5, 12.0, -12.0, 0.0]), const([3.0, 10.0, -15.0, 1.0]), const([4.0, 13.0, -10.0, 0.5]), const(0.0), const(1.0)], None),
    ("truncnorm.pdf", S.truncnorm.pdf, [unif(-0.9, 0.9), unif(-3, -1), unif(1, 3), normal(0, 0.1), unif(0.8, 1.2)],
     [X_EDGE, [0.5], [2.5], DEF, DEF]),
    ("truncnorm.cdf", S.truncnorm.cdf, [unif(-0.9, 0.9), unif(-3, -1), unif(1, 3), normal(0, 0.1), unif(0.8, 1.2)],
     [X_EDGE, [-1.0], [1.5], DEF, DEF]),
    ("truncnorm.logcdf", S.truncnorm.logcdf, [unif(-0.9, 0.9), unif(-3, -1), unif(1, 3), normal(0, 0.1), unif(0.8, 1.2)],
     [X_EDGE, [-1.0], [1.5], DEF, DEF]),
    ("truncnorm.logcdf", S.truncnorm.logcdf, [const([3.5, 12.0, -12.0, 1.499]), const([3.0, 10.0, -15.0, -1.0]), const([4.0, 13.0, -10.0, 1.5]), const(0.0), const(1.0)], None),
    ("truncnorm.sf", S.truncnorm.sf, [unif(-0.9, 0.9), unif(-3, -1), unif(1, 3), normal(0, 0.1), unif(0.8, 1.2)],
     [X_EDGE, [-1.0], [1.5], DEF, DEF]),
    ("truncnorm.logsf", S.truncnorm.logsf, [unif(-0.9, 0.9), unif(-3, -1), unif(1, 3), normal(0, 0.1), unif(0.8, 1.2)],
     [X_EDGE, [-1.0], [1.5], DEF, DEF]),
]


def spd(r, batch, n):
    a = r.normal(0, 1, batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def simplex(r, k, batch):
    g = r.gamma(2.0, 1.0, (k,) + batch)
    return g / g.sum(0, keepdims=True)


def multi_specs(r):
    """Cases whose inputs are built together (simplices, SPD matrices)."""
    out = []
    a3 = r.uniform(0.5, 3, (3,))
    out.append(("dirichlet.logpdf", S.dirichlet.logpdf, [simplex(r, 3, ()), a3], True))
    out.append(("dirichlet.pdf", S.dirichlet.pdf, [simplex(r, 3, (4,)), a3], True))
    # the last component left out
    out.append(("dirichlet.logpdf", S.dirichlet.logpdf, [simplex(r, 3, (2,))[:2], a3], True))
    off = np.array([[0.2, 0.3, 0.5], [0.5, 0.5, 0.1], [0.0, 0.5, 0.5], [-0.1, 0.6, 0.5]]).T
    out.append(("dirichlet.logpdf", S.dirichlet.logpdf, [off, a3], False))
    out.append(("multivariate_normal.logpdf", S.multivariate_normal.logpdf,
                [r.normal(0, 1, (4, 3)), r.normal(0, 1, (3,)), spd(r, (), 3)], True))
    out.append(("multivariate_normal.pdf", S.multivariate_normal.pdf,
                [r.normal(0, 1, (3,)), r.normal(0, 1, (3,)), spd(r, (), 3)], True))
    out.append(("multivariate_normal.logpdf", S.multivariate_normal.logpdf,
                [r.normal(0, 1, (2, 4)), r.normal(0, 1, (4,)), spd(r, (2,), 4)], True))
    out.append(("multivariate_normal.logpdf", S.multivariate_normal.logpdf,
                [r.normal(0, 1, (5,)), np.float64(0.3), np.float64(1.7)], True))
    out.append(("multivariate_normal.logpdf", S.multivariate_normal.logpdf,
                [r.normal(0, 1, (2, 3)), r.normal(0, 1, (3,)), np.float64(1.3)], True))
    p = r.uniform(0.2, 1, (3,))
    p = p / p.sum()
    out.append(("multinomial.logpmf", S.multinomial.logpmf, [np.array([2, 0, 3]), np.array(5), p], True))
    out.append(("multinomial.logpmf", S.multinomial.logpmf, [np.array([2, 1, 3]), np.array(5), p], True))
    out.append(("multinomial.pmf", S.multinomial.pmf, [np.array([1, 1, 1]), np.array(3), p], True))
    return out


def run(dtype, seed):
    np_dt = np.float32 if dtype == "f32" else np.float64
    r = np.random.default_rng(seed)
    cases = []

    def record(name, fn, args, grads):
        def conv(a):
            a = np.asarray(a)
            return jnp.asarray(a.astype(np.int32) if a.dtype.kind == "i" else a.astype(np_dt))

        jargs = [None if a is None else conv(a) for a in args]
        # the float arguments (integer ones stay fixed)
        live = [
            i for i, a in enumerate(jargs) if a is not None and jnp.issubdtype(a.dtype, jnp.floating)
        ]

        def call(*xs):
            full = list(jargs)
            for i, x in zip(live, xs):
                full[i] = x
            while full and full[-1] is None:  # trailing defaults
                full.pop()
            assert all(a is not None for a in full), name
            return fn(*full)

        xs = [jargs[i] for i in live]
        out = call(*xs)
        case = {
            "fn": name,
            "dtype": dtype,
            "args": [None if a is None else enc(a, dtype) for a in jargs],
            "out": enc(out, dtype),
        }
        assert str(out.dtype) == ("float32" if dtype == "f32" else "float64"), (name, out.dtype)
        if grads:
            g_all = [None] * len(jargs)
            for j, i in enumerate(live):
                try:
                    g = jax.grad(lambda *v: jnp.sum(call(*v)), argnums=j)(*xs)
                    g_all[i] = enc(g, dtype)
                except ValueError:
                    g_all[i] = "error"  # JAX defines no such derivative
                except TypeError:
                    # JAX 0.10.2 fails on its own float0 tangent (gumbel's
                    # `xlogy(-1, scale)`); nothing to compare against
                    g_all[i] = "jax-fails"
            case["grads"] = g_all
        cases.append(case)

    for name, fn, samplers, edge in SPECS:
        record(name, fn, [s(r) for s in samplers], True)
        if edge is not None:
            record(name, fn, [None if e is None else np.asarray(e) for e in edge], False)
    for name, fn, args, grads in multi_specs(r):
        record(name, fn, args, grads)
    return cases


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", False)
    cases = run("f32", 1)
    jax.config.update("jax_enable_x64", True)
    cases += run("f64", 2)
    json.dump({"jax": jax.__version__, "cases": cases}, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
