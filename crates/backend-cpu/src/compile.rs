//! The compile pipeline: simplify (ir passes) → fusion and memory plans
//! (`prep`) → one Cranelift function per fused group plus one program
//! function running the whole jaxpr (`program`) → machine code. With
//! `JAXON_DUMP=dir` it writes the jaxpr, the plans (fusion and memory, of
//! every nested jaxpr too) and each function's CLIF to `dir`.

use crate::error::run_error;
use crate::error::CpuError;
use crate::exec::{Operand, Program, ResultSrc};
use crate::jit::{TRAMP_DOT, TRAMP_PAR_KERNEL, TRAMP_STEP};
use crate::prep::{prep, Tables};
use crate::program::{Emitter, TopIo};
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{Atom, Binder, ClosedJaxpr, Eqn, HostArray, IrError, Jaxpr, Var};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Mutex;

/// Code generation options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Options {
    /// Contract `a*b + c` into fused multiply-adds (not bit-identical to
    /// the interpreter; more accurate).
    pub contract_fma: bool,
    /// Keep f32 transcendental functions inline at 128 bits even where the
    /// CPU runs their 256-bit tile routines (the results are the same).
    pub narrow_math: bool,
}

/// A short description of equation `i` for error messages.
pub(crate) fn describe_eqn(jaxpr: &Jaxpr, i: usize) -> String {
    let Some(eqn) = jaxpr.eqns.get(i) else {
        return format!("eqn {i}");
    };
    let ty = |a: Option<jaxon_ir::Aval>| match a {
        Some(a) => {
            let s = a.array();
            let dims: Vec<String> = s
                .shape
                .iter()
                .map(|d| match d {
                    jaxon_ir::Dim::Const(n) => n.to_string(),
                    jaxon_ir::Dim::Var(v) => format!("v{}", v.0),
                })
                .collect();
            format!("{}[{}]", s.dtype, dims.join(","))
        }
        None => "?".into(),
    };
    let outs: Vec<String> = eqn
        .outputs
        .iter()
        .map(|b| match b {
            Binder::Var(v) => format!("v{}:{}", v.0, ty(jaxpr.try_aval(*v).cloned())),
            Binder::Drop(a) => format!("_:{}", ty(Some(a.clone()))),
        })
        .collect();
    let ins: Vec<String> = eqn
        .inputs
        .iter()
        .map(|a| match a {
            Atom::Var(v) => format!("v{}", v.0),
            Atom::Lit(l) => format!("{l}"),
        })
        .collect();
    format!(
        "eqn {i}: {} = {} {}",
        outs.join(" "),
        eqn.primitive.name(),
        ins.join(" ")
    )
}

/// The cpu backend cannot compile equation `i` of `jaxpr`: an
/// [`IrError::Unsupported`] naming its primitive, the reason and the
/// equation.
pub(crate) fn cannot(jaxpr: &Jaxpr, i: usize, why: impl std::fmt::Display) -> IrError {
    let name = jaxpr.eqns.get(i).map_or("?", |e| e.primitive.name());
    CpuError::unsupported(name, format!("{why} ({})", describe_eqn(jaxpr, i))).into()
}

pub(crate) fn literal_array(l: &jaxon_ir::Literal) -> Result<HostArray, IrError> {
    use jaxon_ir::{Scalar, Storage};
    let data = match (l.value, l.dtype) {
        (Scalar::Int(i), jaxon_ir::DType::I64) => Storage::I64(vec![i]),
        (Scalar::UInt(u), jaxon_ir::DType::U64) => Storage::U64(vec![u]),
        _ => Storage::from_f64(l.dtype, &[l.as_f64()]),
    };
    HostArray::new(Vec::new(), data)
}

pub(crate) fn operand(a: &Atom) -> Result<Operand, IrError> {
    Ok(match a {
        Atom::Var(v) => Operand::Var(*v),
        Atom::Lit(l) => Operand::Const(literal_array(l)?),
    })
}

pub(crate) fn dump_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("JAXON_DUMP")
        .filter(|d| !d.is_empty())
        .map(Into::into)
}

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
    let closed = match crate::discharge::discharge_refs(closed)? {
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

/// The variables bound by an equation's outputs (`None` for `_`).
pub(crate) fn out_vars(eqn: &Eqn) -> Vec<Option<jaxon_ir::Var>> {
    eqn.outputs
        .iter()
        .map(|b| match b {
            Binder::Var(v) => Some(*v),
            Binder::Drop(_) => None,
        })
        .collect()
}

pub(crate) fn write_dump(dir: &std::path::Path, key: &str, plans: &str, clif: &str) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    let stem = format!("{:016x}", h.finish());
    // Dumps are best-effort debugging output: failures are logged, not fatal.
    let res = std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(dir.join(format!("{stem}.jaxpr.txt")), key))
        .and_then(|_| std::fs::write(dir.join(format!("{stem}.plan.txt")), plans))
        .and_then(|_| std::fs::write(dir.join(format!("{stem}.clif")), clif));
    if let Err(e) = res {
        tracing::warn!("JAXON_DUMP: cannot write to {}: {e}", dir.display());
    }
}

/// The printed text of a jaxpr: the cache key (types are part of the text).
pub(crate) fn fingerprint(jaxpr: &Jaxpr) -> String {
    print_jaxpr(jaxpr)
}
