//! Input and output types of jaxprs with dynamic shapes (seed 003): lists
//! of `(aval, explicit)` pairs whose dimensions refer to other entries by
//! position — `DBIdx(i)` in input types (the `i`-th input), `InDBIdx(i)` /
//! `OutDBIdx(i)` in output types (the `i`-th input / output).
//!
//! Invariant: an index always points at a scalar integer entry of the list
//! it names; [`in_type`] and [`out_type`] check it.

use crate::aval::{Aval, Dim};
use crate::dtype::DType;
use crate::error::IrError;
use crate::jaxpr::{Atom, Jaxpr, Var};
use std::fmt;

/// A dimension in an input type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InDim {
    /// A static size.
    Const(usize),
    /// The value of input `i` of the same type.
    DBIdx(usize),
}

/// A dimension in an output type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutDim {
    /// A static size.
    Const(usize),
    /// The value of input `i`.
    InDBIdx(usize),
    /// The value of output `i`.
    OutDBIdx(usize),
}

/// An array type whose dimensions are `D`s.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DynAval<D> {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Vec<D>,
}

/// A jaxpr's input type: `(type, explicit)` per input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InType(pub Vec<(DynAval<InDim>, bool)>);

/// A jaxpr's output type: `(type, explicit)` per output.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OutType(pub Vec<(DynAval<OutDim>, bool)>);

impl fmt::Display for InDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InDim::Const(n) => write!(f, "{n}"),
            InDim::DBIdx(i) => write!(f, "DBIdx({i})"),
        }
    }
}

impl fmt::Display for OutDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutDim::Const(n) => write!(f, "{n}"),
            OutDim::InDBIdx(i) => write!(f, "InDBIdx({i})"),
            OutDim::OutDBIdx(i) => write!(f, "OutDBIdx({i})"),
        }
    }
}

impl<D: fmt::Display> fmt::Display for DynAval<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype.short_name())?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

fn fmt_pairs<D: fmt::Display>(f: &mut fmt::Formatter<'_>, v: &[(DynAval<D>, bool)]) -> fmt::Result {
    f.write_str("[")?;
    for (i, (a, e)) in v.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "({a}, {e})")?;
    }
    f.write_str("]")
}

impl fmt::Display for InType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_pairs(f, &self.0)
    }
}

impl fmt::Display for OutType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_pairs(f, &self.0)
    }
}

fn invalid(msg: String) -> IrError {
    IrError::Invalid(msg)
}

fn check_dim_var(jaxpr: &Jaxpr, v: Var, what: &str) -> Result<(), IrError> {
    match jaxpr.try_aval(v) {
        Some(Aval::Array(a)) if a.shape.is_empty() && a.dtype.is_int() => Ok(()),
        Some(other) => Err(invalid(format!(
            "{what}: a dimension refers to a variable of type {}, not a scalar integer",
            crate::shape::fmt_aval(other)
        ))),
        None => Err(invalid(format!(
            "{what}: a dimension refers to an unknown variable"
        ))),
    }
}

/// The input type of `jaxpr`; `explicit[i]` says whether invar `i` was an
/// explicit argument (dimension variables added for shapes are implicit).
pub fn in_type(jaxpr: &Jaxpr, explicit: &[bool]) -> Result<InType, IrError> {
    if explicit.len() != jaxpr.invars.len() {
        return Err(invalid(format!(
            "in_type: {} explicitness flags for {} inputs",
            explicit.len(),
            jaxpr.invars.len()
        )));
    }
    let mut out = Vec::with_capacity(explicit.len());
    for (&v, &e) in jaxpr.invars.iter().zip(explicit) {
        let a = jaxpr.aval(v).array();
        let shape = a
            .shape
            .iter()
            .map(|d| match *d {
                Dim::Const(n) => Ok(InDim::Const(n)),
                Dim::Var(w) => {
                    check_dim_var(jaxpr, w, "in_type")?;
                    jaxpr
                        .invars
                        .iter()
                        .position(|&x| x == w)
                        .map(InDim::DBIdx)
                        .ok_or_else(|| {
                            invalid("in_type: an input's dimension is not an input".into())
                        })
                }
            })
            .collect::<Result<_, IrError>>()?;
        out.push((
            DynAval {
                dtype: a.dtype,
                shape,
            },
            e,
        ));
    }
    Ok(InType(out))
}

