//! JAX's type-promotion lattice with weak types: `promote_types` and
//! `result_type`.
//!
//! The lattice (JAX's "standard" promotion, sub-byte types left out) has the
//! 15 dtypes plus three weak nodes, `i*` (a Python `int`), `f*` (a Python
//! `float`) and `c*` (a Python `complex`):
//!
//! ```text
//! bool → i* → {u8, i8};  u8 → {u16, i16};  u16 → {u32, i32};  u32 → {u64, i64};
//! i8 → i16 → i32 → i64;  u64 → f*;  i64 → f*;  f* → {f16, bf16, c*};
//! {f16, bf16} → f32 → {f64, c64};  c* → c64 → c128;  f64 → c128
//! ```
//!
//! In x32 mode `u32 → {u64, i32}` instead of `{u64, i64}`, and results are
//! canonicalised to 32 bits. The result of a set of types is their least
//! upper bound. A weak operand (`weak_type = true`) enters the lattice as
//! the weak node of its kind, so it never widens a strong operand of the
//! same kind: `f16 + 1.0 = f16`, `u8 + 1 = u8`.

use crate::dtype::{DType, DTypeKind};
use thiserror::Error;

/// Errors of type promotion.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PromotionError {
    /// `result_type` was given no operands.
    #[error("result_type: at least one operand is required")]
    NoInputs,
}

/// A node of the promotion lattice: one of the 15 dtypes (indices 0..15, the
/// order of [`DType::ALL`]), or a weak node.
type Node = usize;
const WEAK_INT: Node = 15;
const WEAK_FLOAT: Node = 16;
const WEAK_COMPLEX: Node = 17;
/// Typed PRNG keys: an island of the lattice (a key promotes only with
/// itself).
const KEY: Node = 18;
const NODES: usize = 19;

fn node_of(d: DType) -> Node {
    match d {
        DType::Bool => 0,
        DType::I8 => 1,
        DType::I16 => 2,
        DType::I32 => 3,
        DType::I64 => 4,
        DType::U8 => 5,
        DType::U16 => 6,
        DType::U32 => 7,
        DType::U64 => 8,
        DType::F16 => 9,
        DType::BF16 => 10,
        DType::F32 => 11,
        DType::F64 => 12,
        DType::C64 => 13,
        DType::C128 => 14,
        DType::KeyFry => KEY,
    }
}

/// The immediate successors of a node in the lattice.
fn successors(n: Node, x64: bool) -> &'static [Node] {
    match n {
        0 => &[WEAK_INT],
        WEAK_INT => &[5, 1],
        1 => &[2],
        2 => &[3],
        3 => &[4],
        4 => &[WEAK_FLOAT],
        5 => &[6, 2],
        6 => &[7, 3],
        7 if x64 => &[8, 4],
        7 => &[8, 3],
        8 => &[WEAK_FLOAT],
        WEAK_FLOAT => &[9, 10, WEAK_COMPLEX],
        9 | 10 => &[11],
        11 => &[12, 13],
        12 => &[14],
        WEAK_COMPLEX => &[13],
        13 => &[14],
        _ => &[],
    }
}

/// The upper bounds of each node (the node itself included), as bit sets.
fn upper_bounds(x64: bool) -> [u32; NODES] {
    let mut ub = [0u32; NODES];
    // Reflexive-transitive closure by iterating to a fixed point.
    for (n, bits) in ub.iter_mut().enumerate() {
        *bits = 1 << n;
    }
    loop {
        let mut changed = false;
        for n in 0..NODES {
            let mut bits = ub[n];
            for &s in successors(n, x64) {
                bits |= ub[s];
            }
            if bits != ub[n] {
                ub[n] = bits;
                changed = true;
            }
        }
        if !changed {
            return ub;
        }
    }
}

/// The least upper bound of a non-empty set of nodes. The lattice has a top
/// (`c128`), so it always exists.
fn least_upper_bound(nodes: u32, x64: bool) -> Node {
    let ub = upper_bounds(x64);
    let common = (0..NODES)
        .filter(|&n| nodes & (1 << n) != 0)
        .fold(u32::MAX, |acc, n| acc & ub[n]);
    (0..NODES)
        .find(|&c| common & (1 << c) != 0 && ub[c] & common == common)
        .unwrap_or(node_of(DType::C128))
}

