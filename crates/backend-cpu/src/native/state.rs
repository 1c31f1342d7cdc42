//! The state primitives `get`, `swap` and `addupdate` in discharged form:
//! a `Ref` is a variable holding an array, and a write rebinds it to the
//! updated array (functional update; JAX's `discharge_state`). Indexers
//! follow the interpreter: NumPy semantics, integer and integer-array
//! indices broadcast together (their dims stay in place when adjacent,
//! else go first), and every index clamps into bounds (negative static and
//! array indices count from the end).

use super::{map_same, map_same2, next_index, strides, Elem, NativeOp};
use jaxon_ir::primitive::{IndexEntry, IndexValue, Indexer};
use jaxon_ir::{HostArray, IrError};

fn err(prim: &str, m: impl std::fmt::Display) -> IrError {
    IrError::Eval(format!("cpu backend: {prim}: {m}"))
}

/// Which state primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Get,
    Swap,
    AddUpdate,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Get => "get",
            Kind::Swap => "swap",
            Kind::AddUpdate => "addupdate",
        }
    }
}

/// The elements an indexed ref names: a shape and flat positions.
struct View {
    shape: Vec<usize>,
    pos: Vec<usize>,
}

enum Ent {
    Slice(Vec<usize>),
    Int(Vec<usize>, Vec<usize>),
}

fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    (0..n)
        .map(|i| {
            let (x, y) = (at(a, i), at(b, i));
            if x == y || y == 1 {
                Some(x)
            } else if x == 1 {
                Some(y)
            } else {
                None
            }
        })
        .collect()
}

fn broadcast_flat(src: &[usize], idx: &[usize]) -> usize {
    let off = idx.len() - src.len();
    src.iter().enumerate().fold(0, |f, (d, &n)| {
        f * n + if n == 1 { 0 } else { idx[off + d] }
    })
}

/// The position of the first operand after the ref and its index operands.
fn value_pos(indexers: &[Indexer]) -> usize {
    let mut end = 1;
    for ix in indexers {
        for e in &ix.entries {
            let k = match e {
                IndexEntry::Slice {
                    start: IndexValue::Dynamic(k),
                    ..
                }
                | IndexEntry::Int(IndexValue::Dynamic(k))
                | IndexEntry::Array(k) => *k,
                IndexEntry::Slice {
                    start: IndexValue::Static(_),
                    ..
                }
                | IndexEntry::Int(IndexValue::Static(_)) => 0,
            };
            end = Ord::max(end, k + 1);
        }
    }
    end
}

fn scalar(prim: &str, v: &IndexValue, args: &[&HostArray]) -> Result<(i64, bool), IrError> {
    match v {
        IndexValue::Static(i) => Ok((*i, true)),
        IndexValue::Dynamic(k) => {
            let a = args
                .get(*k)
                .filter(|a| a.len() == 1 && !a.dtype().is_float())
                .ok_or_else(|| err(prim, format!("index operand {k} must be an integer scalar")))?;
            Ok((a.data().get_i64(0), false))
        }
    }
}

fn clamp_pos(raw: i64, dim: usize, wrap: bool) -> usize {
    let d = dim as i64;
    let r = if wrap && raw < 0 { raw + d } else { raw };
    r.clamp(0, d - 1) as usize
}

