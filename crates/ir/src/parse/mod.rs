//! The jaxpr parser: reads the text the printer (and JAX) writes.
//!
//! Two phases: `syntax` reads tokens into raw jaxprs (one closed scope per
//! `{ lambda ... }`, params as syntax trees), then `build` resolves `let`
//! references, drops unread `_` binders, renumbers variables in binding
//! order, puts copies of a jaxpr that reuse its names into one `VarSpace`
//! and types the params (`convert`, `state`); `resolve` answers the
//! name questions that need more than one scope. Both phases are linear in
//! the input (a copy is compared only with the jaxprs binding its first
//! reused name); neither panics on malformed text.
//!
//! Every param of an equation is read by its primitive's rule or is an
//! error: an unknown key names itself at its value, and a param JAX prints
//! with one value only (`sharding=None`) takes that value or `None`. The
//! exceptions are written down: `sharding`/`out_sharding` equal to `None`
//! on any primitive, and `pallas_call`'s compiler hints.

pub(crate) mod build;
mod convert;
mod lexer;
pub(crate) mod params;
mod resolve;
pub(crate) mod state;
pub(crate) mod syntax;

use crate::array::HostArray;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use thiserror::Error;

/// A parse error with its 1-based line and column.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{line}:{column}: {message}")]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

fn parse_with(text: &str, consts: Option<Vec<HostArray>>) -> Result<ClosedJaxpr, ParseError> {
    let mut reader = syntax::Reader::new(text, consts);
    let main = reader.read_program()?;
    reader.check_consts_used()?;
    let mut builder = build::Builder::new(text, &reader.arena, &reader.lets, &reader.documents);
    let closed = builder.closed(main, 0)?;
    // Every `let` must be well-formed even when nothing refers to it.
    for l in &reader.lets {
        builder.closed(l.id, l.pos)?;
    }
    Ok(closed)
}

/// Parses a jaxpr (with any `let` hoisted jaxprs) from JAX's text format.
///
/// Nested jaxprs that have constvars get no const values (their
/// `ClosedJaxpr::consts` is empty); use [`parse_closed_jaxpr`] to bind them.
pub fn parse_jaxpr(text: &str) -> Result<Jaxpr, ParseError> {
    let closed = parse_with(text, None)?;
    Ok(std::sync::Arc::unwrap_or_clone(closed.jaxpr))
}

/// Parses a jaxpr and binds constant values to its constvar binders in the
/// order they appear in the text, nested jaxprs included (a `let`-shared
/// jaxpr's binders appear, and take values, once). A count or type mismatch
/// is an error.
pub fn parse_closed_jaxpr(text: &str, consts: Vec<HostArray>) -> Result<ClosedJaxpr, ParseError> {
    parse_with(text, Some(consts))
}

#[cfg(test)]
mod tests;
