//! `nn::initializers` and `random::truncated_normal` against JAX 0.10.2:
//! values recorded from the installed JAX (default config, f32) for the
//! same keys, shapes and arguments. Uniform-based initializers agree within
//! two ulp (XLA contracts `u * (hi - lo) + lo` into an FMA); normal-based
//! ones within the few ulp by which XLA's `erf`/`erf_inv` polynomials
//! differ from the interpreter's correctly rounded ones.

use jaxon_ir::DType;
use jaxon_trace::nn::initializers::{self as init, Distribution, FanAxes, FanMode};
use jaxon_trace::random as jr;
use jaxon_trace::Array;

/// Distance in ulps between two finite f32s.
fn ulps(a: f32, b: f32) -> u32 {
    let key = |x: f32| {
        let b = x.to_bits();
        if b >> 31 == 1 {
            -((b & 0x7FFF_FFFF) as i64)
        } else {
            b as i64
        }
    };
    (key(a) - key(b)).unsigned_abs() as u32
}

fn assert_close(what: &str, got: &Array, shape: &[usize], want_bits: &[u32], max_ulps: u32) {
    assert_eq!(got.shape(), shape.to_vec(), "{what}: shape");
    assert_eq!(got.dtype(), DType::F32, "{what}: dtype");
    let got = got.to_vec::<f32>();
    assert_eq!(got.len(), want_bits.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want_bits).enumerate() {
        let w = f32::from_bits(*w);
        let d = ulps(*g, w);
        assert!(d <= max_ulps, "{what}[{i}]: got {g}, JAX {w} ({d} ulp)");
    }
}

#[test]
fn truncated_normal_matches_jax() {
    // jax.random.truncated_normal(key(0), -2., 2., (8,), float32)
    let x = jr::truncated_normal(
        &jr::key(0),
        &Array::weak(-2.0),
        &Array::weak(2.0),
        &[8],
        DType::F32,
    )
    .unwrap();
    let want = [
        1069178079, 1071348963, 3201518127, 3180964641, 1043073141, 3211370772, 3203474197,
        1055961417,
    ];
    assert_close("truncated_normal(-2, 2)", &x, &[8], &want, 8);
    // An asymmetric interval: every value inside it.
    let x = jr::truncated_normal(
        &jr::key(7),
        &Array::weak(-1.0),
        &Array::weak(0.5),
        &[2, 3],
        DType::F32,
    )
    .unwrap();
    let want = [
        1027012853, 1055687560, 3203363237, 3196589552, 1039624230, 3159672626,
    ];
    assert_close("truncated_normal(-1, 0.5)", &x, &[2, 3], &want, 8);
    assert!(x.to_vec::<f32>().iter().all(|&v| v > -1.0 && v < 0.5));
}

#[test]
fn truncated_normal_stays_inside_and_rejects_integers() {
    let x = jr::truncated_normal(
        &jr::key(3),
        &Array::weak(0.5),
        &Array::weak(0.6),
        &[1000],
        DType::F32,
    )
    .unwrap();
    assert!(x.to_vec::<f32>().iter().all(|&v| v > 0.5 && v < 0.6));
    let e = jr::truncated_normal(
        &jr::key(3),
        &Array::weak(-1.0),
        &Array::weak(1.0),
        &[3],
        DType::I32,
    )
    .unwrap_err();
    assert!(e.to_string().contains("truncated_normal"), "{e}");
}

/// What is checked, the initializer, its key and shape, JAX's bits, and
/// the ulp tolerance.
type Case<'a> = (
    &'a str,
    init::Initializer,
    Array,
    &'a [usize],
    &'a [u32],
    u32,
);

