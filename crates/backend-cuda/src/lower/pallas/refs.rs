//! `Ref`s inside a `pallas_call` kernel: views of an operand's block window
//! in global memory or of a scratch region, NumPy-style indexers over them,
//! and the state (`get`, `swap`, `addupdate`) and Pallas memory primitives
//! (`load`, `store`, `atomic_rmw`, `atomic_cas`, `program_id`,
//! `num_programs`).
//!
//! Semantics are the reference interpreter's (`ir::interp::state`): the
//! state primitives clamp their indices (static negative ones wrap), the
//! Pallas ones do not — an out-of-bounds lane reads the uninitialised value
//! and is never written, a masked-off lane reads `other` (or 0). A window
//! that hangs over the array's edge (a partial edge block) reads the
//! uninitialised value past the edge and drops writes there.
//!
//! Atomics run in one thread, lane by lane in order, between barriers: the
//! grid axes along which programs share an output block run in order inside
//! one thread block (`call.rs`), so no two thread blocks touch the same
//! element and the results equal the interpreter's, float sums included.

use super::super::kernel::{affine, compute, i64c, multi_index, strides};
use super::block::{in_kernel, uninit, uninit_c, BVal, Block};
use super::ops::{at, dtype_of, shape_of};
use crate::kir::{BinOp, Expr, Space, Stmt};
use jaxon_ir::primitive::{
    AddUpdateParams, AtomicCasParams, AtomicOp, AtomicRmwParams, GetParams, IndexEntry, IndexValue,
    Indexer, LoadParams, NumProgramsParams, Pallas, ProgramIdParams, State, StoreParams,
    SwapParams,
};
use jaxon_ir::{DType, IrError};

/// A `Ref` of the kernel: `shape` (the kernel's view) over memory.
#[derive(Clone, Debug)]
pub(crate) struct RefView {
    pub space: Space,
    /// Element index of the array's origin (`i64`).
    pub base: Expr,
    pub dtype: DType,
    /// The kernel-visible shape.
    pub shape: Vec<usize>,
    /// The array dimension of each kernel dimension.
    pub dims: Vec<usize>,
    /// The window's origin along each array dimension (`i64`).
    pub origin: Vec<Expr>,
    /// The array's shape.
    pub array: Vec<usize>,
    /// Per array dimension: whether a window can hang over the edge.
    pub check: Vec<bool>,
}

impl RefView {
    /// A whole region as a ref (scratch).
    pub fn whole(space: Space, base: Expr, dtype: DType, shape: &[usize]) -> RefView {
        RefView {
            space,
            base,
            dtype,
            shape: shape.to_vec(),
            dims: (0..shape.len()).collect(),
            origin: vec![i64c(0); shape.len()],
            array: shape.to_vec(),
            check: vec![false; shape.len()],
        }
    }

    /// The element index of kernel-local index `local`, and whether it is
    /// inside the array (`None`: always).
    fn addr(&self, local: &[Expr]) -> (Expr, Option<Expr>) {
        let mut coords = self.origin.clone();
        for (k, &d) in self.dims.iter().enumerate() {
            if let Some(l) = local.get(k) {
                coords[d] = coords[d].clone() + l.clone();
            }
        }
        let st = strides(&self.array);
        let mut valid: Option<Expr> = None;
        for (d, c) in coords.iter().enumerate() {
            if self.check[d] {
                let ok = c.clone().lt(i64c(self.array[d] as i64));
                valid = Some(match valid {
                    None => ok,
                    Some(v) => v.and(ok),
                });
            }
        }
        (self.base.clone() + affine(0, &st, &coords), valid)
    }
}

/// Whether indices outside the view clamp (state) or mask (Pallas).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Clamp,
    Pallas,
}

/// One indexer entry, analysed.
#[derive(Clone)]
enum Ent {
    Slice {
        start: Expr,
        size: usize,
        stride: usize,
    },
    Int(Expr),
    Arr(BVal),
}

/// One indexer applied to a view of `in_shape`.
#[derive(Clone)]
struct Ix {
    in_shape: Vec<usize>,
    ents: Vec<Ent>,
    out_shape: Vec<usize>,
    insert_at: usize,
    bshape: Vec<usize>,
}

