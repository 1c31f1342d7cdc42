"""Writes the JAX side of jaxon's `jax_model` example and `jax_model` test.

A small CNN (3x3 convolution with bias and ReLU, 2x2 max pooling, a dense
layer and log-softmax) is written in JAX, traced with `jax.make_jaxpr`, and
saved here together with its weights, an input batch and JAX's output:

  model.jaxpr               the closed jaxpr as JAX prints it
  weights.safetensors       the parameters, named by their key paths
  io.safetensors            `x` (the input batch) and `y` (JAX's output)
  train.safetensors         a synthetic training set (`images`, `labels`)
                            and JAX's losses over the first full-batch SGD
                            steps from the same weights (`losses`), for the
                            `cnn_train` example

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


LEARNING_RATE = 0.1
JAX_STEPS = 5


def loss_fn(params, x, labels):
    """Mean cross-entropy of the CNN's log-probabilities."""
    logp = cnn(params, x)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def synthetic(rng, n):
    """Images with a bright 3x3 blob in one of four quadrants, plus noise;
    the label is the quadrant."""
    labels = rng.integers(0, 4, n).astype(np.int32)
    x = rng.standard_normal((n, 1, 12, 12)).astype(np.float32) * 0.5
    for k, q in enumerate(labels):
        r, c = 2 + 6 * (q // 2) + rng.integers(-1, 2), 2 + 6 * (q % 2) + rng.integers(-1, 2)
        x[k, 0, r:r + 3, c:c + 3] += 2.0
    return x, labels


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
    images, labels = synthetic(rng, 128)
    step = jax.jit(jax.value_and_grad(loss_fn))
    p, losses = params, []
    for _ in range(JAX_STEPS):
        loss, g = step(p, images, labels)
        losses.append(float(loss))
        p = jax.tree_util.tree_map(lambda w, d: w - LEARNING_RATE * d, p, g)
    save_file({"images": images, "labels": labels, "losses": np.asarray(losses, np.float32)},
              "train.safetensors")
    print("losses", losses)
    print("jax", jax.__version__, "inputs", list(named), "output", y.shape)


if __name__ == "__main__":
    main()
