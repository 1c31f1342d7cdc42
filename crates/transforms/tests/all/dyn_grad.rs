//! Reverse mode through dynamic-shape control flow: `grad` of programs
//! whose arrays have a traced size `n`, through `for_loop` (dynamic trip
//! count too), `while_loop` and `cond`, evaluated on the reference
//! interpreter for several sizes and checked against the grad of the same
//! program with static shapes (Rust control flow, unrolled) and against
//! central differences in f64, on seeded random inputs.

use jaxon_ir::dyntype::{DynAval, InDim, InType};
use jaxon_ir::{check_closed_jaxpr, eval_closed_jaxpr, parse_jaxpr, ClosedJaxpr, DType, HostArray};
use jaxon_trace::control::{cond, for_loop, while_loop, ForBound};
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::stage::{close, trace_flat_in_type, StageMode};
use jaxon_trace::{numpy as jnp, with_backend, Array};
use jaxon_transforms::grad;

const F64: DType = DType::F64;

/// Seeded uniform values in `[-1, 1)`, never all equal.
fn random(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

fn i64s(n: i64) -> HostArray {
    HostArray::scalar(DType::I64, n as f64)
}

fn f64s(v: &[f64]) -> HostArray {
    HostArray::from_f64(F64, &[v.len()], v).unwrap()
}

fn arr(v: &[f64]) -> Array {
    Array::from_vec(v.to_vec(), &[v.len()])
}

fn scalar_entry(dtype: DType) -> (DynAval<InDim>, bool) {
    (
        DynAval {
            dtype,
            shape: Vec::new(),
        },
        true,
    )
}

/// Traces `f(n, extra scalars.., x, w)` with `x, w: f64[n]`, `n` input 0.
fn trace_dyn(scalars: &[DType], f: impl FnOnce(Vec<Array>) -> Vec<Array>) -> ClosedJaxpr {
    let vec_n = (
        DynAval {
            dtype: F64,
            shape: vec![InDim::DBIdx(0)],
        },
        true,
    );
    let mut ty = vec![scalar_entry(DType::I64)];
    ty.extend(scalars.iter().map(|d| scalar_entry(*d)));
    ty.extend([vec_n.clone(), vec_n]);
    let staged = trace_flat_in_type(StageMode::Base, &InType(ty), |ins| {
        jaxon_trace::error::catch(|| f(ins))
    })
    .unwrap();
    let j = close(staged).unwrap();
    check_closed_jaxpr(&j).unwrap();
    j
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (a, b) in got.iter().zip(want) {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}: {got:?} vs {want:?}"
        );
    }
}

/// Central differences of a scalar function of `(x, w)` (f64, static
/// shapes, interpreter backend).
fn central(f: &dyn Fn(Array, Array) -> Array, x: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let h = 1e-6;
    let eval = |x: &[f64], w: &[f64]| {
        with_backend("interpreter", || f(arr(x), arr(w)))
            .unwrap()
            .to_vec::<f64>()[0]
    };
    let mut gx = Vec::new();
    for k in 0..x.len() {
        let (mut p, mut m) = (x.to_vec(), x.to_vec());
        p[k] += h;
        m[k] -= h;
        gx.push((eval(&p, w) - eval(&m, w)) / (2.0 * h));
    }
    let mut gw = Vec::new();
    for k in 0..w.len() {
        let (mut p, mut m) = (w.to_vec(), w.to_vec());
        p[k] += h;
        m[k] -= h;
        gw.push((eval(x, &p) - eval(x, &m)) / (2.0 * h));
    }
    (gx, gw)
}

/// A static-shape program specialised at the base point `(x, w)` (so a
/// data-dependent trip count can be fixed by Rust control flow).
type StaticAt<'a> = &'a dyn Fn(&[f64], &[f64]) -> Box<dyn Fn(Array, Array) -> Array>;

/// Checks a traced grad jaxpr `(n, scalars.., x, w) -> (gx, gw)` for
/// several sizes against the static grad of `stat` and central
/// differences of `stat`.
fn check_grad(
    j: &ClosedJaxpr,
    scalars: &[HostArray],
    stat: &dyn Fn(Array, Array) -> Array,
    sizes: &[usize],
    seed: u64,
) {
    check_grad_at(
        j,
        scalars,
        &|_, _| {
            let f: Box<dyn Fn(Array, Array) -> Array> = Box::new(|_, _| unreachable!());
            f
        },
        Some(stat),
        sizes,
        seed,
    )
}