/// The dtype a lattice node stands for; a weak node stands for the default
/// dtype of its kind (`i64`/`f64`, or `i32`/`f32` in x32 mode).
fn node_dtype(n: Node, x64: bool) -> DType {
    match n {
        WEAK_INT => canonicalize(DType::I64, x64),
        WEAK_FLOAT => canonicalize(DType::F64, x64),
        WEAK_COMPLEX => canonicalize(DType::C128, x64),
        KEY => DType::KeyFry,
        _ => DType::ALL[n],
    }
}

/// The lattice node of an operand: a weak operand is the weak node of its
/// kind (a weak `bool` is just `bool`).
fn operand_node(d: DType, weak: bool) -> Node {
    if !weak {
        return node_of(d);
    }
    match d.kind() {
        DTypeKind::Bool => node_of(d),
        DTypeKind::SignedInt | DTypeKind::UnsignedInt => WEAK_INT,
        DTypeKind::Float => WEAK_FLOAT,
        DTypeKind::Complex => WEAK_COMPLEX,
        DTypeKind::Key => KEY,
    }
}

/// Maps 64-bit dtypes to their 32-bit counterparts in x32 mode.
fn canonicalize(d: DType, x64: bool) -> DType {
    if x64 {
        return d;
    }
    match d {
        DType::I64 => DType::I32,
        DType::U64 => DType::U32,
        DType::F64 => DType::F32,
        DType::C128 => DType::C64,
        other => other,
    }
}

/// The least upper bound of two (strong) dtypes in JAX's lattice, as
/// `jnp.promote_types` with x64 enabled: `promote_types(I8, U8) == I16`,
/// `promote_types(F16, BF16) == F32`, `promote_types(I64, U64) == F64`.
pub fn promote_types(a: DType, b: DType) -> DType {
    let n = least_upper_bound((1 << node_of(a)) | (1 << node_of(b)), true);
    node_dtype(n, true)
}

/// The dtype and weak flag that JAX's NumPy API promotes `(dtype, weak)`
/// operands to (x64 enabled), as `jnp.add` and friends do.
///
/// A Python `int` is `(I64, true)`, a Python `float` is `(F64, true)` and a
/// Python `bool` is `(Bool, false)`. Rules, in order: one operand keeps its
/// type; equal dtypes that are not all weak give that dtype, strong; all-weak
/// operands give the least upper bound of their dtypes, weak; otherwise the
/// least upper bound of the operands' lattice nodes, weak when it is a weak
/// node (which then stands for `i64`/`f64`). `bool` is never weak.
pub fn result_type(args: &[(DType, bool)]) -> Result<(DType, bool), PromotionError> {
    result_type_in(args, true)
}

/// [`result_type`] in JAX's x32 mode (`jax_enable_x64` off): results are
/// canonicalised to 32 bits and Python scalars default to `i32`/`f32`.
pub fn result_type_x32(args: &[(DType, bool)]) -> Result<(DType, bool), PromotionError> {
    result_type_in(args, false)
}

fn result_type_in(args: &[(DType, bool)], x64: bool) -> Result<(DType, bool), PromotionError> {
    let (first, first_weak) = *args.first().ok_or(PromotionError::NoInputs)?;
    let all_weak = args.iter().all(|&(_, w)| w);
    let (dtype, weak) = if args.len() == 1 {
        (first, first_weak)
    } else if args.iter().all(|&(d, _)| d == first) && !all_weak {
        (first, false)
    } else if all_weak {
        let set = args.iter().fold(0u32, |s, &(d, _)| s | (1 << node_of(d)));
        (node_dtype(least_upper_bound(set, x64), x64), true)
    } else {
        let set = args
            .iter()
            .fold(0u32, |s, &(d, w)| s | (1 << operand_node(d, w)));
        let n = least_upper_bound(set, x64);
        (
            node_dtype(n, x64),
            n == WEAK_INT || n == WEAK_FLOAT || n == WEAK_COMPLEX,
        )
    };
    let dtype = canonicalize(dtype, x64);
    Ok((dtype, weak && dtype != DType::Bool))
}

#[cfg(test)]
mod tests {
    //! Tables generated with JAX 0.10.2 (`jax.numpy.promote_types`,
    //! `dtypes.lattice_result_type` + `canonicalize_dtype`, `jnp.add` with
    //! Python scalars) and asserted entry by entry.

    use super::*;

