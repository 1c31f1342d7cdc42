//! Golden tests: `jnp`, `nn` and indexing functions stage exactly the text
//! JAX 0.10.2 prints for the same calls (after dead-code elimination,
//! which jaxon's staging always applies; JAX keeps dead equations).
//!
//! One deliberate difference: jaxon's staging binds an unused output of a
//! live multi-output equation as `_` (argsort's sorted keys), where JAX
//! names it; that golden is edited accordingly.
//!
//! Generated from the installed JAX with
//! `pe.dce_jaxpr(jax.make_jaxpr(f)(*args).jaxpr)`.

// Negative-step slices are written as reversed ranges (`4..0;-2`), as in
// Python's `4:0:-2`.
#![allow(clippy::reversed_empty_ranges)]

use jaxon_ir::print::print_jaxpr;
use jaxon_ir::DType;
use jaxon_trace::index::{ELLIPSIS, NEWAXIS};
use jaxon_trace::numpy::{self as jnp, All, Sections};
use jaxon_trace::{idx, make_jaxpr, nn, Array};

fn f(shape: &[usize], seed: u64) -> Array {
    let n: usize = shape.iter().product();
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    Array::from_vec(v, shape)
}

fn ia(v: &[i32]) -> Array {
    Array::from_vec(v.to_vec(), &[v.len()])
}

macro_rules! golden {
    ($name:ident, $f:expr, $args:expr, $want:expr) => {
        #[test]
        fn $name() {
            let j = make_jaxpr($f)($args).unwrap();
            assert_eq!(print_jaxpr(&j.jaxpr), $want);
        }
    };
}

golden!(
    var_axis1,
    |x: Array| jnp::var(&x, 1, 0, false).unwrap(),
    f(&[2, 3], 1),
    r#"let _var = { lambda ; a:f32[2,3] b:i32[]. let
    c:f32[2] = reduce_sum[axes=(1,) out_sharding=None] a
    d:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] c
    e:f32[2,1] = div d 3.0:f32[]
    f:f32[2,3] = sub a e
    g:f32[2,3] = square f
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    i:f32[] = sub 3.0:f32[] h
    j:f32[2] = reduce_sum[axes=(1,) out_sharding=None] g
    k:f32[2] = div j i
    l:bool[] = gt i 0.0:f32[]
    m:f32[2] = jit[
      name=_where
      jaxpr={ lambda ; l:bool[] k:f32[2] n:f32[]. let
          o:f32[] = convert_element_type[new_dtype=float32 weak_type=False] n
          p:f32[2] = broadcast_in_dim o
          m:f32[2] = select_n l p k
        in (m,) }
    ] l k nan:f32[]
  in (m,) } in
{ lambda ; q:f32[2,3]. let
    r:f32[2] = jit[name=_var jaxpr=_var] q 0:i32[]
  in (r,) }"#
);

golden!(
    std_ddof1,
    |x: Array| jnp::std(&x, All, 1, false).unwrap(),
    f(&[2, 3], 2),
    r#"let _var = { lambda ; a:f32[2,3] b:i32[]. let
    c:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] a
    d:f32[1,1] = broadcast_in_dim c
    e:f32[1,1] = div d 6.0:f32[]
    f:f32[2,3] = sub a e
    g:f32[2,3] = square f
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    i:f32[] = sub 6.0:f32[] h
    j:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] g
    k:f32[] = div j i
    l:bool[] = gt i 0.0:f32[]
    m:f32[] = jit[
      name=_where
      jaxpr={ lambda ; l:bool[] k:f32[] n:f32[]. let
          o:f32[] = convert_element_type[new_dtype=float32 weak_type=False] n
          m:f32[] = select_n l o k
        in (m,) }
    ] l k nan:f32[]
  in (m,) } in
{ lambda ; p:f32[2,3]. let
    q:f32[] = jit[
      name=_std
      jaxpr={ lambda ; p:f32[2,3] r:i32[]. let
          s:f32[] = jit[name=_var jaxpr=_var] p r
          q:f32[] = sqrt s
        in (q,) }
    ] p 1:i32[]
  in (q,) }"#
);

golden!(
    std_axis0,
    |x: Array| jnp::std(&x, 0, 0, false).unwrap(),
    f(&[3, 4], 3),
    r#"let _var = { lambda ; a:f32[3,4] b:i32[]. let
    c:f32[4] = reduce_sum[axes=(0,) out_sharding=None] a
    d:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,)] c
    e:f32[1,4] = div d 3.0:f32[]
    f:f32[3,4] = sub a e
    g:f32[3,4] = square f
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    i:f32[] = sub 3.0:f32[] h
    j:f32[4] = reduce_sum[axes=(0,) out_sharding=None] g
    k:f32[4] = div j i
    l:bool[] = gt i 0.0:f32[]
    m:f32[4] = jit[
      name=_where
      jaxpr={ lambda ; l:bool[] k:f32[4] n:f32[]. let
          o:f32[] = convert_element_type[new_dtype=float32 weak_type=False] n
          p:f32[4] = broadcast_in_dim o
          m:f32[4] = select_n l p k
        in (m,) }
    ] l k nan:f32[]
  in (m,) } in
{ lambda ; q:f32[3,4]. let
    r:f32[4] = jit[
      name=_std
      jaxpr={ lambda ; q:f32[3,4] s:i32[]. let
          t:f32[4] = jit[name=_var jaxpr=_var] q s
          r:f32[4] = sqrt t
        in (r,) }
    ] q 0:i32[]
  in (r,) }"#
);

golden!(
    var_int,
    |x: Array| jnp::var(&x, All, 0, false).unwrap(),
    Array::from_vec(vec![3i32, -1, 4], &[3]),
    r#"let _var = { lambda ; a:i32[3] b:i32[]. let
    c:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a
    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c
    e:f32[1] = broadcast_in_dim d
    f:f32[1] = div e 3.0:f32[]
    g:f32[3] = sub c f
    h:f32[3] = square g
    i:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    j:f32[] = sub 3.0:f32[] i
    k:f32[] = reduce_sum[axes=(0,) out_sharding=None] h
    l:f32[] = div k j
    m:bool[] = gt j 0.0:f32[]
    n:f32[] = jit[
      name=_where
      jaxpr={ lambda ; m:bool[] l:f32[] o:f32[]. let
          p:f32[] = convert_element_type[new_dtype=float32 weak_type=False] o
          n:f32[] = select_n m p l
        in (n,) }
    ] m l nan:f32[]
  in (n,) } in
{ lambda ; q:i32[3]. let r:f32[] = jit[name=_var jaxpr=_var] q 0:i32[] in (r,) }"#
);

