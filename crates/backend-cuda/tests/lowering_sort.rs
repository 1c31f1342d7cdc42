//! Differential tests of `sort` (one and several operands, `num_keys`
//! lexicographic keys, stability, NaN and signed-zero order) and `top_k`
//! (descending total order, ties by the lower index) on `cuda-sim` against
//! the reference interpreter, on random shapes and dtypes with many ties.

mod lowering_util;
use jaxon_ir::DType;
use lowering_util::{awkward, check, check_with, random, ty, Dist, Rng, Tol};

#[test]
fn sort_one_operand_on_random_axes() {
    let mut rng = Rng::new(80);
    for dt in ["f32", "f64", "i32", "u8", "bool", "f16", "i64"] {
        for _ in 0..2 {
            let rank = rng.range(1, 3) as usize;
            let s = rng.shape(rank, 600);
            let axis = rng.range(0, rank as i64 - 1) as usize;
            let t = ty(dt, &s);
            let text = format!(
                "{{ lambda ; a:{t}. let b:{t} = sort[dimension={axis} is_stable=True num_keys=1] a in (b,) }}"
            );
            let dtype = DType::from_name(dt).expect("dtype");
            let a = if dtype.is_float() {
                awkward(&mut rng, dtype, &s)
            } else {
                random(&mut rng, dtype, &s, Dist::Uniform(5.0))
            };
            check_with(&text, &[a], Tol::Exact);
        }
    }
}

#[test]
fn sort_several_operands_is_stable_and_lexicographic() {
    let mut rng = Rng::new(81);
    for (num_keys, s, axis) in [(1, [7, 33], 1), (2, [40, 3], 0), (3, [5, 17], 1)] {
        let (a, b, c) = (ty("f32", &s), ty("i32", &s), ty("u8", &s));
        let text = format!(
            "{{ lambda ; x:{a} y:{b} z:{c}. let
    p:{a} q:{b} r:{c} = sort[dimension={axis} is_stable=True num_keys={num_keys}] x y z
  in (p, q, r) }}"
        );
        let x = awkward(&mut rng, DType::F32, &s);
        let y = random(&mut rng, DType::I32, &s, Dist::Uniform(2.0));
        let z = random(&mut rng, DType::U8, &s, Dist::Uniform(200.0));
        check_with(&text, &[x, y, z], Tol::Exact);
    }
    // argsort: a key and an iota payload.
    check(
        "{ lambda ; a:f32[3,37]. let
    c:i32[3,37] = iota[dimension=1 dtype=int32 shape=(3, 37) sharding=None]
    d:f32[3,37] b:i32[3,37] = sort[dimension=1 is_stable=True num_keys=1] a c
  in (d, b) }",
        82,
        Dist::Uniform(3.0),
        Tol::Exact,
    );
}

#[test]
fn top_k_descends_in_the_total_order() {
    let mut rng = Rng::new(83);
    for dt in ["f32", "f64", "i32", "u8", "f16", "bool"] {
        for _ in 0..2 {
            let rank = rng.range(1, 3) as usize;
            let mut s = rng.shape(rank, 500);
            let axis = rng.range(0, rank as i64 - 1) as usize;
            s[axis] = s[axis].max(1);
            let kk = rng.range(0, s[axis] as i64) as usize;
            let mut o = s.clone();
            o[axis] = kk;
            let text = format!(
                "{{ lambda ; a:{}. let b:{} c:{} = top_k[axis={axis} k={kk}] a in (b, c) }}",
                ty(dt, &s),
                ty(dt, &o),
                ty("i32", &o)
            );
            let dtype = DType::from_name(dt).expect("dtype");
            let a = if dtype.is_float() {
                awkward(&mut rng, dtype, &s)
            } else {
                random(&mut rng, dtype, &s, Dist::Uniform(5.0))
            };
            check_with(&text, &[a], Tol::Exact);
        }
    }
}

#[test]
fn bitonic_and_rank_paths_agree_with_the_interpreter() {
    let mut rng = Rng::new(84);
    // Lines of every padding class, many lines (grid-stride over blocks).
    for (s, axis) in [([1100, 2], 1), ([3, 2048], 1), ([5, 33], 1), ([2049, 1], 0)] {
        let t = ty("f32", &s);
        let u = ty("i32", &s);
        let text = format!(
            "{{ lambda ; a:{t} b:{u}. let c:{t} d:{u} = sort[dimension={axis} is_stable=True num_keys=1] a b in (c, d) }}"
        );
        let a = awkward(&mut rng, DType::F32, &s);
        let b = random(&mut rng, DType::I32, &s, Dist::Uniform(1000.0));
        check_with(&text, &[a, b], Tol::Exact);
    }
    // Three f64 keys padded to 2048 overflow the shared-memory budget: the
    // rank path.
    let t = ty("f64", &[1, 1100]);
    let text = format!(
        "{{ lambda ; a:{t} b:{t} c:{t}. let d:{t} e:{t} f:{t} = sort[dimension=1 is_stable=True num_keys=3] a b c in (d, e, f) }}"
    );
    check(&text, 85, Dist::Uniform(2.0), Tol::Exact);
}