fn check_grad_at(
    j: &ClosedJaxpr,
    scalars: &[HostArray],
    stat_at: StaticAt,
    stat: Option<&dyn Fn(Array, Array) -> Array>,
    sizes: &[usize],
    seed: u64,
) {
    for &n in sizes {
        let x = random(seed + n as u64, n);
        let w = random(seed + 100 + n as u64, n);
        let owned;
        let stat: &dyn Fn(Array, Array) -> Array = match stat {
            Some(s) => s,
            None => {
                owned = stat_at(&x, &w);
                &*owned
            }
        };
        let mut ins = vec![i64s(n as i64)];
        ins.extend(scalars.iter().cloned());
        ins.extend([f64s(&x), f64s(&w)]);
        let out = eval_closed_jaxpr(j, &ins).unwrap();
        let k = out.len();
        let (gx, gw) = (out[k - 2].to_f64_vec(), out[k - 1].to_f64_vec());
        let (sx, sw) = with_backend("interpreter", || {
            grad(|(x, w): (Array, Array)| stat(x, w))((arr(&x), arr(&w)))
        })
        .unwrap()
        .unwrap();
        assert_close(
            &gx,
            &sx.to_vec::<f64>(),
            1e-10,
            &format!("n={n} gx vs static"),
        );
        assert_close(
            &gw,
            &sw.to_vec::<f64>(),
            1e-10,
            &format!("n={n} gw vs static"),
        );
        let (cx, cw) = central(stat, &x, &w);
        assert_close(&gx, &cx, 1e-6, &format!("n={n} gx vs central differences"));
        assert_close(&gw, &cw, 1e-6, &format!("n={n} gw vs central differences"));
    }
}

/// One loop step on two carries, using the index and the captured `w`.
fn step(i: &Array, a: &Array, b: &Array, w: &Array) -> (Array, Array) {
    let fi = i.astype(F64);
    let a2 = a.sin() * b + w * &fi * 0.25;
    let b2 = b * a.cos() + a * w * 0.5;
    (a2, b2)
}

fn loss(a: &Array, b: &Array) -> Array {
    (a * b).sum(jnp::All) + a.sum(jnp::All)
}

/// `for i in (1..hi).step_by(2)` as a `for_loop`.
fn prog_for(x: &Array, w: &Array, hi: impl Into<ForBound>) -> Array {
    let (a, b) = ok_or_raise(for_loop(
        1,
        hi,
        2,
        |i, (a, b): (Array, Array)| step(&i, &a, &b, w),
        (x.clone(), x * w),
    ));
    loss(&a, &b)
}

/// The same with Rust control flow and static shapes.
fn prog_for_unrolled(x: &Array, w: &Array, hi: i64) -> Array {
    let (mut a, mut b) = (x.clone(), x * w);
    for i in (1..hi).step_by(2) {
        (a, b) = step(&Array::scalar(i), &a, &b, w);
    }
    loss(&a, &b)
}

#[test]
fn grad_through_a_dynamic_for_loop_with_static_bounds() {
    let j = trace_dyn(&[], |ins| {
        let (x, w) = (ins[1].clone(), ins[2].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_for(&x, &w, 6))((x, w)));
        vec![gx, gw]
    });
    let text = jaxon_ir::print::print_jaxpr(&j.jaxpr);
    assert!(text.matches("for_loop[").count() >= 2, "{text}");
    check_grad(&j, &[], &|x, w| prog_for_unrolled(&x, &w, 6), &[1, 3, 6], 7);
    // The static-shape for_loop (concrete bounds and arrays) agrees too.
    let x = random(1, 4);
    let w = random(2, 4);
    let (gx, gw) = with_backend("interpreter", || {
        grad(|(x, w): (Array, Array)| prog_for(&x, &w, 6))((arr(&x), arr(&w)))
    })
    .unwrap()
    .unwrap();
    let (sx, sw) = with_backend("interpreter", || {
        grad(|(x, w): (Array, Array)| prog_for_unrolled(&x, &w, 6))((arr(&x), arr(&w)))
    })
    .unwrap()
    .unwrap();
    assert_close(
        &gx.to_vec::<f64>(),
        &sx.to_vec::<f64>(),
        1e-12,
        "static for_loop gx",
    );
    assert_close(
        &gw.to_vec::<f64>(),
        &sw.to_vec::<f64>(),
        1e-12,
        "static for_loop gw",
    );
}

