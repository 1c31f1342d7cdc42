//! Differential tests of the decompositions and solves (`lower/decomp.rs`,
//! `lower/decomp_jacobi.rs`) on `cuda-sim` against the reference
//! interpreter: `cholesky`, `triangular_solve` (every flag, both sides),
//! `lu`, `qr` (reduced and full, tall and wide), `eigh` (either triangle,
//! sorted or not), `svd` (with and without `u`/`vt`, reduced and full,
//! tall, wide and rank-deficient) and `tridiagonal_solve`, on random batches and sizes (0
//! and 1 included) in f32 and f64, with NaN, ±inf and ties for the
//! factorizations; plus reconstructions (`L Lᵀ = A`, `Q R = A`, `P A = L U`,
//! `A V = V diag(w)`, `U diag(s) Vt = A`) of the simulator's results.

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::{awkward, check_with, parse, random, run_lowered, ty, Dist, Rng, Tol};

fn batch(rng: &mut Rng) -> Vec<usize> {
    let r = rng.range(0, 2) as usize;
    (0..r).map(|_| rng.pick(&[1, 2, 3])).collect()
}

fn with(b: &[usize], tail: &[usize]) -> Vec<usize> {
    b.iter().chain(tail).copied().collect()
}

/// Symmetric positive definite matrices `B Bᵀ + n I` of `shape`.
fn spd(rng: &mut Rng, d: DType, shape: &[usize]) -> HostArray {
    let n = shape[shape.len() - 1];
    let nb: usize = shape[..shape.len() - 2].iter().product();
    let mut v = Vec::with_capacity(nb * n * n);
    for _ in 0..nb {
        let b: Vec<f64> = (0..n * n).map(|_| rng.unit() * 2.0 - 1.0).collect();
        for i in 0..n {
            for j in 0..n {
                let s: f64 = (0..n).map(|k| b[i * n + k] * b[j * n + k]).sum();
                v.push(s + if i == j { n as f64 } else { 0.0 });
            }
        }
    }
    HostArray::from_f64(d, shape, &v).expect("spd")
}

fn run(text: &str, args: &[HostArray]) -> Vec<Vec<f64>> {
    let got = run_lowered(&parse(text), args).unwrap_or_else(|e| panic!("{e}\n{text}"));
    got.iter().map(|a| a.to_f64_vec()).collect()
}

