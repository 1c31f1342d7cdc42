//! Differential tests of the special functions (`lower/special.rs`) on
//! `cuda-sim` against the reference interpreter: `lgamma`, `digamma`,
//! `bessel_i0e`, `bessel_i1e`, `igamma`, `igammac`, `igamma_grad_a`,
//! `random_gamma_grad`, `zeta`, `polygamma` and
//! `regularized_incomplete_beta`, in f32, f64, f16 and bf16, on seeded
//! random values drawn to reach every branch of each algorithm (reflection,
//! Lanczos and Stirling; the digamma recurrence; the series and the
//! continued fraction on both sides of `x = a + 1`; the direct sum and the
//! Euler–Maclaurin tail; the Bessel power series and Hankel's expansion),
//! plus the edge inputs: NaN, ±inf, ±0, poles, negative and out-of-domain
//! values. The kernels compute in f64 with the interpreter's operations in
//! its order, so values agree to within an ulp or two (the simulator's
//! libm is the host's, as the interpreter's).

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::{check_with, ty, Rng, Tol};

const FLOATS: [&str; 4] = ["f32", "f64", "f16", "bf16"];

/// `n` values: the edge inputs first, then uniform draws from each range
/// in turn.
fn values(rng: &mut Rng, n: usize, edges: &[f64], ranges: &[(f64, f64)]) -> Vec<f64> {
    let mut out: Vec<f64> = edges.iter().copied().take(n).collect();
    let mut i = 0;
    while out.len() < n {
        let (lo, hi) = ranges[i % ranges.len()];
        out.push(lo + (hi - lo) * rng.unit());
        i += 1;
    }
    out
}

fn array(dt: &str, vals: &[f64]) -> HostArray {
    let d = DType::from_name(dt).expect("dtype");
    HostArray::from_f64(d, &[vals.len()], vals).expect("array")
}

/// The tolerance: a couple of ulps of the result's format.
fn tol(dt: &str) -> Tol {
    match dt {
        "f64" | "f32" => Tol::Ulp(2),
        _ => Tol::Ulp(1),
    }
}

const EDGES: [f64; 12] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    2.0,
    -1.0,
    -3.0,
    0.5,
    -2.5,
    1e-30,
];

#[test]
fn unary_special_functions_on_every_branch() {
    let mut rng = Rng::new(190);
    let ranges = [
        (-12.0, 0.0),  // reflection, near the poles
        (0.0, 0.5),    // reflection of lgamma
        (0.5, 10.0),   // Lanczos, the digamma recurrence
        (10.0, 60.0),  // Stirling, the asymptotic series
        (20.0, 40.0),  // both sides of the Bessel switch at 25
        (60.0, 700.0), // Hankel's expansion
        (-1e6, 1e6),
    ];
    for op in ["lgamma", "digamma", "bessel_i0e", "bessel_i1e"] {
        for dt in FLOATS {
            let n = 97;
            let t = ty(dt, &[n]);
            let text = format!("{{ lambda ; a:{t}. let b:{t} = {op} a in (b,) }}");
            let vals = values(&mut rng, n, &EDGES, &ranges);
            check_with(&text, &[array(dt, &vals)], tol(dt));
        }
    }
}

#[test]
fn incomplete_gamma_family_on_both_sides_of_the_switch() {
    let mut rng = Rng::new(191);
    let edge_a = [
        f64::NAN,
        1.0,
        1.0,
        1.0,
        -1.0,
        0.0,
        f64::INFINITY,
        2.0,
        0.5,
        3.0,
    ];
    let edge_x = [
        1.0,
        f64::NAN,
        0.0,
        f64::INFINITY,
        1.0,
        1.0,
        1.0,
        -1.0,
        1e-8,
        1e3,
    ];
    for op in ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad"] {
        for dt in FLOATS {
            let n = 67;
            let t = ty(dt, &[n]);
            let text = format!("{{ lambda ; a:{t} b:{t}. let c:{t} = {op} a b in (c,) }}");
            // Pairs drawn independently land on either side of x = a + 1.
            let a = values(
                &mut rng,
                n,
                &edge_a,
                &[(0.05, 3.0), (1.0, 30.0), (0.5, 8.0)],
            );
            let x = values(
                &mut rng,
                n,
                &edge_x,
                &[(0.0, 4.0), (0.5, 50.0), (5.0, 12.0)],
            );
            check_with(&text, &[array(dt, &a), array(dt, &x)], tol(dt));
        }
    }
}

