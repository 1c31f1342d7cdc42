//! `lax` functions built on transformations: `map` (a carry-free `scan`,
//! `vmap` inside chunks when batched) and `custom_root` (a root solver
//! differentiated implicitly, JAX's `custom_jvp` construction).

use crate::custom::{custom_jvp, trace_call};
use crate::jvp::jvp_flat;
use crate::vmap;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::Jaxpr;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::interpret::eval_jaxpr;
use jaxon_trace::{lax, raise, scan, Array, Pytree, TreeDef};
use std::sync::Arc;

/// A copy of a pytree (its leaves are shared).
fn copy<X: Pytree>(x: &X) -> Result<X> {
    let (leaves, def) = x.flatten();
    X::unflatten(&def, leaves)
}

/// Rows `start..limit` of axis 0.
fn rows(x: &Array, start: usize, limit: usize) -> Result<Array> {
    let s = x.try_shape()?;
    let mut lo = vec![0; s.len()];
    let mut hi = s.clone();
    lo[0] = start;
    hi[0] = limit;
    lax::slice(x, &lo, &hi, None)
}

fn invalid(what: &str, m: String) -> Error {
    Error::InvalidArgument(format!("{what}: {m}"))
}

/// `lax.map(f, xs, batch_size)`: `f` applied to every slice along the
/// leading axis of the leaves of `xs`, the results stacked: a `scan`
/// without carry. With `batch_size = Some(b)` the leading `n - n % b`
/// slices are `vmap`ped `b` at a time inside the scan and the `n % b`
/// remaining ones by one more `vmap` after it, as JAX does.
///
/// ```
/// use jaxon_trace::Array;
/// use jaxon_transforms::lax_fns::map;
///
/// let xs = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]);
/// let ys = map(|x: Array| &x * &x, xs, Some(2))?;
/// assert_eq!(ys.to_vec::<f32>(), [1.0, 4.0, 9.0, 16.0, 25.0]);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn map<X: Pytree, Y: Pytree>(
    f: impl Fn(X) -> Y,
    xs: X,
    batch_size: Option<usize>,
) -> Result<Y> {
    let Some(b) = batch_size else {
        return scan(|(), x: X| ((), f(x)), (), xs, None, false).map(|((), ys)| ys);
    };
    if b == 0 {
        return Err(invalid("map", "batch_size must be positive".into()));
    }
    let (leaves, def) = xs.flatten();
    let n = match leaves.first() {
        Some(l) => *l
            .try_shape()?
            .first()
            .ok_or_else(|| invalid("map", "xs leaves need a leading axis".into()))?,
        None => return Err(invalid("map", "xs has no array leaves".into())),
    };
    let (batches, rem) = (n / b, n % b);
    let cut = batches * b;
    let mut scan_leaves = Vec::with_capacity(leaves.len());
    let mut rem_leaves = Vec::with_capacity(leaves.len());
    for l in &leaves {
        let s = l.try_shape()?;
        if s.first() != Some(&n) {
            return Err(invalid(
                "map",
                format!("every xs leaf needs leading axis {n}, got shape {s:?}"),
            ));
        }
        let lead = rows(l, 0, cut)?;
        let mut shape = vec![batches, b];
        shape.extend_from_slice(&s[1..]);
        scan_leaves.push(lax::reshape(&lead, &shape)?);
        if rem > 0 {
            rem_leaves.push(rows(l, cut, n)?);
        }
    }
    let vf = vmap(&f);
    let body = |(), x: X| -> ((), Y) {
        match vf.call(x) {
            Ok(y) => ((), y),
            Err(e) => raise(e),
        }
    };
    let ((), ys) = scan(body, (), X::unflatten(&def, scan_leaves)?, None, false)?;
    let (ys, y_def) = ys.flatten();
    let mut out: Vec<Array> = ys
        .iter()
        .map(|y| {
            let s = y.try_shape()?;
            let mut shape = vec![s[0] * s[1]];
            shape.extend_from_slice(&s[2..]);
            lax::reshape(y, &shape)
        })
        .collect::<Result<_>>()?;
    if rem > 0 {
        let (tail, _) = vf.call(X::unflatten(&def, rem_leaves)?)?.flatten();
        out = out
            .iter()
            .zip(&tail)
            .map(|(a, t)| lax::concatenate(&[a.clone(), t.clone()], 0))
            .collect::<Result<_>>()?;
    }
    Y::unflatten(&y_def, out)
}

/// A solver of [`custom_root`]: given a function and a starting point (or
/// right-hand side), returns a pytree of the starting point's structure.
pub type RootSolver<'a, X> = &'a dyn Fn(&dyn Fn(X) -> X, X) -> X;

/// `f` staged on `leaves` of structure `def`, required to return `def`.
fn stage<X: Pytree>(
    what: &str,
    h: &dyn Fn(X) -> X,
    def: &TreeDef,
    leaves: &[Array],
) -> Result<(Arc<Jaxpr>, Vec<Array>)> {
    let (j, consts, out_def) = trace_call::<X, X>(h, def, leaves)?;
    if &out_def != def {
        return Err(invalid(
            "custom_root",
            format!("{what} must return initial_guess's structure {def:?}, got {out_def:?}"),
        ));
    }
    check_types(what, &j, leaves)?;
    Ok((Arc::new(j), consts))
}

