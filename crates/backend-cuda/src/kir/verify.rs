//! The KIR verifier: types every expression and checks every statement
//! against the rules in the `kir` module docs.
//!
//! Invariant: a kernel that passes [`verify`] prints as CUDA C that NVRTC
//! accepts and runs on the simulator without type confusion; whatever the
//! verifier cannot see statically (indices, divergence at run time) the
//! simulator checks.

use super::{BinOp, Expr, Kernel, MmaShape, ParamKind, Space, Stmt, UnOp, Var};
use crate::error::{CudaError, Result};
use jaxon_ir::DType;

/// Checks a whole kernel.
pub fn verify(k: &Kernel) -> Result<()> {
    let err = |message: String| CudaError::InvalidKir {
        kernel: k.name.clone(),
        message,
    };
    if !is_c_identifier(&k.name) {
        return Err(err(format!("name `{}` is not a C identifier", k.name)));
    }
    if k.max_threads == 0 || k.max_threads > 1024 {
        return Err(err(format!(
            "max_threads {} is not in 1..=1024",
            k.max_threads
        )));
    }
    for p in &k.params {
        if !is_c_identifier(&p.name) {
            return Err(err(format!("parameter `{}` is not a C identifier", p.name)));
        }
    }
    for s in &k.shared {
        if !is_c_identifier(&s.name) {
            return Err(err(format!(
                "shared array `{}` is not a C identifier",
                s.name
            )));
        }
        if s.len == 0 {
            return Err(err(format!("shared array `{}` has no elements", s.name)));
        }
    }
    block(k, &k.body, false).map_err(err)
}

/// The dtype of an expression, or why it has none.
pub fn type_of(k: &Kernel, e: &Expr) -> Result<DType, String> {
    match e {
        Expr::Var(v) => var_dtype(k, *v),
        Expr::Param(p) => match k.params.get(p.0 as usize).map(|p| p.kind) {
            Some(ParamKind::Scalar(d)) => Ok(d),
            Some(ParamKind::Global { .. }) => {
                Err(format!("parameter {} is a buffer, not a scalar", p.0))
            }
            None => Err(format!("no parameter {}", p.0)),
        },
        Expr::Const(c) => Ok(c.dtype),
        Expr::Special(_) => Ok(DType::U32),
        Expr::Unary(op, a) => {
            let t = type_of(k, a)?;
            let ok = match op {
                UnOp::Neg | UnOp::Abs => computes(t) && !t.is_bool(),
                UnOp::Not => t.is_bool() || t.is_int(),
                UnOp::IsNan | UnOp::IsInf => computes(t) && t.is_float(),
                UnOp::Clz | UnOp::Popc => t.is_int(),
            };
            if !ok {
                return Err(format!("{op:?} does not apply to {t}"));
            }
            Ok(match op {
                UnOp::IsNan | UnOp::IsInf => DType::Bool,
                UnOp::Clz | UnOp::Popc => DType::I32,
                UnOp::Neg | UnOp::Abs | UnOp::Not => t,
            })
        }
        Expr::Binary(op, a, b) => {
            let (ta, tb) = (type_of(k, a)?, type_of(k, b)?);
            if ta != tb {
                return Err(format!("{op:?} of {ta} and {tb}: operands differ in dtype"));
            }
            let ok = match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                    computes(ta) && !ta.is_bool()
                }
                BinOp::Min | BinOp::Max => computes(ta),
                BinOp::And | BinOp::Or | BinOp::Xor => ta.is_bool() || ta.is_int(),
                BinOp::Shl | BinOp::Shr => ta.is_int(),
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                    computes(ta)
                }
            };
            if !ok {
                return Err(format!("{op:?} does not apply to {ta}"));
            }
            Ok(if op.is_comparison() { DType::Bool } else { ta })
        }
        Expr::Select(c, a, b) => {
            let tc = type_of(k, c)?;
            if tc != DType::Bool {
                return Err(format!("select's condition is {tc}, not bool"));
            }
            let (ta, tb) = (type_of(k, a)?, type_of(k, b)?);
            if ta != tb {
                return Err(format!("select of {ta} and {tb}: branches differ in dtype"));
            }
            Ok(ta)
        }
        Expr::Cast(to, a) => {
            type_of(k, a)?;
            Ok(*to)
        }
        Expr::Bitcast(to, a) => {
            let t = type_of(k, a)?;
            if t.size_bytes() != to.size_bytes() || t.is_bool() || to.is_bool() {
                return Err(format!("bitcast from {t} to {to}: widths differ or bool"));
            }
            Ok(*to)
        }
        Expr::Math(f, args) => {
            if args.len() != f.arity() {
                return Err(format!(
                    "{f:?} takes {} operands, got {}",
                    f.arity(),
                    args.len()
                ));
            }
            let t = type_of(k, &args[0])?;
            for a in &args[1..] {
                let ta = type_of(k, a)?;
                if ta != t {
                    return Err(format!("{f:?} of {t} and {ta}: operands differ in dtype"));
                }
            }
            if !matches!(t, DType::F32 | DType::F64) {
                return Err(format!("{f:?} needs f32 or f64, got {t}"));
            }
            Ok(t)
        }
    }
}

