//! Pytrees: nested Rust values flattened to a list of `Array` leaves and a
//! `TreeDef` describing the structure.
//!
//! Invariants: `T::unflatten(&def, leaves)` of `t.flatten()` rebuilds `t`;
//! static leaves (Rust scalars, `Static<T>`) live in the `TreeDef`, so they
//! are part of a jit cache key and never become tracers.
//!
//! Depth: a recursive type (`struct Tree { x: Array, kids: Vec<Tree> }`)
//! makes trees as deep as its values. Every recursion over trees — the
//! container impls here, `TreeDef`'s clone, equality, hash, debug output
//! and `num_leaves`, the walks in `tree_util` — runs through [`deep`],
//! which moves onto a fresh heap-allocated stack segment when the thread's
//! stack runs low, and `TreeDef`'s drop is iterative; so a tree of any
//! depth flattens, compares, hashes and drops without a stack overflow.

use crate::array::Array;
use crate::error::{Error, Result};
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::{self, Debug};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Runs `f` with at least 128 KiB of stack left: when a deep tree's
/// recursion has used the thread's stack up, `f` continues on a fresh
/// 2 MiB segment allocated on the heap (`stacker`). Recursions over pytrees
/// go through it, so nesting depth is bounded by memory, not by the stack.
#[inline]
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, f)
}

/// The structure of a pytree, without its array leaves.
///
/// Clone, equality, hashing and debug output recurse through [`deep`] at
/// interior nodes only (a leaf costs no stack check on the dispatch path);
/// drop is iterative.
pub enum TreeDef {
    /// One array leaf.
    Leaf,
    /// A static value, compared and hashed by value.
    Static(StaticLeaf),
    /// An interior node and its children, in flattening order.
    Node(NodeKind, Vec<TreeDef>),
}

/// The kind of an interior pytree node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A tuple (including `()`).
    Tuple,
    /// A `Vec`.
    List,
    /// A fixed-size Rust array.
    FixedArray,
    /// `None`.
    None,
    /// `Some`.
    Some,
    /// A string-keyed map; the keys in order.
    Map(Vec<String>),
    /// A struct deriving `Pytree`: its name and field names.
    Struct {
        /// The type's name.
        name: &'static str,
        /// The fields, in flattening order.
        fields: Vec<&'static str>,
    },
}

impl Clone for TreeDef {
    fn clone(&self) -> TreeDef {
        match self {
            TreeDef::Leaf => TreeDef::Leaf,
            TreeDef::Static(s) => TreeDef::Static(s.clone()),
            TreeDef::Node(k, children) => deep(|| TreeDef::Node(k.clone(), children.clone())),
        }
    }
}

impl PartialEq for TreeDef {
    fn eq(&self, other: &TreeDef) -> bool {
        match (self, other) {
            (TreeDef::Leaf, TreeDef::Leaf) => true,
            (TreeDef::Static(a), TreeDef::Static(b)) => a == b,
            (TreeDef::Node(k, a), TreeDef::Node(l, b)) => k == l && deep(|| a == b),
            (TreeDef::Leaf | TreeDef::Static(_) | TreeDef::Node(..), _) => false,
        }
    }
}

impl Eq for TreeDef {}

impl Hash for TreeDef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            TreeDef::Leaf => {}
            TreeDef::Static(s) => s.hash(state),
            TreeDef::Node(k, children) => {
                k.hash(state);
                deep(|| children.hash(state));
            }
        }
    }
}

impl Debug for TreeDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeDef::Leaf => f.write_str("Leaf"),
            TreeDef::Static(s) => f.debug_tuple("Static").field(s).finish(),
            TreeDef::Node(k, children) => {
                deep(|| f.debug_tuple("Node").field(k).field(children).finish())
            }
        }
    }
}

impl Drop for TreeDef {
    /// Iterative: children are moved onto a work list before they drop, so
    /// no drop recurses.
    fn drop(&mut self) {
        let TreeDef::Node(_, children) = self else {
            return;
        };
        if children
            .iter()
            .all(|c| !matches!(c, TreeDef::Node(_, cc) if !cc.is_empty()))
        {
            return;
        }
        let mut work = std::mem::take(children);
        while let Some(mut c) = work.pop() {
            if let TreeDef::Node(_, cc) = &mut c {
                work.append(cc);
            }
        }
    }
}

impl TreeDef {
    /// The number of array leaves.
    pub fn num_leaves(&self) -> usize {
        match self {
            TreeDef::Leaf => 1,
            TreeDef::Static(_) => 0,
            TreeDef::Node(_, children) => deep(|| children.iter().map(TreeDef::num_leaves).sum()),
        }
    }

