//! Row runs on the CPU: a driver kernel that runs several compiled kernels
//! (one `ir::passes::row_runs` run) a block of rows at a time, so that the
//! values they pass each other stay in cache. A softmax then reads its
//! input once instead of four times, and writes its `exp` once.
//!
//! The driver has a kernel's signature `(tables, lo, hi)`: `tables` holds
//! one argument-pointer table per member kernel, and `lo..hi` is a range of
//! rows, the members' common outermost loop. It is splittable when every
//! member is (threads take disjoint row ranges and each member writes only
//! the rows it is given; the run's invariants make row `r` depend only on
//! rows `r` of the run's own values).

use crate::codegen::jit::Shape;
use crate::error::run_error;
use crate::plan::groups::{GPrep, RowRole, Tables};
use crate::run::sched::PARALLEL_MIN_WORK;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    AbiParam, Function, InstBuilder, MemFlagsData, Signature, UserFuncName,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Module};
use jaxon_ir::passes::{row_runs, value_bytes, FusionPlan};
use jaxon_ir::{IrError, Jaxpr};

/// Bytes of the rows a block of a run touches: about half of a core's L2,
/// so a block's values survive until the last member reads them.
const BLOCK_BYTES: usize = 192 * 1024;

/// Rows per block for a run whose members touch `row_bytes` bytes per row
/// in all (inputs and outputs).
pub(crate) fn block_rows(row_bytes: usize) -> usize {
    (BLOCK_BYTES / row_bytes.max(1)).max(1)
}

/// The driver of a run of `members` (compiled kernels of the same module),
/// `block` rows at a time.
pub(crate) fn driver(
    module: &mut cranelift_jit::JITModule,
    members: &[FuncId],
    block: usize,
) -> Function {
    let cfg = module.target_config();
    let mut sig = Signature::new(cfg.default_call_conv);
    for _ in 0..3 {
        sig.params.push(AbiParam::new(I64));
    }
    let mut func = Function::with_name_signature(UserFuncName::user(2, 0), sig);
    let refs: Vec<_> = members
        .iter()
        .map(|&id| module.declare_func_in_func(id, &mut func))
        .collect();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (tables, lo, hi) = (params[0], params[1], params[2]);
    let flags = MemFlagsData::trusted();
    let table: Vec<_> = (0..members.len())
        .map(|k| b.ins().load(I64, flags, tables, (8 * k) as i32))
        .collect();
    // for (r = lo; r < hi; r = e) { e = min(r + block, hi); members(r, e) }
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.append_block_param(header, I64);
    b.ins().jump(header, &[lo.into()]);
    b.switch_to_block(header);
    let r = b.block_params(header)[0];
    let more = b.ins().icmp(IntCC::SignedLessThan, r, hi);
    b.ins().brif(more, body, &[], exit, &[]);
    b.switch_to_block(body);
    let next = b.ins().iadd_imm_s(r, block as i64);
    let e = b.ins().smin(next, hi);
    for (f, t) in refs.iter().zip(&table) {
        b.ins().call(*f, &[*t, r, e]);
    }
    b.ins().jump(header, &[e.into()]);
    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(cfg);
    func
}

/// Spaces smaller than this stay in cache anyway: no run pays for it.
const MIN_MEMBER_ELEMENTS: usize = 1 << 16;

/// Turns the row runs of `plan` whose members compiled to row-splittable
/// kernels into driver kernels; marks the members and returns the group
/// spans the memory plan must keep live together.
pub(crate) fn plan_row_runs(
    t: &mut Tables,
    jaxpr: &Jaxpr,
    plan: &FusionPlan,
    groups: &mut [GPrep],
) -> Result<Vec<(usize, usize)>, IrError> {
    let mut spans = Vec::new();
    for (first, last) in row_runs(jaxpr, plan) {
        let mut sub: Vec<usize> = Vec::new();
        for g in first..=last + 1 {
            let fits = g <= last && {
                let rows = plan.groups[g].space[0];
                let numel: usize = plan.groups[g].space.iter().product();
                matches!(&groups[g], GPrep::Kernel(k) if k.func.is_some()
                    && k.run
                    && k.row_run.is_none()
                    && k.extent == rows
                    && numel >= MIN_MEMBER_ELEMENTS)
            };
            if fits {
                sub.push(g);
                continue;
            }
            if sub.len() >= 2 {
                make_run(t, jaxpr, plan, groups, &sub)?;
                spans.push((sub[0], sub[sub.len() - 1]));
            }
            sub.clear();
        }
    }
    Ok(spans)
}

/// Compiles the driver of the run `members` and marks them.
fn make_run(
    t: &mut Tables,
    jaxpr: &Jaxpr,
    plan: &FusionPlan,
    groups: &mut [GPrep],
    members: &[usize],
) -> Result<(), IrError> {
    let rows = plan.groups[members[0]].space[0];
    let mut ids = Vec::new();
    let mut splittable = true;
    let mut row_bytes = 0usize;
    for &g in members {
        let GPrep::Kernel(k) = &groups[g] else {
            return Err(run_error("row run of a non-kernel"));
        };
        let id = k
            .func
            .and_then(|f| t.cb.func_id(f))
            .ok_or_else(|| run_error("row run member without code"))?;
        ids.push(id);
        splittable &= k.splittable;
        for v in k.inputs.iter().chain(std::iter::once(&k.out)) {
            let bytes = jaxpr.try_aval(*v).and_then(value_bytes).unwrap_or(0);
            row_bytes += bytes / rows;
        }
    }
    let func = driver(t.cb.module(), &ids, block_rows(row_bytes));
    t.n_funcs += 1;
    let idx = t.cb.define(
        &format!("rows{}", t.n_funcs),
        func,
        Some(Shape {
            extent: rows,
            splittable,
        }),
    )?;
    let numel: usize = plan.groups[members[0]].space.iter().product();
    let par = (splittable && numel >= PARALLEL_MIN_WORK).then(|| {
        t.par_kernels.push(idx);
        t.par_kernels.len() - 1
    });
    for (i, &g) in members.iter().enumerate() {
        if let GPrep::Kernel(k) = &mut groups[g] {
            k.row_run = Some(if i == 0 {
                RowRole::Head {
                    members: members.to_vec(),
                    func: idx,
                    par,
                    rows,
                }
            } else {
                RowRole::Member
            });
        }
    }
    Ok(())
}

