//! Planning a `pallas_call` when compiling: each operand's block geometry
//! and layout, block starts from the index maps, the window rewrite of the
//! discharged kernel, and the grid's partition into groups that may run in
//! parallel.

use super::{err, At, Geom, Layout};
use crate::ops::native::{next_index, strides};
use jaxon_ir::primitive::{BlockDim, BlockMapping, IndexEntry, IndexValue, Indexer, Ints};
use jaxon_ir::primitive::{
    CondParams, Control, GetParams, Indexing, ReshapeParams, ScanParams, SliceParams, State,
    Structural, WhileParams,
};
use jaxon_ir::{
    Atom, Aval, Binder, ClosedJaxpr, DType, Eqn, HostArray, IrError, Jaxpr, Primitive, ShapedArray,
    Storage, Var,
};
use std::collections::HashMap;
use std::sync::Arc;

pub(super) fn static_shape(a: &ShapedArray, what: &str) -> Result<Vec<usize>, IrError> {
    a.static_sizes()
        .ok_or_else(|| err(format!("{what} has a dynamic shape")))
}

pub(super) fn geom(k: usize, bm: &BlockMapping) -> Result<Geom, IrError> {
    let shape = static_shape(&bm.array_aval, "an operand")?;
    if bm.block_shape.len() != shape.len() {
        return Err(err(format!(
            "operand {k}: block shape of rank {} for an array of shape {shape:?}",
            bm.block_shape.len()
        )));
    }
    let (mut block, mut kernel_shape, mut squeezed) = (Vec::new(), Vec::new(), Vec::new());
    for b in &bm.block_shape {
        match b {
            BlockDim::Blocked(0) => return Err(err(format!("operand {k}: block size 0"))),
            BlockDim::Blocked(n) => {
                block.push(*n);
                kernel_shape.push(*n);
            }
            BlockDim::Squeezed => block.push(1),
        }
        squeezed.push(matches!(b, BlockDim::Squeezed));
    }
    let nd = shape.len();
    let layout = if (1..nd).all(|d| block[d] <= shape[d]) {
        let mut w = shape.clone();
        if nd > 0 {
            w[0] = block[0];
        }
        Layout::Window(w)
    } else {
        Layout::Block
    };
    let in_len = match &layout {
        Layout::Window(w) => w.iter().product(),
        Layout::Block => block.iter().product(),
    };
    // One run of memory: full trailing dims after the first partial one,
    // ones before it.
    let first = (0..nd).find(|&d| block[d] != 1).unwrap_or(nd);
    let contiguous = (first + 1..nd).all(|d| block[d] == shape[d]);
    // A 2-D view whose columns are the array's last dimension: its rows
    // are one stride apart, so a result can be written in place.
    let live: Vec<usize> = (0..nd).filter(|&d| !squeezed[d]).collect();
    let st = strides(&shape);
    let row_stride = match (&layout, live.as_slice()) {
        (Layout::Window(_), &[r, c]) if !contiguous && c + 1 == nd => Some(st[r]),
        _ => None,
    };
    Ok(Geom {
        row_stride,
        dtype: bm.array_aval.dtype,
        es: bm.array_aval.dtype.size_bytes(),
        strides: st,
        block_strides: strides(&block),
        shape,
        block,
        kernel_shape,
        squeezed,
        layout,
        in_len,
        contiguous,
        uninit: super::blocks::uninit_bytes(bm.array_aval.dtype),
    })
}

