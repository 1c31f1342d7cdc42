//! Checks of jaxprs with `Ref` inputs at the jaxpr level (the state
//! primitives cannot run eagerly): jvp against central differences of the
//! outputs and final ref contents, vmap against a loop of unbatched runs,
//! both with the reference interpreter. Shared by the `table_*` tests.

// Each test crate that includes this kit uses only part of it.
#![allow(dead_code)]

use jaxon_ir::primitive::{AddUpdateParams, GetParams, State, SwapParams};

pub mod eager;

use jaxon_ir::interp::{eval_jaxpr, Value};
use jaxon_ir::primitive::{IndexEntry, IndexValue};
use jaxon_ir::{parse_jaxpr, Aval, ClosedJaxpr, HostArray, Jaxpr, Primitive};
use jaxon_transforms::batch::batch_jaxpr;
use jaxon_transforms::jvp_jaxpr;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 53) as f64)
    }
}

fn shape_of(a: &Aval) -> Vec<usize> {
    a.array()
        .shape
        .iter()
        .map(|d| d.as_const().unwrap())
        .collect()
}

/// A random value for an input of type `a` with a leading `batch` axis.
fn random(a: &Aval, batch: Option<usize>, rng: &mut Rng) -> HostArray {
    let mut s = shape_of(a);
    if let Some(b) = batch {
        s.insert(0, b);
    }
    let n: usize = s.iter().product();
    let dt = a.array().dtype;
    let v: Vec<f64> = (0..n)
        .map(|_| {
            if dt.is_int() {
                (rng.next() * 7.0).floor() - 2.0
            } else {
                rng.next() * 4.0 - 2.0
            }
        })
        .collect();
    HostArray::from_f64(dt, &s, &v).unwrap()
}

pub fn is_ref(a: &Aval) -> bool {
    matches!(a, Aval::Ref(_))
}

/// Runs `j`; returns the outputs and then the final contents of each ref
/// input, all as f64 vectors.
pub fn run(j: &Jaxpr, consts: &[HostArray], args: &[HostArray]) -> Vec<Vec<f64>> {
    let avals: Vec<Aval> = j.invars.iter().map(|v| j.aval(*v).clone()).collect();
    let vals: Vec<Value> = args
        .iter()
        .zip(&avals)
        .map(|(x, a)| {
            if is_ref(a) {
                Value::new_ref(x.clone())
            } else {
                Value::Array(x.clone())
            }
        })
        .collect();
    let consts: Vec<Value> = consts.iter().cloned().map(Value::Array).collect();
    let outs = eval_jaxpr(j, &consts, &vals).unwrap();
    let mut res: Vec<Vec<f64>> = outs
        .into_iter()
        .map(|v| match v {
            Value::Array(a) => a.to_f64_vec(),
            Value::Ref(_) => panic!("ref output"),
        })
        .collect();
    for v in &vals {
        if let Value::Ref(r) = v {
            res.push(r.lock().unwrap().to_f64_vec());
        }
    }
    res
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: {x} vs {y}\n{a:?}\n{b:?}"
        );
    }
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

pub fn check_jvp(j: &Jaxpr, seed: u64) {
    let mut rng = Rng(seed);
    let avals: Vec<Aval> = j.invars.iter().map(|v| j.aval(*v).clone()).collect();
    let nonzero: Vec<bool> = avals.iter().map(|a| a.array().dtype.is_float()).collect();
    let closed = ClosedJaxpr::without_consts(j.clone());
    let (jj, out_nz) = jvp_jaxpr(&closed, &nonzero, &vec![true; j.outvars.len()]).unwrap();
    let x: Vec<HostArray> = avals.iter().map(|a| random(a, None, &mut rng)).collect();
    let t: Vec<HostArray> = avals.iter().map(|a| random(a, None, &mut rng)).collect();
    let mut args = x.clone();
    for i in 0..x.len() {
        if nonzero[i] {
            args.push(t[i].clone());
        }
    }
    let got = run(&jj.jaxpr, &jj.consts, &args);
    let eps = 1e-4;
    let shifted = |e: f64| -> Vec<HostArray> {
        x.iter()
            .zip(&t)
            .zip(&nonzero)
            .map(|((x, t), nz)| if *nz { axpy(x, t, e) } else { x.clone() })
            .collect()
    };
    let plus = run(j, &[], &shifted(eps));
    let minus = run(j, &[], &shifted(-eps));
    let want0 = run(j, &[], &x);
    let n_out = j.outvars.len();
    let n_refs = avals.iter().filter(|a| is_ref(a)).count();
    // Layout of `got`: primal outs, tangent outs, then primal refs and
    // tangent refs (tangent refs are inputs too).
    for i in 0..n_out {
        close(&got[i], &want0[i], 1e-12, "primal out");
        assert!(out_nz[i], "output {i} should carry a tangent");
        let fd: Vec<f64> = plus[i]
            .iter()
            .zip(&minus[i])
            .map(|(a, b)| (a - b) / (2.0 * eps))
            .collect();
        close(&got[n_out + i], &fd, 1e-6, "tangent out");
    }
    let refs_at = 2 * n_out;
    let ref_nonzero: Vec<bool> = avals
        .iter()
        .zip(&nonzero)
        .filter(|(a, _)| is_ref(a))
        .map(|(_, nz)| *nz)
        .collect();
    let mut tangent_ref = refs_at + n_refs;
    for r in 0..n_refs {
        close(&got[refs_at + r], &want0[n_out + r], 1e-12, "primal ref");
        if ref_nonzero[r] {
            let fd: Vec<f64> = plus[n_out + r]
                .iter()
                .zip(&minus[n_out + r])
                .map(|(a, b)| (a - b) / (2.0 * eps))
                .collect();
            close(&got[tangent_ref], &fd, 1e-6, "tangent ref");
            tangent_ref += 1;
        }
    }
}