/// Values a row run passes from one member to a later elementwise one
/// that writes a result of the same type: each is written straight into
/// that result's buffer instead of an arena buffer of its own (a softmax's
/// `exp` into its output, which the division then overwrites in place).
/// The arena buffer would be touched a block at a time like the result,
/// but it is another full-size array whose dirty lines go back to memory:
/// a quarter of a softmax's traffic. Returns the values no longer placed,
/// each paired with the result whose buffer it uses.
///
/// A value `v` of member `p` moves into the result `o` of member `c` when
/// every group reading `v` is a member after `p` and no later than `c`,
/// `c` is a loop whose space is `v`'s shape and which reads `v` only at
/// the index it writes (so each element is read before it is overwritten,
/// and by nothing after), `v` and `o` have one type, neither kernel writes
/// with a row stride, and no other value moves into `o`.
pub(crate) fn share_run_buffers(
    jaxpr: &Jaxpr,
    plan: &FusionPlan,
    groups: &mut [GPrep],
) -> Vec<(jaxon_ir::Var, jaxon_ir::Var)> {
    let runs: Vec<Vec<usize>> = groups
        .iter()
        .filter_map(|g| match g {
            GPrep::Kernel(k) => match &k.row_run {
                Some(RowRole::Head { members, .. }) => Some(members.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let mut moved = Vec::new();
    for members in runs {
        for (i, &p) in members.iter().enumerate() {
            let Some(v) = kernel(groups, p).map(|k| k.out) else {
                continue;
            };
            // Readers in the plan and in the groups as emitted (peepholes
            // may have moved a read).
            let readers: Vec<usize> = (0..plan.groups.len())
                .filter(|&g| plan.groups[g].inputs.contains(&v) || groups[g].reads(v))
                .collect();
            let Some(&c) = readers.last() else { continue };
            let inside = readers.iter().all(|r| members[i + 1..].contains(r));
            let taken = |o| moved.iter().any(|&(_, t)| t == o);
            let fits = inside
                && !jaxpr.outvars.contains(&jaxon_ir::Atom::Var(v))
                && kernel(groups, p).is_some_and(|k| k.strided_out.is_none())
                && kernel(groups, c).is_some_and(|k| {
                    k.strided_out.is_none() && !taken(k.out) && same_type(jaxpr, v, k.out)
                })
                && reads_in_place(jaxpr, &plan.groups[c], v);
            if let (true, Some(o)) = (fits, kernel(groups, c).map(|k| k.out)) {
                moved.push((v, o));
            }
        }
    }
    // A result may itself move on into a later one: follow the chain.
    let target = |mut v: jaxon_ir::Var| {
        while let Some(&(_, o)) = moved.iter().find(|(w, _)| *w == v) {
            v = o;
        }
        v
    };
    let renames: Vec<_> = moved.iter().map(|&(v, _)| (v, target(v))).collect();
    for g in groups.iter_mut() {
        if let GPrep::Kernel(k) = g {
            for x in k.inputs.iter_mut().chain(std::iter::once(&mut k.out)) {
                if let Some(&(_, o)) = renames.iter().find(|(v, _)| v == x) {
                    *x = o;
                }
            }
        }
    }
    renames
}

/// The compiled (not inlined) kernel of group `g`, if it is one.
fn kernel(groups: &[GPrep], g: usize) -> Option<&crate::plan::groups::KPrep> {
    match groups.get(g) {
        Some(GPrep::Kernel(k)) if k.func.is_some() => Some(k),
        _ => None,
    }
}

/// Whether `a` and `b` have the same static array type.
fn same_type(jaxpr: &Jaxpr, a: jaxon_ir::Var, b: jaxon_ir::Var) -> bool {
    let ty = |v| {
        let t = jaxpr.try_aval(v)?.as_array()?;
        Some((t.dtype, t.static_sizes()?))
    };
    ty(a).is_some_and(|t| Some(t) == ty(b))
}

/// Whether loop group `g` reads `v` only at the index it writes: `v`'s
/// shape is the space and every read of it maps the space identically.
fn reads_in_place(jaxpr: &Jaxpr, g: &jaxon_ir::passes::Group, v: jaxon_ir::Var) -> bool {
    use jaxon_ir::passes::{operand_map, GroupKind, IndexMap};
    let shape = jaxpr
        .try_aval(v)
        .and_then(|a| a.as_array())
        .and_then(|t| t.static_sizes());
    if g.kind != GroupKind::Loop || shape.as_deref() != Some(g.space.as_slice()) {
        return false;
    }
    let identity = IndexMap::identity(g.space.len());
    let (want, base) = (identity.strides(&g.space), identity.base(&g.space));
    g.eqns.iter().all(|&e| {
        let eqn = &jaxpr.eqns[e];
        eqn.inputs.iter().enumerate().all(|(slot, a)| {
            *a != jaxon_ir::Atom::Var(v)
                || g.map_of(e)
                    .and_then(|m| operand_map(jaxpr, eqn, m, slot))
                    .is_some_and(|m| m.strides(&g.space) == want && m.base(&g.space) == base)
        })
    })
}
