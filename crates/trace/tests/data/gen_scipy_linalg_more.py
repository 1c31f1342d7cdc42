"""Records jax.scipy.linalg's values for tests/scipy_linalg_more.rs.

Run from the repository root with JAX 0.10.2 (x32):
    JAX_PLATFORMS=cpu python crates/trace/tests/data/gen_scipy_linalg_more.py
"""
import json
import pathlib

import numpy as np
import jax.numpy as jnp
import jax.scipy.linalg as jsl

rng = np.random.default_rng(21)


def enc(x):
    x = np.asarray(x)
    return {"dtype": str(x.dtype), "shape": list(x.shape), "values": x.ravel().tolist()}


def spd(n):
    a = rng.standard_normal((n, n)).astype(np.float32)
    return (a @ a.T + n * np.eye(n)).astype(np.float32)


cases = []


def case(name, args, out, **kw):
    outs = out if isinstance(out, tuple) else (out,)
    cases.append({"name": name, "args": [enc(a) for a in args], "kw": kw,
                  "outs": [enc(o) for o in outs]})


a = rng.standard_normal((4, 4)).astype(np.float32)
s = spd(4)
b = rng.standard_normal((4, 2)).astype(np.float32)
bv = rng.standard_normal(4).astype(np.float32)
case("cholesky_upper", [s], jsl.cholesky(s))
case("cholesky_lower", [s], jsl.cholesky(s, lower=True))
case("det", [a], jsl.det(a))
case("inv", [a], jsl.inv(a))
case("solve", [a, b], jsl.solve(a, b))
w, v = jsl.eigh(s)
case("eigh_w", [s], w)
lu, piv = jsl.lu_factor(a)
for t in (0, 1):
    case(f"lu_solve_{t}", [lu, piv, b], jsl.lu_solve((lu, piv), b, trans=t), trans=t)
    case(f"lu_solve_vec_{t}", [lu, piv, bv], jsl.lu_solve((lu, piv), bv, trans=t), trans=t)
c = rng.standard_normal(3).astype(np.float32)
r = rng.standard_normal(5).astype(np.float32)
case("toeplitz", [c, r], jsl.toeplitz(c, r))
case("toeplitz1", [c], jsl.toeplitz(c))
case("hankel", [c, r], jsl.hankel(c, r))
case("hankel1", [c], jsl.hankel(c))
case("circulant", [r], jsl.circulant(r))
case("fiedler", [r], jsl.fiedler(r))
case("companion", [r], jsl.companion(r))
case("leslie", [r, c[:2].repeat(2)], jsl.leslie(r, c[:2].repeat(2)))
case("hilbert", [], jsl.hilbert(4), n=4)
case("helmert", [], jsl.helmert(4), n=4, full=False)
case("helmert_full", [], jsl.helmert(4, full=True), n=4, full=True)
case("hadamard", [], jsl.hadamard(8), n=8)
# decompositions up to sign: record reconstructions
q, rr = jsl.qr(a[:, :3])
case("qr_full_shapes", [a[:, :3]], (q, rr))
u, sv, vh = jsl.svd(a)
case("svd_s", [a], sv)

# jnp.linalg's array-API spellings
x3 = rng.standard_normal((2, 3)).astype(np.float32)
y3 = rng.standard_normal((2, 3)).astype(np.float32)
case("jnp_trace", [a], jnp.linalg.trace(a, offset=1))
case("jnp_diagonal", [a], jnp.linalg.diagonal(a, offset=-1))
case("jnp_cross", [x3, y3], jnp.linalg.cross(x3, y3))
case("jnp_vecdot", [x3, y3], jnp.linalg.vecdot(x3, y3))
case("jnp_vector_norm2", [x3], jnp.linalg.vector_norm(x3, axis=1))
case("jnp_vector_norm3", [x3], jnp.linalg.vector_norm(x3, ord=3))
case("jnp_vector_norm_inf", [x3], jnp.linalg.vector_norm(x3, axis=0, ord=np.inf))
case("jnp_vector_norm0", [x3], jnp.linalg.vector_norm(x3, ord=0))
case("jnp_multi_dot", [a, b, b.T], jnp.linalg.multi_dot([a, b, b.T]))
low = (b @ b.T).astype(np.float32)
case("jnp_matrix_rank", [low], jnp.linalg.matrix_rank(low))
case("jnp_cond", [a], jnp.linalg.cond(a))
case("jnp_matrix_transpose", [x3], jnp.linalg.matrix_transpose(x3))

out = pathlib.Path(__file__).with_name("scipy_linalg_more.json")
out.write_text(json.dumps(cases))
print(f"{len(cases)} cases -> {out}")
