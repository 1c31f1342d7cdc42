//! The tile routines at every width this CPU has (whatever the
//! `JAXON_CPU_ISA` cap), called directly: each width against an f64
//! oracle (the documented ulp bounds of `tests/all/math_ulp.rs`), against
//! exact scalar loops (the scaled/offset argument, division, the row
//! reductions' lane order), and against the other widths bit for bit, on
//! random inputs, specials (±0, ±inf, NaN, subnormals, thresholds) and
//! every length 0..=40. That the default width matches the inline code is
//! `tests/all/wide_math.rs`'s and `math_ulp.rs`'s part. A CPU without
//! AVX-512 prints a skip line for the 512-bit part.

use super::tile::chunk;
use super::{divide_at, reduction_at, routine_at, widths, ADD, MUL, ROW_BLOCK, STATE_BYTES};
use crate::isa::Isa;
use jaxon_ir::primitive::{ReduceOp, UnaryOp};
use jaxon_ir::DType;

/// xorshift64*: deterministic test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// f32 or f64, as the tests need them.
trait El: Copy + PartialEq + std::fmt::Debug {
    const DT: DType;
    fn of(x: f64) -> Self;
    fn get(self) -> f64;
    fn bits(self) -> u64;
    fn random_bits(r: &mut Rng) -> Self;
}

impl El for f32 {
    const DT: DType = DType::F32;
    fn of(x: f64) -> f32 {
        x as f32
    }
    fn get(self) -> f64 {
        self as f64
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn random_bits(r: &mut Rng) -> f32 {
        f32::from_bits(r.next() as u32)
    }
}

impl El for f64 {
    const DT: DType = DType::F64;
    fn of(x: f64) -> f64 {
        x
    }
    fn get(self) -> f64 {
        self
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn random_bits(r: &mut Rng) -> f64 {
        f64::from_bits(r.next())
    }
}

type TileFn<T> = unsafe extern "C" fn(*const T, *mut T, usize, T, T, u32, T);
type RowFn<T> = unsafe extern "C" fn(*const T, usize, *mut T);
type BlockFn<T> = unsafe extern "C" fn(*const T, usize, *mut T, isize);

/// Runs the tile routine at `addr` on `xs` (in place when `in_place`),
/// checking it writes nothing past the end.
fn apply<T: El>(
    addr: usize,
    xs: &[T],
    mode: u32,
    s: f64,
    o: f64,
    c: f64,
    in_place: bool,
) -> Vec<T> {
    // SAFETY: `addr` is a tile routine of element type `T`, handed out by
    // `wide` for a width this CPU runs.
    let f: TileFn<T> = unsafe { std::mem::transmute::<usize, TileFn<T>>(addr) };
    let n = xs.len();
    let sentinel = T::of(-12345.0);
    let mut out = vec![sentinel; n + 17];
    let src = if in_place {
        out[..n].copy_from_slice(xs);
        out.as_ptr()
    } else {
        xs.as_ptr()
    };
    // SAFETY: both buffers hold `n` elements.
    unsafe { f(src, out.as_mut_ptr(), n, T::of(s), T::of(o), mode, T::of(c)) };
    assert!(
        out[n..].iter().all(|v| v.bits() == sentinel.bits()),
        "wrote past {n}"
    );
    out.truncate(n);
    out
}

/// The routines' functions: op, f64 reference, f32 and f64 ulp bounds
/// (`tests/all/math_ulp.rs`'s table), swept interval.
type Case = (UnaryOp, fn(f64) -> f64, f64, f64, (f64, f64));

fn logistic(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

const CASES: [Case; 12] = [
    (UnaryOp::Exp, f64::exp, 2.0, 2.0, (-110.0, 90.0)),
    (UnaryOp::Expm1, f64::exp_m1, 2.0, 2.0, (-20.0, 90.0)),
    (UnaryOp::Log, f64::ln, 2.0, 2.0, (0.0, 10.0)),
    (UnaryOp::Log1p, f64::ln_1p, 3.0, 3.0, (-1.0, 10.0)),
    (UnaryOp::Tanh, f64::tanh, 5.0, 3.0, (-12.0, 12.0)),
    (UnaryOp::Logistic, logistic, 3.0, 3.0, (-110.0, 110.0)),
    (UnaryOp::Sin, f64::sin, 2.0, 2.0, (-1.0e4, 1.0e4)),
    (UnaryOp::Cos, f64::cos, 2.0, 2.0, (-1.0e4, 1.0e4)),
    (UnaryOp::Tan, f64::tan, 4.0, 4.0, (-1.0e4, 1.0e4)),
    (UnaryOp::Exp2, f64::exp2, 2.0, 2.0, (-160.0, 130.0)),
    (UnaryOp::Sinh, f64::sinh, 3.0, 3.0, (-100.0, 100.0)),
    (UnaryOp::Cosh, f64::cosh, 3.0, 3.0, (-100.0, 100.0)),
];

/// Specials, a dense sweep of `(lo, hi)`, random bit patterns and small
/// magnitudes; sin/cos/tan within their fast reduction's domain.
fn inputs<T: El>(op: UnaryOp, (lo, hi): (f64, f64)) -> Vec<T> {
    let mut r = Rng(0x5eed_1234);
    let mut v: Vec<f64> = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1e-30,
        -1e-30,
        88.72,
        88.73,
        -87.3,
        -103.9,
        -104.1,
        709.78,
        709.79,
        -745.1,
        -745.2,
        1e-300,
        f64::MAX,
        f64::MIN_POSITIVE,
        1e-40,
        1e-45,
        5e-324,
        1e-310,
    ];
    let n = 6000;
    v.extend((0..n).map(|i| lo + (hi - lo) * (i as f64 + r.unit()) / n as f64));
    v.extend((0..6000).map(|_| T::random_bits(&mut r).get()));
    for _ in 0..2000 {
        let e = (r.next() % 40) as i32 - 40;
        let s = if r.next() & 1 == 0 { 1.0 } else { -1.0 };
        v.push(s * (1.0 + r.unit()) * 2f64.powi(e));
    }
    if matches!(op, UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan) {
        let lim = if T::DT == DType::F32 { 1e5 } else { 1e9 };
        v.retain(|x| x.abs() <= lim || !x.is_finite());
    }
    v.into_iter().map(T::of).collect()
}

/// Error of `got` in ulp of `T` at the reference value (as `math_ulp.rs`).
fn ulp_err<T: El>(got: f64, want: f64) -> f64 {
    let f32w = T::DT == DType::F32;
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if got == want {
        return 0.0;
    }
    if want.is_infinite() || got.is_infinite() {
        let max = if f32w { f32::MAX as f64 } else { f64::MAX };
        let (g, w) = (got.clamp(-max, max), want.clamp(-max, max));
        return if g == w {
            1.0
        } else {
            ulp_err::<T>(g, w) + 1.0
        };
    }
    let (mant, min_exp) = if f32w { (23, -126) } else { (52, -1022) };
    let w = T::of(want).get();
    let e = if w == 0.0 {
        min_exp
    } else {
        (w.abs().log2().floor() as i32).max(min_exp)
    };
    (got - want).abs() / 2f64.powi(e - mant)
}

/// Results bit for bit equal, NaN payloads included.
fn assert_bits<T: El>(a: &[T], b: &[T], what: &str) {
    assert_eq!(a.len(), b.len());
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.bits(), y.bits(), "{what}[{k}]: {x:?} vs {y:?}");
    }
}

