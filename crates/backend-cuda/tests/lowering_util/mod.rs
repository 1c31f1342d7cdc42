//! Shared helpers of the lowering tests: seeded random inputs and shapes,
//! running a jaxpr on `cuda-sim` and on the reference interpreter, and
//! comparing results (exactly, or within ulps for math functions and a
//! relative tolerance for reassociated sums).
//!
//! `JAXON_LOWERING_BACKEND=cuda` runs the same programs on the GPU instead
//! of the simulator (`cargo xtask gpu-check`'s script sets it), so the
//! differential tests check the real device against the interpreter.

#![allow(dead_code)]

pub mod complex;
mod nvrtc;
// Not every test binary that includes these helpers compiles kernels.
#[allow(unused_imports)]
pub use nvrtc::nvrtc_check;

use jaxon_backend_cuda::lower::{CudaBackend, CudaSimBackend};
use jaxon_ir::{parse_closed_jaxpr, Backend, ClosedJaxpr, DType, HostArray};

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    /// A random shape of rank `rank`: sizes 0, 1, and odd sizes that do not
    /// divide a warp or a block, at most `max` elements in all.
    pub fn shape(&mut self, rank: usize, max: usize) -> Vec<usize> {
        loop {
            let s: Vec<usize> = (0..rank)
                .map(|_| self.pick(&[1, 2, 3, 5, 7, 33, 37, 0]))
                .collect();
            if s.iter().product::<usize>() <= max {
                return s;
            }
        }
    }
}

/// How values are drawn.
#[derive(Clone, Copy, Debug)]
pub enum Dist {
    /// Floats in `[-r, r]`; integers in `-r..=r` (unsigned `0..=r`).
    Uniform(f64),
    /// Floats in `[lo, hi]`.
    Between(f64, f64),
}

pub fn random(rng: &mut Rng, dtype: DType, shape: &[usize], dist: Dist) -> HostArray {
    let n: usize = shape.iter().product();
    let (lo, hi) = match dist {
        Dist::Uniform(r) => (-r, r),
        Dist::Between(a, b) => (a, b),
    };
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            if dtype.is_float() {
                lo + (hi - lo) * rng.unit()
            } else if dtype.is_bool() {
                (rng.next() & 1) as f64
            } else if dtype.is_unsigned_int() {
                rng.range(0, hi as i64) as f64
            } else {
                rng.range(lo as i64, hi as i64) as f64
            }
        })
        .collect();
    HostArray::from_f64(dtype, shape, &vals).expect("shape matches")
}

