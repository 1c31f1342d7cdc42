//! Scalar cases: conversions between the storage dtypes at the values where
//! they round, saturate or wrap, and a thread-divergent `While` loop.

use super::{p, poison, u32c, v};
use crate::catalog::{Case, CaseArg, CaseBuffer, Expected, Rng, Tolerance};
use crate::error::Result;
use crate::kir::{Const, Expr, KernelBuilder, LaunchDims};
use jaxon_ir::DType::{self, *};

/// Values where conversions round (ties), saturate or overflow.
const SPECIAL: [f64; 20] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    1e10,
    -1e10,
    3e9,
    255.5,
    256.0,
    -1.5,
    0.5,
    2.5,
    65504.0,
    65520.0,
    1.003_906_25,
    1.011_718_75,
    -129.7,
    4_294_967_296.0,
    1e-8,
    -3.4e38,
];

/// `f32` to `bf16`, `f16`, `i32`, `u8`; `i32` to `f32` and to `i16`.
pub(in crate::catalog) fn casts(rng: &mut Rng, n: usize) -> Result<Case> {
    let outs: [(&str, DType, DType); 6] = [
        ("to_bf16", F32, BF16),
        ("to_f16", F32, F16),
        ("to_i32", F32, I32),
        ("to_u8", F32, U8),
        ("int_to_f32", I32, F32),
        ("int_to_i16", I32, I16),
    ];
    let mut k = KernelBuilder::new("casts", 256);
    let x = k.global("x", F32, false);
    let xi = k.global("xi", I32, false);
    let ys: Vec<_> = outs
        .iter()
        .map(|(name, _, to)| k.global(name, *to, true))
        .collect();
    let np = k.scalar("n", U32);
    let i = k.let_("i", U32, Expr::global_thread_id_x());
    k.if_(v(i).lt(p(np)), |k| {
        let a = k.var("a", F32);
        let b = k.var("b", I32);
        k.load(&[a], x.into(), v(i), None);
        k.load(&[b], xi.into(), v(i), None);
        for ((_, from, to), y) in outs.iter().zip(&ys) {
            let src = if *from == F32 { v(a) } else { v(b) };
            k.store((*y).into(), v(i), vec![src.cast(*to)], None);
        }
    });
    let kernel = k.finish()?;
    let mut xs: Vec<f64> = SPECIAL
        .iter()
        .cycle()
        .take(n.min(SPECIAL.len()))
        .cloned()
        .collect();
    xs.extend(rng.values(n - xs.len(), -1e6, 1e6, F32));
    let xs: Vec<f64> = xs.iter().map(|&a| a as f32 as f64).collect();
    let ints: Vec<f64> = (0..n).map(|_| rng.uniform(-2.0e9, 2.0e9).round()).collect();
    let mut buffers = vec![
        CaseBuffer {
            dtype: F32,
            values: xs.clone(),
        },
        CaseBuffer {
            dtype: I32,
            values: ints.clone(),
        },
    ];
    let mut expected = Vec::new();
    for (j, (_, from, to)) in outs.iter().enumerate() {
        buffers.push(poison(*to, n));
        let src = if *from == F32 { &xs } else { &ints };
        let values = src.iter().map(|&s| cast_host(s, *from, *to)).collect();
        expected.push(Expected {
            buffer: 2 + j,
            values,
            tol: Tolerance::EXACT,
        });
    }
    let mut args: Vec<CaseArg> = (0..buffers.len()).map(CaseArg::Buffer).collect();
    args.push(u32c(n));
    Ok(Case {
        kernel,
        dims: LaunchDims::linear(n.div_ceil(256) as u32, 256),
        buffers,
        args,
        expected,
    })
}

/// KIR's `Cast`, on the host: Rust's `as` has the same semantics (nearest
/// even between floats and from integers, truncating and saturating from
/// floats with NaN to 0, wrapping between integers).
fn cast_host(s: f64, from: DType, to: DType) -> f64 {
    match (from, to) {
        (F32, BF16) | (F32, F16) => Const::from_f64(to, s).to_f64(),
        (F32, I32) => (s as f32 as i32) as f64,
        (F32, U8) => (s as f32 as u8) as f64,
        (I32, F32) => (s as i32 as f32) as f64,
        (I32, I16) => (s as i32 as i16) as f64,
        _ => f64::NAN,
    }
}

/// Steps of the Collatz map to reach 1, one value per thread: a `While`
/// loop whose trip count differs from thread to thread, with an `If` inside.
pub(in crate::catalog) fn collatz_while(rng: &mut Rng, n: usize) -> Result<Case> {
    let mut k = KernelBuilder::new("collatz_while", 128);
    let x = k.global("x", I64, false);
    let y = k.global("steps", I32, true);
    let np = k.scalar("n", U32);
    let i = k.let_("i", U32, Expr::global_thread_id_x());
    k.if_(v(i).lt(p(np)), |k| {
        let a = k.var("a", I64);
        k.load(&[a], x.into(), v(i), None);
        let steps = k.let_("steps", I32, Expr::i32(0));
        let one = Expr::int(I64, 1);
        k.while_(v(a).ne(one.clone()), |k| {
            k.if_else(
                (v(a) % Expr::int(I64, 2)).eq(Expr::int(I64, 0)),
                |k| k.assign(a, v(a) / Expr::int(I64, 2)),
                |k| k.assign(a, Expr::int(I64, 3) * v(a) + one.clone()),
            );
            k.assign(steps, v(steps) + Expr::i32(1));
        });
        k.store(y.into(), v(i), vec![v(steps)], None);
    });
    let kernel = k.finish()?;
    let xs: Vec<f64> = (0..n).map(|_| rng.uniform(1.0, 5000.0).floor()).collect();
    let want = xs
        .iter()
        .map(|&s| {
            let (mut a, mut steps) = (s as i64, 0);
            while a != 1 {
                a = if a % 2 == 0 { a / 2 } else { 3 * a + 1 };
                steps += 1;
            }
            steps as f64
        })
        .collect();
    Ok(Case {
        kernel,
        dims: LaunchDims::linear(n.div_ceil(128) as u32, 128),
        buffers: vec![
            CaseBuffer {
                dtype: I64,
                values: xs,
            },
            poison(I32, n),
        ],
        args: vec![CaseArg::Buffer(0), CaseArg::Buffer(1), u32c(n)],
        expected: vec![Expected {
            buffer: 1,
            values: want,
            tol: Tolerance::EXACT,
        }],
    })
}
