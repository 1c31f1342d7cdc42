//! Indexing kernels: `slice`, `dynamic_slice`, `dynamic_update_slice`,
//! `gather` and `scatter` (every mode, batching dims included).

use super::elementwise::{fmax, fmin};
use super::{
    affine_map, check_axis, lift, lower, next_index, strides, take, take_or_fill, Lifted, FILL,
};
use crate::array::{HostArray, Storage};
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::{
    FillValue, GatherDimensionNumbers, GatherScatterMode, Ints, ScatterDimensionNumbers,
    ScatterKind,
};

/// `slice` with optional strides.
pub(crate) fn slice(
    x: &HostArray,
    start: &Ints,
    limit: &Ints,
    step: Option<&[i64]>,
) -> Result<HostArray, IrError> {
    let r = x.ndim();
    let bad = start.len() != r
        || limit.len() != r
        || step.is_some_and(|s| s.len() != r || s.iter().any(|&v| v <= 0))
        || (0..r).any(|d| start[d] < 0 || limit[d] < start[d] || limit[d] > x.shape()[d] as i64);
    if bad {
        return Err(IrError::ty(
            "slice",
            format!(
                "start {:?} limit {:?} strides {step:?} for shape {:?}",
                start.values,
                limit.values,
                x.shape()
            ),
        ));
    }
    let xs = strides(x.shape());
    let mut shape = Vec::with_capacity(r);
    let mut st = Vec::with_capacity(r);
    let mut base = 0isize;
    for d in 0..r {
        let s = step.map_or(1, |s| s[d]);
        shape.push(((limit[d] - start[d] + s - 1) / s) as usize);
        st.push(xs[d] as isize * s as isize);
        base += start[d] as isize * xs[d] as isize;
    }
    let idx = affine_map(&shape, base, &st);
    HostArray::new(shape, take(x.data(), &idx))
}

/// Reads scalar start operands, clamped so a window of `sizes` fits.
fn clamped_starts(
    name: &str,
    shape: &[usize],
    sizes: &[usize],
    starts: &[HostArray],
) -> Result<Vec<usize>, IrError> {
    if starts.len() != shape.len() || sizes.len() != shape.len() {
        return Err(IrError::ty(
            name,
            format!("{} start indices for shape {shape:?}", starts.len()),
        ));
    }
    (0..shape.len())
        .map(|d| {
            if sizes[d] > shape[d] {
                return Err(IrError::ty(
                    name,
                    format!("window {sizes:?} larger than shape {shape:?}"),
                ));
            }
            if starts[d].len() != 1 || !starts[d].dtype().is_int() {
                return Err(IrError::ty(name, "start indices must be integer scalars"));
            }
            let s = starts[d].data().get_i64(0);
            Ok(s.clamp(0, (shape[d] - sizes[d]) as i64) as usize)
        })
        .collect()
}

/// `dynamic_slice x *starts` (starts clamp into bounds).
pub(crate) fn dynamic_slice(args: &[HostArray], sizes: &Ints) -> Result<HostArray, IrError> {
    let name = "dynamic_slice";
    let (x, starts) = args
        .split_first()
        .ok_or_else(|| IrError::ty(name, "missing operand"))?;
    let sizes = sizes.to_usizes();
    let st = clamped_starts(name, x.shape(), &sizes, starts)?;
    let xs = strides(x.shape());
    let base: usize = (0..x.ndim()).map(|d| st[d] * xs[d]).sum();
    let sts: Vec<isize> = xs.iter().map(|&s| s as isize).collect();
    let idx = affine_map(&sizes, base as isize, &sts);
    HostArray::new(sizes, take(x.data(), &idx))
}