golden!(
    where_scalar,
    |x: Array| jnp::where_(&x.gt(0.0), &x, &Array::weak(0.0)).unwrap(),
    f(&[2, 3], 4),
    r#"{ lambda ; a:f32[2,3]. let
    b:bool[2,3] = gt a 0.0:f32[]
    c:f32[2,3] = jit[
      name=_where
      jaxpr={ lambda ; b:bool[2,3] a:f32[2,3] d:f32[]. let
          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] d
          f:f32[2,3] = broadcast_in_dim e
          c:f32[2,3] = select_n b f a
        in (c,) }
    ] b a 0.0:f32[]
  in (c,) }"#
);

golden!(
    where_broadcast,
    |(c, x, y): (Array, Array, Array)| jnp::where_(&c, &x, &y).unwrap(),
    (
        Array::from_vec(vec![true, false, true], &[3]),
        f(&[3], 5),
        f(&[2, 3], 6)
    ),
    r#"{ lambda ; a:bool[3] b:f32[3] c:f32[2,3]. let
    d:f32[2,3] = jit[
      name=_where
      jaxpr={ lambda ; a:bool[3] b:f32[3] c:f32[2,3]. let
          e:bool[2,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a
          f:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,)] b
          d:f32[2,3] = select_n e c f
        in (d,) }
    ] a b c
  in (d,) }"#
);

golden!(
    clip_both,
    |x: Array| jnp::clip(&x, Some(&Array::weak(-1.0)), Some(&Array::weak(1.0))).unwrap(),
    f(&[2, 3], 7),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=clip
      jaxpr={ lambda ; a:f32[2,3] c:f32[] d:f32[]. let
          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c
          f:f32[2,3] = max e a
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] d
          b:f32[2,3] = min g f
        in (b,) }
    ] a -1.0:f32[] 1.0:f32[]
  in (b,) }"#
);

golden!(
    clip_lo,
    |x: Array| jnp::clip(&x, Some(&Array::weak(0.0)), None).unwrap(),
    f(&[3, 4], 8),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,4] = jit[
      name=clip
      jaxpr={ lambda ; a:f32[3,4] c:f32[]. let
          d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c
          b:f32[3,4] = max d a
        in (b,) }
    ] a 0.0:f32[]
  in (b,) }"#
);

golden!(
    cumsum_axis1,
    |x: Array| jnp::cumsum(&x, Some(1)).unwrap(),
    f(&[2, 3], 9),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=cumsum
      jaxpr={ lambda ; a:f32[2,3]. let
          b:f32[2,3] = cumsum[axis=1 reverse=False] a
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    cumsum_flat,
    |x: Array| jnp::cumsum(&x, None).unwrap(),
    f(&[3, 4], 10),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[12] = jit[
      name=cumsum
      jaxpr={ lambda ; a:f32[3,4]. let
          c:f32[12] = reshape[dimensions=None new_sizes=(12,) sharding=None] a
          b:f32[12] = cumsum[axis=0 reverse=False] c
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    cumprod_axis0,
    |x: Array| jnp::cumprod(&x, Some(0)).unwrap(),
    f(&[2, 3], 11),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=cumprod
      jaxpr={ lambda ; a:f32[2,3]. let
          b:f32[2,3] = cumprod[axis=0 reverse=False] a
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    cummax_axis0,
    |x: Array| jnp::cummax(&x, 0, false).unwrap(),
    f(&[3, 4], 12),
    r#"{ lambda ; a:f32[3,4]. let b:f32[3,4] = cummax[axis=0 reverse=False] a in (b,) }"#
);

golden!(
    sort_axis1,
    |x: Array| jnp::sort(&x, Some(1)).unwrap(),
    f(&[2, 3], 13),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=sort
      jaxpr={ lambda ; a:f32[2,3]. let
          b:f32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    argsort_axis1,
    |x: Array| jnp::argsort(&x, Some(1)).unwrap(),
    f(&[2, 3], 14),
    r#"{ lambda ; a:f32[2,3]. let
    b:i32[2,3] = jit[
      name=argsort
      jaxpr={ lambda ; a:f32[2,3]. let
          c:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None] 
          _:f32[2,3] b:i32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a c
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    eye3,
    |_: ()| jnp::eye(3, None, 0, DType::F32).unwrap(),
    (),
    r#"{ lambda ; . let
    a:i32[3,3] = iota[dimension=0 dtype=int32 shape=(3, 3) sharding=None] 
    b:i32[3,3] = iota[dimension=1 dtype=int32 shape=(3, 3) sharding=None] 
    c:i32[3,3] = add a 0:i32[]
    d:bool[3,3] = eq c b
    e:f32[3,3] = convert_element_type[new_dtype=float32 weak_type=False] d
  in (e,) }"#
);

golden!(
    eye_k_int,
    |_: ()| jnp::eye(3, Some(4), 1, DType::I32).unwrap(),
    (),
    r#"{ lambda ; . let
    a:i32[3,4] = iota[dimension=0 dtype=int32 shape=(3, 4) sharding=None] 
    b:i32[3,4] = iota[dimension=1 dtype=int32 shape=(3, 4) sharding=None] 
    c:i32[3,4] = add a 1:i32[]
    d:bool[3,4] = eq c b
    e:i32[3,4] = convert_element_type[new_dtype=int32 weak_type=False] d
  in (e,) }"#
);

golden!(
    tril,
    |x: Array| jnp::tril(&x, 0).unwrap(),
    f(&[3, 4], 15),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,4] = jit[
      name=tril
      jaxpr={ lambda ; a:f32[3,4]. let
          c:i32[3,4] = iota[dimension=0 dtype=int32 shape=(3, 4) sharding=None] 
          d:i32[3,4] = add c 0:i32[]
          e:i32[3,4] = iota[dimension=1 dtype=int32 shape=(3, 4) sharding=None] 
          f:bool[3,4] = ge d e
          g:f32[3,4] = broadcast_in_dim 0.0:f32[]
          b:f32[3,4] = select_n f g a
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    triu_k1,
    |x: Array| jnp::triu(&x, 1).unwrap(),
    f(&[3, 4], 16),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,4] = jit[
      name=triu
      jaxpr={ lambda ; a:f32[3,4]. let
          c:i32[3,4] = iota[dimension=0 dtype=int32 shape=(3, 4) sharding=None] 
          d:i32[3,4] = add c 0:i32[]
          e:i32[3,4] = iota[dimension=1 dtype=int32 shape=(3, 4) sharding=None] 
          f:bool[3,4] = ge d e
          g:f32[3,4] = broadcast_in_dim 0.0:f32[]
          b:f32[3,4] = select_n f a g
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    split_equal,
    |x: Array| jnp::split(&x, Sections::Equal(2), 0).unwrap(),
    f(&[4], 17),
    r#"{ lambda ; a:f32[4]. let
    b:f32[2] c:f32[2] = split[axis=0 sizes=(np.int64(2), np.int64(2))] a
  in (b, c) }"#
);

golden!(
    split_at,
    |x: Array| jnp::split(&x, Sections::At(vec![1, 3]), 1).unwrap(),
    f(&[3, 4], 18),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,1] c:f32[3,2] d:f32[3,1] = split[
      axis=1
      sizes=(np.int64(1), np.int64(2), np.int64(1))
    ] a
  in (b, c, d) }"#
);

golden!(
    pad_constant,
    |x: Array| jnp::pad(&x, &[(1, 2), (0, 1)], &Array::weak(0)).unwrap(),
    f(&[2, 3], 19),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[5,4] = jit[
      name=_pad
      jaxpr={ lambda ; a:f32[2,3] c:i32[]. let
          d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c
          b:f32[5,4] = pad[
            padding_config=((np.int64(1), np.int64(2), 0), (np.int64(0), np.int64(1), 0))
          ] a d
        in (b,) }
    ] a 0:i32[]
  in (b,) }"#
);

golden!(
    take_axis1,
    |(x, i): (Array, Array)| jnp::take(&x, &i, Some(1)).unwrap(),
    (f(&[3, 4], 20), ia(&[0, 2])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:f32[3,2] = jit[
      name=_take
      jaxpr={ lambda ; a:f32[3,4] b:i32[2]. let
          d:bool[2] = lt b 0:i32[]
          e:i32[2] = add b 4:i32[]
          f:i32[2] = jit[
            name=_where
            jaxpr={ lambda ; d:bool[2] e:i32[2] b:i32[2]. let
                f:i32[2] = select_n d b e
              in (f,) }
          ] d e b
          g:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f
          c:f32[3,2] = gather[
            dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())
            fill_value=nan
            indices_are_sorted=False
            mode=GatherScatterMode.FILL_OR_DROP
            slice_sizes=(3, 1)
            unique_indices=False
          ] a g
        in (c,) }
    ] a b
  in (c,) }"#
);

golden!(
    take_flat,
    |(x, i): (Array, Array)| jnp::take(&x, &i, None).unwrap(),
    (f(&[3, 4], 21), ia(&[0, 5])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:f32[2] = jit[
      name=_take
      jaxpr={ lambda ; a:f32[3,4] b:i32[2]. let
          d:f32[12] = reshape[dimensions=None new_sizes=(12,) sharding=None] a
          e:bool[2] = lt b 0:i32[]
          f:i32[2] = add b 12:i32[]
          g:i32[2] = jit[
            name=_where
            jaxpr={ lambda ; e:bool[2] f:i32[2] b:i32[2]. let
                g:i32[2] = select_n e b f
              in (g,) }
          ] e f b
          h:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] g
          c:f32[2] = gather[
            dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
            fill_value=nan
            indices_are_sorted=False
            mode=GatherScatterMode.FILL_OR_DROP
            slice_sizes=(1,)
            unique_indices=False
          ] d h
        in (c,) }
    ] a b
  in (c,) }"#
);

