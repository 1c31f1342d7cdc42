//! `jax.tree_util` beyond map and leaves: flatten and unflatten, key paths
//! (`tree_flatten_with_path`, `tree_map_with_path`, `keystr`),
//! `tree_all`, `tree_transpose` and the `TreeDef` queries.
//!
//! Invariant: a key path names each step from the root to a leaf the way
//! JAX's keys do: a tuple, `Vec` or array element is a [`PathKey::Index`]
//! (`SequenceKey`), a map entry a [`PathKey::Key`] (`DictKey`), a struct
//! field a [`PathKey::Attr`] (`GetAttrKey`); `Some` adds no step.
//!
//! Registering a type as a pytree (`register_pytree_node`,
//! `register_pytree_node_class`, `register_pytree_with_keys`) is
//! `#[derive(Pytree)]` or an `impl Pytree` in Rust (see `pytree.rs`).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::pytree::{NodeKind, Pytree, TreeDef};
use std::fmt;

/// One step of a key path (JAX's `SequenceKey`, `DictKey`, `GetAttrKey`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathKey {
    /// An element of a tuple, `Vec` or array, by position.
    Index(usize),
    /// An entry of a string-keyed map.
    Key(String),
    /// A field of a struct that derives `Pytree`.
    Attr(&'static str),
}

/// The steps from a tree's root to one of its leaves (`jax.tree_util.KeyPath`).
pub type KeyPath = Vec<PathKey>;

impl fmt::Display for PathKey {
    /// JAX's `str` of a key: `[0]`, `['name']`, `.field`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathKey::Index(i) => write!(f, "[{i}]"),
            PathKey::Key(k) => write!(f, "['{k}']"),
            PathKey::Attr(a) => write!(f, ".{a}"),
        }
    }
}

impl PathKey {
    /// The key alone, as `keystr(.., simple=True)` writes it.
    fn simple(&self) -> String {
        match self {
            PathKey::Index(i) => i.to_string(),
            PathKey::Key(k) => k.clone(),
            PathKey::Attr(a) => a.to_string(),
        }
    }
}

/// `jax.tree_util.keystr(path)`: `['a'][0].w`.
pub fn keystr(path: &[PathKey]) -> String {
    path.iter().map(PathKey::to_string).collect()
}

/// `jax.tree_util.keystr(path, simple=True, separator=sep)`: the bare keys
/// joined by `separator` (`a/0/w`).
pub fn keystr_simple(path: &[PathKey], separator: &str) -> String {
    let keys: Vec<String> = path.iter().map(PathKey::simple).collect();
    keys.join(separator)
}

/// `jax.tree_util.tree_flatten(tree)`: the array leaves in flattening
/// order and the structure that [`tree_unflatten`] rebuilds the tree from.
pub fn tree_flatten<T: Pytree>(tree: &T) -> (Vec<Array>, TreeDef) {
    tree.flatten()
}

/// `jax.tree_util.tree_unflatten(treedef, leaves)`: the tree of structure
/// `def` holding `leaves`; a count or structure that does not fit `T` is an
/// error naming both.
pub fn tree_unflatten<T: Pytree>(def: &TreeDef, leaves: Vec<Array>) -> Result<T> {
    let want = def.num_leaves();
    if leaves.len() != want {
        return Err(Error::InvalidArgument(format!(
            "tree_unflatten: the structure has {want} leaves, got {}",
            leaves.len()
        )));
    }
    T::unflatten(def, leaves)
}

/// The key path of every array leaf of `def`, in flattening order.
pub fn leaf_key_paths(def: &TreeDef) -> Vec<KeyPath> {
    fn walk(def: &TreeDef, path: &mut KeyPath, out: &mut Vec<KeyPath>) {
        crate::pytree::deep(|| walk_node(def, path, out))
    }
    fn walk_node(def: &TreeDef, path: &mut KeyPath, out: &mut Vec<KeyPath>) {
        let mut step = |key: PathKey, child: &TreeDef, out: &mut Vec<KeyPath>| {
            path.push(key);
            walk(child, path, out);
            path.pop();
        };
        match def {
            TreeDef::Leaf => out.push(path.clone()),
            TreeDef::Static(_) => {}
            TreeDef::Node(kind, children) => match kind {
                NodeKind::Tuple | NodeKind::List | NodeKind::FixedArray => {
                    for (i, c) in children.iter().enumerate() {
                        step(PathKey::Index(i), c, out);
                    }
                }
                NodeKind::None | NodeKind::Some => {
                    for c in children {
                        walk(c, path, out);
                    }
                }
                NodeKind::Map(keys) => {
                    for (k, c) in keys.iter().zip(children) {
                        step(PathKey::Key(k.clone()), c, out);
                    }
                }
                NodeKind::Struct { fields, .. } => {
                    for (f, c) in fields.iter().zip(children) {
                        step(PathKey::Attr(f), c, out);
                    }
                }
            },
        }
    }
    let mut out = Vec::new();
    walk(def, &mut Vec::new(), &mut out);
    out
}

