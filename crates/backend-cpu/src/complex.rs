//! The slow path for complex programs: the Cranelift kernels are real-only,
//! so a jaxpr that touches `c64`/`c128` or typed PRNG keys (`key<fry>`)
//! anywhere (or applies `complex`,
//! `real`, `imag`, `conj`, `fft`) runs equation by equation on the host,
//! `fft` through `rustfft` and every other first-order equation through
//! the reference interpreter's kernels (`jaxon_ir::interp::ops::eval_op`).
//! A program with control flow, state or calls left after inlining `jit`
//! runs on the interpreter as a whole. Results equal the interpreter's up
//! to the FFT's rounding.

use jaxon_ir::interp::ops::eval_op;
use jaxon_ir::interp::support::literal_array;
use jaxon_ir::interp::HostBuffer;
use jaxon_ir::num_complex::Complex64;
use jaxon_ir::primitive::{Elementwise, FftParams, FftType, Linalg};
use jaxon_ir::{
    Atom, Aval, Binder, Buffer, ClosedJaxpr, Executable, HostArray, IrError, Jaxpr, Primitive,
    Storage,
};
use rustfft::FftPlanner;
use std::sync::Arc;

/// Whether `jaxpr` (nested jaxprs included) has a complex or key value or
/// applies a complex-number primitive: such programs take this slow path.
pub(crate) fn uses_complex(jaxpr: &Jaxpr) -> bool {
    let complex_aval = |a: &Aval| {
        let d = a.array().dtype;
        d.is_complex() || d.is_key()
    };
    jaxpr.vars.iter().any(complex_aval)
        || jaxpr.eqns.iter().any(|e| {
            matches!(
                e.primitive,
                Primitive::Elementwise(
                    Elementwise::Complex
                        | Elementwise::Real
                        | Elementwise::Imag
                        | Elementwise::Conj(_)
                ) | Primitive::Linalg(Linalg::Fft(_))
            ) || e
                .inputs
                .iter()
                .any(|a| matches!(a, Atom::Lit(l) if l.dtype.is_complex()))
                || e.outputs
                    .iter()
                    .any(|b| matches!(b, Binder::Drop(a) if complex_aval(a)))
                || e.primitive
                    .sub_jaxprs()
                    .into_iter()
                    .any(|j| uses_complex(j))
        })
}

/// A complex program, compiled for the slow path.
pub(crate) struct ComplexExecutable {
    closed: ClosedJaxpr,
    /// Whether every equation is first-order (else the interpreter runs it).
    flat: bool,
}

impl ComplexExecutable {
    /// Inlines `jit` calls and checks what remains.
    pub(crate) fn new(closed: &ClosedJaxpr) -> Result<ComplexExecutable, IrError> {
        let closed = jaxon_ir::passes::inline_jit(closed)?;
        let flat = closed.jaxpr.eqns.iter().all(|e| {
            matches!(
                e.primitive,
                Primitive::Elementwise(_)
                    | Primitive::Structural(_)
                    | Primitive::Indexing(_)
                    | Primitive::Reduction(_)
                    | Primitive::Linalg(_)
            )
        });
        Ok(ComplexExecutable { closed, flat })
    }

    fn run(&self, args: Vec<HostArray>) -> Result<Vec<HostArray>, IrError> {
        if !self.flat {
            return jaxon_ir::eval_closed_jaxpr(&self.closed, &args);
        }
        let j = &self.closed.jaxpr;
        let mut env: Vec<Option<HostArray>> = vec![None; j.vars.len()];
        let bind =
            |env: &mut Vec<Option<HostArray>>, vars: &[jaxon_ir::Var], vals: Vec<HostArray>| {
                for (v, a) in vars.iter().zip(vals) {
                    if let Some(slot) = env.get_mut(v.index()) {
                        *slot = Some(a);
                    }
                }
            };
        if args.len() != j.invars.len() {
            return Err(IrError::Eval(format!(
                "expected {} arguments, got {}",
                j.invars.len(),
                args.len()
            )));
        }
        bind(&mut env, &j.constvars, self.closed.consts.to_vec());
        bind(&mut env, &j.invars, args);
        let read = |env: &[Option<HostArray>], a: &Atom| -> Result<HostArray, IrError> {
            match a {
                Atom::Lit(l) => Ok(literal_array(l)),
                Atom::Var(v) => env
                    .get(v.index())
                    .and_then(Clone::clone)
                    .ok_or_else(|| IrError::Eval(format!("unbound variable {v:?}"))),
            }
        };
        for eqn in &j.eqns {
            let ins = eqn
                .inputs
                .iter()
                .map(|a| read(&env, a))
                .collect::<Result<Vec<_>, _>>()?;
            let outs = match &eqn.primitive {
                Primitive::Linalg(Linalg::Fft(p)) => {
                    let x = ins
                        .first()
                        .ok_or_else(|| IrError::ty("fft", "expected one operand"))?;
                    vec![fft(x, p)?]
                }
                p => eval_op(p, &ins)?,
            };
            for (b, a) in eqn.outputs.iter().zip(outs) {
                if let Binder::Var(v) = b {
                    if let Some(slot) = env.get_mut(v.index()) {
                        *slot = Some(a);
                    }
                }
            }
        }
        j.outvars.iter().map(|a| read(&env, a)).collect()
    }
}