/// The indexers of one access, in order, and the resulting shape.
struct Chain {
    ixs: Vec<Ix>,
    shape: Vec<usize>,
    mode: Mode,
}

fn scalar_i64(ins: &[BVal], k: usize, prim: &str) -> Result<Expr, IrError> {
    match ins.get(k) {
        Some(BVal::Scalar(e, d)) if !d.is_float() => Ok(e.clone().cast(DType::I64)),
        _ => Err(IrError::ty(
            prim,
            format!("index operand {k} must be an integer scalar"),
        )),
    }
}

fn index_value(v: &IndexValue, ins: &[BVal], prim: &str) -> Result<(Expr, Option<i64>), IrError> {
    match v {
        IndexValue::Static(i) => Ok((i64c(*i), Some(*i))),
        IndexValue::Dynamic(k) => Ok((scalar_i64(ins, *k, prim)?, None)),
    }
}

fn analyse(
    in_shape: &[usize],
    ix: &Indexer,
    ins: &[BVal],
    mode: Mode,
    prim: &str,
) -> Result<Ix, IrError> {
    if ix.entries.len() > in_shape.len() {
        return Err(IrError::ty(
            prim,
            format!(
                "{} indices for a ref of shape {in_shape:?}",
                ix.entries.len()
            ),
        ));
    }
    let mut ents = Vec::new();
    for (d, &dim) in in_shape.iter().enumerate() {
        let n = dim as i64;
        let ent = match ix.entries.get(d) {
            None => Ent::Slice {
                start: i64c(0),
                size: dim,
                stride: 1,
            },
            Some(IndexEntry::Slice {
                start,
                size,
                stride,
            }) => {
                if *stride == 0 {
                    return Err(IrError::ty(prim, "slice stride 0"));
                }
                let span = if *size == 0 {
                    0
                } else {
                    (size - 1) * stride + 1
                };
                let (raw, st) = index_value(start, ins, prim)?;
                let start = match mode {
                    Mode::Pallas => raw,
                    Mode::Clamp => {
                        if span > dim {
                            return Err(IrError::ty(
                                prim,
                                format!("slice of {size} (stride {stride}) does not fit dimension {dim}"),
                            ));
                        }
                        let hi = (dim - span) as i64;
                        match st {
                            Some(s) => i64c(s.clamp(0, hi)),
                            None => raw.max(i64c(0)).min(i64c(hi)),
                        }
                    }
                };
                Ent::Slice {
                    start,
                    size: *size,
                    stride: *stride,
                }
            }
            Some(IndexEntry::Int(v)) => {
                let (raw, st) = index_value(v, ins, prim)?;
                Ent::Int(match (mode, st) {
                    (Mode::Pallas, _) => raw,
                    (Mode::Clamp, Some(s)) => {
                        let w = if s < 0 { s + n } else { s };
                        i64c(w.clamp(0, (n - 1).max(0)))
                    }
                    (Mode::Clamp, None) => raw.max(i64c(0)).min(i64c((n - 1).max(0))),
                })
            }
            Some(IndexEntry::Array(k)) => {
                let a = ins
                    .get(*k)
                    .cloned()
                    .ok_or_else(|| IrError::ty(prim, format!("index array {k} is missing")))?;
                if dtype_of(&a).is_float() {
                    return Err(IrError::ty(prim, "float index array"));
                }
                Ent::Arr(a)
            }
        };
        ents.push(ent);
    }
    let int_dims: Vec<usize> = (0..ents.len())
        .filter(|&d| !matches!(ents[d], Ent::Slice { .. }))
        .collect();
    let mut bshape: Vec<usize> = Vec::new();
    for &d in &int_dims {
        let s = match &ents[d] {
            Ent::Arr(a) => shape_of(a),
            Ent::Int(_) | Ent::Slice { .. } => Vec::new(),
        };
        bshape = jaxon_ir::shape::broadcast_sizes(&bshape, &s)
            .ok_or_else(|| IrError::ty(prim, "index arrays do not broadcast"))?;
    }
    let contiguous = int_dims.windows(2).all(|w| w[1] == w[0] + 1);
    let insert_at = match int_dims.first() {
        Some(&first) if contiguous => ents[..first]
            .iter()
            .filter(|e| matches!(e, Ent::Slice { .. }))
            .count(),
        _ => 0,
    };
    let sizes: Vec<usize> = ents
        .iter()
        .filter_map(|e| match e {
            Ent::Slice { size, .. } => Some(*size),
            Ent::Int(_) | Ent::Arr(_) => None,
        })
        .collect();
    let mut out_shape = sizes[..insert_at].to_vec();
    out_shape.extend_from_slice(&bshape);
    out_shape.extend_from_slice(&sizes[insert_at..]);
    Ok(Ix {
        in_shape: in_shape.to_vec(),
        ents,
        out_shape,
        insert_at,
        bshape,
    })
}

