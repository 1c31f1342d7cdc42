//! Indexing steps: `dynamic_slice`, `dynamic_update_slice`, `gather` and
//! `scatter`/`scatter-add`/`-mul`/`-min`/`-max` (every mode, batching dims
//! included), with the interpreter's clamping and fill rules.

use super::{map_same, map_same2, next_index, strides, Elem, NativeOp};
use crate::error::run_error;
use crate::error::CpuError;
use jaxon_ir::primitive::{
    FillValue, GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, ScatterKind,
};
use jaxon_ir::{DType, HostArray, IrError, Storage};

/// Marks an out-of-bounds window (dropped or filled).
const FILL: usize = usize::MAX;

fn eval_err(name: &str, m: impl std::fmt::Display) -> IrError {
    run_error(format!("{name}: {m}"))
}

/// Copies the `shape` box at element offset `base` with strides `st` out
/// of `src` (row-major result).
fn take_box<T: Copy>(src: &[T], shape: &[usize], base: usize, st: &[usize]) -> Vec<T> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let r = shape.len();
    if r == 0 {
        out.push(src[base]);
        return out;
    }
    let (len, s) = (shape[r - 1], st[r - 1]);
    let mut idx = vec![0usize; r - 1];
    loop {
        let row: usize = base + idx.iter().zip(st).map(|(i, s)| i * s).sum::<usize>();
        if s == 1 {
            out.extend_from_slice(&src[row..row + len]);
        } else {
            out.extend((0..len).map(|j| src[row + j * s]));
        }
        if !next_index(&mut idx, &shape[..r - 1]) {
            break;
        }
    }
    out
}

/// Writes row-major `src` into the `shape` box of `dst` at `base`.
fn put_box<T: Copy>(dst: &mut [T], shape: &[usize], base: usize, st: &[usize], src: &[T]) {
    let r = shape.len();
    if src.is_empty() {
        return;
    }
    if r == 0 {
        dst[base] = src[0];
        return;
    }
    let (len, s) = (shape[r - 1], st[r - 1]);
    let mut idx = vec![0usize; r - 1];
    let mut k = 0;
    loop {
        let row: usize = base + idx.iter().zip(st).map(|(i, s)| i * s).sum::<usize>();
        for j in 0..len {
            dst[row + j * s] = src[k + j];
        }
        k += len;
        if !next_index(&mut idx, &shape[..r - 1]) {
            break;
        }
    }
}

/// Element offset of a window of `sizes` whose starts (scalar operands)
/// clamp into `shape`.
fn clamped_base(
    name: &str,
    shape: &[usize],
    sizes: &[usize],
    starts: &[&HostArray],
) -> Result<usize, IrError> {
    if starts.len() != shape.len() {
        return Err(eval_err(name, "wrong number of start indices"));
    }
    let st = strides(shape);
    let mut base = 0;
    for d in 0..shape.len() {
        let s = starts[d];
        if s.len() != 1 {
            return Err(eval_err(name, "start indices must be scalars"));
        }
        let v = s
            .data()
            .get_i64(0)
            .clamp(0, shape[d].saturating_sub(sizes[d]) as i64) as usize;
        base += v * st[d];
    }
    Ok(base)
}

/// `dynamic_slice x *starts`.
#[derive(Debug)]
pub(crate) struct DynamicSlice {
    shape: Vec<usize>,
    sizes: Vec<usize>,
}

impl DynamicSlice {
    pub(crate) fn new(ins: &[Vec<usize>], sizes: &[usize]) -> Result<DynamicSlice, CpuError> {
        let shape = ins.first().ok_or("missing operand")?.clone();
        if ins.len() != shape.len() + 1
            || sizes.len() != shape.len()
            || sizes.iter().zip(&shape).any(|(s, n)| s > n)
        {
            return Err(format!("slice sizes {sizes:?} for shape {shape:?}").into());
        }
        Ok(DynamicSlice {
            shape,
            sizes: sizes.to_vec(),
        })
    }
}

impl NativeOp for DynamicSlice {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let (x, starts) = inputs
            .split_first()
            .ok_or_else(|| eval_err("dynamic_slice", "no operand"))?;
        let base = clamped_base("dynamic_slice", &self.shape, &self.sizes, starts)?;
        let st = strides(&self.shape);
        let data = map_same!(x.data(), v => take_box(v, &self.sizes, base, &st));
        Ok(vec![HostArray::new(self.sizes.clone(), data)?])
    }
}

