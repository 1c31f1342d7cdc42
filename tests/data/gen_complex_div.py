"""Writes complex-div-jax.txt: JAX's complex division on special values.

Every (a, b, c, d) in VALUES^4 gives x = a+bj, y = c+dj; each line holds
the real and imaginary parts of x / y (jit, CPU), c64 block then c128.
Run with JAX_PLATFORMS=cpu.
"""
import itertools
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
VALUES = ["0.0", "-0.0", "1.0", "-2.5", "3e38", "1e-30", "inf", "-inf", "nan"]

out = [f"# x / y in JAX {jax.__version__} (CPU); values: {' '.join(VALUES)}"]
for name, ft in [("c64", np.float32), ("c128", np.float64)]:
    v = [float(s) for s in VALUES]
    quads = list(itertools.product(v, repeat=4))
    col = lambda k: jnp.asarray(np.array([q[k] for q in quads], dtype=ft))
    x = jax.lax.complex(col(0), col(1))
    y = jax.lax.complex(col(2), col(3))
    q = np.asarray(jax.jit(lambda x, y: x / y)(x, y))
    out.append(f"{name} {len(quads)}")
    for z in q:
        out.append(f"{ft(z.real)!s} {ft(z.imag)!s}")
open(__file__.replace("gen_complex_div.py", "complex-div-jax.txt"), "w").write("\n".join(out) + "\n")
