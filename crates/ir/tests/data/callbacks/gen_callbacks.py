# Records the jaxprs JAX 0.10.2 prints for jax.debug.print, jax.debug.callback and
# jax.pure_callback (run from the repository root:
# JAX_PLATFORMS=cpu python crates/ir/tests/data/callbacks/gen_callbacks.py).
import jax, jax.numpy as jnp, numpy as np, json
def cb(x): pass
texts = {
 "print1": jax.make_jaxpr(lambda x: (jax.debug.print("x={}", x), x*2)[1])(1.),
 "print_kw": jax.make_jaxpr(lambda x: (jax.debug.print("x={a} {b}", a=x, b=x+1, ordered=True), x*2)[1])(jnp.ones(3)),
 "print_plain": jax.make_jaxpr(lambda x: (jax.debug.print("plain", ), x)[1])(1.),
 "print_two": jax.make_jaxpr(lambda x, y: (jax.debug.print("{1} and {0} {{}}", x, y), x)[1])(1., jnp.arange(3)),
 "vmap_print": jax.make_jaxpr(jax.vmap(lambda x: (jax.debug.print("x={}", x), x*2)[1]))(jnp.ones(3)),
 "callback": jax.make_jaxpr(lambda x: (jax.debug.callback(cb, x), x*2)[1])(1.),
 "callback_ordered": jax.make_jaxpr(lambda x: (jax.debug.callback(cb, x, ordered=True), x*2)[1])(1.),
 "pure": jax.make_jaxpr(lambda x: jax.pure_callback(lambda a: np.sin(a), jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"))(jnp.ones(3)),
 "pure_none": jax.make_jaxpr(lambda x: jax.pure_callback(lambda a: np.sin(a), jax.ShapeDtypeStruct(x.shape, x.dtype), x))(jnp.ones(3)),
}
for k, t in texts.items():
    open(f"crates/ir/tests/data/callbacks/{k}.txt","w").write(str(t))
# run print_two to capture output
jax.jit(lambda x, y: (jax.debug.print("{1} and {0} {{}}", x, y), x)[1])(1., jnp.arange(3))
jax.jit(lambda x: (jax.debug.print("x={a} {b}", a=x, b=x+1, ordered=True), x*2)[1])(jnp.ones(3))
