//! `jnp.block`: an array assembled from nested lists of blocks.
//!
//! Invariant: every leaf of a [`Block`] sits at the same list depth `d`;
//! each leaf is first given rank `max(d, largest leaf rank)` by leading
//! size-1 axes, then the innermost lists concatenate along the last axis,
//! the next ones along the axis before it, and the outermost along axis
//! `-d`, as NumPy's `block`.

use crate::array::Array;
use crate::error::{Error, Result};
use crate::lax;

/// A nested list of arrays, the argument of [`block`].
#[derive(Clone, Debug)]
pub enum Block {
    /// One array.
    Array(Array),
    /// A list of blocks, all of the same depth.
    List(Vec<Block>),
}

impl From<Array> for Block {
    fn from(a: Array) -> Self {
        Block::Array(a)
    }
}

impl<T: Into<Block>> From<Vec<T>> for Block {
    fn from(v: Vec<T>) -> Self {
        Block::List(v.into_iter().map(Into::into).collect())
    }
}

/// The list depth of `b` and the largest rank of its arrays, or an error
/// when its leaves sit at different depths.
fn depth_and_rank(b: &Block) -> Result<(usize, usize)> {
    match b {
        Block::Array(a) => Ok((0, a.ndim())),
        Block::List(items) => {
            let Some(first) = items.first() else {
                return Err(Error::InvalidArgument(
                    "block: a list of blocks is empty".into(),
                ));
            };
            let (depth, mut rank) = depth_and_rank(first)?;
            for item in &items[1..] {
                let (d, r) = depth_and_rank(item)?;
                if d != depth {
                    return Err(Error::InvalidArgument(format!(
                        "block: mismatched list depths ({depth} and {d})"
                    )));
                }
                rank = rank.max(r);
            }
            Ok((depth + 1, rank))
        }
    }
}

fn assemble(b: &Block, depth: usize, rank: usize) -> Result<Array> {
    match b {
        Block::Array(a) => {
            let mut shape = vec![1usize; rank - a.ndim()];
            shape.extend(a.shape());
            if shape.len() == a.ndim() {
                Ok(a.clone())
            } else {
                lax::reshape(a, &shape)
            }
        }
        Block::List(items) => {
            let parts = items
                .iter()
                .map(|i| assemble(i, depth - 1, rank))
                .collect::<Result<Vec<_>>>()?;
            let parts = super::promote::promote_dtypes("block", &parts.iter().collect::<Vec<_>>())?;
            lax::concatenate(&parts, rank - depth)
        }
    }
}

/// `jnp.block(arrays)`: assembles an array from nested lists of blocks
/// (see the module doc for the rule); dtypes promote as in
/// `jnp.concatenate`.
///
/// ```
/// use jaxon_trace::numpy::{block, Block};
/// use jaxon_trace::Array;
///
/// let a = Array::from_vec(vec![1f32; 4], &[2, 2]);
/// let b = Array::from_vec(vec![0f32; 6], &[2, 3]);
/// let c = Array::from_vec(vec![2f32; 5], &[1, 5]);
/// let m = block(&Block::from(vec![Block::from(vec![a, b]), Block::from(vec![c])]))?;
/// assert_eq!(m.shape(), vec![3, 5]);
/// # Ok::<(), jaxon_trace::Error>(())
/// ```
pub fn block(arrays: &Block) -> Result<Array> {
    let (depth, rank) = depth_and_rank(arrays)?;
    assemble(arrays, depth, rank.max(depth))
}