/// Writes `src` into `dst` at positions `idx` (the same dtype).
fn put(dst: &mut Storage, idx: &[usize], src: &Storage) -> Result<(), IrError> {
    macro_rules! arms {
        ($($v:ident),*) => {
            match (dst, src) {
                $((Storage::$v(d), Storage::$v(s)) => {
                    for (k, &i) in idx.iter().enumerate() {
                        d[i] = s[k];
                    }
                })*
                _ => return Err(IrError::ty("dynamic_update_slice", "operand and update dtypes differ")),
            }
        };
    }
    arms!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, C64, C128);
    Ok(())
}

/// `dynamic_update_slice x update *starts` (starts clamp into bounds).
pub(crate) fn dynamic_update_slice(args: &[HostArray]) -> Result<HostArray, IrError> {
    let name = "dynamic_update_slice";
    if args.len() < 2 {
        return Err(IrError::ty(name, "needs an operand and an update"));
    }
    let (x, u) = (&args[0], &args[1]);
    if u.ndim() != x.ndim() {
        return Err(IrError::ty(
            name,
            format!("update {:?} for {:?}", u.shape(), x.shape()),
        ));
    }
    let st = clamped_starts(name, x.shape(), u.shape(), &args[2..])?;
    let xs = strides(x.shape());
    let base: usize = (0..x.ndim()).map(|d| st[d] * xs[d]).sum();
    let sts: Vec<isize> = xs.iter().map(|&s| s as isize).collect();
    let idx = affine_map(u.shape(), base as isize, &sts);
    let mut out = x.clone();
    put(out.data_mut(), &idx, u.data())?;
    Ok(out)
}

/// How one side of a gather/scatter maps to operand dims.
struct IndexPlan {
    /// Operand window dims, in order, with their sizes.
    window_dims: Vec<usize>,
    /// Per batch element: the operand offset of the window start, or FILL.
    bases: Vec<usize>,
    /// Batch shape (the indices shape without its last dim).
    batch_shape: Vec<usize>,
}

/// Computes window starts for every batch element of `indices`.
#[allow(clippy::too_many_arguments)]
fn plan(
    name: &str,
    operand_shape: &[usize],
    indices: &HostArray,
    window_sizes: &[usize],
    removed: &[i64],
    index_map: &[i64],
    operand_batching: &[i64],
    indices_batching: &[i64],
    clamp: bool,
) -> Result<IndexPlan, IrError> {
    let r = operand_shape.len();
    if indices.ndim() == 0 || !indices.dtype().is_int() {
        return Err(IrError::ty(
            name,
            "indices must be an integer array of rank >= 1",
        ));
    }
    let batch_shape = indices.shape()[..indices.ndim() - 1].to_vec();
    let nvec = indices.shape()[indices.ndim() - 1];
    let bad_dim = |d: &i64| *d < 0 || *d as usize >= r;
    if nvec != index_map.len()
        || index_map.iter().any(bad_dim)
        || removed.iter().any(bad_dim)
        || operand_batching.iter().any(bad_dim)
        || operand_batching.len() != indices_batching.len()
        || indices_batching
            .iter()
            .any(|&d| d < 0 || d as usize >= batch_shape.len())
        || window_sizes.len() != r
    {
        return Err(IrError::ty(name, "inconsistent dimension numbers"));
    }
    let window_dims: Vec<usize> = (0..r)
        .filter(|d| !removed.contains(&(*d as i64)) && !operand_batching.contains(&(*d as i64)))
        .collect();
    let os = strides(operand_shape);
    let nb: usize = batch_shape.iter().product();
    let mut bases = Vec::with_capacity(nb);
    let mut start = vec![0i64; r];
    let mut g = vec![0usize; batch_shape.len()];
    for b in 0..nb {
        start.iter_mut().for_each(|s| *s = 0);
        for (k, &d) in index_map.iter().enumerate() {
            start[d as usize] = indices.data().get_i64(b * nvec + k);
        }
        for (i, &d) in operand_batching.iter().enumerate() {
            start[d as usize] = g[indices_batching[i] as usize] as i64;
        }
        let mut off = 0usize;
        let mut oob = false;
        for d in 0..r {
            // A window reads at least its first element (a collapsed dim of
            // size 0 still names one), so starts stay below `shape - max(size, 1)`:
            // never out of bounds. An empty operand dim has no valid start.
            let hi = operand_shape[d] as i64 - window_sizes[d].max(1) as i64;
            let mut s = start[d];
            if hi < 0 {
                oob = true;
                break;
            }
            if clamp {
                s = s.clamp(0, hi);
            } else if s < 0 || s > hi {
                oob = true;
                break;
            }
            off += s as usize * os[d];
        }
        bases.push(if oob { FILL } else { off });
        next_index(&mut g, &batch_shape);
    }
    Ok(IndexPlan {
        window_dims,
        bases,
        batch_shape,
    })
}