golden!(
    arange_step,
    |_: ()| jnp::arange_range(1.0, 10.0, 2.0, None).unwrap(),
    (),
    r#"{ lambda ; . let
    a:i32[5] = iota[dimension=0 dtype=int32 shape=(5,) sharding=None] 
    b:i32[5] = mul 2:i32[] a
    c:i32[5] = add 1:i32[] b
  in (c,) }"#
);

golden!(
    arange_float,
    |_: ()| jnp::arange_range(0.0, 1.0, 0.25, None).unwrap(),
    (),
    r#"{ lambda ; . let
    a:f32[4] = iota[dimension=0 dtype=float32 shape=(4,) sharding=None] 
    b:f32[4] = mul 0.25:f32[] a
    c:f32[4] = add 0.0:f32[] b
  in (c,) }"#
);

golden!(
    arange_start,
    |_: ()| jnp::arange_range(2.0, 7.0, 1.0, None).unwrap(),
    (),
    r#"{ lambda ; . let
    a:i32[5] = iota[dimension=0 dtype=int32 shape=(5,) sharding=None] 
    b:i32[5] = add 2:i32[] a
  in (b,) }"#
);

golden!(
    arange_dtype,
    |_: ()| jnp::arange_dtype(5, DType::F32).unwrap(),
    (),
    r#"{ lambda ; . let
    a:f32[5] = iota[dimension=0 dtype=float32 shape=(5,) sharding=None] 
  in (a,) }"#
);

golden!(
    linspace5,
    |_: ()| jnp::linspace(&Array::weak(0.0), &Array::weak(1.0), 5, true, None).unwrap(),
    (),
    r#"let _linspace = { lambda ; a:f32[] b:f32[]. let
    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    e:f32[4] = iota[dimension=0 dtype=float32 shape=(4,) sharding=None] 
    f:f32[4] = div e 4.0:f32[]
    g:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] c
    h:f32[4] = sub 1.0:f32[] f
    i:f32[4] = mul g h
    j:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] d
    k:f32[4] = mul j f
    l:f32[4] = add i k
    m:f32[1] = broadcast_in_dim d
    n:f32[5] = concatenate[dimension=0] l m
  in (n,) } in
{ lambda ; . let
    o:f32[5] = jit[name=_linspace jaxpr=_linspace] 0.0:f32[] 1.0:f32[]
  in (o,) }"#
);

golden!(
    linspace_noend,
    |_: ()| jnp::linspace(&Array::weak(0.0), &Array::weak(1.0), 4, false, None).unwrap(),
    (),
    r#"{ lambda ; . let
    a:f32[4] = jit[
      name=_linspace
      jaxpr={ lambda ; b:f32[] c:f32[]. let
          d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c
          f:f32[4] = iota[dimension=0 dtype=float32 shape=(4,) sharding=None] 
          g:f32[4] = div f 4.0:f32[]
          h:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] d
          i:f32[4] = sub 1.0:f32[] g
          j:f32[4] = mul h i
          k:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] e
          l:f32[4] = mul k g
          a:f32[4] = add j l
        in (a,) }
    ] 0.0:f32[] 1.0:f32[]
  in (a,) }"#
);

golden!(
    logsumexp_axis1,
    |x: Array| jnp::logsumexp(&x, 1, false).unwrap(),
    f(&[2, 3], 22),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2] = reduce_max[axes=(1,)] a
    c:f32[2] = max -inf:f32[] b
    d:bool[2] = is_finite c
    e:f32[2] = broadcast_in_dim 0.0:f32[]
    f:f32[2] = select_n d e c
    g:f32[2] = stop_gradient f
    h:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] g
    i:f32[2,3] = sub a h
    j:f32[2,3] = exp i
    k:f32[2] = reduce_sum[axes=(1,) out_sharding=None] j
    l:f32[2] = abs k
    m:f32[2] = log l
    n:f32[2] = add m g
  in (n,) }"#
);

