"""Records `jax.lax.rng_bit_generator` outputs for jaxon's tests.

Run with JAX 0.10.2 on the CPU (x64 on, for the u64 cases):

    JAX_PLATFORMS=cpu /work/venv-main/bin/python tests/data/gen_rng_bit_generator.py

It writes `tests/data/rng-bit-generator-jax.txt`, one case a line, fields
separated by ` | `:

    call <algorithm> <dtype> <shape> <key dtype> | <key> | <new key> | <bits>
    vmap <algorithm> <dtype> <shape> <key dtype> | <keys> | <new keys> | <bits>

`<shape>` is the sizes joined by `x` (`-` for a scalar); keys, new keys and
bits are decimal words, row-major. A `vmap` line is JAX's
`vmap(lambda k: rng_bit_generator(k, shape, ...))` over a batch of keys
(the first axis of `<keys>`, 4 words a key).
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)
assert jax.__version__ == "0.10.2", jax.__version__

ALGS = {
    "RNG_DEFAULT": lax.RandomAlgorithm.RNG_DEFAULT,
    "RNG_THREE_FRY": lax.RandomAlgorithm.RNG_THREE_FRY,
    "RNG_PHILOX": lax.RandomAlgorithm.RNG_PHILOX,
}
DTYPES = ["uint8", "uint16", "uint32", "uint64"]
SHAPES = [(), (1,), (3,), (4,), (2, 3), (3, 5), (5, 3), (3, 4, 5), (7, 1, 3), (0,), (2, 0, 3)]


def words(a):
    return " ".join(str(int(v)) for v in np.asarray(a).reshape(-1))


def shape_text(s):
    return "x".join(str(d) for d in s) if s else "-"


def main():
    rng = np.random.default_rng(2026)
    lines = []
    for alg in ALGS:
        for dt in DTYPES:
            for shape in SHAPES:
                key = rng.integers(0, 2**32, size=4, dtype=np.uint64).astype(np.uint32)
                nk, bits = lax.rng_bit_generator(
                    jnp.array(key), shape, dtype=dt, algorithm=ALGS[alg]
                )
                lines.append(
                    f"call {alg} {dt} {shape_text(shape)} uint32 | {words(key)} | "
                    f"{words(nk)} | {words(bits)}"
                )
        # A counter about to wrap (the 128-bit carry for Philox), and u64 keys.
        for dt in ["uint32", "uint64"]:
            key = np.array([0x9E3779B9, 0x12345678, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)
            nk, bits = lax.rng_bit_generator(jnp.array(key), (3, 4), dtype=dt, algorithm=ALGS[alg])
            lines.append(
                f"call {alg} {dt} 3x4 uint32 | {words(key)} | {words(nk)} | {words(bits)}"
            )
            key64 = rng.integers(0, 2**63, size=2, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
            nk, bits = lax.rng_bit_generator(
                jnp.array(key64, jnp.uint64), (5, 2), dtype=dt, algorithm=ALGS[alg]
            )
            lines.append(
                f"call {alg} {dt} 5x2 uint64 | {words(key64)} | {words(nk)} | {words(bits)}"
            )
        for dt, shape in [("uint32", (2, 3)), ("uint8", (5,)), ("uint64", ())]:
            keys = rng.integers(0, 2**32, size=(3, 4), dtype=np.uint64).astype(np.uint32)
            f = jax.vmap(lambda k: lax.rng_bit_generator(k, shape, dtype=dt, algorithm=ALGS[alg]))
            nk, bits = f(jnp.array(keys))
            lines.append(
                f"vmap {alg} {dt} {shape_text(shape)} uint32 | {words(keys)} | "
                f"{words(nk)} | {words(bits)}"
            )
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rng-bit-generator-jax.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} cases to {out}")


if __name__ == "__main__":
    main()
