"""Records JAX's values for jaxon's `numpy_more` test
(`crates/trace/tests/all/numpy_more.rs`): the set, index, histogram,
polynomial, NaN-statistics and window functions of `jnp`,
`jax.nn.dot_product_attention` (values and gradients) and
`jax.scipy.linalg.block_diag` and `expm`. Each case names a function, its array
arguments (dtype, shape, values), keyword parameters, JAX's results
(`outs`, a list) and a relative tolerance (0: exact). Non-finite values
are written as "nan", "inf" and "-inf". Run with JAX 0.10.2 on the CPU
(float64 cases with `jax_enable_x64`, the rest with JAX's 32-bit
defaults):

    JAX_PLATFORMS=cpu python gen_jnp_more.py > jnp_more.json
"""

import json

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

rng = np.random.default_rng(2111)


def enc(a):
    a = np.asarray(a)
    vals = []
    for v in a.reshape(-1).tolist():
        if isinstance(v, float) and not np.isfinite(v):
            vals.append("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))
        else:
            vals.append(v)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "values": vals}


def rand(shape, dtype="float32", nans=0):
    if dtype.startswith("int"):
        return rng.integers(-9, 10, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = x.reshape(-1)
    if nans:
        flat[rng.choice(flat.size, nans, replace=False)] = np.nan
    return x


cases = []


def case(name, f, args, tol=0.0, **params):
    out = f(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    cases.append({"name": name, "args": [enc(a) for a in args], "params": params,
                  "outs": [enc(o) for o in outs], "tol": tol})


F32 = 4e-6
F64 = 1e-13

jax.config.update("jax_enable_x64", False)
# Sets and indices (i32 results).
xi = rng.integers(-3, 4, (3, 5)).astype("int32")
case("unique_all", lambda x: jnp.unique(x, return_index=True, return_inverse=True,
                                        return_counts=True, size=9, fill_value=-7), [xi],
     size=9, fill=-7)
case("unique_all", lambda x: jnp.unique(x, return_index=True, return_inverse=True,
                                        return_counts=True, size=4), [xi], size=4)
case("unique_all", lambda x: jnp.unique(x, return_index=True, return_inverse=True,
                                        return_counts=True), [xi])
xf = np.array([2.0, np.nan, -1.0, 2.0, np.nan, 0.5, -1.0], dtype="float32")
case("unique_all", lambda x: jnp.unique(x, return_index=True, return_inverse=True,
                                        return_counts=True), [xf])
case("unique_all", lambda x: jnp.unique(x, return_index=True, return_inverse=True,
                                        return_counts=True, size=6), [xf], size=6)
m = rand((3, 4))
m[m < 1] = 0
case("nonzero", lambda x: jnp.nonzero(x), [m])
case("nonzero", lambda x: jnp.nonzero(x, size=4, fill_value=-1), [m], size=4, fill=-1)
case("nonzero", lambda x: jnp.nonzero(x, size=10), [m], size=10)
case("argwhere", lambda x: jnp.argwhere(x, size=8, fill_value=5), [m], size=8, fill=5)
case("argwhere", lambda x: jnp.argwhere(x), [m])
case("flatnonzero", lambda x: jnp.flatnonzero(x, size=7, fill_value=-2), [m], size=7, fill=-2)
case("isin", lambda x, t: jnp.isin(x, t), [xi, np.array([[0, 2], [5, -3]], dtype="int32")])
case("isin", lambda x, t: jnp.isin(x, t, invert=True), [xi, np.array([1, -1], dtype="int32")],
     invert=True)
bins = np.array([-2.0, -0.5, 0.0, 1.0, 4.0], dtype="float32")
xd = np.concatenate([rand((12,)), bins]).astype("float32")
for right in [False, True]:
    case("digitize", lambda x, b: jnp.digitize(x, b, right=right), [xd, bins], right=right)
    case("digitize", lambda x, b: jnp.digitize(x, b, right=right), [xd, bins[::-1].copy()],
         right=right)
for n, k, mm in [(4, 0, None), (3, 1, 5), (5, -2, 3)]:
    case("tril_indices", lambda: jnp.tril_indices(n, k, mm), [], n=n, k=k, m=mm)
    case("triu_indices", lambda: jnp.triu_indices(n, k, mm), [], n=n, k=k, m=mm)
case("tril_indices_from", lambda x: jnp.tril_indices_from(x, 1), [rand((3, 4))], k=1)
case("triu_indices_from", lambda x: jnp.triu_indices_from(x, -1), [rand((4, 2))], k=-1)
case("diag_indices", lambda: jnp.diag_indices(3, 2), [], n=3, ndim=2)
a = rand((7, 4))
case("array_split", lambda x: jnp.array_split(x, 3), [a], sections=3, axis=0)
case("array_split", lambda x: jnp.array_split(x, [1, 3, 4], axis=1), [a], at=[1, 3, 4], axis=1)
case("array_split", lambda x: jnp.array_split(x, 5, axis=1), [a], sections=5, axis=1)
case("hsplit", lambda x: jnp.hsplit(x, 2), [a], sections=2)
case("hsplit", lambda x: jnp.hsplit(x, [2]), [rand((6,))], at=[2])
case("vsplit", lambda x: jnp.vsplit(x, [2, 5]), [a], at=[2, 5])
case("dsplit", lambda x: jnp.dsplit(x, 3), [rand((2, 2, 6))], sections=3)
for x1, x2 in [(rand((4, 5), "int32") * 7, rand((4, 5), "int32") * 3),
               (np.array([0, 0, 12, -18, 7, 100], dtype="int32"),
                np.array([0, 5, 18, 12, -21, 75], dtype="int32"))]:
    case("gcd", jnp.gcd, [x1, x2])
    case("lcm", jnp.lcm, [x1, x2])
case("gcd", jnp.gcd, [np.array([[12], [9]], dtype="int32"), np.array([8, 6, 0], dtype="int32")])
for mm in [0, 1, 2, 7, 12]:
    for w in ["hanning", "hamming", "blackman", "bartlett"]:
        case(w, lambda: getattr(jnp, w)(mm), [], F32, m=mm)
    case("kaiser", lambda: jnp.kaiser(mm, 4.5), [], 2e-5, m=mm, beta=4.5)
# Histograms on f32 (counts with the default ones weights are f32).
h = rand((40,))
case("histogram", lambda x: jnp.histogram(x, bins=7), [h], F32, bins=7)
case("histogram", lambda x: jnp.histogram(x, bins=5, range=(-2.0, 3.0), density=True), [h], F32,
     bins=5, range=[-2.0, 3.0], density=True)
hw = np.abs(rand((40,)))
case("histogram", lambda x, w: jnp.histogram(x, bins=6, weights=w), [h, hw], F32, bins=6)
edges = np.array([-5.0, -1.0, 0.0, 0.5, 6.0], dtype="float32")
case("histogram", lambda x, e: jnp.histogram(x, bins=e, density=True), [h, edges], F32,
     density=True)
case("histogram", lambda x: jnp.histogram(x, bins=3), [np.full((5,), 2.0, "float32")], F32, bins=3)
case("histogram_bin_edges", lambda x: jnp.histogram_bin_edges(x, bins=4), [h.reshape(5, 8)], F32,
     bins=4)
case("histogram_bin_edges", lambda x: jnp.histogram_bin_edges(x, bins=3, range=(1.0, 2.0)), [h],
     F32, bins=3, range=[1.0, 2.0])
case("histogram", lambda x: jnp.histogram(x, bins=4), [rand((3, 5), "int32")], F32, bins=4)
# Attention (f32): values, and gradients of sum(out * ct) w.r.t. q, k, v, bias.
B, T, S, N, K, H = 2, 3, 4, 4, 2, 5
q, k, v = rand((B, T, N, H)) / 3, rand((B, S, K, H)) / 3, rand((B, S, K, H))
bias = rand((1, N, T, S)) / 3
mask = rng.random((B, 1, T, S)) > 0.3
mask[..., 0] = True
ct = rand((B, T, N, H))
for kw in [dict(), dict(is_causal=True), dict(scale=0.7), dict(bias=bias),
           dict(mask=mask, is_causal=True, bias=bias)]:
    def f(q, k, v, kw=kw):
        return jax.nn.dot_product_attention(q, k, v, implementation="xla", **kw)
    extra = {key: (True if key == "is_causal" else (0.7 if key == "scale" else "arg"))
             for key in kw}
    args = [q, k, v] + ([bias] if "bias" in kw else []) + ([mask] if "mask" in kw else [])
    case("dot_product_attention", lambda *a: f(*a[:3]), args, 2e-5, **extra)
    g = jax.grad(lambda q, k, v: jnp.sum(f(q, k, v) * ct), argnums=(0, 1, 2))(q, k, v)
    case("dot_product_attention_grad", lambda *a: g, args + [ct], 5e-5, **extra)
case("dot_product_attention", lambda q, k, v: jax.nn.dot_product_attention(q, k, v),
     [q[0], k[0, :, :], v[0]], 2e-5)
case("block_diag", lambda a, b, c: jsl.block_diag(a, b, c),
     [rand((2, 3)), np.float32(4.0), rand((3,))])
case("block_diag", lambda a, b: jsl.block_diag(a, b), [rand((2, 2), "int32"), rand((1, 3))])

for dt, tol in [("float32", F32), ("float64", F64)]:
    jax.config.update("jax_enable_x64", dt == "float64")
    xn = rand((4, 6), dt, nans=5)
    xn[2, :] = np.nan
    for axis in [None, 0, 1]:
        for ddof in [0, 1]:
            case("nanvar", lambda x: jnp.nanvar(x, axis=axis, ddof=ddof), [xn], tol, axis=axis,
                 ddof=ddof)
        case("nanstd", lambda x: jnp.nanstd(x, axis=axis, keepdims=True), [xn], tol, axis=axis,
             keepdims=True)
        case("nanmedian", lambda x: jnp.nanmedian(x, axis=axis), [xn], tol, axis=axis)
        case("nanquantile", lambda x: jnp.nanquantile(x, jnp.array([0.1, 0.5, 0.75]), axis=axis),
             [xn], tol, axis=axis, q=[0.1, 0.5, 0.75])
        case("nanpercentile", lambda x: jnp.nanpercentile(x, 30.0, axis=axis, keepdims=True),
             [xn], tol, axis=axis, q=[30.0], keepdims=True)
        case("nancumsum", lambda x: jnp.nancumsum(x, axis=axis), [xn], tol, axis=axis)
        case("nancumprod", lambda x: jnp.nancumprod(x, axis=axis), [xn / 3], tol, axis=axis)
    # Index results are int64 under x64: only the 32-bit run records them.
    for axis in ([None, 0, 1] if dt == "float32" else []):
        case("nanargmin", lambda x: jnp.nanargmin(x, axis=axis), [xn[:2]], axis=axis) \
            if axis != 1 else case("nanargmin", lambda x: jnp.nanargmin(x, axis=1), [xn], axis=1)
        case("nanargmax", lambda x: jnp.nanargmax(x, axis=axis), [xn], axis=axis)
    xp = np.sort(rand((8,), dt))
    xp[3] = xp[4]  # a repeated point
    fp = rand((8,), dt)
    x = np.concatenate([rand((10,), dt) * 1.5, xp[:3]]).astype(dt)
    case("interp", jnp.interp, [x, xp, fp], tol)
    case("interp", lambda x, xp, fp: jnp.interp(x, xp, fp, left=-10.0, right=10.0), [x, xp, fp],
         tol, left=-10.0, right=10.0)
    case("interp", lambda x, xp, fp: jnp.interp(x, xp, fp, period=4.0), [x, xp, fp], tol,
         period=4.0)
    p1, p2 = rand((4,), dt), rand((2,), dt)
    case("polyadd", jnp.polyadd, [p1, p2], tol)
    case("polysub", jnp.polysub, [p2, p1], tol)
    case("polymul", jnp.polymul, [p1, p2], tol)
    for mm in [1, 2, 5]:
        case("polyder", lambda p: jnp.polyder(p, mm), [p1], tol, m=mm)
    case("polyint", lambda p: jnp.polyint(p), [p1], tol, m=1)
    case("polyint", lambda p: jnp.polyint(p, 2, k=3.0), [p1], tol, m=2, k=[3.0])
    case("polyint", lambda p: jnp.polyint(p, 2, k=np.array([1.0, -2.0], dtype=dt)), [p1], tol, m=2, k=[1.0, -2.0])
    case("poly", jnp.poly, [rand((3,), dt)], tol)
    case("vander", lambda x: jnp.vander(x, 4), [rand((5,), dt)], tol, n=4)
    case("vander", lambda x: jnp.vander(x, increasing=True), [rand((3,), dt)], tol, increasing=True)
    xs = np.linspace(-1, 2, 12).astype(dt)
    ys = (0.5 * xs**3 - xs + 0.3 + 0.01 * rand((12,), dt)).astype(dt)
    ftol = 2e-3 if dt == "float32" else 1e-9
    case("polyfit", lambda x, y: jnp.polyfit(x, y, 3), [xs, ys], ftol, deg=3)
    y2 = np.stack([ys, 2 * xs - 1], axis=1).astype(dt)
    case("polyfit", lambda x, y: jnp.polyfit(x, y, 2), [xs, y2], ftol, deg=2)
    wts = (np.abs(rand((12,), dt)) + 0.1).astype(dt)
    case("polyfit", lambda x, y, w: jnp.polyfit(x, y, 1, w=w), [xs, ys, wts], ftol, deg=1)

    for scale in [0.004, 0.1, 0.5, 1.2, 4.0, 30.0]:
        am = (rand((3, 3), dt) * scale / 3).astype(dt)
        case("expm", jsl.expm, [am], 1e-5 if dt == "float32" else 1e-12)
    case("expm", jsl.expm, [(rand((2, 4, 4), dt) / 2).astype(dt)],
         1e-5 if dt == "float32" else 1e-12)

print(json.dumps({"jax": jax.__version__, "cases": cases}))
