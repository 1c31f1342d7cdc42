//! `jnp`'s data-dependent index and set functions with JAX's static-size
//! variants (`size=`, `fill_value=`, as under `jit`): `nonzero`,
//! `argwhere`, `flatnonzero`, `unique`/`unique_all`, `isin`, `digitize`.
//! Without `size` the count is read from the (concrete) data, as JAX does
//! eagerly; under a trace that is an error asking for `size`.

use super::wrap::lit;
use super::*;

/// The positions of the first `size` true elements of the 1-D bool
/// `mask` (`i32`, 0 where there are fewer), and which of them exist.
fn true_positions(mask: &Array, size: usize) -> Result<(Array, Array)> {
    let n = mask.try_shape()?[0];
    let k = lax::iota(DType::I32, size)?;
    if n == 0 {
        let zero = zeros(&[size], DType::I32)?;
        return Ok((zero, all_false_of(size)?));
    }
    let cs = cumsum(
        &lax::convert_element_type(mask, DType::I32, false)?,
        Some(0),
    )?;
    // The k-th true element sits after the elements whose running count
    // is at most k.
    let cs_row = broadcast_to(&lax::reshape(&cs, &[1, n])?, &[size, n])?;
    let k_col = broadcast_to(&lax::reshape(&k, &[size, 1])?, &[size, n])?;
    let before = lax::convert_element_type(&lax::le(&cs_row, &k_col)?, DType::I32, false)?;
    let pos = sum(&before, 1usize, false)?;
    let total = slice_axis(&cs, 0, n - 1, n)?;
    let valid = lax::lt(&k, &broadcast_to(&total, &[size])?)?;
    let pos = where_(&valid, &pos, &lit(0.0, DType::I32)?)?;
    Ok((pos, valid))
}

fn all_false_of(size: usize) -> Result<Array> {
    lax::broadcast_in_dim(&lit(0.0, DType::Bool)?, &[size], &[])
}

/// The number of true elements of `mask`, read from concrete data.
fn concrete_count(op: &str, mask: &Array) -> Result<usize> {
    let s = sum(
        &lax::convert_element_type(mask, DType::I32, false)?,
        All,
        false,
    )?;
    let host = s.try_to_host(op).map_err(|_| {
        Error::InvalidArgument(format!(
            "{op}: the size of the result depends on the data; pass `size` \
             (a static size, as JAX requires under jit)"
        ))
    })?;
    Ok(host.to_f64_vec().first().copied().unwrap_or(0.0) as usize)
}

fn nonzero_mask(x: &Array) -> Result<Array> {
    if x.dtype() == DType::Bool {
        Ok(x.clone())
    } else {
        not_equal(x, &lit(0.0, x.dtype())?)
    }
}

/// `jnp.nonzero(x, size, fill_value)`: for each axis, the `i32` indices
/// of the nonzero elements in row-major order. With `size` the results
/// have that length (cut, or padded with `fill_value`, default 0).
pub fn nonzero(x: &Array, size: Option<usize>, fill_value: Option<i64>) -> Result<Vec<Array>> {
    let shape = x.try_shape()?;
    if shape.is_empty() {
        return Err(Error::InvalidArgument(
            "nonzero: a 0-d array has no axes to index; use atleast_1d first (as JAX asks)".into(),
        ));
    }
    let mask = ravel(&nonzero_mask(x)?)?;
    let size = match size {
        Some(s) => s,
        None => concrete_count("nonzero", &mask)?,
    };
    let (pos, valid) = true_positions(&mask, size)?;
    let fill = lit(fill_value.unwrap_or(0) as f64, DType::I32)?;
    let mut stride: usize = shape.iter().product();
    let mut out = Vec::with_capacity(shape.len());
    for &d in &shape {
        stride /= d.max(1);
        let s = lit(stride.max(1) as f64, DType::I32)?;
        let m = lit(d.max(1) as f64, DType::I32)?;
        let idx = lax::rem(&lax::div(&pos, &s)?, &m)?;
        out.push(where_(&valid, &idx, &fill)?);
    }
    Ok(out)
}

/// `jnp.flatnonzero(x, size, fill_value)`: the nonzero positions of the
/// flattened `x`.
pub fn flatnonzero(x: &Array, size: Option<usize>, fill_value: Option<i64>) -> Result<Array> {
    Ok(nonzero(&ravel(x)?, size, fill_value)?.remove(0))
}

