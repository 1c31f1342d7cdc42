//! `conv_general_dilated` lowered to GEMM: per group (feature or batch
//! group) an im2col patch matrix `[batch * out positions, in features *
//! taps]` times the kernel `[in features * taps, out features]`, one
//! batched `dot` call; strides, padding (negative too), input and kernel
//! dilation fold into the patch gather. f16/bf16 compute in f32 and round
//! once at the end, as the interpreter does. Also the `dot_general`s the
//! gemm step cannot take directly (f16/bf16, bool, mixed dtypes); bf16 ×
//! bf16 and f16 × f16 ones go to `ops::dot::bf16` first, without casts.

use super::{map_same, next_index, strides, Elem, NativeOp};
use crate::error::run_error;
use crate::error::CpuError;
use crate::ops::dot::DotPlan;
use jaxon_ir::primitive::{ConvGeneralDilatedParams, DotDimensionNumbers};
use jaxon_ir::{DType, HostArray, IrError, Storage};

/// The dtype products are computed in for result dtype `dt`.
fn compute_dtype(dt: DType) -> DType {
    match dt {
        DType::F16 | DType::BF16 => DType::F32,
        DType::Bool => DType::I64,
        d => d,
    }
}

/// `a` converted to `dt` (a cast; exact for the conversions used here:
/// f16/bf16 to f32, bool and narrow integers to wider ones, integers to
/// floats).
pub(crate) fn cast(a: &HostArray, dt: DType) -> Result<HostArray, IrError> {
    if a.dtype() == dt {
        return Ok(a.clone());
    }
    let data = match (a.data(), dt) {
        (Storage::I64(v), DType::I64) => Storage::I64(v.clone()),
        (Storage::U64(v), DType::U64) => Storage::U64(v.clone()),
        (Storage::I64(v), _) if dt.is_int() => {
            let w: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            Storage::from_f64(dt, &w)
        }
        _ => Storage::from_f64(dt, &a.to_f64_vec()),
    };
    HostArray::new(a.shape().to_vec(), data)
}

/// Converts a product computed in `compute_dtype(dt)` back to `dt`.
fn finish(r: HostArray, dt: DType) -> Result<HostArray, IrError> {
    match dt {
        DType::Bool => {
            let shape = r.shape().to_vec();
            let v: Vec<bool> = (0..r.len()).map(|i| r.data().get_i64(i) != 0).collect();
            HostArray::new(shape, Storage::Bool(v))
        }
        d if d == r.dtype() => Ok(r),
        d => cast(&r, d),
    }
}

/// A `dot_general` in a dtype the gemm step does not take: operands are
/// cast to the result dtype (the interpreter's rule), multiplied in
/// f32 (f16/bf16) or i64 (bool), then rounded. bf16 × bf16 and f16 × f16
/// products (result in that dtype or f32) skip the casts on x86-64: the
/// GEMM of `ops::dot::bf16` packs their bits directly, with the same
/// single rounding.
#[derive(Debug)]
pub(crate) struct CastDot {
    plan: DotPlan,
    dtype: DType,
}

impl CastDot {
    pub(crate) fn new(
        ins: &[Vec<usize>],
        dn: &DotDimensionNumbers,
        dtype: DType,
    ) -> Result<CastDot, CpuError> {
        let [l, r] = ins else {
            return Err("dot_general takes two operands".into());
        };
        Ok(CastDot {
            plan: DotPlan::new(l, r, dn, compute_dtype(dtype))?,
            dtype,
        })
    }
}

impl NativeOp for CastDot {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        let [l, r] = inputs else {
            return Err(run_error("dot_general operands"));
        };
        // bf16 and f16 operands are packed straight from their bits
        // (`ops::dot::bf16`) where the layout and the CPU allow.
        #[cfg(target_arch = "x86_64")]
        if let Some(out) = self.plan.run_half(l, r, self.dtype, threads) {
            return Ok(vec![out?]);
        }
        let cdt = compute_dtype(self.dtype);
        let lc = cast(&cast(l, self.dtype)?, cdt)?;
        let rc = cast(&cast(r, self.dtype)?, cdt)?;
        Ok(vec![finish(self.plan.run(&lc, &rc, threads)?, self.dtype)?])
    }
}

