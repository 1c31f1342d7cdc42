//! Complex dtypes and `fft` on `cuda-sim` (or the GPU under
//! `JAXON_LOWERING_BACKEND=cuda`) against the reference interpreter:
//! every complex primitive the rewrite lowers, on `c64` and `c128`, on
//! random shapes including empty, one-element and odd ones; the
//! elementwise ops again on values with NaN, infinite and signed-zero
//! parts; FFT, IFFT, RFFT and IRFFT on lengths 1, 2, 3, 5, 8, 12, 17 and 64
//! over one to three trailing axes.
//!
//! Invariant of the comparison (`lowering_util/complex.rs`): a part is NaN in both results or neither;
//! otherwise parts differ by at most `rel` times the larger of the
//! element's magnitude and the array's largest magnitude scaled by
//! `scale_rel` (for sums and transforms, whose error scales with the
//! whole array).

mod lowering_util;
use jaxon_ir::{DType, HostArray};
use lowering_util::complex::{
    cawkward, check, crandom, jax_name, name, real_name, rrandom, tol, ty,
};
use lowering_util::{tuple, Rng};
use num_complex::Complex64;

const UNARY: [&str; 23] = [
    "neg", "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "sign", "sin", "cos", "tan",
    "tanh", "sinh", "cosh", "logistic", "square", "asin", "acos", "atan", "asinh", "acosh",
    "atanh",
];

fn shapes(rng: &mut Rng) -> Vec<Vec<usize>> {
    vec![
        vec![0],
        vec![1],
        vec![],
        vec![7],
        vec![3, 5],
        rng.shape(3, 4),
    ]
}

#[test]
fn complex_elementwise_match_the_interpreter() {
    let mut rng = Rng::new(11);
    for d in [DType::C64, DType::C128] {
        let (c, r) = (name(d), real_name(d));
        for s in shapes(&mut rng) {
            let t = ty(c, &s);
            let rt = ty(r, &s);
            let bt = ty("bool", &s);
            for (k, args) in [crandom(&mut rng, d, &s, 2.0), cawkward(&mut rng, d, &s)]
                .into_iter()
                .enumerate()
            {
                let y = crandom(&mut rng, d, &s, 2.0);
                let y = if k == 0 { y } else { cawkward(&mut rng, d, &s) };
                for op in UNARY {
                    let text = format!("{{ lambda ; a:{t}. let b:{t} = {op} a in (b,) }}");
                    check(&text, std::slice::from_ref(&args), tol(d), false);
                }
                let text = format!(
                    "{{ lambda ; a:{t} b:{t}. let
    c:{t} = add a b
    d:{t} = sub a b
    e:{t} = mul a b
    f:{t} = div a b
    g:{rt} = abs a
    h:bool{sh} = eq a b
    i:bool{sh} = ne a a
    j:bool{sh} = is_finite a
    k:{rt} = real a
    l:{rt} = imag b
    m:{t} = conj[input_dtype={j}] a
    n:{t} = complex l k
    o:{t} = integer_pow[y=3] a
    p:{t} = integer_pow[y=-2] b
    q:{t} = pow a b
  in (c, d, e, f, g, h, i, j, k, l, m, n, o, p, q) }}",
                    sh = &bt[4..],
                    j = jax_name(d),
                );
                check(&text, &[args.clone(), y], tol(d), false);
            }
        }
    }
}

/// The inverse functions at their poles and branch points (`atan(±i)`,
/// `atanh(±1)`, `asin(±1)`, `acosh(±1)`, zeros of both signs), where the
/// formulas divide by zero or take the logarithm of zero.
#[test]
fn complex_inverse_functions_at_their_special_points() {
    let pts = [
        (0.0, 1.0),
        (0.0, -1.0),
        (-0.0, 1.0),
        (1.0, 0.0),
        (-1.0, 0.0),
        (1.0, -0.0),
        (0.0, 0.0),
        (-0.0, -0.0),
        (2.0, 0.0),
        (-2.0, -0.0),
        (0.0, 2.0),
        (f64::INFINITY, 1.0),
        (1.0, f64::NAN),
    ];
    let v: Vec<Complex64> = pts.iter().map(|&(r, i)| Complex64::new(r, i)).collect();
    for d in [DType::C64, DType::C128] {
        let t = ty(name(d), &[v.len()]);
        let a = HostArray::from_c128(d, &[v.len()], &v).expect("array");
        for op in ["asin", "acos", "atan", "asinh", "acosh", "atanh"] {
            let text = format!("{{ lambda ; a:{t}. let b:{t} = {op} a in (b,) }}");
            check(&text, std::slice::from_ref(&a), tol(d), false);
        }
    }
}