    /// x64: `jnp.promote_types(row, column)`, in the order of `DType::ALL`.
    const STRONG_X64: &str = concat!(
        "strong promote_types: row a, column b (order of DType::ALL)\n",
        "bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128\n",
        "i8 i8 i16 i32 i64 i16 i32 i64 f64 f16 bf16 f32 f64 c64 c128\n",
        "i16 i16 i16 i32 i64 i16 i32 i64 f64 f16 bf16 f32 f64 c64 c128\n",
        "i32 i32 i32 i32 i64 i32 i32 i64 f64 f16 bf16 f32 f64 c64 c128\n",
        "i64 i64 i64 i64 i64 i64 i64 i64 f64 f16 bf16 f32 f64 c64 c128\n",
        "u8 i16 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 c64 c128\n",
        "u16 i32 i32 i32 i64 u16 u16 u32 u64 f16 bf16 f32 f64 c64 c128\n",
        "u32 i64 i64 i64 i64 u32 u32 u32 u64 f16 bf16 f32 f64 c64 c128\n",
        "u64 f64 f64 f64 f64 u64 u64 u64 u64 f16 bf16 f32 f64 c64 c128\n",
        "f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f32 f64 c64 c128\n",
        "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 f32 f64 c64 c128\n",
        "f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f64 c64 c128\n",
        "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 c128 c128\n",
        "c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c128 c64 c128\n",
        "c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128\n",
    );

    /// x64: result of each ordered pair of (dtype, weak) operands.
    const PAIRS_X64: &str = concat!(
    "lattice_result_type + canonicalize; operands in order bool bool* i8 i8* i16 i16* i32 i32* i64 i64* u8 u8* u16 u16* u32 u32* u64 u64* f16 f16* bf16 bf16* f32 f32* f64 f64* (* = weak)\n",
    "bool: bool bool i8 i64* i16 i64* i32 i64* i64 i64* u8 i64* u16 i64* u32 i64* u64 i64* f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "bool*: bool bool i8 i8* i16 i16* i32 i32* i64 i64* u8 u8* u16 u16* u32 u32* u64 u64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "i8: i8 i8 i8 i8 i16 i8 i32 i8 i64 i8 i16 i8 i32 i8 i64 i8 f64* i8 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "i8*: i64* i8* i8 i8* i16 i16* i32 i32* i64 i64* u8 i16* u16 i32* u32 i64* u64 f64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "i16: i16 i16 i16 i16 i16 i16 i32 i16 i64 i16 i16 i16 i32 i16 i64 i16 f64* i16 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "i16*: i64* i16* i8 i16* i16 i16* i32 i32* i64 i64* u8 i16* u16 i32* u32 i64* u64 f64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "i32: i32 i32 i32 i32 i32 i32 i32 i32 i64 i32 i32 i32 i32 i32 i64 i32 f64* i32 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "i32*: i64* i32* i8 i32* i16 i32* i32 i32* i64 i64* u8 i32* u16 i32* u32 i64* u64 f64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "i64: i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 f64* i64 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "i64*: i64* i64* i8 i64* i16 i64* i32 i64* i64 i64* u8 i64* u16 i64* u32 i64* u64 f64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "u8: u8 u8 i16 u8 i16 u8 i32 u8 i64 u8 u8 u8 u16 u8 u32 u8 u64 u8 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "u8*: i64* u8* i8 i16* i16 i16* i32 i32* i64 i64* u8 u8* u16 u16* u32 u32* u64 u64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "u16: u16 u16 i32 u16 i32 u16 i32 u16 i64 u16 u16 u16 u16 u16 u32 u16 u64 u16 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "u16*: i64* u16* i8 i32* i16 i32* i32 i32* i64 i64* u8 u16* u16 u16* u32 u32* u64 u64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "u32: u32 u32 i64 u32 i64 u32 i64 u32 i64 u32 u32 u32 u32 u32 u32 u32 u64 u32 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "u32*: i64* u32* i8 i64* i16 i64* i32 i64* i64 i64* u8 u32* u16 u32* u32 u32* u64 u64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "u64: u64 u64 f64* u64 f64* u64 f64* u64 f64* u64 u64 u64 u64 u64 u64 u64 u64 u64 f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    "u64*: i64* u64* i8 f64* i16 f64* i32 f64* i64 f64* u8 u64* u16 u64* u32 u64* u64 u64* f16 f16* bf16 bf16* f32 f32* f64 f64*\n",
    "f16: f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f16 f32 f16 f64 f16\n",
    "f16*: f64* f16* f64* f16* f64* f16* f64* f16* f64* f16* f64* f16* f64* f16* f64* f16* f64* f16* f16 f16* bf16 f32* f32 f32* f64 f64*\n",
    "bf16: bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 bf16 bf16 f32 bf16 f64 bf16\n",
    "bf16*: f64* bf16* f64* bf16* f64* bf16* f64* bf16* f64* bf16* f64* bf16* f64* bf16* f64* bf16* f64* bf16* f16 f32* bf16 bf16* f32 f32* f64 f64*\n",
    "f32: f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f64 f32\n",
    "f32*: f64* f32* f64* f32* f64* f32* f64* f32* f64* f32* f64* f32* f64* f32* f64* f32* f64* f32* f16 f32* bf16 f32* f32 f32* f64 f64*\n",
    "f64: f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64\n",
    "f64*: f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f64* f16 f64* bf16 f64* f32 f64* f64 f64*\n",
    );

