//! Windowed reductions (`reduce_window_sum/max/min`) and the selections of
//! their derivatives (`select_and_gather_add`, `select_and_scatter_add`),
//! with padding, strides and base/window dilations.

use super::elementwise::{fmax, fmin};
use super::reduce::int_bounds;
use super::{lift, lower, next_index, take_or_fill, Lifted, FILL};
use crate::array::{HostArray, Storage};
use crate::error::IrError;
use crate::primitive::{SelectPrim, WindowGeometry, WindowOp};

/// The windows of an operand of `shape`: the result's shape, the window
/// size, and for each result element (row-major) and each window element
/// (row-major) the operand's flat index, or `FILL` on padding and holes.
pub fn window_map(
    name: &str,
    shape: &[usize],
    w: &WindowGeometry,
) -> Result<(Vec<usize>, usize, Vec<usize>), IrError> {
    let rank = shape.len();
    w.check(name, rank).map_err(IrError::Eval)?;
    let out: Vec<usize> = (0..rank)
        .map(|d| {
            w.out_dim(d, shape[d]).ok_or_else(|| {
                IrError::Eval(format!("{name}: padding makes dimension {d} negative"))
            })
        })
        .collect::<Result<_, _>>()?;
    let wsize: usize = w.window_dimensions.iter().product();
    let n_out: usize = out.iter().product();
    let mut map = Vec::with_capacity(n_out * wsize);
    if n_out == 0 || wsize == 0 {
        return Ok((out, wsize, map));
    }
    let st = super::strides(shape);
    let mut o = vec![0usize; rank];
    loop {
        let mut k = vec![0usize; rank];
        loop {
            let mut flat = 0usize;
            let mut inside = true;
            for d in 0..rank {
                let pos = (o[d] * w.window_strides[d] + k[d] * w.window_dilation[d]) as i64
                    - w.padding[d].0;
                let b = w.base_dilation[d] as i64;
                if pos < 0 || pos % b != 0 || pos / b >= shape[d] as i64 {
                    inside = false;
                    break;
                }
                flat += (pos / b) as usize * st[d];
            }
            map.push(if inside { flat } else { FILL });
            if !next_index(&mut k, &w.window_dimensions) {
                break;
            }
        }
        if !next_index(&mut o, &out) {
            break;
        }
    }
    Ok((out, wsize, map))
}

/// Folds every window of `v` from `init` with `f` (padding contributes `init`).
fn fold<T: Copy>(v: &[T], map: &[usize], wsize: usize, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    map.chunks(wsize.max(1))
        .map(|win| {
            win.iter()
                .filter(|&&i| i != FILL)
                .fold(init, |a, &i| f(a, v[i]))
        })
        .collect()
}

/// `reduce_window_sum/max/min` of `x`.
pub fn reduce_window(
    op: WindowOp,
    x: &HostArray,
    w: &WindowGeometry,
) -> Result<HostArray, IrError> {
    let (out, wsize, map) = window_map(op.name(), x.shape(), w)?;
    let n: usize = out.iter().product();
    let fold_all = |l: Lifted| -> Lifted {
        if wsize == 0 {
            return match l {
                Lifted::B(_) => Lifted::B(vec![op == WindowOp::Min; n]),
                Lifted::I(_) => Lifted::I(vec![0; n]),
                Lifted::U(_) => Lifted::U(vec![0; n]),
                Lifted::F32(_) => Lifted::F32(vec![0.0; n]),
                Lifted::F64(_) => Lifted::F64(vec![0.0; n]),
                Lifted::C(_) => Lifted::C(vec![Default::default(); n]),
            };
        }
        let dt = x.dtype();
        let (imin, umax) = int_bounds(dt);
        match l {
            Lifted::F32(v) => Lifted::F32(match op {
                WindowOp::Sum => fold(&v, &map, wsize, 0.0, |a, b| a + b),
                WindowOp::Max => fold(&v, &map, wsize, f32::NEG_INFINITY, fmax),
                WindowOp::Min => fold(&v, &map, wsize, f32::INFINITY, fmin),
            }),
            Lifted::F64(v) => Lifted::F64(match op {
                WindowOp::Sum => fold(&v, &map, wsize, 0.0, |a, b| a + b),
                WindowOp::Max => fold(&v, &map, wsize, f64::NEG_INFINITY, fmax),
                WindowOp::Min => fold(&v, &map, wsize, f64::INFINITY, fmin),
            }),
            Lifted::I(v) => Lifted::I(match op {
                WindowOp::Sum => fold(&v, &map, wsize, 0, i64::wrapping_add),
                WindowOp::Max => fold(&v, &map, wsize, imin, i64::max),
                WindowOp::Min => fold(&v, &map, wsize, umax as i64, i64::min),
            }),
            Lifted::U(v) => Lifted::U(match op {
                WindowOp::Sum => fold(&v, &map, wsize, 0, u64::wrapping_add),
                WindowOp::Max => fold(&v, &map, wsize, 0, u64::max),
                WindowOp::Min => fold(&v, &map, wsize, umax, u64::min),
            }),
            Lifted::B(v) => Lifted::B(match op {
                WindowOp::Sum | WindowOp::Max => fold(&v, &map, wsize, false, |a, b| a | b),
                WindowOp::Min => fold(&v, &map, wsize, true, |a, b| a & b),
            }),
            // JAX orders complex numbers lexicographically (real, then imaginary).
            Lifted::C(v) => {
                let inf = num_complex::Complex64::new(f64::INFINITY, f64::INFINITY);
                let lex = |a: &num_complex::Complex64, b: &num_complex::Complex64| {
                    a.re.total_cmp(&b.re).then(a.im.total_cmp(&b.im))
                };
                Lifted::C(match op {
                    WindowOp::Sum => fold(&v, &map, wsize, Default::default(), |a, b| a + b),
                    WindowOp::Max => fold(&v, &map, wsize, -inf, |a, b| {
                        if lex(&b, &a).is_gt() {
                            b
                        } else {
                            a
                        }
                    }),
                    WindowOp::Min => fold(&v, &map, wsize, inf, |a, b| {
                        if lex(&b, &a).is_lt() {
                            b
                        } else {
                            a
                        }
                    }),
                })
            }
        }
    };
    HostArray::new(out, lower(fold_all(lift(x.data())), x.dtype()))
}

