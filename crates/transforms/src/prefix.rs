//! `Prefix<T>`: a value per leaf of a pytree, given as a pytree *prefix* the
//! way JAX's `in_axes`, `out_axes`, `in_specs` and `out_specs` are: one value
//! for a whole subtree, one per child of a node, or one per flattened leaf.
//!
//! `vmap`'s [`Axes`](crate::Axes) is `Prefix<Option<isize>>`;
//! `shard_map`'s [`Specs`](crate::Specs) is `Prefix<PartitionSpec>`.

use jaxon_trace::error::{Error, Result};
use jaxon_trace::pytree::NodeKind;
use jaxon_trace::TreeDef;

/// One `T` per leaf of a pytree, written as a prefix of its structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prefix<T> {
    /// One value for every leaf of this subtree.
    All(T),
    /// One spec per child of the matching node (tuple, list, struct, map,
    /// `Some`), in flattening order.
    Tree(Vec<Prefix<T>>),
    /// One value per flattened leaf of this subtree.
    Leaves(Vec<T>),
}

impl<T: Clone> Prefix<T> {
    /// The per-leaf values for a tree of structure `def`; `what` names the
    /// argument in errors (`"vmap in_axes"`, `"shard_map out_specs"`).
    pub fn resolve(&self, def: &TreeDef, what: &str) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(def.num_leaves());
        self.resolve_into(def, what, &mut out)?;
        Ok(out)
    }

    fn resolve_into(&self, def: &TreeDef, what: &str, out: &mut Vec<T>) -> Result<()> {
        jaxon_trace::pytree::deep(|| self.resolve_node(def, what, out))
    }

    fn resolve_node(&self, def: &TreeDef, what: &str, out: &mut Vec<T>) -> Result<()> {
        match self {
            Prefix::All(a) => {
                out.extend(std::iter::repeat_n(a.clone(), def.num_leaves()));
                Ok(())
            }
            Prefix::Leaves(v) => {
                if v.len() != def.num_leaves() {
                    return Err(Error::InvalidArgument(format!(
                        "{what}: {} entries given for a tree of {} leaves",
                        v.len(),
                        def.num_leaves()
                    )));
                }
                out.extend_from_slice(v);
                Ok(())
            }
            Prefix::Tree(specs) => match def {
                TreeDef::Node(_, children) if children.len() == specs.len() => {
                    for (s, c) in specs.iter().zip(children) {
                        s.resolve_into(c, what, out)?;
                    }
                    Ok(())
                }
                // A `Some` node is transparent, as a one-element spec is for
                // a single leaf.
                TreeDef::Node(NodeKind::Some, children) if children.len() == 1 => {
                    self.resolve_into(&children[0], what, out)
                }
                TreeDef::Leaf if specs.len() == 1 => specs[0].resolve_into(def, what, out),
                _ => Err(Error::InvalidArgument(format!(
                    "{what}: a spec of {} entries does not match the tree structure {def:?}",
                    specs.len()
                ))),
            },
        }
    }
}

impl<T> From<Vec<Prefix<T>>> for Prefix<T> {
    fn from(v: Vec<Prefix<T>>) -> Prefix<T> {
        Prefix::Tree(v)
    }
}

macro_rules! tuple_prefix {
    ($($t:ident),+) => {
        impl<T, $($t: Into<Prefix<T>>),+> From<($($t,)+)> for Prefix<T> {
            #[allow(non_snake_case)]
            fn from(($($t,)+): ($($t,)+)) -> Prefix<T> {
                Prefix::Tree(vec![$($t.into()),+])
            }
        }
    };
}
tuple_prefix!(A);
tuple_prefix!(A, B);
tuple_prefix!(A, B, C);
tuple_prefix!(A, B, C, D);
tuple_prefix!(A, B, C, D, E);
tuple_prefix!(A, B, C, D, E, G);