/// `i`-th slice along axis 0.
fn take0(x: &HostArray, i: usize) -> HostArray {
    let s = &x.shape()[1..];
    let n: usize = s.iter().product();
    let v = x.to_f64_vec()[i * n..(i + 1) * n].to_vec();
    HostArray::from_f64(x.dtype(), s, &v).unwrap()
}

pub fn check_vmap(j: &Jaxpr, batched: &[bool], seed: u64) {
    let b = 3;
    let mut rng = Rng(seed);
    let avals: Vec<Aval> = j.invars.iter().map(|v| j.aval(*v).clone()).collect();
    let closed = ClosedJaxpr::without_consts(j.clone());
    let (bj, out_b) = batch_jaxpr(&closed, batched, b, &vec![true; j.outvars.len()])
        .unwrap_or_else(|e| panic!("batch_jaxpr {batched:?}: {e}"));
    let x: Vec<HostArray> = avals
        .iter()
        .zip(batched)
        .map(|(a, bt)| random(a, bt.then_some(b), &mut rng))
        .collect();
    let got = run(&bj.jaxpr, &bj.consts, &x);
    // The loop runs on copies; unbatched refs are shared across iterations.
    let mut shared: Vec<HostArray> = x.clone();
    let mut want: Vec<Vec<f64>> = vec![Vec::new(); got.len()];
    let n_out = j.outvars.len();
    for i in 0..b {
        let args: Vec<HostArray> = shared
            .iter()
            .zip(batched)
            .map(|(x, bt)| if *bt { take0(x, i) } else { x.clone() })
            .collect();
        let vals: Vec<Value> = args
            .iter()
            .zip(&avals)
            .map(|(x, a)| {
                if is_ref(a) {
                    Value::new_ref(x.clone())
                } else {
                    Value::Array(x.clone())
                }
            })
            .collect();
        let outs = eval_jaxpr(j, &[], &vals).unwrap();
        for (k, o) in outs.into_iter().enumerate() {
            let Value::Array(o) = o else { panic!() };
            assert!(out_b[k]);
            want[k].extend(o.to_f64_vec());
        }
        let mut r = 0;
        for (k, v) in vals.iter().enumerate() {
            if let Value::Ref(rf) = v {
                let now = rf.lock().unwrap().clone();
                if batched[k] {
                    want[n_out + r].extend(now.to_f64_vec());
                } else {
                    shared[k] = now;
                }
                r += 1;
            }
        }
    }
    let mut r = 0;
    for (k, a) in avals.iter().enumerate() {
        if is_ref(a) {
            if !batched[k] {
                want[n_out + r] = shared[k].to_f64_vec();
            }
            r += 1;
        }
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        close(g, w, 1e-12, &format!("vmap {batched:?} result {k}"));
    }
}

/// Every batching pattern with at least one batched input.
pub fn check_all_vmaps(j: &Jaxpr, seed: u64, allow_unbatched_ref: bool) {
    let avals: Vec<Aval> = j.invars.iter().map(|v| j.aval(*v).clone()).collect();
    let n = avals.len();
    for mask in 1..(1u32 << n) {
        let batched: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
        let unbatched_ref = avals.iter().zip(&batched).any(|(a, b)| is_ref(a) && !b);
        if unbatched_ref && !allow_unbatched_ref {
            continue;
        }
        check_vmap(j, &batched, seed + mask as u64);
    }
}

/// Parses `text`; the printed form does not tell an integer index from an
/// integer-array index, so non-scalar index operands become array indices.
pub fn parse(text: &str) -> Jaxpr {
    let mut j = parse_jaxpr(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let vars = j.vars.clone();
    for eqn in &mut j.eqns {
        let inputs = eqn.inputs.clone();
        if let Primitive::State(State::Get(GetParams { indexers }))
        | Primitive::State(State::Swap(SwapParams { indexers }))
        | Primitive::State(State::AddUpdate(AddUpdateParams { indexers })) = &mut eqn.primitive
        {
            for e in indexers.iter_mut().flat_map(|ix| ix.entries.iter_mut()) {
                if let IndexEntry::Int(IndexValue::Dynamic(k)) = *e {
                    if let jaxon_ir::Atom::Var(v) = &inputs[k] {
                        if !vars[v.index()].array().shape.is_empty() {
                            *e = IndexEntry::Array(k);
                        }
                    }
                }
            }
        }
    }
    j
}

/// Element `i` along `axis`.
fn take_axis(x: &[f64], shape: &[usize], axis: usize, i: usize) -> Vec<f64> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        let base = (o * shape[axis] + i) * inner;
        out.extend_from_slice(&x[base..base + inner]);
    }
    out
}