golden!(
    mean_axis0,
    |x: Array| jnp::mean(&x, 0, false).unwrap(),
    f(&[3, 4], 23),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[4] = reduce_sum[axes=(0,) out_sharding=None] a
    c:f32[4] = div b 3.0:f32[]
  in (c,) }"#
);

golden!(
    zeros_like,
    |x: Array| jnp::zeros_like(&x).unwrap(),
    f(&[2, 3], 24),
    r#"{ lambda ; a:f32[2,3]. let b:f32[2,3] = broadcast_in_dim 0.0:f32[] in (b,) }"#
);

golden!(
    full,
    |_: ()| jnp::full(&[2, 3], &Array::weak(2.0), None).unwrap(),
    (),
    r#"{ lambda ; . let a:f32[2,3] = broadcast_in_dim 2.0:f32[] in (a,) }"#
);

golden!(
    einsum_matmul,
    |(a, b): (Array, Array)| jnp::einsum("ij,jk->ik", &[a, b]).unwrap(),
    (f(&[2, 3], 25), f(&[3, 4], 26)),
    r#"{ lambda ; a:f32[2,3] b:f32[3,4]. let
    c:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
  in (c,) }"#
);

golden!(
    einsum_trace,
    |a: Array| jnp::einsum("ii->", &[a]).unwrap(),
    f(&[3, 3], 27),
    r#"{ lambda ; a:f32[3,3]. let
    b:u32[3,3] = iota[dimension=0 dtype=uint32 shape=(3, 3) sharding=None] 
    c:u32[3,3] = iota[dimension=1 dtype=uint32 shape=(3, 3) sharding=None] 
    d:bool[3,3] = eq b c
    e:f32[3,3] = broadcast_in_dim 0.0:f32[]
    f:f32[3,3] = select_n d e a
    g:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] f
  in (g,) }"#
);

golden!(
    einsum_diag,
    |a: Array| jnp::einsum("ii->i", &[a]).unwrap(),
    f(&[3, 3], 28),
    r#"{ lambda ; a:f32[3,3]. let
    b:u32[3,3] = iota[dimension=0 dtype=uint32 shape=(3, 3) sharding=None] 
    c:u32[3,3] = iota[dimension=1 dtype=uint32 shape=(3, 3) sharding=None] 
    d:bool[3,3] = eq b c
    e:f32[3,3] = broadcast_in_dim 0.0:f32[]
    f:f32[3,3] = select_n d e a
    g:f32[3] = reduce_sum[axes=(0,) out_sharding=None] f
  in (g,) }"#
);

golden!(
    einsum_transpose,
    |a: Array| jnp::einsum("ij->ji", &[a]).unwrap(),
    f(&[2, 3], 29),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[3,2] = transpose[permutation=(1, 0)] a
  in (b,) }"#
);

golden!(
    einsum_batch,
    |(a, b): (Array, Array)| jnp::einsum("bij,bjk->bik", &[a, b]).unwrap(),
    (f(&[2, 2, 3], 30), f(&[2, 3, 4], 31)),
    r#"{ lambda ; a:f32[2,2,3] b:f32[2,3,4]. let
    c:f32[2,2,4] = dot_general[
      dimension_numbers=(([2], [1]), ([0], [0]))
      preferred_element_type=float32
    ] a b
  in (c,) }"#
);

golden!(
    einsum_outer,
    |(a, b): (Array, Array)| jnp::einsum("i,j->ij", &[a, b]).unwrap(),
    (f(&[3], 32), f(&[2], 33)),
    r#"{ lambda ; a:f32[3] b:f32[2]. let
    c:f32[3,2] = dot_general[
      dimension_numbers=(([], []), ([], []))
      preferred_element_type=float32
    ] a b
  in (c,) }"#
);

golden!(
    einsum_rowsum,
    |a: Array| jnp::einsum("ij->i", &[a]).unwrap(),
    f(&[3, 4], 34),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3] = reduce_sum[axes=(1,) out_sharding=None] a
  in (b,) }"#
);

golden!(
    einsum_inner,
    |a: Array| jnp::einsum("i,i->", &[a.clone(), a]).unwrap(),
    f(&[3], 35),
    r#"{ lambda ; a:f32[3]. let
    b:f32[] = dot_general[
      dimension_numbers=(([0], [0]), ([], []))
      preferred_element_type=float32
    ] a a
  in (b,) }"#
);

golden!(
    einsum_abt,
    |(a, b): (Array, Array)| jnp::einsum("ij,kj->ik", &[a, b]).unwrap(),
    (f(&[3, 4], 36), f(&[2, 4], 37)),
    r#"{ lambda ; a:f32[3,4] b:f32[2,4]. let
    c:f32[3,2] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] a b
  in (c,) }"#
);

golden!(
    nn_relu,
    |x: Array| nn::relu(&x).unwrap(),
    f(&[2, 3], 38),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      name=relu
      call_jaxpr={ lambda ; c:f32[2,3]. let
          d:f32[2,3] = jit[
            name=relu
            jaxpr={ lambda ; c:f32[2,3]. let
                d:f32[2,3] = max c 0.0:f32[]
              in (d,) }
          ] c
        in (d,) }
      jvp=jvp
      symbolic_zeros=False
    ] a
  in (b,) }"#
);

golden!(
    nn_gelu,
    |x: Array| nn::gelu(&x, true).unwrap(),
    f(&[2, 3], 39),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = integer_pow[y=3] a
    c:f32[2,3] = mul 0.044714998453855515:f32[] b
    d:f32[2,3] = add a c
    e:f32[2,3] = mul 0.7978845834732056:f32[] d
    f:f32[2,3] = tanh e
    g:f32[2,3] = add 1.0:f32[] f
    h:f32[2,3] = mul 0.5:f32[] g
    i:f32[2,3] = mul a h
  in (i,) }"#
);

golden!(
    nn_gelu_exact,
    |x: Array| nn::gelu(&x, false).unwrap(),
    f(&[2, 3], 40),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = mul 0.5:f32[] a
    c:f32[2,3] = neg a
    d:f32[2,3] = mul c 0.7071067690849304:f32[]
    e:f32[2,3] = erfc d
    f:f32[2,3] = mul b e
    g:f32[2,3] = copy f
  in (g,) }"#
);

golden!(
    nn_softmax,
    |x: Array| nn::softmax(&x, -1).unwrap(),
    f(&[2, 3], 41),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2] = reduce_max[axes=(1,)] a
    c:f32[2] = max -inf:f32[] b
    d:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] c
    e:f32[2,1] = stop_gradient d
    f:f32[2,3] = sub a e
    g:f32[2,3] = exp f
    h:f32[2] = reduce_sum[axes=(1,) out_sharding=None] g
    i:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] h
    j:f32[2,3] = div g i
  in (j,) }"#
);