impl Chain {
    fn new(
        r: &RefView,
        indexers: &[Indexer],
        ins: &[BVal],
        mode: Mode,
        prim: &str,
    ) -> Result<Chain, IrError> {
        let mut shape = r.shape.clone();
        let mut ixs = Vec::new();
        for ix in indexers {
            let a = analyse(&shape, ix, ins, mode, prim)?;
            shape = a.out_shape.clone();
            ixs.push(a);
        }
        Ok(Chain { ixs, shape, mode })
    }

    /// The ref-local index of view index `idx`, and whether it is inside
    /// the ref (Pallas mode; `None`: always).
    fn local(&self, b: &mut Block, idx: &[Expr]) -> Result<(Vec<Expr>, Option<Expr>), IrError> {
        let mut cur = idx.to_vec();
        let mut valid: Option<Expr> = None;
        let and = |v: &mut Option<Expr>, c: Expr| {
            *v = Some(match v.take() {
                None => c,
                Some(p) => p.and(c),
            })
        };
        for ix in self.ixs.iter().rev() {
            let nb = ix.bshape.len();
            let bidx: Vec<Expr> = cur[ix.insert_at..ix.insert_at + nb].to_vec();
            let mut prev = Vec::with_capacity(ix.in_shape.len());
            let mut slot = 0;
            for (d, e) in ix.ents.iter().enumerate() {
                let dim = ix.in_shape[d] as i64;
                let p = match e {
                    Ent::Slice { start, stride, .. } => {
                        let r = if slot < ix.insert_at { slot } else { slot + nb };
                        slot += 1;
                        start.clone() + cur[r].clone() * i64c(*stride as i64)
                    }
                    Ent::Int(v) => v.clone(),
                    Ent::Arr(a) => {
                        let ash = shape_of(a);
                        let off = nb - ash.len();
                        let aidx: Vec<Expr> = ash
                            .iter()
                            .enumerate()
                            .map(|(i, &n)| {
                                if n == 1 {
                                    i64c(0)
                                } else {
                                    bidx[off + i].clone()
                                }
                            })
                            .collect();
                        let raw = at(b, a, &aidx)?.cast(DType::I64);
                        match self.mode {
                            Mode::Pallas => raw,
                            Mode::Clamp => {
                                let w = Expr::select(
                                    raw.clone().lt(i64c(0)),
                                    raw.clone() + i64c(dim),
                                    raw,
                                );
                                w.max(i64c(0)).min(i64c((dim - 1).max(0)))
                            }
                        }
                    }
                };
                if self.mode == Mode::Pallas {
                    let pv = b.k.let_("p", DType::I64, p);
                    let p = Expr::var(pv);
                    and(
                        &mut valid,
                        p.clone().ge(i64c(0)).and(p.clone().lt(i64c(dim))),
                    );
                    prev.push(p);
                } else {
                    prev.push(p);
                }
            }
            cur = prev;
        }
        Ok((cur, valid))
    }

    /// The element index and validity (inside the ref and the array) of
    /// view index `idx`.
    fn resolve(
        &self,
        b: &mut Block,
        r: &RefView,
        idx: &[Expr],
    ) -> Result<(Expr, Option<Expr>), IrError> {
        let (local, v1) = self.local(b, idx)?;
        let (addr, v2) = r.addr(&local);
        let valid = match (v1, v2) {
            (Some(a), Some(c)) => Some(a.and(c)),
            (a, c) => a.or(c),
        };
        Ok((addr, valid))
    }
}