    /// x64: seeded random operand triples.
    const TRIPLES_X64: &str = concat!(
    "triples\n",
    "u8,i16,u16=i32 bf16,bool*,i8=bf16 u64*,i8*,u8*=f64* f16,bool*,u64=f16 i32,bool*,i8=i32 u16*,u16*,i8=i8 i32*,i8,u64*=i8 u16*,bool*,f16=f16\n",
    "i8*,i32*,bf16=bf16 bf16,f16,bool*=f32 f16,f16,u16=f16 bool*,i32*,bool*=i32* u64*,i16,i64*=i16 u16*,i16,u64*=i16 i8*,f16,i64*=f16 u64*,bf16*,i16*=bf16*\n",
    "i8*,f16,f16=f16 bf16,i32,u8*=bf16 i8*,u64*,f32=f32 i8,f16,bool*=f16 f16*,i32,u32*=f64* bf16*,u64*,u16*=bf16* f64,u8,u32=f64 f16,u32,u8*=f16\n",
    "i64*,i32*,f64*=f64* i16*,f32,f64=f64 i32*,i8,f16=f16 i64*,u64,u32*=u64 u8,f32*,u32=f64* i64*,f16*,i8=f64* i8*,u64,u16*=u64 i16*,f64,u8=f64\n",
    "i16,u32*,u16*=i16 bool*,bf16*,i8=f64* f64,u64*,f16=f64 f64*,u8,u8=f64* f32,u8*,f16*=f32 u32*,f16,f64*=f16 u32,i8,i8=i64 i64,u32*,f32=f32\n",
    "bf16*,i8,bool*=f64* f32*,f32,i64*=f32 bf16,f16,bf16*=f32 u32,i64*,f32=f32 u16,bf16*,u8*=f64* bool,u32,u8*=u32 i16*,f16*,i8*=f16* u32*,bool*,i32=i32\n",
    "f64,i64*,i16=f64 f32*,i32*,u16=f64* u16,u32*,i8=i32 i16*,u32,u16=u32 u64*,i64,i16=i64 u16*,u64*,i64=i64 f32,u16*,u8*=f32 bf16*,u16,i32*=f64*\n",
    "i16,i8,i16*=i16 i16,i32*,bf16*=f64* i32*,bool,u32*=i64* f16,i16*,i64=f16 i64*,bool,i16=i16 u16*,u64*,u8*=u64* f16*,f16,u8=f16 i16,f32,u64=f32\n",
    "f16*,bf16,bf16*=bf16 f32*,bool*,u32=f64* f64,bf16*,f64*=f64 u64*,u16,u16=u16 u16,u16,i8*=u16 u32*,bf16,u16=bf16 bool*,i32,i8=i32 i32,u32,i16*=i64\n",
    "i8*,u8,f16*=f64* bool*,i8*,bool=i64* f16,i16,u64*=f16 i8*,u8*,f16*=f16* bool,i8,i32=i32 f16*,u16,i16=f64* bf16,i64,u8*=bf16 f16*,u8*,u32*=f16*\n",
    "i8*,i8*,u32*=i64* u32,u32*,u32*=u32 i64*,i8,i16=i16 i8*,f32*,u8=f64* f32*,i64,u32*=f64* f32,i16*,u64=f32 bool,i32,u64=f64* u8*,i16,f32=f32\n",
    "u64*,bool,f64=f64 u64,i64*,bf16=bf16 i8,f32,i64=f32 u64,u8*,i16*=u64 u8*,f64,i32*=f64 u64*,u64*,f64=f64 u64,u8,bf16=bf16 i32*,f16*,f64*=f64*\n",
    "f64*,f64,i32=f64 f64*,i32*,u16=f64* f32*,f64*,i32*=f64* i32,u64,u32*=f64* u8*,f32*,bool=f64* bool,f64*,i64=f64* u32*,i64,i32=i64 f32,f16*,u8*=f32\n",
    "u32,f64*,f32*=f64* u8*,u8*,i8=i8 i32*,i8*,i32*=i32* u32*,i32,u8=i32 i32,u32*,f16*=f64* f16*,bool,u32*=f64* bf16,u8*,f64*=bf16 bf16,i8,bf16*=bf16\n",
    "i8*,u16,f64*=f64* f32,f64,i32=f64 u32*,i16*,u16*=i64* f64*,bf16,u8=bf16 i8,f64*,f32*=f64* u16,u32,u16=u32 f32*,i8,f32*=f64* i16*,i16*,i16=i16\n",
    "bool,i16,f16=f16 u32,f64*,bf16=bf16 i16,f16*,f16*=f64* u32*,bf16*,u8*=bf16* i16,u64*,u64*=i16 i16,bool,bool=i16 f64*,f32*,bf16=bf16 i8*,u64,f32*=f64*\n",
    "i16,u16*,i32=i32 i32,bool,i64=i64 i32,i64*,u64=f64* i32*,f64,f16=f64 u8,i64,u64*=i64 u16*,i16,bool*=i16 f32*,u8*,u32=f64* bf16*,f16,u64=f16\n",
    "u16*,u64,i16=f64* u64*,i16,u64=f64* u64,bool,u32=u64 f64,i16*,f16*=f64 bool,f64,f64*=f64 i16,i16*,i16=i16 u32*,f16*,f32*=f32* i8*,u64*,bool*=f64*\n",
    "u8,bf16*,u64=f64* u64,u64*,u32*=u64 f64*,f64,i8*=f64 u64*,bool*,i32*=f64* i32,i64,bool*=i64 f64,i8*,u64=f64 u32,u64*,bool=u32 f64,i8,u32=f64\n",
    "u8,f16*,u64=f64* f16*,u64,i32=f64* f32,i64,u32=f32 u64,u64*,f64*=f64* u32*,u64,i32*=u64 f32,u64,i64=f32 u64*,i32,u32=i64 i16,u16*,i8*=i16\n",
    );