    /// The children of a node of `kind`, or a structure-mismatch error.
    pub fn children_of(&self, kind: &NodeKind, arity: Option<usize>) -> Result<&[TreeDef]> {
        match self {
            TreeDef::Node(k, children)
                if k == kind && arity.is_none_or(|n| n == children.len()) =>
            {
                Ok(children)
            }
            _ => Err(mismatch(&format!("{kind:?} node"), self)),
        }
    }
}

fn mismatch(expected: &str, got: &TreeDef) -> Error {
    let mut shown = format!("{got:?}");
    if shown.len() > 400 {
        let cut = (0..=400)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push_str(" …");
    }
    Error::InvalidArgument(format!(
        "pytree structure mismatch: expected a {expected}, got {shown}"
    ))
}

/// A static value in a tree: any `Eq + Hash + Debug` Rust value.
#[derive(Clone)]
pub struct StaticLeaf(Arc<dyn StaticValue>);

/// Object-safe equality and hashing for static leaves.
pub trait StaticValue: Any + Send + Sync + Debug {
    /// Equality with another static value of any type.
    fn dyn_eq(&self, other: &dyn StaticValue) -> bool;
    /// Feeds the value to a hasher.
    fn dyn_hash(&self, state: &mut dyn Hasher);
    /// Downcasting.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any + Send + Sync + Debug + Eq + Hash> StaticValue for T {
    fn dyn_eq(&self, other: &dyn StaticValue) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn dyn_hash(&self, mut state: &mut dyn Hasher) {
        self.type_id().hash(&mut state);
        self.hash(&mut state);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl StaticLeaf {
    /// Wraps a value.
    pub fn new<T: Any + Send + Sync + Debug + Eq + Hash>(value: T) -> StaticLeaf {
        StaticLeaf(Arc::new(value))
    }

    /// The value, if it has type `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

impl PartialEq for StaticLeaf {
    fn eq(&self, other: &StaticLeaf) -> bool {
        self.0.dyn_eq(&*other.0)
    }
}

impl Eq for StaticLeaf {}

impl Hash for StaticLeaf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.dyn_hash(state)
    }
}

impl Debug for StaticLeaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "static {:?}", self.0)
    }
}

/// A value flattened to array leaves and a structure.
pub trait Pytree: Sized {
    /// Pushes the array leaves and returns the structure.
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef;

    /// Rebuilds a value of structure `def` from the leaves, in order.
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self>;

    /// The array leaves and the structure.
    fn flatten(&self) -> (Vec<Array>, TreeDef) {
        let mut leaves = Vec::new();
        let def = self.flatten_into(&mut leaves);
        (leaves, def)
    }

    /// Rebuilds a value; every leaf must be used.
    fn unflatten(def: &TreeDef, leaves: Vec<Array>) -> Result<Self> {
        let n = leaves.len();
        if n != def.num_leaves() {
            return Err(Error::InvalidArgument(format!(
                "pytree has {} leaves but {n} arrays were given",
                def.num_leaves()
            )));
        }
        let mut it = leaves.into_iter();
        Self::unflatten_from(def, &mut it)
    }
}

impl Pytree for Array {
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
        leaves.push(self.clone());
        TreeDef::Leaf
    }
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        match def {
            TreeDef::Leaf => leaves
                .next()
                .ok_or_else(|| Error::InvalidArgument("pytree: too few leaves".into())),
            other => Err(mismatch("array leaf", other)),
        }
    }
}

/// A value passed through a pytree statically: hashed into jit's cache key,
/// never traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Static<T>(pub T);

impl<T: Clone + Any + Send + Sync + Debug + Eq + Hash> Pytree for Static<T> {
    fn flatten_into(&self, _: &mut Vec<Array>) -> TreeDef {
        TreeDef::Static(StaticLeaf::new(self.0.clone()))
    }
    fn unflatten_from(def: &TreeDef, _: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        match def {
            TreeDef::Static(s) => s
                .get::<T>()
                .cloned()
                .map(Static)
                .ok_or_else(|| mismatch(std::any::type_name::<T>(), def)),
            other => Err(mismatch("static leaf", other)),
        }
    }
}

/// A static float, held by its bits so it can be hashed (NaNs with equal
/// bits compare equal, as a cache key needs).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct StaticF32(u32);

/// See [`StaticF32`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct StaticF64(u64);

impl Debug for StaticF32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f32::from_bits(self.0).fmt(f)
    }
}

impl Debug for StaticF64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f64::from_bits(self.0).fmt(f)
    }
}

