//! The compile pipeline: simplify (ir passes) → fusion and memory plans
//! (`prep`) → one Cranelift function per fused group plus one program
//! function running the whole jaxpr (`program`) → machine code. With
//! `JAXON_DUMP=dir` it writes the jaxpr, the plans (fusion and memory, of
//! every nested jaxpr too) and each function's CLIF to `dir`.

use crate::codegen::jit::{TRAMP_DOT, TRAMP_FOR_STEP, TRAMP_PAR_KERNEL, TRAMP_STEP};
use crate::codegen::program::{Emitter, TopIo};
use crate::error::run_error;
use crate::plan::groups::Tables;
use crate::plan::prep::prep;
use crate::run::exec::{Program, ResultSrc};
use crate::util::{dump_dir, literal_array, write_dump, Options};
use jaxon_ir::{Atom, ClosedJaxpr, IrError, Jaxpr, Var};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Mutex;

/// Compiles a simplified closed jaxpr into a program. `key` is its printed
/// text (used to name dump files).
pub(crate) fn compile_program(
    closed: &ClosedJaxpr,
    key: &str,
    opts: Options,
) -> Result<Program, IrError> {
    compile_program_strided(closed, key, opts, &[]).map(|(p, _)| p)
}

/// [`compile_program`], asking for some results (by outvar position:
/// `Some(row stride)` in elements, for 2-D results) to be written inside a
/// wider array: their output pointer is then the first element of a
/// block of that array (a `pallas_call` output block). Returns, per
/// result, whether it is written so (else it is contiguous).
pub(crate) fn compile_program_strided(
    closed: &ClosedJaxpr,
    key: &str,
    opts: Options,
    strided: &[Option<usize>],
) -> Result<(Program, Vec<bool>), IrError> {
    // `Ref` arguments are discharged: passed as arrays, their final values
    // returned after the outputs.
    let discharged;
    let closed = match crate::plan::discharge::discharge_refs(closed)? {
        Some(d) => {
            discharged = d;
            &discharged
        }
        None => closed,
    };
    let jaxpr: &Jaxpr = &closed.jaxpr;
    let mut in_avals = Vec::new();
    for v in &jaxpr.invars {
        let a = jaxpr
            .try_aval(*v)
            .ok_or_else(|| IrError::Invalid("invar out of range".into()))?;
        let sa = a
            .as_array()
            .ok_or_else(|| run_error("`Ref` arguments are not supported yet"))?;
        if sa.static_sizes().is_none() {
            return Err(run_error("dynamic shapes are not supported yet"));
        }
        in_avals.push(sa.clone());
    }
    let n_in = jaxpr.invars.len();
    let n_consts = jaxpr.constvars.len();
    // Results computed by the program are written straight into output
    // buffers; the others are copied by the caller.
    let mut out_bufs: Vec<(jaxon_ir::DType, Vec<usize>)> = Vec::new();
    let mut results = Vec::new();
    let mut outputs = HashMap::new();
    for (k, a) in jaxpr.outvars.iter().enumerate() {
        let r = match a {
            Atom::Lit(l) => ResultSrc::Literal(literal_array(l)?),
            Atom::Var(v) => {
                if let Some(i) = jaxpr.outvars[..k].iter().position(|w| w == a) {
                    ResultSrc::Again(i)
                } else if let Some(i) = jaxpr.invars.iter().position(|w| w == v) {
                    ResultSrc::Input(i)
                } else if let Some(i) = jaxpr.constvars.iter().position(|w| w == v) {
                    ResultSrc::Const(i)
                } else {
                    let aval = jaxpr
                        .try_aval(*v)
                        .and_then(|a| a.as_array())
                        .ok_or_else(|| run_error("output is not an array"))?;
                    let shape = aval
                        .static_sizes()
                        .ok_or_else(|| run_error("dynamic shapes are not supported yet"))?;
                    outputs.insert(*v, n_in + n_consts + out_bufs.len());
                    out_bufs.push((aval.dtype, shape));
                    ResultSrc::Buffer(out_bufs.len() - 1)
                }
            }
        };
        results.push(r);
    }
    let exclude: HashSet<Var> = outputs.keys().copied().collect();
    let dump = dump_dir();
    let mut t = Tables::new(opts, dump.is_some())?;
    for (k, a) in jaxpr.outvars.iter().enumerate() {
        let once = jaxpr.outvars.iter().filter(|b| *b == a).count() == 1;
        if let (Some(Some(rs)), Atom::Var(v), true) = (strided.get(k), a, once) {
            if outputs.contains_key(v) {
                t.strided_outs.push((*v, *rs));
            }
        }
    }
    let top = prep(&mut t, closed, &exclude, "program")?;
    let done: Vec<bool> = jaxpr
        .outvars
        .iter()
        .map(|a| matches!(a, Atom::Var(v) if t.strided_done.contains(v)))
        .collect();
    let tramps = [
        t.cb.import_trampoline(TRAMP_PAR_KERNEL)?,
        t.cb.import_trampoline(TRAMP_DOT)?,
        t.cb.import_trampoline(TRAMP_STEP)?,
        t.cb.import_trampoline(TRAMP_FOR_STEP)?,
    ];
    let kernel_ids: Vec<_> = (0..).map_while(|i| t.cb.func_id(i)).map(Some).collect();
    let mut em = Emitter::new(t.cb.module(), kernel_ids, tramps);
    let func = em.program(&top, &TopIo { outputs })?;
    let pinned_bytes = std::mem::take(&mut em.pinned);
    if t.dump {
        let _ = writeln!(t.clif, "; program function\n{}", func.display());
    }
    let pidx = t.cb.define("program", func, None)?;
    t.cb.compile_all()?;
    let disasm = t.cb.disasm.take();
    let fin = t.cb.finish(pidx)?;
    let par_kernels = t
        .par_kernels
        .iter()
        .map(|&i| {
            fin.kernels
                .get(i)
                .cloned()
                .flatten()
                .ok_or_else(|| run_error("missing kernel"))
        })
        .collect::<Result<_, _>>()?;
    if let Some(dir) = dump {
        let _ = writeln!(t.clif, "\n; machine code\n{}", disasm.unwrap_or_default());
        write_dump(&dir, key, &t.plans, &t.clif);
    }
    let program = Program {
        entry: fin.program,
        _code: fin.code,
        in_avals,
        n_consts,
        out_bufs,
        results,
        arena_bytes: top.mem.size,
        arenas: Mutex::new(Vec::new()),
        arena_pool: std::sync::OnceLock::new(),
        par_kernels,
        dots: t.dots,
        steps: t.steps,
        _pinned: t.pinned,
        _pinned_bytes: pinned_bytes,
    };
    Ok((program, done))
}