    /// x64: `jnp.add(zeros(dtype), s)` for s = Python `1`, `1.5`, `True`.
    const PY_SCALARS_X64: &str = concat!(
        "python scalars with jnp ops: (dtype, scalar kind) -> result of jnp.add\n",
        "bool: i64* f64* bool\n",
        "i8: i8 f64* i8\n",
        "i16: i16 f64* i16\n",
        "i32: i32 f64* i32\n",
        "i64: i64 f64* i64\n",
        "u8: u8 f64* u8\n",
        "u16: u16 f64* u16\n",
        "u32: u32 f64* u32\n",
        "u64: u64 f64* u64\n",
        "f16: f16 f16 f16\n",
        "bf16: bf16 bf16 bf16\n",
        "f32: f32 f32 f32\n",
        "f64: f64 f64 f64\n",
    );

    /// x32: result of each ordered pair of non-64-bit (dtype, weak) operands.
    const PAIRS_X32: &str = concat!(
    "lattice_result_type + canonicalize; operands in order bool bool* i8 i8* i16 i16* i32 i32* u8 u8* u16 u16* u32 u32* f16 f16* bf16 bf16* f32 f32* (* = weak)\n",
    "bool: bool bool i8 i32* i16 i32* i32 i32* u8 i32* u16 i32* u32 i32* f16 f32* bf16 f32* f32 f32*\n",
    "bool*: bool bool i8 i8* i16 i16* i32 i32* u8 u8* u16 u16* u32 u32* f16 f16* bf16 bf16* f32 f32*\n",
    "i8: i8 i8 i8 i8 i16 i8 i32 i8 i16 i8 i32 i8 i32 i8 f16 f32* bf16 f32* f32 f32*\n",
    "i8*: i32* i8* i8 i8* i16 i16* i32 i32* u8 i16* u16 i32* u32 i32* f16 f16* bf16 bf16* f32 f32*\n",
    "i16: i16 i16 i16 i16 i16 i16 i32 i16 i16 i16 i32 i16 i32 i16 f16 f32* bf16 f32* f32 f32*\n",
    "i16*: i32* i16* i8 i16* i16 i16* i32 i32* u8 i16* u16 i32* u32 i32* f16 f16* bf16 bf16* f32 f32*\n",
    "i32: i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 f16 f32* bf16 f32* f32 f32*\n",
    "i32*: i32* i32* i8 i32* i16 i32* i32 i32* u8 i32* u16 i32* u32 i32* f16 f16* bf16 bf16* f32 f32*\n",
    "u8: u8 u8 i16 u8 i16 u8 i32 u8 u8 u8 u16 u8 u32 u8 f16 f32* bf16 f32* f32 f32*\n",
    "u8*: i32* u8* i8 i16* i16 i16* i32 i32* u8 u8* u16 u16* u32 u32* f16 f16* bf16 bf16* f32 f32*\n",
    "u16: u16 u16 i32 u16 i32 u16 i32 u16 u16 u16 u16 u16 u32 u16 f16 f32* bf16 f32* f32 f32*\n",
    "u16*: i32* u16* i8 i32* i16 i32* i32 i32* u8 u16* u16 u16* u32 u32* f16 f16* bf16 bf16* f32 f32*\n",
    "u32: u32 u32 i32 u32 i32 u32 i32 u32 u32 u32 u32 u32 u32 u32 f16 f32* bf16 f32* f32 f32*\n",
    "u32*: i32* u32* i8 i32* i16 i32* i32 i32* u8 u32* u16 u32* u32 u32* f16 f16* bf16 bf16* f32 f32*\n",
    "f16: f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f16 f32 f16\n",
    "f16*: f32* f16* f32* f16* f32* f16* f32* f16* f32* f16* f32* f16* f32* f16* f16 f16* bf16 f32* f32 f32*\n",
    "bf16: bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 bf16 bf16 f32 bf16\n",
    "bf16*: f32* bf16* f32* bf16* f32* bf16* f32* bf16* f32* bf16* f32* bf16* f32* bf16* f16 f32* bf16 bf16* f32 f32*\n",
    "f32: f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32\n",
    "f32*: f32* f32* f32* f32* f32* f32* f32* f32* f32* f32* f32* f32* f32* f32* f16 f32* bf16 f32* f32 f32*\n",
    );

