//! Row runs: consecutive fused groups that all work row by row over one
//! space `S = [..rows, C]` — softmax, log-softmax, layer norm — lowered as
//! one kernel in which a thread block owns a row at a time. The row's
//! elements stay in registers (each of the block's threads holds
//! `⌈C / 256⌉` of them), reductions over the row are block reductions
//! (warp shuffles, then the warps' partials through shared memory), and
//! only the values the rest of the program reads are written back. A
//! softmax then reads its input once and writes its result once, instead
//! of one pass per group.
//!
//! Members of a run, in group order:
//! - a **full loop**: a loop group over `S`;
//! - a **full reduce**: a reduce group over `S` reducing its last axis,
//!   giving one value per row;
//! - a **scalar loop**: a loop group over the rows (`S[..-1]`, or that
//!   with a trailing 1), evaluated by every thread of the block alike.
//!
//! Invariants (checked by [`find`] before anything is lowered):
//! - every read of a value made earlier in the run is at the reading
//!   element's own position: a full value at the same element, a per-row
//!   value at the same row (their index maps are compared with those
//!   strides), so row `r` depends only on row `r` of the run's values;
//! - values from outside the run are read through their index maps as in
//!   any fused kernel (an input of shape `S` read only at the identity is
//!   loaded once per row into registers);
//! - at least one full reduce, and `32 <= C <= 16 · 256`;
//! - the row loop is uniform over the block (rows are blocks' grid-stride
//!   indices), so every barrier is reached by all threads;
//! - a value kept in registers is rounded to its dtype (f16/bf16 values
//!   are computed in f32), as storing and reloading it would round it.

use super::fused::{eval_members_with, maps_are_sound};
use super::kernel::{compute, finish, i64c, load, multi_index, round_to, store, Args, THREADS};
use super::plan::{BufId, Step};
use super::reduction::{acc_dtype, combine, identity};
use super::{atom_type, bind_outputs, out_type, Ctx, Env};
use crate::kir::{Expr, KernelBuilder, LaunchDims, ShuffleKind, Space, Var as KVar};
use jaxon_ir::passes::{operand_map, FusionPlan, Group, GroupKind, IndexMap};
use jaxon_ir::primitive::ReduceOp;
use jaxon_ir::{Atom, Binder, DType, Eqn, IrError, Jaxpr, Var};
use std::collections::{HashMap, HashSet};

/// Row elements per thread, at most.
const MAX_PER_THREAD: usize = 16;
/// Warps per block.
const WARPS: u32 = THREADS / 32;

/// What a member of a run is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    FullLoop,
    FullReduce(ReduceOp),
    ScalarLoop,
}

/// Where a run-made value lives per row.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Class {
    Full,
    Row,
}

fn row_major(shape: &[usize]) -> Vec<i64> {
    let mut st = vec![0i64; shape.len()];
    let mut acc = 1i64;
    for d in (0..shape.len()).rev() {
        st[d] = acc;
        acc *= shape[d] as i64;
    }
    st
}

/// Whether `map` (over `space`, into a value of `shape`) reads element
/// `want · i` of the value at space index `i`, on every dimension of
/// `space` longer than 1.
fn reads(map: &IndexMap, space: &[usize], shape: &[usize], want: &[i64]) -> bool {
    let st = map.strides(shape);
    map.base(shape) == 0
        && st.len() == space.len()
        && space
            .iter()
            .zip(st.iter().zip(want))
            .all(|(&n, (a, b))| n <= 1 || a == b)
}

/// The row run starting at group `gi` of `plan`, if one starts there: the
/// index of its last group.
pub(crate) fn find(jaxpr: &Jaxpr, plan: &FusionPlan, gi: usize) -> Option<usize> {
    let g0 = plan.groups.get(gi)?;
    if !matches!(g0.kind, GroupKind::Loop | GroupKind::Reduce { .. }) || g0.space.len() < 2 {
        return None;
    }
    let space = g0.space.clone();
    let c = *space.last()?;
    if !(32..=MAX_PER_THREAD * THREADS as usize).contains(&c) {
        return None;
    }
    let mut made: HashMap<Var, Class> = HashMap::new();
    let mut last = None;
    let mut reduces = 0;
    for (j, g) in plan.groups.iter().enumerate().skip(gi) {
        let Some(kind) = kind_of(g, &space) else {
            break;
        };
        if !group_fits(jaxpr, g, kind, &space, &made) {
            break;
        }
        let class = match kind {
            Kind::FullLoop => Class::Full,
            Kind::FullReduce(_) | Kind::ScalarLoop => Class::Row,
        };
        for v in &g.outputs {
            made.insert(*v, class);
        }
        reduces += usize::from(matches!(kind, Kind::FullReduce(_)));
        last = Some(j);
    }
    let last = last?;
    // A run pays when a reduction's operand would otherwise be read again.
    (reduces >= 1 && last > gi).then_some(last)
}

