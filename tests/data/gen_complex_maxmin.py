"""Writes complex-maxmin-jax.txt: JAX's complex max/min, elementwise and
reduced, on values with ties, signed zeros, infinities and NaNs.

Every (a, b, c, d) in VALUES^4 gives x = a+bj, y = c+dj; the c64 and c128
blocks hold max(x, y) and min(x, y) per pair; the `reduce` blocks hold
reduce_max and reduce_min over the rows of the x values as a [343, 7] array
(rows of seven consecutive pairs' x). Run with JAX_PLATFORMS=cpu.
"""
import itertools
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
VALUES = ["0.0", "-0.0", "1.0", "-2.5", "inf", "-inf", "nan"]

out = [f"# complex max/min in JAX {jax.__version__} (CPU); values: {' '.join(VALUES)}"]
for name, ft in [("c64", np.float32), ("c128", np.float64)]:
    v = [float(s) for s in VALUES]
    quads = list(itertools.product(v, repeat=4))
    col = lambda k: jnp.asarray(np.array([q[k] for q in quads], dtype=ft))
    x = jax.lax.complex(col(0), col(1))
    y = jax.lax.complex(col(2), col(3))
    mx, mn = jax.jit(lambda x, y: (jax.lax.max(x, y), jax.lax.min(x, y)))(x, y)
    rows = x.reshape(-1, 7)
    rmx, rmn = jax.jit(lambda r: (jax.lax.reduce_max(r, (1,)), jax.lax.reduce_min(r, (1,))))(rows)
    out.append(f"{name} {len(quads)}")
    for a, b in zip(np.asarray(mx), np.asarray(mn)):
        out.append(f"{ft(a.real)!s} {ft(a.imag)!s} {ft(b.real)!s} {ft(b.imag)!s}")
    out.append(f"reduce {rows.shape[0]}")
    for a, b in zip(np.asarray(rmx), np.asarray(rmn)):
        out.append(f"{ft(a.real)!s} {ft(a.imag)!s} {ft(b.real)!s} {ft(b.imag)!s}")
open(__file__.replace("gen_complex_maxmin.py", "complex-maxmin-jax.txt"), "w").write("\n".join(out) + "\n")