    /// x32: seeded random operand triples.
    const TRIPLES_X32: &str = concat!(
    "triples\n",
    "u16,i16,u32=i32 bool*,i8,bf16*=f32* i8*,u16*,f32=f32 bool*,bf16,i32=bf16 bool*,i8,u32*=i8 u32*,i8,i32*=i8 i8,bf16*,u32*=f32* bool*,f32,i8*=f32\n",
    "i32*,f32,bool*=f32 f32,f32,u32=f32 bool*,i32*,bool*=i32* bf16*,i16,u8*=f32* u32*,i16,bf16*=f32* i8*,f32,u8*=f32 bf16*,i16*,i8*=bf16* f32,f32,i32=f32\n",
    "u16*,i8*,bf16*=bf16* i8,f32,bool*=f32 f32*,i32,f16*=f32* bf16*,u32*,u16=f32* f16,f32,f16=f32 u16*,u8*,i32*=i32* i16*,i32*,i8=i8 f32,u8*,bf16=f32\n",
    "f16*,u16,f16=f16 u8*,f32*,i8=f32* i8*,bf16,u32*=bf16 i16*,u16,i16=i32 f16*,u32*,bool*=f16* i8,bf16*,f32=f32 u16,u16,u16*=u16 f32*,f16*,f32=f32\n",
    "f16,i8,i8=f16 u8,f16*,i8=f32* bool*,u8*,f32=f32 f16,u8*,u32=f16 u16*,bool,f16=f16 u16*,i16*,f32*=f32* i8*,f16*,bool*=f16* i32,u8*,i16=i32\n",
    "i32*,u32,u32=u32 f16*,i8,i16*=f32* f16,u32,bf16*=f16 u8,i16,u32*=i16 bf16*,u8,u32*=f32* u16*,u32,i32*=u32 i16,i8,i16*=i16 i16,i32*,i32*=i16\n",
    "bool,f16*,f32=f32 i16*,u8,u8*=u8 bool,i16,u32*=i16 bf16*,u16*,f32*=f32* f32,u16,i16=f32 bf16,f32*,bool*=bf16 f16,bf16*,u32=f16 u32,u32,u32=u32\n",
    "i8*,f16*,u32=f32* bool*,i32,i8=i32 i32,f16,i16*=f16 i8*,u16,f32*=f32* bool*,i8*,bool=i32* f32,i16,bf16*=f32 i8*,u16*,f32*=f32* bool,i8,i32=i32\n",
    "f32*,u32,i16=f32* u8,u16*,f32*=f32* u16*,f16*,i8*=f16* i8*,f16*,f16=f16 f16*,f16*,u8*=f16* i8,i16,i8*=i16 u16,u8,f16*=f32* i16*,bf16,bool=bf16\n",
    "i32,bf16,u16*=bf16 i16,bf16*,bool=f32* bf16,u8*,i8=bf16 u8,bf16,u16*=bf16 i16*,u16*,i32*=i32* bf16*,bf16*,bf16=bf16 u16,i32*,f32*=f32* i32,i32*,u32=i32\n",
    "i32*,i32,bf16=bf16 f16*,u16*,bool=f32* bool,u8,f16*=f32* u8,i32,f32*=f32* u16*,f16,u16*=f16 u16*,i8,i32*=i8 i8*,i32*,f16*=f16* i32,u16,i32=i32\n",
    "f16*,f32*,f32*=f32* bool,f16*,u16*=f32* i8,i8*,u32=i32 i32,f16*,i16*=f32* u32*,u16,i8=i32 u32,f16,u32=f16 i8,i16*,i16*=i8 i16,bool,i16=i16\n",
    "f32,f16,i16=f32 f32*,f32*,f16*=f32* u16*,i16,bf16*=f32* bf16*,i16,bool=f32* bool,i8*,bf16=bf16 i16,u32*,i32=i32 i32,bool,u8=i32 i32,u8*,bf16=bf16\n",
    "i32*,f32,u16=f32 u8,bf16*,u32*=f32* i16,bool*,u16*=i16 f16,f32,bf16=f32 u32*,bf16,i16=bf16 bf16*,i16,bf16=bf16 bf16,bool,f16=f32 i16*,f32*,bool=f32*\n",
    "i16,i16*,i16=i16 f16*,f32*,i8*=f32* bf16*,bool*,u16=f32* bf16,bf16,bf16*=bf16 f16*,i8*,bf16*=f32* bool*,i32*,i32=i32 u8,bool*,i8*=u8 bf16,f16,bf16*=f32\n",
    "bool,i8,f16=f16 u16,f32*,bf16=bf16 f32*,bf16,i32=bf16 u8,f16,bf16=f32 bf16*,f16*,bf16=bf16 i32*,bf16,u8=bf16 bf16*,i32,f16=f16 i16,u32*,i8*=i16\n",
    "u32,f16,u16=f16 i8,i32*,u32*=i8 i8,i32,u8*=i32 i8*,i16,u16*=i16 i16,u8,i16=i16 f16,i32*,i8*=f16 u32,f16*,i16*=f32* i32*,i16*,u32*=i32*\n",
    "bf16,u32,u16=bf16 u32*,i32,u16*=i32 u16,i8,u16*=i32 bool,u16,bf16*=f32* f16,f16,bool=f16 u32,u16,bf16=bf16 f32*,u8*,bf16=bf16 i8,i8*,i32*=i8\n",
    "i8*,i8,u8=i16 u8,bool*,i16*=u8 u8,i16,u32*=i16 u8,u32,i16=i32 bf16*,bf16,f32=f32 f16*,u16,i8=f32* u8,bool*,i16*=u8 u32*,i8,u8=i16\n",
    "bool,i8,u8=i16 i8,f32*,i32*=f32* i8,u8,i8*=i16 f16,bool,u16=f16 bf16*,u32*,u8=f32* f32*,i16,bool*=f32* bf16,i32*,i8*=bf16 i16*,u8,bool*=u8\n",
    );