#[test]
fn grad_through_a_for_loop_with_a_traced_trip_count() {
    let j = trace_dyn(&[DType::I64], |ins| {
        let (hi, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_for(&x, &w, &hi))((x, w)));
        vec![gx, gw]
    });
    for hi in [0i64, 2, 5, 8] {
        check_grad(
            &j,
            &[i64s(hi)],
            &|x, w| prog_for_unrolled(&x, &w, hi),
            &[2, 5],
            11 + hi as u64,
        );
    }
}

#[test]
fn a_grad_jaxpr_through_for_loop_prints_and_parses_back() {
    let j = trace_dyn(&[DType::I64], |ins| {
        let (hi, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_for(&x, &w, &hi))((x, w)));
        vec![gx, gw]
    });
    let text = jaxon_ir::print::print_jaxpr(&j.jaxpr);
    let parsed = parse_jaxpr(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(jaxon_ir::print::print_jaxpr(&parsed), text);
    jaxon_ir::check_jaxpr(&parsed).unwrap();
}

/// `while max(a) < 1.5 and count < 6`: a data-dependent trip count.
fn prog_while(x: &Array, w: &Array) -> Array {
    let (a, b, _) = ok_or_raise(while_loop(
        |(a, _b, c): (Array, Array, Array)| {
            let go = a.max(jnp::All).lt(1.5);
            ok_or_raise(jnp::logical_and(&go, &c.lt(6)))
        },
        |(a, b, c): (Array, Array, Array)| {
            let (a2, b2) = step(&c, &a, &b, w);
            (a2 * 1.3 + 0.2, b2, c + 1)
        },
        (x.clone(), x * w, Array::scalar(0i64)),
    ));
    loss(&a, &b)
}

/// `prog_while` with static shapes and a fixed trip count.
fn prog_while_unrolled(x: &Array, w: &Array, trips: i64) -> Array {
    let (mut a, mut b) = (x.clone(), x * w);
    for c in 0..trips {
        let (a2, b2) = step(&Array::scalar(c), &a, &b, w);
        (a, b) = (a2 * 1.3 + 0.2, b2);
    }
    loss(&a, &b)
}

/// The trip count of `prog_while` at `(x, w)`, by Rust control flow.
fn while_trips(x: &[f64], w: &[f64]) -> i64 {
    with_backend("interpreter", || {
        let w = arr(w);
        let (mut a, mut b) = (arr(x), arr(x) * &w);
        let mut c = 0i64;
        while a.max(jnp::All).to_vec::<f64>()[0] < 1.5 && c < 6 {
            let (a2, b2) = step(&Array::scalar(c), &a, &b, &w);
            (a, b) = (a2 * 1.3 + 0.2, b2);
            c += 1;
        }
        c
    })
    .unwrap()
}

#[test]
fn grad_through_a_dynamic_while_loop() {
    let j = trace_dyn(&[], |ins| {
        let (x, w) = (ins[1].clone(), ins[2].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_while(&x, &w))((x, w)));
        vec![gx, gw]
    });
    check_grad_at(
        &j,
        &[],
        &|x, w| {
            let trips = while_trips(x, w);
            assert!(trips > 0);
            Box::new(move |x, w| prog_while_unrolled(&x, &w, trips))
        },
        None,
        &[1, 4, 7],
        23,
    );
}

fn prog_cond(x: &Array, w: &Array, p: &Array) -> Array {
    let y = ok_or_raise(cond(
        p,
        |(x, w): (Array, Array)| x.sin() * &w + (&x * &x).sum(jnp::All),
        |(x, w): (Array, Array)| (&x * &w).exp() - &w,
        (x.clone(), w.clone()),
    ));
    (&y * &y).sum(jnp::All) + (y * x).sum(jnp::All)
}

#[test]
fn grad_through_a_dynamic_cond() {
    let j = trace_dyn(&[DType::Bool], |ins| {
        let (p, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_cond(&x, &w, &p))((x, w)));
        vec![gx, gw]
    });
    for p in [true, false] {
        let pv = Array::scalar(p);
        check_grad(
            &j,
            &[HostArray::scalar(DType::Bool, p as u8 as f64)],
            &|x, w| prog_cond(&x, &w, &pv),
            &[1, 3, 6],
            31 + p as u64,
        );
    }
}