/// `dynamic_update_slice x update *starts`.
#[derive(Debug)]
pub(crate) struct DynamicUpdateSlice {
    shape: Vec<usize>,
    sizes: Vec<usize>,
}

impl DynamicUpdateSlice {
    pub(crate) fn new(ins: &[Vec<usize>]) -> Result<DynamicUpdateSlice, CpuError> {
        let [shape, sizes, ..] = ins else {
            return Err("needs an operand and an update".into());
        };
        if ins.len() != shape.len() + 2
            || sizes.len() != shape.len()
            || sizes.iter().zip(shape).any(|(s, n)| s > n)
        {
            return Err(format!("update {sizes:?} for shape {shape:?}").into());
        }
        Ok(DynamicUpdateSlice {
            shape: shape.clone(),
            sizes: sizes.clone(),
        })
    }
}

impl NativeOp for DynamicUpdateSlice {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let name = "dynamic_update_slice";
        let [x, u, starts @ ..] = inputs else {
            return Err(eval_err(name, "missing operands"));
        };
        let base = clamped_base(name, &self.shape, &self.sizes, starts)?;
        let st = strides(&self.shape);
        let data = map_same2!(x.data(), u.data(), (xv, uv) => {
            let mut out = xv.clone();
            put_box(&mut out, &self.sizes, base, &st, uv);
            out
        }, eval_err(name, "operand and update dtypes differ"));
        Ok(vec![HostArray::new(self.shape.clone(), data)?])
    }
}

/// The index side of a gather or scatter, fixed at compile time.
#[derive(Debug)]
struct IndexPlan {
    operand_shape: Vec<usize>,
    /// Window size per operand dim.
    sizes: Vec<usize>,
    /// Operand dims that are window dims of the other side, in order.
    window_dims: Vec<usize>,
    batch_shape: Vec<usize>,
    nvec: usize,
    index_map: Vec<usize>,
    operand_batching: Vec<usize>,
    indices_batching: Vec<usize>,
    clamp: bool,
}

impl IndexPlan {
    #[allow(clippy::too_many_arguments)]
    fn new(
        operand_shape: &[usize],
        indices_shape: &[usize],
        sizes: Vec<usize>,
        removed: &[usize],
        index_map: Vec<usize>,
        operand_batching: Vec<usize>,
        indices_batching: Vec<usize>,
        clamp: bool,
    ) -> Result<IndexPlan, CpuError> {
        let r = operand_shape.len();
        let (nvec, batch_shape) = indices_shape
            .split_last()
            .ok_or("indices must have rank >= 1")?;
        let bad = |d: &usize| *d >= r;
        if *nvec != index_map.len()
            || index_map.iter().any(bad)
            || removed.iter().any(bad)
            || operand_batching.iter().any(bad)
            || operand_batching.len() != indices_batching.len()
            || indices_batching.iter().any(|&d| d >= batch_shape.len())
            || sizes.len() != r
            || sizes.iter().zip(operand_shape).any(|(s, n)| s > n)
        {
            return Err("inconsistent dimension numbers".into());
        }
        let window_dims = (0..r)
            .filter(|d| !removed.contains(d) && !operand_batching.contains(d))
            .collect();
        Ok(IndexPlan {
            operand_shape: operand_shape.to_vec(),
            sizes,
            window_dims,
            batch_shape: batch_shape.to_vec(),
            nvec: *nvec,
            index_map,
            operand_batching,
            indices_batching,
            clamp,
        })
    }

    /// Operand offset of each batch element's window, or `FILL`.
    fn bases(&self, indices: &Storage) -> Vec<usize> {
        let r = self.operand_shape.len();
        let os = strides(&self.operand_shape);
        let nb: usize = self.batch_shape.iter().product();
        let mut out = Vec::with_capacity(nb);
        let mut start = vec![0i64; r];
        let mut g = vec![0usize; self.batch_shape.len()];
        for b in 0..nb {
            start.iter_mut().for_each(|s| *s = 0);
            for (k, &d) in self.index_map.iter().enumerate() {
                start[d] = indices.get_i64(b * self.nvec + k);
            }
            for (&d, &i) in self.operand_batching.iter().zip(&self.indices_batching) {
                start[d] = g[i] as i64;
            }
            let mut off = 0usize;
            for d in 0..r {
                // As the interpreter: a window reads at least its first
                // element (a collapsed dim of size 0 still names one), and
                // an empty operand dim has no start.
                let hi = self.operand_shape[d] as i64 - Ord::max(self.sizes[d], 1) as i64;
                let s = if hi < 0 {
                    off = FILL;
                    break;
                } else if self.clamp {
                    start[d].clamp(0, hi)
                } else if start[d] < 0 || start[d] > hi {
                    off = FILL;
                    break;
                } else {
                    start[d]
                };
                off += s as usize * os[d];
            }
            out.push(off);
            next_index(&mut g, &self.batch_shape);
        }
        out
    }

