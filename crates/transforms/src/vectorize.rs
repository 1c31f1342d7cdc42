//! `jnp.vectorize`: a function of core-shaped arrays applied over every
//! broadcast leading ("loop") axis of its arguments, by nested `vmap`s.
//!
//! Invariants, as JAX's implementation: a signature `(m,n),(n)->(m)` names
//! each argument's trailing core axes; the loop axes (everything before
//! them) broadcast against each other; size-1 loop axes are squeezed and
//! left unmapped (so a primitive sees an unbatched operand rather than a
//! broadcast copy), and a loop axis no argument maps is restored as size 1
//! on every output. Without a signature every axis is a loop axis and the
//! function sees scalars.

use crate::vmap;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{lax, Array};
use std::collections::HashMap;

type CoreDims = Vec<String>;

/// A parsed gufunc signature: each input's and each output's core axes.
#[derive(Clone, Debug, PartialEq)]
struct Signature {
    inputs: Vec<CoreDims>,
    outputs: Vec<CoreDims>,
}

fn bad(sig: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("vectorize: signature {sig:?} is not valid: {why}"))
}

fn parse_list(sig: &str, text: &str) -> Result<Vec<CoreDims>> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let r = rest.trim_start();
        let r = r
            .strip_prefix('(')
            .ok_or_else(|| bad(sig, "each argument's core axes must be in parentheses"))?;
        let close = r.find(')').ok_or_else(|| bad(sig, "a ')' is missing"))?;
        let dims: CoreDims = r[..close]
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect();
        if let Some(d) = dims
            .iter()
            .find(|d| !d.chars().all(|c| c.is_alphanumeric() || c == '_'))
        {
            return Err(bad(sig, &format!("axis name {d:?} is not a word")));
        }
        out.push(dims);
        let after = r[close + 1..].trim_start();
        if after.is_empty() {
            return Ok(out);
        }
        rest = after
            .strip_prefix(',')
            .ok_or_else(|| bad(sig, "arguments must be separated by ','"))?;
    }
}

impl Signature {
    fn parse(sig: &str) -> Result<Signature> {
        let (ins, outs) = sig
            .split_once("->")
            .ok_or_else(|| bad(sig, "'->' is missing"))?;
        Ok(Signature {
            inputs: parse_list(sig, ins)?,
            outputs: parse_list(sig, outs)?,
        })
    }
}

/// A function vectorized by [`vectorize`]; apply it with
/// [`Vectorized::call`].
pub struct Vectorized<F> {
    f: F,
    signature: Option<Signature>,
}

/// `jnp.vectorize(f, signature=...)`: `f` takes and returns arrays of the
/// core shapes the signature names (scalars without one); the result maps
/// it over every leading axis of the arguments, broadcast NumPy-style.
///
/// ```
/// use jaxon_trace::Array;
/// use jaxon_transforms::vectorize::vectorize;
///
/// // A matrix-vector product, vectorized over a stack of matrices.
/// let mv = vectorize(
///     |xs: &[Array]| Ok(vec![jaxon_trace::numpy::matmul(&xs[0], &xs[1])?]),
///     Some("(m,n),(n)->(m)"),
/// )?;
/// let a = Array::from_vec((0..12).map(|i| i as f32).collect(), &[2, 2, 3]);
/// let v = Array::from_vec(vec![1f32, 0.0, -1.0], &[3]);
/// let y = mv.call(&[a, v])?;
/// assert_eq!(y[0].shape(), vec![2, 2]);
/// assert_eq!(y[0].to_vec::<f32>(), [-2.0, -2.0, -2.0, -2.0]);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn vectorize<F>(f: F, signature: Option<&str>) -> Result<Vectorized<F>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    Ok(Vectorized {
        f,
        signature: signature.map(Signature::parse).transpose()?,
    })
}