/// Operand `k`'s block start at grid point `idx`, clamped into the padded
/// array like `dynamic_slice` (as the interpreter does).
pub(super) fn block_start(
    k: usize,
    g: &Geom,
    bm: &BlockMapping,
    idx: &[usize],
) -> Result<Vec<usize>, IrError> {
    let jaxpr = &bm.index_map.jaxpr;
    if jaxpr.invars.len() != idx.len() {
        return Err(err(format!(
            "operand {k}: index_map takes {} inputs for a grid of rank {}",
            jaxpr.invars.len(),
            idx.len()
        )));
    }
    let mut args = Vec::with_capacity(idx.len());
    for (v, &i) in jaxpr.invars.iter().zip(idx) {
        let dt = jaxpr.try_aval(*v).map_or(DType::I32, |a| a.dtype());
        args.push(HostArray::new(
            Vec::new(),
            Storage::from_f64(dt, &[i as f64]),
        )?);
    }
    let outs = jaxon_ir::eval_closed_jaxpr(&bm.index_map, &args)?;
    if outs.len() != g.block.len() {
        return Err(err(format!(
            "operand {k}: index_map gave {} indices for rank {}",
            outs.len(),
            g.block.len()
        )));
    }
    outs.iter()
        .enumerate()
        .map(|(d, v)| match v {
            a if a.len() == 1 && !a.dtype().is_float() => {
                let b = g.block[d] as i64;
                let padded = g.shape[d].div_ceil(g.block[d]) * g.block[d];
                let max = padded as i64 - b;
                Ok((a.data().get_i64(0) * b).clamp(0, Ord::max(max, 0)) as usize)
            }
            _ => Err(err(format!(
                "operand {k}: index_map must return integer scalars"
            ))),
        })
        .collect()
}

/// Gives the discharged kernel's operand `k` its window type: a new invar
/// of the window's shape whose static slice (reshaped when dims are
/// squeezed) binds the old block variable.
pub(super) fn windowed(j: &mut Jaxpr, k: usize, g: &Geom, read: bool) {
    let Layout::Window(w) = &g.layout else {
        return;
    };
    if *w == g.kernel_shape {
        return;
    }
    let old = j.invars[k];
    if read && !g.shape.contains(&0) {
        let aval = Aval::Array(ShapedArray::of(g.dtype, w));
        if let Some(c) = compose(j, old, &aval, &block_view(g)) {
            *j = c;
            return;
        }
    }
    let win = j.new_var(Aval::Array(ShapedArray::of(g.dtype, w)));
    j.invars[k] = win;
    if !read {
        return;
    }
    let mut pre = Vec::new();
    let mut cur = win;
    if *w != g.block {
        let out = if g.block == g.kernel_shape {
            old
        } else {
            j.new_var(Aval::Array(ShapedArray::of(g.dtype, &g.block)))
        };
        pre.push(Eqn {
            primitive: Primitive::Indexing(Indexing::Slice(SliceParams {
                start_indices: Ints::from(vec![0i64; w.len()]),
                limit_indices: Ints::from(g.block.iter().map(|&b| b as i64).collect::<Vec<_>>()),
                strides: None,
            })),
            inputs: vec![Atom::Var(win)],
            outputs: vec![Binder::Var(out)],
        });
        cur = out;
    }
    if g.block != g.kernel_shape {
        pre.push(Eqn {
            primitive: Primitive::Structural(Structural::Reshape(ReshapeParams {
                new_sizes: g.kernel_shape.iter().map(|&n| Some(n)).collect(),
                dimensions: None,
            })),
            inputs: vec![Atom::Var(cur)],
            outputs: vec![Binder::Var(old)],
        });
    }
    pre.append(&mut j.eqns);
    j.eqns = pre;
}

/// The grid axes programs may run in parallel over, and the grid points
/// grouped by their coordinates on them: the subset of axes with the most
/// groups such that every written output's blocks differ between groups.
pub(super) fn partition(
    grid: &[usize],
    points: &[Vec<At>],
    written_outputs: &[usize],
    allowed: bool,
) -> (Vec<bool>, Vec<Vec<usize>>) {
    let r = grid.len();
    let total = points.len();
    let coords: Vec<Vec<usize>> = {
        let mut idx = vec![0usize; r];
        (0..total)
            .map(|_| {
                let c = idx.clone();
                next_index(&mut idx, grid);
                c
            })
            .collect()
    };
    let group_of = |mask: usize, c: &[usize]| {
        (0..r)
            .filter(|d| mask >> d & 1 == 1)
            .fold(0usize, |acc, d| acc * grid[d] + c[d])
    };
    let mut best = (0usize, 1usize);
    if allowed && r <= 8 {
        for mask in 1..(1usize << r) {
            let n: usize = (0..r)
                .filter(|d| mask >> d & 1 == 1)
                .map(|d| grid[d])
                .product();
            if n <= best.1 {
                continue;
            }
            let ok = written_outputs.iter().all(|&k| {
                let mut owner: HashMap<&[usize], usize> = HashMap::new();
                points.iter().zip(&coords).all(|(at, c)| {
                    let g = group_of(mask, c);
                    *owner.entry(&at[k].start).or_insert(g) == g
                })
            });
            if ok {
                best = (mask, n);
            }
        }
    }
    let (mask, n) = best;
    let mut groups = vec![Vec::new(); n];
    for (p, c) in coords.iter().enumerate() {
        groups[group_of(mask, c)].push(p);
    }
    ((0..r).map(|d| mask >> d & 1 == 1).collect(), groups)
}

