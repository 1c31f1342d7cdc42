//! Differential tests of the window family (`lower/window.rs`) on
//! `cuda-sim` against the reference interpreter: `reduce_window_sum`,
//! `_max`, `_min`, the generic `reduce_window` with elementwise bodies,
//! `select_and_gather_add` and `select_and_scatter_add`, on random window
//! configurations — sizes (0 included), strides, low/high padding (negative
//! too), base and window dilations — in float, integer and bool dtypes,
//! with ties and NaNs for the selections. The simulator reports any
//! out-of-bounds access or race as an error.

mod lowering_util;
use jaxon_ir::primitive::WindowGeometry;
use jaxon_ir::{DType, HostArray};
use lowering_util::{check_with, random, tuple, ty, Dist, Rng, Tol};

/// A random window over an operand of `shape`, with its output shape.
fn window(
    rng: &mut Rng,
    shape: &[usize],
    dilations: bool,
    negative_pad: bool,
) -> (WindowGeometry, Vec<usize>) {
    loop {
        let r = shape.len();
        let w = WindowGeometry {
            window_dimensions: (0..r).map(|_| rng.range(1, 3) as usize).collect(),
            window_strides: (0..r).map(|_| rng.range(1, 3) as usize).collect(),
            padding: (0..r)
                .map(|_| {
                    let lo = if negative_pad { -1 } else { 0 };
                    (rng.range(lo, 2), rng.range(lo, 2))
                })
                .collect(),
            base_dilation: (0..r)
                .map(|_| {
                    if dilations {
                        rng.range(1, 2) as usize
                    } else {
                        1
                    }
                })
                .collect(),
            window_dilation: (0..r)
                .map(|_| {
                    if dilations {
                        rng.range(1, 2) as usize
                    } else {
                        1
                    }
                })
                .collect(),
        };
        let out: Option<Vec<usize>> = (0..r).map(|d| w.out_dim(d, shape[d])).collect();
        if let Some(out) = out {
            return (w, out);
        }
    }
}

fn pads(p: &[(i64, i64)]) -> String {
    let parts: Vec<String> = p.iter().map(|(a, b)| format!("({a}, {b})")).collect();
    match parts.len() {
        1 => format!("({},)", parts[0]),
        _ => format!("({})", parts.join(", ")),
    }
}

fn geometry_text(w: &WindowGeometry) -> String {
    format!(
        "base_dilation={} padding={} window_dilation={} window_dimensions={} window_strides={}",
        tuple(&w.base_dilation),
        pads(&w.padding),
        tuple(&w.window_dilation),
        tuple(&w.window_dimensions),
        tuple(&w.window_strides)
    )
}

/// Values with ties (small integers), NaNs and infinities for floats.
fn tied(rng: &mut Rng, dt: &str, shape: &[usize]) -> HostArray {
    let d = DType::from_name(dt).expect("dtype");
    let n: usize = shape.iter().product();
    let vals: Vec<f64> = (0..n)
        .map(|_| match (d.is_float(), rng.range(0, 11)) {
            (true, 0) => f64::NAN,
            (true, 1) => f64::NEG_INFINITY,
            (_, _) if d.is_bool() => (rng.next() & 1) as f64,
            (_, _) if d.is_unsigned_int() => rng.range(0, 4) as f64,
            _ => rng.range(-3, 3) as f64,
        })
        .collect();
    HostArray::from_f64(d, shape, &vals).expect("array")
}

#[test]
fn reduce_window_sum_max_min_on_random_windows() {
    let mut rng = Rng::new(290);
    let dtypes: [(&str, &[&str]); 3] = [
        (
            "reduce_window_sum",
            &["f32", "f64", "i32", "u8", "f16", "bool"],
        ),
        (
            "reduce_window_max",
            &["f32", "f64", "i32", "i8", "u16", "bf16", "bool"],
        ),
        ("reduce_window_min", &["f32", "i64", "u32", "f16", "bool"]),
    ];
    for (op, dts) in dtypes {
        for dt in dts {
            for trial in 0..4 {
                let rank = rng.range(1, 3) as usize;
                let shape = rng.shape(rank, 400);
                let (w, out) = window(&mut rng, &shape, trial % 2 == 1, trial >= 2);
                let text = format!(
                    "{{ lambda ; a:{}. let b:{} = {op}[{}] a in (b,) }}",
                    ty(dt, &shape),
                    ty(dt, &out),
                    geometry_text(&w)
                );
                let d = DType::from_name(dt).expect("dtype");
                let a = if op == "reduce_window_sum" {
                    random(&mut rng, d, &shape, Dist::Uniform(3.0))
                } else {
                    tied(&mut rng, dt, &shape)
                };
                // Sums are taken in the interpreter's order: exact.
                check_with(&text, &[a], Tol::Exact);
            }
        }
    }
}