/// For an array whose dims are batch dims except the positions in
/// `window_pos`, the (batch flat, window operand offset) of every element.
fn element_pairs(
    shape: &[usize],
    window_pos: &[usize],
    plan: &IndexPlan,
    operand_shape: &[usize],
) -> Vec<(usize, usize)> {
    let os = strides(operand_shape);
    let bs = strides(&plan.batch_shape);
    // Per array dim: (is window, stride into batch flat or operand offset).
    let mut roles = Vec::with_capacity(shape.len());
    let (mut wi, mut bi) = (0, 0);
    for p in 0..shape.len() {
        if window_pos.contains(&p) {
            roles.push((true, os[plan.window_dims[wi]]));
            wi += 1;
        } else {
            roles.push((false, bs[bi]));
            bi += 1;
        }
    }
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        let (mut b, mut w) = (0, 0);
        for (p, &(is_w, s)) in roles.iter().enumerate() {
            if is_w {
                w += idx[p] * s;
            } else {
                b += idx[p] * s;
            }
        }
        out.push((b, w));
        if !next_index(&mut idx, shape) {
            break;
        }
    }
    out
}

/// The default gather fill: NaN for floats, min for signed, max for
/// unsigned, `true` for bool.
fn fill_storage(dtype: DType, fill: Option<FillValue>) -> Storage {
    let v = match fill {
        Some(FillValue::Int(i)) => {
            return super::lower(Lifted::I(vec![i]), dtype);
        }
        Some(FillValue::Float(f)) => f,
        None => match dtype {
            DType::Bool => 1.0,
            // NaN + 0j for complex dtypes, as `np.complex64(np.nan)`.
            d if d.is_float() || d.is_complex() => f64::NAN,
            DType::I8 => i8::MIN as f64,
            DType::I16 => i16::MIN as f64,
            DType::I32 => i32::MIN as f64,
            DType::I64 => return Storage::I64(vec![i64::MIN]),
            DType::U64 => return Storage::U64(vec![u64::MAX]),
            d => (1u64 << d.bits()) as f64 - 1.0,
        },
    };
    Storage::from_f64(dtype, &[v])
}

/// `gather`.
pub(crate) fn gather(
    x: &HostArray,
    indices: &HostArray,
    dn: &GatherDimensionNumbers,
    fill: Option<FillValue>,
    mode: GatherScatterMode,
    slice_sizes: &Ints,
) -> Result<HostArray, IrError> {
    let name = "gather";
    let sizes = slice_sizes.to_usizes();
    let clamp = !matches!(mode, GatherScatterMode::FillOrDrop);
    let p = plan(
        name,
        x.shape(),
        indices,
        &sizes,
        &dn.collapsed_slice_dims,
        &dn.start_index_map,
        &dn.operand_batching_dims,
        &dn.start_indices_batching_dims,
        clamp,
    )?;
    let out_rank = p.batch_shape.len() + dn.offset_dims.len();
    let offset_pos: Vec<usize> = dn.offset_dims.to_usizes();
    if p.window_dims.len() != offset_pos.len() || offset_pos.iter().any(|&o| o >= out_rank) {
        return Err(IrError::ty(
            name,
            "offset_dims do not match the window dims",
        ));
    }
    let mut shape = Vec::with_capacity(out_rank);
    let (mut wi, mut bi) = (0, 0);
    for q in 0..out_rank {
        if offset_pos.contains(&q) {
            shape.push(sizes[p.window_dims[wi]]);
            wi += 1;
        } else {
            shape.push(p.batch_shape[bi]);
            bi += 1;
        }
    }
    for (d, &s) in sizes.iter().enumerate() {
        if s > x.shape()[d] {
            return Err(IrError::ty(name, "slice sizes exceed the operand shape"));
        }
    }
    let pairs = element_pairs(&shape, &offset_pos, &p, x.shape());
    let idx: Vec<usize> = pairs
        .iter()
        .map(|&(b, w)| {
            if p.bases[b] == FILL {
                FILL
            } else {
                p.bases[b] + w
            }
        })
        .collect();
    check_reads(name, mode, &idx, x.shape())?;
    let fill = fill_storage(x.dtype(), fill);
    HostArray::new(shape, take_or_fill(x.data(), &idx, &fill)?)
}

