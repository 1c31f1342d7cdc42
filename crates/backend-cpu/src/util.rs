//! Helpers shared by every stage of the backend, importing none of them:
//! code generation options, the error of an equation that cannot compile
//! (`cannot`), literals as arrays, output variables, `JAXON_DUMP`.

use crate::error::CpuError;
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{Atom, Binder, Eqn, HostArray, IrError, Jaxpr};

/// Code generation options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Options {
    /// Contract `a*b + c` into fused multiply-adds (not bit-identical to
    /// the interpreter; more accurate).
    pub contract_fma: bool,
    /// Keep f32 transcendental functions inline at 128 bits even where the
    /// CPU runs their 256-bit tile routines (the results are the same).
    pub narrow_math: bool,
    /// Compute the approximated float functions by the interpreter's
    /// scalar libm calls: bit-identical to it, slow.
    pub exact_math: bool,
    /// The backend's CPU devices (a `shard_map` mesh may span at most
    /// this many); 0: the host device count at the time of asking
    /// (`jaxon_ir::devices`: `set_host_device_count`, else
    /// `JAXON_CPU_DEVICES`, else 1).
    pub devices: usize,
}

impl Options {
    /// The device count these options stand for (at least 1).
    pub(crate) fn device_count(&self) -> usize {
        match self.devices {
            0 => jaxon_ir::devices::host_device_count().unwrap_or(1),
            n => n,
        }
    }
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

pub(crate) fn dump_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("JAXON_DUMP")
        .filter(|d| !d.is_empty())
        .map(Into::into)
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