/// A loop step that captures nothing, so the carry's dimension is an
/// implicit carry of the `for_loop` (`nimplicit=1`).
fn step_free(i: &Array, a: &Array, b: &Array) -> (Array, Array) {
    let fi = i.astype(F64);
    (a.sin() * b + &fi * 0.25, b * a.cos() - a * 0.3)
}

fn prog_free(x: &Array, w: &Array, hi: impl Into<ForBound>) -> Array {
    let (a, b) = ok_or_raise(for_loop(
        0,
        hi,
        1,
        |i, (a, b): (Array, Array)| step_free(&i, &a, &b),
        (x * w, x.cos()),
    ));
    loss(&a, &b)
}

fn prog_free_unrolled(x: &Array, w: &Array, hi: i64) -> Array {
    let (mut a, mut b) = (x * w, x.cos());
    for i in 0..hi {
        (a, b) = step_free(&Array::scalar(i), &a, &b);
    }
    loss(&a, &b)
}

#[test]
fn grad_through_a_for_loop_with_implicit_carry_dimensions() {
    let j = trace_dyn(&[DType::I64], |ins| {
        let (hi, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_free(&x, &w, &hi))((
            x, w,
        )));
        vec![gx, gw]
    });
    let text = jaxon_ir::print::print_jaxpr(&j.jaxpr);
    assert!(text.contains("nimplicit=1"), "{text}");
    for hi in [1i64, 4] {
        check_grad(
            &j,
            &[i64s(hi)],
            &|x, w| prog_free_unrolled(&x, &w, hi),
            &[1, 5],
            41 + hi as u64,
        );
    }
}

/// Branches returning arrays of different dynamic sizes (`n` and `2n`).
fn prog_cond_sizes(x: &Array, w: &Array, p: &Array) -> Array {
    let y = ok_or_raise(cond(
        p,
        |(x, w): (Array, Array)| x.sin() * &w,
        |(x, w): (Array, Array)| {
            ok_or_raise(jaxon_trace::dynshape::concatenate(&[&x * &w, x.cos()], 0))
        },
        (x.clone(), w.clone()),
    ));
    (&y * &y).sum(jnp::All) + y.sin().sum(jnp::All)
}

#[test]
fn grad_through_a_dynamic_cond_whose_branches_return_different_sizes() {
    let j = trace_dyn(&[DType::Bool], |ins| {
        let (p, x, w) = (ins[1].clone(), ins[2].clone(), ins[3].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_cond_sizes(&x, &w, &p))(
            (x, w),
        ));
        vec![gx, gw]
    });
    for p in [true, false] {
        let stat = move |x: Array, w: Array| {
            let y = if p {
                x.sin() * &w
            } else {
                ok_or_raise(jnp::concatenate(&[&x * &w, x.cos()], 0))
            };
            (&y * &y).sum(jnp::All) + y.sin().sum(jnp::All)
        };
        check_grad(
            &j,
            &[HostArray::scalar(DType::Bool, p as u8 as f64)],
            &stat,
            &[1, 4],
            51 + p as u64,
        );
    }
}

/// A `for_loop` whose body holds a `cond` on the index parity and a
/// `while_loop`: nested control flow splits inside the loop body.
fn prog_nested(x: &Array, w: &Array) -> Array {
    let (a, b) = ok_or_raise(for_loop(
        0,
        4,
        1,
        |i, (a, b): (Array, Array)| {
            let two = Array::scalar(2i64);
            let even = ok_or_raise(jaxon_trace::lax::eq(
                &ok_or_raise(jaxon_trace::lax::rem(&i, &two)),
                &Array::scalar(0i64),
            ));
            let a2 = ok_or_raise(cond(
                &even,
                |(a, b): (Array, Array)| a.sin() * &b,
                |(a, b): (Array, Array)| &a * &a * 0.5 + &b,
                (a.clone(), b.clone()),
            ));
            let (_, b2) = ok_or_raise(while_loop(
                |(k, _b): (Array, Array)| k.lt(2),
                |(k, b): (Array, Array)| (k + 1, b.cos() * w + &a2 * 0.1),
                (Array::scalar(0i64), b),
            ));
            (a2, b2)
        },
        (x.clone(), x * w),
    ));
    loss(&a, &b)
}