pub fn parse(text: &str) -> ClosedJaxpr {
    parse_closed_jaxpr(text, Vec::new()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// `dtype[d0,d1,..]`.
pub fn ty(dtype: &str, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{dtype}[{}]", dims.join(","))
}

/// A tuple as JAX prints it: `(1,)`, `(0, 2)`, `()`.
pub fn tuple(xs: &[usize]) -> String {
    match xs {
        [] => "()".into(),
        [x] => format!("({x},)"),
        _ => format!(
            "({})",
            xs.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// How results are compared.
#[derive(Clone, Copy, Debug)]
pub enum Tol {
    Exact,
    Ulp(u64),
    /// `|a - b| <= rel * (1 + max |expected|)`.
    Rel(f64),
}

fn ulps(a: f64, b: f64, f32w: bool) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == b {
        return 0;
    }
    if f32w {
        let (x, y) = ((a as f32).to_bits() as i64, (b as f32).to_bits() as i64);
        let key = |v: i64| if v < 0x8000_0000 { v } else { 0x8000_0000 - v };
        (key(x) - key(y)).unsigned_abs()
    } else {
        let key = |v: u64| -> i128 {
            if v >> 63 == 0 {
                v as i128
            } else {
                -((v & !(1 << 63)) as i128)
            }
        };
        (key(a.to_bits()) - key(b.to_bits())).unsigned_abs() as u64
    }
}

/// Asserts `got` matches `want` within `tol`.
pub fn compare(what: &str, got: &HostArray, want: &HostArray, tol: Tol) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    let scale = 1.0
        + w.iter()
            .filter(|x| x.is_finite())
            .fold(0.0f64, |m, x| m.max(x.abs()));
    let f32w = want.dtype() != DType::F64;
    for i in 0..g.len() {
        let ok = match tol {
            Tol::Exact => (g[i].is_nan() && w[i].is_nan()) || g[i] == w[i],
            Tol::Ulp(u) => ulps(g[i], w[i], f32w) <= u,
            Tol::Rel(r) => {
                (g[i].is_nan() && w[i].is_nan()) || g[i] == w[i] || (g[i] - w[i]).abs() <= r * scale
            }
        };
        assert!(
            ok,
            "{what}: element {i} of {}: got {}, expected {} ({tol:?})",
            g.len(),
            g[i],
            w[i]
        );
    }
}

/// Runs `text` on `cuda-sim` and the interpreter with inputs from `seed`,
/// comparing every result.
pub fn check_with(text: &str, args: &[HostArray], tol: Tol) {
    let closed = parse(text);
    let want = jaxon_ir::eval_closed_jaxpr(&closed, args)
        .unwrap_or_else(|e| panic!("interpreter: {e}\n{text}"));
    let got =
        run_lowered(&closed, args).unwrap_or_else(|e| panic!("{}: {e}\n{text}", backend_name()));
    assert_eq!(got.len(), want.len(), "{text}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        compare(&format!("result {i} of\n{text}\n"), g, w, tol);
    }
}

/// Random inputs for every input of `text`.
pub fn args_for(text: &str, seed: u64, dist: Dist) -> Vec<HostArray> {
    let closed = parse(text);
    let mut rng = Rng::new(seed);
    closed
        .jaxpr
        .in_avals()
        .iter()
        .map(|a| {
            let shape = a.array().static_sizes().expect("static");
            random(&mut rng, a.dtype(), &shape, dist)
        })
        .collect()
}

/// [`check_with`] on random inputs.
pub fn check(text: &str, seed: u64, dist: Dist, tol: Tol) {
    let args = args_for(text, seed, dist);
    check_with(text, &args, tol);
}

/// Whether `JAXON_LOWERING_BACKEND=cuda` asks for the GPU.
fn on_gpu() -> bool {
    std::env::var("JAXON_LOWERING_BACKEND").is_ok_and(|b| b == "cuda")
}

/// The backend the differential tests run on: `cuda-sim`, or `cuda`.
pub fn backend_name() -> &'static str {
    if on_gpu() {
        "cuda"
    } else {
        "cuda-sim"
    }
}

/// Runs on `cuda-sim`, or on the GPU under `JAXON_LOWERING_BACKEND=cuda`.
pub fn run_lowered(
    closed: &ClosedJaxpr,
    args: &[HostArray],
) -> Result<Vec<HostArray>, jaxon_ir::IrError> {
    if on_gpu() {
        run_on(&CudaBackend::new(), closed, args)
    } else {
        run_on(&CudaSimBackend::new(), closed, args)
    }
}

fn run_on(
    b: &dyn Backend,
    closed: &ClosedJaxpr,
    args: &[HostArray],
) -> Result<Vec<HostArray>, jaxon_ir::IrError> {
    let exe = b.compile(closed)?;
    let bufs = args
        .iter()
        .map(|a| b.to_device(a))
        .collect::<Result<Vec<_>, _>>()?;
    exe.execute(&bufs)?.iter().map(|x| x.to_host()).collect()
}
/// Floats with ties, NaNs of both signs, infinities and signed zeros.
pub fn awkward(rng: &mut Rng, dtype: DType, shape: &[usize]) -> HostArray {
    let n: usize = shape.iter().product();
    let nan_neg = -f64::NAN;
    let vals: Vec<f64> = (0..n)
        .map(|_| match rng.range(0, 9) {
            0 => f64::NAN,
            1 => nan_neg,
            2 => 0.0,
            3 => -0.0,
            4 => rng.pick(&[f64::INFINITY, f64::NEG_INFINITY]),
            _ => rng.range(-4, 4) as f64 * 0.5,
        })
        .collect();
    HostArray::from_f64(dtype, shape, &vals).expect("array")
}

/// Runs a stateful jaxpr (named `what` in failures) on the backend and the
/// interpreter — refs as interpreter `Ref`s, their final values appended
/// to the results, the backends' calling convention — and compares every
/// result exactly.
pub fn check_state_closed(closed: &ClosedJaxpr, args: &[HostArray], what: &str) {
    use jaxon_ir::{Aval, Value};
    let vals: Vec<Value> = closed
        .jaxpr
        .in_avals()
        .iter()
        .zip(args)
        .map(|(a, x)| match a {
            Aval::Ref(_) => Value::new_ref(x.clone()),
            Aval::Array(_) => Value::Array(x.clone()),
        })
        .collect();
    let outs = jaxon_ir::eval_jaxpr(&closed.jaxpr, &[], &vals)
        .unwrap_or_else(|e| panic!("interpreter: {e}\n{what}"));
    let mut want: Vec<HostArray> = outs
        .into_iter()
        .map(|v| match v {
            Value::Array(a) => a,
            Value::Ref(_) => panic!("ref output"),
        })
        .collect();
    for v in &vals {
        if let Value::Ref(r) = v {
            want.push(r.lock().expect("lock").clone());
        }
    }
    let got =
        run_lowered(closed, args).unwrap_or_else(|e| panic!("{}: {e}\n{what}", backend_name()));
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        compare(&format!("result {i} of\n{what}\n"), g, w, Tol::Exact);
    }
}

/// JAX's text prints an integer-array index like a scalar one; the parser
/// reads scalars. Turns every dynamic index whose operand is not a scalar
/// into an array index.
pub fn with_array_indices(mut c: jaxon_ir::ClosedJaxpr) -> jaxon_ir::ClosedJaxpr {
    use jaxon_ir::primitive::{
        AddUpdateParams, GetParams, IndexEntry, IndexValue, State, SwapParams,
    };
    use jaxon_ir::Primitive;
    let j = std::sync::Arc::make_mut(&mut c.jaxpr);
    let vars = j.vars.clone();
    for e in &mut j.eqns {
        let ranks: Vec<usize> = e
            .inputs
            .iter()
            .map(|a| match a {
                jaxon_ir::Atom::Var(v) => vars[v.index()].shape().len(),
                jaxon_ir::Atom::Lit(_) => 0,
            })
            .collect();
        if let Primitive::State(
            State::Get(GetParams { indexers })
            | State::Swap(SwapParams { indexers })
            | State::AddUpdate(AddUpdateParams { indexers }),
        ) = &mut e.primitive
        {
            for ix in indexers {
                for en in &mut ix.entries {
                    if let IndexEntry::Int(IndexValue::Dynamic(k)) = *en {
                        if ranks[k] > 0 {
                            *en = IndexEntry::Array(k);
                        }
                    }
                }
            }
        }
    }
    c
}

/// `j` with every `pure_callback` and `debug_callback` (nested ones
/// included) calling `f`.
pub fn with_fn(j: &jaxon_ir::Jaxpr, f: &jaxon_ir::primitive::HostFn) -> jaxon_ir::Jaxpr {
    let mut out = j.clone();
    for e in &mut out.eqns {
        let mut p = e.primitive.map_sub_jaxprs(&mut |s| with_fn(s, f));
        match &mut p {
            jaxon_ir::Primitive::Callback(jaxon_ir::primitive::Callback::PureCallback(c)) => {
                c.callback = jaxon_ir::primitive::HostCallback::new("<test fn>", f.clone());
            }
            jaxon_ir::Primitive::Callback(jaxon_ir::primitive::Callback::DebugCallback(c)) => {
                c.callback = jaxon_ir::primitive::HostCallback::new("<test fn>", f.clone());
            }
            _ => {}
        }
        e.primitive = p;
    }
    out
}

/// `text` parsed, its callbacks calling `f` ([`with_fn`]).
pub fn closed_with(text: &str, f: &jaxon_ir::primitive::HostFn) -> ClosedJaxpr {
    let c = parse(text);
    ClosedJaxpr {
        jaxpr: std::sync::Arc::new(with_fn(&c.jaxpr, f)),
        consts: c.consts.clone(),
    }
}

/// Whether `body` (nested `if`, `for` and `while` bodies included) holds
/// a statement that `is` picks.
pub fn holds(
    body: &[jaxon_backend_cuda::kir::Stmt],
    is: &dyn Fn(&jaxon_backend_cuda::kir::Stmt) -> bool,
) -> bool {
    use jaxon_backend_cuda::kir::Stmt;
    body.iter().any(|s| {
        is(s)
            || match s {
                Stmt::If {
                    then, otherwise, ..
                } => holds(then, is) || holds(otherwise, is),
                Stmt::For { body, .. } | Stmt::While { body, .. } => holds(body, is),
                _ => false,
            }
    })
}
