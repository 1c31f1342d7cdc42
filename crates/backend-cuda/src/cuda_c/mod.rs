//! The CUDA C printer: KIR kernels as one header-free CUDA C translation
//! unit for NVRTC.
//!
//! A module is the prelude (typedefs, vector structs and `kir_*` helpers,
//! see `prelude`) followed by one `extern "C" __global__` function per
//! kernel, with `__launch_bounds__(max_threads)`. Parameters print as
//! `p<N>_<name>`, shared arrays as `s<N>_<name>`, variables as
//! `v<N>_<hint>` (`N` the KIR index, so every name is unique and none
//! collides with the prelude or a C keyword); variables are zero-initialised.
//!
//! Invariants: the printer never panics, even on an unverified kernel (an
//! out-of-range reference prints as `kir_invalid_*`, which NVRTC rejects);
//! on a verified kernel the output's semantics are those of the `kir`
//! module docs, which the simulator implements too. Compile it with
//! `--fmad=false` (as [`crate::nvrtc`] does) so `a * b + c` rounds twice,
//! as KIR says.

mod expr;
mod prelude;
mod stmt;

use crate::error::Result;
use crate::kir::{verify, Kernel, ParamId, ParamKind, Space, Var};
use jaxon_ir::DType;
use std::fmt::Write;

pub use expr::cast as print_cast;
pub use expr::constant as print_constant;

/// Prints kernels as one CUDA C module (the prelude once, then each
/// kernel). The kernels should be verified; see [`try_print_module`].
pub fn print_module(kernels: &[&Kernel]) -> String {
    let mut out = prelude::prelude();
    for k in kernels {
        out.push('\n');
        out.push_str(&print_kernel_body(k));
    }
    out
}

/// Prints one kernel as a whole module.
pub fn print_kernel(kernel: &Kernel) -> String {
    print_module(&[kernel])
}

/// Verifies every kernel, then prints them as one module.
pub fn try_print_module(kernels: &[&Kernel]) -> Result<String> {
    for k in kernels {
        verify::verify(k)?;
    }
    Ok(print_module(kernels))
}

/// Replaces every character that is not `[A-Za-z0-9_]` by `_`.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Prints kernels: holds the kernel and the output.
pub(crate) struct Printer<'k> {
    k: &'k Kernel,
    out: String,
    depth: usize,
}

impl<'k> Printer<'k> {
    /// A variable's C name.
    pub(crate) fn var(&self, v: Var) -> String {
        match self.k.vars.get(v.0 as usize) {
            Some(d) => format!("v{}_{}", v.0, sanitize(&d.name)),
            None => format!("kir_invalid_var_{}", v.0),
        }
    }

    /// A variable's dtype (`u32` for an invalid one; the name fails to compile).
    pub(crate) fn var_dtype(&self, v: Var) -> DType {
        self.k
            .vars
            .get(v.0 as usize)
            .map_or(DType::U32, |d| d.dtype)
    }

    fn param_name(&self, p: ParamId) -> String {
        match self.k.params.get(p.0 as usize) {
            Some(d) => format!("p{}_{}", p.0, sanitize(&d.name)),
            None => format!("kir_invalid_param_{}", p.0),
        }
    }

    /// A scalar parameter's C name and dtype.
    pub(crate) fn scalar_param(&self, p: ParamId) -> (String, DType) {
        match self.k.params.get(p.0 as usize).map(|d| d.kind) {
            Some(ParamKind::Scalar(d)) => (self.param_name(p), d),
            Some(ParamKind::Global { .. }) | None => {
                (format!("kir_invalid_scalar_{}", p.0), DType::U32)
            }
        }
    }

    /// The C array a space names (a pointer parameter or a shared array).
    pub(crate) fn space(&self, s: Space) -> String {
        match s {
            Space::Global(p) => match self.k.params.get(p.0 as usize).map(|d| d.kind) {
                Some(ParamKind::Global { .. }) => self.param_name(p),
                Some(ParamKind::Scalar(_)) | None => format!("kir_invalid_buffer_{}", p.0),
            },
            Space::Shared(id) => match self.k.shared.get(id.0 as usize) {
                Some(a) => format!("s{}_{}", id.0, sanitize(&a.name)),
                None => format!("kir_invalid_shared_{}", id.0),
            },
        }
    }

    /// A space's element dtype (`u32` for an invalid one).
    pub(crate) fn space_dtype(&self, s: Space) -> DType {
        self.k.space_dtype(s).unwrap_or(DType::U32)
    }

    /// Appends one line at the current depth.
    pub(crate) fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }
}

/// One kernel's function definition.
fn print_kernel_body(k: &Kernel) -> String {
    let mut p = Printer {
        k,
        out: String::new(),
        depth: 0,
    };
    let params: Vec<String> = k
        .params
        .iter()
        .enumerate()
        .map(|(i, param)| {
            let name = p.param_name(ParamId(i as u32));
            match param.kind {
                ParamKind::Global { dtype, writable } => {
                    let c = if writable { "" } else { "const " };
                    format!("{c}{}* {name}", prelude::c_type(dtype))
                }
                ParamKind::Scalar(d) => format!("{} {name}", prelude::c_type(d)),
            }
        })
        .collect();
    let _ = writeln!(
        p.out,
        "extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{",
        k.max_threads,
        k.name,
        params.join(", ")
    );
    p.depth = 1;
    for (i, a) in k.shared.iter().enumerate() {
        let name = p.space(Space::Shared(crate::kir::SharedId(i as u32)));
        let line = format!(
            "__shared__ __align__(16) {} {name}[{}];",
            prelude::c_type(a.dtype),
            a.len
        );
        p.line(&line);
    }
    for (i, d) in k.vars.iter().enumerate() {
        let line = format!("{} {} = 0;", prelude::c_type(d.dtype), p.var(Var(i as u32)));
        p.line(&line);
    }
    p.body(&k.body);
    p.out.push_str("}\n");
    p.out
}

#[cfg(test)]
mod tests;
