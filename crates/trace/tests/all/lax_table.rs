//! Every elementwise `lax` function, eager and under `jit`, against f64
//! math on random inputs: a table that fails when a function is missing.

use jaxon_trace::{catch, jit, lax, Array};

fn rand(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

type Unary = fn(&Array) -> jaxon_trace::Result<Array>;

/// Name, function, f64 oracle, input range.
type UnaryCase = (&'static str, Unary, fn(f64) -> f64, f64, f64);

fn erf(x: f64) -> f64 {
    // Abramowitz–Stegun 7.1.26 is too coarse for an oracle; integrate the
    // series instead (|x| <= 2 here).
    let mut term = x;
    let mut sum = x;
    for n in 1..60 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn unary_lax_functions_match_f64_math_eager_and_jitted() {
    let table: Vec<UnaryCase> = vec![
        ("neg", lax::neg, |x| -x, -3.0, 3.0),
        ("sign", lax::sign, f64::signum, -3.0, 3.0),
        ("floor", lax::floor, f64::floor, -3.0, 3.0),
        ("ceil", lax::ceil, f64::ceil, -3.0, 3.0),
        ("exp", lax::exp, f64::exp, -3.0, 3.0),
        ("exp2", lax::exp2, f64::exp2, -3.0, 3.0),
        ("log", lax::log, f64::ln, 0.1, 5.0),
        ("log1p", lax::log1p, f64::ln_1p, -0.5, 5.0),
        ("expm1", lax::expm1, f64::exp_m1, -3.0, 3.0),
        ("tanh", lax::tanh, f64::tanh, -3.0, 3.0),
        (
            "logistic",
            lax::logistic,
            |x| 1.0 / (1.0 + (-x).exp()),
            -5.0,
            5.0,
        ),
        ("sin", lax::sin, f64::sin, -3.0, 3.0),
        ("cos", lax::cos, f64::cos, -3.0, 3.0),
        ("tan", lax::tan, f64::tan, -1.2, 1.2),
        ("asin", lax::asin, f64::asin, -0.9, 0.9),
        ("acos", lax::acos, f64::acos, -0.9, 0.9),
        ("atan", lax::atan, f64::atan, -3.0, 3.0),
        ("sinh", lax::sinh, f64::sinh, -3.0, 3.0),
        ("cosh", lax::cosh, f64::cosh, -3.0, 3.0),
        ("asinh", lax::asinh, f64::asinh, -3.0, 3.0),
        ("acosh", lax::acosh, f64::acosh, 1.1, 4.0),
        ("atanh", lax::atanh, f64::atanh, -0.9, 0.9),
        ("sqrt", lax::sqrt, f64::sqrt, 0.0, 4.0),
        ("rsqrt", lax::rsqrt, |x| 1.0 / x.sqrt(), 0.1, 4.0),
        ("cbrt", lax::cbrt, f64::cbrt, -4.0, 4.0),
        ("abs", lax::abs, f64::abs, -3.0, 3.0),
        ("erf", lax::erf, erf, -2.0, 2.0),
        ("erfc", lax::erfc, |x| 1.0 - erf(x), -2.0, 2.0),
        ("square", lax::square, |x| x * x, -3.0, 3.0),
        ("stop_gradient", lax::stop_gradient, |x| x, -3.0, 3.0),
    ];
    for (i, (name, f, oracle, lo, hi)) in table.into_iter().enumerate() {
        let xs = rand(17, i as u64 + 1, lo, hi);
        let x = Array::from_vec(xs.clone(), &[17]);
        let eager = catch(|| f(&x)).unwrap().unwrap().to_vec::<f64>();
        let jitted = jit(move |x: Array| f(&x).unwrap())
            .call(x)
            .unwrap()
            .to_vec::<f64>();
        for ((e, j), x) in eager.iter().zip(&jitted).zip(&xs) {
            let want = oracle(*x);
            assert!(
                (e - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "{name}({x}) = {e}, want {want}"
            );
            assert_eq!(e.to_bits(), j.to_bits(), "{name}: eager and jit differ");
        }
    }
}

type Binary = fn(&Array, &Array) -> jaxon_trace::Result<Array>;

/// Name, function, f64 oracle.
type BinaryCase = (&'static str, Binary, fn(f64, f64) -> f64);

#[test]
fn binary_lax_functions_match_f64_math_eager_and_jitted() {
    let table: Vec<BinaryCase> = vec![
        ("add", lax::add, |a, b| a + b),
        ("sub", lax::sub, |a, b| a - b),
        ("mul", lax::mul, |a, b| a * b),
        ("div", lax::div, |a, b| a / b),
        ("rem", lax::rem, |a, b| a % b),
        ("pow", lax::pow, f64::powf),
        ("max", lax::max, f64::max),
        ("min", lax::min, f64::min),
        ("atan2", lax::atan2, f64::atan2),
        (
            "eq",
            |a, b| {
                lax::eq(a, b)
                    .and_then(|c| lax::convert_element_type(&c, jaxon_ir::DType::F64, false))
            },
            |a, b| (a == b) as u8 as f64,
        ),
        (
            "lt",
            |a, b| {
                lax::lt(a, b)
                    .and_then(|c| lax::convert_element_type(&c, jaxon_ir::DType::F64, false))
            },
            |a, b| (a < b) as u8 as f64,
        ),
        (
            "ge",
            |a, b| {
                lax::ge(a, b)
                    .and_then(|c| lax::convert_element_type(&c, jaxon_ir::DType::F64, false))
            },
            |a, b| (a >= b) as u8 as f64,
        ),
    ];
    for (i, (name, f, oracle)) in table.into_iter().enumerate() {
        let a = rand(9, 100 + i as u64, 0.2, 3.0);
        let mut b = rand(9, 200 + i as u64, 0.2, 3.0);
        b[3] = a[3];
        let (x, y) = (
            Array::from_vec(a.clone(), &[9]),
            Array::from_vec(b.clone(), &[9]),
        );
        let eager = catch(|| f(&x, &y)).unwrap().unwrap().to_vec::<f64>();
        let jitted = jit(move |(x, y): (Array, Array)| f(&x, &y).unwrap())
            .call((x, y))
            .unwrap()
            .to_vec::<f64>();
        for k in 0..9 {
            let want = oracle(a[k], b[k]);
            assert!(
                (eager[k] - want).abs() <= 1e-12 * (1.0 + want.abs()),
                "{name}: {} vs {want}",
                eager[k]
            );
            assert_eq!(
                eager[k].to_bits(),
                jitted[k].to_bits(),
                "{name}: eager and jit differ"
            );
        }
    }
}

#[test]
fn total_order_comparisons_match_total_cmp_eager_and_jitted() {
    let specials = [
        -f64::NAN,
        f64::NEG_INFINITY,
        -2.5,
        -0.0,
        0.0,
        1e-300,
        2.5,
        f64::INFINITY,
        f64::NAN,
    ];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for x in specials {
        for y in specials {
            a.push(x);
            b.push(y);
        }
    }
    a.extend(rand(20, 7, -3.0, 3.0));
    b.extend(rand(20, 8, -3.0, 3.0));
    let n = a.len();
    type Case = (&'static str, Binary, fn(f64, f64) -> bool);
    let cases: [Case; 2] = [
        ("lt_to", lax::lt_to, |x, y| x.total_cmp(&y).is_lt()),
        ("le_to", lax::le_to, |x, y| x.total_cmp(&y).is_le()),
    ];
    for (name, f, oracle) in cases {
        let (x, y) = (
            Array::from_vec(a.clone(), &[n]),
            Array::from_vec(b.clone(), &[n]),
        );
        let eager = catch(|| f(&x, &y)).unwrap().unwrap().to_vec::<bool>();
        let jitted = jit(move |(x, y): (Array, Array)| f(&x, &y).unwrap())
            .call((x, y))
            .unwrap()
            .to_vec::<bool>();
        for k in 0..n {
            let want = oracle(a[k], b[k]);
            assert_eq!(eager[k], want, "{name}({}, {})", a[k], b[k]);
            assert_eq!(jitted[k], want, "{name}({}, {}) jitted", a[k], b[k]);
        }
    }
}

#[test]
fn bit_counts_match_integer_methods_eager_and_jitted() {
    let xs: Vec<i32> = rand(31, 9, -1e9, 1e9)
        .into_iter()
        .map(|v| v as i32)
        .chain([0, -1, 1, i32::MIN, i32::MAX])
        .collect();
    type Case = (&'static str, Unary, fn(i32) -> i32);
    let cases: [Case; 2] = [
        ("population_count", lax::population_count, |v| {
            v.count_ones() as i32
        }),
        ("clz", lax::clz, |v| v.leading_zeros() as i32),
    ];
    for (name, f, oracle) in cases {
        let x = Array::from_vec(xs.clone(), &[xs.len()]);
        let eager = catch(|| f(&x)).unwrap().unwrap().to_vec::<i32>();
        let jitted = jit(move |x: Array| f(&x).unwrap())
            .call(x)
            .unwrap()
            .to_vec::<i32>();
        for (k, v) in xs.iter().enumerate() {
            assert_eq!(eager[k], oracle(*v), "{name}({v})");
            assert_eq!(jitted[k], oracle(*v), "{name}({v}) jitted");
        }
    }
    let f = Array::from_vec(vec![1.0f32], &[1]);
    assert!(catch(|| lax::clz(&f)).unwrap().is_err());
}
