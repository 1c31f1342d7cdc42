//! Transposition of conv_general_dilated (both operands, groups, dilation,
//! negative padding), of set-scatters with repeated indices, and the
//! cumprod jvp at zeros: jvp against central differences in f64, vjp
//! against jvp (`<ct, J t> == <Jᵀ ct, t>`), and grad under `jit`.

use jaxon_ir::primitive::{
    ConvDimensionNumbers, CumulativeOp, GatherScatterMode, Ints, ScatterDimensionNumbers,
    ScatterKind,
};
use jaxon_ir::primitive::{ConvGeneralDilatedParams, Indexing, Linalg, ScatterParams};
use jaxon_ir::Primitive;
use jaxon_trace::numpy::All;
use jaxon_trace::{bind1, catch, jit, lax, Array};
use jaxon_transforms::{grad, jvp, vjp};

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

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// jvp vs central differences and vjp vs jvp for `f` at `xs` (all inputs
/// perturbed together along random tangents).
fn check(
    name: &str,
    f: impl Fn(Vec<Array>) -> Array + Clone,
    xs: &[Vec<f64>],
    shapes: &[&[usize]],
    seed: u64,
) {
    let arrays = |vs: &[Vec<f64>]| -> Vec<Array> {
        vs.iter()
            .zip(shapes)
            .map(|(v, s)| Array::from_vec(v.clone(), s))
            .collect()
    };
    let ts: Vec<Vec<f64>> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| rand(x.len(), seed + 100 + i as u64, -1.0, 1.0))
        .collect();
    let (y, jt) = jvp(f.clone(), arrays(xs), arrays(&ts)).unwrap();
    let jt = jt.to_vec::<f64>();
    let eps = 1e-6;
    let at = |s: f64| {
        let moved: Vec<Vec<f64>> = xs
            .iter()
            .zip(&ts)
            .map(|(x, t)| x.iter().zip(t).map(|(a, b)| a + s * b).collect())
            .collect();
        catch(|| f(arrays(&moved))).unwrap().to_vec::<f64>()
    };
    let (p, m) = (at(eps), at(-eps));
    for i in 0..jt.len() {
        let fd = (p[i] - m[i]) / (2.0 * eps);
        assert!(
            (jt[i] - fd).abs() < 1e-6 * (1.0 + fd.abs()),
            "{name}: jvp[{i}] {} vs fd {fd}",
            jt[i]
        );
    }
    let ct = rand(jt.len(), seed + 200, -1.0, 1.0);
    let (_, pb) = vjp(f, arrays(xs)).unwrap();
    let g: Vec<Array> = pb.call(Array::from_vec(ct.clone(), &y.shape())).unwrap();
    let l = dot(&ct, &jt);
    let r: f64 = g
        .iter()
        .zip(&ts)
        .map(|(g, t)| dot(&g.to_vec::<f64>(), t))
        .sum();
    assert!(
        (l - r).abs() < 1e-9 * (1.0 + l.abs()),
        "{name}: <ct,Jt>={l} <J^T ct,t>={r}"
    );
}

struct Cfg {
    name: &'static str,
    lhs: Vec<usize>,
    rhs: Vec<usize>,
    strides: Vec<usize>,
    padding: Vec<(i64, i64)>,
    lhs_dil: Vec<usize>,
    rhs_dil: Vec<usize>,
    specs: [Vec<usize>; 3],
    fg: usize,
    bg: usize,
}

impl Cfg {
    fn prim(&self) -> Primitive {
        Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
            window_strides: self.strides.clone(),
            padding: self.padding.clone(),
            lhs_dilation: self.lhs_dil.clone(),
            rhs_dilation: self.rhs_dil.clone(),
            dimension_numbers: ConvDimensionNumbers {
                lhs_spec: self.specs[0].clone(),
                rhs_spec: self.specs[1].clone(),
                out_spec: self.specs[2].clone(),
            },
            feature_group_count: self.fg,
            batch_group_count: self.bg,
            precision: None,
            preferred_element_type: None,
        }))
    }
}