#[test]
fn complex_conversions_and_data_movement_match_the_interpreter() {
    let mut rng = Rng::new(12);
    for d in [DType::C64, DType::C128] {
        let (c, r) = (name(d), real_name(d));
        let other = if d == DType::C64 {
            DType::C128
        } else {
            DType::C64
        };
        for s in [vec![0, 3], vec![1, 1], vec![3, 5], vec![4, 7]] {
            let (m, n) = (s[0], s[1]);
            let t = ty(c, &s);
            let text = format!(
                "{{ lambda ; a:{t} x:{rt} p:bool[{m},{n}]. let
    b:{tt} = transpose[permutation=(1, 0)] a
    e:{c}[{mn}] = reshape[dimensions=None new_sizes=({mn},) sharding=None] a
    f:{c}[{m},{n2}] = concatenate[dimension=1] a a
    g:{c}[{m},{np}] = pad[padding_config=((0, 0, 0), (1, 2, 0))] a (1+2j):{c}[]
    h:{t} = rev[dimensions=(0, 1)] a
    i:{c}[2,{m},{n}] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(2, {m}, {n}) sharding=None] a
    j:{t} = select_n p a h
    k:{t} = convert_element_type[new_dtype={jn} weak_type=False] x
    l:{ot} = convert_element_type[new_dtype={jo} weak_type=False] a
    o:{c}[{n}] = reduce_sum[axes=(0,) out_sharding=None] a
    q:{c}[{m}] = reduce_prod[axes=(1,) out_sharding=None] a
    u:{c}[] = reduce_prod[axes=(0, 1) out_sharding=None] a
    v:{t} = cumsum[axis=1 reverse=False] a
    w:{t} = add k (1.5+0j):{c}[]
  in (b, e, f, g, h, i, j, k, l, o, q, u, v, w) }}",
                rt = ty(r, &s),
                tt = ty(c, &[n, m]),
                mn = m * n,
                n2 = 2 * n,
                np = n + 3,
                jn = jax_name(d),
                jo = jax_name(other),
                ot = ty(name(other), &s),
            );
            let args = [
                crandom(&mut rng, d, &s, 1.5),
                rrandom(
                    &mut rng,
                    if d == DType::C64 {
                        DType::F32
                    } else {
                        DType::F64
                    },
                    &s,
                    2.0,
                ),
                rrandom(&mut rng, DType::Bool, &s, 1.0),
            ];
            // Products and sums: the error scales with the array.
            let rel = if d == DType::C64 { 1e-5 } else { 1e-12 };
            check(&text, &args, rel, true);
        }
    }
}

#[test]
fn complex_dot_general_matches_the_interpreter() {
    let mut rng = Rng::new(13);
    for d in [DType::C64, DType::C128] {
        let c = name(d);
        for (m, k, n) in [(1, 1, 1), (3, 5, 2), (4, 0, 3), (7, 9, 5)] {
            let text = format!(
                "{{ lambda ; a:{c}[2,{m},{k}] b:{c}[2,{k},{n}]. let
    r:{c}[2,{m},{n}] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) precision=None preferred_element_type={j}] a b
  in (r,) }}",
                j = jax_name(d)
            );
            let args = [
                crandom(&mut rng, d, &[2, m, k], 1.0),
                crandom(&mut rng, d, &[2, k, n], 1.0),
            ];
            let rel = if d == DType::C64 { 1e-5 } else { 1e-12 };
            check(&text, &args, rel, true);
        }
    }
}

/// The FFT tolerance: relative to the largest magnitude, growing with
/// `n` (1e-4 for `c64`, 1e-10 for `c128` at the largest sizes).
fn fft_tol(d: DType, n: usize) -> f64 {
    let base = if d == DType::C64 { 2e-6 } else { 1e-13 };
    base * (n as f64).max(1.0).sqrt().max(1.0) * 4.0
}

#[test]
fn fft_of_every_kind_matches_the_interpreter() {
    let mut rng = Rng::new(14);
    let lens = [1usize, 2, 3, 5, 8, 12, 17, 64];
    for d in [DType::C64, DType::C128] {
        let (c, r) = (name(d), real_name(d));
        let rd = if d == DType::C64 {
            DType::F32
        } else {
            DType::F64
        };
        for &n in &lens {
            // One axis, batched.
            let shapes: Vec<Vec<usize>> = vec![vec![n], vec![3, n]];
            for lengths in shapes {
                one_case(&mut rng, d, c, r, rd, &lengths, 1);
            }
        }
        // Two and three axes.
        for dims in [
            vec![3, 5],
            vec![8, 4],
            vec![2, 12, 5],
            vec![3, 2, 17],
            vec![1, 4, 4],
        ] {
            let nd = dims.len();
            one_case(&mut rng, d, c, r, rd, &dims, nd);
            let mut batched = vec![2];
            batched.extend(&dims);
            one_case(&mut rng, d, c, r, rd, &batched, nd);
        }
    }
}

