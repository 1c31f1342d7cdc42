"""Records jax.nn's log1mexp, logmeanexp, sparse_plus, sparse_sigmoid,
squareplus, swish, hard_swish and tanh for tests/nn_more.rs.

Run from the repository root with JAX 0.10.2 (x32):
    JAX_PLATFORMS=cpu python crates/trace/tests/data/gen_nn_more.py
"""
import json
import pathlib

import numpy as np
import jax.nn as nn

rng = np.random.default_rng(7)
x = (rng.standard_normal(12) * 2).astype(np.float32)
x[:4] = [-1.0, 1.0, 0.0, -3.0]
pos = np.abs(x) + np.float32(0.05)
m = rng.standard_normal((3, 4)).astype(np.float32)


def enc(v):
    v = np.asarray(v)
    return {"shape": list(v.shape), "values": [float(t) for t in v.ravel()]}


cases = {
    "x": enc(x), "pos": enc(pos), "m": enc(m),
    "log1mexp": enc(nn.log1mexp(pos)),
    "logmeanexp_all": enc(nn.logmeanexp(m)),
    "logmeanexp_1": enc(nn.logmeanexp(m, axis=1)),
    "logmeanexp_0k": enc(nn.logmeanexp(m, axis=0, keepdims=True)),
    "sparse_plus": enc(nn.sparse_plus(x)),
    "sparse_sigmoid": enc(nn.sparse_sigmoid(x)),
    "squareplus": enc(nn.squareplus(x)),
    "squareplus_b1": enc(nn.squareplus(x, b=1.0)),
    "swish": enc(nn.swish(x)),
    "hard_swish": enc(nn.hard_swish(x)),
    "tanh": enc(nn.tanh(x)),
}
out = pathlib.Path(__file__).with_name("nn_more.json")
out.write_text(json.dumps(cases))
print(f"{len(cases)} entries -> {out}")