/// Rejects a gather whose index map would read outside the operand: a
/// clamping mode with an empty operand dim has nothing to clamp to (only
/// fill mode may produce [`FILL`] entries), and no entry may reach past the end.
fn check_reads(
    name: &str,
    mode: GatherScatterMode,
    idx: &[usize],
    shape: &[usize],
) -> Result<(), IrError> {
    let len: usize = shape.iter().product();
    let fill_ok = matches!(mode, GatherScatterMode::FillOrDrop);
    match idx.iter().find(|&&i| (i == FILL && !fill_ok) || (i != FILL && i >= len)) {
        Some(&i) if i == FILL => Err(IrError::Eval(format!(
            "{name}: a window does not fit in operand of shape {shape:?}, and mode {mode:?} cannot fill"
        ))),
        Some(&i) => Err(IrError::Eval(format!(
            "{name}: read of element {i} outside operand of shape {shape:?}"
        ))),
        None => Ok(()),
    }
}

/// Combines `src[k]` into `dst[idx[k]]` for every `k` whose target is not FILL.
fn combine<T: Copy>(dst: &mut [T], src: &[T], targets: &[usize], f: impl Fn(T, T) -> T) {
    for (k, &t) in targets.iter().enumerate() {
        if t != FILL {
            dst[t] = f(dst[t], src[k]);
        }
    }
}

