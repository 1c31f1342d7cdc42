//! `fft` in the complex rewrite (`complex.rs`): a dense DFT per
//! transformed axis, as `dot_general` against constant twiddle matrices
//! (real and imaginary parts) computed in `f64` with the angle reduced
//! mod `n` — the interpreter's transform up to rounding — then a
//! `transpose` putting the new axis back in place. Everything is computed
//! in `f64` and rounded to the component dtype at the end.
//!
//! FFT and IFFT (scaled by `1/n`) transform every trailing axis; RFFT
//! transforms the last axis first (real input, `n/2 + 1` outputs) then the
//! others; IRFFT transforms the others first, then maps the `n/2 + 1`
//! non-negative frequencies to `n` real values through the interpreter's
//! Hermitian completion: weight 2 for a frequency whose mirror is implied,
//! the imaginary parts of frequency 0 (and `n/2` for even `n`) ignored.
//!
//! Invariant: a transformed length is at most [`MAX_LEN`] (the matrices
//! are `n x m`); longer transforms are refused, not approximated.

use super::complex::{refuse, transpose_prim, Pair, Rw, Val};
use jaxon_ir::primitive::{
    BinaryOp, DotDimensionNumbers, DotGeneralParams, Elementwise, FftParams, FftType, Linalg,
    Primitive,
};
use jaxon_ir::{Atom, DType, Eqn, IrError};

/// The longest transformed axis.
pub(crate) const MAX_LEN: usize = 2048;

const CD: DType = DType::F64;

/// A value being transformed: parts in `f64` and its shape.
struct X {
    re: Atom,
    im: Option<Atom>,
    shape: Vec<usize>,
}

/// `exp(sign 2πi jk / n) * scale` for `j < rows`, `k < cols`, row-major,
/// as (real parts, imaginary parts).
fn twiddles(n: usize, rows: usize, cols: usize, sign: f64, scale: f64) -> (Vec<f64>, Vec<f64>) {
    let mut re = Vec::with_capacity(rows * cols);
    let mut im = Vec::with_capacity(rows * cols);
    for j in 0..rows {
        for k in 0..cols {
            let jk = (j as u128 * k as u128 % n.max(1) as u128) as f64;
            let a = sign * 2.0 * std::f64::consts::PI * jk / n as f64;
            re.push(a.cos() * scale);
            im.push(a.sin() * scale);
        }
    }
    (re, im)
}

/// The IRFFT matrices of the last axis: `rows = n/2 + 1` frequencies to
/// `n` real values (see the module docs).
fn irfft_matrices(n: usize, rows: usize) -> (Vec<f64>, Vec<f64>) {
    let mut cr = Vec::with_capacity(rows * n);
    let mut ci = Vec::with_capacity(rows * n);
    let scale = 1.0 / n as f64;
    for k in 0..rows {
        let w = if k >= 1 && k + rows <= n { 2.0 } else { 1.0 };
        let real_only = k == 0 || (n.is_multiple_of(2) && k == n / 2);
        for t in 0..n {
            let kt = (k as u128 * t as u128 % n as u128) as f64;
            let a = 2.0 * std::f64::consts::PI * kt / n as f64;
            cr.push(w * a.cos() * scale);
            ci.push(if real_only { 0.0 } else { -w * a.sin() * scale });
        }
    }
    (cr, ci)
}

/// `x` contracted along `ax` with the `n x m` matrices `(wr, wi)`; the new
/// axis put back at `ax`. `real_out`: only `xr·wr + xi·wi` (IRFFT).
fn step(
    rw: &mut Rw,
    x: X,
    ax: usize,
    m: usize,
    (wr, wi): (Vec<f64>, Vec<f64>),
    real_out: bool,
) -> Result<X, IrError> {
    let n = x.shape[ax];
    let wr = rw.const_f64(CD, &[n, m], &wr)?;
    let wi = rw.const_f64(CD, &[n, m], &wi)?;
    let rank = x.shape.len();
    let mut dshape: Vec<usize> = (0..rank).filter(|&d| d != ax).map(|d| x.shape[d]).collect();
    dshape.push(m);
    let dot = Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
        dimension_numbers: DotDimensionNumbers {
            lhs_contracting: vec![ax],
            rhs_contracting: vec![0],
            lhs_batch: Vec::new(),
            rhs_batch: Vec::new(),
        },
        precision: None,
        preferred_element_type: None,
    }));
    let bin = |op| Primitive::Elementwise(Elementwise::Binary(op));
    let d = |rw: &mut Rw, a: Atom, w: Atom| rw.emit1(dot.clone(), vec![a, w], CD, &dshape);
    let (re, im) = if real_out {
        let a = d(rw, x.re, wr);
        let re = match x.im {
            Some(xi) => {
                let b = d(rw, xi, wi);
                rw.emit1(bin(BinaryOp::Add), vec![a, b], CD, &dshape)
            }
            None => a,
        };
        (re, None)
    } else {
        let rr = d(rw, x.re, wr);
        let ri = d(rw, x.re, wi);
        match x.im {
            Some(xi) => {
                let ii = d(rw, xi, wi);
                let ir = d(rw, xi, wr);
                let re = rw.emit1(bin(BinaryOp::Sub), vec![rr, ii], CD, &dshape);
                let im = rw.emit1(bin(BinaryOp::Add), vec![ri, ir], CD, &dshape);
                (re, Some(im))
            }
            None => (rr, Some(ri)),
        }
    };
    let mut shape = x.shape.clone();
    shape[ax] = m;
    if ax + 1 == rank {
        return Ok(X { re, im, shape });
    }
    let mut perm: Vec<usize> = (0..ax).collect();
    perm.push(rank - 1);
    perm.extend(ax..rank - 1);
    let re = rw.emit1(transpose_prim(perm.clone()), vec![re], CD, &shape);
    let im = im.map(|im| rw.emit1(transpose_prim(perm), vec![im], CD, &shape));
    Ok(X { re, im, shape })
}