fn prog_nested_unrolled(x: &Array, w: &Array) -> Array {
    let (mut a, mut b) = (x.clone(), x * w);
    for i in 0..4 {
        a = if i % 2 == 0 {
            a.sin() * &b
        } else {
            &a * &a * 0.5 + &b
        };
        for _ in 0..2 {
            b = b.cos() * w + &a * 0.1;
        }
    }
    loss(&a, &b)
}

#[test]
fn grad_through_control_flow_nested_in_a_dynamic_for_loop() {
    let j = trace_dyn(&[], |ins| {
        let (x, w) = (ins[1].clone(), ins[2].clone());
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_nested(&x, &w))((x, w)));
        vec![gx, gw]
    });
    check_grad(&j, &[], &|x, w| prog_nested_unrolled(&x, &w), &[2, 5], 61);
}

#[test]
fn dynamic_slice_with_traced_sizes_on_an_operand_with_other_dynamic_axes() {
    // x: f64[n, m] (both dynamic); slices of traced sizes (k, m) and
    // (k, j) from traced starts (clamped into bounds, as dynamic_slice).
    let ty = |d: &[InDim]| {
        (
            DynAval {
                dtype: F64,
                shape: d.to_vec(),
            },
            true,
        )
    };
    let mut t = vec![scalar_entry(DType::I64); 6];
    t.push(ty(&[InDim::DBIdx(0), InDim::DBIdx(1)]));
    let staged = trace_flat_in_type(StageMode::Base, &InType(t), |ins| {
        let (m, k, jj, s0, s1, x) = (&ins[1], &ins[2], &ins[3], &ins[4], &ins[5], &ins[6]);
        let whole = jaxon_trace::dynshape::Size::from(m);
        let a =
            jaxon_trace::dynshape::dynamic_slice(x, &[s0.clone(), s1.clone()], &[k.into(), whole])?;
        let b = jaxon_trace::dynshape::dynamic_slice(
            x,
            &[s0.clone(), s1.clone()],
            &[k.into(), jj.into()],
        )?;
        // Static size on the dynamic axis, traced size on the other.
        let c = jaxon_trace::dynshape::dynamic_slice(
            x,
            &[s0.clone(), s1.clone()],
            &[1usize.into(), jj.into()],
        )?;
        Ok(vec![a, b, c])
    })
    .unwrap();
    let j = close(staged).unwrap();
    check_closed_jaxpr(&j).unwrap();
    for (n, m, k, jn, s0, s1) in [
        (4usize, 3usize, 2usize, 2usize, 1i64, 1i64),
        (5, 6, 3, 4, 4, -1),
        (3, 2, 3, 1, 0, 5),
    ] {
        let xv = random(70 + n as u64, n * m);
        let ins = [
            i64s(n as i64),
            i64s(m as i64),
            i64s(k as i64),
            i64s(jn as i64),
            i64s(s0),
            i64s(s1),
            HostArray::from_f64(F64, &[n, m], &xv).unwrap(),
        ];
        let out = eval_closed_jaxpr(&j, &ins).unwrap();
        let clamp = |s: i64, len: usize, size: usize| s.clamp(0, (len - size) as i64) as usize;
        let want = |rows: usize, cols: usize| {
            let (r0, c0) = (clamp(s0, n, rows), clamp(s1, m, cols));
            let mut v = Vec::new();
            for r in r0..r0 + rows {
                for c in c0..c0 + cols {
                    v.push(xv[r * m + c]);
                }
            }
            v
        };
        assert_eq!(out[0].shape(), &[k, m]);
        assert_eq!(out[0].to_f64_vec(), want(k, m), "n={n} m={m}");
        assert_eq!(out[1].shape(), &[k, jn]);
        assert_eq!(out[1].to_f64_vec(), want(k, jn), "n={n} m={m}");
        assert_eq!(out[2].shape(), &[1, jn]);
        assert_eq!(out[2].to_f64_vec(), want(1, jn), "n={n} m={m}");
    }
}