golden!(
    nn_log_softmax,
    |x: Array| nn::log_softmax(&x, -1).unwrap(),
    f(&[2, 3], 42),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=log_softmax
      jaxpr={ lambda ; a:f32[2,3]. let
          c:f32[2] = reduce_max[axes=(1,)] a
          d:f32[2] = max -inf:f32[] c
          e:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] d
          f:f32[2,1] = stop_gradient e
          g:f32[2,3] = sub a f
          h:f32[2,3] = exp g
          i:f32[2] = reduce_sum[axes=(1,) out_sharding=None] h
          j:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] i
          k:f32[2,1] = log j
          b:f32[2,3] = sub g k
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    nn_one_hot,
    |i: Array| nn::one_hot(&i, 4, DType::F32).unwrap(),
    ia(&[0, 2, 1]),
    r#"{ lambda ; a:i32[3]. let
    b:f32[3,4] = jit[
      name=_one_hot
      jaxpr={ lambda ; a:i32[3]. let
          c:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] a
          d:i32[1,4] = iota[dimension=1 dtype=int32 shape=(1, 4) sharding=None] 
          e:bool[3,4] = eq c d
          b:f32[3,4] = convert_element_type[new_dtype=float32 weak_type=False] e
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    nn_sigmoid,
    |x: Array| nn::sigmoid(&x).unwrap(),
    f(&[2, 3], 43),
    r#"{ lambda ; a:f32[2,3]. let b:f32[2,3] = logistic a in (b,) }"#
);

golden!(
    nn_silu,
    |x: Array| nn::silu(&x).unwrap(),
    f(&[2, 3], 44),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=silu
      jaxpr={ lambda ; a:f32[2,3]. let
          c:f32[2,3] = logistic a
          b:f32[2,3] = mul a c
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    idx_int,
    |x: Array| x.index(1),
    f(&[3, 4], 45),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[1,4] = slice[limit_indices=(2, 4) start_indices=(1, 0) strides=None] a
    c:f32[4] = squeeze[dimensions=(0,)] b
  in (c,) }"#
);

golden!(
    idx_neg_int_slice,
    |x: Array| x.index(idx![-1, 1..3]),
    f(&[3, 4], 46),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[1,2] = slice[limit_indices=(3, 3) start_indices=(2, 1) strides=None] a
    c:f32[2] = squeeze[dimensions=(0,)] b
  in (c,) }"#
);

golden!(
    idx_step,
    |x: Array| x.index(idx![.., ..;2]),
    f(&[3, 4], 47),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,2] = slice[limit_indices=(3, 4) start_indices=(0, 0) strides=(1, 2)] a
  in (b,) }"#
);

golden!(
    idx_reverse,
    |x: Array| x.index(idx![..;-1]),
    f(&[3, 4], 48),
    r#"{ lambda ; a:f32[3,4]. let b:f32[3,4] = rev[dimensions=(0,)] a in (b,) }"#
);

golden!(
    idx_rev_step,
    |x: Array| x.index(idx![4..0;-2]),
    f(&[5], 49),
    r#"{ lambda ; a:f32[5]. let
    b:f32[2] = slice[limit_indices=(5,) start_indices=(2,) strides=(2,)] a
    c:f32[2] = rev[dimensions=(0,)] b
  in (c,) }"#
);

golden!(
    idx_int_rev,
    |x: Array| x.index(idx![1, ..;-1]),
    f(&[3, 4], 50),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[1,4] = slice[limit_indices=(2, 4) start_indices=(1, 0) strides=None] a
    c:f32[1,4] = rev[dimensions=(1,)] b
    d:f32[4] = squeeze[dimensions=(0,)] c
  in (d,) }"#
);

golden!(
    idx_slice_int,
    |x: Array| x.index(idx![2.., 1]),
    f(&[3, 4], 51),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[1,1] = slice[limit_indices=(3, 2) start_indices=(2, 1) strides=None] a
    c:f32[1] = squeeze[dimensions=(1,)] b
  in (c,) }"#
);

golden!(
    idx_newaxis_ellipsis,
    |x: Array| x.index(idx![NEWAXIS, ELLIPSIS, 1]),
    f(&[3, 4], 52),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,1] = slice[limit_indices=(3, 2) start_indices=(0, 1) strides=None] a
    c:f32[3] = squeeze[dimensions=(1,)] b
    d:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] c
  in (d,) }"#
);

golden!(
    idx_ellipsis_newaxis,
    |x: Array| x.index(idx![ELLIPSIS, NEWAXIS]),
    f(&[3, 4], 53),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,4,1] = broadcast_in_dim[broadcast_dimensions=(0, 1)] a
  in (b,) }"#
);

golden!(
    idx_array,
    |(x, i): (Array, Array)| x.index(&i),
    (f(&[3, 4], 54), ia(&[0, 2])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 3:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[2,4] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 4)
      unique_indices=False
    ] a f
  in (g,) }"#
);

golden!(
    idx_array_axis1,
    |(x, i): (Array, Array)| x.index(idx![.., &i]),
    (f(&[3, 4], 55), ia(&[0, 2])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 4:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[3,2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(3, 1)
      unique_indices=False
    ] a f
  in (g,) }"#
);

golden!(
    idx_two_arrays,
    |(x, i, j): (Array, Array, Array)| x.index(idx![&i, &j]),
    (f(&[3, 4], 56), ia(&[0, 2]), ia(&[1, 3])),
    r#"{ lambda ; a:f32[3,4] b:i32[2] c:i32[2]. let
    d:bool[2] = lt b 0:i32[]
    e:i32[2] = add b 3:i32[]
    f:i32[2] = select_n d b e
    g:bool[2] = lt c 0:i32[]
    h:i32[2] = add c 4:i32[]
    i:i32[2] = select_n g c h
    j:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f
    k:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] i
    l:i32[2,2] = concatenate[dimension=1] j k
    m:f32[2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 1)
      unique_indices=False
    ] a l
  in (m,) }"#
);

golden!(
    idx_array_slice,
    |(x, i): (Array, Array)| x.index(idx![&i, 1..3]),
    (f(&[3, 4], 57), ia(&[0, 2])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 3:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:i32[2,1] = broadcast_in_dim 1:i32[]
    h:i32[2,2] = concatenate[dimension=1] f g
    i:f32[2,2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 2)
      unique_indices=False
    ] a h
  in (i,) }"#
);

