//! The conformance checks that apply jaxon's own transforms to JAX's
//! jaxprs: `own_jvp` (forward mode with the recorded tangents) and
//! `own_grad` (reverse mode of `sum(out0)` with respect to every floating
//! input), compared with JAX's recorded results.

use crate::compare::{compare_arrays, Tolerance};
use crate::json::{Case, GradRecord, JvpRecord};
use jaxon_ir::primitive::ReduceOp as ReduceOpAlias;
use jaxon_ir::{parse_closed_jaxpr, ClosedJaxpr, HostArray};
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::{lax, Array};
use jaxon_transforms::jvp::jvp_flat;
use jaxon_transforms::linearize::linearize_flat;

fn parse(case: &Case) -> Result<ClosedJaxpr, String> {
    parse_closed_jaxpr(&case.jaxpr, case.consts.clone()).map_err(|e| format!("parse error at {e}"))
}

fn host(a: &Array) -> Result<HostArray, String> {
    a.try_to_host("conformance").map_err(|e| e.to_string())
}

/// jvp of the case's jaxpr along JAX's tangents.
pub fn own_jvp(case: &Case, rec: &JvpRecord, tol: Tolerance) -> Result<(), String> {
    let closed = parse(case)?;
    let primals: Vec<Array> = case.inputs.iter().cloned().map(Array::from_host).collect();
    let tangents: Vec<Option<Array>> = rec
        .tangents
        .iter()
        .map(|t| t.clone().map(Array::from_host))
        .collect();
    let (_, t_out) = jaxon_trace::catch_flat(|| {
        // JAX records a Python float's tangent as f64 where the primal is a
        // weak f32: the tangent takes its primal's float dtype.
        let tangents = tangents
            .iter()
            .zip(&primals)
            .map(|(t, p)| match t {
                Some(t)
                    if t.dtype() != p.dtype() && t.dtype().is_float() && p.dtype().is_float() =>
                {
                    lax::convert_element_type(t, p.dtype(), false).map(Some)
                }
                t => Ok(t.clone()),
            })
            .collect::<jaxon_trace::error::Result<Vec<_>>>()?;
        jvp_flat(|ins| eval_closed_jaxpr(&closed, &ins), &primals, &tangents)
    })
    .map_err(|e| format!("jvp error: {e}"))?;
    if t_out.len() != rec.out_tangents.len() {
        return Err(format!(
            "{} output tangents, expected {}",
            t_out.len(),
            rec.out_tangents.len()
        ));
    }
    for (i, (got, exp)) in t_out.iter().zip(&rec.out_tangents).enumerate() {
        let Some(exp) = exp else { continue };
        let got = match got {
            Some(g) => host(g)?,
            None => HostArray::zeros(exp.dtype(), exp.shape()),
        };
        compare_arrays(&got, exp, tol).map_err(|e| format!("output tangent {i}: {e}"))?;
    }
    Ok(())
}

/// The gradient of `sum(out0)` with respect to `argnums`.
pub fn own_grad(case: &Case, rec: &GradRecord, tol: Tolerance) -> Result<(), String> {
    let closed = parse(case)?;
    let inputs: Vec<Array> = case.inputs.iter().cloned().map(Array::from_host).collect();
    let primals: Vec<Array> = rec.argnums.iter().map(|&i| inputs[i].clone()).collect();
    let grads = jaxon_trace::catch_flat(|| {
        let lin = linearize_flat(
            |diff| {
                let mut args = inputs.clone();
                for (&i, d) in rec.argnums.iter().zip(diff) {
                    args[i] = d;
                }
                let outs = eval_closed_jaxpr(&closed, &args)?;
                let out0 = &outs[0];
                let axes: Vec<usize> = (0..out0.ndim()).collect();
                let total = if axes.is_empty() {
                    out0.clone()
                } else {
                    lax::reduce(ReduceOpAlias::Sum, out0, &axes)?
                };
                Ok(vec![total])
            },
            &primals,
        )?;
        let one = lax::convert_element_type(&Array::weak(1.0), lin.primals_out[0].dtype(), false)?;
        lin.vjp(&[one])
    })
    .map_err(|e| format!("grad error: {e}"))?;
    for (i, (got, exp)) in grads.iter().zip(&rec.outputs).enumerate() {
        compare_arrays(&host(got)?, exp, tol).map_err(|e| format!("gradient {i}: {e}"))?;
    }
    Ok(())
}

/// vmap of the case's jaxpr over JAX's batched inputs (batch size 3,
/// outputs batched at axis 0).
pub fn own_vmap(case: &Case, rec: &crate::json::VmapRecord, tol: Tolerance) -> Result<(), String> {
    let closed = parse(case)?;
    let args: Vec<Array> = rec.inputs.iter().cloned().map(Array::from_host).collect();
    let outs = jaxon_trace::catch_flat(|| {
        let outs = jaxon_transforms::batch::batch_flat(
            |ins| eval_closed_jaxpr(&closed, &ins),
            &args,
            &rec.in_axes,
            3,
            None,
        )?;
        // Move each batch dim to the front; an unbatched output is the same
        // for every member.
        outs.into_iter()
            .map(|(x, bdim)| match bdim {
                Some(0) => Ok(x),
                Some(d) => {
                    let mut perm: Vec<usize> = (0..x.ndim()).filter(|&i| i != d).collect();
                    perm.insert(0, d);
                    lax::transpose(&x, &perm)
                }
                None => {
                    let mut shape = vec![3];
                    shape.extend(x.try_shape()?);
                    let dims: Vec<usize> = (1..shape.len()).collect();
                    lax::broadcast_in_dim(&x, &shape, &dims)
                }
            })
            .collect::<jaxon_trace::Result<Vec<_>>>()
    })
    .map_err(|e| format!("vmap error: {e}"))?;
    if outs.len() != rec.outputs.len() {
        return Err(format!(
            "{} outputs, expected {}",
            outs.len(),
            rec.outputs.len()
        ));
    }
    for (i, (got, exp)) in outs.iter().zip(&rec.outputs).enumerate() {
        compare_arrays(&host(got)?, exp, tol).map_err(|e| format!("output {i}: {e}"))?;
    }
    Ok(())
}