fn configs() -> Vec<Cfg> {
    let nchw = || [vec![0, 1, 2, 3], vec![0, 1, 2, 3], vec![0, 1, 2, 3]];
    vec![
        Cfg {
            name: "1d NWC stride 2",
            lhs: vec![2, 9, 3],
            rhs: vec![3, 3, 4],
            strides: vec![2],
            padding: vec![(0, 0)],
            lhs_dil: vec![1],
            rhs_dil: vec![1],
            specs: [vec![0, 2, 1], vec![2, 1, 0], vec![0, 2, 1]],
            fg: 1,
            bg: 1,
        },
        Cfg {
            name: "2d NCHW stride, rhs dilation, padding",
            lhs: vec![2, 1, 7, 6],
            rhs: vec![2, 1, 2, 3],
            strides: vec![2, 1],
            padding: vec![(1, 1), (2, 0)],
            lhs_dil: vec![1, 1],
            rhs_dil: vec![2, 1],
            specs: nchw(),
            fg: 1,
            bg: 1,
        },
        Cfg {
            name: "2d lhs dilation, negative padding",
            lhs: vec![1, 2, 5, 4],
            rhs: vec![3, 2, 3, 2],
            strides: vec![1, 2],
            padding: vec![(-1, 2), (1, -1)],
            lhs_dil: vec![2, 1],
            rhs_dil: vec![1, 2],
            specs: nchw(),
            fg: 1,
            bg: 1,
        },
        Cfg {
            name: "2d feature groups",
            lhs: vec![1, 4, 4, 4],
            rhs: vec![6, 2, 3, 3],
            strides: vec![1, 1],
            padding: vec![(0, 0), (0, 0)],
            lhs_dil: vec![1, 1],
            rhs_dil: vec![1, 1],
            specs: nchw(),
            fg: 2,
            bg: 1,
        },
        Cfg {
            name: "2d NHWC/HWIO feature groups, stride, padding",
            lhs: vec![2, 5, 4, 6],
            rhs: vec![2, 3, 2, 6],
            strides: vec![2, 1],
            padding: vec![(1, 0), (0, 1)],
            lhs_dil: vec![1, 1],
            rhs_dil: vec![1, 1],
            specs: [vec![0, 3, 1, 2], vec![3, 2, 0, 1], vec![0, 3, 1, 2]],
            fg: 3,
            bg: 1,
        },
        Cfg {
            name: "1d batch groups",
            lhs: vec![4, 3, 6],
            rhs: vec![6, 3, 2],
            strides: vec![1],
            padding: vec![(1, 0)],
            lhs_dil: vec![1],
            rhs_dil: vec![2],
            specs: [vec![0, 1, 2], vec![0, 1, 2], vec![0, 1, 2]],
            fg: 1,
            bg: 2,
        },
        Cfg {
            name: "1d NWC batch groups, stride",
            lhs: vec![6, 7, 2],
            rhs: vec![3, 2, 3],
            strides: vec![2],
            padding: vec![(0, 1)],
            lhs_dil: vec![1],
            rhs_dil: vec![1],
            specs: [vec![0, 2, 1], vec![2, 1, 0], vec![0, 2, 1]],
            fg: 1,
            bg: 3,
        },
    ]
}