/// True for dtypes KIR computes on (all but the storage-only halves).
fn computes(t: DType) -> bool {
    !matches!(t, DType::F16 | DType::BF16)
}

fn var_dtype(k: &Kernel, v: Var) -> Result<DType, String> {
    k.vars
        .get(v.0 as usize)
        .map(|d| d.dtype)
        .ok_or_else(|| format!("no variable {}", v.0))
}

fn expect(k: &Kernel, e: &Expr, want: DType, what: &str) -> Result<(), String> {
    let t = type_of(k, e)?;
    if t != want {
        return Err(format!("{what} is {t}, expected {want}"));
    }
    Ok(())
}

fn expect_int(k: &Kernel, e: &Expr, what: &str) -> Result<DType, String> {
    let t = type_of(k, e)?;
    if !t.is_int() {
        return Err(format!("{what} is {t}, expected an integer"));
    }
    Ok(t)
}

fn space(k: &Kernel, s: Space, writes: bool) -> Result<DType, String> {
    match s {
        Space::Global(p) => match k.params.get(p.0 as usize).map(|p| p.kind) {
            Some(ParamKind::Global { dtype, writable }) => {
                if writes && !writable {
                    return Err(format!(
                        "buffer `{}` is read-only but is written",
                        k.params[p.0 as usize].name
                    ));
                }
                Ok(dtype)
            }
            Some(ParamKind::Scalar(_)) => Err(format!("parameter {} is a scalar", p.0)),
            None => Err(format!("no parameter {}", p.0)),
        },
        Space::Shared(id) => k
            .shared
            .get(id.0 as usize)
            .map(|a| a.dtype)
            .ok_or_else(|| format!("no shared array {}", id.0)),
    }
}

fn vector_width(n: usize, dtype: DType) -> Result<(), String> {
    if !matches!(n, 1 | 2 | 4 | 8) || n * dtype.size_bytes() > 16 {
        return Err(format!(
            "a vector access of {n} × {dtype} is not 1, 2, 4 or 8 elements of at most 16 bytes"
        ));
    }
    Ok(())
}

/// Checks a body; `divergent` is true inside a branch on a value that may
/// differ between the threads of a block.
fn block(k: &Kernel, body: &[Stmt], divergent: bool) -> Result<(), String> {
    body.iter().try_for_each(|s| stmt(k, s, divergent))
}

