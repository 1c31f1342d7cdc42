//! The order-dependent complex reductions of the rewrite (`complex.rs`):
//! `reduce_max`/`reduce_min` and `cumprod` as sequential folds in element
//! order, emitted as a real `scan` whose carry is the running value's two
//! parts, and `sort` (its `argsort` form included) as a real sort with
//! each complex key split into two keys, real part first.
//!
//! Semantics are the interpreter's (`ir::interp::ops::reduce`, `sort`):
//! - `reduce_max`/`min` fold every output's elements in row-major order
//!   of the reduced axes from `∓inf + 0j` with XLA's complex `max`/`min`
//!   (`complex_arc.rs`: lexicographic on (real, imaginary), a NaN compares
//!   false, so ties and NaNs give the element) — a select, so the result
//!   is an element bit for bit, NaN payloads aside;
//! - `cumprod` keeps a line's first element (last, reversed) and
//!   multiplies on with `num_complex`'s product in `f64`, rounded to the
//!   component dtype once at the end, as the interpreter lifts to
//!   `Complex64` and lowers at the end;
//! - `cumsum` sums each part in `f64` and rounds once, likewise;
//! - `top_k` orders descending by real part, then imaginary part, in the
//!   IEEE total order, ties by the lower index (a stable sort on integer
//!   keys, then a slice);
//! - `sort` compares complex keys by real part, then imaginary part, each
//!   in the float sort order (NaNs last and equal, `-0 == +0`), stably —
//!   exactly a real sort with the two parts as consecutive keys.
//!
//! Invariants: the scan body has no constants and shapes `[m]` (`m` the
//! number of outputs, or of lines); an empty fold (no reduced elements)
//! gives the identity without a scan; line lengths 0 and 1 of `cumprod`
//! are the operand unchanged.

use super::complex::{reshape_prim, slice_prim, transpose_prim, Pair, Rw, Val};
use super::complex_math::{C, CD, E};
use jaxon_ir::aval::static_shape;
use jaxon_ir::primitive::{
    BinaryOp, BitcastConvertTypeParams, ConcatenateParams, Control, CumulativeParams, Elementwise,
    IotaParams, Primitive, ReduceParams, Reduction, ScanParams, SortParams, Structural, TopKParams,
};
use jaxon_ir::{Atom, Binder, ClosedJaxpr, DType, Eqn, IrError, Jaxpr, Literal, ShapedArray};
use std::collections::HashMap;

/// What one scan step computes from the carry and the slice.
#[derive(Clone, Copy)]
enum Step {
    Max,
    Min,
    Mul,
}

/// The one operand and the one output's type of `e`.
fn unary_types(rw: &Rw, e: &Eqn) -> Result<(Atom, Vec<usize>, DType, Vec<usize>), IrError> {
    let name = e.primitive.name();
    let (Some(a), Some(b)) = (e.inputs.first(), e.outputs.first()) else {
        return Err(IrError::Invalid(format!("{name}: expected one operand")));
    };
    let (_, s) = rw.src_type(a)?;
    let (od, osh) = rw.src_out_type(b)?;
    Ok((*a, s, od, osh))
}

/// The operand's parts in the compute dtype, materialized.
fn parts_cd(rw: &mut Rw, a: &Atom, s: &[usize]) -> Result<C, IrError> {
    let (d, _) = rw.src_type(a)?;
    let rdt = d.real_dtype();
    let (re, im) = match rw.val(a)? {
        Val::Cx(p) => (p.re, p.im),
        Val::Real(x) => (x, Atom::Lit(Literal::new(0.0, rdt))),
    };
    let mut part = |x: Atom| {
        let x = rw.convert(x, rdt, CD, s);
        rw.materialize(x, CD, s)
    };
    Ok(C {
        re: part(re),
        im: part(im),
    })
}

/// `z`'s parts transposed by `perm` and reshaped to `to`.
fn arrange(rw: &mut Rw, z: C, s: &[usize], perm: &[usize], to: &[usize]) -> C {
    let ts: Vec<usize> = perm.iter().map(|&d| s[d]).collect();
    let mut f = |x: Atom| {
        let x = rw.emit1(transpose_prim(perm.to_vec()), vec![x], CD, &ts);
        rw.emit1(reshape_prim(to), vec![x], CD, to)
    };
    C {
        re: f(z.re),
        im: f(z.im),
    }
}

