//! `jnp` odds and ends: broadcasting goldens (rank promotion and weak
//! promotion as JAX 0.10.2 prints them), `split` values, edge cases of
//! creation functions, and the errors bad arguments give.

use jaxon_ir::print::print_jaxpr;
use jaxon_ir::DType;
use jaxon_trace::numpy::{self as jnp, All, Sections};
use jaxon_trace::{jit, make_jaxpr, Array, Error};

fn f(shape: &[usize], seed: u64) -> Array {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(7);
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    Array::from_vec(v, shape)
}

fn text<I: jaxon_trace::Pytree, O: jaxon_trace::Pytree>(f: impl Fn(I) -> O, args: I) -> String {
    print_jaxpr(&make_jaxpr(f)(args).unwrap().jaxpr)
}

#[test]
fn rank_promotion_of_the_lower_rank_operand() {
    let t = text(|(x, y): (Array, Array)| x + y, (f(&[3], 1), f(&[2, 3], 2)));
    assert_eq!(
        t,
        "{ lambda ; a:f32[3] b:f32[2,3]. let
    c:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a
    d:f32[2,3] = add c b
  in (d,) }"
    );
    let t = text(|(x, y): (Array, Array)| x * y, (f(&[2, 1], 3), f(&[3], 4)));
    assert_eq!(
        t,
        "{ lambda ; a:f32[2,1] b:f32[3]. let
    c:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] b
    d:f32[2,3] = mul a c
  in (d,) }"
    );
}

#[test]
fn weak_float_argument_makes_an_int_array_weak_float() {
    let x = Array::from_vec((0..12).collect::<Vec<i32>>(), &[4, 1, 3]);
    let t = text(
        |(x, y): (Array, Array)| jnp::maximum(&x, &y).unwrap(),
        (x, Array::weak(2.5)),
    );
    assert_eq!(
        t,
        "{ lambda ; a:i32[4,1,3] b:f32[]. let
    c:f32[4,1,3] = convert_element_type[new_dtype=float32 weak_type=True] a
    d:f32[4,1,3] = max c b
  in (d,) }"
    );
}

#[test]
fn narrow_int_sum_widens_then_adds_a_literal() {
    let x = Array::from_vec(vec![3i8, -5], &[2]);
    let t = text(|x: Array| x.sum(All) + 1, x.clone());
    assert_eq!(
        t,
        "{ lambda ; a:i8[2]. let
    b:i32[2] = convert_element_type[new_dtype=int32 weak_type=False] a
    c:i32[] = reduce_sum[axes=(0,) out_sharding=None] b
    d:i32[] = add c 1:i32[]
  in (d,) }"
    );
    assert_eq!((x.sum(All) + 1).item::<i32>(), -1);
}

#[test]
fn broadcast_shape_errors_name_both_shapes() {
    let err = jnp::add(&f(&[2, 3], 5), &f(&[4], 6)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("2,3") && msg.contains('4'), "{msg}");
}