macro_rules! static_float {
    ($($t:ty => $w:ident),*) => {$(
        impl Pytree for $t {
            fn flatten_into(&self, _: &mut Vec<Array>) -> TreeDef {
                TreeDef::Static(StaticLeaf::new($w(self.to_bits())))
            }
            fn unflatten_from(def: &TreeDef, _: &mut dyn Iterator<Item = Array>) -> Result<Self> {
                match def {
                    TreeDef::Static(s) => s
                        .get::<$w>()
                        .map(|b| <$t>::from_bits(b.0))
                        .ok_or_else(|| mismatch(stringify!($t), def)),
                    other => Err(mismatch(stringify!($t), other)),
                }
            }
        }
    )*};
}

static_float!(f32 => StaticF32, f64 => StaticF64);

macro_rules! static_scalar {
    ($($t:ty),*) => {$(
        impl Pytree for $t {
            fn flatten_into(&self, _: &mut Vec<Array>) -> TreeDef {
                TreeDef::Static(StaticLeaf::new(self.clone()))
            }
            fn unflatten_from(def: &TreeDef, _: &mut dyn Iterator<Item = Array>) -> Result<Self> {
                match def {
                    TreeDef::Static(s) => s
                        .get::<$t>()
                        .cloned()
                        .ok_or_else(|| mismatch(stringify!($t), def)),
                    other => Err(mismatch(stringify!($t), other)),
                }
            }
        }
    )*};
}

static_scalar!(bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, isize, String);

macro_rules! tuple_pytree {
    ($n:expr; $($t:ident $i:tt),*) => {
        impl<$($t: Pytree),*> Pytree for ($($t,)*) {
            #[allow(unused_variables)]
            fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
                TreeDef::Node(NodeKind::Tuple, vec![$(self.$i.flatten_into(leaves)),*])
            }
            #[allow(unused_variables)]
            fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
                let children = def.children_of(&NodeKind::Tuple, Some($n))?;
                Ok(($($t::unflatten_from(&children[$i], leaves)?,)*))
            }
        }
    };
}

tuple_pytree!(0;);
tuple_pytree!(1; A 0);
tuple_pytree!(2; A 0, B 1);
tuple_pytree!(3; A 0, B 1, C 2);
tuple_pytree!(4; A 0, B 1, C 2, D 3);
tuple_pytree!(5; A 0, B 1, C 2, D 3, E 4);
tuple_pytree!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_pytree!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_pytree!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

impl<T: Pytree> Pytree for Vec<T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
        deep(|| {
            TreeDef::Node(
                NodeKind::List,
                self.iter().map(|x| x.flatten_into(leaves)).collect(),
            )
        })
    }
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        deep(|| {
            def.children_of(&NodeKind::List, None)?
                .iter()
                .map(|c| T::unflatten_from(c, leaves))
                .collect()
        })
    }
}

/// A box is transparent: its value's tree (boxes make recursive types).
impl<T: Pytree> Pytree for Box<T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
        deep(|| (**self).flatten_into(leaves))
    }
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        deep(|| T::unflatten_from(def, leaves).map(Box::new))
    }
}

impl<T: Pytree, const N: usize> Pytree for [T; N] {
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
        TreeDef::Node(
            NodeKind::FixedArray,
            self.iter().map(|x| x.flatten_into(leaves)).collect(),
        )
    }
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        let v = def
            .children_of(&NodeKind::FixedArray, Some(N))?
            .iter()
            .map(|c| T::unflatten_from(c, leaves))
            .collect::<Result<Vec<T>>>()?;
        v.try_into()
            .map_err(|_| Error::InvalidArgument("pytree: fixed array length".into()))
    }
}

impl<T: Pytree> Pytree for Option<T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
        deep(|| match self {
            None => TreeDef::Node(NodeKind::None, Vec::new()),
            Some(x) => TreeDef::Node(NodeKind::Some, vec![x.flatten_into(leaves)]),
        })
    }
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        deep(|| match def {
            TreeDef::Node(NodeKind::None, _) => Ok(None),
            TreeDef::Node(NodeKind::Some, c) if c.len() == 1 => {
                Ok(Some(T::unflatten_from(&c[0], leaves)?))
            }
            other => Err(mismatch("Option", other)),
        })
    }
}

impl<T: Pytree> Pytree for BTreeMap<String, T> {
    fn flatten_into(&self, leaves: &mut Vec<Array>) -> TreeDef {
        deep(|| {
            TreeDef::Node(
                NodeKind::Map(self.keys().cloned().collect()),
                self.values().map(|x| x.flatten_into(leaves)).collect(),
            )
        })
    }
    fn unflatten_from(def: &TreeDef, leaves: &mut dyn Iterator<Item = Array>) -> Result<Self> {
        deep(|| match def {
            TreeDef::Node(NodeKind::Map(keys), children) if keys.len() == children.len() => keys
                .iter()
                .zip(children)
                .map(|(k, c)| Ok((k.clone(), T::unflatten_from(c, leaves)?)))
                .collect(),
            other => Err(mismatch("map", other)),
        })
    }
}

