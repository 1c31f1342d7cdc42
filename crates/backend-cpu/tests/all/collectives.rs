//! Collectives over positional axes (what `vmap` leaves of a named `psum`,
//! `pmax`, `pmin` in a batched jit body) compile as reductions: the text is
//! JAX 0.10.2's `make_jaxpr(vmap(jit(f), axis_name='i'))` body, compared
//! with the interpreter on random inputs.

use crate::common;
use common::{assert_close, parse, random_args, run, Dist, Tol};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;

const BATCHED_BODY: &str = "\
{ lambda ; a:f32[4,3]. let
    b:f32[3] = pmax[axes=(0,) axis_index_groups=None] a
    c:f32[3] = psum[axes=(0,) axis_index_groups=None] a
    d:f32[3] = psum[axes=(0,) axis_index_groups=None] a
    e:f32[3] = div d 4.0:f32[]
    g:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
    h:f32[3] = pmin[axes=(0,) axis_index_groups=None] a
    i:f32[3] = add b c
    j:f32[3] = add i e
    k:f32[4] = convert_element_type[new_dtype=float32 weak_type=False] g
    l:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] j
    m:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] k
    n:f32[4,3] = add l m
    o:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a
    p:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] o
    q:f32[4,3] = add n p
    r:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] h
    s:f32[4,3] = add q r
  in (s,) }";

#[test]
fn positional_collectives_compile_as_reductions() {
    let closed = parse(BATCHED_BODY);
    for seed in 0..3 {
        let args = random_args(&closed, 90 + seed, Dist::Uniform(2.0));
        let want = run(&InterpreterBackend, &closed, &args);
        let got = run(&CpuBackend::new(), &closed, &args);
        assert_close(&got[0], &want[0], Tol::Rel(1e-6), 1.0, "batched body");
    }
}