/// `jax.tree_util.tree_flatten_with_path(tree)`: each array leaf with its
/// key path, and the structure.
///
/// ```
/// use jaxon_trace::tree_util::{keystr, tree_flatten_with_path};
/// use jaxon_trace::Array;
/// use std::collections::BTreeMap;
///
/// let mut params = BTreeMap::new();
/// params.insert("w".to_string(), vec![Array::scalar(1f32), Array::scalar(2f32)]);
/// let (leaves, _) = tree_flatten_with_path(&params);
/// let paths: Vec<String> = leaves.iter().map(|(p, _)| keystr(p)).collect();
/// assert_eq!(paths, ["['w'][0]", "['w'][1]"]);
/// ```
pub fn tree_flatten_with_path<T: Pytree>(tree: &T) -> (Vec<(KeyPath, Array)>, TreeDef) {
    let (leaves, def) = tree.flatten();
    (leaf_key_paths(&def).into_iter().zip(leaves).collect(), def)
}

/// `jax.tree_util.tree_map_with_path(f, tree)`: `f(path, leaf)` for every
/// array leaf, keeping the structure.
pub fn tree_map_with_path<T: Pytree>(
    tree: &T,
    mut f: impl FnMut(&KeyPath, &Array) -> Array,
) -> Result<T> {
    let (leaves, def) = tree_flatten_with_path(tree);
    let mapped = leaves.iter().map(|(p, x)| f(p, x)).collect();
    T::unflatten(&def, mapped)
}

/// `jax.tree_util.tree_all(tree)`: whether every leaf is true. A leaf must
/// be a concrete real scalar (a bool, or a number that is true when
/// nonzero); a larger array is ambiguous and an error, as in JAX.
pub fn tree_all<T: Pytree>(tree: &T) -> Result<bool> {
    for leaf in tree.flatten().0 {
        let host = leaf.try_to_host("tree_all")?;
        if host.len() != 1 || leaf.dtype().is_key() || leaf.dtype().is_complex() {
            return Err(Error::InvalidArgument(format!(
                "tree_all: the truth value of a {} array of shape {:?} is ambiguous",
                leaf.dtype(),
                leaf.shape()
            )));
        }
        if host.data().get_f64(0) == 0.0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `jax.tree_util.treedef_is_leaf(def)`: whether `def` has no children (a
/// leaf, a static value, `None` or an empty container).
pub fn treedef_is_leaf(def: &TreeDef) -> bool {
    match def {
        TreeDef::Leaf | TreeDef::Static(_) => true,
        TreeDef::Node(_, children) => children.is_empty(),
    }
}

/// `jax.tree_util.treedef_children(def)`: the structures of `def`'s
/// children (none for a leaf).
pub fn treedef_children(def: &TreeDef) -> Vec<TreeDef> {
    match def {
        TreeDef::Leaf | TreeDef::Static(_) => Vec::new(),
        TreeDef::Node(_, children) => children.clone(),
    }
}

/// `outer` with every array leaf replaced by `inner` (JAX's
/// `treedef.compose`).
pub fn treedef_compose(outer: &TreeDef, inner: &TreeDef) -> TreeDef {
    crate::pytree::deep(|| match outer {
        TreeDef::Leaf => inner.clone(),
        TreeDef::Static(_) => outer.clone(),
        TreeDef::Node(kind, children) => TreeDef::Node(
            kind.clone(),
            children.iter().map(|c| treedef_compose(c, inner)).collect(),
        ),
    })
}

/// `jax.tree_util.tree_transpose(outer, inner, tree)`: turns a tree of
/// structure `outer` whose leaves are trees of structure `inner` into a
/// tree of structure `inner` whose leaves are trees of structure `outer`
/// (a `Vec` of pairs into a pair of `Vec`s).
///
/// ```
/// use jaxon_trace::pytree::tree_structure;
/// use jaxon_trace::tree_util::tree_transpose;
/// use jaxon_trace::Array;
///
/// let s = |x: f32| Array::scalar(x);
/// let rows = vec![(s(1.0), s(2.0)), (s(3.0), s(4.0))];
/// let outer = tree_structure(&vec![s(0.0), s(0.0)]);
/// let inner = tree_structure(&(s(0.0), s(0.0)));
/// let (a, b): (Vec<Array>, Vec<Array>) = tree_transpose(&outer, &inner, &rows)?;
/// assert_eq!(a[1].item::<f32>(), 3.0);
/// assert_eq!(b[0].item::<f32>(), 2.0);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn tree_transpose<T: Pytree, U: Pytree>(
    outer: &TreeDef,
    inner: &TreeDef,
    tree: &T,
) -> Result<U> {
    let (leaves, def) = tree.flatten();
    if def != treedef_compose(outer, inner) {
        return Err(Error::InvalidArgument(format!(
            "tree_transpose: the tree has structure {def:?}, not outer {outer:?} of inner {inner:?}"
        )));
    }
    let (no, ni) = (outer.num_leaves(), inner.num_leaves());
    // Leaf (o, i) of the input becomes leaf (i, o) of the output.
    let transposed = (0..ni)
        .flat_map(|i| (0..no).map(move |o| (o, i)))
        .map(|(o, i)| leaves[o * ni + i].clone())
        .collect();
    U::unflatten(&treedef_compose(inner, outer), transposed)
}
