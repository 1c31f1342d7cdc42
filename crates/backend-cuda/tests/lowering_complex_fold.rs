//! The order-dependent complex reductions on `cuda-sim` (or the GPU under
//! `JAXON_LOWERING_BACKEND=cuda`) against the reference interpreter, on
//! `c64` and `c128`: `reduce_max`/`reduce_min` (a sequential fold in
//! element order, compared bit for bit, NaN and signed-zero parts
//! included), `cumprod` (forward and reversed, within a few ulps; NaN in
//! the same parts), `sort` with complex keys and payloads (`argsort` and
//! several keys; bit for bit), `top_k` (the total order, bit for bit), on shapes with empty, one-element and odd
//! axes, random and awkward values (NaN, infinite, signed-zero parts and
//! many ties of the real part). `cummax`/`cummin` on complex values, which
//! the interpreter does not define, stay refused by name.

mod lowering_util;
use jaxon_ir::{DType, IrError};
use lowering_util::complex::{cawkward, check, check_exact, crandom, name, real_name, tol, ty};
use lowering_util::{parse, random, run_lowered, tuple, Dist, Rng};

const DTYPES: [DType; 2] = [DType::C64, DType::C128];

#[test]
fn complex_reduce_max_and_min_fold_in_element_order() {
    let cases: [(&[usize], &[usize]); 12] = [
        (&[0], &[0]),
        (&[1], &[0]),
        (&[7], &[0]),
        (&[], &[]),
        (&[3, 5], &[0]),
        (&[3, 5], &[1]),
        (&[3, 5], &[0, 1]),
        (&[0, 3], &[1]),
        (&[3, 0], &[1]),
        (&[2, 3, 5], &[0, 2]),
        (&[4, 1, 9], &[1, 2]),
        (&[33, 7], &[0]),
    ];
    let mut rng = Rng::new(191);
    for d in DTYPES {
        let c = name(d);
        for (s, axes) in cases {
            let out: Vec<usize> = (0..s.len())
                .filter(|k| !axes.contains(k))
                .map(|k| s[k])
                .collect();
            let (t, o, ax) = (ty(c, s), ty(c, &out), tuple(axes));
            let text = format!(
                "{{ lambda ; a:{t}. let
    b:{o} = reduce_max[axes={ax} out_sharding=None] a
    c:{o} = reduce_min[axes={ax} out_sharding=None] a
  in (b, c) }}"
            );
            for x in [crandom(&mut rng, d, s, 2.0), cawkward(&mut rng, d, s)] {
                check_exact(&text, &[x]);
            }
        }
    }
}

#[test]
fn complex_cumprod_matches_the_interpreter() {
    let cases: [(&[usize], usize); 9] = [
        (&[0], 0),
        (&[1], 0),
        (&[7], 0),
        (&[3, 5], 0),
        (&[3, 5], 1),
        (&[0, 4], 1),
        (&[4, 0], 0),
        (&[2, 3, 5], 1),
        (&[2, 33, 3], 1),
    ];
    let mut rng = Rng::new(192);
    for d in DTYPES {
        let c = name(d);
        for (s, axis) in cases {
            for reverse in ["False", "True"] {
                let t = ty(c, s);
                let text = format!(
                    "{{ lambda ; a:{t}. let
    b:{t} = cumprod[axis={axis} reverse={reverse}] a
    c:{t} = cumsum[axis={axis} reverse={reverse}] a
  in (b, c) }}"
                );
                // Parts near 1 in magnitude keep long products finite.
                check(&text, &[crandom(&mut rng, d, s, 1.1)], tol(d), false);
                check(&text, &[cawkward(&mut rng, d, s)], tol(d), false);
            }
        }
    }
}

#[test]
fn complex_sort_is_lexicographic_and_stable() {
    let mut rng = Rng::new(193);
    for d in DTYPES {
        let (c, r) = (name(d), real_name(d));
        let lines: [(&[usize], usize); 8] = [
            (&[0], 0),
            (&[1], 0),
            (&[7], 0),
            (&[3, 5], 0),
            (&[3, 5], 1),
            (&[5, 0], 1),
            (&[2, 37, 3], 1),
            (&[2, 1100], 1),
        ];
        for (s, axis) in lines {
            let (t, rt, it) = (ty(c, s), ty(r, s), ty("i32", s));
            let one =
                format!("{{ lambda ; a:{t}. let b:{t} = sort[dimension={axis} is_stable=True num_keys=1] a in (b,) }}");
            let many = format!(
                "{{ lambda ; a:{t} b:{t} i:{it} x:{rt}. let
    c:{t} j:{it} = sort[dimension={axis} is_stable=True num_keys=1] a i
    e:{t} f:{t} k:{it} = sort[dimension={axis} is_stable=True num_keys=2] a b i
    y:{rt} g:{t} = sort[dimension={axis} is_stable=True num_keys=1] x a
    h:{t} z:{rt} l:{it} = sort[dimension={axis} is_stable=True num_keys=1] b x i
  in (c, j, e, f, k, y, g, h, z, l) }}"
            );
            for k in 0..2 {
                let gen = |rng: &mut Rng| {
                    if k == 0 {
                        crandom(rng, d, s, 2.0)
                    } else {
                        cawkward(rng, d, s)
                    }
                };
                let (a, b) = (gen(&mut rng), gen(&mut rng));
                let rd = d.real_dtype();
                let x = if k == 0 {
                    random(&mut rng, rd, s, Dist::Uniform(2.0))
                } else {
                    lowering_util::awkward(&mut rng, rd, s)
                };
                let n: usize = s.iter().product();
                let idx: Vec<f64> = (0..n).map(|i| i as f64).collect();
                let i = jaxon_ir::HostArray::from_f64(DType::I32, s, &idx).expect("indices");
                check_exact(&one, std::slice::from_ref(&a));
                check_exact(&many, &[a, b, i, x]);
            }
        }
    }
}