#[test]
fn split_values_eager_and_jit() {
    let x = f(&[3, 5], 7);
    let xs = x.to_vec::<f32>();
    let pieces = |x: Array| jnp::split(&x, Sections::At(vec![1, 4]), 1).unwrap();
    for (how, got) in [
        ("eager", pieces(x.clone())),
        ("jit", jit(pieces).call(x.clone()).unwrap()),
    ] {
        let bounds = [(0, 1), (1, 4), (4, 5)];
        assert_eq!(got.len(), 3, "{how}");
        for (p, &(lo, hi)) in got.iter().zip(&bounds) {
            assert_eq!(p.shape(), vec![3, hi - lo], "{how}");
            let want: Vec<f32> = (0..3)
                .flat_map(|r| (lo..hi).map(move |c| (r, c)))
                .map(|(r, c)| xs[r * 5 + c])
                .collect();
            assert_eq!(p.to_vec::<f32>(), want, "{how}");
        }
    }
    let halves = jnp::split(&x, Sections::Equal(3), 0).unwrap();
    assert_eq!(halves[2].to_vec::<f32>(), xs[10..].to_vec());
    assert!(matches!(
        jnp::split(&x, Sections::Equal(2), 1),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn creation_edge_cases() {
    assert_eq!(
        jnp::arange_range(3.0, 1.0, 1.0, None).unwrap().shape(),
        vec![0]
    );
    let one = jnp::linspace(&Array::weak(2.0), &Array::weak(9.0), 1, true, None).unwrap();
    assert_eq!(one.to_vec::<f32>(), vec![2.0]);
    let ints = jnp::linspace(
        &Array::weak(0.0),
        &Array::weak(4.0),
        5,
        true,
        Some(DType::I32),
    )
    .unwrap();
    assert_eq!(ints.to_vec::<i32>(), vec![0, 1, 2, 3, 4]);
    let t = jnp::tri(3, Some(2), 0, DType::I32).unwrap();
    assert_eq!(t.to_vec::<i32>(), vec![1, 0, 1, 1, 1, 1]);
    assert!(jnp::tril(&f(&[3], 8), 0).is_err());
}

#[test]
fn einsum_rejects_bad_subscripts() {
    let a = f(&[2, 3], 9);
    let b = f(&[4, 2], 10);
    for spec in ["ij,jk->ik", "ij->k", "ij,ij", "i...j->ij", "iij->j"] {
        let ops: Vec<Array> = if spec.contains(',') {
            vec![a.clone(), b.clone()]
        } else {
            vec![a.clone()]
        };
        assert!(jnp::einsum(spec, &ops).is_err(), "{spec} should fail");
    }
}

#[test]
fn einsum_matches_f64_loops() {
    // 'ijk,jl->ilk' on random inputs against a direct f64 loop.
    let a = f(&[2, 3, 4], 11);
    let b = f(&[3, 5], 12);
    let (av, bv) = (a.to_vec::<f32>(), b.to_vec::<f32>());
    let spec = |(a, b): (Array, Array)| jnp::einsum("ijk,jl->ilk", &[a, b]).unwrap();
    let eager = spec((a.clone(), b.clone()));
    let jitted = jit(spec).call((a, b)).unwrap();
    assert_eq!(eager.shape(), vec![2, 5, 4]);
    for got in [eager, jitted] {
        let g = got.to_vec::<f32>();
        for i in 0..2 {
            for l in 0..5 {
                for k in 0..4 {
                    let want: f64 = (0..3)
                        .map(|j| av[i * 12 + j * 4 + k] as f64 * bv[j * 5 + l] as f64)
                        .sum();
                    let x = g[i * 20 + l * 4 + k] as f64;
                    assert!((x - want).abs() < 1e-5, "{x} vs {want}");
                }
            }
        }
    }
}

#[test]
fn fill_functions_eager_and_jit() {
    let x = f(&[2, 3], 13);
    let fills = |x: Array| {
        vec![
            jnp::zeros_like(&x).unwrap(),
            jnp::ones_like(&x).unwrap(),
            jnp::full_like(&x, &Array::weak(-2.5)).unwrap(),
            jnp::full(&[2, 2], &Array::weak(7), Some(DType::I32)).unwrap(),
            jnp::ones(&[3], DType::F32).unwrap(),
        ]
    };
    for got in [fills(x.clone()), jit(fills).call(x).unwrap()] {
        assert_eq!(got[0].to_vec::<f32>(), vec![0.0; 6]);
        assert_eq!(got[1].to_vec::<f32>(), vec![1.0; 6]);
        assert_eq!(got[2].to_vec::<f32>(), vec![-2.5; 6]);
        assert_eq!(got[3].to_vec::<i32>(), vec![7; 4]);
        assert_eq!(got[4].to_vec::<f32>(), vec![1.0; 3]);
        assert!(got.iter().all(|a| !a.weak_type()));
    }
}