/// The indexer viewing a window's block: `0:b` per blocked dim, `0` per
/// squeezed one.
fn block_view(g: &Geom) -> Indexer {
    Indexer {
        entries: g
            .block
            .iter()
            .zip(&g.squeezed)
            .map(|(&b, &sq)| {
                if sq {
                    IndexEntry::Int(IndexValue::Static(0))
                } else {
                    IndexEntry::Slice {
                        start: IndexValue::Static(0),
                        size: b,
                        stride: 1,
                    }
                }
            })
            .collect(),
    }
}

/// `j` with `v` of type `aval` (a window) read through `view` first: when
/// every use of `v` (here and in the bodies of the loops and branches it
/// is a constant operand of) is a `get` of a box (stride-1 slices, integer
/// indices) whose result is used, each gets `view` as its first indexer,
/// so the block is read straight from the window; `None` otherwise. Such
/// reads run on the step's buffers and touch only the box, never the rest
/// of the window (which may extend past the array).
fn compose(j: &Jaxpr, v: Var, aval: &Aval, view: &Indexer) -> Option<Jaxpr> {
    if j.outvars.contains(&Atom::Var(v)) {
        return None;
    }
    let mut out = j.clone();
    *out.vars.get_mut(v.index())? = aval.clone();
    let sub = |c: &ClosedJaxpr, k: usize| -> Option<ClosedJaxpr> {
        let iv = *c.jaxpr.invars.get(k)?;
        Some(ClosedJaxpr {
            jaxpr: Arc::new(compose(&c.jaxpr, iv, aval, view)?),
            consts: c.consts.clone(),
        })
    };
    for eqn in out.eqns.iter_mut() {
        let pos: Vec<usize> = (0..eqn.inputs.len())
            .filter(|&k| eqn.inputs[k] == Atom::Var(v))
            .collect();
        if pos.is_empty() {
            continue;
        }
        match &mut eqn.primitive {
            Primitive::State(State::Get(GetParams { indexers })) if pos == [0] => {
                let boxy = indexers
                    .iter()
                    .flat_map(|ix| &ix.entries)
                    .all(|e| matches!(e, IndexEntry::Slice { stride: 1, .. } | IndexEntry::Int(_)));
                if !boxy || !matches!(eqn.outputs.as_slice(), [Binder::Var(_)]) {
                    return None;
                }
                indexers.insert(0, view.clone());
            }
            Primitive::Control(Control::Scan(ScanParams {
                jaxpr, num_consts, ..
            })) => {
                for &k in &pos {
                    if k >= *num_consts {
                        return None;
                    }
                    *jaxpr = sub(jaxpr, k)?;
                }
            }
            Primitive::Control(Control::While(WhileParams {
                cond_jaxpr,
                body_jaxpr,
                cond_nconsts,
                body_nconsts,
            })) => {
                for &k in &pos {
                    if k < *cond_nconsts {
                        *cond_jaxpr = sub(cond_jaxpr, k)?;
                    } else if k < *cond_nconsts + *body_nconsts {
                        *body_jaxpr = sub(body_jaxpr, k - *cond_nconsts)?;
                    } else {
                        return None;
                    }
                }
            }
            Primitive::Control(Control::Cond(CondParams { branches, .. })) => {
                for &k in &pos {
                    if k == 0 {
                        return None;
                    }
                    for b in branches.iter_mut() {
                        *b = sub(b, k - 1)?;
                    }
                }
            }
            _ => return None,
        }
    }
    Some(out)
}
