//! `sort` of lines that fit in one block's shared memory: a **bitonic
//! sort**, one block per line (grid-stride over the lines). The keys and
//! the original positions are loaded into shared memory, padded to a power
//! of two `P` with entries that sort after every real one; `log2(P)·(log2(P)+1)/2`
//! compare-exchange stages (unrolled at lowering, a barrier after each)
//! sort them by (keys lexicographically, original position) — a total
//! order, so the result is the interpreter's stable sort exactly. Then every
//! operand is gathered through the sorted positions.
//!
//! Invariants: in a stage each shared element belongs to exactly one
//! thread's pair, so there are no races (the simulator checks); the line
//! loop and the stage sequence are block-uniform, so every thread reaches
//! every barrier; global reads are at positions `< len` of the line.

use super::kernel::{compute, finish, i64c, load, load_masked, multi_index, store, strides, Args};
use super::plan::{BufId, Step};
use super::sort::{sort_cmp, Key};
use super::{Ctx, Value};
use crate::kir::{Expr, KernelBuilder, LaunchDims, SharedId};
use jaxon_ir::{DType, IrError};

/// The longest line sorted in shared memory.
pub(crate) const MAX_LEN: usize = 2048;
/// The shared memory one sort kernel may use.
const SHARED_BYTES: usize = 48 * 1024;
/// Threads per block.
const THREADS: u32 = 256;

/// The dtype a key is held in shared memory (`bool` as `u32`).
fn shared_dtype(d: DType) -> DType {
    match compute(d) {
        DType::Bool => DType::U32,
        c => c,
    }
}

/// One sort to lower: operands with dtypes, results, keys, geometry.
pub(crate) struct SortJob<'a> {
    pub ops: &'a [(Value, DType)],
    pub outs: &'a [BufId],
    pub num_keys: usize,
    pub shape: &'a [usize],
    pub axis: usize,
}

/// Lowers `job` as a bitonic sort if its lines fit (`Ok(false)` if not).
pub(crate) fn try_sort(
    ctx: &mut Ctx,
    steps: &mut Vec<Step>,
    job: &SortJob<'_>,
) -> Result<bool, IrError> {
    let len = job.shape[job.axis];
    let p = len.next_power_of_two();
    let keys = &job.ops[..job.num_keys];
    let per_elem: usize = keys
        .iter()
        .map(|(_, d)| shared_dtype(*d).size_bytes())
        .sum::<usize>()
        + 4;
    if !(2..=MAX_LEN).contains(&len) || p * per_elem > SHARED_BYTES {
        return Ok(false);
    }
    let mut lines = job.shape.to_vec();
    lines.remove(job.axis);
    let n_lines: usize = lines.iter().product();
    if n_lines == 0 {
        return Ok(true);
    }
    let st = strides(job.shape);
    let ast = st[job.axis];
    let line_strides: Vec<i64> = (0..job.shape.len())
        .filter(|&q| q != job.axis)
        .map(|q| st[q])
        .collect();
    let name = ctx.name("sort_bitonic");
    let mut k = KernelBuilder::new(&name, THREADS);
    let mut args = Args::new();
    let sk: Vec<(SharedId, DType, DType)> = keys
        .iter()
        .enumerate()
        .map(|(m, (_, d))| {
            let sd = shared_dtype(*d);
            (k.shared(&format!("key{m}"), sd, p as u32), sd, *d)
        })
        .collect();
    let sidx = k.shared("pos", DType::I32, p as u32);
    let line = k.var("line", DType::I64);
    let start = Expr::block_x().cast(DType::I64);
    let step = Expr::grid_dim_x().cast(DType::I64);
    let c: &Ctx = ctx;
    let mut res = Ok(());
    k.for_(line, start, i64c(n_lines as i64), step, |k| {
        res = sort_line(
            k,
            &mut args,
            c,
            job,
            &sk,
            sidx,
            Expr::var(line),
            &lines,
            &line_strides,
            ast,
            len,
            p,
        );
    });
    res?;
    let kernel = finish(k)?;
    let id = ctx.kernel(kernel);
    steps.push(Step::Launch {
        kernel: id,
        dims: LaunchDims::linear((n_lines as u64).min(1024) as u32, THREADS),
        args: args.args,
    });
    Ok(true)
}

/// A loop over `0..n` strided by the block's threads.
fn thread_loop(
    k: &mut KernelBuilder,
    name: &str,
    n: i64,
    body: impl FnOnce(&mut KernelBuilder, Expr) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let i = k.var(name, DType::I64);
    let mut res = Ok(());
    k.for_(
        i,
        Expr::thread_x().cast(DType::I64),
        i64c(n),
        Expr::block_dim_x().cast(DType::I64),
        |k| res = body(k, Expr::var(i)),
    );
    res
}

