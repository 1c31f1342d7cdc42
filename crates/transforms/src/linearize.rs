//! Reverse mode: `linearize`, `vjp`, `grad` and `value_and_grad`.
//!
//! `linearize` is partial evaluation by trace levels: a staging main is
//! pushed (not as the dynamic trace) and a jvp main above it. The tangent
//! inputs are staging tracers, so every operation that touches a tangent is
//! recorded in the linear jaxpr, while primal operations see only values
//! from below and run (or are staged by an enclosing `jit`) right away.
//! Primal values a tangent operation needs become the linear jaxpr's
//! constants: the residuals.
//!
//! Higher-order primitives (`jit`, `cond`, `scan`) see their tangents on
//! a higher trace than their primals and split themselves: a known
//! primitive on the primals that also returns residuals, and a linear one
//! on residuals and tangents (`jvp/control.rs`,
//! [`crate::partial_eval::linearize_jaxpr`]). `while` cannot split; its
//! transpose reports JAX's error.

use crate::jvp::jvp_flat;
use crate::transpose::backward_pass;
use crate::util::{has_tangent, zeros_like};
use jaxon_trace::core::new_main;
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::staging::{Staged, StagingTrace};
use jaxon_trace::{lax, Array, Pytree, TreeDef};

/// A linearized function: its linear jaxpr from the float inputs' tangents
/// to the non-zero output tangents, and the residuals.
pub struct Linearized {
    /// The linear jaxpr; `staged.consts` are the residuals.
    pub staged: Staged,
    /// Per primal input: whether it has a tangent input in the jaxpr.
    pub in_mask: Vec<bool>,
    /// Per primal output: whether the jaxpr computes its tangent (else it
    /// is zero).
    pub out_mask: Vec<bool>,
    /// The primal inputs, for shapes of zero cotangents.
    pub primals_in: Vec<Array>,
    /// The primal outputs.
    pub primals_out: Vec<Array>,
}

/// Linearizes a flat function at `primals`.
pub fn linearize_flat(
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    primals: &[Array],
) -> Result<Linearized> {
    let mask: Vec<bool> = primals.iter().map(|p| has_tangent(p.dtype())).collect();
    linearize_flat_masked(f, primals, &mask)
}

/// [`linearize_flat`] with tangent inputs only for the float inputs
/// marked in `mask` (the others are held constant).
pub fn linearize_flat_masked(
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    primals: &[Array],
    mask: &[bool],
) -> Result<Linearized> {
    let guard = new_main(Box::new(StagingTrace::new()));
    let main = guard.main().clone();
    let staging = StagingTrace::of(&main).expect("a staging main");
    let in_mask: Vec<bool> = primals
        .iter()
        .zip(mask.iter().chain(std::iter::repeat(&false)))
        .map(|(p, m)| *m && has_tangent(p.dtype()))
        .collect();
    let tangents: Vec<Option<Array>> = primals
        .iter()
        .zip(&in_mask)
        .map(|(p, m)| {
            if !m {
                return Ok(None);
            }
            if !jaxon_trace::dynshape::is_dynamic(p) {
                return Ok(Some(staging.new_arg(&main, p.aval().clone())));
            }
            // A dynamic tangent's dimensions are the primal's, captured
            // (as residuals) by the linear jaxpr.
            let dims = jaxon_trace::dynshape::dim_tracers_except(p, None)
                .iter()
                .map(|d| jaxon_trace::core::full_raise(&main, d))
                .collect::<Result<Vec<_>>>()?;
            staging
                .new_arg_with_dims(&main, p.aval().clone(), dims)
                .map(Some)
        })
        .collect::<Result<Vec<_>>>()?;
    let (primals_out, t_out) = jvp_flat(f, primals, &tangents)?;
    let out_mask: Vec<bool> = t_out.iter().map(Option::is_some).collect();
    let nonzero: Vec<Array> = t_out.into_iter().flatten().collect();
    let staged = staging.finish(&main, &nonzero)?;
    Ok(Linearized {
        staged,
        in_mask,
        out_mask,
        primals_in: primals.to_vec(),
        primals_out,
    })
}

impl Linearized {
    /// Applies the linear map to input tangents (one per float input).
    pub fn jvp(&self, tangents: &[Array]) -> Result<Vec<Array>> {
        let outs =
            jaxon_trace::interpret::eval_jaxpr(&self.staged.jaxpr, &self.staged.consts, tangents)?;
        let mut it = outs.into_iter();
        self.primals_out
            .iter()
            .zip(&self.out_mask)
            .map(|(p, m)| {
                if *m {
                    it.next()
                        .ok_or_else(|| Error::InvalidArgument("linear jaxpr outputs".into()))
                } else {
                    zeros_like(p)
                }
            })
            .collect()
    }