fn apply(prim: &str, view: View, ix: &Indexer, args: &[&HostArray]) -> Result<View, IrError> {
    let nd = view.shape.len();
    if ix.entries.len() > nd {
        return Err(err(prim, "too many indices"));
    }
    let mut ents = Vec::with_capacity(nd);
    for (d, &dim) in view.shape.iter().enumerate() {
        ents.push(match ix.entries.get(d) {
            None => Ent::Slice((0..dim).collect()),
            Some(IndexEntry::Slice {
                start,
                size,
                stride,
            }) => {
                let (raw, _) = scalar(prim, start, args)?;
                let span = if *size == 0 {
                    0
                } else {
                    (size - 1) * stride + 1
                };
                if *stride == 0 || span > dim {
                    return Err(err(prim, "slice does not fit its dimension"));
                }
                let s = raw.clamp(0, (dim - span) as i64) as usize;
                Ent::Slice((0..*size).map(|k| s + k * stride).collect())
            }
            Some(IndexEntry::Int(v)) => {
                let (raw, is_static) = scalar(prim, v, args)?;
                if dim == 0 {
                    return Err(err(prim, "index into an empty dimension"));
                }
                Ent::Int(Vec::new(), vec![clamp_pos(raw, dim, is_static)])
            }
            Some(IndexEntry::Array(k)) => {
                let a = args
                    .get(*k)
                    .filter(|a| !a.dtype().is_float())
                    .ok_or_else(|| err(prim, format!("index array operand {k}")))?;
                if dim == 0 && !a.is_empty() {
                    return Err(err(prim, "index into an empty dimension"));
                }
                let pos = (0..a.len())
                    .map(|i| clamp_pos(a.data().get_i64(i), dim, true))
                    .collect();
                Ent::Int(a.shape().to_vec(), pos)
            }
        });
    }
    let int_dims: Vec<usize> = (0..nd)
        .filter(|&d| matches!(ents[d], Ent::Int(..)))
        .collect();
    let mut bshape: Vec<usize> = Vec::new();
    for &d in &int_dims {
        if let Ent::Int(s, _) = &ents[d] {
            bshape = broadcast_shapes(&bshape, s)
                .ok_or_else(|| err(prim, "index arrays do not broadcast"))?;
        }
    }
    let contiguous = int_dims.windows(2).all(|w| w[1] == w[0] + 1);
    let insert_at = match int_dims.first() {
        Some(&first) if contiguous => ents[..first]
            .iter()
            .filter(|e| matches!(e, Ent::Slice(_)))
            .count(),
        _ => 0,
    };
    let slice_sizes: Vec<usize> = ents
        .iter()
        .filter_map(|e| match e {
            Ent::Slice(p) => Some(p.len()),
            Ent::Int(..) => None,
        })
        .collect();
    let mut shape = slice_sizes[..insert_at].to_vec();
    shape.extend_from_slice(&bshape);
    shape.extend_from_slice(&slice_sizes[insert_at..]);
    let vstrides = strides(&view.shape);
    let n: usize = shape.iter().product();
    let mut pos = Vec::with_capacity(n);
    if n > 0 {
        let nb = bshape.len();
        let mut o = vec![0; shape.len()];
        loop {
            let b_idx = &o[insert_at..insert_at + nb];
            let mut flat = 0usize;
            let mut slot = 0;
            for (d, e) in ents.iter().enumerate() {
                let p = match e {
                    Ent::Slice(ps) => {
                        let r = if slot < insert_at { slot } else { slot + nb };
                        slot += 1;
                        ps[o[r]]
                    }
                    Ent::Int(s, ps) => ps[broadcast_flat(s, b_idx)],
                };
                flat += p * vstrides[d];
            }
            pos.push(view.pos[flat]);
            if !next_index(&mut o, &shape) {
                break;
            }
        }
    }
    Ok(View { shape, pos })
}

/// A `get`, `swap` or `addupdate` on the discharged ref (operand 0).
#[derive(Debug)]
pub(crate) struct StateOp {
    pub kind: Kind,
    pub indexers: Vec<Indexer>,
}

/// Positions of the value (broadcast NumPy-style to `shape`) per element.
fn value_index(vshape: &[usize], shape: &[usize]) -> Option<Vec<usize>> {
    if broadcast_shapes(vshape, shape).as_deref() != Some(shape) {
        return None;
    }
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n > 0 {
        let mut idx = vec![0; shape.len()];
        loop {
            out.push(broadcast_flat(vshape, &idx));
            if !next_index(&mut idx, shape) {
                break;
            }
        }
    }
    Some(out)
}

/// Writes (or adds) the values lane by lane, in order; the old values are
/// read just before each write, so repeated positions see earlier writes
/// (as the interpreter's read-modify-write does). Returns the updated ref
/// followed by the old values.
fn write<T: Elem>(r: &[T], pos: &[usize], val: &[T], vi: &[usize], add: bool) -> Vec<T> {
    let mut out = r.to_vec();
    let mut old = Vec::with_capacity(pos.len());
    for (&p, &i) in pos.iter().zip(vi) {
        old.push(out[p]);
        out[p] = if add { out[p].add(val[i]) } else { val[i] };
    }
    out.extend(old);
    out
}

impl NativeOp for StateOp {
    fn run(&self, args: &[&HostArray], _: usize) -> Result<Vec<HostArray>, IrError> {
        let prim = self.kind.name();
        let vp = value_pos(&self.indexers);
        let want = if self.kind == Kind::Get { vp } else { vp + 1 };
        if args.len() != want {
            return Err(err(prim, format!("expected {want} operands")));
        }
        let r = args[0];
        let mut view = View {
            shape: r.shape().to_vec(),
            pos: (0..r.len()).collect(),
        };
        for ix in &self.indexers {
            view = apply(prim, view, ix, args)?;
        }
        match self.kind {
            Kind::Get => {
                let d = map_same!(r.data(), v => view.pos.iter().map(|&p| v[p]).collect());
                Ok(vec![HostArray::new(view.shape.clone(), d)?])
            }
            Kind::Swap | Kind::AddUpdate => {
                let val = args[vp];
                let vi = value_index(val.shape(), &view.shape)
                    .ok_or_else(|| err(prim, "value does not broadcast to the indexed shape"))?;
                let add = self.kind == Kind::AddUpdate;
                let n = r.len();
                let mut both = map_same2!(r.data(), val.data(), (rv, vv) => write(rv, &view.pos, vv, &vi, add),
                    err(prim, "value and ref dtypes differ"));
                let old = map_same!(&mut both, v => v.split_off(n));
                let new = HostArray::new(r.shape().to_vec(), both)?;
                Ok(if add {
                    vec![new]
                } else {
                    vec![HostArray::new(view.shape.clone(), old)?, new]
                })
            }
        }
    }
}