fn kind_of(g: &Group, space: &[usize]) -> Option<Kind> {
    let rows = &space[..space.len() - 1];
    let mut rows1 = rows.to_vec();
    rows1.push(1);
    match &g.kind {
        GroupKind::Loop if g.space == space => Some(Kind::FullLoop),
        GroupKind::Loop if g.space == rows || g.space == rows1 => Some(Kind::ScalarLoop),
        GroupKind::Reduce { op, axes } if g.space == space && axes == &[space.len() - 1] => {
            Some(Kind::FullReduce(*op))
        }
        GroupKind::Loop | GroupKind::Reduce { .. } | GroupKind::Opaque => None,
    }
}

fn members<'j>(jaxpr: &'j Jaxpr, g: &Group) -> Option<Vec<(&'j Eqn, IndexMap)>> {
    g.eqns
        .iter()
        .zip(&g.maps)
        .map(|(e, m)| jaxpr.eqns.get(*e).map(|eqn| (eqn, m.clone())))
        .collect()
}

/// Whether every read of a run-made value in `g` is at the reading
/// element's own position (see the module header), and `g` is a group
/// the fused kernels lower.
fn group_fits(
    jaxpr: &Jaxpr,
    g: &Group,
    kind: Kind,
    space: &[usize],
    made: &HashMap<Var, Class>,
) -> bool {
    let Some(ms) = members(jaxpr, g) else {
        return false;
    };
    if !maps_are_sound(&ms) || ms.iter().any(|(e, _)| super::keys::gives_keys(jaxpr, e)) {
        return false;
    }
    let gspace = &g.space;
    let full = row_major(space);
    let mut row = row_major(&space[..space.len() - 1]);
    if gspace.len() == space.len() {
        row.push(0);
    }
    let own: HashSet<Var> = ms
        .iter()
        .flat_map(|(e, _)| e.outputs.iter())
        .filter_map(|b| match b {
            Binder::Var(v) => Some(*v),
            Binder::Drop(_) => None,
        })
        .collect();
    let n = ms.len();
    for (i, (eqn, map)) in ms.iter().enumerate() {
        let reduce_root = i + 1 == n && matches!(kind, Kind::FullReduce(_));
        for (slot, a) in eqn.inputs.iter().enumerate() {
            let Atom::Var(v) = a else { continue };
            let Some(class) = made.get(v) else { continue };
            if own.contains(v) {
                continue;
            }
            let Ok((_, shape)) = atom_type(jaxpr, a) else {
                return false;
            };
            let ok = match (class, kind) {
                // The reduction reads its operand at the space index.
                (Class::Full, Kind::FullReduce(_)) if reduce_root => shape == space,
                (Class::Row, Kind::FullReduce(_)) if reduce_root => false,
                (Class::Full, Kind::ScalarLoop) => false,
                (Class::Full, Kind::FullLoop | Kind::FullReduce(_)) => {
                    operand_map(jaxpr, eqn, map, slot)
                        .is_some_and(|m| reads(&m, gspace, &shape, &full))
                }
                (Class::Row, Kind::FullLoop | Kind::FullReduce(_) | Kind::ScalarLoop) => {
                    operand_map(jaxpr, eqn, map, slot)
                        .is_some_and(|m| reads(&m, gspace, &shape, &row))
                }
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// A member ready to lower: its equations and the buffer of its result.
struct Member<'j> {
    kind: Kind,
    eqns: Vec<(&'j Eqn, IndexMap)>,
    root: Var,
    out: BufId,
    out_dtype: DType,
    /// Whether anything after the run reads the result.
    escapes: bool,
}

/// The values of variables made earlier in the row (or preloaded).
#[derive(Default)]
struct Regs {
    full: HashMap<Var, Vec<KVar>>,
    row: HashMap<Var, KVar>,
}

impl Regs {
    /// The values a member reads at element slot `e` (`None`: a per-row
    /// member).
    fn at(&self, e: Option<usize>) -> HashMap<Var, Expr> {
        let mut m: HashMap<Var, Expr> = self.row.iter().map(|(v, r)| (*v, Expr::var(*r))).collect();
        if let Some(e) = e {
            m.extend(self.full.iter().map(|(v, rs)| (*v, Expr::var(rs[e]))));
        }
        m
    }
}

/// Lowers groups `first..=last` of `plan` (a run [`find`] returned) as one
/// kernel.
pub(crate) fn lower(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    plan: &FusionPlan,
    (first, last): (usize, usize),
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let bad = |what: &str| IrError::Invalid(format!("cuda lowering: row run: {what}"));
    let groups = plan
        .groups
        .get(first..=last)
        .ok_or_else(|| bad("no such groups"))?;
    let space = groups[0].space.clone();
    let c = *space.last().ok_or_else(|| bad("rank 0"))?;
    let rows_shape = space[..space.len() - 1].to_vec();
    let n_rows: usize = rows_shape.iter().product();
    // Values read after the run.
    let mut later: HashSet<Var> = plan.groups[last + 1..]
        .iter()
        .chain(&plan.groups[..first])
        .flat_map(|g| g.inputs.iter().copied())
        .collect();
    later.extend(jaxpr.outvars.iter().filter_map(|a| match a {
        Atom::Var(v) => Some(*v),
        Atom::Lit(_) => None,
    }));
    let mut ms = Vec::new();
    for g in groups {
        let kind = kind_of(g, &space).ok_or_else(|| bad("a group that does not fit"))?;
        let eqns = members(jaxpr, g).ok_or_else(|| bad("a missing equation"))?;
        let (root_eqn, _) = eqns.last().ok_or_else(|| bad("an empty group"))?;
        let Some(Binder::Var(root)) = root_eqn.outputs.first() else {
            return Err(bad("a group without a result"));
        };
        let root = *root;
        let (out_dtype, _) = out_type(jaxpr, &root_eqn.outputs[0])?;
        let outs = bind_outputs(ctx, jaxpr, root_eqn, env)?;
        let (out, _, _) = outs.first().cloned().ok_or_else(|| bad("no result"))?;
        ms.push(Member {
            kind,
            eqns,
            root,
            out,
            out_dtype,
            escapes: later.contains(&root),
        });
    }
    if n_rows == 0 {
        return Ok(());
    }
    // Inputs of shape `S` from outside the run, read only at the identity
    // by full members: loaded once per row.
    let made: HashSet<Var> = ms.iter().map(|m| m.root).collect();
    let preload = preloads(jaxpr, groups, &space, &made);

    let vw = vector_width(ctx, env, &ms, &preload, c)?;
    let name = ctx.name(&if vw > 1 {
        format!("row_run_v{vw}")
    } else {
        "row_run".into()
    });
    let mut k = KernelBuilder::new(&name, THREADS);
    let mut args = Args::new();
    // With vectors, slots `e` come in groups of `vw` consecutive columns.
    let per_thread = c.div_ceil(THREADS as usize * vw) * vw;
    let tid = k.let_("tid", DType::I64, Expr::thread_x().cast(DType::I64));
    let warp = k.let_("warp", DType::I64, Expr::var(tid) / i64c(32));
    let row = k.var("row", DType::I64);
    let env_ro: &Env = env;
    let c_ro: &Ctx = ctx;
    let mut result = Ok(());
    k.for_(
        row,
        Expr::block_x().cast(DType::I64),
        i64c(n_rows as i64),
        Expr::grid_dim_x().cast(DType::I64),
        |k| {
            result = (|| {
                let row_idx = multi_index(k, Expr::var(row), &rows_shape);
                // Column expressions, not variables: the compiler folds
                // `tid + e·256` into each use instead of keeping 16 of them
                // (64-bit, two registers each) alive across the row.
                // Slot `e` is column `tid + e·256`, or with vectors column
                // `(e / vw)·256·vw + tid·vw + e mod vw`.
                let col = |e: usize| {
                    let (g, j) = (e / vw, e % vw);
                    let t = if vw > 1 {
                        Expr::var(tid) * i64c(vw as i64)
                    } else {
                        Expr::var(tid)
                    };
                    t + i64c((g * THREADS as usize * vw + j) as i64)
                };
                let valid = |e: usize| col(e).lt(i64c(c as i64));
                let full_idx = |e: usize| {
                    let mut idx = row_idx.clone();
                    idx.push(col(e));
                    idx
                };
                let lin = |e: usize| Expr::var(row) * i64c(c as i64) + col(e);
                let mut regs = Regs::default();
                for v in &preload {
                    let (dt, _) = atom_type(jaxpr, &Atom::Var(*v))?;
                    let val = env_ro.atom(&Atom::Var(*v))?;
                    let rs: Vec<KVar> = (0..per_thread)
                        .map(|_| k.let_("x", compute(dt), Expr::constant(compute(dt), 0.0)))
                        .collect();
                    if vw > 1 {
                        preload_vectors(k, &mut args, c_ro, val, &rs, vw, &valid, &lin)?;
                    } else {
                        for (e, r) in rs.iter().enumerate() {
                            let mut res = Ok(());
                            k.if_(valid(e), |k| {
                                res =
                                    load(k, &mut args, c_ro, val, lin(e)).map(|x| k.assign(*r, x));
                            });
                            res?;
                        }
                    }
                    regs.full.insert(*v, rs);
                }
                for (mi, m) in ms.iter().enumerate() {
                    match m.kind {
                        Kind::FullLoop => {
                            let cd = compute(m.out_dtype);
                            let mut rs = Vec::new();
                            for e in 0..per_thread {
                                let r = k.let_("v", cd, Expr::constant(cd, 0.0));
                                let mut res = Ok(());
                                k.if_(valid(e), |k| {
                                    res = (|| {
                                        let vals = eval_members_with(
                                            k,
                                            &mut args,
                                            c_ro,
                                            jaxpr,
                                            env_ro,
                                            &m.eqns,
                                            &full_idx(e),
                                            regs.at(Some(e)),
                                        )?;
                                        let v = vals
                                            .get(&m.root)
                                            .cloned()
                                            .ok_or_else(|| bad("the root was not evaluated"))?;
                                        // Rounded to the result's dtype, as a
                                        // store and reload would.
                                        k.assign(r, round_to(m.out_dtype, v));
                                        if m.escapes && vw == 1 {
                                            store(k, &mut args, c_ro, m.out, lin(e), Expr::var(r))?;
                                        }
                                        Ok(())
                                    })();
                                });
                                res?;
                                rs.push(r);
                            }
                            if m.escapes && vw > 1 {
                                store_vectors(k, &mut args, c_ro, m.out, &rs, vw, &valid, &lin)?;
                            }
                            regs.full.insert(m.root, rs);
                        }
                        Kind::FullReduce(op) => {
                            let s = reduce_row(
                                k, &mut args, c_ro, jaxpr, env_ro, m, op, mi, &regs, per_thread,
                                &valid, &full_idx, warp,
                            )?;
                            if m.escapes {
                                let mut res = Ok(());
                                k.if_(Expr::var(tid).eq(i64c(0)), |k| {
                                    res = store(
                                        k,
                                        &mut args,
                                        c_ro,
                                        m.out,
                                        Expr::var(row),
                                        Expr::var(s),
                                    );
                                });
                                res?;
                            }
                            regs.row.insert(m.root, s);
                        }
                        Kind::ScalarLoop => {
                            let (root_eqn, _) =
                                m.eqns.last().ok_or_else(|| bad("an empty group"))?;
                            let (_, gshape) = out_type(jaxpr, &root_eqn.outputs[0])?;
                            let mut idx = row_idx.clone();
                            if gshape.len() == space.len() {
                                idx.push(i64c(0));
                            }
                            let vals = eval_members_with(
                                k,
                                &mut args,
                                c_ro,
                                jaxpr,
                                env_ro,
                                &m.eqns,
                                &idx,
                                regs.at(None),
                            )?;
                            let v = vals
                                .get(&m.root)
                                .cloned()
                                .ok_or_else(|| bad("the root was not evaluated"))?;
                            let s = k.let_("s", compute(m.out_dtype), round_to(m.out_dtype, v));
                            if m.escapes {
                                let mut res = Ok(());
                                k.if_(Expr::var(tid).eq(i64c(0)), |k| {
                                    res = store(
                                        k,
                                        &mut args,
                                        c_ro,
                                        m.out,
                                        Expr::var(row),
                                        Expr::var(s),
                                    );
                                });
                                res?;
                            }
                            regs.row.insert(m.root, s);
                        }
                    }
                }
                Ok(())
            })();
        },
    );
    result?;
    let kernel = finish(k)?;
    let id = ctx.kernel(kernel);
    let blocks = (n_rows as u64).clamp(1, 4096) as u32;
    steps.push(Step::Launch {
        kernel: id,
        dims: LaunchDims::linear(blocks, THREADS),
        args: args.args,
    });
    Ok(())
}

/// Elements per vector access of a run over rows of `c` elements: `16 /
/// s` (at most 8) for the largest element size `s` of the preloaded
/// inputs and escaping full results, when that divides `c`, the rows are
/// at least one vector per thread long, and the slots fit; else 1 (the
/// scalar layout). Rows then start at a multiple of the width.
fn vector_width(
    ctx: &Ctx,
    env: &Env,
    ms: &[Member<'_>],
    preload: &[Var],
    c: usize,
) -> Result<usize, IrError> {
    let mut size = 0;
    for v in preload {
        match env.atom(&Atom::Var(*v))? {
            super::Value::Buf(b) => size = size.max(ctx.decl(b)?.dtype.size_bytes()),
            super::Value::Lit(_) => return Ok(1),
        }
    }
    for m in ms {
        if m.escapes && m.kind == Kind::FullLoop {
            size = size.max(ctx.decl(m.out)?.dtype.size_bytes());
        }
    }
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Ok(1);
    }
    let w = (16 / size).min(8);
    let threads = THREADS as usize;
    let fits = c.div_ceil(threads * w) * w <= MAX_PER_THREAD;
    Ok(if c.is_multiple_of(w) && c >= threads * w && fits {
        w
    } else {
        1
    })
}

/// Loads `val` (a buffer of the run's space) into the slots `rs` with one
/// vector access per group of `vw` slots (a group is valid or invalid as
/// a whole: `c` is a multiple of `vw`).
#[allow(clippy::too_many_arguments)]
fn preload_vectors(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    val: super::Value,
    rs: &[KVar],
    vw: usize,
    valid: &dyn Fn(usize) -> Expr,
    lin: &dyn Fn(usize) -> Expr,
) -> Result<(), IrError> {
    let super::Value::Buf(b) = val else {
        return Err(IrError::Invalid(
            "cuda lowering: row run: a vector preload of a literal".into(),
        ));
    };
    let d = ctx.decl(b)?.dtype;
    let p = args.buffer(k, ctx, b, false)?;
    for (g, group) in rs.chunks(vw).enumerate() {
        k.if_(valid(g * vw), |k| {
            let xs: Vec<KVar> = (0..vw).map(|_| k.var("x", d)).collect();
            k.load(&xs, p.into(), lin(g * vw), None);
            for (r, x) in group.iter().zip(&xs) {
                let x = if compute(d) != d {
                    Expr::var(*x).cast(compute(d))
                } else {
                    Expr::var(*x)
                };
                k.assign(*r, x);
            }
        });
    }
    Ok(())
}

/// Stores the slots `rs` (compute dtype, already rounded) to `out` with
/// one vector access per valid group of `vw` slots.
#[allow(clippy::too_many_arguments)]
fn store_vectors(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    out: BufId,
    rs: &[KVar],
    vw: usize,
    valid: &dyn Fn(usize) -> Expr,
    lin: &dyn Fn(usize) -> Expr,
) -> Result<(), IrError> {
    let d = ctx.decl(out)?.dtype;
    let p = args.buffer(k, ctx, out, true)?;
    for (g, group) in rs.chunks(vw).enumerate() {
        let vals: Vec<Expr> = group
            .iter()
            .map(|r| {
                if compute(d) != d {
                    Expr::var(*r).cast(d)
                } else {
                    Expr::var(*r)
                }
            })
            .collect();
        k.if_(valid(g * vw), |k| {
            k.store(p.into(), lin(g * vw), vals, None)
        });
    }
    Ok(())
}

/// The inputs of shape `space` from outside the run that full members read
/// only at the identity (and no scalar member reads).
fn preloads(jaxpr: &Jaxpr, groups: &[Group], space: &[usize], made: &HashSet<Var>) -> Vec<Var> {
    let full = row_major(space);
    let mut ok: Vec<Var> = Vec::new();
    let mut refused: HashSet<Var> = HashSet::new();
    for g in groups {
        let Some(ms) = members(jaxpr, g) else {
            continue;
        };
        let own: HashSet<Var> = ms
            .iter()
            .flat_map(|(e, _)| e.outputs.iter())
            .filter_map(|b| match b {
                Binder::Var(v) => Some(*v),
                Binder::Drop(_) => None,
            })
            .collect();
        let n = ms.len();
        let reduce = matches!(g.kind, GroupKind::Reduce { .. });
        for (i, (eqn, map)) in ms.iter().enumerate() {
            for (slot, a) in eqn.inputs.iter().enumerate() {
                let Atom::Var(v) = a else { continue };
                if made.contains(v) || own.contains(v) {
                    continue;
                }
                let Ok((_, shape)) = atom_type(jaxpr, a) else {
                    refused.insert(*v);
                    continue;
                };
                let identity = if reduce && i + 1 == n {
                    shape == space
                } else {
                    g.space == space
                        && shape == space
                        && operand_map(jaxpr, eqn, map, slot)
                            .is_some_and(|m| reads(&m, &g.space, &shape, &full))
                };
                if identity {
                    if !ok.contains(v) {
                        ok.push(*v);
                    }
                } else {
                    refused.insert(*v);
                }
            }
        }
    }
    ok.retain(|v| !refused.contains(v));
    ok
}

/// One full reduce member over the block's row: each thread folds its
/// elements, warps fold by shuffles, warp 0 folds the warps' partials
/// (through shared memory), and every thread gets the row's value.
#[allow(clippy::too_many_arguments)]
fn reduce_row(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    jaxpr: &Jaxpr,
    env: &Env,
    m: &Member<'_>,
    op: ReduceOp,
    mi: usize,
    regs: &Regs,
    per_thread: usize,
    valid: &dyn Fn(usize) -> Expr,
    full_idx: &dyn Fn(usize) -> Vec<Expr>,
    warp: KVar,
) -> Result<KVar, IrError> {
    let bad = |what: &str| IrError::Invalid(format!("cuda lowering: row run: {what}"));
    let (root, producers) = m.eqns.split_last().ok_or_else(|| bad("an empty group"))?;
    let a = root
        .0
        .inputs
        .first()
        .ok_or_else(|| bad("a reduction without operand"))?;
    let (d, _) = atom_type(jaxpr, a)?;
    let acc_t = acc_dtype(d);
    let acc = k.let_("acc", acc_t, identity(op, d));
    for e in 0..per_thread {
        let mut res = Ok(());
        k.if_(valid(e), |k| {
            res = (|| {
                let pre = regs.at(Some(e));
                let vals =
                    eval_members_with(k, args, ctx, jaxpr, env, producers, &full_idx(e), pre)?;
                let x = match a {
                    Atom::Var(v) if vals.contains_key(v) => vals[v].clone(),
                    _ => {
                        let (_, shape) = atom_type(jaxpr, a)?;
                        let st = row_major(&shape);
                        let idx = full_idx(e);
                        let lin = super::kernel::affine(0, &st, &idx);
                        load(k, args, ctx, env.atom(a)?, lin)?
                    }
                };
                let x = if compute(d) != acc_t {
                    x.cast(acc_t)
                } else {
                    x
                };
                k.assign(acc, combine(op, d, Expr::var(acc), x));
                Ok(())
            })();
        });
        res?;
    }
    let other = k.var("other", acc_t);
    let fold = |k: &mut KernelBuilder| {
        for s in [16, 8, 4, 2, 1] {
            k.shuffle(other, ShuffleKind::Xor, Expr::var(acc), Expr::u32(s), 32);
            k.assign(acc, combine(op, d, Expr::var(acc), Expr::var(other)));
        }
    };
    fold(k);
    let part = k.shared(&format!("part{mi}"), acc_t, WARPS);
    let total = k.shared(&format!("total{mi}"), acc_t, 1);
    k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
        k.store(
            Space::Shared(part),
            Expr::var(warp),
            vec![Expr::var(acc)],
            None,
        );
    });
    k.barrier();
    k.if_(Expr::var(warp).eq(i64c(0)), |k| {
        k.assign(acc, identity(op, d));
        k.if_(Expr::lane().lt(Expr::u32(WARPS)), |k| {
            k.load(&[acc], Space::Shared(part), Expr::lane(), None);
        });
        fold(k);
        k.if_(Expr::lane().eq(Expr::u32(0)), |k| {
            k.store(Space::Shared(total), i64c(0), vec![Expr::var(acc)], None);
        });
    });
    k.barrier();
    let t = k.var("total", acc_t);
    k.load(&[t], Space::Shared(total), i64c(0), None);
    let cd = compute(m.out_dtype);
    let v = if acc_t != cd {
        Expr::var(t).cast(cd)
    } else {
        Expr::var(t)
    };
    Ok(k.let_("row_value", cd, round_to(m.out_dtype, v)))
}
