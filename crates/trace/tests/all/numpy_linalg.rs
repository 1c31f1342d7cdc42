//! `jnp::linalg` and `scipy::linalg` on random well-conditioned matrices,
//! checked by identities (`a x = b`, `a inv(a) = I`, `det = prod(eig)`,
//! `P L U = a`, `Q R = a`, `U S Vt = a`, `pinv = inv` for square full-rank
//! matrices), and `cholesky`/`cho_factor`/`cho_solve` staged as JAX 0.10.2
//! stages them.

use jaxon_ir::print::print_jaxpr;
use jaxon_trace::lax::linalg::mt;
use jaxon_trace::numpy::{self as jnp, linalg};
use jaxon_trace::{make_jaxpr, scipy, Array};

fn rand(shape: &[usize], seed: u64) -> Vec<f64> {
    let n: usize = shape.iter().product();
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// A random `n x n` f64 matrix plus `4 I`.
fn well(n: usize, seed: u64) -> Array {
    let mut v = rand(&[n, n], seed);
    for i in 0..n {
        v[i * n + i] += 4.0;
    }
    Array::from_vec(v, &[n, n])
}

fn close(a: &Array, b: &Array, tol: f64, what: &str) {
    let (x, y) = (a.to_vec::<f64>(), b.to_vec::<f64>());
    assert_eq!(x.len(), y.len(), "{what}");
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert!((p - q).abs() <= tol, "{what}[{i}]: {p} vs {q}");
    }
}

fn mm(a: &Array, b: &Array) -> Array {
    jnp::matmul(a, b).unwrap()
}

fn eye(n: usize) -> Array {
    jnp::eye(n, None, 0, jaxon_ir::DType::F64).unwrap()
}

#[test]
fn solve_inv_det() {
    let a = well(4, 1);
    let b = Array::from_vec(rand(&[4, 2], 2), &[4, 2]);
    let x = linalg::solve(&a, &b).unwrap();
    close(&mm(&a, &x), &b, 1e-12, "a x = b");
    let v = Array::from_vec(rand(&[4], 3), &[4]);
    let xv = linalg::solve(&a, &v).unwrap();
    assert_eq!(xv.shape(), vec![4]);
    close(
        &mm(&a, &linalg::inv(&a).unwrap()),
        &eye(4),
        1e-12,
        "a inv(a)",
    );
    let s = jnp::divide(
        &jnp::add(&a, &mt(&a).unwrap()).unwrap(),
        &Array::scalar(2.0f64),
    )
    .unwrap();
    let w = linalg::eigvalsh(&s).unwrap().to_vec::<f64>();
    let det = linalg::det(&s).unwrap().item::<f64>();
    assert!((det - w.iter().product::<f64>()).abs() < 1e-9 * det.abs());
    let (sign, logdet) = linalg::slogdet(&a).unwrap();
    let d = linalg::det(&a).unwrap().item::<f64>();
    assert!((sign.item::<f64>() * logdet.item::<f64>().exp() - d).abs() < 1e-9 * d.abs());
    close(
        &linalg::matrix_power(&a, 3).unwrap(),
        &mm(&mm(&a, &a), &a),
        1e-10,
        "a^3",
    );
    close(
        &mm(&linalg::matrix_power(&a, -1).unwrap(), &a),
        &eye(4),
        1e-12,
        "a^-1 a",
    );
}

#[test]
fn factorizations_reconstruct() {
    let a = well(4, 5);
    let (p, l, u) = scipy::linalg::lu(&a).unwrap();
    close(&mm(&p, &mm(&l, &u)), &a, 1e-12, "P L U");
    let (q, r) = linalg::qr(&a, "reduced").unwrap();
    close(&mm(&q, &r), &a, 1e-12, "Q R");
    let t = Array::from_vec(rand(&[5, 3], 6), &[5, 3]);
    let (u, s, vt) = linalg::svd(&t, false).unwrap();
    let us = jnp::multiply(&u, &s).unwrap();
    close(&mm(&us, &vt), &t, 1e-12, "U S Vt");
    let pinv = linalg::pinv(&a).unwrap();
    close(&pinv, &linalg::inv(&a).unwrap(), 1e-10, "pinv = inv");
    let x = linalg::lstsq(&t, &Array::from_vec(rand(&[5], 7), &[5])).unwrap();
    assert_eq!(x.shape(), vec![3]);
    let sv = linalg::svdvals(&t).unwrap();
    let two = linalg::matrix_norm(&t, "2").unwrap().item::<f64>();
    assert!((two - sv.to_vec::<f64>()[0]).abs() < 1e-12);
    let fro = linalg::matrix_norm(&t, "fro").unwrap().item::<f64>();
    let want: f64 = sv.to_vec::<f64>().iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((fro - want).abs() < 1e-12);
    assert!(linalg::matrix_norm(&t, "bogus").is_err());
    assert!(linalg::qr(&t, "bogus").is_err());
}

