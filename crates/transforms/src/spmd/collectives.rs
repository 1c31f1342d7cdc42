//! The collectives defined over a `shard_map`'s mesh axes only:
//! `ppermute`, `all_to_all`, `psum_scatter`, and `all_gather` with JAX's
//! `axis`/`tiled` options. Each binds its primitive, with the axis size
//! read from the enclosing `shard_map`'s axis env; over a name no
//! `shard_map` binds it is an error naming the axis.

use crate::batch::mesh_axis_size;
use jaxon_ir::primitive::{
    AllGatherParams, AllToAllParams, Collective, PpermuteParams, ReduceScatterParams,
};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, Array};

fn bind_one(c: Collective, x: &Array) -> Result<Array> {
    bind1(&Primitive::Collective(c), std::slice::from_ref(x))
}

/// `ppermute(x, axis_name, perm)`: device `src` sends its `x` to device
/// `dst` for each `(src, dst)` pair (indices along the axis); a device no
/// pair sends to receives zeros. Each source and each destination appears
/// at most once.
pub fn ppermute(x: &Array, axis_name: &str, perm: &[(usize, usize)]) -> Result<Array> {
    let n = mesh_axis_size(axis_name, "ppermute")?;
    let (mut src, mut dst) = (vec![false; n], vec![false; n]);
    for &(s, d) in perm {
        if s >= n || d >= n {
            return Err(Error::InvalidArgument(format!(
                "ppermute: pair ({s}, {d}) is out of range for axis '{axis_name}' of size {n}"
            )));
        }
        if std::mem::replace(&mut src[s], true) || std::mem::replace(&mut dst[d], true) {
            return Err(Error::InvalidArgument(format!(
                "ppermute: perm {perm:?} names a source or a destination twice"
            )));
        }
    }
    bind_one(
        Collective::Ppermute(PpermuteParams {
            axis_name: vec![axis_name.to_string()],
            perm: perm.to_vec(),
        }),
        x,
    )
}

/// `all_to_all(x, axis_name, split_axis, concat_axis, tiled)`: each
/// device splits `x` into `n` chunks along `split_axis`, sends chunk `j` to
/// device `j`, and concatenates what it receives along `concat_axis`
/// (`tiled=true`; JAX's untiled form is the same exchange with the chunk
/// axis kept, which this spelling does not offer).
pub fn all_to_all(
    x: &Array,
    axis_name: &str,
    split_axis: isize,
    concat_axis: isize,
) -> Result<Array> {
    let n = mesh_axis_size(axis_name, "all_to_all")?;
    let split = crate::util::normalize_axis(split_axis, x.ndim(), "all_to_all split_axis")?;
    let concat = crate::util::normalize_axis(concat_axis, x.ndim(), "all_to_all concat_axis")?;
    let shape = x.try_shape()?;
    if shape[split] % n != 0 {
        return Err(Error::InvalidArgument(format!(
            "all_to_all: split_axis {split} of shape {shape:?} (size {}) is not divisible by the \
             size {n} of axis '{axis_name}'",
            shape[split]
        )));
    }
    bind_one(
        Collective::AllToAll(AllToAllParams {
            axis_name: vec![axis_name.to_string()],
            name_tuple: false,
            split_axis: split,
            concat_axis: concat,
            tiled: true,
            axis_size: Some(n),
        }),
        x,
    )
}

/// `psum_scatter(x, axis_name, scatter_dimension, tiled)`: the `psum` of
/// `x`, of which device `i` keeps block `i` along `scatter_dimension`
/// (`tiled`: the dimension shrinks by the axis size; otherwise its size
/// must equal the axis size and it is removed).
pub fn psum_scatter(
    x: &Array,
    axis_name: &str,
    scatter_dimension: isize,
    tiled: bool,
) -> Result<Array> {
    let n = mesh_axis_size(axis_name, "psum_scatter")?;
    let d = crate::util::normalize_axis(
        scatter_dimension,
        x.ndim(),
        "psum_scatter scatter_dimension",
    )?;
    let shape = x.try_shape()?;
    let fits = if tiled {
        shape[d] % n == 0
    } else {
        shape[d] == n
    };
    if !fits {
        return Err(Error::InvalidArgument(format!(
            "psum_scatter: dimension {d} of shape {shape:?} must {} the size {n} of axis \
             '{axis_name}'",
            if tiled { "be divisible by" } else { "equal" }
        )));
    }
    bind_one(
        Collective::ReduceScatter(ReduceScatterParams {
            axis_name: vec![axis_name.to_string()],
            axis_size: n,
            scatter_dimension: d,
            tiled,
        }),
        x,
    )
}

/// `all_gather(x, axis_name, axis=axis, tiled=tiled)` over a mesh axis:
/// every device's `x`, stacked along a new dimension `axis` (or, `tiled`,
/// concatenated along dimension `axis`).
pub fn all_gather_with(x: &Array, axis_name: &str, axis: isize, tiled: bool) -> Result<Array> {
    let n = mesh_axis_size(axis_name, "all_gather")?;
    let rank = x.ndim() as isize + isize::from(!tiled);
    if axis >= rank || axis < -rank {
        return Err(Error::InvalidArgument(format!(
            "all_gather: axis {axis} is out of bounds for a result of rank {rank}"
        )));
    }
    let axis = if axis < 0 { axis + rank } else { axis } as usize;
    bind_one(
        Collective::AllGather(AllGatherParams {
            axis_name: vec![axis_name.to_string()],
            all_gather_dimension: axis,
            axis_size: n,
            tiled,
        }),
        x,
    )
}