fn stmt(k: &Kernel, s: &Stmt, divergent: bool) -> Result<(), String> {
    match s {
        Stmt::Assign(v, e) => expect(k, e, var_dtype(k, *v)?, "the assigned value"),
        Stmt::Load {
            dst,
            space: sp,
            index,
            mask,
        } => {
            let t = space(k, *sp, false)?;
            vector_width(dst.len(), t)?;
            for d in dst {
                if var_dtype(k, *d)? != t {
                    return Err(format!("load of {t} into a variable of another dtype"));
                }
            }
            expect_int(k, index, "a load's index")?;
            if let Some((m, other)) = mask {
                expect(k, m, DType::Bool, "a load's mask")?;
                expect(k, other, t, "a masked load's other value")?;
            }
            Ok(())
        }
        Stmt::Store {
            space: sp,
            index,
            values,
            mask,
        } => {
            let t = space(k, *sp, true)?;
            vector_width(values.len(), t)?;
            for v in values {
                expect(k, v, t, "a stored value")?;
            }
            expect_int(k, index, "a store's index")?;
            if let Some(m) = mask {
                expect(k, m, DType::Bool, "a store's mask")?;
            }
            Ok(())
        }
        Stmt::Atomic {
            op: _,
            space: sp,
            index,
            value,
            dst,
        } => {
            let t = space(k, *sp, true)?;
            if !matches!(
                t,
                DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::F32 | DType::F64
            ) {
                return Err(format!("atomics on {t} are not supported"));
            }
            expect_int(k, index, "an atomic's index")?;
            expect(k, value, t, "an atomic's operand")?;
            if let Some(d) = dst {
                if var_dtype(k, *d)? != t {
                    return Err(format!("an atomic's old value ({t}) into another dtype"));
                }
            }
            Ok(())
        }
        Stmt::Barrier => {
            if divergent {
                return Err("a barrier inside thread-dependent control flow".into());
            }
            Ok(())
        }
        Stmt::Shuffle {
            dst,
            kind: _,
            value,
            lane,
            width,
        } => {
            let t = type_of(k, value)?;
            if t.is_bool() || t.size_bytes() < 2 {
                return Err(format!("shuffles move 16, 32 or 64 bits, not {t}"));
            }
            if var_dtype(k, *dst)? != t {
                return Err("a shuffle's destination differs in dtype from its value".into());
            }
            expect(k, lane, DType::U32, "a shuffle's lane operand")?;
            if !width.is_power_of_two() || *width > 32 {
                return Err(format!("shuffle width {width} is not a power of two ≤ 32"));
            }
            Ok(())
        }
        Stmt::Mma { shape, d, a, b, c } => {
            let (na, nb, ab_types): (usize, usize, &[DType]) = match shape {
                MmaShape::M16N8K16 => (8, 4, &[DType::F16, DType::BF16]),
                MmaShape::M16N8K8Tf32 => (4, 2, &[DType::F32]),
            };
            if a.len() != na || b.len() != nb || c.len() != 4 || d.len() != 4 {
                return Err(format!(
                    "{shape:?} takes {na} a, {nb} b, 4 c and 4 d values per lane"
                ));
            }
            let ta = type_of(k, &a[0])?;
            if !ab_types.contains(&ta) {
                return Err(format!("{shape:?} does not take {ta} operands"));
            }
            for e in a.iter().chain(b) {
                expect(k, e, ta, "an mma operand")?;
            }
            for e in c {
                expect(k, e, DType::F32, "an mma accumulator")?;
            }
            for v in d {
                if var_dtype(k, *v)? != DType::F32 {
                    return Err("mma accumulators are f32".into());
                }
            }
            Ok(())
        }
        Stmt::LdMatrix {
            dst, shared, index, ..
        } => {
            let t = space(k, Space::Shared(*shared), false)?;
            if t.size_bytes() != 2 {
                return Err(format!("ldmatrix of a {t} array (16-bit elements only)"));
            }
            if !matches!(dst.len(), 2 | 4 | 8) {
                return Err(format!("ldmatrix into {} variables (2, 4 or 8)", dst.len()));
            }
            for d in dst {
                if var_dtype(k, *d)? != t {
                    return Err(format!("ldmatrix of {t} into a variable of another dtype"));
                }
            }
            expect_int(k, index, "an ldmatrix index")?;
            Ok(())
        }
        Stmt::If {
            cond,
            then,
            otherwise,
        } => {
            expect(k, cond, DType::Bool, "an if's condition")?;
            let div = divergent || thread_dependent(cond);
            block(k, then, div)?;
            block(k, otherwise, div)
        }
        Stmt::For {
            var,
            start,
            end,
            step,
            body,
        } => {
            let t = var_dtype(k, *var)?;
            if !t.is_int() {
                return Err(format!("a loop variable is {t}, not an integer"));
            }
            expect(k, start, t, "a loop's start")?;
            expect(k, end, t, "a loop's end")?;
            expect(k, step, t, "a loop's step")?;
            let div = divergent
                || thread_dependent(start)
                || thread_dependent(end)
                || thread_dependent(step);
            block(k, body, div)
        }
        Stmt::While { cond, body } => {
            expect(k, cond, DType::Bool, "a while's condition")?;
            block(k, body, divergent || thread_dependent(cond))
        }
    }
}

/// True if an expression visibly differs between the threads of a block: it
/// reads a thread index or a lane. Variables are not followed (a loop counter
/// is uniform though it is a variable); the simulator checks at run time that
/// every thread of the block reaches each barrier.
fn thread_dependent(e: &Expr) -> bool {
    use super::Special;
    match e {
        Expr::Var(_) => false,
        Expr::Special(Special::ThreadIdx(_) | Special::LaneId) => true,
        Expr::Special(Special::BlockIdx(_) | Special::BlockDim(_) | Special::GridDim(_)) => false,
        Expr::Param(_) | Expr::Const(_) => false,
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Bitcast(_, a) => thread_dependent(a),
        Expr::Binary(_, a, b) => thread_dependent(a) || thread_dependent(b),
        Expr::Select(c, a, b) => thread_dependent(c) || thread_dependent(a) || thread_dependent(b),
        Expr::Math(_, args) => args.iter().any(thread_dependent),
    }
}

/// True for `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
