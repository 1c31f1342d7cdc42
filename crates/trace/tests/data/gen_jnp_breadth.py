"""Records JAX's values for jaxon's `jnp` breadth test
(`crates/trace/tests/all/numpy_breadth.rs`): each case names a jnp function,
its array arguments (dtype, shape, values) and keyword parameters, and
JAX's result. Non-finite values are written as the strings "nan", "inf"
and "-inf". Run with JAX 0.10.2 on the CPU (float64 cases with `jax_enable_x64`, the
others with JAX's default 32-bit types):

    JAX_PLATFORMS=cpu python gen_jnp_breadth.py > jnp_breadth.json
"""

import json

import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(1127)


def enc(a):
    a = np.asarray(a)
    vals = []
    for v in a.reshape(-1).tolist():
        if isinstance(v, float) and not np.isfinite(v):
            vals.append("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))
        else:
            vals.append(v)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "values": vals}


def rand(shape, dtype="float32", special=False):
    if dtype.startswith("int"):
        return rng.integers(-9, 10, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    if special and x.size >= 6:
        flat = x.reshape(-1)
        flat[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.5]
    return x


cases = []


def case(name, args, **params):
    f = getattr(jnp, name)
    out = f(*args, **params)
    cases.append({"name": name, "args": [enc(a) for a in args], "params": params, "out": enc(out)})


for dt in ["float32", "float64"]:
    # float64 needs x64; the integer and float32 cases use JAX's default
    # (32-bit) promotion, as jaxon does.
    jax.config.update("jax_enable_x64", dt == "float64")
    for name in ["absolute", "fabs", "trunc", "rint", "deg2rad", "rad2deg", "log2", "log10",
                 "signbit", "sinc", "positive", "reciprocal", "acos", "asinh", "atan"]:
        x = rand((3, 4), dt, special=True)
        if name == "acos":
            x = np.clip(x, -1, 1)
        case(name, [x])
    for name in ["hypot", "copysign", "logaddexp", "logaddexp2", "fmax", "fmin", "heaviside",
                 "atan2", "pow", "true_divide"]:
        x, y = rand((2, 5), dt, special=True), rand((5,), dt)
        if name == "pow":
            x = np.abs(x)
        case(name, [x, y])
jax.config.update("jax_enable_x64", False)
for name in ["trunc", "rint", "signbit", "reciprocal", "absolute", "bitwise_not", "invert"]:
    case(name, [rand((7,), "int32")])
case("mod", [rand((6,), "int32"), np.array([3, -3, 4, -4, 5, 7], "int32")])
case("logical_xor", [rand((6,), "float32"), rand((6,), "int32")])
x = rand((2, 3, 4))
case("ravel", [x])
case("squeeze", [rand((1, 3, 1))])
case("squeeze", [rand((1, 3, 1))], axis=(2,))
case("expand_dims", [x], axis=(0, -1))
case("swapaxes", [x], axis1=0, axis2=-1)
case("moveaxis", [x], source=(0, 1), destination=(-1, 0))
case("moveaxis", [rand((2, 3, 4, 5))], source=(3,), destination=(1,))
case("flip", [x])
case("flip", [x], axis=(0, 2))
case("fliplr", [rand((3, 4))])
case("flipud", [rand((3, 4))])
for shift, axis in [(1, 0), (-2, 1), (7, 2), (5, None), (0, 1)]:
    case("roll", [x], shift=shift, axis=axis)
for name in ["atleast_1d", "atleast_2d", "atleast_3d"]:
    for shape in [(), (3,), (2, 3)]:
        case(name, [rand(shape)])
for name in ["hstack", "vstack", "dstack", "column_stack"]:
    for shape in [(3,), (2, 3)]:
        a, b = rand(shape), rand(shape)
        out = getattr(jnp, name)([a, b])
        cases.append({"name": name, "args": [enc(a), enc(b)], "params": {}, "out": enc(out)})
for off, a1, a2 in [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, 2, 0), (-5, 1, 2)]:
    case("diagonal", [x], offset=off, axis1=a1, axis2=a2)
    case("trace", [x], offset=off, axis1=a1, axis2=a2)
z = rand((3, 4))
z[z < 0] = 0
case("count_nonzero", [z])
case("count_nonzero", [z], axis=1)
case("ptp", [x], axis=1)
case("amax", [x], axis=(0, 2))
case("amin", [x], axis=2, keepdims=True)
case("around", [rand((8,)) * 10], decimals=1)
case("permute_dims", [x], axes=(2, 0, 1))
# Order statistics and moments (float32, NaNs in one line).
y = rand((4, 7))
y[2, 3] = np.nan
for qs, axis in [((0.5,), 1), ((0.0, 0.25, 1.0), 0), ((0.3,), None)]:
    out = jnp.quantile(y, jnp.array(qs, jnp.float32) if len(qs) > 1 else qs[0], axis=axis)
    cases.append({"name": "quantile", "args": [enc(y)], "params": {"q": list(qs), "axis": axis},
                  "out": enc(out)})