/// `scatter` / `scatter-add` / `-mul` / `-min` / `-max`.
pub(crate) fn scatter(
    x: &HostArray,
    indices: &HostArray,
    updates: &HostArray,
    kind: ScatterKind,
    dn: &ScatterDimensionNumbers,
    mode: GatherScatterMode,
) -> Result<HostArray, IrError> {
    let name = kind.name();
    if updates.dtype() != x.dtype() {
        return Err(IrError::ty(
            name,
            format!(
                "operand {} and updates {} differ",
                x.dtype(),
                updates.dtype()
            ),
        ));
    }
    let r = x.ndim();
    let uwd = dn.update_window_dims.to_usizes();
    // Window sizes per operand dim: 1 for inserted/batching dims, else the
    // matching update window dim.
    let mut sizes = vec![1usize; r];
    let mut wi = 0;
    for (d, s) in sizes.iter_mut().enumerate() {
        let di = d as i64;
        if dn.inserted_window_dims.contains(&di) || dn.operand_batching_dims.contains(&di) {
            continue;
        }
        let &ud = uwd
            .get(wi)
            .ok_or_else(|| IrError::ty(name, "too few update_window_dims"))?;
        check_axis(name, ud, updates.ndim())?;
        *s = updates.shape()[ud];
        wi += 1;
    }
    let clamp = matches!(mode, GatherScatterMode::Clip);
    let p = plan(
        name,
        x.shape(),
        indices,
        &sizes,
        &dn.inserted_window_dims,
        &dn.scatter_dims_to_operand_dims,
        &dn.operand_batching_dims,
        &dn.scatter_indices_batching_dims,
        clamp,
    )?;
    if wi != uwd.len() || updates.ndim() != p.batch_shape.len() + uwd.len() {
        return Err(IrError::ty(
            name,
            "updates shape does not match the dimension numbers",
        ));
    }
    let pairs = element_pairs(updates.shape(), &uwd, &p, x.shape());
    let targets: Vec<usize> = pairs
        .iter()
        .map(|&(b, w)| {
            if p.bases[b] == FILL {
                FILL
            } else {
                p.bases[b] + w
            }
        })
        .collect();
    if let Some(&t) = targets.iter().find(|&&t| t != FILL && t >= x.len()) {
        return Err(IrError::Eval(format!(
            "{name}: update target {t} outside operand of shape {:?}",
            x.shape()
        )));
    }
    let mut dst = lift(x.data());
    let src = lift(updates.data());
    match (&mut dst, &src) {
        (Lifted::F32(d), Lifted::F32(s)) => {
            let f = float_op::<f32>(kind);
            let rnd = super::reduce::rounder(x.dtype());
            combine(d, s, &targets, |a, b| rnd(f(a, b)))
        }
        (Lifted::F64(d), Lifted::F64(s)) => combine(d, s, &targets, float_op(kind)),
        (Lifted::I(d), Lifted::I(s)) => combine(d, s, &targets, int_op(kind)),
        (Lifted::U(d), Lifted::U(s)) => combine(d, s, &targets, uint_op(kind)),
        (Lifted::B(d), Lifted::B(s)) => combine(d, s, &targets, bool_op(kind)),
        // Complex: set, add and mul (computed in `Complex64`, rounded by
        // `lower`); complex numbers have no order for min and max.
        (Lifted::C(d), Lifted::C(s)) => match kind {
            ScatterKind::Set => combine(d, s, &targets, |_, b| b),
            ScatterKind::Add => combine(d, s, &targets, |a, b| a + b),
            ScatterKind::Mul => combine(d, s, &targets, |a, b| a * b),
            ScatterKind::Min | ScatterKind::Max => {
                return Err(IrError::ty(name, "not defined for complex dtypes"))
            }
        },
        _ => return Err(IrError::ty(name, "dtype mismatch")),
    }
    HostArray::new(x.shape().to_vec(), lower(dst, x.dtype()))
}

fn float_op<T: super::elementwise::Fl>(kind: ScatterKind) -> impl Fn(T, T) -> T {
    move |a: T, b: T| match kind {
        ScatterKind::Set => b,
        ScatterKind::Add => a.add(b),
        ScatterKind::Mul => a.mul(b),
        ScatterKind::Min => fmin(a, b),
        ScatterKind::Max => fmax(a, b),
    }
}

fn int_op(kind: ScatterKind) -> impl Fn(i64, i64) -> i64 {
    move |a: i64, b: i64| match kind {
        ScatterKind::Set => b,
        ScatterKind::Add => a.wrapping_add(b),
        ScatterKind::Mul => a.wrapping_mul(b),
        ScatterKind::Min => a.min(b),
        ScatterKind::Max => a.max(b),
    }
}

fn uint_op(kind: ScatterKind) -> impl Fn(u64, u64) -> u64 {
    move |a: u64, b: u64| match kind {
        ScatterKind::Set => b,
        ScatterKind::Add => a.wrapping_add(b),
        ScatterKind::Mul => a.wrapping_mul(b),
        ScatterKind::Min => a.min(b),
        ScatterKind::Max => a.max(b),
    }
}

fn bool_op(kind: ScatterKind) -> impl Fn(bool, bool) -> bool {
    move |a: bool, b: bool| match kind {
        ScatterKind::Set => b,
        ScatterKind::Add | ScatterKind::Max => a | b,
        ScatterKind::Mul | ScatterKind::Min => a & b,
    }
}