/// Lowers `fft` (see the module docs).
pub(crate) fn fft(rw: &mut Rw, e: &Eqn, p: &FftParams) -> Result<(), IrError> {
    let a = e
        .inputs
        .first()
        .ok_or_else(|| IrError::Invalid("fft: no operand".into()))?;
    let b = e
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid("fft: no output".into()))?;
    let (id, s) = rw.src_type(a)?;
    let (od, osh) = rw.src_out_type(b)?;
    let nd = p.fft_lengths.len();
    let rank = s.len();
    if nd == 0 || nd > rank || osh.len() != rank {
        return Err(IrError::ty(
            "fft",
            format!("{nd} fft_lengths for rank {rank}"),
        ));
    }
    if let Some(n) = p.fft_lengths.iter().find(|&&n| n > MAX_LEN) {
        return Err(refuse(
            "fft",
            &format!("a transformed length {n} over {MAX_LEN}"),
        ));
    }
    let ir = id.real_dtype();
    let (re, im) = match rw.val(a)? {
        Val::Cx(q) => (q.re, Some(q.im)),
        Val::Real(x) => (x, None),
    };
    let re = rw.materialize(re, ir, &s);
    let re = rw.convert(re, ir, CD, &s);
    let im = match im {
        Some(im) => {
            let im = rw.materialize(im, ir, &s);
            Some(rw.convert(im, ir, CD, &s))
        }
        None => None,
    };
    let mut x = X { re, im, shape: s };
    let axes: Vec<usize> = (rank - nd..rank).collect();
    let last = rank - 1;
    let full = |n: usize, inverse: bool| {
        if inverse {
            twiddles(n, n, n, 1.0, 1.0 / n.max(1) as f64)
        } else {
            twiddles(n, n, n, -1.0, 1.0)
        }
    };
    match p.fft_type {
        FftType::Fft | FftType::Ifft => {
            let inverse = p.fft_type == FftType::Ifft;
            for &ax in &axes {
                let n = x.shape[ax];
                x = step(rw, x, ax, n, full(n, inverse), false)?;
            }
        }
        FftType::Rfft => {
            let n = x.shape[last];
            let m = osh[last];
            x = step(rw, x, last, m, twiddles(n, n, m, -1.0, 1.0), false)?;
            for &ax in axes.iter().rev().skip(1) {
                let n = x.shape[ax];
                x = step(rw, x, ax, n, full(n, false), false)?;
            }
        }
        FftType::Irfft => {
            for &ax in axes.iter().take(nd - 1) {
                let n = x.shape[ax];
                x = step(rw, x, ax, n, full(n, true), false)?;
            }
            let n = osh[last];
            let rows = x.shape[last];
            if rows != n / 2 + 1 {
                return Err(IrError::ty(
                    "fft",
                    format!("IRFFT of {rows} frequencies to {n}"),
                ));
            }
            x = step(rw, x, last, n, irfft_matrices(n, rows), true)?;
        }
    }
    let rdt = od.real_dtype();
    let re = rw.convert(x.re, CD, rdt, &osh);
    let val = match x.im {
        Some(im) if od.is_complex() => Val::Cx(Pair {
            re,
            im: rw.convert(im, CD, rdt, &osh),
        }),
        None if !od.is_complex() => Val::Real(re),
        _ => return Err(IrError::ty("fft", format!("a result of {od}"))),
    };
    rw.bind(b, val);
    Ok(())
}
