//! Gradient entry points with JAX's options: `argnums` (which top-level
//! arguments to differentiate) and `has_aux` (an auxiliary output carried
//! alongside), and the pytree form of `linear_transpose`.
//!
//! `has_aux` is chosen by the function's return type ([`GradOutput`]): a
//! function returning `Array` has no aux, one returning `(Array, A)`
//! returns `A` next to the gradient.

use crate::linearize::linearize_flat;
use crate::transpose::backward_pass;
use crate::util::{has_tangent, zeros_like};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::pytree::NodeKind;
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{lax, Array, Pytree, TreeDef};

/// Which top-level arguments to differentiate (JAX's `argnums`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Argnums {
    /// The whole input: the gradient has the input's structure.
    All,
    /// One child of the input tuple: the gradient has that child's
    /// structure (JAX's `argnums=i`).
    One(usize),
    /// Several children: the gradient is a tuple of their structures (JAX's
    /// `argnums=(i, j)`).
    Many(Vec<usize>),
}

impl From<usize> for Argnums {
    fn from(i: usize) -> Argnums {
        Argnums::One(i)
    }
}

impl<const N: usize> From<[usize; N]> for Argnums {
    fn from(v: [usize; N]) -> Argnums {
        Argnums::Many(v.to_vec())
    }
}

impl From<&[usize]> for Argnums {
    fn from(v: &[usize]) -> Argnums {
        Argnums::Many(v.to_vec())
    }
}

/// What a differentiated function returns: a scalar `Array`, or a scalar
/// and an auxiliary pytree (JAX's `has_aux=True`).
pub trait GradOutput: Sized {
    /// The auxiliary output (`()` when there is none).
    type Aux: Pytree;
    /// The scalar and the aux.
    fn split(self) -> (Array, Self::Aux);
    /// The inverse of [`GradOutput::split`].
    fn join(value: Array, aux: Self::Aux) -> Self;
}

impl GradOutput for Array {
    type Aux = ();
    fn split(self) -> (Array, ()) {
        (self, ())
    }
    fn join(value: Array, _: ()) -> Array {
        value
    }
}

impl<A: Pytree> GradOutput for (Array, A) {
    type Aux = A;
    fn split(self) -> (Array, A) {
        self
    }
    fn join(value: Array, aux: A) -> (Array, A) {
        (value, aux)
    }
}

/// The leaf ranges of the selected top-level children of `def`, and the
/// structure of the gradient.
fn select(def: &TreeDef, argnums: &Argnums) -> Result<(Vec<std::ops::Range<usize>>, TreeDef)> {
    if *argnums == Argnums::All {
        return Ok((std::iter::once(0..def.num_leaves()).collect(), def.clone()));
    }
    let children = match def {
        TreeDef::Node(_, c) => c,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "argnums {argnums:?} needs a tuple of arguments, got structure {def:?}"
            )))
        }
    };
    let mut starts = Vec::with_capacity(children.len());
    let mut s = 0;
    for c in children {
        starts.push(s..s + c.num_leaves());
        s += c.num_leaves();
    }
    let pick = |i: usize| -> Result<(std::ops::Range<usize>, TreeDef)> {
        let r = starts.get(i).cloned().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "argnums: argument {i} out of range for {} arguments",
                children.len()
            ))
        })?;
        Ok((r, children[i].clone()))
    };
    match argnums {
        Argnums::All => unreachable!("handled above"),
        Argnums::One(i) => {
            let (r, d) = pick(*i)?;
            Ok((vec![r], d))
        }
        Argnums::Many(v) => {
            let mut ranges = Vec::new();
            let mut defs = Vec::new();
            for &i in v {
                let (r, d) = pick(i)?;
                ranges.push(r);
                defs.push(d);
            }
            Ok((ranges, TreeDef::Node(NodeKind::Tuple, defs)))
        }
    }
}

