//! Golden tests: Rust transcriptions of the seeds' examples print exactly
//! what JAX 0.10.2 prints for the originals.

fn print_closed_jaxpr(j: &jaxon_ir::ClosedJaxpr) -> String {
    jaxon_ir::print::print_jaxpr(&j.jaxpr)
}
use jaxon_trace::numpy::{self as jnp, All};
use jaxon_trace::{jit, lax, make_jaxpr, Array};

fn f32s(n: usize, seed: u32) -> Array {
    let v: Vec<f32> = (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
        })
        .collect();
    Array::from_vec(v, &[n])
}

const FUNC1: &str = "{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] = sin b
    d:f32[8] = mul c 3.0:f32[]
    e:f32[8] = add a d
    f:f32[] = reduce_sum[axes=(0,) out_sharding=None] e
  in (f,) }";

#[test]
fn func1_prints_as_jax() {
    // def func1(first, second):
    //     temp = first + jnp.sin(second) * 3.
    //     return jnp.sum(temp)
    let func1 = |(first, second): (Array, Array)| (&first + second.sin() * 3.0).sum(All);
    let j = make_jaxpr(func1)((f32s(8, 1), f32s(8, 2))).unwrap();
    assert_eq!(print_closed_jaxpr(&j), FUNC1);
}

#[test]
fn func3_rust_control_flow_on_static_shapes_is_inlined() {
    // def func3(first, second):
    //     if first.shape[0] < 5: return jnp.sum(first)   (not taken)
    //     temp = first + jnp.sin(second) * 3.
    //     return jnp.sum(temp)
    let func3 = |(first, second): (Array, Array)| {
        if first.shape()[0] < 5 {
            return first.sum(All);
        }
        (&first + second.sin() * 3.0).sum(All)
    };
    let j = make_jaxpr(func3)((f32s(8, 1), f32s(8, 2))).unwrap();
    assert_eq!(print_closed_jaxpr(&j), FUNC1);
}

#[test]
fn func4_tuple_pytree_argument() {
    // def func4(arg):  # arg is a pair
    //     temp = arg[0] + jnp.sin(arg[1]) * 3.
    //     return jnp.sum(temp)
    let func4 = |arg: ((Array, Array),)| {
        let (a, b) = arg.0;
        (&a + b.sin() * 3.0).sum(All)
    };
    let j = make_jaxpr(func4)(((f32s(8, 1), f32s(8, 2)),)).unwrap();
    assert_eq!(print_closed_jaxpr(&j), FUNC1);
}

#[test]
fn func6_captured_host_array_becomes_a_constvar() {
    // def func5(first, second):
    //     temp = first + np.sin(second) * 3. - jnp.ones(8)
    //     return temp
    // def func6(first): return func5(first, np.ones(8))
    // `np.sin(second) * 3.` is host NumPy code: plain Rust here.
    let host: Vec<f32> = [1.0f64; 8].iter().map(|x| (x.sin() * 3.0) as f32).collect();
    let constant = Array::from_vec(host, &[8]);
    let func6 =
        move |first: Array| &first + &constant - jnp::ones(&[8], jaxon_ir::DType::F32).unwrap();
    let j = make_jaxpr(func6)(f32s(8, 3)).unwrap();
    assert_eq!(
        print_closed_jaxpr(&j),
        "{ lambda a:f32[8]; b:f32[8]. let
    c:f32[8] = add b a
    d:f32[8] = broadcast_in_dim 1.0:f32[]
    e:f32[8] = sub c d
  in (e,) }"
    );
    assert_eq!(j.consts.len(), 1);
}

const SELECT_TRIL: &str = "{ lambda ; a:i32[3,4]. let
    b:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None] 
    c:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] b
    d:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
    e:i32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,)] d
    f:bool[3,4] = gt c e
    g:i32[3,4] = broadcast_in_dim 0:i32[]
    h:i32[3,4] = select_n f g a
  in (h,) }";

/// def select_tril(x):
///     mask = jnp.arange(x.shape[0])[:, None] > jnp.arange(x.shape[1])
///     return lax.select(mask, x, lax.full_like(x, 0))
fn select_tril(x: Array) -> Array {
    let s = x.shape();
    let rows = lax::expand_dims(&jnp::arange(s[0]).unwrap(), &[1]).unwrap();
    let mask = rows.gt(jnp::arange(s[1]).unwrap());
    let zeros = jnp::full_like(&x, &Array::weak(0)).unwrap();
    lax::select_n(&mask, &[zeros, x]).unwrap()
}

fn arange12() -> Array {
    Array::from_vec((0..12).collect::<Vec<i32>>(), &[3, 4])
}

#[test]
fn select_tril_stages_the_mask() {
    let j = make_jaxpr(select_tril)(arange12()).unwrap();
    assert_eq!(print_closed_jaxpr(&j), SELECT_TRIL);
}

#[test]
fn select_tril_jitted_stages_the_mask_and_runs() {
    let f = jit(select_tril);
    let j = f.lower(arange12()).unwrap();
    assert_eq!(print_closed_jaxpr(&j), SELECT_TRIL);
    let out = f.call(arange12()).unwrap();
    assert_eq!(
        out.to_vec::<i32>(),
        vec![0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0]
    );
}