#[test]
fn zeta_and_polygamma_on_their_domains() {
    let mut rng = Rng::new(192);
    let edge_s = [
        f64::NAN,
        2.0,
        1.0,
        0.5,
        3.0,
        2.5,
        4.0,
        2.0,
        f64::INFINITY,
        70.0,
    ];
    let edge_q = [
        1.0,
        f64::NAN,
        2.0,
        2.0,
        -2.0,
        -1.5,
        -1.5,
        f64::INFINITY,
        0.5,
        1.5,
    ];
    for dt in FLOATS {
        let n = 67;
        let t = ty(dt, &[n]);
        let text = format!("{{ lambda ; a:{t} b:{t}. let c:{t} = zeta a b in (c,) }}");
        // Large s reach the early exit of the direct sum; small s the tail.
        let s = values(&mut rng, n, &edge_s, &[(1.01, 4.0), (4.0, 80.0)]);
        let q = values(
            &mut rng,
            n,
            &edge_q,
            &[(0.01, 3.0), (3.0, 40.0), (-4.0, 0.0)],
        );
        check_with(&text, &[array(dt, &s), array(dt, &q)], tol(dt));
    }
    let edge_n = [
        f64::NAN,
        0.0,
        1.0,
        -1.0,
        1.5,
        f64::INFINITY,
        2.0,
        3.0,
        200.0,
    ];
    let edge_x = [1.0, f64::NAN, -2.0, 1.0, 1.0, 1.0, -0.5, 0.0, 1.0];
    for dt in FLOATS {
        let n = 61;
        let t = ty(dt, &[n]);
        let text = format!("{{ lambda ; a:{t} b:{t}. let c:{t} = polygamma a b in (c,) }}");
        let mut ns = values(&mut rng, n, &edge_n, &[(0.0, 6.0)]);
        for v in ns.iter_mut().skip(edge_n.len()) {
            *v = v.floor();
        }
        let x = values(&mut rng, n, &edge_x, &[(0.05, 20.0), (-6.0, 0.0)]);
        check_with(&text, &[array(dt, &ns), array(dt, &x)], tol(dt));
    }
}

#[test]
fn regularized_incomplete_beta_on_both_sides_and_outside() {
    let mut rng = Rng::new(193);
    let edge_a = [f64::NAN, 1.0, 1.0, -1.0, 0.0, 2.0, 2.0, 2.0, 0.5, 30.0];
    let edge_b = [1.0, f64::NAN, 1.0, 1.0, 1.0, -0.5, 3.0, 3.0, 0.5, 0.2];
    let edge_x = [0.5, 0.5, f64::NAN, 0.5, 0.5, 0.5, 0.0, 1.0, 1.5, 0.99];
    for dt in FLOATS {
        let n = 67;
        let t = ty(dt, &[n]);
        let text =
            format!("{{ lambda ; a:{t} b:{t} x:{t}. let c:{t} = regularized_incomplete_beta a b x in (c,) }}");
        let a = values(&mut rng, n, &edge_a, &[(0.1, 3.0), (1.0, 40.0)]);
        let b = values(&mut rng, n, &edge_b, &[(0.1, 5.0), (2.0, 30.0), (0.5, 2.0)]);
        let x = values(&mut rng, n, &edge_x, &[(0.0, 1.0)]);
        check_with(
            &text,
            &[array(dt, &a), array(dt, &b), array(dt, &x)],
            tol(dt),
        );
    }
}

#[test]
fn special_functions_fuse_with_their_neighbours() {
    // A loop group with a broadcast scalar, a special function in the
    // middle, and a reduction consuming it.
    let mut rng = Rng::new(194);
    let text = "{ lambda ; a:f32[7,33] b:f32[]. let
    c:f32[7,33] = abs a
    d:f32[7,33] = add c 0.5:f32[]
    e:f32[7,33] = lgamma d
    f:f32[7,33] = igamma d b
    g:f32[7,33] = mul e f
    h:f32[7] = reduce_sum[axes=(1,) out_sharding=None] g
  in (g, h) }";
    let a = values(&mut rng, 7 * 33, &[], &[(-20.0, 20.0)]);
    let a = HostArray::from_f64(DType::F32, &[7, 33], &a).expect("array");
    let b = HostArray::from_f64(DType::F32, &[], &[3.5]).expect("array");
    check_with(text, &[a, b], Tol::Rel(1e-6));
}
