"""Writes the JAX side of jaxon's `jax_model` example and `jax_model` test.

A small CNN (3x3 convolution with bias and ReLU, 2x2 max pooling, a dense
layer and log-softmax) is written in JAX, traced with `jax.make_jaxpr`, and
saved here together with its weights, an input batch and JAX's output:

  model.jaxpr               the closed jaxpr as JAX prints it
  weights.safetensors       the parameters, named by their key paths
  io.safetensors            `x` (the input batch) and `y` (JAX's output)

Run from this folder with JAX 0.10.2, numpy and safetensors installed:
    python generate.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from safetensors.numpy import save_file


def cnn(params, x):
    """x: f32[batch, 1, 12, 12] (NCHW) -> log-probabilities f32[batch, 10]."""
    h = lax.conv_general_dilated(
        x, params["conv"]["w"], window_strides=(1, 1), padding="SAME",
        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    h = jnp.maximum(h + params["conv"]["b"][None, :, None, None], 0.0)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = h.reshape(h.shape[0], -1)
    logits = h @ params["dense"]["w"] + params["dense"]["b"]
    return logits - jax.scipy.special.logsumexp(logits, axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(20261127)
    params = {
        "conv": {
            "w": (rng.standard_normal((4, 1, 3, 3)) * 0.5).astype(np.float32),
            "b": (rng.standard_normal(4) * 0.1).astype(np.float32),
        },
        "dense": {
            "w": (rng.standard_normal((4 * 6 * 6, 10)) * 0.1).astype(np.float32),
            "b": (rng.standard_normal(10) * 0.1).astype(np.float32),
        },
    }
    x = rng.standard_normal((5, 1, 12, 12)).astype(np.float32)
    with open("model.jaxpr", "w") as f:
        f.write(str(jax.make_jaxpr(cnn)(params, x)) + "\n")
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    named = {jax.tree_util.keystr(p, simple=True, separator="."): np.asarray(v) for p, v in flat}
    save_file(named, "weights.safetensors")
    y = np.asarray(jax.jit(cnn)(params, x))
    save_file({"x": x, "y": y}, "io.safetensors")
    print("jax", jax.__version__, "inputs", list(named), "output", y.shape)


if __name__ == "__main__":
    main()