/// `jnp.argwhere(x, size, fill_value)`: the nonzero elements' indices as
/// the rows of an `i32` `[count, ndim]` array.
pub fn argwhere(x: &Array, size: Option<usize>, fill_value: Option<i64>) -> Result<Array> {
    if x.ndim() == 0 {
        let rows = nonzero(&atleast_1d(x)?, size, fill_value)?.remove(0);
        return zeros(&[rows.try_shape()?[0], 0], DType::I32);
    }
    stack(&nonzero(x, size, fill_value)?, 1)
}

/// Everything `jnp.unique_all` returns.
#[derive(Clone, Debug)]
pub struct UniqueAll {
    /// The sorted distinct values (padded to `size` with `fill_value`,
    /// default the smallest value).
    pub values: Array,
    /// For each value, the flat index of its first occurrence in `x`
    /// (`return_index`).
    pub indices: Array,
    /// For each element of `x` (in `x`'s shape), the index of its value
    /// in `values` (`return_inverse`).
    pub inverse_indices: Array,
    /// How many times each value occurs (0 for padding; `return_counts`).
    pub counts: Array,
}

/// `jnp.unique(x, size=, fill_value=)`: the sorted distinct elements of
/// the flattened `x` (NaNs count as equal, as with JAX's `equal_nan`).
pub fn unique(x: &Array, size: Option<usize>, fill_value: Option<&Array>) -> Result<Array> {
    Ok(unique_all(x, size, fill_value)?.values)
}

/// `jnp.unique(x, return_index=True, return_inverse=True,
/// return_counts=True, size=, fill_value=)` (`jnp.unique_all`).
pub fn unique_all(x: &Array, size: Option<usize>, fill_value: Option<&Array>) -> Result<UniqueAll> {
    let flat = ravel(x)?;
    let n = flat.try_shape()?[0];
    let out_shape = x.try_shape()?;
    if n == 0 {
        let s = size.unwrap_or(0);
        let values = match (s, fill_value) {
            (0, _) => flat.clone(),
            (_, Some(f)) => full(&[s], f, Some(x.dtype()))?,
            (_, None) => {
                return Err(Error::InvalidArgument(
                    "unique: for an empty input with a nonzero size, fill_value must be given"
                        .into(),
                ))
            }
        };
        return Ok(UniqueAll {
            values,
            indices: zeros(&[s], DType::I32)?,
            inverse_indices: zeros(&out_shape, DType::I32)?,
            counts: zeros(&[s], DType::I32)?,
        });
    }
    let perm = argsort(&flat, Some(0))?;
    let aux = take(&flat, &perm, Some(0))?;
    let (hi, lo) = (slice_axis(&aux, 0, 1, n)?, slice_axis(&aux, 0, 0, n - 1)?);
    let mut neq = not_equal(&hi, &lo)?;
    if aux.dtype().is_float() {
        let both_nan = logical_and(&isnan(&hi)?, &isnan(&lo)?)?;
        neq = logical_and(&neq, &logical_not(&both_nan)?)?;
    }
    let mask = concatenate(&[ones(&[1], DType::Bool)?, neq], 0)?;
    let size = match size {
        Some(s) => s,
        None => concrete_count("unique", &mask)?,
    };
    let (ind, valid) = true_positions(&mask, size)?;
    let mut values = take(&aux, &ind, Some(0))?;
    if let Some(f) = fill_value {
        let f = lax::convert_element_type(f, values.dtype(), false)?;
        values = where_(&valid, &values, &f)?;
    }
    let indices = take(&perm, &ind, Some(0))?;
    let (inverse, counts) = inverse_and_counts(&mask, &perm, &valid, n, size)?;
    let inverse_indices = lax::reshape(&inverse, &out_shape)?;
    Ok(UniqueAll {
        values,
        indices,
        inverse_indices,
        counts,
    })
}