fn the_ref(ins: &[BVal], prim: &str) -> Result<RefView, IrError> {
    match ins.first() {
        Some(BVal::Ref(r)) => Ok(r.clone()),
        _ => Err(IrError::ty(prim, "operand 0 must be a Ref")),
    }
}

fn operand(ins: &[BVal], k: usize, prim: &str) -> Result<BVal, IrError> {
    ins.get(k)
        .cloned()
        .ok_or_else(|| IrError::ty(prim, format!("operand {k} is missing")))
}

/// Element `idx` of a value of the view's shape (a scalar broadcasts).
fn value_at(b: &mut Block, v: &BVal, idx: &[Expr]) -> Result<Expr, IrError> {
    match v {
        BVal::Scalar(e, _) => Ok(e.clone()),
        BVal::Array(_) | BVal::Ref(_) | BVal::Lazy(_) => at(b, v, idx),
    }
}

/// Reads the view (the old values of a write): in-bounds lanes from
/// memory, the uninitialised value elsewhere.
fn read(b: &mut Block, r: &RefView, ch: &Chain) -> Result<BVal, IrError> {
    let d = r.dtype;
    let (r, shape) = (r.clone(), ch.shape.clone());
    b.produce(d, &shape, |b, idx| {
        let (addr, valid) = ch.resolve(b, &r, idx)?;
        Ok(match valid {
            None => b.ld(r.space, d, addr, None),
            Some(v) => {
                let x = b.ld(r.space, d, addr, Some((v.clone(), uninit(d))));
                Expr::select(v, x, uninit_c(d))
            }
        })
    })
}

/// Writes `f(old, new)` to the view's lanes where `mask` (an operand of the
/// view's shape) allows; in parallel, one lane per thread step.
fn write(
    b: &mut Block,
    r: &RefView,
    ch: &Chain,
    val: &BVal,
    mask: Option<&BVal>,
    add: bool,
) -> Result<(), IrError> {
    let n: usize = ch.shape.iter().product();
    let (r, val, mask, shape) = (r.clone(), val.clone(), mask.cloned(), ch.shape.clone());
    b.each(n, |b, e| {
        let idx = multi_index(&mut b.k, e, &shape);
        let (addr, valid) = ch.resolve(b, &r, &idx)?;
        let on = match &mask {
            Some(m) => {
                let m = value_at(b, m, &idx)?;
                Some(valid.map_or(m.clone(), |v| v.and(m)))
            }
            None => valid,
        };
        let mut x = value_at(b, &val, &idx)?;
        if add {
            let old = b.ld(
                r.space,
                r.dtype,
                addr.clone(),
                on.clone().map(|m| (m, Expr::int(r.dtype, 0))),
            );
            x = if r.dtype.is_bool() {
                old.or(x)
            } else {
                old + x
            };
        }
        b.st(r.space, r.dtype, addr, x, on);
        Ok(())
    })
}

/// `get`, `swap`, `addupdate` on a ref. A `swap` whose old value is
/// dropped (`used` false: `x_ref[...] = v`) does not read it; its result is
/// then a placeholder nothing binds.
pub(super) fn state(
    b: &mut Block,
    p: &State,
    ins: &[BVal],
    outs: &[(DType, Vec<usize>)],
    used: bool,
) -> Result<Vec<BVal>, IrError> {
    let prim = p.name();
    let r = the_ref(ins, prim)?;
    match p {
        State::Get(GetParams { indexers }) => {
            let ch = Chain::new(&r, indexers, ins, Mode::Clamp, prim)?;
            Ok(vec![read(b, &r, &ch)?])
        }
        State::Swap(SwapParams { indexers }) => {
            let ch = Chain::new(&r, indexers, ins, Mode::Clamp, prim)?;
            let val = operand(ins, jaxon_ir::primitive::value_operand(indexers), prim)?;
            if !used {
                write(b, &r, &ch, &val, None, false)?;
                let d = outs.first().map_or(r.dtype, |o| o.0);
                return Ok(vec![BVal::Scalar(uninit_c(d), d)]);
            }
            let old = read(b, &r, &ch)?;
            write(b, &r, &ch, &val, None, false)?;
            Ok(vec![old])
        }
        State::AddUpdate(AddUpdateParams { indexers }) => {
            let ch = Chain::new(&r, indexers, ins, Mode::Clamp, prim)?;
            let val = operand(ins, jaxon_ir::primitive::value_operand(indexers), prim)?;
            write(b, &r, &ch, &val, None, true)?;
            Ok(Vec::new())
        }
    }
}

