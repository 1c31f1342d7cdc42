//! `jax.scipy.linalg`: `solve_triangular`, `cho_factor`/`cho_solve`,
//! `lu_factor` and `lu`, staged as JAX stages them (`_cholesky` masks the
//! factor's upper triangle, `_cho_solve` is two triangular solves).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;
use crate::lax::linalg as la;
use crate::numpy as jnp;
use jaxon_ir::primitive::TriangularSolveParams;
use jaxon_ir::DType;

pub use super::linalg_more::{
    cholesky, circulant, companion, det, eigh, fiedler, hadamard, hankel, helmert, hilbert, inv,
    leslie, lu_solve, qr, schur, solve, svd, toeplitz,
};

/// `jax.scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)`
/// for a matrix `b` (`trans`: 0 = `a`, 1 or 2 = `a^T`).
pub fn solve_triangular(
    a: &Array,
    b: &Array,
    trans: u8,
    lower: bool,
    unit_diagonal: bool,
) -> Result<Array> {
    let vector = b.ndim() + 1 == a.ndim();
    let b2 = if vector {
        lax::expand_dims(b, &[b.ndim()])?
    } else {
        b.clone()
    };
    let x = la::triangular_solve(
        a,
        &b2,
        TriangularSolveParams {
            left_side: true,
            lower,
            transpose_a: trans != 0,
            conjugate_a: trans == 2,
            unit_diagonal,
        },
    )?;
    if vector {
        lax::squeeze(&x, &[x.ndim() - 1])
    } else {
        Ok(x)
    }
}

/// `jax.scipy.linalg.cho_factor(a, lower=True)`: the masked lower factor.
pub fn cho_factor(a: &Array) -> Result<Array> {
    jnp::jitted("_cholesky", vec![a.clone()], |x| {
        jnp::linalg::mask_tril(&la::cholesky(&x[0])?)
    })
}

/// `jax.scipy.linalg.cho_solve((c, lower=True), b)`.
pub fn cho_solve(c: &Array, b: &Array) -> Result<Array> {
    jnp::jitted("_cho_solve", vec![c.clone(), b.clone()], |x| {
        let y = solve_triangular(&x[0], &x[1], 0, true, false)?;
        solve_triangular(&x[0], &y, 1, true, false)
    })
}

/// `jax.scipy.linalg.lu_factor(a)`: `(lu, pivots)`.
pub fn lu_factor(a: &Array) -> Result<(Array, Array)> {
    let (lu, piv, _) = la::lu(a)?;
    Ok((lu, piv))
}

/// `jax.scipy.linalg.lu(a)`: `(p, l, u)` with `a = p l u`.
pub fn lu(a: &Array) -> Result<(Array, Array, Array)> {
    let s = a.try_shape()?;
    let (m, n) = match s.as_slice() {
        [.., m, n] => (*m, *n),
        _ => return Err(Error::InvalidArgument("lu: expected a matrix".into())),
    };
    let k = m.min(n);
    let (f, _, perm) = la::lu(a)?;
    let rank = s.len();
    let mut lim = s.clone();
    lim[rank - 1] = k;
    let lpart = lax::slice(&f, &vec![0; rank], &lim, None)?;
    let l = jnp::add(&jnp::tril(&lpart, -1)?, &la::eye_like(a, m, k)?)?;
    let mut lim = s.clone();
    lim[rank - 2] = k;
    let u = jnp::triu(&lax::slice(&f, &vec![0; rank], &lim, None)?, 0)?;
    // p[perm[i], i] = 1: the transpose of the row-selection matrix.
    let iota = lax::iota(perm.dtype(), m)?;
    let sel = jnp::equal(&lax::expand_dims(&perm, &[perm.ndim()])?, &iota)?;
    let p = la::mt(&lax::convert_element_type(&sel, a.dtype(), false)?)?;
    Ok((p, l, u))
}