    /// `result_type` or `result_type_x32`.
    type ResultTypeFn = fn(&[(DType, bool)]) -> Result<(DType, bool), PromotionError>;

    /// Parses `f32` / `f32*` (weak) into an operand or result.
    fn typ(s: &str) -> (DType, bool) {
        let (name, weak) = match s.strip_suffix('*') {
            Some(n) => (n, true),
            None => (s, false),
        };
        (DType::from_name(name).expect(name), weak)
    }

    /// Checks a pair table: each line `a: r1 r2 ...` against the operand
    /// order given in the section comment.
    fn check_pairs(table: &str, f: ResultTypeFn) {
        let mut lines = table.lines();
        let header = lines.next().unwrap();
        let order: Vec<(DType, bool)> = header
            .split("operands in order ")
            .nth(1)
            .unwrap()
            .split(" (")
            .next()
            .unwrap()
            .split(' ')
            .map(typ)
            .collect();
        let mut count = 0;
        for line in lines {
            let (a, results) = line.split_once(": ").unwrap();
            let a = typ(a);
            let results: Vec<&str> = results.split(' ').collect();
            assert_eq!(results.len(), order.len(), "{line}");
            for (&b, want) in order.iter().zip(results) {
                assert_eq!(f(&[a, b]), Ok(typ(want)), "{a:?} with {b:?}");
                count += 1;
            }
        }
        assert_eq!(count, order.len() * order.len());
    }