/// Binds the first output of `e` to `z` rounded to `rdt`.
fn bind_rounded(rw: &mut Rw, e: &Eqn, z: C, rdt: DType, sh: &[usize]) -> Result<(), IrError> {
    let b = e
        .outputs
        .first()
        .ok_or_else(|| IrError::Invalid(format!("{}: no output", e.primitive.name())))?;
    let re = rw.convert(z.re, CD, rdt, sh);
    let im = rw.convert(z.im, CD, rdt, sh);
    rw.bind(b, Val::Cx(Pair { re, im }));
    Ok(())
}

/// A `scan` over the leading axis of `xs` (`[n, m]`, `n > 0`) from `init`
/// (`[m]`) applying `step`; the final carry and, with `stack`, the
/// carries after each step (`[n, m]`).
fn scan(rw: &mut Rw, init: C, xs: C, n: usize, m: usize, step: Step, reverse: bool) -> (C, C) {
    let empty = Jaxpr::new();
    let mut body = Rw {
        src: &empty,
        out: Jaxpr::new(),
        consts: Vec::new(),
        map: HashMap::new(),
    };
    let var = |body: &mut Rw| {
        let v = body.out.new_var(ShapedArray::new(CD, static_shape(&[m])));
        body.out.invars.push(v);
        Atom::Var(v)
    };
    let c = C {
        re: var(&mut body),
        im: var(&mut body),
    };
    let x = C {
        re: var(&mut body),
        im: var(&mut body),
    };
    let stack = matches!(step, Step::Mul);
    let mut ex = E::new(&mut body, vec![m]);
    let r = match step {
        Step::Max => ex.cmax(c, x),
        Step::Min => ex.cmin(c, x),
        Step::Mul => ex.cmul(c, x),
    };
    body.out.outvars = vec![r.re, r.im];
    if stack {
        body.out.outvars.extend([r.re, r.im]);
    }
    let nouts = body.out.outvars.len();
    let prim = Primitive::Control(Control::Scan(ScanParams {
        jaxpr: ClosedJaxpr::new(body.out, body.consts),
        length: n,
        reverse,
        num_consts: 0,
        num_carry: 2,
        unroll: 1,
        linear: vec![false; 4],
        split_transpose: false,
    }));
    let mut outs = vec![(CD, vec![m]), (CD, vec![m])];
    if stack {
        outs.extend([(CD, vec![n, m]), (CD, vec![n, m])]);
    }
    debug_assert_eq!(outs.len(), nouts);
    let r = rw.emit(prim, vec![init.re, init.im, xs.re, xs.im], &outs);
    let last = C { re: r[0], im: r[1] };
    let ys = if stack {
        C { re: r[2], im: r[3] }
    } else {
        last
    };
    (last, ys)
}

/// `reduce_max`/`reduce_min` of a complex array (see the module docs).
pub(crate) fn reduce_minmax(
    rw: &mut Rw,
    e: &Eqn,
    p: &ReduceParams,
    max: bool,
) -> Result<(), IrError> {
    let (a, s, od, osh) = unary_types(rw, e)?;
    let mut axes = p.axes.clone();
    axes.sort_unstable();
    axes.dedup();
    if axes.iter().any(|&d| d >= s.len()) {
        return Err(IrError::Invalid(format!(
            "{}: axes {:?} for rank {}",
            e.primitive.name(),
            p.axes,
            s.len()
        )));
    }
    let kept: Vec<usize> = (0..s.len()).filter(|d| !axes.contains(d)).collect();
    let n: usize = axes.iter().map(|&d| s[d]).product();
    let m: usize = kept.iter().map(|&d| s[d]).product();
    let inf = if max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let init = C {
        re: rw.materialize(Atom::Lit(Literal::new(inf, CD)), CD, &[m]),
        im: rw.materialize(Atom::Lit(Literal::new(0.0, CD)), CD, &[m]),
    };
    let r = if n == 0 {
        init
    } else {
        let z = parts_cd(rw, &a, &s)?;
        let mut perm = axes.clone();
        perm.extend(kept.iter().copied());
        let xs = arrange(rw, z, &s, &perm, &[n, m]);
        let step = if max { Step::Max } else { Step::Min };
        scan(rw, init, xs, n, m, step, false).0
    };
    let r = C {
        re: rw.emit1(reshape_prim(&osh), vec![r.re], CD, &osh),
        im: rw.emit1(reshape_prim(&osh), vec![r.im], CD, &osh),
    };
    bind_rounded(rw, e, r, od.real_dtype(), &osh)
}

/// `cumsum` of a complex array: a real `cumsum` of each part in `f64`,
/// rounded once, as the interpreter sums in `Complex64` (a `c64` sum
/// accumulated in `f32` would round at every step).
pub(crate) fn cumsum(rw: &mut Rw, e: &Eqn) -> Result<(), IrError> {
    let (a, s, od, osh) = unary_types(rw, e)?;
    let z = parts_cd(rw, &a, &s)?;
    let r = C {
        re: rw.emit1(e.primitive.clone(), vec![z.re], CD, &s),
        im: rw.emit1(e.primitive.clone(), vec![z.im], CD, &s),
    };
    bind_rounded(rw, e, r, od.real_dtype(), &osh)
}