/// The outputs of `j` have the shapes and dtypes of `leaves`.
fn check_types(what: &str, j: &Jaxpr, leaves: &[Array]) -> Result<()> {
    for (o, l) in j.outvars.iter().zip(leaves) {
        let got = j.atom_aval(o);
        let (want, got_ty) = (l.ty(), got.as_ref().map(|a| a.array()));
        if got_ty.map(|g| (&g.shape, g.dtype)) != Some((&want.shape, want.dtype)) {
            return Err(invalid(
                "custom_root",
                format!(
                    "{what} must return initial_guess's types {}, got {}",
                    fmt_aval(l.aval()),
                    got.as_ref().map_or_else(|| "?".to_string(), fmt_aval)
                ),
            ));
        }
    }
    Ok(())
}

fn run(j: &Jaxpr, parts: &[&[Array]]) -> Vec<Array> {
    let args: Vec<Array> = parts.iter().flat_map(|p| p.iter().cloned()).collect();
    match eval_jaxpr(j, &[], &args) {
        Ok(v) => v,
        Err(e) => raise(e),
    }
}

/// `lax.custom_root(f, initial_guess, solve, tangent_solve)`: the root `x`
/// of `f(x) = 0` that `solve(f, initial_guess)` finds, differentiated
/// implicitly instead of through the solver. For `f` depending on
/// parameters `θ` (values it closes over), `∂x = -(∂f/∂x)⁻¹ ∂f/∂θ ∂θ`,
/// where `tangent_solve(g, y)` solves the linear `g(t) = y` for `g` the
/// jvp of `f` at the root (for a scalar `f`, `y / g(1)`). Staged as a
/// `custom_jvp_call` of the solve, as JAX does; reverse mode transposes
/// that jvp, so `tangent_solve` must be linear in `y`.
///
/// ```
/// use jaxon_trace::Array;
/// use jaxon_transforms::{grad, lax_fns::custom_root};
///
/// // sqrt(a) as the root of x^2 - a, by Newton's method.
/// let sqrt = |a: Array| {
///     let f = |x: Array| &x * &x - &a;
///     let newton = |f: &dyn Fn(Array) -> Array, x0: Array| {
///         let mut x = x0;
///         for _ in 0..30 {
///             x = &x - &(f(x.clone()) / (&x * 2.0));
///         }
///         x
///     };
///     let scalar = |g: &dyn Fn(Array) -> Array, y: Array| &y / &g(Array::scalar(1.0f64));
///     custom_root(f, Array::scalar(1.0f64), &newton, &scalar).unwrap()
/// };
/// let g = grad(sqrt)(Array::scalar(2.0f64))?;
/// assert!((g.item::<f64>() - 0.5 / 2f64.sqrt()).abs() < 1e-12);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn custom_root<X: Pytree>(
    f: impl Fn(X) -> X,
    initial_guess: X,
    solve: RootSolver<'_, X>,
    tangent_solve: RootSolver<'_, X>,
) -> Result<X> {
    let (guess, def) = initial_guess.flatten();
    let (f_j, f_c) = stage("f", &f, &def, &guess)?;
    let (s_j, s_c) = stage("solve", &|x| solve(&f, x), &def, &guess)?;
    // linearize_and_solve(x, b) = tangent_solve(jvp of f at x, b).
    let (pair_leaves, pair_def) = (
        X::unflatten(&def, guess.clone())?,
        X::unflatten(&def, guess.clone())?,
    )
        .flatten();
    let l_and_s = |(x, b): (X, X)| -> X {
        let at_x = |t: X| -> X {
            match crate::jvp(&f, copy(&x).unwrap_or_else(|e| raise(e)), t) {
                Ok((_, o)) => o,
                Err(e) => raise(e),
            }
        };
        tangent_solve(&at_x, b)
    };
    let (l_j, l_c, l_out) = trace_call::<(X, X), X>(l_and_s, &pair_def, &pair_leaves)?;
    if l_out != def {
        return Err(invalid(
            "custom_root",
            format!("tangent_solve must return initial_guess's structure {def:?}, got {l_out:?}"),
        ));
    }
    check_types("tangent_solve", &l_j, &guess)?;
    let l_j = Arc::new(l_j);
    let s_j2 = s_j.clone();
    let primal = move |(_, sc, _, g): (Vec<Array>, Vec<Array>, Vec<Array>, Vec<Array>)| {
        run(&s_j2, &[&sc, &g])
    };
    let rule =
        move |(fc, sc, lc, g): (Vec<Array>, Vec<Array>, Vec<Array>, Vec<Array>),
              (fct, _, _, _): (Vec<Array>, Vec<Array>, Vec<Array>, Vec<Array>)| {
            let sol = run(&s_j, &[&sc, &g]);
            // The tangent of f(θ, x*) in θ at the root, then the linear solve.
            let tans: Vec<Option<Array>> = fc
                .iter()
                .zip(fct)
                .map(|(c, t)| c.dtype().is_float().then_some(t))
                .collect();
            let fj = f_j.clone();
            let s2 = sol.clone();
            let (_, rhs) = match jvp_flat(move |p| Ok(run(&fj, &[&p, &s2])), &fc, &tans) {
                Ok(r) => r,
                Err(e) => raise(e),
            };
            let rhs: Vec<Array> = rhs
                .into_iter()
                .zip(&sol)
                .map(|(r, s)| match r {
                    Some(r) => r,
                    None => jaxon_trace::numpy::zeros_like(s).unwrap_or_else(|e| raise(e)),
                })
                .collect();
            let dx = run(&l_j, &[&lc, &sol, &rhs]);
            let dx = dx
                .iter()
                .map(|d| lax::neg(d).unwrap_or_else(|e| raise(e)))
                .collect();
            (sol, dx)
        };
    let root = custom_jvp(primal).name("_custom_root").defjvp(rule);
    let out = root.call((f_c, s_c, l_c, guess))?;
    X::unflatten(&def, out)
}