/// FFT, IFFT, RFFT and IRFFT over the last `nd` axes of `shape`.
fn one_case(rng: &mut Rng, d: DType, c: &str, r: &str, rd: DType, shape: &[usize], nd: usize) {
    let rank = shape.len();
    let lengths = &shape[rank - nd..];
    let total: usize = lengths.iter().product();
    let t = ty(c, shape);
    let rt = ty(r, shape);
    let mut half = shape.to_vec();
    half[rank - 1] = shape[rank - 1] / 2 + 1;
    let ht = ty(c, &half);
    let lt = tuple(lengths);
    let text = format!(
        "{{ lambda ; a:{t} x:{rt} h:{ht}. let
    b:{t} = fft[fft_lengths={lt} fft_type=0] a
    e:{t} = fft[fft_lengths={lt} fft_type=1] a
    f:{ht} = fft[fft_lengths={lt} fft_type=2] x
    g:{rt} = fft[fft_lengths={lt} fft_type=3] h
  in (b, e, f, g) }}"
    );
    let args = [
        crandom(rng, d, shape, 1.0),
        rrandom(rng, rd, shape, 1.0),
        crandom(rng, d, &half, 1.0),
    ];
    check(&text, &args, fft_tol(d, total), true);
}

/// `abs`, `sign` and `log` on parts near the ends of the dtype's range:
/// the scaled hypot neither overflows nor underflows where the
/// interpreter's `hypot` does not.
#[test]
fn complex_abs_is_hypot_safe() {
    let mut rng = Rng::new(15);
    for (d, big) in [(DType::C64, 1e37), (DType::C128, 1e307)] {
        let s = [16];
        let v: Vec<Complex64> = (0..16)
            .map(|i| {
                let scale = if i % 2 == 0 { big } else { 1.0 / big };
                Complex64::new(
                    scale * (2.0 * rng.unit() - 1.0),
                    scale * (2.0 * rng.unit() - 1.0),
                )
            })
            .collect();
        let x = HostArray::from_c128(d, &s, &v).expect("array");
        let (c, r) = (name(d), real_name(d));
        let text = format!(
            "{{ lambda ; a:{c}[16]. let
    b:{r}[16] = abs a
    e:{c}[16] = sign a
    f:{c}[16] = log a
  in (b, e, f) }}"
        );
        check(&text, &[x], tol(d), false);
    }
}

/// Slices, gathers and scatters move both parts.
#[test]
fn complex_indexing_matches_the_interpreter() {
    let mut rng = Rng::new(16);
    for d in [DType::C64, DType::C128] {
        let c = name(d);
        for mode in ["CLIP", "FILL_OR_DROP"] {
            let text = format!(
                "{{ lambda ; a:{c}[6,5] i:i32[7,1] u:{c}[7,5] k:i32[]. let
    b:{c}[2,3] = slice[limit_indices=(5, 4) start_indices=(1, 1) strides=(2, 1)] a
    e:{c}[1,5] = slice[limit_indices=(1, 5) start_indices=(0, 0) strides=None] a
    f:{c}[5] = squeeze[dimensions=(0,)] e
    g:{c}[3,2] = dynamic_slice[slice_sizes=(3, 2)] a k k
    h:{c}[6,5] = dynamic_update_slice a g k k
    l:{c}[6,2] m:{c}[6,3] = split[axis=1 sizes=(2, 3)] a
    n:{c}[7,5] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      slice_sizes=(1, 5)
      unique_indices=False
    ] a i
    o:{c}[6,5] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      unique_indices=False
      update_consts=()
      update_jaxpr={{ lambda ; p:{c}[] q:{c}[]. let r:{c}[] = add p q in (r,) }}
    ] a i u
    s:{c}[6,5] = scatter[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      unique_indices=False
      update_consts=()
      update_jaxpr=None
    ] a i u
  in (b, f, g, h, l, m, n, o, s) }}"
            );
            let idx: Vec<f64> = (0..7).map(|_| rng.range(-1, 7) as f64).collect();
            let args = [
                crandom(&mut rng, d, &[6, 5], 2.0),
                HostArray::from_f64(DType::I32, &[7, 1], &idx).expect("indices"),
                crandom(&mut rng, d, &[7, 5], 2.0),
                HostArray::from_f64(DType::I32, &[], &[rng.range(0, 5) as f64]).expect("k"),
            ];
            check(&text, &args, tol(d), true);
        }
    }
}