/// `cumprod` of a complex array along `p.axis` (see the module docs).
pub(crate) fn cumprod(rw: &mut Rw, e: &Eqn, p: &CumulativeParams) -> Result<(), IrError> {
    let (a, s, od, osh) = unary_types(rw, e)?;
    let ax = p.axis;
    let Some(&len) = s.get(ax) else {
        return Err(IrError::Invalid(format!(
            "cumprod: axis {ax} for rank {}",
            s.len()
        )));
    };
    let z = parts_cd(rw, &a, &s)?;
    if len <= 1 {
        return bind_rounded(rw, e, z, od.real_dtype(), &osh);
    }
    let mut perm = vec![ax];
    perm.extend((0..s.len()).filter(|&d| d != ax));
    let m: usize = s.iter().product::<usize>() / len;
    let x = arrange(rw, z, &s, &perm, &[len, m]);
    // The kept end element and the `len - 1` others.
    let (k0, rest0) = if p.reverse { (len - 1, 0) } else { (0, 1) };
    let mut cut = |x: Atom, lo: usize, hi: usize| {
        let sl = slice_prim(vec![lo as i64, 0], vec![hi as i64, m as i64]);
        rw.emit1(sl, vec![x], CD, &[hi - lo, m])
    };
    let end = C {
        re: cut(x.re, k0, k0 + 1),
        im: cut(x.im, k0, k0 + 1),
    };
    let xs = C {
        re: cut(x.re, rest0, rest0 + len - 1),
        im: cut(x.im, rest0, rest0 + len - 1),
    };
    let init = C {
        re: rw.emit1(reshape_prim(&[m]), vec![end.re], CD, &[m]),
        im: rw.emit1(reshape_prim(&[m]), vec![end.im], CD, &[m]),
    };
    let (_, ys) = scan(rw, init, xs, len - 1, m, Step::Mul, p.reverse);
    let cat = Primitive::Structural(Structural::Concatenate(ConcatenateParams { dimension: 0 }));
    let mut join = |y: Atom, k: Atom| {
        let ins = if p.reverse { vec![y, k] } else { vec![k, y] };
        rw.emit1(cat.clone(), ins, CD, &[len, m])
    };
    let full = C {
        re: join(ys.re, end.re),
        im: join(ys.im, end.im),
    };
    // Back to the operand's layout: `[len, others..]`, then the inverse
    // permutation.
    let ts: Vec<usize> = perm.iter().map(|&d| s[d]).collect();
    let mut inv = vec![0; perm.len()];
    for (i, &d) in perm.iter().enumerate() {
        inv[d] = i;
    }
    let mut back = |x: Atom| {
        let x = rw.emit1(reshape_prim(&ts), vec![x], CD, &ts);
        rw.emit1(transpose_prim(inv.clone()), vec![x], CD, &s)
    };
    let r = C {
        re: back(full.re),
        im: back(full.im),
    };
    bind_rounded(rw, e, r, od.real_dtype(), &osh)
}

/// `sort` with complex operands: each complex operand becomes its two
/// parts (a complex key two consecutive keys, real part first).
pub(crate) fn sort(rw: &mut Rw, e: &Eqn, p: &SortParams) -> Result<(), IrError> {
    if e.outputs.len() != e.inputs.len() {
        return Err(IrError::Invalid(format!(
            "sort: {} outputs for {} operands",
            e.outputs.len(),
            e.inputs.len()
        )));
    }
    let mut ins = Vec::new();
    let mut outs = Vec::new();
    let mut num_keys = 0;
    for (i, a) in e.inputs.iter().enumerate() {
        let (d, s) = rw.src_type(a)?;
        let parts = match rw.val(a)? {
            Val::Cx(q) => {
                let rdt = d.real_dtype();
                vec![
                    (rw.materialize(q.re, rdt, &s), rdt),
                    (rw.materialize(q.im, rdt, &s), rdt),
                ]
            }
            Val::Real(x) => vec![(rw.materialize(x, d, &s), d)],
        };
        if i < p.num_keys {
            num_keys += parts.len();
        }
        for (x, dt) in parts {
            ins.push(x);
            outs.push((dt, s.clone()));
        }
    }
    let q = SortParams {
        dimension: p.dimension,
        is_stable: p.is_stable,
        num_keys,
    };
    let r = rw.emit(Primitive::Reduction(Reduction::Sort(q)), ins, &outs);
    let mut k = 0;
    for (a, b) in e.inputs.iter().zip(&e.outputs) {
        let v = match rw.val(a)? {
            Val::Cx(_) => {
                k += 2;
                Val::Cx(Pair {
                    re: r[k - 2],
                    im: r[k - 1],
                })
            }
            Val::Real(_) => {
                k += 1;
                Val::Real(r[k - 1])
            }
        };
        if let Binder::Var(_) = b {
            rw.bind(b, v);
        }
    }
    Ok(())
}