/// Prints the skip line for the widths this CPU lacks.
fn report_skips() {
    if !widths().contains(&Isa::Avx512) {
        println!("skip: this CPU has no AVX-512 F/DQ/BW/VL: 512-bit routines untested");
    }
    if !widths().contains(&Isa::Avx2) {
        println!("skip: this CPU has no AVX2 and FMA: no tile routines to test");
    }
}

fn unary_all_widths<T: El>() {
    for (op, reference, b32, b64, interval) in CASES {
        let bound = if T::DT == DType::F32 { b32 } else { b64 };
        let xs: Vec<T> = inputs(op, interval);
        let mut first: Option<Vec<T>> = None;
        for w in widths() {
            let addr = routine_at(w, op, T::DT).expect("a routine");
            let got = apply(addr, &xs, 0, 0.0, 0.0, 0.0, false);
            let mut worst = (0.0, 0.0);
            for (x, g) in xs.iter().zip(&got) {
                let e = ulp_err::<T>(g.get(), reference(x.get()));
                if e > worst.0 {
                    worst = (e, x.get());
                }
            }
            assert!(
                worst.0 <= bound,
                "{op:?} {:?} {w}: {} ulp at {:e} > {bound}",
                T::DT,
                worst.0,
                worst.1
            );
            // In place, the same bits.
            let again = apply(addr, &xs, 0, 0.0, 0.0, 0.0, true);
            assert_bits(&got, &again, &format!("{op:?} {w} in place"));
            match &first {
                None => first = Some(got),
                Some(f) => assert_bits(f, &got, &format!("{op:?} {:?} {w} vs avx2", T::DT)),
            }
        }
    }
}

