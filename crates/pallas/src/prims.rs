//! In-kernel operations beyond reads and writes: `program_id`,
//! `num_programs`, `dot` (f32 accumulation, optional transposes) and `when`.
//! `fori_loop` is `jaxon_trace`'s, re-exported from the crate root.

use jaxon_ir::primitive::DotDimensionNumbers;
use jaxon_ir::primitive::{NumProgramsParams, ProgramIdParams};
use jaxon_ir::{DType, Primitive};
use jaxon_trace::error::{ok_or_raise, Error, Result};
use jaxon_trace::{bind1, cond, lax, Array};

/// `pl.program_id(axis)`: this program's index along grid axis `axis`
/// (an `i32` scalar).
pub fn program_id(axis: usize) -> Array {
    ok_or_raise(bind1(&Primitive::from(ProgramIdParams { axis }), &[]))
}

/// `pl.num_programs(axis)`: the grid's size along `axis` (an `i32` scalar).
pub fn num_programs(axis: usize) -> Array {
    ok_or_raise(bind1(&Primitive::from(NumProgramsParams { axis }), &[]))
}

/// `pl.dot(a, b)`: the matrix product of two 2-D blocks, accumulated in
/// `f32` for floating inputs (the result is `f32`).
pub fn dot(a: &Array, b: &Array) -> Array {
    dot_t(a, b, false, false)
}

/// `pl.dot(a, b, trans_a, trans_b)`: transposes either operand first.
pub fn dot_t(a: &Array, b: &Array, trans_a: bool, trans_b: bool) -> Array {
    ok_or_raise(try_dot(a, b, trans_a, trans_b))
}

/// [`dot_t`] returning errors instead of raising them.
pub fn try_dot(a: &Array, b: &Array, trans_a: bool, trans_b: bool) -> Result<Array> {
    if a.ndim() != 2 || b.ndim() != 2 {
        return Err(Error::InvalidArgument(format!(
            "pl.dot takes 2-D operands, got shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    let ka = if trans_a { 0 } else { 1 };
    let kb = if trans_b { 1 } else { 0 };
    let (sa, sb) = (a.shape(), b.shape());
    if sa[ka] != sb[kb] {
        return Err(Error::ShapeMismatch {
            op: "pl.dot: contracting dimensions differ".into(),
            lhs: format!("{sa:?}"),
            rhs: format!("{sb:?}"),
        });
    }
    let float = a.dtype().is_float() || b.dtype().is_float();
    let (a, b) = if a.dtype() != b.dtype() {
        let d = if float { DType::F32 } else { a.dtype() };
        (
            lax::convert_element_type(a, d, false)?,
            lax::convert_element_type(b, d, false)?,
        )
    } else {
        (a.clone(), b.clone())
    };
    let dn = DotDimensionNumbers {
        lhs_contracting: vec![ka],
        rhs_contracting: vec![kb],
        lhs_batch: vec![],
        rhs_batch: vec![],
    };
    let out = lax::dot_general(&a, &b, dn, float.then_some(DType::F32))?;
    // dot_general's result dims: lhs free dim, then rhs free dim, which is
    // already (m, n) for every combination of transposes.
    Ok(out)
}

/// `pl.when(cond)(f)`: runs `f` (for its writes to refs) only where the
/// scalar `cond` is true. Whatever `f` returns is dropped inside the
/// branch, so `|| store(..).mask(m)` writes there.
pub fn when<R>(c: &Array, f: impl Fn() -> R) {
    ok_or_raise(try_when(c, f))
}

/// [`when`] returning errors instead of raising them.
pub fn try_when<R>(c: &Array, f: impl Fn() -> R) -> Result<()> {
    cond(
        c,
        |()| {
            drop(f());
        },
        |()| (),
        (),
    )
}