/// Complex values through `scan` (complex carries, stacked operands and
/// results, a complex constant operand, reversed), `while` (a complex
/// carry beside a real counter, a complex-valued predicate input), `cond`
/// (complex operands and results, a complex literal in a branch) and a
/// `scan` whose carries are real but whose body computes in complex.
#[test]
fn complex_values_through_control_flow_match_the_interpreter() {
    let mut rng = Rng::new(23);
    for d in [DType::C64, DType::C128] {
        let (c, r) = (name(d), real_name(d));
        let (t3, t73) = (ty(c, &[3]), ty(c, &[7, 3]));
        let (r3, r73) = (ty(r, &[3]), ty(r, &[7, 3]));
        let scan = format!(
            "{{ lambda ; w:{t3} a:{t3} xs:{t73} q:{r73}. let
    b:{t3} ys:{t73} zs:{r73} = scan[
      jaxpr={{ lambda ; u:{t3} z:{t3} x:{t3} p:{r3}. let
          e:{t3} = mul z u
          f:{t3} = add e x
          g:{r3} = real f
          h:{r3} = add g p
        in (f, f, h) }}
      length=7
      num_carry=1
      num_consts=1
      reverse=True
      unroll=1
    ] w a xs q
  in (b, ys, zs) }}"
        );
        let args = [
            crandom(&mut rng, d, &[3], 0.9),
            crandom(&mut rng, d, &[3], 1.0),
            crandom(&mut rng, d, &[7, 3], 1.0),
            rrandom(&mut rng, d.real_dtype(), &[7, 3], 1.0),
        ];
        check(&scan, &args, tol(d) * 8.0, true);

        let real_carry = format!(
            "{{ lambda ; a:{r3} xs:{r73}. let
    b:{r3} ys:{r73} = scan[
      jaxpr={{ lambda ; s:{r3} x:{r3}. let
          z:{t3} = complex s x
          e:{t3} = mul z (0.5+1j):{c}[]
          f:{t3} = exp e
          g:{r3} = imag f
          h:{r3} = abs f
        in (g, h) }}
      length=7
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] a xs
  in (b, ys) }}"
        );
        let args = [
            rrandom(&mut rng, d.real_dtype(), &[3], 1.0),
            rrandom(&mut rng, d.real_dtype(), &[7, 3], 1.0),
        ];
        check(&real_carry, &args, tol(d) * 8.0, true);

        let while_ = format!(
            "{{ lambda ; k:{t3} a:{t3}. let
    n:i32[] b:{t3} = while[
      body_jaxpr={{ lambda ; s:{t3} i:i32[] e:{t3}. let
          f:{t3} = mul e s
          g:{t3} = add f (0.25-0.5j):{c}[]
          j:i32[] = add i 1:i32[]
        in (j, g) }}
      body_nconsts=1
      cond_jaxpr={{ lambda ; m:{t3} t:i32[] u:{t3}. let
          v:{r3} = abs u
          w:{r3} = abs m
          x:{r}[] = reduce_max[axes=(0,) out_sharding=None] v
          y:bool[] = lt x 4.0:{r}[]
          z:bool[] = lt t 9:i32[]
          o:bool[] = and y z
        in (o,) }}
      cond_nconsts=1
    ] k k 0:i32[] a
  in (n, b) }}"
        );
        let args = [
            crandom(&mut rng, d, &[3], 1.0),
            crandom(&mut rng, d, &[3], 1.0),
        ];
        check(&while_, &args, tol(d) * 8.0, true);

        let cond = format!(
            "{{ lambda ; p:i32[] a:{t3} b:{r3}. let
    c:{t3} e:{r3} = cond[
      branches=(
        {{ lambda ; d:{t3} f:{r3}. let g:{t3} = mul d d
          h:{r3} = real g in (g, h) }}
        {{ lambda ; i:{t3} j:{r3}. let k:{t3} = add i 2j:{c}[]
          l:{r3} = imag k in (k, l) }}
      )
    ] p a b
  in (c, e) }}"
        );
        for p in [0, 1, 5] {
            let args = [
                HostArray::from_f64(DType::I32, &[], &[p as f64]).unwrap(),
                crandom(&mut rng, d, &[3], 1.0),
                rrandom(&mut rng, d.real_dtype(), &[3], 1.0),
            ];
            check(&cond, &args, tol(d), false);
        }
    }
}