/// Scale/offset modes and every tail length: the routine of mode `m` on
/// `x` is the mode-0 routine on the argument computed by a scalar loop
/// (two roundings), at every width, and the widths agree.
fn modes_and_tails<T: El>() {
    let mut r = Rng(77);
    let (s, o) = (1.7, -0.3);
    for op in [UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Log1p, UnaryOp::Sin] {
        for n in (0..=40).chain([63, 64, 65, 127, 515]) {
            let xs: Vec<T> = (0..n).map(|_| T::of(4.0 * r.unit() - 1.0)).collect();
            for mode in [0, MUL, ADD, MUL | ADD] {
                let args: Vec<T> = xs
                    .iter()
                    .map(|x| {
                        let mut a = *x;
                        if mode & MUL != 0 {
                            a = T::of(a.get() * T::of(s).get());
                        }
                        if mode & ADD != 0 {
                            a = T::of(a.get() + T::of(o).get());
                        }
                        a
                    })
                    .collect();
                let mut first: Option<Vec<T>> = None;
                for w in widths() {
                    let addr = routine_at(w, op, T::DT).expect("a routine");
                    let got = apply(addr, &xs, mode, s, o, 0.0, false);
                    let want = apply(addr, &args, 0, 0.0, 0.0, 0.0, false);
                    let what = format!("{op:?} {:?} {w} n {n} mode {mode}", T::DT);
                    assert_bits(&got, &want, &what);
                    match &first {
                        None => first = Some(got),
                        Some(f) => assert_bits(f, &got, &format!("{what} vs avx2")),
                    }
                }
            }
        }
    }
}

/// Division by a scalar is IEEE division, lane by lane, at every width.
fn division<T: El>() {
    let mut r = Rng(5);
    for n in (0..=40).chain([1000]) {
        let mut xs: Vec<T> = (0..n).map(|_| T::random_bits(&mut r)).collect();
        if n > 3 {
            xs[0] = T::of(0.0);
            xs[1] = T::of(-0.0);
            xs[2] = T::of(f64::INFINITY);
        }
        for c in [3.0, -0.0, 1e-300, f64::NAN, 0.1] {
            let c = T::of(c).get();
            for w in widths() {
                let addr = divide_at(w, T::DT).expect("a routine");
                let got = apply(addr, &xs, 0, 0.0, 0.0, c, false);
                let want: Vec<T> = xs.iter().map(|x| T::of(x.get() / c)).collect();
                for (k, (g, x)) in got.iter().zip(&want).enumerate() {
                    let same = g.bits() == x.bits() || (g.get().is_nan() && x.get().is_nan());
                    assert!(same, "{:?} {w} {k}: {g:?} / {c} vs {x:?}", T::DT);
                }
            }
        }
    }
}

#[test]
fn unary_routines_at_every_width() {
    report_skips();
    unary_all_widths::<f32>();
    unary_all_widths::<f64>();
}

#[test]
fn modes_and_tails_at_every_width() {
    report_skips();
    modes_and_tails::<f32>();
    modes_and_tails::<f64>();
    division::<f32>();
    division::<f64>();
}

/// The reduction `op` of two values as the routines' lanes do it: sums
/// in order; max/min IEEE (+0 above -0), NaN when either is.
fn fold(op: ReduceOp, a: f64, x: f64) -> f64 {
    match op {
        ReduceOp::Sum => a + x,
        ReduceOp::Max | ReduceOp::Min if a.is_nan() || x.is_nan() => f64::NAN,
        ReduceOp::Max if a == x => f64::from_bits(a.to_bits() & x.to_bits()),
        ReduceOp::Min if a == x => f64::from_bits(a.to_bits() | x.to_bits()),
        ReduceOp::Max => a.max(x),
        ReduceOp::Min => a.min(x),
        ReduceOp::Prod | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => unreachable!(),
    }
}