/// `jnp.unique(x, axis=axis, return_index=True, return_inverse=True,
/// return_counts=True, size=, fill_value=)`: the distinct slices of `x`
/// along `axis`, sorted lexicographically (the first element most
/// significant; NaNs equal to each other and last). `values` keeps `x`'s
/// other axes; `indices`, `inverse_indices` (one per slice of `x`) and
/// `counts` are 1-D. Padding slices are `fill_value` (default the first
/// slice), with index 0 and count 0.
pub fn unique_all_axis(
    x: &Array,
    axis: isize,
    size: Option<usize>,
    fill_value: Option<&Array>,
) -> Result<UniqueAll> {
    let shape = x.try_shape()?;
    if shape.is_empty() {
        return Err(Error::InvalidArgument(
            "unique: an axis of a 0-d array".into(),
        ));
    }
    let ax = normalize_axis(axis, shape.len(), "unique")?;
    let n = shape[ax];
    let front = moveaxis(x, &[ax as isize], &[0])?;
    let rest: Vec<usize> = front.try_shape()?[1..].to_vec();
    let m: usize = rest.iter().product();
    if n == 0 || m == 0 {
        return unique_empty_slices(x.dtype(), n, &rest, ax, size, fill_value);
    }
    let rows = lax::reshape(&front, &[n, m])?;
    // Columns as lexsort keys, the first column last (most significant).
    let cols: Vec<Array> = (0..m)
        .rev()
        .map(|j| lax::reshape(&slice_axis(&rows, 1, j, j + 1)?, &[n]))
        .collect::<Result<_>>()?;
    let perm = lexsort(&cols, 0)?;
    let aux = take(&rows, &perm, Some(0))?;
    let (hi, lo) = (slice_axis(&aux, 0, 1, n)?, slice_axis(&aux, 0, 0, n - 1)?);
    let mut differ = not_equal(&hi, &lo)?;
    if aux.dtype().is_float() {
        let both_nan = logical_and(&isnan(&hi)?, &isnan(&lo)?)?;
        differ = logical_and(&differ, &logical_not(&both_nan)?)?;
    }
    let neq = any(&differ, 1usize, false)?;
    let mask = concatenate(&[ones(&[1], DType::Bool)?, neq], 0)?;
    let size = match size {
        Some(s) => s,
        None => concrete_count("unique", &mask)?,
    };
    let (ind, valid) = true_positions(&mask, size)?;
    let mut values = take(&aux, &ind, Some(0))?;
    if let Some(f) = fill_value {
        let f = lax::convert_element_type(f, values.dtype(), false)?;
        let valid_rows = lax::broadcast_in_dim(&valid, &[size, m], &[0])?;
        values = where_(&valid_rows, &values, &f)?;
    }
    let mut vshape = vec![size];
    vshape.extend(&rest);
    let values = moveaxis(&lax::reshape(&values, &vshape)?, &[0], &[ax as isize])?;
    let indices = take(&perm, &ind, Some(0))?;
    let (inverse_indices, counts) = inverse_and_counts(&mask, &perm, &valid, n, size)?;
    Ok(UniqueAll {
        values,
        indices,
        inverse_indices,
        counts,
    })
}

/// [`unique_all_axis`] when there are no slices (`n == 0`) or the slices
/// are empty (all equal: one distinct slice, counted `n` times).
fn unique_empty_slices(
    dtype: DType,
    n: usize,
    rest: &[usize],
    axis: usize,
    size: Option<usize>,
    fill_value: Option<&Array>,
) -> Result<UniqueAll> {
    let s = size.unwrap_or(n.min(1));
    let mut vshape = vec![s];
    vshape.extend(rest);
    let values = match fill_value {
        Some(f) => full(&vshape, f, Some(dtype))?,
        None if n == 0 && s > 0 && rest.iter().product::<usize>() > 0 => {
            return Err(Error::InvalidArgument(
                "unique: for an empty input with a nonzero size, fill_value must be given".into(),
            ))
        }
        None => zeros(&vshape, dtype)?,
    };
    let counts: Vec<i32> = (0..s).map(|i| if i == 0 { n as i32 } else { 0 }).collect();
    Ok(UniqueAll {
        values: moveaxis(&values, &[0], &[axis as isize])?,
        indices: zeros(&[s], DType::I32)?,
        inverse_indices: zeros(&[n], DType::I32)?,
        counts: Array::try_from_vec(counts, &[s])?,
    })
}