#[test]
fn cholesky_and_triangular_solves() {
    let g = Array::from_vec(rand(&[4, 4], 8), &[4, 4]);
    let a = jnp::add(&mm(&g, &mt(&g).unwrap()), &eye(4)).unwrap();
    let l = linalg::cholesky(&a).unwrap();
    close(&mm(&l, &mt(&l).unwrap()), &a, 1e-12, "L L^T");
    let c = scipy::linalg::cho_factor(&a).unwrap();
    let b = Array::from_vec(rand(&[4, 2], 9), &[4, 2]);
    let x = scipy::linalg::cho_solve(&c, &b).unwrap();
    close(&mm(&a, &x), &b, 1e-12, "cho_solve");
    let y = scipy::linalg::solve_triangular(&l, &b, 1, true, false).unwrap();
    close(&mm(&mt(&l).unwrap(), &y), &b, 1e-12, "L^T y = b");
    let (lu, piv) = scipy::linalg::lu_factor(&a).unwrap();
    assert_eq!((lu.shape(), piv.shape()), (vec![4, 4], vec![4]));
    assert!(linalg::cholesky(&Array::from_vec(rand(&[2, 3], 1), &[2, 3])).is_err());
}

#[test]
fn cho_factor_and_cho_solve_stage_as_jax() {
    let a = Array::from_vec(vec![0.0f32; 16], &[4, 4]);
    let b = Array::from_vec(vec![0.0f32; 8], &[4, 2]);
    let j = make_jaxpr(|(a, b): (Array, Array)| {
        let c = scipy::linalg::cho_factor(&a).unwrap();
        scipy::linalg::cho_solve(&c, &b).unwrap()
    })((a, b))
    .unwrap();
    assert_eq!(
        print_jaxpr(&j.jaxpr),
        r#"{ lambda ; a:f32[4,4] b:f32[4,2]. let
    c:f32[4,4] = jit[
      name=_cholesky
      jaxpr={ lambda ; a:f32[4,4]. let
          d:f32[4,4] = cholesky a
          e:i32[4,4] = iota[dimension=0 dtype=int32 shape=(4, 4) sharding=None] 
          f:i32[4,4] = add e 0:i32[]
          g:i32[4,4] = iota[dimension=1 dtype=int32 shape=(4, 4) sharding=None] 
          h:bool[4,4] = ge f g
          i:f32[4,4] = broadcast_in_dim 0.0:f32[]
          c:f32[4,4] = select_n h i d
        in (c,) }
    ] a
    j:f32[4,2] = jit[
      name=_cho_solve
      jaxpr={ lambda ; c:f32[4,4] b:f32[4,2]. let
          k:f32[4,2] = triangular_solve[
            conjugate_a=False
            left_side=True
            lower=True
            transpose_a=False
            unit_diagonal=False
          ] c b
          j:f32[4,2] = triangular_solve[
            conjugate_a=False
            left_side=True
            lower=True
            transpose_a=True
            unit_diagonal=False
          ] c k
        in (j,) }
    ] c b
  in (j,) }"#
    );
}

#[test]
fn cholesky_stages_as_jax() {
    let x = Array::from_vec(vec![0.0f32; 16], &[4, 4]);
    let j = make_jaxpr(|a: Array| linalg::cholesky(&a).unwrap())(x).unwrap();
    assert_eq!(
        print_jaxpr(&j.jaxpr),
        "{ lambda ; a:f32[4,4]. let
    b:f32[4,4] = jit[
      name=cholesky
      jaxpr={ lambda ; a:f32[4,4]. let
          c:f32[4,4] = transpose[permutation=(1, 0)] a
          d:f32[4,4] = add a c
          e:f32[4,4] = div d 2.0:f32[]
          f:f32[4,4] = cholesky e
          g:i32[4,4] = iota[dimension=0 dtype=int32 shape=(4, 4) sharding=None] 
          h:i32[4,4] = add g 0:i32[]
          i:i32[4,4] = iota[dimension=1 dtype=int32 shape=(4, 4) sharding=None] 
          j:bool[4,4] = ge h i
          k:f32[4,4] = broadcast_in_dim 0.0:f32[]
          b:f32[4,4] = select_n j k f
        in (b,) }
    ] a
  in (b,) }"
    );
}