#[test]
fn generic_reduce_window_with_elementwise_bodies() {
    let mut rng = Rng::new(291);
    for trial in 0..6 {
        let rank = rng.range(1, 3) as usize;
        let shape = rng.shape(rank, 300);
        let (w, out) = window(&mut rng, &shape, trial % 2 == 1, trial >= 3);
        let g = geometry_text(&w);
        // An argmax-style pair reduction with a `jit` in its body, as
        // `jnp.argmax` over windows traces.
        let (tf, ti, of, oi) = (
            ty("f32", &shape),
            ty("i32", &shape),
            ty("f32", &out),
            ty("i32", &out),
        );
        let text = format!(
            "{{ lambda ; a:{tf} b:{ti} c:f32[] d:i32[]. let
    e:{of} f:{oi} = reduce_window[
      {g}
      consts=()
      jaxpr={{ lambda ; e:f32[] f:i32[] g:f32[] h:i32[]. let
          i:bool[] = ge e g
          j:f32[] = jit[
            name=_where
            jaxpr={{ lambda ; i:bool[] e:f32[] g:f32[]. let
                j:f32[] = select_n i g e
              in (j,) }}
          ] i e g
          k:i32[] = select_n i h f
        in (j, k) }}
    ] a b c d
  in (e, f) }}"
        );
        let a = tied(&mut rng, "f32", &shape);
        let b = random(&mut rng, DType::I32, &shape, Dist::Uniform(100.0));
        let c = HostArray::from_f64(DType::F32, &[], &[f64::NEG_INFINITY]).expect("init");
        let d = HostArray::from_f64(DType::I32, &[], &[-1.0]).expect("init");
        check_with(&text, &[a, b, c, d], Tol::Exact);
        // A float product in f16 (rounded after each step) with a literal.
        let (th, oh) = (ty("f16", &shape), ty("f16", &out));
        let text = format!(
            "{{ lambda ; a:{th} c:f16[]. let
    e:{oh} = reduce_window[
      {g}
      consts=()
      jaxpr={{ lambda ; e:f16[] g:f16[]. let
          i:f16[] = mul e g
          j:f16[] = mul i 1.0:f16[]
        in (j,) }}
    ] a c
  in (e,) }}"
        );
        let a = random(&mut rng, DType::F16, &shape, Dist::Between(0.5, 1.5));
        let c = HostArray::from_f64(DType::F16, &[], &[1.25]).expect("init");
        check_with(&text, &[a, c], Tol::Exact);
    }
}

#[test]
fn select_and_gather_add_and_select_and_scatter_add() {
    let mut rng = Rng::new(292);
    for (sel, dt) in [
        ("ge", "f32"),
        ("le", "f32"),
        ("ge", "f64"),
        ("ge", "f16"),
        ("le", "i32"),
        ("ge", "u8"),
    ] {
        for trial in 0..5 {
            let rank = rng.range(1, 3) as usize;
            let shape = rng.shape(rank, 300);
            let (w, out) = window(&mut rng, &shape, trial % 2 == 1, trial >= 3);
            let d = DType::from_name(dt).expect("dtype");
            let x = tied(&mut rng, dt, &shape);
            let t = random(&mut rng, d, &shape, Dist::Uniform(4.0));
            let text = format!(
                "{{ lambda ; t:{} x:{}. let y:{} = select_and_gather_add[{} select_prim={sel}] t x in (y,) }}",
                ty(dt, &shape),
                ty(dt, &shape),
                ty(dt, &out),
                geometry_text(&w)
            );
            check_with(&text, &[t, x.clone()], Tol::Exact);
            // select_and_scatter_add has no dilations.
            let (w, out) = window(&mut rng, &shape, false, trial >= 3);
            let src = random(&mut rng, d, &out, Dist::Uniform(4.0));
            let text = format!(
                "{{ lambda ; s:{} x:{}. let y:{} = select_and_scatter_add[padding={} select_prim={sel} window_dimensions={} window_strides={}] s x in (y,) }}",
                ty(dt, &out),
                ty(dt, &shape),
                ty(dt, &shape),
                pads(&w.padding),
                tuple(&w.window_dimensions),
                tuple(&w.window_strides)
            );
            // Overlapping windows add into one element in window order:
            // the interpreter's order, so exact.
            check_with(&text, &[src, x], Tol::Exact);
        }
    }
}
