//! Contractions: `dot_general` and `conv_general_dilated` (any dimension
//! numbers, strides, padding, dilations and feature/batch groups).

use super::convert::convert_storage;
use super::reduce::rounder;
use super::{lift, lower, next_index, strides, Lifted};
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::IrError;
use crate::primitive::ConvGeneralDilatedParams;
use crate::primitive::DotDimensionNumbers;

/// Offsets of every multi-index over `dims` (row-major), each dim given as
/// `(size, stride)`.
fn offsets(dims: &[(usize, usize)]) -> Vec<usize> {
    let shape: Vec<usize> = dims.iter().map(|d| d.0).collect();
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut idx = vec![0usize; dims.len()];
    loop {
        out.push(idx.iter().zip(dims).map(|(i, d)| i * d.1).sum());
        if !next_index(&mut idx, &shape) {
            break;
        }
    }
    out
}

/// Both operands converted to `dt` and lifted.
fn lifted_pair(lhs: &HostArray, rhs: &HostArray, dt: DType) -> (Lifted, Lifted) {
    (
        lift(&convert_storage(lhs.data(), dt)),
        lift(&convert_storage(rhs.data(), dt)),
    )
}

/// Runs `$kernel` with a multiply-add for the lifted element type.
macro_rules! by_domain {
    ($l:expr, $r:expr, $dt:expr, $name:expr, $kernel:ident ( $($arg:expr),* )) => {{
        let rnd = rounder($dt);
        match ($l, $r) {
            (Lifted::F32(a), Lifted::F32(b)) => {
                Lifted::F32($kernel(&a, &b, $($arg,)* 0.0f32, |acc, x, y| acc + x * y).into_iter().map(rnd).collect())
            }
            (Lifted::F64(a), Lifted::F64(b)) => Lifted::F64($kernel(&a, &b, $($arg,)* 0.0f64, |acc, x, y| acc + x * y)),
            (Lifted::I(a), Lifted::I(b)) => Lifted::I($kernel(&a, &b, $($arg,)* 0i64, |acc: i64, x: i64, y: i64| acc.wrapping_add(x.wrapping_mul(y)))),
            (Lifted::U(a), Lifted::U(b)) => Lifted::U($kernel(&a, &b, $($arg,)* 0u64, |acc: u64, x: u64, y: u64| acc.wrapping_add(x.wrapping_mul(y)))),
            (Lifted::B(a), Lifted::B(b)) => Lifted::B($kernel(&a, &b, $($arg,)* false, |acc: bool, x: bool, y: bool| acc | (x & y))),
            (Lifted::C(a), Lifted::C(b)) => Lifted::C($kernel(&a, &b, $($arg,)* num_complex::Complex64::new(0.0, 0.0), |acc, x, y| acc + x * y)),
            _ => return Err(IrError::ty($name, "operand dtypes differ")),
        }
    }};
}

struct DotPlan {
    batch: (Vec<usize>, Vec<usize>),
    free: (Vec<usize>, Vec<usize>),
    contract: (Vec<usize>, Vec<usize>),
}

fn dot_kernel<T: Copy>(
    a: &[T],
    b: &[T],
    p: &DotPlan,
    zero: T,
    fma: impl Fn(T, T, T) -> T,
) -> Vec<T> {
    let mut out = Vec::with_capacity(p.batch.0.len() * p.free.0.len() * p.free.1.len());
    for (lb, rb) in p.batch.0.iter().zip(&p.batch.1) {
        for lf in &p.free.0 {
            for rf in &p.free.1 {
                let (lo, ro) = (lb + lf, rb + rf);
                let mut acc = zero;
                for (lc, rc) in p.contract.0.iter().zip(&p.contract.1) {
                    acc = fma(acc, a[lo + lc], b[ro + rc]);
                }
                out.push(acc);
            }
        }
    }
    out
}