#[test]
fn grad_through_a_while_loop_whose_carry_grows_is_a_clear_error() {
    // The carry doubles its length each iteration: its per-iteration
    // values have different sizes, so reverse mode reports it.
    let staged = trace_flat_in_type(
        StageMode::Base,
        &InType(vec![
            scalar_entry(DType::I64),
            (
                DynAval {
                    dtype: F64,
                    shape: vec![InDim::DBIdx(0)],
                },
                true,
            ),
        ]),
        |ins| {
            let x = ins[1].clone();
            let g = grad(|x: Array| {
                let y = ok_or_raise(jaxon_trace::control::while_loop_with(
                    false,
                    |a: Array| ok_or_raise(jaxon_trace::dynshape::size_of(&a, 0)).lt(20),
                    |a: Array| {
                        ok_or_raise(jaxon_trace::dynshape::concatenate(&[&a * 1.5, a.sin()], 0))
                    },
                    x,
                ));
                y.sum(jnp::All)
            })(x)?;
            Ok(vec![g])
        },
    );
    let err = staged.expect_err("grad of a growing while_loop must fail");
    let msg = err.to_string();
    assert!(
        msg.contains("while_loop") && msg.contains("loop-invariant"),
        "{msg}"
    );
}

#[test]
fn jit_of_grad_through_for_loop_with_abstracted_axes_compiles_once() {
    let f = jaxon_trace::jit(|(x, w): (Array, Array)| {
        ok_or_raise(grad(|(x, w): (Array, Array)| prog_for(&x, &w, 6))((x, w)))
    })
    .backend("interpreter")
    .abstracted_axes(&[&[(0, "n")], &[(0, "n")]]);
    for n in [2usize, 5, 8] {
        let x = random(80 + n as u64, n);
        let w = random(90 + n as u64, n);
        let (gx, gw) = f.call((arr(&x), arr(&w))).unwrap();
        let (sx, sw) = with_backend("interpreter", || {
            grad(|(x, w): (Array, Array)| prog_for_unrolled(&x, &w, 6))((arr(&x), arr(&w)))
        })
        .unwrap()
        .unwrap();
        assert_close(
            &gx.to_vec::<f64>(),
            &sx.to_vec::<f64>(),
            1e-10,
            &format!("n={n} gx"),
        );
        assert_close(
            &gw.to_vec::<f64>(),
            &sw.to_vec::<f64>(),
            1e-10,
            &format!("n={n} gw"),
        );
    }
    assert_eq!(f.trace_count(), 1);
    assert_eq!(f.compile_count(), 1);
}

/// `sum(dynamic_slice(x, [s], [k]) * w[..k])`-like: the slice's size `k` is
/// traced, so the slice is a gather of `s + iota(k)`; its gradient scatters
/// back into `x`'s dynamic length.
fn prog_slice(x: &Array, w: &Array, s: &Array, k: &Array) -> Array {
    let a = ok_or_raise(jaxon_trace::dynshape::dynamic_slice(
        x,
        std::slice::from_ref(s),
        &[k.into()],
    ));
    let b = ok_or_raise(jaxon_trace::dynshape::dynamic_slice(
        w,
        &[Array::scalar(0i64)],
        &[k.into()],
    ));
    (a.sin() * b).sum(jnp::All)
}

#[test]
fn grad_through_a_dynamic_slice_of_traced_size() {
    let j = trace_dyn(&[DType::I64, DType::I64], |ins| {
        let (s, k, x, w) = (
            ins[1].clone(),
            ins[2].clone(),
            ins[3].clone(),
            ins[4].clone(),
        );
        let (gx, gw) = ok_or_raise(grad(|(x, w): (Array, Array)| prog_slice(&x, &w, &s, &k))((
            x, w,
        )));
        vec![gx, gw]
    });
    for (s, k) in [(1i64, 2i64), (0, 3), (5, 1)] {
        let (sv, kv) = (Array::scalar(s), k as usize);
        check_grad(
            &j,
            &[i64s(s), i64s(k)],
            &|x, w| {
                // lax's dynamic_slice clamps the start as the traced one does.
                let a = ok_or_raise(jaxon_trace::lax::dynamic_slice(
                    &x,
                    std::slice::from_ref(&sv),
                    &[kv],
                ));
                let b = ok_or_raise(jaxon_trace::lax::slice(&w, &[0], &[kv], None));
                (a.sin() * b).sum(jnp::All)
            },
            &[3, 6],
            91 + s as u64,
        );
    }
}
