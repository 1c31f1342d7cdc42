//! `conv_general_dilated` as a **direct convolution** kernel: one thread
//! per output element loops over the kernel's spatial taps and, for each
//! tap that lands on a real input element, over the input features of its
//! group. Every layout (`ConvDimensionNumbers` in any order), window
//! strides, low/high padding (negative too), lhs (input) and rhs (kernel)
//! dilation, `feature_group_count` and `batch_group_count` are honoured,
//! with the interpreter's (`ir::interp::ops::linalg::conv`) loop order and
//! group arithmetic.
//!
//! Types: operands are converted to the result dtype (`preferred_element_type`
//! or the lhs dtype) first; 16-bit floats accumulate in `f32` and round
//! once at the store; integers wrap; `bool` is `or` of `and`s.
//!
//! Invariant: a tap is read only when its input position is in
//! `0..in_size` on every spatial dim and on the dilation grid, so every
//! load is in bounds; each thread writes only its own output element.
//! An im2col + GEMM path for large float convolutions is future work.

use super::kernel::{
    compute, i64c, load, loop_kernel, multi_index, store, strides, try_for, try_if,
};
use super::plan::Step;
use super::{atom_type, bind_outputs, out_type, Ctx, Env};
use crate::kir::Expr;
use jaxon_ir::primitive::ConvGeneralDilatedParams;
use jaxon_ir::{DType, Eqn, IrError, Jaxpr};

const NAME: &str = "conv_general_dilated";

/// The resolved geometry of one convolution.
struct Geometry {
    n_out: usize,
    i: usize,
    in_sp: Vec<usize>,
    k_sp: Vec<usize>,
    out_shape: Vec<usize>,
    groups_per_o: usize,
    bgroups_per_o: usize,
    /// Strides of (batch, feature, spatial...) in lhs, rhs and out.
    lst: (i64, i64, Vec<i64>),
    rst: (i64, i64, Vec<i64>),
}

fn geometry(ls: &[usize], rs: &[usize], p: &ConvGeneralDilatedParams) -> Result<Geometry, IrError> {
    let dn = &p.dimension_numbers;
    let r = ls.len();
    let nsp = r.saturating_sub(2);
    let spec_ok = |s: &[usize]| {
        let mut seen = vec![false; r];
        s.len() == r
            && s.iter()
                .all(|&d| d < r && !std::mem::replace(&mut seen[d], true))
    };
    let bad = r < 2
        || rs.len() != r
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
            NAME,
            "inconsistent shapes, dimension numbers or params",
        ));
    }
    let (n, c) = (ls[dn.lhs_spec[0]], ls[dn.lhs_spec[1]]);
    let (o, i) = (rs[dn.rhs_spec[0]], rs[dn.rhs_spec[1]]);
    let (g, bgc) = (p.feature_group_count, p.batch_group_count);
    if c != i * g || o % g != 0 || o % bgc != 0 || n % bgc != 0 {
        return Err(IrError::ty(
            NAME,
            format!("lhs {ls:?} rhs {rs:?} with feature groups {g} and batch groups {bgc}"),
        ));
    }
    let in_sp: Vec<usize> = (0..nsp).map(|d| ls[dn.lhs_spec[2 + d]]).collect();
    let k_sp: Vec<usize> = (0..nsp).map(|d| rs[dn.rhs_spec[2 + d]]).collect();
    let mut out_shape = vec![0usize; r];
    out_shape[dn.out_spec[0]] = n / bgc;
    out_shape[dn.out_spec[1]] = o;
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
        out_shape[dn.out_spec[2 + d]] = size as usize;
    }
    let split = |st: &[i64], spec: &[usize]| {
        (
            st[spec[0]],
            st[spec[1]],
            (0..nsp).map(|d| st[spec[2 + d]]).collect(),
        )
    };
    Ok(Geometry {
        n_out: n / bgc,
        i,
        in_sp,
        k_sp,
        groups_per_o: (o / g).max(1),
        bgroups_per_o: (o / bgc).max(1),
        lst: split(&strides(ls), &dn.lhs_spec),
        rst: split(&strides(rs), &dn.rhs_spec),
        out_shape,
    })
}

/// A loaded operand value (compute dtype of `from`) converted to the
/// compute dtype of `to`, as `convert_element_type` would.
fn convert(from: DType, to: DType, x: Expr) -> Expr {
    if from == to {
        return x;
    }
    match to {
        DType::F16 | DType::BF16 => x.cast(to).cast(DType::F32),
        _ if compute(from) == compute(to) => x,
        _ => x.cast(compute(to)),
    }
}