/// Review: complex literals as branch results, pass-through complex
/// carries, dropped complex results, and a `while` nested in a `scan`.
#[test]
fn review_complex_literals_drops_and_nesting_in_control_flow() {
    let mut rng = Rng::new(77);
    let cond = "{ lambda ; p:i32[] a:c64[]. let
    c:c64[] = cond[
      branches=(
        { lambda ; d:c64[]. let  in ((1+2j):c64[],) }
        { lambda ; e:c64[]. let  in (e,) }
      )
    ] p a
  in (c,) }";
    for p in [0, 1] {
        let args = [
            HostArray::from_f64(DType::I32, &[], &[p as f64]).unwrap(),
            crandom(&mut rng, DType::C64, &[], 1.0),
        ];
        check(cond, &args, tol(DType::C64), false);
    }
    let nested = "{ lambda ; a:c64[2] xs:c64[5,2]. let
    b:c64[2] _:c64[2] ys:c64[5,2] = scan[
      jaxpr={ lambda ; u:c64[2] v:c64[2] x:c64[2]. let
          _:i32[] w:c64[2] z:c64[2] = while[
            body_jaxpr={ lambda ; i:i32[] e:c64[2] f:c64[2]. let
                g:c64[2] = mul e (0.5+0.5j):c64[]
                h:c64[2] = add g f
                j:i32[] = add i 1:i32[]
              in (j, h, f) }
            body_nconsts=0
            cond_jaxpr={ lambda ; t:i32[] m:c64[2] o:c64[2]. let
                y:bool[] = lt t 3:i32[]
              in (y,) }
            cond_nconsts=0
          ] 0:i32[] u x
          q:c64[2] = sub w z
        in (w, u, q) }
      length=5
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] a a xs
  in (b, ys) }";
    let args = [
        crandom(&mut rng, DType::C64, &[2], 1.0),
        crandom(&mut rng, DType::C64, &[5, 2], 1.0),
    ];
    check(nested, &args, tol(DType::C64) * 8.0, true);
}

/// Review: complex literals as the operands of `while` and `scan`.
#[test]
fn review_complex_literal_loop_operands() {
    let mut rng = Rng::new(78);
    let text = "{ lambda ; xs:c128[4]. let
    _:i32[] b:c128[] = while[
      body_jaxpr={ lambda ; s:c128[] i:i32[] e:c128[]. let
          f:c128[] = mul e s
          j:i32[] = add i 1:i32[]
        in (j, f) }
      body_nconsts=1
      cond_jaxpr={ lambda ; t:i32[] u:c128[]. let
          z:bool[] = lt t 3:i32[]
        in (z,) }
      cond_nconsts=0
    ] (0.5-1j):c128[] 0:i32[] (2+0.25j):c128[]
    c:c128[] ys:c128[4] = scan[
      jaxpr={ lambda ; k:c128[] u:c128[] x:c128[]. let
          g:c128[] = mul u k
          h:c128[] = add g x
        in (h, g) }
      length=4
      num_carry=1
      num_consts=1
      reverse=False
      unroll=1
    ] (0-1j):c128[] b xs
  in (c, ys) }";
    let args = [crandom(&mut rng, DType::C128, &[4], 1.0)];
    check(text, &args, tol(DType::C128) * 8.0, true);
}

/// Review: `c64` division whose `f32` intermediates overflow or underflow
/// where `f64` ones would not (XLA's, and the interpreter's, NaNs and
/// zeros), and a `c64` product fed to a division.
#[test]
fn review_c64_division_overflows_in_f32() {
    let x = [
        Complex64::new(3e38, 3e38),
        Complex64::new(1e-30, 2e-30),
        Complex64::new(1e20, -1e20),
        Complex64::new(1.0, 1.0),
    ];
    let y = [
        Complex64::new(2e38, 2e38),
        Complex64::new(1e20, 1e-25),
        Complex64::new(1e-20, 3e-20),
        Complex64::new(3e-39, 1e-45),
    ];
    let a = HostArray::from_c128(DType::C64, &[4], &x).expect("x");
    let b = HostArray::from_c128(DType::C64, &[4], &y).expect("y");
    let text = "{ lambda ; a:c64[4] b:c64[4]. let
    c:c64[4] = div a b
    d:c64[4] = mul a a
    e:c64[4] = div d b
  in (c, e) }";
    check(text, &[a, b], tol(DType::C64), false);
}