/// Reads the keys and position of shared entry `i`.
fn entry(
    k: &mut KernelBuilder,
    sk: &[(SharedId, DType, DType)],
    sidx: SharedId,
    i: Expr,
) -> (Vec<Key>, crate::kir::Var) {
    let keys = sk
        .iter()
        .map(|(s, sd, d)| {
            let v = k.var("sk", *sd);
            k.load(&[v], (*s).into(), i.clone(), None);
            let kd = if *sd == DType::U32 && d.is_bool() {
                DType::U32
            } else {
                *d
            };
            Key {
                d: kd,
                v: Expr::var(v),
            }
        })
        .collect();
    let pos = k.var("spos", DType::I32);
    k.load(&[pos], sidx.into(), i, None);
    (keys, pos)
}

/// Whether entry `a` sorts before entry `b`: padding (position `>= len`)
/// after everything, else keys lexicographically, then position.
fn before(a: &[Key], pa: Expr, b: &[Key], pb: Expr, len: i64) -> Expr {
    let n = Expr::i32(len as i32);
    let pad = pa.clone().ge(n.clone()).or(pb.clone().ge(n));
    let mut r = pa.clone().lt(pb.clone());
    for (x, y) in a.iter().zip(b).rev() {
        let (lt, eq) = sort_cmp(x, y);
        r = lt.or(eq.and(r));
    }
    Expr::select(pad, pa.lt(pb), r)
}

#[allow(clippy::too_many_arguments)]
fn sort_line(
    k: &mut KernelBuilder,
    args: &mut Args,
    ctx: &Ctx,
    job: &SortJob<'_>,
    sk: &[(SharedId, DType, DType)],
    sidx: SharedId,
    line: Expr,
    lines: &[usize],
    line_strides: &[i64],
    ast: i64,
    len: usize,
    p: usize,
) -> Result<(), IrError> {
    let idx = multi_index(k, line, lines);
    let base = k.let_(
        "base",
        DType::I64,
        super::kernel::affine(0, line_strides, &idx),
    );
    let lenc = len as i64;
    // Fill: keys (padding reads nothing) and positions.
    thread_loop(k, "fi", p as i64, |k, i| {
        let inb = k.let_("inb", DType::Bool, i.clone().lt(i64c(lenc)));
        let e = Expr::var(base) + i.clone() * i64c(ast);
        for ((v, _), (s, sd, _)) in job.ops.iter().zip(sk) {
            let x = load_masked(k, args, ctx, *v, e.clone(), Expr::var(inb))?;
            let x = if *sd == DType::U32 { x.cast(*sd) } else { x };
            k.store((*s).into(), i.clone(), vec![x], None);
        }
        k.store(sidx.into(), i.clone(), vec![i.cast(DType::I32)], None);
        Ok(())
    })?;
    k.barrier();
    let mut size = 2;
    while size <= p {
        let mut j = size / 2;
        while j >= 1 {
            let (jj, kk) = (j as i64, size as i64);
            thread_loop(k, "q", (p / 2) as i64, |k, q| {
                let i = k.let_(
                    "i",
                    DType::I64,
                    (q.clone() / i64c(jj)) * i64c(2 * jj) + q % i64c(jj),
                );
                let pj = k.let_("pj", DType::I64, Expr::var(i) + i64c(jj));
                let (ka, pa) = entry(k, sk, sidx, Expr::var(i));
                let (kb, pb) = entry(k, sk, sidx, Expr::var(pj));
                let up = (Expr::var(i) & i64c(kk)).eq(i64c(0));
                let b_first = before(&kb, Expr::var(pb), &ka, Expr::var(pa), lenc);
                let a_first = before(&ka, Expr::var(pa), &kb, Expr::var(pb), lenc);
                let swap = k.let_("swap", DType::Bool, Expr::select(up, b_first, a_first));
                k.if_(Expr::var(swap), |k| {
                    for (m, (s, _, _)) in sk.iter().enumerate() {
                        k.store((*s).into(), Expr::var(i), vec![kb[m].v.clone()], None);
                        k.store((*s).into(), Expr::var(pj), vec![ka[m].v.clone()], None);
                    }
                    k.store(sidx.into(), Expr::var(i), vec![Expr::var(pb)], None);
                    k.store(sidx.into(), Expr::var(pj), vec![Expr::var(pa)], None);
                });
                Ok(())
            })?;
            k.barrier();
            j /= 2;
        }
        size *= 2;
    }
    // Gather every operand through the sorted positions.
    thread_loop(k, "r", lenc, |k, r| {
        let src = k.var("src", DType::I32);
        k.load(&[src], sidx.into(), r.clone(), None);
        let from = Expr::var(base) + Expr::var(src).cast(DType::I64) * i64c(ast);
        let to = k.let_("to", DType::I64, Expr::var(base) + r * i64c(ast));
        for ((v, _), out) in job.ops.iter().zip(job.outs) {
            let x = load(k, args, ctx, *v, from.clone())?;
            store(k, args, ctx, *out, Expr::var(to), x)?;
        }
        Ok(())
    })?;
    // The next line reuses the shared arrays.
    k.barrier();
    Ok(())
}