/// `jax.scipy.linalg.block_diag(*arrs)`: the arrays (scalars and 1-D
/// arrays count as one row) along the diagonal of one zero matrix, in
/// their promoted dtype; no arrays give a `[1, 0]` matrix, as in JAX.
pub fn block_diag(arrays: &[Array]) -> Result<Array> {
    if arrays.is_empty() {
        return jnp::zeros(&[1, 0], DType::F32);
    }
    let mut mats = Vec::with_capacity(arrays.len());
    for a in arrays {
        if a.ndim() > 2 {
            return Err(Error::InvalidArgument(format!(
                "block_diag: arguments must have at most 2 dimensions, got {}",
                jaxon_ir::shape::fmt_aval(a.aval())
            )));
        }
        mats.push(jnp::atleast_2d(a)?);
    }
    let refs: Vec<&Array> = mats.iter().collect();
    let mats = jnp::promote::promote_dtypes("block_diag", &refs)?;
    let widths = mats
        .iter()
        .map(|m| Ok(m.try_shape()?[1]))
        .collect::<Result<Vec<usize>>>()?;
    let total: usize = widths.iter().sum();
    let mut before = 0;
    let mut rows = Vec::with_capacity(mats.len());
    for (m, w) in mats.iter().zip(&widths) {
        let zero = lax::convert_element_type(&Array::weak(0.0), m.dtype(), false)?;
        let cfg = [(0, 0, 0), (before as i64, (total - before - w) as i64, 0)];
        rows.push(lax::pad(m, &zero, &cfg)?);
        before += w;
    }
    lax::concatenate(&rows, 0)
}

/// The Padé numerator and denominator terms `(U, V)` of degree `m`
/// (3, 5, 7, 9 or 13) for `exp(A)`, as scipy's (and JAX's) `expm` builds
/// them.
fn pade(a: &Array, m: usize) -> Result<(Array, Array)> {
    let b: &[f64] = match m {
        3 => &[120., 60., 12., 1.],
        5 => &[30240., 15120., 3360., 420., 30., 1.],
        7 => &[
            17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.,
        ],
        9 => &[
            17643225600.,
            8821612800.,
            2075673600.,
            302702400.,
            30270240.,
            2162160.,
            110880.,
            3960.,
            90.,
            1.,
        ],
        _ => &[
            64764752532480000.,
            32382376266240000.,
            7771770303897600.,
            1187353796428800.,
            129060195264000.,
            10559470521600.,
            670442572800.,
            33522128640.,
            1323241920.,
            40840800.,
            960960.,
            16380.,
            182.,
            1.,
        ],
    };
    let shape = a.try_shape()?;
    let n = shape[shape.len() - 1];
    let eye = jnp::broadcast_to(&jnp::eye(n, None, 0, a.dtype())?, &shape)?;
    let scaled = |c: f64, x: &Array| jnp::multiply(&Array::weak(c), x);
    // powers[k] = A^(2k), k = 0..
    let a2 = jnp::matmul(a, a)?;
    let mut powers = vec![eye, a2.clone()];
    let top = if m == 13 { 3 } else { m / 2 };
    while powers.len() <= top {
        let next = if powers.len() == 2 {
            jnp::matmul(&a2, &a2)?
        } else {
            jnp::matmul(&powers[powers.len() - 1], &a2)?
        };
        powers.push(next);
    }
    // sum_k c[k] A^(2k) over the listed (coefficient, power) pairs.
    let combo = |terms: &[(usize, usize)]| -> Result<Array> {
        let mut acc: Option<Array> = None;
        for &(ci, p) in terms {
            let t = scaled(b[ci], &powers[p])?;
            acc = Some(match acc {
                Some(s) => jnp::add(&s, &t)?,
                None => t,
            });
        }
        acc.ok_or_else(|| Error::InvalidArgument("expm: empty Padé sum".into()))
    };
    if m == 13 {
        let a6 = &powers[3];
        let u_hi = jnp::matmul(a6, &combo(&[(13, 3), (11, 2), (9, 1)])?)?;
        let u = jnp::matmul(
            a,
            &jnp::add(&u_hi, &combo(&[(7, 3), (5, 2), (3, 1), (1, 0)])?)?,
        )?;
        let v_hi = jnp::matmul(a6, &combo(&[(12, 3), (10, 2), (8, 1)])?)?;
        let v = jnp::add(&v_hi, &combo(&[(6, 3), (4, 2), (2, 1), (0, 0)])?)?;
        return Ok((u, v));
    }
    let half = m / 2;
    let odd: Vec<(usize, usize)> = (0..=half).rev().map(|k| (2 * k + 1, k)).collect();
    let even: Vec<(usize, usize)> = (0..=half).rev().map(|k| (2 * k, k)).collect();
    let u = jnp::matmul(a, &combo(&odd)?)?;
    Ok((u, combo(&even)?))
}