/// The Pallas primitives of a kernel body.
pub(super) fn pallas(
    b: &mut Block,
    p: &Pallas,
    ins: &[BVal],
    _outs: &[(DType, Vec<usize>)],
) -> Result<Vec<BVal>, IrError> {
    let prim = p.name();
    match p {
        Pallas::ProgramId(ProgramIdParams { axis }) => {
            let id = b.ids.get(*axis).cloned().ok_or_else(|| {
                IrError::ty(prim, format!("axis {axis} is out of range for the grid"))
            })?;
            Ok(vec![BVal::Scalar(id.cast(DType::I32), DType::I32)])
        }
        Pallas::NumPrograms(NumProgramsParams { axis }) => {
            let n = b.grid.get(*axis).copied().ok_or_else(|| {
                IrError::ty(prim, format!("axis {axis} is out of range for the grid"))
            })?;
            Ok(vec![BVal::Scalar(Expr::i32(n as i32), DType::I32)])
        }
        Pallas::Load(LoadParams {
            indexers,
            has_mask,
            has_other,
        }) => {
            let r = the_ref(ins, prim)?;
            let ch = Chain::new(&r, indexers, ins, Mode::Pallas, prim)?;
            let vp = jaxon_ir::primitive::value_operand(indexers);
            let mask = has_mask.then(|| operand(ins, vp, prim)).transpose()?;
            let other = has_other
                .then(|| operand(ins, vp + usize::from(*has_mask), prim))
                .transpose()?;
            let d = r.dtype;
            let shape = ch.shape.clone();
            let v = b.produce(d, &shape, |b, idx| {
                let (addr, valid) = ch.resolve(b, &r, idx)?;
                let m = mask.as_ref().map(|m| value_at(b, m, idx)).transpose()?;
                let on = match (&m, &valid) {
                    (Some(m), Some(v)) => Some(m.clone().and(v.clone())),
                    (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                    (None, None) => None,
                };
                let x = b.ld(r.space, d, addr, on.map(|o| (o, Expr::int(d, 0))));
                let x = match valid {
                    Some(v) => Expr::select(v, x, uninit_c(d)),
                    None => x,
                };
                Ok(match m {
                    None => x,
                    Some(m) => {
                        let o = match &other {
                            Some(o) => value_at(b, o, idx)?,
                            None => Expr::constant(compute(d), 0.0),
                        };
                        Expr::select(m, x, o)
                    }
                })
            })?;
            Ok(vec![v])
        }
        Pallas::Store(StoreParams { indexers, has_mask }) => {
            let r = the_ref(ins, prim)?;
            let ch = Chain::new(&r, indexers, ins, Mode::Pallas, prim)?;
            let vp = jaxon_ir::primitive::value_operand(indexers);
            let val = operand(ins, vp, prim)?;
            let mask = has_mask.then(|| operand(ins, vp + 1, prim)).transpose()?;
            let old = read(b, &r, &ch)?;
            write(b, &r, &ch, &val, mask.as_ref(), false)?;
            Ok(vec![old])
        }
        Pallas::AtomicRmw(AtomicRmwParams { indexers, op }) => {
            let r = the_ref(ins, prim)?;
            let ch = Chain::new(&r, indexers, ins, Mode::Pallas, prim)?;
            let vp = jaxon_ir::primitive::value_operand(indexers);
            let val = operand(ins, vp, prim)?;
            let mask = (ins.len() == vp + 2)
                .then(|| operand(ins, vp + 1, prim))
                .transpose()?;
            let op = *op;
            atomic(b, &r, &ch, move |b, old, idx| {
                let v = value_at(b, &val, idx)?;
                let m = mask.as_ref().map(|m| value_at(b, m, idx)).transpose()?;
                Ok((combine(op, r.dtype, old, v)?, m))
            })
        }
        Pallas::AtomicCas(AtomicCasParams { indexers }) => {
            let r = the_ref(ins, prim)?;
            let ch = Chain::new(&r, indexers, ins, Mode::Pallas, prim)?;
            let vp = jaxon_ir::primitive::value_operand(indexers);
            let (cmp, val) = (operand(ins, vp, prim)?, operand(ins, vp + 1, prim)?);
            atomic(b, &r, &ch, move |b, old, idx| {
                let c = value_at(b, &cmp, idx)?;
                let v = value_at(b, &val, idx)?;
                Ok((Expr::select(old.clone().eq(c), v, old), None))
            })
        }
        Pallas::PallasCall(_) => Err(in_kernel("a nested pallas_call")),
    }
}

/// `old op v` for `atomic_rmw` on values of storage dtype `d`.
fn combine(op: AtomicOp, d: DType, old: Expr, v: Expr) -> Result<Expr, IrError> {
    let bin = |o: BinOp, a: Expr, b: Expr| Expr::Binary(o, Box::new(a), Box::new(b));
    let bits = !d.is_float();
    Ok(match op {
        AtomicOp::Add if d.is_bool() => bin(BinOp::Or, old, v),
        AtomicOp::Add => bin(BinOp::Add, old, v),
        AtomicOp::Max => bin(BinOp::Max, old, v),
        AtomicOp::Min => bin(BinOp::Min, old, v),
        AtomicOp::And if bits => bin(BinOp::And, old, v),
        AtomicOp::Or if bits => bin(BinOp::Or, old, v),
        AtomicOp::Xor if bits => bin(BinOp::Xor, old, v),
        AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => {
            return Err(IrError::UnsupportedDType {
                primitive: "atomic_rmw".into(),
                dtype: d,
            })
        }
        AtomicOp::Xchg => v,
    })
}

/// A read-modify-write of every lane, in order, by one thread: `f` gives
/// the new value from the old and the lane's mask (`None`: all on).
/// Returns the old values (uninitialised out of bounds, 0 masked off).
fn atomic(
    b: &mut Block,
    r: &RefView,
    ch: &Chain,
    f: impl FnOnce(&mut Block, Expr, &[Expr]) -> Result<(Expr, Option<Expr>), IrError>,
) -> Result<Vec<BVal>, IrError> {
    let d = r.dtype;
    let shape = ch.shape.clone();
    let n: usize = shape.iter().product();
    let olds = b.alloc(d, &shape)?;
    let (r2, olds2) = (r.clone(), olds.clone());
    b.once(move |b| {
        let lane = b.k.var("lane", DType::I64);
        b.k.begin_body();
        let res = (|| -> Result<(), IrError> {
            let idx = multi_index(&mut b.k, Expr::var(lane), &shape);
            let (addr, valid) = ch.resolve(b, &r2, &idx)?;
            let probe = b.k.let_("old", compute(d), Expr::constant(compute(d), 0.0));
            let (new, m) = f(b, Expr::var(probe), &idx)?;
            let on = match (&m, &valid) {
                (Some(m), Some(v)) => Some(m.clone().and(v.clone())),
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                (None, None) => None,
            };
            let old = b.ld(
                r2.space,
                d,
                addr.clone(),
                on.clone().map(|o| (o, Expr::int(d, 0))),
            );
            // `probe` stands for the old value in `new`: set before the store.
            b.k.assign(probe, old);
            b.st(r2.space, d, addr, new, on.clone());
            let off = match &m {
                Some(m) => Expr::select(m.clone(), uninit_c(d), Expr::constant(compute(d), 0.0)),
                None => uninit_c(d),
            };
            let kept = match on {
                Some(o) => Expr::select(o, Expr::var(probe), off),
                None => Expr::var(probe),
            };
            b.st(
                olds2.space,
                d,
                olds2.base.clone() + Expr::var(lane),
                kept,
                None,
            );
            Ok(())
        })();
        let body = b.k.end_body();
        res?;
        b.k.push(Stmt::For {
            var: lane,
            start: i64c(0),
            end: i64c(n as i64),
            step: i64c(1),
            body,
        });
        Ok(())
    })?;
    if shape_of(&BVal::Array(olds.clone())).is_empty() {
        let x = b.ld(olds.space, d, olds.base.clone(), None);
        let s = b.k.let_("old", compute(d), x);
        return Ok(vec![BVal::Scalar(Expr::var(s), d)]);
    }
    Ok(vec![BVal::Array(olds)])
}