golden!(
    idx_dynamic_scalar,
    |(x, i): (Array, Array)| x.index(&i),
    (f(&[3, 4], 58), Array::weak(1)),
    r#"{ lambda ; a:f32[3,4] b:i32[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    d:bool[] = lt c 0:i32[]
    e:i32[] = add c 3:i32[]
    f:i32[] = select_n d c e
    g:bool[] = lt 0:i32[] 0:i32[]
    h:i32[] = add 0:i32[] 4:i32[]
    i:i32[] = select_n g 0:i32[] h
    j:f32[1,4] = dynamic_slice[slice_sizes=(1, 4)] a f i
    k:f32[4] = squeeze[dimensions=(0,)] j
  in (k,) }"#
);

golden!(
    at_set_int,
    |x: Array| x.at(1).set(0.0),
    f(&[3, 4], 59),
    r#"{ lambda ; a:f32[3,4]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:f32[4] = broadcast_in_dim 0.0:f32[]
    d:f32[3,4] = scatter[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(0,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr=None
    ] a b c
  in (d,) }"#
);

golden!(
    at_set_two_ints,
    |x: Array| x.at(idx![1, 2]).set(5.0),
    f(&[3, 4], 60),
    r#"{ lambda ; a:f32[3,4]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:i32[1] = broadcast_in_dim 2:i32[]
    d:i32[2] = concatenate[dimension=0] b c
    e:f32[3,4] = scatter[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr=None
    ] a d 5.0:f32[]
  in (e,) }"#
);

golden!(
    at_add_array,
    |(x, i): (Array, Array)| x.at(&i).add(1.0),
    (f(&[4], 61), ia(&[0, 2])),
    r#"{ lambda ; a:f32[4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 4:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[2] = broadcast_in_dim 1.0:f32[]
    h:f32[4] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=False
      update_consts=()
      update_jaxpr={ lambda ; i:f32[] j:f32[]. let k:f32[] = add i j in (k,) }
    ] a f g
  in (h,) }"#
);

golden!(
    at_mul_slice,
    |x: Array| x.at(1..3).mul(2.0),
    f(&[4], 62),
    r#"{ lambda ; a:f32[4]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:f32[2] = broadcast_in_dim 2.0:f32[]
    d:f32[4] = scatter-mul[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(0,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = mul e f in (g,) }
    ] a b c
  in (d,) }"#
);

golden!(
    at_set_step,
    |x: Array| x.at(idx![..;2]).set(5.0),
    f(&[5], 63),
    r#"{ lambda ; a:f32[5]. let
    b:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None] 
    c:i32[3] = mul 2:i32[] b
    d:i32[3] = add 0:i32[] c
    e:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] d
    f:f32[3] = broadcast_in_dim 5.0:f32[]
    g:f32[5] = scatter[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr=None
    ] a e f
  in (g,) }"#
);

golden!(
    at_get_array,
    |(x, i): (Array, Array)| x.at(&i).get(),
    (f(&[4], 64), ia(&[0, 2])),
    r#"{ lambda ; a:f32[4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 4:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1,)
      unique_indices=False
    ] a f
  in (g,) }"#
);

golden!(
    idx_nonadjacent,
    |(x, i, j): (Array, Array, Array)| x.index(idx![&i, .., &j]),
    (f(&[3, 4, 5], 70), ia(&[0, 2]), ia(&[4, 1])),
    r#"{ lambda ; a:f32[3,4,5] b:i32[2] c:i32[2]. let
    d:bool[2] = lt b 0:i32[]
    e:i32[2] = add b 3:i32[]
    f:i32[2] = select_n d b e
    g:bool[2] = lt c 0:i32[]
    h:i32[2] = add c 5:i32[]
    i:i32[2] = select_n g c h
    j:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f
    k:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] i
    l:i32[2,2] = concatenate[dimension=1] j k
    m:f32[2,4] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0, 2), start_index_map=(0, 2), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 4, 1)
      unique_indices=False
    ] a l
  in (m,) }"#
);

golden!(
    idx_int_array_mix,
    |(x, i): (Array, Array)| x.index(idx![1, .., &i]),
    (f(&[3, 4, 5], 71), ia(&[0, 4, 2])),
    r#"{ lambda ; a:f32[3,4,5] b:i32[3]. let
    c:bool[3] = lt b 0:i32[]
    d:i32[3] = add b 5:i32[]
    e:i32[3] = select_n c b d
    f:i32[3] = broadcast_in_dim 1:i32[]
    g:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] f
    h:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] g
    i:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    j:i32[3,2] = concatenate[dimension=1] h i
    k:f32[3,4] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0, 2), start_index_map=(0, 2), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 4, 1)
      unique_indices=False
    ] a j
  in (k,) }"#
);

golden!(
    idx_array_strided,
    |(x, i): (Array, Array)| x.index(idx![&i, ..;-2]),
    (f(&[3, 5], 72), ia(&[2, 0])),
    r#"{ lambda ; a:f32[3,5] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 3:i32[]
    e:i32[2] = select_n c b d
    f:i32[3] = iota[dimension=0 dtype=int32 shape=(3,) sharding=None] 
    g:i32[3] = mul -2:i32[] f
    h:i32[3] = add 4:i32[] g
    i:i32[3] = rev[dimensions=(0,)] h
    j:i32[2,3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    k:i32[2,3,1] = broadcast_in_dim[broadcast_dimensions=(1,)] i
    l:i32[2,3,2] = concatenate[dimension=2] j k
    m:f32[2,3] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 1)
      unique_indices=False
    ] a l
    n:f32[2,3] = rev[dimensions=(1,)] m
  in (n,) }"#
);

golden!(
    idx_array_newaxis,
    |(x, i): (Array, Array)| x.index(idx![NEWAXIS, .., &i]),
    (f(&[3, 4], 73), ia(&[1, 3])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 4:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[3,2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(3, 1)
      unique_indices=False
    ] a f
    h:f32[1,3,2] = broadcast_in_dim[broadcast_dimensions=(1, 2)] g
  in (h,) }"#
);

golden!(
    idx_array_2d,
    |(x, i): (Array, Array)| x.index(&i),
    (
        f(&[3, 4], 74),
        Array::from_vec(vec![0i32, 1, 2, 0], &[2, 2])
    ),
    r#"{ lambda ; a:f32[3,4] b:i32[2,2]. let
    c:bool[2,2] = lt b 0:i32[]
    d:i32[2,2] = add b 3:i32[]
    e:i32[2,2] = select_n c b d
    f:i32[2,2,1] = broadcast_in_dim[broadcast_dimensions=(0, 1)] e
    g:f32[2,2,4] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1, 4)
      unique_indices=False
    ] a f
  in (g,) }"#
);

golden!(
    idx_newaxis_only,
    |x: Array| x.index(NEWAXIS),
    f(&[3, 4], 75),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[1,3,4] = broadcast_in_dim[broadcast_dimensions=(1, 2)] a
  in (b,) }"#
);

golden!(
    idx_slice_cols,
    |x: Array| x.index(idx![.., 1..3]),
    f(&[3, 4], 76),
    r#"{ lambda ; a:f32[3,4]. let
    b:f32[3,2] = slice[limit_indices=(3, 3) start_indices=(0, 1) strides=None] a
  in (b,) }"#
);