/// `value_and_grad` with options: returns `f`'s output (the value, and
/// the aux when `f` returns one) and the gradient with respect to the
/// arguments `argnums` selects, structured as `G`.
///
/// ```ignore
/// let vg = value_and_grad_with(|(x, y, z): (Array, Array, Array)| loss(x, y, z), [0, 2]);
/// let (value, (gx, gz)): (Array, (Array, Array)) = vg((x, y, z))?;
/// ```
pub fn value_and_grad_with<I, O, G, F>(
    f: F,
    argnums: impl Into<Argnums>,
) -> impl Fn(I) -> Result<(O, G)>
where
    I: Pytree,
    O: GradOutput,
    G: Pytree,
    F: Fn(I) -> O,
{
    let argnums = argnums.into();
    move |x: I| {
        let (leaves, def) = x.flatten();
        catch_flat(|| {
            let (ranges, g_def) = select(&def, &argnums)?;
            let selected: Vec<Array> = ranges
                .iter()
                .flat_map(|r| leaves[r.clone()].iter().cloned())
                .collect();
            let mut aux_def = None;
            let lin = linearize_flat(
                |sel| {
                    let mut all = leaves.clone();
                    let mut it = sel.into_iter();
                    for r in &ranges {
                        for slot in &mut all[r.clone()] {
                            *slot = it.next().expect("one per selected leaf");
                        }
                    }
                    let (y, aux) = f(I::unflatten(&def, all)?).split();
                    let (aux_leaves, d) = aux.flatten();
                    aux_def = Some(d);
                    let mut outs = vec![y];
                    outs.extend(aux_leaves);
                    Ok(outs)
                },
                &selected,
            )?;
            let y = lin.primals_out[0].clone();
            if !y.ty().shape.is_empty() || !has_tangent(y.dtype()) {
                return Err(Error::InvalidArgument(format!(
                    "grad requires a real scalar output, got {}",
                    jaxon_ir::shape::fmt_aval(y.aval())
                )));
            }
            let mut cts = vec![lax::convert_element_type(
                &Array::weak(1.0),
                y.dtype(),
                false,
            )?];
            for a in &lin.primals_out[1..] {
                cts.push(zeros_like(a)?);
            }
            let g = lin.vjp(&cts)?;
            let aux = <O::Aux as Pytree>::unflatten(
                &aux_def.expect("traced"),
                lin.primals_out[1..].to_vec(),
            )?;
            let out = O::join(y, aux);
            Ok((out, G::unflatten(&g_def, g)?))
        })
    }
}

/// `grad` with `argnums`: the gradient of a scalar function with respect
/// to the selected arguments.
pub fn grad_with<I, G, F>(f: F, argnums: impl Into<Argnums>) -> impl Fn(I) -> Result<G>
where
    I: Pytree,
    G: Pytree,
    F: Fn(I) -> Array,
{
    let vg = value_and_grad_with::<I, Array, G, F>(f, argnums);
    move |x| vg(x).map(|(_, g)| g)
}

/// `grad(f, has_aux=True)` with `argnums`: `f` returns `(scalar, aux)`;
/// the result is `(gradient, aux)`.
pub fn grad_and_aux<I, A, G, F>(f: F, argnums: impl Into<Argnums>) -> impl Fn(I) -> Result<(G, A)>
where
    I: Pytree,
    A: Pytree,
    G: Pytree,
    F: Fn(I) -> (Array, A),
{
    let vg = value_and_grad_with::<I, (Array, A), G, F>(f, argnums);
    move |x| vg(x).map(|((_, aux), g)| (g, aux))
}

/// `linear_transpose(f, primals)` over pytrees: `f` must be linear; the
/// result maps output cotangents (structured like `f`'s output) to input
/// cotangents (structured like `primals`), zeros instantiated.
pub fn linear_transpose_tree<I, O, F>(f: F, primals: I) -> Result<impl Fn(O) -> Result<I>>
where
    I: Pytree,
    O: Pytree,
    F: FnOnce(I) -> O,
{
    let (leaves, in_def) = primals.flatten();
    let avals: Vec<_> = leaves.iter().map(|p| p.aval().clone()).collect();
    let mut out_def = None;
    let staged = catch_flat(|| {
        trace_flat(StageMode::Base, &avals, |ins| {
            let (outs, d) = f(I::unflatten(&in_def, ins)?).flatten();
            out_def = Some(d);
            Ok(outs)
        })
    })?;
    let out_def = out_def.expect("traced");
    Ok(move |cts: O| -> Result<I> {
        let (ct_leaves, d) = cts.flatten();
        if d != out_def {
            return Err(Error::InvalidArgument(format!(
                "linear_transpose: cotangent structure {d:?} does not match the output {out_def:?}"
            )));
        }
        catch_flat(|| {
            let lin = vec![true; staged.jaxpr.invars.len()];
            let cts: Vec<Option<Array>> = ct_leaves.into_iter().map(Some).collect();
            let out = backward_pass(&staged.jaxpr, &staged.consts, &lin, &[], &cts)?;
            let g = out
                .into_iter()
                .zip(&leaves)
                .map(|(ct, p)| ct.map_or_else(|| zeros_like(p), Ok))
                .collect::<Result<Vec<_>>>()?;
            I::unflatten(&in_def, g)
        })
    })
}