/// A convolution resolved for static shapes.
#[derive(Debug)]
pub(crate) struct Conv {
    dtype: DType,
    /// Groups (feature groups or batch groups; one of them is 1).
    ng: usize,
    feature_groups: bool,
    n_out: usize,
    /// Input features per group and output features per group.
    i: usize,
    og: usize,
    in_sp: Vec<usize>,
    k_sp: Vec<usize>,
    out_sp: Vec<usize>,
    stride: Vec<usize>,
    lo: Vec<i64>,
    ld: Vec<usize>,
    rd: Vec<usize>,
    /// (batch, feature, spatial) strides of lhs, rhs (out, in, spatial), out.
    lst: (usize, usize, Vec<usize>),
    rst: (usize, usize, Vec<usize>),
    ost: (usize, usize, Vec<usize>),
    out_shape: Vec<usize>,
    plan: DotPlan,
}

impl Conv {
    pub(crate) fn new(
        ins: &[Vec<usize>],
        outs: &[(DType, Vec<usize>)],
        p: &ConvGeneralDilatedParams,
    ) -> Result<Conv, CpuError> {
        let ([ls, rs], [(dtype, out_shape)]) = (ins, outs) else {
            return Err("conv takes two operands and has one result".into());
        };
        let dn = &p.dimension_numbers;
        let r = ls.len();
        let nsp = r.saturating_sub(2);
        let spec_ok = |s: &[usize]| {
            let mut seen = vec![false; r];
            s.len() == r
                && s.iter()
                    .all(|&d| d < r && !std::mem::replace(&mut seen[d], true))
        };
        let (g, bgc) = (p.feature_group_count, p.batch_group_count);
        if r < 2
            || rs.len() != r
            || out_shape.len() != r
            || !spec_ok(&dn.lhs_spec)
            || !spec_ok(&dn.rhs_spec)
            || !spec_ok(&dn.out_spec)
            || p.window_strides.len() != nsp
            || p.padding.len() != nsp
            || p.lhs_dilation.len() != nsp
            || p.rhs_dilation.len() != nsp
            || g == 0
            || bgc == 0
            || (g > 1 && bgc > 1)
        {
            return Err("inconsistent shapes, dimension numbers or params".into());
        }
        let (n, c) = (ls[dn.lhs_spec[0]], ls[dn.lhs_spec[1]]);
        let (o, i) = (rs[dn.rhs_spec[0]], rs[dn.rhs_spec[1]]);
        if c != i * g || o % g != 0 || o % bgc != 0 || n % bgc != 0 {
            return Err(format!("lhs {ls:?} rhs {rs:?}, groups {g}, batch groups {bgc}").into());
        }
        let ng = g * bgc;
        let n_out = n / bgc;
        let og = o / ng;
        let in_sp: Vec<usize> = (0..nsp).map(|d| ls[dn.lhs_spec[2 + d]]).collect();
        let k_sp: Vec<usize> = (0..nsp).map(|d| rs[dn.rhs_spec[2 + d]]).collect();
        let out_sp: Vec<usize> = (0..nsp).map(|d| out_shape[dn.out_spec[2 + d]]).collect();
        if out_shape[dn.out_spec[0]] != n_out || out_shape[dn.out_spec[1]] != o {
            return Err(format!("result shape {out_shape:?}").into());
        }
        let split = |st: &[usize], spec: &[usize]| {
            (
                st[spec[0]],
                st[spec[1]],
                (0..nsp).map(|d| st[spec[2 + d]]).collect::<Vec<_>>(),
            )
        };
        let m = n_out * out_sp.iter().product::<usize>();
        let k = i * k_sp.iter().product::<usize>();
        let plan = DotPlan::new(
            &[ng, m, k],
            &[ng, k, og],
            &DotDimensionNumbers {
                lhs_contracting: vec![2],
                rhs_contracting: vec![1],
                lhs_batch: vec![0],
                rhs_batch: vec![0],
            },
            compute_dtype(*dtype),
        )?;
        Ok(Conv {
            dtype: *dtype,
            ng,
            feature_groups: g > 1,
            n_out,
            i,
            og,
            in_sp,
            k_sp,
            out_sp,
            stride: p.window_strides.to_vec(),
            lo: p.padding.iter().map(|x| x.0).collect(),
            ld: p.lhs_dilation.to_vec(),
            rd: p.rhs_dilation.to_vec(),
            lst: split(&strides(ls), &dn.lhs_spec),
            rst: split(&strides(rs), &dn.rhs_spec),
            ost: split(&strides(out_shape), &dn.out_spec),
            out_shape: out_shape.clone(),
            plan,
        })
    }