golden!(
    at_set_array_slice,
    |(x, i): (Array, Array)| x.at(idx![&i, 1..3]).set(0.0),
    (f(&[3, 4], 77), ia(&[0, 2])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 3:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:i32[2,1] = broadcast_in_dim 1:i32[]
    h:i32[2,2] = concatenate[dimension=1] f g
    i:f32[2,2] = broadcast_in_dim 0.0:f32[]
    j:f32[3,4] = scatter[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=False
      update_consts=()
      update_jaxpr=None
    ] a h i
  in (j,) }"#
);

golden!(
    at_max_2d,
    |(x, i): (Array, Array)| x.at(idx![.., &i]).max(0.5),
    (f(&[3, 4], 78), ia(&[0, 2])),
    r#"{ lambda ; a:f32[3,4] b:i32[2]. let
    c:bool[2] = lt b 0:i32[]
    d:i32[2] = add b 4:i32[]
    e:i32[2] = select_n c b d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[3,2] = broadcast_in_dim 0.5:f32[]
    h:f32[3,4] = scatter-max[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(0,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=False
      update_consts=()
      update_jaxpr={ lambda ; i:f32[] j:f32[]. let k:f32[] = max i j in (k,) }
    ] a f g
  in (h,) }"#
);

golden!(
    at_min_int,
    |x: Array| x.at(idx![1, 2]).min(0.5),
    f(&[3, 4], 79),
    r#"{ lambda ; a:f32[3,4]. let
    b:i32[1] = broadcast_in_dim 1:i32[]
    c:i32[1] = broadcast_in_dim 2:i32[]
    d:i32[2] = concatenate[dimension=0] b c
    e:f32[3,4] = scatter-min[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr={ lambda ; f:f32[] g:f32[]. let h:f32[] = min f g in (h,) }
    ] a d 0.5:f32[]
  in (e,) }"#
);

golden!(
    at_set_rev,
    |x: Array| x
        .at(idx![..;-1])
        .set(jnp::arange_dtype(4, DType::F32).unwrap()),
    f(&[4], 80),
    r#"{ lambda ; a:f32[4]. let
    b:f32[4] = iota[dimension=0 dtype=float32 shape=(4,) sharding=None] 
    c:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
    d:i32[4] = mul -1:i32[] c
    e:i32[4] = add 3:i32[] d
    f:i32[4] = rev[dimensions=(0,)] e
    g:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f
    h:f32[4] = rev[dimensions=(0,)] b
    i:f32[4] = scatter[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=True
      mode=GatherScatterMode.FILL_OR_DROP
      unique_indices=True
      update_consts=()
      update_jaxpr=None
    ] a g h
  in (i,) }"#
);

golden!(
    idx_dynamic_two,
    |(x, i, j): (Array, Array, Array)| x.index(idx![&i, &j]),
    (f(&[3, 4], 81), Array::weak(1), Array::weak(2)),
    r#"{ lambda ; a:f32[3,4] b:i32[] c:i32[]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    e:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    f:bool[] = lt d 0:i32[]
    g:i32[] = add d 3:i32[]
    h:i32[] = select_n f d g
    i:bool[] = lt e 0:i32[]
    j:i32[] = add e 4:i32[]
    k:i32[] = select_n i e j
    l:f32[1,1] = dynamic_slice[slice_sizes=(1, 1)] a h k
    m:f32[] = squeeze[dimensions=(0, 1)] l
  in (m,) }"#
);

golden!(
    full_like,
    |x: Array| jnp::full_like(&x, &Array::weak(2.0)).unwrap(),
    f(&[2, 3], 82),
    r#"{ lambda ; a:f32[2,3]. let b:f32[2,3] = broadcast_in_dim 2.0:f32[] in (b,) }"#
);

golden!(
    ones_i32,
    |_: ()| jnp::ones(&[2, 2], DType::I32).unwrap(),
    (),
    r#"{ lambda ; . let a:i32[2,2] = broadcast_in_dim 1:i32[] in (a,) }"#
);

golden!(
    cumsum_bool,
    |x: Array| jnp::cumsum(&x.gt(0.0), None).unwrap(),
    f(&[4], 83),
    r#"{ lambda ; a:f32[4]. let
    b:bool[4] = gt a 0.0:f32[]
    c:i32[4] = jit[
      name=cumsum
      jaxpr={ lambda ; b:bool[4]. let
          d:i32[4] = convert_element_type[new_dtype=int32 weak_type=False] b
          c:i32[4] = cumsum[axis=0 reverse=False] d
        in (c,) }
    ] b
  in (c,) }"#
);

golden!(
    sort_int,
    |i: Array| jnp::sort(&i, Some(-1)).unwrap(),
    ia(&[3, 1, 2]),
    r#"{ lambda ; a:i32[3]. let
    b:i32[3] = jit[
      name=sort
      jaxpr={ lambda ; a:i32[3]. let
          b:i32[3] = sort[dimension=0 is_stable=True num_keys=1] a
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    softmax_axis0,
    |x: Array| nn::softmax(&x, 0).unwrap(),
    f(&[2, 3], 84),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[3] = reduce_max[axes=(0,)] a
    c:f32[3] = max -inf:f32[] b
    d:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] c
    e:f32[1,3] = stop_gradient d
    f:f32[2,3] = sub a e
    g:f32[2,3] = exp f
    h:f32[3] = reduce_sum[axes=(0,) out_sharding=None] g
    i:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] h
    j:f32[2,3] = div g i
  in (j,) }"#
);

golden!(
    logsumexp_keep,
    |x: Array| jnp::logsumexp(&x, 0, true).unwrap(),
    f(&[2, 3], 85),
    r#"{ lambda ; a:f32[2,3]. let
    b:f32[3] = reduce_max[axes=(0,)] a
    c:f32[3] = max -inf:f32[] b
    d:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] c
    e:bool[1,3] = is_finite d
    f:f32[1,3] = broadcast_in_dim 0.0:f32[]
    g:f32[1,3] = select_n e f d
    h:f32[1,3] = stop_gradient g
    i:f32[2,3] = sub a h
    j:f32[2,3] = exp i
    k:f32[3] = reduce_sum[axes=(0,) out_sharding=None] j
    l:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] k
    m:f32[1,3] = abs l
    n:f32[1,3] = log m
    o:f32[1,3] = add n h
  in (o,) }"#
);