/// `dot_general`: result dims are batch, lhs free, rhs free.
pub(crate) fn dot_general(
    lhs: &HostArray,
    rhs: &HostArray,
    dn: &DotDimensionNumbers,
    preferred: Option<DType>,
) -> Result<HostArray, IrError> {
    let name = "dot_general";
    let (ls, rs) = (lhs.shape(), rhs.shape());
    let valid = dn.lhs_batch.len() == dn.rhs_batch.len()
        && dn.lhs_contracting.len() == dn.rhs_contracting.len()
        && dn
            .lhs_batch
            .iter()
            .chain(&dn.lhs_contracting)
            .all(|&d| d < ls.len())
        && dn
            .rhs_batch
            .iter()
            .chain(&dn.rhs_contracting)
            .all(|&d| d < rs.len())
        && dn
            .lhs_batch
            .iter()
            .zip(&dn.rhs_batch)
            .all(|(&a, &b)| ls[a] == rs[b])
        && dn
            .lhs_contracting
            .iter()
            .zip(&dn.rhs_contracting)
            .all(|(&a, &b)| ls[a] == rs[b]);
    if !valid {
        return Err(IrError::ty(
            name,
            format!("dimension numbers {dn:?} for shapes {ls:?} and {rs:?}"),
        ));
    }
    let (lst, rst) = (strides(ls), strides(rs));
    let dims = |ds: &[usize], shape: &[usize], st: &[usize]| -> Vec<(usize, usize)> {
        ds.iter().map(|&d| (shape[d], st[d])).collect()
    };
    let lfree: Vec<usize> = (0..ls.len())
        .filter(|d| !dn.lhs_batch.contains(d) && !dn.lhs_contracting.contains(d))
        .collect();
    let rfree: Vec<usize> = (0..rs.len())
        .filter(|d| !dn.rhs_batch.contains(d) && !dn.rhs_contracting.contains(d))
        .collect();
    let plan = DotPlan {
        batch: (
            offsets(&dims(&dn.lhs_batch, ls, &lst)),
            offsets(&dims(&dn.rhs_batch, rs, &rst)),
        ),
        free: (
            offsets(&dims(&lfree, ls, &lst)),
            offsets(&dims(&rfree, rs, &rst)),
        ),
        contract: (
            offsets(&dims(&dn.lhs_contracting, ls, &lst)),
            offsets(&dims(&dn.rhs_contracting, rs, &rst)),
        ),
    };
    let shape: Vec<usize> = dn
        .lhs_batch
        .iter()
        .map(|&d| ls[d])
        .chain(lfree.iter().map(|&d| ls[d]))
        .chain(rfree.iter().map(|&d| rs[d]))
        .collect();
    let dt = preferred.unwrap_or(lhs.dtype());
    let (a, b) = lifted_pair(lhs, rhs, dt);
    let out = by_domain!(a, b, dt, name, dot_kernel(&plan));
    HostArray::new(shape, lower(out, dt))
}

/// Everything the conv kernel loop needs, in resolved form.
struct ConvPlan {
    n_out: usize,
    o: usize,
    i: usize,
    in_sp: Vec<usize>,
    k_sp: Vec<usize>,
    out_sp: Vec<usize>,
    stride: Vec<usize>,
    lo: Vec<i64>,
    ld: Vec<usize>,
    rd: Vec<usize>,
    groups_per_o: usize,
    bgroups_per_o: usize,
    // strides: lhs (N, C, spatial), rhs (O, I, spatial), out (N, O, spatial)
    lst: (usize, usize, Vec<usize>),
    rst: (usize, usize, Vec<usize>),
    ost: (usize, usize, Vec<usize>),
}

fn conv_kernel<T: Copy>(
    a: &[T],
    b: &[T],
    p: &ConvPlan,
    zero: T,
    fma: impl Fn(T, T, T) -> T,
) -> Vec<T> {
    let total = p.n_out * p.o * p.out_sp.iter().product::<usize>();
    let mut out = vec![zero; total];
    if total == 0 {
        return out;
    }
    let nsp = p.out_sp.len();
    let mut y = vec![0usize; nsp];
    let mut k = vec![0usize; nsp];
    let kn: usize = p.k_sp.iter().product();
    for n in 0..p.n_out {
        for o in 0..p.o {
            let g = o / p.groups_per_o;
            let bg = o / p.bgroups_per_o;
            let n_in = bg * p.n_out + n;
            y.iter_mut().for_each(|v| *v = 0);
            loop {
                let mut acc = zero;
                if kn > 0 {
                    k.iter_mut().for_each(|v| *v = 0);
                    loop {
                        // Input position of this kernel tap, if it is a real input element.
                        let mut off = Some(0usize);
                        for d in 0..nsp {
                            let pos = (y[d] * p.stride[d] + k[d] * p.rd[d]) as i64 - p.lo[d];
                            if pos < 0 || pos % p.ld[d] as i64 != 0 {
                                off = None;
                                break;
                            }
                            let ix = (pos / p.ld[d] as i64) as usize;
                            if ix >= p.in_sp[d] {
                                off = None;
                                break;
                            }
                            off = off.map(|v| v + ix * p.lst.2[d]);
                        }
                        if let Some(loff) = off {
                            let roff: usize =
                                (0..nsp).map(|d| k[d] * p.rst.2[d]).sum::<usize>() + o * p.rst.0;
                            let lbase = loff + n_in * p.lst.0;
                            for i in 0..p.i {
                                let c = g * p.i + i;
                                acc = fma(acc, a[lbase + c * p.lst.1], b[roff + i * p.rst.1]);
                            }
                        }
                        if !next_index(&mut k, &p.k_sp) {
                            break;
                        }
                    }
                }
                let ooff =
                    n * p.ost.0 + o * p.ost.1 + (0..nsp).map(|d| y[d] * p.ost.2[d]).sum::<usize>();
                out[ooff] = acc;
                if !next_index(&mut y, &p.out_sp) {
                    break;
                }
            }
        }
    }
    out
}