/// Lowers `conv_general_dilated`.
pub(crate) fn conv(
    ctx: &mut Ctx,
    jaxpr: &Jaxpr,
    eqn: &Eqn,
    p: &ConvGeneralDilatedParams,
    env: &mut Env,
    steps: &mut Vec<Step>,
) -> Result<(), IrError> {
    let (la, ra) = match eqn.inputs.as_slice() {
        [l, r] => (l, r),
        _ => {
            return Err(IrError::Invalid(format!(
                "{NAME}: wrong number of operands"
            )))
        }
    };
    let (ld, ls) = atom_type(jaxpr, la)?;
    let (rd, rs) = atom_type(jaxpr, ra)?;
    let out_binder = eqn
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid(format!("{NAME}: no result")))?;
    let (dt, oshape) = out_type(jaxpr, out_binder)?;
    if dt != p.preferred_element_type.unwrap_or(ld) {
        return Err(IrError::ty(NAME, "result dtype is not the preferred type"));
    }
    let geo = geometry(&ls, &rs, p)?;
    if geo.out_shape != oshape {
        return Err(IrError::ty(
            NAME,
            format!("result shape {oshape:?}, expected {:?}", geo.out_shape),
        ));
    }
    let (lhs, rhs) = (env.atom(la)?, env.atom(ra)?);
    let outs = bind_outputs(ctx, jaxpr, eqn, env)?;
    let (out, _, _) = outs
        .first()
        .cloned()
        .ok_or_else(|| IrError::Invalid(format!("{NAME}: no result")))?;
    let dn = &p.dimension_numbers;
    let nsp = geo.in_sp.len();
    let c = compute(dt);
    let kn: usize = geo.k_sp.iter().product();
    let step = loop_kernel(ctx, NAME, &oshape, |k, args, ctx, lin, idx| {
        let n = idx[dn.out_spec[0]].clone();
        let o = k.let_("o", DType::I64, idx[dn.out_spec[1]].clone());
        let g = Expr::var(o) / i64c(geo.groups_per_o as i64);
        let bg = Expr::var(o) / i64c(geo.bgroups_per_o as i64);
        let n_in = bg * i64c(geo.n_out as i64) + n;
        let lbase0 = k.let_("lbase", DType::I64, n_in * i64c(geo.lst.0));
        let cbase = k.let_("cbase", DType::I64, g * i64c(geo.i as i64));
        let rbase0 = k.let_("rbase", DType::I64, Expr::var(o) * i64c(geo.rst.0));
        let acc = k.let_(
            "acc",
            c,
            if c.is_bool() {
                Expr::bool(false)
            } else {
                Expr::int(c, 0)
            },
        );
        let tap = k.var("tap", DType::I64);
        let taps = (i64c(0), i64c(kn as i64), i64c(1));
        try_for(k, tap, taps, |k| {
            let kk = multi_index(k, Expr::var(tap), &geo.k_sp);
            let mut valid = Expr::bool(true);
            let mut loff = Expr::var(lbase0);
            let mut roff = Expr::var(rbase0);
            for d in 0..nsp {
                let y = idx[dn.out_spec[2 + d]].clone();
                let pos = k.let_(
                    "pos",
                    DType::I64,
                    y * i64c(p.window_strides[d] as i64)
                        + kk[d].clone() * i64c(p.rhs_dilation[d] as i64)
                        - i64c(p.padding[d].0),
                );
                let dil = p.lhs_dilation[d] as i64;
                let ix = if dil == 1 {
                    Expr::var(pos)
                } else {
                    valid = valid.and((Expr::var(pos) % i64c(dil)).eq(i64c(0)));
                    Expr::var(pos) / i64c(dil)
                };
                let ix = k.let_("ix", DType::I64, ix);
                valid = valid
                    .and(Expr::var(pos).ge(i64c(0)))
                    .and(Expr::var(ix).lt(i64c(geo.in_sp[d] as i64)));
                loff = loff + Expr::var(ix) * i64c(geo.lst.2[d]);
                roff = roff + kk[d].clone() * i64c(geo.rst.2[d]);
            }
            let valid = k.let_("valid", DType::Bool, valid);
            try_if(k, Expr::var(valid), |k| {
                let loff = k.let_("loff", DType::I64, loff);
                let roff = k.let_("roff", DType::I64, roff);
                let i = k.var("i", DType::I64);
                try_for(k, i, (i64c(0), i64c(geo.i as i64), i64c(1)), |k| {
                    let ch = Expr::var(cbase) + Expr::var(i);
                    let a = load(k, args, ctx, lhs, Expr::var(loff) + ch * i64c(geo.lst.1))?;
                    let b = load(
                        k,
                        args,
                        ctx,
                        rhs,
                        Expr::var(roff) + Expr::var(i) * i64c(geo.rst.1),
                    )?;
                    let (a, b) = (convert(ld, dt, a), convert(rd, dt, b));
                    let next = if c.is_bool() {
                        Expr::var(acc).or(a.and(b))
                    } else {
                        Expr::var(acc) + a * b
                    };
                    k.assign(acc, next);
                    Ok(())
                })
            })
        })?;
        store(k, args, ctx, out, lin.clone(), Expr::var(acc))
    })?;
    steps.extend(step);
    Ok(())
}
