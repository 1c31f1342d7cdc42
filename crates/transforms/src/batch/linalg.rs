//! Batching of the contractions: `dot_general` (the batch dim becomes a
//! dot batch dim or a free dim) and `conv_general_dilated` (the batch dim
//! is folded into the image batch, the output features or feature groups).

use super::rules::Outs;
use super::{moveaxis, to_front};
use jaxon_ir::primitive::DotDimensionNumbers;
use jaxon_ir::primitive::{ConvGeneralDilatedParams, DotGeneralParams, Linalg};
use jaxon_ir::Primitive;
use jaxon_trace::error::{Error, Result};
use jaxon_trace::{bind1, lax, Array};

/// Logical dims mapped to value dims around a batch dim at `bd`.
fn around(dims: &[usize], bd: Option<usize>) -> Vec<usize> {
    match bd {
        Some(bd) => dims
            .iter()
            .map(|&a| if a >= bd { a + 1 } else { a })
            .collect(),
        None => dims.to_vec(),
    }
}

/// The number of free (not contracted, not batch) value dims before `bd`.
fn free_before(bd: usize, contracting: &[usize], batch: &[usize]) -> usize {
    (0..bd)
        .filter(|a| !contracting.contains(a) && !batch.contains(a))
        .count()
}

/// `dot_general` without moving anything: a batch dim on both sides
/// becomes a leading dot batch dim; on one side it is a free dim, found
/// in the output after the batch dims (and the lhs free dims for rhs).
pub(super) fn dot_general(p: &Primitive, x: &[Array], d: &[Option<usize>]) -> Result<Outs> {
    let Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
        dimension_numbers: dn,
        precision,
        preferred_element_type,
    })) = p
    else {
        return Err(Error::InvalidArgument(
            "dot_general rule on another primitive".into(),
        ));
    };
    let mut new_dn = DotDimensionNumbers {
        lhs_contracting: around(&dn.lhs_contracting, d[0]),
        rhs_contracting: around(&dn.rhs_contracting, d[1]),
        lhs_batch: around(&dn.lhs_batch, d[0]),
        rhs_batch: around(&dn.rhs_batch, d[1]),
    };
    let nb = dn.lhs_batch.len();
    let out_dim = match (d[0], d[1]) {
        (Some(l), Some(r)) => {
            new_dn.lhs_batch.insert(0, l);
            new_dn.rhs_batch.insert(0, r);
            0
        }
        (Some(l), None) => nb + free_before(l, &new_dn.lhs_contracting, &new_dn.lhs_batch),
        (None, Some(r)) => {
            let lhs_free = x[0].ndim() - dn.lhs_contracting.len() - nb;
            nb + lhs_free + free_before(r, &new_dn.rhs_contracting, &new_dn.rhs_batch)
        }
        (None, None) => {
            return Err(Error::InvalidArgument(
                "dot_general batching rule without a batched operand".into(),
            ))
        }
    };
    let q = Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
        dimension_numbers: new_dn,
        precision: *precision,
        preferred_element_type: *preferred_element_type,
    }));
    Ok((vec![bind1(&q, x)?], vec![Some(out_dim)]))
}

/// Merges the leading (batch) dim of `x` into its dim `pos + 1`, batch
/// index major: the result has the logical rank with dim `pos` scaled by n.
fn merge_into(x: &Array, pos: usize) -> Result<Array> {
    let moved = moveaxis(x, 0, pos)?;
    let mut shape = moved.try_shape()?;
    let n = shape.remove(pos);
    shape[pos] *= n;
    lax::reshape(&moved, &shape)
}

/// Splits dim `pos` of `y` (of size n·m, batch index major) into `[n, m]`.
fn split_out(y: &Array, pos: usize, n: usize) -> Result<Array> {
    let mut shape = y.try_shape()?;
    let m = shape[pos] / n;
    shape[pos] = m;
    shape.insert(pos, n);
    lax::reshape(y, &shape)
}

/// `conv_general_dilated`. With `G = feature_group_count`:
/// - batched images join the image batch;
/// - batched kernels become more output features, laid out `(group,
///   member, feature)` so that each group still sees its own inputs;
/// - both batched: member `b`'s group `g` becomes group `b·G + g` of a conv
///   with `n·G` groups (member-major merges of the image features and the
///   kernel output features line up exactly so).
///
/// `batch_group_count` other than 1 is not supported.
pub(super) fn conv(p: &Primitive, x: &[Array], d: &[Option<usize>], n: usize) -> Result<Outs> {
    let Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
        dimension_numbers: dn,
        feature_group_count,
        batch_group_count,
        ..
    })) = p
    else {
        return Err(Error::InvalidArgument(
            "conv rule on another primitive".into(),
        ));
    };
    if *batch_group_count != 1 {
        return Err(Error::Unsupported(format!(
            "vmap of conv_general_dilated with batch_group_count={batch_group_count} \
             is not supported (only 1)"
        )));
    }
    let g = *feature_group_count;
    let (lb, lf) = (dn.lhs_spec[0], dn.lhs_spec[1]);
    let ro = dn.rhs_spec[0];
    let (ob, of) = (dn.out_spec[0], dn.out_spec[1]);
    match (d[0], d[1]) {
        (Some(_), None) => {
            let lhs = merge_into(&to_front(&x[0], d[0], n)?, lb)?;
            let out = bind1(p, &[lhs, x[1].clone()])?;
            Ok((vec![split_out(&out, ob, n)?], vec![Some(ob)]))
        }
        (None, Some(_)) => {
            // rhs [n, .., O, ..] -> [.., n, G, O/G, ..] -> [.., G, n, O/G, ..]
            // -> [.., G·n·O/G, ..].
            let moved = moveaxis(&to_front(&x[1], d[1], n)?, 0, ro)?;
            let mut shape = moved.try_shape()?;
            let o = shape[ro + 1];
            shape.splice(ro + 1..ro + 2, [g, o / g]);
            let split = lax::reshape(&moved, &shape)?;
            let swapped = moveaxis(&split, ro, ro + 1)?;
            shape.splice(ro..ro + 3, [n * o]);
            let rhs = lax::reshape(&swapped, &shape)?;
            let out = bind1(p, &[x[0].clone(), rhs])?;
            // out features (G, n, O/G) -> (n, G, O/G) -> [n, O].
            let mut oshape = out.try_shape()?;
            oshape.splice(of..of + 1, [g, n, o / g]);
            let out = moveaxis(&lax::reshape(&out, &oshape)?, of + 1, of)?;
            oshape.splice(of..of + 3, [n, o]);
            Ok((vec![lax::reshape(&out, &oshape)?], vec![Some(of)]))
        }
        _ => {
            let lhs = merge_into(&to_front(&x[0], d[0], n)?, lf)?;
            let rhs = merge_into(&to_front(&x[1], d[1], n)?, ro)?;
            let mut q = p.clone();
            if let Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
                feature_group_count,
                ..
            })) = &mut q
            {
                *feature_group_count = n * g;
            }
            let out = bind1(&q, &[lhs, rhs])?;
            Ok((vec![split_out(&out, of, n)?], vec![Some(of)]))
        }
    }
}