    /// For an array of `shape` whose dims at `window_pos` are window dims
    /// and the others batch dims: per dim (is window, stride).
    fn roles(&self, shape: &[usize], window_pos: &[usize]) -> Vec<(bool, usize)> {
        let os = strides(&self.operand_shape);
        let bs = strides(&self.batch_shape);
        let (mut wi, mut bi) = (0, 0);
        (0..shape.len())
            .map(|p| {
                if window_pos.contains(&p) {
                    wi += 1;
                    (true, os[self.window_dims[wi - 1]])
                } else {
                    bi += 1;
                    (false, bs[bi - 1])
                }
            })
            .collect()
    }
}

/// For every element of `shape` in row-major order, the flat operand index
/// (`FILL` when its window is out of bounds).
fn targets(shape: &[usize], roles: &[(bool, usize)], bases: &[usize]) -> Vec<usize> {
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
        out.push(if bases[b] == FILL { FILL } else { bases[b] + w });
        if !next_index(&mut idx, shape) {
            break;
        }
    }
    out
}

/// `gather`.
#[derive(Debug)]
pub(crate) struct Gather {
    plan: IndexPlan,
    out_shape: Vec<usize>,
    offset_pos: Vec<usize>,
    fill: Storage,
}

/// The fill of out-of-bounds gathers: the given value, else NaN for
/// floats, the minimum for signed and the maximum for unsigned integers,
/// `true` for bool.
fn fill_storage(dt: DType, fill: Option<FillValue>) -> Storage {
    let v = match fill {
        Some(FillValue::Int(i)) => {
            return match dt {
                DType::Bool => Storage::Bool(vec![i != 0]),
                DType::I8 => Storage::I8(vec![i as i8]),
                DType::I16 => Storage::I16(vec![i as i16]),
                DType::I32 => Storage::I32(vec![i as i32]),
                DType::I64 => Storage::I64(vec![i]),
                DType::U8 => Storage::U8(vec![i as u8]),
                DType::U16 => Storage::U16(vec![i as u16]),
                DType::U32 => Storage::U32(vec![i as u32]),
                DType::U64 => Storage::U64(vec![i as u64]),
                _ => Storage::from_f64(dt, &[i as f64]),
            }
        }
        Some(FillValue::Float(f)) => f,
        None => match dt {
            DType::Bool => 1.0,
            d if d.is_float() => f64::NAN,
            DType::I8 => i8::MIN as f64,
            DType::I16 => i16::MIN as f64,
            DType::I32 => i32::MIN as f64,
            DType::I64 => return Storage::I64(vec![i64::MIN]),
            DType::U64 => return Storage::U64(vec![u64::MAX]),
            d => (1u64 << d.bits()) as f64 - 1.0,
        },
    };
    Storage::from_f64(dt, &[v])
}

impl Gather {
    pub(crate) fn new(
        ins: &[Vec<usize>],
        dn: &GatherDimensionNumbers,
        fill: Option<FillValue>,
        mode: GatherScatterMode,
        sizes: &[usize],
        outs: &[(DType, Vec<usize>)],
    ) -> Result<Gather, CpuError> {
        let ([x, ind], [(dt, out_shape)]) = (ins, outs) else {
            return Err("gather takes an operand and indices".into());
        };
        let plan = IndexPlan::new(
            x,
            ind,
            sizes.to_vec(),
            &dn.collapsed_slice_dims.to_usizes(),
            dn.start_index_map.to_usizes(),
            dn.operand_batching_dims.to_usizes(),
            dn.start_indices_batching_dims.to_usizes(),
            !matches!(mode, GatherScatterMode::FillOrDrop),
        )?;
        let offset_pos = dn.offset_dims.to_usizes();
        let out_rank = plan.batch_shape.len() + offset_pos.len();
        if plan.window_dims.len() != offset_pos.len()
            || out_shape.len() != out_rank
            || offset_pos.iter().any(|&o| o >= out_rank)
        {
            return Err("offset_dims do not match the window dims".into());
        }
        Ok(Gather {
            plan,
            out_shape: out_shape.clone(),
            offset_pos,
            fill: fill_storage(*dt, fill),
        })
    }
}