#[test]
fn complex_cummax_and_cummin_stay_refused() {
    for d in DTYPES {
        let t = ty(name(d), &[3, 4]);
        for op in ["cummax", "cummin"] {
            let text =
                format!("{{ lambda ; a:{t}. let b:{t} = {op}[axis=1 reverse=False] a in (b,) }}");
            let x = crandom(&mut Rng::new(194), d, &[3, 4], 1.0);
            // The interpreter refuses them too.
            assert!(jaxon_ir::eval_closed_jaxpr(&parse(&text), std::slice::from_ref(&x)).is_err());
            match run_lowered(&parse(&text), &[x]) {
                Err(IrError::Unsupported { primitive, .. }) => assert_eq!(primitive, op),
                other => panic!("{op} on {}: expected Unsupported, got {other:?}", name(d)),
            }
        }
    }
}

/// `x` with every other NaN part made a negative NaN.
fn with_negative_nans(x: &jaxon_ir::HostArray) -> jaxon_ir::HostArray {
    let mut flip = false;
    let mut neg = |v: f64| {
        if v.is_nan() {
            flip = !flip;
            if flip {
                return -f64::NAN;
            }
        }
        v
    };
    let v: Vec<num_complex::Complex64> = x
        .to_c128_vec()
        .into_iter()
        .map(|z| num_complex::Complex64::new(neg(z.re), neg(z.im)))
        .collect();
    jaxon_ir::HostArray::from_c128(x.dtype(), x.shape(), &v).expect("array")
}

#[test]
fn complex_top_k_descends_in_the_total_order() {
    let cases: [(&[usize], usize, usize); 8] = [
        (&[0], 0, 0),
        (&[1], 0, 1),
        (&[7], 0, 3),
        (&[3, 5], 1, 5),
        (&[5, 3], 0, 2),
        (&[2, 37, 3], 1, 11),
        (&[4, 0], 1, 0),
        (&[2, 600], 1, 7),
    ];
    let mut rng = Rng::new(195);
    for d in DTYPES {
        let c = name(d);
        for (s, axis, k) in cases {
            let mut o = s.to_vec();
            o[axis] = k;
            let (t, ot, it) = (ty(c, s), ty(c, &o), ty("i32", &o));
            let text = format!(
                "{{ lambda ; a:{t}. let b:{ot} i:{it} = top_k[axis={axis} k={k}] a in (b, i) }}"
            );
            let awkward = cawkward(&mut rng, d, s);
            for x in [
                crandom(&mut rng, d, s, 2.0),
                with_negative_nans(&awkward),
                awkward,
            ] {
                check_exact(&text, &[x]);
            }
        }
    }
}

/// The folds inside a `scan` body: the rewrite's own `scan` nests in the
/// source one, and the sort runs on each step's values.
#[test]
fn complex_folds_inside_a_scan_body() {
    let mut rng = Rng::new(196);
    for d in DTYPES {
        let c = name(d);
        let (t3, t5, t53) = (ty(c, &[3, 5]), ty(c, &[5]), ty(c, &[5, 3]));
        let (t73, t75) = (ty(c, &[7, 3, 5]), ty(c, &[7, 5]));
        let t753 = ty(c, &[7, 5, 3]);
        let text = format!(
            "{{ lambda ; a:{t5} xs:{t73}. let
    b:{t5} ys:{t75} zs:{t753} = scan[
      jaxpr={{ lambda ; u:{t5} x:{t3}. let
          m:{t5} = reduce_max[axes=(0,) out_sharding=None] x
          p:{t3} = cumprod[axis=1 reverse=False] x
          q:{t5} = reduce_min[axes=(0,) out_sharding=None] p
          s:{t5} = sort[dimension=0 is_stable=True num_keys=1] q
          v:{t5} = mul u m
          w:{t5} = add v s
          r:{t53} = transpose[permutation=(1, 0)] p
        in (w, m, r) }}
      length=7
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a xs
  in (b, ys, zs) }}"
        );
        let args = [
            crandom(&mut rng, d, &[5], 1.0),
            crandom(&mut rng, d, &[7, 3, 5], 1.0),
        ];
        check(&text, &args, tol(d), false);
    }
}
