//! Eager checks of one jaxpr on concrete f64 inputs: jvp against central
//! differences, the dot-product test of the transpose, and vmap against a
//! loop, for the per-primitive table.

use jaxon_ir::{parse_jaxpr, ClosedJaxpr, DType, HostArray};
use jaxon_trace::error::Error;
use jaxon_trace::interpret::eval_closed_jaxpr;
use jaxon_trace::Array;
use jaxon_transforms::batch::batch_flat;
use jaxon_transforms::jvp::jvp_flat;
use jaxon_transforms::linearize::linearize_flat;

// ---- host helpers --------------------------------------------------------

pub struct Rng(pub u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 53) as f64)
    }
}

fn random(dt: DType, shape: &[usize], lo: f64, hi: f64, rng: &mut Rng) -> HostArray {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            if dt.is_float() {
                lo + (hi - lo) * rng.next()
            } else if dt == DType::Bool {
                (rng.next() < 0.5) as i32 as f64
            } else {
                // Index-like and int operands: small, mostly in range.
                (rng.next() * 4.0).floor()
            }
        })
        .collect();
    HostArray::from_f64(dt, shape, &v).unwrap()
}

fn host(x: &Array) -> HostArray {
    x.try_to_host("test").unwrap()
}

fn f64s(x: &Array) -> Vec<f64> {
    host(x).to_f64_vec()
}

fn arr(h: &HostArray) -> Array {
    Array::from_host(h.clone())
}

fn axpy(x: &HostArray, t: &HostArray, e: f64) -> HostArray {
    let v: Vec<f64> = x
        .to_f64_vec()
        .iter()
        .zip(t.to_f64_vec())
        .map(|(a, b)| a + e * b)
        .collect();
    HostArray::from_f64(x.dtype(), x.shape(), &v).unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths {a:?} vs {b:?}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let ok = (x - y).abs() <= tol * (1.0 + y.abs()) || (x.is_nan() && y.is_nan());
        assert!(ok, "{what}[{i}]: {x} vs {y}\n got {a:?}\nwant {b:?}");
    }
}

/// `xs` stacked along a new axis `axis`.
fn stack(xs: &[HostArray], axis: usize) -> HostArray {
    let s = xs[0].shape().to_vec();
    let outer: usize = s[..axis].iter().product();
    let inner: usize = s[axis..].iter().product();
    let vals: Vec<Vec<f64>> = xs.iter().map(HostArray::to_f64_vec).collect();
    let mut out = Vec::new();
    for o in 0..outer {
        for v in &vals {
            out.extend_from_slice(&v[o * inner..(o + 1) * inner]);
        }
    }
    let mut shape = s;
    shape.insert(axis, xs.len());
    HostArray::from_f64(xs[0].dtype(), &shape, &out).unwrap()
}

/// Element `i` along `axis`.
fn take(x: &HostArray, axis: usize, i: usize) -> Vec<f64> {
    let s = x.shape();
    let outer: usize = s[..axis].iter().product();
    let inner: usize = s[axis + 1..].iter().product();
    let v = x.to_f64_vec();
    let mut out = Vec::new();
    for o in 0..outer {
        let base = (o * s[axis] + i) * inner;
        out.extend_from_slice(&v[base..base + inner]);
    }
    out
}

// ---- checks ----------------------------------------------------------------

pub struct Inst {
    pub closed: ClosedJaxpr,
    pub x: Vec<HostArray>,
}