/// Rejects targets outside `x` (never indexed), and `FILL` targets unless
/// the mode may fill or drop (a clamping gather from an empty dim).
fn in_bounds(name: &str, targets: &[usize], x: &HostArray, may_fill: bool) -> Result<(), IrError> {
    let bad = targets
        .iter()
        .find(|&&t| (t == FILL && !may_fill) || (t != FILL && t >= x.len()));
    match bad {
        None => Ok(()),
        Some(_) => Err(eval_err(
            name,
            format!("a window does not fit in operand of shape {:?}", x.shape()),
        )),
    }
}

fn gather_t<T: Copy>(x: &[T], targets: &[usize], fill: T) -> Vec<T> {
    targets
        .iter()
        .map(|&t| if t == FILL { fill } else { x[t] })
        .collect()
}

impl NativeOp for Gather {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let [x, ind] = inputs else {
            return Err(eval_err("gather", "takes two operands"));
        };
        let bases = self.plan.bases(ind.data());
        let roles = self.plan.roles(&self.out_shape, &self.offset_pos);
        let t = targets(&self.out_shape, &roles, &bases);
        in_bounds("gather", &t, x, !self.plan.clamp)?;
        let data = map_same2!(x.data(), &self.fill, (xv, f) => gather_t(xv, &t, f[0]),
            eval_err("gather", "fill dtype"));
        Ok(vec![HostArray::new(self.out_shape.clone(), data)?])
    }
}

/// `scatter` and its combining forms.
#[derive(Debug)]
pub(crate) struct Scatter {
    kind: ScatterKind,
    plan: IndexPlan,
    operand_shape: Vec<usize>,
    updates_shape: Vec<usize>,
    window_pos: Vec<usize>,
}

impl Scatter {
    pub(crate) fn new(
        ins: &[Vec<usize>],
        kind: ScatterKind,
        dn: &ScatterDimensionNumbers,
        mode: GatherScatterMode,
    ) -> Result<Scatter, CpuError> {
        let [x, ind, upd] = ins else {
            return Err("scatter takes an operand, indices and updates".into());
        };
        let uwd = dn.update_window_dims.to_usizes();
        let inserted = dn.inserted_window_dims.to_usizes();
        let obatch = dn.operand_batching_dims.to_usizes();
        let mut sizes = vec![1usize; x.len()];
        let mut wi = 0;
        for (d, s) in sizes.iter_mut().enumerate() {
            if inserted.contains(&d) || obatch.contains(&d) {
                continue;
            }
            let &ud = uwd.get(wi).ok_or("too few update_window_dims")?;
            *s = *upd.get(ud).ok_or("update_window_dims out of range")?;
            wi += 1;
        }
        let plan = IndexPlan::new(
            x,
            ind,
            sizes,
            &inserted,
            dn.scatter_dims_to_operand_dims.to_usizes(),
            obatch,
            dn.scatter_indices_batching_dims.to_usizes(),
            matches!(mode, GatherScatterMode::Clip),
        )?;
        if wi != uwd.len() || upd.len() != plan.batch_shape.len() + uwd.len() {
            return Err("updates shape does not match the dimension numbers".into());
        }
        Ok(Scatter {
            kind,
            plan,
            operand_shape: x.clone(),
            updates_shape: upd.clone(),
            window_pos: uwd,
        })
    }
}

fn scatter_t<T: Elem>(x: &[T], u: &[T], targets: &[usize], kind: ScatterKind) -> Vec<T> {
    let mut out = x.to_vec();
    let f: fn(T, T) -> T = match kind {
        ScatterKind::Set => |_, b| b,
        ScatterKind::Add => T::add,
        ScatterKind::Mul => T::mul,
        ScatterKind::Min => T::min,
        ScatterKind::Max => T::max,
    };
    for (&t, &v) in targets.iter().zip(u) {
        if t != FILL {
            out[t] = f(out[t], v);
        }
    }
    out
}

impl NativeOp for Scatter {
    fn run(&self, inputs: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let name = self.kind.name();
        let [x, ind, upd] = inputs else {
            return Err(eval_err(name, "takes three operands"));
        };
        let bases = self.plan.bases(ind.data());
        let roles = self.plan.roles(&self.updates_shape, &self.window_pos);
        let t = targets(&self.updates_shape, &roles, &bases);
        in_bounds(name, &t, x, true)?;
        let data = map_same2!(x.data(), upd.data(), (xv, uv) => scatter_t(xv, uv, &t, self.kind),
            eval_err(name, "operand and updates dtypes differ"));
        Ok(vec![HostArray::new(self.operand_shape.clone(), data)?])
    }
}