/// The inline code's order, as a loop: [`chunk`] lanes, then the first
/// 16 bytes' lanes, then the scalar. Each step rounds to `T`.
fn model<T: El>(op: ReduceOp, state: &[T], row: &[T]) -> Vec<T> {
    let (c, nw) = (chunk::<T>(), 16 / std::mem::size_of::<T>());
    let mut st = state.to_vec();
    let f = |a: T, x: T| {
        let v = fold(op, a.get(), x.get());
        if v.is_nan() && op != ReduceOp::Sum {
            T::of(f64::NAN)
        } else {
            T::of(v)
        }
    };
    let mut i = 0;
    while i + c <= row.len() {
        for j in 0..c {
            st[j] = f(st[j], row[i + j]);
        }
        i += c;
    }
    while i + nw <= row.len() {
        for j in 0..nw {
            st[j] = f(st[j], row[i + j]);
        }
        i += nw;
    }
    for x in &row[i..] {
        st[c] = f(st[c], *x);
    }
    st
}

fn reductions<T: El>() {
    let mut r = Rng(99);
    let c = chunk::<T>();
    let per_state = STATE_BYTES / std::mem::size_of::<T>();
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        for n in (0..=40).chain([64, 515, 1029]) {
            let stride = n + 3;
            let mut rows: Vec<T> = (0..ROW_BLOCK * stride)
                .map(|_| T::of(8.0 * r.unit() - 4.0))
                .collect();
            // Row 1: a NaN; row 2: +0 then -0s; row 3: only -0.
            if n > 0 {
                rows[stride + n / 2] = T::of(f64::NAN);
                for k in 0..n {
                    rows[2 * stride + k] = T::of(if k == n / 3 { 0.0 } else { -0.0 });
                    rows[3 * stride + k] = T::of(-0.0);
                }
            }
            // Start states: random values, a -0 and a NaN lane.
            let mut states: Vec<T> = (0..ROW_BLOCK * per_state)
                .map(|_| T::of(r.unit() - 0.5))
                .collect();
            states[1] = T::of(-0.0);
            states[per_state + 2] = T::of(f64::NAN);
            let mut first: Option<Vec<T>> = None;
            for w in widths() {
                let (one, block) = reduction_at(w, op, T::DT).expect("a routine");
                // SAFETY: routines of element type `T` for a width this
                // CPU runs.
                let (one, block) = unsafe {
                    (
                        std::mem::transmute::<usize, RowFn<T>>(one),
                        std::mem::transmute::<usize, BlockFn<T>>(block),
                    )
                };
                let mut by_one = states.clone();
                for q in 0..ROW_BLOCK {
                    let row = &rows[q * stride..q * stride + n];
                    let st = &mut by_one[q * per_state..];
                    // SAFETY: the row holds `n` elements, the state
                    // `c + 1`.
                    unsafe { one(row.as_ptr(), n, st.as_mut_ptr()) };
                    let want = model(op, &states[q * per_state..q * per_state + c + 1], row);
                    let what = format!("{op:?} {:?} {w} n {n} row {q}", T::DT);
                    assert_bits(&st[..c + 1], &want, &what);
                }
                let mut by_block = states.clone();
                // SAFETY: ROW_BLOCK rows `stride` apart of `n` elements,
                // states STATE_BYTES apart.
                unsafe { block(rows.as_ptr(), n, by_block.as_mut_ptr(), stride as isize) };
                assert_bits(
                    &by_block,
                    &by_one,
                    &format!("{op:?} {:?} {w} n {n} block", T::DT),
                );
                match &first {
                    None => first = Some(by_one),
                    Some(f) => assert_bits(f, &by_one, &format!("{op:?} {w} n {n} vs avx2")),
                }
            }
        }
    }
}

#[test]
fn row_reductions_at_every_width() {
    report_skips();
    reductions::<f32>();
    reductions::<f64>();
}

#[test]
fn widths_follow_the_cpu_not_the_cap() {
    let detected = crate::isa::detected();
    for w in [Isa::Scalar, Isa::Avx2, Isa::Avx512] {
        let runs = w != Isa::Scalar && w <= detected;
        assert_eq!(widths().contains(&w), runs, "{w}");
        assert_eq!(
            routine_at(w, UnaryOp::Exp, DType::F32).is_some(),
            runs,
            "{w}"
        );
        assert_eq!(routine_at(w, UnaryOp::Abs, DType::F32), None);
        assert_eq!(reduction_at(w, ReduceOp::Prod, DType::F32), None);
        assert_eq!(divide_at(w, DType::I32), None);
    }
    // The kernels' width is the capped one.
    let kernels = crate::isa::isa();
    assert_eq!(
        super::routine(UnaryOp::Exp, DType::F64),
        routine_at(kernels, UnaryOp::Exp, DType::F64)
    );
}