/// `jax.scipy.linalg.expm(A)`: the matrix exponential of the last two
/// (square) axes by scaling and squaring with a Padé approximant, as JAX
/// does: `A` is scaled by `2^-s` until its 1-norm is small, the Padé
/// degree (3–13 in f64, 3–7 in f32) is chosen from the 1-norm, and the
/// result is squared `s` times (NaN when `s` exceeds 16). Each branch is
/// computed and the chosen one selected, so the function has no control
/// flow and differentiates and batches like its operations.
pub fn expm(a: &Array) -> Result<Array> {
    let shape = a.try_shape()?;
    if shape.len() < 2 || shape[shape.len() - 1] != shape[shape.len() - 2] {
        return Err(Error::InvalidArgument(format!(
            "expm: expected a square matrix (or a batch of them), got {}",
            jaxon_ir::shape::fmt_aval(a.aval())
        )));
    }
    let a = jnp::promote::promote_dtypes_inexact("expm", &[a])?.remove(0);
    let dt = a.dtype();
    let (maxnorm, conds, degrees): (f64, &[f64], &[usize]) = match dt {
        DType::F64 => (
            5.371920351148152,
            &[
                1.495585217958292e-2,
                2.53939833006323e-1,
                9.504178996162932e-1,
                2.097847961257068,
            ],
            &[3, 5, 7, 9, 13],
        ),
        DType::F32 => (
            3.92572478313866,
            &[4.258730016922831e-1, 1.880152677804762],
            &[3, 5, 7],
        ),
        other => {
            return Err(Error::InvalidArgument(format!(
                "expm: A.dtype={other:?} is not supported (f32 or f64)"
            )))
        }
    };
    let r = shape.len();
    // The 1-norm of each matrix: the largest column sum of |A|.
    let norm = jnp::max(&jnp::sum(&jnp::abs(&a)?, r - 2, false)?, r - 2, false)?;
    let lit = |v: f64| lax::convert_element_type(&Array::weak(v), dt, false);
    let s = jnp::maximum(
        &lit(0.0)?,
        &jnp::floor(&jnp::log2(&jnp::divide(&norm, &lit(maxnorm)?)?)?)?,
    )?;
    let as_matrix = |x: &Array| lax::expand_dims(x, &[r - 2, r - 1]);
    let s_m = as_matrix(&s)?;
    let scaled = jnp::divide(&a, &jnp::exp2(&s_m)?)?;
    let conds = Array::from_host(jaxon_ir::HostArray::from_f64(dt, &[conds.len()], conds)?);
    let idx = jnp::digitize(&norm, &conds, false)?;
    let (mut us, mut vs) = (Vec::new(), Vec::new());
    for &m in degrees {
        let (u, v) = pade(&scaled, m)?;
        us.push(u);
        vs.push(v);
    }
    let which = jnp::broadcast_to(&as_matrix(&idx)?, &shape)?;
    let u = lax::select_n(&which, &us)?;
    let v = lax::select_n(&which, &vs)?;
    let p = jnp::add(&u, &v)?;
    let q = jnp::subtract(&v, &u)?;
    let mut out = jnp::linalg::solve(&q, &p)?;
    const MAX_SQUARINGS: usize = 16;
    for i in 0..MAX_SQUARINGS {
        let square = jnp::matmul(&out, &out)?;
        let go = jnp::less(&lit(i as f64)?, &s_m)?;
        out = jnp::where_(&go, &square, &out)?;
    }
    let too_many = jnp::greater(&s_m, &lit(MAX_SQUARINGS as f64)?)?;
    jnp::where_(&too_many, &lit(f64::NAN)?, &out)
}