/// Applies `f` to every array leaf of `tree`, keeping the structure
/// (`jax.tree.map(f, tree)`).
pub fn tree_map<T: Pytree>(tree: &T, mut f: impl FnMut(&Array) -> Array) -> Result<T> {
    let (leaves, def) = tree.flatten();
    let mapped = leaves.iter().map(&mut f).collect();
    T::unflatten(&def, mapped)
}

/// Applies `f` to the corresponding leaves of two trees of the same
/// structure (`jax.tree.map(f, a, b)`); trees of different structures are
/// an error naming both.
pub fn tree_map2<T: Pytree>(a: &T, b: &T, mut f: impl FnMut(&Array, &Array) -> Array) -> Result<T> {
    tree_map_n(&[a, b], |xs| f(&xs[0], &xs[1]))
}

/// Applies `f` to the corresponding leaves of several trees of one
/// structure (`jax.tree.map(f, *trees)`): `f` gets one leaf of each tree,
/// in order. No trees, or trees of different structures, are an error.
pub fn tree_map_n<T: Pytree>(trees: &[&T], mut f: impl FnMut(&[Array]) -> Array) -> Result<T> {
    let flat: Vec<(Vec<Array>, TreeDef)> = trees.iter().map(|t| t.flatten()).collect();
    let Some((_, def)) = flat.first() else {
        return Err(Error::InvalidArgument(
            "tree_map: no trees to map over".into(),
        ));
    };
    if let Some((k, (_, other))) = flat.iter().enumerate().find(|(_, (_, d))| d != def) {
        return Err(Error::InvalidArgument(format!(
            "tree_map: tree {k} has structure {other:?}, but tree 0 has {def:?}"
        )));
    }
    let n = def.num_leaves();
    let mut args = Vec::with_capacity(flat.len());
    let mapped = (0..n)
        .map(|i| {
            args.clear();
            args.extend(flat.iter().map(|(leaves, _)| leaves[i].clone()));
            f(&args)
        })
        .collect();
    T::unflatten(def, mapped)
}

/// The array leaves of `tree`, in flattening order (`jax.tree.leaves`).
pub fn tree_leaves<T: Pytree>(tree: &T) -> Vec<Array> {
    tree.flatten().0
}

/// The structure of `tree` (`jax.tree.structure`).
pub fn tree_structure<T: Pytree>(tree: &T) -> TreeDef {
    tree.flatten().1
}

/// Folds `f` over the leaves of `tree` from `init`, in flattening order
/// (`jax.tree.reduce(f, tree, init)`).
pub fn tree_reduce<T: Pytree, A>(tree: &T, init: A, f: impl FnMut(A, &Array) -> A) -> A {
    tree.flatten().0.iter().fold(init, f)
}

/// The array leaves of `tree` with their key paths, in flattening order
/// (`jax.tree_util.tree_flatten_with_path`, each path written as JAX's
/// `keystr(path, simple=True, separator=".")`): a struct field or map key
/// by name, a tuple, `Vec` or array element by index, `Some` adds nothing.
/// A lone array's path is the empty string.
///
/// ```
/// use jaxon_trace::pytree::tree_leaves_with_path;
/// use jaxon_trace::Array;
///
/// let layer = (Array::from_vec(vec![0f32; 6], &[2, 3]), vec![Array::from_vec(vec![0f32; 3], &[3])]);
/// let paths: Vec<String> = tree_leaves_with_path(&layer).into_iter().map(|(p, _)| p).collect();
/// assert_eq!(paths, ["0", "1.0"]);
/// ```
pub fn tree_leaves_with_path<T: Pytree>(tree: &T) -> Vec<(String, Array)> {
    let (leaves, def) = tree.flatten();
    leaf_paths(&def).into_iter().zip(leaves).collect()
}

/// The key path of every leaf of `def`, as [`tree_leaves_with_path`]
/// writes them: [`crate::tree_util::leaf_key_paths`] with the bare keys
/// joined by `.`.
pub fn leaf_paths(def: &TreeDef) -> Vec<String> {
    crate::tree_util::leaf_key_paths(def)
        .iter()
        .map(|p| crate::tree_util::keystr_simple(p, "."))
        .collect()
}

// Paths the `#[derive(Pytree)]` expansion names.
#[doc(hidden)]
pub use crate::array::Array as __Array;
#[doc(hidden)]
pub use crate::error::Result as __Result;