impl<F: Fn(&[Array]) -> Result<Vec<Array>>> Vectorized<F> {
    /// Applies the vectorized function to `args`.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        let core: Vec<CoreDims> = match &self.signature {
            Some(s) if s.inputs.len() != args.len() => {
                return Err(Error::InvalidArgument(format!(
                    "vectorize: the signature names {} inputs, got {} arguments",
                    s.inputs.len(),
                    args.len()
                )))
            }
            Some(s) => s.inputs.clone(),
            None => vec![Vec::new(); args.len()],
        };
        // Sizes of the named core axes, consistent across arguments.
        let mut sizes: HashMap<String, usize> = HashMap::new();
        let mut loop_shapes = Vec::with_capacity(args.len());
        for (i, (a, dims)) in args.iter().zip(&core).enumerate() {
            let shape = a.try_shape()?;
            if shape.len() < dims.len() {
                return Err(Error::InvalidArgument(format!(
                    "vectorize: argument {i} of shape {shape:?} has fewer axes than its core axes {dims:?}"
                )));
            }
            let split = shape.len() - dims.len();
            for (name, &n) in dims.iter().zip(&shape[split..]) {
                if let Some(&m) = sizes.get(name) {
                    if m != n {
                        return Err(Error::InvalidArgument(format!(
                            "vectorize: core axis {name:?} has size {m} and {n} (argument {i} of shape {shape:?})"
                        )));
                    }
                }
                sizes.insert(name.clone(), n);
            }
            loop_shapes.push(shape[..split].to_vec());
        }
        let refs: Vec<&[usize]> = loop_shapes.iter().map(Vec::as_slice).collect();
        let broadcast = lax::broadcast_shapes(&refs)?;
        let rank = broadcast.len();
        // Squeeze each argument's size-1 loop axes; for each broadcast loop
        // axis, outermost first, which arguments map it.
        let mut squeezed = Vec::with_capacity(args.len());
        let mut mapped: Vec<Vec<bool>> = vec![Vec::new(); rank];
        for (a, ls) in args.iter().zip(&loop_shapes) {
            let ones: Vec<usize> = (0..ls.len()).filter(|&d| ls[d] == 1).collect();
            squeezed.push(if ones.is_empty() {
                a.clone()
            } else {
                lax::squeeze(a, &ones)?
            });
            let pad = rank - ls.len();
            for (d, m) in mapped.iter_mut().enumerate() {
                m.push(d >= pad && ls[d - pad] != 1);
            }
        }
        let levels: Vec<Vec<bool>> = mapped
            .iter()
            .filter(|m| m.contains(&true))
            .cloned()
            .collect();
        let expand: Vec<usize> = (0..rank).filter(|&d| !mapped[d].contains(&true)).collect();
        let outs = self.nest(&levels, squeezed)?;
        if let Some(s) = &self.signature {
            self.check_outputs(s, &outs, &sizes, rank - expand.len())?;
        }
        if expand.is_empty() {
            return Ok(outs);
        }
        outs.iter().map(|o| lax::expand_dims(o, &expand)).collect()
    }

    /// `f` under one `vmap` per level (outermost first): level `k` maps
    /// axis 0 of the arguments it marks and leaves the others alone.
    fn nest(&self, levels: &[Vec<bool>], args: Vec<Array>) -> Result<Vec<Array>> {
        let Some((level, inner)) = levels.split_first() else {
            return (self.f)(&args);
        };
        let axes: Vec<Option<isize>> = level.iter().map(|&m| m.then_some(0)).collect();
        vmap(|xs: Vec<Array>| jaxon_trace::error::ok_or_raise(self.nest(inner, xs)))
            .in_axes(crate::Axes::Leaves(axes))
            .call(args)
    }

    fn check_outputs(
        &self,
        s: &Signature,
        outs: &[Array],
        sizes: &HashMap<String, usize>,
        loop_rank: usize,
    ) -> Result<()> {
        if outs.len() != s.outputs.len() {
            return Err(Error::InvalidArgument(format!(
                "vectorize: the signature names {} outputs, the function returned {}",
                s.outputs.len(),
                outs.len()
            )));
        }
        for (k, (o, dims)) in outs.iter().zip(&s.outputs).enumerate() {
            let shape = o.try_shape()?;
            let core = shape.get(loop_rank..).unwrap_or(&[]);
            let fits = core.len() == dims.len()
                && dims
                    .iter()
                    .zip(core)
                    .all(|(name, &n)| sizes.get(name).is_none_or(|&m| m == n));
            if !fits {
                return Err(Error::InvalidArgument(format!(
                    "vectorize: output {k} has core shape {core:?}, but the signature says {dims:?}"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_parse_and_bad_ones_are_errors() {
        let s = Signature::parse("(m,n),(n)->(m)").unwrap();
        assert_eq!(s.inputs, vec![vec!["m", "n"], vec!["n"]]);
        assert_eq!(s.outputs, vec![vec!["m"]]);
        let s = Signature::parse("(),()->(),()").unwrap();
        assert_eq!(s.inputs, vec![Vec::<String>::new(); 2]);
        assert_eq!(s.outputs.len(), 2);
        for bad in ["(m,n)", "(m,n->(m)", "(m)(n)->()", "(m-1)->()"] {
            assert!(Signature::parse(bad).is_err(), "{bad}");
        }
    }
}
