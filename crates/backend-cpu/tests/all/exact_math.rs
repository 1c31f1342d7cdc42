//! `CpuBackend::with_exact_math(true)`: every function the backend
//! otherwise approximates inline is the interpreter's to the bit, alone
//! and inside fused groups, in every float dtype, on random inputs spread
//! over each function's range and on the special values (zeros, infinities,
//! NaN, arguments past `sin`'s fast reduction, overflow and underflow).

use crate::common::{parse, run, Rng};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{DType, HostArray};

/// Every unary function that has an inline approximation.
const UNARY: [&str; 20] = [
    "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erf_inv",
];

const TYPES: [(DType, &str); 4] = [
    (DType::F32, "f32"),
    (DType::F64, "f64"),
    (DType::F16, "f16"),
    (DType::BF16, "bf16"),
];

/// `n` inputs: special values, then random magnitudes from 1e-8 to 1e12
/// of both signs and random values in [-1, 1].
fn inputs(rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut xs = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e9,
        -3.0e5,
        88.8,
        -104.0,
        710.0,
        1e-40,
    ];
    while xs.len() < n {
        let sign = if rng.next() & 1 == 0 { 1.0 } else { -1.0 };
        let x = if rng.next().is_multiple_of(3) {
            2.0 * rng.unit() - 1.0
        } else {
            sign * 10f64.powf(20.0 * rng.unit() - 8.0)
        };
        xs.push(x);
    }
    xs
}

/// Bit equality of two results, any NaN equal to any NaN.
fn assert_same_bits(got: &HostArray, want: &HostArray, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    for (k, (g, w)) in got.to_f64_vec().iter().zip(want.to_f64_vec()).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
        assert!(same, "{what}[{k}]: cpu {g:e}, interpreter {w:e}");
    }
}

fn exact() -> CpuBackend {
    CpuBackend::with_threads(1).with_exact_math(true)
}

#[test]
fn every_approximated_function_is_the_interpreters_to_the_bit() {
    let mut rng = Rng::new(23);
    let n = 301;
    let cpu = exact();
    for (dt, ty) in TYPES {
        let xs = inputs(&mut rng, n);
        let arg = HostArray::from_f64(dt, &[n], &xs).expect("array");
        for f in UNARY {
            let text = format!("{{ lambda ; a:{ty}[{n}]. let b:{ty}[{n}] = {f} a in (b,) }}");
            let closed = parse(&text);
            let want = run(&InterpreterBackend, &closed, std::slice::from_ref(&arg));
            let got = run(&cpu, &closed, std::slice::from_ref(&arg));
            assert_same_bits(&got[0], &want[0], &format!("{f} {ty}"));
        }
        for f in ["pow", "atan2"] {
            let ys = inputs(&mut rng, n);
            let brg = HostArray::from_f64(dt, &[n], &ys).expect("array");
            let text = format!(
                "{{ lambda ; a:{ty}[{n}] b:{ty}[{n}]. let c:{ty}[{n}] = {f} a b in (c,) }}"
            );
            let closed = parse(&text);
            let args = [arg.clone(), brg];
            let want = run(&InterpreterBackend, &closed, &args);
            let got = run(&cpu, &closed, &args);
            assert_same_bits(&got[0], &want[0], &format!("{f} {ty}"));
        }
    }
}

/// Fused chains (the eltwise workload's, an unrolled `sin` iteration that
/// amplifies any one-ulp difference, a softmax-like row program) are the
/// interpreter's bit for bit where the default inline math is not.
#[test]
fn fused_chains_are_the_interpreters_to_the_bit() {
    let mut rng = Rng::new(5);
    let cpu = exact();
    for ty in ["f32", "f64"] {
        let chain = "{ lambda ; a:T[1031]. let b:T[1031] = mul a 2.0:T[]; \
                     c:T[1031] = add b 1.0:T[]; d:T[1031] = tanh c; e:T[1031] = mul d a; \
                     f:T[1031] = neg a; g:T[1031] = exp f; h:T[1031] = sub e g; \
                     i:T[1031] = sin h; j:T[1031] = mul i 3.7:T[]; k:T[1031] = sin j; \
                     l:T[1031] = mul k 3.7:T[]; m:T[1031] = sin l; n:T[1031] = logistic m; \
                     o:T[1031] = pow n a; p:T[1031] = atan2 o b in (p,) }"
            .replace('T', ty);
        let rows = "{ lambda ; a:T[7,300]. let b:T[7] = reduce_max[axes=(1,) out_sharding=None] a; \
                    c:T[7,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(7, 1) sharding=None] b; \
                    d:T[7,300] = sub a c; e:T[7,300] = exp d; \
                    f:T[7,300] = log1p e; g:T[7,300] = cosh f in (g,) }"
            .replace('T', ty);
        for (text, shape) in [(chain, vec![1031]), (rows, vec![7, 300])] {
            let closed = parse(&text);
            let n: usize = shape.iter().product();
            let xs: Vec<f64> = (0..n).map(|_| 6.0 * rng.unit() - 3.0).collect();
            let dt = if ty == "f32" { DType::F32 } else { DType::F64 };
            let arg = HostArray::from_f64(dt, &shape, &xs).expect("array");
            let want = run(&InterpreterBackend, &closed, std::slice::from_ref(&arg));
            let got = run(&cpu, &closed, std::slice::from_ref(&arg));
            assert_same_bits(&got[0], &want[0], &format!("{ty} {text}"));
        }
    }
}
