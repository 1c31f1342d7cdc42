//! `lax.conv_general_dilated` and `lax.conv`: the staged text equals what
//! JAX 0.10.2 prints for the same calls (padding strings resolved, layout
//! strings turned into dimension numbers), and bad arguments are errors.

use jaxon_ir::print::print_jaxpr;
use jaxon_trace::lax::{self, ConvOptions, Padding};
use jaxon_trace::numpy as jnp;
use jaxon_trace::{make_jaxpr, Array};

fn zeros(shape: &[usize]) -> Array {
    jnp::zeros(shape, jaxon_ir::DType::F32).unwrap()
}

fn staged(
    x: &[usize],
    w: &[usize],
    f: impl Fn(&Array, &Array) -> Array + Clone + 'static,
) -> String {
    let j = make_jaxpr(move |(x, w): (Array, Array)| f(&x, &w))((zeros(x), zeros(w))).unwrap();
    print_jaxpr(&j.jaxpr)
}

fn eqn(
    out: &str,
    dn: &str,
    fgc: usize,
    lhs_d: &str,
    pad: &str,
    rhs_d: &str,
    strides: &str,
) -> String {
    format!(
        "    c:{out} = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers({dn})
      feature_group_count={fgc}
      lhs_dilation={lhs_d}
      out_sharding=None
      padding={pad}
      precision=None
      preferred_element_type=None
      rhs_dilation={rhs_d}
      window_strides={strides}
    ] a b
  in (c,) }}"
    )
}

const ID4: &str = "lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3)";

#[test]
fn same_and_valid_padding_match_jax() {
    // lax.conv_general_dilated(x, w, (1, 1), 'SAME')
    let got = staged(&[2, 3, 8, 8], &[4, 3, 3, 3], |x, w| {
        lax::conv_general_dilated(x, w, &[1, 1], Padding::Same, ConvOptions::default()).unwrap()
    });
    let want = "{ lambda ; a:f32[2,3,8,8] b:f32[4,3,3,3]. let\n".to_string()
        + &eqn(
            "f32[2,4,8,8]",
            ID4,
            1,
            "(1, 1)",
            "((1, 1), (1, 1))",
            "(1, 1)",
            "(1, 1)",
        );
    assert_eq!(got, want);
    // lax.conv(x, w, (1, 1), 'VALID')
    let got = staged(&[2, 3, 8, 8], &[4, 3, 3, 3], |x, w| {
        lax::conv(x, w, &[1, 1], Padding::Valid).unwrap()
    });
    let want = "{ lambda ; a:f32[2,3,8,8] b:f32[4,3,3,3]. let\n".to_string()
        + &eqn(
            "f32[2,4,6,6]",
            ID4,
            1,
            "(1, 1)",
            "((0, 0), (0, 0))",
            "(1, 1)",
            "(1, 1)",
        );
    assert_eq!(got, want);
    // 'SAME' with strides and kernel dilation: odd totals pad at the end.
    let got = staged(&[1, 2, 7, 10], &[3, 2, 3, 4], |x, w| {
        let o = ConvOptions {
            rhs_dilation: Some(vec![2, 1]),
            ..ConvOptions::default()
        };
        lax::conv_general_dilated(x, w, &[2, 3], Padding::Same, o).unwrap()
    });
    let want = "{ lambda ; a:f32[1,2,7,10] b:f32[3,2,3,4]. let\n".to_string()
        + &eqn(
            "f32[1,3,4,4]",
            ID4,
            1,
            "(1, 1)",
            "((2, 2), (1, 2))",
            "(2, 1)",
            "(2, 3)",
        );
    assert_eq!(got, want);
}