/// `jnp.unique(x, axis=axis, size=, fill_value=)`: the distinct slices of
/// `x` along `axis` (see [`unique_all_axis`]).
pub fn unique_axis(
    x: &Array,
    axis: isize,
    size: Option<usize>,
    fill_value: Option<&Array>,
) -> Result<Array> {
    Ok(unique_all_axis(x, axis, size, fill_value)?.values)
}

/// For sorted elements (or slices) whose first occurrences `mask` marks,
/// `perm` being the sort's permutation of the `n` originals: each
/// original's index among the distinct values (`inverse`), and how often
/// each of the `size` distinct values occurs (0 where `valid` is false;
/// the distance from its first occurrence to the next, or to the end).
fn inverse_and_counts(
    mask: &Array,
    perm: &Array,
    valid: &Array,
    n: usize,
    size: usize,
) -> Result<(Array, Array)> {
    let rank = lax::sub(
        &cumsum(
            &lax::convert_element_type(mask, DType::I32, false)?,
            Some(0),
        )?,
        &lit(1.0, DType::I32)?,
    )?;
    let inverse = take(&rank, &argsort(perm, Some(0))?, Some(0))?;
    let (ends, evalid) = true_positions(mask, size + 1)?;
    let ends = where_(&evalid, &ends, &lit(n as f64, DType::I32)?)?;
    let counts = lax::sub(
        &slice_axis(&ends, 0, 1, size + 1)?,
        &slice_axis(&ends, 0, 0, size)?,
    )?;
    let counts = where_(valid, &counts, &lit(0.0, DType::I32)?)?;
    Ok((inverse, counts))
}

/// `jnp.unique_values(x)`: [`unique`] without a size (eager only).
pub fn unique_values(x: &Array) -> Result<Array> {
    unique(x, None, None)
}

/// `jnp.unique_counts(x)`: the distinct values and their counts.
pub fn unique_counts(x: &Array) -> Result<(Array, Array)> {
    let u = unique_all(x, None, None)?;
    Ok((u.values, u.counts))
}

/// `jnp.unique_inverse(x)`: the distinct values and, for each element of
/// `x`, the index of its value.
pub fn unique_inverse(x: &Array) -> Result<(Array, Array)> {
    let u = unique_all(x, None, None)?;
    Ok((u.values, u.inverse_indices))
}

/// `jnp.isin(element, test_elements, invert)`: whether each element of
/// `element` occurs in `test_elements` (any shape), as a bool array of
/// `element`'s shape.
pub fn isin(element: &Array, test_elements: &Array, invert: bool) -> Result<Array> {
    let v = promote::promote_dtypes("isin", &[element, test_elements])?;
    let shape = v[0].try_shape()?;
    let t = ravel(&v[1])?;
    let m = t.try_shape()?[0];
    let mut wide = shape.clone();
    wide.push(m);
    let mut col = shape.clone();
    col.push(1);
    let e = broadcast_to(&lax::reshape(&v[0], &col)?, &wide)?;
    let t = broadcast_to(&t, &wide)?;
    let hit = any(&lax::eq(&e, &t)?, shape.len(), false)?;
    if invert {
        logical_not(&hit)
    } else {
        Ok(hit)
    }
}

/// `jnp.digitize(x, bins, right)`: the index of the bin of each element
/// (`i32`) for monotonically increasing or decreasing 1-D `bins`, as
/// NumPy defines it.
pub fn digitize(x: &Array, bins: &Array, right: bool) -> Result<Array> {
    if bins.ndim() != 1 {
        return Err(Error::InvalidArgument(format!(
            "digitize: bins must be 1-D, got {}",
            fmt_aval(bins.aval())
        )));
    }
    let nb = bins.try_shape()?[0];
    if nb == 0 {
        return zeros(&x.try_shape()?, DType::I32);
    }
    let side = if right { "left" } else { "right" };
    let first = lax::reshape(&slice_axis(bins, 0, 0, 1)?, &[])?;
    let last = lax::reshape(&slice_axis(bins, 0, nb - 1, nb)?, &[])?;
    let increasing = greater_equal(&last, &first)?;
    let up = searchsorted(bins, x, side)?;
    let reversed = lax::rev(bins, &[0])?;
    let down = lax::sub(
        &lit(nb as f64, DType::I32)?,
        &searchsorted(&reversed, x, side)?,
    )?;
    where_(&increasing, &up, &down)
}