#[test]
fn conv_transpose_both_operands() {
    for (k, c) in configs().into_iter().enumerate() {
        let p = c.prim();
        let n = |s: &[usize]| s.iter().product::<usize>();
        let x = rand(n(&c.lhs), 300 + k as u64, -1.0, 1.0);
        let w = rand(n(&c.rhs), 400 + k as u64, -1.0, 1.0);
        // Both operands vary: the jvp binds the conv with a tangent in each
        // slot, and the vjp transposes with respect to each of them.
        let both = {
            let p = p.clone();
            move |v: Vec<Array>| bind1(&p, &[v[0].clone(), v[1].clone()]).unwrap()
        };
        check(
            c.name,
            both,
            &[x.clone(), w.clone()],
            &[&c.lhs, &c.rhs],
            500 + k as u64,
        );
        // A nonlinear function of each operand alone.
        let wa = Array::from_vec(w.clone(), &c.rhs);
        let lhs_only = {
            let p = p.clone();
            move |v: Vec<Array>| bind1(&p, &[v[0].sin(), wa.clone()]).unwrap().square()
        };
        check(
            c.name,
            lhs_only,
            std::slice::from_ref(&x),
            &[&c.lhs],
            600 + k as u64,
        );
        let xa = Array::from_vec(x, &c.lhs);
        let rhs_only = move |v: Vec<Array>| {
            bind1(&p, &[xa.clone(), v[0].clone() * 1.5])
                .unwrap()
                .square()
        };
        check(c.name, rhs_only, &[w], &[&c.rhs], 700 + k as u64);
    }
}

#[test]
fn conv_grad_under_jit_matches_eager() {
    for c in configs() {
        let p = c.prim();
        let x = Array::from_vec(rand(c.lhs.iter().product(), 800, -1.0, 1.0), &c.lhs);
        let w = Array::from_vec(rand(c.rhs.iter().product(), 801, -1.0, 1.0), &c.rhs);
        let loss = move |v: (Array, Array)| bind1(&p, &[v.0, v.1]).unwrap().square().sum(All);
        let eager: (Array, Array) = grad(loss.clone())((x.clone(), w.clone())).unwrap();
        let jitted = jit(move |v: (Array, Array)| grad(loss.clone())(v).unwrap());
        let staged: (Array, Array) = jitted.call((x, w)).unwrap();
        for (a, b) in [(&eager.0, &staged.0), (&eager.1, &staged.1)] {
            let (a, b) = (a.to_vec::<f64>(), b.to_vec::<f64>());
            assert!(
                a.iter().any(|v| v.abs() > 1e-3),
                "{}: zero gradient",
                c.name
            );
            for (u, v) in a.iter().zip(&b) {
                assert!(
                    (u - v).abs() < 1e-12 * (1.0 + u.abs()),
                    "{}: {u} vs {v}",
                    c.name
                );
            }
        }
    }
}

fn scatter_rows(mode: GatherScatterMode) -> Primitive {
    Primitive::Indexing(Indexing::Scatter(ScatterParams {
        kind: ScatterKind::Set,
        dimension_numbers: ScatterDimensionNumbers {
            update_window_dims: Ints::new(vec![1]),
            inserted_window_dims: Ints::new(vec![0]),
            scatter_dims_to_operand_dims: Ints::new(vec![0]),
            operand_batching_dims: Ints::new(vec![]),
            scatter_indices_batching_dims: Ints::new(vec![]),
        },
        indices_are_sorted: false,
        mode,
        unique_indices: false,
        update_jaxpr: None,
    }))
}

