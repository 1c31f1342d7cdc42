//! `jaxon-ir`: the jaxpr language — dtypes, avals, jaxprs, primitives, the
//! printer and parser of JAX's text format, the checker, shape rules, the
//! reference interpreter and the `Backend` trait.
//!
//! Everything above this crate (tracing, transforms, backends) speaks jaxprs
//! as defined here. The text format round-trips: `parse(print(j)) == j` and
//! `print(parse(t)) == t` for every text JAX 0.10 prints.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod array;
pub mod aval;
pub mod backend;
pub mod check;
pub mod devices;
pub mod dtype;
pub mod dyntype;
pub mod error;
pub mod interp;
pub mod jaxpr;
pub mod literal;
pub mod lru;
pub mod memory;
mod params_text;
pub mod parse;
pub mod passes;
pub mod primitive;
pub mod print;
pub mod promotion;
pub mod shape;
pub mod spmd;

pub use array::{HostArray, Storage};
pub use aval::{AbstractRef, Aval, Dim, MemorySpace, Shape, ShapedArray};
pub use backend::{Backend, Buffer, Executable};
pub use check::{check_closed_jaxpr, check_jaxpr};
pub use dtype::{DType, DTypeKind};
pub use error::IrError;
pub use interp::{eval_closed_jaxpr, eval_jaxpr, Value};
pub use jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var, VarSpace};
pub use literal::{Literal, Scalar};
pub use num_complex;
pub use parse::{parse_closed_jaxpr, parse_jaxpr, ParseError};
pub use primitive::Primitive;
pub use promotion::{promote_types, result_type, result_type_x32, PromotionError};
pub use shape::abstract_eval;