    /// Applies the transposed map: output cotangents to input cotangents
    /// (zeros for inputs without tangents).
    pub fn vjp(&self, cts_out: &[Array]) -> Result<Vec<Array>> {
        if cts_out.len() != self.out_mask.len() {
            return Err(Error::InvalidArgument(format!(
                "vjp: {} cotangents for {} outputs",
                cts_out.len(),
                self.out_mask.len()
            )));
        }
        let cts: Vec<Option<Array>> = cts_out
            .iter()
            .zip(&self.out_mask)
            .filter(|(_, m)| **m)
            .map(|(c, _)| Some(c.clone()))
            .collect();
        let lin = vec![true; self.staged.jaxpr.invars.len()];
        let cts_in = backward_pass(&self.staged.jaxpr, &self.staged.consts, &lin, &[], &cts)?;
        let mut it = cts_in.into_iter();
        self.primals_in
            .iter()
            .zip(&self.in_mask)
            .map(|(p, m)| {
                let ct = if *m { it.next().flatten() } else { None };
                ct.map_or_else(|| zeros_like(p), Ok)
            })
            .collect()
    }
}

/// `linearize(f, primals)`: the primal outputs and the linear map (as a
/// jaxpr with residuals) of `f` at `primals`.
pub fn linearize<I: Pytree, O: Pytree>(
    f: impl FnOnce(I) -> O,
    primals: I,
) -> Result<(O, Linearized)> {
    let (leaves, def) = primals.flatten();
    catch_flat(|| {
        let mut out_def = None;
        let lin = linearize_flat(
            |ins| {
                let (l, d) = f(I::unflatten(&def, ins)?).flatten();
                out_def = Some(d);
                Ok(l)
            },
            &leaves,
        )?;
        let out = O::unflatten(&out_def.expect("traced"), lin.primals_out.clone())?;
        Ok((out, lin))
    })
}

/// The pullback returned by [`vjp`].
pub struct Pullback<I> {
    lin: Linearized,
    in_def: TreeDef,
    out_def: TreeDef,
    _in: std::marker::PhantomData<fn() -> I>,
}

impl<I: Pytree> Pullback<I> {
    /// Maps output cotangents (structured like the outputs) to input
    /// cotangents (structured like the inputs).
    pub fn call<O: Pytree>(&self, cts: O) -> Result<I> {
        let (leaves, def) = cts.flatten();
        if def != self.out_def {
            return Err(Error::InvalidArgument(format!(
                "vjp: cotangent structure {def:?} does not match the output structure {:?}",
                self.out_def
            )));
        }
        catch_flat(|| I::unflatten(&self.in_def, self.lin.vjp(&leaves)?))
    }
}

/// `vjp(f, primals)`: the outputs of `f` and its pullback.
pub fn vjp<I: Pytree, O: Pytree>(f: impl FnOnce(I) -> O, primals: I) -> Result<(O, Pullback<I>)> {
    let (_, in_def) = primals.flatten();
    let (out, lin) = linearize(f, primals)?;
    let (_, out_def) = out.flatten();
    Ok((
        out,
        Pullback {
            lin,
            in_def,
            out_def,
            _in: std::marker::PhantomData,
        },
    ))
}

/// `value_and_grad(f)(x)`: `f(x)` (a scalar) and its gradient, structured
/// like `x`.
pub fn value_and_grad<I: Pytree, F: Fn(I) -> Array>(f: F) -> impl Fn(I) -> Result<(Array, I)> {
    move |x: I| {
        let (leaves, def) = x.flatten();
        catch_flat(|| {
            let lin = linearize_flat(|ins| Ok(vec![f(I::unflatten(&def, ins)?)]), &leaves)?;
            let y = lin.primals_out[0].clone();
            if !y.ty().shape.is_empty() || !has_tangent(y.dtype()) {
                return Err(Error::InvalidArgument(format!(
                    "grad requires a real scalar output, got {}",
                    jaxon_ir::shape::fmt_aval(y.aval())
                )));
            }
            let one = lax::convert_element_type(&Array::weak(1.0), y.dtype(), false)?;
            let g = lin.vjp(&[one])?;
            Ok((y, I::unflatten(&def, g)?))
        })
    }
}

/// `grad(f)(x)`: the gradient of a scalar function, structured like `x`.
pub fn grad<I: Pytree, F: Fn(I) -> Array>(f: F) -> impl Fn(I) -> Result<I> {
    let vg = value_and_grad(f);
    move |x: I| vg(x).map(|(_, g)| g)
}

/// The tangent outputs of `f` at `primals` for the given input tangents
/// (`None` = zero), computed as a linearization (primal work bound on the
/// current trace, the linear jaxpr evaluated on the tangents), so every
/// equation staged from it is either primal or linear in the tangents:
/// what `backward_pass` needs of a loop body or branch that recomputes
/// its primal (nested control flow splits too). Outputs without a
/// tangent are zeros.
pub(crate) fn linearized_tangents(
    f: impl FnOnce(Vec<Array>) -> Result<Vec<Array>>,
    primals: &[Array],
    tangents: &[Option<Array>],
) -> Result<Vec<Array>> {
    let mask: Vec<bool> = tangents.iter().map(Option::is_some).collect();
    let lin = linearize_flat_masked(f, primals, &mask)?;
    let ts: Vec<Array> = tangents
        .iter()
        .zip(&lin.in_mask)
        .filter(|(_, m)| **m)
        .map(|(t, _)| t.clone().expect("masked tangents are given"))
        .collect();
    lin.jvp(&ts)
}