golden!(
    var_keepdims,
    |x: Array| jnp::var(&x, 1, 0, true).unwrap(),
    f(&[2, 3], 86),
    r#"let _var = { lambda ; a:f32[2,3] b:i32[]. let
    c:f32[2] = reduce_sum[axes=(1,) out_sharding=None] a
    d:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] c
    e:f32[2,1] = div d 3.0:f32[]
    f:f32[2,3] = sub a e
    g:f32[2,3] = square f
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    i:f32[] = sub 3.0:f32[] h
    j:f32[2] = reduce_sum[axes=(1,) out_sharding=None] g
    k:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] j
    l:f32[2,1] = div k i
    m:bool[] = gt i 0.0:f32[]
    n:f32[2,1] = jit[
      name=_where
      jaxpr={ lambda ; m:bool[] l:f32[2,1] o:f32[]. let
          p:f32[] = convert_element_type[new_dtype=float32 weak_type=False] o
          q:f32[2,1] = broadcast_in_dim p
          n:f32[2,1] = select_n m q l
        in (n,) }
    ] m l nan:f32[]
  in (n,) } in
{ lambda ; r:f32[2,3]. let
    s:f32[2,1] = jit[name=_var jaxpr=_var] r 0:i32[]
  in (s,) }"#
);

golden!(
    gelu_int,
    |i: Array| nn::gelu(&i, true).unwrap(),
    ia(&[1, 2]),
    r#"{ lambda ; a:i32[2]. let
    b:f32[2] = convert_element_type[new_dtype=float32 weak_type=False] a
    c:f32[2] = integer_pow[y=3] b
    d:f32[2] = mul 0.044714998453855515:f32[] c
    e:f32[2] = add b d
    f:f32[2] = mul 0.7978845834732056:f32[] e
    g:f32[2] = tanh f
    h:f32[2] = add 1.0:f32[] g
    i:f32[2] = mul 0.5:f32[] h
    j:f32[2] = mul b i
  in (j,) }"#
);

golden!(
    tril_batch,
    |x: Array| jnp::tril(&x, 0).unwrap(),
    f(&[2, 3, 3], 87),
    r#"{ lambda ; a:f32[2,3,3]. let
    b:f32[2,3,3] = jit[
      name=tril
      jaxpr={ lambda ; a:f32[2,3,3]. let
          c:i32[3,3] = iota[dimension=0 dtype=int32 shape=(3, 3) sharding=None] 
          d:i32[3,3] = add c 0:i32[]
          e:i32[3,3] = iota[dimension=1 dtype=int32 shape=(3, 3) sharding=None] 
          f:bool[3,3] = ge d e
          g:bool[2,3,3] = broadcast_in_dim[broadcast_dimensions=(1, 2)] f
          h:f32[2,3,3] = broadcast_in_dim 0.0:f32[]
          b:f32[2,3,3] = select_n g h a
        in (b,) }
    ] a
  in (b,) }"#
);

golden!(
    einsum_int,
    |(a, b): (Array, Array)| jnp::einsum("ij,jk->ik", &[a, b]).unwrap(),
    (
        Array::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]),
        f(&[3, 4], 91)
    ),
    r#"{ lambda ; a:i32[2,3] b:f32[3,4]. let
    c:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
  in (c,) }"#
);

golden!(
    take_int,
    |(x, i): (Array, Array)| jnp::take(&x, &i, Some(0)).unwrap(),
    (Array::from_vec(vec![1i32, 2, 3, 4], &[4]), ia(&[0, 2])),
    r#"{ lambda ; a:i32[4] b:i32[2]. let
    c:i32[2] = jit[
      name=_take
      jaxpr={ lambda ; a:i32[4] b:i32[2]. let
          d:bool[2] = lt b 0:i32[]
          e:i32[2] = add b 4:i32[]
          f:i32[2] = jit[
            name=_where
            jaxpr={ lambda ; d:bool[2] e:i32[2] b:i32[2]. let
                f:i32[2] = select_n d b e
              in (f,) }
          ] d e b
          g:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] f
          c:i32[2] = gather[
            dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
            fill_value=-2147483648
            indices_are_sorted=False
            mode=GatherScatterMode.FILL_OR_DROP
            slice_sizes=(1,)
            unique_indices=False
          ] a g
        in (c,) }
    ] a b
  in (c,) }"#
);

golden!(
    pad_int,
    |x: Array| jnp::pad(&x, &[(1, 1)], &Array::weak(0)).unwrap(),
    Array::from_vec(vec![1i32, 2], &[2]),
    r#"{ lambda ; a:i32[2]. let
    b:i32[4] = jit[
      name=_pad
      jaxpr={ lambda ; a:i32[2] c:i32[]. let
          d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
          b:i32[4] = pad[padding_config=((np.int64(1), np.int64(1), 0),)] a d
        in (b,) }
    ] a 0:i32[]
  in (b,) }"#
);

golden!(
    einsum_chain,
    |(a, b, d): (Array, Array, Array)| jnp::einsum("ij,jk,kl->il", &[a, b, d]).unwrap(),
    (f(&[2, 3], 88), f(&[3, 4], 89), f(&[4, 2], 90)),
    r#"{ lambda ; a:f32[2,3] b:f32[3,4] c:f32[4,2]. let
    d:f32[2,3] = dot_general[
      dimension_numbers=(([0], [1]), ([], []))
      preferred_element_type=float32
    ] c b
    e:f32[2,2] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] a d
  in (e,) }"#
);
golden!(
    einsum_bilinear,
    |(x, w, y): (Array, Array, Array)| jnp::einsum("bi,ij,bj->b", &[x, w, y]).unwrap(),
    (f(&[3, 2], 92), f(&[2, 4], 93), f(&[3, 4], 94)),
    r#"{ lambda ; a:f32[3,2] b:f32[2,4] c:f32[3,4]. let
    d:f32[3,2] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] c b
    e:f32[3] = dot_general[
      dimension_numbers=(([1], [1]), ([0], [0]))
      preferred_element_type=float32
    ] a d
  in (e,) }"#
);

golden!(
    einsum_attention,
    |(q, k): (Array, Array)| jnp::einsum("bhqd,bhkd->bhqk", &[q, k]).unwrap(),
    (f(&[2, 2, 3, 4], 95), f(&[2, 2, 5, 4], 96)),
    r#"{ lambda ; a:f32[2,2,3,4] b:f32[2,2,5,4]. let
    c:f32[2,2,3,5] = dot_general[
      dimension_numbers=(([3], [3]), ([0, 1], [0, 1]))
      preferred_element_type=float32
    ] a b
  in (c,) }"#
);

golden!(
    einsum_outer_t,
    |(a, b): (Array, Array)| jnp::einsum("i,j->ji", &[a, b]).unwrap(),
    (f(&[3], 97), f(&[2], 98)),
    r#"{ lambda ; a:f32[3] b:f32[2]. let
    c:f32[2,3] = dot_general[
      dimension_numbers=(([], []), ([], []))
      preferred_element_type=float32
    ] b a
  in (c,) }"#
);