/// Per window, the operand index it selects (the first greatest for `ge`,
/// the first least for `le`, padding never), or [`FILL`].
fn select<T: PartialOrd + Copy>(
    v: &[T],
    map: &[usize],
    wsize: usize,
    sel: SelectPrim,
) -> Vec<usize> {
    map.chunks(wsize.max(1))
        .map(|win| {
            let mut best = FILL;
            for &i in win.iter().filter(|&&i| i != FILL) {
                let keep = best != FILL
                    && match sel {
                        SelectPrim::Ge => v[best] >= v[i],
                        SelectPrim::Le => v[best] <= v[i],
                    };
                if !keep {
                    best = i;
                }
            }
            best
        })
        .collect()
}

/// The operand index each window of `x` selects, and the result's shape.
fn selections(
    name: &str,
    x: &HostArray,
    sel: SelectPrim,
    w: &WindowGeometry,
) -> Result<(Vec<usize>, Vec<usize>), IrError> {
    let (out, wsize, map) = window_map(name, x.shape(), w)?;
    if wsize == 0 {
        let n = out.iter().product();
        return Ok((out, vec![FILL; n]));
    }
    let idx = match lift(x.data()) {
        Lifted::B(v) => select(&v, &map, wsize, sel),
        Lifted::I(v) => select(&v, &map, wsize, sel),
        Lifted::U(v) => select(&v, &map, wsize, sel),
        Lifted::F32(v) => select(&v, &map, wsize, sel),
        Lifted::F64(v) => select(&v, &map, wsize, sel),
        Lifted::C(_) => {
            return Err(IrError::Eval(format!(
                "{name}: complex operands are not supported"
            )))
        }
    };
    Ok((out, idx))
}

/// `select_and_gather_add tangents operand`: per window of `operand`, the
/// tangent at the selected position (zero where the window is all padding).
pub fn select_and_gather_add(
    t: &HostArray,
    x: &HostArray,
    sel: SelectPrim,
    w: &WindowGeometry,
) -> Result<HostArray, IrError> {
    let name = "select_and_gather_add";
    if t.shape() != x.shape() || t.dtype() != x.dtype() {
        return Err(IrError::Eval(format!(
            "{name}: tangents and operand differ in type"
        )));
    }
    let (out, idx) = selections(name, x, sel, w)?;
    let zero = Storage::zeros(t.dtype(), 1);
    HostArray::new(out, take_or_fill(t.data(), &idx, &zero)?)
}

/// `select_and_scatter_add source operand`: adds each source element at the
/// position its window selects in `operand`.
pub fn select_and_scatter_add(
    src: &HostArray,
    x: &HostArray,
    sel: SelectPrim,
    w: &WindowGeometry,
) -> Result<HostArray, IrError> {
    let name = "select_and_scatter_add";
    let (out, idx) = selections(name, x, sel, w)?;
    if out != src.shape() {
        return Err(IrError::Eval(format!(
            "{name}: source has shape {:?}, the windows give {out:?}",
            src.shape()
        )));
    }
    let n = x.shape().iter().product();
    fn add<T: Copy>(acc: &mut [T], s: &[T], idx: &[usize], f: impl Fn(T, T) -> T) {
        for (&i, &v) in idx.iter().zip(s) {
            if i != FILL {
                acc[i] = f(acc[i], v);
            }
        }
    }
    let acc = match lift(src.data()) {
        Lifted::B(s) => {
            let mut a = vec![false; n];
            add(&mut a, &s, &idx, |p, q| p | q);
            Lifted::B(a)
        }
        Lifted::I(s) => {
            let mut a = vec![0; n];
            add(&mut a, &s, &idx, i64::wrapping_add);
            Lifted::I(a)
        }
        Lifted::U(s) => {
            let mut a = vec![0; n];
            add(&mut a, &s, &idx, u64::wrapping_add);
            Lifted::U(a)
        }
        Lifted::F32(s) => {
            let mut a = vec![0.0; n];
            add(&mut a, &s, &idx, |p, q| p + q);
            Lifted::F32(a)
        }
        Lifted::F64(s) => {
            let mut a = vec![0.0; n];
            add(&mut a, &s, &idx, |p, q| p + q);
            Lifted::F64(a)
        }
        Lifted::C(s) => {
            let mut a = vec![num_complex::Complex64::default(); n];
            add(&mut a, &s, &idx, |p, q| p + q);
            Lifted::C(a)
        }
    };
    HostArray::new(x.shape().to_vec(), lower(acc, src.dtype()))
}