case("median", [rand((5, 6))], axis=0)
case("median", [rand((5, 6))], axis=1, keepdims=True)
out = jnp.percentile(y[:2], jnp.array([10.0, 90.0]), axis=1)
cases.append({"name": "percentile", "args": [enc(y[:2])], "params": {"q": [10.0, 90.0], "axis": 1},
              "out": enc(out)})
case("average", [rand((3, 4))], axis=1)
w4 = np.abs(rand((4,))) + 0.1
out = jnp.average(rand((3, 4)), axis=1, weights=w4)
x34, = [rand((3, 4))]
out = jnp.average(x34, axis=1, weights=w4)
cases.append({"name": "average", "args": [enc(x34), enc(w4)], "params": {"axis": 1}, "out": enc(out)})
case("cov", [rand((3, 8))])
case("cov", [rand((8, 3))], rowvar=False)
case("cov", [rand((9,))], ddof=0)
case("corrcoef", [rand((3, 8))])
for ordv, axis in [(None, None), (None, 1), (1, 1), (np.inf, 0), (3, 1), (0, 1), ("fro", (0, 1)), (2, None), (np.inf, None)]:
    a = rand((4, 5)) if axis is not None or ordv is None else rand((4, 5))
    if ordv in (2, np.inf) and axis is None:
        a = rand((6,))
    out = jnp.linalg.norm(a, ord=ordv, axis=axis)
    cases.append({"name": "norm", "args": [enc(a)],
                  "params": {"ord": None if ordv is None else str(ordv).replace("inf", "inf"),
                             "axis": axis}, "out": enc(out)})
case("tile", [rand((2, 3))], reps=(2, 1, 3))
case("tile", [rand((3,))], reps=(2,))
for k in [0, 1, -2]:
    case("diag", [rand((4,))], k=k)
    case("diag", [rand((4, 5))], k=k)
case("inner", [rand((2, 3)), rand((4, 3))])
case("vdot", [rand((2, 3)), rand((3, 2))])
case("cross", [rand((4, 3)), rand((3,))])
case("cross", [rand((5, 2)), rand((5, 2))])
case("append", [rand((2, 3)), rand((1, 3))], axis=0)
case("append", [rand((2, 3)), rand((4,))])
# Batch 3: elementwise extras, transposes, products, convolutions.
case("fmod", [rand((6,)), np.array([2.0, -2.0, 0.5, 3.0, -1.5, 4.0], "float32")])
case("fmod", [rand((6,), "int32"), np.array([2, -2, 0, 3, -5, 4], "int32")])
case("float_power", [np.abs(rand((5,))), rand((5,))])
case("isposinf", [rand((6,), special=True)])
case("isneginf", [rand((6,), special=True)])
case("isreal", [rand((4,))])
case("matrix_transpose", [rand((2, 3, 4))])
for k in [1, 2, 3, -1]:
    case("rot90", [rand((2, 3, 4))], k=k, axes=(0, 2))
case("vecdot", [rand((3, 4)), rand((4,))])
case("matvec", [rand((2, 3, 4)), rand((4,))])
case("vecmat", [rand((3,)), rand((2, 3, 4))])
for mode in ["full", "same", "valid"]:
    case("convolve", [rand((7,)), rand((3,))], mode=mode)
    case("convolve", [rand((2,)), rand((5,))], mode=mode)
    case("correlate", [rand((7,)), rand((4,))], mode=mode)
    case("correlate", [rand((3,)), rand((6,))], mode=mode)
case("trapezoid", [rand((3, 5))], dx=0.5, axis=1)
case("ediff1d", [rand((2, 3))])
# Functions with several results: "outs" holds each.
def multi(name, args, f):
    cases.append({"name": name, "args": [enc(a) for a in args], "params": {},
                  "outs": [enc(o) for o in f(*args)]})


multi("divmod", [rand((7,)), np.array([2.0, -2.0, 0.5, 3.0, -1.5, 4.0, 1.0], "float32")], jnp.divmod)
multi("divmod", [rand((6,), "int32"), np.array([2, -2, 3, -3, 5, 7], "int32")], jnp.divmod)
multi("modf", [rand((8,), special=True)], jnp.modf)
multi("unstack", [rand((3, 2))], lambda x: jnp.unstack(x, axis=1))
multi("broadcast_arrays", [rand((3, 1)), rand((4,)), rand(())], jnp.broadcast_arrays)
print(json.dumps({"jax": jax.__version__, "cases": cases}))