#[test]
fn cholesky_matches_and_reconstructs() {
    let mut rng = Rng::new(801);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for trial in 0..8 {
            let b = batch(&mut rng);
            let n = rng.pick(&[0, 1, 2, 3, 5, 7]);
            let shape = with(&b, &[n, n]);
            let text = format!(
                "{{ lambda ; a:{t}. let c:{t} = cholesky a in (c,) }}",
                t = ty(dt, &shape)
            );
            let a = match trial % 4 {
                0 => random(&mut rng, d, &shape, Dist::Uniform(2.0)),
                1 => awkward(&mut rng, d, &shape),
                _ => spd(&mut rng, d, &shape),
            };
            check_with(&text, std::slice::from_ref(&a), Tol::Exact);
            if trial % 4 >= 2 && dt == "f64" && n > 0 {
                let l = &run(&text, std::slice::from_ref(&a))[0];
                let av = a.to_f64_vec();
                for (m, (lm, am)) in l.chunks(n * n).zip(av.chunks(n * n)).enumerate() {
                    for i in 0..n {
                        for j in 0..n {
                            let s: f64 = (0..n).map(|k| lm[i * n + k] * lm[j * n + k]).sum();
                            let e = (s - am[i * n + j]).abs();
                            assert!(e < 1e-10 * (1.0 + am[i * n + j].abs()), "{m} {i} {j}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn triangular_solve_every_flag_and_side() {
    let mut rng = Rng::new(802);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for flags in 0..16u32 {
            let [left, lower, trans, unit] = [0, 1, 2, 3].map(|i| flags >> i & 1 == 1);
            let b = batch(&mut rng);
            let m = rng.pick(&[0, 1, 2, 3, 5, 7]);
            let k = rng.pick(&[0, 1, 3, 4]);
            let bt = if left { [m, k] } else { [k, m] };
            let (ashape, bshape) = (with(&b, &[m, m]), with(&b, &bt));
            let py = |x: bool| if x { "True" } else { "False" };
            let text = format!(
                "{{ lambda ; a:{ta} b:{tb}. let c:{tb} = triangular_solve[conjugate_a=False left_side={} lower={} transpose_a={} unit_diagonal={}] a b in (c,) }}",
                py(left),
                py(lower),
                py(trans),
                py(unit),
                ta = ty(dt, &ashape),
                tb = ty(dt, &bshape)
            );
            let a = random(&mut rng, d, &ashape, Dist::Between(0.5, 2.0));
            let bv = random(&mut rng, d, &bshape, Dist::Uniform(3.0));
            check_with(&text, &[a, bv], Tol::Exact);
        }
    }
}

#[test]
fn lu_matches_with_ties_and_nans_and_reconstructs() {
    let mut rng = Rng::new(803);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for trial in 0..10 {
            let b = batch(&mut rng);
            let (m, n) = (rng.pick(&[0, 1, 2, 3, 5]), rng.pick(&[1, 2, 3, 4, 6]));
            let shape = with(&b, &[m, n]);
            let k = m.min(n);
            let text = format!(
                "{{ lambda ; a:{t}. let c:{t} p:{tp} q:{tq} = lu a in (c, p, q) }}",
                t = ty(dt, &shape),
                tp = ty("i32", &with(&b, &[k])),
                tq = ty("i32", &with(&b, &[m]))
            );
            let a = match trial % 3 {
                0 => awkward(&mut rng, d, &shape),
                1 => {
                    let ints = random(&mut rng, DType::I32, &shape, Dist::Uniform(2.0));
                    HostArray::from_f64(d, &shape, &ints.to_f64_vec()).expect("ties")
                }
                _ => random(&mut rng, d, &shape, Dist::Uniform(2.0)),
            };
            check_with(&text, std::slice::from_ref(&a), Tol::Exact);
            if trial % 3 == 2 && dt == "f64" {
                let r = run(&text, std::slice::from_ref(&a));
                let av = a.to_f64_vec();
                let nb: usize = b.iter().product();
                for t in 0..nb {
                    let f = &r[0][t * m * n..(t + 1) * m * n];
                    let perm = &r[2][t * m..(t + 1) * m];
                    for i in 0..m {
                        for j in 0..n {
                            // (L U)[i, j] over q <= min(i, j), q < k; L has a unit diagonal.
                            let s: f64 = (0..=i.min(j).min(k - 1))
                                .map(|q| {
                                    let l = if q == i { 1.0 } else { f[i * n + q] };
                                    l * f[q * n + j]
                                })
                                .sum();
                            let want = av[t * m * n + perm[i] as usize * n + j];
                            assert!((s - want).abs() < 1e-10 * (1.0 + want.abs()));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn qr_matches_and_reconstructs() {
    let mut rng = Rng::new(804);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for trial in 0..10 {
            let b = batch(&mut rng);
            // No empty matrices: the interpreter refuses `qr` of an `m x 0`
            // matrix with `full_matrices=True` (its `q` is not empty).
            let (m, n) = (rng.pick(&[1, 2, 3, 5]), rng.pick(&[1, 2, 3, 4, 6]));
            let full = trial % 2 == 0;
            let qc = if full { m } else { m.min(n) };
            let text = format!(
                "{{ lambda ; a:{t}. let q:{tq} r:{tr} = qr[full_matrices={} pivoting=False use_magma=None] a in (q, r) }}",
                if full { "True" } else { "False" },
                t = ty(dt, &with(&b, &[m, n])),
                tq = ty(dt, &with(&b, &[m, qc])),
                tr = ty(dt, &with(&b, &[qc, n]))
            );
            let a = random(&mut rng, d, &with(&b, &[m, n]), Dist::Uniform(2.0));
            // `hypot` is computed as `s sqrt(1 + (t/s)²)`: within ulps.
            let tol = if dt == "f64" {
                Tol::Rel(1e-13)
            } else {
                Tol::Rel(1e-6)
            };
            check_with(&text, std::slice::from_ref(&a), tol);
            if dt == "f64" {
                let r = run(&text, std::slice::from_ref(&a));
                let av = a.to_f64_vec();
                let nb: usize = b.iter().product();
                for t in 0..nb {
                    let (q, rr) = (&r[0][t * m * qc..], &r[1][t * qc * n..]);
                    for i in 0..m {
                        for j in 0..n {
                            let s: f64 = (0..qc).map(|c| q[i * qc + c] * rr[c * n + j]).sum();
                            let want = av[t * m * n + i * n + j];
                            assert!((s - want).abs() < 1e-12 * (1.0 + want.abs()));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn eigh_matches_and_reconstructs() {
    let mut rng = Rng::new(805);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for trial in 0..8 {
            let b = batch(&mut rng);
            let n = rng.pick(&[0, 1, 2, 3, 5, 7]);
            let (lower, sort) = (trial % 2 == 0, trial % 4 != 3);
            let shape = with(&b, &[n, n]);
            let py = |x: bool| if x { "True" } else { "False" };
            let text = format!(
                "{{ lambda ; a:{t}. let v:{t} w:{tw} = eigh[algorithm=None lower={} sort_eigenvalues={} subset_by_index=None] a in (v, w) }}",
                py(lower),
                py(sort),
                t = ty(dt, &shape),
                tw = ty(dt, &with(&b, &[n]))
            );
            let a = if trial == 5 {
                awkward(&mut rng, d, &shape)
            } else {
                random(&mut rng, d, &shape, Dist::Uniform(2.0))
            };
            check_with(&text, std::slice::from_ref(&a), Tol::Exact);
            if dt == "f64" && trial != 5 {
                let r = run(&text, std::slice::from_ref(&a));
                let av = a.to_f64_vec();
                let nb: usize = b.iter().product();
                for t in 0..nb {
                    let (v, w) = (&r[0][t * n * n..], &r[1][t * n..]);
                    let sym = |i: usize, j: usize| {
                        let (r, c) = if (i >= j) == lower { (i, j) } else { (j, i) };
                        av[t * n * n + r * n + c]
                    };
                    for i in 0..n {
                        for c in 0..n {
                            let s: f64 = (0..n).map(|k| sym(i, k) * v[k * n + c]).sum();
                            assert!((s - w[c] * v[i * n + c]).abs() < 1e-9, "{t} {i} {c}");
                        }
                    }
                    if sort {
                        assert!(w[..n].windows(2).all(|p| p[0] <= p[1]));
                    }
                }
            }
        }
    }
}

#[test]
fn tridiagonal_solve_matches() {
    let mut rng = Rng::new(806);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for _ in 0..8 {
            let b = batch(&mut rng);
            let (m, n) = (rng.pick(&[0, 1, 2, 3, 5, 7]), rng.pick(&[0, 1, 2, 4]));
            let (td, tb) = (ty(dt, &with(&b, &[m])), ty(dt, &with(&b, &[m, n])));
            let text = format!(
                "{{ lambda ; dl:{td} d:{td} du:{td} b:{tb}. let x:{tb} = tridiagonal_solve[perturb_singular=False] dl d du b in (x,) }}"
            );
            let dl = random(&mut rng, d, &with(&b, &[m]), Dist::Uniform(1.0));
            let dd = random(&mut rng, d, &with(&b, &[m]), Dist::Between(3.0, 4.0));
            let du = random(&mut rng, d, &with(&b, &[m]), Dist::Uniform(1.0));
            let bv = random(&mut rng, d, &with(&b, &[m, n]), Dist::Uniform(3.0));
            check_with(&text, &[dl, dd, du, bv], Tol::Exact);
        }
    }
}

#[test]
fn svd_matches_and_reconstructs() {
    let mut rng = Rng::new(807);
    for dt in ["f32", "f64"] {
        let d = DType::from_name(dt).expect("dtype");
        for trial in 0..12 {
            let b = batch(&mut rng);
            let (m, n) = (rng.pick(&[1, 2, 3, 5]), rng.pick(&[1, 2, 3, 4, 6]));
            let (kk, full, uv) = (m.min(n), trial % 2 == 0, trial % 3 != 2);
            let (uc, vr) = if full { (m, n) } else { (kk, kk) };
            let py = |x: bool| if x { "True" } else { "False" };
            let outs = if uv {
                format!(
                    "s:{} u:{} v:{}",
                    ty(dt, &with(&b, &[kk])),
                    ty(dt, &with(&b, &[m, uc])),
                    ty(dt, &with(&b, &[vr, n]))
                )
            } else {
                format!("s:{}", ty(dt, &with(&b, &[kk])))
            };
            let names = if uv { "s, u, v" } else { "s," };
            let text = format!(
                "{{ lambda ; a:{t}. let {outs} = svd[algorithm=None compute_uv={} full_matrices={} subset_by_index=None] a in ({names}) }}",
                py(uv),
                py(full),
                t = ty(dt, &with(&b, &[m, n]))
            );
            let shape = with(&b, &[m, n]);
            let a = match trial % 4 {
                // Rank-deficient: repeated rows (u is completed).
                1 => {
                    let row = random(&mut rng, d, &[n], Dist::Uniform(2.0)).to_f64_vec();
                    let vals: Vec<f64> = (0..shape.iter().product::<usize>())
                        .map(|i| row[i % n] * ((i / n) % m + 1) as f64)
                        .collect();
                    HostArray::from_f64(d, &shape, &vals).expect("rank one")
                }
                3 => awkward(&mut rng, d, &shape),
                _ => random(&mut rng, d, &shape, Dist::Uniform(2.0)),
            };
            check_with(&text, std::slice::from_ref(&a), Tol::Exact);
            if dt == "f64" && uv && trial % 4 != 3 {
                let r = run(&text, std::slice::from_ref(&a));
                let av = a.to_f64_vec();
                let nb: usize = b.iter().product();
                for t in 0..nb {
                    let (s, u, v) = (&r[0][t * kk..], &r[1][t * m * uc..], &r[2][t * vr * n..]);
                    for i in 0..m {
                        for j in 0..n {
                            let x: f64 = (0..kk).map(|q| u[i * uc + q] * s[q] * v[q * n + j]).sum();
                            let want = av[t * m * n + i * n + j];
                            assert!((x - want).abs() < 1e-10 * (1.0 + want.abs()), "{t} {i} {j}");
                        }
                    }
                    assert!(s[..kk].windows(2).all(|p| p[0] >= p[1]));
                }
            }
        }
    }
}
