"""Records jax.random sampler outputs for jaxon's `random_samplers_jax` test.

Run with JAX 0.10.2 on the CPU:

    /work/venv-jax/bin/python tests/data/gen_random_samplers.py

It writes `tests/data/random-samplers-jax.json`: a list of cases, each
`{"name", "fn", "x64", "seed", "args", "dtype", "shape", "out"}`, where
`args` holds the sampler's parameters (numbers or nested lists, with their
dtype in `args_dtype`) and `out` is `{"dtype", "shape", "data"}` with data
flattened row-major. f32 values are written as the f64 that holds them
exactly, so the Rust side recovers their bits. The first block runs in
JAX's default 32-bit mode, the second with `jax_enable_x64`.
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

CASES = []


def record(name, fn, seed, out, args=None, **extra):
    out = np.asarray(out)
    kind = out.dtype.name
    short = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64"}[kind]
    data = out.reshape(-1).tolist()
    CASES.append(
        {
            "name": name,
            "fn": fn,
            "x64": bool(jax.config.jax_enable_x64),
            "seed": seed,
            "args": args or {},
            **extra,
            "out": {"dtype": short, "shape": list(out.shape), "data": data},
        }
    )


def arr(values, dt):
    return np.asarray(values, dtype=dt)


def floats(ft, dtname, seeds):
    """The float samplers at float dtype `ft` (named `dtname`)."""
    r = jax.random
    for s in seeds:
        k = r.key(s)
        a = [0.3, 1.0, 2.5, 7.0, 0.05, 0.9]
        record(f"gamma_{dtname}_{s}", "gamma", s, r.gamma(k, arr(a, ft), dtype=ft),
               {"a": a}, dtype=dtname)
        record(f"gamma_shape_{dtname}_{s}", "gamma", s,
               r.gamma(k, arr(1.7, ft), shape=(2, 3), dtype=ft), {"a": 1.7},
               dtype=dtname, shape=[2, 3])
        la = [0.01, 0.3, 1.5, 4.0, 0.1]
        record(f"loggamma_{dtname}_{s}", "loggamma", s,
               r.loggamma(k, arr(la, ft), dtype=ft), {"a": la}, dtype=dtname)
        ba, bb = [0.5, 2.0, 3.0, 0.2], [1.5, 0.7, 3.0, 5.0]
        record(f"beta_{dtname}_{s}", "beta", s,
               r.beta(k, arr(ba, ft), arr(bb, ft), dtype=ft), {"a": ba, "b": bb},
               dtype=dtname)
        record(f"beta_shape_{dtname}_{s}", "beta", s,
               r.beta(k, arr(2.0, ft), arr([1.0, 3.0], ft), shape=(3, 2), dtype=ft),
               {"a": 2.0, "b": [1.0, 3.0]}, dtype=dtname, shape=[3, 2])
        al = [0.5, 1.0, 2.0]
        record(f"dirichlet_{dtname}_{s}", "dirichlet", s,
               r.dirichlet(k, arr(al, ft), dtype=ft), {"alpha": al}, dtype=dtname)
        al2 = [[0.2, 3.0, 1.0], [5.0, 0.5, 0.5]]
        record(f"dirichlet_batch_{dtname}_{s}", "dirichlet", s,
               r.dirichlet(k, arr(al2, ft), dtype=ft), {"alpha": al2}, dtype=dtname)
        record(f"dirichlet_shape_{dtname}_{s}", "dirichlet", s,
               r.dirichlet(k, arr(al, ft), shape=(4,), dtype=ft), {"alpha": al},
               dtype=dtname, shape=[4])
        df = [1.0, 2.5, 10.0, 0.5]
        record(f"chisquare_{dtname}_{s}", "chisquare", s,
               r.chisquare(k, arr(df, ft), dtype=ft), {"df": df}, dtype=dtname)
        dn, dd = [2.0, 5.0, 1.0], [3.0, 10.0, 4.0]
        record(f"f_{dtname}_{s}", "f", s,
               r.f(k, arr(dn, ft), arr(dd, ft), dtype=ft), {"dfnum": dn, "dfden": dd},
               dtype=dtname)
        tdf = [1.0, 3.0, 30.0, 0.7]
        record(f"t_{dtname}_{s}", "t", s, r.t(k, arr(tdf, ft), dtype=ft), {"df": tdf},
               dtype=dtname)
        record(f"cauchy_{dtname}_{s}", "cauchy", s, r.cauchy(k, (2, 4), ft),
               dtype=dtname, shape=[2, 4])
        pb = [1.0, 2.0, 3.5]
        record(f"pareto_{dtname}_{s}", "pareto", s, r.pareto(k, arr(pb, ft), dtype=ft),
               {"b": pb}, dtype=dtname)
        record(f"weibull_min_{dtname}_{s}", "weibull_min", s,
               r.weibull_min(k, 2.0, 1.5, (6,), ft), {"scale": 2.0, "concentration": 1.5},
               dtype=dtname, shape=[6])
        record(f"maxwell_{dtname}_{s}", "maxwell", s, r.maxwell(k, (5,), ft),
               dtype=dtname, shape=[5])
        record(f"double_sided_maxwell_{dtname}_{s}", "double_sided_maxwell", s,
               r.double_sided_maxwell(k, 1.0, 2.0, (5,), ft), {"loc": 1.0, "scale": 2.0},
               dtype=dtname, shape=[5])
        mean = [1.0, -2.0, 0.5]
        cov = [[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]
        for method in ["cholesky", "eigh", "svd"]:
            record(f"mvn_{method}_{dtname}_{s}", "multivariate_normal", s,
                   r.multivariate_normal(k, arr(mean, ft), arr(cov, ft), (4,), ft, method),
                   {"mean": mean, "cov": cov}, dtype=dtname, shape=[4], method=method)
        record(f"ball_{dtname}_{s}", "ball", s, r.ball(k, 3, 2, (4,), ft),
               {"d": 3, "p": 2.0}, dtype=dtname, shape=[4])
        record(f"ball_p1_{dtname}_{s}", "ball", s, r.ball(k, 2, 1.5, (3,), ft),
               {"d": 2, "p": 1.5}, dtype=dtname, shape=[3])
        record(f"orthogonal_{dtname}_{s}", "orthogonal", s, r.orthogonal(k, 3, (2,), ft),
               {"n": 3}, dtype=dtname, shape=[2])
        bn, bp = [5.0, 20.0, 100.0, 40.0], [0.3, 0.6, 0.5, 0.9]
        record(f"binomial_{dtname}_{s}", "binomial", s,
               r.binomial(k, arr(bn, ft), arr(bp, ft), dtype=ft), {"n": bn, "p": bp},
               dtype=dtname)


def integers(seeds):
    """The integer samplers and `choice` (32-bit mode)."""
    r = jax.random
    for s in seeds:
        k = r.key(s)
        lam = [0.5, 3.0, 9.9, 10.0, 25.0, 100.0, 0.0, 1500.0]
        record(f"poisson_{s}", "poisson", s, r.poisson(k, arr(lam, np.float32)),
               {"lam": lam}, dtype="i32")
        record(f"poisson_shape_{s}", "poisson", s,
               r.poisson(k, arr(4.0, np.float32), (3, 5)), {"lam": 4.0}, dtype="i32",
               shape=[3, 5])
        gp = [0.1, 0.5, 0.9, 0.01]
        record(f"geometric_{s}", "geometric", s, r.geometric(k, arr(gp, np.float32)),
               {"p": gp}, dtype="i32")
        record(f"rademacher_{s}", "rademacher", s, r.rademacher(k, (10,), jnp.int32),
               dtype="i32", shape=[10])
        record(f"rademacher_f32_{s}", "rademacher", s, r.rademacher(k, (2, 3), jnp.float32),
               dtype="f32", shape=[2, 3])
        # choice: from an int n, from an array along an axis, with and
        # without replacement, with and without p.
        record(f"choice_n_{s}", "choice", s, r.choice(k, 10, (6,)),
               {"n": 10, "replace": True}, shape=[6])
        record(f"choice_n_noreplace_{s}", "choice", s, r.choice(k, 10, (2, 3), replace=False),
               {"n": 10, "replace": False}, shape=[2, 3])
        p = [0.1, 0.2, 0.3, 0.15, 0.25]
        record(f"choice_p_{s}", "choice", s,
               r.choice(k, 5, (8,), p=arr(p, np.float32)),
               {"n": 5, "replace": True, "p": p}, shape=[8])
        record(f"choice_p_noreplace_{s}", "choice", s,
               r.choice(k, 5, (3,), replace=False, p=arr(p, np.float32)),
               {"n": 5, "replace": False, "p": p}, shape=[3])
        x = np.arange(12, dtype=np.int32).reshape(3, 4) * 10
        for ax in [0, 1]:
            for rep in [True, False]:
                for usep in [False, True]:
                    n = x.shape[ax]
                    pp = (np.arange(1, n + 1) / np.arange(1, n + 1).sum()).astype(np.float32)
                    out = r.choice(k, x, (2,), replace=rep, p=pp if usep else None, axis=ax)
                    record(f"choice_x_ax{ax}_{'r' if rep else 'nr'}_{'p' if usep else 'u'}_{s}",
                           "choice", s, out,
                           {"x": x.tolist(), "replace": rep, "axis": ax,
                            **({"p": pp.tolist()} if usep else {})}, shape=[2])


def main():
    integers([0, 1, 2])
    floats(np.float32, "f32", [0, 1])
    jax.config.update("jax_enable_x64", True)
    floats(np.float64, "f64", [0, 3])
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "random-samplers-jax.json"), "w") as fh:
        json.dump({"jax_version": jax.__version__, "cases": CASES}, fh, separators=(",", ":"))
        fh.write("\n")
    print(len(CASES), "cases")


if __name__ == "__main__":
    main()