#[test]
fn variance_scaling_initializers_match_jax() {
    let k = jr::key;
    let cases: [Case; 6] = [
        (
            "glorot_uniform",
            init::glorot_uniform(),
            k(0),
            &[3, 4],
            &[
                1062482940, 1063443260, 3198090894, 3178078429, 1040483258, 3206450920, 3199463788,
                1051959958, 1055519180, 3206279702, 1063653695, 3210806918,
            ],
            2,
        ),
        (
            "he_uniform",
            init::he_uniform(),
            k(3),
            &[2, 3, 5],
            &[
                3210352072, 1063277684, 1050183728, 1064535192, 3202543856, 1042930544, 3209263132,
                3195178368, 3205759764, 3208543164, 1056086232, 3207598044, 3201031648, 3203983048,
                1064309836, 3209217756, 1022146304, 1043446640, 1057356024, 3205978724, 1050715280,
                3207851420, 3205213148, 1062135288, 3197844520, 3203590200, 3186571232, 1055814392,
                3199368504, 3203002440,
            ],
            2,
        ),
        (
            "he_normal",
            init::he_normal(),
            k(1),
            &[2, 3, 4],
            &[
                3183875328, 1029265545, 3182324833, 3183925648, 1061475408, 1035875941, 1066725504,
                1058928841, 3191473654, 1046835487, 3202432532, 3189597077, 1057760668, 1056544879,
                1057794293, 1051680773, 1058563145, 3213137804, 1057507604, 3212051484, 3172585825,
                3211110703, 3206393238, 1053627129,
            ],
            8,
        ),
        (
            "lecun_normal",
            init::lecun_normal(),
            k(2),
            &[4, 3],
            &[
                1044901640, 1059895338, 3201000618, 1059062408, 3185915958, 3202666918, 1051465822,
                3203607818, 1052692240, 1055844129, 1061553983, 3207686691,
            ],
            8,
        ),
        (
            "variance_scaling(0.5, fan_geo_avg, normal)",
            init::variance_scaling(0.5, FanMode::FanGeoAvg, Distribution::Normal),
            k(5),
            &[3, 6],
            &[
                3169666973, 1056441040, 1046323885, 3202762121, 1055956187, 1042427610, 3208291990,
                3205308712, 3197315562, 3178025992, 3213563269, 3184120813, 1042741575, 3175185185,
                1051784072, 3203834102, 3197864912, 1051135509,
            ],
            8,
        ),
        (
            "variance_scaling(1, fan_in, uniform, in_axis=0, out_axis=(1, 2), batch_axis=3)",
            init::variance_scaling_axes(
                1.0,
                FanMode::FanIn,
                Distribution::Uniform,
                FanAxes {
                    in_axes: vec![0],
                    out_axes: vec![1, 2],
                    batch_axes: vec![3],
                },
            ),
            k(6),
            &[2, 3, 2, 2],
            &[
                1052551114, 3204933483, 3213763646, 3211904031, 1063340373, 3201676890, 3189830699,
                3212324589, 1040223265, 1042928168, 3198560845, 3193387907, 1017035885, 3211076887,
                1057952980, 1062752795, 1045850429, 1059924540, 1053154570, 3180260007, 1061334731,
                3208027674, 1049763653, 1033236001,
            ],
            2,
        ),
    ];
    for (what, i, key, shape, want, tol) in cases {
        let w = i.init(&key, shape, DType::F32).unwrap();
        assert_close(what, &w, shape, want, tol);
    }
}

#[test]
fn simple_initializers_match_jax() {
    let k = jr::key;
    // normal(0.1), uniform(0.3), truncated_normal(0.05, lower=-1, upper=3)
    let w = init::normal(0.1).init(&k(4), &[5], DType::F32).unwrap();
    let want = [1039217323, 1033321901, 3185391439, 1023999846, 967982527];
    assert_close("normal(0.1)", &w, &[5], &want, 8);
    let w = init::uniform(0.3).init(&k(4), &[5], DType::F32).unwrap();
    let want = [1049051266, 1047298695, 1026298775, 1044502217, 1041892419];
    assert_close("uniform(0.3)", &w, &[5], &want, 2);
    let w = init::truncated_normal(0.05, -1.0, 3.0)
        .init(&k(8), &[6], DType::F32)
        .unwrap();
    let want = [
        3158941510, 3172401538, 1040751048, 1024419220, 3168998015, 3170877181,
    ];
    // Draws near the upper bound 3 put `erf_inv` near 1, where XLA's
    // polynomial is furthest from the correctly rounded value.
    assert_close("truncated_normal(0.05, -1, 3)", &w, &[6], &want, 16);
    let z = init::zeros().init(&k(0), &[2, 2], DType::I32).unwrap();
    assert_eq!(z.to_vec::<i32>(), [0; 4]);
    let o = init::ones().init(&k(0), &[3], DType::F32).unwrap();
    assert_eq!(o.to_vec::<f32>(), [1.0; 3]);
    let c = init::constant(2.5).init(&k(0), &[2], DType::F64).unwrap();
    assert_eq!(c.to_vec::<f64>(), [2.5; 2]);
}

#[test]
fn fans_follow_jax_and_bad_shapes_are_errors() {
    // jax._src.nn.initializers._compute_fans
    assert_eq!(
        init::compute_fans(&[3, 5, 7, 11], &FanAxes::default()).unwrap(),
        (105.0, 165.0)
    );
    let axes = FanAxes {
        in_axes: vec![0],
        out_axes: vec![1, 2],
        batch_axes: vec![3],
    };
    assert_eq!(
        init::compute_fans(&[2, 3, 2, 2], &axes).unwrap(),
        (2.0, 6.0)
    );
    let e = init::glorot_uniform()
        .init(&jr::key(0), &[5], DType::F32)
        .unwrap_err();
    assert!(e.to_string().contains("1-dimensional"), "{e}");
    let axes = FanAxes {
        in_axes: vec![4],
        ..FanAxes::default()
    };
    let e = init::compute_fans(&[2, 3], &axes).unwrap_err();
    assert!(e.to_string().contains("axis 4"), "{e}");
    let e = init::he_normal()
        .init(&jr::key(0), &[2, 3], DType::I32)
        .unwrap_err();
    assert!(e.to_string().contains("float"), "{e}");
}
