//! `jaxon-pallas`: Pallas kernels for jaxon. A kernel is a Rust closure over
//! [`Ref`]s (inputs, then outputs) that reads blocks into `Array`s and writes
//! results back; [`pallas_call`] runs it over a grid, cutting each operand
//! into blocks with [`BlockSpec`]s.
//!
//! ```
//! use jaxon_pallas::{pallas_call, shape_dtype, BlockSpec, Ref};
//! use jaxon_trace::Array;
//! use jaxon_ir::DType;
//!
//! let add = |r: &[Ref]| r[2].store(r[0].load() + r[1].load());
//! let x = Array::from_vec((0..8).collect::<Vec<i32>>(), &[8]);
//! let y = Array::from_vec((8..16).collect::<Vec<i32>>(), &[8]);
//! let out = pallas_call(add, shape_dtype(&[8], DType::I32))
//!     .grid(4)
//!     .in_specs(vec![BlockSpec::map1([2], |i| i), BlockSpec::map1([2], |i| i)])
//!     .out_spec(BlockSpec::map1([2], |i| i))
//!     .interpret(true)
//!     .call1(&[x, y])?;
//! assert_eq!(out.to_vec::<i32>(), (0..8).map(|i| 2 * i + 8).collect::<Vec<_>>());
//! # Ok::<(), jaxon_trace::Error>(())
//! ```
//!
//! The kernel and the index maps are traced to jaxprs and stored in the
//! `pallas_call` equation, so `make_jaxpr` prints them, the reference
//! interpreter runs them (interpret mode), and `vmap`/`jvp` transform them
//! (rules in `jaxon-transforms`). Reverse mode goes through `custom_vjp`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod call;
mod index;
pub mod ops;
mod prims;
mod refs;
mod spec;

pub use call::{pallas_call, shape_dtype, IntoGrid, IntoOutShapes, KernelOutput, PallasCall};
pub use index::{ds, IntoValue, RefIdx, RefIndex, Start, ELLIPSIS};
pub use jaxon_trace::fori_loop;
pub use prims::{dot, dot_t, num_programs, program_id, try_dot, try_when, when};
pub use refs::{
    atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor,
    load, store, Load, Ref, Store,
};
pub use spec::{BlockSpec, IndexMapOutput, IntoBlockShape};