/// vmap with each input batched along `axes[k]` (`None`: shared), refs
/// included, staged with `batch_flat` and run by the interpreter, against a
/// loop of unbatched runs. Refs must be batched (writes) or only read.
pub fn check_vmap_axes(j: &Jaxpr, axes: &[Option<usize>], seed: u64) {
    use jaxon_trace::stage::{close as close_staged, trace_flat, StageMode};
    let b = 2;
    let mut rng = Rng(seed);
    let avals: Vec<Aval> = j.invars.iter().map(|v| j.aval(*v).clone()).collect();
    let closed = ClosedJaxpr::without_consts(j.clone());
    // Per-element inputs, then the batched ones assembled from them.
    let per: Vec<Vec<HostArray>> = (0..b)
        .map(|_| avals.iter().map(|a| random(a, None, &mut rng)).collect())
        .collect();
    let mut bavals = avals.clone();
    let mut args = Vec::new();
    for (k, a) in avals.iter().enumerate() {
        match axes[k] {
            None => args.push(per[0][k].clone()),
            Some(ax) => {
                let s = shape_of(a);
                let inner: usize = s[ax..].iter().product();
                let outer: usize = s[..ax].iter().product();
                let mut v = Vec::new();
                for o in 0..outer {
                    for p in &per {
                        v.extend_from_slice(&p[k].to_f64_vec()[o * inner..(o + 1) * inner]);
                    }
                }
                let mut bs = s.clone();
                bs.insert(ax, b);
                args.push(HostArray::from_f64(a.array().dtype, &bs, &v).unwrap());
                let shape = match &mut bavals[k] {
                    Aval::Array(x) => &mut x.shape,
                    Aval::Ref(r) => &mut r.inner.shape,
                };
                shape.insert(ax, jaxon_ir::Dim::Const(b));
            }
        }
    }
    let mut out_dims = Vec::new();
    let staged = trace_flat(StageMode::Base, &bavals, |ins| {
        let outs = jaxon_transforms::batch::batch_flat(
            |xs| jaxon_trace::interpret::eval_closed_jaxpr(&closed, &xs),
            &ins,
            axes,
            b,
            None,
        )?;
        Ok(outs
            .into_iter()
            .map(|(v, d)| {
                out_dims.push(d);
                v
            })
            .collect())
    })
    .unwrap_or_else(|e| panic!("vmap {axes:?}: {e}"));
    let bj = close_staged(staged).unwrap();
    let got = run(&bj.jaxpr, &bj.consts, &args);
    let n_out = j.outvars.len();
    let mut shared: Vec<HostArray> = per[0].clone();
    for (i, p) in per.iter().enumerate() {
        let xi: Vec<HostArray> = (0..avals.len())
            .map(|k| {
                if axes[k].is_some() {
                    p[k].clone()
                } else {
                    shared[k].clone()
                }
            })
            .collect();
        let vals: Vec<Value> = xi
            .iter()
            .zip(&avals)
            .map(|(x, a)| {
                if is_ref(a) {
                    Value::new_ref(x.clone())
                } else {
                    Value::Array(x.clone())
                }
            })
            .collect();
        let outs = eval_jaxpr(j, &[], &vals).unwrap();
        for (k, o) in outs.into_iter().enumerate() {
            let Value::Array(o) = o else {
                panic!("ref output")
            };
            let mut sh = o.shape().to_vec();
            let g = match out_dims[k] {
                Some(d) => {
                    sh.insert(d, b);
                    take_axis(&got[k], &sh, d, i)
                }
                None => got[k].clone(),
            };
            close(
                &g,
                &o.to_f64_vec(),
                1e-12,
                &format!("vmap {axes:?} out {k} elt {i}"),
            );
        }
        let mut r = 0;
        for (k, v) in vals.iter().enumerate() {
            if let Value::Ref(rf) = v {
                let now = rf.lock().unwrap().clone();
                match axes[k] {
                    Some(ax) => {
                        let mut sh = now.shape().to_vec();
                        sh.insert(ax, b);
                        let g = take_axis(&got[n_out + r], &sh, ax, i);
                        close(
                            &g,
                            &now.to_f64_vec(),
                            1e-12,
                            &format!("vmap {axes:?} ref {k} elt {i}"),
                        );
                    }
                    None => shared[k] = now,
                }
                r += 1;
            }
        }
    }
}
