//! Evaluating a jaxpr by binding its equations: the jaxpr runs on whatever
//! traces its inputs belong to (eagerly, staged into another jaxpr, or under
//! a transformation). Transformations use it to apply themselves to jaxprs.
//!
//! Invariant: every variable is read after it is bound; a jaxpr that breaks
//! this is reported as an error, never a panic.

use crate::array::Array;
use crate::core::bind;
use crate::error::{Error, Result};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, HostArray, Jaxpr};

/// The array a literal stands for.
pub fn literal_array(l: &jaxon_ir::Literal) -> Array {
    let host = HostArray::scalar(l.dtype, l.as_f64());
    let host = match l.value {
        // f64 cannot carry every 64-bit integer exactly.
        jaxon_ir::Scalar::Int(i) if l.dtype == jaxon_ir::DType::I64 => {
            HostArray::new(Vec::new(), jaxon_ir::Storage::I64(vec![i])).unwrap_or(host)
        }
        jaxon_ir::Scalar::UInt(u) if l.dtype == jaxon_ir::DType::U64 => {
            HostArray::new(Vec::new(), jaxon_ir::Storage::U64(vec![u])).unwrap_or(host)
        }
        jaxon_ir::Scalar::Complex(re, im) => {
            let z = [jaxon_ir::num_complex::Complex64::new(re, im)];
            HostArray::from_c128(l.dtype, &[], &z).unwrap_or(host)
        }
        _ => host,
    };
    Array::from_host(host)
}

/// Evaluates `jaxpr` on `consts` and `args` by binding every equation.
pub fn eval_jaxpr(jaxpr: &Jaxpr, consts: &[Array], args: &[Array]) -> Result<Vec<Array>> {
    if consts.len() != jaxpr.constvars.len() || args.len() != jaxpr.invars.len() {
        return Err(Error::InvalidArgument(format!(
            "jaxpr takes {} consts and {} arguments, got {} and {}",
            jaxpr.constvars.len(),
            jaxpr.invars.len(),
            consts.len(),
            args.len()
        )));
    }
    let mut env: Vec<Option<Array>> = vec![None; jaxpr.vars.len()];
    for (v, x) in jaxpr
        .constvars
        .iter()
        .zip(consts)
        .chain(jaxpr.invars.iter().zip(args))
    {
        env[v.index()] = Some(x.clone());
    }
    let read = |env: &[Option<Array>], a: &Atom| -> Result<Array> {
        match a {
            Atom::Lit(l) => Ok(literal_array(l)),
            Atom::Var(v) => env.get(v.index()).and_then(|x| x.clone()).ok_or_else(|| {
                Error::InvalidArgument(format!("jaxpr reads unbound variable {v:?}"))
            }),
        }
    };
    for eqn in &jaxpr.eqns {
        let ins = eqn
            .inputs
            .iter()
            .map(|a| read(&env, a))
            .collect::<Result<Vec<_>>>()?;
        let outs = bind(&eqn.primitive, &ins)?;
        for (b, x) in eqn.outputs.iter().zip(outs) {
            if let Binder::Var(v) = b {
                env[v.index()] = Some(x);
            }
        }
    }
    jaxpr.outvars.iter().map(|a| read(&env, a)).collect()
}

/// Evaluates a closed jaxpr by binding its equations.
pub fn eval_closed_jaxpr(closed: &ClosedJaxpr, args: &[Array]) -> Result<Vec<Array>> {
    let consts: Vec<Array> = closed
        .consts
        .iter()
        .cloned()
        .map(Array::from_host)
        .collect();
    eval_jaxpr(&closed.jaxpr, &consts, args)
}