/// The output type of `jaxpr`; `explicit[i]` says whether outvar `i` is an
/// explicit result. A dimension that is itself a result is an `OutDBIdx`,
/// else an input's `InDBIdx`.
pub fn out_type(jaxpr: &Jaxpr, explicit: &[bool]) -> Result<OutType, IrError> {
    if explicit.len() != jaxpr.outvars.len() {
        return Err(invalid(format!(
            "out_type: {} explicitness flags for {} outputs",
            explicit.len(),
            jaxpr.outvars.len()
        )));
    }
    let mut out = Vec::with_capacity(explicit.len());
    for (atom, &e) in jaxpr.outvars.iter().zip(explicit) {
        let aval = jaxpr
            .atom_aval(atom)
            .ok_or_else(|| invalid("out_type: unbound output".into()))?;
        let a = aval.array();
        let shape = a
            .shape
            .iter()
            .map(|d| match *d {
                Dim::Const(n) => Ok(OutDim::Const(n)),
                Dim::Var(w) => {
                    check_dim_var(jaxpr, w, "out_type")?;
                    if let Some(j) = jaxpr.outvars.iter().position(|o| *o == Atom::Var(w)) {
                        Ok(OutDim::OutDBIdx(j))
                    } else if let Some(i) = jaxpr.invars.iter().position(|&x| x == w) {
                        Ok(OutDim::InDBIdx(i))
                    } else {
                        Err(invalid(
                            "out_type: a result's dimension is neither an input nor a result"
                                .into(),
                        ))
                    }
                }
            })
            .collect::<Result<_, IrError>>()?;
        out.push((
            DynAval {
                dtype: a.dtype,
                shape,
            },
            e,
        ));
    }
    Ok(OutType(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_jaxpr;

    #[test]
    fn input_type_of_the_seed_example() {
        // Arguments `d:i64[], a:f64[d], b:f64[d]`, d implicit.
        let j = parse_jaxpr("{ lambda ; d:i64[] a:f64[d] b:f64[d]. let  in (a, b) }").unwrap();
        let t = in_type(&j, &[false, true, true]).unwrap();
        assert_eq!(
            t.to_string(),
            "[(i64[], false), (f64[DBIdx(0)], true), (f64[DBIdx(0)], true)]"
        );
        assert_eq!(t.0[1].0.shape, vec![InDim::DBIdx(0)]);
    }

    #[test]
    fn output_type_of_the_seed_example() {
        // Arguments `v, d, a, b`; results `e:i64[], a:f64[e], b:f64[d]`.
        let j = parse_jaxpr(
            "{ lambda ; v:i64[] d:i64[] a:f64[d] b:f64[d]. let
    e:i64[] = add d v
    f:f64[e] = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 1.0:f64[] e
  in (e, f, b) }",
        )
        .unwrap();
        let t = out_type(&j, &[false, true, true]).unwrap();
        assert_eq!(
            t.to_string(),
            "[(i64[], false), (f64[OutDBIdx(0)], true), (f64[InDBIdx(1)], true)]"
        );
        let i = in_type(&j, &[true, false, true, true]).unwrap();
        assert_eq!(
            i.to_string(),
            "[(i64[], true), (i64[], false), (f64[DBIdx(1)], true), (f64[DBIdx(1)], true)]"
        );
    }

    #[test]
    fn static_and_mixed_dimensions_print_and_bad_flags_are_errors() {
        let j = parse_jaxpr("{ lambda ; n:i32[] x:f32[n,4]. let  in (x,) }").unwrap();
        assert_eq!(
            in_type(&j, &[false, true]).unwrap().to_string(),
            "[(i32[], false), (f32[DBIdx(0),4], true)]"
        );
        assert_eq!(
            out_type(&j, &[true]).unwrap().to_string(),
            "[(f32[InDBIdx(0),4], true)]"
        );
        assert!(in_type(&j, &[true]).is_err());
        assert!(out_type(&j, &[]).is_err());
    }
}