    /// The im2col matrix `[ng, n_out * out positions, i * taps]`.
    fn patches<T: Elem>(&self, a: &[T]) -> Vec<T> {
        let nsp = self.out_sp.len();
        let taps: usize = self.k_sp.iter().product();
        let ysz: usize = self.out_sp.iter().product();
        let mut out = Vec::with_capacity(self.ng * self.n_out * ysz * self.i * taps);
        let mut y = vec![0usize; nsp];
        let mut k = vec![0usize; nsp];
        // Per tap: the lhs spatial offset for the current output position.
        let mut tap_off: Vec<Option<usize>> = vec![None; taps];
        for gg in 0..self.ng {
            let (cg, bg) = if self.feature_groups {
                (gg, 0)
            } else {
                (0, gg)
            };
            for n in 0..self.n_out {
                let nbase = (bg * self.n_out + n) * self.lst.0 + cg * self.i * self.lst.1;
                y.iter_mut().for_each(|v| *v = 0);
                for _ in 0..ysz {
                    k.iter_mut().for_each(|v| *v = 0);
                    for t in tap_off.iter_mut() {
                        let mut off = Some(0usize);
                        for d in 0..nsp {
                            let pos =
                                (y[d] * self.stride[d] + k[d] * self.rd[d]) as i64 - self.lo[d];
                            let ld = self.ld[d] as i64;
                            if pos < 0 || pos % ld != 0 || (pos / ld) as usize >= self.in_sp[d] {
                                off = None;
                                break;
                            }
                            off = off.map(|v| v + (pos / ld) as usize * self.lst.2[d]);
                        }
                        *t = off;
                        next_index(&mut k, &self.k_sp);
                    }
                    for c in 0..self.i {
                        let cbase = nbase + c * self.lst.1;
                        out.extend(
                            tap_off
                                .iter()
                                .map(|t| t.map_or(T::zero(), |off| a[cbase + off])),
                        );
                    }
                    next_index(&mut y, &self.out_sp);
                }
            }
        }
        out
    }

    /// The kernel as `[ng, i * taps, og]`.
    fn weights<T: Elem>(&self, b: &[T]) -> Vec<T> {
        let nsp = self.k_sp.len();
        let taps: usize = self.k_sp.iter().product();
        let mut out = Vec::with_capacity(self.ng * self.i * taps * self.og);
        let mut k = vec![0usize; nsp];
        for gg in 0..self.ng {
            for c in 0..self.i {
                k.iter_mut().for_each(|v| *v = 0);
                for _ in 0..taps {
                    let koff: usize = (0..nsp).map(|d| k[d] * self.rst.2[d]).sum();
                    let base = c * self.rst.1 + koff;
                    out.extend((0..self.og).map(|oo| b[base + (gg * self.og + oo) * self.rst.0]));
                    next_index(&mut k, &self.k_sp);
                }
            }
        }
        out
    }

    /// Scatters the `[ng, n_out * positions, og]` product to the layout.
    fn place<T: Elem>(&self, r: &[T]) -> Vec<T> {
        let nsp = self.out_sp.len();
        let ysz: usize = self.out_sp.iter().product();
        let total: usize = self.out_shape.iter().product();
        let mut out = vec![T::zero(); total];
        let mut y = vec![0usize; nsp];
        let mut q = 0;
        for gg in 0..self.ng {
            for n in 0..self.n_out {
                y.iter_mut().for_each(|v| *v = 0);
                for _ in 0..ysz {
                    let yoff: usize =
                        n * self.ost.0 + (0..nsp).map(|d| y[d] * self.ost.2[d]).sum::<usize>();
                    for oo in 0..self.og {
                        out[yoff + (gg * self.og + oo) * self.ost.1] = r[q];
                        q += 1;
                    }
                    next_index(&mut y, &self.out_sp);
                }
            }
        }
        out
    }
}

impl NativeOp for Conv {
    fn run(&self, inputs: &[&HostArray], threads: usize) -> Result<Vec<HostArray>, IrError> {
        let [l, r] = inputs else {
            return Err(run_error("conv operands"));
        };
        let cdt = compute_dtype(self.dtype);
        let lc = cast(&cast(l, self.dtype)?, cdt)?;
        let rc = cast(&cast(r, self.dtype)?, cdt)?;
        let ysz: usize = self.out_sp.iter().product();
        let taps: usize = self.k_sp.iter().product();
        let (m, k) = (self.n_out * ysz, self.i * taps);
        let p = HostArray::new(
            vec![self.ng, m, k],
            map_same!(lc.data(), v => self.patches(v)),
        )?;
        let w = HostArray::new(
            vec![self.ng, k, self.og],
            map_same!(rc.data(), v => self.weights(v)),
        )?;
        let prod = self.plan.run(&p, &w, threads)?;
        let placed = HostArray::new(
            self.out_shape.clone(),
            map_same!(prod.data(), v => self.place(v)),
        )?;
        Ok(vec![finish(placed, self.dtype)?])
    }
}