    fn check_triples(table: &str, f: ResultTypeFn) {
        let mut count = 0;
        for entry in table.lines().skip(1).flat_map(|l| l.split(' ')) {
            let (ops, want) = entry.split_once('=').unwrap();
            let ops: Vec<(DType, bool)> = ops.split(',').map(typ).collect();
            assert_eq!(f(&ops), Ok(typ(want)), "{ops:?}");
            count += 1;
        }
        assert_eq!(count, 160);
    }

    #[test]
    fn strong_promote_types_matches_jax() {
        let rows: Vec<&str> = STRONG_X64.lines().skip(1).collect();
        assert_eq!(rows.len(), 15);
        for (&a, row) in DType::ALL.iter().zip(rows) {
            let row: Vec<&str> = row.split(' ').collect();
            assert_eq!(row.len(), 15);
            for (&b, want) in DType::ALL.iter().zip(row) {
                let want = DType::from_name(want).unwrap();
                assert_eq!(promote_types(a, b), want, "{a} {b}");
                // result_type on strong operands agrees up to the weak flag.
                assert_eq!(result_type(&[(a, false), (b, false)]).unwrap().0, want);
            }
        }
    }

    #[test]
    fn weak_pairs_match_jax_x64() {
        check_pairs(PAIRS_X64, result_type);
    }

    #[test]
    fn weak_pairs_match_jax_x32() {
        check_pairs(PAIRS_X32, result_type_x32);
    }

    #[test]
    fn triples_match_jax() {
        check_triples(TRIPLES_X64, result_type);
        check_triples(TRIPLES_X32, result_type_x32);
    }

    #[test]
    fn python_scalars_match_jax() {
        let scalars = [(DType::I64, true), (DType::F64, true), (DType::Bool, false)];
        let mut count = 0;
        for line in PY_SCALARS_X64.lines().skip(1) {
            let (d, results) = line.split_once(": ").unwrap();
            let d = typ(d);
            for (&s, want) in scalars.iter().zip(results.split(' ')) {
                assert_eq!(result_type(&[d, s]), Ok(typ(want)), "{d:?} {s:?}");
                count += 1;
            }
        }
        assert_eq!(count, 39);
    }

    /// Python `complex` scalars (`c*`) and complex operands, as JAX 0.10.2's
    /// `jnp.result_type` gives them.
    #[test]
    fn complex_weak_scalars_match_jax() {
        let c = (DType::C128, true);
        let cases = [
            ((DType::F32, false), c, (DType::C64, false)),
            ((DType::F16, false), c, (DType::C64, false)),
            ((DType::F64, false), c, (DType::C128, false)),
            ((DType::I32, false), c, (DType::C128, true)),
            ((DType::C64, false), (DType::F64, true), (DType::C64, false)),
            (
                (DType::C64, false),
                (DType::F64, false),
                (DType::C128, false),
            ),
            ((DType::F64, true), c, (DType::C128, true)),
        ];
        for (a, b, want) in cases {
            assert_eq!(result_type(&[a, b]), Ok(want), "{a:?} {b:?}");
        }
        assert_eq!(
            result_type_x32(&[(DType::I32, false), c]),
            Ok((DType::C64, true))
        );
        assert_eq!(
            result_type_x32(&[(DType::C128, false)]),
            Ok((DType::C64, false))
        );
    }

    #[test]
    fn single_and_empty() {
        assert_eq!(result_type(&[]), Err(PromotionError::NoInputs));
        assert_eq!(result_type(&[(DType::F16, true)]), Ok((DType::F16, true)));
        assert_eq!(
            result_type(&[(DType::Bool, true)]),
            Ok((DType::Bool, false))
        );
        assert_eq!(
            result_type_x32(&[(DType::I64, false)]),
            Ok((DType::I32, false))
        );
    }

    #[test]
    fn promote_types_is_commutative_and_idempotent() {
        for a in DType::ALL {
            assert_eq!(promote_types(a, a), a);
            for b in DType::ALL {
                assert_eq!(promote_types(a, b), promote_types(b, a));
            }
        }
        // Not associative, as in JAX: i8 and u64 meet at the weak float node,
        // which `promote_types` reports as f64, while the set lub is f16.
        let left = promote_types(promote_types(DType::I8, DType::U64), DType::F16);
        let right = promote_types(DType::I8, promote_types(DType::U64, DType::F16));
        assert_eq!((left, right), (DType::F64, DType::F16));
        let all = [(DType::I8, false), (DType::U64, false), (DType::F16, false)];
        assert_eq!(result_type(&all), Ok((DType::F16, false)));
    }
}