impl Executable for ComplexExecutable {
    fn execute(&self, args: &[Arc<dyn Buffer>]) -> Result<Vec<Arc<dyn Buffer>>, IrError> {
        let args = args
            .iter()
            .map(|b| b.to_host())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .run(args)?
            .into_iter()
            .map(|array| Arc::new(HostBuffer { array }) as Arc<dyn Buffer>)
            .collect())
    }
}

/// Transforms every line along `axis` of a row-major buffer of `shape` in
/// place with `rustfft` (`inverse` unnormalised).
fn fft_axis(data: &mut [Complex64], shape: &[usize], axis: usize, inverse: bool) {
    let n = shape[axis];
    if n <= 1 {
        return;
    }
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut planner = FftPlanner::<f64>::new();
    let plan = if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    };
    let mut line = vec![Complex64::new(0.0, 0.0); n];
    for o in 0..outer {
        for i in 0..inner {
            for (k, z) in line.iter_mut().enumerate() {
                *z = data[(o * n + k) * inner + i];
            }
            plan.process(&mut line);
            for (k, z) in line.iter().enumerate() {
                data[(o * n + k) * inner + i] = *z;
            }
        }
    }
}

/// `fft[fft_type fft_lengths]` with `rustfft`, with the interpreter's
/// semantics (`jaxon_ir::interp::ops::fft`): IFFT and IRFFT normalised by
/// `1/n`, RFFT keeping `n/2 + 1` frequencies, IRFFT reading the half
/// spectrum as Hermitian.
pub(crate) fn fft(x: &HostArray, p: &FftParams) -> Result<HostArray, IrError> {
    let lengths = &p.fft_lengths;
    let (nd, rank) = (lengths.len(), x.ndim());
    if nd == 0 || nd > rank {
        return Err(IrError::ty(
            "fft",
            format!("{nd} fft_lengths for rank {rank}"),
        ));
    }
    let first = rank - nd;
    let last = rank - 1;
    let in_dt = x.dtype();
    let out_dt = match p.fft_type {
        FftType::Fft | FftType::Ifft if in_dt.is_complex() => in_dt,
        FftType::Rfft if in_dt.is_float() => in_dt
            .complex_dtype()
            .ok_or_else(|| IrError::ty("fft", format!("RFFT of {in_dt}")))?,
        FftType::Irfft if in_dt.is_complex() => in_dt.real_dtype(),
        t => return Err(IrError::ty("fft", format!("{t:?} of {in_dt}"))),
    };
    let mut shape = x.shape().to_vec();
    for (k, &n) in lengths.iter().enumerate() {
        let want = if p.fft_type == FftType::Irfft && k + 1 == nd {
            n / 2 + 1
        } else {
            n
        };
        if shape[first + k] != want {
            return Err(IrError::ty(
                "fft",
                "operand shape does not match fft_lengths",
            ));
        }
    }
    let inverse = matches!(p.fft_type, FftType::Ifft | FftType::Irfft);
    let mut data = x.to_c128_vec();
    if p.fft_type == FftType::Irfft {
        // The inner axes complex-to-complex, then the last one from its
        // Hermitian-completed half spectrum (XLA ignores the imaginary parts
        // of the zero and Nyquist bins).
        for axis in first..last {
            fft_axis(&mut data, &shape, axis, true);
        }
        let n = lengths[nd - 1];
        let half = shape[last];
        let outer = data.len() / half.max(1);
        let mut full = vec![Complex64::new(0.0, 0.0); outer * n];
        for o in 0..outer {
            let l = &data[o * half..(o + 1) * half];
            for k in 0..n {
                full[o * n + k] = if k < half { l[k] } else { l[n - k].conj() };
            }
            if n > 0 {
                full[o * n].im = 0.0;
                if n.is_multiple_of(2) {
                    full[o * n + n / 2].im = 0.0;
                }
            }
        }
        data = full;
        shape[last] = n;
        fft_axis(&mut data, &shape, last, true);
    } else {
        for axis in first..rank {
            fft_axis(&mut data, &shape, axis, inverse);
        }
    }
    if inverse {
        let scale = 1.0 / lengths.iter().product::<usize>() as f64;
        data.iter_mut().for_each(|z| *z *= scale);
    }
    if p.fft_type == FftType::Rfft {
        let n = shape[last];
        let keep = n / 2 + 1;
        let outer = data.len() / n.max(1);
        data = (0..outer)
            .flat_map(|o| data[o * n..o * n + keep].to_vec())
            .collect();
        shape[last] = keep;
    }
    HostArray::new(shape, Storage::from_c128(out_dt, &data))
}