pub fn instance(text: &str, lo: f64, hi: f64, seed: u64) -> Inst {
    let j = parse_jaxpr(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut rng = Rng(seed);
    let x = j
        .invars
        .iter()
        .map(|v| {
            let a = j.aval(*v).array();
            let s: Vec<usize> = a.shape.iter().map(|d| d.as_const().unwrap()).collect();
            random(a.dtype, &s, lo, hi, &mut rng)
        })
        .collect();
    Inst {
        closed: ClosedJaxpr::without_consts(j),
        x,
    }
}

fn eval(c: &ClosedJaxpr, x: &[HostArray]) -> Vec<HostArray> {
    let a: Vec<Array> = x.iter().map(arr).collect();
    eval_closed_jaxpr(c, &a).unwrap().iter().map(host).collect()
}

/// Primal outputs, tangent outputs (`None`: zero) and the input tangents.
pub type JvpOut = (Vec<HostArray>, Vec<Option<Vec<f64>>>, Vec<HostArray>);

pub fn jvp(inst: &Inst, rng: &mut Rng) -> Result<JvpOut, Error> {
    let t: Vec<HostArray> = inst
        .x
        .iter()
        .map(|x| random(x.dtype(), x.shape(), -1.0, 1.0, rng))
        .collect();
    let prim: Vec<Array> = inst.x.iter().map(arr).collect();
    let tan: Vec<Option<Array>> = t
        .iter()
        .map(|t| t.dtype().is_float().then(|| arr(t)))
        .collect();
    let c = &inst.closed;
    let (p, tout) = jvp_flat(|ins| eval_closed_jaxpr(c, &ins), &prim, &tan)?;
    Ok((
        p.iter().map(host).collect(),
        tout.iter().map(|t| t.as_ref().map(f64s)).collect(),
        t,
    ))
}

pub fn check_jvp(inst: &Inst, rng: &mut Rng, zero: bool, what: &str) {
    let (p, tout, t) = jvp(inst, rng).unwrap_or_else(|e| panic!("{what}: jvp: {e}"));
    let want = eval(&inst.closed, &inst.x);
    for (g, w) in p.iter().zip(&want) {
        close(
            &g.to_f64_vec(),
            &w.to_f64_vec(),
            1e-12,
            &format!("{what}: primal"),
        );
    }
    let eps = 1e-6;
    let shift = |e: f64| -> Vec<HostArray> {
        inst.x
            .iter()
            .zip(&t)
            .map(|(x, t)| {
                if x.dtype().is_float() {
                    axpy(x, t, e)
                } else {
                    x.clone()
                }
            })
            .collect()
    };
    let plus = eval(&inst.closed, &shift(eps));
    let minus = eval(&inst.closed, &shift(-eps));
    for (k, tk) in tout.iter().enumerate() {
        let fd: Vec<f64> = if want[k].dtype().is_float() {
            plus[k]
                .to_f64_vec()
                .iter()
                .zip(minus[k].to_f64_vec())
                .map(|(a, b)| (a - b) / (2.0 * eps))
                .collect()
        } else {
            vec![0.0; want[k].len()]
        };
        let got = tk.clone().unwrap_or_else(|| vec![0.0; want[k].len()]);
        if zero {
            close(
                &got,
                &vec![0.0; got.len()],
                0.0,
                &format!("{what}: zero tangent {k}"),
            );
        } else {
            close(
                &got,
                &fd,
                1e-5,
                &format!("{what}: tangent {k} vs central differences"),
            );
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub fn check_transpose(inst: &Inst, rng: &mut Rng, what: &str) -> Result<(), Error> {
    let prim: Vec<Array> = inst.x.iter().map(arr).collect();
    let c = &inst.closed;
    let lin = linearize_flat(|ins| eval_closed_jaxpr(c, &ins), &prim)?;
    let ts: Vec<HostArray> = inst
        .x
        .iter()
        .filter(|x| x.dtype().is_float())
        .map(|x| random(x.dtype(), x.shape(), -1.0, 1.0, rng))
        .collect();
    let jt = lin.jvp(&ts.iter().map(arr).collect::<Vec<_>>())?;
    let cts: Vec<HostArray> = jt
        .iter()
        .map(|y| {
            let h = host(y);
            random(h.dtype(), h.shape(), -1.0, 1.0, rng)
        })
        .collect();
    let jtc = lin.vjp(&cts.iter().map(arr).collect::<Vec<_>>())?;
    let mut lhs = 0.0;
    for (ct, y) in cts.iter().zip(&jt) {
        if ct.dtype().is_float() {
            lhs += dot(&ct.to_f64_vec(), &f64s(y));
        }
    }
    let mut rhs = 0.0;
    let mut ti = ts.iter();
    for (x, g) in inst.x.iter().zip(&jtc) {
        if x.dtype().is_float() {
            rhs += dot(&ti.next().unwrap().to_f64_vec(), &f64s(g));
        }
    }
    close(
        &[lhs],
        &[rhs],
        1e-9,
        &format!("{what}: <ct, J t> vs <J^T ct, t>"),
    );
    Ok(())
}

pub fn check_vmap(text: &str, lo: f64, hi: f64, seed: u64, what: &str) {
    let n = 2;
    let insts: Vec<Inst> = (0..n)
        .map(|b| instance(text, lo, hi, seed + 1000 * b as u64))
        .collect();
    let c = &insts[0].closed;
    let nin = insts[0].x.len();
    let per_b: Vec<Vec<HostArray>> = insts.iter().map(|i| eval(c, &i.x)).collect();
    // Batch dims: all at 0; all last; the first absent (then shared by every
    // element) and the rest at 0; the first last and the rest absent.
    let configs: Vec<Vec<Option<usize>>> = vec![
        insts[0].x.iter().map(|_| Some(0)).collect(),
        insts[0].x.iter().map(|x| Some(x.ndim())).collect(),
        (0..nin).map(|i| (i > 0).then_some(0)).collect(),
        insts[0]
            .x
            .iter()
            .enumerate()
            .map(|(i, x)| (i == 0).then_some(x.ndim()))
            .collect(),
    ];
    for dims in configs {
        if dims.iter().all(Option::is_none) {
            continue;
        }
        let args: Vec<Array> = (0..nin)
            .map(|k| match dims[k] {
                Some(ax) => arr(&stack(
                    &insts.iter().map(|i| i.x[k].clone()).collect::<Vec<_>>(),
                    ax,
                )),
                None => arr(&insts[0].x[k]),
            })
            .collect();
        let outs = batch_flat(|ins| eval_closed_jaxpr(c, &ins), &args, &dims, n, None)
            .unwrap_or_else(|e| panic!("{what}: vmap {dims:?}: {e}"));
        for b in 0..n {
            // The loop's unbatched call for element b.
            let xb: Vec<HostArray> = (0..nin)
                .map(|k| {
                    if dims[k].is_some() {
                        insts[b].x[k].clone()
                    } else {
                        insts[0].x[k].clone()
                    }
                })
                .collect();
            let want = if dims.iter().all(Option::is_some) {
                per_b[b].clone()
            } else {
                eval(c, &xb)
            };
            for (k, (o, d)) in outs.iter().enumerate() {
                let got = match d {
                    Some(ax) => take(&host(o), *ax, b),
                    None => f64s(o),
                };
                close(
                    &got,
                    &want[k].to_f64_vec(),
                    1e-12,
                    &format!("{what}: vmap {dims:?} out {k} elt {b}"),
                );
            }
        }
    }
}