#[test]
fn scatter_set_with_repeated_indices() {
    // Rows 1 and 3 are each written twice, row 9 is out of bounds.
    let idx = Array::from_vec(vec![1i32, 3, 1, 0, 3, 9], &[6, 1]);
    for mode in [GatherScatterMode::FillOrDrop, GatherScatterMode::Clip] {
        let p = scatter_rows(mode);
        let f = {
            let (p, idx) = (p.clone(), idx.clone());
            move |v: Vec<Array>| bind1(&p, &[v[0].sin(), idx.clone(), v[1].clone() * 2.0]).unwrap()
        };
        let x = rand(15, 900, -1.0, 1.0);
        let u = rand(12, 901, -1.0, 1.0);
        check(
            "scatter set",
            f.clone(),
            &[x.clone(), u.clone()],
            &[&[5, 3], &[6, 2]],
            902,
        );

        // The cotangent goes to the update that won each row and to the
        // operand rows nobody wrote; everything else gets zero.
        let xa = Array::from_vec(x.clone(), &[5, 3]);
        let ua = Array::from_vec(u.clone(), &[6, 2]);
        let ct = rand(15, 903, -1.0, 1.0);
        let (_, pb) = vjp(f, vec![xa, ua]).unwrap();
        let g: Vec<Array> = pb.call(Array::from_vec(ct.clone(), &[5, 3])).unwrap();
        let (gx, gu) = (g[0].to_vec::<f64>(), g[1].to_vec::<f64>());
        // Window of 2 columns into rows of 3: column 2 is never written.
        let winner = |row: usize| -> Option<usize> {
            let rows: Vec<usize> = [1usize, 3, 1, 0, 3, 9]
                .iter()
                .map(|&r| {
                    if mode == GatherScatterMode::Clip {
                        r.min(4)
                    } else {
                        r
                    }
                })
                .collect();
            (0..6).rev().find(|&k| rows[k] == row)
        };
        for r in 0..5 {
            for col in 0..3 {
                let written = col < 2 && winner(r).is_some();
                let want = if written {
                    0.0
                } else {
                    ct[r * 3 + col] * x[r * 3 + col].cos()
                };
                assert!(
                    (gx[r * 3 + col] - want).abs() < 1e-12,
                    "{mode:?} gx[{r},{col}]"
                );
            }
        }
        for k in 0..6 {
            for col in 0..2 {
                let row = if mode == GatherScatterMode::Clip {
                    [1usize, 3, 1, 0, 3, 9][k].min(4)
                } else {
                    [1, 3, 1, 0, 3, 9][k]
                };
                let wins = row < 5 && winner(row) == Some(k);
                let want = if wins { 2.0 * ct[row * 3 + col] } else { 0.0 };
                assert!(
                    (gu[k * 2 + col] - want).abs() < 1e-12,
                    "{mode:?} gu[{k},{col}]: {} vs {want}",
                    gu[k * 2 + col]
                );
            }
        }
    }
}

#[test]
fn cumprod_jvp_with_zeros() {
    // Exact zeros (and a repeated one) where y·cumsum(t/x) divides by 0.
    let mut x = rand(12, 950, -1.5, 1.5);
    x[2] = 0.0;
    x[7] = 0.0;
    x[8] = 0.0;
    for (shape, axis) in [(&[12][..], 0), (&[3, 4][..], 1), (&[4, 3][..], 0)] {
        for reverse in [false, true] {
            let f = move |v: Vec<Array>| {
                lax::cumulative(CumulativeOp::Cumprod, &v[0], axis, reverse).unwrap()
            };
            check(
                &format!("cumprod {shape:?} {axis} {reverse}"),
                f,
                &[x.clone()],
                &[shape],
                960,
            );
            // Against the closed form Σ_j t_j Π_{k≠j} x_k on the 1-D case.
            if shape.len() == 1 {
                let t = rand(12, 961, -1.0, 1.0);
                let (_, jt) = jvp(
                    |v: Array| lax::cumulative(CumulativeOp::Cumprod, &v, 0, reverse).unwrap(),
                    Array::from_vec(x.clone(), &[12]),
                    Array::from_vec(t.clone(), &[12]),
                )
                .unwrap();
                let jt = jt.to_vec::<f64>();
                for (i, got) in jt.iter().enumerate() {
                    let range: Vec<usize> = if reverse {
                        (i..12).collect()
                    } else {
                        (0..=i).collect()
                    };
                    let want: f64 = range
                        .iter()
                        .map(|&j| {
                            t[j] * range
                                .iter()
                                .filter(|&&k| k != j)
                                .map(|&k| x[k])
                                .product::<f64>()
                        })
                        .sum();
                    assert!(
                        (got - want).abs() < 1e-12,
                        "cumprod jvp[{i}] {got} vs {want}",
                    );
                }
            }
        }
    }
}