/// `top_k` of a complex array: the interpreter's order — descending by
/// real part, then imaginary part, each in the IEEE total order (`+NaN`
/// largest, `-0 < +0`), ties by the lower index — as a stable real sort on
/// two integer keys (each part's total-order key, bitwise negated so that
/// ascending is descending) carrying the parts and an `iota`, then the
/// first `k` of each line.
pub(crate) fn top_k(rw: &mut Rw, e: &Eqn, p: &TopKParams) -> Result<(), IrError> {
    let name = e.primitive.name();
    let (Some(a), [bv, bi]) = (e.inputs.first(), e.outputs.as_slice()) else {
        return Err(IrError::Invalid(format!(
            "{name}: expected one operand, two results"
        )));
    };
    let (d, s) = rw.src_type(a)?;
    let (id, osh) = rw.src_out_type(bi)?;
    let Val::Cx(q) = rw.val(a)? else {
        return Err(IrError::Invalid(format!("{name}: a real operand")));
    };
    let ax = p.axis;
    if ax >= s.len() || p.k > s[ax] {
        return Err(IrError::Invalid(format!(
            "{name}: k={} on axis {ax} of {s:?}",
            p.k
        )));
    }
    let rdt = d.real_dtype();
    let kdt = if rdt == DType::F32 {
        DType::I32
    } else {
        DType::I64
    };
    let (re, im) = (rw.materialize(q.re, rdt, &s), rw.materialize(q.im, rdt, &s));
    let key = |rw: &mut Rw, x: Atom| {
        let bits =
            Primitive::Elementwise(Elementwise::BitcastConvertType(BitcastConvertTypeParams {
                new_dtype: kdt,
            }));
        let b = rw.emit1(bits, vec![x], kdt, &s);
        let lit = |v: i64| Atom::Lit(Literal::new(v as f64, kdt));
        // Powers of two, exact in `f64`.
        let min = if kdt == DType::I32 {
            lit(i64::from(i32::MIN))
        } else {
            lit(i64::MIN)
        };
        let ones = lit(-1);
        let bin = |op| Primitive::Elementwise(Elementwise::Binary(op));
        let neg = rw.emit1(bin(BinaryOp::Lt), vec![b, lit(0)], DType::Bool, &s);
        // `!key`: `!b` for `b >= 0`, `!(b ^ MAX) = b ^ MIN` below zero.
        let pos = rw.emit1(bin(BinaryOp::Xor), vec![b, ones], kdt, &s);
        let negk = rw.emit1(bin(BinaryOp::Xor), vec![b, min], kdt, &s);
        rw.emit1(
            Primitive::Elementwise(Elementwise::SelectN),
            vec![neg, pos, negk],
            kdt,
            &s,
        )
    };
    let (kr, ki) = (key(rw, re), key(rw, im));
    let iota = Primitive::Structural(Structural::Iota(IotaParams {
        dtype: id,
        shape: s.iter().map(|&n| Some(n)).collect(),
        dimension: ax,
    }));
    let idx = rw.emit1(iota, vec![], id, &s);
    let sorted = rw.emit(
        Primitive::Reduction(Reduction::Sort(SortParams {
            dimension: ax,
            is_stable: true,
            num_keys: 2,
        })),
        vec![kr, ki, re, im, idx],
        &[
            (kdt, s.clone()),
            (kdt, s.clone()),
            (rdt, s.clone()),
            (rdt, s.clone()),
            (id, s.clone()),
        ],
    );
    let mut limit: Vec<i64> = s.iter().map(|&n| n as i64).collect();
    limit[ax] = p.k as i64;
    let first = |rw: &mut Rw, x: Atom, dt: DType| {
        rw.emit1(
            slice_prim(vec![0; s.len()], limit.clone()),
            vec![x],
            dt,
            &osh,
        )
    };
    let v = Pair {
        re: first(rw, sorted[2], rdt),
        im: first(rw, sorted[3], rdt),
    };
    let i = first(rw, sorted[4], id);
    rw.bind(bv, Val::Cx(v));
    rw.bind(bi, Val::Real(i));
    Ok(())
}