#[test]
fn layout_strings_groups_and_explicit_padding_match_jax() {
    // dimension_numbers=('NHWC', 'HWIO', 'NHWC'), explicit padding, both
    // dilations.
    let got = staged(&[2, 8, 8, 3], &[3, 3, 3, 4], |x, w| {
        let o = ConvOptions {
            lhs_dilation: Some(vec![1, 2]),
            rhs_dilation: Some(vec![2, 1]),
            dimension_numbers: Some(("NHWC".into(), "HWIO".into(), "NHWC".into())),
            ..ConvOptions::default()
        };
        lax::conv_general_dilated(x, w, &[2, 1], Padding::Explicit(vec![(1, 0), (2, 2)]), o)
            .unwrap()
    });
    let dn = "lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)";
    let want = "{ lambda ; a:f32[2,8,8,3] b:f32[3,3,3,4]. let\n".to_string()
        + &eqn(
            "f32[2,3,17,4]",
            dn,
            1,
            "(1, 2)",
            "((1, 0), (2, 2))",
            "(2, 1)",
            "(2, 1)",
        );
    assert_eq!(got, want);
    // 1-D, 'SAME_LOWER', two feature groups.
    let got = staged(&[1, 9, 4], &[4, 2, 6], |x, w| {
        let o = ConvOptions {
            dimension_numbers: Some(("NWC".into(), "WIO".into(), "NWC".into())),
            feature_group_count: 2,
            ..ConvOptions::default()
        };
        lax::conv_general_dilated(x, w, &[2], Padding::SameLower, o).unwrap()
    });
    let dn = "lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1)";
    let want = "{ lambda ; a:f32[1,9,4] b:f32[4,2,6]. let\n".to_string()
        + &eqn("f32[1,5,6]", dn, 2, "(1,)", "((2, 1),)", "(1,)", "(2,)");
    assert_eq!(got, want);
}

#[test]
fn dimension_numbers_follow_jax() {
    // lax.conv_dimension_numbers(.., ('NWHC', 'OIHW', 'NCWH'))
    let dn = lax::conv_dimension_numbers("NWHC", "OIHW", "NCWH").unwrap();
    assert_eq!(dn.lhs_spec, [0, 3, 2, 1]);
    assert_eq!(dn.rhs_spec, [0, 1, 2, 3]);
    assert_eq!(dn.out_spec, [0, 1, 3, 2]);
    let dn = lax::conv_dimension_numbers("NDHWC", "DHWIO", "NDHWC").unwrap();
    assert_eq!(dn.lhs_spec, [0, 4, 1, 2, 3]);
    assert_eq!(dn.rhs_spec, [4, 3, 0, 1, 2]);
    assert!(lax::conv_dimension_numbers("NHWC", "HWIO", "NHW").is_err());
    assert!(lax::conv_dimension_numbers("NHWC", "HWIO", "NHHC").is_err());
    assert!(lax::conv_dimension_numbers("NHWX", "HWIO", "NHWC").is_err());
}

#[test]
fn values_match_a_direct_loop_and_bad_arguments_are_errors() {
    // A 1-D NCW conv with stride 2 and SAME padding, against a loop.
    let xv: Vec<f32> = (0..2 * 2 * 7)
        .map(|i| ((i * 37 % 11) as f32 - 5.0) / 4.0)
        .collect();
    let wv: Vec<f32> = (0..3 * 2 * 3)
        .map(|i| ((i * 13 % 7) as f32 - 3.0) / 2.0)
        .collect();
    let x = Array::from_vec(xv.clone(), &[2, 2, 7]);
    let w = Array::from_vec(wv.clone(), &[3, 2, 3]);
    let y = lax::conv(&x, &w, &[2], Padding::Same).unwrap();
    assert_eq!(y.shape(), vec![2, 3, 4]);
    // SAME: 4 outputs, total pad (4-1)*2+3-7 = 2, so (1, 1).
    let mut want = Vec::new();
    for n in 0..2 {
        for o in 0..3 {
            for p in 0..4 {
                let mut acc = 0.0f32;
                for c in 0..2 {
                    for k in 0..3 {
                        let i = (p * 2 + k) as i64 - 1;
                        if (0..7).contains(&i) {
                            acc += xv[(n * 2 + c) * 7 + i as usize] * wv[(o * 2 + c) * 3 + k];
                        }
                    }
                }
                want.push(acc);
            }
        }
    }
    let got = y.to_vec::<f32>();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{got:?} vs {want:?}"
        );
    }
    let e = lax::conv(&x, &w, &[2, 2], Padding::Valid)
        .unwrap_err()
        .to_string();
    assert!(e.contains("window_strides"), "{e}");
    let e = lax::conv(&x, &w, &[0], Padding::Valid)
        .unwrap_err()
        .to_string();
    assert!(e.contains("positive"), "{e}");
    let e = lax::conv(&x, &w, &[1], Padding::Explicit(vec![(0, 0), (1, 1)]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("padding"), "{e}");
    let w2 = Array::from_vec(vec![0f32; 6], &[3, 2]);
    let e = lax::conv(&x, &w2, &[1], Padding::Valid)
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32[2,2,7]") && e.contains("f32[3,2]"), "{e}");
}
