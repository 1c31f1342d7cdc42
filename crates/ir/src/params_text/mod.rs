//! Params text: how each primitive's params print, as JAX 0.10 prints them,
//! and how they read back, defined once per params struct.
//!
//! The printer (`print::params`) and the parser (`parse::convert`) both go
//! through [`ParamsText`]: `print` pushes the printed `(key, value)` pairs
//! (the printer sorts them), `parse` reads the struct back from an
//! equation's `[key=value ...]`. Most structs are rows of the
//! [`params_text!`] table in `table.rs`, one field codec per param; the rest
//! implement the trait by hand next to the table, print and parse side by
//! side, because JAX elides or derives some of their params.
//!
//! Invariant: for every params value `x` the parser accepts,
//! `parse(print(x)) == x`; the conformance corpus checks the converse
//! (`print(parse(t)) == t`) on JAX's own texts.

mod arrays;
mod codec;
mod collective;
mod control;
mod table;

pub(crate) use codec::Codec;
pub(crate) use table::parse_by_name;

use crate::aval::Aval;
use crate::parse::build::Builder;
use crate::parse::params::{Params, PV as Src};
use crate::parse::syntax::PResult;
use crate::print::PV;

/// Printed params: `(key, value)` pairs, in any order.
pub(crate) type Printed<'a> = Vec<(&'static str, PV<'a>)>;

/// What a params parser can see: the params as written, the jaxpr builder
/// (for jaxpr-valued params) and the equation's types, from which JAX's
/// elided params are derived.
pub(crate) struct ParseCx<'c, 'p, 'b> {
    /// The primitive's printed name (the op of an op-keyed family).
    pub name: &'c str,
    /// The params as written.
    pub p: &'c Params<'p>,
    /// Builds jaxpr-valued params.
    pub b: &'c mut Builder<'b>,
    /// How many operands the equation has.
    pub n_inputs: usize,
    /// The operands' types (`None` for a literal whose type is not known).
    pub in_avals: &'c [Option<Aval>],
    /// The results' types.
    pub out_avals: &'c [Aval],
}

impl ParseCx<'_, '_, '_> {
    /// Reads param `key` with codec `C`; `default` stands in when JAX
    /// elided it.
    pub fn field<C: Codec<T>, T>(&mut self, key: &str, default: Option<T>) -> PResult<T> {
        match (self.p.get(key), default) {
            (Some(v), _) => C::parse(self, v),
            (None, Some(d)) => Ok(d),
            (None, None) => self.p.req(key).and_then(|v| C::parse(self, v)),
        }
    }

    /// Sizes of result 0 (`None` where dynamic), for params JAX elides
    /// because the result type shows them.
    pub fn out_sizes(&self) -> Option<Vec<Option<usize>>> {
        self.out_avals.first().map(|a| {
            a.shape()
                .iter()
                .map(|d| match d {
                    crate::aval::Dim::Const(n) => Some(*n),
                    crate::aval::Dim::Var(_) => None,
                })
                .collect()
        })
    }

    /// The rank of operand 0, if its type is known.
    pub fn in_rank(&self) -> Option<usize> {
        self.in_avals
            .first()
            .and_then(|a| a.as_ref())
            .map(|a| a.shape().len())
    }
}

/// One params struct's text, both ways.
pub(crate) trait ParamsText {
    /// Pushes the printed params.
    fn print<'a>(&'a self, out: &mut Printed<'a>);
    /// Reads the params of one equation.
    fn parse(cx: &mut ParseCx<'_, '_, '_>) -> PResult<Self>
    where
        Self: Sized;
    /// Whether `name` prints first, before the sorted rest (calls).
    fn name_first(&self) -> bool {
        false
    }
}

/// Wraps a value that parses back with `Src`'s position for errors.
pub(crate) fn bad(cx: &ParseCx<'_, '_, '_>, v: &Src, what: &str) -> crate::parse::ParseError {
    cx.p.err(v.start, format!("expected {what}, found `{}`", cx.p.src(v)))
}