/// `conv_general_dilated`.
pub(crate) fn conv(
    lhs: &HostArray,
    rhs: &HostArray,
    p: &ConvGeneralDilatedParams,
) -> Result<HostArray, IrError> {
    let name = "conv_general_dilated";
    let dn = &p.dimension_numbers;
    let r = lhs.ndim();
    let nsp = r.saturating_sub(2);
    let spec_ok = |s: &[usize]| {
        let mut seen = vec![false; r];
        s.len() == r
            && s.iter()
                .all(|&d| d < r && !std::mem::replace(&mut seen[d], true))
    };
    let bad = r < 2
        || rhs.ndim() != r
        || !spec_ok(&dn.lhs_spec)
        || !spec_ok(&dn.rhs_spec)
        || !spec_ok(&dn.out_spec)
        || p.window_strides.len() != nsp
        || p.padding.len() != nsp
        || p.lhs_dilation.len() != nsp
        || p.rhs_dilation.len() != nsp
        || p.window_strides
            .iter()
            .chain(&p.lhs_dilation)
            .chain(&p.rhs_dilation)
            .any(|&v| v == 0)
        || p.feature_group_count == 0
        || p.batch_group_count == 0;
    if bad {
        return Err(IrError::ty(
            name,
            "inconsistent shapes, dimension numbers or params",
        ));
    }
    let (ls, rs) = (lhs.shape(), rhs.shape());
    let (n, c) = (ls[dn.lhs_spec[0]], ls[dn.lhs_spec[1]]);
    let (o, i) = (rs[dn.rhs_spec[0]], rs[dn.rhs_spec[1]]);
    let (g, bgc) = (p.feature_group_count, p.batch_group_count);
    if c != i * g || o % g != 0 || o % bgc != 0 || n % bgc != 0 {
        return Err(IrError::ty(
            name,
            format!("lhs {ls:?} rhs {rs:?} with feature groups {g} and batch groups {bgc}"),
        ));
    }
    let in_sp: Vec<usize> = (0..nsp).map(|d| ls[dn.lhs_spec[2 + d]]).collect();
    let k_sp: Vec<usize> = (0..nsp).map(|d| rs[dn.rhs_spec[2 + d]]).collect();
    let mut out_sp = Vec::with_capacity(nsp);
    for d in 0..nsp {
        let dil_in = if in_sp[d] == 0 {
            0
        } else {
            (in_sp[d] as i64 - 1) * p.lhs_dilation[d] as i64 + 1
        };
        let padded = dil_in + p.padding[d].0 + p.padding[d].1;
        let eff_k = if k_sp[d] == 0 {
            0
        } else {
            (k_sp[d] as i64 - 1) * p.rhs_dilation[d] as i64 + 1
        };
        let size = if padded >= eff_k && padded > 0 {
            (padded - eff_k) / p.window_strides[d] as i64 + 1
        } else {
            0
        };
        out_sp.push(size as usize);
    }
    let n_out = n / bgc;
    let mut out_shape = vec![0usize; r];
    out_shape[dn.out_spec[0]] = n_out;
    out_shape[dn.out_spec[1]] = o;
    for d in 0..nsp {
        out_shape[dn.out_spec[2 + d]] = out_sp[d];
    }
    let (lst, rst, ost) = (strides(ls), strides(rs), strides(&out_shape));
    let split = |st: &[usize], spec: &[usize]| {
        (
            st[spec[0]],
            st[spec[1]],
            (0..nsp).map(|d| st[spec[2 + d]]).collect(),
        )
    };
    let plan = ConvPlan {
        n_out,
        o,
        i,
        in_sp,
        k_sp,
        out_sp,
        stride: p.window_strides.to_vec(),
        lo: p.padding.iter().map(|x| x.0).collect(),
        ld: p.lhs_dilation.to_vec(),
        rd: p.rhs_dilation.to_vec(),
        groups_per_o: (o / g).max(1),
        bgroups_per_o: (o / bgc).max(1),
        lst: split(&lst, &dn.lhs_spec),
        rst: split(&rst, &dn.rhs_spec),
        ost: split(&ost, &dn.out_spec),
    };
    let dt = p.preferred_element_type.unwrap_or(lhs.dtype());
    let (a, b) = lifted_pair(lhs, rhs, dt);
    let out = by_domain!(a, b, dt, name, conv_kernel(&plan));
    HostArray::new(out_shape, lower(out, dt))
}
